//! Every plain-SBPL profile of the shared corpus reads and validates without errors.
//!
//! The corpus is data outside the repository (`../shared/corpus/sbpl`). Files whose
//! SOURCES.tsv notes say they are C-preprocessor input or wrapped in C++ raw
//! strings are not SBPL until a build step rewrites them, so they are skipped.
//! Templates whose placeholders are still valid s-expressions are read like any
//! other profile.

use std::path::{Path, PathBuf};

use sbx::sbpl;

/// The issue's target: 662 plain files. The notes-based rule below selects a
/// few more (templates that are still well-formed SBPL), never fewer.
const ISSUE_TARGET: usize = 662;

/// `../shared/corpus/sbpl` from the crate root; a git worktree sits one level
/// deeper, so the nearest ancestor holding `shared/corpus/sbpl` is used.
/// `SBX_SBPL_CORPUS` overrides the search.
fn corpus_dir() -> Option<PathBuf> {
    let found = match std::env::var_os("SBX_SBPL_CORPUS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .skip(1)
            .map(|a| a.join("shared/corpus/sbpl"))
            .find(|d| d.is_dir()),
    };
    if let Some(dir) = found.filter(|d| d.join("SOURCES.tsv").is_file()) {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !ci,
        "SBPL corpus (../shared/corpus/sbpl with SOURCES.tsv) not found and CI=true: failing"
    );
    eprintln!("skipping: SBPL corpus ../shared/corpus/sbpl not found");
    None
}

/// Notes that mark a file as input to another tool rather than SBPL.
fn needs_preprocessing(notes: &str) -> bool {
    let notes = notes.to_ascii_lowercase();
    notes.contains("preprocessor") || notes.contains("raw string") || notes.contains("raw-string")
}

/// (plain files, skipped files) as paths relative to the corpus dir.
fn corpus_files(dir: &Path) -> (Vec<String>, Vec<String>) {
    let tsv = std::fs::read_to_string(dir.join("SOURCES.tsv")).expect("read SOURCES.tsv");
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("SOURCES.tsv has no {name} column"))
    };
    let (file_col, notes_col) = (col("file"), col("notes"));
    let (mut plain, mut skipped) = (Vec::new(), Vec::new());
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let file = fields[file_col].to_string();
        if needs_preprocessing(fields.get(notes_col).copied().unwrap_or("")) {
            skipped.push(file);
        } else {
            plain.push(file);
        }
    }
    (plain, skipped)
}

#[test]
fn every_plain_corpus_file_parses() {
    let Some(dir) = corpus_dir() else { return };
    let (plain, skipped) = corpus_files(&dir);
    let mut failures = Vec::new();
    let mut parsed = 0;
    let mut forms = 0;
    for file in &plain {
        let src = std::fs::read_to_string(dir.join(file)).expect("read corpus file");
        match sbpl::parse(&src) {
            Ok(data) => {
                parsed += 1;
                forms += data.len();
            }
            Err(e) => failures.push(format!("{file}:{e}")),
        }
    }
    println!(
        "parsed {parsed} of {} plain SBPL files ({forms} top-level forms); {} skipped as preprocessor/wrapper input",
        plain.len(),
        skipped.len()
    );
    assert!(
        failures.is_empty(),
        "unreadable files:\n{}",
        failures.join("\n")
    );
    assert_eq!(parsed, plain.len());
    assert!(
        parsed >= ISSUE_TARGET,
        "only {parsed} plain files, expected at least {ISSUE_TARGET}"
    );
}

#[test]
fn corpus_has_no_validation_errors() {
    let Some(dir) = corpus_dir() else { return };
    let (plain, _) = corpus_files(&dir);
    let mut errors = Vec::new();
    let mut warnings = std::collections::BTreeMap::<String, usize>::new();
    for file in &plain {
        let path = camino::Utf8PathBuf::from_path_buf(dir.join(file)).expect("UTF-8 path");
        for f in sbpl::check_file(&path) {
            match f.severity {
                sbpl::Severity::Error => errors.push(f.render(file)),
                sbpl::Severity::Warning => {
                    let kind = f.message.split('\'').next().unwrap_or("").to_string();
                    *warnings.entry(kind).or_default() += 1;
                }
            }
        }
    }
    println!("warnings by kind over {} files: {warnings:#?}", plain.len());
    assert!(
        errors.is_empty(),
        "validation errors:\n{}",
        errors.join("\n")
    );
}
