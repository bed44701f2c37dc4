//! `sbx run` on Linux: apply a Linux artifact (Landlock + seccomp +
//! no_new_privs + env filter + limits) to a child between fork and exec.

mod after;
mod agent;
mod beneath;
mod beside;
mod caches;
mod child;
mod clearing;
mod earlyns;
mod earlyoverlay;
mod guardian;
mod handover;
mod identity;
mod journal;
mod kernel;
mod limits;
mod listen;
mod nofollow;
mod ns;
mod nschild;
mod passfd;
mod pins;
mod plan;
mod planted;
mod program;
mod pts;
mod relaynet;
mod report;
mod repos;
mod seccomp;
mod sockets;
mod start;
mod temp;
mod usersite;
mod wait;

#[cfg(test)]
mod tests;

use crate::back::landlock::{check_config, LinuxArtifact};
use crate::ir::FORMAT_VERSION;
use crate::runtime::EXIT_SBX_FAILED;
use std::ffi::OsString;
use std::path::PathBuf;

pub use kernel::kernel_abi;

/// Serves the network of a sandbox whose policy has host rules (the
/// proxy, issue #15): `serve` gets a TCP listener bound on 127.0.0.1 at
/// each of `ports` (0: any free port) inside the sandbox's network
/// namespace, whose ports the sandbox may connect to, once the command
/// has started. The namespace is new, so fixed ports are free there and
/// the command's environment can name them before it starts. `serve`
/// must not block: `sbx run` waits for the command after it returns.
/// With `relay_ports`, `serve` also gets a listener on `0.0.0.0` at each
/// of them and, last, the DNS responder's UDP socket (as a
/// `TcpListener`: one type for the hand-over), and the namespace has the
/// relay range and a `resolv.conf` naming the responder (issue #37).
#[derive(Clone)]
pub struct ProxyHook {
    pub ports: Vec<u16>,
    pub relay_ports: Vec<u16>,
    /// Ports of loopback forwards (issue #36): `serve` also gets, after
    /// the relay's, listeners on 127.0.0.1 and ::1 at each of them
    /// (`runtime::proxy::relay_listens`).
    pub forward_ports: Vec<u16>,
    pub serve: std::sync::Arc<dyn Fn(Vec<std::net::TcpListener>) + Send + Sync>,
}

impl std::fmt::Debug for ProxyHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProxyHook(ports {:?})", self.ports)
    }
}

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Print what is enforced to stderr before the command starts.
    pub report: bool,
    /// `${WORKSPACE}` for portable artifacts (default: current directory).
    pub workspace: Option<PathBuf>,
    /// `${HOME}` for portable artifacts (default: `$HOME`).
    pub home: Option<PathBuf>,
    /// Use at most this Landlock ABI (testing degradation; 0 = none).
    pub landlock_abi: Option<u32>,
    /// The proxy's hook (default: none). With it the run always gets a
    /// private network namespace when namespaces are available.
    pub proxy: Option<ProxyHook>,
    /// Files this run was read from that the child must not change
    /// (POLICY.md §13): the artifact of `sbx run --artifact`.
    pub own_files: Vec<PathBuf>,
    /// `--quiet`: no warnings about the run's set-up (errors still).
    pub quiet: bool,
    /// The caller has finished the runs that ended without their
    /// after-run work already ([`sweep`], before lowering its policy): the
    /// run does not look again.
    pub earlier_runs_finished: bool,
}

/// Parse and check an artifact written by `sbx compile --target linux`.
pub fn parse_artifact(text: &str) -> Result<LinuxArtifact, String> {
    parse_artifact_to_run(text, true)
}

/// [`parse_artifact`] for a run: the precision report, often the larger
/// part of the file, is read as text and parsed only where the run uses
/// it (`report`, or `enforcement = "required"`, which refuses a sandbox
/// the report calls inexact); elsewhere it is left empty. Its text is
/// still checked to be JSON (any artifact that is not is refused).
pub fn parse_artifact_to_run(text: &str, report: bool) -> Result<LinuxArtifact, String> {
    let not = |e: serde_json::Error| format!("not a Linux artifact: {e}");
    let raw: LinuxArtifact<&serde_json::value::RawValue> =
        serde_json::from_str(text).map_err(not)?;
    let lines = if report || raw.enforcement == crate::ir::Enforcement::Required {
        serde_json::from_str(raw.precision.get()).map_err(not)?
    } else {
        Vec::new()
    };
    let art = raw.with_precision(lines);
    check_artifact(&art)?;
    Ok(art)
}

