//! Large documents: the `[[fs]]` sections are parsed in batches, so that
//! the TOML parser's token, event and table buffers (about 2.3 KB per rule,
//! more than twice the JSON value) never hold the whole file at once.
//!
//! Only when every doubt is ruled out; otherwise the caller parses the
//! whole file, whose result and errors are the reference:
//! - no multi-line strings (a line inside one could look like a header);
//! - the rest of the file (sections blanked out, same offsets) parses, has
//!   no other `fs`, and none of its values straddles a section (an array
//!   left open across one would make a header its element);
//! - each batch parses to exactly its sections, as elements of `fs`.
//!
//! Tests check the result against the whole-file parse, span by span.

use super::{convert, node, At, Spans};
use serde_json::{Map, Value};
use std::ops::Range;
use toml::de::{DeTable, DeValue};

/// Below this many sections the whole file is parsed at once.
const MIN_SECTIONS: usize = 512;
const BATCH: usize = 1024;

pub(super) fn parse(text: &str) -> Option<(Value, Spans, u32)> {
    if text.contains("\"\"\"") || text.contains("'''") {
        return None;
    }
    let secs = sections(text);
    if secs.len() < MIN_SECTIONS {
        return None;
    }
    let mut blank = text.as_bytes().to_vec();
    for r in &secs {
        for b in &mut blank[r.clone()] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    // Whole UTF-8 sequences were replaced by spaces: still UTF-8.
    let rest_text = String::from_utf8(blank).ok()?;
    let rest = DeTable::parse(&rest_text).ok()?;
    let root_span = rest.span();
    let rest = rest.into_inner();
    let starts: Vec<usize> = secs.iter().map(|r| r.start).collect();
    if rest.iter().any(|(k, _)| k.get_ref() == "fs") || straddles(&rest, &starts) {
        return None;
    }

    let mut spans = Spans::default();
    let root_span = spans.at(root_span);
    let root = node(&mut spans, root_span, rest.len() + 1);
    let root_kids = spans.nodes[root as usize].kids.0 as usize;
    // `fs` sits where the whole-file parse would put it among the
    // top-level keys: by name, or by its first header's place.
    let fs_pos = rest
        .iter()
        .filter(|(k, _)| match sorted_maps() {
            true => k.get_ref().as_ref() < "fs",
            false => k.span().start < secs[0].start,
        })
        .count();
    let mut m = Map::new();
    for (i, (k, v)) in rest.into_iter().enumerate() {
        if i == fs_pos {
            let (value, kid) = fs(text, &secs, &mut spans)?;
            spans.kids[root_kids + i] = kid;
            m.insert("fs".into(), value);
        }
        let slot = root_kids + i + usize::from(i >= fs_pos);
        let key_span = spans.at(k.span());
        let key = k.into_inner().into_owned();
        let (value, kid) = convert(v, &At::Key(&At::Root, &key), &mut spans);
        spans.nodes[kid as usize].key = key_span;
        spans.kids[slot] = kid;
        m.insert(key, value);
    }
    if !m.contains_key("fs") {
        let (value, kid) = fs(text, &secs, &mut spans)?;
        spans.kids[root_kids + fs_pos] = kid;
        m.insert("fs".into(), value);
    }
    Some((Value::Object(m), spans, root))
}

/// Whether toml's tables iterate by key (its default) or in document
/// order (its `preserve_order` feature, which another crate may enable).
fn sorted_maps() -> bool {
    static SORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SORTED.get_or_init(|| {
        DeTable::parse("b = 1\na = 2\n")
            .map(|t| {
                t.get_ref()
                    .iter()
                    .next()
                    .is_some_and(|(k, _)| k.get_ref() == "a")
            })
            .unwrap_or(true)
    })
}

/// The `fs` array, batch by batch; its node carries the first header's
/// spans, as the whole-file parse gives them.
fn fs(text: &str, secs: &[Range<usize>], spans: &mut Spans) -> Option<(Value, u32)> {
    let mut items = Vec::with_capacity(secs.len());
    let mut me = None;
    for chunk in secs.chunks(BATCH) {
        let range = chunk[0].start..chunk[chunk.len() - 1].end;
        let t = DeTable::parse(&text[range.clone()]).ok()?.into_inner();
        let (k, v) = t.into_iter().next().filter(|(k, _)| k.get_ref() == "fs")?;
        spans.offset = range.start as u32;
        let key_span = spans.at(k.span());
        let value_span = spans.at(v.span());
        let DeValue::Array(a) = v.into_inner() else {
            return None;
        };
        if a.len() != chunk.len() {
            return None;
        }
        let me = *me.get_or_insert_with(|| {
            let n = node(spans, value_span, secs.len());
            spans.nodes[n as usize].key = key_span;
            n
        });
        let start = spans.nodes[me as usize].kids.0 as usize;
        for item in a {
            let at = At::Index(&At::Key(&At::Root, "fs"), items.len());
            let (value, kid) = convert(item, &at, spans);
            spans.kids[start + items.len()] = kid;
            items.push(value);
        }
        spans.offset = 0;
    }
    Some((Value::Array(items), me?))
}

/// Byte ranges of the top-level `[[fs]]` sections: from the header line
/// to the next line that starts with `[` (or the end).
fn sections(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start_matches([' ', '\t']);
        if t.starts_with('[') {
            if let Some(s) = open.take() {
                out.push(s..pos);
            }
            if is_fs_header(t) {
                open = Some(pos);
            }
        }
        pos += line.len();
    }
    if let Some(s) = open {
        out.push(s..pos);
    }
    out
}

