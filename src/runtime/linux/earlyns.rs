//! The run's network namespace, made beside sbx's preparation
//! (docs/performance.md, "`sbx run` start-up").
//!
//! Making a network namespace costs the kernel about a millisecond of
//! CPU time. Made by the setup process's `clone`, it lies on the run's
//! critical path, between sbx's preparation and the command. So a
//! helper process, started as the run begins, makes it on another core
//! while sbx reads the policy and plans the mounts. An unprivileged
//! helper makes it inside a user namespace of its own, with the same
//! one-line id maps the setup process would write. The setup process
//! then joins both (`setns`) and makes its mount namespace there.
//!
//! Nothing here decides what the run gets: a helper that fails only
//! means the setup process makes the namespaces itself, as without it,
//! and reports what fails there.

use super::child::{clone_blocked, reap, Stack};
use super::nschild::{write_file, PATHS};
use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The namespaces the helper made, for the setup process to join.
pub struct Made {
    /// The user namespace (unprivileged runs only).
    pub user: Option<OwnedFd>,
    pub net: OwnedFd,
    /// `lo` is up in it: the setup process need not bring it up.
    pub lo_up: bool,
}

/// A started helper.
pub struct Early {
    pid: libc::pid_t,
    shared: Box<Shared>,
}

/// What the helper reads and writes. It shares sbx's memory and
/// descriptor table, and makes no call but system calls on this and its
/// own stack.
struct Shared {
    stack: Stack,
    maps: Option<[CString; 3]>,
    /// Bring `lo` up (the proxy's listeners need it), and whether it was.
    lo: bool,
    lo_up: AtomicBool,
    user: AtomicI32,
    net: AtomicI32,
}

/// Start the helper; `user`: the run is unprivileged, so the network
/// namespace belongs to a new user namespace; `lo`: the run's proxy
/// listens there, so `lo` goes up too, off the way to the command
/// (docs/performance.md). `None` when it cannot start (then nothing is
/// made early).
pub fn start(user: bool, lo: bool) -> Option<Early> {
    let maps = if user {
        Some(super::ns::own_id_maps().ok()?)
    } else {
        None
    };
    let shared = Box::new(Shared {
        stack: Stack::new().ok()?,
        maps,
        lo,
        lo_up: AtomicBool::new(false),
        user: AtomicI32::new(-1),
        net: AtomicI32::new(-1),
    });
    // SAFETY: the helper runs `make` on its own stack and on `shared`,
    // which lives in the Box until the helper is reaped (`finish` or
    // drop).
    let pid = unsafe {
        clone_blocked(
            make,
            &shared.stack,
            libc::CLONE_VM | libc::CLONE_FILES | libc::SIGCHLD,
            &*shared as *const Shared as *mut libc::c_void,
        )
    }
    .ok()?;
    super::child::beside_this_cpu(pid);
    Some(Early { pid, shared })
}

impl Early {
    /// Wait for the helper (it is most often done): the namespaces, or
    /// `None` when it could not make them.
    /// (What a failed helper opened is closed by the drop.)
    pub fn finish(mut self) -> Option<Made> {
        if !self.reap() {
            return None;
        }
        let net = take(&self.shared.net)?;
        let user = take(&self.shared.user);
        if user.is_none() && self.shared.maps.is_some() {
            return None;
        }
        let lo_up = self.shared.lo_up.load(Ordering::SeqCst);
        Some(Made { user, net, lo_up })
    }

    /// The user namespace, once the helper has made both namespaces
    /// (`None` before, for a privileged run, or where it failed): still
    /// the helper's to hand over in [`finish`](Self::finish), open until
    /// then.
    pub fn user_made(&self) -> Option<RawFd> {
        let user = self.shared.user.load(Ordering::SeqCst);
        (user >= 0 && self.shared.net.load(Ordering::SeqCst) >= 0).then_some(user)
    }

    /// Reap the helper once; whether it made everything.
    fn reap(&mut self) -> bool {
        if self.pid <= 0 {
            return false;
        }
        let status = reap(self.pid);
        self.pid = 0;
        status.is_some_and(|s| libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0)
    }
}

impl Drop for Early {
    /// Not used: the helper is reaped (its stack is unmapped only then)
    /// and what it made is closed.
    fn drop(&mut self) {
        self.reap();
        drop(take(&self.shared.user));
        drop(take(&self.shared.net));
    }
}

/// The descriptor a helper sharing our descriptor table left in `slot`,
/// now ours alone.
pub(super) fn take(slot: &AtomicI32) -> Option<OwnedFd> {
    let fd = slot.swap(-1, Ordering::SeqCst);
    // SAFETY: the helper opened it in our descriptor table (CLONE_FILES),
    // and nothing else owns it; the swap hands it out once.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The helper: the namespaces, their descriptors in `Shared`, then exit
/// (1: something failed; what was opened is closed by sbx).
extern "C" fn make(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the Box'ed `Shared`, alive until we are reaped;
    // only system calls and atomic stores follow.
    unsafe {
        let s = &*(arg as *const Shared);
        let flags = libc::CLONE_NEWNET
            | if s.maps.is_some() {
                libc::CLONE_NEWUSER
            } else {
                0
            };
        if libc::unshare(flags) != 0 {
            libc::_exit(1);
        }
        if let Some(maps) = &s.maps {
            for (path, data) in PATHS.iter().zip(maps.iter()) {
                if !write_file(path, data) {
                    libc::_exit(1);
                }
            }
            hand_over(c"/proc/self/ns/user", &s.user);
        }
        // Failing here only leaves it to the setup process.
        if s.lo && super::nschild::loopback_up() {
            s.lo_up.store(true, Ordering::SeqCst);
        }
        hand_over(c"/proc/self/ns/net", &s.net);
        libc::_exit(0)
    }
}

/// Open one of the helper's namespaces into `slot`, or end the helper.
///
/// # Safety
/// Only in the helper: system calls and an atomic store.
unsafe fn hand_over(ns: &std::ffi::CStr, slot: &AtomicI32) {
    let fd = libc::open(ns.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        libc::_exit(1);
    }
    slot.store(fd, Ordering::SeqCst);
}