fn check_artifact(art: &LinuxArtifact) -> Result<(), String> {
    if art.sbx != FORMAT_VERSION {
        return Err(format!(
            "artifact format {} is not supported (expected {FORMAT_VERSION})",
            art.sbx
        ));
    }
    if art.target != crate::back::landlock::TARGET {
        return Err(format!(
            "artifact target is {:?}, not \"linux\"",
            art.target
        ));
    }
    check_config(&art.landlock).map_err(|e| format!("invalid landlock member: {e}"))?;
    let missing = crate::back::landlock::missing_baseline(art);
    if !missing.is_empty() {
        return Err(format!(
            "the artifact lacks part of the baseline every sbx artifact carries \
             (edited, or not written by this sbx; compile it again): {}",
            missing.join(", ")
        ));
    }
    let contradictions = crate::back::landlock::contradictions(art);
    if !contradictions.is_empty() {
        return Err(format!(
            "the artifact is inconsistent: {} (edited, or not written by this sbx; compile \
             it again)",
            contradictions.join("; ")
        ));
    }
    Ok(())
}

/// `sbx run --artifact FILE -- CMD`: the file's text.
pub fn run_json(text: &str, argv: &[OsString], opts: &RunOptions) -> i32 {
    match parse_artifact_to_run(text, opts.report) {
        Ok(art) => run(&art, argv, opts),
        Err(e) => {
            eprintln!("sbx: {e}");
            EXIT_SBX_FAILED
        }
    }
}

/// The hidden first argument with which a guardian runs a fresh sbx to
/// finish a killed sbx's run ([`after_run`]).
pub const AFTER_RUN_ARG: &str = handover::ARG;

/// `sbx __after-run …`, run by a guardian only: finish the after-run work
/// of its killed sbx, with the descriptors it handed over; the exit code.
pub fn after_run(args: &[OsString]) -> i32 {
    handover::main(args)
}

/// `sbx sweep`: finish the after-run work of every run whose sbx and
/// guardian were killed (docs/protected.md, "If sbx is killed"); the
/// lines to show, none when there was nothing to finish.
pub fn sweep() -> Result<Vec<String>, String> {
    let dir = journal::dir().map_err(|e| format!("the after-run journal: {e}"))?;
    Ok(journal::finish_dead(&dir))
}

/// Write warnings to stderr without blocking on a stopped terminal.
pub fn write_warnings(lines: &[String]) -> bool {
    after::write_bounded(lines, after::WRITE_WAIT_MS)
}

/// Run `argv` under `art`; returns `sbx run`'s exit code (CLI.md): the
/// child's code, 128+N for signal N, 126/127 when exec fails, 125 when
/// sbx failed or the sandbox could not be applied as required (then
/// nothing was started).
pub fn run(art: &LinuxArtifact, argv: &[OsString], opts: &RunOptions) -> i32 {
    match start::start(art, argv, opts) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("sbx: {msg}");
            code
        }
    }
}

pub use caches::Listed as CacheEntry;

/// `sbx caches`: every workspace's and policy's private caches.
pub fn list_caches() -> Result<Vec<CacheEntry>, String> {
    let state = crate::runtime::state_dir().ok_or("sbx has no state directory (HOME unset)")?;
    caches::list(state.as_std_path())
        .map_err(|e| format!("{}: {e}", caches::home(state.as_std_path()).display()))
}

/// `sbx caches clear`: remove the private caches of `workspace` (every
/// one when `None`); the entries removed.
pub fn clear_caches(workspace: Option<&std::ffi::OsStr>) -> Result<Vec<CacheEntry>, String> {
    let wanted = workspace.map(caches::workspace_name);
    clear_caches_where(|l| wanted.as_ref().is_none_or(|w| *w == l.workspace))
}

/// `sbx caches clear --gone`: remove the private caches whose workspace
/// no longer exists (nothing there, not even a dangling link); those of
/// an unknown workspace stay. The entries removed.
pub fn clear_gone_caches() -> Result<Vec<CacheEntry>, String> {
    clear_caches_where(|l| {
        l.workspace.starts_with('/')
            && std::fs::symlink_metadata(&l.workspace)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    })
}

/// Remove each key's caches that `wanted` says; the entries removed.
fn clear_caches_where(wanted: impl Fn(&CacheEntry) -> bool) -> Result<Vec<CacheEntry>, String> {
    let mut gone = Vec::new();
    for l in list_caches()? {
        if !wanted(&l) {
            continue;
        }
        caches::remove(&l).map_err(|e| format!("{}: {e}", l.dir.display()))?;
        gone.push(l);
    }
    Ok(gone)
}

/// This process's tag for names it makes (`PID-NANOS`, the nanoseconds
/// in hex): the journal entry, the run's temp directory, the caches'
/// work directories. Not secret: each is made with a counter or
/// `O_EXCL`, so a name already there is never taken over.
fn run_tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos:x}", std::process::id())
}
