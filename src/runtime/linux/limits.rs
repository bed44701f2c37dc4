//! What the child gets besides Landlock and seccomp: resource limits and
//! the capabilities it keeps.

use crate::ir::Limits;

/// The capabilities the command keeps, as a mask of their numbers
/// (linux/capability.h). Unknown names, and those the artifact's
/// baseline `drop` lists, are errors: never kept (POLICY.md §13).
pub fn keep_mask(keep: &[String], drop: &[String]) -> Result<u64, String> {
    let mut mask = 0u64;
    for n in keep {
        let v = crate::policy::caps::number(n).ok_or_else(|| format!("unknown capability {n}"))?;
        if drop.contains(n) {
            return Err(format!(
                "the artifact keeps {n}, which its drop_capabilities never keeps"
            ));
        }
        mask |= 1 << v;
    }
    Ok(mask)
}

/// The highest capability number this kernel knows
/// (`/proc/sys/kernel/cap_last_cap`, read before the fork: the child
/// does not open files). Unreadable: 63, the last the kernel's 64-bit
/// sets can hold (dropping one it does not know is EINVAL, ignored).
pub fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .map_or(63, |n| n.min(63))
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
    for e in crate::dirents::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
    {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_capabilities_as_a_mask() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let drop = s(crate::policy::caps::DROP_CAPABILITIES);
        assert_eq!(keep_mask(&[], &drop), Ok(0));
        assert_eq!(
            keep_mask(
                &s(&["CAP_CHOWN", "CAP_FOWNER", "CAP_CHECKPOINT_RESTORE"]),
                &[]
            ),
            Ok(1 | 1 << 3 | 1 << 40)
        );
        assert!(keep_mask(&s(&["CAP_SYS_ADMIN"]), &drop)
            .unwrap_err()
            .contains("never keeps"));
        assert!(keep_mask(&s(&["CAP_NOPE"]), &drop)
            .unwrap_err()
            .contains("unknown capability CAP_NOPE"));
        assert!(last_cap() >= 40);
    }
}
