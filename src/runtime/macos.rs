//! `sbx run` on macOS: the policy's SBPL profile goes to a private file,
//! then `/usr/bin/sandbox-exec -f FILE [-D NAME=value…] -- PROGRAM ARGS…`
//! runs with the filtered environment, and its exit status is ours. With
//! host rules sbx first starts its filtering proxy on this host's
//! loopback ([`start_proxy`]).
//!
//! Planning, the proxy, the private file and waiting are plain POSIX and
//! tested on every Unix; only [`run`] and [`run_artifact`] are
//! macOS-only.

use crate::back::landlock::ProxySpec;
use crate::back::sbpl::{self, Meta, PROGRAM_PARAM, PROXY_PARAMS};
use crate::ir::{self, Enforcement, Ir, Limits, PathMode, Precision};
use crate::runtime::env::EnvFilter;
use crate::runtime::proxy::{self, Proxy};
use crate::runtime::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SBX_FAILED};
use crate::sbpl::{Datum, DatumKind, FileOp, Profile};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Absolute, so a `sandbox-exec` earlier on PATH is never used.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Print the parameters and every approximation to stderr first.
    pub report: bool,
    /// `--quiet`: no refusal printed as it happens (the summary at exit
    /// still lists them).
    pub quiet: bool,
    /// `WORKSPACE` for portable profiles (default: the current directory).
    pub workspace: Option<PathBuf>,
    /// `HOME` for portable profiles (default: `$HOME`).
    pub home: Option<PathBuf>,
}

/// An exit code (CLI.md) and why.
pub type Fail = (i32, String);

fn fail(msg: impl Into<String>) -> Fail {
    (EXIT_SBX_FAILED, msg.into())
}

