//! Linux back end: the IR as a Landlock ruleset (a landlockconfig
//! document) plus seccomp, env, exec allow-list and limits.
//!
//! Landlock rights are additive and attached to open files, so two things
//! in the policy cannot be expressed exactly: a narrower rule beneath a
//! broader one, and a rule on a path that does not exist. Both are
//! reported in the precision report rather than silently approximated.

mod absent;
mod artifact;
mod consistent;
pub mod mounts;
pub mod proxy;
pub mod rights;

pub use absent::Report;
pub use artifact::*;
pub use consistent::contradictions;

use crate::back::roots::Index;
#[cfg(test)]
use crate::back::to_json;
use crate::back::{collect, write_json, EmitError, Emitted, Header};
use crate::hashed::{Map, Set};
use crate::ir::{
    self, path_within, Access, Ir, PathKind, PathMode, Ports, Precision, Source, Status,
};
use absent::AbsentProtections;
use rights::{FsSet, NET, NET_ABI, SCOPES, SCOPE_ABI};

pub const TARGET: &str = "linux";
pub const TARGET_LANDLOCKCONFIG: &str = "landlockconfig";

/// Syscalls always refused (EPERM): kernel attack surface and root-only
/// operations no ordinary build or script needs, plus io_uring, whose
/// operations (sockets, opens) are not seen by seccomp.
pub const DENY_SYSCALLS: &[&str] = &[
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "delete_module",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "init_module",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
    "ioperm",
    "iopl",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "mount",
    "mount_setattr",
    "move_mount",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "quotactl",
    "reboot",
    "request_key",
    "setdomainname",
    "sethostname",
    "settimeofday",
    "swapoff",
    "swapon",
    "syslog",
    "umount2",
    "userfaultfd",
];

/// Capabilities no policy keeps: the baseline `missing_baseline` checks.
pub use crate::policy::caps::DROP_CAPABILITIES;

/// `ioctl` requests refused on any descriptor: typing into the terminal
/// (TIOCSTI), and the console's own requests.
const DENY_IOCTL: &[&str] = &["TIOCLINUX", "TIOCSTI"];

/// `ptrace` requests refused: attaching to a process already running.
const DENY_PTRACE: &[&str] = &["PTRACE_ATTACH", "PTRACE_SEIZE"];

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// What `art` lacks of the baseline every artifact of this sbx carries
/// (empty: nothing). The loader refuses an artifact that lacks any of
/// it: edited by hand, or written by something else.
pub fn missing_baseline(art: &LinuxArtifact) -> Vec<String> {
    let s = &art.seccomp;
    let mut out = Vec::new();
    let mut need = |what: &str, have: &[String], names: &[&str]| {
        for n in names {
            if !have.iter().any(|h| h == n) {
                out.push(format!("{what} {n}"));
            }
        }
    };
    need("seccomp deny", &s.deny, DENY_SYSCALLS);
    need("seccomp deny_ioctl", &s.deny_ioctl, DENY_IOCTL);
    need("seccomp deny_ptrace", &s.deny_ptrace, DENY_PTRACE);
    need(
        "drop_capabilities",
        &art.drop_capabilities,
        DROP_CAPABILITIES,
    );
    if s.errno != "EPERM" {
        out.push(format!("seccomp errno EPERM (it has {})", s.errno));
    }
    let tcp_restricted = art.landlock.ruleset.iter().any(|r| {
        r.handled_access_net
            .iter()
            .flatten()
            .any(|n| n == "connect_tcp")
    });
    let exec = if art.memfd_exec {
        Vec::new()
    } else {
        exec_rules()
    };
    let userns = if art.nested_user_namespaces {
        Vec::new()
    } else {
        userns_rules()
    };
    for r in arg_rules(tcp_restricted)
        .into_iter()
        .chain(exec)
        .chain(userns)
    {
        if !s.deny_args.contains(&r) {
            out.push(format!(
                "seccomp deny_args rule on {} ({:?})",
                r.syscall, r.when
            ));
        }
    }
    out
}