fn is_fs_header(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("[[fs]]") else {
        return false;
    };
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.is_empty() || rest.starts_with('#') || rest.starts_with('\n') || rest.starts_with("\r\n")
}

/// A value of the rest (at any depth below tables) whose span contains a
/// section's start.
fn straddles(t: &DeTable<'_>, starts: &[usize]) -> bool {
    t.iter().any(|(_, v)| match v.get_ref() {
        DeValue::Table(inner) => straddles(inner, starts) || contains(v.span(), starts),
        DeValue::Array(a) => {
            contains(v.span(), starts)
                || a.iter().any(|x| match x.get_ref() {
                    DeValue::Table(inner) => straddles(inner, starts),
                    _ => false,
                })
        }
        _ => contains(v.span(), starts),
    })
}

fn contains(span: Range<usize>, starts: &[usize]) -> bool {
    let i = starts.partition_point(|&s| s <= span.start);
    starts.get(i).is_some_and(|&s| s < span.end)
}

#[cfg(test)]
mod tests {
    use super::super::whole;
    use super::*;

    fn rule(i: usize) -> String {
        match i % 5 {
            0 => format!("[[fs]]\npath = \"d/{i}\"\nread = true\n"),
            1 => format!("[[fs]] # rule {i}\r\npath = 'é/{i}'\r\nwrite = true\r\n\r\n"),
            2 => "  [[fs]]\n# a comment\npath = \"x\"\nargs = [\n  1,\n  2, [3],\n]\n".to_string(),
            3 => format!("[[fs]]\npath = \"p{i}\"\nt = {{ a = 1, b = [1, 2] }}\nf = 1.5\n"),
            _ => format!("[[fs]]\na.b = {i}\n"),
        }
    }

    /// Both parses, compared value by value and span by span.
    fn agree(text: &str) -> bool {
        let Some(b) = parse(text) else { return false };
        let w = whole(text).expect("the whole file parses");
        assert_eq!(b.0, w.0);
        assert_eq!(
            serde_json::to_string(&b.0).unwrap(),
            serde_json::to_string(&w.0).unwrap(),
            "key order"
        );
        assert_eq!(b.1.lossy, w.1.lossy);
        fn walk(v: &Value, a: (&Spans, u32), b: (&Spans, u32)) {
            let (na, nb) = (a.0.nodes[a.1 as usize], b.0.nodes[b.1 as usize]);
            assert_eq!((na.value, na.key), (nb.value, nb.key), "at {v}");
            let kids = |s: &Spans, n: super::super::Node, i: usize| s.kids[n.kids.0 as usize + i];
            match v {
                Value::Array(x) => x
                    .iter()
                    .enumerate()
                    .for_each(|(i, v)| walk(v, (a.0, kids(a.0, na, i)), (b.0, kids(b.0, nb, i)))),
                Value::Object(m) => m
                    .values()
                    .enumerate()
                    .for_each(|(i, v)| walk(v, (a.0, kids(a.0, na, i)), (b.0, kids(b.0, nb, i)))),
                _ => {}
            }
        }
        walk(&w.0, (&b.1, b.2), (&w.1, w.2));
        true
    }

    fn doc(before: &str, n: usize, between: &str, after: &str) -> String {
        let mut t = before.to_string();
        for i in 0..n {
            t.push_str(&rule(i));
            if i == n / 2 {
                t.push_str(between);
            }
        }
        t.push_str(after);
        t
    }

    #[test]
    fn batches_parse_like_the_whole_file() {
        for (before, between, after) in [
            ("", "", ""),
            (
                "version = 1\n",
                "[[net]]\nport = 443\n",
                "[process]\npresets = []\n",
            ),
            (
                "# head\n[limits]\ncpu_time_s = 1\n",
                "[linux]\nmin_abi = 3\n",
                "x = [1,\n 2]\n",
            ),
            ("a = 1\n", "[[net]]\nhost = \"h\"\n[[net]]\nport = 1\n", ""),
        ] {
            for n in [MIN_SECTIONS, BATCH + 7, 2 * BATCH + 1] {
                let t = doc(before, n, between, after);
                assert!(
                    agree(&t),
                    "not batched: {before:?} {between:?} {after:?} {n}"
                );
            }
        }
    }

    #[test]
    fn doubtful_documents_are_parsed_whole() {
        let n = MIN_SECTIONS + 1;
        // An array left open across sections: the whole parse fails.
        let open = doc("x = [\n", n, "", "[1, 2],\n]\n");
        assert!(whole(&open).is_err());
        assert!(parse(&open).is_none());
        // A header inside a multi-line string.
        let s = doc("note = \"\"\"\n[[fs]]\n\"\"\"\n", n, "", "");
        assert!(parse(&s).is_none());
        // `fs` defined elsewhere too.
        assert!(parse(&doc("", n, "[fs.x]\n", "")).is_none());
        assert!(parse(&doc("fs = 1\n", n, "", "")).is_none());
        // A section cut by a `[` line inside an array.
        let cut = doc("", n, "[[fs]]\nargs = [\n[\"x\"],\n]\n", "");
        assert!(parse(&cut).is_none());
        assert!(whole(&cut).is_ok());
        // Syntax errors get the whole file's message.
        assert!(parse(&doc("", n, "[[fs]]\npath = \n", "")).is_none());
        // Few sections: one parse.
        assert!(parse(&doc("", MIN_SECTIONS - 1, "", "")).is_none());
    }
}
