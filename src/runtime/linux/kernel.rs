//! The Landlock ruleset, built in the parent (before fork) with the
//! `landlock` crate; the child only calls `landlock_restrict_self` on the
//! resulting descriptor, which allocates nothing.

use super::plan::{Opened, Plan};
use landlock::{
    AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// The running kernel's Landlock ABI; 0 when Landlock is not built in or
/// not enabled at boot.
pub fn kernel_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: NULL attr, size 0.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).unwrap_or(0)
}

/// Open a rule's path the way Landlock wants it: `O_PATH`, close-on-exec,
/// and through no symlink (ELOOP when one is met: the caller resolves
/// the path and checks where it leads, then opens the result). The rule
/// then applies to what was checked, whatever is renamed or swapped
/// after the open.
///
/// Not through `OpenOptions`: musl's `O_ACCMODE` includes `O_PATH` (as
/// `O_SEARCH`), so std masks it out of the custom flags there, and the path
/// would be opened for reading: a FIFO would block, `/dev/tty` without a
/// terminal would fail, a device's open would run.
pub fn open_path(path: &str) -> io::Result<Opened<File>> {
    let c = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let f = match openat2_no_symlinks(&c) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS | libc::EPERM | libc::E2BIG)
            ) =>
        {
            open_nofollow_checked(&c, path)?
        }
        r => r?,
    };
    let is_dir = f.metadata()?.is_dir();
    Ok(Opened { handle: f, is_dir })
}

/// `openat2(RESOLVE_NO_SYMLINKS)`: the kernel refuses any symlink on the
/// way in the same walk that opens (Linux 5.6).
/// `openat2`'s `resolve` flags (linux/openat2.h).
pub(super) const RESOLVE_NO_XDEV: u64 = 0x01;
pub(super) const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
pub(super) const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub(super) const RESOLVE_BENEATH: u64 = 0x08;

fn openat2_no_symlinks(c: &CString) -> io::Result<File> {
    openat2(libc::AT_FDCWD, c, libc::O_PATH, RESOLVE_NO_SYMLINKS).map(File::from)
}

