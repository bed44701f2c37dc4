//! The generated parts of the docs agree with the code: the diagnostic
//! table with `codes::CATALOGUE`, the preset tables with `presets::roots`.
//! On a mismatch the failure prints the section to paste.

mod common;

use common::root;
use sbx::diag::{codes::CATALOGUE, Severity};
use sbx::ir::Os;
use sbx::lower::presets::{self, Base};
use sbx::policy::model::Preset;

const BEGIN: &str = "<!-- generated: begin -->";
const END: &str = "<!-- generated: end -->";

/// The text between the markers of `doc`.
fn generated_section(doc: &str) -> String {
    let text = std::fs::read_to_string(root().join(doc)).unwrap();
    let start = text
        .find(BEGIN)
        .unwrap_or_else(|| panic!("{doc}: no {BEGIN}"));
    let end = text.find(END).unwrap_or_else(|| panic!("{doc}: no {END}"));
    text[start + BEGIN.len()..end].trim().to_string()
}

fn assert_section(doc: &str, want: &str) {
    let have = generated_section(doc);
    assert!(
        have == want.trim(),
        "{doc} is out of date with the code; replace the text between the \
         markers with:\n\n{want}"
    );
}

/// Table cells: pipes would end the cell, newlines the row.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn diagnostics_table() -> String {
    let mut t = String::from("| code | severity | title | explanation |\n|---|---|---|---|\n");
    for c in CATALOGUE {
        let sev = match c.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        };
        t.push_str(&format!(
            "| {} | {sev} | {} | {} |\n",
            c.code,
            cell(c.title),
            cell(c.explanation)
        ));
    }
    t
}

/// Every preset, in the schema's order (so a new one cannot be missed).
fn all_presets() -> Vec<Preset> {
    let schema = sbx::policy::schema::schema();
    schema["$defs"]["Preset"]["enum"]
        .as_array()
        .expect("Preset enum in the schema")
        .iter()
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .collect()
}

fn presets_tables() -> String {
    let mut t = String::new();
    for p in all_presets() {
        let default = if Preset::DEFAULT.contains(&p) {
            "default"
        } else {
            "opt-in"
        };
        t.push_str(&format!(
            "### `{}` ({default})\n\n| OS | root | access |\n|---|---|---|\n",
            p.as_str()
        ));
        for (os, name) in [
            (Os::Linux, "linux"),
            (Os::Macos, "macos"),
            (Os::Windows, "windows"),
        ] {
            for r in presets::roots(p, os) {
                let path = match (r.base, r.path) {
                    (Base::Absolute, p) => p.to_string(),
                    (Base::Home, "") => "~".into(),
                    (Base::Home, p) => format!("~/{p}"),
                    (Base::Temp, "") => "$TMPDIR".into(),
                    (Base::Temp, p) => format!("$TMPDIR/{p}"),
                };
                t.push_str(&format!(
                    "| {name} | `{}` | {} |\n",
                    cell(&path),
                    r.access.names().join(", ")
                ));
            }
        }
        t.push('\n');
    }
    t
}

#[test]
fn diagnostics_doc_matches_the_catalogue() {
    assert_section("docs/diagnostics.md", &diagnostics_table());
}

#[test]
fn presets_doc_matches_the_table() {
    assert_section("docs/presets.md", &presets_tables());
}

#[test]
fn every_preset_is_documented_for_every_os() {
    let t = presets_tables();
    for p in all_presets() {
        for os in [Os::Linux, Os::Macos, Os::Windows] {
            assert!(!presets::roots(p, os).is_empty(), "{p:?} on {os:?}");
        }
        assert!(t.contains(&format!("### `{}`", p.as_str())));
    }
}

/// The README's documentation links resolve.
#[test]
fn readme_links_exist() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for doc in [
        "docs/policy.md",
        "docs/diagnostics.md",
        "docs/presets.md",
        "docs/library.md",
    ] {
        assert!(root().join(doc).is_file(), "{doc} missing");
        assert!(readme.contains(doc), "README does not link {doc}");
    }
}