/// Everything needed to start the command.
#[derive(Debug, Clone)]
pub struct Plan {
    pub profile: String,
    /// `-D NAME=value`: paths in the order the profile names them, then
    /// the proxy's ports once [`start_proxy`] has run.
    pub params: Vec<(String, String)>,
    /// Absolute path of the program as found (the child's `argv[0]`).
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub limits: Limits,
    pub precision: Vec<Precision>,
    /// Host rules: the rules of the proxy the run starts.
    pub proxy: Option<ProxySpec>,
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `execvp`-style lookup in the child's PATH: 127 if nothing is found, 126
/// if only non-executable files are.
pub fn resolve_program(name: &OsStr, path_var: Option<&OsStr>) -> Result<PathBuf, Fail> {
    let shown = name.to_string_lossy();
    if name.is_empty() {
        return Err((EXIT_NOT_FOUND, "empty command name".into()));
    }
    let candidates: Vec<PathBuf> = if name.as_bytes().contains(&b'/') {
        let cwd = std::env::current_dir().map_err(|e| fail(format!("current directory: {e}")))?;
        vec![cwd.join(name)]
    } else {
        let dirs = path_var.unwrap_or(OsStr::new("/usr/bin:/bin:/usr/sbin:/sbin"));
        std::env::split_paths(dirs)
            .filter(|d| d.is_absolute())
            .map(|d| d.join(name))
            .collect()
    };
    if let Some(p) = candidates.iter().find(|p| is_executable_file(p)) {
        return Ok(p.clone());
    }
    if candidates.iter().any(|p| p.exists()) {
        return Err((EXIT_NOT_EXECUTABLE, format!("{shown}: not executable")));
    }
    Err((EXIT_NOT_FOUND, format!("{shown}: command not found")))
}

fn utf8(p: &Path) -> Result<String, Fail> {
    p.to_str()
        .map(String::from)
        .ok_or_else(|| fail(format!("{} is not valid UTF-8", p.display())))
}

/// Lexically clean an absolute path (the profile matches names).
fn clean(p: &Path) -> Result<String, Fail> {
    Ok(crate::lower::paths::normalise(&utf8(p)?))
}

/// The spellings Seatbelt may see for the program: as found, and resolved.
fn program_spellings(program: &Path) -> Result<Vec<String>, Fail> {
    let mut out = vec![clean(program)?];
    if let Ok(c) = std::fs::canonicalize(program) {
        let c = utf8(&c)?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

/// A `-D` value: absolute, symlinks resolved (Seatbelt sees resolved
/// paths), and nothing the sandbox compiler would read as more than text.
fn param_value(name: &str, p: &Path) -> Result<String, Fail> {
    let c = std::fs::canonicalize(p).map_err(|e| fail(format!("{name}={}: {e}", p.display())))?;
    let v = utf8(&c)?;
    if v.chars().any(char::is_control) || v.contains("${") {
        return Err(fail(format!(
            "{name}={v:?} cannot be passed to sandbox-exec safely"
        )));
    }
    Ok(v)
}

fn param_values(
    names: &[String],
    program: &Path,
    opts: &RunOptions,
) -> Result<Vec<(String, String)>, Fail> {
    let mut out = Vec::new();
    for name in names {
        if PROXY_PARAMS.contains(&name.as_str()) {
            continue; // the ports: start_proxy
        }
        let path = match name.as_str() {
            ir::WORKSPACE_PARAM => match &opts.workspace {
                Some(w) => w.clone(),
                None => std::env::current_dir().map_err(|e| fail(format!("workspace: {e}")))?,
            },
            ir::HOME_PARAM => match &opts.home {
                Some(h) => h.clone(),
                None => std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .ok_or_else(|| fail("$HOME is not set; pass --home DIR"))?,
            },
            ir::TEMP_PARAM => std::env::temp_dir(),
            PROGRAM_PARAM => program.to_path_buf(),
            other => {
                return Err(fail(format!(
                    "the profile reads (param {other:?}), which sbx run cannot fill"
                )))
            }
        };
        out.push((name.clone(), param_value(name, &path)?));
    }
    Ok(out)
}

fn child_env(env: &ir::Env) -> Result<Vec<(OsString, OsString)>, Fail> {
    let filter = EnvFilter::new(env, false).map_err(|e| fail(format!("env: {e}")))?;
    Ok(filter.apply(std::env::vars_os()))
}

fn path_of(env: &[(OsString, OsString)]) -> Option<&OsStr> {
    env.iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str())
}

/// Plan a run from a policy's IR (normally lowered for this host).
pub fn plan(ir: &Ir, argv: &[OsString], opts: &RunOptions) -> Result<Plan, Fail> {
    let (name, args) = argv.split_first().ok_or_else(|| fail("no command given"))?;
    let env = child_env(&ir.env)?;
    let program = resolve_program(name, path_of(&env))?;
    let emitted = sbpl::emit_with(
        ir,
        &sbpl::Options {
            program: program_spellings(&program)?,
        },
    )
    .map_err(|e| fail(e.to_string()))?;
    if ir.enforcement == Enforcement::Required {
        let inexact: Vec<String> = emitted
            .precision
            .iter()
            .filter(|p| p.status.is_inexact() && !p.advisory)
            .map(|p| format!("{}: {}", p.rule, p.reason))
            .collect();
        if !inexact.is_empty() {
            return Err(fail(format!(
                "enforcement = \"required\", but not exact on macOS:\n  {}",
                inexact.join("\n  ")
            )));
        }
    }
    let names = match ir.mode {
        PathMode::Portable => referenced_params(&emitted.text)?,
        PathMode::Resolved => Vec::new(),
    };
    Ok(Plan {
        params: param_values(&names, &program, opts)?,
        profile: emitted.text,
        program,
        args: args.to_vec(),
        env,
        limits: ir.limits.clone(),
        precision: emitted.precision,
        proxy: sbpl::proxy_spec(ir),
    })
}

/// Plan a run of a profile `sbx compile --target macos` wrote (possibly
/// `--portable`, possibly on another machine) or one written by hand.
pub fn plan_artifact(text: &str, argv: &[OsString], opts: &RunOptions) -> Result<Plan, Fail> {
    let (name, args) = argv.split_first().ok_or_else(|| fail("no command given"))?;
    let findings = crate::sbpl::check_source(text);
    if crate::sbpl::has_errors(&findings) {
        let lines: Vec<String> = findings.iter().map(|f| f.render("profile")).collect();
        return Err(fail(format!("invalid profile:\n{}", lines.join("\n"))));
    }
    let (env, limits, proxy) = match Meta::read(text) {
        Some(Ok(m)) if m.target == sbpl::TARGET => (m.env, m.limits, m.proxy),
        Some(Ok(m)) => {
            return Err(fail(format!(
                "artifact target is {:?}, not \"macos\"",
                m.target
            )))
        }
        Some(Err(e)) => return Err(fail(format!("unreadable sbx-meta line: {e}"))),
        // A hand-written profile: the minimal environment, no limits.
        None => (ir::Env::minimal(ir::Os::Macos), Limits::default(), None),
    };
    let env = child_env(&env)?;
    let program = resolve_program(name, path_of(&env))?;
    let canonical = std::fs::canonicalize(&program).unwrap_or_else(|_| program.clone());
    let names = referenced_params(text)?;
    if let (None, Some(n)) = (
        &proxy,
        names.iter().find(|n| PROXY_PARAMS.contains(&n.as_str())),
    ) {
        return Err(fail(format!(
            "the profile reads (param {n:?}) but its sbx-meta line has no proxy rules: \
             sbx run cannot start a proxy that enforces them"
        )));
    }
    Ok(Plan {
        params: param_values(&names, &canonical, opts)?,
        profile: text.to_string(),
        program,
        args: args.to_vec(),
        env,
        limits,
        precision: Vec::new(),
        proxy,
    })
}

/// Host rules: start the proxy with the plan's rules on this host's
/// loopback, at ports the system picks, with a new token; pass the ports
/// as the profile's parameters and give the command its proxy variables.
/// Unlike Linux there is no private network namespace, so every local
/// process can reach the listeners: the token keeps them out
/// (docs/macos.md, "Host rules: the proxy"). `None` without host rules.
pub fn start_proxy(plan: &mut Plan, echo: proxy::Echo) -> Result<Option<Proxy>, Fail> {
    let Some(spec) = &plan.proxy else {
        return Ok(None);
    };
    let listen = || {
        std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| fail(format!("the proxy cannot listen on 127.0.0.1: {e}")))
    };
    let listeners = vec![listen()?, listen()?];
    let token = proxy::auth::new_token().map_err(|e| fail(format!("the proxy's token: {e}")))?;
    let p = Proxy::for_run(spec, listeners, None, echo, Some(token.clone()))
        .map_err(|e| fail(format!("the proxy did not start: {e}")))?;
    let (http, socks) = p.ports();
    for (name, port) in PROXY_PARAMS.iter().zip([http, socks]) {
        plan.params.retain(|(k, _)| k != name);
        plan.params.push((name.to_string(), port.to_string()));
    }
    proxy::merge_env(&mut plan.env, http, socks, Some(&token));
    Ok(Some(p))
}

/// Every `(param "NAME")` in the profile, in order of first use.
fn referenced_params(text: &str) -> Result<Vec<String>, Fail> {
    fn walk(d: &Datum, out: &mut Vec<String>) {
        if let DatumKind::List(items) = &d.kind {
            if let (Some("param"), [_, name]) = (d.head(), items.as_slice()) {
                if let Some(n) = name.as_string() {
                    if !out.iter().any(|o| o == n) {
                        out.push(n.to_string());
                    }
                }
            }
            items.iter().for_each(|i| walk(i, out));
        }
    }
    let data = crate::sbpl::parse(text).map_err(|e| fail(format!("profile: {e}")))?;
    let mut out = Vec::new();
    data.iter().for_each(|d| walk(d, &mut out));
    Ok(out)
}

/// `-f FILE -D NAME=value… -- PROGRAM ARGS…`
pub fn sandbox_exec_args(profile: &Path, plan: &Plan) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["-f".into(), profile.into()];
    for (k, v) in &plan.params {
        out.push("-D".into());
        out.push(format!("{k}={v}").into());
    }
    out.push("--".into());
    out.push(plan.program.clone().into());
    out.extend(plan.args.iter().cloned());
    out
}

