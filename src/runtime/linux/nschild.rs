//! The child side of the namespace layer: system calls only, on data
//! the parent prepared (the same rules as `child.rs`: no allocation, no
//! locks, nothing written outside the stack and the `Pids` cell).
//!
//! The parent clones a setup process into new user (unprivileged only),
//! mount and network namespaces. It writes its id maps, makes the
//! mounts, brings `lo` up, binds the proxy's listeners, then unshares
//! the PID namespace and clones two processes *as the parent's
//! children* (`CLONE_PARENT`): an init (PID 1, which only reaps) and the
//! command (PID 2), and exits. The command is then sbx's own child, so
//! waiting, job control and the terminal work as without namespaces;
//! when sbx kills the init at the end, the kernel kills every process
//! left in the namespace.

use super::child::{self, Prepared, Step};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

// linux/mount.h
const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
pub(super) const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
pub(super) const MOUNT_ATTR_RDONLY: u64 = 0x01;
pub(super) const MOUNT_ATTR_NOSUID: u64 = 0x02;
pub(super) const MOUNT_ATTR_NODEV: u64 = 0x04;
pub(super) const MOUNT_ATTR_NOEXEC: u64 = 0x08;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_FLAG: libc::c_uint = 0;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
// linux/landlock.h
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
const LANDLOCK_RULE_NET_PORT: libc::c_int = 2;
const LANDLOCK_ACCESS_NET_CONNECT_TCP: u64 = 2;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[repr(C, packed)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// `struct ifreq` with the flags member (40 bytes on 64-bit).
#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// One mount, ready for the child.
pub struct NsMount {
    pub path: CString,
    /// Opened by the parent, through no symlink: the Landlock rules are
    /// attached to what this found. It belongs to the parent's mount
    /// namespace, where no mount can be made, so the child opens `path`
    /// again and mounts only if it finds the same inode.
    pub fd: OwnedFd,
    pub is_dir: bool,
    pub hidden: bool,
    pub read_only: bool,
    pub noexec: bool,
    /// Beneath `/dev` and not hidden: stays a device mount.
    pub dev: bool,
    /// The directory bound onto itself, its flags as they are: it only
    /// stops renames (`pins`).
    pub pin: bool,
    /// Hidden, yet these files of it are shown read-only.
    pub show: Vec<Shown>,
}

/// A file shown in a hidden directory (`NsMount::show`).
pub struct Shown {
    pub path: CString,
    /// Its name in the directory.
    pub name: CString,
    /// Opened by the parent (see `NsMount::fd`).
    pub fd: OwnedFd,
}

/// Everything the setup process needs.
pub struct NsPrep {
    /// `CLONE_NEW*` flags for the setup process.
    pub flags: libc::c_int,
    pub pid: bool,
    /// (setgroups, uid_map, gid_map) contents, for a new user namespace.
    pub maps: Option<[CString; 3]>,
    /// The network namespace (and, with `maps`, the user namespace)
    /// made beside the preparation (`earlyns.rs`): the setup process
    /// joins them rather than making its own.
    pub early: Option<super::earlyns::Made>,
    /// Sorted by path, deepest last (see `mount_all`).
    pub mounts: Vec<NsMount>,
    /// TCP listeners to bind on 127.0.0.1 and send over `sock`, the
    /// first `listeners` of `ports` (0: any port).
    pub listeners: usize,
    pub ports: [u16; MAX_LISTENERS],
    pub sock: Option<OwnedFd>,
    /// The setup process sends its mount namespace over this, so that
    /// sbx, not the init's exit, drops the last reference to it: the
    /// namespace's teardown (unmounting the new root, syncing the
    /// caches' overlay) then runs beside the after-run work
    /// (`start::finish`) instead of before it.
    pub keep: Option<OwnedFd>,
    /// The ruleset handles TCP connect: add the listeners' ports to it.
    pub net_rules: bool,
    /// The relay for clients that ignore the proxy variables: the route,
    /// `resolv.conf` and the DNS responder's socket, sent last.
    pub relay: Option<super::relaynet::RelayPrep>,
    /// The relay's and the loopback forwards' listeners, sent after the
    /// proxy's: the first `bind_count`.
    pub binds: [std::net::SocketAddr; MAX_LISTENERS],
    pub bind_count: usize,
    /// Rules beneath `/proc`, (path, Landlock rights): Landlock rules
    /// belong to inodes, and the fresh `/proc` has new ones, so the
    /// command adds these again once it has mounted it.
    pub proc_rules: Vec<(CString, u64)>,
    /// A new root holding only the granted paths (with the PID
    /// namespace only: it needs the fresh `/proc`).
    pub root: Option<NewRoot>,
}

impl NsPrep {
    /// The path a failed mount named (`SpawnError::at`).
    pub fn failed_path(&self, step: Step, at: Option<usize>) -> Option<String> {
        let at = at?;
        let path = match step {
            Step::Mounts => &self.mounts.get(at)?.path,
            Step::Root => {
                let r = self.root.as_ref()?;
                match r.paths.get(at) {
                    Some(v) => &v.path,
                    None => &r.caches.get(at - r.paths.len())?.data,
                }
            }
            _ => return None,
        };
        Some(path.to_string_lossy().into_owned())
    }
}

/// A path the new root shows: bind-mounted from the host at the same
/// place.
pub struct Visible {
    /// Absolute, and without its leading `/` (relative to the new root).
    pub path: CString,
    pub rel: CString,
    /// Opened by the parent (see `NsMount::fd`).
    pub fd: OwnedFd,
    pub is_dir: bool,
    /// No rule at or above it writes: mounted read-only, so that even
    /// root cannot change modes, owners or times there (Landlock does
    /// not check those).
    pub read_only: bool,
    /// Beneath `/dev`: its device files keep working (every other
    /// mount is `nodev`).
    pub dev: bool,
    /// Beneath another visible path (a writable rule inside a
    /// read-only one): moved onto that path's clone, not into the tmpfs.
    pub nested: bool,
    /// A fresh tmpfs of the run's (`/dev/shm`), not the host's path.
    pub fresh: bool,
    /// In a fresh tmpfs: (relative path, is a directory) to create,
    /// parents first, for the rules mounted beneath it.
    pub stubs: Vec<(CString, bool)>,
}

/// The new root: a tmpfs with empty directories leading to each
/// visible path, the host's top-level symlinks (`/bin`, `/lib64`, …),
/// and a fresh `/proc`.
pub struct NewRoot {
    /// None beneath another (a recursive bind carries what is below).
    pub paths: Vec<Visible>,
    /// Ancestors of the paths, relative, parents first.
    pub dirs: Vec<CString>,
    /// (path, target) of each symlink in the host's `/`, and of each
    /// symlink that led to a rule path.
    pub links: Vec<(CString, CString)>,
    /// Where the tmpfs is attached until the command pivots into it.
    pub attach: CString,
    /// `attach` + `/proc`.
    pub attach_proc: CString,
    /// The directory the command starts in, if it is visible.
    pub cwd: CString,
    /// Clones of `paths`, then the tmpfs: made by the setup process.
    pub trees: Vec<AtomicI32>,
    pub tmpfs: AtomicI32,
    /// A private `devpts` at `dev/pts` (`pts.rs`); `dirs` holds `dev/pts`
    /// and `links` `dev/ptmx`.
    pub pts: bool,
    /// The run's own package caches (`caches.rs`), mounted last.
    pub caches: Vec<super::caches::Mount>,
}

/// The ids the setup process got for its two children, in the
/// parent's PID namespace (written by the setup process, which shares
/// the parent's memory and runs while the parent waits).
#[derive(Default)]
pub struct Pids {
    pub init: AtomicI32,
    pub cmd: AtomicI32,
}

/// At most this many listeners (one control message).
pub const MAX_LISTENERS: usize = super::passfd::MAX_FDS;

pub(super) const PATHS: [&[u8]; 3] = [
    b"/proc/self/setgroups\0",
    b"/proc/self/uid_map\0",
    b"/proc/self/gid_map\0",
];

pub(super) unsafe fn write_file(path: &[u8], data: &CString) -> bool {
    let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let b = data.as_bytes();
    let ok = libc::write(fd, b.as_ptr().cast(), b.len()) == b.len() as isize;
    libc::close(fd);
    ok
}

pub(super) unsafe fn set_attr(fd: RawFd, set: u64) -> bool {
    set_attr_flags(fd, set, 0)
}

/// `set` on the mount at `fd` and every mount beneath it.
unsafe fn set_attr_all(fd: RawFd, set: u64) -> bool {
    set_attr_flags(fd, set, AT_RECURSIVE)
}

unsafe fn set_attr_flags(fd: RawFd, set: u64, flags: libc::c_uint) -> bool {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    libc::syscall(
        libc::SYS_mount_setattr,
        fd,
        c"".as_ptr(),
        libc::AT_EMPTY_PATH as libc::c_uint | flags,
        &attr as *const MountAttr,
        std::mem::size_of::<MountAttr>(),
    ) == 0
}

unsafe fn move_onto(tree: RawFd, target: RawFd) -> bool {
    libc::syscall(
        libc::SYS_move_mount,
        tree,
        c"".as_ptr(),
        target,
        c"".as_ptr(),
        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
    ) == 0
}

pub(super) unsafe fn clone_tree(fd: RawFd, path: &std::ffi::CStr, recursive: bool) -> RawFd {
    let mut flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
    if path.is_empty() {
        flags |= libc::AT_EMPTY_PATH as libc::c_uint;
    }
    if recursive {
        flags |= AT_RECURSIVE;
    }
    libc::syscall(libc::SYS_open_tree, fd, path.as_ptr(), flags) as RawFd
}

/// A detached tmpfs mount with one option set (`key`, `value`) and the
/// given mount attributes, or -1. Allocates nothing (the child calls it).
pub(super) unsafe fn tmpfs(option: (&std::ffi::CStr, &std::ffi::CStr), attrs: u64) -> RawFd {
    new_fs(c"tmpfs", &[(option.0, Some(option.1))], attrs)
}

/// A detached mount of a new `fstype` with these options (a flag when
/// the value is None) and mount attributes, or -1.
pub(super) unsafe fn new_fs(
    fstype: &std::ffi::CStr,
    options: &[(&std::ffi::CStr, Option<&std::ffi::CStr>)],
    attrs: u64,
) -> RawFd {
    let fs = libc::syscall(libc::SYS_fsopen, fstype.as_ptr(), FSOPEN_CLOEXEC) as RawFd;
    if fs < 0 {
        return -1;
    }
    let set = |(key, value): &(&std::ffi::CStr, Option<&std::ffi::CStr>)| {
        let (cmd, value) = match value {
            Some(v) => (FSCONFIG_SET_STRING, v.as_ptr()),
            None => (FSCONFIG_SET_FLAG, std::ptr::null()),
        };
        libc::syscall(libc::SYS_fsconfig, fs, cmd, key.as_ptr(), value, 0) == 0
    };
    let ok = options.iter().all(set)
        && libc::syscall(
            libc::SYS_fsconfig,
            fs,
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_char>(),
            0,
        ) == 0;
    let m = if ok {
        libc::syscall(
            libc::SYS_fsmount,
            fs,
            FSMOUNT_CLOEXEC,
            attrs as libc::c_uint,
        ) as RawFd
    } else {
        -1
    };
    libc::close(fs);
    m
}

/// A fresh tmpfs holding an empty directory `d` and an empty file `f`,
/// both mode 0: what hidden paths are covered with.
unsafe fn empty_tmpfs() -> RawFd {
    let m = tmpfs(
        (c"size", c"4k"),
        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
    );
    if m < 0 {
        return -1;
    }
    if libc::mkdirat(m, c"d".as_ptr(), 0) != 0 {
        libc::close(m);
        return -1;
    }
    let f = libc::openat(
        m,
        c"f".as_ptr(),
        libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
        0,
    );
    if f < 0 {
        libc::close(m);
        return -1;
    }
    libc::close(f);
    m
}

pub(super) use super::kernel::{RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS};

/// [`super::kernel::openat2`] as a raw descriptor, or -1 with errno set:
/// for the setup process, which allocates nothing.
pub(super) unsafe fn open_resolving(
    dir: RawFd,
    path: &std::ffi::CStr,
    flags: libc::c_int,
    resolve: u64,
) -> RawFd {
    use std::os::fd::IntoRawFd;
    super::kernel::openat2(dir, path, flags, resolve).map_or(-1, IntoRawFd::into_raw_fd)
}

/// `m.path` opened again in this mount namespace (O_PATH, through no
/// symlink), or -1 with errno set; EXDEV when it is no longer the file
/// the parent opened (swapped in between: nothing is mounted).
unsafe fn open_same(m: &NsMount) -> RawFd {
    open_same_as(&m.path, m.fd.as_raw_fd())
}

pub(super) unsafe fn open_same_as(path: &std::ffi::CStr, parent_fd: RawFd) -> RawFd {
    let fd = open_resolving(libc::AT_FDCWD, path, libc::O_PATH, RESOLVE_NO_SYMLINKS);
    if fd < 0 {
        return -1;
    }
    let mut a: libc::stat = std::mem::zeroed();
    let mut b: libc::stat = std::mem::zeroed();
    if libc::fstat(fd, &mut a) != 0
        || libc::fstat(parent_fd, &mut b) != 0
        || a.st_dev != b.st_dev
        || a.st_ino != b.st_ino
    {
        libc::close(fd);
        *libc::__errno_location() = libc::EXDEV;
        return -1;
    }
    fd
}

/// Make every mount. Deepest first: a path's mount is made before its
/// ancestors', and an ancestor's clone is recursive, so it carries the
/// mounts already made beneath it. Each target is checked against the
/// descriptor opened before the fork: the mount lands on what Landlock's
/// rules were attached to, or not at all.
unsafe fn mount_all(ns: &NsPrep, wr: RawFd) {
    let mut empty = -1;
    for (i, m) in ns.mounts.iter().enumerate().rev() {
        let failed = || child::fail_at(wr, Step::Mounts, i as i32);
        let target = open_same(m);
        if target < 0 {
            failed();
        }
        let tree = if m.hidden && !m.show.is_empty() {
            if !show_hidden(m, target) {
                failed();
            }
            libc::close(target);
            continue;
        } else if m.hidden {
            if empty < 0 {
                empty = empty_tmpfs();
                if empty < 0 {
                    failed();
                }
            }
            clone_tree(empty, if m.is_dir { c"d" } else { c"f" }, false)
        } else {
            clone_tree(target, c"", true)
        };
        if tree < 0 {
            failed();
        }
        let mut set = MOUNT_ATTR_NOSUID;
        if m.read_only {
            set |= MOUNT_ATTR_RDONLY;
        }
        if m.noexec {
            set |= MOUNT_ATTR_NOEXEC;
        }
        if !m.dev {
            set |= MOUNT_ATTR_NODEV;
        }
        let ok = (m.pin || set_attr(tree, set)) && move_onto(tree, target);
        if !ok {
            failed();
        }
        libc::close(tree);
        libc::close(target);
    }
    if empty >= 0 {
        libc::close(empty);
    }
}

/// A hidden directory that shows `m.show` and nothing else: a fresh
/// tmpfs whose directory (search, no listing) holds a stub per file, on
/// `target`, then each host file bound read-only onto its stub. The
/// files are cloned before the tmpfs covers them.
unsafe fn show_hidden(m: &NsMount, target: RawFd) -> bool {
    const MAX: usize = 4;
    if m.show.len() > MAX {
        return false;
    }
    let mut clones = [-1; MAX];
    let mut ok = true;
    for (i, s) in m.show.iter().enumerate() {
        let f = open_same_as(&s.path, s.fd.as_raw_fd());
        ok = ok && f >= 0;
        if f >= 0 {
            clones[i] = clone_tree(f, c"", false);
            libc::close(f);
            ok = ok
                && clones[i] >= 0
                && set_attr(
                    clones[i],
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                );
        }
    }
    let t = if ok {
        tmpfs(
            (c"size", c"4k"),
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        )
    } else {
        -1
    };
    ok = t >= 0;
    if ok {
        // Only the named files are reached: no listing, no creating.
        for s in &m.show {
            let f = libc::openat(
                t,
                s.name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0o444,
            );
            ok = ok && f >= 0 && libc::close(f) == 0;
        }
        ok = ok
            && libc::fchmodat(t, c".".as_ptr(), 0o111, 0) == 0
            && set_attr(t, MOUNT_ATTR_RDONLY)
            && move_onto(t, target);
    }
    for (i, s) in m.show.iter().enumerate() {
        if !ok {
            break;
        }
        let stub = libc::openat(t, s.name.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        ok = stub >= 0 && move_onto(clones[i], stub);
        if stub >= 0 {
            libc::close(stub);
        }
    }
    for c in clones.into_iter().filter(|&c| c >= 0) {
        libc::close(c);
    }
    if t >= 0 {
        libc::close(t);
    }
    ok
}

/// A fresh tmpfs for `v` (mode 1777, as shared memory is) holding its
/// stubs, or -1.
unsafe fn fresh_tmpfs(v: &Visible) -> RawFd {
    let m = tmpfs((c"mode", c"1777"), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if m < 0 {
        return -1;
    }
    for (rel, is_dir) in &v.stubs {
        let ok = if *is_dir {
            libc::mkdirat(m, rel.as_ptr(), 0o755) == 0 || *libc::__errno_location() == libc::EEXIST
        } else {
            let f = libc::openat(
                m,
                rel.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                0o644,
            );
            f >= 0 && libc::close(f) == 0
        };
        if !ok {
            libc::close(m);
            return -1;
        }
    }
    m
}

/// Clone every visible path (before anything hides them), fill the
/// tmpfs (made by the probe), attach it at `attach`, and put each clone
/// in its place. A failure on one path names it; the rest are the
/// root's own.
unsafe fn build_root(r: &NewRoot, wr: RawFd) {
    let failed = |i: usize| child::fail_at(wr, Step::Root, i as i32);
    for (i, (v, slot)) in r.paths.iter().zip(&r.trees).enumerate() {
        let tree = if v.fresh {
            fresh_tmpfs(v)
        } else {
            let fd = open_same_as(&v.path, v.fd.as_raw_fd());
            if fd < 0 {
                failed(i);
            }
            let tree = clone_tree(fd, c"", true);
            libc::close(fd);
            tree
        };
        if tree < 0 {
            failed(i);
        }
        slot.store(tree, Ordering::SeqCst);
        // Recursive: the host's own mounts beneath the path too. Set in
        // one call, before the clone is attached anywhere.
        let mut set = MOUNT_ATTR_NOSUID;
        if !v.dev {
            set |= MOUNT_ATTR_NODEV;
        }
        if v.read_only {
            set |= MOUNT_ATTR_RDONLY;
        }
        if !set_attr_all(tree, set) {
            failed(i);
        }
    }
    // Every path is cloned: what is mounted in the host's tree from now
    // on reaches none of the clones.
    super::caches::leave_home_overlays(&r.caches, &r.attach);
    let t = r.tmpfs.load(Ordering::SeqCst);
    let broken = || child::fail(wr, Step::Root);
    // Everything is created in the fresh tmpfs before any bind mount is
    // moved into it, and no path created passes through a symlink (the
    // parent made sure): nothing can land on the host.
    let exists = || *libc::__errno_location() == libc::EEXIST;
    for d in &r.dirs {
        if libc::mkdirat(t, d.as_ptr(), 0o755) != 0 && !exists() {
            broken();
        }
    }
    for (name, target) in &r.links {
        libc::symlinkat(target.as_ptr(), t, name.as_ptr());
    }
    if libc::mkdirat(t, c"proc".as_ptr(), 0o555) != 0 && !exists() {
        broken();
    }
    for (i, v) in r.paths.iter().enumerate().filter(|(_, v)| !v.nested) {
        if v.is_dir {
            if libc::mkdirat(t, v.rel.as_ptr(), 0o755) != 0 && !exists() {
                failed(i);
            }
        } else {
            let f = libc::openat(
                t,
                v.rel.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                0o644,
            );
            if f < 0 {
                failed(i);
            }
            libc::close(f);
        }
    }
    if libc::syscall(
        libc::SYS_move_mount,
        t,
        c"".as_ptr(),
        libc::AT_FDCWD,
        r.attach.as_ptr(),
        MOVE_MOUNT_F_EMPTY_PATH,
    ) != 0
    {
        broken();
    }
    for (i, (v, slot)) in r.paths.iter().zip(&r.trees).enumerate() {
        let tree = slot.load(Ordering::SeqCst);
        let ok = libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            t,
            v.rel.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ) == 0;
        if !ok {
            failed(i);
        }
        libc::close(tree);
    }
    // Over the host's paths: a cache may lie beneath one of them.
    for (i, c) in r.caches.iter().enumerate() {
        let tree = c.tree.load(Ordering::SeqCst);
        if tree < 0
            || libc::syscall(
                libc::SYS_move_mount,
                tree,
                c"".as_ptr(),
                t,
                c.rel.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            ) != 0
        {
            failed(r.paths.len() + i);
        }
        libc::close(tree);
    }
    if r.pts {
        private_pts(t);
    }
}

/// A private `devpts` instance on `dev/pts` in the new root (`t`): its
/// own `ptmx` (mode 0666: no group option, since the `tty` group is not
/// mapped in the user namespace) and numbering, none of the host's
/// terminals. Best effort: where the kernel refuses it the command runs
/// without pseudo-terminals, as it did before there were any.
unsafe fn private_pts(t: RawFd) {
    let m = new_fs(
        c"devpts",
        &[(c"newinstance", None), (c"ptmxmode", Some(c"0666"))],
        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
    );
    if m < 0 {
        return;
    }
    libc::syscall(
        libc::SYS_move_mount,
        m,
        c"".as_ptr(),
        t,
        c"dev/pts".as_ptr(),
        MOVE_MOUNT_F_EMPTY_PATH,
    );
    libc::close(m);
}

/// In the command (PID 2, in the new PID namespace): a fresh `/proc` in
/// the new root, then the new root becomes `/` (the host's is detached),
/// read-only at its top.
unsafe fn enter_root(r: &NewRoot) -> bool {
    if libc::mount(
        c"proc".as_ptr(),
        r.attach_proc.as_ptr(),
        c"proc".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        std::ptr::null(),
    ) != 0
    {
        return false;
    }
    let t = r.tmpfs.load(Ordering::SeqCst);
    if libc::fchdir(t) != 0
        || libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) != 0
        || libc::umount2(c".".as_ptr(), libc::MNT_DETACH) != 0
        || libc::chdir(c"/".as_ptr()) != 0
    {
        return false;
    }
    let root = libc::open(c"/".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
    if root < 0
        || !set_attr(
            root,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        )
    {
        return false;
    }
    libc::close(root);
    // Not visible: the command starts at `/`.
    libc::chdir(r.cwd.as_ptr());
    true
}

/// `lo` up (a new network namespace has it down). System calls only.
pub(super) unsafe fn loopback_up() -> bool {
    let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return false;
    }
    let mut req = IfReq {
        name: [0; 16],
        flags: 0,
        _pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    // The request is an int in musl, an unsigned long in glibc.
    #[allow(clippy::unnecessary_cast)]
    let (get, set) = (libc::SIOCGIFFLAGS as _, libc::SIOCSIFFLAGS as _);
    let ok = libc::ioctl(s, get, &mut req as *mut IfReq) == 0 && {
        req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        libc::ioctl(s, set, &req as *const IfReq) == 0
    };
    libc::close(s);
    ok
}

/// Bind the listeners, let the sandbox connect to their ports, and send
/// them to the parent (one `SCM_RIGHTS` message).
unsafe fn listeners(ns: &NsPrep, ruleset: Option<RawFd>) -> bool {
    let n = ns.listeners.min(MAX_LISTENERS);
    let Some(sock) = &ns.sock else {
        return n == 0;
    };
    let extra = ns.bind_count;
    // The proxy's on 127.0.0.1, then the relay's and the forwards', then
    // the DNS responder's socket.
    let total = (n + extra).min(MAX_LISTENERS);
    let mut fds = [-1 as RawFd; MAX_LISTENERS + 1];
    for (i, slot) in fds.iter_mut().take(total).enumerate() {
        let at = if i < n {
            std::net::SocketAddr::from(([127, 0, 0, 1], ns.ports[i]))
        } else {
            ns.binds[i - n]
        };
        let (addr, len) = sockaddr(&at);
        let family = if at.is_ipv6() {
            libc::AF_INET6
        } else {
            libc::AF_INET
        };
        let s = libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return false;
        }
        *slot = s;
        // `[::]` for IPv6 only: the relay's `0.0.0.0` listener holds the
        // same port for IPv4.
        let one: libc::c_int = 1;
        if at.is_ipv6()
            && libc::setsockopt(
                s,
                libc::IPPROTO_IPV6,
                libc::IPV6_V6ONLY,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) != 0
        {
            return false;
        }
        if libc::bind(s, (&addr as *const libc::sockaddr_storage).cast(), len) != 0
            || libc::listen(s, 128) != 0
        {
            return false;
        }
        // The port the kernel gave (asked for 0: any), at the same place
        // in both families.
        let mut got: libc::sockaddr_storage = std::mem::zeroed();
        let mut glen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        if libc::getsockname(
            s,
            (&mut got as *mut libc::sockaddr_storage).cast(),
            &mut glen,
        ) != 0
        {
            return false;
        }
        let got = &*(&got as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
        let port = u16::from_be(got.sin_port);
        if let (Some(rs), true) = (ruleset, ns.net_rules) {
            let rule = NetPortAttr {
                allowed_access: LANDLOCK_ACCESS_NET_CONNECT_TCP,
                port: u64::from(port),
            };
            if libc::syscall(
                libc::SYS_landlock_add_rule,
                rs,
                LANDLOCK_RULE_NET_PORT,
                &rule as *const NetPortAttr,
                0u32,
            ) != 0
            {
                return false;
            }
        }
    }
    let mut sent = total;
    if ns.relay.is_some() {
        fds[total] = super::relaynet::dns_socket();
        if fds[total] < 0 {
            return false;
        }
        sent += 1;
    }
    let ok = super::passfd::send(sock.as_raw_fd(), &fds[..sent]);
    for fd in fds.iter().take(sent) {
        libc::close(*fd);
    }
    ok
}

/// `at` as the kernel takes it; nothing allocated.
fn sockaddr(at: &std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: plain-old-data.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match at {
        std::net::SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage has room and alignment for it.
            let sin = unsafe {
                &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>()
            };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from_ne_bytes(a.ip().octets());
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(a) => {
            // SAFETY: as above.
            let sin6 = unsafe {
                &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// `LANDLOCK_ACCESS_FS_READ_FILE`.
const LANDLOCK_ACCESS_FS_READ_FILE: u64 = 1 << 2;

/// Let the sandbox read the file at `path` (best effort).
unsafe fn grant_read(ruleset: RawFd, path: *const libc::c_char) {
    let fd = libc::open(path, libc::O_PATH | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let rule = PathBeneathAttr {
        allowed_access: LANDLOCK_ACCESS_FS_READ_FILE,
        parent_fd: fd,
    };
    libc::syscall(
        libc::SYS_landlock_add_rule,
        ruleset,
        LANDLOCK_RULE_PATH_BENEATH,
        &rule as *const PathBeneathAttr,
        0u32,
    );
    libc::close(fd);
}

pub struct SetupArgs<'a> {
    pub p: &'a Prepared,
    pub ns: &'a NsPrep,
    pub wr: RawFd,
    pub pids: &'a Pids,
    pub init_stack: *mut libc::c_void,
    pub cmd_stack: *mut libc::c_void,
    /// A pidfd of sbx (-1: none), for the init to see that sbx died
    /// before it could ask to die with it.
    pub sbx: RawFd,
}

/// The setup process: entered with every signal blocked, in the new
/// namespaces, sharing the parent's memory until it exits.
pub unsafe fn setup(a: &SetupArgs) -> ! {
    let ns = a.ns;
    if let Some(early) = &ns.early {
        // Cloned in sbx's namespaces: the user namespace first, so that
        // the mount namespace made next belongs to it, as a clone with
        // every flag would have it.
        if let Some(user) = &early.user {
            if libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) != 0 {
                child::fail(a.wr, Step::Namespaces);
            }
        }
        if ns.flags & libc::CLONE_NEWNS != 0 && libc::unshare(libc::CLONE_NEWNS) != 0 {
            child::fail(a.wr, Step::Namespaces);
        }
        if libc::setns(early.net.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
            child::fail(a.wr, Step::Namespaces);
        }
    } else if let Some(maps) = &ns.maps {
        for (path, data) in PATHS.iter().zip(maps.iter()) {
            if !write_file(path, data) {
                child::fail(a.wr, Step::UserNamespace);
            }
        }
    }
    if let Some(keep) = &ns.keep {
        // Not sent (a host without this file): the init's exit tears
        // the namespace down, as it would anyway.
        let fd = libc::open(
            c"/proc/self/ns/mnt".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd >= 0 {
            super::passfd::send(keep.as_raw_fd(), &[fd]);
            libc::close(fd);
        }
    }
    if ns.flags & libc::CLONE_NEWNS != 0 {
        // The first mount decides whether this host gives namespaces
        // (an LSM may let the user namespace be made and refuse every
        // mount in it): a fresh tmpfs, which no path the child can
        // reach takes part in. It becomes the new root, if any.
        let probe = tmpfs((c"mode", c"0755"), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        if probe < 0 {
            child::fail(a.wr, Step::Probe);
        }
        match &ns.root {
            Some(r) => r.tmpfs.store(probe, Ordering::SeqCst),
            None => {
                libc::close(probe);
            }
        }
        // Nothing mounted here may reach the parent's namespace.
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) != 0
        {
            child::fail(a.wr, Step::Mounts);
        }
        // The caches' private directories lie in sbx's state
        // directory, which the mounts below may make read-only: each
        // cache is mounted (detached) first.
        if let Some(r) = &ns.root {
            if !super::caches::detach_all(&r.caches) {
                child::fail_at(a.wr, Step::Root, r.paths.len() as i32);
            }
        }
        mount_all(ns, a.wr);
    }
    if let Some(root) = &ns.root {
        build_root(root, a.wr);
    }
    // `lo` only for the proxy's listeners: without them the policy has
    // no network, so Landlock refuses every TCP bind and connect and
    // seccomp every other socket but UNIX ones; bringing it up (IPv6
    // address configuration included) would cost about 1 ms of CPU
    // time for nothing.
    // The helper that made the namespace beside the preparation may
    // have brought it up already (`earlyns.rs`).
    let lo_up = ns.early.as_ref().is_some_and(|e| e.lo_up);
    if ns.flags & libc::CLONE_NEWNET != 0 && ns.listeners > 0 && !lo_up && !loopback_up() {
        child::fail(a.wr, Step::Loopback);
    }
    if let Some(r) = &ns.relay {
        if !super::relaynet::local_route() || (r.ipv6 && !super::relaynet::local_route6()) {
            child::fail(a.wr, Step::Loopback);
        }
        // Without a file to mount over, the command keeps the host's
        // resolver configuration, which reaches nothing from here.
        if super::relaynet::mount_resolv(r) {
            // Readable wherever it lies: no rule of the policy need
            // cover a file created for it in `/run` (it holds one line).
            if let Some(rs) = &a.p.ruleset {
                grant_read(rs.as_raw_fd(), r.resolv_at.as_ptr());
            }
        } else {
            let m: &[u8] = b"sbx: warning: no generated resolv.conf in the sandbox: the file \
                /etc/resolv.conf leads to could not be made in the new root (grant its \
                directory); clients that ignore the proxy variables cannot resolve names\n";
            libc::write(2, m.as_ptr().cast(), m.len());
        }
    }
    if !listeners(ns, a.p.ruleset.as_ref().map(|f| f.as_raw_fd())) {
        child::fail(a.wr, Step::Listeners);
    }
    #[cfg(feature = "test-hooks")]
    test_pause();
    if ns.pid {
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            child::fail(a.wr, Step::PidNamespace);
        }
        // The first process in the new namespace is its init.
        let init = libc::clone(
            init_main,
            a.init_stack,
            libc::CLONE_PARENT | libc::CLONE_VM | libc::SIGCHLD,
            a.sbx as isize as *mut libc::c_void,
        );
        if init < 0 {
            child::fail(a.wr, Step::PidNamespace);
        }
        a.pids.init.store(init, Ordering::SeqCst);
    }
    // Not CLONE_VFORK: this process ends now, and sbx, which waits for
    // it, goes on to wait on the pipe, whose last end the command's
    // `execve` closes (or its exit). One wake-up between the command's
    // `execve` and sbx, not two (this process's, then sbx's).
    let cmd = libc::clone(
        cmd_main,
        a.cmd_stack,
        libc::CLONE_PARENT | libc::CLONE_VM | libc::SIGCHLD,
        a as *const SetupArgs as *mut libc::c_void,
    );
    if cmd < 0 {
        child::fail(a.wr, Step::PidNamespace);
    }
    a.pids.cmd.store(cmd, Ordering::SeqCst);
    libc::_exit(0)
}

/// Tests only (Cargo.toml, `test-hooks`): how long the set-up waits
/// (`SBX_TEST_SETUP_PAUSE_MS`, read by sbx before the clone): the setup
/// process before it makes the PID namespace, the command without
/// namespaces before it asks to die with sbx. A test kills sbx there.
#[cfg(feature = "test-hooks")]
pub static PAUSE_MS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The wait of [`PAUSE_MS`]: a system call, no allocation.
#[cfg(feature = "test-hooks")]
pub(super) unsafe fn test_pause() {
    let ms = PAUSE_MS.load(Ordering::SeqCst);
    if ms > 0 {
        // Said, so that the test kills sbx while this waits.
        let m = b"sbx: test: the set-up waits\n";
        libc::write(2, m.as_ptr().cast(), m.len());
        let t = libc::timespec {
            tv_sec: libc::time_t::from(ms / 1000),
            tv_nsec: libc::c_long::from(ms % 1000) * 1_000_000,
        };
        libc::nanosleep(&t, std::ptr::null_mut());
    }
}

/// PID 1: reaps whatever is reparented to it, and dies with sbx (which
/// kills it when the command exits; the kernel then kills the rest).
extern "C" fn init_main(sbx: *mut libc::c_void) -> libc::c_int {
    // SAFETY: system calls on this stack only.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // sbx killed before that call (during the set-up, whose process
        // goes on without it) sends no signal: a pidfd of sbx that is
        // readable says it has exited. Ending here ends the namespace,
        // the command with it. (Its parent is outside this namespace:
        // `getppid` says 0 whether or not sbx lives.)
        let sbx = sbx as isize as RawFd;
        if sbx >= 0 {
            let mut p = libc::pollfd {
                fd: sbx,
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut p, 1, 0) == 1 && p.revents & libc::POLLIN != 0 {
                libc::_exit(0);
            }
        }
        // Its memory is sbx's: nothing in the sandbox may read it.
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        loop {
            while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG | libc::__WALL) > 0 {}
            // SIGCHLD is blocked, so it stays pending until taken here.
            libc::sigwaitinfo(&set, std::ptr::null_mut());
        }
    }
}

/// PID 2: a fresh `/proc` for the new PID namespace, then the usual
/// child steps and exec.
extern "C" fn cmd_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the setup process's `SetupArgs`, which lives in
    // sbx's `spawn_ns` until this process has exec'd or exited: sbx waits
    // there for the pipe's end this process holds to close.
    unsafe {
        let a = &*(arg as *const SetupArgs);
        match &a.ns.root {
            Some(r) => {
                if !enter_root(r) {
                    child::fail(a.wr, Step::Proc);
                }
            }
            None => {
                if a.ns.pid
                    && libc::mount(
                        c"proc".as_ptr(),
                        c"/proc".as_ptr(),
                        c"proc".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        std::ptr::null(),
                    ) != 0
                {
                    child::fail(a.wr, Step::Proc);
                }
            }
        }
        if let Some(rs) = &a.p.ruleset {
            for (path, rights) in &a.ns.proc_rules {
                let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                if fd < 0 {
                    // Gone in this namespace (another process's entry):
                    // nothing to grant.
                    continue;
                }
                let rule = PathBeneathAttr {
                    allowed_access: *rights,
                    parent_fd: fd,
                };
                let r = libc::syscall(
                    libc::SYS_landlock_add_rule,
                    rs.as_raw_fd(),
                    LANDLOCK_RULE_PATH_BENEATH,
                    &rule as *const PathBeneathAttr,
                    0u32,
                );
                libc::close(fd);
                if r != 0 {
                    child::fail(a.wr, Step::Proc);
                }
            }
        }
        child::child(a.p, a.wr, 0)
    }
}
