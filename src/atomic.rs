//! Replacing a file so that a crash at any point leaves the old content or
//! the new, never a mix: write a temp file in the same directory, fsync,
//! rename over the target, fsync the directory.
//!
//! The temp file has one fixed name per target, claimed with `flock`, so
//! writers killed mid-write leave at most that one file behind (the next
//! writer reuses it) instead of one per process. A second writer while the
//! name is held (or a name someone else owns) gets a unique name instead.
//!
//! A symlink is followed to the file it names, so the link survives. A
//! device, pipe or socket (`-o /dev/null`, `-o /dev/stdout`, a FIFO) is
//! written in place: it holds no old content to protect, and renaming over
//! it would replace the node itself (as root: `/dev/null` with a regular
//! file, which then hands its content to every reader).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replace `path` with `bytes`; a new file gets `mode` (Unix permissions).
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut s = Staged::new(path, mode)?;
    s.write_all(bytes)?;
    s.commit()
}

/// Replace `path` with `bytes` through a temp file of this process and a
/// rename, without fsync: for small records a crash may lose (only work
/// is redone then), written on the way to a command's start, where an
/// fsync of the file and its directory would cost milliseconds. Two
/// writers at once each rename their own whole text. A symlink at `path`
/// is replaced, not followed.
pub fn replace_unsynced(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let (tmp, mut file) = unique(&parent(path), &name, mode)?;
    let done = file
        .write_all(bytes)
        .and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// A replacement being written: the temp file, which [`Staged::commit`]
/// renames over the target. Dropped uncommitted, it is removed. A device,
/// pipe or socket target is written directly instead.
pub struct Staged {
    path: PathBuf,
    /// `None`: writing in place (a device, pipe or socket).
    tmp: Option<PathBuf>,
    file: File,
    done: bool,
    /// Bytes written since writeback was last started (Linux).
    unsent: usize,
}

/// Writeback of a temp file is started every this many bytes, so that
/// the disk writes while the compile goes on and the fsync at commit
/// finds little left (at 10,000 rules it waited 25 ms for 27 MB).
#[cfg(target_os = "linux")]
const SEND_EVERY: usize = 4 << 20;

impl Staged {
    /// Start replacing `path`; a new file gets `mode` (Unix permissions).
    pub fn new(path: &Path, mode: u32) -> io::Result<Staged> {
        let path = follow(path)?;
        let dir = parent(&path);
        if let Ok(m) = std::fs::metadata(&path) {
            if !m.is_file() && !m.is_dir() {
                let file = OpenOptions::new().write(true).open(&path)?;
                return Ok(Staged {
                    path,
                    tmp: None,
                    file,
                    done: false,
                    unsent: 0,
                });
            }
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let fixed = dir.join(format!(".{name}.sbx.tmp"));
        let (tmp, file) = match claim(&fixed, mode)? {
            Some(f) => (fixed, f),
            None => unique(&dir, &name, mode)?,
        };
        Ok(Staged {
            path,
            tmp: Some(tmp),
            file,
            done: false,
            unsent: 0,
        })
    }

    /// Make what was written the content of the target.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(tmp) = self.tmp.clone() else {
            self.done = true;
            return self.file.flush();
        };
        self.file.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        self.done = true;
        // The rename itself must survive a crash too.
        #[cfg(unix)]
        File::open(parent(&self.path))?.sync_all()?;
        Ok(())
    }
}

/// A file to be replaced later, named now: its directory is held open
/// from [`Held::new`], so that whatever is renamed or swapped for a
/// symlink on the way to it meanwhile (by a command `sbx learn` ran in
/// between), the replacement lands in the directory that was there when
/// it was named, never where a swapped link leads. A symlink at the file
/// itself is followed when it is named (so the link survives) and
/// replaced, not followed, at the end; a device, pipe or socket is opened
/// when named and written in place.
#[cfg(unix)]
pub struct Held {
    dir: File,
    name: std::ffi::CString,
    in_place: Option<File>,
}

#[cfg(unix)]
impl Held {
    pub fn new(path: &Path) -> io::Result<Held> {
        use std::os::unix::ffi::OsStrExt;
        let path = follow(path)?;
        if let Ok(m) = std::fs::metadata(&path) {
            if !m.is_file() && !m.is_dir() {
                let file = OpenOptions::new().write(true).open(&path)?;
                return Ok(Held {
                    dir: File::open("/")?,
                    name: c"-".into(),
                    in_place: Some(file),
                });
            }
        }
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let name = std::ffi::CString::new(name.as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the name"))?;
        let dir = {
            use std::os::unix::fs::OpenOptionsExt;
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY)
                .open(parent(&path))?
        };
        Ok(Held {
            dir,
            name,
            in_place: None,
        })
    }

