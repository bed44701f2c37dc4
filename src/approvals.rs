//! The approvals store for external paths (RFD D43): user-local, never in
//! the workspace, so a commit cannot pre-approve its own symlink.
//!
//! Writers take an advisory lock, re-read the file, upsert, and replace it
//! atomically (temp file + fsync + rename + fsync of the directory), so
//! concurrent `sbx approve` / `sbx mount` runs neither corrupt the file nor
//! lose each other's entries. Readers never lock: they see the old or the
//! new file, never a torn one.

mod lock;

use crate::lower::Approval;
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    #[serde(default)]
    pub mounts: Vec<Mount>,
    /// Other approval categories a later sbx may add: kept on rewrite.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// The canonical workspace, as lowering spells it.
    pub workspace: String,
    /// The rule's lexical workspace-relative path (the symlink's name).
    pub rule_path: String,
    pub canonical_target: String,
    /// RFC 3339, UTC. Informational only; hand-written entries may omit it
    /// or give seconds since the Unix epoch.
    #[serde(default, deserialize_with = "timestamp")]
    pub approved_at: String,
}

/// A string as is, or epoch seconds as RFC 3339.
fn timestamp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum T {
        Text(String),
        Seconds(u64),
    }
    Ok(match T::deserialize(d)? {
        T::Text(s) => s,
        T::Seconds(n) => rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(n)),
    })
}

impl Mount {
    /// A mount approved now.
    pub fn now(workspace: &str, rule_path: &str, canonical_target: &str) -> Mount {
        Mount {
            workspace: workspace.into(),
            rule_path: rule_path.into(),
            canonical_target: canonical_target.into(),
            approved_at: rfc3339(std::time::SystemTime::now()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("approvals store {store} is inside the workspace {workspace}: a shared repository must not carry approvals; use the default user-local store or --approvals FILE outside the workspace")]
    InWorkspace { store: String, workspace: String },
    #[error("approvals store {0}: {1}")]
    Io(Utf8PathBuf, std::io::Error),
}

/// `$XDG_STATE_HOME/sbx/approvals.json`, else `~/.local/state/sbx/…`
/// (`%LOCALAPPDATA%\sbx\…` on Windows).
pub fn default_path() -> Option<Utf8PathBuf> {
    state_dir().map(|d| d.join("approvals.json"))
}

/// sbx's user-local state directory ([`crate::runtime::state_dir`]).
pub fn state_dir() -> Option<Utf8PathBuf> {
    crate::runtime::state_dir()
}

/// `--approvals FILE` (made absolute against the current directory), else
/// the default.
pub fn store_path(explicit: Option<&Utf8Path>) -> Option<Utf8PathBuf> {
    match explicit {
        Some(p) if p.is_relative() => std::env::current_dir()
            .ok()
            .and_then(|d| Utf8PathBuf::from_path_buf(d).ok())
            .map(|d| d.join(p)),
        Some(p) => Some(p.to_path_buf()),
        None => default_path(),
    }
}

/// Refuse a store inside `workspace` (canonical), judged after resolving
/// symlinks in the store's path.
pub fn check_outside(store: &Utf8Path, workspace: &str) -> Result<(), Error> {
    if crate::lower::external::inside_workspace(store.as_str(), workspace) {
        return Err(Error::InWorkspace {
            store: store.to_string(),
            workspace: workspace.into(),
        });
    }
    Ok(())
}

/// Read the store. A missing file is empty; a corrupt one reads as empty
/// with a warning (returned), never as an error that blocks compiling.
pub fn read(path: &Utf8Path) -> Result<(Store, Option<String>), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Store::default(), None)),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => String::new(),
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

    /// Insert or replace: one entry per (workspace, rule path), because
    /// approving a retargeted link replaces the old target.
    pub fn upsert(&mut self, m: Mount) {
        match self
            .mounts
            .iter_mut()
            .find(|o| o.workspace == m.workspace && o.rule_path == m.rule_path)
        {
            Some(o) => *o = m,
            None => self.mounts.push(m),
        }
    }
}

/// Record one approval. See [`approve_many`].
pub fn record(path: &Utf8Path, m: Mount) -> Result<Vec<String>, Error> {
    approve_many(path, vec![m])
}

/// Record approvals under the store's lock: re-read, upsert, replace
/// atomically. A corrupt store is kept as `FILE.corrupt` and rewritten
/// validly. Returns warnings. Refuses a store inside any mount's workspace.
pub fn approve_many(path: &Utf8Path, mounts: Vec<Mount>) -> Result<Vec<String>, Error> {
    for m in &mounts {
        check_outside(path, &m.workspace)?;
    }
    let io = |e: std::io::Error| Error::Io(path.to_path_buf(), e);
    let dir = parent(path);
    create_private_dir(&dir).map_err(io)?;
    let _lock = lock::Lock::acquire(&lock_path(path)).map_err(io)?;
    let mut warnings = Vec::new();
    let (mut store, warning) = read(path).map_err(|e| io(std::io::Error::other(e)))?;
    if let Some(w) = warning {
        let backup = Utf8PathBuf::from(format!("{path}.corrupt"));
        std::fs::copy(path, &backup).map_err(io)?;
        warnings.push(format!("{w}; the old file was kept as {backup}"));
    }
    for m in mounts {
        store.upsert(m);
    }
    let mut text = serde_json::to_string_pretty(&store).expect("the store serialises");
    text.push('\n');
    // Crash-safe: the old store or the new one, never a mix.
    crate::atomic::replace(path.as_std_path(), text.as_bytes(), 0o600).map_err(io)?;
    Ok(warnings)
}

