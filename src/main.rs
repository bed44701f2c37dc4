//! The `sbx` command line. Thin: parsing arguments, calling the library,
//! printing, and choosing exit codes (CLI.md).

mod cli;

fn main() {
    std::process::exit(cli::main());
}
