//! File-operation evaluator: "would this profile allow read/write of P?".
//!
//! The test oracle for the SBPL emitter, so it answers only what it can know:
//!
//! * Profiles are flat rule lists: `version`, `allow`, `deny`, `debug` and
//!   `trace` forms. Anything else (`define`, `import`, `if`, helper calls) is a
//!   [`ProfileError`], because it could add rules the evaluator cannot see.
//! * Rules whose operations cannot cover a [`FileOp`] are skipped unread.
//! * Filters: `literal`, `path`, `subpath`, `prefix`, `regex`, `path-ancestors`
//!   (the path itself and every directory above it), `require-all`,
//!   `require-any`, `require-not`; values may be strings, `(param "NAME")`,
//!   `string-append` and `regex-quote`. Several filters in one rule match if
//!   any matches. Other filters (`vnode-type`, `extension`, helpers, variables)
//!   depend on more than the path: they match "maybe".
//! * The last matching rule wins; `(allow|deny default)` is the fallback
//!   wherever it appears, and without one the default is allow.
//! * A rule that maybe matches makes the answer [`Decision::Unknown`] when it
//!   could change the outcome, i.e. when its action differs from the answer of
//!   the rules before it. The evaluator never guesses a match.
//! * Seatbelt's precedence between a specific operation and a wildcard that
//!   covers it (`file-write-unlink` vs `file-write*`) is disputed (sandbox-runtime
//!   reports that an earlier specific deny beats a later wildcard allow). The
//!   evaluator answers with plain last-match and with most-specific-first; if
//!   they disagree the answer is `Unknown`.

use std::collections::BTreeMap;

use regex::Regex;

use super::datum::{Datum, DatumKind};
use super::names::is_operation;
use super::{parse, pattern};

/// An operation to ask about, named by the SBPL operation it performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileOp {
    /// `file-read-data`: read a file's contents or list a directory.
    Read,
    /// `file-read-metadata`: stat, readlink.
    ReadMetadata,
    /// `file-write-data`: write to an existing file.
    Write,
    /// `file-write-create`: create a file, directory or link.
    WriteCreate,
    /// `file-write-unlink`: delete or rename away.
    WriteUnlink,
    /// `process-exec`: execute the file.
    ProcessExec,
}

impl FileOp {
    pub const ALL: [FileOp; 6] = [
        FileOp::Read,
        FileOp::ReadMetadata,
        FileOp::Write,
        FileOp::WriteCreate,
        FileOp::WriteUnlink,
        FileOp::ProcessExec,
    ];

    pub fn operation(self) -> &'static str {
        match self {
            FileOp::Read => "file-read-data",
            FileOp::ReadMetadata => "file-read-metadata",
            FileOp::Write => "file-write-data",
            FileOp::WriteCreate => "file-write-create",
            FileOp::WriteUnlink => "file-write-unlink",
            FileOp::ProcessExec => "process-exec",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
}

/// The answer for one operation on one path. `line` is the deciding rule's
/// line, or `None` for the implicit default (allow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow {
        line: Option<usize>,
    },
    Deny {
        line: Option<usize>,
    },
    /// The profile may go either way; `line` is the rule that makes it uncertain.
    Unknown {
        line: Option<usize>,
        reason: String,
    },
}

impl Decision {
    fn known(action: Action, line: Option<usize>) -> Self {
        match action {
            Action::Allow => Decision::Allow { line },
            Action::Deny => Decision::Deny { line },
        }
    }

    pub fn action(&self) -> Option<Action> {
        match self {
            Decision::Allow { .. } => Some(Action::Allow),
            Decision::Deny { .. } => Some(Action::Deny),
            Decision::Unknown { .. } => None,
        }
    }

    pub fn is_allow(&self) -> bool {
        self.action() == Some(Action::Allow)
    }

    pub fn is_deny(&self) -> bool {
        self.action() == Some(Action::Deny)
    }

    pub fn line(&self) -> Option<usize> {
        match self {
            Decision::Allow { line } | Decision::Deny { line } | Decision::Unknown { line, .. } => {
                *line
            }
        }
    }
}

/// Why a profile cannot be evaluated, at `line:column`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct ProfileError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

fn error_at(d: &Datum, message: impl Into<String>) -> ProfileError {
    ProfileError {
        line: d.line,
        column: d.column,
        message: message.into(),
    }
}

