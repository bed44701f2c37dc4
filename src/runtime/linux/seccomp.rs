//! The artifact's seccomp section compiled to BPF for the running
//! architecture (before fork; the child only installs the programs).
//!
//! One `seccompiler` program per errno, because `seccompiler` has one
//! match action per filter: sockets the policy does not allow get EACCES
//! (the errno Landlock uses for a denied connect), argument rules their
//! own errno, and the deny list (privileged or filter-bypassing syscalls,
//! and argument rules with its errno) EPERM. They are chained into one
//! program behind a prefix that refuses x32 syscalls and allows every
//! unlisted syscall number at once.
//!
//! A second variant hands `listen` to sbx (`SECCOMP_RET_USER_NOTIF`,
//! decided in `listen.rs`): chained last, so any errno the other
//! programs return for it still wins, as the kernel ranks them.

use crate::back::landlock::{ArgOp, ArgRule, Seccomp};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

pub fn errno(name: &str) -> Option<i32> {
    match name {
        "EPERM" => Some(libc::EPERM),
        "EACCES" => Some(libc::EACCES),
        "ENOSYS" => Some(libc::ENOSYS),
        "EOPNOTSUPP" => Some(libc::EOPNOTSUPP),
        _ => None,
    }
}

fn syscall(name: &str) -> Option<i64> {
    use libc::*;
    let n = match name {
        "acct" => SYS_acct,
        #[cfg(target_arch = "x86_64")]
        "chmod" => SYS_chmod,
        #[cfg(target_arch = "x86_64")]
        "creat" => SYS_creat,
        "fchmod" => SYS_fchmod,
        "fchmodat" => SYS_fchmodat,
        "fchmodat2" => SYS_fchmodat2,
        "memfd_create" => SYS_memfd_create,
        "clone" => SYS_clone,
        "clone3" => SYS_clone3,
        "setns" => SYS_setns,
        "unshare" => SYS_unshare,
        "ioprio_set" => SYS_ioprio_set,
        "migrate_pages" => SYS_migrate_pages,
        #[cfg(target_arch = "x86_64")]
        "mknod" => SYS_mknod,
        "mknodat" => SYS_mknodat,
        "move_pages" => SYS_move_pages,
        #[cfg(target_arch = "x86_64")]
        "open" => SYS_open,
        "openat" => SYS_openat,
        "openat2" => SYS_openat2,
        "prlimit64" => SYS_prlimit64,
        "sched_setaffinity" => SYS_sched_setaffinity,
        "sched_setattr" => SYS_sched_setattr,
        "sched_setparam" => SYS_sched_setparam,
        "sched_setscheduler" => SYS_sched_setscheduler,
        "sendmmsg" => SYS_sendmmsg,
        "sendmsg" => SYS_sendmsg,
        "sendto" => SYS_sendto,
        "setpriority" => SYS_setpriority,
        "add_key" => SYS_add_key,
        "bpf" => SYS_bpf,
        "clock_adjtime" => SYS_clock_adjtime,
        "clock_settime" => SYS_clock_settime,
        "delete_module" => SYS_delete_module,
        "finit_module" => SYS_finit_module,
        "fsconfig" => SYS_fsconfig,
        "fsmount" => SYS_fsmount,
        "fsopen" => SYS_fsopen,
        "fspick" => SYS_fspick,
        "init_module" => SYS_init_module,
        "io_uring_enter" => SYS_io_uring_enter,
        "io_uring_register" => SYS_io_uring_register,
        "io_uring_setup" => SYS_io_uring_setup,
        #[cfg(target_arch = "x86_64")]
        "ioperm" => SYS_ioperm,
        #[cfg(target_arch = "x86_64")]
        "iopl" => SYS_iopl,
        "kexec_file_load" => SYS_kexec_file_load,
        "kexec_load" => SYS_kexec_load,
        "keyctl" => SYS_keyctl,
        "mount" => SYS_mount,
        "mount_setattr" => SYS_mount_setattr,
        "move_mount" => SYS_move_mount,
        "open_by_handle_at" => SYS_open_by_handle_at,
        "open_tree" => SYS_open_tree,
        "perf_event_open" => SYS_perf_event_open,
        "pivot_root" => SYS_pivot_root,
        "process_vm_readv" => SYS_process_vm_readv,
        "process_vm_writev" => SYS_process_vm_writev,
        "quotactl" => SYS_quotactl,
        "reboot" => SYS_reboot,
        "request_key" => SYS_request_key,
        "setdomainname" => SYS_setdomainname,
        "sethostname" => SYS_sethostname,
        "settimeofday" => SYS_settimeofday,
        "swapoff" => SYS_swapoff,
        "swapon" => SYS_swapon,
        "syslog" => SYS_syslog,
        "umount2" => SYS_umount2,
        "userfaultfd" => SYS_userfaultfd,
        _ => return None,
    };
    Some(n)
}

/// Syscalls that exist only on some architectures: absent here means
/// nothing to deny.
const ARCH_SPECIFIC: &[&str] = &["chmod", "creat", "ioperm", "iopl", "mknod", "open"];

/// The constants argument rules name (`ArgTest::value`), or a number.
#[allow(clippy::unnecessary_cast)]
fn constant(name: &str) -> Option<u64> {
    let v = match name {
        "S_ISUID" => libc::S_ISUID as u64,
        "S_ISGID" => libc::S_ISGID as u64,
        "O_CREAT" => libc::O_CREAT as u64,
        "O_TMPFILE" => libc::O_TMPFILE as u64,
        "MSG_FASTOPEN" => libc::MSG_FASTOPEN as u64,
        "MFD_NOEXEC_SEAL" => libc::MFD_NOEXEC_SEAL as u64,
        "CLONE_NEWUSER" => libc::CLONE_NEWUSER as u64,
        "PRIO_PROCESS" => libc::PRIO_PROCESS as u64,
        // include/uapi/linux/ioprio.h; not in the libc crate.
        "IOPRIO_WHO_PROCESS" => 1,
        _ => return name.parse::<u32>().ok().map(u64::from),
    };
    Some(v)
}

// The requests are ints in musl, unsigned longs in glibc.
#[allow(clippy::unnecessary_cast)]
fn ioctl_request(name: &str) -> Option<u64> {
    match name {
        "TIOCSTI" => Some(libc::TIOCSTI as u64),
        "TIOCLINUX" => Some(libc::TIOCLINUX as u64),
        _ => None,
    }
}

fn ptrace_request(name: &str) -> Option<u64> {
    match name {
        "PTRACE_ATTACH" => Some(libc::PTRACE_ATTACH as u64),
        "PTRACE_SEIZE" => Some(libc::PTRACE_SEIZE as u64),
        _ => None,
    }
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    // Dword: the kernel reads these arguments as 32-bit ints.
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

fn rule(conds: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conds).map_err(|e| e.to_string())
}

