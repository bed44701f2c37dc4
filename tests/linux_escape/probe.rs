//! The sandboxed side: one operation per run, printed as `OK` or the
//! errno's name, so the harness can assert the exact error.

use std::ffi::CString;
use std::io::Write;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn errno_name(e: i32) -> String {
    let n = match e {
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EXDEV => "EXDEV",
        libc::ENOENT => "ENOENT",
        libc::EBADF => "EBADF",
        libc::ENOTTY => "ENOTTY",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EINVAL => "EINVAL",
        libc::ENOSYS => "ENOSYS",
        libc::EEXIST => "EEXIST",
        libc::ESRCH => "ESRCH",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EROFS => "EROFS",
        libc::ENOEXEC => "ENOEXEC",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EBUSY => "EBUSY",
        libc::EISDIR => "EISDIR",
        libc::ENOTDIR => "ENOTDIR",
        libc::ENOTEMPTY => "ENOTEMPTY",
        _ => return format!("errno{e}"),
    };
    n.to_string()
}

/// `OK` for a non-negative result, else the errno's name.
fn res(r: i64) -> String {
    if r < 0 {
        errno_name(errno())
    } else {
        "OK".into()
    }
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn num<T: std::str::FromStr>(s: &str) -> T {
    s.parse().ok().expect("number")
}

fn loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn abstract_addr(name: &str) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: plain-old-data struct.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (i, b) in name.bytes().enumerate() {
        a.sun_path[i + 1] = b as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
    (a, len as libc::socklen_t)
}

/// A seccomp filter: `unshare` and `clone` with any `CLONE_NEW*` flag
/// fail with EPERM, `clone3` with ENOSYS (so callers use `clone`).
unsafe fn no_namespaces() {
    const NS: u32 = (libc::CLONE_NEWNS
        | libc::CLONE_NEWUSER
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP) as u32;
    let ld = |k: u32| libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let ret = |k: u32| libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let prog = [
        ld(0),                               // 0: nr
        jeq(libc::SYS_unshare as u32, 5, 0), // 1 -> 7
        jeq(libc::SYS_clone3 as u32, 5, 0),  // 2 -> 8
        jeq(libc::SYS_clone as u32, 0, 2),   // 3: else -> 6
        ld(16),                              // 4: flags (low half)
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16,
            jt: 1,
            jf: 0,
            k: NS,
        }, // 5 -> 7 when set
        ret(libc::SECCOMP_RET_ALLOW),        // 6
        ret(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32), // 7
        ret(libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32), // 8
    ];
    install_filter(&prog);
}

/// Install `prog` over this process (no_new_privs first).
unsafe fn install_filter(prog: &[libc::sock_filter]) {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    libc::syscall(
        libc::SYS_seccomp,
        libc::SECCOMP_SET_MODE_FILTER,
        0,
        &fprog as *const libc::sock_fprog,
    );
}

/// Refuse the first mount calls with EPERM while namespaces can still be
/// made: what an LSM that restricts unprivileged user namespaces
/// (Ubuntu's AppArmor) does to the namespace's mounts.
unsafe fn no_mounts() {
    let ld = libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k: 0,
    };
    let jeq = |k: libc::c_long, jt: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf: 0,
        k: k as u32,
    };
    let ret = |k: u32| libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let prog = [
        ld,
        jeq(libc::SYS_fsopen, 3),
        jeq(libc::SYS_mount, 2),
        jeq(libc::SYS_open_tree, 1),
        ret(libc::SECCOMP_RET_ALLOW),
        ret(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
    ];
    install_filter(&prog);
}

/// Every mount in this mount namespace is `nosuid`, and `nodev` unless
/// it is beneath `/dev`: "OK", or the first mount point that is not.
fn mount_flags() -> String {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for l in info.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        let (point, opts) = (
            f.get(4).copied().unwrap_or(""),
            f.get(5).copied().unwrap_or(""),
        );
        let has = |o: &str| opts.split(',').any(|x| x == o);
        let dev = point == "/dev" || point.starts_with("/dev/");
        if !has("nosuid") || (!dev && !has("nodev")) {
            return format!("{point} {opts}");
        }
    }
    if info.is_empty() {
        "no mountinfo".into()
    } else {
        "OK".into()
    }
}

/// `OK` when `pid` (from a clone that succeeded) exits 0, else the errno.
unsafe fn reaped(pid: i64) -> String {
    if pid < 0 {
        return res(-1);
    }
    let mut status = 0;
    libc::waitpid(pid as libc::pid_t, &mut status, 0);
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        "OK".into()
    } else {
        format!("child status {status:#x}")
    }
}