/// The file rules of a profile, ready to answer [`Profile::decide`].
#[derive(Debug)]
pub struct Profile {
    default: Option<(Action, usize)>,
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    action: Action,
    line: usize,
    operations: Vec<String>,
    /// An unknown symbol that could name a file operation (`file-raed*`, a newer
    /// operation): the rule maybe applies to every [`FileOp`].
    opaque: Option<String>,
    /// Empty means "any path".
    filters: Vec<Filter>,
}

#[derive(Debug)]
enum Filter {
    Literal(String),
    Subpath(String),
    Prefix(String),
    Regex(Regex),
    /// The path and each of its ancestors, up to `/`.
    Ancestors(String),
    All(Vec<Filter>),
    Any(Vec<Filter>),
    Not(Box<Filter>),
    /// Depends on more than the path; the text says what.
    Unknown(String),
}

/// Three-valued match: `Maybe` carries the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Match {
    Yes,
    No,
    Maybe(String),
}

impl Profile {
    /// Read `src` and build the profile; syntax errors become [`ProfileError`]s.
    pub fn from_source(src: &str, params: &BTreeMap<String, String>) -> Result<Self, ProfileError> {
        let data = parse(src).map_err(|e| ProfileError {
            line: e.line,
            column: e.column,
            message: e.message,
        })?;
        Self::from_datums(&data, params)
    }

    /// `params` are the `-D NAME=VALUE` values `(param "NAME")` reads.
    pub fn from_datums(
        data: &[Datum],
        params: &BTreeMap<String, String>,
    ) -> Result<Self, ProfileError> {
        let mut profile = Profile {
            default: None,
            rules: Vec::new(),
        };
        for d in data {
            match d.head() {
                Some("version") => match d.as_list().expect("a list")[1..] {
                    [Datum {
                        kind: DatumKind::Int(1),
                        ..
                    }] => {}
                    _ => return Err(error_at(d, "only (version 1) profiles are evaluated")),
                },
                Some(verb @ ("allow" | "deny")) => {
                    let action = if verb == "allow" {
                        Action::Allow
                    } else {
                        Action::Deny
                    };
                    profile.add_rule(d, action, params)?;
                }
                Some("debug" | "trace") => {}
                Some(other) => {
                    return Err(error_at(
                        d,
                        format!("cannot evaluate ({other} ...): only version, allow, deny, debug and trace forms are supported"),
                    ))
                }
                None => return Err(error_at(d, "cannot evaluate a top-level form that is not (name ...)")),
            }
        }
        Ok(profile)
    }

    fn add_rule(
        &mut self,
        d: &Datum,
        action: Action,
        params: &BTreeMap<String, String>,
    ) -> Result<(), ProfileError> {
        let mut operations = Vec::new();
        let mut opaque = None;
        let mut is_default = false;
        let mut filter_data = Vec::new();
        for arg in &d.as_list().expect("a list")[1..] {
            match &arg.kind {
                DatumKind::Symbol(s) if s == "default" => is_default = true,
                DatumKind::Symbol(s) if is_operation(s) => operations.push(s.clone()),
                DatumKind::Symbol(s) if s.starts_with("file") || s.starts_with("process") => {
                    opaque = Some(format!(
                        "'{s}' at {} is not a known operation",
                        arg.location()
                    ))
                }
                // Other unknown symbols are taken as variables holding a filter
                // (`cache-path-filter`); `filter` makes them match "maybe".
                DatumKind::Symbol(_) => filter_data.push(arg),
                DatumKind::List(_) if arg.head() == Some("with") => {}
                DatumKind::List(_) => filter_data.push(arg),
                _ => return Err(error_at(arg, "expected an operation, filter or (with ...)")),
            }
        }
        if is_default {
            if !operations.is_empty() || opaque.is_some() || !filter_data.is_empty() {
                return Err(error_at(
                    d,
                    "cannot evaluate 'default' combined with other operations or filters",
                ));
            }
            self.default = Some((action, d.line));
            return Ok(());
        }
        if operations.is_empty() && opaque.is_none() {
            return Err(error_at(d, "rule without an operation"));
        }
        let applies = opaque.is_some()
            || operations.iter().any(|o| {
                FileOp::ALL
                    .iter()
                    .any(|f| coverage(o, f.operation()).is_some())
            });
        if !applies {
            return Ok(());
        }
        let filters = filter_data
            .into_iter()
            .map(|f| filter(f, params))
            .collect::<Result<_, _>>()?;
        self.rules.push(Rule {
            action,
            line: d.line,
            operations,
            opaque,
            filters,
        });
        Ok(())
    }

