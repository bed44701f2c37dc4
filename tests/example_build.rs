//! The build-time example (`examples/build-profiles/`). Its generation code
//! (`generate.rs`, which its build.rs includes) runs here in-process, and
//! `cargo test --all-targets` compiles the same code as the
//! `build_profiles` example. Building the standalone crate compiles every
//! dependency a second time (13 minutes on 2 shared cores, measured), so
//! that test is opt-in:
//!
//! ```sh
//! cargo test --test example_build -- --ignored
//! ```

mod common;

mod generate {
    include!("../examples/build-profiles/generate.rs");
}

use common::root;
use sbx::Target;

#[test]
fn generates_every_target_in_portable_mode() {
    let out = tempfile::tempdir().unwrap();
    generate::generate(&root().join("fixtures/minimal.toml"), out.path()).unwrap();
    for t in Target::ALL {
        let text = std::fs::read_to_string(out.path().join(t.file_name())).unwrap();
        assert!(!text.is_empty(), "{}", t.name());
    }
    // The IR is what `sbx compile --target ir --portable` prints for the
    // same file, named as the build script names it.
    let ir = std::fs::read_to_string(out.path().join("ir.json")).unwrap();
    let inputs = sbx::Inputs::from_text(
        "minimal.toml",
        &std::fs::read_to_string(root().join("fixtures/minimal.toml")).unwrap(),
    );
    let opts = sbx::Options {
        portable: true,
        ..Default::default()
    };
    let want = sbx::compile(&inputs, &[Target::Ir], &opts).unwrap();
    assert_eq!(ir, want.artifacts[0].text);
    let v: serde_json::Value = serde_json::from_str(&ir).unwrap();
    assert_eq!(v["mode"], "portable");
    assert!(!ir.contains(root().to_str().unwrap()), "build path leaked");
}

#[test]
fn invalid_policy_fails_with_the_check_report() {
    let dir = tempfile::tempdir().unwrap();
    let policy = root().join("tests/malformed/fs-no-capability.toml");
    let err = generate::generate(&policy, dir.path()).unwrap_err();
    assert!(err.contains("error[SBX004]"), "{err}");
    assert!(err.contains('^'), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A target that cannot honour `enforcement = "required"` fails the whole
/// generation, naming the target, and no artifact is written: no empty or
/// partial profile set reaches a build.
#[test]
fn a_target_that_cannot_honour_required_fails_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    // Landlock alone cannot make `.git` read-only inside a writable
    // workspace (sbx run's namespaces can: they are turned off here).
    std::fs::write(
        &policy,
        "version = 1\nenforcement = \"required\"\n\n[[fs]]\npath = \".\"\nread = true\nwrite = true\n\n[[fs]]\npath = \".git\"\nread = true\n\n[linux]\nnamespaces = \"never\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let err = generate::generate(&policy, &out).unwrap_err();
    assert!(err.contains("target linux:"), "{err}");
    assert!(err.contains(".git"), "{err}");
    assert!(!err.contains("target macos:"), "{err}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

/// Build and run the standalone crate exactly as a user would.
#[test]
#[ignore = "compiles every dependency again; run with --ignored"]
fn standalone_crate_builds_and_prints_the_ir() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = root().join("target/example-build");
    let manifest = root().join("examples/build-profiles/Cargo.toml");
    let status = std::process::Command::new(&cargo)
        .args(["build", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .unwrap();
    assert!(status.success());
    let out = std::process::Command::new(target.join("debug/build-profiles"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("== ir\n{\n  \"sbx\": 1,"), "{stdout}");
    assert!(stdout.contains("\"mode\": \"portable\""), "{stdout}");
}
