//! Git repositories the command made or changed below a writable tree's
//! top (docs/protected.md, "Repositories made during the run"). Only
//! the names at each tree's top are protected before the run; a
//! repository created below it (`git init sub`, `cargo new app`) is not,
//! and git would run its hooks and config outside the sandbox later: on
//! the next `git status` there, or at the top, which recurses into a
//! submodule entry. Once the tree has ended, `sbx run` looks to the
//! nested search's depth and moves aside what of them changed during
//! the run, as `planted` does for the protections absent at launch.

use super::planted;
use crate::ir::joined as join;
use std::fs;
use std::os::unix::fs::MetadataExt;

/// What in a git directory makes git run something: hooks, and the
/// config (and the files that name where git finds them).
const PARTS: [&str; 4] = ["hooks", "config", "config.worktree", "commondir"];

/// A moment, as file timestamps give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(i64, i64);

impl Stamp {
    /// Now, by the coarse clock file timestamps are taken from: anything
    /// changed from here on has a ctime at least this (a fine-grained
    /// ctime is never below the coarse clock). ctime cannot be set back.
    pub fn now() -> Stamp {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec to fill.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut t) } == 0 {
            return Stamp(t.tv_sec, t.tv_nsec);
        }
        // Without the coarse clock: a second earlier than the fine one,
        // more than any tick (what changed just before counts too).
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Stamp(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX) - 1,
            i64::from(d.subsec_nanos()),
        )
    }

    fn of(m: &fs::Metadata) -> Stamp {
        Stamp(m.ctime(), m.ctime_nsec())
    }
}

/// What the sweep did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// (path, where it went): moved aside.
    pub moved: Vec<(String, String)>,
    /// (path, error): changed, but it could not be moved.
    pub failed: Vec<(String, String)>,
    /// The directory budget ran out before every tree was looked at.
    pub stopped: bool,
    /// Index files too large to read for their submodule entries.
    pub unread: Vec<String>,
}

/// Look through each of `tops` to `depth` directories below it (at most
/// `budget` directories listed in all, never through a symlink) for git
/// directories (`.git`, or one holding `HEAD`, `objects` and `refs`) and
/// `.git` files or links, and move aside each part changed since `since`.
pub fn sweep(tops: &[String], since: Stamp, depth: usize, budget: usize) -> Swept {
    let mut out = Swept::default();
    let mut left = budget;
    let mut todo: Vec<(String, usize)> = tops.iter().rev().map(|t| (t.clone(), 0)).collect();
    while let Some((dir, level)) = todo.pop() {
        if left == 0 {
            out.stopped = true;
            break;
        }
        left -= 1;
        if level == depth {
            // Nothing below is searched: two lookups say what a listing
            // would (most directories searched are at this level).
            dot_git(&dir, since, &mut out);
            if fs::symlink_metadata(join(&dir, "HEAD")).is_ok_and(|m| m.is_file())
                && ["objects", "refs"]
                    .iter()
                    .all(|d| fs::symlink_metadata(join(&dir, d)).is_ok_and(|m| m.is_dir()))
            {
                look_in(&dir, since, &mut out);
            }
            continue;
        }
        let Ok(rd) = fs::read_dir(&dir) else {
            continue;
        };
        let mut subdirs = Vec::new();
        let (mut head, mut objects, mut refs) = (false, false, false);
        for e in rd.flatten() {
            let Ok(t) = e.file_type() else { continue };
            let name = e.file_name();
            let Some(name) = name.to_str() else {
                // Not UTF-8: no git directory is named so; still searched.
                if t.is_dir() {
                    if let Some(p) = e.path().to_str() {
                        subdirs.push(p.to_string());
                    }
                }
                continue;
            };
            match name {
                ".git" => dot_git(&dir, since, &mut out),
                "HEAD" => head = t.is_file(),
                "objects" => objects = t.is_dir(),
                "refs" => refs = t.is_dir(),
                _ if t.is_dir() => subdirs.push(join(&dir, name)),
                _ => {}
            }
        }
        // A bare repository, or a gitdir kept outside its worktree: git
        // takes a directory with these three for a git directory.
        if head && objects && refs {
            look_in(&dir, since, &mut out);
        }
        subdirs.sort();
        todo.extend(subdirs.into_iter().rev().map(|d| (d, level + 1)));
    }
    // `git status` at a top recurses into every submodule its index
    // names, at any depth: those repositories are looked at wherever
    // they are.
    for top in tops {
        let path = join(top, ".git/index");
        let index = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() && m.len() > MAX_INDEX => {
                out.unread.push(path);
                continue;
            }
            Ok(m) if m.is_file() => fs::read(&path).unwrap_or_default(),
            _ => continue,
        };
        // The index is the command's to write: only a path git itself
        // would accept, inside the top (no `..`, `.`, empty or `.git`
        // component), is looked at.
        for rel in gitlinks(&index).iter().filter(|r| plain(r)) {
            // What the walk moved already is no longer there.
            dot_git(&join(top, rel), since, &mut out);
        }
    }
    out
}

/// A relative path of ordinary components.
fn plain(rel: &str) -> bool {
    !rel.is_empty()
        && rel
            .split('/')
            .all(|c| !matches!(c, "" | "." | "..") && !c.eq_ignore_ascii_case(".git"))
}

/// A larger index is not read (its submodule entries are not looked at,
/// and the run says so).
const MAX_INDEX: u64 = 64 << 20;