    /// Would the profile allow `op` on `path`? `path` must be absolute and
    /// normalized, as Seatbelt sees it (after symlinks: `/private/tmp`, not `/tmp`).
    pub fn decide(&self, op: FileOp, path: &str) -> Decision {
        if !is_normalized(path) {
            return Decision::Unknown {
                line: None,
                reason: format!("{path:?} is not an absolute normalized path"),
            };
        }
        let name = op.operation();
        // (specificity, rule, match) for every rule that covers the operation.
        let mut applicable = Vec::new();
        for rule in &self.rules {
            let (specificity, m) = match &rule.opaque {
                Some(reason) => (usize::MAX, Match::Maybe(reason.clone())),
                None => match rule
                    .operations
                    .iter()
                    .filter_map(|o| coverage(o, name))
                    .max()
                {
                    Some(s) => (s, rule.match_path(path)),
                    None => continue,
                },
            };
            applicable.push((specificity, rule, m));
        }
        let fallback = match self.default {
            Some((action, line)) => Decision::known(action, Some(line)),
            None => Decision::Allow { line: None },
        };
        let flat = last_match(&applicable, &fallback);
        // Most specific operation first = last match over rules sorted by
        // ascending specificity (the sort is stable, so order stays within a level).
        applicable.sort_by_key(|(s, ..)| *s);
        let nested = last_match(&applicable, &fallback);
        match (&flat, &nested) {
            (Decision::Unknown { .. }, _) => flat,
            (_, Decision::Unknown { .. }) => nested,
            _ if flat.action() == nested.action() => flat,
            _ => Decision::Unknown {
                line: flat.line(),
                reason: format!(
                    "{} wins by last match (line {}), {} wins by most specific operation (line {}); Seatbelt's precedence here is not modelled",
                    verdict(&flat),
                    line_text(flat.line()),
                    verdict(&nested),
                    line_text(nested.line()),
                ),
            },
        }
    }
}

fn verdict(d: &Decision) -> &'static str {
    if d.is_allow() {
        "allow"
    } else {
        "deny"
    }
}

fn line_text(line: Option<usize>) -> String {
    line.map_or_else(|| "default".to_string(), |l| l.to_string())
}

/// The outcome of `rules` in order (last match wins), or `fallback`. A rule that
/// maybe matches after the deciding one makes the answer unknown only if its
/// action differs.
fn last_match(rules: &[(usize, &Rule, Match)], fallback: &Decision) -> Decision {
    let mut maybes = Vec::new();
    let mut outcome = fallback.clone();
    for (_, rule, m) in rules.iter().rev() {
        match m {
            Match::Yes => {
                outcome = Decision::known(rule.action, Some(rule.line));
                break;
            }
            Match::No => {}
            Match::Maybe(reason) => maybes.push((rule, reason)),
        }
    }
    match maybes
        .into_iter()
        .find(|(r, _)| Some(r.action) != outcome.action())
    {
        Some((rule, reason)) => Decision::Unknown {
            line: Some(rule.line),
            reason: format!("the rule at line {} may match: {reason}", rule.line),
        },
        None => outcome,
    }
}

/// How specifically the rule operation `op` names `name`: `None` if it does not
/// cover it, the wildcard's prefix length for `file-write*`-style names, and
/// more than any prefix for the exact name.
fn coverage(op: &str, name: &str) -> Option<usize> {
    if op == name {
        return Some(usize::MAX - 1);
    }
    let prefix = op.strip_suffix('*')?;
    name.starts_with(prefix).then_some(prefix.len())
}

fn is_normalized(path: &str) -> bool {
    path == "/"
        || path.strip_prefix('/').is_some_and(|rest| {
            rest.split('/')
                .all(|c| !c.is_empty() && c != "." && c != "..")
        })
}

impl Rule {
    fn match_path(&self, path: &str) -> Match {
        if self.filters.is_empty() {
            return Match::Yes;
        }
        any(self.filters.iter().map(|f| f.matches(path)))
    }
}

