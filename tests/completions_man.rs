//! `sbx completions SHELL` and `sbx man`: what a packager installs.

use std::process::{Command, Stdio};

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

fn sbx(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(SBX)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The commands every script must offer.
const COMMANDS: &[&str] = &[
    "compile",
    "check",
    "run",
    "explain",
    "schema",
    "completions",
];

#[test]
fn completion_scripts_for_every_shell() {
    for (shell, marker) in [
        ("bash", "_sbx()"),
        ("zsh", "#compdef sbx"),
        ("fish", "complete -c sbx"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[sbx]"),
    ] {
        let (code, out, err) = sbx(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}: no {marker}");
        for c in COMMANDS {
            assert!(out.contains(c), "{shell}: no {c}");
        }
        // `run`'s own options are completed too.
        assert!(out.contains("artifact"), "{shell}: no --artifact");
    }
    let (code, _, err) = sbx(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("possible values"), "{err}");
}

/// The bash script parses (`bash -n`), and completing `sbx ru` offers
/// `run`.
#[test]
fn bash_completion_parses_and_completes() {
    if Command::new("bash").arg("--version").output().is_err() {
        println!("SKIPPED: no bash");
        return;
    }
    let (_, script, _) = sbx(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sbx.bash");
    std::fs::write(&file, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&file).status().unwrap();
    assert!(check.success());
    let probe = format!(
        "source '{}'; COMP_WORDS=(sbx ru); COMP_CWORD=1; _sbx sbx ru sbx; echo \"${{COMPREPLY[@]}}\"",
        file.display()
    );
    let out = Command::new("bash").args(["-c", &probe]).output().unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert_eq!(words.trim(), "run", "{words}");
}

#[test]
fn man_page_to_stdout_and_per_command_pages() {
    let (code, page, err) = sbx(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains(".TH sbx 1"), "{page}");
    for c in COMMANDS {
        assert!(page.contains(c), "no {c}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let (code, _, err) = sbx(&["man", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let run = std::fs::read_to_string(out.join("sbx-run.1")).unwrap();
    assert!(run.contains(".TH sbx-run 1"), "{run}");
    assert!(run.contains("artifact"), "{run}");
    for c in COMMANDS {
        assert!(out.join(format!("sbx-{c}.1")).exists(), "no sbx-{c}.1");
    }
    // man renders it, where man is installed.
    if let Ok(o) = Command::new("man")
        .args(["-l", out.join("sbx-run.1").to_str().unwrap()])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
    {
        if o.status.success() {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(text.contains("NAME"), "{text}");
        }
    }
    // A directory that cannot be made is an error with exit 2.
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let (code, _, err) = sbx(&["man", "-o", file.join("sub").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot write man pages"), "{err}");
}
