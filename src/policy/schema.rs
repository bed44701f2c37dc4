//! The JSON Schema of the policy format, generated from [`super::model`],
//! and validation of each file against it before deserialising.

use super::model::Layer;
use super::source::Parsed;
use crate::diag::{codes, Diagnostic};
use jsonschema::error::ValidationErrorKind;
use jsonschema::ValidationError;
use serde_json::Value;
use std::sync::OnceLock;

/// The schema as JSON (what `sbx schema` prints).
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::to_value(schemars::schema_for!(Layer)).expect("schema serialises")
    })
}

/// `sbx schema` output: pretty JSON with a trailing newline.
pub fn schema_text() -> String {
    let mut s = serde_json::to_string_pretty(schema()).expect("schema serialises");
    s.push('\n');
    s
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| jsonschema::validator_for(schema()).expect("generated schema is valid"))
}

/// Every schema violation in the file, each located.
pub fn validate(parsed: &Parsed) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for e in validator().iter_errors(&parsed.value) {
        collect(&e, parsed, &mut out);
    }
    out.sort_by_key(|d| d.location.as_ref().map(|l| l.span.start));
    out.dedup();
    out
}

fn collect(e: &ValidationError<'_>, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    let at = e.instance_path().as_str().to_string();
    match e.kind() {
        // `Mergeable` is "a list or a merge table": report the errors of the
        // branch that has the value's type, not "matches none of".
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            let branch = context
                .iter()
                .filter(|errs| {
                    !errs.iter().any(|b| {
                        b.instance_path().as_str() == at
                            && matches!(b.kind(), ValidationErrorKind::Type { .. })
                    })
                })
                .min_by_key(|errs| errs.len());
            match branch {
                Some(errs) => errs.iter().for_each(|b| collect(b, parsed, out)),
                None => out.push(
                    Diagnostic::new(
                        codes::SCHEMA,
                        format!("{}: expected a list or a merge table", describe(&at)),
                    )
                    .at(parsed.locate(&at))
                    .help("write `[[key]]` entries, or a table with `strategy` and `value`"),
                ),
            }
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for key in unexpected {
                let ptr = format!("{at}/{}", super::source::escape_pointer(key));
                let mut d = Diagnostic::new(
                    codes::SCHEMA,
                    format!("unknown key `{key}` in {}", describe(&at)),
                )
                .at(parsed.locate_key(&ptr));
                d = d.help(match (at.as_str(), key.as_str()) {
                    ("", "conversation") => {
                        "this looks like a larger config: select a tool's policy with --tool NAME"
                            .to_string()
                    }
                    _ => format!("allowed keys here: {}", allowed_keys(&at)),
                });
                out.push(d);
            }
        }
        kind => {
            let (message, help) = explain(kind, e);
            out.push(
                Diagnostic::new(codes::SCHEMA, format!("{}: {message}", describe(&at)))
                    .at(parsed.locate(&at))
                    .help(help),
            );
        }
    }
}

fn explain(kind: &ValidationErrorKind, e: &ValidationError<'_>) -> (String, String) {
    match kind {
        ValidationErrorKind::Type { kind } => (
            format!(
                "expected {}, found {}",
                type_name(kind),
                value_kind(e.instance())
            ),
            "see `sbx schema` for each key's type".into(),
        ),
        ValidationErrorKind::Required { property } => (
            format!("missing required key {property}"),
            format!("add {property} = …"),
        ),
        ValidationErrorKind::Enum { options } => (
            format!("{} is not one of {}", e.instance(), options),
            "use one of the listed values".into(),
        ),
        ValidationErrorKind::Minimum { limit }
        | ValidationErrorKind::ExclusiveMinimum { limit } => (
            format!("{} is below the minimum {limit}", e.instance()),
            "use a larger value".into(),
        ),
        ValidationErrorKind::Maximum { limit }
        | ValidationErrorKind::ExclusiveMaximum { limit } => (
            format!("{} is above the maximum {limit}", e.instance()),
            "use a smaller value".into(),
        ),
        ValidationErrorKind::MinLength { .. } => {
            ("must not be empty".into(), "give a non-empty string".into())
        }
        _ => (e.to_string(), "see `sbx schema`".into()),
    }
}

fn type_name(kind: &jsonschema::error::TypeKind) -> String {
    let raw = match kind {
        jsonschema::error::TypeKind::Single(t) => t.to_string(),
        jsonschema::error::TypeKind::Multiple(ts) => {
            let v: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
            v.join(" or ")
        }
    };
    raw.replace("object", "a table")
        .replace("array", "a list")
        .replace("string", "a string")
        .replace("boolean", "a boolean (true/false)")
        .replace("integer", "an integer")
        .replace("number", "a number")
        .replace("null", "nothing")
}

fn value_kind(v: &Value) -> String {
    match v {
        Value::Null => "nothing".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.len() <= 40 => format!("the string {s:?}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a table".into(),
    }
}

/// `/fs/2/read` → "`fs[2].read`".
pub fn describe(pointer: &str) -> String {
    if pointer.is_empty() {
        return "the top level".into();
    }
    let mut s = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.parse::<usize>().is_ok() {
            s.push_str(&format!("[{seg}]"));
        } else {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(&seg);
        }
    }
    format!("`{s}`")
}

/// The property names the schema allows at `pointer`, for help lines.
fn allowed_keys(pointer: &str) -> String {
    let root = schema();
    let mut node = root;
    for seg in pointer.split('/').skip(1) {
        node = resolve(root, node);
        node = if seg.parse::<usize>().is_ok() {
            match node.get("items") {
                Some(i) => i,
                None => return "see `sbx schema`".into(),
            }
        } else {
            match node.get("properties").and_then(|p| p.get(seg)) {
                Some(n) => n,
                None => match node.get("additionalProperties") {
                    Some(n) if n.is_object() => n,
                    _ => return "see `sbx schema`".into(),
                },
            }
        };
    }
    node = resolve(root, node);
    match node.get("properties").and_then(Value::as_object) {
        Some(p) => p.keys().cloned().collect::<Vec<_>>().join(", "),
        None => "see `sbx schema`".into(),
    }
}

/// Follow `$ref` and pick the object branch of an `anyOf`.
fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..8 {
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            let ptr = r.trim_start_matches('#');
            match root.pointer(ptr) {
                Some(n) => node = n,
                None => return node,
            }
        } else if let Some(branches) = node.get("anyOf").and_then(Value::as_array) {
            let pick = branches
                .iter()
                .find(|b| b.get("type") == Some(&Value::from("array")))
                .or_else(|| {
                    branches
                        .iter()
                        .find(|b| b.get("type") != Some(&Value::from("null")))
                });
            match pick {
                Some(b) => node = b,
                None => return node,
            }
        } else {
            return node;
        }
    }
    node
}

#[cfg(test)]
mod tests {
    #[test]
    fn allowed_keys_follow_refs() {
        let k = super::allowed_keys("/fs/0");
        assert!(k.contains("path") && k.contains("external"), "{k}");
        assert!(super::allowed_keys("").contains("enforcement"));
    }
}
