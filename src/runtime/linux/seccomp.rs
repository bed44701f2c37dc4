//! The artifact's seccomp section compiled to BPF for the running
//! architecture (before fork; the child only installs the filter).
//!
//! The section's rules, by errno: sockets the policy does not allow get
//! EACCES (the errno Landlock uses for a denied connect), argument rules
//! their own errno, and the deny list (privileged or filter-bypassing
//! syscalls, and argument rules with its errno) EPERM. `emit` writes
//! them as one filter: x32 syscalls refused, a search that allows every
//! unlisted syscall number at once, a block of tests for each listed one.
//!
//! A second variant hands `listen` to sbx (`SECCOMP_RET_USER_NOTIF`,
//! decided in `listen.rs`): decided last, so any errno the other rules
//! give it still wins, as the kernel ranks them.

mod emit;

use crate::back::landlock::{ArgOp, ArgRule, Seccomp};
pub use emit::{Filter, Insn};
use emit::{Op, Program, Rule, Test};
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
        "fcntl" => SYS_fcntl,
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
        "F_SETLEASE" => libc::F_SETLEASE as u64,
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

fn cond(arg: u8, op: Op) -> Test {
    Test { arg, op }
}

/// A test of the low 32 bits (the kernel reads these arguments as
/// 32-bit ints).
fn low(v: u64) -> u32 {
    v as u32
}

/// The filter: the section's programs behind the search.
#[cfg(test)]
pub(super) fn build(s: &Seccomp) -> Result<Vec<Filter>, String> {
    Ok(compile_section(s)?.plain())
}

/// The section's filter, made once, and what the one that also hands
/// `listen` to sbx is made from (used only when the command is on the
/// real network and its binds are restricted: made then).
pub struct Section {
    programs: Vec<Program>,
    arch: u32,
    x32: Option<u32>,
    plain: Filter,
}

impl Section {
    pub fn plain(&self) -> Vec<Filter> {
        vec![self.plain.clone()]
    }

    pub fn listen(&self) -> Result<Vec<Filter>, String> {
        let mut programs = self.programs.clone();
        programs.push(listen_program());
        Ok(vec![emit::emit(&programs, self.arch, self.x32)?])
    }
}

/// Compile the section; unknown names are errors (the artifact is not
/// what this sbx wrote).
pub fn compile_section(s: &Seccomp) -> Result<Section, String> {
    let (programs, deny_errno) = programs(s)?;
    let arch = native_arch().ok_or_else(|| {
        format!(
            "seccomp: architecture {} is not supported",
            std::env::consts::ARCH
        )
    })?;
    let x32 = cfg!(target_arch = "x86_64").then(|| refusal(deny_errno));
    let plain = emit::emit(&programs, arch, x32)?;
    Ok(Section {
        programs,
        arch,
        x32,
        plain,
    })
}

/// "Fail with `errno`".
fn refusal(errno: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (errno as u32 & 0xffff)
}

/// The section's rules in the order they decide, and the deny list's
/// errno: the socket filter, the argument rules with errnos of their
/// own (by errno), the deny list with the argument rules that share its
/// errno.
pub(super) fn programs(s: &Seccomp) -> Result<(Vec<Program>, i32), String> {
    let errno_of = |name: &str| errno(name).ok_or_else(|| format!("seccomp: unknown errno {name}"));
    let deny_errno = errno_of(&s.errno)?;
    let mut deny = deny_rules(s)?;
    let mut groups: BTreeMap<i32, BTreeMap<u32, Vec<Rule>>> = BTreeMap::new();
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
        map.entry(nr).or_default().push(rule);
    }
    let mut programs = Vec::new();
    if let Some(sock) = &s.sockets {
        programs.push(Program {
            action: refusal(errno_of(&sock.errno)?),
            rules: socket_rules(&sock.allow)?,
        });
    }
    programs.extend(groups.into_iter().map(|(e, rules)| Program {
        action: refusal(e),
        rules,
    }));
    programs.push(Program {
        action: refusal(deny_errno),
        rules: deny,
    });
    Ok((programs, deny_errno))
}

/// Returned for `listen`: the kernel asks sbx, which holds the filter's
/// listener (`listen.rs`).
pub(super) const NOTIFY: u32 = libc::SECCOMP_RET_USER_NOTIF;

/// `listen` handed to sbx: decided last, so any errno the other
/// programs return for it still wins, as the kernel ranks them.
fn listen_program() -> Program {
    Program {
        action: NOTIFY,
        rules: BTreeMap::from([(libc::SYS_listen as u32, vec![vec![]])]),
    }
}

/// Whether `prog` hands a call to sbx: the filter to install with
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
pub fn notifies(prog: &[Insn]) -> bool {
    prog.iter().any(|i| i.code == emit::RET_K && i.k == NOTIFY)
}

