//! What a large compile tells the allocator. The glibc build allocates
//! with mimalloc (`Cargo.toml`), which gives pages that a phase freed back
//! to the system a second later (its `purge_delay`, 1,000 ms): at 100,000
//! rules the next phase has by then touched pages of its own, and the
//! stale ones were 30-50 MiB of the peak RSS (#38, docs/performance.md
//! "Memory at 100,000 rules"). A large compile therefore asks for 100 ms,
//! and for the freed pages back at once where a phase ends ([`phase_done`]).
//! Neither changes what is allocated; other builds (musl's dlmalloc) do
//! nothing.

/// mimalloc's own functions: the `mimalloc` crate keeps its `extended`
/// API (and the option's name) behind a feature that needs a crate more.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod mi {
    // Linked wherever the library is, not only beside `main`'s allocator.
    extern crate mimalloc as _;
    use std::ffi::{c_int, c_long};

    /// `mi_option_purge_delay` (15 in mimalloc v2's and v3's `mi_option_t`,
    /// as `libmimalloc-sys` 0.1.49 vendors them); in milliseconds.
    pub const PURGE_DELAY: c_int = 15;

    extern "C" {
        pub fn mi_option_set(option: c_int, value: c_long);
        pub fn mi_option_get(option: c_int) -> c_long;
        pub fn mi_collect(force: bool);
    }
}

/// The purge delay of a large compile, in milliseconds: 0 (none) held
/// `missing` at 100,000 rules to 345 MiB, but its purges and page faults
/// cost 1.0-1.5 s of system time; 100 ms with [`phase_done`] 352-359 MiB
/// at about the default's time.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const LARGE_PURGE_DELAY_MS: std::ffi::c_long = 100;

/// A compile of `compile::LARGE_POLICY` rules or more starts:
/// freed pages go back to the system after 100 ms instead of a second.
/// Once per process is enough; later calls change nothing.
pub(crate) fn large_compile() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets an option of the allocator by its number, which mimalloc
    // bounds-checks; the value is the one the option is documented with.
    unsafe {
        if mi::mi_option_get(mi::PURGE_DELAY) > LARGE_PURGE_DELAY_MS {
            mi::mi_option_set(mi::PURGE_DELAY, LARGE_PURGE_DELAY_MS);
        }
    }
}

/// A phase of a large compile ended (a lowering, a target): what it freed
/// goes back to the system now rather than under the next phase's pages.
pub(crate) fn phase_done() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: no arguments but a flag; mimalloc collects this thread's heap
    // and purges the freed pages of its arenas.
    unsafe {
        mi::mi_collect(true);
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::mi;

    /// Option 15 is the purge delay: the same as `MIMALLOC_PURGE_DELAY`
    /// where that is set, else v3's default of 1,000 ms (or 100 after
    /// [`super::large_compile`] in another test of this process). A
    /// mimalloc whose options are numbered otherwise fails here.
    #[test]
    fn option_15_is_the_purge_delay() {
        // SAFETY: reads an option by its number.
        let got = unsafe { mi::mi_option_get(mi::PURGE_DELAY) };
        match std::env::var("MIMALLOC_PURGE_DELAY").ok() {
            Some(v) => assert_eq!(Some(got), v.parse().ok()),
            None => assert!(got == 1000 || got == super::LARGE_PURGE_DELAY_MS, "{got}"),
        }
        // Never raised, never below what it was.
        super::large_compile();
        // SAFETY: as above.
        let after = unsafe { mi::mi_option_get(mi::PURGE_DELAY) };
        assert_eq!(after, got.min(super::LARGE_PURGE_DELAY_MS));
        super::phase_done();
    }
}
