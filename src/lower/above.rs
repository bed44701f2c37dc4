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
        // A linked worktree or a submodule's checkout: git reads the
        // gitdir its `.git` file names and the common dir that one names.
        let refused = match linked(&top, &self.roots.home) {
            Ok(more) => {
                paths.extend(more);
                None
            }
            Err(why) => Some(why),
        };
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
        if let Some(why) = refused {
            self.notes.push(Precision {
                rule: "default policy".into(),
                target: "ir".into(),
                status: Status::Dropped,
                reason: format!(
                    "{top}/.git names a git directory that is not granted: {why} (git there \
                     finds no repository; `git worktree repair` mends a worktree moved since)"
                ),
                advisory: true,
            });
        }
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

/// What the `.git` file at `top` makes git read besides the worktree: the
/// gitdir, and a linked worktree's common dir. Both are named by files
/// below the repository's top, which an earlier run with a wider
/// workspace could have written, so only what git itself made is taken:
/// a linked worktree's gitdir in its common dir's `worktrees`, naming
/// this `.git` file back; a submodule's in the `.git/modules` of a
/// repository around it. Read without blocking and bounded (a FIFO or
/// `/dev/zero` planted there). Empty where `.git` is no file.
fn linked(top: &str, home: &str) -> Result<Vec<String>, String> {
    let dotgit = join(top, ".git");
    if !std::fs::symlink_metadata(&dotgit).is_ok_and(|m| m.is_file()) {
        return Ok(Vec::new());
    }
    let named = git::gitdir_line(&dotgit).ok_or("it names no gitdir")?;
    let canon = |p: &str| {
        crate::canonical::canonicalize(p)
            .ok()
            .and_then(|c| c.to_str().map(str::to_string))
    };
    let (is, repository) = (git::is_kind, git::is_repository);
    let gitdir = canon(&anchored(top, &named))
        .filter(|g| is(g, true))
        .ok_or_else(|| format!("its gitdir {named} is no directory"))?;
    if !is(&join(&gitdir, "HEAD"), false) {
        return Err(format!("{gitdir} is no git directory"));
    }
    let out = match git::read_small(&join(&gitdir, "commondir")) {
        Some(c) if !c.trim().is_empty() => {
            let common = canon(&anchored(&gitdir, c.trim()))
                .filter(|c| repository(c))
                .ok_or_else(|| format!("the common dir {} names is no repository", c.trim()))?;
            let back = git::read_small(&join(&gitdir, "gitdir"))
                .and_then(|b| canon(&anchored(&gitdir, b.trim())));
            let within =
                Path::new(&gitdir).parent() == Some(Path::new(&join(&common, "worktrees")));
            if !within || back.as_deref() != canon(&dotgit).as_deref() {
                return Err(format!(
                    "{gitdir} is not a worktree of {common} that names this worktree back"
                ));
            }
            vec![common, gitdir]
        }
        _ => {
            // A submodule's: `A/.git/modules/NAME` for a repository `A`
            // whose worktree holds this one (never home's or above, as
            // for the top), whose `core.worktree` names this checkout.
            let around = gitdir
                .find("/.git/modules/")
                .map(|i| &gitdir[..i])
                .filter(|a| {
                    crate::ir::path_within(top, a)
                        && *a != top
                        && !crate::ir::path_within(home, a)
                        && is(&join(a, ".git"), true)
                });
            let back = git::read_small(&join(&gitdir, "config"))
                .and_then(|c| core_worktree(&c))
                .and_then(|w| canon(&anchored(&gitdir, &w)));
            if around.is_none() || !repository(&gitdir) || back.as_deref() != canon(top).as_deref()
            {
                return Err(format!(
                    "{gitdir} is not the git directory of this submodule, in a repository \
                     around it"
                ));
            }
            vec![gitdir]
        }
    };
    // As for the top: never home, a directory above it, or `/`.
    if let Some(p) = out.iter().find(|p| crate::ir::path_within(home, p)) {
        return Err(format!("{p} is home or above it"));
    }
    Ok(out)
}

