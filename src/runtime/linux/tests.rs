//! Plans and reports for every ABI, against a simulated filesystem.

use super::plan::{plan, Enforced, Opened, Plan};
use super::report;
use crate::back::landlock::{self, LinuxArtifact};
use crate::ir::testing::{roots, rule_grant};
use crate::ir::*;
use crate::runtime::expand::Values;
use std::io;

fn grant(index: usize, path: &str, access: Access, kind: PathKind) -> Grant {
    rule_grant(index, index + 1, path, access, kind)
}

fn ir(mode: PathMode, fs: Vec<Grant>) -> Ir {
    Ir {
        policy_hash: "sha256:0000".into(),
        fs,
        net: Net {
            connect: Ports::Some(vec![443]),
            ..Net::none()
        },
        env: Env {
            minimal: vec!["PATH".into(), "HOME".into()],
            allow: vec!["AWS_*".into()],
        },
        limits: Limits {
            cpu_time_s: Some(5),
            ..Limits::default()
        },
        ..Ir::deny_all(Os::Linux, mode, roots())
    }
}

fn artifact() -> LinuxArtifact {
    landlock::build(&ir(
        PathMode::Resolved,
        vec![
            grant(0, "/usr", Access::READ_EXEC, PathKind::Dir),
            grant(1, "/w", Access::READ_WRITE, PathKind::Dir),
            grant(2, "/w/notes.txt", Access::READ_WRITE, PathKind::File),
        ],
    ))
    .unwrap()
}

/// A fake filesystem: directories and files by path.
fn fake(
    dirs: &'static [&'static str],
    files: &'static [&'static str],
) -> impl FnMut(&str) -> io::Result<Opened<()>> {
    move |p: &str| {
        if dirs.contains(&p) {
            Ok(Opened {
                handle: (),
                is_dir: true,
            })
        } else if files.contains(&p) {
            Ok(Opened {
                handle: (),
                is_dir: false,
            })
        } else {
            Err(io::Error::from_raw_os_error(libc::ENOENT))
        }
    }
}

fn values() -> Values {
    Values {
        workspace: "/home/u/ws".into(),
        home: "/home/u".into(),
        temp: "/tmp".into(),
    }
}

fn plan_at(art: &LinuxArtifact, abi: u32) -> Plan<()> {
    plan(
        &art.landlock,
        7,
        Some(abi),
        &values(),
        &["/usr/bin/prog".to_string()],
        &mut fake(&["/usr", "/w"], &["/w/notes.txt", "/usr/bin/prog"]),
        &mut |p: &str| Some(p.to_string()),
    )
    .unwrap()
}

fn report_at(art: &LinuxArtifact, abi: u32) -> String {
    let p = plan_at(art, abi);
    report::text(
        art,
        &p,
        &report::Extras {
            caches: &[],
            seccomp: &Ok(1),
            exec_files: &["/usr/bin/prog".to_string()],
            forced_abi: Some(abi),
            root: false,
            namespaces: "none",
            mounts: &[],
            new_root: false,
            private_net: false,
            dropped_env: &["GITHUB_TOKEN".to_string(), "SSH_AUTH_SOCK".to_string()],
        },
    )
}

#[test]
fn report_for_every_abi() {
    let art = artifact();
    for abi in 0..=7 {
        insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("linux_report_abi{abi}"), report_at(&art, abi));
        });
    }
}

#[test]
fn degradation_by_abi() {
    let art = artifact();
    let names = |p: &Plan<()>| -> Vec<String> { p.lines.iter().map(|l| l.rule.clone()).collect() };
    assert_eq!(plan_at(&art, 7).enforced, Enforced::Fully);
    assert!(plan_at(&art, 6).lines.is_empty());
    assert_eq!(
        names(&plan_at(&art, 5)),
        [
            "landlock.scope.abstract_unix_socket",
            "landlock.scope.signal"
        ]
    );
    let p3 = plan_at(&art, 3);
    assert_eq!(p3.enforced, Enforced::Partially);
    assert_eq!(p3.handled_net, 0);
    assert!(p3.ports.is_empty());
    assert!(names(&p3).contains(&"landlock.connect_tcp".to_string()));
    let p1 = plan_at(&art, 1);
    let refer = p1
        .lines
        .iter()
        .find(|l| l.rule == "landlock.refer")
        .unwrap();
    assert_eq!(refer.status, Status::Narrower);
    assert!(p1.rules.iter().all(|r| r.rights.needed_abi() == 1));
    assert_eq!(plan_at(&art, 0).enforced, Enforced::Not);
}

