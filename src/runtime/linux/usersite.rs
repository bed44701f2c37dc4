//! Python's user site after the run (docs/protected.md, "When home is
//! writable"). Python runs the `import` lines of every `*.pth` file in
//! `~/.local/lib/python3*/site-packages`, and `sitecustomize.py` and
//! `usercustomize.py` there, at each start: a command that writes one
//! runs code outside the sandbox later. They are not protected by name,
//! since `pip install --user -e .` writes a `.pth` file, so what the run
//! made or changed there is moved aside once it has ended, as
//! [`super::planted`] moves planted files: every file operation beneath
//! a writable tree's top ([`Tops`]), no symlink followed.

use super::beneath::{self, Tops};
use std::io;
use std::os::fd::OwnedFd;

/// A [`Snapshot`] in the journal: the top's index and `~/.local/lib`
/// beneath it; each file's path, device, inode and ctime.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Saved {
    at: Option<(usize, String)>,
    #[allow(clippy::type_complexity)]
    seen: Vec<(String, libc::dev_t, libc::ino_t, (i64, i64))>,
}

/// Where the user sites lie, relative to home.
const LIB: &[u8] = b".local/lib";

/// A file there that Python runs at start-up.
fn runs_at_start(name: &[u8]) -> bool {
    (name.ends_with(b".pth") && name.len() > 4)
        || name == b"sitecustomize.py"
        || name == b"usercustomize.py"
}

/// One such file as it was at launch.
#[derive(Debug)]
struct Seen {
    /// Relative to the top.
    rel: Vec<u8>,
    dev: libc::dev_t,
    ino: libc::ino_t,
    /// A write in place keeps the inode; it changes the ctime, which
    /// cannot be set back.
    ctime: (i64, i64),
    /// Held open so that (dev, ino) names this file all run long (none
    /// when read back from the journal: the ctime tells a newer file).
    hold: Option<OwnedFd>,
}

/// The user sites' start-up files at launch, beneath the top that holds
/// `~/.local/lib`; empty when no top does (the command cannot write
/// there).
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The top and `~/.local/lib` relative to it.
    at: Option<(usize, Vec<u8>)>,
    seen: Vec<Seen>,
}

impl Snapshot {
    /// Record the start-up files of each `python3*/site-packages` under
    /// `home`'s `.local/lib` that exists now. Those made during the run
    /// are found by listing again after it.
    pub fn take(tops: &Tops, home: &str) -> Snapshot {
        if home.is_empty() || home == "/" {
            return Snapshot::default();
        }
        // Tops are canonical paths; a home reached through a link is
        // looked for where it lies.
        let home = crate::canonical::canonicalize(home)
            .ok()
            .and_then(|p| p.to_str().map(String::from))
            .unwrap_or_else(|| home.to_string());
        let lib = format!("{home}/{}", String::from_utf8_lossy(LIB));
        let Some((top, rel)) = tops.reach(&lib) else {
            return Snapshot::default();
        };
        let t = tops.get(top);
        let mut seen = Vec::new();
        for file in start_up_files(t, &rel).unwrap_or_default() {
            if let Ok((fd, st)) = t.lstat(&file) {
                seen.push(Seen {
                    rel: file,
                    dev: st.st_dev,
                    ino: st.st_ino,
                    ctime: ctime(&st),
                    hold: Some(fd),
                });
            }
        }
        Snapshot {
            at: Some((top, rel)),
            seen,
        }
    }

    /// Once the run has ended: move aside each start-up file that is new
    /// or not what it was at launch; one warning each (and one where the
    /// user site cannot be listed beneath the top), to be written once
    /// every file is safe.
    pub fn sweep(&self, tops: &Tops, warnings: &mut Vec<String>) {
        let Some((top, lib)) = &self.at else {
            return;
        };
        let t = tops.get(*top);
        let files = match start_up_files(t, lib) {
            Ok(f) => f,
            Err((dir, e)) => {
                warnings.push(format!(
                    "sbx: warning: Python's user site {} could not be checked after the run \
                     ({e}): review its .pth and *customize.py files before running Python",
                    t.show(&dir)
                ));
                return;
            }
        };
        for rel in files {
            if self.unchanged(tops, *top, &rel) {
                continue;
            }
            let path = t.show(&rel);
            warnings.push(match t.move_aside(&rel) {
                Ok(None) => continue,
                Ok(Some(to)) => format!(
                    "sbx: warning: the command created or changed {path}, in Python's user \
                     site (Python runs it at its next start, outside the sandbox): moved it to \
                     {to}. Review it, then rename it back"
                ),
                Err(e) => format!(
                    "sbx: warning: the command created or changed {path}, in Python's user \
                     site (Python runs it at its next start, outside the sandbox), and it could \
                     not be moved aside ({e}): review it before running Python"
                ),
            });
        }
    }

