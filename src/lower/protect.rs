//! POLICY.md §7 and §7a as ordinary grants, so that every back end, the
//! precision reports, `explain` and `--baseline` see them with no special
//! case:
//!
//! * a protected path inside a writable grant becomes a read-only grant
//!   (the rights of the grant that covers it, minus create, update and
//!   delete), source [`Source::Protected`];
//! * a sensitive path under home that a broader grant only covers becomes
//!   a grant with no rights at all (hidden), source [`Source::Covered`].
//!
//! Both rely on most-specific-wins: the new grant is deeper than the one
//! that covered the path, and a rule deeper still (one naming a file in
//! `.vscode/`) keeps deciding for itself.

use super::git;
use super::paths::join;
use super::Ctx;
use crate::diag::{codes, Diagnostic, Location};
use crate::ir::{Access, Grant, PathKind, Precision, Source, Status};
use crate::policy::Policy;
use std::collections::{HashMap, HashSet};

/// At the top of every writable tree (POLICY.md §7a).
pub const IN_WRITABLE: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".gitmodules",
    ".envrc",
    ".vscode",
    ".idea",
    ".mcp.json",
    ".claude",
    ".codex",
    ".agents",
];

/// Under a writable home: shell start-up files and git's global config.
/// Beside §7a's list, the other files bash, zsh and fish read at start-up
/// or exit (each runs as surely as `.bashrc`), and what the desktop
/// session starts at the next login (autostart entries, systemd user
/// units).
pub const IN_HOME: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".config/fish",
    ".gitconfig",
    ".config/git",
    ".config/autostart",
    ".config/systemd/user",
];

/// One place to protect, before it is checked against the grants.
struct Want {
    path: String,
    entry: String,
}

/// Grants by every spelling, for most-specific-wins lookups in O(depth).
struct Lookup {
    by_path: HashMap<String, usize>,
}

impl Lookup {
    fn new(fs: &[Grant]) -> Lookup {
        let mut by_path = HashMap::new();
        for (i, g) in fs.iter().enumerate() {
            for p in std::iter::once(&g.path).chain(&g.aliases) {
                by_path.entry(p.clone()).or_insert(i);
            }
        }
        Lookup { by_path }
    }

    /// The grant deciding `path` ([`crate::ir::Ir::decide`]): the nearest granted
    /// spelling walking up.
    fn decide(&self, path: &str) -> Option<usize> {
        let mut p = path;
        loop {
            if let Some(&i) = self.by_path.get(p) {
                return Some(i);
            }
            p = parent(p)?;
        }
    }
}

/// `/a/b` → `/a`, `/a` → `/`, `${W}/a` → `${W}`, `C:\a` → `C:\`; `None` at a root.
fn parent(p: &str) -> Option<&str> {
    let i = p.rfind(['/', '\\'])?;
    if i + 1 == p.len() {
        return None;
    }
    if i == 0 || p[..i].ends_with(':') {
        Some(&p[..=i])
    } else {
        Some(&p[..i])
    }
}

/// The spelling of `path` under each of `g`'s aliases (macOS `/tmp` and
/// `/private/tmp`).
fn aliases_below(g: &Grant, path: &str) -> Vec<String> {
    let Some(rest) = path.strip_prefix(g.path.as_str()) else {
        return Vec::new();
    };
    let mut v: Vec<String> = g
        .aliases
        .iter()
        .map(|a| format!("{}{rest}", a.trim_end_matches('/')))
        .collect();
    v.sort();
    v.dedup();
    v
}

fn locate(policy: &Policy, s: &Source) -> Option<Location> {
    match s {
        Source::Rule { index, .. } => policy.fs.as_ref()?.get(*index)?.loc.clone(),
        _ => None,
    }
}

/// A grant's path as the policy writes it, so that a warning reads the
/// same whichever OS the policy is lowered for (`sbx check` lowers for
/// each, and keeps one copy of equal warnings).
fn written(policy: &Policy, g: &Grant) -> String {
    match &g.source {
        Source::Rule { index, .. } => policy
            .fs
            .as_ref()
            .and_then(|f| f.get(*index))
            .map_or_else(|| g.path.clone(), |r| r.value.path.clone()),
        Source::Default => "the workspace".into(),
        _ => g.path.clone(),
    }
}

