//! Link the `sbx` executable at a fixed address on Linux. A position-
//! independent executable makes the dynamic loader (or, static, the
//! program itself) apply ~13,000 relocations at every start, and writing
//! them copies ~60 pages: about a quarter of `sbx run`'s page faults
//! (docs/performance.md). Only the `sbx` binary is affected, not the
//! library, tests or the programs it runs. `--features pie` keeps PIE.
//! The musl build gets the same from `.cargo/config.toml`
//! (`-C relocation-model=static`): there `-no-pie` after rustc's
//! `-static-pie` links a program that crashes.
//!
//! On Linux the linker also gets `link/order.ld`, which places the code
//! `sbx run` does not execute after the rest, so that a run's code takes
//! fewer page faults (the script says why). It is left out where another
//! linker is named (`-fuse-ld`, a configured linker): mold reads no such
//! script, and the order is an optimisation only.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/order.ld");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let linux = var("CARGO_CFG_TARGET_OS") == "linux";
    if linux
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && std::env::var_os("CARGO_FEATURE_PIE").is_none()
    {
        println!("cargo:rustc-link-arg-bin=sbx=-no-pie");
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let other_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || flags.contains("fuse-ld")
        || flags.contains("linker-flavor");
    let script = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("link/order.ld");
    let script = script.to_string_lossy();
    // `-Wl,` splits its argument at commas.
    if linux && !other_linker && !script.contains(',') {
        println!("cargo:rustc-link-arg-bin=sbx=-Wl,-T,{script}");
        // tests/exit_codes.rs checks the layout where it was asked for.
        // The value follows the script's text, so that an edit of it
        // links `sbx` again.
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::fs::read(&*script).unwrap_or_default().hash(&mut h);
        println!("cargo:rustc-env=SBX_TEXT_ORDER={:x}", h.finish());
    }
}
