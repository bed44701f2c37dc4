//! Anchoring, lexical normalisation and canonicalisation of rule paths.

use crate::hashed::Map;
use std::path::{Path, PathBuf};

/// What a rule path is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Workspace,
    Home,
    Absolute,
}

/// Split a policy path into its anchor and the part below it.
/// `.`/`x` → workspace, `~`/`~/x` → home, `/x` (or `C:/x` on Windows) → absolute.
pub fn anchor(path: &str, windows: bool) -> (Anchor, String) {
    let p = if windows {
        path.replace('\\', "/")
    } else {
        path.to_string()
    };
    if p == "~" {
        (Anchor::Home, String::new())
    } else if let Some(rest) = p.strip_prefix("~/") {
        (Anchor::Home, rest.to_string())
    } else if p.starts_with('/') || (windows && is_drive_path(&p)) {
        (Anchor::Absolute, p)
    } else {
        (Anchor::Workspace, p)
    }
}

fn is_drive_path(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// `a/./b` → `a/b`, `a/x/..` → `a`, `//` → `/`; `..` at the root stays at
/// the root. Keeps a leading `/`, drive prefix or `${PARAM}` as is.
pub fn normalise(path: &str) -> String {
    if is_normal(path) {
        return path.to_string();
    }
    rebuild(path)
}

fn rebuild(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                // Never pop a root marker such as `${WORKSPACE}` or `C:`.
                if parts.last().is_some_and(|l| !is_root_marker(l)) {
                    parts.pop();
                }
            }
            p => parts.push(p),
        }
    }
    let body = parts.join("/");
    match (absolute, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// Already as [`normalise`] writes it: no empty, `.` or `..` component
/// (beyond the leading `/` of an absolute path). Most paths are, and
/// checking is a fraction of rebuilding them.
pub(super) fn is_normal(path: &str) -> bool {
    let rest = path.strip_prefix('/').unwrap_or(path);
    // Bytes: `/` is never part of another character in UTF-8, and a byte
    // split costs a third of a `char` split (a join per protected path).
    !rest.is_empty()
        && rest
            .as_bytes()
            .split(|&b| b == b'/')
            .all(|p| !matches!(p, b"" | b"." | b".."))
}

fn is_root_marker(s: &str) -> bool {
    (s.starts_with("${") && s.ends_with('}')) || is_drive_path(s) && s.len() == 2
}

/// Join a root and a relative part, then normalise.
pub fn join(root: &str, rel: &str) -> String {
    if rel.is_empty() || rel == "." {
        return normalise(root);
    }
    // Not `format!`: a join per protected path, where formatting cost
    // more than the rest of the join.
    let mut joined = String::with_capacity(root.len() + 1 + rel.len());
    joined.push_str(root);
    joined.push('/');
    joined.push_str(rel);
    if is_normal(&joined) {
        joined
    } else {
        normalise(&joined)
    }
}

/// Resolve symlinks in the longest existing prefix of `path` and append the
/// rest: a missing leaf still gets a canonical parent. Returns the
/// canonical path and whether the full path exists.
pub fn canonicalise(path: &str) -> (String, bool) {
    Resolver::default().canonicalise(path)
}

/// `realpath`, in the plain form policies use: Windows' verbatim prefix
/// (`\\?\C:\x` from `std::fs::canonicalize`) is dropped where the path
/// means the same without it, so resolved paths compare equal to the
/// drive paths in policies, approvals and explain queries.
pub fn realpath(p: &Path) -> std::io::Result<PathBuf> {
    crate::canonical::canonicalize(p).map(|c| match c.to_str().and_then(plain_windows) {
        Some(s) => PathBuf::from(s),
        None => c,
    })
}

/// `\\?\C:\x` → `C:\x`, `\\?\UNC\srv\share` → `\\srv\share`; `None` when
/// the path has no verbatim prefix or needs it (a component the plain
/// form would reinterpret: `.`, `..`, trailing dots or spaces, too long).
fn plain_windows(s: &str) -> Option<String> {
    let rest = s.strip_prefix(r"\\?\")?;
    let plain = if let Some(unc) = rest.strip_prefix(r"UNC\") {
        format!(r"\\{unc}")
    } else if is_drive_path(rest) && rest[2..].starts_with('\\') {
        rest.to_string()
    } else {
        return None;
    };
    let odd = |c: &str| {
        let stem = c
            .split('.')
            .next()
            .unwrap_or("")
            .trim_end()
            .to_ascii_uppercase();
        let device = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
            || (stem.len() == 4
                && (stem.starts_with("COM") || stem.starts_with("LPT"))
                && stem.as_bytes()[3].is_ascii_digit());
        c == "." || c == ".." || c.ends_with('.') || c.ends_with(' ') || device
    };
    (plain.len() < 260 && !plain.split('\\').any(odd)).then_some(plain)
}

/// [`canonicalise`] with its `realpath` calls memoised, for one lowering:
/// each rule is resolved twice (escape check, then grant), and rules
/// under one missing directory would resolve its parents again each time. On
/// Linux the walk itself is shared too ([`super::walk`]).
#[derive(Debug, Default)]
pub struct Resolver {
    /// Keyed by the path's bytes: hashing a `Path` walks its components.
    /// The value: the canonical path and whether it is a directory.
    realpath: Map<Vec<u8>, Option<(PathBuf, bool)>>,
    #[cfg(target_os = "linux")]
    walker: super::walk::Walker,
}

impl Resolver {
    fn realpath(&mut self, p: &Path) -> Option<(PathBuf, bool)> {
        let key = p.as_os_str().as_encoded_bytes();
        if let Some(r) = self.realpath.get(key) {
            return r.clone();
        }
        // `realpath` and a `stat` for the kind, where the walk is not used.
        let libc_realpath = |p: &Path| {
            realpath(p).ok().map(|c| {
                let dir = c.is_dir();
                (c, dir)
            })
        };
        #[cfg(target_os = "linux")]
        let r = if p.is_absolute() {
            self.walker.realpath(key)
        } else {
            libc_realpath(p)
        };
        #[cfg(not(target_os = "linux"))]
        let r = libc_realpath(p);
        self.realpath.insert(key.to_vec(), r.clone());
        r
    }

    /// The canonical path and whether the full path exists.
    pub fn canonicalise(&mut self, path: &str) -> (String, bool) {
        let (c, kind) = self.resolve(path);
        (c, kind.is_some())
    }

    /// The canonical path and, when the full path exists, whether it is a
    /// directory (following symlinks).
    pub fn resolve(&mut self, path: &str) -> (String, Option<bool>) {
        // Under a directory already known not to resolve, nothing does:
        // skip straight to the parent walk.
        let parent_missing = Path::new(path).parent().is_some_and(|d| {
            self.realpath
                .get(d.as_os_str().as_encoded_bytes())
                .is_some_and(Option::is_none)
        });
        if !parent_missing {
            if let Some((c, dir)) = self.realpath(Path::new(path)) {
                if let Some(s) = c.to_str() {
                    return (s.to_string(), Some(dir));
                }
            }
        }
        let p = Path::new(path);
        let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
        let mut cur = p;
        while let Some(parent) = cur.parent() {
            if let Some(name) = cur.file_name() {
                missing.push(name);
            }
            if let Some((c, _)) = self.realpath(parent) {
                let mut out = c;
                for m in missing.iter().rev() {
                    out.push(m);
                }
                if let Some(s) = out.to_str() {
                    return (normalise(s), None);
                }
                break;
            }
            cur = parent;
        }
        (normalise(path), None)
    }
}

/// macOS spells a few top-level directories both ways (`/tmp` is a symlink
/// to `/private/tmp`): return the other spelling, if any.
pub fn macos_alias(path: &str) -> Option<String> {
    for d in ["tmp", "var", "etc"] {
        let short = format!("/{d}");
        let long = format!("/private/{d}");
        for (from, to) in [(&short, &long), (&long, &short)] {
            if let Some(rest) = path.strip_prefix(from.as_str()) {
                if rest.is_empty() || rest.starts_with('/') {
                    return Some(format!("{to}{rest}"));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_paths_are_kept_as_rebuilding_would_write_them() {
        let parts = ["", ".", "..", "a", "${WORKSPACE}", "C:", "b c", "x\\y"];
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for p in &paths {
                for q in parts {
                    next.push(format!("{p}/{q}"));
                    next.push(format!("{p}{q}"));
                }
            }
            paths.extend(next);
            paths.sort();
            paths.dedup();
        }
        for p in &paths {
            assert_eq!(normalise(p), rebuild(p), "{p:?}");
            // (`join` keeps the root alone for an empty or `.` part.)
            if let Some((root, rel)) = p.split_once('/').filter(|(_, r)| !matches!(*r, "" | ".")) {
                assert_eq!(join(root, rel), rebuild(&format!("{root}/{rel}")), "{p:?}");
            }
        }
    }

    #[test]
    fn verbatim_windows_paths_become_plain_only_when_equivalent() {
        let p = |s: &str| plain_windows(s);
        assert_eq!(p(r"\\?\C:\Users\me\ws").as_deref(), Some(r"C:\Users\me\ws"));
        assert_eq!(p(r"\\?\UNC\srv\share\x").as_deref(), Some(r"\\srv\share\x"));
        // Not verbatim, or not a drive or UNC path: left alone.
        assert_eq!(p(r"C:\x"), None);
        assert_eq!(p("/usr/bin"), None);
        assert_eq!(p(r"\\?\Volume{1234}\x"), None);
        assert_eq!(p(r"\\?\C:"), None);
        // The plain form would mean something else: keep the prefix.
        for s in [
            r"\\?\C:\x\dots.",
            r"\\?\C:\x\space ",
            r"\\?\C:\x\..",
            r"\\?\C:\x\NUL",
            r"\\?\C:\x\com1.txt",
            r"\\?\C:\x\Lpt9",
        ] {
            assert_eq!(p(s), None, "{s}");
        }
        assert_eq!(p(r"\\?\C:\x\console").as_deref(), Some(r"C:\x\console"));
        let long = format!(r"\\?\C:\{}", "a".repeat(300));
        assert_eq!(p(&long), None);
    }

    #[test]
    fn normalising() {
        assert_eq!(normalise("a/./b"), "a/b");
        assert_eq!(normalise("a/x/.."), "a");
        assert_eq!(normalise("/a//b/"), "/a/b");
        assert_eq!(normalise("/.."), "/");
        assert_eq!(normalise("."), ".");
        assert_eq!(normalise("${WORKSPACE}/a/../.."), "${WORKSPACE}");
        assert_eq!(join("/w", "."), "/w");
        assert_eq!(join("/w", "a/../b"), "/w/b");
    }

    #[test]
    fn anchoring() {
        assert_eq!(anchor(".", false), (Anchor::Workspace, ".".into()));
        assert_eq!(anchor("~", false), (Anchor::Home, "".into()));
        assert_eq!(anchor("~/.ssh", false), (Anchor::Home, ".ssh".into()));
        assert_eq!(anchor("/etc", false), (Anchor::Absolute, "/etc".into()));
        assert_eq!(anchor("~user", false), (Anchor::Workspace, "~user".into()));
        assert_eq!(
            anchor("C:\\Tools", true),
            (Anchor::Absolute, "C:/Tools".into())
        );
    }

    #[test]
    fn aliases() {
        assert_eq!(macos_alias("/tmp/x").as_deref(), Some("/private/tmp/x"));
        assert_eq!(macos_alias("/private/etc").as_deref(), Some("/etc"));
        assert_eq!(macos_alias("/tmpx"), None);
        assert_eq!(macos_alias("/usr"), None);
    }

    #[test]
    fn canonical_parent_of_missing_leaf() {
        let d = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(d.path()).unwrap();
        let (c, exists) = canonicalise(&format!("{}/nope/deeper", d.path().display()));
        assert!(!exists);
        assert_eq!(c, format!("{}/nope/deeper", real.display()));
    }

    #[test]
    fn the_memo_resolves_like_the_filesystem() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_str().unwrap().to_string();
        std::fs::create_dir_all(format!("{root}/a/b")).unwrap();
        std::fs::write(format!("{root}/a/f"), "").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(format!("{root}/a"), format!("{root}/l")).unwrap();
            std::os::unix::fs::symlink("/nonexistent-sbx", format!("{root}/dangling")).unwrap();
        }
        let paths = [
            "a",
            "a/b",
            "a/f",
            "a/f/x",
            "a/m",
            "a/m/n",
            "a/m/n/o",
            "l",
            "l/b",
            "l/m/n",
            "dangling",
            "dangling/x",
            "m",
            "m/x",
            "m/x/y",
        ];
        let mut memo = Resolver::default();
        // Twice, and deepest first, so the memo answers from what it saw.
        for p in paths.iter().rev().chain(paths.iter()) {
            let full = format!("{root}/{p}");
            let fresh = {
                // The pre-memo algorithm: realpath, else the parent walk.
                match std::fs::canonicalize(&full) {
                    Ok(c) => (c.to_str().unwrap().to_string(), true),
                    Err(_) => Resolver::default().canonicalise(&full),
                }
            };
            assert_eq!(memo.canonicalise(&full), fresh, "{p}");
        }
    }
}