impl Filter {
    fn matches(&self, path: &str) -> Match {
        let yes = |b: bool| if b { Match::Yes } else { Match::No };
        match self {
            Filter::Literal(p) => yes(path == p),
            Filter::Subpath(p) => yes(in_subpath(p, path)),
            Filter::Prefix(p) => yes(path.starts_with(p.as_str())),
            Filter::Regex(r) => yes(r.is_match(path)),
            Filter::Ancestors(p) => yes(in_subpath(path, p)),
            Filter::Any(fs) => any(fs.iter().map(|f| f.matches(path))),
            Filter::All(fs) => {
                let mut maybe = None;
                for f in fs {
                    match f.matches(path) {
                        Match::No => return Match::No,
                        Match::Maybe(r) => maybe = maybe.or(Some(r)),
                        Match::Yes => {}
                    }
                }
                maybe.map_or(Match::Yes, Match::Maybe)
            }
            Filter::Not(f) => match f.matches(path) {
                Match::Yes => Match::No,
                Match::No => Match::Yes,
                maybe => maybe,
            },
            Filter::Unknown(what) => Match::Maybe(what.clone()),
        }
    }
}

fn any(matches: impl Iterator<Item = Match>) -> Match {
    let mut maybe = None;
    for m in matches {
        match m {
            Match::Yes => return Match::Yes,
            Match::Maybe(r) => maybe = maybe.or(Some(r)),
            Match::No => {}
        }
    }
    maybe.map_or(Match::No, Match::Maybe)
}

