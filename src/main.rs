//! The `sbx` command line. Thin: parsing arguments, calling the library,
//! printing, and choosing exit codes (CLI.md).

// Diagnostics are only built on the error path; boxing them buys nothing.
#![allow(clippy::result_large_err)]

mod cli;

/// The glibc build allocates with mimalloc (Cargo.toml says why).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The static musl build allocates with dlmalloc (Cargo.toml says why).
#[cfg(all(target_os = "linux", target_env = "musl"))]
#[global_allocator]
static ALLOC: heap::Heap = heap::Heap::new();

/// dlmalloc behind std's futex mutex. The crate's own `GlobalDlmalloc`
/// locks a pthread mutex, which musl does not inline: about 50
/// instructions per allocation, 16 % of `sbx run POLICY`'s
/// (docs/performance.md, 2026-11-24).
#[cfg(all(target_os = "linux", target_env = "musl"))]
mod heap {
    use std::alloc::{GlobalAlloc, Layout};
    use std::cell::UnsafeCell;
    use std::sync::{Mutex, MutexGuard};

    pub struct Heap {
        lock: Mutex<()>,
        dl: UnsafeCell<dlmalloc::Dlmalloc>,
    }

    // SAFETY: `dl` is only reached while `lock` is held.
    unsafe impl Sync for Heap {}

    impl Heap {
        pub const fn new() -> Heap {
            Heap {
                lock: Mutex::new(()),
                dl: UnsafeCell::new(dlmalloc::Dlmalloc::new()),
            }
        }

        /// The heap, locked. Nothing panics while holding it, but a
        /// poisoned lock must not stop allocation either.
        fn with<T>(&self, f: impl FnOnce(&mut dlmalloc::Dlmalloc) -> T) -> T {
            let _guard: MutexGuard<'_, ()> = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the guard gives this thread the only access.
            f(unsafe { &mut *self.dl.get() })
        }
    }

    // SAFETY: each call forwards to dlmalloc, which meets GlobalAlloc's
    // contract, under the lock.
    unsafe impl GlobalAlloc for Heap {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            self.with(|dl| unsafe { dl.malloc(l.size(), l.align()) })
        }
        unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
            self.with(|dl| unsafe { dl.calloc(l.size(), l.align()) })
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            self.with(|dl| unsafe { dl.free(p, l.size(), l.align()) })
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
            self.with(|dl| unsafe { dl.realloc(p, l.size(), l.align(), size) })
        }
    }
}

fn main() {
    std::process::exit(cli::main());
}
