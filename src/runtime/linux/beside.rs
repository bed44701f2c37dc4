//! The threads beside the command, started while it runs so that none
//! is made between the tree's end and sbx's:
//! - one removes the private caches set aside after a reboot (a large
//!   one may outlast the run: sbx does not wait for it, and the next run
//!   removes what is left), where the clearing helper saw some or could
//!   not say;
//! - one holds the mount namespace's last reference and lets it go once
//!   the tree has ended: the teardown (unmounting the new root and the
//!   caches' overlay, and the RCU grace periods that takes) goes on
//!   beside the after-run work, which needs nothing of it.
//!
//! (The work directories of ended runs go earlier: `clearing.rs`.)

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;

/// What runs beside the command.
#[derive(Default)]
pub struct Beside {
    stale: Option<JoinHandle<()>>,
    teardown: Option<Teardown>,
}

struct Teardown {
    thread: JoinHandle<()>,
    /// Dropped once the tree has ended: the thread then lets the
    /// namespace go.
    tree_ended: Option<mpsc::Sender<()>>,
}

/// A thread of its own, with a small stack (it makes system calls).
fn thread(f: impl FnOnce() + Send + 'static) -> Option<JoinHandle<()>> {
    std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(f)
        .ok()
}

impl Beside {
    /// Start them for this run's work directories (`works`, beside
    /// which the caches lie) and mount namespace, where there are any;
    /// the removal only if the caches may hold something to remove
    /// (`stale`). Without a thread the namespace's reference is dropped
    /// at once, and the init's exit tears it down.
    pub fn start(works: Vec<PathBuf>, stale: bool, mount_ns: Option<OwnedFd>) -> Beside {
        let stale = (stale && !works.is_empty())
            .then(|| thread(move || super::caches::clear_stale(&works)))
            .flatten();
        let teardown = mount_ns.and_then(|ns| {
            let (tree_ended, ended) = mpsc::channel::<()>();
            let thread = thread(move || {
                // Err once the sender is dropped: the tree has ended.
                let _ = ended.recv();
                drop(ns);
            })?;
            Some(Teardown {
                thread,
                tree_ended: Some(tree_ended),
            })
        });
        Beside { stale, teardown }
    }

    /// The sandbox's tree has ended: the mount namespace may go.
    pub fn tree_ended(&mut self) {
        if let Some(t) = self.teardown.as_mut() {
            t.tree_ended = None;
        }
    }

    /// Wait for the teardown; the removal of caches set aside after a
    /// reboot only if it is done.
    pub fn finish(mut self) {
        self.tree_ended();
        if let Some(t) = self.teardown.take() {
            let _ = t.thread.join();
        }
        if let Some(t) = self.stale.take().filter(|t| t.is_finished()) {
            let _ = t.join();
        }
    }
}
