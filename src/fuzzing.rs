//! Fuzz harnesses: the bodies of the cargo-fuzz targets in `fuzz/`, also
//! replayed over the committed corpus by `tests/fuzz_corpus.rs` on stable
//! Rust. Each returns quietly on any input and panics only when an
//! invariant breaks.

use crate::compile::{self, Inputs, Options, Target};
use crate::ir::{path_within, Ir, Os, PathKind, PathMode};
use crate::sbpl::{self, FileOp, Profile};
use std::collections::BTreeMap;

/// `policy`: any bytes, as a policy file, compile to every target (portable
/// and resolved) into a clean error or artifacts that read back.
pub fn policy(data: &[u8]) {
    // Policy files that are not UTF-8 are refused before parsing.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let inputs = Inputs::from_text("fuzz.toml", text);
    for portable in [true, false] {
        let opts = Options {
            workspace: Some(workspace()),
            home: Some("/home/sbx-fuzz".into()),
            portable,
            ..Options::default()
        };
        for t in Target::ALL {
            match compile::compile(&inputs, &[t], &opts) {
                Ok(out) => {
                    for a in &out.artifacts {
                        artifact_reads_back(a);
                    }
                }
                Err(f) => {
                    assert!(
                        !f.diagnostics.is_empty() && (f.exit_code == 1 || f.exit_code == 2),
                        "a failure without a diagnostic or with exit code {}",
                        f.exit_code
                    );
                }
            }
        }
    }
}

fn workspace() -> camino::Utf8PathBuf {
    let d = std::env::temp_dir();
    camino::Utf8PathBuf::from_path_buf(d).unwrap_or_else(|_| "/tmp".into())
}

fn artifact_reads_back(a: &compile::Artifact) {
    match a.target {
        Target::Macos => {
            let data = sbpl::parse(&a.text).unwrap_or_else(|e| panic!("{e}\n{}", a.text));
            let bad: Vec<_> = sbpl::check(&data)
                .into_iter()
                .filter(|f| f.severity == sbpl::Severity::Error)
                .collect();
            assert!(bad.is_empty(), "{bad:?}\n{}", a.text);
        }
        _ => {
            let v: serde_json::Value = serde_json::from_str(&a.text)
                .unwrap_or_else(|e| panic!("{} artifact is not JSON: {e}", a.target.name()));
            // landlockconfig's own format has no header.
            if a.target != Target::Landlockconfig {
                assert!(v.get("policy_hash").is_some(), "{}", a.text);
            }
        }
    }
}

/// `sbpl`: any bytes through the SBPL reader, validator and evaluator.
pub fn sbpl(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let findings = sbpl::check_source(&text);
    match sbpl::parse(&text) {
        Ok(datums) => {
            let _ = sbpl::check(&datums);
            let _ = Profile::from_datums(&datums, &BTreeMap::new());
        }
        Err(e) => assert!(
            sbpl::has_errors(&findings),
            "parse fails ({e}) but check_source reports no error"
        ),
    }
}

const HOME: &str = "/Users/sbx-fuzz";
/// Parameter values for portable profiles.
const PARAMS: [(&str, &str); 4] = [
    ("WORKSPACE", "/Users/sbx-fuzz/src/ws"),
    ("HOME", HOME),
    ("TMPDIR", "/private/var/folders/sbx/T"),
    ("PROGRAM", "/opt/sbx-fuzz/bin/prog"),
];