#[test]
fn file_rules_are_trimmed_and_exec_files_added() {
    let p = plan_at(&artifact(), 7);
    let rule = |path: &str| {
        p.rules
            .iter()
            .find(|r| r.path == path)
            .unwrap()
            .rights
            .names()
    };
    assert_eq!(
        rule("/w/notes.txt"),
        ["write_file", "read_file", "truncate"]
    );
    assert_eq!(rule("/usr/bin/prog"), ["execute", "read_file"]);
}

#[test]
fn portable_paths_expand_and_overlaps_are_found_at_run_time() {
    let mut i = ir(
        PathMode::Portable,
        vec![
            grant(0, "${HOME}", Access::READ_WRITE, PathKind::Unknown),
            grant(1, "${WORKSPACE}", Access::READ, PathKind::Unknown),
            grant(
                2,
                "${WORKSPACE}/gone",
                Access::READ_WRITE,
                PathKind::Unknown,
            ),
        ],
    );
    i.net.connect = Ports::All;
    i.net.bind = Ports::All;
    let art = landlock::build(&i).unwrap();
    // Nothing to see lexically: ${HOME} and ${WORKSPACE} are unrelated.
    assert!(art.precision.is_empty());
    let p = plan(
        &art.landlock,
        7,
        None,
        &values(),
        &[],
        &mut fake(&["/home/u", "/home/u/ws"], &[]),
        &mut |p: &str| Some(p.to_string()),
    )
    .unwrap();
    let lines: Vec<(String, Status)> = p.lines.iter().map(|l| (l.rule.clone(), l.status)).collect();
    // /home/u/ws/gone is missing, but ${HOME} already grants it all.
    assert_eq!(lines, [("/home/u/ws".to_string(), Status::Wider)]);
    assert_eq!(
        p.rules.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
        ["/home/u", "/home/u/ws"]
    );
}

#[test]
fn missing_paths_at_run_time_are_dropped() {
    let art = artifact();
    let p = plan(
        &art.landlock,
        7,
        None,
        &values(),
        &[],
        &mut fake(&["/usr"], &[]),
        &mut |p: &str| Some(p.to_string()),
    )
    .unwrap();
    let dropped: Vec<&str> = p
        .lines
        .iter()
        .filter(|l| l.status == Status::Dropped)
        .map(|l| l.rule.as_str())
        .collect();
    assert_eq!(dropped, ["/w", "/w/notes.txt"]);
}

/// The program through a symlink out of the workspace (a venv's
/// `bin/python`): silent when another rule already lets its target run,
/// dropped with a warning when none does.
#[test]
fn program_symlinked_out_of_the_workspace() {
    let art = artifact();
    let run = |prog: &'static str| {
        let mut open = fake(&["/usr", "/w"], &["/usr/bin/python3", "/srv/tool"]);
        let p = plan(
            &art.landlock,
            7,
            None,
            &values(),
            &[prog.to_string()],
            &mut |p: &str| {
                if p.starts_with("/home/u/ws/") {
                    Err(io::Error::from_raw_os_error(libc::ELOOP))
                } else {
                    open(p)
                }
            },
            &mut |p: &str| match p {
                "/home/u/ws/v/bin/python" => Some("/usr/bin/python3".into()),
                "/home/u/ws/tool" => Some("/srv/tool".into()),
                _ => Some(p.to_string()),
            },
        )
        .unwrap();
        let dropped: Vec<String> = p
            .lines
            .iter()
            .filter(|l| l.status == Status::Dropped)
            .map(|l| l.rule.clone())
            .collect();
        let paths: Vec<String> = p.rules.iter().map(|r| r.path.clone()).collect();
        (p.warnings, dropped, paths)
    };
    let (warnings, dropped, rules) = run("/home/u/ws/v/bin/python");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(dropped.is_empty(), "{dropped:?}");
    // No rule of its own: /usr already runs it.
    assert_eq!(rules, ["/usr", "/w"]);
    let (warnings, dropped, rules) = run("/home/u/ws/tool");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(dropped, ["/home/u/ws/tool"]);
    assert_eq!(rules, ["/usr", "/w"]);
}