    /// As the journal keeps it.
    pub fn saved(&self) -> Saved {
        Saved {
            at: self
                .at
                .as_ref()
                .map(|(t, rel)| (*t, String::from_utf8_lossy(rel).into_owned())),
            seen: self
                .seen
                .iter()
                .map(|s| {
                    (
                        String::from_utf8_lossy(&s.rel).into_owned(),
                        s.dev,
                        s.ino,
                        s.ctime,
                    )
                })
                .collect(),
        }
    }

    /// The descriptors held on the files, in order (for a guardian's
    /// hand-over).
    pub fn held_fds(&self) -> Vec<Option<std::os::fd::RawFd>> {
        use std::os::fd::AsRawFd;
        self.seen
            .iter()
            .map(|s| s.hold.as_ref().map(|fd| fd.as_raw_fd()))
            .collect()
    }

    /// Read back from the journal, its top renumbered by `map` (the
    /// journal's tops opened again); nothing when that top is gone or a
    /// path is not a plain one beneath it. `holds`: descriptors still
    /// open on the files, in order (a guardian's hand-over), each kept
    /// only where it is still the recorded file.
    pub fn from_saved(
        s: Saved,
        map: &[Option<usize>],
        mut holds: Vec<Option<OwnedFd>>,
    ) -> Snapshot {
        let plain = |r: &str| beneath::normal(r.as_bytes()).as_deref() == Some(r.as_bytes());
        let Some((Some(top), lib)) = s.at.map(|(t, lib)| (map.get(t).copied().flatten(), lib))
        else {
            return Snapshot::default();
        };
        if !plain(&lib) || s.seen.iter().any(|(r, ..)| !plain(r)) {
            return Snapshot::default();
        }
        Snapshot {
            at: Some((top, lib.into_bytes())),
            seen: s
                .seen
                .into_iter()
                .enumerate()
                .map(|(i, (rel, dev, ino, ctime))| Seen {
                    rel: rel.into_bytes(),
                    dev,
                    ino,
                    ctime,
                    hold: holds
                        .get_mut(i)
                        .and_then(Option::take)
                        .filter(|fd| super::handover::is(fd, dev, ino)),
                })
                .collect(),
        }
    }

    fn unchanged(&self, tops: &Tops, top: usize, rel: &[u8]) -> bool {
        let Some(s) = self.seen.iter().find(|s| s.rel == rel) else {
            return false;
        };
        match tops.get(top).lstat(rel) {
            Ok((_, st)) => st.st_dev == s.dev && st.st_ino == s.ino && ctime(&st) == s.ctime,
            Err(_) => false,
        }
    }
}

// Seconds and nanoseconds as i64 on every target: libc deprecates its
// `time_t` alias for musl, where the type itself is 64-bit already.
#[allow(clippy::unnecessary_cast)]
fn ctime(st: &libc::stat) -> (i64, i64) {
    (st.st_ctime as i64, st.st_ctime_nsec as i64)
}