/// An argument rule as a rule on its syscall's number (no tests: refused
/// whatever its arguments); `None` for a syscall this architecture does
/// not have.
fn arg_rule(r: &ArgRule) -> Result<Option<(u32, Rule)>, String> {
    let Some(nr) = syscall(&r.syscall) else {
        if ARCH_SPECIFIC.contains(&r.syscall.as_str()) {
            return Ok(None);
        }
        return Err(format!("seccomp: unknown syscall {}", r.syscall));
    };
    let tests = r
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
            let v = low(v);
            let op = match t.op {
                ArgOp::Has => Op::Masked { mask: v, value: v },
                ArgOp::Lacks => Op::Masked { mask: v, value: 0 },
                ArgOp::Eq => Op::Eq(v),
                ArgOp::Ne => Op::Ne(v),
            };
            Ok(cond(t.arg, op))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some((nr as u32, tests)))
}

/// The deny list's rules by syscall number: the listed syscalls, and
/// `ioctl` and `ptrace` with the listed requests.
fn deny_rules(s: &Seccomp) -> Result<BTreeMap<u32, Vec<Rule>>, String> {
    let mut rules: BTreeMap<u32, Vec<Rule>> = BTreeMap::new();
    for name in &s.deny {
        match syscall(name) {
            Some(n) => {
                rules.insert(n as u32, vec![vec![]]);
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
            rules.entry(nr as u32).or_default().extend(chain);
        }
    }
    Ok(rules)
}

/// One rule per listed request (`ioctl`'s, `ptrace`'s): argument `arg`
/// equal to it.
fn request_rules(
    names: &[String],
    what: &str,
    arg: u8,
    request: fn(&str) -> Option<u64>,
) -> Result<Vec<Rule>, String> {
    names
        .iter()
        .map(|name| {
            let req = request(name).ok_or_else(|| format!("seccomp: unknown {what} {name}"))?;
            Ok(vec![cond(arg, Op::Eq(low(req)))])
        })
        .collect()
}

/// Rules matching every `socket(2)` call *not* in the allow-list.
fn socket_rules(allow: &[String]) -> Result<BTreeMap<u32, Vec<Rule>>, String> {
    let mut families: Vec<u32> = Vec::new();
    // Allowed IP socket types, with the protocols each may use.
    let mut ip: Vec<(u32, u32)> = Vec::new();
    for a in allow {
        match a.as_str() {
            "unix" => families.push(libc::AF_UNIX as u32),
            "netlink" => families.push(libc::AF_NETLINK as u32),
            "tcp" => ip.push((libc::SOCK_STREAM as u32, libc::IPPROTO_TCP as u32)),
            "udp" => ip.push((libc::SOCK_DGRAM as u32, libc::IPPROTO_UDP as u32)),
            other => return Err(format!("seccomp: unknown socket kind {other}")),
        }
    }
    let inet = [libc::AF_INET as u32, libc::AF_INET6 as u32];
    if !ip.is_empty() {
        families.extend(inet);
    }
    // Any family outside the list (nothing allowed: every call).
    let mut rules = vec![families.iter().map(|f| cond(0, Op::Ne(*f))).collect()];
    if !ip.is_empty() {
        // The kernel refuses (EINVAL) a type with flags other than
        // SOCK_NONBLOCK and SOCK_CLOEXEC, so the types it accepts for an
        // allowed IP type are that type with those flags: any other value
        // is denied with one rule per family, not one per type.
        let flags = [
            0,
            libc::SOCK_NONBLOCK as u32,
            libc::SOCK_CLOEXEC as u32,
            (libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) as u32,
        ];
        for fam in inet {
            let mut other_type = vec![cond(0, Op::Eq(fam))];
            for (ty, _) in &ip {
                for f in flags {
                    other_type.push(cond(1, Op::Ne(ty | f)));
                }
            }
            rules.push(other_type);
            // An allowed type with a protocol other than 0 or its own: raw,
            // SCTP and MPTCP sockets are not what Landlock's TCP rules cover.
            for (ty, proto) in &ip {
                rules.push(vec![
                    cond(0, Op::Eq(fam)),
                    cond(
                        1,
                        Op::Masked {
                            mask: 0xf,
                            value: *ty,
                        },
                    ),
                    cond(2, Op::Ne(0)),
                    cond(2, Op::Ne(*proto)),
                ]);
            }
        }
    }
    Ok(BTreeMap::from([(libc::SYS_socket as u32, rules)]))
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

/// Run the installed filters on one `seccomp_data` as the kernel does:
/// every filter runs and the most severe action wins (the newest filter
/// on a tie). For tests.
#[cfg(test)]
pub(super) fn interpret(progs: &[Filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
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
fn run(prog: &[Insn], data: &[u8; 64]) -> u32 {
    run_counting(prog, data).0
}

/// `run`, and how many instructions it took. Only the instructions sbx
/// and `seccompiler` emit; anything else panics.
#[cfg(test)]
fn run_counting(prog: &[Insn], data: &[u8; 64]) -> (u32, usize) {
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
mod tests;
