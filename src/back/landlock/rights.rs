//! Landlock access rights by kernel name, with the ABI that introduced each.
//!
//! Plain data (no dependency on the `landlock` crate) so the emitter builds
//! on every OS. Bit values are the kernel's, so the Linux loader can hand
//! them to the crate unchanged.

use crate::ir::Access;

/// Newest ABI whose rights the emitter uses (scopes). ABI 7 only adds
/// logging flags; ABI 9's `resolve_unix` is not part of landlockconfig yet.
pub const TARGET_ABI: u32 = 6;

/// One filesystem right: kernel name, bit, first ABI, legal on a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsRight {
    pub name: &'static str,
    pub bit: u64,
    pub abi: u32,
    pub file_ok: bool,
}

const fn fs(name: &'static str, shift: u32, abi: u32, file_ok: bool) -> FsRight {
    FsRight {
        name,
        bit: 1 << shift,
        abi,
        file_ok,
    }
}

/// Every right the emitter knows, in kernel bit order.
pub const FS: &[FsRight] = &[
    fs("execute", 0, 1, true),
    fs("write_file", 1, 1, true),
    fs("read_file", 2, 1, true),
    fs("read_dir", 3, 1, false),
    fs("remove_dir", 4, 1, false),
    fs("remove_file", 5, 1, false),
    fs("make_char", 6, 1, false),
    fs("make_dir", 7, 1, false),
    fs("make_reg", 8, 1, false),
    fs("make_sock", 9, 1, false),
    fs("make_fifo", 10, 1, false),
    fs("make_block", 11, 1, false),
    fs("make_sym", 12, 1, false),
    fs("refer", 13, 2, false),
    fs("truncate", 14, 3, true),
    fs("ioctl_dev", 15, 5, true),
];

/// (name, bit) of the TCP rights; both need ABI 4.
pub const NET: &[(&str, u64)] = &[("bind_tcp", 1), ("connect_tcp", 2)];
pub const NET_ABI: u32 = 4;

/// (name, bit) of the IPC scopes; both need ABI 6.
pub const SCOPES: &[(&str, u64)] = &[("abstract_unix_socket", 1), ("signal", 2)];
pub const SCOPE_ABI: u32 = 6;

/// A set of filesystem rights (kernel bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FsSet(pub u64);

impl FsSet {
    pub const EMPTY: FsSet = FsSet(0);

    pub fn all() -> FsSet {
        FsSet(FS.iter().fold(0, |a, r| a | r.bit))
    }
    /// Rights that make sense on a non-directory.
    /// Rights that change what a path holds or names (write a file, make,
    /// remove or rename an entry, truncate): everything but reading,
    /// running and device ioctls.
    pub fn changes() -> FsSet {
        let keep = ["execute", "read_file", "read_dir", "ioctl_dev"]
            .iter()
            .fold(FsSet::EMPTY, |s, n| {
                s.or(FsSet::named(n).expect("known right"))
            });
        FsSet::all().minus(keep)
    }
    pub fn file_legal() -> FsSet {
        FsSet(FS.iter().filter(|r| r.file_ok).fold(0, |a, r| a | r.bit))
    }
    /// Rights the kernel knows at `abi`.
    pub fn at_abi(abi: u32) -> FsSet {
        FsSet(FS.iter().filter(|r| r.abi <= abi).fold(0, |a, r| a | r.bit))
    }
    pub fn named(name: &str) -> Option<FsSet> {
        FS.iter().find(|r| r.name == name).map(|r| FsSet(r.bit))
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn and(self, o: FsSet) -> FsSet {
        FsSet(self.0 & o.0)
    }
    pub fn or(self, o: FsSet) -> FsSet {
        FsSet(self.0 | o.0)
    }
    pub fn minus(self, o: FsSet) -> FsSet {
        FsSet(self.0 & !o.0)
    }
    pub fn contains(self, o: FsSet) -> bool {
        o.0 & !self.0 == 0
    }
    pub fn names(self) -> Vec<&'static str> {
        FS.iter()
            .filter(|r| self.0 & r.bit != 0)
            .map(|r| r.name)
            .collect()
    }
    /// The lowest ABI that knows every right in the set.
    pub fn needed_abi(self) -> u32 {
        FS.iter()
            .filter(|r| self.0 & r.bit != 0)
            .map(|r| r.abi)
            .max()
            .unwrap_or(1)
    }

    /// The rights for an sbx grant (POLICY.md §3) on a directory hierarchy.
    /// `device` adds `ioctl_dev` (only for `/dev` paths).
    pub fn from_access(a: Access, device: bool) -> FsSet {
        let mut names: Vec<&str> = Vec::new();
        if a.read {
            names.extend(["read_file", "read_dir"]);
        }
        if a.update {
            names.extend(["write_file", "truncate"]);
        }
        if a.create {
            // No make_char/make_block: device nodes are not "files,
            // directories, symlinks", and a writable node would reach
            // hardware when the sandboxed user is root.
            names.extend(["make_reg", "make_dir", "make_sym", "make_sock", "make_fifo"]);
        }
        if a.delete {
            names.extend(["remove_file", "remove_dir"]);
        }
        if a.create && a.delete {
            // Cross-directory rename/link (write-then-rename, `mv a/x b/`).
            names.push("refer");
        }
        if a.execute {
            names.push("execute");
        }
        if device && (a.read || a.update) {
            names.push("ioctl_dev");
        }
        names.into_iter().fold(FsSet::EMPTY, |s, n| {
            s.or(FsSet::named(n).expect("known right"))
        })
    }
}

/// Names of the set bits of a (name, bit) table.
pub fn names_of(table: &[(&'static str, u64)], bits: u64) -> Vec<&'static str> {
    table
        .iter()
        .filter(|(_, b)| bits & b != 0)
        .map(|(n, _)| *n)
        .collect()
}

/// Bits of the named entries; `None` if a name is unknown.
pub fn bits_of(table: &[(&'static str, u64)], names: &[String]) -> Option<u64> {
    names.iter().try_fold(0, |acc, n| {
        table.iter().find(|(t, _)| t == n).map(|(_, b)| acc | b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_grant_includes_refer_and_truncate() {
        let s = FsSet::from_access(Access::READ_WRITE, false);
        assert!(s.contains(FsSet::named("refer").unwrap()));
        assert!(s.contains(FsSet::named("truncate").unwrap()));
        assert!(!s.contains(FsSet::named("make_block").unwrap()));
        assert!(!s.contains(FsSet::named("ioctl_dev").unwrap()));
        assert_eq!(s.needed_abi(), 3);
    }

    #[test]
    fn create_without_delete_has_no_refer() {
        let a = Access {
            create: true,
            ..Access::NONE
        };
        assert!(!FsSet::from_access(a, false).contains(FsSet::named("refer").unwrap()));
    }

    #[test]
    fn abi_sets_grow() {
        assert_eq!(FsSet::at_abi(1).names().len(), 13);
        assert!(FsSet::at_abi(2).contains(FsSet::named("refer").unwrap()));
        assert_eq!(FsSet::at_abi(5), FsSet::all());
        assert_eq!(
            FsSet::file_legal().names(),
            [
                "execute",
                "write_file",
                "read_file",
                "truncate",
                "ioctl_dev"
            ]
        );
    }
}
