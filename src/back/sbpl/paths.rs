//! IR paths as SBPL path filters: absolute strings, or `(param "NAME")`
//! plus a suffix in portable mode. Every string goes through
//! [`escape_string`]; nothing here writes a path without it.

use crate::ir::{HOME_PARAM, TEMP_PARAM, WORKSPACE_PARAM};
use crate::sbpl::{escape_into, escape_string, EscapeError};

/// One spelling of a grant's path: `/abs/path`, or `${PARAM}` + `rest`
/// (`rest` is empty or starts with `/`). `rest` borrows the IR's path (or
/// an ancestor of it): a profile has a spelling or two per grant, and
/// copies of them were a fifth of the peak at 100,000 rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spelling<'a> {
    pub param: Option<&'static str>,
    pub rest: &'a str,
}

/// How a filter matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Match {
    /// The path itself.
    Literal,
    /// The path and everything below it.
    Subpath,
    /// The path and every directory above it (`path-ancestors`); only
    /// used for a bare parameter, whose ancestors are unknown until run time.
    Ancestors,
}

impl<'a> Spelling<'a> {
    /// Read an IR path; `None` if it is neither absolute nor rooted at a
    /// portable parameter.
    pub fn parse(p: &'a str) -> Option<Spelling<'a>> {
        if p.starts_with('/') {
            return Some(Spelling {
                param: None,
                rest: p,
            });
        }
        for name in [WORKSPACE_PARAM, HOME_PARAM, TEMP_PARAM] {
            let Some(rest) = p.strip_prefix(&format!("${{{name}}}")) else {
                continue;
            };
            if rest.is_empty() || rest.starts_with('/') {
                return Some(Spelling {
                    param: Some(name),
                    rest,
                });
            }
        }
        None
    }

    /// The IR text again (`${WORKSPACE}/x`, `/x`).
    pub fn text(&self) -> String {
        match self.param {
            Some(p) => format!("${{{p}}}{}", self.rest),
            None => self.rest.to_string(),
        }
    }

    /// An absolute spelling that may contain, or lie inside, a parameter's
    /// directory at run time: any but the device nodes of `/dev`.
    pub fn may_nest_with_params(&self) -> bool {
        self.param.is_none() && !crate::ir::path_within(self.rest, "/dev")
    }

    /// Components below `/`. A parameter counts as the depth it usually
    /// has on macOS (`/Users/me` = 2, a workspace `/Users/me/src/app` = 4,
    /// `$TMPDIR` = `/private/var/folders/xx/yyyy/T` = 6), so emission order
    /// matches nesting for the usual layout, also against an absolute rule
    /// inside a workspace at depth 3 or 4, above or below a workspace rule;
    /// docs/macos.md says so.
    pub fn depth(&self) -> usize {
        let base = match self.param {
            None => 0,
            Some(HOME_PARAM) => 2,
            Some(WORKSPACE_PARAM) => 4,
            Some(_) => 6,
        };
        // Non-empty components: where a byte other than `/` starts one.
        let mut after_slash = true;
        let mut n = 0;
        for &c in self.rest.as_bytes() {
            n += usize::from(after_slash && c != b'/');
            after_slash = c == b'/';
        }
        base + n
    }

    /// Strict ancestors, nearest first, as far as they are known: up to
    /// `/` for absolute paths, up to the bare parameter otherwise.
    #[cfg(test)]
    pub fn ancestors(&self) -> Vec<Spelling<'a>> {
        self.ancestor_rests()
            .map(|rest| Spelling {
                param: self.param,
                rest,
            })
            .collect()
    }

    /// The `rest` of each of [`ancestors`](Self::ancestors), without
    /// making them.
    pub fn ancestor_rests(&self) -> impl Iterator<Item = &'a str> {
        let absolute = self.param.is_none();
        let mut rest = Some(self.rest);
        std::iter::from_fn(move || {
            let r = rest.take()?;
            let parent = match crate::ir::last_slash(r) {
                Some(0) if absolute => (r != "/").then_some("/")?,
                Some(i) => &r[..i],
                None => return None,
            };
            rest = Some(parent).filter(|p| !p.is_empty());
            Some(parent)
        })
    }

    /// The IR text of this spelling's `rest` = `rest` (an ancestor's), in
    /// `buf`.
    pub fn text_of(&self, rest: &str, buf: &mut String) {
        buf.clear();
        if let Some(p) = self.param {
            buf.push_str("${");
            buf.push_str(p);
            buf.push('}');
        }
        buf.push_str(rest);
    }

    fn needs_regex(&self) -> bool {
        // The sandbox compiler expands `${NAME}` inside path strings
        // (Apple's own profiles use `${HOME}`, `${ANY_UUID}`): a name that
        // contains `${` is matched by a regex, where it can be quoted.
        self.rest.contains("${")
    }
}

