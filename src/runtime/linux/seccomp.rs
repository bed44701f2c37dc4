//! The artifact's seccomp section compiled to one BPF program for the
//! running architecture (in the parent; the child only installs it).
//!
//! One short program, because the kernel converts, checks and JIT-compiles
//! each attached filter and, to build its per-syscall "always allowed"
//! cache, emulates each one for every syscall number: the three linear
//! `seccompiler` filters sbx used to attach (one per action) took 0.2 ms
//! in the child, this program 0.03 ms.
//! The program:
//!
//! 1. another architecture's ABI (i386 `int 0x80` on x86_64): kill the
//!    process, as `seccompiler`'s architecture check did;
//! 2. on x86_64, any x32 syscall (bit 30 of the number): the deny errno
//!    (the x32 ABI would give `socket` a second number);
//! 3. a binary search on the syscall number over ranges of numbers with
//!    one decision (`JGE` only, so the kernel's cache emulation follows
//!    it): the deny list gets the deny errno, numbers with no rule are
//!    allowed, `ioctl`, `ptrace` and `socket` go to a short argument check;
//! 4. argument checks on the low 32 bits of an argument (the kernel reads
//!    these as `int`): `ioctl` requests and `ptrace` requests in the lists
//!    get the deny errno; `socket` gets the socket errno unless its
//!    family, type (`type & 0xf`) and protocol are allowed.
//!
//! The decisions are those of the three `seccompiler` filters sbx used to
//! install (a test compares them on every syscall number).

use crate::back::landlock::Seccomp;
use std::collections::BTreeMap;

/// A classic BPF program for `seccomp(SECCOMP_SET_MODE_FILTER)`.
pub type Program = Vec<libc::sock_filter>;

pub fn errno(name: &str) -> Option<i32> {
    match name {
        "EPERM" => Some(libc::EPERM),
        "EACCES" => Some(libc::EACCES),
        "ENOSYS" => Some(libc::ENOSYS),
        _ => None,
    }
}

