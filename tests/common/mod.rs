//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test crate uses a different subset

#[cfg(target_os = "linux")]
pub mod xattr;

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Insta settings: snapshots live in `snapshots/` at the crate root, named
/// without the test module so the names are the same from every test file.
pub fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(root().join("snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The JSON diagnostics document from stderr.
    pub fn diagnostics(&self) -> serde_json::Value {
        serde_json::from_str(&self.stderr)
            .unwrap_or_else(|e| panic!("stderr is not JSON ({e}):\n{}", self.stderr))
    }
}

/// The real binary, run in `dir`. The approvals store is pointed at a path
/// that does not exist, so the user's own approvals never leak in.
pub fn sbx_in(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(args)
        .current_dir(dir)
        .env("XDG_STATE_HOME", "/nonexistent/sbx-test-state")
        .output()
        .expect("run sbx");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "sbx {args:?} panicked:\n{}",
        run.stderr
    );
    run
}

/// The real binary, run from the crate root (so file names in output are
/// the short relative ones).
pub fn sbx(args: &[&str]) -> Run {
    sbx_in(root(), args)
}

/// One compile of the fixtures: its files (relative to the crate root) and
/// `--tool`, under a stable snapshot name.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub files: Vec<String>,
    pub tool: Option<String>,
}

/// Every fixture: each `fixtures/*.toml` (once per tool for the RFD 075
/// config) and `fixtures/layers/` as one base + team + local compile.
pub fn fixture_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for path in toml_files(&root().join("fixtures")) {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let file = format!("fixtures/{stem}.toml");
        if stem == "rfd075" {
            for tool in ["cargo_check", "my_script"] {
                cases.push(Case {
                    name: format!("{stem}-{tool}"),
                    files: vec![file.clone()],
                    tool: Some(tool.into()),
                });
            }
        } else {
            cases.push(Case {
                name: stem,
                files: vec![file],
                tool: None,
            });
        }
    }
    cases.push(Case {
        name: "layers".into(),
        files: ["base", "team", "local"]
            .iter()
            .map(|l| format!("fixtures/layers/{l}.toml"))
            .collect(),
        tool: None,
    });
    cases
}

/// `*.toml` directly in `dir`, sorted.
pub fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// Extra arguments a malformed case needs (the file alone is not the case).
pub fn malformed_args(name: &str) -> &'static [&'static str] {
    match name {
        "tool-missing" => &["--tool", "nope"],
        "tool-not-a-table" => &["--tool", "cargo_check"],
        _ => &[],
    }
}

/// A machine-independent host for CLI tests (lint, explain): a workspace,
/// a home and a PATH of fake programs in one temp dir, redacted to `[TMP]`.
pub struct Host {
    _dir: tempfile::TempDir,
    /// Canonical temp root.
    pub root: PathBuf,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub bin: PathBuf,
}

/// A directory for test hosts that no preset grants: cargo's target
/// temp directory, unless the checkout itself lies under a temp directory
/// (`user_temp` grants /tmp and /var/tmp), then `~/.cache/sbx-tests`.
pub fn outside_presets() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let temp = std::env::var_os("TMPDIR").map(PathBuf::from);
    let under_temp = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .map(PathBuf::from)
        .chain(temp)
        .any(|t| target.starts_with(t));
    // Nor in a git repository (this checkout): the default policy would
    // then grant that repository's worktree read-only (src/lower/above.rs),
    // and a test's "outside the workspace" would be readable.
    let in_repo = target.ancestors().any(|d| d.join(".git").exists());
    if !under_temp && !in_repo {
        return target;
    }
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    let base = home.join(".cache/sbx-tests");
    std::fs::create_dir_all(&base).unwrap();
    base
}