/// The profile on disk for the lifetime of the run; removed on drop.
#[derive(Debug)]
pub struct ProfileFile {
    dir: PathBuf,
    pub path: PathBuf,
}

impl Drop for ProfileFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Write the profile where the sandboxed process (or an earlier one still
/// running under the same policy) can neither change nor replace it: a
/// new 0700 directory holding a 0600 file created with `O_EXCL`, in the
/// first of `bases` the profile itself denies writing, creating and
/// deleting at (checked with the evaluator).
pub fn write_private(plan: &Plan, bases: &[PathBuf]) -> Result<ProfileFile, Fail> {
    let params: BTreeMap<String, String> = plan.params.iter().cloned().collect();
    let profile =
        Profile::from_source(&plan.profile, &params).map_err(|e| fail(format!("profile: {e}")))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    for base in bases {
        let Ok(base) = std::fs::canonicalize(base) else {
            continue;
        };
        let dir = base.join(format!("sbx-{}-{stamp}", std::process::id()));
        let path = dir.join("profile.sb");
        if !untouchable(&profile, &path) {
            continue;
        }
        if std::fs::DirBuilder::new().mode(0o700).create(&dir).is_err() {
            continue;
        }
        let file = ProfileFile {
            dir,
            path: path.clone(),
        };
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, plan.profile.as_bytes()));
        return match written {
            Ok(()) => Ok(file),
            Err(e) => Err(fail(format!("cannot write {}: {e}", path.display()))),
        };
    }
    Err(fail(
        "no place for the profile that the sandbox cannot write: the policy makes every candidate writable",
    ))
}