fn syscall(name: &str) -> Option<i64> {
    use libc::*;
    let n = match name {
        "acct" => SYS_acct,
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
const ARCH_SPECIFIC: &[&str] = &["ioperm", "iopl"];

/// Requests are compared on the low 32 bits of the argument (the kernel
/// reads it as an int).
fn ioctl_request(name: &str) -> Option<u32> {
    match name {
        "TIOCSTI" => u32::try_from(libc::TIOCSTI).ok(),
        "TIOCLINUX" => u32::try_from(libc::TIOCLINUX).ok(),
        _ => None,
    }
}

// The request constants are c_uint with glibc, c_int elsewhere.
#[allow(clippy::useless_conversion)]
fn ptrace_request(name: &str) -> Option<u32> {
    match name {
        "PTRACE_ATTACH" => u32::try_from(libc::PTRACE_ATTACH).ok(),
        "PTRACE_SEIZE" => u32::try_from(libc::PTRACE_SEIZE).ok(),
        _ => None,
    }
}

/// `AUDIT_ARCH_*` of the running architecture (`seccomp_data.arch`).
fn audit_arch() -> Result<u32, String> {
    const LE64: u32 = 0x8000_0000 | 0x4000_0000;
    match std::env::consts::ARCH {
        "x86_64" => Ok(62 | LE64),
        "aarch64" => Ok(183 | LE64),
        "riscv64" => Ok(243 | LE64),
        other => Err(format!("seccomp: architecture {other} is not supported")),
    }
}

/// x32 syscalls set this bit of the number (x86_64 only).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of argument `i` (`args[i]` is a u64 at 16 + 8 i).
const fn arg_low(i: u32) -> u32 {
    16 + 8 * i + if cfg!(target_endian = "big") { 4 } else { 0 }
}

// The classic BPF instructions the program uses.
const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const AND_K: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const JA: u16 = 0x05; // BPF_JMP | BPF_JA
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

/// Where a jump goes: the next instruction or a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    Next,
    Label(usize),
}

/// A forward-only assembler with labels (classic BPF has no backward
/// jumps; conditional offsets are one byte).
#[derive(Default)]
struct Asm {
    ins: Vec<(u16, u32, To, To)>,
    at: Vec<Option<usize>>,
}

impl Asm {
    fn label(&mut self) -> usize {
        self.at.push(None);
        self.at.len() - 1
    }

    fn bind(&mut self, l: usize) {
        self.at[l] = Some(self.ins.len());
    }

    fn op(&mut self, code: u16, k: u32) {
        self.ins.push((code, k, To::Next, To::Next));
    }

    fn jump(&mut self, code: u16, k: u32, jt: To, jf: To) {
        self.ins.push((code, k, jt, jf));
    }

    fn goto(&mut self, l: usize) {
        self.ins.push((JA, 0, To::Label(l), To::Next));
    }

    fn used(&self, l: usize) -> bool {
        self.ins
            .iter()
            .any(|(_, _, jt, jf)| *jt == To::Label(l) || *jf == To::Label(l))
    }

    /// `RET value` at `l`, if anything jumps there.
    fn ret(&mut self, l: usize, value: u32) {
        if self.used(l) {
            self.bind(l);
            self.op(RET_K, value);
        }
    }

    fn finish(self) -> Result<Program, String> {
        let too_long = || "seccomp: program too long for its jumps".to_string();
        let mut out = Vec::with_capacity(self.ins.len());
        for (i, &(code, k, jt, jf)) in self.ins.iter().enumerate() {
            let off = |t: To| -> Result<u32, String> {
                match t {
                    To::Next => Ok(0),
                    To::Label(l) => match self.at[l] {
                        Some(at) if at > i => Ok((at - i - 1) as u32),
                        _ => Err(format!("seccomp: bad jump to label {l}")),
                    },
                }
            };
            let (k, jt, jf) = if code == JA {
                (off(jt)?, 0, 0)
            } else {
                let byte = |t| u8::try_from(off(t)?).map_err(|_| too_long());
                (k, byte(jt)?, byte(jf)?)
            };
            out.push(libc::sock_filter { code, jt, jf, k });
        }
        if out.len() > usize::from(u16::MAX) {
            return Err(too_long());
        }
        Ok(out)
    }
}

/// `RET` values.
fn ret_errno(errno: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)
}

/// `A == v` for each of `values` in turn: the first match goes to `hit`,
/// no match to `miss`.
fn any_of(a: &mut Asm, values: &[(u32, usize)], miss: usize) {
    match values.split_last() {
        None => a.goto(miss),
        Some((last, rest)) => {
            for &(v, hit) in rest {
                a.jump(JEQ_K, v, To::Label(hit), To::Next);
            }
            a.jump(JEQ_K, last.0, To::Label(last.1), To::Label(miss));
        }
    }
}

/// Binary search over `segs` (start of each range of syscall numbers and
/// its label, ascending, the first starting at 0): the accumulator holds
/// the number. One `JGE` per boundary; a range's label is jumped to
/// directly.
fn search(a: &mut Asm, segs: &[(u32, usize)]) {
    if let [(_, only)] = segs {
        a.goto(*only);
        return;
    }
    let mid = segs.len() / 2;
    let (left, right) = segs.split_at(mid);
    let (jt, right_label) = match right {
        [(_, l)] => (To::Label(*l), None),
        _ => {
            let l = a.label();
            (To::Label(l), Some(l))
        }
    };
    let jf = match left {
        [(_, l)] => To::Label(*l),
        _ => To::Next,
    };
    a.jump(JGE_K, right[0].0, jt, jf);
    if left.len() > 1 {
        search(a, left);
    }
    if let Some(l) = right_label {
        a.bind(l);
        search(a, right);
    }
}

/// Ranges of syscall numbers with one label, ascending from 0; numbers
/// without a rule go to `allow`.
fn segments(by_nr: &BTreeMap<u32, usize>, allow: usize) -> Vec<(u32, usize)> {
    let mut segs: Vec<(u32, usize)> = Vec::new();
    let mut next = 0u32;
    for (&n, &l) in by_nr {
        let last = segs.last().map(|s| s.1);
        if n > next {
            if last != Some(allow) {
                segs.push((next, allow));
            }
            segs.push((n, l));
        } else if last != Some(l) {
            segs.push((n, l));
        }
        next = n + 1;
    }
    if segs.last().map(|s| s.1) != Some(allow) {
        segs.push((next, allow));
    }
    segs
}

