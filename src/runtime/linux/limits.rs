//! What the child gets besides Landlock and seccomp: resource limits and
//! the capabilities it loses.

use crate::ir::Limits;

/// Capability numbers (linux/capability.h) for the artifact's names.
pub fn capabilities(names: &[String]) -> Result<Vec<u32>, String> {
    const CAPS: &[(&str, u32)] = &[
        ("CAP_CHOWN", 0),
        ("CAP_DAC_OVERRIDE", 1),
        ("CAP_DAC_READ_SEARCH", 2),
        ("CAP_FOWNER", 3),
        ("CAP_FSETID", 4),
        ("CAP_KILL", 5),
        ("CAP_SETGID", 6),
        ("CAP_SETUID", 7),
        ("CAP_SETPCAP", 8),
        ("CAP_LINUX_IMMUTABLE", 9),
        ("CAP_NET_BIND_SERVICE", 10),
        ("CAP_NET_BROADCAST", 11),
        ("CAP_NET_ADMIN", 12),
        ("CAP_NET_RAW", 13),
        ("CAP_IPC_LOCK", 14),
        ("CAP_IPC_OWNER", 15),
        ("CAP_SYS_MODULE", 16),
        ("CAP_SYS_RAWIO", 17),
        ("CAP_SYS_CHROOT", 18),
        ("CAP_SYS_PTRACE", 19),
        ("CAP_SYS_PACCT", 20),
        ("CAP_SYS_ADMIN", 21),
        ("CAP_SYS_BOOT", 22),
        ("CAP_SYS_NICE", 23),
        ("CAP_SYS_RESOURCE", 24),
        ("CAP_SYS_TIME", 25),
        ("CAP_SYS_TTY_CONFIG", 26),
        ("CAP_MKNOD", 27),
        ("CAP_LEASE", 28),
        ("CAP_AUDIT_WRITE", 29),
        ("CAP_AUDIT_CONTROL", 30),
        ("CAP_SETFCAP", 31),
        ("CAP_MAC_OVERRIDE", 32),
        ("CAP_MAC_ADMIN", 33),
        ("CAP_SYSLOG", 34),
        ("CAP_WAKE_ALARM", 35),
        ("CAP_BLOCK_SUSPEND", 36),
        ("CAP_AUDIT_READ", 37),
        ("CAP_PERFMON", 38),
        ("CAP_BPF", 39),
        ("CAP_CHECKPOINT_RESTORE", 40),
    ];
    names
        .iter()
        .map(|n| {
            CAPS.iter()
                .find(|(c, _)| c == n)
                .map(|(_, v)| *v)
                .ok_or_else(|| format!("unknown capability {n}"))
        })
        .collect()
}

/// `setrlimit`'s resource type: an enum in glibc, an int in musl.
#[cfg(target_env = "gnu")]
pub type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
pub type Resource = libc::c_int;

/// Resource limits for the child. Never raise a hard limit (that needs
/// privilege): take the smaller of ours and the current one.
pub fn rlimits(l: &Limits) -> Vec<(Resource, libc::rlimit)> {
    let mut out = Vec::new();
    let mut push = |res: Resource, cur: u64, max: u64| {
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: old is a valid out-parameter.
        let hard = if unsafe { libc::getrlimit(res, &mut old) } == 0 {
            old.rlim_max
        } else {
            libc::RLIM_INFINITY
        };
        let max = max.min(hard);
        out.push((
            res,
            libc::rlimit {
                rlim_cur: cur.min(max),
                rlim_max: max,
            },
        ));
    };
    if let Some(s) = l.cpu_time_s {
        // SIGXCPU at the limit, SIGKILL a second later if it is ignored.
        push(libc::RLIMIT_CPU, s, s.saturating_add(1));
    }
    if let Some(m) = l.max_memory_mib {
        let b = m.saturating_mul(1024 * 1024);
        push(libc::RLIMIT_AS, b, b);
    }
    if let Some(n) = l.max_processes {
        let n = user_tasks().saturating_add(n);
        push(libc::RLIMIT_NPROC, n, n);
    }
    out
}

/// Tasks (threads) the real user already runs: RLIMIT_NPROC counts them.
fn user_tasks() -> u64 {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() }.to_string();
    let mut total = 0u64;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(s) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            s.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next().map(str::to_string))
        };
        if field("Uid:").as_deref() == Some(uid.as_str()) {
            total += field("Threads:").and_then(|t| t.parse().ok()).unwrap_or(1);
        }
    }
    total
}
