//! The emitted schema and `check` agree: random policy documents, most of
//! them a valid policy with a few edits at the edges (a version other than
//! 1, an unknown key, a value of the wrong type, an enum string that is not
//! one, a number out of range, a table written as a list), are accepted by
//! `check`'s schema stage exactly when the schema `sbx schema` prints
//! validates them. The schema side is the `jsonschema` crate on the printed
//! text; `check` accepts a schema-valid document through the typed
//! deserialiser (`policy::typed`), without consulting a validator, so a
//! rule the types and the schema say differently is caught either way.

use proptest::prelude::*;
use sbx::diag::codes;
use sbx::policy::{load_layer, schema, source::Parsed, source::SourceFile, typed};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// A small deterministic generator: proptest draws the seed (and shrinks
/// it); the document is a function of the seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True one time in `n`.
    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
    fn pick(&mut self, xs: &[Value]) -> Value {
        xs[self.below(xs.len())].clone()
    }
}

/// How a value of one place in the policy is drawn: usually valid, one
/// time in `BAD` from the place's edge cases.
const BAD: usize = 12;

#[derive(Clone, Copy)]
enum Kind {
    Bool,
    Version,
    Positive,
    Port,
    Abi,
    /// A string the schema requires to be non-empty.
    NonEmpty,
    Text,
    Enum(&'static [&'static str]),
}

fn scalar(g: &mut Gen, k: Kind) -> Value {
    let bad = g.one_in(BAD);
    if bad && g.one_in(4) {
        // Wrong types every place refuses (a float JSON cannot mistake for
        // an integer, as it would 2.0).
        return g.pick(&[json!("x"), json!(1.5), json!([]), json!({})]);
    }
    match (k, bad) {
        (Kind::Bool, false) => g.pick(&[json!(true), json!(false)]),
        (Kind::Bool, true) => g.pick(&[json!("true"), json!(1), json!([true])]),
        (Kind::Version, false) => json!(1),
        (Kind::Version, true) => g.pick(&[json!(0), json!(2), json!(-1), json!("1"), json!(1.5)]),
        (Kind::Positive, false) => g.pick(&[json!(1), json!(7), json!(3600)]),
        (Kind::Positive, true) => g.pick(&[json!(0), json!(-3), json!("5"), json!(true)]),
        (Kind::Port, false) => g.pick(&[json!(1), json!(443), json!(65535)]),
        (Kind::Port, true) => g.pick(&[json!(0), json!(65536), json!(-1), json!("443")]),
        (Kind::Abi, false) => json!(1 + g.below(7)),
        (Kind::Abi, true) => g.pick(&[json!(0), json!(8), json!(-7)]),
        (Kind::NonEmpty, false) => {
            g.pick(&[json!("."), json!("src"), json!("~/.cache"), json!("AWS_*")])
        }
        (Kind::NonEmpty, true) => g.pick(&[json!(""), json!(1), json!(false)]),
        (Kind::Text, false) => g.pick(&[json!(""), json!("x"), json!("/api")]),
        (Kind::Text, true) => g.pick(&[json!(2), json!(true)]),
        (Kind::Enum(opts), false) => json!(opts[g.below(opts.len())]),
        (Kind::Enum(opts), true) => {
            // Right word, wrong case; or not a word of the enum at all.
            let upper = opts[g.below(opts.len())].to_uppercase();
            g.pick(&[json!(upper), json!("strict"), json!(""), json!(1)])
        }
    }
}

/// Draws the value of one key.
type Draw<'a> = &'a dyn Fn(&mut Gen) -> Value;

fn list(g: &mut Gen, item: Draw) -> Value {
    let n = g.below(3);
    Value::Array((0..n).map(|_| item(g)).collect())
}

/// A table with each of `keys` present half the time, sometimes an
/// unknown key, rarely not a table at all.
fn table(g: &mut Gen, keys: &[(&str, Draw)], required: &[&str]) -> Value {
    if g.one_in(BAD * 2) {
        return g.pick(&[json!([1, 2]), json!("table"), json!(true)]);
    }
    let mut m = Map::new();
    for (k, f) in keys {
        let required = required.contains(k) && !g.one_in(BAD);
        if required || g.one_in(2) {
            m.insert(k.to_string(), f(g));
        }
    }
    if g.one_in(BAD) {
        m.insert(
            g.pick(&[json!("bogus"), json!("reed"), json!("Version")])
                .as_str()
                .unwrap()
                .into(),
            json!(true),
        );
    }
    Value::Object(m)
}

