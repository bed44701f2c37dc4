//! File operations after the run, inside the writable trees only
//! (docs/protected.md, "After the run"). Each writable tree's top is
//! opened when the run starts; afterwards every path is resolved beneath
//! one of those descriptors with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV)`, and every rename happens
//! inside a directory opened so. The command can put a symlink, a `..`
//! or a submodule entry anywhere in the tree: none of them makes sbx
//! look at, or move, anything outside a top.

use super::kernel;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use kernel::{RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, RESOLVE_NO_XDEV};

/// `rel` beneath the directory `top` (absolute), as one path.
pub fn show_in(top: &str, rel: &[u8]) -> String {
    let rel = String::from_utf8_lossy(rel);
    match (top, rel.is_empty()) {
        (p, true) => p.to_string(),
        ("/", false) => format!("/{rel}"),
        (p, false) => format!("{p}/{rel}"),
    }
}

/// When the object behind `fd` was made, if the filesystem keeps it
/// (`statx` with `STATX_BTIME`; not every libc sbx builds with has it,
/// so the system call is made directly).
pub fn birth(fd: &OwnedFd) -> Option<(i64, u32)> {
    const STATX_BTIME: u32 = 0x800;
    // struct statx is 256 bytes; stx_mask is at 0, stx_btime at 80.
    let mut buf = [0u64; 32];
    let empty = c"";
    // SAFETY: a valid descriptor, an empty path with AT_EMPTY_PATH and a
    // buffer of struct statx's size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_statx,
            fd.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            STATX_BTIME,
            buf.as_mut_ptr(),
        )
    };
    let mask = buf[0] as u32;
    if r != 0 || mask & STATX_BTIME == 0 {
        return None;
    }
    Some((buf[10] as i64, buf[11] as u32))
}

/// First name tried for a moved-aside path; when it is taken, a random
/// suffix follows it ([`aside_name`]).
pub const SUFFIX: &str = ".sbx-blocked";

/// A writable tree's top, opened when the run starts.
#[derive(Debug)]
pub struct Top {
    pub path: String,
    fd: OwnedFd,
}

/// Every top, sorted: a top comes before those inside it.
#[derive(Debug, Default)]
pub struct Tops(Vec<Top>);

impl Tops {
    /// Open `dirs` (the writable rules' paths, and the directory above
    /// any protected path no rule covers) through no symlink; a path
    /// that is not a directory, or cannot be opened, is no top.
    pub fn open(dirs: &[String]) -> Tops {
        let mut dirs: Vec<&String> = dirs.iter().collect();
        dirs.sort();
        dirs.dedup();
        let mut out: Vec<Top> = Vec::new();
        for d in dirs {
            let Ok(o) = kernel::open_path(d) else {
                continue;
            };
            if o.is_dir {
                out.push(Top {
                    path: d.clone(),
                    fd: o.handle.into(),
                });
            }
        }
        Tops(out)
    }

