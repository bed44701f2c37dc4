//! The profile text, through the minijinja templates in `templates/sbpl/`.
//!
//! The templates are embedded so the binary is self-contained. They can
//! only print *safe* values: SBPL built in Rust from [`escape_string`]
//! output, fixed tokens, and comments with every control character
//! replaced. A raw string reaching `{{ }}` is a render error, not output.
//!
//! [`escape_string`]: crate::sbpl::escape_string

use super::shape::{call, shapes, Shapes};
use super::Rule;
use minijinja::value::Value;
use minijinja::{AutoEscape, Captured, Environment, Error, ErrorKind, UndefinedBehavior};
use std::sync::OnceLock;

const TEMPLATES: &[(&str, &str)] = &[
    (
        "sbpl/profile.sb.j2",
        include_str!("../../../templates/sbpl/profile.sb.j2"),
    ),
    (
        "sbpl/profile_end.sb.j2",
        include_str!("../../../templates/sbpl/profile_end.sb.j2"),
    ),
    (
        "sbpl/precision.sb.j2",
        include_str!("../../../templates/sbpl/precision.sb.j2"),
    ),
    (
        "sbpl/header.sb.j2",
        include_str!("../../../templates/sbpl/header.sb.j2"),
    ),
    (
        "sbpl/baseline.sb.j2",
        include_str!("../../../templates/sbpl/baseline.sb.j2"),
    ),
    (
        "sbpl/network.sb.j2",
        include_str!("../../../templates/sbpl/network.sb.j2"),
    ),
    (
        "sbpl/files.sb.j2",
        include_str!("../../../templates/sbpl/files.sb.j2"),
    ),
    (
        "sbpl/rules.sb.j2",
        include_str!("../../../templates/sbpl/rules.sb.j2"),
    ),
];

pub(super) fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(true);
        // Not HTML: a custom mode whose only formatter is `print_safe`.
        env.set_auto_escape_callback(|_| AutoEscape::Custom("sbpl"));
        env.set_formatter(print_safe);
        // No way for a template to declare a raw value safe.
        env.remove_filter("safe");
        for (name, src) in TEMPLATES {
            env.add_template(name, src)
                .unwrap_or_else(|e| panic!("template {name} does not compile: {e}"));
        }
        env
    })
}

fn print_safe(
    out: &mut minijinja::Output,
    _: &minijinja::State,
    value: &Value,
) -> Result<(), Error> {
    let mut write = |t: &str| {
        out.write_str(t)
            .map_err(|e| Error::new(ErrorKind::WriteFailure, "cannot write").with_source(e))
    };
    // Written in place: a copy of a large macro output would double it.
    match value.as_str() {
        Some(t) if value.is_safe() => write(t),
        _ if value.as_i64().is_some() => write(&value.to_string()),
        _ => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("unescaped value {value:?} in an SBPL template"),
        )),
    }
}

/// SBPL text that is already safe (escaped, or a fixed token).
pub(super) fn sbpl(s: impl Into<String>) -> Value {
    Value::from_safe_string(s.into())
}

/// Comment text: control characters (line breaks above all) become `?`,
/// so nothing in a comment can reach the next line.
pub(super) fn comment(s: &str) -> Value {
    let mut out = String::with_capacity(s.len());
    comment_text(s, &mut out);
    sbpl(out)
}

/// [`comment`]'s text, appended to `out`.
pub(super) fn comment_text(s: &str, out: &mut String) {
    let bad = |c: char| c.is_control() || c == '\u{2028}' || c == '\u{2029}';
    // Nearly always none: copied whole (printable ASCII has none of them).
    if crate::sbpl::printable_ascii(s, b"") || !s.contains(bad) {
        out.push_str(s);
        return;
    }
    out.extend(s.chars().map(|c| if bad(c) { '?' } else { c }));
}

pub(super) fn rule(r: &Rule) -> Value {
    let comment = r.comment.as_deref().map(comment).unwrap_or(Value::from(()));
    Value::from_iter([
        ("comment", comment),
        ("head", sbpl(if r.allow { "allow" } else { "deny" })),
        ("ops", sbpl(r.ops.join(" "))),
        (
            "filters",
            Value::from(
                r.filters
                    .iter()
                    .map(|f| sbpl(f.as_str()))
                    .collect::<Vec<_>>(),
            ),
        ),
    ])
}

pub(super) fn rules(list: &[Rule]) -> Value {
    Value::from(list.iter().map(rule).collect::<Vec<_>>())
}

/// The profile up to the filesystem grants, to `out`.
pub(super) fn head(ctx: &Value, out: &mut dyn FnMut(&[u8])) -> Result<(), Error> {
    render_to("sbpl/profile.sb.j2", ctx, out)
}

/// The profile after the filesystem grants, to `out`, up to the rules
/// that protect directories (written with a [`RuleWriter`]).
pub(super) fn end(ctx: &Value, out: &mut dyn FnMut(&[u8])) -> Result<(), Error> {
    render_to("sbpl/profile_end.sb.j2", ctx, out)
}

/// The profile after the rules that protect directories, to `out`.
pub(super) fn precision(ctx: &Value, out: &mut dyn FnMut(&[u8])) -> Result<(), Error> {
    render_to("sbpl/precision.sb.j2", ctx, out)
}

fn render_to(name: &str, ctx: &Value, out: &mut dyn FnMut(&[u8])) -> Result<(), Error> {
    env()
        .get_template(name)?
        .render_captured_to(ctx, crate::back::Pieces(out))
        .map(drop)
}

/// Rules rendered one at a time with rules.sb.j2's `rule`: only the rule
/// at hand exists as a template value, or none at all when the macro's
/// layout is known as fixed pieces ([`shape`](super::shape)).
pub(super) struct RuleWriter {
    macros: Captured<'static>,
    shapes: Option<Box<Shapes>>,
    first: bool,
    buf: String,
}

impl RuleWriter {
    pub fn new() -> Result<RuleWriter, Error> {
        let macros = env()
            .get_template("sbpl/rules.sb.j2")?
            .render_captured(())?;
        Ok(RuleWriter {
            shapes: shapes(&macros)?,
            macros,
            first: true,
            buf: String::new(),
        })
    }

    pub fn write(&mut self, r: &Rule, out: &mut dyn FnMut(&[u8])) -> Result<(), Error> {
        let first = std::mem::replace(&mut self.first, false);
        match &self.shapes {
            Some(s) => {
                self.buf.clear();
                s[usize::from(first)][usize::from(r.allow)].write(r, &mut self.buf);
                out(self.buf.as_bytes());
            }
            None => out(call(&self.macros, r, first)?.as_bytes()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_strings_cannot_be_printed() {
        let env = env();
        let ok = env
            .render_str(
                "{{ a }} {{ n }}",
                minijinja::context! { a => sbpl("(x)"), n => 7 },
            )
            .unwrap();
        assert_eq!(ok, "(x) 7");
        let err = env
            .render_str(
                "{{ a }}",
                minijinja::context! { a => "\"))(allow default)" },
            )
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidOperation);
        assert!(env
            .render_str("{{ a|safe }}", minijinja::context! { a => "x" })
            .is_err());
        // Nothing is HTML-escaped.
        assert_eq!(
            env.render_str("{{ a }}", minijinja::context! { a => sbpl("<&>\"'") })
                .unwrap(),
            "<&>\"'"
        );
    }

    #[test]
    fn comments_cannot_break_lines() {
        let c = comment("a\nb\r(allow default)\u{2028}\u{85}");
        assert_eq!(c.as_str(), Some("a?b?(allow default)??"));
    }
}
