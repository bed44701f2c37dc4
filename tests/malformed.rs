//! The malformed-policy corpus (`tests/malformed/`): each file is run
//! through the real `sbx check --format json`. Every one must be refused
//! with exit 1, without a panic, with every diagnostic located and helped,
//! and its diagnostics are snapshotted.

mod common;

use common::{malformed_args, root, sbx, settings, toml_files, Run};
use serde_json::Value;

const MIN_CASES: usize = 35;

fn corpus() -> Vec<String> {
    toml_files(&root().join("tests/malformed"))
        .iter()
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect()
}

fn check(name: &str, format: &str) -> Run {
    let file = format!("tests/malformed/{name}.toml");
    let mut args = vec!["check", file.as_str(), "--format", format];
    args.extend(malformed_args(name));
    sbx(&args)
}

/// Exit code, counts, and a location + help line on every diagnostic.
fn assert_refused(name: &str, r: &Run) {
    assert_eq!(r.code, 1, "{name}: exit code\n{}", r.stderr);
    let doc = r.diagnostics();
    let diags = doc["diagnostics"].as_array().unwrap();
    let errors = diags.iter().filter(|d| d["severity"] == "error").count();
    assert!(errors > 0, "{name}: no error reported");
    assert_eq!(doc["errors"], errors, "{name}: error count");
    let file = format!("tests/malformed/{name}.toml");
    let lines = std::fs::read(root().join(&file))
        .unwrap()
        .split(|b| *b == b'\n')
        .count();
    for d in diags {
        let code = d["code"].as_str().unwrap();
        assert!(
            sbx::diag::codes::lookup(code).is_some(),
            "{name}: unknown code {code}"
        );
        assert_eq!(d["file"], file.as_str(), "{name}: file of {d}");
        let line = d["line"].as_u64().unwrap_or(0) as usize;
        assert!(
            (1..=lines).contains(&line),
            "{name}: line {line} of {lines} in {d}"
        );
        assert!(
            d["column"].as_u64().unwrap_or(0) >= 1,
            "{name}: column in {d}"
        );
        let help = d["help"].as_str().unwrap_or_default();
        assert!(!help.is_empty(), "{name}: no help line in {d}");
    }
}

#[test]
fn corpus_is_large_enough() {
    let n = corpus().len();
    assert!(n >= MIN_CASES, "only {n} malformed cases; want {MIN_CASES}");
}

#[test]
fn malformed() {
    settings().bind(|| {
        insta::glob!("malformed/*.toml", |path| {
            let name = path.file_stem().unwrap().to_str().unwrap();
            let r = check(name, "json");
            assert_refused(name, &r);
            insta::assert_snapshot!(r.stderr);
        });
    });
}

/// The human format: source line, caret, code and help.
#[test]
fn human_rendering() {
    let cases = [
        "syntax-duplicate-key",
        "unknown-key-fs-rule",
        "port-float",
        "path-nul",
        "fs-write-contradicts-create",
        "mixed-many-errors",
        "tool-missing",
    ];
    settings().bind(|| {
        for name in cases {
            let r = check(name, "human");
            assert_eq!(r.code, 1, "{name}\n{}", r.stderr);
            assert!(r.stderr.contains("error[SBX0"), "{name}: {}", r.stderr);
            assert!(r.stderr.contains('^'), "{name}: no caret\n{}", r.stderr);
            assert!(r.stderr.contains("help: "), "{name}: no help\n{}", r.stderr);
            insta::assert_snapshot!(format!("human__{name}"), r.stderr);
        }
    });
}

/// Reporting everything at once: the mixed file's errors come from the
/// schema, the semantic checks and the version check in one run.
#[test]
fn mixed_errors_all_reported() {
    let doc = check("mixed-many-errors", "json").diagnostics();
    let codes: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    for want in [
        "SBX002", "SBX003", "SBX004", "SBX005", "SBX006", "SBX011", "SBX012",
    ] {
        assert!(codes.contains(&want), "{want} missing from {codes:?}");
    }
    assert!(codes.len() >= 10, "{codes:?}");
    // In file order.
    let lines: Vec<u64> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{lines:?}");
}

/// The corpus file must stay invalid UTF-8 (an editor could "fix" it).
#[test]
fn not_utf8_case_is_not_utf8() {
    let bytes = std::fs::read(root().join("tests/malformed/not-utf8.toml")).unwrap();
    assert!(std::str::from_utf8(&bytes).is_err());
}

#[test]
fn compile_refuses_the_corpus_too() {
    for name in corpus() {
        let file = format!("tests/malformed/{name}.toml");
        let mut args = vec![
            "compile",
            file.as_str(),
            "--target",
            "ir",
            "--message-format",
            "json",
        ];
        args.extend(malformed_args(&name));
        let r = sbx(&args);
        assert_eq!(r.code, 1, "{name}\n{}", r.stderr);
        assert!(r.stdout.is_empty(), "{name}: wrote an artifact");
        r.diagnostics();
    }
}

/// Larger than MAX_FILE_BYTES: refused before reading, as an I/O error
/// (exit 2). A sparse file keeps this cheap.
#[test]
fn oversized_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.toml");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(sbx::policy::source::MAX_FILE_BYTES as u64 + 1)
        .unwrap();
    let r = sbx(&["check", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let doc = r.diagnostics();
    let d = &doc["diagnostics"][0];
    assert_eq!(d["code"], "SBX017");
    assert!(
        d["message"].as_str().unwrap().contains("the limit is"),
        "{d}"
    );
}

/// Exactly MAX_FILE_BYTES is still read and compiled.
#[test]
fn file_at_the_limit_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.toml");
    let n = sbx::policy::source::MAX_FILE_BYTES;
    let mut text = String::from("version = 1\n#");
    text.push_str(&"x".repeat(n - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), n);
    std::fs::write(&path, text).unwrap();
    let r = sbx(&[
        "compile",
        path.to_str().unwrap(),
        "--target",
        "ir",
        "--portable",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ir: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(ir["sbx"], 1);
}
