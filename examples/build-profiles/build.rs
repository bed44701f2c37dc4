//! Generate the sandbox profiles at build time (see docs/library.md).

include!("generate.rs");

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let policy = manifest.join("../../fixtures/minimal.toml");
    println!("cargo::rerun-if-changed={}", policy.display());
    println!("cargo::rerun-if-changed=generate.rs");
    match generate(&policy, &out) {
        Ok(skipped) => {
            for (target, why) in skipped {
                println!("cargo::warning={}: {why}", target.name());
            }
        }
        // An invalid policy fails the build, with `sbx check`'s messages.
        Err(report) => panic!("invalid policy:\n{report}"),
    }
}
