//! `sbx run` speaks before it runs (POLICY.md §7, §7a; CLI.md): one
//! stderr line per sensitive path a rule names, per protection a rule
//! lifts, per sensitive path a broader rule covers (and so hides);
//! nothing for a policy with none of these; nothing with `--quiet`.

#![cfg(any(target_os = "linux", target_os = "macos"))]

mod common;
use common::Host;

/// `sbx run POLICY [extra] -- sh` (the host's stand-in `sh`, which exits 0).
fn run(h: &Host, policy: &str, extra: &[&str]) -> (i32, Vec<String>) {
    let file = h.root.join("p.toml");
    std::fs::write(&file, policy).unwrap();
    let mut args = vec!["run", file.to_str().unwrap()];
    args.extend(extra);
    args.extend(["--", "sh"]);
    let (code, _, err) = h.sbx(&args);
    (code, err.lines().map(String::from).collect())
}

const WS: &str = "[[fs]]\npath = \".\"\nread = true\nwrite = true\n";

/// `policy` compiled for Linux (`linux.json` in the host's root).
#[cfg(target_os = "linux")]
fn linux_artifact(h: &Host, policy: &str) -> std::path::PathBuf {
    let file = h.root.join("p.toml");
    std::fs::write(&file, policy).unwrap();
    let art = h.root.join("linux.json");
    let (p, a) = (file.to_str().unwrap(), art.to_str().unwrap());
    let (code, _, err) = h.sbx(&["compile", p, "--target", "linux", "-o", a]);
    assert_eq!(code, 0, "{err}");
    art
}

#[test]
fn one_line_each_and_quiet_silences_them() {
    let h = Host::new();
    std::fs::create_dir_all(h.home.join(".ssh")).unwrap();
    std::fs::write(h.home.join(".ssh/id_rsa"), "key").unwrap();
    std::fs::create_dir_all(h.ws.join(".git/hooks")).unwrap();
    let cases = [
        (
            format!("{WS}\n[[fs]]\npath = \"~/.ssh\"\nread = true\n"),
            "sbx: warning[SBX033]: fs[1] (",
            "grants read on [TMP]/home/.ssh, inside the sensitive path ~/.ssh/",
        ),
        (
            format!("{WS}\n[[fs]]\npath = \".git/hooks\"\nread = true\nwrite = true\n"),
            "sbx: warning[SBX030]: fs[1] (",
            "the protection of .git/hooks is lifted there",
        ),
        (
            format!("{WS}\n[[fs]]\npath = \"~\"\nread = true\n"),
            "sbx: warning[SBX029]: fs[1] (",
            "which covers the sensitive path ~/.ssh/: it stays hidden",
        ),
    ];
    for (policy, start, text) in cases {
        let (code, lines) = run(&h, &policy, &[]);
        assert_eq!(code, 0, "{lines:#?}");
        assert_eq!(lines.len(), 1, "{policy}: {lines:#?}");
        assert!(lines[0].starts_with(start), "{lines:#?}");
        assert!(lines[0].contains(text), "{lines:#?}");
        let (code, lines) = run(&h, &policy, &["--quiet"]);
        assert_eq!((code, lines.len()), (0, 0), "{lines:#?}");
    }
    // Nothing to say: a writable workspace (protected as usual) and no
    // sensitive path named or covered.
    let (code, lines) = run(&h, WS, &[]);
    assert_eq!((code, lines.len()), (0, 0), "{lines:#?}");
}

