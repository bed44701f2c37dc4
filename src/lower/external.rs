//! External rules (RFD D43) as lowering sees them: how a rule's path
//! resolves on this host, and whether its target is approved.
//!
//! Lowering, `sbx approve` and `sbx mount` all go through [`resolve`] and
//! [`status`], so the three can never disagree about what is approved.

use super::paths::{anchor, canonicalise, join, normalise, Anchor, Resolver};
use super::Approval;
use crate::ir::path_within;

/// The lexical, workspace-relative key of an external rule: `./fork/` and
/// `fork` are the same rule. The rule's own symlinks are not resolved: the
/// key is what the user wrote, so a retargeted link keeps its key.
pub fn rule_key(path: &str, windows: bool) -> Result<String, KeyError> {
    let (a, rel) = anchor(path, windows);
    if a != Anchor::Workspace {
        return Err(KeyError::NotRelative);
    }
    if crate::policy::validate::climbs_out(&rel).is_some() {
        return Err(KeyError::ClimbsOut);
    }
    Ok(normalise(&rel))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyError {
    /// `~/x` or `/abs`: an external rule is reached through the workspace.
    NotRelative,
    /// `../x`: lexically outside the workspace, so there is no symlink to key on.
    ClimbsOut,
}

/// Where an external rule's path leads on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// An existing canonical path outside the workspace.
    External(String),
    /// The path resolves inside the workspace (SBX007).
    Inside(String),
    /// Nothing there: a dangling symlink (its text) or no file at all.
    Broken { link: Option<String> },
}

/// Resolve `key` (from [`rule_key`]) against the canonical workspace.
pub fn resolve(workspace: &str, key: &str) -> Resolution {
    resolve_with(&mut Resolver::default(), workspace, key)
}

/// [`resolve`] through lowering's resolver, which walks each directory
/// once for all rules.
pub(super) fn resolve_with(r: &mut Resolver, workspace: &str, key: &str) -> Resolution {
    let lexical = join(workspace, key);
    let (target, exists) = r.canonicalise(&lexical);
    if !exists {
        let link = std::fs::read_link(&lexical)
            .ok()
            .map(|l| l.to_string_lossy().into_owned());
        return Resolution::Broken { link };
    }
    if path_within(&target, workspace) {
        Resolution::Inside(target)
    } else {
        Resolution::External(target)
    }
}

/// An external target measured against the approvals store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Approved,
    Unapproved,
    /// Approved before, for another target: the symlink was retargeted.
    Retargeted {
        was: String,
    },
}

/// Approvals are keyed by (workspace, rule path); the target must match.
pub fn status(approvals: &[Approval], workspace: &str, key: &str, target: &str) -> Status {
    let same: Vec<&Approval> = approvals
        .iter()
        .filter(|a| a.workspace == workspace && a.rule_path == key)
        .collect();
    if same.iter().any(|a| a.canonical_target == target) {
        return Status::Approved;
    }
    match same.last() {
        Some(a) => Status::Retargeted {
            was: a.canonical_target.clone(),
        },
        None => Status::Unapproved,
    }
}

/// `true` if `path` (canonical or not) lies inside the canonical workspace,
/// judged on the canonical form of its longest existing prefix.
pub fn inside_workspace(path: &str, workspace: &str) -> bool {
    let (canon, _) = canonicalise(path);
    path_within(&canon, workspace) || path_within(&normalise(path), workspace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_lexical_and_workspace_relative() {
        assert_eq!(rule_key("./fork/", false), Ok("fork".into()));
        assert_eq!(rule_key("fork/sub/../x", false), Ok("fork/x".into()));
        assert_eq!(rule_key("../fork", false), Err(KeyError::ClimbsOut));
        assert_eq!(rule_key("a/../../b", false), Err(KeyError::ClimbsOut));
        assert_eq!(rule_key("/etc", false), Err(KeyError::NotRelative));
        assert_eq!(rule_key("~/x", false), Err(KeyError::NotRelative));
    }

    fn ap(key: &str, target: &str) -> Approval {
        Approval {
            workspace: "/w".into(),
            rule_path: key.into(),
            canonical_target: target.into(),
        }
    }

    #[test]
    fn status_is_keyed_by_workspace_and_rule_path() {
        let list = [ap("fork", "/a"), ap("other", "/b")];
        assert_eq!(status(&list, "/w", "fork", "/a"), Status::Approved);
        assert_eq!(
            status(&list, "/w", "fork", "/b"),
            Status::Retargeted { was: "/a".into() }
        );
        assert_eq!(status(&list, "/w", "new", "/a"), Status::Unapproved);
        assert_eq!(status(&list, "/v", "fork", "/a"), Status::Unapproved);
    }

    #[cfg(unix)]
    #[test]
    fn resolution_through_symlinks() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let ws = root.join("ws");
        let ext = root.join("ext");
        std::fs::create_dir_all(ws.join("inner")).unwrap();
        std::fs::create_dir_all(ext.join("sub")).unwrap();
        std::os::unix::fs::symlink(&ext, ws.join("fork")).unwrap();
        std::os::unix::fs::symlink(ws.join("inner"), ws.join("local")).unwrap();
        std::os::unix::fs::symlink(root.join("gone"), ws.join("dead")).unwrap();
        let w = ws.to_str().unwrap();
        let e = ext.to_str().unwrap();
        assert_eq!(resolve(w, "fork"), Resolution::External(e.into()));
        // Through the link: the key stays `fork/sub`, the target is below it.
        assert_eq!(
            resolve(w, "fork/sub"),
            Resolution::External(format!("{e}/sub"))
        );
        assert!(matches!(resolve(w, "local"), Resolution::Inside(_)));
        assert_eq!(
            resolve(w, "dead"),
            Resolution::Broken {
                link: Some(root.join("gone").to_str().unwrap().into())
            }
        );
        assert_eq!(resolve(w, "nothing"), Resolution::Broken { link: None });
    }
}
