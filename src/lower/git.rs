//! Where a repository keeps what git runs later (POLICY.md §7a): the
//! hooks and config of the repository a workspace's `.git` names, a
//! `core.hooksPath`, the files git's config includes, and repositories
//! nested below a writable grant.
//!
//! Only what git itself reads is followed: a `.git` file's `gitdir:` line,
//! then the gitdir's `commondir` file (as `git rev-parse --git-common-dir`
//! does); the repository's config, a worktree's `config.worktree`,
//! `~/.config/git/config` and `~/.gitconfig`, each with the files it
//! includes (`include.path`, `includeIf.*.path`, [`include`]) and
//! `core.hooksPath` wherever in them it is set.

mod config;
pub mod include;
pub mod inert;

use super::paths::join;
use crate::dirents::Kind;
use std::ffi::OsString;
use std::path::Path;

/// Nested repositories are looked for this many directories below a
/// writable grant (`a/b/c/.git`).
pub const NESTED_DEPTH: usize = 3;
/// At most this many directories are listed per lowering, over all
/// writable grants: the search is bounded work at every `sbx run`.
pub const DIR_BUDGET: usize = 2000;
/// Git files sbx reads (`.git`, `commondir`, configs) are small; a larger
/// one is not read.
pub const MAX_FILE: u64 = 64 * 1024;

/// One path to protect and the list entry it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: String,
    pub entry: String,
}

fn found(path: String, entry: &str) -> Found {
    Found {
        path,
        entry: entry.to_string(),
    }
}

/// The text of a small regular file: `Ok(None)` when it cannot be read
/// (absent, not a regular file), `Err(())` when it is larger than
/// [`MAX_FILE`]. Opened without blocking, so that a FIFO in the workspace
/// named like a git file cannot stall the lowering.
fn open_small(p: &str) -> Result<Option<String>, ()> {
    use std::io::Read;
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    let Ok(f) = o.open(p) else {
        return Ok(None);
    };
    match f.metadata() {
        Ok(m) if m.is_file() && m.len() > MAX_FILE => return Err(()),
        Ok(m) if m.is_file() => {}
        _ => return Ok(None),
    }
    let mut text = String::new();
    // It may grow between the check and the read.
    match f.take(MAX_FILE + 1).read_to_string(&mut text) {
        Ok(n) if n as u64 > MAX_FILE => Err(()),
        Ok(_) => Ok(Some(text)),
        Err(_) => Ok(None),
    }
}

pub(super) fn read_small(p: &str) -> Option<String> {
    open_small(p).ok().flatten()
}

/// What the `gitdir:` line of the `.git` file at `dotgit` says, trimmed
/// (relative to the worktree unless absolute); `None` where there is no
/// such line or the file cannot be read as [`open_small`] reads it. Also
/// read by `sbx run`'s sweep after the run.
pub fn gitdir_line(dotgit: &str) -> Option<String> {
    read_small(dotgit)?
        .lines()
        .find_map(|l| l.strip_prefix("gitdir:"))
        .map(|g| g.trim().to_string())
}

/// `rel` against `base` unless it is absolute.
fn anchored(base: &str, rel: &str) -> String {
    if Path::new(rel).is_absolute() {
        super::paths::normalise(rel)
    } else {
        join(base, rel)
    }
}

/// The directory that holds `p`.
fn parent_dir(p: &str) -> String {
    Path::new(p)
        .parent()
        .and_then(Path::to_str)
        .unwrap_or(p)
        .to_string()
}

/// The user's global configs with what they include, in git's reading
/// order (the XDG file first, so `~/.gitconfig` wins): their
/// `core.hooksPath` values.
pub fn global(home: &str, configs: &mut include::Reader) -> Vec<include::Hooks> {
    let mut hooks = Vec::new();
    for f in [".config/git/config", ".gitconfig"] {
        configs.read(&join(home, f), true, &mut hooks);
    }
    hooks
}