/// `openat2` relative to `dir` with `flags` (close-on-exec added) and the
/// `resolve` restrictions.
pub(super) fn openat2(
    dir: std::os::fd::RawFd,
    path: &std::ffi::CStr,
    flags: i32,
    resolve: u64,
) -> io::Result<OwnedFd> {
    // struct open_how { u64 flags; u64 mode; u64 resolve; }
    let how: [u64; 3] = [(flags | libc::O_CLOEXEC) as u64, 0, resolve];
    // SAFETY: a NUL-terminated path and a properly sized open_how.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            how.as_ptr(),
            std::mem::size_of_val(&how),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Without `openat2`: open without following a final symlink, then ask
/// the kernel which path the descriptor has. Any symlink followed on the
/// way makes it differ from `path` (which is absolute and normalised).
pub(super) fn open_nofollow_checked(c: &CString, path: &str) -> io::Result<File> {
    // SAFETY: a NUL-terminated path; the descriptor is owned from here on.
    let fd = unsafe {
        libc::openat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let f = unsafe { File::from_raw_fd(fd) };
    let real = std::fs::read_link(format!("/proc/self/fd/{fd}"))?;
    let is_link = f.metadata()?.file_type().is_symlink();
    if is_link || real.as_os_str() != std::ffi::OsStr::new(path) {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    Ok(f)
}

/// The canonical form of `path` (every symlink resolved), for a rule
/// whose path has a symlink on the way.
pub fn realpath(path: &str) -> Option<String> {
    crate::canonical::canonicalize(path)
        .ok()
        .and_then(|p| p.to_str().map(String::from))
}

/// Create the ruleset and add every rule. Rights were already trimmed to
/// the ABI in use, so a hard requirement catches any mismatch instead of
/// silently dropping rights.
/// `extra`: more (handle, rights) rules, for paths that stand in for a
/// rule's own (the run's private temp directories).
pub fn create(plan: &Plan<File>, extra: &[(&File, u64)]) -> Result<Option<OwnedFd>, String> {
    if plan.abi == 0 {
        return Ok(None);
    }
    let err = |what: &str, e: &dyn std::fmt::Display| format!("landlock: {what}: {e}");
    let fs = BitFlags::<AccessFs>::from_bits(plan.handled_fs.0)
        .map_err(|_| "landlock: unknown filesystem right".to_string())?;
    let net = BitFlags::<AccessNet>::from_bits(plan.handled_net)
        .map_err(|_| "landlock: unknown network right".to_string())?;
    let scopes = BitFlags::<Scope>::from_bits(plan.scoped)
        .map_err(|_| "landlock: unknown scope".to_string())?;

    let mut rs = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    if !fs.is_empty() {
        rs = rs.handle_access(fs).map_err(|e| err("handle fs", &e))?;
    }
    if !net.is_empty() {
        rs = rs.handle_access(net).map_err(|e| err("handle net", &e))?;
    }
    if !scopes.is_empty() {
        rs = rs.scope(scopes).map_err(|e| err("scope", &e))?;
    }
    let mut created = rs.create().map_err(|e| err("create ruleset", &e))?;
    for r in &plan.rules {
        let access = BitFlags::<AccessFs>::from_bits(r.rights.0)
            .map_err(|_| "landlock: unknown filesystem right".to_string())?;
        created = created
            .add_rule(PathBeneath::new(&r.handle, access))
            .map_err(|e| err(&r.path, &e))?;
    }
    for (handle, rights) in extra {
        let access = BitFlags::<AccessFs>::from_bits(*rights)
            .map_err(|_| "landlock: unknown filesystem right".to_string())?;
        created = created
            .add_rule(PathBeneath::new(*handle, access))
            .map_err(|e| err("the run's temp directory", &e))?;
    }
    for (port, bits) in &plan.ports {
        let access = BitFlags::<AccessNet>::from_bits(*bits)
            .map_err(|_| "landlock: unknown network right".to_string())?;
        if !access.is_empty() {
            created = created
                .add_rule(NetPort::new(*port, access))
                .map_err(|e| err(&format!("port {port}"), &e))?;
        }
    }
    Ok(created.into())
}

/// `renameat2(RENAME_NOREPLACE)` of `from` to `to`, both relative to
/// `dir`: never overwrites anything.
pub fn rename_noreplace(
    dir: std::os::fd::BorrowedFd<'_>,
    from: &std::ffi::CStr,
    to: &std::ffi::CStr,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    renameat_noreplace(dir.as_raw_fd(), from, dir.as_raw_fd(), to)
}

/// [`rename_noreplace`] of `from` in `from_dir` to `to` in `to_dir`.
pub fn rename_noreplace_at(
    from_dir: std::os::fd::BorrowedFd<'_>,
    from: &std::ffi::CStr,
    to_dir: std::os::fd::BorrowedFd<'_>,
    to: &std::ffi::CStr,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    renameat_noreplace(from_dir.as_raw_fd(), from, to_dir.as_raw_fd(), to)
}

/// `renameat2(RENAME_NOREPLACE)` as a raw system call: the static musl
/// build's C library has no wrapper for it.
fn renameat_noreplace(
    from_dir: std::os::fd::RawFd,
    from: &std::ffi::CStr,
    to_dir: std::os::fd::RawFd,
    to: &std::ffi::CStr,
) -> io::Result<()> {
    // SAFETY: directory descriptors (or AT_FDCWD) and NUL-terminated names.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            from_dir,
            from.as_ptr(),
            to_dir,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An open-file-description lock on `f`'s first byte: taken (`true`)
/// or let go (`false`), never waiting. It lives with the open file
/// description, as `flock` does, so a copy of the descriptor (the
/// guardian's) shares it, and it goes when the last copy is closed.
pub fn first_byte_lock(f: &File, take: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut l = first_byte(if take { libc::F_WRLCK } else { libc::F_UNLCK });
    // SAFETY: fcntl with a valid flock struct on a descriptor we own.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &mut l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether some open file description holds [`first_byte_lock`] (a
/// write lock) on the file `f` is open on (`f`'s own not counted). Asked
/// as for a read lock, which only a write lock conflicts with: a read
/// lock, which anyone who can read the file may take, does not count.
pub fn first_byte_locked(f: &File) -> bool {
    use std::os::fd::AsRawFd;
    let mut l = first_byte(libc::F_RDLCK);
    // SAFETY: as above; F_OFD_GETLK fills `l`.
    unsafe {
        libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut l) == 0
            && l.l_type == libc::F_WRLCK as i16
    }
}

fn first_byte(kind: libc::c_int) -> libc::flock {
    // SAFETY: an all-zero flock is a valid value, filled in below.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind as i16;
    l.l_whence = libc::SEEK_SET as i16;
    l.l_start = 0;
    l.l_len = 1;
    l
}

/// An open-file-description lock on `f`'s first byte, a write lock
/// (`write`) or a read lock, waiting at most `wait` for it: false where
/// it could not be had by then. Polled, so that nothing another process
/// holds can keep the caller for longer. A write lock takes a descriptor
/// open for writing: one open only for reading can hold read locks,
/// never the write lock.
pub fn ofd_lock_within(f: &File, write: bool, wait: std::time::Duration) -> bool {
    use std::os::fd::AsRawFd;
    let until = std::time::Instant::now() + wait;
    loop {
        let mut l = first_byte(if write { libc::F_WRLCK } else { libc::F_RDLCK });
        // SAFETY: fcntl with a valid flock struct on a descriptor we own.
        if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &mut l) } == 0 {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// An exclusive `flock` on `f`, waiting for it if `wait`; released when
/// the last descriptor of its open file closes.
pub fn flock(f: &File, wait: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), op) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
