//! What `examples/build-profiles/build.rs` does, as a cargo example of
//! this crate (built by `cargo test --all-targets`, no second dependency
//! build):
//!
//! ```sh
//! cargo run --example build_profiles -- fixtures/minimal.toml out/
//! ```

include!("build-profiles/generate.rs");

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [policy, out] = args.as_slice() else {
        eprintln!("usage: build_profiles POLICY OUT_DIR");
        std::process::exit(2);
    };
    let out = std::path::Path::new(out);
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("error: cannot create {}: {e}", out.display());
        std::process::exit(2);
    }
    match generate(std::path::Path::new(policy), out) {
        Ok(()) => {
            for t in sbx::Target::ALL {
                println!("{}", out.join(t.file_name()).display());
            }
        }
        Err(report) => {
            eprint!("{report}");
            std::process::exit(1);
        }
    }
}
