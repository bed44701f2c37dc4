//! Where the symlinks of a PATH directory lead, and a record of it kept
//! between runs.
//!
//! Resolving every link of `/usr/bin` costs a `readlink` or `lstat` per
//! link and per directory on the way: on this kind of machine a few
//! milliseconds of each `sbx run POLICY`. The answer changes only when
//! an entry of a directory looked at changes, and that changes the
//! directory's modification time. So the record keeps, per PATH
//! directory, the directories its links lead to together with the
//! identity and times of every directory the resolution read (the
//! "stamps"); a run re-reads only those stamps and scans again where
//! one differs.
//!
//! The record lies in sbx's state directory, which every run keeps
//! read-only to the command (as it keeps the approvals store there): a
//! sandboxed command cannot write directories into it for the next run.
//! Each target keeps the directories its links' resolution read, so that
//! a run can refuse a target whose way there passes through a directory
//! its command could write (caller.rs).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The record's name in sbx's state directory.
pub const FILE: &str = "path-links.json";
/// Bumped when what a scan finds changes meaning.
const VERSION: u32 = 2;
/// A directory changed this recently may change again within the same
/// tick of the file system's clock without its times moving: its scan
/// is used but not recorded (as git treats "racily clean" entries).
const RACY_SECS: i64 = 2;

/// Paths resolved as `std::fs::canonicalize` would, remembering every
/// path looked at: a PATH directory's links lead into a few directories
/// (`/etc/alternatives`, `/usr/lib/llvm-14/bin`), so each of those costs
/// one `readlink` for all the links through it, not one per link and
/// component as `realpath` would.
#[derive(Default)]
pub struct Links {
    /// A path whose parent is resolved → where it leads (`None`:
    /// nowhere), and the directories whose entries that answer read.
    known: HashMap<PathBuf, (Option<PathBuf>, Vec<PathBuf>)>,
    /// The directories whose entries the resolutions since the last
    /// [`Links::take_read`] depended on.
    read: BTreeSet<PathBuf>,
    /// Each path's `lstat` in this run, taken once: the resolution, the
    /// stamps and the checks of a directory to grant read the same one.
    looked: HashMap<PathBuf, Option<Looked>>,
}

/// What `lstat` said of a path.
#[derive(Clone, Copy)]
pub struct Looked {
    stamp: Stamp,
    /// `st_mode`.
    pub mode: u32,
    dir: bool,
    link: bool,
}

impl Looked {
    pub fn is_dir(&self) -> bool {
        self.dir
    }
}

impl Links {
    /// Where the absolute path `p` leads, following up to 40 links, with
    /// the directories whose entries decided the answer (where a command
    /// that can write one could steer it).
    pub fn resolve_via(&mut self, p: &Path) -> (Option<PathBuf>, BTreeSet<PathBuf>) {
        let outer = self.take_read();
        let r = self.walk(p, 0);
        let via = std::mem::replace(&mut self.read, outer);
        self.read.extend(via.iter().cloned());
        (r, via)
    }

    fn take_read(&mut self) -> BTreeSet<PathBuf> {
        std::mem::take(&mut self.read)
    }

    /// `p`'s `lstat`, taken once per run (`None`: it does not exist, or
    /// cannot be looked at).
    pub fn lstat(&mut self, p: &Path) -> Option<Looked> {
        if let Some(l) = self.looked.get(p) {
            return *l;
        }
        let l = std::fs::symlink_metadata(p).ok().map(|m| Looked {
            stamp: Stamp::from(&m),
            mode: m.mode(),
            dir: m.is_dir(),
            link: m.is_symlink(),
        });
        self.looked.insert(p.to_path_buf(), l);
        l
    }

    /// `dir`'s stamp ([`Links::lstat`]).
    fn stamp(&mut self, dir: &Path) -> Stamp {
        self.lstat(dir).map_or(Stamp([0; 6]), |l| l.stamp)
    }

