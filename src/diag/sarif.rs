//! SARIF 2.1.0: one run, the catalogue as `tool.driver.rules`, one result
//! per diagnostic. What GitHub code scanning and other SARIF viewers read.

use super::codes::{self, CATALOGUE};
use super::{Diagnostic, Severity};
use serde_json::{json, Value};

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// `tool.driver.informationUri`: the documentation of the codes,
/// docs/diagnostics.md as published with this version of the package
/// (docs.rs serves every published crate's sources).
pub const INFORMATION_URI: &str = concat!(
    "https://docs.rs/crate/",
    env!("CARGO_PKG_NAME"),
    "/",
    env!("CARGO_PKG_VERSION"),
    "/source/docs/diagnostics.md"
);

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// `fallback`: the file location-less diagnostics are attached to (viewers
/// such as GitHub drop results without a physical location).
pub fn render(diags: &[Diagnostic], fallback: Option<&str>) -> String {
    let rules: Vec<Value> = CATALOGUE
        .iter()
        .map(|c| {
            let mut help = c.explanation.to_string();
            if let Some(ex) = c.example {
                help.push_str("\n\nExample:\n");
                help.push_str(ex);
            }
            json!({
                "id": c.code,
                "name": c.pascal_name(),
                "shortDescription": {"text": c.title},
                "fullDescription": {"text": c.explanation},
                "help": {"text": help},
                "defaultConfiguration": {"level": level(c.severity)},
            })
        })
        .collect();
    let results: Vec<Value> = diags.iter().map(|d| result(d, fallback)).collect();
    let doc = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "sbx",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("SARIF serialises");
    s.push('\n');
    s
}

fn result(d: &Diagnostic, fallback: Option<&str>) -> Value {
    let mut text = d.message.clone();
    if let Some(h) = &d.help {
        text.push_str("\nhelp: ");
        text.push_str(h);
    }
    let mut r = json!({
        "ruleId": d.code,
        "level": level(d.severity),
        "message": {"text": text},
    });
    if let Some(i) = CATALOGUE.iter().position(|c| c.code == d.code) {
        r["ruleIndex"] = json!(i);
    }
    let loc = match (&d.location, fallback) {
        (Some(l), _) => Some((l.file.as_str(), l.line.max(1), l.column.max(1))),
        (None, Some(f)) => Some((f, 1, 1)),
        (None, None) => None,
    };
    if let Some((file, line, column)) = loc {
        r["locations"] = json!([{
            "physicalLocation": {
                "artifactLocation": {"uri": uri(file)},
                "region": {"startLine": line, "startColumn": column},
            }
        }]);
    }
    debug_assert!(codes::lookup(d.code).is_some(), "{} not catalogued", d.code);
    r
}

/// A file name as a URI reference: relative names stay relative (code
/// scanning resolves them against the repository), absolute ones become
/// `file://` URIs; everything but unreserved characters and `/` is
/// percent-encoded.
pub fn uri(file: &str) -> String {
    let file = file.replace('\\', "/");
    let drive =
        file.len() >= 2 && file.as_bytes()[1] == b':' && file.as_bytes()[0].is_ascii_alphabetic();
    let mut out = String::new();
    if file.starts_with('/') {
        out.push_str("file://");
    } else if drive {
        out.push_str("file:///");
    }
    for (i, b) in file.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
            || (drive && i == 1);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(uri("fixtures/a b.toml"), "fixtures/a%20b.toml");
        assert_eq!(uri("/tmp/p.toml"), "file:///tmp/p.toml");
        assert_eq!(uri("C:\\w\\p.toml"), "file:///C:/w/p.toml");
        assert_eq!(uri("é#.toml"), "%C3%A9%23.toml");
    }
}
