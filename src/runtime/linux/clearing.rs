//! The caches' work directories of ended runs ([`caches::dead_work`]),
//! removed beside the preparation and the command by a helper process.
//!
//! Each run leaves four directories there (the overlay's scratch tree),
//! and removing a directory frees its block: on a disk mounted with
//! `discard` a synchronous discard, 0.1–0.7 ms each. A thread of sbx's
//! could start only after the guardian (a fork, where it has to be
//! one), once the command runs, and a short command's end would then
//! wait for the removal. The helper starts at the end of the
//! preparation, once the network namespace's helper is reaped: started
//! as soon as the caches were made, it ran on the other core beside
//! that helper and beside the rest of sbx's preparation, which it
//! slowed more than the removal gained. Like the network
//! namespace's helper (`earlyns.rs`) it shares sbx's memory and makes
//! system calls only, on data prepared here; it has its own descriptor
//! table. sbx reaps it at the end, waiting for what is left of its work.
//!
//! Beside home's overlay's work directories it leaves an empty one,
//! [`caches::SPARE`], which the next run takes instead of making its
//! own on the way to its command. The first dead directory it finds
//! there becomes the spare once emptied: renamed, it frees and
//! allocates nothing, where removing it and making a new one would
//! free one block (a discard) and allocate another.
//!
//! It first looks, in each cache beside those directories, for private
//! caches set aside after a reboot (`stale-*`, [`caches::clear_stale`]),
//! and says whether it saw any: their removal may outlast the run, so a
//! thread of sbx's does it, started only when there is something to
//! remove (there almost never is).
//!
//! [`caches::dead_work`]: super::caches::dead_work
//! [`caches::SPARE`]: super::caches::SPARE
//! [`caches::clear_stale`]: super::caches::clear_stale

use super::child::{clone_blocked, Stack};
use super::nofollow::{chmod_dir_at, each_entry, open_dir_at, MAX_DEPTH};
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};

/// A started helper.
pub struct Clearing {
    pid: libc::pid_t,
    /// Its stack and the directories it reads, until it is reaped.
    shared: Box<Shared>,
}

struct Shared {
    stack: Stack,
    /// Each with whether it gets a spare ([`super::caches::spare_in`]).
    parents: Vec<(CString, bool)>,
    /// Each parent's parent: the caches, where `stale-*` entries lie.
    caches: Vec<CString>,
    /// [`super::caches::SPARE`].
    spare: CString,
    /// [`LOOKING`], [`NONE_STALE`] or [`STALE_SEEN`].
    stale: AtomicU8,
}

const LOOKING: u8 = 0;
const NONE_STALE: u8 = 1;
const STALE_SEEN: u8 = 2;

/// Start the helper for the directories holding `works` (this run's
/// work directories); `None` when there are none or it cannot start
/// (then the next run removes them).
pub fn start(works: &[PathBuf]) -> Option<Clearing> {
    let dirs = super::caches::work_parents(works);
    let c = |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).ok();
    let parents: Vec<(CString, bool)> = dirs
        .iter()
        .filter_map(|p| Some((c(p)?, super::caches::spare_in(p).is_some())))
        .collect();
    let caches: Vec<CString> = dirs.iter().filter_map(|p| c(p.parent()?)).collect();
    if parents.is_empty() || caches.len() != dirs.len() {
        return None;
    }
    let shared = Box::new(Shared {
        stack: Stack::new().ok()?,
        parents,
        caches,
        spare: CString::new(super::caches::SPARE).ok()?,
        stale: AtomicU8::new(LOOKING),
    });
    // SAFETY: the helper runs `clear` on its own stack and on `shared`,
    // which lives in the Box until the helper is reaped (drop).
    let pid = unsafe {
        clone_blocked(
            clear,
            &shared.stack,
            libc::CLONE_VM | libc::SIGCHLD,
            &*shared as *const Shared as *mut libc::c_void,
        )
    }
    .ok()?;
    Some(Clearing { pid, shared })
}

