//! Changing a tree that a sandboxed process may be changing at the same
//! time: a run's temp directories (another run's command may write
//! under `/var/tmp` when a rule or `namespaces = "never"` grants it) and
//! a key's private caches (a run of that key writes them through its
//! overlay). Every step starts from an open directory and takes one name
//! without following a symlink, and a mode is set through a descriptor,
//! so a directory swapped for a symlink between two steps makes sbx
//! (unsandboxed, perhaps root) neither remove nor change anything
//! outside the tree.
//!
//! System calls only, on buffers of the stack: the clearing helper
//! (`clearing.rs`) shares sbx's memory and must not allocate.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Nesting down to which directories are opened up or removed; what
/// lies deeper stays (the callers say when something is left).
pub(super) const MAX_DEPTH: usize = 16;

/// Open the directory `name` in `dir` (or `AT_FDCWD`), not through a
/// symlink; -1 on failure.
///
/// # Safety
/// A system call only; `dir` is an open directory or `AT_FDCWD`.
pub(super) unsafe fn open_dir_at(dir: libc::c_int, name: &CStr) -> libc::c_int {
    libc::openat(
        dir,
        name.as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
    )
}

/// Open the directory `name` in `dir` as `O_PATH` (which needs no right
/// on it: a directory locked with mode 000 opens so for its owner), not
/// through a symlink; -1 on failure.
///
/// # Safety
/// A system call only; `dir` is an open directory or `AT_FDCWD`.
unsafe fn open_path_dir_at(dir: libc::c_int, name: &CStr) -> libc::c_int {
    libc::openat(
        dir,
        name.as_ptr(),
        libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
    )
}

/// Call `f` with the name and `d_type` of each entry of the directory
/// `fd` but `.` and `..`; false if reading it failed before its end.
/// Entries `f` removes meanwhile do not hide the others.
///
/// # Safety
/// System calls only; `fd` is an open directory.
pub(super) unsafe fn each_entry(fd: libc::c_int, f: &mut dyn FnMut(&CStr, u8)) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match crate::dirents::getdents(fd, &mut buf) {
            Ok(0) => return true,
            Ok(n) => {
                for (name, kind) in crate::dirents::records(&buf[..n]) {
                    f(name, kind);
                }
            }
            Err(_) => return false,
        }
    }
}

/// Set the mode of the directory `name` in `dir`, never through a
/// symlink (a symlink or a file there is left alone): the directory is
/// opened first, and its mode set through that descriptor.
///
/// # Safety
/// System calls only; `dir` is an open directory or `AT_FDCWD`.
pub(super) unsafe fn chmod_dir_at(dir: libc::c_int, name: &CStr, mode: libc::mode_t) -> bool {
    let fd = open_path_dir_at(dir, name);
    if fd < 0 {
        return false;
    }
    let done = chmod_fd(fd, mode);
    libc::close(fd);
    done
}

/// Set the mode of what `fd` (an `O_PATH` descriptor will do) is.
///
/// # Safety
/// System calls only; `fd` is an open descriptor.
pub(super) unsafe fn chmod_fd(fd: libc::c_int, mode: libc::mode_t) -> bool {
    // `fchmodat2` (Linux 6.6) takes the descriptor itself; `fchmod`
    // refuses an `O_PATH` one, which is the only kind a directory
    // locked with mode 000 can be opened as by its owner.
    if libc::syscall(
        libc::SYS_fchmodat2,
        fd,
        c"".as_ptr(),
        mode,
        libc::AT_EMPTY_PATH,
    ) == 0
    {
        return true;
    }
    // Older kernels: the descriptor's link in /proc leads to that very
    // file, whatever its name is now.
    let mut buf = [0u8; 32];
    let path = fd_path(fd, &mut buf);
    libc::chmod(path.as_ptr(), mode) == 0
}

/// `/proc/self/fd/N` in `buf`, without allocating.
pub(super) fn fd_path(fd: libc::c_int, buf: &mut [u8; 32]) -> &CStr {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let mut n = fd.max(0) as u32;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[PREFIX.len() + i] = digits[len - 1 - i];
    }
    buf[PREFIX.len() + len] = 0;
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/")
}

/// Nesting down to which [`open_up`] opens up directories. Each level
/// keeps a small frame only (its entries are read onto the heap), so a
/// thread with a 64 KiB stack (`beside.rs`) goes this deep.
const OPEN_UP_DEPTH: usize = 64;

