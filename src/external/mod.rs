//! External paths through workspace symlinks (RFD D43): how a rule path
//! resolves, whether its target is approved, and the `mount` / `approve`
//! operations built on top.
//!
//! Lowering, `sbx approve` and `sbx mount` all go through [`resolve`] and
//! [`status`], so the three can never disagree about what is approved.

pub mod approve;
pub mod edit;
pub mod mount;
pub mod sensitive;
pub mod spec;

use crate::compile::{self, Failure};
use crate::ir::{path_within, Os};
use crate::lower::paths::{anchor, canonicalise, join, normalise, Anchor};
use crate::lower::Approval;
use camino::Utf8Path;

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
    let lexical = join(workspace, key);
    let (target, exists) = canonicalise(&lexical);
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

/// sbx's own storage around the approvals store at `store`, canonical:
/// the directory when it is sbx's own (`…/sbx/approvals.json`), else the
/// store file with its lock and backup. A sandboxed tool that could write
/// here could approve its own mounts.
pub fn managed_paths(store: &Utf8Path) -> Vec<String> {
    let dir = store.parent().filter(|d| !d.as_str().is_empty());
    let paths: Vec<String> = match dir {
        Some(d) if d.file_name() == Some("sbx") => vec![d.to_string()],
        _ => ["", ".lock", ".corrupt"]
            .iter()
            .map(|x| format!("{store}{x}"))
            .collect(),
    };
    paths.iter().map(|p| canonicalise(p).0).collect()
}

/// The canonical workspace on this host, spelled as lowering spells it.
pub fn host_workspace(opts: &compile::Options) -> Result<String, Failure> {
    let lo = compile::lower_options(opts, Os::host())?;
    Ok(crate::lower::root_path(&lo.workspace, Os::host(), true))
}

/// Approvals for compiling: the store at `explicit`, else the default.
/// Returns the approvals and warnings. A corrupt store reads as empty; a
/// store inside the workspace is not trusted (it could be committed).
pub fn load_approvals(
    explicit: Option<&Utf8Path>,
    workspace: &str,
) -> Result<(Vec<Approval>, Vec<String>), String> {
    let Some(path) = crate::approvals::store_path(explicit) else {
        return Ok((Vec::new(), Vec::new()));
    };
    if let Err(e) = crate::approvals::check_outside(&path, workspace) {
        return Ok((Vec::new(), vec![format!("{e}; ignoring it")]));
    }
    let (store, warning) = crate::approvals::read(&path)?;
    Ok((store.approvals(), warning.into_iter().collect()))
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