/// Calls a sandboxed process could use on processes outside its tree
/// (Landlock's scopes cover signals and ptrace, not these): only the
/// caller itself (`0`) may be named. `setpriority`'s and `ioprio_set`'s
/// group and user forms reach every process of a group or uid.
/// A test as (argument, operation, value): see [`ArgTest`].
type Test = (u8, ArgOp, &'static str);

const OWN_PROCESS_ONLY: &[(&str, &[Test])] = &[
    ("prlimit64", &[(0, ArgOp::Ne, "0")]),
    ("setpriority", &[(0, ArgOp::Ne, "PRIO_PROCESS")]),
    ("setpriority", &[(1, ArgOp::Ne, "0")]),
    ("sched_setscheduler", &[(0, ArgOp::Ne, "0")]),
    ("sched_setparam", &[(0, ArgOp::Ne, "0")]),
    ("sched_setattr", &[(0, ArgOp::Ne, "0")]),
    ("sched_setaffinity", &[(0, ArgOp::Ne, "0")]),
    ("ioprio_set", &[(0, ArgOp::Ne, "IOPRIO_WHO_PROCESS")]),
    ("ioprio_set", &[(1, ArgOp::Ne, "0")]),
    ("migrate_pages", &[(0, ArgOp::Ne, "0")]),
    ("move_pages", &[(0, ArgOp::Ne, "0")]),
];

/// Where a mode word is given to a new or existing file: (syscall, the
/// mode's argument, the flags' argument when the mode only counts with
/// `O_CREAT` or `O_TMPFILE`). A set-user-ID file planted by a root
/// sandbox would run as root after the run.
const MODE_ARGS: &[(&str, u8, Option<u8>)] = &[
    ("chmod", 1, None),
    ("creat", 1, None),
    ("fchmod", 1, None),
    ("fchmodat", 2, None),
    ("fchmodat2", 2, None),
    ("mknod", 1, None),
    ("mknodat", 2, None),
    ("open", 2, Some(1)),
    ("openat", 3, Some(2)),
];

/// `sendto`, `sendmsg`, `sendmmsg` and the argument holding their flags:
/// `MSG_FASTOPEN` connects without `connect(2)`, so without Landlock's
/// check. EOPNOTSUPP is what the kernel answers when Fast Open is off,
/// which clients already handle by connecting normally.
const SEND_FLAGS: &[(&str, u8)] = &[("sendmmsg", 3), ("sendmsg", 2), ("sendto", 3)];

/// The argument rules every Linux artifact carries; the Fast Open rules
/// when TCP connects are restricted.
pub fn arg_rules(tcp_restricted: bool) -> Vec<ArgRule> {
    let test = |arg: u8, op: ArgOp, value: &str| ArgTest {
        arg,
        op,
        value: value.to_string(),
    };
    let rule = |syscall: &str, errno: &str, when: Vec<ArgTest>| ArgRule {
        syscall: syscall.to_string(),
        errno: errno.to_string(),
        when,
    };
    let mut out: Vec<ArgRule> = OWN_PROCESS_ONLY
        .iter()
        .map(|(name, tests)| {
            let when = tests.iter().map(|&(a, op, v)| test(a, op, v)).collect();
            rule(name, "EPERM", when)
        })
        .collect();
    for &(name, mode, flags) in MODE_ARGS {
        for bit in ["S_ISUID", "S_ISGID"] {
            match flags {
                None => out.push(rule(name, "EPERM", vec![test(mode, ArgOp::Has, bit)])),
                Some(f) => {
                    for flag in ["O_CREAT", "O_TMPFILE"] {
                        out.push(rule(
                            name,
                            "EPERM",
                            vec![test(f, ArgOp::Has, flag), test(mode, ArgOp::Has, bit)],
                        ));
                    }
                }
            }
        }
    }
    // Its mode sits in a struct seccomp cannot read; callers fall back to
    // `openat` on ENOSYS.
    out.push(rule("openat2", "ENOSYS", vec![]));
    // A lease on a file makes every other process that opens it (sbx's
    // journal among them, and the user's editor) wait until the holder
    // lets go, or `lease-break-time` (45 s) passes: a reach outside the
    // command's tree.
    out.push(rule(
        "fcntl",
        "EPERM",
        vec![test(1, ArgOp::Eq, "F_SETLEASE")],
    ));
    if tcp_restricted {
        for &(name, flags) in SEND_FLAGS {
            out.push(rule(
                name,
                "EOPNOTSUPP",
                vec![test(flags, ArgOp::Has, "MSG_FASTOPEN")],
            ));
        }
    }
    out
}

/// Unless `[linux] memfd_exec = true`: a memfd lives on an internal
/// mount Landlock does not check, so one made executable would run any
/// program written into it (`execve` of `/proc/self/fd/N`,
/// `execveat(AT_EMPTY_PATH)`), past `execute` rules and `[commands]`.
/// Every memfd must be created with `MFD_NOEXEC_SEAL` (Linux 6.3), which
/// the kernel also refuses to make executable later; EACCES is the
/// kernel's own answer under `vm.memfd_noexec = 2`.
pub fn exec_rules() -> Vec<ArgRule> {
    vec![ArgRule {
        syscall: "memfd_create".into(),
        errno: "EACCES".into(),
        when: vec![ArgTest {
            arg: 1,
            op: ArgOp::Lacks,
            value: "MFD_NOEXEC_SEAL".into(),
        }],
    }]
}

/// Unless `[linux] nested_user_namespaces = true`: a new user namespace
/// gives the command every capability over what it then creates (its
/// own network stack, nf_tables, …), the usual route to a kernel bug. So
/// `CLONE_NEWUSER` in `unshare` and `clone` is refused (EPERM); `clone3`
/// passes its flags in a struct seccomp cannot read, so it gets ENOSYS,
/// on which libc falls back to `clone`; `setns` is refused, whatever it
/// joins (its type argument may be 0: any). sbx makes its own namespaces
/// before the filter is installed, so only the command is bound.
pub fn userns_rules() -> Vec<ArgRule> {
    let newuser = |syscall: &str| ArgRule {
        syscall: syscall.into(),
        errno: "EPERM".into(),
        when: vec![ArgTest {
            arg: 0,
            op: ArgOp::Has,
            value: "CLONE_NEWUSER".into(),
        }],
    };
    let always = |syscall: &str, errno: &str| ArgRule {
        syscall: syscall.into(),
        errno: errno.into(),
        when: vec![],
    };
    vec![
        newuser("clone"),
        always("clone3", "ENOSYS"),
        always("setns", "EPERM"),
        newuser("unshare"),
    ]
}

/// Build the Linux artifact. Never refuses for precision reasons (see
/// [`emit`]); refuses paths it cannot represent.
pub fn build(ir: &Ir) -> Result<LinuxArtifact, EmitError> {
    let rules = rules(ir)?;
    let carve = mounts::carve_outs(ir, &rules);
    artifact(ir, &rules, &carve, Report::into_lines, NsOut::into_owned)
}

/// The artifact of `rules` and `carve`, its precision report made by
/// `report` of the [`Report`] (whose absent protections have no text
/// yet: [`emit_to`] writes it as it serialises), its namespaces by `ns`
/// of the [`NsOut`] (whose paths are the IR's).
fn artifact<'a, P, N>(
    ir: &'a Ir,
    rules: &'a [Rule<'a>],
    carve: &mounts::Carve,
    report: impl FnOnce(Report<'a>) -> P,
    ns: impl FnOnce(NsOut<'a>) -> N,
) -> Result<LinuxArtifact<P, N>, EmitError> {
    let header = Header::new(ir, TARGET);
    let landlock = landlock_config(ir, rules)?;
    let exact_abi = exact_abi(&landlock);
    let mut precision = linux_report(ir, rules, TARGET, Some(carve), true);
    if ir.net.ssh_agent {
        precision.push(Precision {
            rule: "ssh_agent".into(),
            target: TARGET.into(),
            status: ir::Status::Exact,
            reason: "sbx run relays /tmp/sbx-ssh-agent/agent.sock (in the run's private /tmp) \
                     to the caller's SSH_AUTH_SOCK, which the child gets; ~/.ssh/known_hosts \
                     and known_hosts2 read-only, hidden ~/.ssh otherwise (no key, no config)"
                .into(),
            advisory: false,
        });
    }
    Ok(LinuxArtifact {
        sbx: header.sbx,
        policy_hash: header.policy_hash,
        target: header.target,
        sbx_version: header.sbx_version,
        enforcement: ir.enforcement,
        mode: ir.mode,
        min_abi: ir.linux.min_abi,
        exact_abi,
        landlock,
        seccomp: seccomp(ir),
        drop_capabilities: strings(DROP_CAPABILITIES),
        keep_capabilities: ir.linux.capabilities.clone(),
        nested_user_namespaces: ir.linux.nested_user_namespaces,
        memfd_exec: ir.linux.memfd_exec,
        ssh_agent: ir.net.ssh_agent,
        env: ir.env.clone(),
        exec_allow: ir.commands.as_ref().map(|cmds| {
            cmds.iter()
                .map(|c| ExecEntry {
                    name: c.name.clone(),
                    path: c.path.clone(),
                })
                .collect()
        }),
        limits: ir.limits.clone(),
        namespaces: ns(NsOut {
            mode: ir.linux.namespaces,
            // Without the layer nothing is mounted, but the after-run
            // check still needs to know what sbx protects (docs/protected.md).
            mounts: if ir.linux.namespaces == ir::Namespaces::Never {
                let mut m = mounts::mounts(ir, carve);
                m.retain(|m| m.protection);
                m
            } else {
                mounts::mounts(ir, carve)
            },
            links: if ir.linux.namespaces == ir::Namespaces::Never {
                Vec::new()
            } else {
                mounts::links(ir)
            },
        }),
        proxy: proxy::spec(ir),
        precision: report(precision),
    })
}

/// `--target linux`. The precision lines are the lowering's notes plus
/// this back end's; the caller refuses inexact ones under
/// `enforcement = "required"` (see `sbx::compile`).
pub fn emit(ir: &Ir) -> Result<Emitted, EmitError> {
    collect(0, |out| emit_to(ir, out))
}

/// [`emit`], the text to `out` as it is written.
pub fn emit_to(ir: &Ir, out: &mut dyn FnMut(&[u8])) -> Result<Vec<Precision>, EmitError> {
    linux_to(ir, out, true)
}

/// [`emit_to`], returning the advisory lines of absent protections, and
/// the exact lines of carve-outs a mount makes exact, only if `advisory`
/// (the artifact carries them either way): a caller that keeps only what
/// `enforcement = "required"` and the linter read (inexact lines that are
/// not advisory) need not have their text made.
pub(crate) fn linux_to(
    ir: &Ir,
    out: &mut dyn FnMut(&[u8]),
    advisory: bool,
) -> Result<Vec<Precision>, EmitError> {
    let rules = rules(ir)?;
    let carve = mounts::carve_outs(ir, &rules);
    let art = artifact(ir, &rules, &carve, |r| r, |n| n)?;
    write_json(&art, out);
    Ok(match advisory {
        true => art.precision.into_lines(),
        false => art.precision.lean(),
    })
}

/// `--target landlockconfig`: the `landlock` member alone. Its precision
/// also notes what only the Linux artifact adds (seccomp, env, limits).
pub fn emit_landlockconfig(ir: &Ir) -> Result<Emitted, EmitError> {
    collect(0, |out| emit_landlockconfig_to(ir, out))
}

/// [`emit_landlockconfig`], the text to `out` as it is written.
pub fn emit_landlockconfig_to(
    ir: &Ir,
    out: &mut dyn FnMut(&[u8]),
) -> Result<Vec<Precision>, EmitError> {
    landlockconfig_to(ir, out, true)
}

/// [`emit_landlockconfig_to`], with the advisory lines only if
/// `advisory`: the document does not carry its report, so a caller that
/// keeps only what `enforcement = "required"` and the linter read (never
/// an advisory line) need not have them made (at 10,000 writable trees,
/// megabytes of absent paths).
pub(crate) fn landlockconfig_to(
    ir: &Ir,
    out: &mut dyn FnMut(&[u8]),
    advisory: bool,
) -> Result<Vec<Precision>, EmitError> {
    let rules = rules(ir)?;
    let doc = landlock_config(ir, &rules)?;
    write_json(&doc, out);
    Ok(linux_report(ir, &rules, TARGET_LANDLOCKCONFIG, None, advisory).into_lines())
}

/// One path rule as emitted, with the policy rights it stands for.
/// The path is the IR's (a grant's or a command's): a copy of each, and
/// a map keyed by copies, were 40 MiB per Linux target at 100,000 rules.
#[derive(Debug, Clone)]
struct Rule<'a> {
    path: &'a str,
    rights: FsSet,
    access: Access,
    label: String,
}