    /// The tops that hold `path`, outermost first, each with the path
    /// relative to it ("" for the top itself).
    pub fn holding<'a>(&'a self, path: &'a str) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        self.0.iter().enumerate().filter_map(move |(i, t)| {
            if path == t.path {
                return Some((i, ""));
            }
            let rest = path.strip_prefix(t.path.as_str())?;
            let rest = if t.path == "/" {
                rest
            } else {
                rest.strip_prefix('/')?
            };
            Some((i, rest))
        })
    }

    /// The outermost top through which `path` is reached without
    /// crossing a mount, with the path relative to it.
    pub fn reach(&self, path: &str) -> Option<(usize, Vec<u8>)> {
        self.holding(path)
            .find(|&(i, rel)| {
                !matches!(self.0[i].lstat(rel.as_bytes()), Err(e) if e.raw_os_error() == Some(libc::EXDEV))
            })
            .map(|(i, rel)| (i, rel.as_bytes().to_vec()))
    }

    pub fn get(&self, i: usize) -> &Top {
        &self.0[i]
    }

    pub fn all(&self) -> &[Top] {
        &self.0
    }

    /// Open again tops recorded by an earlier run as (path, device,
    /// inode): a top that is gone, or is another directory now, is `None`
    /// in the returned map (old index to new), and nothing beneath it is
    /// touched.
    pub fn reopen(saved: &[(String, libc::dev_t, libc::ino_t)]) -> (Tops, Vec<Option<usize>>) {
        Tops::checked(saved, |path| {
            kernel::open_path(path)
                .ok()
                .filter(|o| o.is_dir)
                .map(|o| o.handle.into())
        })
    }

    /// The tops recorded as `saved`, from descriptors still open on them
    /// (`fds`, in the same order: a guardian's hand-over, where a top
    /// renamed since launch is still the top). Each must still be the
    /// recorded directory, as in [`Tops::reopen`].
    pub fn adopt(
        saved: &[(String, libc::dev_t, libc::ino_t)],
        fds: Vec<Option<OwnedFd>>,
    ) -> (Tops, Vec<Option<usize>>) {
        let mut fds = fds.into_iter();
        Tops::checked(saved, |_| fds.next().flatten())
    }

    fn checked(
        saved: &[(String, libc::dev_t, libc::ino_t)],
        mut open: impl FnMut(&str) -> Option<OwnedFd>,
    ) -> (Tops, Vec<Option<usize>>) {
        let mut out = Vec::new();
        let mut map = Vec::new();
        for (path, dev, ino) in saved {
            let top = open(path).and_then(|fd| {
                let st = fstat(&fd).ok()?;
                (st.st_mode & libc::S_IFMT == libc::S_IFDIR
                    && st.st_dev == *dev
                    && st.st_ino == *ino)
                    .then(|| Top {
                        path: path.clone(),
                        fd,
                    })
            });
            map.push(top.map(|t| {
                out.push(t);
                out.len() - 1
            }));
        }
        (Tops(out), map)
    }
}

impl Top {
    /// The descriptor held on the top (for a guardian's hand-over).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }

    /// (device, inode) of the top, as the journal records it.
    pub fn identity(&self) -> io::Result<(libc::dev_t, libc::ino_t)> {
        let st = fstat(&self.fd)?;
        Ok((st.st_dev, st.st_ino))
    }

    /// `rel` beneath the top, for messages.
    pub fn show(&self, rel: &[u8]) -> String {
        show_in(&self.path, rel)
    }

    /// `openat2` beneath the top with `flags` (close-on-exec added):
    /// ELOOP for a symlink on the way (the last component too, unless
    /// `O_PATH | O_NOFOLLOW`), EXDEV for a mount or a `..` out of the top.
    pub fn open(&self, rel: &[u8], flags: i32) -> io::Result<OwnedFd> {
        let rel: &[u8] = if rel.is_empty() { b"." } else { rel };
        let c = CString::new(rel).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        kernel::openat2(
            self.fd.as_raw_fd(),
            &c,
            flags,
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV,
        )
    }

    /// What `rel` is, not following a final symlink.
    pub fn lstat(&self, rel: &[u8]) -> io::Result<(OwnedFd, libc::stat)> {
        let fd = self.open(rel, libc::O_PATH | libc::O_NOFOLLOW)?;
        let st = fstat(&fd)?;
        Ok((fd, st))
    }

    /// The names in directory `rel` (not `.` and `..`).
    pub fn list(&self, rel: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        Ok(self.list_typed(rel)?.into_iter().map(|(n, _)| n).collect())
    }

    /// [`Top::list`], each name with its `d_type` (`DT_UNKNOWN` where
    /// the file system does not say).
    pub fn list_typed(&self, rel: &[u8]) -> io::Result<Vec<(Vec<u8>, u8)>> {
        let fd = self.open(rel, libc::O_RDONLY | libc::O_DIRECTORY)?;
        let mut list = crate::dirents::ReadDirFd::new(fd);
        let mut names = Vec::new();
        while let Some(entry) = list.next_entry() {
            let (name, kind) = entry?;
            names.push((name.to_vec(), kind));
        }
        names.sort();
        Ok(names)
    }

