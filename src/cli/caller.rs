//! What `sbx run POLICY` adds from the caller's environment (issue #36),
//! after lowering and only at run time: an artifact (`sbx compile`,
//! `--portable`) never depends on the shell it was compiled from.
//!
//! - Certificate bundles: a variable naming one (`SSL_CERT_FILE`,
//!   `NODE_EXTRA_CA_CERTS`, …) is kept, and the file made readable, when
//!   the policy declares no `[[env]]` and the value is a regular file that
//!   is not a sensitive path. Anything else is dropped, with a reason in
//!   the precision report.
//! - `PATH`: under the `developer_toolchains` preset and without
//!   `[commands]`, each directory on the caller's `PATH`, and where its
//!   symlinks lead, is readable and executable where no grant decides
//!   already, never writable.

use sbx::ir::{Access, Grant, Ir, PathKind, Precision, Source, Status};
use sbx::lint::sensitive::{How, Pattern};
use sbx::policy::model::Preset;
use sbx::policy::Policy;
use std::collections::{HashMap, HashSet};

mod links;

/// Variables that name a certificate bundle file.
pub const CERTIFICATE_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "GIT_SSL_CAINFO",
    "AWS_CA_BUNDLE",
    "CARGO_HTTP_CAINFO",
];

/// At most this many entries of one PATH directory are looked at for
/// symlinks: start-up stays bounded whatever a directory holds.
const SCAN_LIMIT: usize = 4096;

/// The preset name grants from here carry (`--report`, explain).
pub const CERTIFICATES: &str = "certificates";
pub const CALLER_PATH: &str = "caller_path";

/// Add the certificate and PATH grants for this caller. `vars` is the
/// caller's environment. Returns one line per grant made, for
/// `--report`: `preset NAME: PATH (rights)`.
/// `sensitive`: the IR's sensitive paths as patterns
/// (`sbx::lint::sensitive::patterns`).
pub fn add(
    ir: &mut Ir,
    policy: &Policy,
    vars: &[(String, String)],
    sensitive: &[Pattern],
) -> Vec<String> {
    // A directory holding a sensitive path is one too, but for patterns
    // at any depth (`**/.env`), which every directory could hold.
    let is_sensitive = |p: &str, dir: bool| {
        let parts = sbx::lint::sensitive::components(p);
        sensitive
            .iter()
            .any(|s| match s.reached_by_parts(&parts, dir) {
                Some(How::Direct) => true,
                Some(How::Ancestor) => !s.text.starts_with("**"),
                None => false,
            })
    };
    let mut grants = Vec::new();
    {
        // Several variables usually name one bundle: looked at once.
        let mut checked: HashMap<&str, Result<String, String>> = HashMap::new();
        for (name, value) in vars {
            if !CERTIFICATE_VARS.contains(&name.as_str()) || sbx::lower::env_denied(policy, name) {
                continue;
            }
            let found = checked
                .entry(value.as_str())
                .or_insert_with(|| certificate(value, &is_sensitive));
            match found.clone() {
                Ok(file) => {
                    ir.env.allow.push(name.clone());
                    grants.push((file, Access::READ, PathKind::File, CERTIFICATES, None));
                }
                Err(why) => ir.precision.push(Precision {
                    rule: format!("env {name}"),
                    target: "ir".into(),
                    status: Status::Dropped,
                    reason: format!("{value:?} {why}: the variable is not passed on"),
                    advisory: true,
                }),
            }
        }
        ir.env.allow.sort();
        ir.env.allow.dedup();
    }
    let toolchains = policy
        .process
        .presets
        .as_deref()
        .unwrap_or(&Preset::DEFAULT[..])
        .contains(&Preset::DeveloperToolchains);
    // `[commands]` withdraws execute from every directory: only the
    // listed programs run, so PATH adds nothing there.
    if toolchains && policy.commands.is_none() {
        if let Some((_, path)) = vars.iter().find(|(k, _)| k == "PATH") {
            let roots = [ir.roots.home.as_str(), ir.roots.workspace.as_str()];
            let mut scans = links::Scans::load(
                sbx::approvals::state_dir().map(|d| d.join(links::FILE).into_std_path_buf()),
            );
            for (dir, written) in path_dirs(path, &roots, &is_sensitive, &mut scans) {
                grants.push((dir, Access::READ_EXEC, PathKind::Dir, CALLER_PATH, written));
            }
            scans.save();
        }
    }
    let mut made = Vec::new();
    for (path, access, kind, name, written) in grants {
        // Only where nothing decides already: a narrower grant must not
        // narrow a wider one (a writable `.venv/bin` stays writable).
        if ir.decide(&path).is_some() {
            continue;
        }
        made.push(format!(
            "preset {name}: {path} ({})",
            access.names().join(", ")
        ));
        ir.fs.push(Grant {
            path,
            access,
            kind,
            source: Source::Preset { name: name.into() },
            aliases: written.into_iter().collect(),
            external: None,
        });
    }
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    made
}

