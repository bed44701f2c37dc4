//! Reading a TOML file into a JSON value plus a map from JSON pointers to
//! source spans, so that schema and semantic errors can point at a line.

mod batch;

use crate::diag::{codes, Diagnostic, LineIndex, Location};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// Policy files larger than this are refused before parsing.
pub const MAX_FILE_BYTES: usize = 64 << 20;

/// One input file, as the user named it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: std::sync::Arc<str>,
}

/// Spans of every value, as a tree parallel to the JSON value: nodes hold
/// byte offsets, and each node's children sit in one slice of `kids` in
/// the value's order (array index, or table key order). No pointer
/// strings are built while parsing; a pointer is walked only when a
/// diagnostic needs a location.
#[derive(Debug, Clone, Default)]
struct Spans {
    nodes: Vec<Node>,
    kids: Vec<u32>,
    /// Values JSON cannot hold as written (floats, datetimes, integers
    /// beyond 64 bits), described as the user wrote them, by pointer
    /// (rare: the only pointers built while parsing). Their JSON
    /// stand-ins must not be mistaken for valid input (see schema.rs).
    lossy: HashMap<String, String>,
    /// Added to the spans of the text being converted (a batch, see
    /// batch.rs, is a slice of the file).
    offset: u32,
}

impl Spans {
    fn at(&self, r: Range<usize>) -> (u32, u32) {
        let (a, b) = span32(r);
        (a + self.offset, b + self.offset)
    }
}

#[derive(Debug, Clone, Copy)]
struct Node {
    value: (u32, u32),
    /// The key that introduced the value; `NO_KEY` for array items.
    key: (u32, u32),
    kids: (u32, u32),
}

const NO_KEY: (u32, u32) = (u32::MAX, u32::MAX);

fn span32(r: Range<usize>) -> (u32, u32) {
    // MAX_FILE_BYTES keeps every offset below 2^32.
    (r.start as u32, r.end as u32)
}

fn range(s: (u32, u32)) -> Range<usize> {
    s.0 as usize..s.1 as usize
}

/// A parsed file: the JSON view of (a part of) it and where each piece is.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub file: SourceFile,
    pub value: Value,
    spans: Spans,
    /// Node of `value` (`--tool` selects a part of the document).
    base: u32,
    /// Pointer of `value` inside the whole document.
    base_pointer: String,
    /// `--tool` selected a tool without `access`: `value` is an empty table
    /// standing in for it, located at the tool.
    base_missing: bool,
    lines: LineIndex,
}

