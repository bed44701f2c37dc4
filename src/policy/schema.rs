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
    lossy(parsed, &mut out);
    out.sort_by_key(|d| d.location.as_ref().map(|l| l.span.start));
    out.dedup();
    out
}

fn collect(e: &ValidationError<'_>, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    let at = e.instance_path().as_str().to_string();
    match e.kind() {
        // Optional keys and `Mergeable` are "one of these shapes": report
        // the errors of the branch that has the value's type, not "matches
        // none of".
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
                None => {
                    let help = if is_mergeable(&at) {
                        format!(
                            "write `[[{0}]]` entries, or a merge table `[{0}]` with `strategy` and `[[{0}.value]]`",
                            last_segment(&at)
                        )
                    } else {
                        let types = node_at(&at).map(types_of).unwrap_or_default();
                        let types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
                        type_help(&types, e.instance(), parsed.lossy(&at))
                    };
                    out.push(
                        Diagnostic::new(
                            codes::SCHEMA,
                            format!(
                                "{}: expected {}, found {}",
                                describe(&at),
                                expected(&at),
                                value_kind(parsed, &at, e.instance())
                            ),
                        )
                        .at(parsed.locate(&at))
                        .help(help),
                    )
                }
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
                    _ if is_mergeable(&at) => format!(
                        "a table here is a merge table (keys: strategy, value); write rules as `[[{0}]]` or `[[{0}.value]]`",
                        last_segment(&at)
                    ),
                    _ => match suggest(key, &key_names(&at)) {
                        Some(k) => format!(
                            "did you mean `{k}`? (allowed keys here: {})",
                            allowed_keys(&at)
                        ),
                        None => format!("allowed keys here: {}", allowed_keys(&at)),
                    },
                });
                out.push(d);
            }
        }
        // A version of the wrong type is reported as that alone.
        ValidationErrorKind::Constant { .. } if at == "/version" => {
            if e.instance().is_number() {
                out.push(
                    Diagnostic::new(
                        codes::VERSION,
                        format!("unsupported policy version {}", e.instance()),
                    )
                    .at(parsed.locate(&at))
                    .help("this sbx understands version = 1"),
                )
            }
        }
        kind => {
            let (message, help) = explain(kind, e, parsed, &at);
            out.push(
                Diagnostic::new(codes::SCHEMA, format!("{}: {message}", describe(&at)))
                    .at(parsed.locate(&at))
                    .help(help),
            );
        }
    }
}

