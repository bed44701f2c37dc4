//! The `sbx` command line. Thin: parsing arguments, calling the library,
//! printing, and choosing exit codes (CLI.md).

// Diagnostics are only built on the error path; boxing them buys nothing.
#![allow(clippy::result_large_err)]

mod cli;

/// The static musl build allocates with dlmalloc (Cargo.toml says why).
#[cfg(all(target_os = "linux", target_env = "musl"))]
#[global_allocator]
static ALLOC: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    std::process::exit(cli::main());
}
