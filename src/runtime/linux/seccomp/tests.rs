//! The filter against `seccompiler`'s: the same rules compiled by it,
//! one filter per action, installed one after another (the kernel's
//! rule decides between them), must decide every call as sbx's one
//! filter does.

use super::emit::{emit, X32_BIT};
use super::*;
use crate::back::landlock::SocketFilter;
use seccompiler::{SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
use std::collections::BTreeSet;

fn section(sockets: bool) -> Seccomp {
    Seccomp {
        errno: "EPERM".into(),
        deny: crate::back::landlock::DENY_SYSCALLS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        deny_ioctl: vec!["TIOCSTI".into(), "TIOCLINUX".into()],
        deny_ptrace: vec!["PTRACE_ATTACH".into(), "PTRACE_SEIZE".into()],
        sockets: sockets.then(|| SocketFilter {
            errno: "EACCES".into(),
            allow: vec!["unix".into(), "netlink".into(), "tcp".into(), "udp".into()],
        }),
        deny_args: crate::back::landlock::arg_rules(true),
    }
}

/// Every section shape sbx writes: with and without the socket filter,
/// connects restricted or not, with the exec and user-namespace rules.
fn sections() -> Vec<Seccomp> {
    let mut out = Vec::new();
    for sockets in [true, false] {
        for restricted in [true, false] {
            let mut s = section(sockets);
            s.deny_args = crate::back::landlock::arg_rules(restricted);
            out.push(s.clone());
            s.deny_args.extend(crate::back::landlock::exec_rules());
            s.deny_args.extend(crate::back::landlock::userns_rules());
            out.push(s);
        }
    }
    out
}

/// `seccompiler`'s rules for ours (no `Any`: only `emit` makes those).
fn seccompiler_rules(rules: &BTreeMap<u32, Vec<Rule>>) -> BTreeMap<i64, Vec<SeccompRule>> {
    rules
        .iter()
        .map(|(&nr, rules)| {
            let list = if rules.iter().any(Vec::is_empty) {
                vec![]
            } else {
                rules
                    .iter()
                    .map(|r| {
                        let conds = r
                            .iter()
                            .map(|t| {
                                let (op, v) = match t.op {
                                    Op::Eq(v) => (SeccompCmpOp::Eq, v),
                                    Op::Ne(v) => (SeccompCmpOp::Ne, v),
                                    Op::Masked { mask, value } => {
                                        (SeccompCmpOp::MaskedEq(u64::from(mask)), value)
                                    }
                                    Op::Any(_) => unreachable!("made by emit only"),
                                };
                                let len = SeccompCmpArgLen::Dword;
                                SeccompCondition::new(t.arg, len, op, u64::from(v)).unwrap()
                            })
                            .collect();
                        SeccompRule::new(conds).unwrap()
                    })
                    .collect()
            };
            (i64::from(nr), list)
        })
        .collect()
}

/// `listen` notified, everything else allowed (on this architecture).
fn listen_filter() -> Filter {
    use emit::{ins, ret, JEQ_K, LD_W_ABS};
    vec![
        ins(LD_W_ABS, 0, 0, 4),
        ins(JEQ_K, 0, 3, native_arch().unwrap()),
        ins(LD_W_ABS, 0, 0, 0),
        ins(JEQ_K, 0, 1, libc::SYS_listen as u32),
        ret(NOTIFY),
        ret(libc::SECCOMP_RET_ALLOW),
    ]
}

/// x32 numbers refused with `refusal` (on this architecture).
fn x32_filter(refusal: u32) -> Filter {
    use emit::{ins, ret, JEQ_K, JGE_K, LD_W_ABS};
    vec![
        ins(LD_W_ABS, 0, 0, 4),
        ins(JEQ_K, 0, 3, native_arch().unwrap()),
        ins(LD_W_ABS, 0, 0, 0),
        ins(JGE_K, 0, 1, X32_BIT),
        ret(refusal),
        ret(libc::SECCOMP_RET_ALLOW),
    ]
}

/// The reference: one filter per program, in install order (the first
/// program decides first, so it is installed last), the x32 refusal
/// newest.
fn reference(programs: &[Program], x32: Option<u32>) -> Vec<Filter> {
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).unwrap();
    let mut out: Vec<Filter> = programs
        .iter()
        .rev()
        .map(|p| {
            if p.action == NOTIFY {
                assert!(p.rules.keys().eq([&(libc::SYS_listen as u32)]));
                return listen_filter();
            }
            let f = seccompiler::SeccompFilter::new(
                seccompiler_rules(&p.rules),
                SeccompAction::Allow,
                SeccompAction::Errno(p.action & 0xffff),
                arch,
            )
            .unwrap();
            let prog = seccompiler::BpfProgram::try_from(f).unwrap();
            prog.into_iter()
                .map(|i| Insn {
                    code: i.code,
                    jt: i.jt,
                    jf: i.jf,
                    k: i.k,
                })
                .collect()
        })
        .collect();
    out.extend(x32.map(x32_filter));
    out
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
            0o6755,
            0x20000000,
            0x40,
            libc::O_TMPFILE as u64,
            libc::O_DIRECTORY as u64,
            0xffff_ffff_0000_0000,
        ] {
            let mut a = [0u64; 6];
            a[i] = v;
            args.push(a);
        }
    }
    for (f, m) in [(1, 2), (2, 3)] {
        for flag in [0x40, libc::O_TMPFILE as u64, libc::O_DIRECTORY as u64, 0x2] {
            for mode in [0o4755, 0o2755, 0o755] {
                let mut a = [0u64; 6];
                a[f] = flag;
                a[m] = mode;
                args.push(a);
            }
        }
    }
    for fam in [0, 1, 2, 10, 16, 17, 0x1_0000_0002] {
        for ty in [1, 2, 3, 5, 0x801, 0x80002, 0x80801] {
            for proto in [0, 6, 17, 132, 255] {
                args.push([fam, ty, proto, 0, 0, 0]);
            }
        }
    }
    for req in [0, 0x5412, 0x541c, 16, 0x4206, 0xffff_ffff] {
        args.push([0, req, 0, 0, 0, 0]);
        args.push([req, 0, 0, 0, 0, 0]);
    }
    for flag in [libc::MSG_FASTOPEN as u64, libc::MFD_NOEXEC_SEAL as u64] {
        args.push([flag; 6]);
    }
    args
}

