//! `sbx run` on Linux: apply a Linux artifact (Landlock + seccomp +
//! no_new_privs + env filter + limits) to a child between fork and exec.

mod after;
mod beneath;
mod child;
mod identity;
mod kernel;
mod limits;
mod listen;
mod ns;
mod nschild;
mod passfd;
mod pins;
mod plan;
mod planted;
mod program;
mod relaynet;
mod report;
mod repos;
mod seccomp;
mod sockets;
mod temp;
mod wait;

#[cfg(test)]
mod tests;

use crate::back::landlock::{check_config, LinuxArtifact};
use crate::ir::{Enforcement, Precision, Status, FORMAT_VERSION};
use crate::runtime::env::EnvFilter;
use crate::runtime::expand::Values;
use crate::runtime::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SBX_FAILED};
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
}

/// Parse and check an artifact written by `sbx compile --target linux`.
pub fn parse_artifact(text: &str) -> Result<LinuxArtifact, String> {
    let art: LinuxArtifact =
        serde_json::from_str(text).map_err(|e| format!("not a Linux artifact: {e}"))?;
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
    match parse_artifact(text) {
        Ok(art) => run(&art, argv, opts),
        Err(e) => {
            eprintln!("sbx: {e}");
            EXIT_SBX_FAILED
        }
    }
}

/// Run `argv` under `art`; returns `sbx run`'s exit code (CLI.md): the
/// child's code, 128+N for signal N, 126/127 when exec fails, 125 when
/// sbx failed or the sandbox could not be applied as required (then
/// nothing was started).
pub fn run(art: &LinuxArtifact, argv: &[OsString], opts: &RunOptions) -> i32 {
    match start(art, argv, opts) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("sbx: {msg}");
            code
        }
    }
}

type Fail = (i32, String);

fn fail(msg: impl Into<String>) -> Fail {
    (EXIT_SBX_FAILED, msg.into())
}

fn utf8(p: &Path) -> Result<String, Fail> {
    p.to_str()
        .map(String::from)
        .ok_or_else(|| fail(format!("path {} is not valid UTF-8", p.display())))
}

fn cstring(b: &[u8]) -> Result<CString, Fail> {
    CString::new(b).map_err(|_| fail("argument or environment contains a NUL byte"))
}

/// Executables that get `execute`: the program and the listed commands,
/// each with the interpreters the kernel opens to start it. Listed
/// commands not found are reported.
fn exec_files(
    art: &LinuxArtifact,
    program: &Path,
    path_var: Option<&OsStr>,
) -> Result<(Vec<String>, Vec<Precision>), Fail> {
    let mut lines = Vec::new();
    let mut paths = program::exec_chain(program);
    for e in art.exec_allow.iter().flatten() {
        let found = match &e.path {
            Some(p) => Some(PathBuf::from(p)),
            None => program::resolve(OsStr::new(&e.name), path_var),
        };
        match found {
            Some(p) => paths.extend(program::exec_chain(&p)),
            None => lines.push(Precision {
                rule: format!("commands.{}", e.name),
                target: "linux".into(),
                status: Status::Dropped,
                reason: format!("{} was not found through PATH: it cannot be run", e.name),
                advisory: false,
            }),
        }
    }
    let mut files = Vec::new();
    for p in &paths {
        let s = utf8(p)?;
        if !files.contains(&s) {
            files.push(s);
        }
    }
    Ok((files, lines))
}

/// Values for a portable artifact's placeholders.
fn values(opts: &RunOptions) -> Result<Values, Fail> {
    let cwd = || std::env::current_dir().map_err(|e| fail(format!("current directory: {e}")));
    let workspace = match &opts.workspace {
        Some(w) if w.is_absolute() => w.clone(),
        Some(w) => cwd()?.join(w),
        None => cwd()?,
    };
    let home = match &opts.home {
        Some(h) => h.clone(),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default(),
    };
    let temp = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    Ok(Values {
        workspace: utf8(&workspace)?,
        home: utf8(&home)?,
        temp: utf8(&temp)?,
    })
}

/// `dir` (a canonical current directory) is the workspace or inside it.
fn in_workspace(dir: &std::path::Path, workspace: &str) -> bool {
    let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| PathBuf::from(workspace));
    dir.starts_with(ws)
}

