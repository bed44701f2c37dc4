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
//! The stubs of rules beneath a private directory (a workspace made by
//! `mktemp -d` is mounted on `tmp.XXXX` there) are directories too, and
//! their names are the workspace's: kept where they are, a parked base
//! under `/var/tmp` would show `…/.git/hooks` to the protection scan of
//! a policy that makes `/var/tmp` writable. So the empty directories
//! the run leaves are moved, nameless, into the base's `pool` (at most
//! [`POOL_KEEP`]), and the next run's stubs are taken from there.
//!
//! Invariant, checked when a base is taken: a real directory of this
//! user, mode 0700, holding exactly `0` … `K-1`, each a real directory
//! of this user, mode 1777, empty, and without extended attributes
//! other than an LSM's `security.*` labels (a default ACL would reach
//! the next run's files); and at most a `pool`, mode 0700, of at most
//! [`POOL_KEEP`] numbered entries. A parked base that changed meanwhile
//! is removed and a fresh one is made. Each pooled entry is checked
//! where it is used, once moved to a stub's place and before anything
//! is mounted on it: a real directory of this user, mode 0755, empty
//! and without such attributes; one that is not is removed and the next
//! is tried. So a run reads the two or three entries it takes, not the
//! sixteen it may find. When parking, sbx checks the private
//! directories it has just emptied and lists the pool it fills. Only
//! its owner (and root) can rename an entry of a sticky directory, so
//! nothing of another user's is taken; root's checks refuse what is not
//! root's.

use super::super::nofollow::{self, is_dir};
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Parked bases kept per user, parent and K.
const KEEP: u32 = 4;

/// A base's empty directories for stubs, and how many it keeps.
pub(super) const POOL: &str = "pool";
const POOL_KEEP: usize = 16;

/// Nesting beneath a private directory down to which directories are
/// kept for the pool (stubs are a workspace's path below `/tmp`).
const POOL_DEPTH: usize = 6;

fn idle_name(k: usize, n: u32) -> String {
    format!("sbx-idle-{}-{k}-{n}", euid())
}

fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// A parked base with `k` private directories in `parent`, renamed to
/// a fresh run name there (`run_name(n)`, the first one free), and its
/// checked pool; `None` when none is parked or none passes the checks
/// (what fails them is removed).
pub fn take(parent: &str, k: usize, run_name: impl Fn(u32) -> String) -> Option<(PathBuf, Pool)> {
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
                    if let Ok((got, pool)) = invariant(&base) {
                        if got == k {
                            return Some((base, pool));
                        }
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
    use std::os::unix::ffi::OsStrExt;
    let (Some(parent), Some(name)) = (base.parent(), base.file_name()) else {
        return false;
    };
    // The parent is sbx's (`/var/tmp`, `/tmp`); the base and all below
    // it are opened from descriptors, never through a symlink: another
    // command that may write there cannot steer what sbx empties.
    let (Ok(parent_dir), Ok(base_name)) = (
        std::fs::File::open(parent).map(OwnedFd::from),
        CString::new(name.as_bytes()),
    ) else {
        return false;
    };
    let Ok(base_dir) = nofollow::open_dir(&parent_dir, &base_name) else {
        return false;
    };
    if !nofollow::fstat(&base_dir).is_ok_and(|st| owned(&st, 0o700)) {
        return false;
    }
    let Ok(mut pool) = Pool::open(&base_dir) else {
        return false;
    };
    let Ok(entries) = nofollow::entries(&base_dir) else {
        return false;
    };
    for (name, kind) in entries {
        if name.as_bytes() == POOL.as_bytes() {
            continue;
        }
        if kind != libc::DT_DIR || !empty_private(&base_dir, &name, &mut pool) {
            return false;
        }
    }
    // Names `0` … `k-1` only, each now empty (checked again, with the
    // pool, by the run that takes it): the base emptied, through its
    // descriptor.
    let Ok(k @ 1..) = private_dirs(&nofollow::anchored(&base_dir, c"")) else {
        return false;
    };
    (0..KEEP).any(|n| {
        cstring(&idle_name(k, n)).is_ok_and(|to| {
            super::super::kernel::rename_noreplace(parent_dir.as_fd(), &base_name, &to).is_ok()
        })
    })
}

/// Remove what the command left in the private directory `name` of the
/// run's base `base` (its directories into `pool` while there is room)
/// and give it back its mode; false if it is not one sbx can park.
fn empty_private(base: &OwnedFd, name: &CStr, pool: &mut Pool) -> bool {
    let Ok(dir) = nofollow::open_dir(base, name) else {
        return false;
    };
    if !nofollow::fstat(&dir).is_ok_and(|st| is_dir(&st) && st.st_uid == euid()) {
        return false;
    }
    if empty_into(&dir, 0, pool).is_err() {
        return false;
    }
    // The command may have changed it (chmod 700 /tmp).
    // SAFETY: an open descriptor.
    unsafe { nofollow::chmod_fd(dir.as_raw_fd(), 0o1777) }
}

/// Empty the open directory `dir`: files removed, directories emptied
/// the same way and moved into `pool` while it has room (down to
/// [`POOL_DEPTH`]), or removed. What cannot be read or emptied (a
/// directory the command locked) is removed as a whole, opened up
/// first. Every step is taken from `dir`'s descriptor, never through a
/// symlink.
fn empty_into(dir: &OwnedFd, depth: usize, pool: &mut Pool) -> io::Result<()> {
    for (name, kind) in nofollow::entries(dir)? {
        if kind != libc::DT_DIR {
            // Not followed: a symlink is a file here. A directory put in
            // its place meanwhile says so, and is taken as one.
            match nofollow::unlink_at(dir, &name) {
                Ok(()) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {}
                Err(e) => return Err(e),
            }
        }
        let kept = depth < POOL_DEPTH
            && pool.has_room()
            && nofollow::open_dir(dir, &name).is_ok_and(|sub| {
                empty_into(&sub, depth + 1, pool).is_ok() && pool.take_in(dir, &name, &sub)
            });
        if !kept {
            match nofollow::remove_tree_at(dir, &name) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// A base's `pool`: empty directories for the next run's stubs.
#[derive(Debug)]
pub(super) struct Pool {
    dir: PathBuf,
    /// Its entries' names.
    names: Vec<u32>,
    /// The pool, opened, when it is being filled ([`Pool::open`]).
    fd: Option<OwnedFd>,
}

impl Pool {
    /// `base`'s pool, made if need be, to be filled; refused if it is
    /// not one sbx made.
    fn open(base: &OwnedFd) -> io::Result<Pool> {
        let bad = || io::Error::other("not a pool of stubs");
        let mut pool = Pool::checked(&nofollow::anchored(base, c""))?;
        // SAFETY: an open directory and a NUL-terminated name.
        if unsafe { libc::mkdirat(base.as_raw_fd(), c"pool".as_ptr(), 0o700) } != 0 {
            let e = io::Error::last_os_error();
            // There already: checked above.
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(e);
            }
        }
        let fd = nofollow::open_dir(base, c"pool")?;
        if !nofollow::fstat(&fd).is_ok_and(|st| owned(&st, 0o700)) {
            return Err(bad());
        }
        pool.fd = Some(fd);
        Ok(pool)
    }

    /// `base`'s pool as the invariant wants it (none: empty): a
    /// directory of this user, mode 0700, of at most [`POOL_KEEP`]
    /// numbered entries. The entries themselves are checked where they
    /// are used ([`Pool::take_out`]).
    pub(super) fn checked(base: &Path) -> io::Result<Pool> {
        let bad = || io::Error::other("not a pool of stubs");
        let dir = base.join(POOL);
        let meta = match std::fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Pool {
                    dir,
                    names: Vec::new(),
                    fd: None,
                })
            }
            other => other?,
        };
        if !owned_dir(&meta, 0o700) {
            return Err(bad());
        }
        let mut names = Vec::new();
        for entry in crate::dirents::read_dir(&dir)? {
            let entry = entry?;
            let n = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok());
            names.push(n.ok_or_else(bad)?);
        }
        if names.len() > POOL_KEEP {
            return Err(bad());
        }
        names.sort_unstable();
        Ok(Pool {
            dir,
            names,
            fd: None,
        })
    }

    fn has_room(&self) -> bool {
        self.names.len() < POOL_KEEP
    }

    /// Move the empty directory `name` of `parent`, open as `sub`, into
    /// the pool, its mode set back; false (left where it is, or removed
    /// from the pool) if the pool is full, it is not ours or keeps an
    /// attribute, or the name led to another directory by the time it
    /// was moved.
    fn take_in(&mut self, parent: &OwnedFd, name: &CStr, sub: &OwnedFd) -> bool {
        let Ok(st) = nofollow::fstat(sub) else {
            return false;
        };
        // Its own directories may have filled the pool meanwhile.
        let ours = self.has_room() && is_dir(&st) && st.st_uid == euid();
        // SAFETY: an open descriptor.
        if !ours
            || !unsafe { nofollow::chmod_fd(sub.as_raw_fd(), 0o755) }
            || !matches!(foreign_xattrs_fd(sub), Ok(false))
        {
            return false;
        }
        let n = self.names.last().map_or(0, |l| l + 1);
        let (Some(pool), Ok(to)) = (&self.fd, cstring(&n.to_string())) else {
            return false;
        };
        if super::super::kernel::rename_noreplace_at(parent.as_fd(), name, pool.as_fd(), &to)
            .is_err()
        {
            return false;
        }
        // The pool keeps only the directory emptied here.
        if !nofollow::lstat_at(pool, &to)
            .is_ok_and(|t| (t.st_dev, t.st_ino) == (st.st_dev, st.st_ino))
        {
            let _ = nofollow::remove_tree_at(pool, &to);
            return false;
        }
        self.names.push(n);
        true
    }

    /// An empty directory of the pool moved to `name` in `parent`, if
    /// one is left that is, there, a real directory of this user, mode
    /// 0755, empty and without an attribute but `security.*` (one that
    /// is not is removed, never through a symlink, and the next is
    /// tried).
    pub(super) fn take_out(&mut self, parent: &OwnedFd, name: &CStr) -> bool {
        if self.fd.is_none() {
            // Opened through no symlink; what it holds is checked below.
            let Some(dir) = self.dir.to_str() else {
                return false;
            };
            match super::super::kernel::open_path(dir) {
                Ok(o) => self.fd = Some(o.handle.into()),
                Err(_) => return false,
            }
        }
        while let Some(n) = self.names.pop() {
            let (Some(pool), Ok(from)) = (&self.fd, cstring(&n.to_string())) else {
                return false;
            };
            if super::super::kernel::rename_noreplace_at(pool.as_fd(), &from, parent.as_fd(), name)
                .is_err()
            {
                continue;
            }
            let good = nofollow::open_dir(parent, name).is_ok_and(|d| {
                nofollow::fstat(&d).is_ok_and(|st| owned(&st, 0o755))
                    && nofollow::entries(&d).is_ok_and(|e| e.is_empty())
                    && matches!(foreign_xattrs_fd(&d), Ok(false))
            });
            if good {
                return true;
            }
            let _ = match nofollow::lstat_at(parent, name) {
                Ok(st) if is_dir(&st) => nofollow::remove_tree_at(parent, name),
                _ => nofollow::unlink_at(parent, name),
            };
        }
        false
    }
}