/// The policy an injection input stands for: byte 0 picks the mode and
/// presets; then rules, each a rights byte and a path up to a NUL.
pub fn injection_policy(data: &[u8]) -> (String, bool) {
    let (flags, rest) = data.split_first().unwrap_or((&0, &[]));
    let mut t = String::from("version = 1\n");
    if flags & 2 == 0 {
        t.push_str("[process]\npresets = []\n");
    }
    let mut rest = rest;
    while let Some((&rights, tail)) = rest.split_first() {
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let path = String::from_utf8_lossy(&tail[..end]);
        rest = tail.get(end + 1..).unwrap_or(&[]);
        t.push_str(&format!(
            "[[fs]]\npath = {}\n",
            toml::Value::String(path.into_owned())
        ));
        let names = ["read", "write", "create", "update", "delete", "execute"];
        // At least one right; `write` with an explicit `= false` would be
        // a contradiction, so rights are only ever set to true.
        let bits = if rights & 0x3f == 0 { 1 } else { rights & 0x3f };
        for (i, n) in names.iter().enumerate() {
            if bits & (1 << i) != 0 {
                t.push_str(&format!("{n} = true\n"));
            }
        }
    }
    (t, flags & 1 == 1)
}

/// `sbpl_injection`: a policy that compiles gives a profile that reads back
/// without errors and decides read, write and exec exactly as the IR does,
/// at each granted path, below it, and at paths nothing grants: a rule path
/// that broke out of its string would change some of those answers.
pub fn sbpl_injection(data: &[u8]) {
    let (text, portable) = injection_policy(data);
    let inputs = Inputs::from_text("fuzz.toml", &text);
    let opts = Options {
        workspace: Some(PARAMS[0].1.into()),
        home: Some(HOME.into()),
        portable,
        ..Options::default()
    };
    let Ok((policy, _)) = compile::load(&inputs, &opts) else {
        return;
    };
    let Ok(lowered) = compile::lower_for(&policy, &opts, Os::Macos) else {
        return;
    };
    // A string the emitter cannot write safely is refused, not written.
    let Ok(emitted) = crate::back::sbpl::emit(&lowered.ir) else {
        return;
    };
    let profile_text = emitted.text;
    let datums = sbpl::parse(&profile_text).unwrap_or_else(|e| panic!("{e}\n{profile_text}"));
    let findings = sbpl::check(&datums);
    assert!(!sbpl::has_errors(&findings), "{findings:?}\n{profile_text}");
    let meta = crate::back::sbpl::Meta::read(&profile_text)
        .expect("metadata line")
        .expect("metadata parses");
    let params: BTreeMap<String, String> = PARAMS
        .iter()
        .filter(|(k, _)| meta.params.iter().any(|p| p == k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let profile = Profile::from_datums(&datums, &params).unwrap_or_else(|e| panic!("{e}"));
    let ir = expanded(&lowered.ir);
    let ws = PARAMS[0].1;
    let mut probes = vec![
        format!("{ws}/sbx-unrelated/f"),
        format!("{HOME}/sbx-unrelated"),
        "/etc/sbx-unrelated".to_string(),
        "/Library/sbx-unrelated".to_string(),
    ];
    for g in &ir.fs {
        for p in std::iter::once(&g.path).chain(&g.aliases) {
            if path_within(p, ws) {
                probes.push(p.clone());
                if g.kind != PathKind::File {
                    probes.push(format!("{p}/sbx-child"));
                }
            }
        }
    }
    for p in &probes {
        let a = ir.access_at(p);
        for (op, want) in [
            (FileOp::Read, a.read),
            (FileOp::Write, a.update),
            (FileOp::ProcessExec, a.execute),
        ] {
            let got = profile.decide(op, p);
            assert!(
                got.is_allow() == want && (got.is_allow() || got.is_deny()),
                "{op:?} {p}: profile {got:?}, IR {want}\n{text}\n{profile_text}"
            );
        }
    }
}

/// The IR with a portable profile's placeholders filled in.
fn expanded(ir: &Ir) -> Ir {
    let mut ir = ir.clone();
    if ir.mode == PathMode::Portable {
        let fill = |p: &mut String| {
            for (name, value) in &PARAMS[..3] {
                if let Some(rest) = p.strip_prefix(&format!("${{{name}}}")) {
                    *p = format!("{value}{rest}");
                    return;
                }
            }
        };
        for g in &mut ir.fs {
            fill(&mut g.path);
            g.aliases.iter_mut().for_each(fill);
        }
    }
    ir
}
