//! Run temp directories kept for the next run. Removing a directory
//! frees its block, and on a disk mounted with `discard` that is a
//! synchronous discard (0.3–0.7 ms each on the bench machine,
//! docs/performance.md); a run's base and its private directories are
//! the same every time. So after a run sbx empties its private
//! directories and parks the base as `sbx-idle-UID-K-N` beside the run
//! directories (K private directories, N below [`KEEP`]); the next run
//! with K private directories takes it by renaming it to a run name of
//! its own.
//!
//! Invariant, checked when a base is parked and again when it is
//! taken: a real directory of this user, mode 0700, holding exactly
//! `0` … `K-1`, each a real directory of this user, mode 1777, empty,
//! and without extended attributes other than an LSM's `security.*`
//! labels (a default ACL would reach the next run's files). A parked
//! base that changed meanwhile is removed and a fresh one is made. Only
//! its owner (and root) can rename an entry of a sticky directory, so
//! nothing of another user's is taken; root's checks refuse what is
//! not root's.

use std::ffi::CString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Parked bases kept per user, parent and K.
const KEEP: u32 = 4;

fn idle_name(k: usize, n: u32) -> String {
    format!("sbx-idle-{}-{k}-{n}", euid())
}

fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// A parked base with `k` private directories in `parent`, renamed to
/// a fresh run name there (`run_name(n)`, the first one free); `None`
/// when none is parked or none passes the checks (what fails them is
/// removed).
pub fn take(parent: &str, k: usize, run_name: impl Fn(u32) -> String) -> Option<PathBuf> {
    let mut dir = None;
    for n in 0..KEEP {
        let idle = idle_name(k, n);
        // Ours before it is renamed: another user's entry of a sticky
        // directory is not renamed by us (root could).
        let Ok(meta) = std::fs::symlink_metadata(Path::new(parent).join(&idle)) else {
            continue;
        };
        if !meta.file_type().is_dir() || meta.uid() != euid() {
            continue;
        }
        let from = cstring(&idle).ok()?;
        if dir.is_none() {
            dir = Some(std::fs::File::open(parent).ok()?);
        }
        let dir = dir.as_ref()?;
        for attempt in 0..64 {
            let name = run_name(attempt);
            let to = cstring(&name).ok()?;
            match super::super::kernel::rename_noreplace(dir.as_fd(), &from, &to) {
                Ok(()) => {
                    let base = Path::new(parent).join(name);
                    if holds_only_empty_dirs(&base).is_ok_and(|got| got == k) {
                        return Some(base);
                    }
                    // Changed while parked: not for this run.
                    let _ = super::remove_tree(&base);
                    break;
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(_) => break,
            }
        }
    }
    None
}

/// Empty the private directories of a run's `base` and park it; false
/// when it cannot be parked (the caller removes it). Called once the
/// command's tree has ended.
pub fn park(base: &Path) -> bool {
    let (Some(parent), Ok(meta)) = (base.parent(), std::fs::symlink_metadata(base)) else {
        return false;
    };
    if !owned_dir(&meta, 0o700) {
        return false;
    }
    for entry in std::fs::read_dir(base).into_iter().flatten() {
        let Ok(entry) = entry else { return false };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || !empty_private(&entry.path()) {
            return false;
        }
    }
    // Names `0` … `k-1` only, each now empty (checked again by the run
    // that takes it).
    let Ok(k @ 1..) = holds_only_empty_dirs(base) else {
        return false;
    };
    let Ok(dir) = std::fs::File::open(parent) else {
        return false;
    };
    let Some(name) = base.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Ok(from) = cstring(name) else {
        return false;
    };
    (0..KEEP).any(|n| {
        cstring(&idle_name(k, n))
            .is_ok_and(|to| super::super::kernel::rename_noreplace(dir.as_fd(), &from, &to).is_ok())
    })
}

/// Remove what the command left in a private directory of the run and
/// give it back its mode; false if it is not one sbx can park.
fn empty_private(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    if !meta.is_dir() || meta.uid() != euid() {
        return false;
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let Ok(entry) = entry else { return false };
        let path = entry.path();
        // std's remove_dir_all does not follow symlinks.
        let gone = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            super::remove_tree(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if gone.is_err() {
            return false;
        }
    }
    // The command may have changed it (chmod 700 /tmp).
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).is_ok()
}

/// How many private directories `base` holds, if it holds exactly `0`
/// … `K-1`, each an empty real directory of this user, mode 1777, with
/// no extended attribute but `security.*`.
fn holds_only_empty_dirs(base: &Path) -> io::Result<usize> {
    let bad = || io::Error::other("not a parked run directory");
    if !owned_dir(&std::fs::symlink_metadata(base)?, 0o700) {
        return Err(bad());
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(base)? {
        let entry = entry?;
        let name = entry.file_name().into_string().map_err(|_| bad())?;
        let path = entry.path();
        if !owned_dir(&std::fs::symlink_metadata(&path)?, 0o1777)
            || std::fs::read_dir(&path)?.next().is_some()
            || foreign_xattrs(&path)?
        {
            return Err(bad());
        }
        names.push(name.parse::<usize>().map_err(|_| bad())?);
    }
    names.sort_unstable();
    if names.iter().enumerate().any(|(i, n)| i != *n) {
        return Err(bad());
    }
    Ok(names.len())
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// A directory, not a symlink, of this user, with exactly `mode`.
fn owned_dir(meta: &std::fs::Metadata, mode: u32) -> bool {
    meta.file_type().is_dir() && meta.uid() == euid() && meta.mode() & 0o7777 == mode
}

/// `path` has an extended attribute that is not an LSM's label.
fn foreign_xattrs(path: &Path) -> io::Result<bool> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut buf = [0u8; 1024];
    // SAFETY: a NUL-terminated path and a buffer of the given length.
    let n = unsafe { libc::llistxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            // No extended attributes on this file system.
            Some(libc::ENOTSUP) => Ok(false),
            // More names than fit: surely not labels alone.
            Some(libc::ERANGE) => Ok(true),
            _ => Err(e),
        };
    }
    Ok(buf[..n as usize]
        .split(|b| *b == 0)
        .any(|name| !name.is_empty() && !name.starts_with(b"security.")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A run's base in `parent` as `PrivateTemp::make` leaves it, with
    /// `k` private directories.
    fn base(parent: &Path, name: &str, k: usize) -> PathBuf {
        let b = parent.join(name);
        std::fs::create_dir(&b).unwrap();
        chmod(&b, 0o700);
        for i in 0..k {
            std::fs::create_dir(b.join(i.to_string())).unwrap();
            chmod(&b.join(i.to_string()), 0o1777);
        }
        b
    }

    fn parent() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("sbx-idle-test-")
            .tempdir_in("/var/tmp")
            .unwrap()
    }

    fn names(p: &Path) -> impl Fn(u32) -> String + '_ {
        let _ = p;
        |n| format!("sbx-run-test-{n}")
    }

    fn inode(p: &Path) -> u64 {
        std::fs::symlink_metadata(p).unwrap().ino()
    }

    /// What the command left goes, whatever it did to it; the next run
    /// with as many private directories gets the same base, empty.
    #[test]
    fn a_parked_base_is_emptied_and_taken_again() {
        let p = parent();
        let outside = p.path().join("outside");
        std::fs::write(&outside, "keep").unwrap();
        let b = base(p.path(), "sbx-run-1", 2);
        let tmp = b.join("0");
        std::fs::create_dir_all(tmp.join("deep/er")).unwrap();
        std::fs::write(tmp.join("deep/er/f"), "x").unwrap();
        chmod(&tmp.join("deep"), 0o000);
        std::fs::write(tmp.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, tmp.join("link")).unwrap();
        std::os::unix::fs::symlink(p.path(), tmp.join("dirlink")).unwrap();
        chmod(&tmp, 0o700);
        let ino = inode(&b);
        assert!(park(&b));
        assert!(!b.exists());
        let idle = p.path().join(idle_name(2, 0));
        assert_eq!(inode(&idle), ino);
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        let parent_str = p.path().to_str().unwrap();
        assert!(take(parent_str, 1, names(p.path())).is_none(), "another K");
        let got = take(parent_str, 2, names(p.path())).unwrap();
        assert_eq!(got, p.path().join("sbx-run-test-0"));
        assert_eq!(inode(&got), ino);
        for i in ["0", "1"] {
            let m = std::fs::symlink_metadata(got.join(i)).unwrap();
            assert_eq!(m.mode() & 0o7777, 0o1777);
            assert_eq!(std::fs::read_dir(got.join(i)).unwrap().count(), 0);
        }
        assert!(take(parent_str, 2, names(p.path())).is_none(), "taken once");
    }

    /// A parked base that changed while parked is removed, not taken.
    #[test]
    fn a_changed_parked_base_is_not_taken() {
        let p = parent();
        let parent_str = p.path().to_str().unwrap();
        type Change = (&'static str, fn(&Path));
        let changes: [Change; 6] = [
            ("a file", |i| {
                std::fs::write(i.join("0/planted"), "x").unwrap()
            }),
            ("a mode", |i| chmod(&i.join("1"), 0o755)),
            ("the base's mode", |i| chmod(i, 0o755)),
            ("an extra directory", |i| {
                std::fs::create_dir(i.join("x")).unwrap()
            }),
            ("a symlink for a private directory", |i| {
                std::fs::remove_dir(i.join("1")).unwrap();
                std::os::unix::fs::symlink("/tmp", i.join("1")).unwrap();
            }),
            ("an extended attribute", |i| {
                let c = CString::new(i.join("0").as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: a NUL-terminated path and name, a 1-byte value.
                let r = unsafe {
                    libc::lsetxattr(c.as_ptr(), c"user.sbx".as_ptr(), b"x".as_ptr().cast(), 1, 0)
                };
                assert_eq!(r, 0, "{}", io::Error::last_os_error());
            }),
        ];
        for (what, change) in changes {
            let b = base(p.path(), "sbx-run-2", 2);
            assert!(park(&b), "{what}");
            let idle = p.path().join(idle_name(2, 0));
            change(&idle);
            assert!(take(parent_str, 2, names(p.path())).is_none(), "{what}");
            assert!(
                !idle.exists() && !p.path().join("sbx-run-test-0").exists(),
                "{what}"
            );
        }
        // A symlink where the parked base would be is not followed.
        let target = base(p.path(), "target", 1);
        std::os::unix::fs::symlink(&target, p.path().join(idle_name(1, 0))).unwrap();
        assert!(take(parent_str, 1, names(p.path())).is_none());
        assert!(target.join("0").is_dir());
    }

    /// At most KEEP parked per K; a base with something else than
    /// private directories is not parked.
    #[test]
    fn parking_is_bounded_and_checked() {
        let p = parent();
        for i in 0..KEEP {
            assert!(park(&base(p.path(), &format!("r{i}"), 1)));
        }
        let extra = base(p.path(), "r-extra", 1);
        assert!(!park(&extra));
        assert!(extra.exists());
        let odd = base(p.path(), "r-odd", 1);
        std::fs::write(odd.join("file"), "x").unwrap();
        assert!(!park(&odd));
        let gap = base(p.path(), "r-gap", 2);
        std::fs::rename(gap.join("1"), gap.join("7")).unwrap();
        assert!(!park(&gap));
    }
}