impl Clearing {
    /// Whether the caches hold private caches set aside for removal:
    /// `None` while the helper is still looking.
    pub fn stale(&self) -> Option<bool> {
        match self.shared.stale.load(Ordering::Acquire) {
            NONE_STALE => Some(false),
            STALE_SEEN => Some(true),
            _ => None,
        }
    }
}

impl Drop for Clearing {
    /// Wait for the helper (most often it is done). It may have been
    /// reaped already, with the PID namespace's init: then ECHILD.
    fn drop(&mut self) {
        super::child::reap(self.pid);
    }
}

/// The helper: each dead entry of each parent, removed; then exit.
extern "C" fn clear(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the Box'ed `Shared`, alive until we are reaped;
    // only system calls follow, on this stack.
    unsafe {
        // It works from paths alone: the copies of sbx's descriptors it
        // was cloned with (home's overlay among them) go at once.
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        let s = &*(arg as *const Shared);
        let mut seen = false;
        for cache in &s.caches {
            let fd = open_dir(cache);
            if fd < 0 {
                // Not known: sbx looks itself.
                seen = true;
                continue;
            }
            let whole = each_entry(fd, &mut |name, _| {
                seen |= name.to_bytes().starts_with(super::caches::STALE.as_bytes());
            });
            // A listing cut short says nothing of the rest.
            seen |= !whole;
            libc::close(fd);
        }
        let said = if seen { STALE_SEEN } else { NONE_STALE };
        s.stale.store(said, Ordering::Release);
        for (parent, wants_spare) in &s.parents {
            let fd = open_dir(parent);
            if fd < 0 {
                continue;
            }
            // Where a run has taken it, or none was made yet.
            let mut spare_missing = *wants_spare && !exists_at(fd, &s.spare);
            each_entry(fd, &mut |name, _| {
                if !super::caches::dead_work(name.to_bytes()) {
                    return;
                }
                if spare_missing && recycle_at(fd, name, &s.spare) {
                    spare_missing = false;
                } else {
                    remove_at(fd, name, 0);
                }
            });
            if spare_missing {
                // EEXIST when another run's helper made one meanwhile.
                libc::mkdirat(fd, s.spare.as_ptr(), 0o700);
            }
            libc::close(fd);
        }
        libc::_exit(0)
    }
}

/// Open the directory `path`, not through a symlink; -1 on failure.
///
/// # Safety
/// A system call only.
unsafe fn open_dir(path: &CStr) -> libc::c_int {
    open_dir_at(libc::AT_FDCWD, path)
}

/// Whether `name` exists in the directory `dir` (not followed).
///
/// # Safety
/// A system call only; `dir` is an open directory.
unsafe fn exists_at(dir: libc::c_int, name: &CStr) -> bool {
    let mut st: libc::stat = std::mem::zeroed();
    libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0
}

/// Empty the directory `name` in `dir` and rename it to `spare`, which
/// must not exist; false, with `name` left for [`remove_at`], where it
/// is no directory, a directory is left in it, or the rename fails
/// (another helper's spare came first). The next run checks what it
/// takes (`caches::took_spare`).
///
/// # Safety
/// System calls only; `dir` is an open directory.
unsafe fn recycle_at(dir: libc::c_int, name: &CStr, spare: &CStr) -> bool {
    let sub = open_dir_at(dir, name);
    if sub < 0 {
        return false;
    }
    libc::fchmod(sub, 0o700);
    each_entry(sub, &mut |n, _| remove_at(sub, n, 1));
    // A directory left inside would make the next run refuse the spare
    // (`took_spare` counts links) and keep it, unusable, for good.
    let mut st: libc::stat = std::mem::zeroed();
    let emptied = libc::fstat(sub, &mut st) == 0 && st.st_nlink == 2;
    libc::close(sub);
    if !emptied {
        return false;
    }
    // No allocation: a raw system call, its error read from errno.
    super::kernel::rename_noreplace(std::os::fd::BorrowedFd::borrow_raw(dir), name, spare).is_ok()
}