fn parent(path: &Utf8Path) -> Utf8PathBuf {
    match path.parent() {
        Some(d) if !d.as_str().is_empty() => d.to_path_buf(),
        _ => Utf8PathBuf::from("."),
    }
}

fn lock_path(path: &Utf8Path) -> Utf8PathBuf {
    Utf8PathBuf::from(format!("{path}.lock"))
}

/// Create the store's directory (and missing parents) readable by the
/// user alone. An existing directory is left as it is.
fn create_private_dir(dir: &Utf8Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// `2026-05-26T13:00:00Z` for a system time (UTC, whole seconds).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn tmp_store() -> (tempfile::TempDir, Utf8PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = Utf8PathBuf::from_path_buf(d.path().join("state/sbx/approvals.json")).unwrap();
        (d, p)
    }

    #[test]
    fn missing_is_empty_and_corrupt_warns() {
        let (_d, p) = tmp_store();
        assert_eq!(read(&p).unwrap(), (Store::default(), None));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "{not json").unwrap();
        let (s, w) = read(&p).unwrap();
        assert!(s.mounts.is_empty());
        assert!(w.unwrap().contains("corrupt"));
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_779_800_400);
        assert_eq!(rfc3339(t), "2026-05-26T13:00:00Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn epoch_seconds_read_as_timestamps() {
        let (_d, p) = tmp_store();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let text = r#"{"mounts": [{"workspace": "/w", "rule_path": "a", "canonical_target": "/t", "approved_at": 0},
                                  {"workspace": "/w", "rule_path": "b", "canonical_target": "/u"}]}"#;
        std::fs::write(&p, text).unwrap();
        let (s, w) = read(&p).unwrap();
        assert!(w.is_none(), "{w:?}");
        assert_eq!(s.mounts[0].approved_at, "1970-01-01T00:00:00Z");
        assert_eq!(s.mounts[1].approved_at, "");
    }

    #[test]
    fn upsert_replaces_the_target_and_keeps_other_keys() {
        let (_d, p) = tmp_store();
        record(&p, Mount::now("/w", "fork", "/a")).unwrap();
        record(&p, Mount::now("/w", "other", "/b")).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["plugins"] = serde_json::json!([{"name": "x"}]);
        std::fs::write(&p, v.to_string()).unwrap();
        record(&p, Mount::now("/w", "fork", "/c")).unwrap();
        let (s, w) = read(&p).unwrap();
        assert!(w.is_none());
        let got: Vec<_> = s
            .mounts
            .iter()
            .map(|m| (m.rule_path.as_str(), m.canonical_target.as_str()))
            .collect();
        assert_eq!(got, [("fork", "/c"), ("other", "/b")]);
        assert_eq!(s.other["plugins"][0]["name"], "x");
    }

    #[test]
    fn corrupt_store_is_backed_up_and_rewritten() {
        let (_d, p) = tmp_store();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "{\"mounts\": [").unwrap();
        let w = record(&p, Mount::now("/w", "fork", "/a")).unwrap();
        assert!(w[0].contains("corrupt"), "{w:?}");
        assert_eq!(
            std::fs::read_to_string(format!("{p}.corrupt")).unwrap(),
            "{\"mounts\": ["
        );
        assert_eq!(read(&p).unwrap().0.mounts.len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn new_store_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, p) = tmp_store();
        record(&p, Mount::now("/w", "fork", "/a")).unwrap();
        for dir in [p.parent().unwrap(), p.parent().unwrap().parent().unwrap()] {
            let mode = std::fs::metadata(dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{dir}");
        }
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn store_inside_the_workspace_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(d.path()).unwrap();
        let ws = ws.to_str().unwrap();
        let p = Utf8PathBuf::from(format!("{ws}/.sbx/approvals.json"));
        let e = record(&p, Mount::now(ws, "fork", "/a")).unwrap_err();
        assert!(matches!(e, Error::InWorkspace { .. }), "{e}");
        assert!(!p.exists());
    }

    #[test]
    fn concurrent_writers_keep_every_entry() {
        let (_d, p) = tmp_store();
        std::thread::scope(|s| {
            for i in 0..8 {
                let p = &p;
                s.spawn(move || {
                    for j in 0..5 {
                        record(p, Mount::now("/w", &format!("m{i}-{j}"), "/t")).unwrap();
                    }
                });
            }
        });
        assert_eq!(read(&p).unwrap().0.mounts.len(), 40);
    }
}
