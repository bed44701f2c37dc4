//! POLICY.md §7's covered sensitive paths, hidden by a grant with no
//! rights, and §13's run files, kept read-only: both added the way
//! [`super::protect`] adds protections, relying on most-specific-wins.

use super::lookup::{locate, written, Lookup};
use super::paths::join;
use super::Ctx;
use crate::diag::{codes, Diagnostic};
use crate::hashed::Set;
use crate::ir::{Access, Grant, PathKind, Source};
use crate::policy::Policy;

/// The sensitive paths §7 hides where a broader rule covers them: the
/// literal `~/` ones, built in and the policy's, as (pattern, path under
/// `home`).
pub(super) fn hideable<'a>(policy: &'a Policy, home: &str) -> Vec<(&'a str, String)> {
    let mut sensitive: Vec<&str> = super::SENSITIVE_PATHS.to_vec();
    for s in &policy.sensitive_paths {
        if !sensitive.contains(&s.value.as_str()) {
            sensitive.push(&s.value);
        }
    }
    sensitive
        .into_iter()
        .filter_map(|pattern| {
            let rest = pattern.strip_prefix("~/")?.trim_end_matches('/');
            (!rest.is_empty() && !rest.contains(['*', '?', '[', '{']))
                .then(|| (pattern, join(home, rest)))
        })
        .collect()
}

impl Ctx<'_> {
    /// §7: a literal `~/` sensitive path that a broader rule covers (not
    /// one that names it) becomes a grant with no rights.
    pub(super) fn covered(&mut self, policy: &Policy, fs: &[Grant], look: &Lookup) -> Vec<Grant> {
        let mut out = Vec::new();
        let home = self.roots.home.clone();
        let mut seen = Set::default();
        for (pattern, path) in hideable(policy, &home) {
            if !seen.insert(path.clone()) {
                continue;
            }
            let Some(i) = look.decide(&path) else {
                continue;
            };
            let g = &fs[i];
            let by_user = g.source.authored() || g.source == Source::Default;
            if !by_user || g.names(&path) || g.access.is_empty() {
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
                aliases: g.aliases_below(&path),
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
        if let Ok(c) = crate::canonical::canonicalize(f) {
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
            let access = g.access.without_writes();
            if g.path == path {
                g.access = access;
                g.source = Source::RunFile;
                continue;
            }
            let aliases = g.aliases_below(&path);
            let kind = if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                PathKind::Dir
            } else {
                PathKind::File
            };
            ir.fs.push(Grant {
                path,
                access,
                kind,
                source: Source::RunFile,
                aliases,
                external: None,
            });
            ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
        }
    }
}