fn arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        format!(
            "seccomp: architecture {} is not supported",
            std::env::consts::ARCH
        )
    })
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, String> {
    let f = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch()?,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    BpfProgram::try_from(f).map_err(|e| format!("seccomp: {e}"))
}

/// The plain filter alone, for tests.
#[cfg(test)]
pub(super) fn build(s: &Seccomp) -> Result<Vec<BpfProgram>, String> {
    Ok(compile_section(s)?.plain())
}

/// The section's programs, compiled once; either filter is made from
/// them (`plain`, or `listen` when the command is on the real network).
pub struct Section {
    programs: Vec<BpfProgram>,
    keys: Keys,
    /// Refused by the prefix's search itself (`compile_all`).
    outright: Keys,
    deny_errno: i32,
}

impl Section {
    /// The filter: the programs chained behind the prefix.
    pub fn plain(&self) -> Vec<BpfProgram> {
        assemble(
            self.programs.clone(),
            self.keys.clone(),
            &self.outright,
            self.deny_errno,
        )
    }

    /// The filter that also hands `listen` to sbx (`None` on an
    /// architecture sbx has no tag for).
    pub fn listen(&self) -> Option<Vec<BpfProgram>> {
        let mut programs = self.programs.clone();
        programs.push(listen_program()?);
        let mut keys = self.keys.clone();
        keys.insert(libc::SYS_listen as u32);
        Some(assemble(programs, keys, &self.outright, self.deny_errno))
    }
}

/// Compile the section; unknown names are errors (the artifact is not
/// what this sbx wrote).
pub fn compile_section(s: &Seccomp) -> Result<Section, String> {
    let (programs, keys, outright, deny_errno) = compile_all(s, true)?;
    Ok(Section {
        programs,
        keys,
        outright,
        deny_errno,
    })
}

/// Every syscall number some program has a rule for.
type Keys = std::collections::BTreeSet<u32>;

/// `programs` (in the order they run) chained, behind the prefix.
fn assemble(
    programs: Vec<BpfProgram>,
    keys: Keys,
    outright: &Keys,
    deny_errno: i32,
) -> Vec<BpfProgram> {
    let mut out = chain_all(programs);
    // The newest filter runs first: the prefix goes in front of it. Were
    // the programs too long to chain, the older filters still run, and
    // the prefix's errno for a number refused outright is the most
    // severe answer, as the deny list's would have been.
    let keys: Vec<u32> = keys.into_iter().collect();
    if let Some(newest) = out.last_mut() {
        let mut p = prefix(&keys, outright, deny_errno);
        p.append(newest);
        *newest = p;
    }
    out
}

/// The section's `seccompiler` programs in the order they run, the
/// numbers they have rules for, those the prefix refuses itself
/// (`outright`, when `shorten`), and the deny list's errno.
fn compile_all(s: &Seccomp, shorten: bool) -> Result<(Vec<BpfProgram>, Keys, Keys, i32), String> {
    let errno_of = |name: &str| errno(name).ok_or_else(|| format!("seccomp: unknown errno {name}"));
    let deny_errno = errno_of(&s.errno)?;
    let mut deny = deny_rules(s)?;
    // By errno, in the order they run: the socket filter, the argument
    // rules with errnos of their own, the deny list.
    let mut groups: BTreeMap<i32, BTreeMap<i64, Vec<SeccompRule>>> = BTreeMap::new();
    for r in &s.deny_args {
        let e = errno_of(&r.errno)?;
        let Some((nr, rule)) = arg_rule(r)? else {
            continue;
        };
        let map = if e == deny_errno {
            &mut deny
        } else {
            groups.entry(e).or_default()
        };
        match (rule, map.get_mut(&nr)) {
            // Refused whatever its arguments: no condition may narrow it.
            (None, _) => {
                map.insert(nr, vec![]);
            }
            (Some(_), Some(rules)) if rules.is_empty() => {}
            (Some(rule), Some(rules)) => rules.push(rule),
            (Some(rule), None) => {
                map.insert(nr, vec![rule]);
            }
        }
    }
    let mut programs = Vec::new();
    if let Some(sock) = &s.sockets {
        programs.push((socket_rules(&sock.allow)?, errno_of(&sock.errno)?));
    }
    programs.extend(groups.into_iter().map(|(e, rules)| (rules, e)));
    let keys: Keys = programs
        .iter()
        .map(|(rules, _)| rules)
        .chain([&deny])
        .flat_map(|rules| rules.keys().map(|&n| n as u32))
        .collect();
    // A number the deny list refuses whatever its arguments, and no
    // other program names, is refused by the prefix's search itself, so
    // `seccompiler`'s program need not list it: attaching costs per
    // instruction (five per such number). Only where the search is made
    // for the plain filter and for the `listen` variant alike (one key
    // more); elsewhere the program keeps every number.
    let mut outright = Keys::new();
    if shorten {
        let candidates: Keys = deny
            .iter()
            .filter(|(nr, rules)| {
                rules.is_empty() && !programs.iter().any(|(p, _)| p.contains_key(nr))
            })
            .map(|(&nr, _)| nr as u32)
            .collect();
        let mut with_listen = keys.clone();
        with_listen.insert(libc::SYS_listen as u32);
        let with_listen: Vec<u32> = with_listen.into_iter().collect();
        if !candidates.is_empty() && search(&with_listen, &candidates, deny_errno).is_some() {
            deny.retain(|nr, _| !candidates.contains(&(*nr as u32)));
            outright = candidates;
        }
    }
    programs.push((deny, deny_errno));
    let mut compiled = Vec::new();
    for (rules, e) in programs {
        compiled.push(compile(rules, e)?);
    }
    Ok((compiled, keys, outright, deny_errno))
}

/// Returned for `listen`: the kernel asks sbx, which holds the filter's
/// listener (`listen.rs`).
pub(super) const NOTIFY: u32 = libc::SECCOMP_RET_USER_NOTIF;

