//! What each protected path is when the run starts, and whether it is
//! still that when the run has ended (docs/protected.md, "After the
//! run"). A name can be made to point at something else without
//! touching what it points to: renaming a directory above it (`mv .git
//! .git.orig && mv stash .git`) changes no time of the files inside. So
//! the check compares identities, not times: device, inode and type,
//! with an `O_PATH` descriptor held for the whole run so that the inode
//! number cannot be freed and reused meanwhile.

use super::beneath::{self, Tops};
use std::io;
use std::os::fd::OwnedFd;

/// What a protected path was at launch.
#[derive(Debug)]
pub enum Seen {
    /// Nothing was there (nor, perhaps, the directory above it).
    Absent,
    Object {
        dev: libc::dev_t,
        ino: libc::ino_t,
        /// `S_IFMT` bits.
        kind: u32,
        /// A symlink's target.
        target: Option<Vec<u8>>,
        /// When it was made (`statx`), where the filesystem keeps it: a
        /// record read back from the journal holds no descriptor, and an
        /// inode number freed meanwhile may name a newer object.
        birth: Option<(i64, u32)>,
        /// Held open so that (dev, ino) names this object all run long
        /// (none in a record read back from the journal).
        hold: Option<OwnedFd>,
    },
}

/// One protected path and what it was.
#[derive(Debug)]
pub struct Record {
    pub path: String,
    /// Index into the [`Tops`] it lies beneath.
    pub top: usize,
    pub rel: Vec<u8>,
    pub seen: Seen,
}

impl Record {
    /// The descriptor held on what the path was at launch, if any.
    pub fn held_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match &self.seen {
            Seen::Object { hold: Some(fd), .. } => Some(fd.as_raw_fd()),
            _ => None,
        }
    }
}

/// How a recorded path compares after the run.
#[derive(Debug, PartialEq, Eq)]
pub enum Now {
    /// The same object (or still nothing).
    Same,
    /// Something else is there: it moves aside.
    Other,
    /// Recorded as an object, nothing is there now: nothing runs from it.
    Gone,
    /// A symlink on the way where there was none: `rel` of the link, which
    /// moves aside (at launch the walk met none).
    LinkOnTheWay(Vec<u8>),
}

/// Record each of `paths`, beneath the outermost top through which it
/// is reached without crossing a mount. A path beneath no top, or with a
/// symlink or a mount above it at launch, is not recorded: nothing after
/// the run could reach it by the same walk.
pub fn record(tops: &Tops, paths: &[String]) -> Vec<Record> {
    let mut out = Vec::new();
    for path in paths {
        for (i, rel) in tops.holding(path) {
            if rel.is_empty() {
                continue;
            }
            let seen = match look(tops, i, rel.as_bytes()) {
                Ok(s) => s,
                Err(e) if e.raw_os_error() == Some(libc::EXDEV) => continue,
                Err(_) => break,
            };
            out.push(Record {
                path: path.clone(),
                top: i,
                rel: rel.as_bytes().to_vec(),
                seen,
            });
            break;
        }
    }
    out
}

fn look(tops: &Tops, top: usize, rel: &[u8]) -> io::Result<Seen> {
    let (fd, st) = match tops.get(top).lstat(rel) {
        Ok(x) => x,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Seen::Absent),
        Err(e) => return Err(e),
    };
    let kind = st.st_mode & libc::S_IFMT;
    let target = if kind == libc::S_IFLNK {
        Some(beneath::link_target(&fd)?)
    } else {
        None
    };
    Ok(Seen::Object {
        dev: st.st_dev,
        ino: st.st_ino,
        kind,
        target,
        birth: beneath::birth(&fd),
        hold: Some(fd),
    })
}

/// Compare `r` with what its path holds now.
pub fn compare(tops: &Tops, r: &Record) -> Now {
    let top = tops.get(r.top);
    let now = match top.lstat(&r.rel) {
        Ok((fd, st)) => Some((fd, st)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return match first_link(tops, r) {
                Some(l) => Now::LinkOnTheWay(l),
                None => Now::Other,
            };
        }
        // Anything else (a mount now on the way, a name too long): the
        // same walk cannot reach it, so it cannot be shown to be the same.
        Err(_) => return Now::Other,
    };
    match (&r.seen, now) {
        (Seen::Absent, None) => Now::Same,
        (Seen::Absent, Some(_)) => Now::Other,
        (Seen::Object { .. }, None) => Now::Gone,
        (
            Seen::Object {
                dev,
                ino,
                kind,
                target,
                birth,
                hold,
            },
            Some((fd, st)),
        ) => {
            let same_kind = st.st_mode & libc::S_IFMT == *kind;
            // Without a held descriptor the number may have been reused:
            // a birth time recorded must match too (held, it cannot be,
            // and no `statx` is spent per protection).
            let born_then = hold.is_some() || birth.is_none() || beneath::birth(&fd) == *birth;
            if same_kind && st.st_dev == *dev && st.st_ino == *ino && born_then {
                return Now::Same;
            }
            // A link made anew with the same target points where the
            // launch's did (a tool that rewrites its links).
            if same_kind
                && target.is_some()
                && beneath::link_target(&fd).ok().as_ref() == target.as_ref()
            {
                return Now::Same;
            }
            Now::Other
        }
    }
}