/// With Landlock alone (`[linux] namespaces = "never"`) a protection
/// inside a writable grant cannot be enforced (rights are additive): the
/// report says "wider" and a `required` policy does not run. With the
/// namespace layer the same policy runs: `.git/hooks` is a read-only
/// mount, and the protections of paths absent at launch (`.vscode`) are
/// reported, not refused (docs/protected.md).
#[cfg(target_os = "linux")]
#[test]
fn required_and_protections_with_and_without_namespaces() {
    let h = Host::new();
    std::fs::create_dir_all(h.ws.join(".git/hooks")).unwrap();
    let alone = format!("enforcement = \"required\"\n{WS}\n[linux]\nnamespaces = \"never\"\n");
    let (code, lines) = run(&h, &alone, &["--quiet"]);
    assert_eq!(code, 125, "{lines:#?}");
    let all = lines.join("\n");
    assert!(all.contains("protected .git/hooks"), "{all}");
    assert!(!all.contains("protected .vscode"), "{all}");
    // The same policy at best effort runs, saying what is wider.
    let best = format!("{WS}\n[linux]\nnamespaces = \"never\"\n");
    let (code, lines) = run(&h, &best, &["--report"]);
    assert_eq!(code, 0, "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("wider") && l.contains("protected .git/hooks")),
        "{lines:#?}"
    );
    if sbx::runtime::linux::kernel_abi() == 0 {
        return;
    }
    let required = format!("enforcement = \"required\"\n{WS}");
    let (code, lines) = run(&h, &required, &["--report"]);
    assert_eq!(code, 0, "{lines:#?}");
    // Exact: not among the approximations the report lists.
    assert!(
        !lines.iter().any(|l| l.contains("protected .git/hooks")),
        "{lines:#?}"
    );
    // Said once: by the artifact's report, not again by the loader.
    let vscode: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("protected .vscode"))
        .collect();
    assert_eq!(vscode.len(), 1, "{lines:#?}");
    assert!(
        vscode[0].contains("wider") && vscode[0].contains("protected .vscode"),
        "{lines:#?}"
    );
    // Control: a protected path that existed when compiled and is gone at
    // launch is news to the artifact, and the loader says it.
    std::fs::create_dir(h.ws.join(".idea")).unwrap();
    let art = linux_artifact(&h, WS);
    let a = art.to_str().unwrap();
    std::fs::remove_dir(h.ws.join(".idea")).unwrap();
    let (code, _, err) = h.sbx(&["run", "--artifact", a, "--report", "--", "sh"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("cannot open [TMP]/ws/.idea at launch"),
        "{err}"
    );
    assert!(!err.contains("cannot open [TMP]/ws/.vscode"), "{err}");
}

/// A policy with `[[fs]]` rules but none on the workspace: a command
/// started there finds no such directory in the new root and starts at
/// `/`, which sbx says (unless `--quiet`). Positive control: with the
/// workspace granted it starts where it was started, silently.
#[cfg(target_os = "linux")]
#[test]
fn a_current_directory_outside_the_grants_is_announced() {
    let h = Host::new();
    std::fs::create_dir_all(h.home.join("data")).unwrap();
    let pwd = |policy: &str, quiet: bool| {
        let file = h.root.join("p.toml");
        std::fs::write(&file, policy).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_sbx"));
        cmd.args(["run", "--workspace"]).arg(&h.ws);
        cmd.arg("--home").arg(&h.home).arg(&file);
        if quiet {
            cmd.arg("--quiet");
        }
        let out = cmd
            .args(["--", "/bin/sh", "-c", "pwd"])
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&h.ws)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let elsewhere = "[[fs]]\npath = \"~/data\"\nread = true\n";
    let (dir, err) = pwd(elsewhere, false);
    assert_eq!(dir, "/\n", "{err}");
    let ws = h.ws.to_str().unwrap();
    assert!(
        err.contains(&format!(
            "sbx: warning: the current directory {ws} is under no path the policy grants"
        )),
        "{err}"
    );
    let (dir, err) = pwd(elsewhere, true);
    assert_eq!((dir.as_str(), err.as_str()), ("/\n", ""));
    let (dir, err) = pwd(WS, false);
    assert_eq!(dir, format!("{ws}\n"), "{err}");
    assert!(!err.contains("current directory"), "{err}");
}

/// The Linux artifact writes the mounts of protections absent when
/// compiled per directory; `sbx run --artifact` reads them back and
/// still moves aside what the command created there. Control: a file the
/// command writes elsewhere in the workspace stays.
#[cfg(target_os = "linux")]
#[test]
fn an_artifact_read_back_moves_planted_files_aside() {
    let h = Host::new();
    if !std::path::Path::new("/bin/sh").exists() {
        panic!("/bin/sh is needed to write in the sandbox");
    }
    let art = linux_artifact(&h, WS);
    let a = art.to_str().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&art).unwrap()).unwrap();
    let dirs: Vec<&str> = json["namespaces"]["absent"]
        .as_array()
        .expect("absent protections per directory")
        .iter()
        .map(|d| d["dir"].as_str().unwrap())
        .collect();
    assert!(dirs.contains(&h.ws.to_str().unwrap()), "{dirs:?}");
    let ws = h.ws.to_str().unwrap();
    let script = format!("echo x > {ws}/.envrc && echo y > {ws}/notes");
    let (code, _, err) = h.sbx(&["run", "--artifact", a, "--", "/bin/sh", "-c", &script]);
    assert_eq!(code, 0, "{err}");
    assert!(!h.ws.join(".envrc").exists(), "{err}");
    assert!(h.ws.join(".envrc.sbx-blocked").exists(), "{err}");
    assert!(
        err.contains("moved [TMP]/ws/.envrc to [TMP]/ws/.envrc.sbx-blocked"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(h.ws.join("notes")).unwrap(), "y\n");
}

