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
    /// Values JSON cannot hold as written (floats, datetimes, integers
    /// beyond 64 bits), described as the user wrote them. Their JSON
    /// stand-ins must not be mistaken for valid input (see schema.rs).
    lossy: HashMap<String, String>,
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
                let message = e.message().trim().to_string();
                let help = if message.contains("escape") || message.contains("unicode") {
                    "in a \"basic string\" a backslash starts an escape: write Windows paths as 'literal strings' or with forward slashes"
                } else {
                    "fix the TOML syntax; see https://toml.io"
                };
                return Err(Diagnostic::new(
                    codes::TOML_SYNTAX,
                    format!("invalid TOML: {message}"),
                )
                .at(Some(loc))
                .help(help));
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

    /// How the user wrote a value that JSON cannot hold as is, if it is one.
    pub fn lossy(&self, pointer: &str) -> Option<&str> {
        self.spans
            .lossy
            .get(&format!("{}{}", self.base, pointer))
            .map(String::as_str)
    }

    /// Pointers (relative to the selected part) of every lossy value.
    pub fn lossy_pointers(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .spans
            .lossy
            .keys()
            .filter_map(|p| p.strip_prefix(self.base.as_str()))
            .filter(|p| p.is_empty() || p.starts_with('/'))
            .map(String::from)
            .collect();
        v.sort();
        v
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
            // TOML integers are 64-bit signed; anything else must not wrap.
            match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) => Value::Number(n.into()),
                Err(_) => {
                    let shown = format!("the integer {i}, which is out of range");
                    spans.lossy.insert(at.to_string(), shown);
                    Value::String(i.to_string())
                }
            }
        }
        DeValue::Float(f) => {
            let text = f.as_str().to_string();
            spans
                .lossy
                .insert(at.to_string(), format!("the float {text}"));
            match text.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(text),
            }
        }
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => {
            spans
                .lossy
                .insert(at.to_string(), format!("the datetime {d}"));
            Value::String(d.to_string())
        }
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
}
