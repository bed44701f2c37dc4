//! An advisory lock beside the store, held while a writer re-reads and
//! replaces it. The OS releases it when the process dies, so a crashed
//! writer never leaves the store locked.

use camino::Utf8Path;
use std::fs::File;

pub struct Lock {
    // Held for its drop: closing the file releases the lock.
    _file: File,
}

impl Lock {
    /// Block until the lock is ours.
    #[cfg(unix)]
    pub fn acquire(path: &Utf8Path) -> std::io::Result<Lock> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        loop {
            // SAFETY: flock on a descriptor we own; no memory is involved.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(Lock { _file: file });
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Windows: an open with no sharing is exclusive until the handle
    /// closes; others retry until it is free.
    #[cfg(windows)]
    pub fn acquire(path: &Utf8Path) -> std::io::Result<Lock> {
        use std::os::windows::fs::OpenOptionsExt;
        const ERROR_SHARING_VIOLATION: i32 = 32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .share_mode(0)
                .open(path)
            {
                Ok(file) => return Ok(Lock { _file: file }),
                Err(e)
                    if e.raw_os_error() == Some(ERROR_SHARING_VIOLATION)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
    }
}
