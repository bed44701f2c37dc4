//! The `sbx` command line. Thin: parsing arguments, calling the library,
//! printing, and choosing exit codes (CLI.md).

// Diagnostics are only built on the error path; boxing them buys nothing.
#![allow(clippy::result_large_err)]
// With glibc on Linux, sbx provides the C `main` itself (below); not in
// the unit-test build, whose `main` is the test harness.
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

mod cli;

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(test))))]
fn main() {
    std::process::exit(cli::main());
}

/// The process entry point with glibc on Linux, instead of std's.
///
/// `sbx run` starts a process per sandboxed command, so process start-up
/// is part of its cost (docs/performance.md). Before `main`, std's runtime
/// looks up the main thread's stack for its stack-overflow message:
/// glibc's `pthread_getattr_np` reads and parses `/proc/self/maps`, a
/// tenth of the instructions of `sbx run --artifact` and twenty system
/// calls with the alternate signal stack. This entry point does the rest
/// of what std's does: standard descriptors that are closed are opened on
/// `/dev/null`, SIGPIPE is ignored, a panic exits with 101, and stdout is
/// flushed (`process::exit`). (glibc hands `argc`/`argv` to std through
/// `.init_array`, so `std::env::args` works as before.) What changes: a
/// stack overflow is a plain SIGSEGV (the kernel's guard gap still stops
/// it) without std's message, and a panic message names the thread
/// `<unnamed>` instead of `main`.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: poll on three descriptors and open of a constant path.
    unsafe {
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        });
        while libc::poll(fds.as_mut_ptr(), 3, 0) == -1 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                libc::abort();
            }
        }
        for pfd in fds {
            if pfd.revents & libc::POLLNVAL != 0
                && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0) == -1
            {
                libc::abort();
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let code = std::panic::catch_unwind(cli::main).unwrap_or(101);
    std::process::exit(code)
}
