//! The approvals store for external paths (RFD D43): user-local, never in
//! the workspace, so a commit cannot pre-approve its own symlink.

use crate::lower::Approval;
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    pub mounts: Vec<Mount>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub workspace: String,
    pub rule_path: String,
    pub canonical_target: String,
    /// Seconds since the Unix epoch.
    pub approved_at: u64,
}

/// `$XDG_STATE_HOME/sbx/approvals.json`, else `~/.local/state/sbx/…`
/// (`%LOCALAPPDATA%\sbx\…` on Windows).
pub fn default_path() -> Option<Utf8PathBuf> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if cfg!(windows) {
        return var("LOCALAPPDATA")
            .map(|d| Utf8PathBuf::from(d).join("sbx").join("approvals.json"));
    }
    if let Some(x) = var("XDG_STATE_HOME") {
        return Some(Utf8PathBuf::from(x).join("sbx/approvals.json"));
    }
    var("HOME").map(|h| Utf8PathBuf::from(h).join(".local/state/sbx/approvals.json"))
}

/// Read the store. A missing file is empty; a corrupt one reads as empty
/// with a warning (returned), never as an error that blocks compiling.
pub fn read(path: &Utf8Path) -> Result<(Store, Option<String>), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Store::default(), None)),
        Err(e) => return Err(format!("cannot read approvals {path}: {e}")),
    };
    match serde_json::from_str::<Store>(&text) {
        Ok(s) => Ok((s, None)),
        Err(e) => Ok((
            Store::default(),
            Some(format!(
                "approvals store {path} is corrupt ({e}); treating it as empty: external rules stay unapproved"
            )),
        )),
    }
}

impl Store {
    pub fn approvals(&self) -> Vec<Approval> {
        self.mounts
            .iter()
            .map(|m| Approval {
                workspace: m.workspace.clone(),
                rule_path: m.rule_path.clone(),
                canonical_target: m.canonical_target.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_empty_and_corrupt_warns() {
        let d = tempfile::tempdir().unwrap();
        let p = Utf8PathBuf::from_path_buf(d.path().join("a.json")).unwrap();
        assert_eq!(read(&p).unwrap(), (Store::default(), None));
        std::fs::write(&p, "{not json").unwrap();
        let (s, w) = read(&p).unwrap();
        assert!(s.mounts.is_empty());
        assert!(w.unwrap().contains("corrupt"));
    }
}