const FOREIGN: [u32; 4] = [0x4000_0003, 0xc000_00b7, 0xc000_003e, 0];

/// Syscall numbers to try: every small one, x32's, and the edges.
fn numbers() -> impl Iterator<Item = u32> + Clone {
    (0..1100u32).chain((0..600).map(|n| n | X32_BIT)).chain([
        0x3fff_ffff,
        0x7fff_ffff,
        0x8000_0000,
        u32::MAX,
    ])
}

fn same_decisions(got: &[Filter], want: &[Filter], args: &[[u64; 6]]) {
    let arches = std::iter::once(native_arch().unwrap())
        .chain(FOREIGN.into_iter().filter(|&a| Some(a) != native_arch()));
    for arch in arches {
        for nr in numbers() {
            for a in args {
                assert_eq!(
                    interpret(got, arch, nr, *a),
                    interpret(want, arch, nr, *a),
                    "arch {arch:#x} nr {nr:#x} args {a:x?}"
                );
            }
        }
    }
}

/// Every section sbx writes, plain and with `listen` handed to sbx:
/// the one filter decides every call (every syscall number, x32's, on
/// this and foreign architectures, with the arguments the rules look
/// at) as `seccompiler`'s filters installed one after another do.
#[test]
fn filter_decides_as_seccompilers_filters() {
    let args = arguments();
    for s in sections() {
        let (mut programs, deny_errno) = programs(&s).unwrap();
        let x32 = cfg!(target_arch = "x86_64").then(|| refusal(deny_errno));
        let section = compile_section(&s).unwrap();
        assert_eq!(section.plain().len(), 1);
        same_decisions(&section.plain(), &reference(&programs, x32), &args);
        programs.push(listen_program());
        let listen = section.listen().unwrap();
        assert_eq!(listen.len(), 1);
        same_decisions(&listen, &reference(&programs, x32), &args);
    }
}

