//! Which strace `--denials` and `sbx learn` run. strace runs outside the
//! sandbox, as the caller (often root), so a copy a sandboxed command
//! could have written must never be the one run: an activated virtual
//! environment or `node_modules/.bin` in the workspace puts a writable
//! directory first on `PATH`, and a command that plants `strace` there
//! would run unconfined at the user's next `--denials`.
//!
//! So `PATH` is not searched. strace is taken from the system's program
//! directories only, and only where no user but root can have put it
//! there: the file and every directory above it (after symlinks are
//! resolved) owned by root, the file writable by nobody else, each
//! directory writable by nobody else or sticky (where only an entry's
//! owner, root, may rename or remove it). A sandboxed command running as
//! another user cannot write any of these; one running as root holds no
//! capability and writes only what its policy grants, and no preset
//! grants a system program directory.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where strace is looked for, in this order: the FHS program
/// directories (what sudo's `secure_path` holds), and NixOS's system
/// profile.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
    "/run/current-system/sw/bin",
];

/// The strace to run: [`find`] in [`SYSTEM_DIRS`]. Tests only
/// (Cargo.toml, `test-hooks`): `SBX_TEST_TOOL_DIRS`, colon-separated,
/// replaces the list, so that a test can see what happens without one.
pub fn strace() -> Result<PathBuf, String> {
    #[cfg(feature = "test-hooks")]
    if let Some(dirs) = std::env::var_os("SBX_TEST_TOOL_DIRS") {
        let dirs = dirs.to_string_lossy().into_owned();
        return find("strace", &dirs.split(':').collect::<Vec<_>>());
    }
    find("strace", SYSTEM_DIRS)
}

/// The first `name` in `dirs` that only root can have put there, by its
/// path without symlinks. `Err` says where it was looked for and why each
/// copy found was passed over.
pub fn find(name: &str, dirs: &[&str]) -> Result<PathBuf, String> {
    let mut passed = Vec::new();
    for dir in dirs {
        let at = Path::new(dir).join(name);
        if std::fs::symlink_metadata(&at).is_err() {
            continue;
        }
        match trusted(&at) {
            Ok(p) => return Ok(p),
            Err(why) => passed.push(format!("{} is not run: {why}", at.display())),
        }
    }
    let mut msg = format!(
        "needs {name} in one of {}, installed by root (apt-get install {name}); \
         PATH is not searched, since a sandboxed command may have written a \
         directory on it",
        dirs.join(", ")
    );
    for p in passed {
        msg.push_str("; ");
        msg.push_str(&p);
    }
    Err(msg)
}

/// `at` without symlinks, if it is a root-owned executable that only root
/// can have changed or put there (the module's rule).
fn trusted(at: &Path) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(at).map_err(|e| format!("cannot resolve it: {e}"))?;
    let mut dir = PathBuf::from("/");
    let parents: Vec<_> = real
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .collect();
    for c in parents {
        dir.push(c);
        let m = std::fs::symlink_metadata(&dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if !m.is_dir() {
            return Err(format!("{} changed while it was checked", dir.display()));
        }
        if m.uid() != 0 {
            return Err(format!("{} is not owned by root", dir.display()));
        }
        if m.mode() & 0o022 != 0 && m.mode() & libc::S_ISVTX == 0 {
            return Err(format!(
                "{} is writable by users other than root",
                dir.display()
            ));
        }
    }
    let m = std::fs::symlink_metadata(&real)
        .map_err(|e| format!("cannot read {}: {e}", real.display()))?;
    if !m.is_file() {
        return Err(format!("{} is not a regular file", real.display()));
    }
    if m.uid() != 0 {
        return Err(format!("{} is not owned by root", real.display()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is writable by users other than root",
            real.display()
        ));
    }
    if m.mode() & 0o111 == 0 {
        return Err(format!("{} is not executable", real.display()));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A program (mode 0755) in a directory of its own (0755) under
    /// `/tmp` (sticky): root's where the test runs as root.
    fn tool_dir() -> tempfile::TempDir {
        let d = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        chmod(d.path(), 0o755);
        let t = d.path().join("tool");
        std::fs::write(&t, "#!/bin/sh\n").unwrap();
        chmod(&t, 0o755);
        d
    }

    #[test]
    fn a_system_program_is_found_by_its_real_path() {
        // Every Linux host has a root-owned shell under /bin or /usr/bin.
        let p = find("sh", SYSTEM_DIRS).unwrap();
        assert!(p.is_absolute());
        assert_eq!(p, std::fs::canonicalize(&p).unwrap());
    }

    #[test]
    fn absent_everywhere_names_the_directories() {
        let e = find("sbx-no-such-tool", &["/nonexistent", "/usr/bin"]).unwrap_err();
        assert!(e.contains("/nonexistent, /usr/bin"), "{e}");
        assert!(e.contains("PATH is not searched"), "{e}");
    }

    #[test]
    fn a_copy_a_user_could_write_is_passed_over() {
        let d = tool_dir();
        if is_root() {
            // Root's own directory passes; a user's does not.
            let dir = d.path().to_str().unwrap();
            assert!(find("tool", &[dir]).is_ok());
            std::os::unix::fs::lchown(d.path(), Some(65534), None).unwrap();
        }
        // Not root's (as a user, the test's own files never are).
        let dir = d.path().to_str().unwrap();
        let e = find("tool", &[dir]).unwrap_err();
        assert!(e.contains("is not owned by root"), "{e}");
    }

    #[test]
    fn group_or_world_write_anywhere_above_is_refused_unless_sticky() {
        if !is_root() {
            return;
        }
        let d = tool_dir();
        let dir = d.path().to_str().unwrap().to_string();
        let t = d.path().join("tool");
        chmod(&t, 0o775);
        let e = find("tool", &[&dir]).unwrap_err();
        assert!(
            e.contains("tool is writable by users other than root"),
            "{e}"
        );
        chmod(&t, 0o755);
        chmod(d.path(), 0o777);
        let e = find("tool", &[&dir]).unwrap_err();
        assert!(e.contains("writable by users other than root"), "{e}");
        // Sticky, like /tmp itself: only root may rename root's entry.
        chmod(d.path(), 0o1777);
        assert!(find("tool", &[&dir]).is_ok());
        chmod(&t, 0o644);
        let e = find("tool", &[&dir]).unwrap_err();
        assert!(e.contains("is not executable"), "{e}");
    }

    #[test]
    fn a_link_is_judged_where_it_leads() {
        if !is_root() {
            return;
        }
        let good = tool_dir();
        let bad = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        chmod(bad.path(), 0o755);
        let user = bad.path().join("user");
        std::fs::create_dir(&user).unwrap();
        std::fs::write(user.join("tool"), "#!/bin/sh\n").unwrap();
        chmod(&user.join("tool"), 0o755);
        std::os::unix::fs::lchown(&user, Some(65534), None).unwrap();
        let links = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        chmod(links.path(), 0o755);
        let l = links.path().join("tool");
        let dir = links.path().to_str().unwrap();
        // A root-owned link into a user's directory: refused.
        std::os::unix::fs::symlink(user.join("tool"), &l).unwrap();
        let e = find("tool", &[dir]).unwrap_err();
        assert!(e.contains("user is not owned by root"), "{e}");
        // Into root's: found, by the path it leads to.
        std::fs::remove_file(&l).unwrap();
        std::os::unix::fs::symlink(good.path().join("tool"), &l).unwrap();
        let real = std::fs::canonicalize(good.path().join("tool")).unwrap();
        assert_eq!(find("tool", &[dir]).unwrap(), real);
    }
}