/// The `worktree` key of the `[core]` section as git writes it for a
/// submodule (`\tworktree = ../../../sub`); `None` for anything else, so
/// that a config git did not write is not taken for a back-link.
fn core_worktree(config: &str) -> Option<String> {
    let mut core = false;
    let mut found = None;
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            core = line.eq_ignore_ascii_case("[core]");
        } else if core {
            if let Some((k, v)) = line.split_once('=') {
                if k.trim().eq_ignore_ascii_case("worktree") {
                    found = Some(v.trim().to_string());
                }
            }
        }
    }
    found.filter(|w| !w.is_empty() && !w.contains(['"', '\\']))
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

    /// What git makes for a linked worktree and a submodule is taken;
    /// a `.git` file a run could have planted, naming a secret, another
    /// repository's common dir or a FIFO, is not.
    #[test]
    fn only_gitdirs_git_made_are_taken() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let p = |r: &str| root.join(r).to_str().unwrap().to_string();
        let repo = |d: &str| {
            for s in ["objects", "refs"] {
                std::fs::create_dir_all(p(&format!("{d}/{s}"))).unwrap();
            }
            std::fs::write(p(&format!("{d}/HEAD")), "ref: refs/heads/main\n").unwrap();
        };
        let home = p("home");
        std::fs::create_dir_all(p("home/.ssh")).unwrap();
        // A linked worktree, as `git worktree add` makes it.
        repo("repo/.git");
        std::fs::create_dir_all(p("repo/.git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(p("wt/sub")).unwrap();
        std::fs::write(p("repo/.git/worktrees/wt/HEAD"), "ref: refs/heads/wt\n").unwrap();
        std::fs::write(p("repo/.git/worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::write(p("repo/.git/worktrees/wt/gitdir"), p("wt/.git") + "\n").unwrap();
        std::fs::write(
            p("wt/.git"),
            format!("gitdir: {}\n", p("repo/.git/worktrees/wt")),
        )
        .unwrap();
        assert_eq!(
            linked(&p("wt"), &home),
            Ok(vec![p("repo/.git"), p("repo/.git/worktrees/wt")])
        );
        // Its back-link names another worktree: not this one's.
        std::fs::create_dir_all(p("wt2")).unwrap();
        std::fs::write(
            p("wt2/.git"),
            format!("gitdir: {}\n", p("repo/.git/worktrees/wt")),
        )
        .unwrap();
        assert!(linked(&p("wt2"), &home).is_err());
        // Planted: a secret directory; a gitdir of its own whose common
        // dir is another repository; a FIFO for the common dir.
        std::fs::create_dir_all(p("ws/a")).unwrap();
        std::fs::write(p("ws/a/.git"), format!("gitdir: {home}/.ssh\n")).unwrap();
        assert!(linked(&p("ws/a"), &home).is_err());
        repo("ws/g");
        std::fs::write(p("ws/g/commondir"), p("repo/.git")).unwrap();
        std::fs::write(p("ws/g/gitdir"), p("ws/b/.git")).unwrap();
        std::fs::create_dir_all(p("ws/b")).unwrap();
        std::fs::write(p("ws/b/.git"), "gitdir: ../g\n").unwrap();
        assert!(linked(&p("ws/b"), &home).is_err());
        #[cfg(unix)]
        {
            repo("ws/f");
            let fifo = std::ffi::CString::new(p("ws/f/commondir")).unwrap();
            // SAFETY: a C string.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
            std::fs::create_dir_all(p("ws/c")).unwrap();
            std::fs::write(p("ws/c/.git"), "gitdir: ../f\n").unwrap();
            assert!(linked(&p("ws/c"), &home).is_err());
        }
        // A submodule's checkout: its gitdir in the `.git/modules` of the
        // repository around it; not in another repository's.
        repo("sup/.git");
        repo("sup/.git/modules/lib/x");
        std::fs::write(
            p("sup/.git/modules/lib/x/config"),
            "[core]\n\tbare = false\n\tworktree = ../../../../lib/x\n",
        )
        .unwrap();
        std::fs::create_dir_all(p("sup/lib/x")).unwrap();
        std::fs::write(p("sup/lib/x/.git"), "gitdir: ../../.git/modules/lib/x\n").unwrap();
        assert_eq!(
            linked(&p("sup/lib/x"), &home),
            Ok(vec![p("sup/.git/modules/lib/x")])
        );
        std::fs::create_dir_all(p("ws/d")).unwrap();
        std::fs::write(
            p("ws/d/.git"),
            format!("gitdir: {}\n", p("sup/.git/modules/lib/x")),
        )
        .unwrap();
        assert!(linked(&p("ws/d"), &home).is_err());
        // Another checkout naming that gitdir: its `core.worktree` names
        // `sup/lib/x`, not this one.
        std::fs::create_dir_all(p("sup/lib/y")).unwrap();
        std::fs::write(p("sup/lib/y/.git"), "gitdir: ../../.git/modules/lib/x\n").unwrap();
        assert!(linked(&p("sup/lib/y"), &home).is_err());
        // Home's dotfiles repository is never the one around it.
        repo("home/.git");
        repo("home/.git/modules/secret");
        std::fs::write(
            p("home/.git/modules/secret/config"),
            "[core]\n\tworktree = ../../../proj/sub\n",
        )
        .unwrap();
        std::fs::create_dir_all(p("home/proj/sub")).unwrap();
        std::fs::write(
            p("home/proj/sub/.git"),
            format!("gitdir: {home}/.git/modules/secret\n"),
        )
        .unwrap();
        assert!(linked(&p("home/proj/sub"), &home).is_err());
        // No `.git` file: nothing more.
        assert_eq!(linked(&p("repo"), &home), Ok(Vec::new()));
    }

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
