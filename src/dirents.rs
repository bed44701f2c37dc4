//! Directory listings, read on Linux with `getdents64` into a buffer of
//! sbx's own rather than through libc's `DIR`.
//!
//! Why not `std::fs::read_dir` there: in the static musl build (the one
//! `sbx run` is measured with) `opendir` takes its 2 KiB `DIR` from
//! musl's own allocator, which maps a fresh page group for it and unmaps
//! it at `closedir`. Each listing then costs an `mmap`, page faults and
//! an `munmap`, and once sbx has threads an `munmap` also interrupts the
//! other core to flush its TLB. A run lists a dozen directories or more
//! (the after-run work, the caches, lowering a policy). Here the buffer
//! comes from the Rust allocator, which keeps its pages; and the parser
//! of the kernel's records is a pure function, so that the helpers that
//! may only make system calls (`runtime/linux/clearing.rs`) share it
//! with a buffer on their stack.
//!
//! Elsewhere this is `std::fs::read_dir` under the same names.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// What a listing says an entry is, without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    Symlink,
    /// A regular file, a device, a FIFO or a socket.
    Other,
    /// The file system did not say (`DT_UNKNOWN`): [`Entry::kind`] asks.
    Unknown,
}

impl From<std::fs::FileType> for Kind {
    fn from(t: std::fs::FileType) -> Kind {
        if t.is_dir() {
            Kind::Dir
        } else if t.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Other
        }
    }
}

/// One entry of a listing (never `.` or `..`).
#[derive(Debug)]
pub struct Entry {
    path: PathBuf,
    kind: Kind,
}

impl Entry {
    /// The directory's path joined with the entry's name.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn into_path(self) -> PathBuf {
        self.path
    }

    pub fn file_name(&self) -> &OsStr {
        // Always set: the path is the directory joined with a name that
        // is neither empty, `.` nor `..`.
        self.path.file_name().unwrap_or_default()
    }

    /// What the entry is, not following a symlink: the listing's word,
    /// or an `lstat` where the file system gave none.
    pub fn kind(&self) -> io::Result<Kind> {
        if self.kind != Kind::Unknown {
            return Ok(self.kind);
        }
        Ok(std::fs::symlink_metadata(&self.path)?.file_type().into())
    }

    pub fn is_dir(&self) -> bool {
        self.kind().is_ok_and(|k| k == Kind::Dir)
    }

    pub fn is_symlink(&self) -> bool {
        self.kind().is_ok_and(|k| k == Kind::Symlink)
    }

    /// The entry's metadata, not following a symlink (as
    /// `std::fs::DirEntry::metadata`).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        std::fs::symlink_metadata(&self.path)
    }
}

/// The entries of `dir` (a symlink to a directory is followed, as with
/// `std::fs::read_dir`), in the order the file system gives them.
pub fn read_dir(dir: impl AsRef<Path>) -> io::Result<ReadDir> {
    imp::read_dir(dir.as_ref())
}

pub use imp::ReadDir;

#[cfg(target_os = "linux")]
pub use imp::{getdents, records, ReadDirFd};

#[cfg(target_os = "linux")]
mod imp {
    use super::{Entry, Kind};
    use std::ffi::CStr;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    /// Bytes read per `getdents64`: the directories sbx lists mostly fit
    /// in one call.
    const BUF: usize = 4096;

    /// Fill `buf` with the next records of the open directory `fd`: how
    /// many bytes, 0 at the end. A system call only: no allocation, so
    /// that helpers sharing sbx's memory may call it.
    pub fn getdents(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }

    /// The entries of records `getdents` filled in: each name with its
    /// `d_type`, `.` and `..` left out. Stops at a record that does not
    /// fit (none does, from the kernel).
    pub fn records(buf: &[u8]) -> impl Iterator<Item = (&CStr, u8)> {
        let mut at = 0;
        std::iter::from_fn(move || {
            let (start, end, t, next) = next_record(buf, at)?;
            at = next;
            // The name's NUL is at `end`.
            Some((CStr::from_bytes_with_nul(&buf[start..=end]).ok()?, t))
        })
    }

    /// The first record at or after `at` whose name is not `.` or `..`:
    /// where its name starts and ends (at its NUL), its `d_type`, and
    /// where the next record starts.
    fn next_record(buf: &[u8], mut at: usize) -> Option<(usize, usize, u8, usize)> {
        loop {
            // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2),
            // d_type (1), then the name, NUL-terminated.
            let head = buf.get(at..at + 19)?;
            let len = usize::from(u16::from_ne_bytes([head[16], head[17]]));
            let t = head[18];
            let rec = buf.get(at..at + len).filter(|_| len > 19)?;
            let start = at + 19;
            let end = start + rec[19..].iter().position(|&b| b == 0)?;
            at += len;
            if !matches!(&buf[start..end], b"." | b"..") {
                return Some((start, end, t, at));
            }
        }
    }

    fn kind(d_type: u8) -> Kind {
        match d_type {
            libc::DT_DIR => Kind::Dir,
            libc::DT_LNK => Kind::Symlink,
            libc::DT_UNKNOWN => Kind::Unknown,
            _ => Kind::Other,
        }
    }

    /// The names and `d_type`s of an open directory's entries, read into
    /// one buffer of sbx's.
    pub struct ReadDirFd {
        fd: OwnedFd,
        buf: Vec<u8>,
        len: usize,
        at: usize,
        done: bool,
    }

    impl ReadDirFd {
        pub fn new(fd: OwnedFd) -> ReadDirFd {
            ReadDirFd {
                fd,
                buf: vec![0; BUF],
                len: 0,
                at: 0,
                done: false,
            }
        }