/// `[[key]]` items, or a merge table `{strategy, value}`.
fn mergeable(g: &mut Gen, item: Draw) -> Value {
    let items = list(g, item);
    if !g.one_in(4) {
        return items;
    }
    let strategy = |g: &mut Gen| scalar(g, Kind::Enum(&["append", "prepend", "replace", "dedup"]));
    let value = move |_: &mut Gen| items.clone();
    table(g, &[("strategy", &strategy), ("value", &value)], &["value"])
}

fn fs_rule(g: &mut Gen) -> Value {
    let b = |g: &mut Gen| scalar(g, Kind::Bool);
    let path = |g: &mut Gen| scalar(g, Kind::NonEmpty);
    table(
        g,
        &[
            ("path", &path),
            ("read", &b),
            ("write", &b),
            ("create", &b),
            ("update", &b),
            ("delete", &b),
            ("execute", &b),
            ("external", &b),
        ],
        &["path"],
    )
}

fn net_rule(g: &mut Gen) -> Value {
    let b = |g: &mut Gen| scalar(g, Kind::Bool);
    let host = |g: &mut Gen| scalar(g, Kind::NonEmpty);
    let scheme = |g: &mut Gen| scalar(g, Kind::Enum(&["http", "https", "ws", "wss", "ssh", "tcp"]));
    let port = |g: &mut Gen| scalar(g, Kind::Port);
    let prefix = |g: &mut Gen| scalar(g, Kind::Text);
    table(
        g,
        &[
            ("host", &host),
            ("scheme", &scheme),
            ("port", &port),
            ("path_prefix", &prefix),
            ("bind", &b),
            ("allow", &b),
        ],
        &[],
    )
}

fn env_rule(g: &mut Gen) -> Value {
    let b = |g: &mut Gen| scalar(g, Kind::Bool);
    let name = |g: &mut Gen| scalar(g, Kind::NonEmpty);
    table(g, &[("name", &name), ("read", &b)], &["name"])
}

fn command(g: &mut Gen) -> Value {
    let text = |g: &mut Gen| scalar(g, Kind::Text);
    let args = |g: &mut Gen| {
        if g.one_in(BAD) {
            // A list of strings where a list of lists belongs.
            return json!(["check"]);
        }
        list(g, &|g| list(g, &text))
    };
    let envs = |g: &mut Gen| list(g, &text);
    table(g, &[("args", &args), ("envs", &envs)], &[])
}

fn document(seed: u64) -> Value {
    let g = &mut Gen(seed | 1);
    let b = |g: &mut Gen| scalar(g, Kind::Bool);
    let pos = |g: &mut Gen| scalar(g, Kind::Positive);
    let non_empty = |g: &mut Gen| scalar(g, Kind::NonEmpty);
    let text = |g: &mut Gen| scalar(g, Kind::Text);
    let version = |g: &mut Gen| scalar(g, Kind::Version);
    let enforcement = |g: &mut Gen| scalar(g, Kind::Enum(&["best_effort", "required"]));
    let fs = |g: &mut Gen| mergeable(g, &fs_rule);
    let net = |g: &mut Gen| mergeable(g, &net_rule);
    let env = |g: &mut Gen| mergeable(g, &env_rule);
    let sensitive = |g: &mut Gen| mergeable(g, &text);
    let commands = |g: &mut Gen| {
        let names = ["cargo", "git", "x.y"];
        let cmd = |g: &mut Gen| command(g);
        let keys: Vec<(&str, Draw)> = names.iter().map(|n| (*n, &cmd as Draw)).collect();
        table(g, &keys, &[])
    };
    let process = |g: &mut Gen| {
        let preset = |g: &mut Gen| {
            scalar(
                g,
                Kind::Enum(&[
                    "system_runtime",
                    "developer_toolchains",
                    "user_temp",
                    "package_manager_config",
                ]),
            )
        };
        let presets = |g: &mut Gen| list(g, &preset);
        let roots = |g: &mut Gen| list(g, &non_empty);
        table(
            g,
            &[
                ("presets", &presets),
                ("read_roots", &roots),
                ("write_roots", &roots),
            ],
            &[],
        )
    };
    let limits = |g: &mut Gen| {
        table(
            g,
            &[
                ("max_processes", &pos),
                ("max_memory_mib", &pos),
                ("cpu_time_s", &pos),
                ("wall_time_s", &pos),
            ],
            &[],
        )
    };
    let macos = |g: &mut Gen| {
        let names = |g: &mut Gen| list(g, &text);
        table(g, &[("mach_lookup", &names), ("allow_pty", &b)], &[])
    };
    let linux = |g: &mut Gen| {
        let scope = |g: &mut Gen| scalar(g, Kind::Enum(&["abstract_unix_socket", "signal"]));
        let scopes = |g: &mut Gen| list(g, &scope);
        let abi = |g: &mut Gen| scalar(g, Kind::Abi);
        table(g, &[("scopes", &scopes), ("min_abi", &abi)], &[])
    };
    let windows = |g: &mut Gen| {
        let token = |g: &mut Gen| scalar(g, Kind::Enum(&["restricted", "low_integrity", "none"]));
        let ui = |g: &mut Gen| scalar(g, Kind::Enum(&["desktop", "handles", "read_clipboard"]));
        let uis = |g: &mut Gen| list(g, &ui);
        table(
            g,
            &[
                ("token", &token),
                ("appcontainer", &b),
                ("ui_restrictions", &uis),
                ("kill_on_close", &b),
            ],
            &[],
        )
    };
    let doc = table(
        g,
        &[
            ("version", &version),
            ("enforcement", &enforcement),
            ("fs", &fs),
            ("net", &net),
            ("env", &env),
            ("commands", &commands),
            ("sensitive_paths", &sensitive),
            ("process", &process),
            ("limits", &limits),
            ("macos", &macos),
            ("linux", &linux),
            ("windows", &windows),
        ],
        &[],
    );
    // A policy file is a table.
    if doc.is_object() {
        doc
    } else {
        json!({ "version": doc })
    }
}

