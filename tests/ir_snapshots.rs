//! IR and diagnostics snapshots for every fixture, in portable mode (no
//! host paths), lowered in-process for a fixed OS so that the snapshots do
//! not depend on the machine running the tests.

mod common;

use common::{fixture_cases, root, sbx, settings, Case};
use sbx::compile::{self, Inputs, Options, Target};
use sbx::ir::Os;

fn inputs(case: &Case) -> Inputs {
    let mut sources = Vec::new();
    for f in &case.files {
        let path = camino::Utf8PathBuf::from_path_buf(root().join(f)).unwrap();
        let mut s = sbx::policy::read_file(&path).unwrap();
        s.name = f.clone(); // relative, as the user would type it
        sources.push(s);
    }
    Inputs { sources }
}

fn options(case: &Case) -> Options {
    Options {
        tool: case.tool.clone(),
        portable: true,
        ..Options::default()
    }
}

/// The IR JSON and the diagnostics (JSON) of one fixture for one OS.
fn lower(case: &Case, os: Os) -> (String, String) {
    let inputs = inputs(case);
    let opts = options(case);
    let (policy, mut diags) = compile::load(&inputs, &opts)
        .unwrap_or_else(|f| panic!("{}: {:?}", case.name, f.diagnostics));
    let lowered = compile::lower_for(&policy, &opts, os)
        .unwrap_or_else(|f| panic!("{}: {:?}", case.name, f.diagnostics));
    diags.extend(lowered.diagnostics);
    let ir = compile::emit(&lowered.ir, Target::Ir).unwrap();
    (ir.text, sbx::diag::render_json(&diags))
}

fn os_name(os: Os) -> &'static str {
    match os {
        Os::Linux => "linux",
        Os::Macos => "macos",
        Os::Windows => "windows",
    }
}

/// Every fixture for Linux; the ones whose point is the per-OS presets
/// also for macOS and Windows.
fn oses(case: &Case) -> Vec<Os> {
    match case.name.as_str() {
        "default" | "presets" => vec![Os::Linux, Os::Macos, Os::Windows],
        _ => vec![Os::Linux],
    }
}

#[test]
fn fixtures() {
    settings().bind(|| {
        for case in fixture_cases() {
            for os in oses(&case) {
                let (ir, diags) = lower(&case, os);
                let name = format!("{}__{}", os_name(os), case.name);
                insta::assert_snapshot!(format!("ir__{name}"), ir);
                insta::assert_snapshot!(format!("diagnostics__{name}"), diags);
            }
        }
    });
}

/// The CLI gives the same IR as the library for the host OS.
#[test]
fn cli_matches_library() {
    for case in fixture_cases() {
        let mut args = vec!["compile"];
        args.extend(case.files.iter().map(String::as_str));
        args.extend(["--target", "ir", "--portable"]);
        if let Some(t) = &case.tool {
            args.extend(["--tool", t]);
        }
        let r = sbx(&args);
        assert_eq!(r.code, 0, "{}: {}", case.name, r.stderr);
        assert_eq!(r.stdout, lower(&case, Os::host()).0, "{}", case.name);
    }
}

/// Portable IR never contains a host path: only placeholders.
#[test]
fn portable_ir_has_no_host_paths() {
    let home = std::env::var("HOME").unwrap_or_default();
    let cwd = root().to_str().unwrap().to_string();
    for case in fixture_cases() {
        let (ir, _) = lower(&case, Os::host());
        assert!(!ir.contains(&cwd), "{}: {cwd} in IR", case.name);
        if home.len() > 1 {
            assert!(!ir.contains(&format!("\"{home}")), "{}", case.name);
        }
        let v: serde_json::Value = serde_json::from_str(&ir).unwrap();
        assert_eq!(v["mode"], "portable");
        assert_eq!(v["roots"]["workspace"], "${WORKSPACE}");
        assert_eq!(v["roots"]["home"], "${HOME}");
        assert_eq!(v["roots"]["temp"], "${TMPDIR}");
    }
}

/// `sbx run`'s IR (no hashes) is the written IR but for `policy_hash` and
/// `ir_hash`, which are sha256s there and empty here.
#[test]
fn ir_to_apply_is_the_ir_without_its_hashes() {
    let is_hash = |h: &str| h.starts_with("sha256:") && h.len() == 71;
    for case in fixture_cases() {
        let inputs = inputs(&case);
        let opts = options(&case);
        let (policy, _) = compile::load(&inputs, &opts).unwrap();
        for os in oses(&case) {
            let mut written = compile::lower_for(&policy, &opts, os).unwrap().ir;
            let applied = compile::lower_to_apply(&policy, &opts, os).unwrap().ir;
            assert!(is_hash(&written.policy_hash), "{}", case.name);
            assert!(is_hash(&written.ir_hash), "{}", case.name);
            assert_eq!(applied.policy_hash, "", "{}", case.name);
            assert_eq!(applied.ir_hash, "", "{}", case.name);
            written.policy_hash.clear();
            written.ir_hash.clear();
            assert_eq!(written, applied, "{}", case.name);
        }
    }
}

/// CLI.md: `policy_hash` is the hash of the merged policy, the same in
/// every artifact of one policy; the IR of each OS has its own `ir_hash`.
#[test]
fn one_policy_hash_across_targets() {
    for case in fixture_cases() {
        let inputs = inputs(&case);
        let opts = options(&case);
        let Ok(out) = compile::compile(&inputs, &Target::ALL, &opts) else {
            continue;
        };
        let mut hashes = std::collections::BTreeSet::new();
        for a in &out.artifacts {
            let hash = match a.target {
                Target::Macos => a
                    .text
                    .lines()
                    .find_map(|l| l.strip_prefix(";; policy "))
                    .and_then(|l| l.split(',').next())
                    .map(str::to_string),
                // A pure landlockconfig document has no header.
                Target::Landlockconfig => continue,
                _ => {
                    let v: serde_json::Value = serde_json::from_str(&a.text).unwrap();
                    assert_eq!(v["target"], a.target.name(), "{}", case.name);
                    assert_eq!(v["sbx_version"], env!("CARGO_PKG_VERSION"));
                    v["policy_hash"].as_str().map(str::to_string)
                }
            };
            hashes.insert(
                hash.unwrap_or_else(|| panic!("{}: {:?} has no hash", case.name, a.target)),
            );
        }
        assert_eq!(hashes.len(), 1, "{}: {hashes:?}", case.name);
        // compile hashes the policy once and the IR only for the targets
        // that carry it: the same values `lower_for` gives.
        let (policy, _) = compile::load(&inputs, &opts).unwrap();
        let lowered = compile::lower_for(&policy, &opts, Target::Ir.os())
            .unwrap()
            .ir;
        let ir = out
            .artifacts
            .iter()
            .find(|a| a.target == Target::Ir)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&ir.text).unwrap();
        assert_eq!(v["ir_hash"], lowered.ir_hash, "{}", case.name);
        assert_eq!(v["policy_hash"], lowered.policy_hash, "{}", case.name);
    }
}