    /// [`Top::list_typed`], and where the directory's mode does not let
    /// its owner read it (0111: git still goes through), with read and
    /// search given to its owner for the listing and the mode put back
    /// after, through a descriptor (never a symlink). Used before the
    /// command starts and once its tree has ended, so no process of the
    /// sandbox sees the moment.
    pub fn list_opening_up(&self, rel: &[u8]) -> io::Result<Vec<(Vec<u8>, u8)>> {
        match self.list_typed(rel) {
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                let fd = self.open(rel, libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY)?;
                let mode = fstat(&fd)?.st_mode & 0o7777;
                // A chmod by a user outside the group drops setgid: such
                // a directory is left as it is (and counted unswept).
                if mode & 0o7000 != 0 {
                    return Err(e);
                }
                // SAFETY: system calls on an open descriptor.
                if !unsafe { super::nofollow::chmod_fd(fd.as_raw_fd(), mode | 0o500) } {
                    return Err(e);
                }
                let listed = self.list_typed(rel);
                // SAFETY: as above.
                unsafe { super::nofollow::chmod_fd(fd.as_raw_fd(), mode) };
                listed
            }
            other => other,
        }
    }

    /// A regular file's bytes; `None` when it is larger than `max`.
    pub fn read(&self, rel: &[u8], max: u64) -> io::Result<Option<Vec<u8>>> {
        // Non-blocking: a FIFO put there opens at once, and is refused.
        let fd = self.open(rel, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY)?;
        let st = fstat(&fd)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        if st.st_size as u64 > max {
            return Ok(None);
        }
        let mut out = Vec::new();
        use std::io::Read;
        std::fs::File::from(fd).take(max).read_to_end(&mut out)?;
        Ok(Some(out))
    }

    /// Rename `rel` aside in its own directory ([`aside_name`]); the new
    /// path, or `None` when nothing is there.
    /// Take every permission off `rel` (mode 000), not through a
    /// symlink: where it cannot be moved aside (a full disk: the rename
    /// needs a new block in a directory the command packed), git, direnv
    /// and editors then cannot read it, and its owner can restore it.
    pub fn lock_out(&self, rel: &[u8]) -> io::Result<()> {
        let fd = self.open(rel, libc::O_PATH | libc::O_NOFOLLOW)?;
        // SAFETY: system calls on an open descriptor.
        if unsafe { super::nofollow::chmod_fd(fd.as_raw_fd(), 0) } {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub fn move_aside(&self, rel: &[u8]) -> io::Result<Option<String>> {
        let (dir, name) = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&rel[..0], rel),
        };
        if name.is_empty() {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let parent = match self.open(dir, libc::O_PATH | libc::O_DIRECTORY) {
            Ok(p) => p,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let from = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for attempt in 0..ATTEMPTS {
            let new = aside_name(name, attempt, random());
            let to = CString::new(new.as_slice())
                .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            match kernel::rename_noreplace(parent.as_fd(), &from, &to) {
                Ok(()) => {
                    let mut shown = dir.to_vec();
                    if !shown.is_empty() {
                        shown.push(b'/');
                    }
                    shown.extend_from_slice(&new);
                    return Ok(Some(self.show(&shown)));
                }
                Err(e) => last = e,
            }
            match last.raw_os_error() {
                Some(libc::EEXIST) => continue,
                Some(libc::ENOENT) => return Ok(None),
                _ => return Err(last),
            }
        }
        Err(last)
    }
}

/// Names tried before giving up: after the plain one, each a fresh
/// 64-bit random suffix, which no file made in advance can match.
const ATTEMPTS: u32 = 16;

/// The moved-aside name of `name`: `NAME.sbx-blocked` first, then
/// `NAME.sbx-blocked-<16 hex digits of random>`.
pub fn aside_name(name: &[u8], attempt: u32, random: u64) -> Vec<u8> {
    let mut out = name.to_vec();
    out.extend_from_slice(SUFFIX.as_bytes());
    if attempt > 0 {
        out.extend_from_slice(format!("-{random:016x}").as_bytes());
    }
    out
}

/// 64 bits from the kernel's random source (the clock and pid when it
/// fails: the suffix need only be unknown in advance, not secret).
fn random() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: an 8-byte buffer.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n == 8 {
        return u64::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64) ^ (u64::from(std::process::id()) << 32)
}