/// The seccomp filters, run by a BPF interpreter (combined as the kernel
/// combines them) on the artifacts the back end writes: every listed syscall, ioctl and ptrace request is
/// denied with the section's errno, sockets outside the allow-list get
/// EACCES, and ordinary syscalls are allowed.
#[test]
#[allow(clippy::unnecessary_cast)] // ioctl requests are ints in musl
fn seccomp_filters_decide_every_listed_syscall() {
    use super::seccomp::{build, interpret, native_arch, syscall_number};
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | e as u32;
    let allow = libc::SECCOMP_RET_ALLOW;
    let arch = native_arch().unwrap();
    let nr = |n: libc::c_long| n as u32;
    for (other_protocols, dns) in [(false, false), (false, true), (true, false)] {
        let mut i = ir(PathMode::Resolved, vec![]);
        i.net.other_protocols = other_protocols;
        i.net.dns = dns;
        let sc = landlock::build(&i).unwrap().seccomp;
        let p = build(&sc).unwrap();
        let run = |n: u32, args: [u64; 6]| interpret(&p, arch, n, args);
        let eperm = errno(libc::EPERM);
        assert_eq!(sc.errno, "EPERM");

        let mut denied = 0;
        for name in &sc.deny {
            let Some(n) = syscall_number(name) else {
                // Only iopl/ioperm may be missing (not x86_64).
                assert!(
                    matches!(name.as_str(), "iopl" | "ioperm") && !cfg!(target_arch = "x86_64"),
                    "{name}"
                );
                continue;
            };
            denied += 1;
            for args in [[0; 6], [u64::MAX; 6], [1, 2, 3, 4, 5, 6]] {
                assert_eq!(run(n, args), eperm, "{name}");
            }
        }
        assert!(denied >= 38, "{denied}");

        let ioctl = |req: u64| run(nr(libc::SYS_ioctl), [1, req, 0, 0, 0, 0]);
        assert_eq!(sc.deny_ioctl, ["TIOCLINUX", "TIOCSTI"]);
        for req in [libc::TIOCLINUX as u64, libc::TIOCSTI as u64] {
            assert_eq!(ioctl(req), eperm);
            // The kernel reads the request as an int.
            assert_eq!(ioctl(req | 0xffff_ffff_0000_0000), eperm);
        }
        for req in [libc::TCGETS, libc::TIOCGWINSZ, libc::FIONREAD, 0].map(|r| r as u64) {
            assert_eq!(ioctl(req), allow);
        }
        let ptrace = |req: u32| run(nr(libc::SYS_ptrace), [u64::from(req), 1, 0, 0, 0, 0]);
        assert_eq!(sc.deny_ptrace, ["PTRACE_ATTACH", "PTRACE_SEIZE"]);
        assert_eq!(ptrace(libc::PTRACE_ATTACH as u32), eperm);
        assert_eq!(ptrace(libc::PTRACE_SEIZE as u32), eperm);
        assert_eq!(ptrace(libc::PTRACE_TRACEME as u32), allow);
        assert_eq!(ptrace(libc::PTRACE_PEEKDATA as u32), allow);

        let socket = |f: libc::c_int, t: libc::c_int, p: libc::c_int| {
            run(
                nr(libc::SYS_socket),
                [f as u64, t as u64, p as u64, 0, 0, 0],
            )
        };
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        let (inet, inet6) = (libc::AF_INET, libc::AF_INET6);
        let always = [
            (libc::AF_UNIX, libc::SOCK_STREAM, 0),
            (libc::AF_UNIX, libc::SOCK_DGRAM | flags, 0),
            (libc::AF_NETLINK, libc::SOCK_RAW, 0),
            (inet, libc::SOCK_STREAM, 0),
            (inet6, libc::SOCK_STREAM | flags, libc::IPPROTO_TCP),
        ];
        let udp = [
            (inet, libc::SOCK_DGRAM, 0),
            (inet6, libc::SOCK_DGRAM | flags, libc::IPPROTO_UDP),
        ];
        let never = [
            (inet, libc::SOCK_RAW, libc::IPPROTO_ICMP),
            (inet, libc::SOCK_STREAM, libc::IPPROTO_SCTP),
            (inet6, libc::SOCK_STREAM, libc::IPPROTO_MPTCP),
            (inet, libc::SOCK_SEQPACKET, 0),
            (inet, libc::SOCK_DGRAM, libc::IPPROTO_TCP),
            (libc::AF_PACKET, libc::SOCK_RAW, 0),
            (libc::AF_VSOCK, libc::SOCK_STREAM, 0),
            (libc::AF_BLUETOOTH, libc::SOCK_STREAM, 0),
        ];
        let eacces = errno(libc::EACCES);
        for (f, t, p) in always {
            assert_eq!(socket(f, t, p), allow, "{f} {t} {p}");
        }
        for (f, t, p) in udp {
            let want = if other_protocols || dns {
                allow
            } else {
                eacces
            };
            assert_eq!(socket(f, t, p), want, "{f} {t} {p}");
        }
        for (f, t, p) in never {
            let want = if other_protocols { allow } else { eacces };
            assert_eq!(socket(f, t, p), want, "{f} {t} {p}");
        }

        for n in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_close,
            libc::SYS_mmap,
            libc::SYS_execve,
            libc::SYS_clone,
            libc::SYS_connect,
            libc::SYS_socketpair,
            libc::SYS_exit_group,
            libc::SYS_landlock_restrict_self,
            libc::SYS_seccomp,
            0,
        ] {
            assert_eq!(run(nr(n), [0; 6]), allow, "syscall {n}");
        }
        // clone3's flags sit in memory seccomp cannot read: ENOSYS, so
        // libc falls back to clone, whose flags it checks (no
        // CLONE_NEWUSER unless [linux] nested_user_namespaces).
        assert_eq!(run(nr(libc::SYS_clone3), [0; 6]), errno(libc::ENOSYS));

        // Other ABIs: x32 numbers on x86_64 are denied, 32-bit syscalls
        // kill the process.
        if cfg!(target_arch = "x86_64") {
            assert_eq!(run(nr(libc::SYS_socket) | 0x4000_0000, [1; 6]), eperm);
            assert_eq!(run(nr(libc::SYS_read) | 0x4000_0000, [0; 6]), eperm);
        }
        for foreign in [0x4000_0003, 0x4000_0028, 0] {
            assert_eq!(
                interpret(&p, foreign, nr(libc::SYS_read), [0; 6]),
                libc::SECCOMP_RET_KILL_PROCESS
            );
        }
    }
}

