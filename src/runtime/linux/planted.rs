//! Protected paths (POLICY.md §7a) after the run: whatever differs from
//! what was there at launch ([`identity`]) is moved aside, so nothing
//! planted runs later outside the sandbox: not a hook on the next
//! commit, not an `.envrc` on the next `cd`. A path absent at launch has
//! nothing to mount over, so the command can create it during the run;
//! a path present at launch is a read-only mount, but a directory above
//! it can be renamed and another put in its place. It moves, never
//! deletes: the user reviews the file and renames it back (or names the
//! path in a rule to allow it).
//!
//! One exception: a repository's `.git/config` absent at launch whose
//! keys are all inert (`lower::git::inert`) stays, so that `git init`, `git
//! clone` and `cargo new` keep their remote and branch settings.

use super::beneath::Tops;
use super::identity::{self, Now, Record, Seen};
use super::repos;

/// Move aside what differs from launch; one warning each, returned to
/// be written once every file is safe. Called after the command's tree
/// has ended, so nothing re-creates it.
pub fn move_aside(tops: &Tops, records: &[Record], warnings: &mut Vec<String>) {
    for r in records {
        let top = tops.get(r.top);
        let (what, rel) = match identity::compare(tops, r) {
            Now::Same | Now::Gone => continue,
            Now::Other => (None, r.rel.clone()),
            Now::LinkOnTheWay(l) => (Some(top.show(&l)), l),
        };
        let path = &r.path;
        let mut why = String::new();
        if matches!(r.seen, Seen::Absent) && what.is_none() {
            if r.path.ends_with("/.git/config") {
                match repos::config_unsafe(top, &rel) {
                    None => continue,
                    Some(w) => why = format!(", and {w}"),
                }
            } else if r.path.ends_with("/.git/hooks") {
                why = String::from(repos::HOOKS_WHY);
            }
        }
        let did = match (&r.seen, &what) {
            (_, Some(link)) => format!(
                "the command put a symlink at {link}, on the way to {path}, which the policy \
                 protects"
            ),
            (Seen::Absent, None) => {
                format!("the command created {path}, which the policy protects{why}")
            }
            (Seen::Object { .. }, None) => format!(
                "{path}, which the policy protects, is not what it was at launch (the command \
                 renamed or replaced it or a directory above it)"
            ),
        };
        warnings.push(match top.move_aside(&rel) {
            Ok(None) => continue,
            Ok(Some(to)) => format!(
                "sbx: warning: {did} (it would run outside the sandbox later): moved {} to \
                 {to}. Review it, then rename it back, or name the path in a rule to allow it",
                top.show(&rel)
            ),
            Err(e) if top.lock_out(&rel).is_ok() => format!(
                "sbx: warning: {did}, and it could not be moved aside ({e}): its mode set to \
                 000 instead, which stops git, direnv and editors of its owner unless that is \
                 root. Review it before restoring its mode"
            ),
            Err(e) => format!(
                "sbx: warning: {did}, and it could not be moved aside ({e}): review it before \
                 running git, direnv or an editor there"
            ),
        });
    }
}
