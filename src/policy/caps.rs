//! Linux capability names, for `[linux] capabilities` (POLICY.md §10,
//! §13): the names the policy may write, their numbers, and those no
//! policy keeps.

/// Every capability name with its number (linux/capability.h).
pub const CAPABILITIES: &[(&str, u32)] = &[
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

/// Capabilities no policy keeps (the Linux artifact's
/// `drop_capabilities`). CAP_SYS_ADMIN and CAP_PERFMON read other
/// processes' memory maps and environment past Landlock's ptrace check
/// (`mm_access` trusts `perfmon_capable()`); CAP_SYS_RESOURCE lifts the
/// rlimits; CAP_SETPCAP and CAP_SETFCAP would give capabilities back; the
/// others reach hardware, kernel state, IPC of other users, or security
/// policy.
pub const DROP_CAPABILITIES: &[&str] = &[
    "CAP_AUDIT_CONTROL",
    "CAP_AUDIT_READ",
    "CAP_BLOCK_SUSPEND",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
    "CAP_IPC_OWNER",
    "CAP_LINUX_IMMUTABLE",
    "CAP_MAC_ADMIN",
    "CAP_MAC_OVERRIDE",
    "CAP_MKNOD",
    "CAP_NET_ADMIN",
    "CAP_PERFMON",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_SYSLOG",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_MODULE",
    "CAP_SYS_PACCT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_WAKE_ALARM",
];

/// The number of a capability name (`None`: no such capability).
pub fn number(name: &str) -> Option<u32> {
    CAPABILITIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
}

/// Why `name` cannot be kept (`None`: it can).
pub fn refusal(name: &str) -> Option<&'static str> {
    if number(name).is_none() {
        Some("is not a Linux capability")
    } else if DROP_CAPABILITIES.contains(&name) {
        Some("is never kept: POLICY.md §13")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_are_unique_and_dense() {
        for (i, (name, n)) in CAPABILITIES.iter().enumerate() {
            assert_eq!(*n as usize, i, "{name}");
        }
        for name in DROP_CAPABILITIES {
            assert!(number(name).is_some(), "{name}");
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(refusal("CAP_CHOWN"), None);
        assert_eq!(
            refusal("CAP_SYS_ADMIN"),
            Some("is never kept: POLICY.md §13")
        );
        assert_eq!(
            refusal("CAP_MAC_ADMIN"),
            Some("is never kept: POLICY.md §13")
        );
        assert_eq!(refusal("CAP_CHOWNS"), Some("is not a Linux capability"));
        assert_eq!(refusal("cap_chown"), Some("is not a Linux capability"));
    }
}