/// The filter is short (attaching it costs per instruction, in every
/// run) and allows an unlisted number in a few steps (the kernel runs
/// it for every number when it is attached, and the command at every
/// syscall).
#[test]
fn filter_is_short_and_quick_to_allow() {
    let s = section(true);
    let (programs, deny_errno) = programs(&s).unwrap();
    let x32 = cfg!(target_arch = "x86_64").then(|| refusal(deny_errno));
    let plain = compile_section(&s).unwrap().plain().remove(0);
    let theirs: usize = reference(&programs, x32).iter().map(Vec::len).sum();
    assert!(plain.len() <= 320, "{} instructions", plain.len());
    assert!(2 * plain.len() < theirs, "{} against {theirs}", plain.len());
    let native = native_arch().unwrap();
    let keys: BTreeSet<u32> = programs
        .iter()
        .flat_map(|p| p.rules.keys())
        .copied()
        .collect();
    let mut slowest = 0;
    for nr in (0..1100u32).filter(|n| !keys.contains(n)) {
        let (got, steps) = run_counting(&plain, &seccomp_data(native, nr, [0; 6]));
        assert_eq!(got, libc::SECCOMP_RET_ALLOW, "{nr}");
        slowest = slowest.max(steps);
    }
    assert!(slowest <= 13, "{slowest} instructions to allow");
}

/// A small deterministic generator (no seed to keep, no crate).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const VALUES: [u32; 6] = [0, 1, 2, 0o4000, 0o2000, 0x40];

fn random_rule(g: &mut Lcg) -> Rule {
    (0..g.below(4))
        .map(|_| {
            let arg = g.below(3) as u8;
            let v = VALUES[g.below(VALUES.len() as u64) as usize];
            let op = match g.below(4) {
                0 => Op::Eq(v),
                1 => Op::Ne(v),
                2 => Op::Masked { mask: v, value: v },
                _ => Op::Masked {
                    mask: v | 0o6000,
                    value: if g.below(2) == 0 { 0 } else { v },
                },
            };
            Test { arg, op }
        })
        .collect()
}

/// Random rule sets, against `seccompiler`: programs with numbers in
/// common, conditional and unconditional rules, tests on the same and on
/// other arguments; some with hundreds of numbers, so that the search's
/// jumps outgrow 8 bits.
#[test]
fn random_rules_decide_as_seccompiler() {
    let mut g = Lcg(0x5eed);
    let native = native_arch().unwrap();
    let mut args: Vec<[u64; 6]> = Vec::new();
    for a in VALUES {
        for b in VALUES {
            for c in [0, 0o4000, 0x42, 0o6002] {
                args.push([u64::from(a), u64::from(b), c, 0, 0, 0]);
            }
        }
    }
    for round in 0..60 {
        let wide = round % 10 == 9;
        let count = if wide { 2 } else { 1 + g.below(4) };
        let programs: Vec<Program> = (0..count)
            .map(|i| {
                let numbers = if wide { 300 } else { 1 + g.below(30) };
                let rules = (0..numbers)
                    .map(|_| {
                        let nr = g.below(if wide { 1000 } else { 60 }) as u32;
                        let n = g.below(4);
                        (nr, (0..n).map(|_| random_rule(&mut g)).collect())
                    })
                    .filter(|(_, r): &(u32, Vec<Rule>)| !r.is_empty())
                    .collect();
                Program {
                    action: refusal([libc::EPERM, libc::EACCES, libc::ENOSYS, 95][i as usize]),
                    rules,
                }
            })
            .collect();
        let x32 = cfg!(target_arch = "x86_64").then(|| refusal(libc::EPERM));
        let got = vec![emit(&programs, native, x32).unwrap()];
        let want = reference(&programs, x32);
        let range = if wide { 1000 } else { 64 };
        for nr in (0..range).chain([X32_BIT | 3]) {
            for a in &args {
                assert_eq!(
                    interpret(&got, native, nr, *a),
                    interpret(&want, native, nr, *a),
                    "round {round}: nr {nr} args {a:x?}"
                );
            }
        }
        for arch in FOREIGN.into_iter().filter(|&a| a != native) {
            assert_eq!(
                interpret(&got, arch, 1, [0; 6]),
                libc::SECCOMP_RET_KILL_PROCESS
            );
        }
    }
}

