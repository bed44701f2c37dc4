//! Protected paths (POLICY.md §7a) that did not exist at launch have
//! nothing to mount over, so the command can create them during the run.
//! Once the whole tree is gone, `sbx run` moves whatever was created
//! there aside (`NAME.sbx-blocked`), so nothing planted runs later
//! outside the sandbox: not a hook on the next commit, not an `.envrc`
//! on the next `cd`. It moves, never deletes: the user reviews the file
//! and renames it back (or names the path in a rule to allow it).

use super::kernel;
use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;

/// Suffix of a moved-aside path; `.2`, `.3`, … follow when it is taken.
pub const SUFFIX: &str = ".sbx-blocked";

/// Move aside each of `absent` that exists now; one stderr line each.
/// Called after the command's tree has ended, so nothing re-creates it.
pub fn move_aside(absent: &[String]) {
    for path in absent {
        match move_one(path) {
            Ok(None) => {}
            Ok(Some(to)) => eprintln!(
                "sbx: warning: the command created {path}, which the policy protects \
                 (it would run outside the sandbox later): moved it to {to}. Review it, \
                 then rename it back, or name the path in a rule to allow it"
            ),
            Err(e) => eprintln!(
                "sbx: warning: the command created {path}, which the policy protects, \
                 and it could not be moved aside ({e}): review it before running git, \
                 direnv or an editor there"
            ),
        }
    }
}

/// `Ok(None)` when `path` does not exist. The parent is opened through no
/// symlink, and the rename happens inside that directory: a symlink the
/// command put above the path cannot make sbx move a file elsewhere.
pub(super) fn move_one(path: &str) -> io::Result<Option<String>> {
    let (dir, name) = match path.rsplit_once('/') {
        Some(("", n)) => ("/", n),
        Some((d, n)) if !n.is_empty() => (d, n),
        _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
    };
    let parent = match kernel::open_path(dir) {
        Ok(p) => p.handle,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let from = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid directory descriptor, a NUL-terminated name and a
    // properly sized stat buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::fstatat(
            parent.as_raw_fd(),
            from.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::NotFound => Ok(None),
            _ => Err(e),
        };
    }
    for n in 1..=100 {
        let new = if n == 1 {
            format!("{name}{SUFFIX}")
        } else {
            format!("{name}{SUFFIX}.{n}")
        };
        let to =
            CString::new(new.as_str()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: as above; RENAME_NOREPLACE never overwrites a file. The
        // raw system call: musl's libc has no renameat2 wrapper.
        let r = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                parent.as_raw_fd(),
                from.as_ptr(),
                parent.as_raw_fd(),
                to.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r == 0 {
            return Ok(Some(format!("{dir}/{new}").replacen("//", "/", 1)));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_paths_are_moved_aside_not_followed() {
        let t = std::env::temp_dir().join(format!("sbx-planted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("ws/.vscode")).unwrap();
        std::fs::write(t.join("ws/.vscode/tasks.json"), "{}").unwrap();
        std::fs::write(t.join("ws/.envrc"), "x").unwrap();
        std::fs::write(t.join("ws/.envrc.sbx-blocked"), "older").unwrap();
        // A symlink above a protected path must not redirect the move.
        std::fs::create_dir_all(t.join("elsewhere/hooks")).unwrap();
        std::os::unix::fs::symlink(t.join("elsewhere"), t.join("ws/.git")).unwrap();
        let p = |r: &str| t.join(r).to_str().unwrap().to_string();

        assert_eq!(move_one(&p("ws/absent")).unwrap(), None);
        assert_eq!(move_one(&p("ws/none/x")).unwrap(), None);
        assert_eq!(
            move_one(&p("ws/.vscode")).unwrap(),
            Some(p("ws/.vscode.sbx-blocked"))
        );
        assert!(t.join("ws/.vscode.sbx-blocked/tasks.json").exists());
        assert_eq!(
            move_one(&p("ws/.envrc")).unwrap(),
            Some(p("ws/.envrc.sbx-blocked.2"))
        );
        assert_eq!(
            std::fs::read_to_string(t.join("ws/.envrc.sbx-blocked")).unwrap(),
            "older"
        );
        assert_eq!(
            move_one(&p("ws/.git/hooks")).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        assert!(t.join("elsewhere/hooks").exists());
        std::fs::remove_dir_all(&t).unwrap();
    }
}
