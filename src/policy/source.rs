//! Reading a TOML file into a JSON value plus a map from JSON pointers to
//! source spans, so that schema and semantic errors can point at a line.

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
    pub text: String,
}

#[derive(Debug, Clone, Default)]
struct Spans {
    /// Span of the value at each pointer.
    value: HashMap<String, Range<usize>>,
    /// Span of the key that introduced the value (tables only have keys).
    key: HashMap<String, Range<usize>>,
}

/// A parsed file: the JSON view of (a part of) it and where each piece is.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub file: SourceFile,
    pub value: Value,
    spans: Spans,
    /// Pointer of `value` inside the whole document (`--tool` selects a part).
    base: String,
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
        let table = match DeTable::parse(&file.text) {
            Ok(t) => t,
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                let loc = location(&file, &LineIndex::new(&file.text), span);
                return Err(Diagnostic::new(
                    codes::TOML_SYNTAX,
                    format!("invalid TOML: {}", e.message().trim()),
                )
                .at(Some(loc))
                .help("fix the TOML syntax; see https://toml.io"));
            }
        };
        let mut spans = Spans::default();
        let value = convert_table(table.get_ref(), "", &mut spans);
        spans.value.insert(String::new(), table.span());
        let lines = LineIndex::new(&file.text);
        Ok(Parsed {
            file,
            value,
            spans,
            base: String::new(),
            lines,
        })
    }

    /// `--tool NAME`: keep only `conversation.tools.NAME.access`.
    pub fn select_tool(mut self, tool: &str) -> Result<Parsed, Diagnostic> {
        let tool_ptr = format!("/conversation/tools/{}", escape_pointer(tool));
        let Some(tool_value) = self.value.pointer(&tool_ptr) else {
            return Err(Diagnostic::new(
                codes::NO_TOOL,
                format!(
                    "{}: no tool `{tool}` (expected a table [conversation.tools.{tool}])",
                    self.file.name
                ),
            )
            .help("check the tool name, or drop --tool for a plain policy file"));
        };
        let access = tool_value.get("access").cloned();
        let at = format!("{tool_ptr}/access");
        self.value = match access {
            Some(v) => v,
            // A tool without `access` gets the default policy.
            None => Value::Object(Map::new()),
        };
        self.base = at;
        Ok(self)
    }

    /// Location of the value at `pointer` (relative to the selected part),
    /// falling back to the nearest ancestor that has one.
    pub fn locate(&self, pointer: &str) -> Option<Location> {
        let mut p = format!("{}{}", self.base, pointer);
        loop {
            if let Some(s) = self.spans.value.get(&p) {
                return Some(location(&self.file, &self.lines, s.clone()));
            }
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None => return None,
            }
        }
    }

    /// Location of the key that introduced `pointer` (better for "unknown key").
    pub fn locate_key(&self, pointer: &str) -> Option<Location> {
        let p = format!("{}{}", self.base, pointer);
        match self.spans.key.get(&p) {
            Some(s) => Some(location(&self.file, &self.lines, s.clone())),
            None => self.locate(pointer),
        }
    }
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

fn convert_table(t: &DeTable<'_>, at: &str, spans: &mut Spans) -> Value {
    let mut m = Map::new();
    for (k, v) in t.iter() {
        let p = format!("{at}/{}", escape_pointer(k.get_ref()));
        spans.key.insert(p.clone(), k.span());
        m.insert(k.get_ref().to_string(), convert(v, &p, spans));
    }
    Value::Object(m)
}

fn convert(v: &Spanned<DeValue<'_>>, at: &str, spans: &mut Spans) -> Value {
    spans.value.insert(at.to_string(), v.span());
    match v.get_ref() {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => {
            let digits = i.as_str();
            if let Ok(n) = i64::from_str_radix(digits, i.radix()) {
                Value::Number(n.into())
            } else if let Ok(n) = u64::from_str_radix(digits, i.radix()) {
                Value::Number(n.into())
            } else {
                // Out of range for any field: keep it visible to the schema
                // as a wrong-typed value rather than wrapping it.
                Value::String(digits.to_string())
            }
        }
        DeValue::Float(f) => match f.as_str().parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(f.as_str().to_string()),
        },
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, item)| convert(item, &format!("{at}/{i}"), spans))
                .collect(),
        ),
        DeValue::Table(t) => convert_table(t, at, spans),
    }
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
    fn tool_selection() {
        let text = "[conversation.tools.t.access]\nversion = 1\n[[conversation.tools.t.access.fs]]\npath = \".\"\nread = true\n[conversation.tools.u]\nrun = \"ask\"\n";
        let p = parse(text).unwrap().select_tool("t").unwrap();
        assert_eq!(p.value["fs"][0]["path"], ".");
        assert_eq!(p.locate("/fs/0/path").unwrap().line, 4);
        let u = parse(text).unwrap().select_tool("u").unwrap();
        assert_eq!(u.value, serde_json::json!({}));
        assert_eq!(
            parse(text).unwrap().select_tool("x").unwrap_err().code,
            codes::NO_TOOL
        );
    }
}
