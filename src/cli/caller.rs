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
//!
//! Neither follows a way the command could have steered: a path whose
//! resolution reads a directory the policy lets the command write (an
//! activated `.venv/bin` in the workspace, a bundle kept in the
//! repository) grants nothing, since a link planted there in an earlier
//! run could name any file on the host (POLICY.md §13: a run cannot widen
//! its own next run).

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
    // Where the command may make, replace or remove entries: a link found
    // there may have been put there by an earlier run.
    let fs = &ir.fs;
    let writable: Vec<&str> = fs
        .iter()
        .filter(|g| g.access.writes())
        .flat_map(|g| std::iter::once(g.path.as_str()).chain(g.aliases.iter().map(String::as_str)))
        .collect();
    // By identity too: a directory reached by another path (a bind
    // mount of the workspace) is the same directory to the kernel.
    let identity = |p: &str| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
    };
    let writable_ids: HashSet<(u64, u64)> = writable.iter().filter_map(|w| identity(w)).collect();
    // Any writable grant above, not only the most specific: a read-only
    // rule's directory missing at launch was the command's to make.
    let by_path = |dir: &str| sbx::ir::changeable_in(fs, dir);
    let by_id = |id: Option<(u64, u64)>| id.is_some_and(|i| writable_ids.contains(&i));
    let steerable = |dir: &str| by_path(dir) || by_id(identity(dir));
    let mut refused = Vec::new();
    {
        // Several variables usually name one bundle: looked at once.
        let mut checked: HashMap<&str, Result<Bundle, String>> = HashMap::new();
        let mut links = links::Links::default();
        for (name, value) in vars {
            if !CERTIFICATE_VARS.contains(&name.as_str()) || sbx::lower::env_denied(policy, name) {
                continue;
            }
            let found = checked
                .entry(value.as_str())
                .or_insert_with(|| certificate(value, &is_sensitive, &steerable, &mut links));
            match found.clone() {
                Ok(Bundle::Granted(file)) => {
                    ir.env.allow.push(name.clone());
                    grants.push((file, Access::READ, PathKind::File, CERTIFICATES, None));
                }
                // What the policy gives it is all it gets.
                Ok(Bundle::Steerable(via)) => {
                    ir.env.allow.push(name.clone());
                    refused.push(format!(
                        "preset {CERTIFICATES}: {value} not granted (passed on with what the \
                         policy gives it): the way to it passes through {via}, which the \
                         command can write"
                    ));
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
            // Identities from the record's stamps, read once per run.
            let steer = |d: &str, scans: &mut links::Scans| by_path(d) || by_id(scans.identity(d));
            let found = path_dirs(path, &roots, &is_sensitive, &steer, &mut scans);
            for (dir, written) in found.dirs {
                grants.push((dir, Access::READ_EXEC, PathKind::Dir, CALLER_PATH, written));
            }
            refused.extend(found.refused.into_iter().map(|(what, via)| {
                if path.split(':').any(|e| e == what) {
                    format!(
                        "preset {CALLER_PATH}: {what}: nothing granted and its links not \
                         followed: the way to it passes through {via}, which the command can \
                         write (what the policy gives there stays)"
                    )
                } else {
                    format!(
                        "preset {CALLER_PATH}: {what} not granted: a link to it passes \
                         through {via}, which the command can write"
                    )
                }
            }));
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
    made.extend(refused);
    made
}

/// A certificate bundle that may be passed on.
#[derive(Clone)]
enum Bundle {
    /// Granted read: the file, resolved.
    Granted(String),
    /// Passed on with no grant: its resolution read this directory, which
    /// the command can write.
    Steerable(String),
}

fn certificate(
    value: &str,
    is_sensitive: &dyn Fn(&str, bool) -> bool,
    steerable: &dyn Fn(&str) -> bool,
    links: &mut links::Links,
) -> Result<Bundle, String> {
    if !value.starts_with('/') {
        return Err("is not an absolute path".into());
    }
    let (canon, via) = links.resolve_via(std::path::Path::new(value));
    let canon = canon.ok_or("cannot be read (no such file)")?;
    let canon = canon.to_str().ok_or("is not UTF-8")?.to_string();
    if !std::fs::metadata(&canon).is_ok_and(|m| m.is_file()) {
        return Err("is not a regular file".into());
    }
    if is_sensitive(&canon, false) || is_sensitive(value, false) {
        return Err("is a sensitive path".into());
    }
    if let Some(d) = via.iter().filter_map(|d| d.to_str()).find(|d| steerable(d)) {
        return Ok(Bundle::Steerable(d.to_string()));
    }
    Ok(Bundle::Granted(canon))
}

/// What [`path_dirs`] found.
#[derive(Debug, Default)]
struct PathDirs {
    /// (resolved directory, the path as written when a symlink led there).
    dirs: Vec<(String, Option<String>)>,
    /// (a PATH entry or a link target, the directory the command can
    /// write on the way to it): not granted.
    refused: Vec<(String, String)>,
}

/// The directories to grant for `PATH`. Skipped: empty and relative
/// entries, `/`, home, the workspace and their ancestors, world-writable
/// directories, sensitive paths, and Windows drives under WSL (a `.exe`
/// there runs outside any Linux sandbox). Refused: an entry or link
/// target whose resolution read a directory that is `steerable` (its
/// entries the command can change); the links of such an entry are not
/// followed at all.
fn path_dirs(
    path: &str,
    roots: &[&str],
    is_sensitive: &dyn Fn(&str, bool) -> bool,
    steerable: &dyn Fn(&str, &mut links::Scans) -> bool,
    scans: &mut links::Scans,
) -> PathDirs {
    let mut out = PathDirs::default();
    let mut seen: HashMap<String, Option<String>> = HashMap::new();
    let mut consider = |dir: &str, canon: &str, out: &mut PathDirs, scans: &mut links::Scans| {
        let canon = seen
            .entry(canon.to_string())
            .or_insert_with(|| usable(dir, canon, roots, is_sensitive, scans))
            .clone()?;
        if !out.dirs.iter().any(|(d, _)| *d == canon) {
            let written = (canon != dir).then(|| dir.to_string());
            out.dirs.push((canon.clone(), written));
        }
        Some(canon)
    };
    // `/bin` after `/usr/bin` where `/bin` links there: one directory,
    // scanned once.
    let mut scanned: HashSet<String> = HashSet::new();
    for entry in path.split(':') {
        if !entry.starts_with('/') {
            continue;
        }
        let (Some(canon), via) = scans.resolve_via(std::path::Path::new(entry)) else {
            continue;
        };
        let Some(canon) = canon.to_str() else {
            continue;
        };
        let way = via.iter().filter_map(|p| p.to_str()).chain([canon]);
        if let Some(d) = first_steerable(way, &mut |d| steerable(d, scans)) {
            if !out.refused.iter().any(|(e, _)| e == entry) {
                out.refused.push((entry.to_string(), d));
            }
            continue;
        }
        let Some(dir) = consider(entry, canon, &mut out, scans) else {
            continue;
        };
        if !scanned.insert(dir.clone()) {
            continue;
        }
        // Where its symlinks lead (a pyenv shim, `~/.local/bin/tool`
        // linked into an install elsewhere): the directory of each target.
        for target in scans.targets(&dir, SCAN_LIMIT) {
            let way = target.via.iter().map(String::as_str);
            if let Some(d) = first_steerable(way, &mut |d| steerable(d, scans)) {
                if !out.refused.iter().any(|(t, _)| *t == target.dir) {
                    out.refused.push((target.dir, d));
                }
                continue;
            }
            consider(&target.dir, &target.dir, &mut out, scans);
        }
    }
    out
}

/// The first directory on a way that the command can write.
fn first_steerable<'a>(
    way: impl IntoIterator<Item = &'a str>,
    steerable: &mut dyn FnMut(&str) -> bool,
) -> Option<String> {
    way.into_iter().find(|d| steerable(d)).map(str::to_string)
}

/// `canon` (`dir` resolved, so no symlink: its `lstat` is its `stat`),
/// if it may be granted.
fn usable(
    dir: &str,
    canon: &str,
    roots: &[&str],
    is_sensitive: &dyn Fn(&str, bool) -> bool,
    scans: &mut links::Scans,
) -> Option<String> {
    let meta = scans.lstat(std::path::Path::new(canon))?;
    if !meta.is_dir() || meta.mode & 0o002 != 0 {
        return None;
    }
    for p in [dir, canon] {
        let p = p.trim_end_matches('/');
        if p.is_empty() || roots.iter().any(|r| sbx::ir::path_within(r, p)) {
            return None;
        }
        if wsl_drive(p) || is_sensitive(p, true) {
            return None;
        }
    }
    Some(canon.to_string())
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
            &|_, _| false,
            &mut scans,
        );
        assert!(got.refused.is_empty(), "{:?}", got.refused);
        let got = got.dirs;
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

    /// A way through a directory the command can write is not followed:
    /// a link in a PATH directory there, a PATH entry that is a link
    /// there, a link elsewhere whose chain passes through there, a
    /// bundle there. The same shapes outside it are granted.
    #[test]
    fn ways_through_writable_directories_grant_nothing() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        for sub in ["ws/.venv/bin", "opt/bin", "secret", "lib", "certs"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        for f in ["secret/key", "lib/tool", "certs/ca.pem"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let ws = s(&d.join("ws"));
        // Planted by an earlier run.
        symlink(d.join("secret/key"), d.join("ws/.venv/bin/k")).unwrap();
        symlink(d.join("secret"), d.join("ws/bin")).unwrap();
        symlink(d.join("secret/key"), d.join("ws/hop")).unwrap();
        symlink(d.join("secret/key"), d.join("ws/ca.pem")).unwrap();
        // The user's: one link through the workspace, one not.
        symlink(d.join("ws/hop"), d.join("opt/bin/via-ws")).unwrap();
        symlink(d.join("lib/tool"), d.join("opt/bin/tool")).unwrap();
        let steerable = |p: &str| sbx::ir::path_within(p, &ws);
        let steer = |p: &str, _: &mut links::Scans| steerable(p);
        let path = format!(
            "{}:{}:{}",
            s(&d.join("ws/.venv/bin")),
            s(&d.join("ws/bin")),
            s(&d.join("opt/bin"))
        );
        let mut scans = links::Scans::load(None);
        let got = path_dirs(&path, &["/nonexistent"], &|_, _| false, &steer, &mut scans);
        let dirs: Vec<&str> = got.dirs.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(dirs, [s(&d.join("opt/bin")), s(&d.join("lib"))]);
        let refused: Vec<(&str, &str)> = got
            .refused
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(
            refused,
            [
                (s(&d.join("ws/.venv/bin")).as_str(), ws.as_str()),
                (s(&d.join("ws/bin")).as_str(), ws.as_str()),
                (s(&d.join("secret")).as_str(), ws.as_str()),
            ]
        );
        let mut links = links::Links::default();
        let bundle = |p: &Path, links: &mut links::Links| {
            certificate(&s(p), &|_, _| false, &steerable, links)
        };
        assert!(matches!(
            bundle(&d.join("ws/ca.pem"), &mut links),
            Ok(Bundle::Steerable(w)) if w == ws
        ));
        let ca = s(&d.join("certs/ca.pem"));
        assert!(
            matches!(bundle(&d.join("certs/ca.pem"), &mut links), Ok(Bundle::Granted(f)) if f == ca)
        );
    }

    #[test]
    fn windows_drives_under_wsl() {
        assert!(wsl_drive("/mnt/c"));
        assert!(wsl_drive("/mnt/c/Windows/System32"));
        assert!(!wsl_drive("/mnt/data/bin"));
        assert!(!wsl_drive("/opt/c"));
    }
}
