//! sbx in the ecosystem's own forms (issue #39): the pre-commit hook
//! (`.pre-commit-hooks.yaml`) run by the real pre-commit on a throwaway
//! repository, and the GitHub Action (`action.yml`) and the hook manifest
//! validated against their schemas (check-jsonschema's vendored
//! SchemaStore schemas, pre-commit's own manifest check).
//!
//! pre-commit and check-jsonschema are installed with pip into a venv
//! under the target directory (kept between runs). Without pip or the
//! network the tests say so and pass, except in CI (`CI=true`), where
//! they fail: the README's test command must run them.
//!
//! The hook's `language: rust` builds sbx with `cargo install` from the
//! repository (a release build, minutes on a small machine): here the
//! same hook, its `entry` and `files` read from the manifest, runs the sbx
//! this test suite built (`language: system`).

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

const PRE_COMMIT: &str = "pre-commit==4.7.0";
const CHECK_JSONSCHEMA: &str = "check-jsonschema==0.39.0";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's bin directory, or `None` (said) where it cannot be made;
/// made once for both tests, which run on threads of one process.
fn tools() -> Option<PathBuf> {
    static MADE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    MADE.get_or_init(make_tools).clone()
}

fn make_tools() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ecosystem-venv");
    let bin = venv.join("bin");
    if bin.join("pre-commit").exists() && bin.join("check-jsonschema").exists() {
        return Some(bin);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new(bin.join("pip"))
            .args(["install", "-q", PRE_COMMIT, CHECK_JSONSCHEMA])
            .status()
            .is_ok_and(|s| s.success());
    if made {
        return Some(bin);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("cannot install {PRE_COMMIT} and {CHECK_JSONSCHEMA} with python3 -m venv and pip");
    }
    eprintln!("ecosystem: python3 venv or pip unavailable (offline?): skipped");
    None
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("spawn");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_action_and_the_hook_manifest_are_valid() {
    let Some(bin) = tools() else { return };
    let (ok, text) = run(Command::new(bin.join("check-jsonschema"))
        .args(["--builtin-schema", "vendor.github-actions"])
        .arg(repo().join("action.yml")));
    assert!(ok, "action.yml: {text}");
    let (ok, text) = run(Command::new(bin.join("pre-commit"))
        .arg("validate-manifest")
        .arg(repo().join(".pre-commit-hooks.yaml")));
    assert!(ok, ".pre-commit-hooks.yaml: {text}");
}

#[test]
fn the_pre_commit_hook_checks_each_changed_policy() {
    let Some(bin) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let git = |args: &[&str]| {
        let (ok, text) = run(Command::new("git").args(args).current_dir(r));
        assert!(ok, "git {args:?}: {text}");
    };
    git(&["init", "-q", "."]);
    git(&["config", "user.email", "t@example.com"]);
    git(&["config", "user.name", "t"]);
    // The hook as the manifest defines it, on this build's sbx.
    let sbx = env!("CARGO_BIN_EXE_sbx");
    let script = format!(
        r#"
import yaml
hook = yaml.safe_load(open({manifest:?}))[0]
assert hook["entry"].startswith("sbx "), hook["entry"]
hook["entry"] = {sbx:?} + hook["entry"][3:]
hook["language"] = "system"
yaml.safe_dump({{"repos": [{{"repo": "local", "hooks": [hook]}}]}}, open(".pre-commit-config.yaml", "w"))
"#,
        manifest = repo().join(".pre-commit-hooks.yaml").to_str().unwrap(),
    );
    let (ok, text) = run(Command::new(bin.join("python"))
        .args(["-c", &script])
        .current_dir(r));
    assert!(ok, "{text}");
    std::fs::create_dir_all(r.join(".sbx")).unwrap();
    std::fs::create_dir_all(r.join("app")).unwrap();
    std::fs::write(r.join("sbx.toml"), "version = 1\n").unwrap();
    std::fs::write(r.join("app/ci.sbx.toml"), "version = 1\n").unwrap();
    // Checked on its own, this would pass; merged into sbx.toml as a
    // layer it would not change that.
    std::fs::write(r.join(".sbx/bad.toml"), "version = 1\n[fs]\npath = 3\n").unwrap();
    // Not a policy file by the hook's names: never checked.
    std::fs::write(r.join("Cargo.toml"), "[package]\nnot = a policy\n").unwrap();
    git(&["add", "-A"]);
    let pre_commit = || {
        run(Command::new(bin.join("pre-commit"))
            .args(["run", "--all-files"])
            .env("PRE_COMMIT_HOME", r.join(".cache"))
            .current_dir(r))
    };
    let (ok, text) = pre_commit();
    assert!(!ok, "a bad policy passed: {text}");
    assert!(text.contains(".sbx/bad.toml"), "{text}");
    assert!(!text.contains("Cargo.toml"), "{text}");
    std::fs::write(r.join(".sbx/bad.toml"), "version = 1\n").unwrap();
    git(&["add", "-A"]);
    let (ok, text) = pre_commit();
    assert!(ok, "good policies failed: {text}");
    assert!(
        text.contains("sbx check") && text.contains("Passed"),
        "{text}"
    );
}