        /// The next entry's name and `d_type`; `None` at the end, and
        /// after an error.
        pub fn next_entry(&mut self) -> Option<io::Result<(&[u8], u8)>> {
            loop {
                if self.done {
                    return None;
                }
                if let Some((start, end, t, next)) = next_record(&self.buf[..self.len], self.at) {
                    self.at = next;
                    return Some(Ok((&self.buf[start..end], t)));
                }
                match getdents(self.fd.as_raw_fd(), &mut self.buf) {
                    Ok(0) => self.done = true,
                    Ok(n) => (self.len, self.at) = (n, 0),
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    /// A directory's entries, as `std::fs::ReadDir` gives them.
    pub struct ReadDir {
        dir: PathBuf,
        inner: ReadDirFd,
    }

    pub fn read_dir(dir: &Path) -> io::Result<ReadDir> {
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a plain open of a NUL-terminated path.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ReadDir {
            dir: dir.to_path_buf(),
            // SAFETY: `fd` was just opened and is owned by nothing else.
            inner: ReadDirFd::new(unsafe { OwnedFd::from_raw_fd(fd) }),
        })
    }

    impl Iterator for ReadDir {
        type Item = io::Result<Entry>;

        fn next(&mut self) -> Option<io::Result<Entry>> {
            let (name, t) = match self.inner.next_entry()? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            Some(Ok(Entry {
                path: self.dir.join(std::ffi::OsStr::from_bytes(name)),
                kind: kind(t),
            }))
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Entry, Kind};
    use std::io;
    use std::path::Path;

    pub struct ReadDir(std::fs::ReadDir);

    pub fn read_dir(dir: &Path) -> io::Result<ReadDir> {
        std::fs::read_dir(dir).map(ReadDir)
    }

    impl Iterator for ReadDir {
        type Item = io::Result<Entry>;

        fn next(&mut self) -> Option<io::Result<Entry>> {
            let e = match self.0.next()? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            let kind = e.file_type().map_or(Kind::Unknown, Kind::from);
            Some(Ok(Entry {
                path: e.path(),
                kind,
            }))
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStrExt;

    fn std_listing(dir: &Path) -> BTreeMap<OsString, Kind> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), e.file_type().unwrap().into())
            })
            .collect()
    }

    /// The same names and kinds as `std::fs::read_dir`, across several
    /// `getdents64` calls (a thousand long names), for odd names too.
    #[test]
    fn lists_what_std_lists() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        for i in 0..1000 {
            std::fs::write(d.join(format!("file-with-a-long-name-{i:04}")), "").unwrap();
        }
        std::fs::create_dir(d.join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", d.join("link")).unwrap();
        std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();
        std::fs::write(d.join(OsStr::from_bytes(b"not-utf8-\xff")), "").unwrap();
        std::fs::write(d.join("new\nline"), "").unwrap();
        let ours: BTreeMap<OsString, Kind> = read_dir(d)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                assert_eq!(e.path().parent(), Some(d));
                (e.file_name().to_os_string(), e.kind().unwrap())
            })
            .collect();
        assert_eq!(ours.len(), 1005);
        assert_eq!(ours, std_listing(d));
        assert_eq!(ours[OsStr::new("sub")], Kind::Dir);
        assert_eq!(ours[OsStr::new("link")], Kind::Symlink);
        assert_eq!(ours[OsStr::new("dangling")], Kind::Symlink);
    }

    #[test]
    fn errors_as_std() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f");
        std::fs::write(&f, "").unwrap();
        let kind = |p: &Path| read_dir(p).err().and_then(|e| e.raw_os_error());
        assert_eq!(kind(&f), Some(libc::ENOTDIR));
        assert_eq!(kind(&t.path().join("absent")), Some(libc::ENOENT));
        assert!(read_dir(Path::new("nul\0in")).is_err());
        // `.` and `..` are left out.
        assert_eq!(read_dir(t.path()).unwrap().count(), 1);
        let e = t.path().join("empty");
        std::fs::create_dir(&e).unwrap();
        assert_eq!(read_dir(&e).unwrap().count(), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn records_stop_at_a_bad_one() {
        fn rec(name: &[u8], t: u8) -> Vec<u8> {
            let len = (19 + name.len() + 1).next_multiple_of(8);
            let mut r = vec![0u8; len];
            r[16..18].copy_from_slice(&(len as u16).to_ne_bytes());
            r[18] = t;
            r[19..19 + name.len()].copy_from_slice(name);
            r
        }
        let mut buf = [rec(b".", 4), rec(b"..", 4), rec(b"a", 8), rec(b"bc", 4)].concat();
        let names = |b: &[u8]| -> Vec<(Vec<u8>, u8)> {
            records(b)
                .map(|(n, t)| (n.to_bytes().to_vec(), t))
                .collect()
        };
        assert_eq!(names(&buf), [(b"a".to_vec(), 8), (b"bc".to_vec(), 4)]);
        // Cut short: the records before the cut only.
        assert_eq!(names(&buf[..buf.len() - 3]), [(b"a".to_vec(), 8)]);
        // A length of zero, or one shorter than the header, ends it.
        let at = buf.len() - rec(b"bc", 4).len();
        buf[at + 16..at + 18].copy_from_slice(&0u16.to_ne_bytes());
        assert_eq!(names(&buf), [(b"a".to_vec(), 8)]);
        buf[at + 16..at + 18].copy_from_slice(&19u16.to_ne_bytes());
        assert_eq!(names(&buf), [(b"a".to_vec(), 8)]);
        // A name without its NUL inside the record ends it too.
        let mut r = rec(b"abcd", 8);
        let n = r.len();
        r[19..n].fill(b'x');
        assert!(names(&r).is_empty());
    }
}