/// The profile certainly denies changing `file` and moving its directory
/// or any directory above it.
fn untouchable(profile: &Profile, file: &Path) -> bool {
    let Some(file) = file.to_str() else {
        return false;
    };
    let denied = |op, p: &str| profile.decide(op, p).is_deny();
    let writes = [FileOp::Write, FileOp::WriteCreate, FileOp::WriteUnlink];
    if !writes.iter().all(|op| denied(*op, file)) {
        return false;
    }
    let mut cur = Path::new(file).parent();
    while let Some(d) = cur.and_then(Path::to_str) {
        if d == "/" {
            break;
        }
        if !denied(FileOp::WriteCreate, d) || !denied(FileOp::WriteUnlink, d) {
            return false;
        }
        cur = Path::new(d).parent();
    }
    true
}

/// Candidate directories for the profile file, most private first.
pub fn profile_bases() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(h) = std::env::var_os("HOME") {
        let caches = Path::new(&h).join("Library/Caches");
        let dir = caches.join("sbx-policy");
        if caches.is_dir() && std::fs::DirBuilder::new().mode(0o700).create(&dir).is_ok()
            || dir.is_dir()
        {
            out.push(dir);
        }
    }
    out.push(std::env::temp_dir());
    out.push(PathBuf::from("/private/tmp"));
    out
}

/// Print what is enforced and how approximately, before the command.
pub fn report(plan: &Plan) {
    eprintln!(
        "sbx: {SANDBOX_EXEC} with a {}-line profile",
        plan.profile.lines().count()
    );
    for (k, v) in &plan.params {
        eprintln!("sbx:   -D {k}={v}");
    }
    if plan.proxy.is_some() {
        eprintln!(
            "sbx:   host rules: outbound TCP only through sbx's proxy on 127.0.0.1 \
             (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, with this run's token)"
        );
    }
    for p in plan.precision.iter().filter(|p| p.status.is_inexact()) {
        eprintln!("sbx:   {} {:?}: {}", p.rule, p.status, p.reason);
    }
}