fn start(art: &LinuxArtifact, argv: &[OsString], opts: &RunOptions) -> Result<i32, Fail> {
    check_artifact(art).map_err(fail)?;
    let name = argv.first().ok_or_else(|| fail("no command given"))?;

    let filter = EnvFilter::new(&art.env, false).map_err(|e| fail(format!("env: {e}")))?;
    let mut env = filter.apply(std::env::vars_os());
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());

    let program = program::resolve(name, path_var.as_deref()).ok_or_else(|| {
        (
            EXIT_NOT_FOUND,
            format!("{}: command not found", name.to_string_lossy()),
        )
    })?;
    if !program.exists() {
        return Err((
            EXIT_NOT_FOUND,
            format!("{}: No such file or directory", program.display()),
        ));
    }

    let (exec_files, lines) = exec_files(art, &program, path_var.as_deref())?;
    let values = values(opts)?;

    let kabi = kernel_abi();
    let mut plan = plan::plan(
        &art.landlock,
        kabi,
        opts.landlock_abi,
        &values,
        &exec_files,
        &mut |p| kernel::open_path(p),
        &mut kernel::realpath,
    )
    .map_err(fail)?;
    plan.lines.splice(0..0, lines);
    // Host rules (#15): served by sbx's proxy behind a private network
    // namespace. With `[linux] namespaces = "never"` they fall back to
    // their ports (said in --report, refused under `required`).
    let served = ServedProxy::default();
    let hook = match (&opts.proxy, &art.proxy) {
        (Some(h), _) => Some(h.clone()),
        (None, Some(spec)) if art.namespaces.mode == crate::ir::Namespaces::Never => {
            let why = "[linux] namespaces = \"never\" turns off the network namespace";
            plan.lines
                .extend(crate::back::landlock::proxy::fallback(spec, why));
            None
        }
        (None, Some(spec)) => {
            let [http, socks] = crate::runtime::proxy::PORTS;
            // No token: only the command's own namespace reaches the
            // listeners (macOS needs one, docs/macos.md).
            crate::runtime::proxy::merge_env(&mut env, http, socks, None);
            Some(served.hook(spec.clone(), opts.report))
        }
        (None, None) => None,
    };
    for w in &plan.warnings {
        eprintln!("sbx: warning: {w}");
    }
    let mut mount_rules = art.namespaces.mounts.clone();
    mount_rules.extend(ns::run_file_mounts(&plan.rules, &opts.own_files));
    // Host sockets beneath a broad rule (POLICY.md §13).
    let sockets = sockets::hide(
        &plan
            .rules
            .iter()
            .map(|r| r.path.as_str())
            .collect::<Vec<_>>(),
        &values.home,
        std::env::var("XDG_RUNTIME_DIR").ok().as_deref(),
    );
    if !sockets.is_empty() && art.namespaces.mode == crate::ir::Namespaces::Never {
        plan.lines.push(plan::line(
            String::from("linux.sockets"),
            Status::Wider,
            format!(
                "[linux] namespaces = \"never\": these host sockets beneath a rule stay \
                 reachable (they are hidden only by a mount): {}",
                sockets
                    .iter()
                    .map(|m| m.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    mount_rules.extend(sockets);
    let planned =
        ns::plan_mounts(&mount_rules, &values, &mut |p| kernel::open_path(p)).map_err(fail)?;
    let (mut mounts, protections, repo_tops) =
        (planned.mounts, planned.protections, planned.repo_tops);
    plan.lines.extend(planned.lines);
    let carve_outs: Vec<String> = mounts
        .iter()
        .filter(|m| m.is_carve_out())
        .map(|m| m.path.clone())
        .collect();
    // SAFETY: geteuid has no preconditions.
    let user_ns = unsafe { libc::geteuid() } != 0;
    let shared_temp = plan
        .rules
        .iter()
        .any(|r| temp::is_shared(&r.path, &values.temp));
    let wanted = ns::wanted(
        art,
        ns::Needs {
            carve_outs: !carve_outs.is_empty(),
            proxy: hook.is_some(),
            root: !user_ns,
            shared_temp,
        },
    );
    // Without Landlock (ABI 0) no path is opened, and a rule on `/`
    // grants the host's root itself: the host's root stays.
    let new_root = wanted.pid && plan.abi > 0 && !plan.rules.iter().any(|r| r.path == "/");
    // What the command can rename: beneath a writable rule, but not in
    // a shared temp directory that the new root replaces with its own.
    // Looked up by the directory's prefixes, not by testing every rule.
    let renamable = crate::back::roots::Index::new(
        plan.rules
            .iter()
            .filter(|r| {
                ns::writes(r.rights) && !(new_root && temp::is_shared(&r.path, &values.temp))
            })
            .map(|r| r.path.as_str()),
    );
    let writable = |d: &str| !renamable.covering(d).is_empty();
    let unpinned = pins::add(&mut mounts, &writable, &mut |p| kernel::open_path(p));
    plan.lines.extend(unpinned);
    if !user_ns && !new_root && plan.abi > 0 {
        // Only a read-only mount stops root (capabilities or not: uid 0
        // owns the files) from chmod, chown and utime, which Landlock
        // does not check.
        plan.lines.push(plan::line(
            String::from("linux.read_only_grants"),
            Status::Wider,
            format!(
                "sbx runs as root without the new root ({}): the modes, owners and times of \
                 files the policy only lets it read can be changed",
                if art.namespaces.mode == crate::ir::Namespaces::Never {
                    "[linux] namespaces = \"never\""
                } else {
                    "a rule grants /"
                }
            ),
        ));
    }
    if shared_temp && !new_root && plan.abi > 0 {
        plan.lines.push(plan::line(
            String::from("linux.private_temp"),
            Status::Wider,
            String::from(
                "without the new root the command shares the host's temp directories, \
                 whose UNIX sockets (tmux, ssh-agent, X11, editors) it can connect to",
            ),
        ));
    }
    if art.namespaces.mode == crate::ir::Namespaces::Never && !opts.quiet {
        eprintln!(
            "sbx: warning: [linux] namespaces = \"never\": running with Landlock alone, {}",
            ns::given_up(&carve_outs, !user_ns)
        );
    }

    // listen() without bind() (#20): sbx checks it when Landlock
    // restricts TCP bind and the command is on the real network.
    let bind_restricted = plan.handled_net & landlock::AccessNet::BindTcp as u64 != 0;
    let section = seccomp::compile_section(&art.seccomp);
    let filters = section.as_ref().map(seccomp::Section::plain);
    let seccomp_count = filters.as_ref().map(Vec::len).map_err(|e| (*e).clone());

    if opts.report {
        eprint!(
            "{}",
            report::text(
                art,
                &plan,
                &report::Extras {
                    seccomp: &seccomp_count,
                    exec_files: &exec_files,
                    forced_abi: opts.landlock_abi,
                    // SAFETY: getuid has no preconditions.
                    root: unsafe { libc::getuid() } == 0,
                    namespaces: &ns::describe(&wanted, user_ns && wanted.any(), mounts.len()),
                    mounts: &mounts.iter().map(ns::mount_words).collect::<Vec<_>>(),
                    new_root,
                    private_net: wanted.net,
                }
            )
        );
    }

    if let Some(min) = art.min_abi {
        if plan.abi < min {
            return Err(fail(format!(
                "Landlock ABI {} is older than the policy's min_abi = {min}: nothing was run",
                plan.abi
            )));
        }
    }
    let mut problems: Vec<String> = art
        .precision
        .iter()
        .chain(plan.lines.iter())
        .filter(|p| p.status.is_inexact() && !p.advisory)
        .map(|p| format!("{} ({:?}): {}", p.rule, p.status, p.reason))
        .collect();
    if let Err(e) = &seccomp_count {
        problems.push(format!("seccomp cannot be applied: {e}"));
    }
    if art.enforcement == Enforcement::Required && !problems.is_empty() {
        return Err(fail(format!(
            "enforcement = \"required\" but the sandbox would not be exact, nothing was run:\n  {}",
            problems.join("\n  ")
        )));
    }
    if plan.abi == 0 {
        // Best effort without Landlock: one warning, then run.
        eprintln!(
            "sbx: warning: Landlock is {}: filesystem and network rules are NOT enforced",
            match opts.landlock_abi {
                Some(0) => "disabled (ABI limited to 0)",
                _ => "not available on this kernel (is `landlock` in the lsm= boot parameter?)",
            }
        );
    }
    if let Err(e) = &seccomp_count {
        eprintln!("sbx: warning: seccomp not applied: {e}");
    }

    // The run's own temp directories (POLICY.md §13), each with the
    // rights of the rule it stands in for; removed when the run is over
    // (dropped last, after the wait).
    let private_temp = if new_root {
        temp::PrivateTemp::make(plan.rules.iter().map(|r| r.path.as_str()), &values.temp)
            .map_err(|e| fail(format!("the run's temp directories: {e}")))?
    } else {
        None
    };
    let temp_rules: Vec<(&std::fs::File, u64)> = private_temp
        .iter()
        .flat_map(|t| t.handles())
        .filter_map(|(path, f)| {
            let rule = plan.rules.iter().find(|r| r.path == path)?;
            Some((f, rule.rights.0))
        })
        .collect();
    let ruleset = kernel::create(&plan, &temp_rules).map_err(fail)?;
    drop(temp_rules);
    // The ports a listening socket may hold (the listen check).
    let bind_ports: Vec<u16> = plan
        .ports
        .iter()
        .filter(|(_, bits)| bits & landlock::AccessNet::BindTcp as u64 != 0)
        .map(|(p, _)| *p)
        .collect();
    let net_rules = plan.handled_net & 2 != 0;
    // Rules the command adds again on the mounts made for it: /proc's,
    // and the fresh /dev/shm's (new inodes that no rule could name).
    let fresh_shm = private_temp.as_ref().is_some_and(|t| t.shm);
    let proc_rules: Vec<(String, u64)> = plan
        .rules
        .iter()
        .filter(|r| crate::ir::path_within(&r.path, "/proc") || (fresh_shm && r.path == temp::SHM))
        .map(|r| (r.path.clone(), r.rights.0))
        .collect();
    // The writable trees' tops, for the work after the run.
    let writable: Vec<String> = plan
        .rules
        .iter()
        .filter(|r| ns::writes(r.rights))
        .map(|r| r.path.clone())
        .collect();
    // The new root shows the rule paths: their descriptors go to the
    // child; the others are closed before forking.
    let root_rules: Vec<ns::RootRule> = if new_root {
        plan.rules
            .drain(..)
            .map(|r| ns::RootRule {
                writable: ns::writes(r.rights),
                path: r.path,
                file: r.handle,
                via: r.via,
            })
            .collect()
    } else {
        Vec::new()
    };
    drop(plan);

    let argv_c = argv
        .iter()
        .map(|a| cstring(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    let envp_c = env
        .iter()
        .map(|(k, v)| {
            let mut b = k.as_bytes().to_vec();
            b.push(b'=');
            b.extend_from_slice(v.as_bytes());
            cstring(&b)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut prepared = child::Prepared::new(
        cstring(program.as_os_str().as_bytes())?,
        argv_c,
        envp_c,
        ruleset,
        filters.unwrap_or_default(),
        limits::rlimits(&art.limits),
        limits::keep_mask(&art.keep_capabilities, &art.drop_capabilities).map_err(fail)?,
    );
    // In a private network namespace nothing is checked: prepared only
    // for the real network (or once the namespace is refused).
    let listen_prep = || {
        let filters = match &section {
            Ok(s) if bind_restricted => s.listen(),
            _ => None,
        };
        filters
            .map(child::ListenPrep::new)
            .transpose()
            .map_err(|e| fail(format!("the listen() check: {e}")))
    };
    if !wanted.net {
        prepared.listen = listen_prep()?;
    }
    let proxy_ports: &[u16] = hook.as_ref().map_or(&[], |h| &h.ports);
    let proxy_listeners = proxy_ports.len();
    // The relay's listeners and the DNS responder's socket.
    let relay_fds = hook
        .as_ref()
        .filter(|h| !h.relay_ports.is_empty())
        .map_or(0, |h| h.relay_ports.len() + 1);
    let mut proxy_sock = None;
    if wanted.any() {
        let root = if new_root {
            let cwd =
                std::env::current_dir().map_err(|e| fail(format!("current directory: {e}")))?;
            // In a new root only granted paths and the directories
            // leading to them exist: a command started in the workspace
            // that the policy does not grant is told so, rather than
            // started at `/` unannounced.
            let unseen = match cwd.to_str() {
                // Not UTF-8: no rule path can name it; nothing to say.
                None => false,
                Some(dir) => !root_rules.iter().any(|r| {
                    crate::ir::path_within(dir, &r.path) || crate::ir::path_within(&r.path, dir)
                }),
            };
            if unseen && !opts.quiet && in_workspace(&cwd, &values.workspace) {
                eprintln!(
                    "sbx: warning: the current directory {} is under no path the policy \
                     grants, so it does not exist in the sandbox: the command starts in / \
                     (a policy with [[fs]] rules grants the workspace only if a rule names \
                     it, such as path = \".\")",
                    cwd.display()
                );
            }
            let aliases = ns::expand_links(&art.namespaces.links, &values).map_err(fail)?;
            ns::new_root(root_rules, &aliases, &cwd, private_temp.as_ref()).map_err(fail)?
        } else {
            None
        };
        let (prep, sock) = ns::prepare(
            &wanted,
            user_ns,
            mounts,
            (proxy_ports, hook.as_ref().map_or(&[], |h| &h.relay_ports)),
            net_rules,
            proc_rules,
            root,
        )
        .map_err(fail)?;
        prepared.ns = Some(prep);
        proxy_sock = sock;
    }

    let wall = art.limits.wall_time_s.map(Duration::from_secs);
    // Orphaned descendants come back to us, so the tree is found and
    // killed when the child exits, also processes that left its group.
    // SAFETY: plain prctl on ourselves.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let not_ours = wait::own_children();
    let after = after::AfterRun::launch(&writable, &protections, repo_tops);

    let mut spawned = child::spawn(&prepared);
    if let Err(child::SpawnError {
        step: Some(step),
        error,
        at,
    }) = &spawned
    {
        if step.is_namespace() && !step.host_lacks_namespaces(error) {
            // The host gives namespaces and this set-up failed anyway,
            // most often on a path that changed meanwhile (the child
            // of another run renaming it): never a reason to run with
            // less (POLICY.md §13).
            let path = prepared
                .ns
                .as_ref()
                .and_then(|ns| ns.failed_path(*step, *at))
                .map(|p| format!(" at {p}"))
                .unwrap_or_default();
            let changed = if error.raw_os_error() == Some(libc::EXDEV) {
                " (it is no longer the file sbx opened: renamed or replaced during set-up)"
            } else {
                ""
            };
            return Err(fail(format!(
                "{} failed{path}: {error}{changed}; nothing was run",
                step.describe()
            )));
        }
        if step.is_namespace() {
            // Nothing ran, and this host has no namespaces: go on
            // without the layer, or refuse.
            let why = format!("{} failed: {error}", step.describe());
            if art.enforcement == Enforcement::Required && proxy_listeners > 0 {
                return Err(fail(format!(
                    "enforcement = \"required\" but namespaces are not available ({why}); \
                     the host rules need the proxy's private network namespace; nothing was run"
                )));
            }
            if art.enforcement == Enforcement::Required && !carve_outs.is_empty() {
                return Err(fail(format!(
                    "enforcement = \"required\" but namespaces are not available ({why}); \
                     without them these carve-outs get the rights of the rule above them: {}; \
                     nothing was run",
                    carve_outs.join(", ")
                )));
            }
            if art.enforcement == Enforcement::Required && !user_ns && new_root {
                return Err(fail(format!(
                    "enforcement = \"required\" but namespaces are not available ({why}); \
                     without the new root's read-only mounts a root run can change the modes, \
                     owners and times of what it may only read; nothing was run"
                )));
            }
            // Past the listeners, their ports are in the ruleset already:
            // without the namespace they would be ports on the host.
            if proxy_listeners > 0 && matches!(step, child::Step::PidNamespace | child::Step::Proc)
            {
                return Err(fail(format!("namespaces: {why}: nothing was run")));
            }
            if !opts.quiet {
                eprintln!(
                    "sbx: warning: namespaces are not available on this host ({why}): \
                     running with Landlock alone, {}",
                    ns::given_up(&carve_outs, !user_ns)
                );
            }
            prepared.ns = None;
            proxy_sock = None;
            if prepared.listen.is_none() {
                prepared.listen = listen_prep()?;
            }
            spawned = child::spawn(&prepared);
        }
    }
    if let Err(child::SpawnError {
        step: Some(child::Step::ListenCheck),
        error,
        ..
    }) = &spawned
    {
        if error.raw_os_error() == Some(libc::EBUSY) {
            // Nothing ran. Another supervisor's filter holds the one
            // listener the kernel allows: run without the check, or refuse.
            let why = "a seccomp filter sbx runs under has a listener already (one per process)";
            if art.enforcement == Enforcement::Required {
                return Err(fail(format!(
                    "enforcement = \"required\" but listen() cannot be checked: {why}; \
                     nothing was run"
                )));
            }
            eprintln!(
                "sbx: warning: listen() is not checked ({why}): a TCP socket that listens \
                 without bind() gets a port on this host's network"
            );
            prepared.listen = None;
            spawned = child::spawn(&prepared);
        }
    }
    let spawned = match spawned {
        Ok(s) => s,
        Err(e) => {
            return Err(match e.step {
                Some(child::Step::Exec) => {
                    let code = if e.error.kind() == std::io::ErrorKind::NotFound {
                        EXIT_NOT_FOUND
                    } else {
                        EXIT_NOT_EXECUTABLE
                    };
                    (code, format!("{}: {}", program.display(), e.error))
                }
                Some(step) => fail(format!(
                    "{} failed: {}: nothing was run",
                    step.describe(),
                    e.error
                )),
                None => fail(format!("cannot start the command: {}", e.error)),
            });
        }
    };
    let pid = spawned.pid;
    // The listener, if the command got the listen check: sbx answers it.
    if let Some(l) = prepared.listen.take() {
        if let Some(fd) = passfd::receive(&l.mine, 1, false).pop() {
            if let Err(e) = listen::supervise(fd, bind_ports) {
                // The listener is closed: the kernel fails every listen().
                eprintln!("sbx: warning: the listen() check did not start: {e}");
            }
        }
    }
    if let Some(hook) = &hook {
        let listeners = match &proxy_sock {
            Some(sock) => ns::receive_listeners(sock, proxy_listeners + relay_fds),
            None => Vec::new(),
        };
        (hook.serve)(listeners);
    }
    let forwarding = wait::Forwarding::install(pid);
    let out = wait::wait(pid, prepared.tty(), wall, &not_ours);
    drop(forwarding);
    // The init was killed and reaped with the leftovers.
    spawned.finish();
    if out.timed_out {
        eprintln!(
            "sbx: wall_time_s = {} reached: killed the process tree",
            art.limits.wall_time_s.unwrap_or_default()
        );
    }
    // What the proxy refused, with the rules that would allow it.
    eprint!("{}", served.finish());
    // The tree is gone: nothing re-creates what is moved aside.
    after.finish();
    Ok(wait::exit_code(out.status))
}

/// The proxy `sbx run` starts for an artifact's host rules, once the
/// command's network namespace hands over its listeners.
#[derive(Default, Clone)]
struct ServedProxy(std::sync::Arc<std::sync::Mutex<Option<crate::runtime::proxy::Proxy>>>);

impl ServedProxy {
    fn hook(&self, spec: crate::back::landlock::ProxySpec, report: bool) -> ProxyHook {
        use crate::runtime::proxy::{relay_ports, RelaySockets, PORTS};
        let slot = self.clone();
        let relay = relay_ports(&spec.rules);
        let relay_count = relay.len();
        ProxyHook {
            ports: PORTS.to_vec(),
            relay_ports: relay,
            serve: std::sync::Arc::new(move |mut listeners| {
                let relay = if relay_count > 0 && listeners.len() == PORTS.len() + relay_count + 1 {
                    let dns = std::os::fd::OwnedFd::from(listeners.pop().expect("counted"));
                    Some(RelaySockets {
                        dns: std::net::UdpSocket::from(dns),
                        listeners: listeners.split_off(PORTS.len()),
                    })
                } else {
                    None
                };
                if listeners.len() != PORTS.len() {
                    // No namespace: nothing listens at the ports the
                    // command's proxy variables name, so it has no network.
                    eprintln!(
                        "sbx: warning: no private network namespace: the proxy is not \
                         running, so host rules reach nothing"
                    );
                    return;
                }
                match crate::runtime::proxy::Proxy::for_run(&spec, listeners, relay, report, None) {
                    Ok(p) => *slot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(p),
                    Err(e) => eprintln!("sbx: warning: the proxy did not start: {e}"),
                }
            }),
        }
    }

    /// Stop the proxy; its summary of refusals ("" when none, or when it
    /// never ran).
    fn finish(&self) -> String {
        let p = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        p.map(|p| p.finish()).unwrap_or_default()
    }
}