/// The grant's policy rights on Linux: with `[commands]`, `execute` only
/// on the listed executables.
fn policy_access(ir: &Ir, g: &ir::Grant) -> Access {
    let listed = matches!(g.source, Source::Command { .. });
    if ir.commands.is_some() && !listed {
        Access {
            execute: false,
            ..g.access
        }
    } else {
        g.access
    }
}

fn is_device(path: &str) -> bool {
    path_within(path, "/dev")
}

fn rights_for(access: Access, path: &str, kind: PathKind) -> FsSet {
    let r = FsSet::from_access(access, is_device(path));
    if kind == PathKind::File {
        r.and(FsSet::file_legal())
    } else {
        r
    }
}

/// The rules that go into the ruleset: existing (or unknown, portable)
/// grants plus the listed executables, merged per path.
fn rules<'a>(ir: &'a Ir) -> Result<Vec<Rule<'a>>, EmitError> {
    let mut out: Vec<Rule<'a>> = Vec::new();
    // Sized for the grants that can be rules: protections of absent
    // names, most grants of a large policy, are not.
    let present = ir.fs.iter().filter(|g| g.kind != PathKind::Missing).count();
    let mut at: Map<&'a str, usize> = Map::with_capacity_and_hasher(present, Default::default());
    let mut add = |r: Rule<'a>| match at.get(r.path) {
        Some(&i) => {
            let o = &mut out[i];
            o.rights = o.rights.or(r.rights);
            o.access = o.access.union(r.access);
        }
        None => {
            at.insert(r.path, out.len());
            out.push(r);
        }
    };
    for g in &ir.fs {
        check_path(ir.mode, &g.path).map_err(|message| EmitError {
            rule: g.source.label(),
            message,
        })?;
        if g.kind == PathKind::Missing {
            continue;
        }
        let access = policy_access(ir, g);
        let rights = rights_for(access, &g.path, g.kind);
        if !rights.is_empty() {
            add(Rule {
                path: &g.path,
                rights,
                access,
                label: g.source.label(),
            });
        }
    }
    // The lowering may already have granted a command (canonical path).
    let granted: Set<&str> = ir
        .fs
        .iter()
        .filter_map(|g| match &g.source {
            Source::Command { name } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    for c in ir.commands.iter().flatten() {
        if let (Some(p), false) = (&c.path, granted.contains(c.name.as_str())) {
            let label = format!("commands.{}", c.name);
            check_path(ir.mode, p).map_err(|message| EmitError {
                rule: label.clone(),
                message,
            })?;
            // exec opens the file for reading too (open_exec: FMODE_READ).
            add(Rule {
                path: p,
                rights: rights_for(Access::READ_EXEC, p, PathKind::File),
                access: Access::READ_EXEC,
                label,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(b.path));
    Ok(out)
}

/// Why Landlock cannot take `path`, if it cannot (the caller names the
/// rule: its label is made only then).
fn check_path(mode: PathMode, path: &str) -> Result<(), String> {
    let err = |m: &str| Err(format!("{m}: {path:?}"));
    if path.chars().any(|c| c.is_control()) {
        return err("path contains a NUL or control character");
    }
    let anchored = path.starts_with('/') || (mode == PathMode::Portable && path.starts_with("${"));
    if !anchored {
        return err("path is not absolute");
    }
    if path.len() > 4095 {
        return err("path is longer than PATH_MAX (4096)");
    }
    Ok(())
}

fn landlock_config(ir: &Ir, rules: &[Rule]) -> Result<LandlockConfig, EmitError> {
    let escape = |p: &str| match ir.mode {
        PathMode::Resolved => escape_template(p),
        PathMode::Portable => escape_portable(p),
    };
    // Group paths with identical rights (landlockconfig style), in order
    // of the rights' bits so the output is stable.
    let mut groups: Vec<(FsSet, Vec<String>)> = Vec::new();
    for r in rules {
        match groups.iter_mut().find(|(s, _)| *s == r.rights) {
            Some((_, paths)) => paths.push(escape(r.path)),
            None => groups.push((r.rights, vec![escape(r.path)])),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.0));
    let path_beneath = groups
        .into_iter()
        .map(|(s, parent)| PathBeneath {
            allowed_access: s.names().into_iter().map(String::from).collect(),
            parent,
        })
        .collect();

    let handled_net = handled_net(&ir.net);
    let mut net_port = Vec::new();
    for (bit, ports) in [(2u64, &ir.net.connect), (1u64, &ir.net.bind)] {
        if let Ports::Some(list) = ports {
            if handled_net & bit != 0 && !list.is_empty() {
                net_port.push(NetPort {
                    allowed_access: rights::names_of(NET, bit)
                        .into_iter()
                        .map(String::from)
                        .collect(),
                    port: list.iter().map(|p| u64::from(*p)).collect(),
                });
            }
        }
    }

    let scoped = scopes(ir)?;
    let variable = match ir.mode {
        PathMode::Resolved => Vec::new(),
        PathMode::Portable => [ir::WORKSPACE_PARAM, ir::HOME_PARAM, ir::TEMP_PARAM]
            .into_iter()
            .filter(|n| {
                let needle = format!("${{{n}}}");
                rules.iter().any(|r| r.path.contains(&needle))
            })
            .map(|n| Variable {
                name: n.to_string(),
                literal: None,
            })
            .collect(),
    };
    let net_names = rights::names_of(NET, handled_net);
    let scope_names = rights::names_of(SCOPES, scoped);
    let mut doc = LandlockConfig {
        abi: None,
        variable,
        ruleset: vec![RulesetAttr {
            handled_access_fs: Some(FsSet::all().names().into_iter().map(String::from).collect()),
            handled_access_net: (!net_names.is_empty())
                .then(|| net_names.into_iter().map(String::from).collect()),
            scoped: (!scope_names.is_empty())
                .then(|| scope_names.into_iter().map(String::from).collect()),
        }],
        path_beneath,
        net_port,
    };
    doc.abi = Some(exact_abi(&doc));
    Ok(doc)
}

/// Which TCP directions the ruleset handles: those not fully allowed.
fn handled_net(net: &ir::Net) -> u64 {
    let mut bits = 0;
    if !matches!(net.bind, Ports::All) {
        bits |= 1;
    }
    if !matches!(net.connect, Ports::All) {
        bits |= 2;
    }
    bits
}

fn scopes(ir: &Ir) -> Result<u64, EmitError> {
    match &ir.linux.scopes {
        None => Ok(SCOPES.iter().fold(0, |a, (_, b)| a | b)),
        Some(names) => rights::bits_of(SCOPES, names).ok_or_else(|| EmitError {
            rule: "linux.scopes".into(),
            message: format!("unknown scope in {names:?} (known: abstract_unix_socket, signal)"),
        }),
    }
}

/// The lowest ABI that knows every handled right and scope.
pub fn exact_abi(doc: &LandlockConfig) -> u32 {
    let mut abi = 1;
    for rs in &doc.ruleset {
        for n in rs.handled_access_fs.iter().flatten() {
            if let Some(s) = FsSet::named(n) {
                abi = abi.max(s.needed_abi());
            }
        }
        if rs
            .handled_access_net
            .as_ref()
            .is_some_and(|v| !v.is_empty())
        {
            abi = abi.max(NET_ABI);
        }
        if rs.scoped.as_ref().is_some_and(|v| !v.is_empty()) {
            abi = abi.max(SCOPE_ABI);
        }
    }
    abi
}

fn seccomp(ir: &Ir) -> Seccomp {
    Seccomp {
        errno: "EPERM".into(),
        deny: strings(DENY_SYSCALLS),
        deny_ioctl: strings(DENY_IOCTL),
        deny_ptrace: strings(DENY_PTRACE),
        sockets: (!ir.net.other_protocols).then(|| SocketFilter {
            errno: "EACCES".into(),
            allow: ["netlink", "tcp", "udp", "unix"]
                .into_iter()
                .filter(|k| *k != "udp" || ir.net.dns)
                .map(String::from)
                .collect(),
        }),
        deny_args: {
            let mut rules = arg_rules(ir.net.connect != Ports::All);
            if !ir.linux.memfd_exec {
                rules.extend(exec_rules());
            }
            if !ir.linux.nested_user_namespaces {
                rules.extend(userns_rules());
            }
            rules
        },
    }
}

/// Why UDP is open when a rule names a host and the child resolves names.
const DNS_UDP: &str = "name resolution needs UDP sockets, and seccomp cannot filter UDP by \
     destination: UDP to any host and port is possible (Landlock restricts UDP only from ABI 10)";

fn line(rule: String, target: &str, status: Status, reason: String) -> Precision {
    Precision {
        rule,
        target: target.to_string(),
        status,
        reason,
        advisory: false,
    }
}

fn access_words(a: Access) -> String {
    a.names().join(", ")
}

/// `words` joined by ", ", to `out`.
fn push_joined<'w>(out: &mut String, words: impl Iterator<Item = &'w str>) {
    for (k, w) in words.enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        out.push_str(w);
    }
}

/// Precision lines for the Landlock part (both targets) and for what
/// only the Linux artifact enforces (`target` = `landlockconfig` reports
/// those as missing). `carve`: the carve-outs `sbx run` mounts (the
/// Linux artifact only). `advisory`: whether to make the advisory lines.
#[cfg(test)]
fn linux_precision(
    ir: &Ir,
    rules: &[Rule],
    target: &str,
    carve: Option<&mounts::Carve>,
    advisory: bool,
) -> Vec<Precision> {
    let mut lines = linux_report(ir, rules, target, carve, advisory).into_lines();
    // Without the lowering's notes, which the report starts with.
    lines.drain(..ir.precision.len());
    lines
}

/// The report of a Linux target: the lowering's notes, then
/// [`linux_precision`]'s lines.
fn linux_report<'a>(
    ir: &'a Ir,
    rules: &'a [Rule<'a>],
    target: &str,
    carve: Option<&mounts::Carve>,
    advisory: bool,
) -> Report<'a> {
    let mut out = ir.precision.clone();
    let index = Index::new(rules.iter().map(|r| r.path));
    let mut absent = AbsentProtections::default();
    // The rules covering the last grant's directory: the next grant is
    // often its sibling (a writable tree's protections are ten). No grant's
    // directory is "", so the first grant looks its own up.
    let mut dir_rules: (&str, Vec<usize>) = ("", Vec::new());
    for (gi, g) in ir.fs.iter().enumerate() {
        let want = policy_access(ir, g);
        // What Landlock grants at the rule's path: the union of every
        // emitted rule at or above it.
        let found = match ir::last_slash(&g.path).filter(|&k| k > 0) {
            Some(k) => {
                let dir = &g.path[..k];
                if dir_rules.0 != dir {
                    dir_rules = (dir, index.covering(dir));
                }
                index.covering_below(&dir_rules.1, &g.path)
            }
            None => index.covering(&g.path),
        };
        let covering = || found.iter().map(|&i| &rules[i]);
        let got = covering().fold(Access::NONE, |a, r| a.union(r.access));
        // sbx's own additions are not rules: one that gets nothing here
        // lies under a rule whose path is missing too, whose line says so.
        let own = matches!(g.source, Source::Protected { .. } | Source::Covered { .. });
        if g.kind == PathKind::Missing && !own {
            let lost = want.minus(got);
            if !lost.is_empty() {
                out.push(line(
                    g.source.label(),
                    target,
                    Status::Dropped,
                    format!(
                        "{} does not exist, and Landlock can only attach rights to an \
                         existing file: {} not granted there",
                        g.path,
                        access_words(lost)
                    ),
                ));
            }
        }
        if g.kind == PathKind::File && matches!(g.source, Source::Rule { .. }) {
            // Removing (or re-creating) a file is checked on its directory:
            // a rule on the file itself cannot grant it. (Presets' device
            // files are written, never removed: no line for those.)
            let above = covering()
                .filter(|r| r.path != g.path)
                .fold(Access::NONE, |a, r| a.union(r.access));
            let dir_only = Access {
                create: want.create,
                delete: want.delete,
                ..Access::NONE
            };
            let lost = dir_only.minus(above);
            if !lost.is_empty() {
                out.push(line(
                    g.source.label(),
                    target,
                    Status::Narrower,
                    format!(
                        "{} on the file {} is not granted: Landlock checks removing and \
                         creating a file on its directory, which no rule grants that",
                        access_words(lost),
                        g.path
                    ),
                ));
            }
        }
        let extra = got.minus(want);
        if !extra.is_empty() {
            // sbx's own additions (POLICY.md §7, §7a) on a path absent at
            // launch: nothing to mount over (`Precision::advisory`).
            let absent_own = g.kind == PathKind::Missing && own;
            if absent_own && !advisory {
                continue;
            }
            let from: Vec<&str> = covering()
                .filter(|r| r.path != g.path && !r.access.minus(want).is_empty())
                .map(|r| r.label.as_str())
                .collect();
            if absent_own {
                absent.add(&mut out, &g.source, gi, extra, from);
                continue;
            }
            // `sbx run` mounts what a mount can express (mounts.rs).
            let fix = carve.and_then(|c| c.get(g.path.as_str()).copied());
            if let Some(f) = fix.filter(|_| ir.linux.namespaces != ir::Namespaces::Never) {
                // A line per carve-out (every rule of some large
                // policies): its text is written when it is needed.
                absent.carved(&mut out, gi, f, extra, from);
                continue;
            }
            let alone = format!(
                "{} from {} still apply beneath {}",
                access_words(extra),
                from.join(", "),
                g.path
            );
            let (status, reason) = match fix {
                Some(_) => (
                    Status::Wider,
                    format!(
                        "narrower rule under a broader one cannot be expressed in Landlock \
                         alone (rights are additive): {alone}; [linux] namespaces = \"never\" \
                         turns off the mounts that make it exact"
                    ),
                ),
                None => (
                    Status::Wider,
                    format!(
                        "narrower rule under a broader one cannot be expressed in Landlock \
                         (rights are additive){}: {alone}",
                        if g.kind == PathKind::Missing {
                            ", and no mount can take them back from a path that does not exist"
                        } else {
                            ""
                        }
                    ),
                ),
            };
            out.push(line(g.source.label(), target, status, reason));
        }
    }
    proxy::precision(ir, target, &mut out);
    // With the proxy, the child's UDP reaches nothing outside its
    // namespace; without one, `proxy::fallback` says this.
    if ir.net.dns && (target == TARGET_LANDLOCKCONFIG || proxy::spec(ir).is_none()) {
        out.push(line("net".into(), target, Status::Wider, DNS_UDP.into()));
    }
    if let Some(cmds) = &ir.commands {
        out.push(line(
            "commands".into(),
            target,
            Status::Wider,
            if ir.linux.memfd_exec {
                "the ELF interpreter (ld.so) of each allowed program must be executable, and \
                 running it directly (`ld.so /path/prog`) maps any readable program with \
                 mmap(PROT_EXEC), which Landlock does not check; `[linux] memfd_exec = true` \
                 lets any program written into a memfd run, which Landlock does not see either"
            } else {
                "the ELF interpreter (ld.so) of each allowed program must be executable, and \
                 running it directly (`ld.so /path/prog`) maps any readable program with \
                 mmap(PROT_EXEC), which Landlock does not check; a memfd, which Landlock does not \
                 see either, must be created with MFD_NOEXEC_SEAL (seccomp), so none can be run"
            }
            .into(),
        ));
        for c in cmds {
            if c.args.is_some() {
                out.push(line(
                    format!("commands.{}", c.name),
                    target,
                    Status::Wider,
                    "argument prefixes are cooperative only: the kernel allows any arguments"
                        .into(),
                ));
            }
        }
        if !ir.env.allow.is_empty() {
            for c in cmds {
                if !ir.env.allow.iter().all(|a| c.envs.contains(a)) {
                    out.push(line(
                        format!("commands.{}", c.name),
                        target,
                        Status::Wider,
                        "per-command env lists are cooperative only: a listed program \
                         inherits whatever allowed variables its caller passes"
                            .into(),
                    ));
                }
            }
        }
        if target == TARGET_LANDLOCKCONFIG {
            out.push(line(
                "commands".into(),
                target,
                Status::Narrower,
                "the sandboxed program and the ELF interpreters get `execute` from `sbx run` \
                 at run time; this document does not list them"
                    .into(),
            ));
        }
    }
    limits_precision(ir, target, &mut out);
    if target == TARGET_LANDLOCKCONFIG {
        if !ir.net.other_protocols {
            out.push(line(
                "net".into(),
                target,
                Status::Wider,
                "UDP, raw and other non-TCP sockets are denied by the seccomp filter of the \
                 linux target, which landlockconfig cannot carry"
                    .into(),
            ));
        }
        out.push(line(
            "env".into(),
            target,
            Status::Unsupported,
            "landlockconfig does not filter the environment (the linux target does)".into(),
        ));
    }
    absent.finish(out, &ir.fs, target)
}

fn limits_precision(ir: &Ir, target: &str, out: &mut Vec<Precision>) {
    let l = &ir.limits;
    let lc = target == TARGET_LANDLOCKCONFIG;
    let mut push = |name: &str, set: bool, status: Status, reason: &str| {
        if set {
            let (status, reason) = if lc {
                (
                    Status::Unsupported,
                    "landlockconfig carries no resource limits (the linux target does)",
                )
            } else {
                (status, reason)
            };
            out.push(line(
                format!("limits.{name}"),
                target,
                status,
                reason.to_string(),
            ));
        }
    };
    push(
        "max_processes",
        l.max_processes.is_some(),
        Status::Wider,
        "best effort: applied as RLIMIT_NPROC above the user's current task count; \
         the limit is per user (other processes of the user count), and root ignores it",
    );
    push(
        "max_memory_mib",
        l.max_memory_mib.is_some(),
        Status::Narrower,
        "applied as RLIMIT_AS, which counts reserved address space, not only committed \
         memory",
    );
    if lc {
        push("cpu_time_s", l.cpu_time_s.is_some(), Status::Exact, "");
        push("wall_time_s", l.wall_time_s.is_some(), Status::Exact, "");
    }
}

#[cfg(test)]
mod tests;