/// `base` itself or anything below it, on component boundaries. A trailing `/`
/// on `base` is ignored, so `(subpath "/")` covers every path.
fn in_subpath(base: &str, path: &str) -> bool {
    let base = base.trim_end_matches('/');
    path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A filter argument: known text, or a description of what cannot be computed.
enum Value {
    Text(String),
    Unknown(String),
}

fn filter(d: &Datum, params: &BTreeMap<String, String>) -> Result<Filter, ProfileError> {
    let items = match &d.kind {
        DatumKind::List(items) => items,
        DatumKind::Symbol(s) => {
            return Ok(Filter::Unknown(format!(
                "variable '{s}' at {}",
                d.location()
            )))
        }
        _ => return Err(error_at(d, "expected a filter such as (subpath \"/path\")")),
    };
    let Some(head) = d.head() else {
        return Ok(Filter::Unknown(format!(
            "computed filter at {}",
            d.location()
        )));
    };
    let args = &items[1..];
    let nested = |args: &[Datum]| -> Result<Vec<Filter>, ProfileError> {
        args.iter().map(|a| filter(a, params)).collect()
    };
    Ok(match head {
        "literal" | "path" | "subpath" | "prefix" | "regex" | "path-ancestors" => {
            if args.is_empty() {
                return Err(error_at(d, format!("({head}) needs a value")));
            }
            let mut alternatives = Vec::new();
            for a in args {
                alternatives.push(match value(a, params)? {
                    Value::Unknown(what) => Filter::Unknown(format!("{what} in ({head} ...)")),
                    Value::Text(v) => match head {
                        "subpath" => Filter::Subpath(v),
                        "prefix" => Filter::Prefix(v),
                        "path-ancestors" => Filter::Ancestors(v),
                        "regex" => Filter::Regex(
                            pattern::compile(&v)
                                .map_err(|e| error_at(a, format!("invalid regex {v:?}: {e}")))?,
                        ),
                        _ => Filter::Literal(v),
                    },
                });
            }
            if alternatives.len() == 1 {
                alternatives.pop().expect("one element")
            } else {
                Filter::Any(alternatives)
            }
        }
        "require-all" => Filter::All(nested(args)?),
        "require-any" => Filter::Any(nested(args)?),
        "require-not" => match args {
            [one] => Filter::Not(Box::new(filter(one, params)?)),
            _ => return Err(error_at(d, "require-not takes exactly one filter")),
        },
        other => Filter::Unknown(format!("filter '{other}' at {}", d.location())),
    })
}

/// Evaluate a filter argument. Unknown parameters are errors: Seatbelt refuses
/// such a profile too.
fn value(d: &Datum, params: &BTreeMap<String, String>) -> Result<Value, ProfileError> {
    if let Some(s) = d.as_string() {
        return Ok(Value::Text(s.to_string()));
    }
    let items = match &d.kind {
        DatumKind::List(items) => items,
        DatumKind::Symbol(s) => {
            return Ok(Value::Unknown(format!(
                "variable '{s}' at {}",
                d.location()
            )))
        }
        _ => return Err(error_at(d, "expected a string value")),
    };
    let args = &items[1..];
    match d.head() {
        Some("param") => match args {
            [name] => {
                let name = name
                    .as_string()
                    .ok_or_else(|| error_at(name, "param takes a string name"))?;
                match params.get(name) {
                    Some(v) => Ok(Value::Text(v.clone())),
                    None => Err(error_at(d, format!("parameter {name:?} is not defined"))),
                }
            }
            _ => Err(error_at(d, "param takes exactly one name")),
        },
        Some("string-append") => {
            let mut out = String::new();
            for a in args {
                match value(a, params)? {
                    Value::Text(s) => out.push_str(&s),
                    unknown => return Ok(unknown),
                }
            }
            Ok(Value::Text(out))
        }
        Some("regex-quote") => match args {
            [one] => Ok(match value(one, params)? {
                Value::Text(s) => Value::Text(pattern::quote(&s)),
                unknown => unknown,
            }),
            _ => Err(error_at(d, "regex-quote takes exactly one value")),
        },
        _ => Ok(Value::Unknown(format!("expression at {}", d.location()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FileOp::*;

    fn profile(src: &str) -> Profile {
        profile_with(src, &[])
    }

    fn profile_with(src: &str, params: &[(&str, &str)]) -> Profile {
        let params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Profile::from_source(src, &params).unwrap_or_else(|e| panic!("{e}"))
    }

    fn error(src: &str) -> String {
        Profile::from_source(src, &BTreeMap::new())
            .expect_err("profile should be rejected")
            .to_string()
    }

    /// "allow@3", "deny@default", "unknown@5" etc.
    fn d(p: &Profile, op: FileOp, path: &str) -> String {
        let decision = p.decide(op, path);
        let what = match decision {
            Decision::Allow { .. } => "allow",
            Decision::Deny { .. } => "deny",
            Decision::Unknown { .. } => "unknown",
        };
        format!("{what}@{}", line_text(decision.line()))
    }

    #[test]
    fn last_matching_rule_wins() {
        let p = profile(
            r#"(version 1)
(deny default)
(allow file-read* (subpath "/a"))
(deny file-read* (subpath "/a/secret"))
(allow file-read* (literal "/a/secret/ok"))"#,
        );
        assert_eq!(d(&p, Read, "/a/x"), "allow@3");
        assert_eq!(d(&p, Read, "/a/secret/key"), "deny@4");
        assert_eq!(d(&p, Read, "/a/secret"), "deny@4");
        assert_eq!(d(&p, Read, "/a/secret/ok"), "allow@5");
        assert_eq!(d(&p, Read, "/b"), "deny@2");
        assert_eq!(d(&p, Write, "/a/x"), "deny@2");
    }

    #[test]
    fn default_is_the_fallback_wherever_it_is() {
        assert_eq!(d(&profile("(version 1)"), Write, "/x"), "allow@default");
        assert_eq!(d(&profile("(allow default)"), Write, "/x"), "allow@1");
        let p = profile("(allow file-read* (subpath \"/a\"))\n(deny default (with no-log))");
        assert_eq!(d(&p, Read, "/a/b"), "allow@1");
        assert_eq!(d(&p, Read, "/b"), "deny@2");
        // The last default form counts.
        assert_eq!(
            d(&profile("(deny default)\n(allow default)"), Read, "/x"),
            "allow@2"
        );
    }

    #[test]
    fn subpath_matches_on_component_boundaries() {
        let p = profile("(deny default)\n(allow file-read* (subpath \"/a/b\"))");
        assert_eq!(d(&p, Read, "/a/b"), "allow@2");
        assert_eq!(d(&p, Read, "/a/b/c/d"), "allow@2");
        assert_eq!(d(&p, Read, "/a/bc"), "deny@1");
        assert_eq!(d(&p, Read, "/a"), "deny@1");
        let root = profile("(deny default)\n(allow file-read* (subpath \"/\"))");
        assert_eq!(d(&root, Read, "/"), "allow@2");
        assert_eq!(d(&root, Read, "/x/y"), "allow@2");
        let slash = profile("(deny default)\n(allow file-read* (subpath \"/a/\"))");
        assert_eq!(d(&slash, Read, "/a"), "allow@2");
        assert_eq!(d(&slash, Read, "/a/x"), "allow@2");
        assert_eq!(d(&slash, Read, "/ab"), "deny@1");
    }

    #[test]
    fn literal_path_and_prefix() {
        let p = profile(
            "(deny default)\n(allow file-read* (literal \"/etc/hosts\") (path \"/etc/passwd\"))\n(allow file-write* (prefix \"/tmp/sbx\"))",
        );
        assert_eq!(d(&p, Read, "/etc/hosts"), "allow@2");
        assert_eq!(d(&p, Read, "/etc/passwd"), "allow@2");
        assert_eq!(d(&p, Read, "/etc/hosts/x"), "deny@1");
        assert_eq!(d(&p, Write, "/tmp/sbx"), "allow@3");
        assert_eq!(d(&p, Write, "/tmp/sbx-other/f"), "allow@3");
        assert_eq!(d(&p, Write, "/tmp/sb"), "deny@1");
    }

    #[test]
    fn path_ancestors_match_the_path_and_its_parents() {
        let p = profile_with(
            "(deny default)\n(allow file-read-metadata (path-ancestors (param \"W\")))",
            &[("W", "/Users/a/ws")],
        );
        for yes in ["/", "/Users", "/Users/a", "/Users/a/ws"] {
            assert_eq!(d(&p, ReadMetadata, yes), "allow@2", "{yes}");
        }
        for no in ["/Users/a/ws/x", "/Users/ab", "/Users/a/w", "/tmp"] {
            assert_eq!(d(&p, ReadMetadata, no), "deny@1", "{no}");
        }
    }

    #[test]
    fn require_all_any_not() {
        let p = profile(
            r#"(deny default)
(allow file-write*
  (require-all (subpath "/w")
               (require-not (subpath "/w/.git"))
               (require-not (literal "/w/.env"))))
(allow file-read* (require-any (literal "/r1") (subpath "/r2")))"#,
        );
        assert_eq!(d(&p, Write, "/w/src/main.rs"), "allow@2");
        assert_eq!(d(&p, Write, "/w/.git"), "deny@1");
        assert_eq!(d(&p, Write, "/w/.git/config"), "deny@1");
        assert_eq!(d(&p, Write, "/w/.env"), "deny@1");
        assert_eq!(d(&p, Write, "/w/.envrc"), "allow@2");
        assert_eq!(d(&p, Read, "/r1"), "allow@6");
        assert_eq!(d(&p, Read, "/r2/x"), "allow@6");
        assert_eq!(d(&p, Read, "/r3"), "deny@1");
    }

    #[test]
    fn regex_filters() {
        let p = profile(
            r#"(deny default)
(allow file-read* (regex #"^/tmp/[^/]+\.txt$" "^/x\\.y$"))
(deny file-read* (regex #"/\.ssh(/|$)"))"#,
        );
        assert_eq!(d(&p, Read, "/tmp/a.txt"), "allow@2");
        assert_eq!(d(&p, Read, "/tmp/a/b.txt"), "deny@1");
        assert_eq!(d(&p, Read, "/tmp/aXtxt"), "deny@1");
        assert_eq!(d(&p, Read, "/x.y"), "allow@2");
        assert_eq!(d(&p, Read, "/xzy"), "deny@1");
        let all = profile("(deny default)\n(allow file-read* (regex #\"^/\"))\n(deny file-read* (regex #\"/\\.ssh(/|$)\"))");
        assert_eq!(d(&all, Read, "/home/u/.ssh"), "deny@3");
        assert_eq!(d(&all, Read, "/home/u/.ssh/id"), "deny@3");
        assert_eq!(d(&all, Read, "/home/u/.sshx"), "allow@2");
    }

    #[test]
    fn params_and_string_append() {
        let src = r#"(deny default)
(allow file-read* (subpath (param "HOME")))
(deny file-read* (literal (string-append (param "HOME") "/.netrc")))
(allow file-write* (regex (string-append "^" (regex-quote (param "HOME")) "/out\.[0-9]+$")))"#;
        let p = profile_with(src, &[("HOME", "/Users/a.b")]);
        assert_eq!(d(&p, Read, "/Users/a.b/x"), "allow@2");
        assert_eq!(d(&p, Read, "/Users/a.b/.netrc"), "deny@3");
        assert_eq!(d(&p, Write, "/Users/a.b/out.1"), "allow@4");
        // regex-quote makes the '.' in the parameter literal.
        assert_eq!(d(&p, Write, "/Users/aXb/out.1"), "deny@1");
        assert_eq!(
            error("(allow file-read* (subpath (param \"HOME\")))"),
            "1:28: parameter \"HOME\" is not defined"
        );
    }

    #[test]
    fn operations_map_to_queries() {
        let p = profile(
            r#"(deny default)
(allow file-read-metadata (subpath "/m"))
(allow file-read* (subpath "/r"))
(allow file-write-create (subpath "/c"))
(allow file* (subpath "/f"))
(allow process-exec* (subpath "/bin"))
(allow network-outbound (remote ip "localhost:*"))
(allow mach-lookup (global-name (param "UNSET")))"#,
        );
        assert_eq!(d(&p, ReadMetadata, "/m/x"), "allow@2");
        assert_eq!(d(&p, Read, "/m/x"), "deny@1");
        assert_eq!(d(&p, Read, "/r/x"), "allow@3");
        assert_eq!(d(&p, ReadMetadata, "/r/x"), "allow@3");
        assert_eq!(d(&p, Write, "/r/x"), "deny@1");
        assert_eq!(d(&p, WriteCreate, "/c/x"), "allow@4");
        assert_eq!(d(&p, Write, "/c/x"), "deny@1");
        for op in [Read, ReadMetadata, Write, WriteCreate, WriteUnlink] {
            assert_eq!(d(&p, op, "/f/x"), "allow@5", "{op:?}");
        }
        assert_eq!(d(&p, ProcessExec, "/f/x"), "deny@1");
        assert_eq!(d(&p, ProcessExec, "/bin/ls"), "allow@6");
        assert_eq!(d(&p, Read, "/bin/ls"), "deny@1");
        let exec =
            profile("(deny default)\n(allow process-exec (literal \"/bin/sh\") (with no-sandbox))");
        assert_eq!(d(&exec, ProcessExec, "/bin/sh"), "allow@2");
    }

    #[test]
    fn unknown_filters_give_unknown_decisions() {
        let p = profile(
            r#"(deny default)
(allow file-read* (subpath "/a"))
(allow file-read* (require-all (subpath "/v") (vnode-type DIRECTORY)))
(deny file-read* (extension "com.apple.x"))"#,
        );
        // A maybe-matching deny after an allow could flip it.
        assert_eq!(d(&p, Read, "/a/x"), "unknown@4");
        // Outside /v the require-all is certainly false; the maybe-deny agrees
        // with the default deny, so the answer is known.
        assert_eq!(d(&p, Read, "/b"), "deny@1");
        let q = profile(
            "(deny default)\n(allow file-read* (require-all (subpath \"/v\") (vnode-type DIRECTORY)))",
        );
        assert_eq!(d(&q, Read, "/v/x"), "unknown@2");
        assert_eq!(d(&q, Read, "/w"), "deny@1");
        // A later certain match decides regardless of earlier unknown rules.
        let r = profile("(deny default)\n(allow file-read* (home-subpath \"/x\"))\n(deny file-read* (subpath \"/\"))");
        assert_eq!(d(&r, Read, "/x"), "deny@3");
        match r.decide(Read, "/x") {
            Decision::Deny { line: Some(3) } => {}
            other => panic!("{other:?}"),
        }
        let Decision::Unknown { reason, .. } = q.decide(Read, "/v/x") else {
            panic!("expected unknown")
        };
        assert_eq!(
            reason,
            "the rule at line 2 may match: filter 'vnode-type' at 2:47"
        );
    }

    #[test]
    fn unknown_symbols_in_rules() {
        // A variable in filter position maybe matches.
        let p = profile("(deny default)\n(allow file-read* cache-path-filter)");
        assert_eq!(d(&p, Read, "/x"), "unknown@2");
        assert_eq!(d(&p, ProcessExec, "/x"), "deny@1");
        // An unknown operation-like name maybe covers every file operation.
        let o = profile("(deny default)\n(allow file-raed* (subpath \"/x\"))");
        assert_eq!(d(&o, Write, "/x"), "unknown@2");
        assert_eq!(d(&o, ProcessExec, "/x"), "unknown@2");
        // Non-file rules with variables are skipped like any other non-file rule.
        let m = profile("(deny default)\n(allow mach-lookup mach-filter)");
        assert_eq!(d(&m, Read, "/x"), "deny@1");
        assert_eq!(error("(allow my-filter)"), "1:1: rule without an operation");
        let q = profile("(deny default)\n(allow file-read* (subpath my-dir))");
        assert_eq!(d(&q, Read, "/x"), "unknown@2");
        assert_eq!(d(&q, Write, "/x"), "deny@1");
    }

    #[test]
    fn specific_versus_wildcard_precedence_is_not_guessed() {
        let p = profile(
            "(deny default)\n(deny file-write-unlink (subpath \"/w\"))\n(allow file-write* (subpath \"/w\"))",
        );
        assert_eq!(d(&p, Write, "/w/f"), "allow@3");
        assert_eq!(d(&p, WriteUnlink, "/w/f"), "unknown@3");
        assert_eq!(d(&p, WriteUnlink, "/x"), "deny@1");
        // Both readings agree when the specific rule comes last.
        let q = profile(
            "(deny default)\n(allow file-write* (subpath \"/w\"))\n(deny file-write-unlink (subpath \"/w\"))",
        );
        assert_eq!(d(&q, WriteUnlink, "/w/f"), "deny@3");
    }

    #[test]
    fn paths_must_be_normalized() {
        let p = profile("(allow default)");
        for bad in ["", "rel", "/a/", "/a//b", "/a/./b", "/a/../b"] {
            assert_eq!(d(&p, Read, bad), "unknown@default", "{bad:?}");
        }
        assert_eq!(d(&p, Read, "/"), "allow@1");
    }

    #[test]
    fn unsupported_profiles_are_errors() {
        assert_eq!(
            error("(version 1)\n(define x 1)"),
            "2:1: cannot evaluate (define ...): only version, allow, deny, debug and trace forms are supported"
        );
        assert!(error("(import \"bsd.sb\")").starts_with("1:1: cannot evaluate (import ...)"));
        assert_eq!(
            error("(version 2)"),
            "1:1: only (version 1) profiles are evaluated"
        );
        assert_eq!(
            error("(allow default (literal \"/a\"))"),
            "1:1: cannot evaluate 'default' combined with other operations or filters"
        );
        assert_eq!(
            error("(allow (literal \"/a\"))"),
            "1:1: rule without an operation"
        );
        assert_eq!(
            error("(allow file-read* (require-not (literal \"/a\") (literal \"/b\")))"),
            "1:19: require-not takes exactly one filter"
        );
        assert!(error("(allow file-read* (regex #\"^(?/x)\"))")
            .starts_with("1:26: invalid regex \"^(?/x)\""));
        assert_eq!(
            error("(allow file-read* (literal 5))"),
            "1:28: expected a string value"
        );
        assert_eq!(
            error("(allow file-read* (subpath))"),
            "1:19: (subpath) needs a value"
        );
        assert_eq!(
            error("(allow file-read* \"/a\")"),
            "1:19: expected an operation, filter or (with ...)"
        );
        assert_eq!(
            error("(allow file-read*"),
            "1:1: unclosed '(' opened at 1:1"
        );
        assert_eq!(
            error("x"),
            "1:1: cannot evaluate a top-level form that is not (name ...)"
        );
        // Debug and trace forms are harmless.
        assert_eq!(
            d(
                &profile("(version 1)\n(debug deny)\n(trace \"t.sb\")"),
                Read,
                "/"
            ),
            "allow@default"
        );
    }

    /// Path components built from characters that mean something to the reader.
    fn component() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let c = prop::sample::select(vec![
            'a', 'Z', '0', '.', '-', ' ', '"', '\\', '(', ')', ';', '#', '|', '\'', '`', ',', '*',
            '[', '$', '^', 'é', '百',
        ]);
        prop::collection::vec(c, 1..8)
            .prop_map(|v| v.into_iter().collect::<String>())
            .prop_filter("not . or ..", |s| s != "." && s != "..")
    }

    proptest::proptest! {
        /// escape_string -> reader -> evaluator keeps the exact path: the chain
        /// the emitter relies on.
        #[test]
        fn escaped_paths_match_exactly(
            parts in proptest::collection::vec(component(), 1..4),
            child in component(),
        ) {
            let path = format!("/{}", parts.join("/"));
            let lit = crate::sbpl::escape_string(&path).unwrap();
            let p = profile(&format!(
                "(deny default)\n(allow file-read* (literal {lit}))\n(allow file-write* (subpath {lit}))"
            ));
            proptest::prop_assert_eq!(d(&p, Read, &path), "allow@2");
            proptest::prop_assert_eq!(d(&p, Read, &format!("{path}/{child}")), "deny@1");
            proptest::prop_assert_eq!(d(&p, Read, &format!("{path}{child}")), "deny@1");
            proptest::prop_assert_eq!(d(&p, Write, &path), "allow@3");
            proptest::prop_assert_eq!(d(&p, Write, &format!("{path}/{child}")), "allow@3");
            proptest::prop_assert_eq!(d(&p, Write, &format!("{path}{child}")), "deny@1");
        }
    }
}
