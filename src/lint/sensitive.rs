//! SBX020 and SBX025: grants that reach a sensitive path (RFD 075's list
//! plus `sensitive_paths`), directly or through an ancestor directory.
//!
//! Patterns are matched component by component with globset, so that a
//! grant can be tested both ways: is the grant inside a sensitive place
//! (`~/.ssh/config`), or is a sensitive place (possibly) below the grant
//! (`~` reaches `~/.ssh/`, any directory reaches `**/.env`)?

use super::index::Index;
use super::origin::{Locator, Origin};
use crate::diag::{codes, Diagnostic};
use crate::hashed::{Map, Set};
use crate::ir::{Access, Grant, Ir, Os, PathKind, Ports, Source};
use globset::{GlobBuilder, GlobMatcher};

enum Comp {
    Lit(String),
    Glob(LazyGlob),
    /// `**`: any number of components, including none.
    AnyDepth,
}

/// A glob component, compiled when a name first gets past its literal
/// start. Compiling one (a regex) costs more than `sbx run POLICY`'s
/// whole sensitive-path check of the caller's `PATH`, and most names are
/// told apart by the literal start alone (`.env.*` against `usr`, `bin`).
struct LazyGlob {
    text: String,
    /// What every match starts with: the text before the first `*?[{`.
    start: String,
    fold_case: bool,
    matcher: std::sync::OnceLock<Option<GlobMatcher>>,
}

impl LazyGlob {
    fn new(text: &str, fold_case: bool) -> LazyGlob {
        let start = text.find(['*', '?', '[', '{', '\\']).unwrap_or(text.len());
        LazyGlob {
            text: text.to_string(),
            start: text[..start].to_string(),
            fold_case,
            matcher: std::sync::OnceLock::new(),
        }
    }

    fn is_match(&self, name: &str) -> bool {
        // Case folding beyond ASCII (the Kelvin sign folds to `k`) is the
        // regex's to decide.
        let byte_wise = !self.fold_case || (name.is_ascii() && self.start.is_ascii());
        let head = name.as_bytes().get(..self.start.len());
        let starts = head.is_some_and(|h| {
            if self.fold_case {
                h.eq_ignore_ascii_case(self.start.as_bytes())
            } else {
                h == self.start.as_bytes()
            }
        });
        if byte_wise && !starts {
            return false;
        }
        let matcher = self.matcher.get_or_init(|| {
            GlobBuilder::new(&self.text)
                .literal_separator(true)
                .case_insensitive(self.fold_case)
                .build()
                .ok()
                .map(|g| g.compile_matcher())
        });
        match matcher {
            Some(m) => m.is_match(name),
            // Validation already rejected bad globs; a piece that only
            // compiles as a whole (`{a,b/c}`) is compared literally.
            None if self.fold_case => self.text.eq_ignore_ascii_case(name),
            None => self.text == name,
        }
    }
}

/// One sensitive-path pattern, anchored at home, the workspace or `/`.
pub struct Pattern {
    /// As written (`~/.ssh/`), for messages.
    pub text: String,
    comps: Vec<Comp>,
    /// The absolute path when the pattern has no glob at all.
    literal: Option<String>,
    fold_case: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reach {
    No,
    /// The path is a proper ancestor of places the pattern may match.
    Above,
    /// The path matches, or lies below a match.
    Within,
}

/// Split an absolute (or `${PARAM}`-rooted) path into components.
pub fn components(path: &str) -> Vec<&str> {
    path.split('/').filter(|c| !c.is_empty()).collect()
}

fn is_glob(c: &str) -> bool {
    c.contains(['*', '?', '[', '{'])
}

impl Pattern {
    pub fn new(text: &str, ir: &Ir) -> Pattern {
        let fold_case = matches!(ir.os, Os::Macos | Os::Windows);
        let t = text.trim_end_matches('/');
        let (base, rest): (&str, &str) = if t == "~" {
            (&ir.roots.home, "")
        } else if let Some(r) = t.strip_prefix("~/") {
            (&ir.roots.home, r)
        } else if t.starts_with('/') || t.starts_with("**") || t.as_bytes().get(1) == Some(&b':') {
            ("", t)
        } else {
            (&ir.roots.workspace, t)
        };
        // The root itself is literal even when it looks like a glob (`${HOME}`).
        let mut comps: Vec<Comp> = components(base)
            .into_iter()
            .map(|c| Comp::Lit(c.to_string()))
            .collect();
        let mut literal = true;
        for c in components(rest) {
            if c == "**" {
                literal = false;
                comps.push(Comp::AnyDepth);
            } else if is_glob(c) {
                literal = false;
                comps.push(Comp::Glob(LazyGlob::new(c, fold_case)));
            } else if c != "." {
                comps.push(Comp::Lit(c.to_string()));
            }
        }
        let literal = literal.then(|| {
            let parts: Vec<&str> = comps
                .iter()
                .map(|c| match c {
                    Comp::Lit(s) => s.as_str(),
                    _ => unreachable!("literal patterns have literal components"),
                })
                .collect();
            let body = parts.join("/");
            if base.starts_with('/') || (base.is_empty() && t.starts_with('/')) {
                format!("/{body}")
            } else {
                body
            }
        });
        Pattern {
            text: text.to_string(),
            comps,
            literal,
            fold_case,
        }
    }

