//! `sbx run` on Linux as its phases (docs/linux.md): **prepare** decides
//! what is enforced and how, and reports it, changing nothing on the
//! host; **set up** makes the run's temp directories, the Landlock
//! ruleset, the namespace layer's plan, the after-run record and its
//! journal; **spawn** starts the command (or refuses, or falls back as
//! the policy allows); **wait** serves the command (the guardian, the
//! listen check, the proxy) until its tree has ended; **finish** says
//! what happened and hands the after-run work to the guardian.

use super::{
    after, agent, beside, caches, check_artifact, child, clearing, earlyns, earlyoverlay, guardian,
    journal, kernel, kernel_abi, limits, listen, ns, nschild, passfd, pins, plan, program, pts,
    report, seccomp, sockets, temp, wait, ProxyHook, RunOptions,
};
use crate::back::landlock::LinuxArtifact;
use crate::ir::{Enforcement, Precision, Status};
use crate::runtime::env::EnvFilter;
use crate::runtime::expand::Values;
use crate::runtime::proxy::Echo;
use crate::runtime::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SBX_FAILED};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(super) type Fail = (i32, String);

pub(super) fn start(
    art: &LinuxArtifact,
    argv: &[OsString],
    opts: &RunOptions,
) -> Result<i32, Fail> {
    check_artifact(art).map_err(fail)?;
    #[cfg(feature = "test-hooks")]
    if let Some(ms) = std::env::var("SBX_TEST_SETUP_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        super::nschild::PAUSE_MS.store(ms, std::sync::atomic::Ordering::SeqCst);
    }
    // The network namespace, made on another core while the rest is
    // prepared (`earlyns.rs`). Whether the run has one depends on the
    // artifact and the proxy alone, so it is known before `layer`, which
    // asks the same (the proxy is off there under `never`, where no
    // namespace is used anyway).
    let proxy = opts.proxy.is_some() || art.proxy.is_some();
    let net = ns::wanted(art, proxy).net;
    // SAFETY: geteuid has no preconditions.
    let early = net.then(|| earlyns::start(unsafe { libc::geteuid() } != 0, proxy));
    let runs = earlier_runs(opts);
    let decided = prepare(art, argv, opts)?;
    let mut set = set_up(art, opts, decided, &runs, early.flatten())?;
    let spawned = spawn(art, opts, &mut set);
    drop(set.early_overlay.take());
    let spawned = spawned?;
    let (spawned, out, guardian) = serve(art, &mut set, spawned);
    Ok(finish(art, set, spawned, out, guardian))
}

pub(super) fn fail(msg: impl Into<String>) -> Fail {
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

/// What [`exec_files`] found.
struct ExecFiles {
    files: Vec<String>,
    /// The report's lines.
    lines: Vec<Precision>,
    /// Said before the command starts.
    warnings: Vec<String>,
}

/// Executables that get `execute`: the program and the listed commands,
/// each with the interpreters the kernel opens to start it. Listed
/// commands not found are reported.
fn exec_files(
    art: &LinuxArtifact,
    program: &Path,
    path_var: Option<&OsStr>,
    values: &Values,
) -> Result<ExecFiles, Fail> {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    let rules = RulePaths {
        art,
        values,
        made: std::cell::OnceCell::new(),
    };
    let mut paths = exec_chain(&rules, program, &mut lines, &mut warnings);
    for e in art.exec_allow.iter().flatten() {
        let found = match &e.path {
            Some(p) => Some(PathBuf::from(p)),
            None => program::resolve(OsStr::new(&e.name), path_var),
        };
        match found {
            Some(p) => paths.extend(exec_chain(&rules, &p, &mut lines, &mut warnings)),
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
    Ok(ExecFiles {
        files,
        lines,
        warnings,
    })
}

/// The artifact's rules as paths with their rights, made when first
/// asked for (a program with no interpreter never asks).
struct RulePaths<'a> {
    art: &'a LinuxArtifact,
    values: &'a Values,
    made: std::cell::OnceCell<Vec<(String, crate::back::landlock::rights::FsSet)>>,
}

impl RulePaths<'_> {
    fn get(&self) -> &[(String, crate::back::landlock::rights::FsSet)] {
        // The placeholders' values are resolved already ([`values`]): the
        // rules' paths compare with a program's as written or resolved.
        self.made
            .get_or_init(|| plan::rule_paths(&self.art.landlock, self.values))
    }
}

/// `start` and the interpreters the kernel opens to run it, as far as
/// they may be granted. Each is named by the file before it (a `#!`
/// line, an ELF's `PT_INTERP`), whose content the command may have
/// written in an earlier run where the policy lets it change that file:
/// an interpreter named there is granted only where the policy already
/// lets the command read it (so the grant adds `execute` alone), or any
/// file on the host could be named, read and run. Only regular files are
/// granted: a directory's rule would reach everything beneath it.
fn exec_chain(
    rules: &RulePaths,
    start: &Path,
    lines: &mut Vec<Precision>,
    warnings: &mut Vec<String>,
) -> Vec<PathBuf> {
    use crate::back::landlock::rights::FsSet;
    let rights = |p: &Path| -> FsSet {
        let rules = rules.get();
        let Some(s) = p.to_str() else {
            return FsSet::EMPTY;
        };
        let canon = crate::canonical::canonicalize(p).ok();
        let canon = canon.as_ref().and_then(|c| c.to_str());
        [Some(s), canon]
            .into_iter()
            .flatten()
            .fold(FsSet::EMPTY, |r, p| r.or(plan::rights_at(rules, p)))
    };
    // A file with another name elsewhere changes with it: where the
    // caller may write it, a writable rule could cover that other name.
    let linked_writable = |p: &Path| {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::MetadataExt;
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            return true;
        };
        std::fs::metadata(p).is_ok_and(|m| m.nlink() > 1)
            // SAFETY: a C string; no other pointer.
            && unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) }
                == 0
    };
    let read = FsSet::named("read_file").expect("known right");
    let chain = program::exec_chain(start);
    let mut out = Vec::new();
    for (i, next) in chain.iter().enumerate() {
        if !std::fs::metadata(next).is_ok_and(|m| m.is_file()) {
            break;
        }
        if i > 0 {
            let by = &chain[i - 1];
            let changed = !rights(by).and(FsSet::changes()).is_empty() || linked_writable(by);
            if changed && !rights(next).contains(read) {
                let (n, b) = (next.display(), by.display());
                warnings.push(format!(
                    "{n} is not granted: {b} names it as its interpreter (`#!` or ELF), and \
                     the command can change {b}; a rule that lets the command read {n} makes \
                     it runnable"
                ));
                lines.push(Precision {
                    rule: format!("exec {n}"),
                    target: "linux".into(),
                    status: Status::Dropped,
                    reason: format!(
                        "named as the interpreter of {b}, which the command can change, and \
                         not readable under the policy: not granted"
                    ),
                    advisory: false,
                });
                break;
            }
        }
        out.push(next.clone());
    }
    out
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
    // Resolved once, here, as lowering resolves its roots: a placeholder
    // expanded through a symlink would meet it again at every rule
    // (where a link in a directory the command can change is refused).
    let resolved = |p: PathBuf| crate::canonical::canonicalize(&p).unwrap_or(p);
    Ok(Values {
        workspace: utf8(&resolved(workspace))?,
        home: utf8(&resolved(home))?,
        temp: utf8(&resolved(temp))?,
    })
}

