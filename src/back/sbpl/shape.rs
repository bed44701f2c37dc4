//! rules.sb.j2's `rule` macro cut into its fixed text, so that the
//! grants (most of a large profile) are written without a template call
//! each: one call costs more than everything else about a grant.
//!
//! The template still decides the layout. The pieces are found by
//! rendering the macro once with markers in place of the values, and
//! kept only if they give back, byte for byte, what the macro renders for
//! every combination of first/not first, allow/deny, with/without a
//! comment and zero to three filters. A layout they cannot reproduce
//! (the text of a value changing what is around it) keeps the macro call
//! per rule. The values are the same safe text the macro would print.

use super::render::{comment_text, rule};
use super::Rule;
use minijinja::value::Value;
use minijinja::{Captured, Error};

/// Marker values: private-use characters, which no template holds.
const COMMENT: &str = "\u{E000}c\u{E000}";
const OPS: &str = "\u{E000}o\u{E000}";
const FILTERS: [&str; 3] = [
    "\u{E000}0\u{E000}",
    "\u{E000}1\u{E000}",
    "\u{E000}2\u{E000}",
];

/// The fixed text around the values of one rule, for one choice of
/// first/not first and allow/deny.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shape {
    /// Before the comment, and between it and the operations.
    with_comment: (String, String),
    /// Before the operations when there is no comment.
    without_comment: String,
    /// Before the first filter, before each further one, and after the
    /// last (after the operations when there is none).
    first_filter: String,
    next_filter: String,
    end: String,
}

/// The shapes by `[first][allow]`, if the macro's output is made of
/// pieces like that.
pub(super) type Shapes = [[Shape; 2]; 2];

/// Whether `rule` prints a comment: Jinja's `{% if x.comment %}` is false
/// for an empty one.
fn has_comment(r: &Rule) -> bool {
    r.comment.as_deref().is_some_and(|c| !c.is_empty())
}

impl Shape {
    /// Append `r` laid out as the macro would lay it out to `buf`.
    pub fn write(&self, r: &Rule, buf: &mut String) {
        match r.comment.as_deref().filter(|_| has_comment(r)) {
            Some(c) => {
                buf.push_str(&self.with_comment.0);
                comment_text(c, buf);
                buf.push_str(&self.with_comment.1);
            }
            None => buf.push_str(&self.without_comment),
        }
        for (i, op) in r.ops.iter().enumerate() {
            if i > 0 {
                buf.push(' ');
            }
            buf.push_str(op);
        }
        for (i, f) in r.filters.iter().enumerate() {
            buf.push_str(if i == 0 {
                &self.first_filter
            } else {
                &self.next_filter
            });
            buf.push_str(f);
        }
        buf.push_str(&self.end);
    }
}

/// The macro's output for `r`.
pub(super) fn call(macros: &Captured, r: &Rule, first: bool) -> Result<String, Error> {
    macros
        .state()
        .call_macro("rule", &[rule(r), Value::from(first)])
}

fn marked(allow: bool, comment: bool, filters: usize) -> Rule {
    Rule {
        allow,
        ops: vec![OPS],
        filters: FILTERS[..filters].iter().map(|f| f.to_string()).collect(),
        comment: comment.then(|| COMMENT.to_string()),
    }
}

/// `text` split at `markers`, which must each occur once, in this order.
fn split<'t>(text: &'t str, markers: &[&str]) -> Option<Vec<&'t str>> {
    let mut parts = Vec::new();
    let mut rest = text;
    for m in markers {
        let (before, after) = rest.split_once(m)?;
        parts.push(before);
        rest = after;
    }
    if markers.iter().any(|m| rest.contains(m)) {
        return None;
    }
    parts.push(rest);
    Some(parts)
}

fn shape(macros: &Captured, first: bool, allow: bool) -> Result<Option<Shape>, Error> {
    let full = call(macros, &marked(allow, true, 2), first)?;
    let bare = call(macros, &marked(allow, false, 2), first)?;
    let (Some(f), Some(b)) = (
        split(&full, &[COMMENT, OPS, FILTERS[0], FILTERS[1]]),
        split(&bare, &[OPS, FILTERS[0], FILTERS[1]]),
    ) else {
        return Ok(None);
    };
    let s = Shape {
        with_comment: (f[0].to_string(), f[1].to_string()),
        without_comment: b[0].to_string(),
        first_filter: f[2].to_string(),
        next_filter: f[3].to_string(),
        end: f[4].to_string(),
    };
    for comment in [true, false] {
        for n in 0..=FILTERS.len() {
            let r = marked(allow, comment, n);
            let mut ours = String::new();
            s.write(&r, &mut ours);
            if ours != call(macros, &r, first)? {
                return Ok(None);
            }
        }
    }
    Ok(Some(s))
}

/// The shapes of the macro in `macros`, or `None` if its output is not
/// made of fixed pieces and the values.
pub(super) fn shapes(macros: &Captured) -> Result<Option<Box<Shapes>>, Error> {
    let mut found = Vec::new();
    for first in [false, true] {
        for allow in [false, true] {
            match shape(macros, first, allow)? {
                Some(s) => found.push(s),
                None => return Ok(None),
            }
        }
    }
    let [a, b, c, d]: [Shape; 4] = found.try_into().expect("four shapes");
    Ok(Some(Box::new([[a, b], [c, d]])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pieces_give_what_the_macro_gives() {
        let macros = super::super::render::env()
            .get_template("sbpl/rules.sb.j2")
            .unwrap()
            .render_captured(())
            .unwrap();
        let shapes = shapes(&macros)
            .unwrap()
            .expect("rules.sb.j2's `rule` is fixed text around the values");
        let filters = |n: usize| -> Vec<String> {
            (0..n)
                .map(|i| format!("(subpath \"/a/é{i}\\\"\")"))
                .collect()
        };
        let comments = [
            None,
            Some(String::new()),
            Some("fs[0] (p.toml:1:1): /a (read)".to_string()),
            Some("line\nbreak\r\u{85}\u{2028}\u{2029}\t;; (allow default)".to_string()),
        ];
        for allow in [false, true] {
            for comment in &comments {
                for ops in [
                    vec![],
                    vec!["file-read*"],
                    vec!["file-read*", "file-write*"],
                ] {
                    for n in [0, 1, 2, 5] {
                        let r = Rule {
                            allow,
                            ops: ops.clone(),
                            filters: filters(n),
                            comment: comment.clone(),
                        };
                        for first in [false, true] {
                            let mut ours = String::new();
                            shapes[usize::from(first)][usize::from(allow)].write(&r, &mut ours);
                            assert_eq!(ours, call(&macros, &r, first).unwrap(), "{r:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn markers_must_each_occur_once_in_order() {
        assert_eq!(split("a1b2c", &["1", "2"]), Some(vec!["a", "b", "c"]));
        assert_eq!(split("a2b1c", &["1", "2"]), None);
        assert_eq!(split("a1b1c", &["1"]), None);
        assert_eq!(split("abc", &["1"]), None);
    }
}