fn number(n: i64) -> u32 {
    // Syscall numbers are small and positive on every architecture.
    u32::try_from(n).expect("syscall number")
}

/// Compile the section; unknown names are errors (the artifact is not
/// what this sbx wrote).
pub fn build(s: &Seccomp) -> Result<Program, String> {
    let arch = audit_arch()?;
    let deny_errno =
        errno(&s.errno).ok_or_else(|| format!("seccomp: unknown errno {}", s.errno))?;
    let mut a = Asm::default();
    let [kill, deny, allow, refuse] = [a.label(), a.label(), a.label(), a.label()];

    let mut by_nr: BTreeMap<u32, usize> = BTreeMap::new();
    for name in &s.deny {
        match syscall(name) {
            Some(n) => {
                by_nr.insert(number(n), deny);
            }
            None if ARCH_SPECIFIC.contains(&name.as_str()) => {}
            None => return Err(format!("seccomp: unknown syscall {name}")),
        }
    }
    let ioctl = s
        .deny_ioctl
        .iter()
        .map(|n| ioctl_request(n).ok_or_else(|| format!("seccomp: unknown ioctl {n}")))
        .collect::<Result<Vec<_>, _>>()?;
    let ptrace = s
        .deny_ptrace
        .iter()
        .map(|n| ptrace_request(n).ok_or_else(|| format!("seccomp: unknown ptrace {n}")))
        .collect::<Result<Vec<_>, _>>()?;
    let sockets = match &s.sockets {
        Some(sock) => Some((
            errno(&sock.errno).ok_or_else(|| format!("seccomp: unknown errno {}", sock.errno))?,
            socket_kinds(&sock.allow)?,
        )),
        None => None,
    };
    // Argument checks: (syscall, argument, requests denied).
    let mut checks = Vec::new();
    for (nr, arg, reqs) in [(libc::SYS_ioctl, 1, &ioctl), (libc::SYS_ptrace, 0, &ptrace)] {
        if !reqs.is_empty() {
            let l = a.label();
            by_nr.insert(number(nr), l);
            checks.push((l, arg, reqs));
        }
    }
    let socket_label = sockets.as_ref().map(|_| {
        let l = a.label();
        by_nr.insert(number(libc::SYS_socket), l);
        l
    });

    a.op(LD_W_ABS, ARCH);
    a.jump(JEQ_K, arch, To::Next, To::Label(kill));
    a.op(LD_W_ABS, NR);
    if cfg!(target_arch = "x86_64") {
        a.jump(JGE_K, X32_SYSCALL_BIT, To::Label(deny), To::Next);
    }
    search(&mut a, &segments(&by_nr, allow));

    for (l, arg, reqs) in checks {
        a.bind(l);
        a.op(LD_W_ABS, arg_low(arg));
        let hits: Vec<(u32, usize)> = reqs.iter().map(|r| (*r, deny)).collect();
        any_of(&mut a, &hits, allow);
    }
    if let (Some(l), Some((_, kinds))) = (socket_label, &sockets) {
        a.bind(l);
        socket_check(&mut a, kinds, allow, refuse);
    }

    a.ret(kill, libc::SECCOMP_RET_KILL_PROCESS);
    a.ret(deny, ret_errno(deny_errno));
    a.ret(allow, libc::SECCOMP_RET_ALLOW);
    if let Some((e, _)) = sockets {
        a.ret(refuse, ret_errno(e));
    }
    a.finish()
}

/// What `socket(2)` may create.
struct SocketKinds {
    /// Families allowed whatever the type and protocol.
    families: Vec<u32>,
    /// Allowed IP socket types (AF_INET, AF_INET6; `type & 0xf`), each
    /// with the one protocol it may name besides 0.
    ip: Vec<(u32, u32)>,
}