/// The invariant: how many private directories `base` holds, and its
/// pool as [`Pool::checked`] wants it.
fn invariant(base: &Path) -> io::Result<(usize, Pool)> {
    let k = private_dirs(base)?;
    Ok((k, Pool::checked(base)?))
}

/// How many private directories `base` holds, if it holds exactly `0`
/// … `K-1` beside its pool, each an empty real directory of this user,
/// mode 1777, with no extended attribute but `security.*`.
fn private_dirs(base: &Path) -> io::Result<usize> {
    let bad = || io::Error::other("not a parked run directory");
    if !owned_dir(&std::fs::symlink_metadata(base)?, 0o700) {
        return Err(bad());
    }
    let mut names = Vec::new();
    for entry in crate::dirents::read_dir(base)? {
        let entry = entry?;
        let name = entry.file_name().to_str().ok_or_else(bad)?;
        if name == POOL {
            continue;
        }
        let path = entry.path();
        if !owned_dir(&std::fs::symlink_metadata(path)?, 0o1777)
            || crate::dirents::read_dir(path)?.next().is_some()
            || foreign_xattrs(path)?
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
    owned_mode(meta.file_type().is_dir(), meta.uid(), meta.mode(), mode)
}

/// [`owned_dir`] of a `stat`.
fn owned(st: &libc::stat, mode: u32) -> bool {
    owned_mode(is_dir(st), st.st_uid, st.st_mode, mode)
}

/// A directory (`dir`) of this user whose permission bits are exactly
/// `mode`.
fn owned_mode(dir: bool, uid: u32, bits: u32, mode: u32) -> bool {
    dir && uid == euid() && bits & 0o7777 == mode
}

/// `path` has an extended attribute that is not an LSM's label.
fn foreign_xattrs(path: &Path) -> io::Result<bool> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut buf = [0u8; 1024];
    // SAFETY: a NUL-terminated path and a buffer of the given length.
    let n = unsafe { libc::llistxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    foreign_names(n, &buf)
}

/// [`foreign_xattrs`] of an open file.
fn foreign_xattrs_fd(fd: &OwnedFd) -> io::Result<bool> {
    let mut buf = [0u8; 1024];
    // SAFETY: an open descriptor and a buffer of the given length.
    let n = unsafe { libc::flistxattr(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    foreign_names(n, &buf)
}

/// Whether the list of `n` bytes of attribute names in `buf` (or the
/// error of a negative `n`) has a name that is not an LSM's label.
fn foreign_names(n: isize, buf: &[u8]) -> io::Result<bool> {
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
    /// [`Pool::take_out`] to the path `to`.
    fn take_out(pool: &mut Pool, to: &Path) -> bool {
        let parent = OwnedFd::from(std::fs::File::open(to.parent().unwrap()).unwrap());
        let name = CString::new(to.file_name().unwrap().as_encoded_bytes()).unwrap();
        pool.take_out(&parent, &name)
    }

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

    /// A `user.` attribute on `p`, as a default ACL would be one.
    fn set_user_xattr(p: &Path) {
        let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and name, a 1-byte value.
        let r = unsafe {
            libc::lsetxattr(c.as_ptr(), c"user.sbx".as_ptr(), b"x".as_ptr().cast(), 1, 0)
        };
        assert_eq!(r, 0, "{}", io::Error::last_os_error());
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
        let (got, _) = take(parent_str, 2, names(p.path())).unwrap();
        assert_eq!(got, p.path().join("sbx-run-test-0"));
        assert_eq!(inode(&got), ino);
        for i in ["0", "1"] {
            let m = std::fs::symlink_metadata(got.join(i)).unwrap();
            assert_eq!(m.mode() & 0o7777, 0o1777);
            assert_eq!(std::fs::read_dir(got.join(i)).unwrap().count(), 0);
        }
        assert!(take(parent_str, 2, names(p.path())).is_none(), "taken once");
    }

    /// Another command that can write where the base is (a rule on
    /// `/var/tmp`, or `namespaces = "never"`) swaps a directory of the
    /// private tree for a symlink to a directory of the user's while
    /// sbx empties the tree: what the symlink leads to keeps its files
    /// and its mode, however the swaps fall.
    #[test]
    fn a_directory_swapped_for_a_symlink_while_parking_steers_nothing() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let p = parent();
        let victim = p.path().join("victim");
        std::fs::create_dir_all(victim.join("inner")).unwrap();
        chmod(&victim.join("inner"), 0o750);
        for round in 0..400 {
            for f in ["canary", "sub"] {
                std::fs::write(victim.join(f), "keep").unwrap();
            }
            let b = base(p.path(), &format!("sbx-run-{round}"), 1);
            let tmp = b.join("0");
            let sub = tmp.join("sub");
            std::fs::create_dir_all(sub.join("inner")).unwrap();
            for f in ["canary", "sub"] {
                std::fs::write(sub.join(f), "x").unwrap();
            }
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                s.spawn(|| nofollow::tests::swap_for_symlink(&stop, &sub, &victim));
                park(&b);
                stop.store(true, Ordering::Relaxed);
            });
            for f in ["canary", "sub"] {
                assert_eq!(
                    std::fs::read_to_string(victim.join(f)).ok().as_deref(),
                    Some("keep"),
                    "round {round}: {f} removed through the symlink"
                );
            }
            let mode = std::fs::symlink_metadata(victim.join("inner"))
                .unwrap()
                .mode()
                & 0o7777;
            assert_eq!(mode, 0o750, "round {round}: a mode set through the symlink");
            let mode = std::fs::symlink_metadata(&victim).unwrap().mode() & 0o7777;
            assert_ne!(
                mode & 0o7000,
                0o1000,
                "round {round}: the victim made sticky"
            );
            for e in std::fs::read_dir(p.path()).unwrap() {
                let e = e.unwrap().path();
                if e != victim {
                    let _ = std::fs::remove_dir_all(&e);
                }
            }
        }
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
            ("an extended attribute", |i| set_user_xattr(&i.join("0"))),
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

    fn pool_inodes(base: &Path) -> Vec<u64> {
        let mut v: Vec<u64> = std::fs::read_dir(base.join(POOL))
            .unwrap()
            .map(|e| inode(&e.unwrap().path()))
            .collect();
        v.sort_unstable();
        v
    }

    /// The run's directories (stubs and what the command made) are
    /// kept, nameless and emptied, for the next run's stubs; files go.
    #[test]
    fn empty_directories_go_to_the_pool() {
        let p = parent();
        let b = base(p.path(), "sbx-run-pool", 1);
        let tmp = b.join("0");
        std::fs::create_dir_all(tmp.join("tmp.X/ws")).unwrap();
        std::fs::create_dir_all(tmp.join("sw/.git/hooks")).unwrap();
        std::fs::write(tmp.join("sw/.git/config"), "x").unwrap();
        chmod(&tmp.join("sw"), 0o700);
        let mut made: Vec<u64> = ["tmp.X", "tmp.X/ws", "sw", "sw/.git", "sw/.git/hooks"]
            .iter()
            .map(|d| inode(&tmp.join(d)))
            .collect();
        made.sort_unstable();
        assert!(park(&b));
        let idle = p.path().join(idle_name(1, 0));
        assert_eq!(pool_inodes(&idle), made);
        for e in std::fs::read_dir(idle.join(POOL)).unwrap() {
            let path = e.unwrap().path();
            let m = std::fs::symlink_metadata(&path).unwrap();
            assert_eq!(m.mode() & 0o7777, 0o755, "{}", path.display());
            assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
        }
        let (got, mut pool) = take(p.path().to_str().unwrap(), 1, names(p.path())).unwrap();
        assert_eq!(pool.names.len(), 5);
        let stub = got.join("0/stub");
        assert!(take_out(&mut pool, &stub));
        assert!(made.contains(&inode(&stub)));
        assert_eq!(pool_inodes(&got).len(), 4);
    }

    /// The pool keeps at most POOL_KEEP; what does not fit is removed,
    /// and what the command locked is removed too.
    #[test]
    fn the_pool_is_bounded() {
        let p = parent();
        let b = base(p.path(), "sbx-run-many", 1);
        // Three levels: a directory whose own fill the pool is not
        // taken in beyond it.
        for i in 0..40 {
            std::fs::create_dir_all(b.join(format!("0/d{i}/e/f"))).unwrap();
        }
        std::fs::create_dir_all(b.join("0/locked/in")).unwrap();
        chmod(&b.join("0/locked"), 0o000);
        assert!(park(&b));
        let idle = p.path().join(idle_name(1, 0));
        assert_eq!(pool_inodes(&idle).len(), POOL_KEEP);
        assert_eq!(std::fs::read_dir(idle.join("0")).unwrap().count(), 0);
    }

    /// A pool whose own mode or names changed while parked means the
    /// base is not taken.
    #[test]
    fn a_changed_pool_is_not_taken() {
        let p = parent();
        let parent_str = p.path().to_str().unwrap();
        type Change = (&'static str, fn(&Path));
        let changes: [Change; 3] = [
            ("the pool's mode", |i| chmod(&i.join(POOL), 0o755)),
            ("a name", |i| {
                std::fs::rename(i.join("pool/0"), i.join("pool/.git")).unwrap()
            }),
            ("too many entries", |i| {
                for n in 2..=POOL_KEEP as u32 {
                    std::fs::create_dir(i.join(POOL).join(n.to_string())).unwrap();
                    chmod(&i.join(POOL).join(n.to_string()), 0o755);
                }
            }),
        ];
        for (what, change) in changes {
            let b = base(p.path(), "sbx-run-3", 1);
            std::fs::create_dir_all(b.join("0/a/b")).unwrap();
            assert!(park(&b), "{what}");
            let idle = p.path().join(idle_name(1, 0));
            assert_eq!(pool_inodes(&idle).len(), 2, "{what}");
            change(&idle);
            assert!(take(parent_str, 1, names(p.path())).is_none(), "{what}");
            assert!(!idle.exists(), "{what}");
        }
    }

    /// A pooled entry that changed while parked is never a stub: it is
    /// checked where it is used, removed (never through a symlink), and
    /// the next entry is taken.
    #[test]
    fn a_changed_pooled_entry_is_not_a_stub() {
        let p = parent();
        let parent_str = p.path().to_str().unwrap();
        let outside = p.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        type Change = (&'static str, fn(&Path, &Path));
        let changes: [Change; 5] = [
            ("a file in a pooled directory", |i, _| {
                std::fs::write(i.join("pool/1/planted"), "x").unwrap()
            }),
            ("a pooled directory's mode", |i, _| {
                chmod(&i.join("pool/1"), 0o777)
            }),
            ("a file for a pooled directory", |i, _| {
                std::fs::remove_dir(i.join("pool/1")).unwrap();
                std::fs::write(i.join("pool/1"), "x").unwrap()
            }),
            ("a symlink for a pooled directory", |i, outside| {
                std::fs::remove_dir(i.join("pool/1")).unwrap();
                std::os::unix::fs::symlink(outside, i.join("pool/1")).unwrap()
            }),
            ("an extended attribute", |i, _| {
                set_user_xattr(&i.join("pool/1"))
            }),
        ];
        for (what, change) in changes {
            let b = base(p.path(), "sbx-run-4", 1);
            std::fs::create_dir_all(b.join("0/a/b")).unwrap();
            assert!(park(&b), "{what}");
            let idle = p.path().join(idle_name(1, 0));
            let good = inode(&idle.join("pool/0"));
            change(&idle, &outside);
            let (got, mut pool) = take(parent_str, 1, names(p.path())).expect(what);
            let stub = got.join("0/stub");
            assert!(take_out(&mut pool, &stub), "{what}");
            assert_eq!(inode(&stub), good, "{what}");
            assert!(!take_out(&mut pool, &got.join("0/other")), "{what}");
            assert!(!got.join("0/other").exists(), "{what}");
            assert_eq!(pool_inodes(&got), Vec::<u64>::new(), "{what}");
            assert_eq!(
                std::fs::read_to_string(outside.join("keep")).unwrap(),
                "x",
                "{what}"
            );
            std::fs::remove_dir_all(&got).unwrap();
        }
    }
}
