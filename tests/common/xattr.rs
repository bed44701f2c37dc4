//! A mark on a directory that a rename keeps and a new directory lacks
//! (an inode number does not tell: a directory made after removals may
//! get one just freed). Used by `tests/private_caches.rs` and by the
//! clearing helper's unit tests (`src/runtime/linux/clearing.rs`).

use std::ffi::CString;
use std::path::Path;

fn c(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// Set the extended attribute `user.sbx-test` of `dir` to `[n]`.
pub fn mark(dir: &Path, n: u8) {
    let p = c(dir);
    // SAFETY: NUL-terminated names and a one-byte value.
    let r = unsafe {
        libc::setxattr(
            p.as_ptr(),
            c"user.sbx-test".as_ptr(),
            [n].as_ptr().cast(),
            1,
            0,
        )
    };
    assert_eq!(
        r,
        0,
        "setxattr {}: {}",
        dir.display(),
        std::io::Error::last_os_error()
    );
}

/// The mark [`mark`] left on `dir`, if any.
pub fn marked(dir: &Path) -> Option<u8> {
    let p = c(dir);
    let mut v = [0u8; 1];
    // SAFETY: NUL-terminated names and a one-byte buffer.
    let r = unsafe {
        libc::getxattr(
            p.as_ptr(),
            c"user.sbx-test".as_ptr(),
            v.as_mut_ptr().cast(),
            1,
        )
    };
    (r == 1).then_some(v[0])
}