/// `dir` (a canonical current directory) is the workspace or inside it.
fn in_workspace(dir: &std::path::Path, workspace: &str) -> bool {
    let ws = crate::canonical::canonicalize(workspace).unwrap_or_else(|_| PathBuf::from(workspace));
    dir.starts_with(ws)
}

/// Runs that ended without their after-run work are finished first:
/// what they planted must not be recorded as this run's starting point.
/// The journal's directory, for this run's entry.
fn earlier_runs(opts: &RunOptions) -> std::io::Result<PathBuf> {
    let runs = journal::dir();
    if let (Ok(dir), false) = (&runs, opts.earlier_runs_finished) {
        let _ = after::write_bounded(&journal::finish_dead(dir), after::WRITE_WAIT_MS);
    }
    runs
}

/// What `prepare` decided.
struct Decided {
    argv: Vec<CString>,
    envp: Vec<CString>,
    program: PathBuf,
    values: Values,
    plan: plan::Plan<File>,
    served: ServedProxy,
    hook: Option<ProxyHook>,
    mounts: Vec<ns::MountPlan<File>>,
    protections: Vec<String>,
    repo_tops: Vec<String>,
    carve_outs: Vec<String>,
    /// sbx's state directory, where a writable rule covers it (only the
    /// layer's read-only mount keeps it from the command).
    state_exposed: Option<String>,
    user_ns: bool,
    wanted: ns::Wanted,
    new_root: bool,
    section: Result<seccomp::Section, String>,
    caches: Option<caches::Decided>,
}

/// What is enforced and how: the plan of Landlock rules, the proxy, the
/// mounts and pins, the precision lines; the report printed and a
/// `required` policy refused here, before anything is made.
fn prepare(art: &LinuxArtifact, argv: &[OsString], opts: &RunOptions) -> Result<Decided, Fail> {
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

    let values = values(opts)?;
    let ExecFiles {
        files: exec_files,
        lines,
        warnings: chain_warnings,
    } = exec_files(art, &program, path_var.as_deref(), &values)?;

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
    plan.warnings.extend(chain_warnings);
    // Host rules (#15): served by sbx's proxy behind a private network
    // namespace. With `[linux] namespaces = "never"` they fall back to
    // their ports (said in --report, refused under `required`).
    let served = ServedProxy::default();
    let never = art.namespaces.mode == crate::ir::Namespaces::Never;
    let hook = match (&opts.proxy, &art.proxy) {
        (Some(h), _) => Some(h.clone()),
        (None, Some(spec)) if never => {
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
            Some(served.hook(spec.clone(), Echo::new(opts.report, opts.quiet)))
        }
        (None, None) => None,
    };
    for w in &plan.warnings {
        eprintln!("sbx: warning: {w}");
    }
    let Layer {
        mounts,
        protections,
        repo_tops,
        carve_outs,
        state_exposed,
        user_ns,
        wanted,
        new_root,
    } = layer(art, opts, &mut plan, &values, hook.is_some())?;
    let (caches, cache_lines) =
        private_caches(art, &env, &plan, &mounts, &values, user_ns, new_root);
    if !opts.quiet {
        for c in caches.iter().flat_map(|c| &c.caches) {
            if let caches::Mode::Fallback(why) = &c.mode {
                eprintln!(
                    "sbx: note: the {} cache at {} is private and does not show the host's \
                     entries: {why}",
                    c.name, c.path
                );
            }
        }
    }

    let section = seccomp::compile_section(&art.seccomp);
    if let (Err(e), Some(_)) = (&section, seccomp::native_arch()) {
        // This architecture has a filter: a section that cannot become
        // one (a name this sbx does not know, rules too long for the
        // kernel: a hand-made artifact) is not run without it, whatever
        // the enforcement, so that the x32 refusal and the foreign
        // architectures' kill are never dropped with the rest.
        return Err(fail(format!(
            "the artifact's seccomp section cannot be applied ({e}); nothing was run"
        )));
    }
    let seccomp_count = section
        .as_ref()
        // One filter.
        .map(|_| 1)
        .map_err(|e| (*e).clone());

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
                    dropped_env: &report::dropped_env(&filter),
                    caches: &cache_lines,
                }
            )
        );
    }
    refuse_or_warn(art, opts, &plan, &seccomp_count)?;
    let (argv, envp) = c_strings(argv, &env)?;
    Ok(Decided {
        argv,
        envp,
        program,
        values,
        plan,
        served,
        hook,
        mounts,
        protections,
        repo_tops,
        carve_outs,
        state_exposed,
        user_ns,
        wanted,
        new_root,
        section,
        caches,
    })
}

