//! File-operation evaluator: "would this profile allow read/write of P?",
//! and for outbound TCP "would it allow a connection to localhost:PORT,
//! or to another host?" ([`Connect`], `net.rs`).
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

mod net;
mod read;
#[cfg(test)]
mod tests;

pub use net::Connect;

use regex::Regex;

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

/// The file rules of a profile, ready to answer [`Profile::decide`].
#[derive(Debug)]
pub struct Profile {
    default: Option<(Action, usize)>,
    rules: Vec<Rule>,
    /// Rules that cover `network-outbound`.
    net: Vec<net::NetRule>,
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
        // Every rule that covers the operation.
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
            applicable.push((specificity, rule.action, rule.line, m));
        }
        self.conclude(applicable)
    }

    /// Would the profile allow this outbound TCP connection?
    pub fn decide_connect(&self, c: Connect) -> Decision {
        let applicable = self
            .net
            .iter()
            .filter_map(|rule| {
                let s = rule
                    .operations
                    .iter()
                    .filter_map(|o| coverage(o, net::OUTBOUND))
                    .max()?;
                Some((s, rule.action, rule.line, rule.matches(c)))
            })
            .collect();
        self.conclude(applicable)
    }

    /// The answer from `(specificity, action, line, match)` for every rule
    /// that covers the operation, in profile order.
    fn conclude(&self, mut applicable: Vec<Applicable>) -> Decision {
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

/// A rule that covers the operation asked about: how specifically, its
/// action and line, and whether it matches.
type Applicable = (usize, Action, usize, Match);

/// The outcome of `rules` in order (last match wins), or `fallback`. A rule that
/// maybe matches after the deciding one makes the answer unknown only if its
/// action differs.
fn last_match(rules: &[Applicable], fallback: &Decision) -> Decision {
    let mut maybes = Vec::new();
    let mut outcome = fallback.clone();
    for (_, action, line, m) in rules.iter().rev() {
        match m {
            Match::Yes => {
                outcome = Decision::known(*action, Some(*line));
                break;
            }
            Match::No => {}
            Match::Maybe(reason) => maybes.push((action, line, reason)),
        }
    }
    match maybes
        .into_iter()
        .find(|(a, ..)| Some(**a) != outcome.action())
    {
        Some((_, line, reason)) => Decision::Unknown {
            line: Some(*line),
            reason: format!("the rule at line {line} may match: {reason}"),
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
