//! `sbx run --denials`, and the hint after a failing run.
//!
//! On Linux the same `sbx run` (without the flag) runs under `strace -f`,
//! which records only failing calls (`-Z`), one file per process; the
//! refusals among them are reported with the rules that would allow
//! them (`sbx::runtime::denials`). strace is the tracer because it
//! decodes every call's arguments on every architecture; the cost is
//! paid only with the flag. macOS and Windows: see docs/macos.md and
//! docs/windows.md.

use camino::Utf8PathBuf;
use std::io::IsTerminal;

const FAILED: i32 = sbx::runtime::EXIT_SBX_FAILED;

/// After a run that failed for any reason but sbx's own, on a terminal:
/// name the flag. Scripts (stderr not a terminal) see nothing new.
pub fn hint(code: i32) {
    if code != 0 && code != FAILED && std::io::stderr().is_terminal() {
        eprintln!(
            "sbx: the command exited with {code}; if the sandbox refused it something, \
             `sbx run --denials …` lists what, with the rules to add"
        );
    }
}

#[cfg(not(target_os = "linux"))]
pub fn run(
    _workspace: Option<&Utf8PathBuf>,
    _home: Option<&Utf8PathBuf>,
    _ir: Option<&sbx::ir::Ir>,
    rerun: impl FnOnce() -> i32,
) -> i32 {
    if cfg!(target_os = "macos") {
        eprintln!(
            "sbx: --denials: on macOS the sandbox's refusals are in the unified log; \
             watch them with: log stream --style compact --predicate 'sender == \"Sandbox\"'"
        );
    } else {
        eprintln!("sbx: --denials is not available on this OS (docs/windows.md)");
    }
    rerun()
}

/// `ir`: the policy lowered for this host, for the suggestions (`None`
/// with `--artifact`).
#[cfg(target_os = "linux")]
pub fn run(
    workspace: Option<&Utf8PathBuf>,
    home: Option<&Utf8PathBuf>,
    ir: Option<&sbx::ir::Ir>,
    _rerun: impl FnOnce() -> i32,
) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    use std::path::{Path, PathBuf};
    let Some(strace) = find("strace") else {
        eprintln!("sbx: --denials needs strace on PATH (apt-get install strace): nothing was run");
        return FAILED;
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let dir = match private_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("sbx: --denials: cannot make a directory for the trace: {e}");
            return FAILED;
        }
    };
    // The same command line, without the flag (it precedes `--`).
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    if let Some(i) = args[..end].iter().position(|a| a == "--denials") {
        args.remove(i);
    }
    // What no rule grants must answer EACCES for the trace to see it;
    // the namespace layer's new root would answer ENOENT.
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.insert(end, "--host-root".into());
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from(&args[0]));
    let status = std::process::Command::new(strace)
        .args([
            "-f",
            "-ff",
            "-qq",
            "-Z",
            "-y",
            "-s",
            "4096",
            "-e",
            "signal=none",
            "-o",
        ])
        .arg(dir.join("t"))
        .arg("--")
        .arg(exe)
        .args(&args[1..])
        .status();
    let code = match status {
        Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
        Err(e) => {
            eprintln!("sbx: --denials: cannot start strace: {e}");
            let _ = std::fs::remove_dir_all(&dir);
            return FAILED;
        }
    };
    let cwd_s = cwd.to_string_lossy().into_owned();
    let mut denied = Vec::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path()) {
            denied.extend(sbx::runtime::denials::parse(&text, &cwd_s));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let workspace = match workspace {
        Some(w) => cwd.join(w.as_std_path()),
        None => cwd.clone(),
    };
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    let home = home
        .map(|h| PathBuf::from(h.as_std_path()))
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
        .unwrap_or_default();
    let anchors = sbx::runtime::denials::Anchors {
        workspace: &workspace.to_string_lossy(),
        home: &home.to_string_lossy(),
    };
    let learned = ir.map(|ir| sbx::learn::learn(ir, &denied, &anchors, &sbx::learn::kind_on_disk));
    eprint!(
        "{}",
        sbx::runtime::denials::report_with(
            &denied,
            &anchors,
            &|p| Path::new(p).exists(),
            learned.as_ref().map(|l| l.rules.as_str())
        )
    );
    code
}

#[cfg(target_os = "linux")]
pub(super) fn find(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A new directory only this user can enter, for the trace files.
#[cfg(target_os = "linux")]
pub(super) fn private_dir() -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = base.join(format!("sbx-denials-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