/// A program that returns [`NOTIFY`] for `listen` and "allow" for the
/// rest. It runs last in the chain: a foreign architecture was killed
/// and an x32 number refused before it (standalone, it allows them and
/// leaves them to the other filters).
fn listen_program() -> Option<BpfProgram> {
    let arch = native_arch()?;
    Some(vec![
        ins(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        ins(JEQ_K, 0, 3, arch),
        ins(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        ins(JEQ_K, 0, 1, libc::SYS_listen as u32),
        ins(RET_K, 0, 0, NOTIFY),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ])
}

/// Whether `prog` hands a call to sbx: the filter to install with
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
pub fn notifies(prog: &[seccompiler::sock_filter]) -> bool {
    prog.iter().any(|i| i.code == RET_K && i.k == NOTIFY)
}

/// A syscall number and its rule (`None`: refused whatever its arguments).
type NumberedRule = (i64, Option<SeccompRule>);

/// An argument rule as a `seccompiler` rule on its syscall's number
/// (`None` inside: no tests, always refused); `None` for a syscall this
/// architecture does not have.
fn arg_rule(r: &ArgRule) -> Result<Option<NumberedRule>, String> {
    let Some(nr) = syscall(&r.syscall) else {
        if ARCH_SPECIFIC.contains(&r.syscall.as_str()) {
            return Ok(None);
        }
        return Err(format!("seccomp: unknown syscall {}", r.syscall));
    };
    if r.when.is_empty() {
        return Ok(Some((nr, None)));
    }
    let conds = r
        .when
        .iter()
        .map(|t| {
            let v = constant(&t.value).ok_or_else(|| {
                format!(
                    "seccomp: unknown value {} in a rule on {}",
                    t.value, r.syscall
                )
            })?;
            if t.arg > 5 {
                return Err(format!(
                    "seccomp: argument {} of {} does not exist",
                    t.arg, r.syscall
                ));
            }
            let (op, v) = match t.op {
                ArgOp::Has => (SeccompCmpOp::MaskedEq(v), v),
                ArgOp::Lacks => (SeccompCmpOp::MaskedEq(v), 0),
                ArgOp::Eq => (SeccompCmpOp::Eq, v),
                ArgOp::Ne => (SeccompCmpOp::Ne, v),
            };
            cond(t.arg, op, v)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some((nr, Some(rule(conds)?))))
}

/// `programs` (in the order they run) as one program where they fit, see
/// [`chain`]; in install order.
fn chain_all(programs: Vec<BpfProgram>) -> Vec<BpfProgram> {
    let mut rev = programs.into_iter().rev();
    let mut out: Vec<BpfProgram> = rev.next().into_iter().collect();
    for p in rev {
        let first = out.pop().unwrap_or_default();
        out.extend(chain(p, first));
    }
    out
}

/// The deny list's rules by syscall number: the listed syscalls, and
/// `ioctl` and `ptrace` with the listed requests.
fn deny_rules(s: &Seccomp) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for name in &s.deny {
        match syscall(name) {
            Some(n) => {
                rules.insert(n, vec![]);
            }
            None if ARCH_SPECIFIC.contains(&name.as_str()) => {}
            None => return Err(format!("seccomp: unknown syscall {name}")),
        }
    }
    for (nr, chain) in [
        (
            libc::SYS_ioctl,
            request_rules(&s.deny_ioctl, "ioctl", 1, ioctl_request)?,
        ),
        (
            libc::SYS_ptrace,
            request_rules(&s.deny_ptrace, "ptrace", 0, ptrace_request)?,
        ),
    ] {
        if !chain.is_empty() {
            rules.insert(nr, chain);
        }
    }
    Ok(rules)
}

/// One program that decides as the filters `[later, first]` installed in
/// that order would: `first` is attached, then `later`. Attaching costs
/// the kernel about as much per filter as per hundred instructions, so
/// sbx attaches one. `later` runs first (the kernel runs the newest
/// filter first and keeps its result on a tie); each of its "allow"
/// returns becomes a jump to `first`, which then decides. For the
/// programs `build` makes this is the kernel's rule exactly: `later`
/// kills on a foreign architecture, and otherwise returns either "allow"
/// or an errno, which no result of `first` outranks (an errno, a kill,
/// or the notification for `listen`, which ranks below every errno). Too
/// long for one program (4,096 instructions): two filters, as before.
fn chain(later: BpfProgram, first: BpfProgram) -> Vec<BpfProgram> {
    if later.len() + first.len() > 4096 {
        return vec![first, later];
    }
    let len = later.len();
    let mut out: BpfProgram = later
        .into_iter()
        .enumerate()
        .map(|(pc, i)| {
            if i.code == RET_K && i.k == libc::SECCOMP_RET_ALLOW {
                // To the instruction after `later`'s last: `first`'s first.
                ins(JA, 0, 0, (len - pc - 1) as u32)
            } else {
                i
            }
        })
        .collect();
    out.extend(first);
    vec![out]
}

/// One rule per listed request (`ioctl`'s, `ptrace`'s): argument `arg`
/// equal to it.
fn request_rules(
    names: &[String],
    what: &str,
    arg: u8,
    request: fn(&str) -> Option<u64>,
) -> Result<Vec<SeccompRule>, String> {
    names
        .iter()
        .map(|name| {
            let req = request(name).ok_or_else(|| format!("seccomp: unknown {what} {name}"))?;
            rule(vec![cond(arg, SeccompCmpOp::Eq, req)?])
        })
        .collect()
}

/// Rules matching every `socket(2)` call *not* in the allow-list.
fn socket_rules(allow: &[String]) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut families: Vec<u64> = Vec::new();
    // Allowed IP socket types, with the protocols each may use.
    let mut ip: Vec<(u64, u64)> = Vec::new();
    for a in allow {
        match a.as_str() {
            "unix" => families.push(libc::AF_UNIX as u64),
            "netlink" => families.push(libc::AF_NETLINK as u64),
            "tcp" => ip.push((libc::SOCK_STREAM as u64, libc::IPPROTO_TCP as u64)),
            "udp" => ip.push((libc::SOCK_DGRAM as u64, libc::IPPROTO_UDP as u64)),
            other => return Err(format!("seccomp: unknown socket kind {other}")),
        }
    }
    let inet = [libc::AF_INET as u64, libc::AF_INET6 as u64];
    if !ip.is_empty() {
        families.extend(inet);
    }
    let mut rules = Vec::new();
    // Any family outside the list.
    let not_listed: Vec<SeccompCondition> = families
        .iter()
        .map(|f| cond(0, SeccompCmpOp::Ne, *f))
        .collect::<Result<_, _>>()?;
    if not_listed.is_empty() {
        // Nothing allowed: a condition that always holds.
        rules.push(rule(vec![cond(0, SeccompCmpOp::MaskedEq(0), 0)?])?);
    } else {
        rules.push(rule(not_listed)?);
    }
    if !ip.is_empty() {
        // The kernel refuses (EINVAL) a type with flags other than
        // SOCK_NONBLOCK and SOCK_CLOEXEC, so the types it accepts for an
        // allowed IP type are that type with those flags: any other value
        // is denied with one rule per family, not one per type (the filter
        // is JIT-compiled at every start, and its length is the cost).
        let flags = [
            0,
            libc::SOCK_NONBLOCK as u64,
            libc::SOCK_CLOEXEC as u64,
            (libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) as u64,
        ];
        for fam in inet {
            let mut other_type = vec![cond(0, SeccompCmpOp::Eq, fam)?];
            for (ty, _) in &ip {
                for f in flags {
                    other_type.push(cond(1, SeccompCmpOp::Ne, ty | f)?);
                }
            }
            rules.push(rule(other_type)?);
            // An allowed type with a protocol other than 0 or its own: raw,
            // SCTP and MPTCP sockets are not what Landlock's TCP rules cover.
            for (ty, proto) in &ip {
                rules.push(rule(vec![
                    cond(0, SeccompCmpOp::Eq, fam)?,
                    cond(1, SeccompCmpOp::MaskedEq(0xf), *ty)?,
                    cond(2, SeccompCmpOp::Ne, 0)?,
                    cond(2, SeccompCmpOp::Ne, *proto)?,
                ])?);
            }
        }
    }
    Ok(BTreeMap::from([(libc::SYS_socket, rules)]))
}

const LD_W_ABS: u16 = 0x20;
const JA: u16 = 0x05;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;
/// The kernel's `__X32_SYSCALL_BIT`: set in the number of an x32 syscall.
const X32_BIT: u32 = 0x4000_0000;

fn ins(code: u16, jt: u8, jf: u8, k: u32) -> seccompiler::sock_filter {
    seccompiler::sock_filter { code, jt, jf, k }
}

/// "Fail with `errno`".
fn refusal(errno: i32) -> seccompiler::sock_filter {
    ins(
        RET_K,
        0,
        0,
        libc::SECCOMP_RET_ERRNO | (errno as u32 & 0xffff),
    )
}

/// `seccomp_data.arch` of this build's architecture (`AUDIT_ARCH_*`).
pub(super) fn native_arch() -> Option<u32> {
    if cfg!(target_arch = "x86_64") {
        Some(0xc000_003e)
    } else if cfg!(target_arch = "aarch64") {
        Some(0xc000_00b7)
    } else if cfg!(target_arch = "riscv64") {
        Some(0xc000_00f3)
    } else {
        None
    }
}

/// Leaves of the search tree hold up to this many numbers.
const LEAF: usize = 4;

/// Instructions in the search tree over `n` numbers.
fn tree_len(n: usize) -> usize {
    if n <= LEAF {
        n + 1
    } else {
        1 + tree_len(n / 2) + tree_len(n - n / 2)
    }
}

/// A binary search for the syscall number (in the accumulator) among
/// `keys` (sorted): "allow" when it is none of them, else a jump to the
/// instruction `after` instructions past the tree's end, `skip` more for
/// a key not in `outright` (past the refusal that follows the tree).
/// `None` when a jump would not fit in an 8-bit offset.
fn tree(
    keys: &[u32],
    outright: &Keys,
    skip: usize,
    after: usize,
    out: &mut BpfProgram,
) -> Option<()> {
    let n = keys.len();
    if n <= LEAF {
        for (i, &k) in keys.iter().enumerate() {
            // Past the rest of the leaf and its "allow".
            let past = if outright.contains(&k) { 0 } else { skip };
            out.push(ins(JEQ_K, u8::try_from(n - i + after + past).ok()?, 0, k));
        }
        out.push(ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
        return Some(());
    }
    let mid = n / 2;
    let left = tree_len(mid);
    out.push(ins(JGE_K, u8::try_from(left).ok()?, 0, keys[mid]));
    tree(&keys[..mid], outright, skip, tree_len(n - mid) + after, out)?;
    tree(&keys[mid..], outright, skip, after, out)
}

/// The prefix's search over `keys` (sorted), then, with `outright`, the
/// deny list's errno for those: what follows it is the program's first
/// instruction. `None` without a known architecture, or when it would
/// not fit in the architecture check's 8-bit jump over it.
fn search(keys: &[u32], outright: &Keys, errno: i32) -> Option<BpfProgram> {
    native_arch()?;
    if keys.is_empty() {
        return None;
    }
    let refuse = !outright.is_empty();
    let mut out = Vec::new();
    tree(keys, outright, usize::from(refuse), 0, &mut out)?;
    if refuse {
        out.push(refusal(errno));
    }
    (PREFIX_BODY + out.len() <= 255).then_some(out)
}

/// The prefix's instructions before the search, past the architecture
/// check: the number's load, and on x86_64 the x32 refusal.
const PREFIX_BODY: usize = if cfg!(target_arch = "x86_64") { 3 } else { 1 };

/// What goes in front of the deny list's `seccompiler` program. Every
/// path out of it returns or falls through to the program's first
/// instruction (whose jumps are relative, so they stay valid).
///
/// - On x86_64, x32 syscalls share the architecture tag but set bit 30
///   of the number: refuse them all, or `socket` would have a second
///   number no rule matches.
/// - A binary search answers "allow" for the syscall numbers the program
///   has no rule for (`keys`, sorted), in a few steps instead of two per
///   listed syscall. At attach time the kernel runs the filter for every
///   syscall number to find those it always allows; with the linear chain
///   `seccompiler` emits that would be most of the cost of starting a program
///   (`bench/seccomp_attach.c`: ~2.6 µs per instruction).
///
/// The program decides every other listed syscall; those in `outright`
/// (never given without a search: `compile_all`) the search refuses
/// itself. A foreign architecture goes straight to the program (it
/// kills). With too many keys for 8-bit jumps the prefix is the x32
/// refusal alone; without a known architecture tag (not x86_64, so no
/// x32), nothing.
fn prefix(keys: &[u32], outright: &Keys, errno: i32) -> BpfProgram {
    let Some(arch) = native_arch() else {
        return Vec::new();
    };
    let x32 = cfg!(target_arch = "x86_64");
    let mut out = vec![ins(LD_W_ABS, 0, 0, 4)]; // seccomp_data.arch
    let mut body = vec![ins(LD_W_ABS, 0, 0, 0)]; // seccomp_data.nr
    if x32 {
        body.push(ins(JGE_K, 0, 1, X32_BIT));
        body.push(refusal(errno));
    }
    debug_assert_eq!(body.len(), PREFIX_BODY);
    // The architecture check jumps over the body with an 8-bit offset.
    match search(keys, outright, errno) {
        Some(search) => body.extend(search),
        // `compile_all` kept these numbers out of the program only
        // because the search would refuse them: never run without it.
        None => assert!(
            outright.is_empty(),
            "seccomp: refusals without their search"
        ),
    }
    out.push(ins(JEQ_K, 0, body.len() as u8, arch));
    out.extend(body);
    out
}

/// Run the installed filters on one `seccomp_data` as the kernel does:
/// every filter runs and the most severe action wins (the newest filter
/// on a tie). Only the instructions `seccompiler` emits; anything else
/// panics. For tests.
#[cfg(test)]
pub(super) fn interpret(progs: &[BpfProgram], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    let data = seccomp_data(arch, nr, args);
    let mut ret = libc::SECCOMP_RET_ALLOW;
    for prog in progs.iter().rev() {
        let r = run(prog, &data);
        let severity = |v: u32| (v & libc::SECCOMP_RET_ACTION_FULL) as i32;
        if severity(r) < severity(ret) {
            ret = r;
        }
    }
    ret
}

/// The `struct seccomp_data` a filter reads.
#[cfg(test)]
fn seccomp_data(arch: u32, nr: u32, args: [u64; 6]) -> [u8; 64] {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_ne_bytes());
    data[4..8].copy_from_slice(&arch.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    data
}

#[cfg(test)]
fn run(prog: &[seccompiler::sock_filter], data: &[u8; 64]) -> u32 {
    run_counting(prog, data).0
}

/// `run`, and how many instructions it took.
#[cfg(test)]
fn run_counting(prog: &[seccompiler::sock_filter], data: &[u8; 64]) -> (u32, usize) {
    let mut acc = 0u32;
    let mut pc = 0usize;
    let mut steps = 0;
    loop {
        let ins = &prog[pc];
        pc += 1;
        steps += 1;
        let branch = |taken: bool| usize::from(if taken { ins.jt } else { ins.jf });
        match ins.code {
            0x20 => {
                // BPF_LD | BPF_W | BPF_ABS
                let k = ins.k as usize;
                assert!(k % 4 == 0 && k + 4 <= data.len(), "load at {k}");
                acc = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
            }
            0x54 => acc &= ins.k,                   // BPF_ALU | BPF_AND | BPF_K
            0x05 => pc += ins.k as usize,           // BPF_JMP | BPF_JA
            0x15 => pc += branch(acc == ins.k),     // JEQ
            0x35 => pc += branch(acc >= ins.k),     // JGE
            0x25 => pc += branch(acc > ins.k),      // JGT
            0x45 => pc += branch(acc & ins.k != 0), // JSET
            0x06 => return (ins.k, steps),          // BPF_RET | BPF_K
            code => panic!("unexpected BPF instruction {code:#x}"),
        }
    }
}

#[cfg(test)]
pub(super) fn syscall_number(name: &str) -> Option<u32> {
    syscall(name).map(|n| n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::landlock::SocketFilter;

    fn section(sockets: bool) -> Seccomp {
        Seccomp {
            errno: "EPERM".into(),
            deny: crate::back::landlock::DENY_SYSCALLS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            deny_ioctl: vec!["TIOCSTI".into()],
            deny_ptrace: vec!["PTRACE_ATTACH".into()],
            sockets: sockets.then(|| SocketFilter {
                errno: "EACCES".into(),
                allow: vec!["unix".into(), "tcp".into()],
            }),
            deny_args: crate::back::landlock::arg_rules(true),
        }
    }

    /// Arguments the rules look at: pids, flags and modes, socket
    /// families, types and protocols, `ioctl`'s and `ptrace`'s requests.
    fn arguments() -> Vec<[u64; 6]> {
        let mut args: Vec<[u64; 6]> = vec![[0; 6], [u64::MAX; 6]];
        for i in 0..4 {
            for v in [
                1,
                2,
                0o4755,
                0o2755,
                0x20000000,
                0x40,
                libc::O_TMPFILE as u64,
            ] {
                let mut a = [0u64; 6];
                a[i] = v;
                args.push(a);
            }
        }
        for (f, m) in [(1, 2), (2, 3)] {
            for flag in [0x40, libc::O_TMPFILE as u64, 0x2] {
                for mode in [0o4755, 0o2755, 0o755] {
                    let mut a = [0u64; 6];
                    a[f] = flag;
                    a[m] = mode;
                    args.push(a);
                }
            }
        }
        for fam in [0, 1, 2, 10, 16, 17, 0x1_0000_0002] {
            for ty in [1, 2, 3, 5, 0x801, 0x80002] {
                for proto in [0, 6, 17, 132, 255] {
                    args.push([fam, ty, proto, 0, 0, 0]);
                }
            }
        }
        // ioctl's request and ptrace's are the arguments after.
        for req in [0, 0x5412, 0x541c, 16, 0x4206, 0xffff_ffff] {
            args.push([0, req, 0, 0, 0, 0]);
            args.push([req, 0, 0, 0, 0, 0]);
        }
        args
    }

    /// The numbers the deny list refuses outright are answered by the
    /// prefix's search, and the filter decides as the one that leaves
    /// every number to `seccompiler`'s programs: plain and `listen`
    /// variants, with and without the socket filter, every syscall
    /// number (x32's too) on this and foreign architectures, with the
    /// arguments the rules look at. And it is shorter by about five
    /// instructions per number refused outright.
    #[test]
    fn numbers_refused_outright_decide_as_the_program() {
        for sockets in [false, true] {
            let s = section(sockets);
            let (programs, keys, none, e) = compile_all(&s, false).unwrap();
            assert!(none.is_empty());
            let long = Section {
                programs,
                keys,
                outright: none,
                deny_errno: e,
            };
            let short = compile_section(&s).unwrap();
            assert!(short.outright.len() >= 30, "{}", short.outright.len());
            for nr in &short.outright {
                assert!(!long.programs[..long.programs.len() - 1]
                    .iter()
                    .any(|p| p.iter().any(|i| i.code == JEQ_K && i.k == *nr)));
            }
            let pairs = [
                (long.plain(), short.plain()),
                (long.listen().unwrap(), short.listen().unwrap()),
            ];
            for (want_f, got_f) in &pairs {
                let saved: usize = want_f.iter().map(Vec::len).sum::<usize>()
                    - got_f.iter().map(Vec::len).sum::<usize>();
                assert!(saved >= 4 * short.outright.len(), "{saved}");
                let args = arguments();
                let arches = [native_arch().unwrap(), 0x4000_0003, 0xc000_00b7, 0];
                for arch in arches {
                    for nr in (0..600u32).chain((0..600).map(|n| n | X32_BIT)) {
                        for a in &args {
                            let want = interpret(want_f, arch, nr, *a);
                            let got = interpret(got_f, arch, nr, *a);
                            assert_eq!(got, want, "arch {arch:#x} nr {nr:#x} args {a:x?}");
                        }
                    }
                }
            }
            // Refused outright: the deny list's errno, whatever the
            // arguments.
            let native = native_arch().unwrap();
            let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
            for nr in &short.outright {
                for a in [[0; 6], [u64::MAX; 6]] {
                    assert_eq!(interpret(&short.plain(), native, *nr, a), eperm, "{nr}");
                }
            }
        }
    }

    #[test]
    fn compiles_every_listed_syscall() {
        assert_eq!(build(&section(false)).unwrap().len(), 1);
        assert_eq!(build(&section(true)).unwrap().len(), 1);
    }

    /// The chained program decides as the two filters installed one after
    /// the other would, for every syscall number (x32's too) on this and
    /// foreign architectures, with the arguments each filter looks at.
    #[test]
    fn chained_program_decides_as_two_filters() {
        let s = section(true);
        let deny_errno = errno(&s.errno).unwrap();
        let one = build(&s).unwrap();
        assert_eq!(one.len(), 1);
        let mut deny = build(&section(false)).unwrap();
        let sock = compile(
            socket_rules(&s.sockets.as_ref().unwrap().allow).unwrap(),
            libc::EACCES,
        )
        .unwrap();
        assert_eq!(deny.len(), 1);
        deny.push(sock);
        let args = arguments();
        let arches = [native_arch().unwrap(), 0x4000_0003, 0xc000_00b7, 0];
        let mut errnos = std::collections::BTreeSet::new();
        for arch in arches {
            for nr in (0..600u32).chain((0..600).map(|n| n | X32_BIT)) {
                for a in &args {
                    let want = interpret(&deny, arch, nr, *a);
                    let got = interpret(&one, arch, nr, *a);
                    assert_eq!(got, want, "arch {arch:#x} nr {nr:#x} args {a:x?}");
                    errnos.insert(got);
                }
            }
        }
        // Both filters' errnos, "allow" and a kill were all reached.
        let errno = |e: i32| libc::SECCOMP_RET_ERRNO | e as u32;
        for r in [
            libc::SECCOMP_RET_ALLOW,
            errno(deny_errno),
            errno(libc::EACCES),
            errno(libc::EOPNOTSUPP),
            errno(libc::ENOSYS),
            libc::SECCOMP_RET_KILL_PROCESS,
        ] {
            assert!(errnos.contains(&r), "{r:#x} never returned");
        }
    }

    /// The deny list's program with its prefix decides as `seccompiler`'s
    /// program alone, plus the x32 refusal: every syscall number on this
    /// and foreign architectures, with the arguments its rules look at.
    /// And the prefix is why the kernel's attach-time pass is short: an
    /// unlisted number is allowed within 13 instructions (the chain
    /// alone takes two per listed syscall).
    #[test]
    fn prefix_decides_as_the_program_and_fast() {
        let mut s = section(false);
        s.deny_args.clear();
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let bare = compile(deny_rules(&s).unwrap(), libc::EPERM).unwrap();
        let keys: Vec<u32> = deny_rules(&s).unwrap().keys().map(|&n| n as u32).collect();
        let full = build(&s).unwrap().remove(0);
        // The search answers the numbers refused outright: the program
        // behind it is shorter than `seccompiler`'s alone.
        assert!(full.len() < bare.len(), "{} >= {}", full.len(), bare.len());
        let native = native_arch().unwrap();
        let x32 = cfg!(target_arch = "x86_64");
        let mut args: Vec<[u64; 6]> = vec![[0; 6], [u64::MAX; 6]];
        for req in [0x5412u64, 0x541c, 0x4206, 16, 0x5413] {
            args.push([3, req, 0, 0, 0, 0]);
            args.push([req, 7, 0, 0, 0, 0]);
        }
        let numbers = (0..1100u32).chain((0..600).map(|n| n | X32_BIT)).chain([
            0x3fff_ffff,
            0x7fff_ffff,
            0x8000_0000,
            u32::MAX,
        ]);
        let (mut slowest, mut slowest_bare) = (0, 0);
        for arch in [native, 0x4000_0003, 0xc000_00b7, 0xc000_003e, 0] {
            for nr in numbers.clone() {
                for a in &args {
                    let data = seccomp_data(arch, nr, *a);
                    let (got, steps) = run_counting(&full, &data);
                    let (bare_says, bare_steps) = run_counting(&bare, &data);
                    let want = if x32 && arch == native && nr >= X32_BIT {
                        eperm
                    } else {
                        bare_says
                    };
                    assert_eq!(got, want, "arch {arch:#x} nr {nr:#x} args {a:x?}");
                    if arch == native && nr < X32_BIT && !keys.contains(&nr) {
                        assert_eq!(got, libc::SECCOMP_RET_ALLOW, "nr {nr}");
                        slowest = slowest.max(steps);
                        slowest_bare = slowest_bare.max(bare_steps);
                    }
                }
            }
        }
        assert!(slowest <= 13, "{slowest} instructions to allow");
        assert!(slowest_bare >= 2 * keys.len(), "{slowest_bare}");
    }

    /// However many syscalls are listed, the prefix keeps the x32 refusal
    /// and decides as the program: with a search while it fits in 8-bit
    /// jumps (with room for the x32 refusal), without one past that.
    #[test]
    fn prefix_for_any_number_of_listed_syscalls() {
        let native = native_arch().unwrap();
        let x32 = cfg!(target_arch = "x86_64");
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let mut searched = Vec::new();
        for n in [1usize, 4, 5, 44, 100, 150, 180, 190, 200, 250, 300] {
            let keys: Vec<u32> = (0..n as u32).map(|k| 3 * k + 1).collect();
            let rules: BTreeMap<i64, Vec<SeccompRule>> =
                keys.iter().map(|&k| (i64::from(k), vec![])).collect();
            let bare = compile(rules, libc::EPERM).unwrap();
            let p = prefix(&keys, &Keys::new(), libc::EPERM);
            let base = if x32 { 5 } else { 3 };
            assert!(
                p.len() == base || p.len() == base + tree_len(n),
                "{n}: {}",
                p.len()
            );
            searched.push(p.len() > base);
            let mut full = p;
            full.extend(bare.iter().cloned());
            for nr in (0..1000u32).chain((0..40).map(|k| k | X32_BIT)) {
                let data = seccomp_data(native, nr, [0; 6]);
                let want = if x32 && nr >= X32_BIT {
                    eperm
                } else {
                    run(&bare, &data)
                };
                assert_eq!(run(&full, &data), want, "{n} keys, nr {nr:#x}");
            }
        }
        // Both kinds were made: small lists searched, long ones not.
        assert!(searched[0] && searched[3] && !searched[searched.len() - 1]);
        // A tree of small key sets is balanced and fits.
        for n in 1..=120usize {
            let keys: Vec<u32> = (0..n as u32).map(|k| 7 * k + 2).collect();
            let mut out = Vec::new();
            assert!(tree(&keys, &Keys::new(), 0, 0, &mut out).is_some(), "{n}");
            assert_eq!(out.len(), tree_len(n));
        }
    }

    /// The variant that hands `listen` to sbx decides as the plain
    /// filter installed over the listen program would (the kernel's rule),
    /// for every syscall number (x32's too) on this and foreign
    /// architectures: `listen` is notified on this architecture only,
    /// refused as x32 and killed elsewhere; the plain filter allows it.
    #[test]
    fn listen_variant_decides_as_the_filters_and_notifies_listen() {
        let native = native_arch().unwrap();
        let listen_nr = libc::SYS_listen as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        for sockets in [true, false] {
            let s = section(sockets);
            let section = compile_section(&s).unwrap();
            let (plain, listen) = (section.plain(), section.listen().unwrap());
            assert_eq!(plain, build(&s).unwrap());
            assert_eq!(listen.len(), 1, "chained into one filter");
            assert!(notifies(&listen[0]) && !plain.iter().any(|p| notifies(p)));
            let mut separate = vec![listen_program().unwrap()];
            separate.extend(plain.iter().cloned());
            let mut args: Vec<[u64; 6]> = vec![[0; 6], [u64::MAX; 6], [3, 128, 0, 0, 0, 0]];
            for fam in [1, 2, 10, 16] {
                for ty in [1, 2, 3, 0x80801] {
                    args.push([fam, ty, 0, 0, 0, 0]);
                }
            }
            for a in [0o4755, 0x40, libc::MSG_FASTOPEN as u64, 0x5412, 0x4206] {
                args.push([a, a, a, a, 0, 0]);
            }
            for arch in [native, 0x4000_0003, 0xc000_00b7, 0xc000_003e, 0] {
                for nr in (0..1100u32).chain((0..600).map(|n| n | X32_BIT)) {
                    for a in &args {
                        assert_eq!(
                            interpret(&listen, arch, nr, *a),
                            interpret(&separate, arch, nr, *a),
                            "arch {arch:#x} nr {nr:#x} args {a:x?}"
                        );
                    }
                }
            }
            for a in &args {
                assert_eq!(interpret(&listen, native, listen_nr, *a), NOTIFY);
                assert_eq!(interpret(&plain, native, listen_nr, *a), allow);
                assert_eq!(
                    interpret(&listen, 0x4000_0003, listen_nr, *a),
                    libc::SECCOMP_RET_KILL_PROCESS
                );
                if cfg!(target_arch = "x86_64") {
                    let x32 = listen_nr | X32_BIT;
                    assert_eq!(interpret(&listen, native, x32, *a), eperm);
                }
            }
        }
        // An errno some program returns for `listen` outranks the
        // notification, chained as installed.
        let refuse = compile(BTreeMap::from([(libc::SYS_listen, vec![])]), libc::EPERM).unwrap();
        let keys = Keys::from([listen_nr]);
        let chained = assemble(
            vec![refuse, listen_program().unwrap()],
            keys,
            &Keys::new(),
            libc::EPERM,
        );
        assert_eq!(chained.len(), 1);
        assert_eq!(interpret(&chained, native, listen_nr, [3; 6]), eperm);
        assert_eq!(interpret(&chained, native, 0, [3; 6]), allow);
    }

    /// Over the kernel's limit together: two filters, each whole.
    #[test]
    fn too_long_to_chain_stays_two_filters() {
        let a: BpfProgram = vec![
            seccompiler::sock_filter {
                code: 0x06,
                jt: 0,
                jf: 0,
                k: 0
            };
            3000
        ];
        let b = a.clone();
        let two = chain(b.clone(), a.clone());
        assert_eq!(two, vec![a, b]);
    }

    /// The socket filter against the rule it implements, for every
    /// allow-list: family, type (with and without flags) and protocol,
    /// including values with high bits the kernel ignores.
    #[test]
    fn socket_filter_allows_exactly_the_listed_kinds() {
        let kinds = ["unix", "netlink", "tcp", "udp"];
        let flags = (libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) as u32;
        let mut types: Vec<u64> = Vec::new();
        for t in 0..16u64 {
            for f in [0, libc::SOCK_NONBLOCK, libc::SOCK_CLOEXEC, flags as i32] {
                types.push(t | f as u64);
                types.push(t | f as u64 | 0xdead_0000_0000_0000);
            }
            types.extend([t | 0x10, t | 0x4000_0000, t | 0x8000_0000]);
        }
        let mut families: Vec<u64> = (0..48).collect();
        families.extend([0xffff, 0xffff_ffff, 0x1_0000_0002, 0x7_0000_000a]);
        let protos: [u64; 9] = [0, 1, 6, 17, 132, 255, 262, 0xffff_ffff, 0x1_0000_0006];
        for mask in 0..16u32 {
            let allow: Vec<String> = (0..4)
                .filter(|b| mask & (1 << b) != 0)
                .map(|b| kinds[b].to_string())
                .collect();
            let prog = compile(socket_rules(&allow).unwrap(), libc::EACCES).unwrap();
            // Its length is start-up time: 108 instructions for the usual
            // unix, netlink, tcp and udp (290 with a rule per socket type).
            assert!(prog.len() <= 110, "{allow:?}: {} instructions", prog.len());
            let has = |k: &str| allow.iter().any(|a| a == k);
            for &fam in &families {
                for &ty in &types {
                    // The kernel takes ints, and refuses other flags.
                    let (f, t, valid) = (
                        fam as u32 as i32,
                        ty as u32,
                        ty as u32 & !(0xf | flags) == 0,
                    );
                    if !valid {
                        continue;
                    }
                    for &proto in &protos {
                        let (t, p) = ((t & 0xf) as i32, proto as u32 as i32);
                        let ip = |ty: i32, own: i32| t == ty && (p == 0 || p == own);
                        let want = (f == libc::AF_UNIX && has("unix"))
                            || (f == libc::AF_NETLINK && has("netlink"))
                            || ((f == libc::AF_INET || f == libc::AF_INET6)
                                && ((has("tcp") && ip(libc::SOCK_STREAM, libc::IPPROTO_TCP))
                                    || (has("udp") && ip(libc::SOCK_DGRAM, libc::IPPROTO_UDP))));
                        let got = interpret(
                            std::slice::from_ref(&prog),
                            native_arch().unwrap(),
                            libc::SYS_socket as u32,
                            [fam, ty, proto, 0, 0, 0],
                        );
                        let want = if want {
                            libc::SECCOMP_RET_ALLOW
                        } else {
                            libc::SECCOMP_RET_ERRNO | libc::EACCES as u32
                        };
                        assert_eq!(
                            got, want,
                            "{allow:?}: socket({fam:#x}, {ty:#x}, {proto:#x})"
                        );
                    }
                }
            }
        }
    }

    /// Every argument rule refuses its call with its errno exactly when
    /// all its tests hold: with arguments that meet them, and with each
    /// test failed in turn (other arguments at values no rule looks for).
    #[test]
    fn argument_rules_decide_as_written() {
        for restricted in [true, false] {
            let mut s = section(restricted);
            s.deny_args = crate::back::landlock::arg_rules(restricted);
            s.deny_args.extend(crate::back::landlock::exec_rules());
            s.deny_args.extend(crate::back::landlock::userns_rules());
            let progs = build(&s).unwrap();
            let native = native_arch().unwrap();
            let decide = |nr: u32, a: [u64; 6]| interpret(&progs, native, nr, a);
            for r in &s.deny_args {
                let Some(nr) = syscall_number(&r.syscall) else {
                    continue;
                };
                let errno = libc::SECCOMP_RET_ERRNO | errno(&r.errno).unwrap() as u32;
                // Meets every test; `Ne 0` is met by a pid of 1234.
                let mut a = [0u64; 6];
                for t in &r.when {
                    let v = constant(&t.value).unwrap();
                    a[t.arg as usize] |= match t.op {
                        ArgOp::Has | ArgOp::Eq => v,
                        ArgOp::Lacks => 0,
                        ArgOp::Ne => v + 1234,
                    };
                }
                assert_eq!(decide(nr, a), errno, "{r:?} with {a:x?}");
                // High bits the kernel does not read change nothing.
                let high = a.map(|x| x | 0xffff_ffff_0000_0000);
                assert_eq!(decide(nr, high), errno, "{r:?} with {high:x?}");
                for (i, t) in r.when.iter().enumerate() {
                    let mut b = a;
                    let v = constant(&t.value).unwrap();
                    b[t.arg as usize] = match t.op {
                        ArgOp::Has => a[t.arg as usize] & !v,
                        ArgOp::Lacks => a[t.arg as usize] | v,
                        ArgOp::Eq => v + 1,
                        ArgOp::Ne => v,
                    };
                    // Another rule on the same call may still hold.
                    let other = s.deny_args.iter().any(|o| {
                        o != r
                            && o.syscall == r.syscall
                            && o.when.iter().all(|t| {
                                let v = constant(&t.value).unwrap();
                                let x = b[t.arg as usize] & 0xffff_ffff;
                                match t.op {
                                    ArgOp::Has => x & v == v,
                                    ArgOp::Lacks => x & v == 0,
                                    ArgOp::Eq => x == v,
                                    ArgOp::Ne => x != v,
                                }
                            })
                    });
                    if !other {
                        assert_eq!(
                            decide(nr, b),
                            libc::SECCOMP_RET_ALLOW,
                            "{r:?} with test {i} failed: {b:x?}"
                        );
                    }
                }
            }
            // Fast Open only where connects are restricted.
            let tfo = [0, 0, 0, libc::MSG_FASTOPEN as u64, 0, 0];
            let want = if restricted {
                libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32
            } else {
                libc::SECCOMP_RET_ALLOW
            };
            assert_eq!(decide(libc::SYS_sendto as u32, tfo), want);
            // Plain calls pass: a read-only open, chmod 755, own limits.
            assert_eq!(
                decide(libc::SYS_openat as u32, [0, 0, 0, 0o4755, 0, 0]),
                libc::SECCOMP_RET_ALLOW
            );
            assert_eq!(
                decide(libc::SYS_fchmod as u32, [3, 0o755, 0, 0, 0, 0]),
                libc::SECCOMP_RET_ALLOW
            );
            assert_eq!(
                decide(libc::SYS_prlimit64 as u32, [0, 7, 1, 0, 0, 0]),
                libc::SECCOMP_RET_ALLOW
            );
            // fork and threads (clone without CLONE_NEWUSER) pass, and
            // so does a new mount or network namespace's flag alone
            // (without a user namespace it needs CAP_SYS_ADMIN).
            let thread = (libc::CLONE_VM
                | libc::CLONE_FS
                | libc::CLONE_FILES
                | libc::CLONE_SIGHAND
                | libc::CLONE_THREAD
                | libc::CLONE_SYSVSEM
                | libc::CLONE_SETTLS
                | libc::CLONE_PARENT_SETTID
                | libc::CLONE_CHILD_CLEARTID) as u64;
            for flags in [libc::SIGCHLD as u64, thread, libc::CLONE_NEWNS as u64] {
                assert_eq!(
                    decide(libc::SYS_clone as u32, [flags, 0, 0, 0, 0, 0]),
                    libc::SECCOMP_RET_ALLOW,
                    "clone({flags:#x})"
                );
            }
            assert_eq!(
                decide(
                    libc::SYS_unshare as u32,
                    [libc::CLONE_FILES as u64, 0, 0, 0, 0, 0]
                ),
                libc::SECCOMP_RET_ALLOW
            );
        }
    }

    /// An argument rule without tests refuses outright, and a conditional
    /// rule on a syscall the deny list refuses cannot narrow it.
    #[test]
    fn unconditional_rules_stay_unconditional() {
        let mut s = section(false);
        s.deny_args = vec![
            ArgRule {
                syscall: "mount".into(),
                errno: "EPERM".into(),
                when: vec![crate::back::landlock::ArgTest {
                    arg: 0,
                    op: ArgOp::Eq,
                    value: "7".into(),
                }],
            },
            ArgRule {
                syscall: "openat2".into(),
                errno: "ENOSYS".into(),
                when: vec![],
            },
        ];
        let progs = build(&s).unwrap();
        let native = native_arch().unwrap();
        let mount = interpret(&progs, native, libc::SYS_mount as u32, [1; 6]);
        assert_eq!(mount, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32);
        let o2 = interpret(&progs, native, libc::SYS_openat2 as u32, [1; 6]);
        assert_eq!(o2, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32);
    }

    #[test]
    fn unknown_names_are_refused() {
        let mut s = section(false);
        s.deny.push("frobnicate".into());
        assert!(build(&s).unwrap_err().contains("frobnicate"));
        let mut s = section(true);
        s.sockets.as_mut().unwrap().allow.push("bluetooth".into());
        assert!(build(&s).is_err());
        for (syscall, value, arg) in [
            ("frob", "0", 0),
            ("chmod", "S_ISFROB", 1),
            ("chmod", "0", 6),
        ] {
            let mut s = section(false);
            s.deny_args.push(ArgRule {
                syscall: syscall.into(),
                errno: "EPERM".into(),
                when: vec![crate::back::landlock::ArgTest {
                    arg,
                    op: ArgOp::Has,
                    value: value.into(),
                }],
            });
            assert!(build(&s).is_err(), "{syscall} {value} {arg}");
        }
    }
}