    fn comp_matches(&self, c: &Comp, s: &str) -> bool {
        match c {
            Comp::Lit(l) if self.fold_case => l.eq_ignore_ascii_case(s),
            Comp::Lit(l) => l == s,
            Comp::Glob(g) => g.is_match(s),
            Comp::AnyDepth => true,
        }
    }

    fn reach(&self, p: &[Comp], s: &[&str]) -> Reach {
        match (p.first(), s.first()) {
            (None, _) => Reach::Within,
            (Some(Comp::AnyDepth), _) => {
                let skip = self.reach(&p[1..], s);
                let take = if s.is_empty() {
                    Reach::No
                } else {
                    self.reach(p, &s[1..])
                };
                skip.max(take)
            }
            (Some(_), None) => Reach::Above,
            (Some(c), Some(x)) => {
                if self.comp_matches(c, x) {
                    self.reach(&p[1..], &s[1..])
                } else {
                    Reach::No
                }
            }
        }
    }

    /// Whether a grant on `path` reaches this pattern: it is at or below a
    /// match, or (`dir`) a match may lie below it.
    pub fn reached_by(&self, path: &str, dir: bool) -> Option<How> {
        self.reached_by_parts(&components(path), dir)
    }

    /// [`Pattern::reached_by`] for a path already split by
    /// [`components`] (one split for many patterns).
    pub fn reached_by_parts(&self, parts: &[&str], dir: bool) -> Option<How> {
        match self.reach(&self.comps, parts) {
            Reach::Within => Some(How::Direct),
            Reach::Above if dir => Some(How::Ancestor),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    Direct,
    Ancestor,
}

/// One grant reaching one sensitive pattern.
#[derive(Debug, Clone)]
pub struct Hit {
    pub grant: usize,
    pub pattern: String,
    pub how: How,
    pub access: Access,
}

/// Grants the user wrote (rules and process roots); presets and the
/// default policy are sbx's own choices and are documented instead.
fn authored(g: &Grant) -> bool {
    matches!(g.source, Source::Rule { .. } | Source::ProcessRoot)
}

/// Patterns by their leading literal components, so that a grant is
/// tested only against the patterns it can reach: those whose literal
/// start is a prefix of the grant's path, or extends it.
struct ByPrefix {
    /// Literal start (components joined by `/`) → patterns.
    at: Map<String, Vec<usize>>,
    /// Each proper prefix of a literal start → patterns below it.
    below: Map<String, Vec<usize>>,
    fold_case: bool,
}

impl ByPrefix {
    fn new(patterns: &[Pattern], fold_case: bool) -> ByPrefix {
        let mut by = ByPrefix {
            at: Map::default(),
            below: Map::default(),
            fold_case,
        };
        for (i, p) in patterns.iter().enumerate() {
            let lits: Vec<&str> = p
                .comps
                .iter()
                .map_while(|c| match c {
                    Comp::Lit(l) => Some(l.as_str()),
                    _ => None,
                })
                .collect();
            for n in 0..lits.len() {
                by.below.entry(by.key(&lits[..n])).or_default().push(i);
            }
            by.at.entry(by.key(&lits)).or_default().push(i);
        }
        by
    }

    fn key(&self, comps: &[&str]) -> String {
        let k = comps.join("/");
        if self.fold_case {
            k.to_ascii_lowercase()
        } else {
            k
        }
    }

    /// Indices of the patterns a grant on `path` may reach, ascending.
    fn candidates(&self, path: &str) -> Vec<usize> {
        let comps = components(path);
        let mut out: Vec<usize> = (0..=comps.len())
            .filter_map(|n| self.at.get(&self.key(&comps[..n])))
            .flatten()
            .chain(self.below.get(&self.key(&comps)).into_iter().flatten())
            .copied()
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Every (authored grant, sensitive pattern) pair where the grant reaches it.
pub fn hits(ir: &Ir, idx: &Index) -> Vec<Hit> {
    hits_with(ir, idx, &patterns(ir))
}

/// The IR's sensitive paths as patterns, for [`hits_with`] and any
/// other test of a path against them.
pub fn patterns(ir: &Ir) -> Vec<Pattern> {
    ir.sensitive_paths
        .iter()
        .map(|p| Pattern::new(p, ir))
        .collect()
}

/// [`hits`] with the IR's [`patterns`] made already (`sbx run` tests the
/// caller's `PATH` against them too).
pub fn hits_with(ir: &Ir, idx: &Index, patterns: &[Pattern]) -> Vec<Hit> {
    let by_prefix = ByPrefix::new(patterns, matches!(ir.os, Os::Macos | Os::Windows));
    let mut out = Vec::new();
    for (i, g) in ir.fs.iter().enumerate() {
        // A deny rule grants nothing to reach a sensitive path with.
        if !authored(g) || g.access.is_empty() {
            continue;
        }
        let dir = g.kind != PathKind::File;
        for p in by_prefix
            .candidates(&g.path)
            .into_iter()
            .map(|k| &patterns[k])
        {
            let Some(how) = p.reached_by(&g.path, dir) else {
                continue;
            };
            // Most specific wins: a literal sensitive path below the grant
            // is reached only if no more specific rule decides it.
            if how == How::Ancestor {
                if let Some(lit) = &p.literal {
                    if !idx.decide(lit).is_some_and(|d| std::ptr::eq(d, g)) {
                        continue;
                    }
                }
            }
            out.push(Hit {
                grant: i,
                pattern: p.text.clone(),
                how,
                access: g.access,
            });
        }
    }
    // A nested rule that reaches a pattern only as its ancestor rule does,
    // with no more rights, tells the reader nothing new.
    let above: Map<(usize, &str), Access> = out
        .iter()
        .filter(|h| h.how == How::Ancestor)
        .map(|h| ((h.grant, h.pattern.as_str()), h.access))
        .collect();
    let keep: Vec<bool> = out
        .iter()
        .map(|h| {
            if h.how == How::Direct {
                return true;
            }
            let mut p = idx.parent(h.grant);
            while let Some(i) = p {
                if above
                    .get(&(i, h.pattern.as_str()))
                    .is_some_and(|a| a.contains(h.access))
                {
                    return false;
                }
                p = idx.parent(i);
            }
            true
        })
        .collect();
    let mut keep = keep.into_iter();
    out.retain(|_| keep.next().unwrap_or(true));
    out
}

/// What is below a directory grant that a pattern may match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// The grant names the sensitive path (a direct hit): nothing to look at.
    Named,
    /// What exists on this machine (at most [`SHOWN`]).
    Found(Vec<String>),
    /// Nothing matches, as far as the bounded search went.
    Absent,
    /// The search stopped at its budget before finding anything.
    Stopped,
    /// A portable check looks at nothing.
    NotLooked,
}

/// Paths listed per grant and pattern.
const SHOWN: usize = 3;
/// How deep and how wide the search below one grant goes, as the nested
/// git search does (`lower::git`).
const DEPTH: usize = 8;
const BUDGET: usize = 2000;
/// Directories the search does not enter: tools' own trees, large, and
/// not where a secret of the project is kept.
const SKIPPED: [&str; 5] = [".git", "node_modules", "target", ".venv", "__pycache__"];

/// For each hit, what exists: a direct hit is named; an ancestor hit is
/// looked for below its grant (never through a symlink), unless
/// `portable`, where the paths are not this machine's.
pub fn look(ir: &Ir, hits: &[Hit], portable: bool) -> Vec<Seen> {
    let patterns: Map<&str, Pattern> = hits
        .iter()
        .map(|h| (h.pattern.as_str(), Pattern::new(&h.pattern, ir)))
        .collect();
    hits.iter()
        .map(|h| {
            if h.how == How::Direct {
                return Seen::Named;
            }
            if portable {
                return Seen::NotLooked;
            }
            let p = &patterns[h.pattern.as_str()];
            let root = &ir.fs[h.grant].path;
            match &p.literal {
                Some(lit) => {
                    if std::fs::symlink_metadata(lit).is_ok() {
                        Seen::Found(vec![lit.clone()])
                    } else {
                        Seen::Absent
                    }
                }
                None => search(p, root),
            }
        })
        .collect()
}

/// Breadth first below `root`: entries the pattern matches (and not
/// below them), directories it may match below.
fn search(p: &Pattern, root: &str) -> Seen {
    let mut found = Vec::new();
    let mut left = BUDGET;
    let mut todo = std::collections::VecDeque::from([(root.to_string(), 0usize)]);
    while let Some((dir, depth)) = todo.pop_front() {
        if left == 0 {
            return if found.is_empty() {
                Seen::Stopped
            } else {
                Seen::Found(found)
            };
        }
        left -= 1;
        let Ok(list) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<(String, bool)> = list
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let is_dir = e.file_type().ok()?.is_dir();
                Some((name, is_dir))
            })
            .collect();
        names.sort();
        for (name, is_dir) in names {
            let path = if dir == "/" {
                format!("/{name}")
            } else {
                format!("{dir}/{name}")
            };
            match p.reach(&p.comps, &components(&path)) {
                Reach::Within => {
                    found.push(path);
                    if found.len() == SHOWN {
                        return Seen::Found(found);
                    }
                }
                Reach::Above if is_dir && depth < DEPTH && !SKIPPED.contains(&name.as_str()) => {
                    todo.push_back((path, depth + 1));
                }
                _ => {}
            }
        }
    }
    if found.is_empty() {
        Seen::Absent
    } else {
        Seen::Found(found)
    }
}

/// SBX033 for each grant that names sensitive paths; SBX020 for each
/// directory grant that holds some, listing what was found; a note where
/// nothing was looked at or the search stopped.
pub fn lint(ir: &Ir, hits: &[Hit], seen: &[Seen], loc: &Locator) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut at = 0;
    // Hits come grouped by grant.
    for mine in hits.chunk_by(|a, b| a.grant == b.grant) {
        let seen_here = &seen[at..at + mine.len()];
        at += mine.len();
        let g = &ir.fs[mine[0].grant];
        let origin = Origin::grant(g);
        let grants = format!(
            "{} grants {} on {}",
            origin.label(),
            g.access.names().join(", "),
            g.path
        );
        let named: Vec<&str> = mine
            .iter()
            .zip(seen_here)
            .filter(|(_, s)| **s == Seen::Named)
            .map(|(h, _)| h.pattern.as_str())
            .collect();
        if !named.is_empty() {
            out.push(
                Diagnostic::new(
                    codes::SENSITIVE_NAMED,
                    format!("{grants}, inside the sensitive path {}", named.join(", ")),
                )
                .at(loc.locate(&origin))
                .help("narrow the rule to what the tool needs; if the access is intended, accept it with `--allow SBX033`"),
            );
        }
        let mut found = Vec::new();
        let mut unlooked = Vec::new();
        for (h, s) in mine.iter().zip(seen_here) {
            match s {
                Seen::Found(paths) => found.push(format!("{} ({})", h.pattern, paths.join(", "))),
                Seen::Stopped | Seen::NotLooked => unlooked.push(h.pattern.as_str()),
                Seen::Named | Seen::Absent => {}
            }
        }
        if !found.is_empty() {
            out.push(
                Diagnostic::new(
                    codes::SENSITIVE,
                    format!("{grants}, which holds the sensitive path {}", found.join(", ")),
                )
                .at(loc.locate(&origin))
                .help("narrow the rule, or move the file out of the tree; if the access is intended, accept it with `--allow SBX020`"),
            );
        }
        if !unlooked.is_empty() {
            let why = if seen_here.contains(&Seen::NotLooked) {
                "not looked for: a portable check does not read this machine"
            } else {
                "the search below it stopped after 2000 directories"
            };
            out.push(
                Diagnostic::new(
                    codes::SENSITIVE,
                    format!(
                        "{grants}, which may hold the sensitive path {} ({why})",
                        unlooked.join(", ")
                    ),
                )
                .severity(crate::diag::Severity::Note)
                .at(loc.locate(&origin)),
            );
        }
    }
    out
}

/// SBX025: unrestricted outbound network together with a sensitive read.
pub fn exfiltration(ir: &Ir, hits: &[Hit], seen: &[Seen], loc: &Locator) -> Vec<Diagnostic> {
    if ir.net.connect != Ports::All {
        return Vec::new();
    }
    // Hits come in path order, which depends on where the workspace and
    // home are; name rules in policy order and paths in list order instead.
    // A pattern that matches nothing on this machine is nothing to send.
    let reads: Vec<&Hit> = hits
        .iter()
        .zip(seen)
        .filter(|(h, s)| h.access.read && !matches!(s, Seen::Absent))
        .map(|(h, _)| h)
        .collect();
    if reads.is_empty() {
        return Vec::new();
    }
    let mut grants: Vec<&Grant> = reads.iter().map(|h| &ir.fs[h.grant]).collect();
    grants.sort_by(|a, b| (&a.source, &a.path).cmp(&(&b.source, &b.path)));
    let mut rules: Vec<String> = grants.iter().map(|g| Origin::grant(g).label()).collect();
    rules.dedup();
    let read: Set<&str> = reads.iter().map(|h| h.pattern.as_str()).collect();
    let paths: Vec<&str> = ir
        .sensitive_paths
        .iter()
        .map(String::as_str)
        .filter(|p| read.contains(p))
        .collect();
    let culprit = ir
        .net
        .rules
        .iter()
        .find(|r| r.allow && !r.bind && r.port.is_none())
        .map(Origin::net);
    let label = culprit
        .as_ref()
        .map(Origin::label)
        .unwrap_or_else(|| "the policy".into());
    vec![Diagnostic::new(
        codes::EXFILTRATION,
        format!(
            "{label} allows connections to any port while {} can read the sensitive path {}",
            rules.join(", "),
            paths.join(", ")
        ),
    )
    .at(loc.locate_opt(culprit.as_ref()))
    .help("restrict [[net]] to the ports the tool needs (for example `port = 443`), or drop the read of the sensitive path")]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ir() -> Ir {
        let mut ir: Ir = serde_json::from_value(serde_json::json!({
            "sbx": 1, "policy_hash": "", "enforcement": "best_effort", "mode": "resolved",
            "os": "linux", "roots": {"workspace": "/h/u/w", "home": "/h/u", "temp": "/tmp"},
            "fs": [], "net": {"connect": {"kind": "none"}, "bind": {"kind": "none"},
            "other_protocols": false, "dns": false, "rules": []},
            "env": {"minimal": [], "allow": []}, "limits": {}, "sensitive_paths": [],
            "macos": {"mach_lookup": [], "allow_pty": false}, "linux": {},
            "windows": {"token": "restricted", "appcontainer": false, "ui_restrictions": [], "kill_on_close": true},
            "precision": []
        }))
        .unwrap();
        ir.sensitive_paths = crate::lower::SENSITIVE_PATHS
            .iter()
            .map(|s| s.to_string())
            .collect();
        ir
    }

    fn reach(pat: &str, path: &str, dir: bool) -> Option<How> {
        Pattern::new(pat, &ir()).reached_by(path, dir)
    }

    #[test]
    fn direct_and_ancestor() {
        assert_eq!(reach("~/.ssh/", "/h/u/.ssh", true), Some(How::Direct));
        assert_eq!(
            reach("~/.ssh/", "/h/u/.ssh/id_rsa", false),
            Some(How::Direct)
        );
        assert_eq!(reach("~/.ssh/", "/h/u", true), Some(How::Ancestor));
        assert_eq!(reach("~/.ssh/", "/", true), Some(How::Ancestor));
        assert_eq!(reach("~/.ssh/", "/h/u/.sshx", true), None);
        assert_eq!(reach("~/.ssh/", "/h/u/w", true), None);
        // A file cannot contain anything.
        assert_eq!(reach("~/.ssh/", "/h", false), None);
    }

    /// A glob component's literal start rejects a name without the
    /// glob; what gets past it is the glob's to decide, case folding too.
    #[test]
    fn glob_components_start_literal() {
        let linux = ir();
        let mut macos = ir();
        macos.os = Os::Macos;
        let env = Pattern::new("**/.env.*", &linux);
        assert_eq!(env.reached_by("/h/u/w/.env.prod", false), Some(How::Direct));
        assert_eq!(env.reached_by("/h/u/w/.env", false), None);
        assert_eq!(env.reached_by("/h/u/w/.env.", false), Some(How::Direct));
        assert_eq!(env.reached_by("/h/u/w/.ENV.prod", false), None);
        assert_eq!(env.reached_by("/usr/bin", true), Some(How::Ancestor));
        let folded = Pattern::new("**/.env.*", &macos);
        assert_eq!(
            folded.reached_by("/h/u/w/.ENV.prod", false),
            Some(How::Direct)
        );
        // No literal start, a class first, an escape: the glob decides.
        assert_eq!(reach("~/*.pem", "/h/u/a.pem", false), Some(How::Direct));
        assert_eq!(reach("~/*.pem", "/h/u/a.key", false), None);
        assert_eq!(reach("~/[ab].pem", "/h/u/b.pem", false), Some(How::Direct));
        assert_eq!(reach("~/x\\*y*", "/h/u/x*yz", false), Some(How::Direct));
        assert_eq!(reach("~/x\\*y*", "/h/u/xayz", false), None);
        // The literal start never decides otherwise than globset would.
        let names = [
            "key.pem",
            "Key.pem",
            "KEY.PEM",
            "\u{212A}ey.pem",
            "k",
            "",
            "ke",
            "xkey.pem",
            "k\u{e9}.pem",
            "K\u{c9}.pem",
        ];
        for glob in ["k*.pem", "ke?.pem", "k\u{e9}*", "[kK]ey.pem", "ke{y,x}.pem"] {
            for fold in [false, true] {
                let lazy = LazyGlob::new(glob, fold);
                let whole = GlobBuilder::new(glob)
                    .literal_separator(true)
                    .case_insensitive(fold)
                    .build()
                    .unwrap()
                    .compile_matcher();
                for n in names {
                    assert_eq!(lazy.is_match(n), whole.is_match(n), "{glob} {fold} {n:?}");
                }
            }
        }
    }

    #[test]
    fn any_depth_globs() {
        assert_eq!(reach("**/.env", "/h/u/w", true), Some(How::Ancestor));
        assert_eq!(reach("**/.env", "/h/u/w/.env", false), Some(How::Direct));
        assert_eq!(
            reach("**/.env.*", "/h/u/w/a/.env.local", false),
            Some(How::Direct)
        );
        assert_eq!(reach("**/.env", "/h/u/w/main.rs", false), None);
        assert_eq!(
            reach("~/.config/*/token", "/h/u/.config/gh", true),
            Some(How::Ancestor)
        );
        assert_eq!(
            reach("~/.config/*/token", "/h/u/.config/gh/token", false),
            Some(How::Direct)
        );
        assert_eq!(reach("~/.config/*/token", "/h/u/.cache", true), None);
    }

    #[test]
    fn placeholders_are_literal() {
        let mut ir = ir();
        ir.roots.home = "${HOME}".into();
        let p = Pattern::new("~/.aws/credentials", &ir);
        assert_eq!(p.reached_by("${HOME}", true), Some(How::Ancestor));
        assert_eq!(p.reached_by("${HOMEX}", true), None);
        assert_eq!(p.literal.as_deref(), Some("${HOME}/.aws/credentials"));
    }

    /// The message must not depend on where the workspace and home are:
    /// CI's checkout sorted before `/opt`, the developer's after it.
    #[test]
    fn exfiltration_names_rules_in_policy_order() {
        use crate::ir::testing::rule_grant;
        let message = |ws: &str, home: &str| {
            let mut ir = ir();
            ir.roots.workspace = ws.into();
            ir.roots.home = home.into();
            ir.net.connect = Ports::All;
            let rw = Access::READ_WRITE;
            ir.fs = vec![
                rule_grant(0, 4, ws, rw, PathKind::Dir),
                rule_grant(1, 8, home, rw, PathKind::Dir),
                rule_grant(2, 12, "/opt/shared", Access::READ, PathKind::Dir),
            ];
            ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
            let idx = Index::new(&ir);
            let policy = crate::policy::merge::Policy::default();
            let loc = Locator {
                policy: &policy,
                layers: &[],
            };
            let found = hits(&ir, &idx);
            // Not looked at (as in a portable check): every pattern counts.
            let seen = look(&ir, &found, true);
            let d = exfiltration(&ir, &found, &seen, &loc);
            assert_eq!(d.len(), 1);
            d[0].message.clone()
        };
        let early = message("/a/w", "/a/h");
        assert_eq!(early, message("/z/w", "/z/h"));
        assert!(
            early.contains("while fs[0] (policy.toml:4:1), fs[1] (policy.toml:8:1), fs[2] (policy.toml:12:1) can read the sensitive path ~/.ssh/, "),
            "{early}"
        );
        assert!(
            early.ends_with("**/.env, **/.env.*, ~/.netrc, ~/.git-credentials, ~/.config/gh/, ~/.azure/, ~/.npmrc, ~/.pypirc, ~/.cargo/credentials.toml"),
            "{early}"
        );
    }

    #[test]
    fn case_folds_on_macos() {
        let mut ir = ir();
        ir.os = Os::Macos;
        assert_eq!(
            Pattern::new("~/.SSH/", &ir).reached_by("/H/u/.ssh", true),
            Some(How::Direct)
        );
    }

    /// The prefix index leaves out no pattern a path reaches: sibling
    /// names sharing a prefix, `**` first and later, globs, home, case.
    #[test]
    fn prefix_index_finds_every_reachable_pattern() {
        for os in ["linux", "macos"] {
            let mut ir = ir();
            ir.os = serde_json::from_value(serde_json::json!(os)).unwrap();
            let texts = [
                "~/.ssh/",
                "**/.env",
                "d/1",
                "d/10/*.key",
                "d/1/**/t",
                "/opt/x/*.pem",
                "~",
                "/",
                "d/1?/x",
                "D/1",
            ];
            let pats: Vec<Pattern> = texts.iter().map(|t| Pattern::new(t, &ir)).collect();
            let by = ByPrefix::new(&pats, ir.os != Os::Linux);
            for path in [
                "/",
                "/h",
                "/h/u",
                "/h/u/w",
                "/h/u/w/d",
                "/h/u/w/d/1",
                "/h/u/w/d/10",
                "/h/u/w/d/10/a.key",
                "/h/u/w/d/1/s/t",
                "/h/u/w/d/100",
                "/h/u/.ssh/k",
                "/opt/x/c.pem",
                "/opt",
                "/h/u/w/D/1",
                "/h/u/w/d/12/x",
                "/h/u/w/.env",
            ] {
                let got = by.candidates(path);
                for dir in [true, false] {
                    for (i, p) in pats.iter().enumerate() {
                        if p.reached_by(path, dir).is_some() {
                            assert!(got.contains(&i), "{os} {path} {}", p.text);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_search_is_bounded_and_says_when_it_stopped() {
        let t = std::env::temp_dir().join(format!("sbx-sensitive-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        for i in 0..BUDGET {
            std::fs::create_dir_all(t.join(format!("d{i}"))).unwrap();
        }
        // Beyond the budget (breadth first: the last level).
        std::fs::create_dir_all(t.join("d0/x")).unwrap();
        std::fs::write(t.join("d0/x/.env"), "").unwrap();
        let p = Pattern::new("**/.env", &ir());
        let root = t.to_str().unwrap();
        assert_eq!(search(&p, root), Seen::Stopped);
        std::fs::write(t.join(".env"), "").unwrap();
        assert_eq!(search(&p, root), Seen::Found(vec![format!("{root}/.env")]));
        std::fs::remove_dir_all(&t).unwrap();
    }
}
