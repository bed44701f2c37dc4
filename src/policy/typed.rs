//! The happy path of schema validation: a document that deserialises into
//! [`Layer`] and meets the schema's value constraints (the ones the Rust
//! types do not carry) is schema-valid, so the JSON Schema validator, whose
//! construction is most of a small compile, is only built for documents
//! that fail here and need its located messages.

use super::model::{Layer, Mergeable};
use super::source::Parsed;

/// `Some(layer)` only if the document is valid against the schema.
pub fn typed(parsed: &Parsed) -> Option<Layer> {
    // Stand-ins for floats and datetimes could pass for strings: the
    // schema path reports them.
    if !parsed.lossy_pointers().is_empty() {
        return None;
    }
    let l = Layer::deserialize(&parsed.value).ok()?;
    // Serde is laxer than the schema in shape (a struct may be written as
    // a list, a merge table as a two-item list): the document must be
    // exactly what the layer serialises back to.
    if serde_json::to_value(&l).ok()? != parsed.value {
        return None;
    }
    constraints_hold(&l).then_some(l)
}

fn items<T>(m: &Option<Mergeable<T>>) -> &[T] {
    match m {
        None => &[],
        Some(Mergeable::List(v)) => v,
        Some(Mergeable::Merge(t)) => &t.value,
    }
}

/// Every `minLength`/`minimum`/`maximum` in the schema; the test below
/// fails when the schema gains a constraint this does not check.
fn constraints_hold(l: &Layer) -> bool {
    let at_least_1 = |n: Option<u64>| n.is_none_or(|n| n >= 1);
    items(&l.fs).iter().all(|r| !r.path.is_empty())
        && items(&l.net)
            .iter()
            .all(|r| r.host.as_ref().is_none_or(|h| !h.is_empty()) && r.port != Some(0))
        && items(&l.env).iter().all(|r| !r.name.is_empty())
        && l.limits.as_ref().is_none_or(|x| {
            at_least_1(x.max_processes)
                && at_least_1(x.max_memory_mib)
                && at_least_1(x.cpu_time_s)
                && at_least_1(x.wall_time_s)
        })
        && l.linux
            .as_ref()
            .and_then(|x| x.min_abi)
            .is_none_or(|n| (1..=7).contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Value constraints in the schema, as (pointer, keyword, value).
    fn constraints(v: &Value, at: &str, out: &mut Vec<(String, String, Value)>) {
        const VALUE_KEYWORDS: &[&str] = &[
            "minLength",
            "maxLength",
            "pattern",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minItems",
            "maxItems",
            "uniqueItems",
            "minProperties",
            "maxProperties",
            "const",
            "not",
            "if",
            "dependentRequired",
            "dependentSchemas",
            "propertyNames",
            "contains",
        ];
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if VALUE_KEYWORDS.contains(&k.as_str()) {
                        out.push((at.to_string(), k.clone(), x.clone()));
                    }
                    constraints(x, &format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    constraints(x, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn the_schema_has_only_the_constraints_checked_here() {
        let mut found = Vec::new();
        constraints(super::super::schema::schema(), "", &mut found);
        let p = |s: &str| format!("/$defs/{s}");
        let expected = vec![
            // Checked by the deserialiser itself (`check::version`).
            ("/properties/version".to_string(), "const", json!(1)),
            (p("EnvRule/properties/name"), "minLength", json!(1)),
            (p("FsRule/properties/path"), "minLength", json!(1)),
            (p("Limits/properties/cpu_time_s"), "minimum", json!(1)),
            (p("Limits/properties/max_memory_mib"), "minimum", json!(1)),
            (p("Limits/properties/max_processes"), "minimum", json!(1)),
            (p("Limits/properties/wall_time_s"), "minimum", json!(1)),
            (p("Linux/properties/min_abi"), "maximum", json!(7)),
            (p("Linux/properties/min_abi"), "minimum", json!(1)),
            (p("NetRule/properties/host"), "minLength", json!(1)),
            (p("NetRule/properties/port"), "maximum", json!(65535)),
            (p("NetRule/properties/port"), "minimum", json!(1)),
            (
                p("Process/properties/read_roots/items"),
                "minLength",
                json!(1),
            ),
            (
                p("Process/properties/write_roots/items"),
                "minLength",
                json!(1),
            ),
        ];
        let mut expected: Vec<(String, String, Value)> = expected
            .into_iter()
            .map(|(a, b, c)| (a, b.to_string(), c))
            .collect();
        found.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        expected.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        assert_eq!(
            found, expected,
            "the schema's value constraints changed: update constraints_hold"
        );
    }

    fn schema_valid(v: &Value) -> bool {
        jsonschema::validator_for(super::super::schema::schema())
            .unwrap()
            .is_valid(v)
    }

    #[test]
    fn agrees_with_the_schema_at_each_boundary() {
        let cases = [
            json!({}),
            json!({"version": 1, "fs": [{"path": ".", "read": true}]}),
            json!({"fs": [{"path": "", "read": true}]}),
            json!({"fs": {"strategy": "replace", "value": [{"path": ""}]}}),
            json!({"net": [{"port": 0}]}),
            json!({"net": [{"port": 1}]}),
            json!({"net": [{"port": 65535}]}),
            json!({"net": [{"port": 65536}]}),
            json!({"net": [{"host": ""}]}),
            json!({"env": [{"name": ""}]}),
            json!({"env": [{"name": "A"}]}),
            json!({"limits": {"cpu_time_s": 0}}),
            json!({"limits": {"wall_time_s": 1}}),
            json!({"limits": {"max_processes": 0}}),
            json!({"limits": {"max_memory_mib": 0}}),
            json!({"linux": {"min_abi": 0}}),
            json!({"linux": {"min_abi": 7}}),
            json!({"linux": {"min_abi": 8}}),
            json!({"net": [{"port": 1.0}]}),
            json!({"fs": [{"path": "x", "nope": true}]}),
            json!({"commands": {"git": {"args": [["status", "**"]]}}}),
            json!({"sensitive_paths": {"strategy": "dedup", "value": ["a"]}}),
            json!({"fs": {"value": [{"path": ".", "read": true}]}}),
            // Serde reads a struct from a list; the schema does not.
            json!({"fs": [[".", true]]}),
            json!({"fs": ["append", [{"path": ".", "read": true}]]}),
            json!({"limits": [1, 2]}),
            json!({"process": {"read_roots": [""]}}),
            json!({"process": {"write_roots": ["/x"]}}),
            json!({"commands": {"git": [[["status"]]]}}),
        ];
        for c in cases {
            let text = toml::to_string(&c).unwrap();
            let parsed = Parsed::parse(crate::policy::source::SourceFile {
                name: "p.toml".into(),
                text: text.into(),
            })
            .unwrap();
            let (t, s) = (typed(&parsed).is_some(), schema_valid(&c));
            // Typed accepting what the schema rejects must never happen.
            assert!(!t || s, "typed accepts, the schema rejects: {c}");
            // The other way round only costs time: JSON Schema's `integer`
            // admits 1.0 (TOML's float, refused later as lossy), and a
            // merge table without `strategy` does not serialise back as
            // written.
            let slow = c == json!({"net": [{"port": 1.0}]})
                || c == json!({"fs": {"value": [{"path": ".", "read": true}]}});
            assert!(t == s || slow, "typed {t}, schema {s}: {c}");
        }
    }
}