pub fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: a valid descriptor and a properly sized stat buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The target of the symlink `fd` (opened with `O_PATH | O_NOFOLLOW`).
pub fn link_target(fd: &OwnedFd) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: an empty path reads the link the descriptor refers to.
    let n = unsafe {
        libc::readlinkat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `a/b` from `a` and `b` ("" is the top).
pub fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    if a.is_empty() {
        return b.to_vec();
    }
    let mut out = a.to_vec();
    out.push(b'/');
    out.extend_from_slice(b);
    out
}

/// `rel` with `.` and `..` taken out, as the kernel walks it when no
/// symlink is on the way; `None` when it climbs above the top.
pub fn normal(rel: &[u8]) -> Option<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in rel.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarantine_names_do_not_run_out() {
        assert_eq!(aside_name(b"config", 0, 7), b"config.sbx-blocked");
        assert_eq!(
            aside_name(b"config", 1, 0xab),
            b"config.sbx-blocked-00000000000000ab"
        );
        let t = std::env::temp_dir().join(format!("sbx-beneath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("ws/.git")).unwrap();
        std::fs::write(t.join("ws/.git/config"), "planted").unwrap();
        // Decoys made in advance: every name a counter would try.
        std::fs::write(t.join("ws/.git/config.sbx-blocked"), "decoy").unwrap();
        for n in 2..=100 {
            std::fs::write(t.join(format!("ws/.git/config.sbx-blocked.{n}")), "d").unwrap();
        }
        let tops = Tops::open(&[t.join("ws").to_str().unwrap().to_string()]);
        let to = tops.get(0).move_aside(b".git/config").unwrap().unwrap();
        let prefix = t.join("ws/.git/config.sbx-blocked-");
        assert!(to.starts_with(prefix.to_str().unwrap()), "{to}");
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "planted");
        assert!(!t.join("ws/.git/config").exists());
        assert_eq!(tops.get(0).move_aside(b".git/config").unwrap(), None);
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn nothing_outside_the_top_is_reached() {
        let t = std::env::temp_dir().join(format!("sbx-beneath-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("ws/sub")).unwrap();
        std::fs::create_dir_all(t.join("other/.git")).unwrap();
        std::fs::write(t.join("other/.git/config"), "theirs").unwrap();
        std::os::unix::fs::symlink(t.join("other"), t.join("ws/lnk")).unwrap();
        let tops = Tops::open(&[t.join("ws").to_str().unwrap().to_string()]);
        let top = tops.get(0);
        let loop_ = Some(libc::ELOOP);
        let xdev = Some(libc::EXDEV);
        let err = |r: io::Result<Option<String>>| r.unwrap_err().raw_os_error();
        assert_eq!(err(top.move_aside(b"lnk/.git/config")), loop_);
        assert_eq!(err(top.move_aside(b"../other/.git/config")), xdev);
        assert_eq!(err(top.move_aside(b"sub/../../other/.git/config")), xdev);
        assert_eq!(err(top.move_aside(b"/other/.git/config")), xdev);
        assert!(t.join("other/.git/config").exists());
        // The link itself is inside, and moves as a link.
        let to = top.move_aside(b"lnk").unwrap().unwrap();
        assert!(std::fs::symlink_metadata(&to).unwrap().is_symlink());
        assert_eq!(normal(b"a/./b/../c"), Some(b"a/c".to_vec()));
        assert_eq!(normal(b"a/../../c"), None);
        std::fs::remove_dir_all(&t).unwrap();
    }
}