/// The run's own package caches (`caches.rs`), with the report's lines
/// about them: only in a new root, where they can be mounted.
fn private_caches(
    art: &LinuxArtifact,
    env: &[(OsString, OsString)],
    plan: &plan::Plan<File>,
    mounts: &[ns::MountPlan<File>],
    values: &Values,
    user_ns: bool,
    new_root: bool,
) -> (Option<caches::Decided>, Vec<String>) {
    if !new_root {
        let why = if art.namespaces.mode == crate::ir::Namespaces::Never {
            "[linux] namespaces = \"never\""
        } else {
            "the command sees the host's paths (no new root)"
        };
        return (
            None,
            vec![format!(
                "none: {why}; package caches are the host's, as the policy grants them"
            )],
        );
    }
    let Some(state) = crate::runtime::state_dir() else {
        return (
            None,
            vec!["none: sbx has no state directory (HOME unset)".into()],
        );
    };
    let var = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.to_str().map(String::from))
    };
    let on_path =
        std::cell::RefCell::new(program::OnPath::new(std::env::var_os("PATH").as_deref()));
    // Several caches share a tool (go, yarn, pnpm, cargo): each is
    // looked for on PATH once.
    let seen = std::cell::RefCell::new(std::collections::HashMap::new());
    let present = |t: &str| {
        *seen
            .borrow_mut()
            .entry(t.to_string())
            .or_insert_with(|| on_path.borrow_mut().has(t))
    };
    let rules: Vec<(&str, bool)> = plan
        .rules
        .iter()
        .map(|r| (r.path.as_str(), ns::writes(r.rights)))
        .collect();
    let hidden: Vec<&str> = mounts.iter().map(|m| m.path.as_str()).collect();
    let policy = if art.policy_hash.is_empty() {
        crate::policy::hash::sha256_json(art)
    } else {
        art.policy_hash.clone()
    };
    let decided = caches::decide(
        state.as_std_path(),
        &values.home,
        &caches::workspace_name(OsStr::new(&values.workspace)),
        &policy,
        caches::known(&var, &values.home),
        &present,
        &caches::Grants {
            rules: &rules,
            mounts: &hidden,
        },
        user_ns,
    );
    let lines = caches::report_lines(&decided);
    (Some(decided), lines)
}

/// The namespace layer's part of a run.
struct Layer {
    mounts: Vec<ns::MountPlan<File>>,
    protections: Vec<String>,
    repo_tops: Vec<String>,
    carve_outs: Vec<String>,
    /// sbx's state directory, where a writable rule covers it (only the
    /// layer's read-only mount keeps it from the command).
    state_exposed: Option<String>,
    user_ns: bool,
    wanted: ns::Wanted,
    new_root: bool,
}