/// A writable home gets one line saying so, once, whatever the number of
/// rules that make it writable; none when home is only read; none with
/// `--quiet`.
#[test]
fn a_writable_home_is_said_once() {
    let h = Host::new();
    let said = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| l.starts_with("sbx: warning: home (~) is writable in this run: "))
            .count()
    };
    let home = "[[fs]]\npath = \"~\"\nread = true\nwrite = true\n\
                \n[[fs]]\npath = \"~/src\"\nread = true\nwrite = true\n";
    let (code, lines) = run(&h, &format!("{WS}\n{home}"), &[]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(said(&lines), 1, "{lines:#?}");
    let line = lines.iter().find(|l| l.contains("home (~)")).unwrap();
    assert!(line.contains("not exhaustive"), "{line}");
    assert!(line.contains("docs/protected.md"), "{line}");
    let (code, lines) = run(&h, &format!("{WS}\n{home}"), &["--quiet"]);
    assert_eq!((code, said(&lines)), (0, 0), "{lines:#?}");
    // The workspace is home (the default policy's workspace rule).
    let file = h.root.join("default.toml");
    std::fs::write(&file, "version = 1\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(["run", "--workspace"])
        .arg(&h.home)
        .arg("--home")
        .arg(&h.home)
        .arg(&file)
        .args(["--", "/bin/sh", "-c", "true"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let err: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!((out.status.code(), said(&err)), (Some(0), 1), "{err:#?}");
    // Read only, or not granted: nothing.
    let read = format!("{WS}\n[[fs]]\npath = \"~\"\nread = true\n");
    for policy in [read.as_str(), WS] {
        let (code, lines) = run(&h, policy, &[]);
        assert_eq!((code, said(&lines)), (0, 0), "{lines:#?}");
    }
}

/// `sbx run --artifact` reads the artifact's precision report only where
/// the run uses it, and there it still counts: `--report` lists the
/// artifact's own lines, and an artifact edited to `required` whose
/// report calls a rule inexact is refused (nothing runs), naming that
/// rule. Control: the same artifact at best effort runs, and edited to
/// `required` with that line made advisory, the rule is not named.
#[cfg(target_os = "linux")]
#[test]
fn an_artifacts_report_is_read_where_the_run_uses_it() {
    let h = Host::new();
    std::fs::create_dir_all(h.ws.join(".git/hooks")).unwrap();
    let art = linux_artifact(&h, &format!("{WS}\n[linux]\nnamespaces = \"never\"\n"));
    let a = art.to_str().unwrap();
    let text = std::fs::read_to_string(&art).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hooks = |l: &serde_json::Value| {
        l["reason"]
            .as_str()
            .unwrap_or("")
            .contains("protected .git/hooks")
            || l["rule"]
                .as_str()
                .unwrap_or("")
                .contains("protected .git/hooks")
    };
    let inexact = json["precision"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| hooks(l) && l["status"] == "wider" && l["advisory"] != true);
    assert!(
        inexact,
        "control: the artifact calls .git/hooks wider: {text}"
    );
    let (code, _, err) = h.sbx(&["run", "--artifact", a, "--report", "--", "sh"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.lines()
            .any(|l| l.contains("wider") && l.contains("protected .git/hooks")),
        "{err}"
    );
    let (code, _, err) = h.sbx(&["run", "--artifact", a, "--quiet", "--", "sh"]);
    assert_eq!(code, 0, "{err}");
    let edited = |advisory: bool| {
        let mut j = json.clone();
        j["enforcement"] = "required".into();
        for l in j["precision"].as_array_mut().unwrap() {
            if hooks(l) && advisory {
                l["advisory"] = true.into();
            }
        }
        let p = h.root.join(format!("edited-{advisory}.json"));
        std::fs::write(&p, j.to_string()).unwrap();
        p
    };
    let strict = edited(false);
    let (code, _, err) = h.sbx(&["run", "--artifact", strict.to_str().unwrap(), "--", "sh"]);
    assert_eq!(code, 125, "{err}");
    assert!(
        err.contains("nothing was run") && err.contains("protected .git/hooks"),
        "{err}"
    );
    // Landlock alone as root is inexact for the loader too: the run is
    // still refused, but .git/hooks is no longer among the reasons.
    let lenient = edited(true);
    let (code, _, err) = h.sbx(&["run", "--artifact", lenient.to_str().unwrap(), "--", "sh"]);
    let reasons = err.split("nothing was run").nth(1).unwrap_or("");
    assert!(!reasons.contains("protected .git/hooks"), "{err}");
    assert!(code == 0 || code == 125, "{err}");
}
