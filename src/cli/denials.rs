//! `sbx run --denials`, and the hint after a failing run.
//!
//! On Linux the same `sbx run` (without the flag), with the same
//! sandbox, runs under `strace -f`; the command's refusals, and the paths
//! it looked for that exist on the host but not in the sandbox, are
//! reported with the rules that would allow them
//! (`sbx::runtime::denials`). strace is the tracer because it decodes
//! every call's arguments on every architecture; the cost is paid only
//! with the flag. macOS and Windows: see docs/macos.md and
//! docs/windows.md.

use camino::Utf8PathBuf;
use std::io::IsTerminal;

const FAILED: i32 = sbx::runtime::EXIT_SBX_FAILED;

/// After a run that failed for any reason but sbx's own, on a terminal:
/// name the flag. Scripts (stderr not a terminal) see nothing new.
pub fn hint(code: i32) {
    if code != 0 && code != FAILED && std::io::stderr().is_terminal() {
        eprintln!(
            "sbx: the command exited with {code}; if the sandbox refused it something \
             or hid a path it needed (\"No such file or directory\"), \
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
    use sbx::runtime::denials::{self, Denied, Keep};
    use std::path::{Path, PathBuf};
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    // The same command line, without the flag (it precedes `--`): the
    // same sandbox as a plain run.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    if let Some(i) = args[..end].iter().position(|a| a == "--denials") {
        args.remove(i);
    }
    let (code, denied) = match traced(&args[1..], Keep::Refusals, &cwd) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("sbx: --denials: {e}: nothing was run");
            return FAILED;
        }
    };
    let workspace = match workspace {
        Some(w) => cwd.join(w.as_std_path()),
        None => cwd.clone(),
    };
    let workspace = sbx::canonical::canonicalize(&workspace).unwrap_or(workspace);
    let home = home
        .map(|h| PathBuf::from(h.as_std_path()))
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
        .unwrap_or_default();
    let anchors = denials::Anchors {
        workspace: &workspace.to_string_lossy(),
        home: &home.to_string_lossy(),
    };
    let exists = |p: &str| Path::new(p).exists();
    // A path the policy lets the command see was truly missing (or made
    // later); without the policy (`--artifact`), the workspace's.
    let denied: Vec<Denied> = denials::on_host(denied, &exists)
        .into_iter()
        .filter(|d| match (d, ir) {
            (Denied::Missing { op, path }, Some(ir)) => {
                !sbx::learn::allows(ir, *op, path, &sbx::learn::kind_on_disk)
            }
            (Denied::Missing { path, .. }, None) => !sbx::ir::path_within(path, anchors.workspace),
            _ => true,
        })
        .collect();
    let learned = ir.map(|ir| sbx::learn::learn(ir, &denied, &anchors, &sbx::learn::kind_on_disk));
    eprint!(
        "{}",
        denials::report_with(
            &denied,
            &anchors,
            &exists,
            learned.as_ref().map(|l| l.rules.as_str())
        )
    );
    code
}

/// Run sbx with `args` under strace and read what its command did, as `keep`
/// says. strace writes to a pipe sbx made before anything starts, named
/// by this process's descriptor (`/proc/PID/fd/N`, close-on-exec here):
/// no process but strace opens it, and the sandboxed command neither
/// inherits it nor can name a file strace would follow. strace traces
/// sbx too, which applies the same sandbox as a plain run; only the
/// command's calls count (`denials::trace`).
#[cfg(target_os = "linux")]
pub(super) fn traced(
    args: &[std::ffi::OsString],
    keep: sbx::runtime::denials::Keep,
    cwd: &std::path::Path,
) -> Result<(i32, Vec<sbx::runtime::denials::Denied>), String> {
    use std::io::BufRead;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    // Neither from PATH: strace runs unconfined (`denials::tracer`), and
    // sbx by name could be a copy that confines nothing.
    let strace = sbx::runtime::denials::tracer::strace()?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find sbx's own program: {e}"))?;
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "cannot make a pipe for the trace: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let start = cwd.to_string_lossy().into_owned();
    let reader = std::thread::spawn(move || {
        let mut t = sbx::runtime::denials::trace::Trace::new(keep, &start);
        let mut r = std::io::BufReader::new(std::fs::File::from(read));
        let mut buf = Vec::new();
        while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            t.feed(String::from_utf8_lossy(&buf).trim_end_matches('\n'));
            buf.clear();
        }
        t.finish()
    });
    let out = format!("/proc/{}/fd/{}", std::process::id(), write.as_raw_fd());
    let mut calls = String::from("%file,%network,%process,fchdir");
    for c in sbx::runtime::denials::BASELINE
        .iter()
        .chain(sbx::runtime::denials::USER_NAMESPACE)
    {
        // `?`: a call this strace does not know (fchmodat2) is no error.
        calls.push_str(",?");
        calls.push_str(c);
    }
    let status = std::process::Command::new(strace)
        .args(["-f", "-qq", "-y", "-s", "4096", "--pidns-translation"])
        .args(["-e", "signal=none", "-e"])
        .arg(format!("trace={calls}"))
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .args(args)
        .status();
    // strace's own descriptor closed when it exited; with this one the
    // reader sees the end.
    drop(write);
    let used = reader.join().unwrap_or_default();
    let status = status.map_err(|e| format!("cannot start strace: {e}"))?;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Ok((code, used))
}