/// The mounts (carve-outs, the run's own files, host sockets, pins), the
/// namespaces wanted, whether the command gets a new root, and what is
/// protected for the after-run check; their precision lines go to `plan`.
fn layer(
    art: &LinuxArtifact,
    opts: &RunOptions,
    plan: &mut plan::Plan<File>,
    values: &Values,
    proxy: bool,
) -> Result<Layer, Fail> {
    let never = art.namespaces.mode == crate::ir::Namespaces::Never;
    // Under "never" the artifact lists sbx's protections for the
    // after-run check only: nothing is mounted over them.
    let mut mount_rules = if never {
        Vec::new()
    } else {
        art.namespaces.mounts.clone()
    };
    // The run's own files, and sbx's state (approvals, the journal):
    // read-only, the state hidden where a rule shows it.
    let state = crate::runtime::state_dir();
    let hidden_state = state
        .as_ref()
        .and_then(|s| ns::state_hidden(&plan.rules, s.as_std_path()));
    let mut own = opts.own_files.clone();
    if hidden_state.is_none() {
        own.extend(state.map(Into::into));
    }
    for m in ns::run_file_mounts(&plan.rules, &own) {
        // The policy's own lowering may have listed it already.
        if !mount_rules.iter().any(|r| r.path == m.path) {
            mount_rules.push(m);
        }
    }
    if let Some(hide) = hidden_state {
        if never {
            plan.lines.push(plan::line(
                String::from("linux.state"),
                Status::Wider,
                format!(
                    "[linux] namespaces = \"never\": sbx's state directory {} beneath a rule \
                     stays readable (it is hidden only by a mount)",
                    hide.path
                ),
            ));
        } else {
            // Nothing beneath it is shown, and no rule of its own (sbx's
            // read-only one for a run of a policy) is bound there.
            mount_rules.retain(|r| !crate::ir::path_within(&r.path, &hide.path));
            plan.rules.retain(|r| r.path != hide.path);
            mount_rules.push(hide);
        }
    }
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
    if !sockets.is_empty() && never {
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
        ns::plan_mounts(&mount_rules, values, &mut |p| kernel::open_path(p)).map_err(fail)?;
    let (mut mounts, mut protections, mut repo_tops) =
        (planned.mounts, planned.protections, planned.repo_tops);
    plan.lines.extend(planned.lines);
    if art.ssh_agent && !never {
        show_known_hosts(&mut mounts, values);
    }
    if never {
        let listed = ns::plan_mounts(&art.namespaces.mounts, values, &mut |p| {
            kernel::open_path(p)
        })
        .map_err(fail)?;
        protections = listed.protections;
        repo_tops = listed.repo_tops;
        plan.lines.extend(listed.lines);
    }
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
    let wanted = ns::wanted(art, proxy);
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
    let state_exposed = exposed_state(&writable);
    if let (true, Some(state)) = (never, &state_exposed) {
        return Err(fail(state_refusal(state, "[linux] namespaces = \"never\"")));
    }
    let unpinned = pins::add(&mut mounts, &writable, &mut |p| kernel::open_path(p));
    plan.lines.extend(unpinned);
    if !new_root && plan.abi > 0 {
        // Only the new root (read-only mounts, and nothing else there)
        // stops chmod and utime, which Landlock does not check: the
        // owner passes them anywhere, capabilities or not.
        plan.lines.push(plan::line(
            String::from("linux.read_only_grants"),
            Status::Wider,
            format!(
                "without the new root ({}): the modes and times of any file {} can be \
                 changed, whether the policy grants it, lets the command only read it or \
                 does not grant it at all",
                if never {
                    "[linux] namespaces = \"never\""
                } else {
                    "a rule grants /"
                },
                if user_ns {
                    "this user owns"
                } else {
                    "root owns (most of the system's)"
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
    if never && !opts.quiet {
        eprintln!(
            "sbx: warning: [linux] namespaces = \"never\": running with Landlock alone, {}",
            ns::given_up(&carve_outs, !user_ns)
        );
    }

    Ok(Layer {
        mounts,
        protections,
        repo_tops,
        carve_outs,
        state_exposed,
        user_ns,
        wanted,
        new_root,
    })
}

/// sbx's state directory (its path, or where it would be), if `writable`
/// says a rule lets the command change it, as written or resolved.
fn exposed_state(writable: &dyn Fn(&str) -> bool) -> Option<String> {
    let state = crate::runtime::state_dir()?;
    let mut forms = vec![state.to_string()];
    // Resolved: the nearest directory that exists, and the rest.
    let mut at = state.as_std_path().to_path_buf();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&at).is_err() {
        match at.file_name() {
            Some(n) => rest.push(n.to_owned()),
            None => break,
        }
        at.pop();
    }
    if let Ok(mut c) = crate::canonical::canonicalize(&at) {
        c.extend(rest.iter().rev());
        forms.extend(c.to_str().map(String::from));
    }
    forms.into_iter().find(|f| writable(f))
}

/// Why a run without the layer is refused when the command could write
/// sbx's state directory: sbx itself, outside any sandbox, acts on what
/// is there (the journal of runs to finish, the approvals, the records
/// it keeps between runs), so a command that writes it could have sbx
/// rename files anywhere or widen later runs (POLICY.md §13).
fn state_refusal(state: &str, without: &str) -> String {
    format!(
        "sbx's state directory {state} lies beneath a writable rule, and without the \
         namespace layer ({without}) nothing keeps it read-only to the command: it could \
         forge the after-run work a later sbx does outside the sandbox, and the approvals \
         and records sbx trusts; nothing was run. Narrow the rule that covers it, or let \
         sbx use namespaces"
    )
}

/// `min_abi` and `required` refuse here; best effort warns once.
fn refuse_or_warn(
    art: &LinuxArtifact,
    opts: &RunOptions,
    plan: &plan::Plan<File>,
    seccomp_count: &Result<usize, String>,
) -> Result<(), Fail> {
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
    if let Err(e) = seccomp_count {
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
    if let Err(e) = seccomp_count {
        eprintln!("sbx: warning: seccomp not applied: {e}");
    }
    Ok(())
}

/// What `set_up` made, for the spawn and what follows.
struct SetUp {
    prepared: child::Prepared,
    program: PathBuf,
    section: Result<seccomp::Section, String>,
    /// Landlock restricts TCP bind: listen() without bind() is checked
    /// on the real network (#20).
    bind_restricted: bool,
    /// The ports a listening socket may hold (the listen check).
    bind_ports: Vec<u16>,
    served: ServedProxy,
    hook: Option<ProxyHook>,
    proxy_sock: Option<OwnedFd>,
    /// Where the setup process sends its mount namespace
    /// (`NsPrep::keep`), taken after the guardian starts (it closes
    /// its copy of the socket) so that the guardian never holds it.
    mount_ns_sock: Option<OwnedFd>,
    /// The caches' overlays' work directories of this run; those of
    /// ended runs beside them are removed by `clearing`, which is
    /// waited for at the end.
    cache_works: Vec<PathBuf>,
    clearing: Option<clearing::Clearing>,
    /// Home's overlay as `earlyoverlay` made it: the setup process has a
    /// copy of this descriptor; ours is closed once it has been cloned.
    early_overlay: Option<OwnedFd>,
    beside: beside::Beside,
    /// The network namespace, where the helper made it: its last
    /// reference goes last, once the after-run work and the mount
    /// namespace's teardown are done. Freeing it is a kernel worker's
    /// millisecond on a core, which would otherwise compete with them.
    net_ns: Option<OwnedFd>,
    carve_outs: Vec<String>,
    /// sbx's state directory, where a writable rule covers it (only the
    /// layer's read-only mount keeps it from the command).
    state_exposed: Option<String>,
    user_ns: bool,
    new_root: bool,
    not_ours: Vec<libc::pid_t>,
    /// Until the guardian takes it; dropped unrun when nothing starts
    /// (the temp directory and the journal entry go with it).
    work: Option<guardian::Work>,
    /// Its handles serve the set-up; dropped once the command runs.
    private_temp: Option<temp::PrivateTemp>,
}

/// The run's temp directories, the Landlock ruleset, the child's steps
/// (namespace layer and new root included), the after-run record and
/// its journal entry.
fn set_up(
    art: &LinuxArtifact,
    opts: &RunOptions,
    d: Decided,
    runs: &std::io::Result<PathBuf>,
    early: Option<earlyns::Early>,
) -> Result<SetUp, Fail> {
    let Decided {
        argv,
        envp,
        program,
        values,
        mut plan,
        served,
        hook,
        mounts,
        protections,
        repo_tops,
        carve_outs,
        state_exposed,
        user_ns,
        wanted,
        new_root,
        section,
        caches,
    } = d;
    // The run's own temp directories (POLICY.md §13), each with the
    // rights of the rule it stands in for.
    let mut private_temp = if new_root {
        temp::PrivateTemp::make(plan.rules.iter().map(|r| r.path.as_str()), &values.temp)
            .map_err(|e| fail(format!("the run's temp directories: {e}")))?
    } else {
        None
    };
    let temp_rules: Vec<(&File, u64)> = private_temp
        .iter()
        .flat_map(|t| t.handles())
        .filter_map(|(path, f)| {
            let rule = plan.rules.iter().find(|r| r.path == path)?;
            Some((f, rule.rights.0))
        })
        .collect();
    let ruleset = kernel::create(&plan, &temp_rules).map_err(fail)?;
    drop(temp_rules);
    let bind_restricted = plan.handled_net & landlock::AccessNet::BindTcp as u64 != 0;
    let bind_ports: Vec<u16> = plan
        .ports
        .iter()
        .filter(|(_, bits)| bits & landlock::AccessNet::BindTcp as u64 != 0)
        .map(|(p, _)| *p)
        .collect();
    let net_rules = plan.handled_net & 2 != 0;
    // Rules the command adds again on the mounts made for it: /proc's,
    // the fresh /dev/shm's and /dev/pts's (new inodes that no rule could
    // name).
    let fresh_shm = private_temp.as_ref().is_some_and(|t| t.shm);
    let pts_rule = pts::rule(plan.rules.iter().map(|r| (r.path.as_str(), r.rights)));
    // The caches: read and write beneath each, once mounted.
    let (cache_mounts, cache_works) = match &caches {
        Some(c) if new_root && wanted.any() => caches::make(c, &values.home).unwrap_or_else(|e| {
            if !opts.quiet {
                eprintln!(
                    "sbx: warning: no private package caches: {}: {e}",
                    c.dir.display()
                );
            }
            (Vec::new(), Vec::new())
        }),
        _ => (Vec::new(), Vec::new()),
    };
    // Home's overlay, made on another core from here on.
    let early_overlay = earlyoverlay::start(
        &cache_mounts,
        user_ns,
        early.as_ref().and_then(earlyns::Early::user_made),
    );
    let cache_rights = caches::rights(plan.handled_fs);
    let cache_rules = caches
        .iter()
        .flat_map(|c| &c.caches)
        .take(cache_mounts.len())
        .map(|c| (c.path.clone(), cache_rights));
    let proc_rules: Vec<(String, u64)> = plan
        .rules
        .iter()
        .filter(|r| crate::ir::path_within(&r.path, "/proc") || (fresh_shm && r.path == temp::SHM))
        .map(|r| (r.path.clone(), r.rights.0))
        .chain(pts_rule.filter(|_| new_root))
        .chain(cache_rules)
        .collect();
    // The writable trees' tops, for the work after the run: the host's,
    // never a path the run's own temp directory or `/dev/shm` stands in
    // for. The command never reaches the host's `/tmp` then, and the
    // sweep, which moves aside what a `.git` file leads it to beneath a
    // top, would reach there for it.
    let private = |p: &str| {
        private_temp
            .iter()
            .flat_map(|t| t.handles())
            .any(|(path, _)| path == p)
            || (fresh_shm && p == temp::SHM)
    };
    let writable: Vec<String> = plan
        .rules
        .iter()
        .filter(|r| ns::writes(r.rights) && !private(&r.path))
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

    let mut envp = envp;
    if art.ssh_agent {
        forward_agent(opts, private_temp.as_ref(), &mut envp);
    }
    let mut prepared = child::Prepared::new(
        cstring(program.as_os_str().as_bytes())?,
        argv,
        envp,
        ruleset,
        section
            .as_ref()
            .map(seccomp::Section::plain)
            .unwrap_or_default(),
        limits::rlimits(&art.limits),
        limits::keep_mask(&art.keep_capabilities, &art.drop_capabilities).map_err(fail)?,
    );
    // In a private network namespace nothing is checked: prepared only
    // for the real network (or once the namespace is refused).
    if !wanted.net {
        prepared.listen = listen_prep(&section, bind_restricted)?;
    }
    let proxy_ports: &[u16] = hook.as_ref().map_or(&[], |h| &h.ports);
    let mut proxy_sock = None;
    let mut mount_ns_sock = None;
    if wanted.any() {
        let root = if new_root {
            make_root(
                art,
                opts,
                &values,
                root_rules,
                private_temp.as_ref(),
                cache_mounts,
            )?
        } else {
            None
        };
        let (prep, back) = ns::prepare(
            &wanted,
            user_ns,
            mounts,
            (
                proxy_ports,
                hook.as_ref().map_or(&[], |h| &h.relay_ports),
                hook.as_ref().map_or(&[], |h| &h.forward_ports),
            ),
            net_rules,
            proc_rules,
            root,
        )
        .map_err(fail)?;
        prepared.ns = Some(prep);
        proxy_sock = back.proxy;
        mount_ns_sock = Some(back.mount_ns);
    }
    let after = after::AfterRun::launch(
        &writable,
        &protections,
        repo_tops,
        &values.home,
        runs.as_ref().ok().map(PathBuf::as_path),
    );
    let temp_base = private_temp.as_mut().and_then(temp::PrivateTemp::hand_over);
    let entry = if after.is_empty() && temp_base.is_none() {
        None
    } else {
        journal_entry(runs, &after, temp_base.as_deref(), opts.quiet)
    };
    // The network namespace's helper, as late as can be: it works on
    // another core meanwhile, where the previous run's namespace may
    // still be being freed. Reaped before the snapshot of our children.
    // Home's overlay's helper first: it may be using the user namespace
    // that the next one hands over.
    let early_overlay = early_overlay.and_then(earlyoverlay::Early::finish);
    let early = early.and_then(earlyns::Early::finish);
    if let Some(prep) = prepared.ns.as_mut() {
        prep.early = early.filter(|_| wanted.net);
    }
    // Ended runs' work directories go beside the rest (`clearing.rs`).
    let clearing = clearing::start(&cache_works);

    // Orphaned descendants come back to us, so the tree is found and
    // killed when the child exits, also processes that left its group.
    // SAFETY: plain prctl on ourselves.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let not_ours = wait::own_children();
    Ok(SetUp {
        prepared,
        program,
        section,
        bind_restricted,
        bind_ports,
        served,
        hook,
        proxy_sock,
        mount_ns_sock,
        cache_works,
        clearing,
        early_overlay,
        beside: beside::Beside::default(),
        net_ns: None,
        carve_outs,
        state_exposed,
        user_ns,
        new_root,
        not_ours,
        work: Some(guardian::Work::new(after, temp_base, entry)),
        private_temp,
    })
}

/// `ssh_agent = true` where a broader rule covers `~/.ssh`, which is
/// hidden: its known_hosts files are shown in it, read-only (the
/// lowering adds a grant for them where `~/.ssh` is not hidden).
fn show_known_hosts(mounts: &mut [ns::MountPlan<File>], values: &Values) {
    let dir = format!("{}/.ssh", values.home.trim_end_matches('/'));
    let Some(m) = mounts
        .iter_mut()
        .find(|m| m.path == dir && m.is_dir && m.kind == crate::back::landlock::MountKind::Hidden)
    else {
        return;
    };
    for rel in crate::lower::ssh::KNOWN_HOSTS {
        let path = format!("{}/{rel}", values.home.trim_end_matches('/'));
        if let Ok(o) = kernel::open_path(&path) {
            if !o.is_dir && o.handle.metadata().is_ok_and(|m| m.is_file()) {
                m.show.push((path, o.handle));
            }
        }
    }
}

/// `ssh_agent = true`: relay the caller's agent to [`agent::INSIDE`] and
/// point `SSH_AUTH_SOCK` there; without an agent or a private `/tmp` to
/// put the socket in, a warning and no `SSH_AUTH_SOCK` at all.
fn forward_agent(opts: &RunOptions, temp: Option<&temp::PrivateTemp>, envp: &mut Vec<CString>) {
    envp.retain(|e| !e.as_bytes().starts_with(b"SSH_AUTH_SOCK="));
    let warn = |why: String| {
        if !opts.quiet {
            eprintln!("sbx: warning: ssh_agent = true, but the agent is not forwarded: {why}");
        }
    };
    let caller = match agent::caller_agent(std::env::var_os("SSH_AUTH_SOCK")) {
        Ok(p) => p,
        Err(why) => return warn(why),
    };
    let Some((tmp, _)) = temp.and_then(|t| t.source("/tmp")) else {
        return warn(
            "the run has no private /tmp to hold the socket (it needs the new root and a \
             rule on /tmp, as the user_temp preset gives)"
                .into(),
        );
    };
    match agent::listen(tmp) {
        Ok(l) => {
            agent::serve(l, caller);
            if let Ok(c) = CString::new(format!("SSH_AUTH_SOCK={}", agent::INSIDE)) {
                envp.push(c);
            }
        }
        Err(e) => warn(format!("cannot listen in the run's /tmp: {e}")),
    }
}

/// The command's argv and envp as C strings.
fn c_strings(
    argv: &[OsString],
    env: &[(OsString, OsString)],
) -> Result<(Vec<CString>, Vec<CString>), Fail> {
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
    Ok((argv_c, envp_c))
}

/// The new root of granted paths, after saying so when the command
/// starts in a directory that does not exist in it.
fn make_root(
    art: &LinuxArtifact,
    opts: &RunOptions,
    values: &Values,
    rules: Vec<ns::RootRule>,
    temp: Option<&temp::PrivateTemp>,
    caches: Vec<caches::Mount>,
) -> Result<Option<nschild::NewRoot>, Fail> {
    let cwd = std::env::current_dir().map_err(|e| fail(format!("current directory: {e}")))?;
    // In a new root only granted paths and the directories leading to
    // them exist: a command started in the workspace that the policy
    // does not grant is told so, rather than started at `/` unannounced.
    let unseen = match cwd.to_str() {
        // Not UTF-8: no rule path can name it; nothing to say.
        None => false,
        Some(dir) => !rules
            .iter()
            .any(|r| crate::ir::path_within(dir, &r.path) || crate::ir::path_within(&r.path, dir)),
    };
    if unseen && !opts.quiet && in_workspace(&cwd, &values.workspace) {
        eprintln!(
            "sbx: warning: the current directory {} is under no path the policy grants, so \
             it does not exist in the sandbox: the command starts in / (a policy with [[fs]] \
             rules grants the workspace only if a rule names it, such as path = \".\")",
            cwd.display()
        );
    }
    let aliases = ns::expand_links(&art.namespaces.links, values).map_err(fail)?;
    ns::new_root(rules, &aliases, &cwd, temp, caches).map_err(fail)
}

/// This run's journal entry; without one, a warning (not under `--quiet`).
fn journal_entry(
    runs: &std::io::Result<PathBuf>,
    after: &after::AfterRun,
    temp: Option<&Path>,
    quiet: bool,
) -> Option<journal::Entry> {
    let why = match runs {
        Ok(dir) => match journal::Entry::write(dir, after, temp) {
            Ok(e) => return Some(e),
            Err(e) => format!("the after-run journal cannot be written ({e})"),
        },
        Err(e) => format!("no after-run journal ({e})"),
    };
    if !quiet {
        eprintln!(
            "sbx: warning: {why}: if sbx and its guardian are both killed, nothing finishes \
             its after-run work"
        );
    }
    None
}

/// The listen check's filters, when the command is on the real network
/// and Landlock restricts TCP bind.
fn listen_prep(
    section: &Result<seccomp::Section, String>,
    bind_restricted: bool,
) -> Result<Option<child::ListenPrep>, Fail> {
    let (Ok(s), true) = (section, bind_restricted) else {
        return Ok(None);
    };
    let check = |e: String| fail(format!("the listen() check: {e}"));
    let filters = s.listen().map_err(check)?;
    child::ListenPrep::new(filters)
        .map(Some)
        .map_err(|e| check(e.to_string()))
}

/// Start the command. A namespace set-up that fails on a host that has
/// namespaces refuses the run; on a host without them the run goes on
/// without the layer where the policy allows it; a listen check that
/// cannot be installed likewise.
fn spawn(art: &LinuxArtifact, opts: &RunOptions, s: &mut SetUp) -> Result<child::Spawned, Fail> {
    let proxy_listeners = s.hook.as_ref().map_or(0, |h| h.ports.len());
    let mut spawned = child::spawn(&s.prepared);
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
            let path = s
                .prepared
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
            let required = art.enforcement == Enforcement::Required;
            if required && proxy_listeners > 0 {
                return Err(fail(format!(
                    "enforcement = \"required\" but namespaces are not available ({why}); \
                     the host rules need the proxy's private network namespace; nothing was run"
                )));
            }
            if required && !s.carve_outs.is_empty() {
                return Err(fail(format!(
                    "enforcement = \"required\" but namespaces are not available ({why}); \
                     without them these carve-outs get the rights of the rule above them: {}; \
                     nothing was run",
                    s.carve_outs.join(", ")
                )));
            }
            if required && s.new_root {
                return Err(fail(format!(
                    "enforcement = \"required\" but namespaces are not available ({why}); \
                     without the new root the command can change the modes and times of any \
                     file {} owns, granted or not; nothing was run",
                    if s.user_ns { "its user" } else { "root" }
                )));
            }
            // Whatever the enforcement: sbx's own state is not the
            // command's to change.
            if let Some(state) = &s.state_exposed {
                return Err(fail(state_refusal(
                    state,
                    &format!("namespaces are not available: {why}"),
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
                    ns::given_up(&s.carve_outs, !s.user_ns)
                );
            }
            s.prepared.ns = None;
            s.proxy_sock = None;
            s.mount_ns_sock = None;
            if s.prepared.listen.is_none() {
                s.prepared.listen = listen_prep(&s.section, s.bind_restricted)?;
            }
            spawned = child::spawn(&s.prepared);
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
            s.prepared.listen = None;
            spawned = child::spawn(&s.prepared);
        }
    }
    spawned.map_err(|e| match e.step {
        Some(child::Step::Exec) => {
            let code = if e.error.kind() == std::io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_NOT_EXECUTABLE
            };
            (code, format!("{}: {}", s.program.display(), e.error))
        }
        Some(step) => fail(format!(
            "{} failed: {}: nothing was run",
            step.describe(),
            e.error
        )),
        None => fail(format!("cannot start the command: {}", e.error)),
    })
}

/// Serve the started command until its tree has ended: the guardian
/// first (before any thread of sbx's starts: the listen check's, the
/// proxy's), then the listen check and the proxy.
fn serve(
    art: &LinuxArtifact,
    s: &mut SetUp,
    spawned: child::Spawned,
) -> (
    child::Spawned,
    wait::Outcome,
    Result<guardian::Guardian, guardian::Work>,
) {
    let pid = spawned.pid;
    // The set-up is done. Its handles (the new root's pieces, the temp
    // directories, the Landlock ruleset's) go before the guardian starts
    // with a copy of the descriptor table, so that neither the guardian's
    // exit nor sbx's own drop holds the last reference to a removed temp
    // directory (freeing its block is a synchronous discard on disks
    // mounted with `discard`), and the mount namespace lives on only in a
    // thread beside.
    s.net_ns = s
        .prepared
        .ns
        .take()
        .and_then(|ns| ns.early)
        .map(|made| made.net);
    s.prepared.ruleset = None;
    s.private_temp = None;
    let work = s
        .work
        .take()
        .expect("the after-run work is handed over once");
    // The sockets that bring sbx descriptors from the sandbox's side:
    // none of them, nor what is in flight on them, stays in the guardian.
    let receiving: Vec<RawFd> = [
        s.prepared.listen.as_ref().map(|l| &l.mine),
        s.mount_ns_sock.as_ref(),
        s.proxy_sock.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|fd| fd.as_raw_fd())
    .collect();
    let guardian = guardian::start(spawned.init.unwrap_or(pid), work, &receiving);
    if let Ok(g) = &guardian {
        s.not_ours.push(g.pid);
    }
    // Threads may start now: those beside the command first.
    let mount_ns = s
        .mount_ns_sock
        .take()
        .and_then(|k| ns::receive_mount_ns(&k));
    // The clearing helper has most often looked for caches set aside
    // by now; where it has not, or could not, the thread looks.
    let stale = s.clearing.as_ref().and_then(|c| c.stale()) != Some(false);
    s.beside = beside::Beside::start(std::mem::take(&mut s.cache_works), stale, mount_ns);
    // The listener, if the command got the listen check: sbx answers it.
    if let Some(l) = s.prepared.listen.take() {
        if let Some(fd) = passfd::receive(&l.mine, 1, false).pop() {
            if let Err(e) = listen::supervise(fd, std::mem::take(&mut s.bind_ports)) {
                // The listener is closed: the kernel fails every listen().
                eprintln!("sbx: warning: the listen() check did not start: {e}");
            }
        }
    }
    if let Some(hook) = &s.hook {
        // The proxy's listeners, then the relay's and the DNS
        // responder's socket.
        let binds = crate::runtime::proxy::relay_listens(
            &hook.relay_ports,
            &hook.forward_ports,
            crate::runtime::proxy::ipv6(),
        )
        .len();
        let relay_fds = binds + usize::from(!hook.relay_ports.is_empty());
        let listeners = match &s.proxy_sock {
            Some(sock) => ns::receive_listeners(sock, hook.ports.len() + relay_fds),
            None => Vec::new(),
        };
        (hook.serve)(listeners);
    }
    let wall = art.limits.wall_time_s.map(Duration::from_secs);
    let forwarding = wait::Forwarding::install(pid);
    let out = wait::wait(pid, spawned.init, s.prepared.tty(), wall, &s.not_ours);
    drop(forwarding);
    (spawned, out, guardian)
}

/// The tree has ended: say what happened, then the after-run work (the
/// guardian's, or sbx's own when no guardian could start). Returns the
/// run's exit code.
fn finish(
    art: &LinuxArtifact,
    mut s: SetUp,
    spawned: child::Spawned,
    out: wait::Outcome,
    guardian: Result<guardian::Guardian, guardian::Work>,
) -> i32 {
    // The init was killed and reaped with the leftovers: no process of
    // the sandbox is left, and the mount namespace lives on only in a
    // thread beside, which lets it go now.
    s.beside.tree_ended();
    spawned.finish();
    // Said once the after-run work is done, and bounded: the command
    // shares stderr, and a pipe it filled must not hold that work.
    let mut said = Vec::new();
    if out.timed_out {
        said.push(format!(
            "sbx: wall_time_s = {} reached: killed the process tree",
            art.limits.wall_time_s.unwrap_or_default()
        ));
    }
    // Nothing re-creates what is moved aside now. The threads beside are
    // waited for while the guardian exits.
    let beside = std::mem::take(&mut s.beside);
    let clearing = s.clearing.take();
    let waited = || {
        beside.finish();
        drop(clearing);
    };
    // Tests only (Cargo.toml, `test-hooks`): sbx panics where a bug
    // would, once the tree has ended and before its after-run work.
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("SBX_TEST_PANIC").is_some_and(|v| v == "before-after-run") {
        panic!("SBX_TEST_PANIC=before-after-run");
    }
    match guardian {
        Ok(g) => g.finish(waited),
        Err(work) => {
            work.finish();
            waited();
        }
    }
    // What the proxy refused, with the rules that would allow it.
    said.extend(s.served.finish().lines().map(str::to_string));
    let _ = after::write_bounded(&said, after::WRITE_WAIT_MS);
    drop(s);
    wait::exit_code(out.status)
}

/// The proxy `sbx run` starts for an artifact's host rules, once the
/// command's network namespace hands over its listeners.
#[derive(Default, Clone)]
struct ServedProxy(std::sync::Arc<std::sync::Mutex<Option<crate::runtime::proxy::Proxy>>>);

impl ServedProxy {
    fn hook(&self, spec: crate::back::landlock::ProxySpec, echo: Echo) -> ProxyHook {
        use crate::runtime::proxy::{
            forward_ports, ipv6, relay_listens, relay_ports, RelaySockets, PORTS,
        };
        let slot = self.clone();
        let relay = relay_ports(&spec.rules);
        let forward = forward_ports(&spec.rules);
        let binds = relay_listens(&relay, &forward, ipv6()).len();
        let dns = !relay.is_empty();
        ProxyHook {
            ports: PORTS.to_vec(),
            relay_ports: relay,
            forward_ports: forward,
            serve: std::sync::Arc::new(move |mut listeners| {
                let whole = PORTS.len() + binds + usize::from(dns);
                let relay = if binds > 0 && listeners.len() == whole {
                    let dns = dns.then(|| {
                        let fd = std::os::fd::OwnedFd::from(listeners.pop().expect("counted"));
                        std::net::UdpSocket::from(fd)
                    });
                    Some(RelaySockets {
                        dns,
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
                match crate::runtime::proxy::Proxy::for_run(&spec, listeners, relay, echo, None) {
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
