//! Link the `sbx` executable at a fixed address on Linux. A position-
//! independent executable makes the dynamic loader (or, static, the
//! program itself) apply ~13,000 relocations at every start, and writing
//! them copies ~60 pages: about a quarter of `sbx run`'s page faults
//! (docs/performance.md). Only the `sbx` binary is affected, not the
//! library, tests or the programs it runs. `--features pie` keeps PIE.
//! The musl build gets the same from `.cargo/config.toml`
//! (`-C relocation-model=static`): there `-no-pie` after rustc's
//! `-static-pie` links a program that crashes.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if linux_gnu && std::env::var_os("CARGO_FEATURE_PIE").is_none() {
        println!("cargo:rustc-link-arg-bin=sbx=-no-pie");
    }
}