    fn walk(&mut self, p: &Path, links: usize) -> Option<PathBuf> {
        use std::path::Component;
        let mut cur = PathBuf::from("/");
        for c in p.components() {
            match c {
                Component::Normal(name) => cur = self.step(cur.join(name), links)?,
                Component::ParentDir => {
                    cur.pop();
                }
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        Some(cur)
    }

    /// `next` is a resolved directory joined with one name.
    fn step(&mut self, next: PathBuf, links: usize) -> Option<PathBuf> {
        if let Some((r, read)) = self.known.get(&next) {
            // What it depended on counts for this resolution too.
            self.read.extend(read.iter().cloned());
            return r.clone();
        }
        let outer = std::mem::take(&mut self.read);
        if let Some(parent) = next.parent() {
            self.read.insert(parent.to_path_buf());
        }
        let r = match self.lstat(&next) {
            Some(l) if l.link => match std::fs::read_link(&next) {
                Ok(to) if links < 40 => {
                    let base = next.parent().unwrap_or(Path::new("/"));
                    self.walk(&base.join(to), links + 1)
                }
                _ => None,
            },
            // Not a link: it exists, as itself.
            Some(_) => Some(next.clone()),
            None => None,
        };
        let read: Vec<PathBuf> = self.read.iter().cloned().collect();
        self.read.extend(outer);
        self.known.insert(next, (r.clone(), read));
        r
    }
}

/// A directory's identity and times, as `lstat` gives them (all zero
/// where it does not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Stamp([i64; 6]);

impl Stamp {
    #[cfg(test)]
    fn of(dir: &Path) -> Stamp {
        std::fs::symlink_metadata(dir).map_or(Stamp([0; 6]), |m| Stamp::from(&m))
    }

    fn from(m: &std::fs::Metadata) -> Stamp {
        Stamp([
            m.dev() as i64,
            m.ino() as i64,
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        ])
    }

    fn racy(&self, now: i64) -> bool {
        self.0[2] >= now - RACY_SECS || self.0[4] >= now - RACY_SECS
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Entry {
    /// The directories the links lead into (each link's final target's
    /// directory), before any check of whether they may be granted.
    targets: Vec<Target>,
    stamps: BTreeMap<String, Stamp>,
}

/// A directory some links of a PATH directory lead into.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub dir: String,
    /// The directories whose entries decided where those links lead
    /// (every one on their way, the PATH directory itself among them).
    pub via: Vec<String>,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Record {
    version: u32,
    /// By PATH directory, resolved.
    dirs: BTreeMap<String, Entry>,
}

/// The record of earlier scans, and the resolver for new ones.
pub struct Scans {
    file: Option<PathBuf>,
    record: Record,
    changed: bool,
    links: Links,
    now: i64,
}

impl Scans {
    /// The record at `file` (none: nothing is kept), or an empty one where
    /// it is missing, unreadable or of another version.
    pub fn load(file: Option<PathBuf>) -> Scans {
        let record = file
            .as_ref()
            .and_then(|f| std::fs::read(f).ok())
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
            .filter(|r| r.version == VERSION)
            .unwrap_or(Record {
                version: VERSION,
                dirs: BTreeMap::new(),
            });
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Scans {
            file,
            record,
            changed: false,
            links: Links::default(),
            now,
        }
    }

    /// The directories the symlinks among the first `limit` entries of
    /// `dir` (resolved) lead into. A link to an entry of `dir` itself
    /// adds nothing: that entry is looked at on its own.
    pub fn targets(&mut self, dir: &str, limit: usize) -> Vec<Target> {
        if let Some(e) = self.record.dirs.get(dir) {
            let links = &mut self.links;
            if e.stamps
                .iter()
                .all(|(d, s)| links.stamp(Path::new(d)) == *s)
            {
                return e.targets.clone();
            }
        }
        // Stamped before reading (or earlier in this run): a change made
        // meanwhile shows in the next run's comparison.
        let own = self.links.stamp(Path::new(dir));
        let targets = scan(dir, limit, &mut self.links);
        let mut stamps: BTreeMap<String, Stamp> = BTreeMap::new();
        stamps.insert(dir.to_string(), own);
        for d in targets.iter().flat_map(|t| &t.via) {
            if !stamps.contains_key(d) {
                stamps.insert(d.clone(), self.links.stamp(Path::new(d)));
            }
        }
        if stamps.values().any(|s| s.racy(self.now)) {
            self.record.dirs.remove(dir);
        } else {
            self.record.dirs.insert(
                dir.to_string(),
                Entry {
                    targets: targets.clone(),
                    stamps,
                },
            );
        }
        self.changed = true;
        targets
    }

    /// `dir`'s device and inode (`None` where it does not exist), from
    /// the stamps this run took already where it took one.
    pub fn identity(&mut self, dir: &str) -> Option<(u64, u64)> {
        let s = self.links.stamp(Path::new(dir));
        (s != Stamp([0; 6])).then_some((s.0[0] as u64, s.0[1] as u64))
    }

    /// `p`'s `lstat` in this run ([`Links::lstat`]).
    pub fn lstat(&mut self, p: &Path) -> Option<Looked> {
        self.links.lstat(p)
    }

    /// Where the PATH entry `dir` leads, with the directories whose
    /// entries decided it ([`Links::resolve_via`]).
    pub fn resolve_via(&mut self, dir: &Path) -> (Option<PathBuf>, BTreeSet<PathBuf>) {
        self.links.resolve_via(dir)
    }

    /// Write the record back if a scan changed it (no fsync: a record
    /// lost in a crash costs one full scan).
    pub fn save(self) {
        let Some(file) = self.file.filter(|_| self.changed) else {
            return;
        };
        let Ok(text) = serde_json::to_vec(&self.record) else {
            return;
        };
        let _ = sbx::atomic::replace_unsynced(&file, &text, 0o600);
    }
}

fn scan(dir: &str, limit: usize, links: &mut Links) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    let Ok(list) = sbx::dirents::read_dir(dir) else {
        return out;
    };
    for e in list.flatten().take(limit) {
        if !e.is_symlink() {
            continue;
        }
        let Ok(to) = std::fs::read_link(e.path()) else {
            continue;
        };
        // `python3 -> python3.12`: an entry of this directory, which
        // is granted already, and which this scan follows itself if
        // it is a link too.
        let text = to.as_os_str().as_encoded_bytes();
        if !text.contains(&b'/') && text != b"." && text != b".." {
            continue;
        }
        let (Some(target), via) = links.resolve_via(&Path::new(dir).join(to)) else {
            continue;
        };
        let Some(parent) = target.parent().and_then(Path::to_str) else {
            continue;
        };
        // The link itself is an entry of `dir`.
        let via = std::iter::once(dir)
            .chain(via.iter().filter_map(|p| p.to_str()))
            .map(str::to_string);
        match out.iter_mut().find(|o| o.dir == parent) {
            Some(o) => o.via.extend(via),
            None => out.push(Target {
                dir: parent.to_string(),
                via: via.collect(),
            }),
        }
    }
    for t in &mut out {
        t.via.sort();
        t.via.dedup();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// `Links` says what `canonicalize` says: relative and absolute
    /// targets, a chain through a directory of links, a link to a link to
    /// a directory's entry through `..`, a dangling link and a loop.
    #[test]
    fn links_resolve_as_canonicalize_says() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        for sub in ["bin", "alt", "real/bin", "lib"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("real/bin/tool"), "").unwrap();
        symlink(d.join("real"), d.join("lib/real")).unwrap();
        symlink("../lib/real/bin/tool", d.join("alt/tool")).unwrap();
        symlink(d.join("alt/tool"), d.join("bin/tool")).unwrap();
        symlink("../alt/../real/bin/tool", d.join("bin/dotted")).unwrap();
        symlink("nowhere", d.join("bin/dangling")).unwrap();
        symlink("loop", d.join("bin/loop")).unwrap();
        let mut links = Links::default();
        for name in ["tool", "dotted", "dangling", "loop"] {
            let link = d.join("bin").join(name);
            assert_eq!(
                links.resolve_via(&link).0,
                std::fs::canonicalize(&link).ok(),
                "{name}"
            );
        }
        assert_eq!(
            links.resolve_via(&d.join("alt/tool")).0,
            Some(d.join("real/bin/tool"))
        );
    }

    /// A recorded scan is used while no directory it read changed, and
    /// scanned again when one did: a link retargeted in a directory the
    /// first scan passed through (not the PATH directory itself), also
    /// where a second PATH directory reached it through what the first
    /// had resolved already.
    #[test]
    fn a_recorded_scan_follows_every_directory_it_read() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        for sub in ["bin", "sbin", "alt", "mid", "one", "two"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("one/tool"), "").unwrap();
        std::fs::write(d.join("two/tool"), "").unwrap();
        symlink(d.join("alt/tool"), d.join("bin/tool")).unwrap();
        symlink(d.join("alt/tool"), d.join("sbin/tool")).unwrap();
        symlink(d.join("mid/tool"), d.join("alt/tool")).unwrap();
        symlink(d.join("one/tool"), d.join("mid/tool")).unwrap();
        let text = |p: &Path| p.to_str().unwrap().to_string();
        let (bin, sbin) = (text(&d.join("bin")), text(&d.join("sbin")));
        // Elsewhere: writing it changes its directory, which the scans read.
        let state = tempfile::tempdir().unwrap();
        let file = state.path().join("record.json");
        let one = vec![text(&d.join("one"))];
        let dirs = |t: Vec<Target>| t.into_iter().map(|t| t.dir).collect::<Vec<_>>();
        // Set back, so that the change below moves the times whatever the
        // clock's tick.
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        for sub in ["", "bin", "sbin", "alt", "mid"] {
            std::fs::File::open(d.join(sub))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let mut s = Scans::load(Some(file.clone()));
        // As if every directory had settled (their ctimes are now).
        s.now += 3600;
        assert_eq!(dirs(s.targets(&bin, 100)), one);
        assert_eq!(dirs(s.targets(&sbin, 100)), one);
        // The way there, for the run to judge: every directory whose
        // entries decided it (a link in `sbin` leads on through `alt` and
        // `mid`).
        let via = &s.targets(&sbin, 100)[0].via;
        for sub in ["sbin", "alt", "mid", "one"] {
            assert!(via.contains(&text(&d.join(sub))), "{sub}: {via:?}");
        }
        assert!(s.record.dirs[&sbin]
            .stamps
            .contains_key(&text(&d.join("mid"))));
        let stamps: Vec<(String, Stamp)> = s
            .record
            .dirs
            .values()
            .flat_map(|e| e.stamps.clone())
            .collect();
        s.save();
        let mut s = Scans::load(Some(file.clone()));
        assert_eq!(dirs(s.targets(&bin, 100)), one);
        assert_eq!(dirs(s.targets(&sbin, 100)), one);
        // `/tmp` above the tree is read too, and other tests write there.
        let outside_moved = stamps
            .iter()
            .any(|(p, v)| !Path::new(p).starts_with(&d) && Stamp::of(Path::new(p)) != *v);
        assert!(
            !s.changed || outside_moved,
            "nothing changed: the record answered"
        );
        // Retarget the link in `mid`: `bin`, `sbin` and `alt` are untouched.
        std::fs::remove_file(d.join("mid/tool")).unwrap();
        symlink(d.join("two/tool"), d.join("mid/tool")).unwrap();
        let mut s = Scans::load(Some(file.clone()));
        let two = vec![text(&d.join("two"))];
        assert_eq!(dirs(s.targets(&bin, 100)), two);
        assert_eq!(dirs(s.targets(&sbin, 100)), two);
    }

    /// A directory changed within the racy window is scanned every time
    /// until it settles: its times could hide a second change.
    #[test]
    fn a_racy_scan_is_not_recorded() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(d.join("bin")).unwrap();
        let bin = d.join("bin").to_str().unwrap().to_string();
        let mut s = Scans::load(None);
        assert!(s.targets(&bin, 100).is_empty());
        assert!(!s.record.dirs.contains_key(&bin));
    }
}