/// The start-up files in every `python3*/site-packages` below `lib`
/// (relative to `top`), sorted. A directory that is not there is
/// skipped; one that cannot be listed (a symlink put on the way, which
/// the walk does not follow) is the error, with its path.
fn start_up_files(top: &beneath::Top, lib: &[u8]) -> Result<Vec<Vec<u8>>, (Vec<u8>, io::Error)> {
    let absent = |e: &io::Error| e.raw_os_error() == Some(libc::ENOENT);
    let versions = match top.list(lib) {
        Ok(v) => v,
        Err(e) if absent(&e) => return Ok(Vec::new()),
        Err(e) => return Err((lib.to_vec(), e)),
    };
    let mut out = Vec::new();
    for v in versions.iter().filter(|v| v.starts_with(b"python3")) {
        let site = beneath::join(&beneath::join(lib, v), b"site-packages");
        let names = match top.list(&site) {
            Ok(n) => n,
            Err(e) if absent(&e) || e.raw_os_error() == Some(libc::ENOTDIR) => continue,
            Err(e) => return Err((site, e)),
        };
        for n in names.iter().filter(|n| runs_at_start(n)) {
            out.push(beneath::join(&site, n));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::Path;

    fn write(p: &Path, text: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn what_the_run_made_or_changed_moves_aside() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let site = home.join(".local/lib/python3.12/site-packages");
        write(&site.join("keep.pth"), "/opt/lib\n");
        write(&site.join("swapped.pth"), "/opt/lib\n");
        write(&site.join("edited.pth"), "/opt/lib\n");
        write(&site.join("pkg/__init__.py"), "");
        let tops = Tops::open(&[home.to_str().unwrap().to_string()]);
        let snap = Snapshot::take(&tops, home.to_str().unwrap());
        assert_eq!(snap.seen.len(), 3, "{snap:#?}");
        // The run: new files, one replaced by a rename, one written in
        // place, a new Python's site made, a module that is no start-up
        // file.
        write(&site.join("evil.pth"), "import os\n");
        write(&site.join("sitecustomize.py"), "import os\n");
        write(&site.join("new"), "import os\n");
        fs::rename(site.join("new"), site.join("swapped.pth")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(site.join("edited.pth"))
            .unwrap();
        std::io::Write::write_all(&mut f, b"import os\n").unwrap();
        drop(f);
        let other = home.join(".local/lib/python3.13/site-packages");
        write(&other.join("usercustomize.py"), "import os\n");
        write(&site.join("pkg/mod.py"), "x = 1\n");
        let mut warnings = Vec::new();
        snap.sweep(&tops, &mut warnings);
        for gone in ["evil.pth", "sitecustomize.py", "swapped.pth", "edited.pth"] {
            assert!(!site.join(gone).exists(), "{gone}: {warnings:#?}");
            assert!(site.join(format!("{gone}.sbx-blocked")).exists(), "{gone}");
        }
        assert!(!other.join("usercustomize.py").exists());
        assert!(site.join("keep.pth").exists());
        assert!(site.join("pkg/mod.py").exists());
        assert_eq!(warnings.len(), 5, "{warnings:#?}");
        let evil = site.join("evil.pth");
        assert!(
            warnings.iter().any(|w| w.contains(&format!(
                "the command created or changed {}, in Python's user site (Python runs it at \
                 its next start",
                evil.display()
            ))),
            "{warnings:#?}"
        );
        // Nothing more the second time.
        let mut again = Vec::new();
        Snapshot::take(&tops, home.to_str().unwrap()).sweep(&tops, &mut again);
        assert!(again.is_empty(), "{again:#?}");
    }

    #[test]
    fn a_user_site_made_in_the_run_and_no_top() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let tops = Tops::open(&[home.to_str().unwrap().to_string()]);
        let snap = Snapshot::take(&tops, home.to_str().unwrap());
        let site = home.join(".local/lib/python3.12/site-packages");
        write(&site.join("evil.pth"), "import os\n");
        let mut warnings = Vec::new();
        snap.sweep(&tops, &mut warnings);
        assert!(site.join("evil.pth.sbx-blocked").exists(), "{warnings:#?}");
        // Home beneath no top: the command could not write there.
        write(&site.join("other.pth"), "import os\n");
        let none = Tops::open(&[t.path().join("elsewhere").to_str().unwrap().to_string()]);
        let snap = Snapshot::take(&none, home.to_str().unwrap());
        let mut warnings = Vec::new();
        snap.sweep(&none, &mut warnings);
        assert!(warnings.is_empty());
        assert!(site.join("other.pth").exists());
    }

    /// A symlink put on the way is not followed: the site behind it is
    /// left alone, and the run says it could not check.
    #[test]
    fn a_link_on_the_way_is_said_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let outside = t.path().join("outside/python3.12/site-packages");
        write(&outside.join("theirs.pth"), "/opt\n");
        fs::create_dir_all(home.join(".local")).unwrap();
        let tops = Tops::open(&[home.to_str().unwrap().to_string()]);
        let snap = Snapshot::take(&tops, home.to_str().unwrap());
        std::os::unix::fs::symlink(t.path().join("outside"), home.join(".local/lib")).unwrap();
        let mut warnings = Vec::new();
        snap.sweep(&tops, &mut warnings);
        assert!(outside.join("theirs.pth").exists());
        assert_eq!(warnings.len(), 1, "{warnings:#?}");
        assert!(
            warnings[0].contains("could not be checked after the run"),
            "{warnings:#?}"
        );
    }
}
