//! Home's overlay for the private caches, made beside sbx's preparation
//! (docs/performance.md, "`sbx run` start-up").
//!
//! An overlay's new superblock is the dearest mount of a run with
//! caches under home: the kernel makes its work directory again and
//! tries a tmpfile and a whiteout there, each a new inode on the upper
//! layer's file system, freed at once. Where that file system skips
//! recently freed inodes one by one when it allocates (ext4 without a
//! journal), the cost grows with how many runs started in the last
//! minutes. Made by the setup process, it lies on the run's critical
//! path; a helper started once the caches' directories exist makes it
//! on another core while sbx finishes its preparation, and the setup
//! process takes the detached mount from it.
//!
//! An unprivileged overlay belongs to the user namespace the setup
//! process joins: the helper joins it first, and makes its own mount
//! namespace there, as the setup process does. So for an unprivileged
//! run only where the network namespace's helper (`earlyns.rs`) has made
//! that user namespace by the time the caches' directories exist (most
//! runs; the rest make the overlay in the setup process). The helper
//! makes the same overlay the setup process would, of the same
//! directories, its lower layer checked against the directory sbx
//! opened in the same way (`caches::home_overlay`); nothing here decides
//! what the run gets. A helper that fails only means the setup process
//! makes the overlay itself, as without it.

use super::caches::{Mount, Shared};
use super::child::{beside_this_cpu, clone_blocked, reap, Stack};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A started helper.
pub struct Early {
    pid: libc::pid_t,
    arg: Box<Arg>,
}

/// What the helper reads and writes. It shares sbx's memory and
/// descriptor table, and makes no call but system calls on this and its
/// own stack.
struct Arg {
    stack: Stack,
    home: Arc<Shared>,
    volatile: bool,
    /// The user namespace to join (-1: none).
    user: RawFd,
}

/// Start the helper for the caches' `mounts`, when one of them is a
/// directory of home's overlay and, where the run has a user namespace
/// (`user_ns`), that namespace is made already (`user`, open until the
/// helper is reaped); `None` otherwise, or when it cannot start.
pub fn start(mounts: &[Mount], user_ns: bool, user: Option<RawFd>) -> Option<Early> {
    let user = match (user_ns, user) {
        (false, _) => -1,
        (true, Some(fd)) => fd,
        (true, None) => return None,
    };
    let (home, volatile) = mounts
        .iter()
        .find_map(|m| Some((m.shared.as_ref()?.0.clone(), m.volatile)))?;
    let arg = Box::new(Arg {
        stack: Stack::new().ok()?,
        home,
        volatile,
        user,
    });
    // SAFETY: the helper runs `make` on its own stack and on `arg`,
    // which lives in the Box until the helper is reaped (`finish` or
    // drop).
    let pid = unsafe {
        clone_blocked(
            make,
            &arg.stack,
            libc::CLONE_VM | libc::CLONE_FILES | libc::SIGCHLD,
            &*arg as *const Arg as *mut libc::c_void,
        )
    }
    .ok()?;
    beside_this_cpu(pid);
    Some(Early { pid, arg })
}

/// The helper: the overlay's detached mount in `home.early`, then exit.
extern "C" fn make(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the Box'ed `Arg`, alive until we are reaped; only
    // system calls and an atomic store follow.
    unsafe {
        let a = &*(arg as *const Arg);
        // As the setup process: the user namespace first, so that the
        // mount namespace made next (whose mounts the overlay's layers
        // must be) belongs to it.
        if a.user >= 0
            && (libc::setns(a.user, libc::CLONE_NEWUSER) != 0
                || libc::unshare(libc::CLONE_NEWNS) != 0)
        {
            libc::_exit(1);
        }
        super::caches::make_early(&a.home, a.volatile);
        libc::_exit(0)
    }
}

impl Early {
    /// Wait for the helper (most often done by now). The overlay's
    /// number stays in `home.early` for the setup process, which has a
    /// copy of our descriptors; ours comes back, to be closed once that
    /// process has been cloned. `None` when the helper made nothing.
    pub fn finish(mut self) -> Option<OwnedFd> {
        self.reap();
        let fd = self.arg.home.early.load(Ordering::SeqCst);
        // SAFETY: the helper made it in our descriptor table
        // (CLONE_FILES) and is gone; nothing else here owns it (the
        // drop below closes nothing once reaped).
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn reap(&mut self) {
        if self.pid > 0 {
            reap(self.pid);
            self.pid = 0;
        }
    }
}

impl Drop for Early {
    /// Not finished: the helper is reaped (its stack is unmapped only
    /// then) and what it made is closed, so that no setup takes it.
    fn drop(&mut self) {
        if self.pid > 0 {
            self.reap();
            drop(super::earlyns::take(&self.arg.home.early));
        }
    }
}