impl Parsed {
    pub fn parse(file: SourceFile) -> Result<Parsed, Diagnostic> {
        if file.text.len() > MAX_FILE_BYTES {
            return Err(Diagnostic::new(
                codes::IO,
                format!(
                    "{}: policy file is {} bytes; the limit is {MAX_FILE_BYTES}",
                    file.name,
                    file.text.len()
                ),
            ));
        }
        let parsed = match batch::parse(&file.text) {
            Some(p) => Ok(p),
            None => whole(&file.text),
        };
        let (value, spans, root) = match parsed {
            Ok(p) => p,
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                let loc = location(&file, &LineIndex::new(&file.text), span.clone());
                let message = e.message().trim().to_string();
                let help = if let Some(fixed) = quote_star(&file.text, span.start) {
                    format!("`*` is not a bare TOML key: quote it, as in {fixed}")
                } else if message.contains("escape") || message.contains("unicode") {
                    "in a \"basic string\" a backslash starts an escape: write Windows paths as 'literal strings' or with forward slashes".into()
                } else {
                    "fix the TOML syntax; see https://toml.io".into()
                };
                return Err(Diagnostic::new(
                    codes::TOML_SYNTAX,
                    format!("invalid TOML: {message}"),
                )
                .at(Some(loc))
                .help(help));
            }
        };
        let lines = LineIndex::new(&file.text);
        Ok(Parsed {
            file,
            value,
            spans,
            base: root,
            base_pointer: String::new(),
            base_missing: false,
            lines,
        })
    }

    /// `--tool NAME`: keep only `conversation.tools.NAME.access`.
    pub fn select_tool(mut self, tool: &str) -> Result<Parsed, Diagnostic> {
        let tool_ptr = format!("/conversation/tools/{}", escape_pointer(tool));
        let Some(tool_value) = self.value.pointer(&tool_ptr) else {
            let tools: Vec<String> = self
                .value
                .pointer("/conversation/tools")
                .and_then(Value::as_object)
                .map(|m| m.keys().map(|k| format!("`{k}`")).collect())
                .unwrap_or_default();
            let help = if tools.is_empty() {
                "this file has no [conversation.tools.NAME] tables: drop --tool for a plain policy file".to_string()
            } else {
                format!("tools in this file: {}", tools.join(", "))
            };
            return Err(Diagnostic::new(
                codes::NO_TOOL,
                format!("no tool `{tool}` (expected a table [conversation.tools.{tool}])"),
            )
            .at(self.locate("/conversation/tools"))
            .help(help));
        };
        if !tool_value.is_object() {
            return Err(Diagnostic::new(
                codes::NO_TOOL,
                format!("`conversation.tools.{tool}` is not a table"),
            )
            .at(self.locate(&tool_ptr))
            .help(format!(
                "a tool is a table: [conversation.tools.{tool}] with its policy in [conversation.tools.{tool}.access]"
            )));
        }
        let access = tool_value.get("access").cloned();
        let at = format!("{tool_ptr}/access");
        let (node, exact) = self.walk(&at);
        self.base = node;
        self.base_missing = !exact;
        self.base_pointer = at;
        self.value = match access {
            Some(v) => v,
            // A tool without `access` gets the default policy.
            None => Value::Object(Map::new()),
        };
        Ok(self)
    }

    /// The deepest node on `pointer` (relative to `value`), and whether
    /// the whole pointer was found.
    fn walk(&self, pointer: &str) -> (u32, bool) {
        let mut node = self.base;
        if self.base_missing {
            return (node, pointer.is_empty());
        }
        let mut value = &self.value;
        let Some(rest) = pointer.strip_prefix('/') else {
            return (node, pointer.is_empty());
        };
        for seg in rest.split('/') {
            let next = match value {
                Value::Array(a) => canonical_index(seg).and_then(|i| Some((i, a.get(i)?))),
                Value::Object(m) => {
                    let seg = unescape_pointer(seg);
                    // Tables are small except `commands`, whose keys
                    // merge looks up through `locate_keys`.
                    m.iter().position(|(k, _)| *k == seg).zip(m.get(&*seg))
                }
                _ => None,
            };
            let Some((i, v)) = next else {
                return (node, false);
            };
            let n = self.spans.nodes[node as usize];
            node = self.spans.kids[n.kids.0 as usize + i];
            value = v;
        }
        (node, true)
    }

    /// Location of the value at `pointer` (relative to the selected part),
    /// falling back to the nearest ancestor that has one.
    pub fn locate(&self, pointer: &str) -> Option<Location> {
        let (node, _) = self.walk(pointer);
        let n = self.spans.nodes[node as usize];
        Some(location(&self.file, &self.lines, range(n.value)))
    }

    /// How the user wrote a value that JSON cannot hold as is, if it is one.
    pub fn lossy(&self, pointer: &str) -> Option<&str> {
        self.spans
            .lossy
            .get(&format!("{}{}", self.base_pointer, pointer))
            .map(String::as_str)
    }

    /// Pointers (relative to the selected part) of every lossy value.
    pub fn lossy_pointers(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .spans
            .lossy
            .keys()
            .filter_map(|p| p.strip_prefix(self.base_pointer.as_str()))
            .filter(|p| p.is_empty() || p.starts_with('/'))
            .map(String::from)
            .collect();
        v.sort();
        v
    }

    /// Location of the key that introduced `pointer` (better for "unknown key").
    pub fn locate_key(&self, pointer: &str) -> Option<Location> {
        let (node, exact) = self.walk(pointer);
        let n = self.spans.nodes[node as usize];
        let span = if exact && n.key != NO_KEY && !(self.base_missing && pointer.is_empty()) {
            n.key
        } else {
            n.value
        };
        Some(location(&self.file, &self.lines, range(span)))
    }

    /// Location of each key of the table at `pointer`, in file order.
    pub fn locate_keys(&self, pointer: &str) -> Vec<(&str, Location)> {
        let (node, exact) = self.walk(pointer);
        if !exact || self.base_missing {
            return Vec::new();
        }
        let Some(Value::Object(m)) = self.value.pointer(pointer) else {
            return Vec::new();
        };
        let n = self.spans.nodes[node as usize];
        let kids = &self.spans.kids[n.kids.0 as usize..(n.kids.0 + n.kids.1) as usize];
        m.keys()
            .zip(kids)
            .map(|(k, &c)| {
                let span = self.spans.nodes[c as usize].key;
                (k.as_str(), location(&self.file, &self.lines, range(span)))
            })
            .collect()
    }
}