/// What the repository whose worktree is `dir` keeps that runs later. A
/// relative `core.hooksPath` is relative to the worktree, as for git's
/// hooks. `global`: the global configs' `core.hooksPath` values; the files
/// the repository's configs include are left in `configs.found`.
pub fn repo(
    dir: &str,
    global: &[include::Hooks],
    budget: &mut usize,
    configs: &mut include::Reader,
) -> Vec<Found> {
    let dotgit = join(dir, ".git");
    let Ok(meta) = std::fs::symlink_metadata(&dotgit) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // A linked worktree's own gitdir, which holds its `config.worktree`.
    let mut own = None;
    let gitdir = if meta.is_dir() {
        dotgit.clone()
    } else {
        // A `.git` file names the repository: it is itself protected, or
        // the child could point it at a repository it made.
        out.push(found(dotgit.clone(), ".git (a gitdir file)"));
        let Some(gitdir) = gitdir_line(&dotgit).map(|g| anchored(dir, &g)) else {
            return out;
        };
        gitdir
    };
    // git reads every gitdir's `commondir`, a `.git` directory's too: the
    // directory it names holds the hooks and config git uses. It is
    // protected whether or not it exists, or the command could write one
    // that points git at a repository it made.
    let common = match read_small(&join(&gitdir, "commondir")) {
        Some(c) if !c.trim().is_empty() => anchored(&gitdir, c.trim()),
        _ => gitdir.clone(),
    };
    if common != gitdir {
        // A worktree's own gitdir: where its common dir is named, and
        // its own config.
        for f in ["commondir", "config.worktree"] {
            out.push(found(join(&gitdir, f), "the worktree's gitdir"));
        }
        own = Some(gitdir);
    } else {
        out.push(found(join(&gitdir, "commondir"), ".git/commondir"));
    }
    for f in ["hooks", "config"] {
        out.push(found(join(&common, f), &format!(".git/{f}")));
    }
    // The main worktree's own config, read under
    // `extensions.worktreeConfig` (which `git sparse-checkout` sets): when
    // it exists, or when the config names the extension.
    let main_own = join(&common, "config.worktree");
    let main_own = (own.is_none()
        && (std::fs::symlink_metadata(&main_own).is_ok()
            || configs.names_worktree_config(&join(&common, "config"))))
    .then_some(main_own);
    if let Some(m) = &main_own {
        out.push(found(m.clone(), ".git/config.worktree"));
    }
    // Submodules' repositories live in the common dir, and so do the
    // gitdirs of its linked worktrees (elsewhere on disk): git run there
    // reads the `commondir` (and `config.worktree`) kept here.
    for (sub, files, entry) in [
        (
            "modules",
            &["hooks", "config", "commondir"][..],
            "a submodule's .git/modules",
        ),
        (
            "worktrees",
            &["commondir", "config.worktree"][..],
            "a linked worktree's .git/worktrees",
        ),
    ] {
        let d = join(&common, sub);
        if *budget == 0 {
            break;
        }
        let Some(names) = subdirs(&d) else {
            continue;
        };
        *budget -= 1;
        for n in names {
            let m = join(&d, &n);
            for f in files {
                out.push(found(join(&m, f), entry));
            }
            if sub == "modules" {
                deeper_modules(&m, files, entry, budget, &mut out);
            }
        }
    }
    // git reads the global configs, then the repository's, then (with
    // `extensions.worktreeConfig`) the worktree's: the last value wins.
    let mut hooks = global.to_vec();
    configs.read(&join(&common, "config"), true, &mut hooks);
    if let Some(g) = own {
        configs.read(&join(&g, "config.worktree"), false, &mut hooks);
    }
    if let Some(m) = main_own {
        configs.read(&m, false, &mut hooks);
    }
    for h in include::hooks_paths(&hooks) {
        out.push(found(anchored(dir, &h), "core.hooksPath"));
    }
    out
}

/// How deep below `.git/modules` submodules' git directories are looked
/// for: a submodule's is named by its path (`modules/a/b/c`), a nested
/// submodule's lies in its parent's (`modules/x/modules/y`).
const MODULES_DEPTH: usize = 12;

/// The git directories below `.git/modules/NAME` (`m`, whose own parts
/// the caller took): where `m` is no repository, its subdirectories, as
/// a path with `/` names one; where it is one, its `modules`. Each git
/// directory found gets the same protections as `m`.
fn deeper_modules(m: &str, files: &[&str], entry: &str, budget: &mut usize, out: &mut Vec<Found>) {
    let mut todo = vec![(m.to_string(), 0)];
    while let Some((d, level)) = todo.pop() {
        if level >= MODULES_DEPTH || *budget == 0 {
            continue;
        }
        let below = if is_repository(&d) {
            join(&d, "modules")
        } else {
            d.clone()
        };
        let Some(names) = subdirs(&below) else {
            continue;
        };
        *budget -= 1;
        for n in names.iter().rev() {
            let c = join(&below, n);
            if is_kind(&join(&c, "HEAD"), false) {
                for f in files {
                    out.push(found(join(&c, f), entry));
                }
            }
            todo.push((c, level + 1));
        }
    }
}