    /// Replace the file with `bytes` (a new file gets `mode`), in the held
    /// directory: a temp file made there (never through a symlink),
    /// synced, renamed over the name, the directory synced.
    pub fn replace(&self, bytes: &[u8], mode: u32) -> io::Result<()> {
        use std::os::fd::{AsRawFd, FromRawFd};
        if let Some(f) = &self.in_place {
            let mut f = f;
            f.write_all(bytes)?;
            return f.flush();
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tmp = std::ffi::CString::new(format!(".sbx.{}.{nanos}.tmp", std::process::id()))
            .expect("no NUL");
        let d = self.dir.as_raw_fd();
        // SAFETY: a C string for the name, a descriptor this value holds.
        let fd = unsafe {
            libc::openat(
                d,
                tmp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor, owned by nothing else.
        let mut file = unsafe { File::from_raw_fd(fd) };
        let done = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| {
                // SAFETY: C strings, descriptors this value holds.
                match unsafe { libc::renameat(d, tmp.as_ptr(), d, self.name.as_ptr()) } {
                    0 => Ok(()),
                    _ => Err(io::Error::last_os_error()),
                }
            });
        if done.is_err() {
            // SAFETY: as above.
            unsafe { libc::unlinkat(d, tmp.as_ptr(), 0) };
            return done;
        }
        self.dir.sync_all()
    }
}

/// The directory holding `path` (`.` for a bare name).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.unsent += n;
        #[cfg(target_os = "linux")]
        if self.unsent >= SEND_EVERY && self.tmp.is_some() {
            self.unsent = 0;
            use std::os::fd::AsRawFd;
            // Only starts writeback (it waits for nothing); the fsync at
            // commit still decides. An error here changes nothing.
            // SAFETY: a descriptor this value owns; no pointers.
            unsafe {
                libc::sync_file_range(self.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let (false, Some(tmp)) = (self.done, &self.tmp) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The file a symlink names (so the link survives), or `path` itself. A
/// dangling link is replaced, never written through: its target could be
/// anywhere.
fn follow(path: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match crate::canonical::canonicalize(path) {
            Ok(p) => Ok(p),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(path.to_path_buf()),
            Err(e) => Err(e),
        },
        _ => Ok(path.to_path_buf()),
    }
}

/// The fixed temp name, if no other writer holds it and it is ours.
#[cfg(unix)]
fn claim(p: &Path, mode: u32) -> io::Result<Option<File>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    for _ in 0..3 {
        let f = match OpenOptions::new()
            .write(true)
            .create(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(p)
        {
            Ok(f) => f,
            Err(_) => return Ok(None),
        };
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Ok(None); // another writer is at work
        }
        let held = f.metadata()?;
        // SAFETY: geteuid has no preconditions.
        if held.uid() != unsafe { libc::geteuid() } || held.nlink() != 1 || !held.is_file() {
            return Ok(None); // not a file of ours: never write through it
        }
        // Between open and flock the holder may have renamed this inode
        // over its target: then it is no longer the temp file.
        match std::fs::symlink_metadata(p) {
            Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => {
                // A leftover keeps its mode: never looser than asked.
                let perm = held.mode() & 0o7777;
                if perm & !mode != 0 {
                    use std::os::unix::fs::PermissionsExt;
                    f.set_permissions(std::fs::Permissions::from_mode(perm & mode))?;
                }
                f.set_len(0)?;
                return Ok(Some(f));
            }
            _ => continue,
        }
    }
    Ok(None)
}

#[cfg(not(unix))]
fn claim(_: &Path, _: u32) -> io::Result<Option<File>> {
    Ok(None)
}

fn unique(dir: &Path, name: &str, mode: u32) -> io::Result<(PathBuf, File)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let f = o.open(&tmp)?;
    Ok((tmp, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The directory named is the one written, even where it was renamed
    /// away and a symlink to another directory put in its place before the
    /// write; a symlink put at the file itself is replaced, not followed.
    #[cfg(unix)]
    #[test]
    fn a_held_file_is_written_where_it_was_named() {
        let d = tempfile::tempdir().unwrap();
        let (out, victim) = (d.path().join("out"), d.path().join("victim"));
        std::fs::create_dir(&out).unwrap();
        std::fs::create_dir(&victim).unwrap();
        let held = Held::new(&out.join("policy.toml")).unwrap();
        std::fs::rename(&out, d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        held.replace(b"text", 0o644).unwrap();
        assert_eq!(
            std::fs::read(d.path().join("moved/policy.toml")).unwrap(),
            b"text"
        );
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
        // At the name itself.
        let dir = d.path().join("moved");
        let held = Held::new(&dir.join("policy.toml")).unwrap();
        std::fs::remove_file(dir.join("policy.toml")).unwrap();
        std::os::unix::fs::symlink(victim.join("f"), dir.join("policy.toml")).unwrap();
        held.replace(b"again", 0o644).unwrap();
        assert!(!victim.join("f").exists());
        assert_eq!(std::fs::read(dir.join("policy.toml")).unwrap(), b"again");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    /// The unsynced replacement leaves the new text and no temp file, and
    /// replaces a symlink rather than the file it names.
    #[test]
    fn replaces_unsynced_without_leftovers() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("record.json");
        replace_unsynced(&p, b"old", 0o600).unwrap();
        replace_unsynced(&p, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        #[cfg(unix)]
        {
            let other = d.path().join("other");
            std::fs::write(&other, b"kept").unwrap();
            let link = d.path().join("link.json");
            std::os::unix::fs::symlink(&other, &link).unwrap();
            replace_unsynced(&link, b"text", 0o600).unwrap();
            assert_eq!(std::fs::read(&other).unwrap(), b"kept");
            assert!(!std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
        }
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
            "{names:?}"
        );
    }

    #[test]
    fn replaces_and_reuses_one_temp_name() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.json");
        replace(&p, b"old", 0o644).unwrap();
        // A writer killed mid-write left the fixed temp behind, half full.
        std::fs::write(d.path().join(".out.json.sbx.tmp"), b"half of a longer text").unwrap();
        replace(&p, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(
                mode & !0o600,
                0,
                "a leftover's looser mode survived: {mode:o}"
            );
        }
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_pipes_are_written_in_place_and_links_followed() {
        use std::os::unix::fs::FileTypeExt;
        let d = tempfile::tempdir().unwrap();
        // A FIFO (what `-o /dev/stdout` is under a pipe): still a FIFO
        // afterwards, and the reader got the bytes.
        let fifo = d.path().join("fifo");
        crate::testing::mkfifo(&fifo, 0o600);
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let fifo = fifo.clone();
            std::thread::spawn(move || tx.send(std::fs::read(fifo).unwrap()));
        }
        // Through a symlink, as /dev/stdout -> /proc/self/fd/1 is.
        let link = d.path().join("stdout");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        replace(&link, b"through the pipe", 0o644).unwrap();
        // A reader never fed means the FIFO was replaced: fail, not hang.
        let got = rx.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(got.unwrap(), b"through the pipe");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        // A null device node of our own (mknod needs root: CI and this
        // machine run as root; elsewhere the FIFO case covers the path).
        let null = d.path().join("null");
        let c = std::ffi::CString::new(null.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; makedev of /dev/null's numbers.
        if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
            replace(&null, b"gone", 0o644).unwrap();
            let m = std::fs::symlink_metadata(&null).unwrap();
            assert!(m.file_type().is_char_device(), "{m:?}");
        }
        // A link to a regular file: the file is replaced, the link stays.
        let real = d.path().join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let alias = d.path().join("alias.json");
        std::os::unix::fs::symlink(&real, &alias).unwrap();
        replace(&alias, b"new", 0o644).unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(&alias)
            .unwrap()
            .file_type()
            .is_symlink());
        // A dangling link is replaced by the file; its target is not made.
        let dangling = d.path().join("dangling");
        let nowhere = d.path().join("nowhere");
        std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
        replace(&dangling, b"here", 0o644).unwrap();
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_file());
        assert!(!nowhere.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_held_or_foreign_temp_name_is_not_written_through() {
        use std::os::fd::AsRawFd;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        let fixed = d.path().join(".out.sbx.tmp");
        // Another writer holds the name: this one takes a unique name.
        let other = File::create(&fixed).unwrap();
        // SAFETY: flock on a descriptor we own.
        assert_eq!(unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX) }, 0);
        replace(&p, b"one", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        assert_eq!(std::fs::read(&fixed).unwrap(), b"");
        drop(other);
        // A symlink planted at the name is never followed.
        std::fs::remove_file(&fixed).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, &fixed).unwrap();
        replace(&p, b"two", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }
}