impl Ctx<'_> {
    fn kind_of(&self, path: &str) -> PathKind {
        if !self.resolve {
            return PathKind::Unknown;
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => PathKind::Dir,
            Ok(_) => PathKind::File,
            Err(_) => PathKind::Missing,
        }
    }

    /// Every place §7a names, for the writable grants of `fs`.
    fn wanted(&mut self, policy: &Policy, fs: &[Grant], look: &Lookup) -> Vec<Want> {
        let mut out = Vec::new();
        let home = self.roots.home.clone();
        let writes = |p: &str| look.decide(p).is_some_and(|i| fs[i].access.writes());
        // The top of each writable tree: a writable grant whose directory
        // above the policy does not make writable (presets such as the
        // temp directory are sbx's own, and not protected). A writable rule inside a writable tree
        // adds no protections of its own, so that removing such a rule
        // (redundant for writing) never unprotects anything; repositories
        // inside the tree are found by the nested search instead.
        let policy_writes = |p: &str| {
            look.decide(p).is_some_and(|i| {
                let g = &fs[i];
                (g.source.authored() || g.source == Source::Default) && g.access.writes()
            })
        };
        let mut roots: Vec<String> = fs
            .iter()
            .filter(|g| {
                (g.source.authored() || g.source == Source::Default)
                    && g.access.writes()
                    && g.kind != PathKind::File
                    && !parent(&g.path).is_some_and(policy_writes)
            })
            .map(|g| g.path.clone())
            .collect();
        // The workspace when a broader grant makes it writable (a grant on
        // it under another spelling, macOS `/private/tmp`, is there already).
        let ws = &self.roots.workspace;
        let named = look
            .by_path
            .get(ws.as_str())
            .is_some_and(|&i| roots.contains(&fs[i].path));
        if writes(ws) && !named && !roots.contains(ws) {
            roots.push(ws.clone());
        }
        let user: Vec<&str> = policy
            .protected_paths
            .iter()
            .map(|p| p.value.as_str())
            .collect();
        let (anchored, relative): (Vec<&str>, Vec<&str>) = user
            .iter()
            .partition(|p| p.starts_with("~/") || p.starts_with('/'));
        // A writable rule at or inside a protected path lifts it; the list
        // is not applied again below it (`.vscode/settings.json/.git/hooks`).
        let entries = |r: &String| {
            IN_WRITABLE
                .iter()
                .chain(relative.iter())
                .map(|e| join(r, e.trim_end_matches('/')))
                .collect::<Vec<_>>()
        };
        let listed: HashSet<String> = roots.iter().flat_map(entries).collect();
        roots.retain(|r| {
            let mut p = Some(r.as_str());
            while let Some(q) = p {
                if listed.contains(q) {
                    return false;
                }
                p = parent(q);
            }
            true
        });
        let mut repos = Vec::new();
        let mut budget = git::DIR_BUDGET;
        let mut complete = true;
        for r in &roots {
            for e in IN_WRITABLE.iter().chain(relative.iter()) {
                let e = e.trim_end_matches('/');
                out.push(Want {
                    path: join(r, e),
                    entry: e.to_string(),
                });
            }
            if self.resolve {
                repos.push(r.clone());
                complete &= git::nested(r, &mut budget, &mut repos);
            }
        }
        if writes(&home) {
            for e in IN_HOME {
                out.push(Want {
                    path: join(&home, e),
                    entry: format!("~/{e}"),
                });
            }
        }
        for e in anchored {
            let e = e.trim_end_matches('/');
            let path = match e.strip_prefix("~/") {
                Some(r) => join(&home, r),
                None => super::paths::normalise(e),
            };
            out.push(Want {
                path,
                entry: e.to_string(),
            });
        }
        if self.resolve {
            let global = git::global_hooks_path(&home);
            repos.sort();
            repos.dedup();
            for d in repos {
                for f in git::repo(&d, &home, global.as_deref(), &mut budget) {
                    out.push(Want {
                        path: f.path,
                        entry: f.entry,
                    });
                }
            }
        }
        if !complete {
            self.notes.push(Precision {
                rule: "protected paths".into(),
                target: "ir".into(),
                status: Status::Wider,
                reason: format!(
                    "the search for nested git repositories stopped after {} directories: \
                     a repository it did not reach keeps writable hooks and config",
                    git::DIR_BUDGET
                ),
            });
        }
        out
    }

    /// Add the protections and hidden sensitive paths to `fs` (sorted by
    /// path, as lowering leaves it); warn about lifted protections
    /// (SBX030) and covered sensitive paths (SBX029).
    pub(super) fn protect(&mut self, policy: &Policy, fs: &mut Vec<Grant>) {
        let look = Lookup::new(fs);
        let mut wanted = self.wanted(policy, fs, &look);
        // A protected path reached through a symlink is protected by both
        // names: the link (so it cannot be replaced) and its target.
        if self.resolve {
            let mut extra = Vec::new();
            for w in &wanted {
                let (canon, _) = self.resolver.resolve(&w.path);
                if canon != w.path {
                    extra.push(Want {
                        path: canon,
                        entry: w.entry.clone(),
                    });
                }
            }
            wanted.extend(extra);
        }
        let mut seen = HashSet::new();
        let mut add: Vec<Grant> = Vec::new();
        let mut lifted: Vec<(usize, String, String)> = Vec::new();
        for w in wanted {
            if !seen.insert(w.path.clone()) {
                continue;
            }
            let Some(i) = look.decide(&w.path) else {
                continue;
            };
            let g = &fs[i];
            if !g.access.writes() {
                continue;
            }
            let exact = g.path == w.path || g.aliases.contains(&w.path);
            if exact && g.source.authored() {
                lifted.push((i, w.path, w.entry));
                continue;
            }
            let access = Access {
                create: false,
                update: false,
                delete: false,
                ..g.access
            };
            if exact {
                // A preset's or the default policy's grant on the very path.
                let g = &mut fs[i];
                g.access = access;
                g.source = Source::Protected { entry: w.entry };
                continue;
            }
            add.push(Grant {
                kind: self.kind_of(&w.path),
                aliases: aliases_below(g, &w.path),
                path: w.path,
                access,
                source: Source::Protected { entry: w.entry },
                external: None,
            });
        }
        // A writable rule inside a protected path lifts it there.
        if !add.is_empty() {
            let protected: HashMap<&str, &str> = add
                .iter()
                .map(|g| {
                    let Source::Protected { entry } = &g.source else {
                        unreachable!("only protections are added here")
                    };
                    (g.path.as_str(), entry.as_str())
                })
                .collect();
            for (i, g) in fs.iter().enumerate() {
                if !g.source.authored() || !g.access.writes() {
                    continue;
                }
                let mut p = parent(&g.path);
                while let Some(q) = p {
                    if let Some(e) = protected.get(q) {
                        lifted.push((i, q.to_string(), e.to_string()));
                        break;
                    }
                    p = parent(q);
                }
            }
        }
        let mut said = HashSet::new();
        for (i, path, entry) in lifted {
            let g = &fs[i];
            if !said.insert((i, entry.clone())) {
                continue;
            }
            let inside = if g.path == path || g.aliases.contains(&path) {
                String::new()
            } else {
                format!(" inside the protected {entry}")
            };
            self.diags.push(
                Diagnostic::new(
                    codes::PROTECTION_LIFTED,
                    format!(
                        "{} grants {} on {}{inside}: the protection of {entry} is lifted there, \
                         and what the sandbox writes there can run later outside it",
                        g.source.label(),
                        g.access.names().join(", "),
                        written(policy, g)
                    ),
                )
                .at(locate(policy, &g.source))
                .help("drop the write rights unless the tool must change this file; if it must, accept the warning with `--allow SBX030`"),
            );
        }
        let hidden = self.covered(policy, fs, &look);
        // Hidden is stricter than read-only where a user entry names a
        // sensitive path too.
        let hidden_at: HashSet<&str> = hidden.iter().map(|g| g.path.as_str()).collect();
        add.retain(|g| !hidden_at.contains(g.path.as_str()));
        fs.extend(add);
        fs.extend(hidden);
        fs.sort_by(|a, b| a.path.cmp(&b.path));
    }

    /// §7: a literal `~/` sensitive path that a broader rule covers (not
    /// one that names it) becomes a grant with no rights.
    fn covered(&mut self, policy: &Policy, fs: &[Grant], look: &Lookup) -> Vec<Grant> {
        let mut out = Vec::new();
        let home = self.roots.home.clone();
        let mut sensitive: Vec<&str> = super::SENSITIVE_PATHS.to_vec();
        for s in &policy.sensitive_paths {
            if !sensitive.contains(&s.value.as_str()) {
                sensitive.push(&s.value);
            }
        }
        let mut seen = HashSet::new();
        for pattern in sensitive {
            let Some(rest) = pattern.strip_prefix("~/") else {
                continue;
            };
            let rest = rest.trim_end_matches('/');
            if rest.is_empty() || rest.contains(['*', '?', '[', '{']) {
                continue;
            }
            let path = join(&home, rest);
            if !seen.insert(path.clone()) {
                continue;
            }
            let Some(i) = look.decide(&path) else {
                continue;
            };
            let g = &fs[i];
            let by_user = g.source.authored() || g.source == Source::Default;
            let names = g.path == path || g.aliases.contains(&path);
            if !by_user || names || g.access.is_empty() {
                continue;
            }
            let kind = self.kind_of(&path);
            // A credential store that is not there has nothing to hide:
            // the grant still stops its creation where SBPL matches by name.
            if kind != PathKind::Missing {
                self.diags.push(
                    Diagnostic::new(
                        codes::SENSITIVE_COVERED,
                        format!(
                            "{} grants {} on {}, which covers the sensitive path {pattern}: \
                         it stays hidden",
                            g.source.label(),
                            g.access.names().join(", "),
                            written(policy, g)
                        ),
                    )
                    .at(locate(policy, &g.source))
                    .help(format!(
                        "to give the tool {pattern}, name it in a rule of its own \
                     (that is consent, and sbx check warns with SBX020)"
                    )),
                );
            }
            out.push(Grant {
                kind,
                aliases: aliases_below(g, &path),
                path,
                access: Access::NONE,
                source: Source::Covered {
                    pattern: pattern.to_string(),
                    by: Box::new(g.source.clone()),
                },
                external: None,
            });
        }
        out
    }
}

