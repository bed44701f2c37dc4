//! Where a repository keeps what git runs later (POLICY.md §7a): the
//! hooks and config of the repository a workspace's `.git` names, a
//! `core.hooksPath`, and repositories nested below a writable grant.
//!
//! Only what git itself reads is followed: a `.git` file's `gitdir:` line,
//! then the gitdir's `commondir` file (as `git rev-parse --git-common-dir`
//! does), and `core.hooksPath` in the repository's config, `~/.gitconfig`
//! and `~/.config/git/config` (`include` directives are not followed).

use super::paths::join;
use std::path::Path;

/// Nested repositories are looked for this many directories below a
/// writable grant (`a/b/c/.git`).
pub const NESTED_DEPTH: usize = 3;
/// At most this many directories are listed per lowering, over all
/// writable grants: the search is bounded work at every `sbx run`.
pub const DIR_BUDGET: usize = 2000;
/// Git files sbx reads (`.git`, `commondir`, configs) are small; a larger
/// one is not read.
const MAX_FILE: u64 = 64 * 1024;

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

fn read_small(p: &str) -> Option<String> {
    open_small(p).ok().flatten()
}

/// `rel` against `base` unless it is absolute.
fn anchored(base: &str, rel: &str) -> String {
    if Path::new(rel).is_absolute() {
        super::paths::normalise(rel)
    } else {
        join(base, rel)
    }
}

/// The value of `core.hooksPath` in a git config text (the last one wins,
/// as in git), `~/` expanded against `home`.
pub fn hooks_path(config: &str, home: &str) -> Option<String> {
    let mut in_core = false;
    let mut out = None;
    for line in config.lines() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix('[') {
            let name = h.split(']').next().unwrap_or("").trim();
            in_core = name.eq_ignore_ascii_case("core");
            // `[core] hooksPath = x` on one line.
            let rest = h.split_once(']').map_or("", |(_, r)| r.trim());
            if in_core && !rest.is_empty() {
                out = key_value(rest).or(out);
            }
            continue;
        }
        if in_core {
            out = key_value(t).or(out);
        }
    }
    let v = out?;
    Some(match v.strip_prefix("~/") {
        Some(r) => join(home, r),
        None => v,
    })
}

fn key_value(t: &str) -> Option<String> {
    let (k, v) = t.split_once('=')?;
    if !k.trim().eq_ignore_ascii_case("hookspath") {
        return None;
    }
    let mut out = String::new();
    let mut quoted = false;
    for c in v.trim().chars() {
        match c {
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    let out = out.trim().to_string();
    (!out.is_empty()).then_some(out)
}

/// `core.hooksPath` from the user's global configs, if set.
pub fn global_hooks_path(home: &str) -> Option<String> {
    // git reads the XDG file first, so `~/.gitconfig` wins.
    [".gitconfig", ".config/git/config"]
        .iter()
        .filter_map(|f| read_small(&join(home, f)))
        .find_map(|t| hooks_path(&t, home))
}

/// What the repository whose worktree is `dir` keeps that runs later. A
/// relative `core.hooksPath` is relative to the worktree, as for git's
/// hooks. `global_hooks`: the global `core.hooksPath`.
pub fn repo(dir: &str, home: &str, global_hooks: Option<&str>, budget: &mut usize) -> Vec<Found> {
    let dotgit = join(dir, ".git");
    let Ok(meta) = std::fs::symlink_metadata(&dotgit) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let common = if meta.is_dir() {
        dotgit.clone()
    } else {
        // A `.git` file names the repository: it is itself protected, or
        // the child could point it at a repository it made.
        out.push(found(dotgit.clone(), ".git (a gitdir file)"));
        let Some(text) = read_small(&dotgit) else {
            return out;
        };
        let Some(gitdir) = text
            .lines()
            .find_map(|l| l.strip_prefix("gitdir:"))
            .map(|g| anchored(dir, g.trim()))
        else {
            return out;
        };
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
        }
        common
    };
    for f in ["hooks", "config"] {
        out.push(found(join(&common, f), &format!(".git/{f}")));
    }
    // Submodules' repositories live in the common dir.
    let modules = join(&common, "modules");
    if *budget > 0 {
        if let Ok(rd) = std::fs::read_dir(&modules) {
            *budget -= 1;
            let mut names: Vec<String> = rd
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().into_string().ok())
                .collect();
            names.sort();
            for n in names {
                let m = join(&modules, &n);
                for f in ["hooks", "config"] {
                    out.push(found(join(&m, f), "a submodule's .git/modules"));
                }
            }
        }
    }
    let local = read_small(&join(&common, "config")).and_then(|t| hooks_path(&t, home));
    if let Some(h) = local.as_deref().or(global_hooks) {
        out.push(found(anchored(dir, h), "core.hooksPath"));
    }
    out
}

/// Directories up to [`NESTED_DEPTH`] below `root` (itself excluded) that
/// hold a `.git`, in a fixed order. Symlinks and `.git` directories are
/// not entered. Returns false when the budget ran out first.
pub fn nested(root: &str, budget: &mut usize, out: &mut Vec<String>) -> bool {
    let mut level = vec![root.to_string()];
    for depth in 0..=NESTED_DEPTH {
        let mut next = Vec::new();
        for d in &level {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let Ok(rd) = std::fs::read_dir(d) else {
                continue;
            };
            let mut dirs = Vec::new();
            let mut repo = false;
            for e in rd.flatten() {
                let Ok(name) = e.file_name().into_string() else {
                    continue;
                };
                if name == ".git" {
                    repo = true;
                } else if depth < NESTED_DEPTH && e.file_type().is_ok_and(|t| t.is_dir()) {
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
    use super::*;

    #[test]
    fn hooks_path_is_read_as_git_reads_it() {
        let h = |t: &str| hooks_path(t, "/h");
        assert_eq!(h("[core]\n\thooksPath = .husky\n"), Some(".husky".into()));
        assert_eq!(h("[Core]\nHOOKSPATH=\"a b\" # c\n"), Some("a b".into()));
        assert_eq!(h("[core] hooksPath = x\n"), Some("x".into()));
        assert_eq!(h("[core]\nhooksPath = ~/hooks\n"), Some("/h/hooks".into()));
        assert_eq!(
            h("[core]\nhooksPath = a\n[core]\nhooksPath = b\n"),
            Some("b".into())
        );
        assert_eq!(h("[user]\nhooksPath = a\n"), None);
        assert_eq!(h("[core \"x\"]\nhooksPath = a\n"), None);
        assert_eq!(h("[core]\nbare = false\n"), None);
    }

    /// A FIFO where git keeps a file is not opened for reading (that
    /// would wait for a writer), nor is a file larger than the bound.
    #[cfg(unix)]
    #[test]
    fn only_small_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert_eq!(super::open_small(fifo.to_str().unwrap()), Ok(None));
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; super::MAX_FILE as usize + 1]).unwrap();
        assert_eq!(super::open_small(big.to_str().unwrap()), Err(()));
        assert_eq!(super::open_small("/nonexistent/x"), Ok(None));
    }
}
