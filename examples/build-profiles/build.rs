//! Generate the sandbox profiles at build time (see docs/library.md).

include!("generate.rs");

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let policy = manifest.join("../../fixtures/minimal.toml");
    println!("cargo::rerun-if-changed={}", policy.display());
    println!("cargo::rerun-if-changed=generate.rs");
    // An invalid policy, or one a target cannot honour, fails the build
    // with `sbx check`'s messages.
    if let Err(report) = generate(&policy, &out) {
        panic!("cannot generate the profiles:\n{report}");
    }
}