/// RFD 075 writes `[conversation.tools.*.access]`, which TOML refuses at
/// the `*`: the line with each bare `*` key quoted, when the error is at
/// one. Only the key part is rewritten (up to `]` of a header, or `=`).
fn quote_star(text: &str, at: usize) -> Option<String> {
    if !text.get(at..)?.starts_with('*') {
        return None;
    }
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[start..end].trim_end_matches('\r');
    let mut out = String::with_capacity(line.len() + 4);
    let mut quote = None;
    let mut in_key = true;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '=' | ']') => in_key = false,
            (None, '*') if in_key => {
                out.push_str("\"*\"");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    Some(out)
}

/// An array index as RFC 6901 writes it (no sign, no leading zeros).
fn canonical_index(seg: &str) -> Option<usize> {
    if seg.is_empty() || (seg.len() > 1 && seg.starts_with('0')) {
        return None;
    }
    if !seg.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    seg.parse().ok()
}

pub fn location(file: &SourceFile, lines: &LineIndex, span: Range<usize>) -> Location {
    let (line, column) = lines.line_col(&file.text, span.start);
    Location {
        file: file.name.clone(),
        line,
        column,
        span,
    }
}

/// RFC 6901 escaping of one pointer segment.
pub fn escape_pointer(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

fn unescape_pointer(seg: &str) -> std::borrow::Cow<'_, str> {
    if seg.contains('~') {
        seg.replace("~1", "/").replace("~0", "~").into()
    } else {
        seg.into()
    }
}

/// A new node whose `n` children are filled in by the caller.
fn node(spans: &mut Spans, value: (u32, u32), n: usize) -> u32 {
    let start = spans.kids.len();
    spans.kids.resize(start + n, 0);
    spans.nodes.push(Node {
        value,
        key: NO_KEY,
        kids: (start as u32, n as u32),
    });
    (spans.nodes.len() - 1) as u32
}

/// The whole file in one parse: the JSON value, its spans and the root node.
fn whole(text: &str) -> Result<(Value, Spans, u32), toml::de::Error> {
    let table = DeTable::parse(text)?;
    let mut spans = Spans::default();
    let span = span32(table.span());
    let (value, root) = convert_table(table.into_inner(), span, &At::Root, &mut spans);
    Ok((value, spans, root))
}

/// Where a value sits, as a chain of frames on the stack: a pointer
/// string is only built for the rare lossy value.
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn pointer(&self) -> String {
        match self {
            At::Root => String::new(),
            At::Key(up, k) => format!("{}/{}", up.pointer(), escape_pointer(k)),
            At::Index(up, i) => format!("{}/{i}", up.pointer()),
        }
    }
}

// Both take the parsed tree by value and free each piece once converted:
// the toml tree (a B-tree per table) is twice the size of the JSON value,
// and holding both at once raised the peak memory of a large compile.
fn convert_table(t: DeTable<'_>, span: (u32, u32), at: &At, spans: &mut Spans) -> (Value, u32) {
    let me = node(spans, span, t.len());
    let start = spans.nodes[me as usize].kids.0 as usize;
    let mut m = Map::new();
    for (i, (k, v)) in t.into_iter().enumerate() {
        let key_span = spans.at(k.span());
        let key = k.into_inner().into_owned();
        let (value, kid) = convert(v, &At::Key(at, &key), spans);
        spans.nodes[kid as usize].key = key_span;
        spans.kids[start + i] = kid;
        m.insert(key, value);
    }
    (Value::Object(m), me)
}