/// Remove `name` in the directory `dir`, and all below it if it is a
/// directory (never through a symlink: one is removed as itself).
///
/// # Safety
/// System calls only; `dir` is an open directory.
unsafe fn remove_at(dir: libc::c_int, name: &CStr, depth: usize) {
    if libc::unlinkat(dir, name.as_ptr(), 0) == 0 || *libc::__errno_location() != libc::EISDIR {
        return;
    }
    // A directory (`unlinkat` said so). Overlayfs makes its own with
    // mode 0: each is ours to open up, as `temp::remove_tree` does, and
    // never through a symlink put there since.
    chmod_dir_at(dir, name, 0o700);
    let sub = open_dir_at(dir, name);
    if sub < 0 {
        return;
    }
    if depth < MAX_DEPTH {
        each_entry(sub, &mut |n, _| remove_at(sub, n, depth + 1));
    }
    libc::close(sub);
    libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR);
}

/// Shared with the integration tests (a module of their `common`).
#[cfg(test)]
#[path = "../../../tests/common/xattr.rs"]
mod test_xattr;

#[cfg(test)]
mod tests {
    use super::test_xattr::{mark, marked};
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    /// Links of the directory `p`: 2 when it holds no directory.
    fn links(p: &Path) -> u64 {
        std::fs::symlink_metadata(p).unwrap().nlink()
    }

    /// A dead directory the helper cannot empty (deeper than it goes)
    /// is not made the spare: a new, empty one is.
    #[test]
    fn a_dead_directory_left_with_a_directory_inside_is_not_the_spare() {
        let t = tempfile::tempdir().unwrap();
        let parent = t.path().join("home/work");
        let deep = parent
            .join("run-4194300-a")
            .join("d/".repeat(super::MAX_DEPTH + 4));
        std::fs::create_dir_all(&deep).unwrap();
        let ours = parent.join(format!("run-{}-1", std::process::id()));
        std::fs::create_dir(&ours).unwrap();
        drop(super::start(std::slice::from_ref(&ours)).expect("starts"));
        let spare = parent.join(super::super::caches::SPARE);
        assert_eq!(links(&spare), 2);
        assert!(std::fs::read_dir(&spare).unwrap().next().is_none());
        // What the helper could not remove is still there, not the spare.
        assert!(parent.join("run-4194300-a/d").is_dir());
        assert!(ours.is_dir(), "a live run's directory was touched");
    }

    /// A dead directory it can empty becomes the spare, and the rest go.
    #[test]
    fn a_dead_directory_becomes_the_spare_once_emptied() {
        let t = tempfile::tempdir().unwrap();
        let parent = t.path().join("home/work");
        for name in ["run-4194300-a", "run-4194301-b"] {
            std::fs::create_dir_all(parent.join(name).join("work/incompat/volatile")).unwrap();
            std::fs::write(parent.join(name).join("work/incompat/volatile/dirty"), "").unwrap();
        }
        for (i, name) in ["run-4194300-a", "run-4194301-b"].iter().enumerate() {
            mark(&parent.join(name), i as u8 + 1);
        }
        let ours = parent.join(format!("run-{}-1", std::process::id()));
        std::fs::create_dir(&ours).unwrap();
        drop(super::start(std::slice::from_ref(&ours)).expect("starts"));
        let mut left: Vec<String> = std::fs::read_dir(&parent)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [format!("run-{}-1", std::process::id()), "spare".into()]
        );
        let spare = parent.join("spare");
        assert_eq!(links(&spare), 2);
        assert!(std::fs::read_dir(&spare).unwrap().next().is_none());
        // One of the two, renamed: it keeps its mark (a new directory
        // could get a freed inode's number, but no mark).
        assert!(matches!(marked(&spare), Some(1 | 2)));
    }
}