/// Start `program` with exactly `env`, apply the CPU limit in the child,
/// and wait; past the wall-clock limit the child's process group is
/// killed. Returns `sbx run`'s exit code: the child's, or 128+N for
/// signal N.
pub fn spawn_and_wait(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    limits: &Limits,
) -> Result<i32, Fail> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env_clear().envs(env.iter().cloned());
    if let Some(secs) = limits.cpu_time_s {
        // SAFETY: setrlimit is async-signal-safe and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: secs as libc::rlim_t,
                    rlim_max: secs as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_CPU, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let wall = limits.wall_time_s.map(std::time::Duration::from_secs);
    if wall.is_some() {
        // Its own group, so the whole tree can be killed at the limit.
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| fail(format!("cannot start {}: {e}", program.display())))?;
    let pid = child.id() as libc::pid_t;
    let _signals = Signals::install(if wall.is_some() { pid } else { 0 });
    let status = match wall {
        None => child.wait(),
        Some(limit) => {
            let start = std::time::Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(s)) => break Ok(s),
                    Ok(None) if start.elapsed() >= limit => {
                        // SAFETY: signalling the group we created.
                        unsafe { libc::kill(-pid, libc::SIGKILL) };
                        break child.wait();
                    }
                    Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
                    Err(e) => break Err(e),
                }
            }
        }
    }
    .map_err(|e| fail(format!("waiting for the command: {e}")))?;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => EXIT_SBX_FAILED,
    })
}

/// While the child runs: terminal signals (same group) are left to the
/// child and ignored here; with a separate group they are forwarded.
struct Signals {
    old: Vec<(libc::c_int, libc::sighandler_t)>,
}

static GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let g = GROUP.load(std::sync::atomic::Ordering::SeqCst);
    if g > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(-g, sig) };
    }
}

impl Signals {
    fn install(group: libc::pid_t) -> Signals {
        GROUP.store(group, std::sync::atomic::Ordering::SeqCst);
        let handler = if group > 0 {
            forward as extern "C" fn(libc::c_int) as libc::sighandler_t
        } else {
            libc::SIG_IGN
        };
        let mut old = Vec::new();
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
            if group == 0 && (sig == libc::SIGTERM || sig == libc::SIGHUP) {
                continue; // those end sbx as usual; the child gets its own
            }
            // SAFETY: the handler only calls kill; the old one is restored.
            let prev = unsafe { libc::signal(sig, handler) };
            old.push((sig, prev));
        }
        Signals { old }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring the previous disposition.
            unsafe { libc::signal(*sig, *prev) };
        }
        GROUP.store(0, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(target_os = "macos")]
fn start(mut plan: Plan, opts: &RunOptions) -> i32 {
    let served = match start_proxy(&mut plan, proxy::Echo::new(opts.report, opts.quiet)) {
        Ok(p) => p,
        Err((code, msg)) => {
            eprintln!("sbx: {msg}");
            return code;
        }
    };
    if opts.report {
        report(&plan);
    }
    // After the proxy: the profile is checked with its ports filled in.
    let file = match write_private(&plan, &profile_bases()) {
        Ok(f) => f,
        Err((code, msg)) => {
            eprintln!("sbx: {msg}");
            return code;
        }
    };
    let args = sandbox_exec_args(&file.path, &plan);
    let code = match spawn_and_wait(Path::new(SANDBOX_EXEC), &args, &plan.env, &plan.limits) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("sbx: {msg}");
            code
        }
    };
    // What the proxy refused, with the rules that would allow it.
    if let Some(p) = served {
        eprint!("{}", p.finish());
    }
    code
}

/// `sbx run POLICY -- CMD` on macOS, from the policy's IR.
#[cfg(target_os = "macos")]
pub fn run(ir: &Ir, argv: &[OsString], opts: &RunOptions) -> i32 {
    match plan(ir, argv, opts) {
        Ok(p) => start(p, opts),
        Err((code, msg)) => {
            eprintln!("sbx: {msg}");
            code
        }
    }
}

/// `sbx run --artifact profile.sb -- CMD` on macOS.
#[cfg(target_os = "macos")]
pub fn run_artifact(text: &str, argv: &[OsString], opts: &RunOptions) -> i32 {
    match plan_artifact(text, argv, opts) {
        Ok(p) => start(p, opts),
        Err((code, msg)) => {
            eprintln!("sbx: {msg}");
            code
        }
    }
}

#[cfg(test)]
mod tests;