/// The names of `d`'s subdirectories (UTF-8 ones), sorted; `None` where
/// it cannot be listed.
fn subdirs(d: &str) -> Option<Vec<String>> {
    let mut names: Vec<String> = crate::dirents::read_dir(d)
        .ok()?
        .flatten()
        .filter(|e| e.is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    Some(names)
}

/// `p` is a directory (or a regular file), not followed.
pub(super) fn is_kind(p: &str, dir: bool) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|x| if dir { x.is_dir() } else { x.is_file() })
}

/// What git takes for a git directory (`is_git_directory`): `HEAD`, and
/// `objects` and `refs` directories.
pub(super) fn is_repository(d: &str) -> bool {
    is_kind(&join(d, "HEAD"), false)
        && is_kind(&join(d, "objects"), true)
        && is_kind(&join(d, "refs"), true)
}

/// Directories up to [`NESTED_DEPTH`] below `root` (itself excluded) that
/// hold a `.git`, in a fixed order. Symlinks and `.git` directories are
/// not entered. `top`: `root`'s entries, when the caller has read them
/// already. Returns false when the budget ran out first.
pub fn nested(
    root: &str,
    top: Option<&[(OsString, Kind)]>,
    budget: &mut usize,
    out: &mut Vec<String>,
) -> bool {
    let mut level = vec![root.to_string()];
    for depth in 0..=NESTED_DEPTH {
        let mut next = Vec::new();
        for d in &level {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let entries: Box<dyn Iterator<Item = _>> = match top.filter(|_| depth == 0) {
                Some(l) => Box::new(l.iter().map(|(n, t)| (n.clone(), Some(*t)))),
                None => match crate::dirents::read_dir(d) {
                    Ok(rd) => Box::new(
                        rd.flatten()
                            .map(|e| (e.file_name().to_os_string(), e.kind().ok())),
                    ),
                    Err(_) => continue,
                },
            };
            let mut dirs = Vec::new();
            let mut repo = false;
            for (name, kind) in entries {
                let Ok(name) = name.into_string() else {
                    continue;
                };
                if name == ".git" {
                    repo = true;
                } else if depth < NESTED_DEPTH && kind == Some(Kind::Dir) {
                    dirs.push(join(d, &name));
                }
            }
            if repo && depth > 0 {
                out.push(d.clone());
            }
            dirs.sort();
            next.extend(dirs);
        }
        level = next;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::include::{hooks_paths, Reader};

    /// `core.hooksPath` of one config text, as `repo` finds it.
    fn hooks_path(text: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config");
        std::fs::write(&p, text).unwrap();
        let mut hooks = Vec::new();
        Reader::new("/h").read(p.to_str().unwrap(), true, &mut hooks);
        hooks_paths(&hooks)
    }

    #[test]
    fn hooks_path_is_read_as_git_reads_it() {
        let h = |t: &str| hooks_path(t);
        assert_eq!(h("[core]\n\thooksPath = .husky\n"), [".husky"]);
        assert_eq!(h("[Core]\nHOOKSPATH=\"a b\" # c\n"), ["a b"]);
        assert_eq!(h("[core] hooksPath = x\n"), ["x"]);
        assert_eq!(h("[core]\nhooksPath = ~/hooks\n"), ["/h/hooks"]);
        assert_eq!(h("[core]\nhooksPath = a\n[core]\nhooksPath = b\n"), ["b"]);
        assert!(h("[user]\nhooksPath = a\n").is_empty());
        assert!(h("[core \"x\"]\nhooksPath = a\n").is_empty());
        assert!(h("[core]\nbare = false\n").is_empty());
    }

    /// A FIFO where git keeps a file is not opened for reading (that
    /// would wait for a writer), nor is a file larger than the bound.
    #[cfg(unix)]
    #[test]
    fn only_small_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        crate::testing::mkfifo(&fifo, 0o644);
        assert_eq!(super::open_small(fifo.to_str().unwrap()), Ok(None));
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; super::MAX_FILE as usize + 1]).unwrap();
        assert_eq!(super::open_small(big.to_str().unwrap()), Err(()));
        assert_eq!(super::open_small("/nonexistent/x"), Ok(None));
    }
}
