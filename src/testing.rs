//! Helpers the unit tests of several layers share.

/// A FIFO at `path` (std's `mkfifo` is not stable yet).
#[cfg(unix)]
pub fn mkfifo(path: &std::path::Path, mode: libc::mode_t) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), mode) }, 0, "{path:?}");
}