/// Give the owner every right on `name` in `dir` and on each directory
/// below it, down to [`OPEN_UP_DEPTH`], never through a symlink, so that
/// it can be removed: overlayfs makes its work directories with mode
/// 000, and a command may lock what it leaves. Not for the clearing
/// helper: it allocates.
fn open_up_at(dir: &OwnedFd, name: &CStr, depth: usize) {
    // SAFETY: an open directory and a NUL-terminated name.
    let fd = unsafe { open_path_dir_at(dir.as_raw_fd(), name) };
    if fd < 0 {
        return;
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an open descriptor.
    unsafe { chmod_fd(fd.as_raw_fd(), 0o700) };
    // The same directory, now readable: reopened from its descriptor,
    // not by its name, which may lead elsewhere by now.
    let Ok(sub) = open_dir(&fd, c".") else {
        return;
    };
    if depth < OPEN_UP_DEPTH {
        for (n, kind) in entries(&sub).unwrap_or_default() {
            if matches!(kind, libc::DT_DIR | libc::DT_UNKNOWN) {
                open_up_at(&sub, &n, depth + 1);
            }
        }
    }
}

/// [`open_up_at`] for `path`, whose parent is sbx's own (a temp
/// directory's parent, the caches' directory): only `path`'s last
/// name and what lies below it are taken as the command may have left
/// them.
pub(super) fn open_up(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(name) = CString::new(name.as_bytes()) else {
        return;
    };
    // The parent is opened by path: it is sbx's own.
    if let Ok(dir) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
        .open(parent)
    {
        open_up_at(&dir.into(), &name, 0);
    }
}

/// [`open_dir_at`], owned.
pub(super) fn open_dir(dir: &OwnedFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: an open directory and a NUL-terminated name.
    let fd = unsafe { open_dir_at(dir.as_raw_fd(), name) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The entries of the directory `dir` (but `.` and `..`), each with its
/// `d_type`.
pub(super) fn entries(dir: &OwnedFd) -> io::Result<Vec<(CString, u8)>> {
    let mut out = Vec::new();
    // SAFETY: an open directory; the closure only copies.
    let whole = unsafe {
        each_entry(dir.as_raw_fd(), &mut |n, kind| {
            out.push((n.to_owned(), kind))
        })
    };
    if !whole {
        return Err(io::Error::last_os_error());
    }
    Ok(out)
}

pub(super) use super::beneath::fstat;

/// What `st` describes is a directory.
pub(super) fn is_dir(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// `fstatat` of `name` in `dir`, not following a symlink.
pub(super) fn lstat_at(dir: &OwnedFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: an open directory, a NUL-terminated name and a zeroed
    // stat buffer filled by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }
}

/// Remove `name` in `dir` (not followed: a symlink is removed as
/// itself); EISDIR for a directory.
pub(super) fn unlink_at(dir: &OwnedFd, name: &CStr) -> io::Result<()> {
    // SAFETY: an open directory and a NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `name` in `dir` as a path that leads to it whatever is renamed
/// meanwhile above it: `/proc/self/fd/DIR/NAME`, for std's functions
/// that take a path and follow no symlink at its last name.
pub(super) fn anchored(dir: &OwnedFd, name: &CStr) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = [0u8; 32];
    let at = fd_path(dir.as_raw_fd(), &mut buf);
    Path::new(std::ffi::OsStr::from_bytes(at.to_bytes()))
        .join(std::ffi::OsStr::from_bytes(name.to_bytes()))
}

/// Remove `name` in `dir` and all below it, opening up what is locked
/// (`temp::remove_tree`), never through a symlink.
pub(super) fn remove_tree_at(dir: &OwnedFd, name: &CStr) -> io::Result<()> {
    // std's remove_dir_all opens each level with O_NOFOLLOW, relative to
    // the one above; only the anchor's magic link is followed.
    super::temp::remove_tree(&anchored(dir, name))
}

#[cfg(test)]
pub(super) mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// Until `stop`, swap the directory `dir` for a symlink to `target`
    /// and back, as a command racing sbx would.
    pub(in crate::runtime::linux) fn swap_for_symlink(
        stop: &std::sync::atomic::AtomicBool,
        dir: &Path,
        target: &Path,
    ) {
        let aside = dir.with_file_name("aside");
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if std::fs::rename(dir, &aside).is_ok() {
                let _ = std::os::unix::fs::symlink(target, dir);
                std::thread::yield_now();
                let _ = std::fs::remove_file(dir);
                let _ = std::fs::rename(&aside, dir);
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn chmod(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    /// Locked directories are opened up; what a symlink leads to, file or
    /// directory, keeps its mode, and nothing is followed into it.
    #[test]
    fn open_up_opens_locked_directories_and_follows_no_symlink() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("tree");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::create_dir_all(outside.join("inner")).unwrap();
        std::fs::write(outside.join("file"), "x").unwrap();
        chmod(&outside.join("file"), 0o600);
        chmod(&outside.join("inner"), 0o555);
        chmod(&outside, 0o750);
        std::os::unix::fs::symlink(&outside, tree.join("a/to_dir")).unwrap();
        std::os::unix::fs::symlink(outside.join("file"), tree.join("to_file")).unwrap();
        chmod(&tree.join("a/b"), 0o000);
        chmod(&tree.join("a"), 0o000);
        super::open_up(&tree);
        assert_eq!(mode(&tree.join("a")), 0o700);
        assert_eq!(mode(&tree.join("a/b")), 0o700);
        assert_eq!(mode(&outside), 0o750);
        assert_eq!(mode(&outside.join("inner")), 0o555);
        assert_eq!(mode(&outside.join("file")), 0o600);
        // The tree itself as a symlink: nothing changes either.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        super::open_up(&link);
        assert_eq!(mode(&outside), 0o750);
        assert_eq!(mode(&outside.join("inner")), 0o555);
    }

    /// A directory of the tree swapped for a symlink while it is opened
    /// up (a run of the same key writing its cache while `sbx caches
    /// clear` removes it): what the symlink leads to keeps its mode.
    #[test]
    fn a_directory_swapped_for_a_symlink_while_opening_up_steers_nothing() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::create_dir_all(victim.join("inner")).unwrap();
        for round in 0..400 {
            chmod(&victim, 0o750);
            chmod(&victim.join("inner"), 0o750);
            let tree = t.path().join("tree");
            let d = tree.join("d");
            std::fs::create_dir_all(d.join("inner")).unwrap();
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                s.spawn(|| swap_for_symlink(&stop, &d, &victim));
                for _ in 0..32 {
                    super::open_up(&tree);
                }
                stop.store(true, Ordering::Relaxed);
            });
            assert_eq!(mode(&victim), 0o750, "round {round}");
            assert_eq!(mode(&victim.join("inner")), 0o750, "round {round}");
            std::fs::remove_dir_all(&tree).unwrap();
        }
    }

    /// A tree locked [`super::OPEN_UP_DEPTH`] levels deep is opened up
    /// whole on a thread with the 64 KiB stack of the thread that
    /// removes caches set aside (`beside.rs`).
    #[test]
    fn open_up_goes_deep_on_a_small_stack() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("tree");
        let mut deepest = tree.clone();
        for _ in 0..super::OPEN_UP_DEPTH {
            deepest.push("d");
        }
        std::fs::create_dir_all(&deepest).unwrap();
        let mut p = deepest.clone();
        while p != t.path() {
            chmod(&p, 0o000);
            p.pop();
        }
        let tree2 = tree.clone();
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || super::open_up(&tree2))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(mode(&tree), 0o700);
        assert_eq!(mode(&deepest), 0o700);
    }

    /// Both ways of setting a mode through a descriptor work, on a
    /// directory opened `O_PATH`.
    #[test]
    fn chmod_through_the_descriptor() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        std::fs::create_dir(&d).unwrap();
        chmod(&d, 0o000);
        let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; the descriptor is closed here.
        unsafe {
            assert!(super::chmod_dir_at(libc::AT_FDCWD, &c, 0o711));
            assert_eq!(mode(&d), 0o711);
            let fd = libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            assert!(fd >= 0);
            // The /proc way alone, as on kernels before fchmodat2.
            let mut buf = [0u8; 32];
            let p = super::fd_path(fd, &mut buf);
            assert_eq!(libc::chmod(p.as_ptr(), 0o700), 0);
            assert_eq!(mode(&d), 0o700);
            assert!(super::chmod_fd(fd, 0o755));
            assert_eq!(mode(&d), 0o755);
            libc::close(fd);
            // A symlink is refused, and its target keeps its mode.
            let link = t.path().join("link");
            std::os::unix::fs::symlink(&d, &link).unwrap();
            let l = std::ffi::CString::new(link.as_os_str().as_encoded_bytes()).unwrap();
            assert!(!super::chmod_dir_at(libc::AT_FDCWD, &l, 0o700));
            assert_eq!(mode(&d), 0o755);
        }
    }
}