/// Rule paths are opened with `O_PATH` on every libc: a FIFO does not
/// block, and the descriptor cannot read. (std's `OpenOptions` drops
/// `O_PATH` on musl, which opened each path for reading.)
#[test]
fn rule_paths_are_opened_with_o_path() {
    use super::kernel::open_path;
    use std::os::fd::AsRawFd;
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    crate::testing::mkfifo(&fifo, 0o600);
    // With O_RDONLY this open would wait for a writer forever.
    let o = open_path(fifo.to_str().unwrap()).unwrap();
    assert!(!o.is_dir);
    // SAFETY: F_GETFL on a descriptor we own.
    let fl = unsafe { libc::fcntl(o.handle.as_raw_fd(), libc::F_GETFL) };
    assert_eq!(fl & libc::O_PATH, libc::O_PATH, "flags {fl:#o}");
    let mut buf = [0u8; 1];
    use std::io::Read;
    assert_eq!(
        (&o.handle).read(&mut buf).unwrap_err().raw_os_error(),
        Some(libc::EBADF)
    );
    assert!(open_path(d.path().to_str().unwrap()).unwrap().is_dir);
    assert_eq!(
        open_path("/nonexistent/sbx")
            .err()
            .and_then(|e| e.raw_os_error()),
        Some(libc::ENOENT)
    );
    assert!(open_path("a\0b").is_err());
}

/// No symlink is followed on the way to a rule's path, last component or
/// not, with `openat2` and with the fallback: ELOOP, and the caller
/// resolves and checks.
#[test]
fn rule_paths_are_opened_through_no_symlink() {
    use super::kernel::{open_nofollow_checked, open_path};
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("real")).unwrap();
    std::fs::create_dir(root.join("real/sub")).unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    let s = |p: &str| root.join(p).to_str().unwrap().to_string();
    for p in ["link", "link/sub"] {
        let e = open_path(&s(p)).err().and_then(|e| e.raw_os_error());
        assert_eq!(e, Some(libc::ELOOP), "{p}");
        let c = std::ffi::CString::new(s(p)).unwrap();
        let e = open_nofollow_checked(&c, &s(p))
            .err()
            .and_then(|e| e.raw_os_error());
        assert_eq!(e, Some(libc::ELOOP), "fallback {p}");
    }
    for p in ["real", "real/sub"] {
        assert!(open_path(&s(p)).unwrap().is_dir, "{p}");
        let c = std::ffi::CString::new(s(p)).unwrap();
        assert!(open_nofollow_checked(&c, &s(p)).is_ok(), "fallback {p}");
    }
}