fn socket_kinds(allow: &[String]) -> Result<SocketKinds, String> {
    let mut k = SocketKinds {
        families: Vec::new(),
        ip: Vec::new(),
    };
    for a in allow {
        // A kind listed twice adds nothing.
        let ip = |t: libc::c_int, p: libc::c_int| (t as u32, p as u32);
        match a.as_str() {
            "unix" => k.add_family(libc::AF_UNIX as u32),
            "netlink" => k.add_family(libc::AF_NETLINK as u32),
            "tcp" => k.add_ip(ip(libc::SOCK_STREAM, libc::IPPROTO_TCP)),
            "udp" => k.add_ip(ip(libc::SOCK_DGRAM, libc::IPPROTO_UDP)),
            other => return Err(format!("seccomp: unknown socket kind {other}")),
        }
    }
    Ok(k)
}

impl SocketKinds {
    fn add_family(&mut self, f: u32) {
        if !self.families.contains(&f) {
            self.families.push(f);
        }
    }

    fn add_ip(&mut self, (t, p): (u32, u32)) {
        if !self.ip.iter().any(|(have, _)| *have == t) {
            self.ip.push((t, p));
        }
    }
}

/// `socket(family, type, protocol)`: `allow` when the family is listed,
/// or is AF_INET/AF_INET6 with an allowed type (SOCK_NONBLOCK and
/// SOCK_CLOEXEC do not matter) and protocol 0 or the type's own (raw,
/// SCTP and MPTCP sockets are not what Landlock's TCP rules cover); else
/// `refuse`.
fn socket_check(a: &mut Asm, k: &SocketKinds, allow: usize, refuse: usize) {
    let ip = (!k.ip.is_empty()).then(|| a.label());
    let mut families: Vec<(u32, usize)> = k.families.iter().map(|f| (*f, allow)).collect();
    if let Some(ip) = ip {
        families.push((libc::AF_INET as u32, ip));
        families.push((libc::AF_INET6 as u32, ip));
    }
    a.op(LD_W_ABS, arg_low(0));
    any_of(a, &families, refuse);
    let Some(ip) = ip else { return };
    a.bind(ip);
    a.op(LD_W_ABS, arg_low(1));
    a.op(AND_K, 0xf);
    let protos: Vec<(u32, usize)> = k.ip.iter().map(|(_, p)| (*p, a.label())).collect();
    let types: Vec<(u32, usize)> =
        k.ip.iter()
            .zip(&protos)
            .map(|((t, _), (_, l))| (*t, *l))
            .collect();
    any_of(a, &types, refuse);
    for (proto, l) in protos {
        a.bind(l);
        a.op(LD_W_ABS, arg_low(2));
        any_of(a, &[(0, allow), (proto, allow)], refuse);
    }
}

/// Run `prog` on one `seccomp_data` (the instructions `build` and
/// `seccompiler` emit; anything else panics). For tests.
#[cfg(test)]
pub(super) fn interpret(prog: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    run(prog, &data(arch, nr, args)).0
}

/// `struct seccomp_data` (the instruction pointer left 0).
#[cfg(test)]
fn data(arch: u32, nr: u32, args: [u64; 6]) -> [u8; 64] {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_ne_bytes());
    data[4..8].copy_from_slice(&arch.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    data
}

/// The returned value, and whether an argument was read.
#[cfg(test)]
fn run(prog: &[libc::sock_filter], data: &[u8; 64]) -> (u32, bool) {
    const JGT_K: u16 = 0x25;
    let mut read_args = false;
    let mut acc = 0u32;
    let mut pc = 0usize;
    loop {
        let ins = &prog[pc];
        pc += 1;
        let branch = |taken: bool| usize::from(if taken { ins.jt } else { ins.jf });
        match ins.code {
            LD_W_ABS => {
                let k = ins.k as usize;
                assert!(k % 4 == 0 && k + 4 <= data.len(), "load at {k}");
                read_args |= k >= 16;
                acc = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
            }
            AND_K => acc &= ins.k,
            JA => pc += ins.k as usize,
            JEQ_K => pc += branch(acc == ins.k),
            JGE_K => pc += branch(acc >= ins.k),
            JGT_K => pc += branch(acc > ins.k),
            RET_K => return (ins.k, read_args),
            code => panic!("unexpected BPF instruction {code:#x}"),
        }
    }
}