/// `listen` is notified on this architecture only, refused as x32 and
/// killed elsewhere; the plain filter allows it; an errno another rule
/// gives it outranks the notification.
#[test]
fn listen_is_handed_to_sbx_last() {
    let native = native_arch().unwrap();
    let listen_nr = libc::SYS_listen as u32;
    let eperm = refusal(libc::EPERM);
    for s in sections() {
        let section = compile_section(&s).unwrap();
        let (plain, listen) = (section.plain(), section.listen().unwrap());
        assert!(notifies(&listen[0]) && !notifies(&plain[0]));
        for a in [[0; 6], [3, 128, 0, 0, 0, 0], [u64::MAX; 6]] {
            assert_eq!(interpret(&listen, native, listen_nr, a), NOTIFY);
            assert_eq!(
                interpret(&plain, native, listen_nr, a),
                libc::SECCOMP_RET_ALLOW
            );
            assert_eq!(
                interpret(&listen, 0x4000_0003, listen_nr, a),
                libc::SECCOMP_RET_KILL_PROCESS
            );
            if cfg!(target_arch = "x86_64") {
                assert_eq!(interpret(&listen, native, listen_nr | X32_BIT, a), eperm);
            }
        }
    }
    let refuse = Program {
        action: eperm,
        rules: BTreeMap::from([(listen_nr, vec![vec![]])]),
    };
    let f = vec![emit(&[refuse, listen_program()], native, None).unwrap()];
    assert_eq!(interpret(&f, native, listen_nr, [3; 6]), eperm);
    assert_eq!(interpret(&f, native, 0, [3; 6]), libc::SECCOMP_RET_ALLOW);
}

/// Past the kernel's limits: an error, not a filter that would fail to
/// attach or jump wrong.
#[test]
fn too_long_is_an_error() {
    let native = native_arch().unwrap();
    let test = |v| Test {
        arg: 0,
        op: Op::Eq(v),
    };
    let many = Program {
        action: refusal(libc::EPERM),
        rules: (0..2000).map(|nr| (nr, vec![vec![test(1)]])).collect(),
    };
    let e = emit(&[many], native, None).unwrap_err();
    assert!(e.contains("4096"), "{e}");
    let long_rule = Program {
        action: refusal(libc::EPERM),
        rules: BTreeMap::from([(1, vec![(0..300).map(test).collect()])]),
    };
    assert!(emit(&[long_rule], native, None).is_err());
}

#[test]
fn compiles_every_listed_syscall() {
    for s in sections() {
        assert_eq!(build(&s).unwrap().len(), 1);
    }
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
        let sockets = Program {
            action: refusal(libc::EACCES),
            rules: socket_rules(&allow).unwrap(),
        };
        let prog = emit::emit(&[sockets], native_arch().unwrap(), None).unwrap();
        // Its length is start-up time: 75 instructions for the usual
        // unix, netlink, tcp and udp (seccompiler's: 108).
        assert!(prog.len() <= 80, "{allow:?}: {} instructions", prog.len());
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
