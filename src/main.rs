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
        dl: UnsafeCell<dlmalloc::Dlmalloc<Segments>>,
    }

    /// dlmalloc's memory from the system, as its own `System` gets it,
    /// but a segment of up to [`POPULATED`] bytes is mapped with its
    /// pages (`MAP_POPULATE`). A run's heap is a few 64 KiB segments,
    /// nearly every page of them touched, and each page touched would
    /// otherwise fault on its own: 2–5 µs each on the benchmark's
    /// machine, about 60 a run (docs/performance.md). Larger segments
    /// (a large compile's vectors) are left to fault as they are used.
    pub struct Segments;

    const POPULATED: usize = 256 * 1024;

    // SAFETY: what dlmalloc's own (private) `System` does on Linux, but
    // that `alloc` maps small segments with their pages: regions are
    // zeroed, page-aligned, and given back whole or from their end.
    unsafe impl dlmalloc::Allocator for Segments {
        fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
            let populate = if size <= POPULATED {
                libc::MAP_POPULATE
            } else {
                0
            };
            // SAFETY: a fresh anonymous mapping; no memory is touched.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_ANONYMOUS | libc::MAP_PRIVATE | populate,
                    -1,
                    0,
                )
            };
            if addr == libc::MAP_FAILED {
                (std::ptr::null_mut(), 0, 0)
            } else {
                (addr.cast(), size, 0)
            }
        }
        fn remap(&self, ptr: *mut u8, old: usize, new: usize, can_move: bool) -> *mut u8 {
            let flags = if can_move { libc::MREMAP_MAYMOVE } else { 0 };
            // SAFETY: dlmalloc passes a region this allocator mapped.
            let p = unsafe { libc::mremap(ptr.cast(), old, new, flags) };
            if p == libc::MAP_FAILED {
                std::ptr::null_mut()
            } else {
                p.cast()
            }
        }
        fn free_part(&self, ptr: *mut u8, old: usize, new: usize) -> bool {
            // SAFETY: as in `remap`; what is unmapped is past `new`.
            unsafe {
                libc::mremap(ptr.cast(), old, new, 0) != libc::MAP_FAILED
                    || libc::munmap(ptr.add(new).cast(), old - new) == 0
            }
        }
        fn free(&self, ptr: *mut u8, size: usize) -> bool {
            // SAFETY: dlmalloc gives back a whole region it was given.
            unsafe { libc::munmap(ptr.cast(), size) == 0 }
        }
        fn can_release_part(&self, _flags: u32) -> bool {
            true
        }
        fn allocates_zeros(&self) -> bool {
            true
        }
        fn page_size(&self) -> usize {
            4096
        }
    }

    // SAFETY: `dl` is only reached while `lock` is held.
    unsafe impl Sync for Heap {}

    impl Heap {
        pub const fn new() -> Heap {
            Heap {
                lock: Mutex::new(()),
                dl: UnsafeCell::new(dlmalloc::Dlmalloc::new_with_allocator(Segments)),
            }
        }

        /// The heap, locked. Nothing panics while holding it, but a
        /// poisoned lock must not stop allocation either.
        fn with<T>(&self, f: impl FnOnce(&mut dlmalloc::Dlmalloc<Segments>) -> T) -> T {
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