/// `(literal "…")`, `(subpath (string-append (param "WORKSPACE") "/x"))`,
/// `(regex …)` or `(path-ancestors (param "HOME"))`.
pub(super) fn filter(m: Match, s: &Spelling) -> Result<String, EscapeError> {
    if m == Match::Ancestors {
        let value = match s.param {
            Some(p) if s.rest.is_empty() => format!("(param {})", escape_string(p)?),
            _ => escape_string(s.rest)?,
        };
        return Ok(format!("(path-ancestors {value})"));
    }
    if s.needs_regex() {
        let tail = match m {
            Match::Literal => "$",
            _ => "(/|$)",
        };
        let quoted = format!("{}{tail}", regex_quote(s.rest));
        return Ok(match s.param {
            None => format!("(regex {})", escape_string(&format!("^{quoted}"))?),
            Some(p) => format!(
                "(regex (string-append {} (regex-quote (param {})) {}))",
                escape_string("^")?,
                escape_string(p)?,
                escape_string(&quoted)?
            ),
        });
    }
    // Built in one string: a profile has several filters per grant.
    let mut out = String::with_capacity(s.rest.len() + 48);
    out.push_str(match m {
        Match::Literal => "(literal ",
        _ => "(subpath ",
    });
    match s.param {
        None => escape_into(s.rest, &mut out)?,
        Some(p) if s.rest.is_empty() => {
            out.push_str("(param ");
            escape_into(p, &mut out)?;
            out.push(')');
        }
        Some(p) => {
            out.push_str("(string-append (param ");
            escape_into(p, &mut out)?;
            out.push_str(") ");
            escape_into(s.rest, &mut out)?;
            out.push(')');
        }
    }
    out.push(')');
    Ok(out)
}

/// Backslash before every POSIX ERE metacharacter. `$` and `{` are among
/// them, so the result never contains `${`.
fn regex_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if ".^$*+?()[]{}|\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(p: &str) -> Spelling<'_> {
        Spelling::parse(p).unwrap()
    }

    #[test]
    fn parses_absolute_and_parameter_paths() {
        assert_eq!(sp("/a/b").param, None);
        assert_eq!(sp("${WORKSPACE}").param, Some("WORKSPACE"));
        assert_eq!(sp("${HOME}/.cargo").rest, "/.cargo");
        assert_eq!(Spelling::parse("${WORKSPACEX}/a"), None);
        assert_eq!(Spelling::parse("${NOPE}"), None);
        assert_eq!(Spelling::parse("rel"), None);
        assert_eq!(sp("${TMPDIR}/x").text(), "${TMPDIR}/x");
    }

    #[test]
    fn ancestors_stop_at_the_root_that_is_known() {
        let names =
            |p: &str| -> Vec<String> { sp(p).ancestors().iter().map(Spelling::text).collect() };
        assert_eq!(names("/a/b/c"), ["/a/b", "/a", "/"]);
        assert_eq!(names("/a"), ["/"]);
        assert!(names("/").is_empty());
        assert_eq!(
            names("${WORKSPACE}/a/b"),
            ["${WORKSPACE}/a", "${WORKSPACE}"]
        );
        assert!(names("${HOME}").is_empty());
    }

    #[test]
    fn filters() {
        let f = |m, p: &str| filter(m, &sp(p)).unwrap();
        assert_eq!(f(Match::Subpath, "/a b"), r#"(subpath "/a b")"#);
        assert_eq!(f(Match::Literal, r#"/q"\"#), r#"(literal "/q\"\\")"#);
        assert_eq!(
            f(Match::Subpath, "${WORKSPACE}"),
            r#"(subpath (param "WORKSPACE"))"#
        );
        assert_eq!(
            f(Match::Literal, "${HOME}/.x"),
            r#"(literal (string-append (param "HOME") "/.x"))"#
        );
        assert_eq!(
            f(Match::Ancestors, "${HOME}"),
            r#"(path-ancestors (param "HOME"))"#
        );
        assert_eq!(
            f(Match::Subpath, "/w/${HOME}.d"),
            r#"(regex "^/w/\\$\\{HOME\\}\\.d(/|$)")"#
        );
        assert_eq!(
            f(Match::Literal, "${WORKSPACE}/${X}"),
            r#"(regex (string-append "^" (regex-quote (param "WORKSPACE")) "/\\$\\{X\\}$"))"#
        );
    }

    #[test]
    fn quoted_regexes_never_contain_a_variable_reference() {
        for s in ["${A}", "$${", "a$", "{$}", "\\${"] {
            assert!(!regex_quote(s).contains("${"), "{s}");
        }
    }
}