/// The first component of `r.rel` (its last excepted) that is a symlink now.
fn first_link(tops: &Tops, r: &Record) -> Option<Vec<u8>> {
    let top = tops.get(r.top);
    let mut prefix: Vec<u8> = Vec::new();
    let parts: Vec<&[u8]> = r.rel.split(|&b| b == b'/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        prefix = beneath::join(&prefix, part);
        let (_, st) = top.lstat(&prefix).ok()?;
        if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
            return Some(prefix);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn identities_not_times() {
        let t = std::env::temp_dir().join(format!("sbx-identity-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        for d in [
            "ws/.git/hooks",
            "ws/stash/hooks",
            "ws/tools/githooks",
            "out",
        ] {
            fs::create_dir_all(t.join(d)).unwrap();
        }
        fs::write(t.join("ws/.git/config"), "[core]\n").unwrap();
        fs::write(t.join("ws/stash/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        std::os::unix::fs::symlink(t.join("out"), t.join("ws/.vscode")).unwrap();
        std::os::unix::fs::symlink("nowhere", t.join("ws/.envrc")).unwrap();
        std::os::unix::fs::symlink("nowhere", t.join("ws/.idea")).unwrap();
        let p = |r: &str| t.join(r).to_str().unwrap().to_string();
        let tops = Tops::open(&[p("ws")]);
        let names = [
            "ws/.git/config",
            "ws/.git/hooks",
            "ws/.git/commondir",
            "ws/.vscode",
            "ws/.envrc",
            "ws/.idea",
            "ws/tools/githooks",
            "ws/.mcp.json",
        ];
        let paths: Vec<String> = names.iter().map(|n| p(n)).collect();
        let recs = record(&tops, &paths);
        assert_eq!(recs.len(), names.len());
        assert!(matches!(recs[2].seen, Seen::Absent));
        // The run: `.git` swapped for a stash by renames only (no time
        // of the files inside changes), the links replaced, one link
        // made anew with its old target, `tools` replaced by a symlink.
        fs::rename(t.join("ws/.git"), t.join("ws/.git.orig")).unwrap();
        fs::rename(t.join("ws/stash"), t.join("ws/.git")).unwrap();
        fs::remove_file(t.join("ws/.vscode")).unwrap();
        fs::create_dir(t.join("ws/.vscode")).unwrap();
        fs::remove_file(t.join("ws/.envrc")).unwrap();
        std::os::unix::fs::symlink("/elsewhere", t.join("ws/.envrc")).unwrap();
        fs::remove_file(t.join("ws/.idea")).unwrap();
        std::os::unix::fs::symlink("nowhere", t.join("ws/.idea")).unwrap();
        fs::rename(t.join("ws/tools"), t.join("ws/tools.old")).unwrap();
        std::os::unix::fs::symlink(t.join("ws/.git"), t.join("ws/tools")).unwrap();
        let got: Vec<Now> = recs.iter().map(|r| compare(&tops, r)).collect();
        assert_eq!(
            got,
            [
                Now::Other,
                Now::Other,
                Now::Same,
                Now::Other,
                Now::Other,
                Now::Same,
                Now::LinkOnTheWay(b"tools".to_vec()),
                Now::Same,
            ]
        );
        // Put back, each is itself again.
        fs::rename(t.join("ws/.git"), t.join("ws/stash")).unwrap();
        fs::rename(t.join("ws/.git.orig"), t.join("ws/.git")).unwrap();
        assert_eq!(compare(&tops, &recs[0]), Now::Same);
        assert_eq!(compare(&tops, &recs[1]), Now::Same);
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn paths_beneath_no_top_or_behind_a_link_are_not_recorded() {
        let t = std::env::temp_dir().join(format!("sbx-identity-no-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        fs::create_dir_all(t.join("ws")).unwrap();
        fs::create_dir_all(t.join("real/.git")).unwrap();
        std::os::unix::fs::symlink(t.join("real"), t.join("ws/lnk")).unwrap();
        let p = |r: &str| t.join(r).to_str().unwrap().to_string();
        let tops = Tops::open(&[p("ws")]);
        let recs = record(
            &tops,
            &[p("elsewhere/.git/config"), p("ws/lnk/.git/config")],
        );
        assert!(recs.is_empty(), "{recs:?}");
        fs::remove_dir_all(&t).unwrap();
    }
}