/// [`outside_presets`], or where every user can reach it when some
/// directory above that is closed to others (root's home): a test that
/// runs sbx as another user needs its paths reachable. `/var/cache` is in
/// no preset.
#[cfg(unix)]
#[allow(dead_code)]
pub fn outside_presets_for_anyone() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let base = outside_presets();
    let open = base
        .ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    if open {
        return base;
    }
    let base = PathBuf::from("/var/cache/sbx-tests");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    base
}

impl Host {
    /// Not under /tmp, so the `user_temp` preset does not contain it.
    pub fn new() -> Host {
        let dir = tempfile::Builder::new()
            .prefix("sbx-lint-")
            .tempdir_in(outside_presets())
            .unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        let home = root.join("home");
        let bin = root.join("bin");
        for d in [&ws, &home, &bin, &ws.join(".git"), &ws.join("src")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(ws.join(".env"), "TOKEN=x\n").unwrap();
        for p in ["git", "cargo", "sh", "make"] {
            exe(&bin.join(p));
        }
        Host {
            _dir: dir,
            root,
            ws,
            home,
            bin,
        }
    }

    /// `sbx ARGS` with this host's workspace, home, PATH and approvals, to
    /// run as it is or with more set (another PATH, a directory).
    pub fn command(&self, args: &[&str]) -> Command {
        // Host options right after the subcommand: anything after `--` is argv.
        let mut c = Command::new(env!("CARGO_BIN_EXE_sbx"));
        c.arg(args[0])
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--home")
            .arg(&self.home)
            .arg("--approvals")
            .arg(self.root.join("approvals.json"))
            .args(&args[1..])
            .env("PATH", &self.bin)
            .env_remove("XDG_STATE_HOME")
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        c
    }

    /// [`Host::command`] run, its output with the host's root redacted.
    pub fn sbx(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.command(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            self.redact(&String::from_utf8_lossy(&out.stdout)),
            self.redact(&String::from_utf8_lossy(&out.stderr)),
        )
    }

    pub fn redact(&self, s: &str) -> String {
        s.replace(self.root.to_str().unwrap(), "[TMP]")
    }

    pub fn compile_options(&self) -> sbx::Options {
        sbx::Options {
            workspace: Some(self.ws.to_str().unwrap().into()),
            home: Some(self.home.to_str().unwrap().into()),
            ..Default::default()
        }
    }
}

/// Snapshots live in `snapshots/` at the crate root.
#[macro_export]
macro_rules! snap {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}

fn exe(path: &Path) {
    std::fs::write(path, "#!/bin/sh\nexit 0\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// An HTTP server on 127.0.0.1 that answers every request with its
/// request line; its port.
pub fn request_line_server() -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut b = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&buf);
                let line = text.lines().next().unwrap_or("").to_string();
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{line}",
                    line.len()
                );
            });
        }
    });
    port
}

/// Whether `tool --version` runs and succeeds.
/// Whether `tool` is on PATH (`command -v`), for tools that have no
/// `--version` (or print it as a failure).
#[allow(dead_code)]
pub fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `env` with the proxy variables unset, in both cases: put before a
/// command that must reach the network without them.
#[allow(dead_code)]
pub const WITHOUT_PROXY_VARS: [&str; 13] = [
    "env",
    "-u",
    "HTTP_PROXY",
    "-u",
    "HTTPS_PROXY",
    "-u",
    "ALL_PROXY",
    "-u",
    "http_proxy",
    "-u",
    "https_proxy",
    "-u",
    "all_proxy",
];

/// A finished command's exit code (-1: killed by a signal), stdout and
/// stderr as text.
#[allow(dead_code)]
pub fn outcome(out: std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether an `sbx run --report` (its stderr: `report`) got the
/// namespace layer; if not, a line saying the test is skipped (under
/// CI=true a failure instead).
pub fn namespaced(report: &str) -> bool {
    if report.contains("namespaces are not available") {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v != "true"),
            "CI=true but namespaces are not available: {report}"
        );
        println!("SKIPPED: namespaces are not available here");
        return false;
    }
    true
}