/// JSON has no floats-that-must-be-integers, datetimes or 128-bit integers;
/// their stand-ins (see source.rs) could pass for an integer or a string.
/// Refuse them wherever the schema expects one of those, so that schema
/// validation and deserialisation always agree.
fn lossy(parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    for p in parsed.lossy_pointers() {
        let loc = parsed.locate(&p);
        if out.iter().any(|d| d.location == loc) {
            continue; // already reported as the wrong type
        }
        let Some(node) = node_at(&p) else { continue };
        let types = types_of(node);
        let passes = match parsed.value.pointer(&p) {
            Some(Value::String(_)) => types.contains(&"string"),
            Some(Value::Number(n)) => {
                types.contains(&"integer") && n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        };
        if passes {
            out.push(
                Diagnostic::new(
                    codes::SCHEMA,
                    format!(
                        "{}: expected {}, found {}",
                        describe(&p),
                        expected(&p),
                        parsed.lossy(&p).unwrap_or("a value of another type")
                    ),
                )
                .at(loc)
                .help(type_help(
                    &types.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
                    parsed.value.pointer(&p).unwrap_or(&Value::Null),
                    parsed.lossy(&p),
                )),
            );
        }
    }
}

fn explain(
    kind: &ValidationErrorKind,
    e: &ValidationError<'_>,
    parsed: &Parsed,
    at: &str,
) -> (String, String) {
    match kind {
        ValidationErrorKind::Type { kind } => (
            format!(
                "expected {}, found {}",
                type_name(kind),
                value_kind(parsed, at, e.instance())
            ),
            type_help(&types_of_kind(kind), e.instance(), parsed.lossy(at)),
        ),
        ValidationErrorKind::Required { property } => {
            let key = property
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| property.to_string());
            let help = if key == "value" && is_mergeable(at) {
                format!(
                    "a merge table needs the list it merges: add `[[{}.value]]` entries",
                    last_segment(at)
                )
            } else {
                format!("add `{key} = …`")
            };
            (format!("missing required key `{key}`"), help)
        }
        ValidationErrorKind::Enum { options } => {
            let list = options
                .as_array()
                .map(|o| {
                    o.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_else(|| options.to_string());
            let names: Vec<String> = options
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_str().map(String::from))
                .collect();
            let help = match e.instance().as_str().and_then(|v| suggest(v, &names)) {
                Some(n) => format!("did you mean \"{n}\"?"),
                None => "use one of the listed values".into(),
            };
            (
                format!(
                    "{} is not one of {list}",
                    value_kind(parsed, at, e.instance())
                ),
                help,
            )
        }
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

fn types_of_kind(kind: &jsonschema::error::TypeKind) -> Vec<String> {
    match kind {
        jsonschema::error::TypeKind::Single(t) => vec![t.to_string()],
        jsonschema::error::TypeKind::Multiple(ts) => ts.iter().map(|t| t.to_string()).collect(),
    }
}

/// How to write a value of the expected type, in TOML.
fn type_help(expected: &[String], found: &Value, lossy: Option<&str>) -> String {
    let want = |t: &str| expected.iter().any(|e| e == t);
    if lossy.is_some_and(|l| l.contains("out of range")) {
        return "TOML integers are 64-bit: -9223372036854775808 to 9223372036854775807".into();
    }
    if want("boolean") {
        "write `true` or `false`, without quotes".into()
    } else if want("integer") && found.is_string() && lossy.is_none() {
        "write the number without quotes".into()
    } else if want("integer") {
        "write a whole number, without quotes or a decimal point".into()
    } else if want("string") {
        "write the value in quotes: \"…\"".into()
    } else if want("array") {
        "write a list in brackets: [\"a\", \"b\"]".into()
    } else if want("object") {
        "write a table: a `[section]` header, or `key = { … }`".into()
    } else {
        "see `sbx schema` for each key's type".into()
    }
}

/// TOML has no null, so the schema's `null` (for optional keys) is never
/// what the user should write.
fn type_name(kind: &jsonschema::error::TypeKind) -> String {
    let names: Vec<String> = match kind {
        jsonschema::error::TypeKind::Single(t) => vec![t.to_string()],
        jsonschema::error::TypeKind::Multiple(ts) => ts.iter().map(|t| t.to_string()).collect(),
    };
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    type_list(&names)
}

fn type_list(names: &[&str]) -> String {
    let v: Vec<&str> = names
        .iter()
        .filter_map(|t| match *t {
            "object" => Some("a table"),
            "array" => Some("a list"),
            "string" => Some("a string"),
            "boolean" => Some("a boolean (true/false)"),
            "integer" => Some("an integer"),
            "number" => Some("a number"),
            _ => None,
        })
        .collect();
    if v.is_empty() {
        "another value".into()
    } else {
        v.join(" or ")
    }
}

/// What the schema expects at `pointer`, in words.
fn expected(pointer: &str) -> String {
    match node_at(pointer) {
        Some(n) => type_list(&types_of(n)),
        None => "another value".into(),
    }
}

fn value_kind(parsed: &Parsed, at: &str, v: &Value) -> String {
    if let Some(shown) = parsed.lossy(at) {
        return shown.to_string();
    }
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

fn last_segment(pointer: &str) -> String {
    pointer
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .replace("~1", "/")
        .replace("~0", "~")
}

/// The property names the schema allows at `pointer`, for help lines.
fn allowed_keys(pointer: &str) -> String {
    let keys = key_names(pointer);
    if keys.is_empty() {
        "see `sbx schema`".into()
    } else {
        keys.join(", ")
    }
}

/// The keys the schema allows in the table at `pointer`.
fn key_names(pointer: &str) -> Vec<String> {
    node_at(pointer)
        .and_then(|n| pick(n, |b| b.get("properties").is_some()))
        .and_then(|n| n.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The candidate closest to a misspelt `word`, when one is close enough
/// to be what was meant (at most two edits, and fewer than half the
/// word's letters).
fn suggest<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    let limit = 2.min(word.chars().count().saturating_sub(1) / 2).max(1);
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

/// A list-or-merge-table key (`fs`, `net`, `env`, `sensitive_paths`).
fn is_mergeable(pointer: &str) -> bool {
    node_at(pointer).is_some_and(|n| {
        let t = types_of(n);
        t.contains(&"array") && t.contains(&"object")
    })
}

/// The schema node that describes the value at `pointer`, following
/// `$ref`s and, in `anyOf`s, the branch that can hold the next segment.
fn node_at(pointer: &str) -> Option<&'static Value> {
    let mut node = schema();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        node = if seg.parse::<usize>().is_ok() {
            pick(node, |b| b.get("items").is_some())?.get("items")?
        } else {
            let obj = pick(node, |b| {
                b.get("properties").is_some() || b.get("additionalProperties").is_some()
            })?;
            match obj.get("properties").and_then(|p| p.get(&seg)) {
                Some(n) => n,
                None => obj.get("additionalProperties").filter(|n| n.is_object())?,
            }
        };
    }
    Some(node)
}

/// Follow `$ref`s and descend into `anyOf` until a node satisfies `want`.
fn pick(node: &'static Value, want: impl Fn(&Value) -> bool + Copy) -> Option<&'static Value> {
    let node = deref(node);
    if want(node) {
        return Some(node);
    }
    node.get("anyOf")?
        .as_array()?
        .iter()
        .find_map(|b| pick(b, want))
}

fn deref(mut node: &'static Value) -> &'static Value {
    for _ in 0..8 {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => match schema().pointer(r.trim_start_matches('#')) {
                Some(n) => node = n,
                None => break,
            },
            None => break,
        }
    }
    node
}

/// The JSON types a node accepts, without `null`.
fn types_of(node: &'static Value) -> Vec<&'static str> {
    let node = deref(node);
    let mut out: Vec<&'static str> = Vec::new();
    match node.get("type") {
        Some(Value::String(t)) => out.push(t),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    if let Some(bs) = node.get("anyOf").and_then(Value::as_array) {
        for b in bs {
            out.extend(types_of(b));
        }
    }
    out.retain(|t| *t != "null");
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn misspellings_suggest_the_closest_name() {
        let keys = super::key_names("/fs/0");
        assert_eq!(super::suggest("paht", &keys), Some("path"));
        assert_eq!(super::suggest("writ", &keys), Some("write"));
        assert_eq!(super::suggest("excute", &keys), Some("execute"));
        assert_eq!(super::suggest("colour", &keys), None);
        assert_eq!(super::suggest("x", &keys), None);
        let top = super::key_names("");
        assert_eq!(super::suggest("proces", &top), Some("process"));
        assert_eq!(super::suggest("enforcment", &top), Some("enforcement"));
        let presets: Vec<String> = ["system_runtime", "user_temp"].map(String::from).to_vec();
        assert_eq!(super::suggest("user_tmp", &presets), Some("user_temp"));
    }

    #[test]
    fn allowed_keys_follow_refs() {
        let k = super::allowed_keys("/fs/0");
        assert!(k.contains("path") && k.contains("external"), "{k}");
        assert!(super::allowed_keys("").contains("enforcement"));
        assert_eq!(super::allowed_keys("/net"), "strategy, value");
        assert!(super::allowed_keys("/env/value/0").contains("name"));
        assert!(super::allowed_keys("/commands/git").contains("envs"));
    }

    #[test]
    fn expected_types_skip_null() {
        assert_eq!(super::expected("/net/0/port"), "an integer");
        assert_eq!(super::expected("/limits"), "a table");
        assert_eq!(super::expected("/fs"), "a list or a table");
        assert!(super::is_mergeable("/sensitive_paths"));
        assert!(!super::is_mergeable("/process"));
    }
}
