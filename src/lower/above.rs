//! The repository a workspace lies in (docs/presets.md, "A workspace
//! inside a repository"). Under the default policy the workspace is the
//! current directory, often a subdirectory of a repository: with nothing
//! above it granted, git finds no repository ("not a git repository").
//! So the repository's worktree is granted read-only, and with it the
//! git directory a `.git` file names (a linked worktree's). Nothing there
//! is writable, so every protection holds by construction; committing
//! needs the repository's top as the workspace, which the report says.

use super::git;
use super::paths::join;
use super::Ctx;
use crate::ir::{Access, Grant, Precision, Source, Status};
use std::path::Path;

impl Ctx<'_> {
    /// The read-only grants for the repository above the workspace, and
    /// the report's line; none when the workspace is a repository's top
    /// or in none.
    pub(super) fn repository_above(&mut self) -> Vec<Grant> {
        let ws = self.roots.workspace.clone();
        let Some(top) = top_above(&ws, &self.roots.home) else {
            return Vec::new();
        };
        let mut paths = vec![top.clone()];
        let dotgit = join(&top, ".git");
        if std::fs::symlink_metadata(&dotgit).is_ok_and(|m| m.is_file()) {
            // A linked worktree or a submodule's checkout: git reads the
            // gitdir the file names and the common dir that one names.
            if let Some(g) = git::gitdir_line(&dotgit) {
                let gitdir = anchored(&top, &g);
                if let Ok(c) = std::fs::read_to_string(join(&gitdir, "commondir")) {
                    let c = c.trim();
                    if !c.is_empty() {
                        paths.push(anchored(&gitdir, c));
                    }
                }
                paths.push(gitdir);
            }
        }
        let grants: Vec<Grant> = paths
            .iter()
            .filter_map(|p| self.grant_abs(p, Access::READ, Source::Default, false))
            .collect();
        self.notes.push(Precision {
            rule: "default policy".into(),
            target: "ir".into(),
            status: Status::Wider,
            reason: format!(
                "the workspace lies in the git repository at {top}: so that git finds it, the \
                 default policy adds {} read-only (a layer beneath the workspace, which stays \
                 writable). Everything there outside the workspace, its .git included, cannot \
                 be written: committing needs the repository's top as the workspace \
                 (--workspace {top})",
                paths.join(", ")
            ),
            // sbx adds it for git to work; `required` has nothing to refuse.
            advisory: true,
        });
        grants
    }
}

/// The nearest directory above `ws` holding a `.git` (a directory or a
/// file, as git looks), when `ws` holds none itself. Never home or a
/// directory above it (a dotfiles repository in `~` would make all of
/// home readable), nor `/`, nor beyond a GIT_CEILING_DIRECTORIES entry.
pub fn top_above(ws: &str, home: &str) -> Option<String> {
    let ceilings: Vec<std::path::PathBuf> = std::env::var_os("GIT_CEILING_DIRECTORIES")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| p.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    top_below_ceilings(ws, home, &ceilings)
}

fn top_below_ceilings(ws: &str, home: &str, ceilings: &[std::path::PathBuf]) -> Option<String> {
    let ws = Path::new(ws);
    if ws.join(".git").symlink_metadata().is_ok() {
        return None;
    }
    let home = Path::new(home);
    // As git: it does not go up into a directory GIT_CEILING_DIRECTORIES
    // names.
    let mut dir = ws.parent();
    while let Some(d) = dir {
        if d.parent().is_none() || home.starts_with(d) || ceilings.iter().any(|c| c == d) {
            return None;
        }
        if d.join(".git").symlink_metadata().is_ok() {
            return d.to_str().map(str::to_string);
        }
        dir = d.parent();
    }
    None
}

/// `rel` against `base` unless it is absolute.
fn anchored(base: &str, rel: &str) -> String {
    if rel.starts_with('/') {
        super::paths::normalise(rel)
    } else {
        join(base, rel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_repository_above_but_never_home() {
        let t = tempfile::tempdir().unwrap();
        let p = |r: &str| t.path().join(r).to_str().unwrap().to_string();
        for d in ["home/repo/.git", "home/repo/a/b", "home/other", "home/.git"] {
            std::fs::create_dir_all(p(d)).unwrap();
        }
        std::fs::create_dir_all(p("home/wt/sub")).unwrap();
        std::fs::write(p("home/wt/.git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        let home = p("home");
        assert_eq!(top_above(&p("home/repo/a/b"), &home), Some(p("home/repo")));
        assert_eq!(top_above(&p("home/wt/sub"), &home), Some(p("home/wt")));
        // At a top: git finds it there.
        assert_eq!(top_above(&p("home/repo"), &home), None);
        // Only home's dotfiles repository above: not granted.
        assert_eq!(top_above(&p("home/other"), &home), None);
        // Not beyond a ceiling, as git does not look there.
        let ceiling = [t.path().join("home/repo/a")];
        assert_eq!(
            top_below_ceilings(&p("home/repo/a/b"), &home, &ceiling),
            None
        );
        let lower = [t.path().join("home/repo/a/b")];
        assert_eq!(
            top_below_ceilings(&p("home/repo/a/b"), &home, &lower),
            Some(p("home/repo"))
        );
    }
}