/// The schema `sbx schema` prints, compiled by the test's own validator.
fn emitted() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let text = schema::schema_text();
        let schema: Value = serde_json::from_str(&text).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
}

/// `check`'s verdict on the schema: no SBX002 or SBX003.
fn check_accepts(text: &str) -> bool {
    let file = SourceFile {
        name: "p.toml".into(),
        text: text.into(),
    };
    match load_layer(file, None) {
        Ok(_) => true,
        Err(d) => !d
            .iter()
            .any(|d| d.code == codes::SCHEMA || d.code == codes::VERSION),
    }
}

fn agree(doc: &Value) -> Result<(), TestCaseError> {
    let text = toml::to_string(doc).map_err(|e| TestCaseError::reject(e.to_string()))?;
    let parsed = Parsed::parse(SourceFile {
        name: "p.toml".into(),
        text: text.as_str().into(),
    })
    .map_err(|d| TestCaseError::fail(format!("{text}: {}", d.message)))?;
    prop_assert_eq!(&parsed.value, doc, "the TOML text means the document");
    let by_schema = emitted().is_valid(doc);
    let by_check = check_accepts(&text);
    prop_assert_eq!(
        by_schema,
        by_check,
        "schema {} but check {}:\n{}",
        by_schema,
        by_check,
        text
    );
    // The typed path alone, which `check` trusts without a validator (it
    // may pass a valid document on to the validator, never accept an
    // invalid one).
    if typed::typed(&parsed).is_some() {
        prop_assert!(by_schema, "typed accepts, schema refuses:\n{}", text);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn schema_accepts_exactly_what_check_accepts(seed in any::<u64>()) {
        agree(&document(seed))?;
    }
}

/// The edges the generator is meant to reach, written out: each must be
/// judged alike by both sides, and the sample must hold both verdicts.
#[test]
fn known_edges_agree() {
    let cases = [
        json!({"version": 1}),
        json!({"version": 2}),
        json!({"version": 0}),
        json!({"version": "1"}),
        json!({"enforcement": "Required"}),
        json!({"fs": [{"path": "", "read": true}]}),
        json!({"fs": {"strategy": "replace", "value": []}}),
        json!({"fs": {"strategy": "merge", "value": []}}),
        json!({"fs": {"strategy": "append"}}),
        json!({"net": [{"port": 65536}]}),
        json!({"limits": [60, 120]}),
        json!({"limits": {"cpu_time_s": 0}}),
        json!({"linux": {"min_abi": 8}}),
        json!({"commands": {"git": {"args": ["status"]}}}),
        json!({"bogus": true}),
    ];
    let mut verdicts = std::collections::BTreeSet::new();
    for c in &cases {
        agree(c).unwrap();
        verdicts.insert(emitted().is_valid(c));
    }
    assert_eq!(verdicts.len(), 2);
}

/// The generator reaches both verdicts, in useful proportions.
#[test]
fn generator_mixes_valid_and_invalid() {
    let valid = (0..400u64)
        .filter(|s| emitted().is_valid(&document(s.wrapping_mul(0x9E37_79B9_7F4A_7C15))))
        .count();
    assert!((40..=360).contains(&valid), "{valid} of 400 valid");
}
