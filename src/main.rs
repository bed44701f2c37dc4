//! The `sbx` command line. Thin: parsing arguments, calling the library,
//! printing, and choosing exit codes (CLI.md).

// Diagnostics are only built on the error path; boxing them buys nothing.
#![allow(clippy::result_large_err)]

mod cli;

fn main() {
    std::process::exit(cli::main());
}