fn certificate(value: &str, is_sensitive: &dyn Fn(&str, bool) -> bool) -> Result<String, String> {
    let canon = sbx::canonical::canonicalize(value).map_err(|e| format!("cannot be read ({e})"))?;
    let canon = canon.to_str().ok_or("is not UTF-8")?.to_string();
    if !std::fs::metadata(&canon).is_ok_and(|m| m.is_file()) {
        return Err("is not a regular file".into());
    }
    if is_sensitive(&canon, false) || is_sensitive(value, false) {
        return Err("is a sensitive path".into());
    }
    Ok(canon)
}

/// The directories to grant for `PATH`: (resolved directory, the path as
/// written when a symlink led there). Skipped: empty and relative
/// entries, `/`, home, the workspace and their ancestors, world-writable
/// directories, sensitive paths, and Windows drives under WSL (a `.exe`
/// there runs outside any Linux sandbox).
fn path_dirs(
    path: &str,
    roots: &[&str],
    is_sensitive: &dyn Fn(&str, bool) -> bool,
    scans: &mut links::Scans,
) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut seen: HashMap<String, Option<String>> = HashMap::new();
    let mut consider = |dir: &str, resolved: bool, out: &mut Vec<(String, Option<String>)>| {
        let canon = seen
            .entry(dir.to_string())
            .or_insert_with(|| usable(dir, resolved, roots, is_sensitive))
            .clone()?;
        if !out.iter().any(|(d, _)| *d == canon) {
            let written = (canon != dir).then(|| dir.to_string());
            out.push((canon.clone(), written));
        }
        Some(canon)
    };
    // `/bin` after `/usr/bin` where `/bin` links there: one directory,
    // scanned once.
    let mut scanned: HashSet<String> = HashSet::new();
    for entry in path.split(':') {
        let Some(dir) = consider(entry, false, &mut out) else {
            continue;
        };
        if !scanned.insert(dir.clone()) {
            continue;
        }
        // Where its symlinks lead (a pyenv shim, `~/.local/bin/tool`
        // linked into an install elsewhere): the directory of each target.
        for target in scans.targets(&dir, SCAN_LIMIT) {
            consider(&target, true, &mut out);
        }
    }
    out
}

/// `dir` resolved, if it may be granted.
/// `resolved`: `dir` is a link's target as [`links`] resolved it, with
/// no symlink left to follow.
fn usable(
    dir: &str,
    resolved: bool,
    roots: &[&str],
    is_sensitive: &dyn Fn(&str, bool) -> bool,
) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    if !dir.starts_with('/') {
        return None;
    }
    let canon = if resolved {
        dir.to_string()
    } else {
        sbx::canonical::canonicalize(dir)
            .ok()?
            .to_str()?
            .to_string()
    };
    let meta = std::fs::metadata(&canon).ok()?;
    if !meta.is_dir() || meta.permissions().mode() & 0o002 != 0 {
        return None;
    }
    for p in [dir, canon.as_str()] {
        let p = p.trim_end_matches('/');
        if p.is_empty() || roots.iter().any(|r| sbx::ir::path_within(r, p)) {
            return None;
        }
        if wsl_drive(p) || is_sensitive(p, true) {
            return None;
        }
    }
    Some(canon)
}

/// `/mnt/c` and below: a Windows drive as WSL mounts it.
fn wsl_drive(p: &str) -> bool {
    let mut parts = p.trim_start_matches('/').split('/');
    parts.next() == Some("mnt")
        && parts
            .next()
            .is_some_and(|d| d.len() == 1 && d.as_bytes()[0].is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::Path;

    /// A directory reached twice (`/bin` and `/usr/bin`) is granted once,
    /// under the spelling met first, and scanned once; a link to an entry
    /// of its own directory adds nothing, a link to a link leads on.
    #[test]
    fn path_directories_and_where_their_links_lead() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        for sub in ["usr/bin", "opt/x", "lib", "home"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("opt/x/b"), "").unwrap();
        std::fs::write(d.join("lib/tool"), "").unwrap();
        symlink("usr/bin", d.join("bin")).unwrap();
        symlink("b", d.join("usr/bin/a")).unwrap();
        symlink("../../opt/x/b", d.join("usr/bin/b")).unwrap();
        symlink(d.join("lib/tool"), d.join("usr/bin/c")).unwrap();
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let path = format!(
            "{}:{}:relative:{}",
            s(&d.join("bin")),
            s(&d.join("usr/bin")),
            s(&d.join("home"))
        );
        let home = s(&d.join("home"));
        let mut scans = links::Scans::load(None);
        let got = path_dirs(
            &path,
            &[home.as_str(), "/nonexistent"],
            &|_, _| false,
            &mut scans,
        );
        let mut want = vec![
            (s(&d.join("usr/bin")), Some(s(&d.join("bin")))),
            (s(&d.join("opt/x")), None),
            (s(&d.join("lib")), None),
        ];
        let mut got_sorted = got.clone();
        got_sorted.sort();
        want.sort();
        assert_eq!(got_sorted, want);
        assert_eq!(got[0], (s(&d.join("usr/bin")), Some(s(&d.join("bin")))));
    }

    #[test]
    fn windows_drives_under_wsl() {
        assert!(wsl_drive("/mnt/c"));
        assert!(wsl_drive("/mnt/c/Windows/System32"));
        assert!(!wsl_drive("/mnt/data/bin"));
        assert!(!wsl_drive("/opt/c"));
    }
}
