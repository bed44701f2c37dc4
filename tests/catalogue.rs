//! The catalogue's examples are real: each policy example produces its code.

#![cfg(unix)]

mod common;
use common::Host;
use sbx::compile::Inputs;
use sbx::diag::codes::{self, CodeInfo, CATALOGUE};
use sbx::diag::Diagnostic;
use sbx::lint::{check, CheckOptions};

/// Examples that are not a policy checked on its own, and why.
const NOT_A_POLICY: &[(&str, &str)] = &[(codes::IO, "a command line")];

/// The example as a policy: SBX009's elides its 5000 characters.
fn example(c: &CodeInfo) -> String {
    c.example
        .unwrap()
        .replace("aaaa…(5000 characters)", &"a".repeat(5000))
}

fn diagnostics_for(h: &Host, code: &str, example: &str) -> Vec<Diagnostic> {
    let mut opts = h.compile_options();
    let mut c = CheckOptions::default();
    match code {
        codes::NO_TOOL => opts.tool = Some("deploy".into()),
        codes::NOT_PORTABLE => opts.portable = true,
        codes::WIDENS => {
            c.baseline = Some(Inputs::from_text(
                "old.toml",
                "[[fs]]\npath = \".\"\nread = true\n",
            ))
        }
        _ => {}
    }
    let inputs = Inputs::from_text("example.toml", example);
    match check(&inputs, &opts, &c) {
        Ok(d) => d,
        Err(f) => f.diagnostics,
    }
}

fn with_symlinks() -> Host {
    let h = Host::new();
    // What the symlink examples describe.
    std::os::unix::fs::symlink(h.root.join("bin"), h.ws.join("data")).unwrap();
    std::os::unix::fs::symlink(h.root.join("bin"), h.ws.join("vendor")).unwrap();
    std::fs::create_dir_all(h.ws.join("built")).unwrap();
    std::os::unix::fs::symlink(h.ws.join("built"), h.ws.join("steered")).unwrap();
    h
}

/// The codes whose example is a policy.
fn policy_examples() -> impl Iterator<Item = &'static CodeInfo> {
    CATALOGUE
        .iter()
        .filter(|c| !NOT_A_POLICY.iter().any(|(n, _)| *n == c.code))
}

#[test]
fn every_policy_example_produces_its_code() {
    let h = with_symlinks();
    for c in policy_examples() {
        let got: Vec<_> = diagnostics_for(&h, c.code, &example(c))
            .iter()
            .map(|d| d.code)
            .collect();
        assert!(got.contains(&c.code), "{}: example gives {got:?}", c.code);
    }
}

/// Every diagnostic about a policy is located, in the JSON form as the
/// other formats: each example's diagnostics of its own code carry
/// `file`, `line` and `column`, inside the example. A new code whose
/// diagnostics have no location fails here.
#[test]
fn every_policy_example_is_located() {
    let h = with_symlinks();
    for c in policy_examples() {
        let example = example(c);
        let lines: Vec<&str> = example.lines().collect();
        let diags = diagnostics_for(&h, c.code, &example);
        let json: serde_json::Value =
            serde_json::from_str(&sbx::diag::render_json(&diags)).unwrap();
        let mine: Vec<_> = json["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == c.code)
            .collect();
        assert!(!mine.is_empty(), "{}: not produced", c.code);
        for d in mine {
            assert_eq!(d["file"], "example.toml", "{}: {d}", c.code);
            let line = d["line"].as_u64().unwrap_or(0) as usize;
            let column = d["column"].as_u64().unwrap_or(0) as usize;
            let text = lines.get(line.wrapping_sub(1));
            assert!(
                text.is_some_and(|t| column >= 1 && column <= t.chars().count() + 1),
                "{}: {line}:{column} is outside the example: {d}",
                c.code
            );
        }
    }
}
