//! The fuzz targets' committed corpus (fuzz/corpus/<target>/), replayed
//! through the same harnesses on stable Rust, so every input a fuzzer
//! found interesting stays a regression test.

use std::path::Path;

fn replay(target: &str, harness: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{}: corpus too small", dir.display());
    for f in files {
        let data = std::fs::read(&f).unwrap();
        let r = std::panic::catch_unwind(|| harness(&data));
        assert!(r.is_ok(), "{target}: {} fails the harness", f.display());
    }
}

#[test]
fn fuzz_corpus_policy() {
    replay("policy", sbx::fuzzing::policy);
}

#[test]
fn fuzz_corpus_sbpl() {
    replay("sbpl", sbx::fuzzing::sbpl);
}

#[test]
fn fuzz_corpus_sbpl_injection() {
    replay("sbpl_injection", sbx::fuzzing::sbpl_injection);
}