/// Run one operation; returns what to print.
unsafe fn op(args: &[String]) -> String {
    let a = |i: usize| args[i].as_str();
    match a(0) {
        "read" => {
            let fd = libc::open(c(a(1)).as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return res(-1);
            }
            let mut buf = [0u8; 64];
            res(libc::read(fd, buf.as_mut_ptr().cast(), 64) as i64)
        }
        "write" => {
            let fd = libc::open(
                c(a(1)).as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                0o644,
            );
            if fd < 0 {
                return res(-1);
            }
            res(libc::write(fd, b"x".as_ptr().cast(), 1) as i64)
        }
        "append" => {
            // No O_CREAT: an existing file only, as a planted setting would be.
            let fd = libc::open(
                c(a(1)).as_ptr(),
                libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return res(-1);
            }
            let text = b"\n[core]\n\tfsmonitor = touch /tmp/sbx-planted\n";
            res(libc::write(fd, text.as_ptr().cast(), text.len()) as i64)
        }
        "read-proc-parent" => {
            let p = format!("/proc/{}/{}", libc::getppid(), a(1));
            op(&["read".to_string(), p])
        }
        "open-rw" => res(libc::open(
            c(a(1)).as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
        .into()),
        "openpty" => {
            // A new pseudo-terminal through /dev/ptmx and its other end
            // by name, as openpty(3) does.
            let m = libc::open(c"/dev/ptmx".as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
            if m < 0 || libc::grantpt(m) != 0 || libc::unlockpt(m) != 0 {
                return res(-1);
            }
            let name = libc::ptsname(m);
            if name.is_null() {
                return res(-1);
            }
            res(libc::open(name, libc::O_RDWR | libc::O_NOCTTY).into())
        }
        "open-trunc" => res(libc::open(c(a(1)).as_ptr(), libc::O_WRONLY | libc::O_TRUNC).into()),
        "truncate" => res(libc::truncate(c(a(1)).as_ptr(), 0).into()),
        "link" => res(libc::link(c(a(1)).as_ptr(), c(a(2)).as_ptr()).into()),
        "rename" => res(libc::rename(c(a(1)).as_ptr(), c(a(2)).as_ptr()).into()),
        "symlink" => res(libc::symlink(c(a(1)).as_ptr(), c(a(2)).as_ptr()).into()),
        "connect-tcp" => {
            let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            if s < 0 {
                return res(-1);
            }
            let sa = loopback(num(a(1)));
            res(libc::connect(
                s,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            )
            .into())
        }
        "bind-tcp" => {
            let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            let sa = loopback(num(a(1)));
            res(libc::bind(
                s,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            )
            .into())
        }
        "udp-send" => {
            let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
            if s < 0 {
                return res(-1);
            }
            let sa = loopback(num(a(1)));
            res(libc::sendto(
                s,
                b"ping".as_ptr().cast(),
                4,
                0,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            ) as i64)
        }
        "socket" => res(libc::socket(num(a(1)), num(a(2)), num(a(3))).into()),
        "abstract-connect" => {
            let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let (sa, len) = abstract_addr(a(1));
            res(libc::connect(s, (&sa as *const libc::sockaddr_un).cast(), len).into())
        }
        "abstract-self" => {
            // Listener and client both inside the sandbox: allowed.
            let l = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let (sa, len) = abstract_addr(a(1));
            if libc::bind(l, (&sa as *const libc::sockaddr_un).cast(), len) < 0
                || libc::listen(l, 1) < 0
            {
                return res(-1);
            }
            let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            res(libc::connect(s, (&sa as *const libc::sockaddr_un).cast(), len).into())
        }
        "kill" => res(libc::kill(num(a(1)), num(a(2))).into()),
        "kill-own-child" => {
            let pid = libc::fork();
            if pid == 0 {
                libc::pause();
                libc::_exit(0);
            }
            let r = libc::kill(pid, libc::SIGTERM);
            let mut st = 0;
            libc::waitpid(pid, &mut st, 0);
            res(r.into())
        }
        "ptrace-attach" => res(libc::ptrace(
            libc::PTRACE_ATTACH,
            num::<libc::pid_t>(a(1)),
            0,
            0,
        )),
        "ptrace-traceme" => {
            // In a child, so that sbx never becomes our tracer.
            let pid = libc::fork();
            if pid == 0 {
                let r = libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
                libc::_exit(if r < 0 { errno() } else { 0 });
            }
            let mut st = 0;
            libc::waitpid(pid, &mut st, 0);
            match libc::WEXITSTATUS(st) {
                0 => "OK".into(),
                e => errno_name(e),
            }
        }
        "ioctl-tiocsti" => {
            let ch: libc::c_char = b'x' as libc::c_char;
            res(libc::ioctl(0, libc::TIOCSTI, &ch).into())
        }
        "ioctl-tcgets" => {
            let mut t: libc::termios = std::mem::zeroed();
            res(libc::ioctl(0, libc::TCGETS, &mut t).into())
        }
        "io-uring" => {
            let mut params = [0u8; 120];
            res(libc::syscall(
                libc::SYS_io_uring_setup,
                1u32,
                params.as_mut_ptr(),
            ))
        }
        // Another syscall ABI on x86_64: x32 numbers (bit 30) and the
        // i386 ABI through `int 0x80` (getpid is 20 there).
        #[cfg(target_arch = "x86_64")]
        "x32-getpid" => res(libc::syscall(libc::SYS_getpid | 0x4000_0000)),
        #[cfg(target_arch = "x86_64")]
        "i386-getpid" => {
            let mut ret: i64 = 20;
            std::arch::asm!(
                "int 0x80",
                inout("rax") ret,
                out("r8") _,
                out("r9") _,
                out("r10") _,
                out("r11") _,
                options(nostack),
            );
            if ret < 0 {
                errno_name(-ret as i32)
            } else {
                "OK".into()
            }
        }
        "env" => {
            let mut names: Vec<String> = std::env::vars_os()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect();
            names.sort();
            names.join("\n")
        }
        "caps" => {
            // The five sets from /proc/self/status, as hex: CapInh,
            // CapPrm, CapEff, CapBnd, CapAmb.
            let st = std::fs::read_to_string("/proc/self/status").unwrap();
            let get = |k: &str| {
                st.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .unwrap_or("")
                    .trim()
                    .to_string()
            };
            ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"]
                .map(get)
                .join(" ")
        }
        "chown" => res(libc::chown(c(a(1)).as_ptr(), num(a(2)), num(a(2))).into()),
        // A new user namespace: by `unshare`, or by `clone` (a child that
        // exits at once).
        "unshare-user" => res(libc::unshare(libc::CLONE_NEWUSER).into()),
        "clone-user" => {
            let flags = (libc::CLONE_NEWUSER | libc::SIGCHLD) as libc::c_ulong;
            let pid = libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize);
            if pid == 0 {
                libc::_exit(0);
            }
            reaped(pid)
        }
        // A plain child by `clone3` (what glibc tries first).
        "clone3" => {
            // struct clone_args: flags, pidfd, child_tid, parent_tid,
            // exit_signal, stack, stack_size, tls.
            let mut args = [0u64; 8];
            args[4] = libc::SIGCHLD as u64;
            let pid = libc::syscall(libc::SYS_clone3, args.as_mut_ptr(), 64usize);
            if pid == 0 {
                libc::_exit(0);
            }
            reaped(pid)
        }
        // Joining our own user namespace: EINVAL from the kernel, unless
        // refused first.
        "setns-user" => {
            let fd = libc::open(
                c"/proc/self/ns/user".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return res(-1);
            }
            res(libc::setns(fd, libc::CLONE_NEWUSER).into())
        }
        // fork, and a thread (glibc's pthread_create tries clone3 first).
        "fork-thread" => {
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(0);
            }
            let forked = reaped(pid.into());
            if forked != "OK" {
                return format!("fork: {forked}");
            }
            match std::thread::Builder::new().spawn(|| 7).map(|t| t.join()) {
                Ok(Ok(7)) => "OK".into(),
                Ok(_) => "thread panicked".into(),
                Err(e) => format!("thread: {}", errno_name(e.raw_os_error().unwrap_or(0))),
            }
        }
        "fd" => res(libc::fcntl(num(a(1)), libc::F_GETFD).into()),
        "exit" => {
            std::process::exit(num(a(1)));
        }
        "signal" => {
            libc::kill(libc::getpid(), num(a(1)));
            "not killed".into()
        }
        "exec" => {
            let argv: Vec<CString> = args[1..].iter().map(|s| c(s)).collect();
            let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|s| s.as_ptr()).collect();
            ptrs.push(std::ptr::null());
            libc::execv(argv[0].as_ptr(), ptrs.as_ptr());
            res(-1)
        }
        "sibling-sleeper" => {
            // A process made with CLONE_PARENT: sbx's child, not the
            // probe's (in a PID namespace, one its init cannot reap).
            // It sleeps `a(1)` seconds; the probe exits at once.
            let pid = libc::syscall(
                libc::SYS_clone,
                (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong,
                0usize,
                0usize,
                0usize,
                0usize,
            );
            if pid == 0 {
                libc::sleep(num(a(1)));
                libc::_exit(0);
            }
            if pid < 0 {
                return res(-1);
            }
            "OK".into()
        }
        "spawn-sleeper" => {
            // A grandchild that leaves the process group, then sleep.
            let pid = libc::fork();
            if pid == 0 {
                libc::setsid();
                libc::sleep(num(a(1)));
                libc::_exit(0);
            }
            println!("{pid}");
            let _ = std::io::stdout().flush();
            libc::sleep(num(a(1)));
            "slept".into()
        }
        // TCP Fast Open: data and connection in one sendto/sendmsg, with
        // no connect(2). `a(1)` is 4 or 6, `a(2)` the loopback port.
        "tfo-sendto" | "tfo-sendmsg" => {
            let v6 = a(1) == "6";
            let port: u16 = num(a(2));
            let fam = if v6 { libc::AF_INET6 } else { libc::AF_INET };
            let s = libc::socket(fam, libc::SOCK_STREAM, 0);
            if s < 0 {
                return res(-1);
            }
            let mut sa6: libc::sockaddr_in6 = std::mem::zeroed();
            sa6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sa6.sin6_port = port.to_be();
            sa6.sin6_addr.s6_addr[15] = 1;
            let sa4 = loopback(port);
            let (addr, len): (*const libc::sockaddr, u32) = if v6 {
                (
                    (&sa6 as *const libc::sockaddr_in6).cast(),
                    std::mem::size_of_val(&sa6) as u32,
                )
            } else {
                (
                    (&sa4 as *const libc::sockaddr_in).cast(),
                    std::mem::size_of_val(&sa4) as u32,
                )
            };
            let mut data = *b"hi";
            let r = if a(0) == "tfo-sendto" {
                libc::sendto(s, data.as_ptr().cast(), 2, libc::MSG_FASTOPEN, addr, len)
            } else {
                let mut iov = libc::iovec {
                    iov_base: data.as_mut_ptr().cast(),
                    iov_len: 2,
                };
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_name = addr as *mut libc::c_void;
                msg.msg_namelen = len;
                msg.msg_iov = &mut iov;
                msg.msg_iovlen = 1;
                libc::sendmsg(s, &msg, libc::MSG_FASTOPEN)
            };
            if r < 0 {
                return res(-1);
            }
            // The server answers: the connection really went through.
            let mut buf = [0u8; 16];
            res(libc::recv(s, buf.as_mut_ptr().cast(), 16, 0) as i64)
        }
        "prlimit" => {
            // Set the target's soft limit on open files to what it is.
            let pid: libc::pid_t = num(a(1));
            let mut old: libc::rlimit64 = std::mem::zeroed();
            if libc::prlimit64(pid, libc::RLIMIT_NOFILE, std::ptr::null(), &mut old) < 0 {
                return res(-1);
            }
            res(libc::prlimit64(pid, libc::RLIMIT_NOFILE, &old, std::ptr::null_mut()).into())
        }
        "setpriority" => res(libc::setpriority(libc::PRIO_PROCESS, num(a(1)), num(a(2))).into()),
        "setpriority-user" => res(libc::setpriority(libc::PRIO_USER, 0, num(a(1))).into()),
        "setaffinity" => {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) < 0 {
                return res(-1);
            }
            res(libc::sched_setaffinity(num(a(1)), std::mem::size_of_val(&set), &set).into())
        }
        "chmod" => res(libc::chmod(c(a(1)).as_ptr(), u32::from_str_radix(a(2), 8).unwrap()).into()),
        "fchmod" => {
            let fd = libc::open(c(a(1)).as_ptr(), libc::O_RDONLY);
            res(libc::fchmod(fd, u32::from_str_radix(a(2), 8).unwrap()).into())
        }
        "fchmodat" => res(libc::fchmodat(
            libc::AT_FDCWD,
            c(a(1)).as_ptr(),
            u32::from_str_radix(a(2), 8).unwrap(),
            0,
        )
        .into()),
        "create" => res(libc::open(
            c(a(1)).as_ptr(),
            libc::O_WRONLY | libc::O_CREAT,
            u32::from_str_radix(a(2), 8).unwrap(),
        )
        .into()),
        "tmpfile-link" => {
            // An unnamed file with the mode, then given a name.
            let fd = libc::open(
                c(a(1)).as_ptr(),
                libc::O_TMPFILE | libc::O_WRONLY,
                u32::from_str_radix(a(3), 8).unwrap(),
            );
            if fd < 0 {
                return res(-1);
            }
            let proc = format!("/proc/self/fd/{fd}");
            res(libc::linkat(
                libc::AT_FDCWD,
                c(&proc).as_ptr(),
                libc::AT_FDCWD,
                c(a(2)).as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
            .into())
        }
        "mknod" => res(libc::mknod(
            c(a(1)).as_ptr(),
            libc::S_IFREG | u32::from_str_radix(a(2), 8).unwrap(),
            0,
        )
        .into()),
        "openat2" => {
            let how = [libc::O_RDONLY as u64, 0, 0];
            res(libc::syscall(
                libc::SYS_openat2,
                libc::AT_FDCWD,
                c(a(1)).as_ptr(),
                how.as_ptr(),
                24usize,
            ))
        }
        "set-file-capability" => {
            // security.capability, version 2, no capabilities: the call
            // itself is what needs CAP_SETFCAP.
            let mut v = [0u8; 20];
            v[3] = 2;
            res(libc::setxattr(
                c(a(1)).as_ptr(),
                c("security.capability").as_ptr(),
                v.as_ptr().cast(),
                v.len(),
                0,
            )
            .into())
        }
        "mode" => {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(c(a(1)).as_ptr(), &mut st) < 0 {
                return res(-1);
            }
            format!("{:o}", st.st_mode & 0o7777)
        }
        "daemon-chain" => {
            // `a(1)` nested children, each in a session of its own; the
            // last prints its pid and sleeps. The probe exits at once.
            let depth: u32 = num(a(1));
            let mut pfd = [0; 2];
            libc::pipe(pfd.as_mut_ptr());
            for level in 0..=depth {
                if libc::fork() != 0 {
                    if level == 0 {
                        // The probe itself: report the last pid, exit.
                        libc::close(pfd[1]);
                        let mut buf = [0u8; 16];
                        let n = libc::read(pfd[0], buf.as_mut_ptr().cast(), 16);
                        let pid = String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned();
                        return pid;
                    }
                    // A middle link: wait for nothing, just stay.
                    libc::pause();
                    libc::_exit(0);
                }
                libc::setsid();
            }
            let pid = libc::getpid().to_string();
            libc::write(pfd[1], pid.as_ptr().cast(), pid.len());
            libc::close(pfd[1]);
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            libc::sleep(120);
            libc::_exit(0);
        }
        "tty-grab" => {
            // Leaves a process behind that takes the terminal (stdin) from
            // the foreground group, ignoring SIGTTOU and SIGHUP, then
            // copies what is typed to a(2) and appends a dot to a(1)
            // (after its pid) every 50 ms for 30 s. The probe returns
            // once the grab is done: `grabbed`, or the call that failed.
            let mut pfd = [0; 2];
            libc::pipe(pfd.as_mut_ptr());
            if libc::fork() != 0 {
                libc::close(pfd[1]);
                let mut buf = [0u8; 64];
                let n = libc::read(pfd[0], buf.as_mut_ptr().cast(), 64);
                return String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned();
            }
            libc::close(pfd[0]);
            libc::setpgid(0, 0);
            libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            libc::signal(libc::SIGTTIN, libc::SIG_IGN);
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            let msg = if libc::tcsetpgrp(0, libc::getpgrp()) != 0 {
                format!("tcsetpgrp {}", errno_name(errno()))
            } else {
                "grabbed".to_string()
            };
            // The pid is in the heartbeat file before the probe returns.
            let beat = CString::new(a(1)).unwrap();
            let typed = CString::new(a(2)).unwrap();
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND;
            let b = libc::open(beat.as_ptr(), flags, 0o644);
            let t = libc::open(typed.as_ptr(), flags, 0o644);
            if msg == "grabbed" {
                let pid = format!("{}\n", libc::getpid());
                libc::write(b, pid.as_ptr().cast(), pid.len());
            }
            libc::write(pfd[1], msg.as_ptr().cast(), msg.len());
            libc::close(pfd[1]);
            if msg != "grabbed" {
                libc::_exit(1);
            }
            for _ in 0..600 {
                let mut p = libc::pollfd {
                    fd: 0,
                    events: libc::POLLIN,
                    revents: 0,
                };
                if libc::poll(&mut p, 1, 50) > 0 {
                    let mut buf = [0u8; 256];
                    let n = libc::read(0, buf.as_mut_ptr().cast(), buf.len());
                    if n > 0 {
                        libc::write(t, buf.as_ptr().cast(), n as usize);
                    }
                }
                libc::write(b, b".".as_ptr().cast(), 1);
            }
            libc::_exit(0);
        }
        "plant-and-stop-output" => {
            // Creates `.envrc` and `.vscode/tasks.json` in a(1), then
            // stops the terminal's output on stderr (tcflow(TCOOFF)) and
            // exits without writing anything more.
            let _ = std::fs::write(format!("{}/.envrc", a(1)), "echo planted\n");
            let _ = std::fs::create_dir(format!("{}/.vscode", a(1)));
            let _ = std::fs::write(format!("{}/.vscode/tasks.json", a(1)), "{}\n");
            libc::tcflow(2, libc::TCOOFF);
            libc::_exit(0);
        }
        "unlink" => res(libc::unlink(c(a(1)).as_ptr()).into()),
        "rmdir" => res(libc::rmdir(c(a(1)).as_ptr()).into()),
        "mkdir" => res(libc::mkdir(c(a(1)).as_ptr(), 0o755).into()),
        "list" => match std::fs::read_dir(a(1)) {
            Ok(d) => format!("{} entries", d.count()),
            Err(e) => errno_name(e.raw_os_error().unwrap_or(0)),
        },
        // RENAME_EXCHANGE: swap two names atomically.
        "exchange" => res(libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            c(a(1)).as_ptr(),
            libc::AT_FDCWD,
            c(a(2)).as_ptr(),
            libc::RENAME_EXCHANGE,
        )),
        // Processes this one can see in /proc.
        "proc-count" => std::fs::read_dir("/proc")
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                    .count()
                    .to_string()
            })
            .unwrap_or_else(|e| errno_name(e.raw_os_error().unwrap_or(0))),
        // Mounts of type proc in this mount namespace, however hidden.
        "proc-mounts" => std::fs::read_to_string("/proc/self/mountinfo")
            .map(|m| {
                m.lines()
                    .filter(|l| {
                        l.split(" - ")
                            .nth(1)
                            .is_some_and(|t| t.starts_with("proc "))
                    })
                    .count()
                    .to_string()
            })
            .unwrap_or_else(|e| errno_name(e.raw_os_error().unwrap_or(0))),
        // Network interfaces and whether each is up: `lo:up,eth0:up`.
        "interfaces" => {
            // Any socket takes SIOCGIFFLAGS; UDP ones may be refused.
            let s = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM, 0);
            let list = libc::if_nameindex();
            let mut out = Vec::new();
            let mut i = 0;
            while !list.is_null() && (*list.add(i)).if_index != 0 {
                let name = std::ffi::CStr::from_ptr((*list.add(i)).if_name);
                let mut req: libc::ifreq = std::mem::zeroed();
                for (j, b) in name.to_bytes().iter().enumerate().take(15) {
                    req.ifr_name[j] = *b as libc::c_char;
                }
                #[allow(clippy::unnecessary_cast)]
                let up = libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut req) == 0
                    && req.ifr_ifru.ifru_flags & libc::IFF_UP as libc::c_short != 0;
                out.push(format!(
                    "{}:{}",
                    name.to_string_lossy(),
                    if up { "up" } else { "down" }
                ));
                i += 1;
            }
            out.join(",")
        }
        // A TCP socket on 127.0.0.1 or ::1 (`a(1)`: 4 or 6) bound to port
        // `a(2)` (0: no bind() at all), then listen().
        "listen-tcp" => {
            let v6 = a(1) == "6";
            let port: u16 = num(a(2));
            let s = libc::socket(
                if v6 { libc::AF_INET6 } else { libc::AF_INET },
                libc::SOCK_STREAM,
                0,
            );
            if s < 0 {
                return res(-1);
            }
            if port != 0 {
                let mut sa6: libc::sockaddr_in6 = std::mem::zeroed();
                sa6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sa6.sin6_port = port.to_be();
                sa6.sin6_addr.s6_addr[15] = 1;
                let sa4 = loopback(port);
                let r = if v6 {
                    libc::bind(
                        s,
                        (&sa6 as *const libc::sockaddr_in6).cast(),
                        std::mem::size_of_val(&sa6) as u32,
                    )
                } else {
                    libc::bind(
                        s,
                        (&sa4 as *const libc::sockaddr_in).cast(),
                        std::mem::size_of_val(&sa4) as u32,
                    )
                };
                if r < 0 {
                    return format!("bind: {}", errno_name(errno()));
                }
            }
            res(libc::listen(s, 8).into())
        }
        // A UNIX-socket server at path `a(1)`: listen(), a client
        // connects, accept().
        "unix-server" => {
            let l = std::os::unix::net::UnixListener::bind(a(1));
            let Ok(l) = l else {
                return format!("bind: {:?}", l.err());
            };
            let c = std::os::unix::net::UnixStream::connect(a(1));
            match (c, l.accept()) {
                (Ok(_), Ok(_)) => "OK".into(),
                other => format!("{other:?}"),
            }
        }
        // listen() on one descriptor number while another thread keeps
        // putting a UNIX socket and an unbound TCP socket behind it:
        // `escaped` if the TCP socket ends up listening.
        "listen-swap" => {
            let unix = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let tcp = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            let n = libc::dup(unix);
            // The family alone: an abstract name the kernel picks.
            let family = libc::AF_UNIX as libc::sa_family_t;
            let len = std::mem::size_of::<libc::sa_family_t>() as libc::socklen_t;
            if unix < 0
                || tcp < 0
                || n < 0
                || libc::bind(unix, (&family as *const libc::sa_family_t).cast(), len) < 0
            {
                return res(-1);
            }
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let s2 = stop.clone();
            let t = std::thread::spawn(move || {
                while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                    libc::dup2(unix, n);
                    libc::dup2(tcp, n);
                }
            });
            // At least 2000 tries, and more until the UNIX socket has
            // listened once: on a loaded machine the swapping thread can
            // win every one of the first 2000 (the control then fails).
            let mut listened = 0;
            let mut tries = 0;
            while tries < 2000 || (listened == 0 && tries < 200_000) {
                if libc::listen(n, 1) == 0 {
                    listened += 1;
                }
                tries += 1;
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = t.join();
            let mut on: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            libc::getsockopt(
                tcp,
                libc::SOL_SOCKET,
                libc::SO_ACCEPTCONN,
                (&mut on as *mut libc::c_int).cast(),
                &mut len,
            );
            if on != 0 {
                "escaped".into()
            } else if listened == 0 {
                "the UNIX socket never listened".into()
            } else {
                "OK".into()
            }
        }
        // Print `ready`, wait until sbx is gone (another process becomes
        // the parent), then listen() on a bound UNIX socket and write
        // the result to `a(1)`.
        "listen-orphaned" => {
            // Outlive sbx: drop the death signal it gives the command (a
            // descendant of the command never has one).
            libc::prctl(libc::PR_SET_PDEATHSIG, 0, 0, 0, 0);
            let parent = libc::getppid();
            println!("ready");
            let _ = std::io::stdout().flush();
            for _ in 0..500 {
                if libc::getppid() != parent {
                    break;
                }
                libc::usleep(10_000);
            }
            let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let family = libc::AF_UNIX as libc::sa_family_t;
            let len = std::mem::size_of::<libc::sa_family_t>() as libc::socklen_t;
            libc::bind(s, (&family as *const libc::sa_family_t).cast(), len);
            let r = res(libc::listen(s, 1).into());
            let _ = std::fs::write(a(1), &r);
            r
        }
        // listen() with no bind(): the kernel picks a port on every
        // address. Prints the port, then waits for one connection for
        // `a(2)` seconds and prints `accepted` or `none`.
        "listen-nobind" => {
            let fam = if a(1) == "6" {
                libc::AF_INET6
            } else {
                libc::AF_INET
            };
            let s = libc::socket(fam, libc::SOCK_STREAM, 0);
            if s < 0 || libc::listen(s, 1) < 0 {
                return res(-1);
            }
            let mut ss: libc::sockaddr_storage = std::mem::zeroed();
            let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            libc::getsockname(s, (&mut ss as *mut libc::sockaddr_storage).cast(), &mut len);
            let port = if fam == libc::AF_INET6 {
                u16::from_be((*(&ss as *const _ as *const libc::sockaddr_in6)).sin6_port)
            } else {
                u16::from_be((*(&ss as *const _ as *const libc::sockaddr_in)).sin_port)
            };
            println!("{port}");
            let _ = std::io::stdout().flush();
            let mut pfd = libc::pollfd {
                fd: s,
                events: libc::POLLIN,
                revents: 0,
            };
            let n = libc::poll(&mut pfd, 1, num::<i32>(a(2)) * 1000);
            if n > 0 { "accepted" } else { "none" }.into()
        }
        // A grandchild in its own session writes `started` to `a(1)`,
        // then `still` a second later; the probe exits once it started.
        "daemon-writer" => {
            let mut pfd = [0; 2];
            libc::pipe(pfd.as_mut_ptr());
            if libc::fork() == 0 {
                if libc::fork() == 0 {
                    libc::setsid();
                    libc::signal(libc::SIGHUP, libc::SIG_IGN);
                    let _ = std::fs::write(a(1), "started\n");
                    libc::write(pfd[1], b"x".as_ptr().cast(), 1);
                    libc::sleep(1);
                    let mut f = std::fs::OpenOptions::new().append(true).open(a(1)).unwrap();
                    let _ = f.write_all(b"still\n");
                    libc::_exit(0);
                }
                libc::_exit(0);
            }
            let mut b = [0u8; 1];
            libc::read(pfd[0], b.as_mut_ptr().cast(), 1);
            "OK".into()
        }
        // Run `a(1)` with the rest as its arguments under a seccomp
        // filter that allows everything but holds a listener (kept open
        // across exec), as another supervisor's would.
        "with-listener" => {
            let allow = [libc::sock_filter {
                code: (libc::BPF_RET | libc::BPF_K) as u16,
                jt: 0,
                jf: 0,
                k: libc::SECCOMP_RET_ALLOW,
            }];
            let prog = libc::sock_fprog {
                len: 1,
                filter: allow.as_ptr() as *mut libc::sock_filter,
            };
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            let fd = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_uint,
                &prog as *const libc::sock_fprog,
            );
            if fd < 0 {
                return res(-1);
            }
            libc::fcntl(fd as i32, libc::F_SETFD, 0);
            let argv: Vec<CString> = args[1..].iter().map(|x| c(x)).collect();
            let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|x| x.as_ptr()).collect();
            ptrs.push(std::ptr::null());
            libc::execv(ptrs[0], ptrs.as_ptr());
            res(-1)
        }
        // Run `a(1)` with the rest as its arguments under a seccomp
        // filter that refuses every new namespace (EPERM), as a
        // container without user namespaces does.
        "mount-flags" => mount_flags(),
        "utime" => {
            res(libc::utimensat(libc::AT_FDCWD, c(a(1)).as_ptr(), std::ptr::null(), 0).into())
        }
        // As no-namespaces, but the namespaces are made and their first
        // mount is refused.
        "no-mounts" => {
            no_mounts();
            let argv: Vec<CString> = args[1..].iter().map(|x| c(x)).collect();
            let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|x| x.as_ptr()).collect();
            ptrs.push(std::ptr::null());
            libc::execv(ptrs[0], ptrs.as_ptr());
            res(-1)
        }
        "no-namespaces" => {
            no_namespaces();
            let argv: Vec<CString> = args[1..].iter().map(|x| c(x)).collect();
            let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|x| x.as_ptr()).collect();
            ptrs.push(std::ptr::null());
            libc::execv(ptrs[0], ptrs.as_ptr());
            res(-1)
        }
        // Find the one TCP listener on 127.0.0.1 in this network
        // namespace, send `ping`, write the reply to `a(1)`.
        "proxy-client" => {
            let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
            let port = tcp.lines().skip(1).find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (addr, state) = (f.get(1)?, f.get(3)?);
                let (ip, port) = addr.split_once(':')?;
                (ip == "0100007F" && *state == "0A")
                    .then(|| u16::from_str_radix(port, 16).ok())
                    .flatten()
            });
            let Some(port) = port else {
                return "no listener".into();
            };
            use std::io::Read;
            match std::net::TcpStream::connect(("127.0.0.1", port)) {
                Ok(mut s) => {
                    let _ = s.write_all(b"ping");
                    let mut reply = String::new();
                    let _ = s.read_to_string(&mut reply);
                    let _ = std::fs::write(a(1), &reply);
                    "OK".into()
                }
                Err(e) => errno_name(e.raw_os_error().unwrap_or(0)),
            }
        }
        // Copy /usr/bin/true into a memfd made with flags `a(1)` (0 or
        // `seal`: MFD_NOEXEC_SEAL), then run it by `a(2)`: `execveat`
        // (AT_EMPTY_PATH) or `proc` (/proc/self/fd/N). A run prints
        // nothing; a refusal prints the errno.
        "memfd-exec" => {
            let flags = if a(1) == "seal" {
                libc::MFD_NOEXEC_SEAL
            } else {
                0
            };
            let fd = libc::memfd_create(c"probe".as_ptr(), flags);
            if fd < 0 {
                return res(-1);
            }
            let prog = std::fs::read("/usr/bin/true").unwrap();
            libc::write(fd, prog.as_ptr().cast(), prog.len());
            let argv = [c"true".as_ptr(), std::ptr::null()];
            let envp = [std::ptr::null()];
            if a(2) == "execveat" {
                libc::syscall(
                    libc::SYS_execveat,
                    fd,
                    c"".as_ptr(),
                    argv.as_ptr(),
                    envp.as_ptr(),
                    libc::AT_EMPTY_PATH,
                );
            } else {
                let path = c(&format!("/proc/self/fd/{fd}"));
                libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            }
            res(-1)
        }
        "unix-connect" => match std::os::unix::net::UnixStream::connect(a(1)) {
            Ok(_) => "OK".into(),
            Err(e) => errno_name(e.raw_os_error().unwrap_or(0)),
        },
        other => format!("unknown probe op {other}"),
    }
}

pub fn main(args: &[String]) -> ! {
    // SAFETY: each op is a handful of libc calls on valid arguments.
    let out = unsafe { op(args) };
    println!("{out}");
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}
