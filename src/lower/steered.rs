//! POLICY.md §13: a run cannot widen its own next run. A rule path that
//! leads through a symlink is followed where it leads; a symlink that
//! lies in a directory the policy lets the command change may have been
//! put there by an earlier run (a rule for a path missing at launch,
//! beneath a writable rule, made a link to `~/.ssh` or to a protected
//! `.vscode`), so a grant reached through one is dropped. An approved
//! external rule (RFD D43) is the user's word for its link and is kept;
//! a grant with no rights (a deny) only narrows and is kept too.

use super::Ctx;
use crate::diag::{codes, Diagnostic, Location};
use crate::ir::{path_within, Grant, Precision, Source, Status};
use crate::policy::Policy;
use std::path::Path;

impl Ctx<'_> {
    pub(super) fn drop_steered(&mut self, policy: &Policy, grants: &mut Vec<Grant>) {
        // The links on the way of every grant reached through one: only
        // those grants carry aliases, so most policies look at a few.
        let mut steered: Vec<(usize, String, String)> = Vec::new(); // grant, link, its directory
        for (i, g) in grants.iter().enumerate() {
            if g.access.is_empty() || g.external.is_some() {
                continue;
            }
            for a in &g.aliases {
                if let Some((link, dir)) = links_on_the_way(a).find(|(_, d)| changeable(grants, d))
                {
                    steered.push((i, link, dir));
                    break;
                }
            }
        }
        for (i, link, dir) in steered.iter().rev() {
            let g = grants.remove(*i);
            let loc = match &g.source {
                Source::Rule { index, .. } => policy
                    .fs
                    .as_ref()
                    .and_then(|f| f.get(*index))
                    .and_then(|r| r.loc.clone()),
                _ => None,
            };
            self.diags.push(steered_diagnostic(&g, link, dir, loc));
            self.notes.push(Precision {
                rule: g.source.label(),
                target: "ir".into(),
                status: Status::Dropped,
                reason: format!(
                    "reaches {} through the symlink {link}, which lies in {dir}, where the \
                     command can make or replace entries: the rule is dropped",
                    g.path
                ),
                advisory: false,
            });
        }
    }
}

fn steered_diagnostic(g: &Grant, link: &str, dir: &str, loc: Option<Location>) -> Diagnostic {
    Diagnostic::new(
        codes::STEERED_LINK,
        format!(
            "{} reaches {} through the symlink {link}, in {dir}, which the command can change; \
             the grant is dropped",
            g.source.label(),
            g.path
        ),
    )
    .at(loc)
    .help("name the link's target in the rule itself, or keep the link out of writable directories")
}

/// Each symlink met on the way along the absolute path `p`, with the
/// directory that holds it (resolved).
fn links_on_the_way(p: &str) -> impl Iterator<Item = (String, String)> + '_ {
    let mut prefix = String::new();
    p.split('/').filter(|c| !c.is_empty()).filter_map(move |c| {
        let parent = if prefix.is_empty() {
            "/".to_string()
        } else {
            prefix.clone()
        };
        prefix.push('/');
        prefix.push_str(c);
        let m = std::fs::symlink_metadata(&prefix).ok()?;
        if !m.file_type().is_symlink() {
            return None;
        }
        let dir = crate::canonical::canonicalize(Path::new(&parent)).ok()?;
        Some((prefix.clone(), dir.to_str()?.to_string()))
    })
}

/// Whether the grants let the command make, replace or remove entries of
/// `dir`: the most specific grants covering it (rights add up among
/// those on one path) give a write right.
fn changeable(grants: &[Grant], dir: &str) -> bool {
    let mut best = 0;
    let mut writes = false;
    for g in grants {
        for p in std::iter::once(&g.path).chain(&g.aliases) {
            if !path_within(dir, p) {
                continue;
            }
            if p.len() > best {
                best = p.len();
                writes = g.access.writes();
            } else if p.len() == best {
                writes |= g.access.writes();
            }
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_links_on_a_way_and_their_directories() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(d.join("a/real")).unwrap();
        std::os::unix::fs::symlink(d.join("a/real"), d.join("a/link")).unwrap();
        let way = format!("{}/a/link/x", d.display());
        let got: Vec<(String, String)> = links_on_the_way(&way).collect();
        let a = d.join("a").to_str().unwrap().to_string();
        assert_eq!(got, [(format!("{a}/link"), a.clone())]);
        assert!(links_on_the_way(&format!("{a}/real")).next().is_none());
    }
}