/// The `.git` in worktree `dir`: a git directory, or a gitdir file (moved
/// aside if it changed, else the git directory it names is looked in),
/// or a link (moved aside if it changed; never followed).
fn dot_git(dir: &str, since: Stamp, out: &mut Swept) {
    let g = join(dir, ".git");
    let Ok(m) = fs::symlink_metadata(&g) else {
        return;
    };
    if m.is_dir() {
        look_in(&g, since, out);
    } else if Stamp::of(&m) >= since {
        move_aside(g, out);
    } else if m.is_file() {
        let Some(d) = crate::lower::git::gitdir_line(&g).filter(|d| !d.is_empty()) else {
            return;
        };
        let d = if d.starts_with('/') { d } else { join(dir, &d) };
        // As git finds it (`..` after the links on the way), so not
        // normalised by hand.
        if let Some(d) = fs::canonicalize(&d)
            .ok()
            .and_then(|p| p.to_str().map(String::from))
        {
            look_in(&d, since, out);
        }
    }
}

/// The paths of the submodule entries (gitlinks) in a git index file
/// (versions 2 to 4, SHA-1 or SHA-256 object names); none where it
/// cannot be read as one.
pub fn gitlinks(index: &[u8]) -> Vec<String> {
    [20, 32]
        .into_iter()
        .find_map(|hash| parse_index(index, hash))
        .unwrap_or_default()
}

fn parse_index(b: &[u8], hash: usize) -> Option<Vec<String>> {
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    if b.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let entries = be32(8)?;
    let mut out = Vec::new();
    let mut pos = 12;
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..entries {
        let start = pos;
        let mode = be32(pos + 24)?;
        pos += 40 + hash;
        let flags = u16::from_be_bytes(b.get(pos..pos + 2)?.try_into().ok()?);
        pos += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            pos += 2;
        }
        let path = if version == 4 {
            // The length to drop from the previous path (git's offset
            // varint), then the rest of this one.
            let mut c = *b.get(pos)?;
            pos += 1;
            let mut strip = usize::from(c & 127);
            while c & 128 != 0 {
                c = *b.get(pos)?;
                pos += 1;
                strip = strip.checked_add(1)?.checked_mul(128)? + usize::from(c & 127);
            }
            let end = pos + b.get(pos..)?.iter().position(|&x| x == 0)?;
            let mut p = prev.get(..prev.len().checked_sub(strip)?)?.to_vec();
            p.extend_from_slice(&b[pos..end]);
            pos = end + 1;
            p
        } else {
            let end = pos + b.get(pos..)?.iter().position(|&x| x == 0)?;
            let p = b[pos..end].to_vec();
            // NUL-padded to a multiple of eight bytes.
            pos = start + ((end - start + 8) & !7);
            p
        };
        // The name's length, where it fits in the flags, must agree.
        let len = usize::from(flags & 0xfff);
        if len < 0xfff && len != path.len() {
            return None;
        }
        if mode == 0o160000 {
            out.push(String::from_utf8(path.clone()).ok()?);
        }
        prev = path;
    }
    Some(out)
}

/// The parts of git directory `g` changed since `since`.
fn look_in(g: &str, since: Stamp, out: &mut Swept) {
    for part in PARTS {
        let p = join(g, part);
        let Ok(m) = fs::symlink_metadata(&p) else {
            continue;
        };
        let changed = if part == "hooks" && m.is_dir() {
            hooks_changed(&p, &m, since)
        } else {
            Stamp::of(&m) >= since
        };
        if changed {
            move_aside(p, out);
        }
    }
}

/// A hooks directory counts as changed when a hook in it did (one
/// rewritten in place changes only its own ctime), or when it did and
/// holds any hook (a directory of old scripts renamed into place). git
/// runs a hook only by its exact name, never a `*.sample` (what `git
/// init` puts there): those alone change nothing. It moves whole.
fn hooks_changed(p: &str, m: &fs::Metadata, since: Stamp) -> bool {
    let Ok(rd) = fs::read_dir(p) else {
        return Stamp::of(m) >= since;
    };
    let mut any = false;
    for e in rd.flatten() {
        if e.file_name().as_encoded_bytes().ends_with(b".sample") {
            continue;
        }
        any = true;
        if fs::symlink_metadata(e.path()).is_ok_and(|m| Stamp::of(&m) >= since) {
            return true;
        }
    }
    any && Stamp::of(m) >= since
}

fn move_aside(p: String, out: &mut Swept) {
    match planted::move_one(&p) {
        Ok(Some(to)) => out.moved.push((p, to)),
        Ok(None) => {}
        Err(e) => out.failed.push((p, e.to_string())),
    }
}

/// One stderr line per path moved or not movable; with `verbose`
/// (`--report`) one if the search stopped early, which the precision
/// report's bound says on every run already.
pub fn report(s: &Swept, budget: usize, verbose: bool) {
    for (p, to) in &s.moved {
        eprintln!(
            "sbx: warning: the command created or changed {p}, in a git repository below \
             a writable tree's top (git would run it outside the sandbox later): moved it \
             to {to}. Review it, then rename it back"
        );
    }
    for (p, e) in &s.failed {
        eprintln!(
            "sbx: warning: the command created or changed {p}, in a git repository below \
             a writable tree's top, and it could not be moved aside ({e}): review it before \
             running git there"
        );
    }
    for p in &s.unread {
        eprintln!(
            "sbx: warning: {p} is larger than {} MiB and was not read: review the \
             submodules it names before running git there",
            MAX_INDEX >> 20
        );
    }
    if s.stopped && verbose {
        eprintln!(
            "sbx: warning: the search for git repositories changed during the run stopped \
             after {budget} directories: review repositories below the workspace before \
             running git there"
        );
    }
}

#[cfg(test)]
mod tests;
