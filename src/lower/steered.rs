//! POLICY.md §13: a run cannot widen its own next run. A rule path that
//! leads through a symlink is followed where it leads; a symlink that
//! lies in a directory the policy lets the command change may have been
//! put there by an earlier run (a rule for a path missing at launch,
//! beneath a writable rule, made a link to `~/.ssh` or to a protected
//! `.vscode`), so a grant reached through one loses the rights it would
//! add there (most specific wins: a grant that narrows keeps narrowing,
//! or dropping it would widen). An approved external rule (RFD D43) is
//! the user's word for its link and is kept; a deny only narrows.

use super::Ctx;
use crate::diag::{codes, Diagnostic};
use crate::ir::{path_within, Access, Grant, Precision, Source, Status};
use crate::policy::Policy;

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
                let found = links_on_the_way(a).find(|(_, d)| crate::ir::changeable_in(grants, d));
                if let Some((link, dir)) = found {
                    steered.push((i, link, dir));
                    break;
                }
            }
        }
        // Reached through such links, grants cannot vouch for each other.
        // Decided on the list as it is, then applied.
        let skip: Vec<usize> = steered.iter().map(|(i, _, _)| *i).collect();
        // What a broader rule only covers there stays hidden (§7): a
        // grant reached through a planted link must not lift that.
        let sensitive = super::hidden::hideable(policy, &self.roots.home);
        let mut cut: Vec<(usize, Access)> = Vec::new();
        for (i, link, dir) in &steered {
            // What the path gets without these grants. Most specific wins,
            // so dropping a grant that narrows would widen: only the
            // rights it adds there go.
            let g = &grants[*i];
            let others = if sensitive.iter().any(|(_, h)| path_within(&g.path, h)) {
                Access::NONE
            } else {
                access_at(grants, &g.path, &skip)
            };
            let added = g.access.minus(others);
            if added.is_empty() {
                continue;
            }
            let kept = g.access.minus(added);
            cut.push((*i, kept));
            let loc = match &g.source {
                Source::Rule { index, .. } => policy
                    .fs
                    .as_ref()
                    .and_then(|f| f.get(*index))
                    .and_then(|r| r.loc.clone()),
                _ => None,
            };
            let what = if kept.is_empty() {
                "the grant is dropped".to_string()
            } else {
                format!("only {} is kept", kept.names().join(", "))
            };
            self.diags.push(
                Diagnostic::new(
                    codes::STEERED_LINK,
                    format!(
                        "{} reaches {} through the symlink {link}, in {dir}, which the command \
                         can change; {what}",
                        g.source.label(),
                        g.path
                    ),
                )
                .at(loc)
                .help(
                    "name the link's target in the rule itself, or keep the link out of \
                     writable directories",
                ),
            );
            self.notes.push(Precision {
                rule: g.source.label(),
                target: "ir".into(),
                status: if kept.is_empty() {
                    Status::Dropped
                } else {
                    Status::Narrower
                },
                reason: format!(
                    "reaches {} through the symlink {link}, which lies in {dir}, where the \
                     command can make or replace entries: {what}",
                    g.path
                ),
                advisory: false,
            });
        }
        for (i, kept) in cut.into_iter().rev() {
            if kept.is_empty() {
                grants.remove(i);
            } else {
                grants[i].access = kept;
            }
        }
    }
}

/// Each symlink met on the way along the absolute path `p`, following
/// each as the kernel would (a link inside a link's target too, at most
/// 40), with the directory that holds it (resolved).
pub(crate) fn links_on_the_way(p: &str) -> impl Iterator<Item = (String, String)> {
    let mut out = Vec::new();
    let mut todo: std::collections::VecDeque<String> = p
        .split('/')
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect();
    let mut cur = std::path::PathBuf::from("/");
    let mut hops = 0;
    while let Some(c) = todo.pop_front() {
        match c.as_str() {
            "." => continue,
            ".." => {
                cur.pop();
                continue;
            }
            _ => {}
        }
        let next = cur.join(&c);
        let Ok(m) = std::fs::symlink_metadata(&next) else {
            break;
        };
        if !m.file_type().is_symlink() {
            cur = next;
            continue;
        }
        hops += 1;
        let (Some(link), Some(dir), Ok(to)) =
            (next.to_str(), cur.to_str(), std::fs::read_link(&next))
        else {
            break;
        };
        out.push((link.to_string(), dir.to_string()));
        if hops >= 40 {
            break;
        }
        let to = to.to_string_lossy().into_owned();
        for part in to.split('/').filter(|c| !c.is_empty()).rev() {
            todo.push_front(part.to_string());
        }
        if to.starts_with('/') {
            cur = std::path::PathBuf::from("/");
        }
    }
    out.into_iter()
}

/// The rights the most specific grants covering `dir` give it (rights add
/// up among grants on one path), leaving out the grants `skip` lists.
fn access_at(grants: &[Grant], dir: &str, skip: &[usize]) -> Access {
    let mut best = 0;
    let mut access = Access::NONE;
    for (i, g) in grants.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        for p in std::iter::once(&g.path).chain(&g.aliases) {
            if !path_within(dir, p) {
                continue;
            }
            if p.len() > best {
                best = p.len();
                access = g.access;
            } else if p.len() == best {
                access = access.union(g.access);
            }
        }
    }
    access
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
        // A second hop, inside the first link's target, and `..` there.
        std::fs::create_dir_all(d.join("b")).unwrap();
        std::os::unix::fs::symlink("../b/hop", d.join("a/first")).unwrap();
        std::os::unix::fs::symlink(d.join("a/real"), d.join("b/hop")).unwrap();
        let got: Vec<(String, String)> = links_on_the_way(&format!("{a}/first/x")).collect();
        let b = d.join("b").to_str().unwrap().to_string();
        assert_eq!(
            got,
            [(format!("{a}/first"), a.clone()), (format!("{b}/hop"), b)]
        );
    }
}