/// `seccomp_data.arch` here.
#[cfg(test)]
pub(super) fn native_arch() -> u32 {
    audit_arch().unwrap()
}

#[cfg(test)]
pub(super) fn syscall_number(name: &str) -> Option<u32> {
    syscall(name).map(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::landlock::SocketFilter;

    fn section(sockets: Option<&[&str]>) -> Seccomp {
        Seccomp {
            errno: "EPERM".into(),
            deny: crate::back::landlock::DENY_SYSCALLS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            deny_ioctl: vec!["TIOCLINUX".into(), "TIOCSTI".into()],
            deny_ptrace: vec!["PTRACE_ATTACH".into(), "PTRACE_SEIZE".into()],
            sockets: sockets.map(|allow| SocketFilter {
                errno: "EACCES".into(),
                allow: allow.iter().map(|s| s.to_string()).collect(),
            }),
        }
    }

    /// What sbx installed before: three `seccompiler` filters (deny list,
    /// sockets, x32 guard), kept as the reference for the one program.
    mod reference {
        use super::super::{errno, ioctl_request, ptrace_request, syscall, ARCH_SPECIFIC};
        use crate::back::landlock::Seccomp;
        use seccompiler::{
            BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
            SeccompFilter, SeccompRule, TargetArch,
        };
        use std::collections::BTreeMap;

        fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> SeccompCondition {
            SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).unwrap()
        }

        fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> BpfProgram {
            let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
            let f = SeccompFilter::new(
                rules,
                SeccompAction::Allow,
                SeccompAction::Errno(errno as u32),
                arch,
            )
            .unwrap();
            BpfProgram::try_from(f).unwrap()
        }

        fn socket_rules(allow: &[String]) -> BTreeMap<i64, Vec<SeccompRule>> {
            let mut families: Vec<u64> = Vec::new();
            let mut ip: Vec<(u64, u64)> = Vec::new();
            for a in allow {
                match a.as_str() {
                    "unix" => families.push(libc::AF_UNIX as u64),
                    "netlink" => families.push(libc::AF_NETLINK as u64),
                    "tcp" => ip.push((libc::SOCK_STREAM as u64, libc::IPPROTO_TCP as u64)),
                    "udp" => ip.push((libc::SOCK_DGRAM as u64, libc::IPPROTO_UDP as u64)),
                    other => panic!("{other}"),
                }
            }
            let inet = [libc::AF_INET as u64, libc::AF_INET6 as u64];
            if !ip.is_empty() {
                families.extend(inet);
            }
            let mut rules = Vec::new();
            let not_listed: Vec<SeccompCondition> = families
                .iter()
                .map(|f| cond(0, SeccompCmpOp::Ne, *f))
                .collect();
            if not_listed.is_empty() {
                rules.push(SeccompRule::new(vec![cond(0, SeccompCmpOp::MaskedEq(0), 0)]).unwrap());
            } else {
                rules.push(SeccompRule::new(not_listed).unwrap());
            }
            if !ip.is_empty() {
                for fam in inet {
                    for t in 0u64..16 {
                        let mut c = vec![
                            cond(0, SeccompCmpOp::Eq, fam),
                            cond(1, SeccompCmpOp::MaskedEq(0xf), t),
                        ];
                        if let Some((_, proto)) = ip.iter().find(|(ty, _)| *ty == t) {
                            c.push(cond(2, SeccompCmpOp::Ne, 0));
                            c.push(cond(2, SeccompCmpOp::Ne, *proto));
                        }
                        rules.push(SeccompRule::new(c).unwrap());
                    }
                }
            }
            BTreeMap::from([(libc::SYS_socket, rules)])
        }

        fn x32_guard(errno: i32) -> Vec<libc::sock_filter> {
            const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
            let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
            vec![
                ins(0x20, 0, 0, 4),
                ins(0x15, 0, 3, AUDIT_ARCH_X86_64),
                ins(0x20, 0, 0, 0),
                ins(0x35, 0, 1, 0x4000_0000),
                ins(
                    0x06,
                    0,
                    0,
                    libc::SECCOMP_RET_ERRNO | (errno as u32 & 0xffff),
                ),
                ins(0x06, 0, 0, libc::SECCOMP_RET_ALLOW),
            ]
        }

        /// The filters in the order they were installed.
        pub fn build(s: &Seccomp) -> Vec<Vec<libc::sock_filter>> {
            let deny_errno = errno(&s.errno).unwrap();
            let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            for name in &s.deny {
                match syscall(name) {
                    Some(n) => {
                        rules.insert(n, vec![]);
                    }
                    None => assert!(ARCH_SPECIFIC.contains(&name.as_str())),
                }
            }
            let ioctl: Vec<SeccompRule> = s
                .deny_ioctl
                .iter()
                .map(|n| {
                    let req = u64::from(ioctl_request(n).unwrap());
                    SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, req)]).unwrap()
                })
                .collect();
            if !ioctl.is_empty() {
                rules.insert(libc::SYS_ioctl, ioctl);
            }
            let ptrace: Vec<SeccompRule> = s
                .deny_ptrace
                .iter()
                .map(|n| {
                    let req = u64::from(ptrace_request(n).unwrap());
                    SeccompRule::new(vec![cond(0, SeccompCmpOp::Eq, req)]).unwrap()
                })
                .collect();
            if !ptrace.is_empty() {
                rules.insert(libc::SYS_ptrace, ptrace);
            }
            let mut progs = vec![compile(rules, deny_errno)];
            if let Some(sock) = &s.sockets {
                progs.push(compile(
                    socket_rules(&sock.allow),
                    errno(&sock.errno).unwrap(),
                ));
            }
            let mut out: Vec<Vec<libc::sock_filter>> = progs
                .into_iter()
                .map(|p| {
                    p.into_iter()
                        .map(|i| libc::sock_filter {
                            code: i.code,
                            jt: i.jt,
                            jf: i.jf,
                            k: i.k,
                        })
                        .collect()
                })
                .collect();
            if cfg!(target_arch = "x86_64") {
                out.push(x32_guard(deny_errno));
            }
            out
        }
    }

    /// The kernel's result for several filters: every one runs, the most
    /// recently installed first, and the first action of the highest
    /// precedence wins (`seccomp_run_filters`).
    fn combined(filters: &[Vec<libc::sock_filter>], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let action = |r: u32| (r & 0xffff_0000) as i32;
        let mut out = libc::SECCOMP_RET_ALLOW;
        for f in filters.iter().rev() {
            let r = interpret(f, arch, nr, args);
            if action(r) < action(out) {
                out = r;
            }
        }
        out
    }

    /// Argument values worth trying: every value the rules name, with
    /// and without high bits, flags and neighbours.
    fn arg_values() -> Vec<u64> {
        let mut v: Vec<u64> = vec![0, 1, 2, 3, 5, 6, 10, 16, 17, 132, 255, 262, 0xffff_ffff];
        v.extend(
            [
                libc::AF_UNIX,
                libc::AF_INET,
                libc::AF_INET6,
                libc::AF_NETLINK,
                libc::AF_PACKET,
                libc::AF_VSOCK,
            ]
            .map(|x| x as u64),
        );
        for t in 0..16u64 {
            v.push(t);
            v.push(t | libc::SOCK_NONBLOCK as u64 | libc::SOCK_CLOEXEC as u64);
        }
        v.extend([
            libc::TIOCSTI,
            libc::TIOCLINUX,
            libc::TCGETS,
            libc::PTRACE_ATTACH as u64,
            libc::PTRACE_SEIZE as u64,
            libc::PTRACE_TRACEME as u64,
        ]);
        let high: Vec<u64> = v.iter().map(|x| x | 0x1_0000_0000).collect();
        v.extend(high);
        v.sort_unstable();
        v.dedup();
        v
    }

    fn sections() -> Vec<Seccomp> {
        let mut out = vec![
            section(None),
            section(Some(&["netlink", "tcp", "udp", "unix"])),
            section(Some(&["netlink", "tcp", "unix"])),
            section(Some(&["udp"])),
            section(Some(&["unix", "unix"])),
            section(Some(&[])),
        ];
        let mut empty = section(Some(&["tcp"]));
        empty.deny.clear();
        empty.deny_ioctl.clear();
        empty.deny_ptrace.clear();
        out.push(empty);
        let mut other = section(Some(&["tcp", "unix"]));
        other.errno = "ENOSYS".into();
        other.deny.truncate(7);
        other.deny_ioctl.truncate(1);
        out.push(other);
        out
    }

    #[test]
    fn one_program_decides_like_the_three_seccompiler_filters() {
        let native = native_arch();
        // i386 (int 0x80 on x86_64), arm, and nonsense.
        let arches = [native, 0x4000_0003, 0x4000_0028, 0];
        let values = arg_values();
        let with_args = [libc::SYS_ioctl, libc::SYS_ptrace, libc::SYS_socket].map(number);
        for s in sections() {
            let new = build(&s).unwrap();
            let old = reference::build(&s);
            let mut numbers: Vec<u32> = (0..1024).collect();
            numbers.extend((0..1024).step_by(7).map(|n| n | X32_SYSCALL_BIT));
            numbers.extend([0x3fff_ffff, 0x7fff_ffff, 0x8000_0000, u32::MAX]);
            for arch in arches {
                for &nr in &numbers {
                    let mut argsets = vec![[0u64; 6], [u64::MAX; 6]];
                    if with_args.contains(&nr) && arch == native {
                        for &a in &values {
                            for &b in &values {
                                argsets.push([a, b, 0, 0, 0, 0]);
                            }
                        }
                        for &a in &[libc::AF_INET as u64, libc::AF_INET6 as u64, 0x1_0000_000a] {
                            for &b in &values {
                                for &c in &values {
                                    argsets.push([a, b, c, 0, 0, 0]);
                                }
                            }
                        }
                    }
                    for args in argsets {
                        assert_eq!(
                            interpret(&new, arch, nr, args),
                            combined(&old, arch, nr, args),
                            "arch {arch:#x} nr {nr} args {args:x?} ({:?})",
                            s.sockets
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn one_short_program() {
        let p = build(&section(Some(&["netlink", "tcp", "udp", "unix"]))).unwrap();
        let old: usize = reference::build(&section(Some(&["netlink", "tcp", "udp", "unix"])))
            .iter()
            .map(Vec::len)
            .sum();
        assert!(p.len() < 128, "{} instructions", p.len());
        assert!(p.len() * 4 < old, "{} vs {old}", p.len());
        for i in &p {
            assert!(
                [LD_W_ABS, AND_K, JA, JEQ_K, JGE_K, RET_K].contains(&i.code),
                "{:#x}",
                i.code
            );
        }
        // The kernel skips the filter for syscalls it finds always allowed
        // by emulating it on the number alone: no argument may be read on
        // the way to any decision but those for ioctl, ptrace and socket.
        let with_args = [libc::SYS_ioctl, libc::SYS_ptrace, libc::SYS_socket].map(number);
        for nr in 0..1024 {
            let (_, read_args) = run(&p, &data(native_arch(), nr, [0; 6]));
            assert_eq!(read_args, with_args.contains(&nr), "nr {nr}");
        }
    }

    #[test]
    fn unknown_names_are_refused() {
        let mut s = section(None);
        s.deny.push("frobnicate".into());
        assert!(build(&s).unwrap_err().contains("frobnicate"));
        let mut s = section(Some(&["unix"]));
        s.sockets.as_mut().unwrap().allow.push("bluetooth".into());
        assert!(build(&s).is_err());
        let mut s = section(None);
        s.errno = "EWHATEVER".into();
        assert!(build(&s).is_err());
    }
}