/// A rule path with a symlink on the way is resolved as lowering would:
/// a workspace path that leads outside the workspace is dropped (with a
/// warning), one that stays inside is granted at its target, as is a
/// system path through a symlink.
#[test]
fn symlinks_met_at_run_time_are_resolved_and_checked() {
    let art = landlock::build(&ir(
        PathMode::Portable,
        vec![
            grant(
                0,
                "${WORKSPACE}/build",
                Access::READ_WRITE,
                PathKind::Unknown,
            ),
            grant(1, "${WORKSPACE}/lib", Access::READ, PathKind::Unknown),
            grant(2, "/lib64", Access::READ_EXEC, PathKind::Unknown),
        ],
    ))
    .unwrap();
    let links = [
        ("/home/u/ws/build", "/srv/outside"),
        ("/home/u/ws/lib", "/home/u/ws/vendor/lib"),
        ("/lib64", "/usr/lib64"),
    ];
    let mut open = |p: &str| {
        if links.iter().any(|(l, _)| *l == p) {
            Err(io::Error::from_raw_os_error(libc::ELOOP))
        } else if ["/srv/outside", "/home/u/ws/vendor/lib", "/usr/lib64"].contains(&p) {
            Ok(Opened {
                handle: (),
                is_dir: true,
            })
        } else {
            Err(io::Error::from_raw_os_error(libc::ENOENT))
        }
    };
    let mut resolve = |p: &str| {
        Some(
            links
                .iter()
                .find(|(l, _)| *l == p)
                .map_or(p, |(_, t)| *t)
                .to_string(),
        )
    };
    let p = plan(
        &art.landlock,
        7,
        None,
        &values(),
        &[],
        &mut open,
        &mut resolve,
    )
    .unwrap();
    let paths: Vec<&str> = p.rules.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/home/u/ws/vendor/lib", "/usr/lib64"]);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("/home/u/ws/build resolves to /srv/outside"));
    assert!(p
        .lines
        .iter()
        .any(|l| l.rule == "/home/u/ws/build" && l.status == Status::Dropped));
}

/// `auto` and `always` use the layer whatever the policy (without it
/// the command could change the modes and times of any file its user
/// owns), with a network namespace only when the policy has no network
/// or the proxy serves it; `never` uses none.
#[test]
fn namespaces_are_used_unless_never() {
    use super::ns::{private_net, wanted};
    let with_net = artifact();
    assert!(!private_net(&with_net));
    let w = wanted(&with_net, false);
    assert!(w.mount && w.pid && !w.net, "{w:?}");
    assert!(wanted(&with_net, true).net);

    let mut none = ir(PathMode::Resolved, vec![]);
    none.net = Net::none();
    let no_net = landlock::build(&none).unwrap();
    assert!(private_net(&no_net));
    let w = wanted(&no_net, false);
    assert!(w.mount && w.pid && w.net, "{w:?}");

    for (mode, used) in [
        (Namespaces::Never, false),
        (Namespaces::Always, true),
        (Namespaces::Auto, true),
    ] {
        for art in [&with_net, &no_net] {
            let mut a = art.clone();
            a.namespaces.mode = mode;
            let w = wanted(&a, true);
            assert_eq!(w.any(), used, "{mode:?}");
            assert_eq!(w.net, used, "{mode:?}");
        }
    }
}

