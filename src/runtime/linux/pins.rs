//! Pins (docs/protected.md, "Pinned directories"): the directories on
//! the way from a writable tree's top to each carve-out become mount
//! points of themselves in the child's mount namespace.
//!
//! A carve-out is a mount on a *name* inside a writable tree. The kernel
//! refuses to rename or remove a mount point (EBUSY) but not the
//! directory that holds one, and that rename happens on the host's
//! filesystem: `mv tools tools.old && mkdir -p tools/githooks` leaves
//! the read-only `core.hooksPath` directory under the old name and a
//! writable one under the name git reads after the run. A directory
//! that is a mount point of itself cannot be renamed or removed either,
//! and its unpinned parent could still be, so every ancestor up to the
//! writable top is pinned.
//!
//! A pin also turns a rename or hard link across it into EXDEV and an
//! `rm -rf` of the tree it is in into EBUSY, so only the ways to
//! carve-outs are pinned, and inside a nested repository (`X/.git`
//! below the top) only from `X/.git` down: pinning `X` and its
//! ancestors would cost the user `git mv` and `rm -rf` of ordinary
//! directories.

use super::ns::MountPlan;
use super::plan::{line, Opened};
use crate::back::landlock::MountKind;
use crate::ir::{Precision, Status};
use std::collections::BTreeSet;
use std::io;

/// The directories to pin for `carve_outs` (absolute paths), sorted.
/// `writable(dir)`: the command may create and remove entries in `dir`
/// (a rule at or above it writes; Landlock unions the rights of every
/// rule above a path, so once a directory is writable so is everything
/// below it). `mounted`: every path the run mounts over.
///
/// A directory is pinned when its parent is writable (else it cannot be
/// renamed anyway: the writable top itself is never pinned) and no
/// mount is at or above it: a mount there stops renames itself, and a
/// pin beneath a carve-out would be made before it (deepest first) and
/// so escape its flags (read-only, noexec).
pub fn pin_paths(
    carve_outs: &[&str],
    mounted: &[&str],
    writable: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mounted: BTreeSet<&str> = mounted.iter().copied().collect();
    // A mount at `d` or above it.
    let under_mount =
        |d: &str| mounted.contains(d) || ancestors(d).iter().any(|a| mounted.contains(a.as_str()));
    let mut out: BTreeSet<String> = BTreeSet::new();
    for path in carve_outs {
        let dirs = ancestors(path);
        // The writable top: the outermost writable ancestor.
        let Some(top) = dirs.iter().position(|d| writable(d)) else {
            continue;
        };
        // Below the top, the first `.git` that is not the top's own (a
        // nested repository's, or a `.git` file there: the carve-out
        // itself) starts the pins.
        let nested_git = |j: usize| {
            let name = dirs.get(j).map_or(*path, |d| d.as_str());
            j > top + 1 && name.ends_with("/.git")
        };
        let from = (top + 1..=dirs.len())
            .find(|&j| nested_git(j))
            .unwrap_or(top + 1);
        for d in &dirs[from..] {
            if !under_mount(d) {
                out.insert(d.clone());
            }
        }
    }
    out.into_iter().collect()
}

/// The proper ancestors of an absolute path, `/` first.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = vec![String::from("/")];
    let mut at = 1;
    while let Some(i) = path.get(at..).and_then(|rest| rest.find('/')) {
        out.push(path[..at + i].to_string());
        at += i + 1;
    }
    out
}

/// Add the pins for `mounts`' carve-outs to `mounts`, each opened like
/// a rule path (through no symlink), and sort the list by path so that
/// the child mounts the deepest first. A directory that cannot be
/// opened (renamed since its carve-out was opened) is reported, not
/// pinned.
pub fn add<F>(
    mounts: &mut Vec<MountPlan<F>>,
    writable: &dyn Fn(&str) -> bool,
    open: &mut dyn FnMut(&str) -> io::Result<Opened<F>>,
) -> Vec<Precision> {
    let carve_outs: Vec<&str> = mounts
        .iter()
        .filter(|m| m.is_carve_out())
        .map(|m| m.path.as_str())
        .collect();
    let mounted: Vec<&str> = mounts.iter().map(|m| m.path.as_str()).collect();
    let paths = pin_paths(&carve_outs, &mounted, writable);
    let mut lines = Vec::new();
    for path in paths {
        match open(&path) {
            Ok(o) if o.is_dir => mounts.push(MountPlan {
                path,
                handle: o.handle,
                is_dir: true,
                kind: MountKind::Bind,
                read_only: false,
                noexec: false,
                pin: true,
                show: Vec::new(),
            }),
            Ok(_) => lines.push(unpinned(path, "it is no longer a directory".into())),
            Err(e) => lines.push(unpinned(path, e.to_string())),
        }
    }
    mounts.sort_by(|a, b| a.path.cmp(&b.path));
    lines
}

fn unpinned(path: String, why: String) -> Precision {
    let reason = format!(
        "cannot open {path} at launch ({why}): it is not pinned, so the command can rename \
         it and the carve-outs beneath it stop holding their names"
    );
    line(path, Status::Wider, reason)
}

#[cfg(test)]
mod tests {
    use super::pin_paths;

    fn within(top: &'static str) -> impl Fn(&str) -> bool {
        move |d: &str| crate::ir::path_within(d, top)
    }

    /// Every directory between the top and a carve-out, the top itself
    /// excluded, each once.
    #[test]
    fn the_way_from_the_top_is_pinned() {
        let carve_outs = [
            "/ws/.git/hooks",
            "/ws/.git/config",
            "/ws/.git/modules/m/hooks",
            "/ws/.git/worktrees/w/commondir",
            "/ws/tools/githooks",
            "/ws/cfg/team.gitconfig",
            "/ws/a/b/secret",
        ];
        assert_eq!(
            pin_paths(&carve_outs, &carve_outs, &within("/ws")),
            [
                "/ws/.git",
                "/ws/.git/modules",
                "/ws/.git/modules/m",
                "/ws/.git/worktrees",
                "/ws/.git/worktrees/w",
                "/ws/a",
                "/ws/a/b",
                "/ws/cfg",
                "/ws/tools",
            ]
        );
        // A rule on `/`: the top is `/`, and the workspace is pinned too.
        assert_eq!(
            pin_paths(&["/ws/cfg/p.toml"], &[], &within("/")),
            ["/ws", "/ws/cfg"]
        );
    }

    /// In a nested repository only its `.git` and below; a `.git` file
    /// there (the carve-out itself) pins nothing.
    #[test]
    fn nested_repositories_pin_their_git_only() {
        let carve_outs = ["/ws/a/b/.git/hooks", "/ws/c/.git", "/ws/.git"];
        assert_eq!(
            pin_paths(&carve_outs, &carve_outs, &within("/ws")),
            ["/ws/a/b/.git"]
        );
    }

    /// Nothing outside a writable tree, nothing at or beneath another
    /// mount (its own mount stops renames, and a pin made before it
    /// would escape its flags).
    #[test]
    fn nothing_outside_or_beneath_a_mount() {
        assert!(pin_paths(&["/etc/x/shadow"], &[], &within("/ws")).is_empty());
        let carve_outs = ["/ws/ro", "/ws/ro/d/secret", "/ws/d/e"];
        assert_eq!(
            pin_paths(
                &carve_outs,
                &[carve_outs.as_slice(), &["/ws/d"]].concat(),
                &within("/ws")
            ),
            Vec::<String>::new()
        );
    }
}