/// POLICY.md §13: the files `sbx run` read its policy from (policy,
/// layers, approvals store) are read-only to the child wherever a grant
/// makes them writable, so it cannot widen its own next run. `files` are
/// host paths; each is resolved, and kept read-only under both names.
pub fn run_files(ir: &mut crate::ir::Ir, files: &[String]) {
    for f in files {
        let mut names = Vec::new();
        if let Some(a) = std::path::absolute(f)
            .ok()
            .and_then(|a| a.to_str().map(String::from))
        {
            names.push(super::paths::normalise(&a));
        }
        if let Ok(c) = std::fs::canonicalize(f) {
            if let Some(c) = c.to_str() {
                names.push(c.to_string());
            }
        }
        names.dedup();
        for path in names {
            let look = Lookup::new(&ir.fs);
            let Some(i) = look.decide(&path) else {
                continue;
            };
            let g = &mut ir.fs[i];
            if !g.access.writes() {
                continue;
            }
            let access = Access {
                create: false,
                update: false,
                delete: false,
                ..g.access
            };
            if g.path == path {
                g.access = access;
                g.source = Source::RunFile;
                continue;
            }
            let aliases = aliases_below(g, &path);
            ir.fs.push(Grant {
                path,
                access,
                kind: PathKind::File,
                source: Source::RunFile,
                aliases,
                external: None,
            });
            ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
        }
    }
}

#[cfg(test)]
mod tests;