fn convert(v: Spanned<DeValue<'_>>, at: &At, spans: &mut Spans) -> (Value, u32) {
    let span = spans.at(v.span());
    let value = match v.into_inner() {
        DeValue::String(s) => Value::String(s.into_owned()),
        DeValue::Integer(i) => {
            // TOML integers are 64-bit signed; anything else must not wrap.
            match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) => Value::Number(n.into()),
                Err(_) => {
                    let shown = format!("the integer {i}, which is out of range");
                    spans.lossy.insert(at.pointer(), shown);
                    Value::String(i.to_string())
                }
            }
        }
        DeValue::Float(f) => {
            let text = f.as_str().to_string();
            spans
                .lossy
                .insert(at.pointer(), format!("the float {text}"));
            match text.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(text),
            }
        }
        DeValue::Boolean(b) => Value::Bool(b),
        DeValue::Datetime(d) => {
            spans
                .lossy
                .insert(at.pointer(), format!("the datetime {d}"));
            Value::String(d.to_string())
        }
        DeValue::Array(a) => {
            let me = node(spans, span, a.len());
            let start = spans.nodes[me as usize].kids.0 as usize;
            let mut items = Vec::with_capacity(a.len());
            for (i, item) in a.into_iter().enumerate() {
                let (value, kid) = convert(item, &At::Index(at, i), spans);
                spans.kids[start + i] = kid;
                items.push(value);
            }
            return (Value::Array(items), me);
        }
        DeValue::Table(t) => return convert_table(t, span, at, spans),
    };
    (value, node(spans, span, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Parsed, Diagnostic> {
        Parsed::parse(SourceFile {
            name: "p.toml".into(),
            text: text.into(),
        })
    }

    #[test]
    fn pointers_map_to_lines() {
        let p = parse("version = 1\n\n[[fs]]\npath = \".\"\nread = true\n").unwrap();
        assert_eq!(p.value["fs"][0]["path"], ".");
        let l = p.locate("/fs/0/read").unwrap();
        assert_eq!((l.line, l.column), (5, 8));
        let k = p.locate_key("/fs/0/read").unwrap();
        assert_eq!((k.line, k.column), (5, 1));
        // Missing pointers fall back to the nearest ancestor.
        assert_eq!(p.locate("/fs/0/nope").unwrap().line, 3);
    }

    #[test]
    fn syntax_errors_are_located() {
        let e = parse("version = 1\nfs = [\n").unwrap_err();
        assert_eq!(e.code, codes::TOML_SYNTAX);
        assert!(e.location.unwrap().line >= 2);
    }

    #[test]
    fn a_bare_star_key_gets_its_quoted_spelling() {
        let e = parse("[conversation.tools.*.access]\n").unwrap_err();
        assert!(e
            .help
            .unwrap()
            .contains(r#"[conversation.tools."*".access]"#),);
        assert_eq!(
            quote_star("a.* = \"x*\" # *\n", 2).as_deref(),
            Some(r#"a."*" = "x*" # *"#)
        );
        assert_eq!(quote_star("a = 1\n", 0), None);
    }

    #[test]
    fn lossy_values_are_recorded() {
        let p = parse("a = 1.5\nb = 1979-05-27\nc = 99999999999999999999\nd = 7\n").unwrap();
        assert_eq!(p.lossy("/a"), Some("the float 1.5"));
        assert_eq!(p.lossy("/b"), Some("the datetime 1979-05-27"));
        assert!(p.lossy("/c").unwrap().contains("out of range"));
        assert_eq!(p.lossy("/d"), None);
        assert_eq!(p.lossy_pointers(), ["/a", "/b", "/c"]);
    }

    #[test]
    fn tool_selection() {
        let text = "[conversation.tools.t.access]\nversion = 1\n[[conversation.tools.t.access.fs]]\npath = \".\"\nread = true\n[conversation.tools.u]\nrun = \"ask\"\n";
        let p = parse(text).unwrap().select_tool("t").unwrap();
        assert_eq!(p.value["fs"][0]["path"], ".");
        assert_eq!(p.locate("/fs/0/path").unwrap().line, 4);
        let u = parse(text).unwrap().select_tool("u").unwrap();
        assert_eq!(u.value, serde_json::json!({}));
        let missing = parse(text).unwrap().select_tool("x").unwrap_err();
        assert_eq!(missing.code, codes::NO_TOOL);
        assert_eq!(missing.location.unwrap().line, 1);
        let not_table = parse("[conversation.tools]\nt = \"x\"\n")
            .unwrap()
            .select_tool("t")
            .unwrap_err();
        assert!(
            not_table.message.contains("not a table"),
            "{}",
            not_table.message
        );
        assert_eq!(not_table.location.unwrap().line, 2);
    }

    /// The oracle for the span tree: a plain map from every pointer to its
    /// spans, simple enough to trust.
    fn oracle(text: &str) -> (HashMap<String, Range<usize>>, HashMap<String, Range<usize>>) {
        fn table(t: &DeTable<'_>, at: &str, v: &mut Map2, k: &mut Map2) {
            for (key, val) in t.iter() {
                let p = format!("{at}/{}", escape_pointer(key.get_ref()));
                k.insert(p.clone(), key.span());
                item(val, &p, v, k);
            }
        }
        fn item(x: &Spanned<DeValue<'_>>, at: &str, v: &mut Map2, k: &mut Map2) {
            v.insert(at.to_string(), x.span());
            match x.get_ref() {
                DeValue::Array(a) => {
                    for (i, y) in a.iter().enumerate() {
                        item(y, &format!("{at}/{i}"), v, k);
                    }
                }
                DeValue::Table(t) => table(t, at, v, k),
                _ => {}
            }
        }
        type Map2 = HashMap<String, Range<usize>>;
        let t = DeTable::parse(text).unwrap();
        let (mut v, mut k) = (HashMap::new(), HashMap::new());
        table(t.get_ref(), "", &mut v, &mut k);
        v.insert(String::new(), t.span());
        (v, k)
    }

    fn oracle_locate(v: &HashMap<String, Range<usize>>, p: &str) -> Range<usize> {
        let mut p = p.to_string();
        loop {
            if let Some(s) = v.get(&p) {
                return s.clone();
            }
            p.truncate(p.rfind('/').unwrap());
        }
    }

    #[test]
    fn span_tree_matches_the_pointer_map() {
        let mut docs = vec![
            "a = 1\n\"x/y~z\" = { \"~1\" = [1, [2, {q = 3}]] }\n[[fs]]\npath = \".\"\n[t.u.v]\nw = \"s\"\n[[t.arr]]\nk = 1\n[[t.arr]]\n".to_string(),
            "[commands.\"a/b\"]\nargs = [[\"x\"]]\n[commands.c]\n".to_string(),
        ];
        for e in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures")).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                docs.push(std::fs::read_to_string(p).unwrap());
            }
        }
        for text in docs {
            let parsed = parse(&text).unwrap();
            let (v, k) = oracle(&text);
            let mut pointers: Vec<String> = v.keys().cloned().collect();
            for p in v.keys() {
                pointers.push(format!("{p}/nope"));
                pointers.push(format!("{p}/0"));
                pointers.push(format!("{p}/01"));
            }
            for p in &pointers {
                let span = |l: Option<Location>| l.unwrap().span;
                assert_eq!(
                    span(parsed.locate(p)),
                    oracle_locate(&v, p),
                    "{p} in {text}"
                );
                let key = k.get(p).cloned().unwrap_or_else(|| oracle_locate(&v, p));
                assert_eq!(span(parsed.locate_key(p)), key, "key {p} in {text}");
            }
        }
    }

    #[test]
    fn span_tree_matches_the_pointer_map_under_a_tool() {
        let text = "[conversation.tools.t.access]\nversion = 1\n[[conversation.tools.t.access.fs]]\npath = \".\"\nread = true\n[conversation.tools.u]\nrun = \"ask\"\n";
        let (v, k) = oracle(text);
        for (tool, ptrs) in [
            (
                "t",
                vec!["", "/version", "/fs", "/fs/0", "/fs/0/path", "/fs/1", "/x"],
            ),
            ("u", vec!["", "/fs", "/fs/0/path"]),
        ] {
            let parsed = parse(text).unwrap().select_tool(tool).unwrap();
            let base = format!("/conversation/tools/{tool}/access");
            for p in ptrs {
                let full = format!("{base}{p}");
                let span = |l: Option<Location>| l.unwrap().span;
                assert_eq!(
                    span(parsed.locate(p)),
                    oracle_locate(&v, &full),
                    "{tool} {p}"
                );
                let key = k
                    .get(&full)
                    .cloned()
                    .unwrap_or_else(|| oracle_locate(&v, &full));
                assert_eq!(span(parsed.locate_key(p)), key, "key {tool} {p}");
            }
        }
    }
}