/// A carve-out missing at launch is not mounted over, and the run says
/// its path gets the rights of the rule above; a missing plain bind (a
/// rule beneath a carve-out) needs no line, nor a protection the
/// artifact already reports as absent when compiled.
#[test]
fn carve_outs_missing_at_launch_are_reported() {
    use crate::back::landlock::{MountKind, MountRule};
    let rules = [
        MountRule {
            path: "${WORKSPACE}/.git".into(),
            kind: MountKind::Bind,
            read_only: true,
            noexec: false,
            protection: false,
            absent: false,
        },
        MountRule {
            path: "${WORKSPACE}/.git/objects".into(),
            kind: MountKind::Bind,
            read_only: false,
            noexec: false,
            protection: false,
            absent: false,
        },
        MountRule {
            path: "${WORKSPACE}/.vscode".into(),
            kind: MountKind::Bind,
            read_only: true,
            noexec: false,
            protection: true,
            absent: false,
        },
        MountRule {
            path: "${WORKSPACE}/.idea".into(),
            kind: MountKind::Bind,
            read_only: true,
            noexec: false,
            protection: true,
            absent: true,
        },
        MountRule {
            path: "/w".into(),
            kind: MountKind::Hidden,
            read_only: true,
            noexec: true,
            protection: false,
            absent: false,
        },
    ];
    let planned = super::ns::plan_mounts(&rules, &values(), &mut fake(&["/w"], &[])).unwrap();
    let (mounts, lines) = (planned.mounts, planned.lines);
    // Only sbx's own protections are compared after the run.
    assert_eq!(
        planned.protections,
        ["/home/u/ws/.vscode", "/home/u/ws/.idea"]
    );
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].path, "/w");
    assert!(mounts[0].is_carve_out());
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0].rule, "/home/u/ws/.git");
    assert_eq!(lines[0].status, Status::Wider);
    assert!(lines[0].reason.contains("rights of the rule above"));
    assert!(!lines[0].advisory);
    // sbx's own protection: reported, not a reason for `required` to refuse.
    assert_eq!(lines[1].rule, "/home/u/ws/.vscode");
    assert!(lines[1].advisory);
}

/// The sweep after the run starts at each protected repository's
/// worktree, the outermost only, whether its hooks exist or not; a
/// user's own read-only `.git/hooks` rule is not sbx's protection.
#[test]
fn repositories_are_swept_from_each_protected_top() {
    use crate::back::landlock::{MountKind, MountRule};
    let rule = |path: &str, protection: bool| MountRule {
        path: path.into(),
        kind: MountKind::Bind,
        read_only: true,
        noexec: false,
        protection,
        absent: false,
    };
    let rules = [
        rule("${WORKSPACE}/.git/config", true),
        rule("${WORKSPACE}/.git/hooks", true),
        rule("${WORKSPACE}/a/b/.git/hooks", true),
        rule("/srv/tree/.git/hooks", true),
        // `.git/hooks` lifted by a rule: the config still names the top.
        rule("/srv/lifted/.git/config", true),
        rule("/x/.git/hooks", false),
    ];
    let planned = super::ns::plan_mounts(&rules, &values(), &mut fake(&[], &[])).unwrap();
    assert_eq!(
        planned.repo_tops,
        ["/home/u/ws", "/srv/lifted", "/srv/tree"]
    );
}

/// sbx's state directory is hidden where a rule covers or names it
/// (home read; sbx's own read-only rule at it inside a writable grant,
/// which a run of the policy adds), unless a rule names a path beneath
/// it (consent, as for host sockets); not covered, or absent: nothing.
#[test]
fn state_directory_hidden_under_a_covering_rule() {
    use super::plan::PathRule;
    use crate::back::landlock::rights::FsSet;
    use crate::back::landlock::MountKind;
    let d = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(d.path()).unwrap();
    let state = home.join(".local/state/sbx");
    std::fs::create_dir_all(state.join("runs")).unwrap();
    let (h, s) = (home.to_str().unwrap(), state.to_str().unwrap());
    let rules = |paths: &[&str]| -> Vec<PathRule<()>> {
        paths
            .iter()
            .map(|p| PathRule {
                path: p.to_string(),
                rights: FsSet::named("read_file").unwrap(),
                handle: (),
                via: None,
            })
            .collect()
    };
    for shown in [&[h, "/usr"][..], &[h, s], &[s]] {
        let hidden = super::ns::state_hidden(&rules(shown), &state).unwrap();
        assert_eq!((hidden.path.as_str(), hidden.kind), (s, MountKind::Hidden));
    }
    let runs = format!("{s}/runs");
    assert!(super::ns::state_hidden(&rules(&[h, &runs]), &state).is_none());
    assert!(super::ns::state_hidden(&rules(&["/usr"]), &state).is_none());
    assert!(super::ns::state_hidden(&rules(&[h]), &home.join("absent")).is_none());
}
