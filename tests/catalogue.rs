//! The catalogue's examples are real: each policy example produces its code.

#![cfg(unix)]

mod common;
use common::Host;
use sbx::compile::Inputs;
use sbx::diag::codes::{self, CATALOGUE};
use sbx::lint::{check, CheckOptions};

/// Examples that are not a policy checked on its own, and why.
const NOT_A_POLICY: &[(&str, &str)] = &[
    (codes::IO, "a command line"),
    (codes::TOO_LONG, "elides its 5000 characters"),
];

fn codes_for(h: &Host, code: &str, example: &str) -> Vec<&'static str> {
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
    let diags = match check(&inputs, &opts, &c) {
        Ok(d) => d,
        Err(f) => f.diagnostics,
    };
    diags.iter().map(|d| d.code).collect()
}

#[test]
fn every_policy_example_produces_its_code() {
    let h = Host::new();
    // What the symlink examples describe.
    std::os::unix::fs::symlink(h.root.join("bin"), h.ws.join("data")).unwrap();
    std::os::unix::fs::symlink(h.root.join("bin"), h.ws.join("vendor")).unwrap();
    for c in CATALOGUE {
        if NOT_A_POLICY.iter().any(|(n, _)| *n == c.code) {
            continue;
        }
        let got = codes_for(&h, c.code, c.example.unwrap());
        assert!(got.contains(&c.code), "{}: example gives {got:?}", c.code);
    }
}
