//! `canonicalize`, as `std::fs::canonicalize` does it (`realpath(3)`),
//! into a buffer on the stack.
//!
//! Why: std passes no buffer, so `realpath` returns a copy made with
//! libc's `malloc`. In the static musl build that allocator maps a page
//! for the copy and unmaps it when std frees it: an `mmap`, a page
//! fault and an `munmap` per call (a TLB flush on the other core once
//! sbx has threads), and `sbx run` canonicalises about ten paths. With a
//! buffer `realpath` copies into it and allocates nothing. The answer
//! is the same: the same function resolves the path.

use std::io;
use std::path::{Path, PathBuf};

/// The absolute path of `path` with every symlink, `.` and `..`
/// resolved; an error where `std::fs::canonicalize` gives one.
pub fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    imp(path.as_ref())
}

#[cfg(unix)]
fn imp(path: &Path) -> io::Result<PathBuf> {
    use std::ffi::{CStr, CString, OsStr};
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut buf = [0 as libc::c_char; libc::PATH_MAX as usize];
    // SAFETY: `buf` holds PATH_MAX bytes, as realpath(3) needs of a
    // buffer it is given; `c` is NUL-terminated.
    let out = unsafe { libc::realpath(c.as_ptr(), buf.as_mut_ptr()) };
    if out.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: realpath wrote a NUL-terminated path into `buf`.
    let bytes = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes();
    Ok(PathBuf::from(OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
fn imp(path: &Path) -> io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// What std says, for links, `..`, absent paths and errors.
    #[test]
    fn as_std() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir(d.join("a")).unwrap();
        std::fs::write(d.join("a/f"), "").unwrap();
        std::os::unix::fs::symlink("a", d.join("l")).unwrap();
        std::os::unix::fs::symlink(d.join("l/f"), d.join("abs")).unwrap();
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();
        for p in [
            "a", "l", "l/f", "l/../l/f", "abs", "a/f/", "absent", "loop", "dangling", "a/f/x", "",
        ] {
            let p = d.join(p);
            let (ours, std) = (canonicalize(&p), std::fs::canonicalize(&p));
            match (&ours, &std) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", p.display()),
                (Err(a), Err(b)) => {
                    assert_eq!(a.raw_os_error(), b.raw_os_error(), "{}", p.display())
                }
                _ => panic!("{}: {ours:?} against {std:?}", p.display()),
            }
        }
        assert_eq!(
            canonicalize(d.join("l/f")).unwrap(),
            std::fs::canonicalize(d).unwrap().join("a/f")
        );
        assert!(canonicalize("nul\0in").is_err());
        let long = "x/".repeat(3000);
        assert!(canonicalize(d.join(long)).is_err());
    }
}
