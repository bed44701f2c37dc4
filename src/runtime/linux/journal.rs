//! The after-run journal (docs/protected.md, "If sbx is killed"). Before
//! the command starts, `sbx run` writes what the after-run work needs
//! (the writable tops with their identities, what each protected path
//! was, where to sweep, the run's temp directory) into a slot file under
//! `$XDG_STATE_HOME/sbx/runs/`, and holds an `flock` on it for as long as
//! it or its guardian lives. The work marks the slot free when it is
//! done. A slot holding an entry whose lock can be taken belongs to a run
//! that ended without finishing (both sbx and its guardian killed): the
//! next `sbx run` and `sbx sweep` finish it.
//!
//! Slots are files kept and rewritten in place rather than an entry
//! made and removed per run: on a file system mounted with `discard`
//! every freed block is a synchronous discard, and the entry's was the
//! one a run of Landlock alone freed (docs/performance.md). A slot holds
//! an entry when its first byte is `{` (the entry's JSON starts there);
//! any other first byte (`.` once done, a hole while being written) means
//! free. Entries of earlier versions (`*.json`, one file per run) are
//! still finished and then removed.
//!
//! The directory is read-only to every sandboxed command (the run's own
//! files, POLICY.md §13), and an entry is still checked before use: its
//! file is ours and private, every recorded path lies beneath a recorded
//! top that is still the directory it was, and every file operation is
//! the same `openat2` beneath that top as after any run.

use super::after::AfterRun;
use super::beneath::Tops;
use super::handover::Held;
use super::identity::{Record, Seen};
use super::repos::{Identity, Stamp};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Bumped when the format changes; an entry of another version is
/// reported and left alone.
const VERSION: u32 = 1;

/// The largest entry read back (a very large policy records tens of
/// thousands of paths; far more is not an entry sbx wrote).
const MAX_BYTES: u64 = 64 << 20;

#[derive(Serialize, Deserialize)]
struct Saved {
    version: u32,
    /// sbx's process id and start (seconds since the epoch), for messages.
    pid: u32,
    started: u64,
    /// (path, device, inode).
    tops: Vec<(String, libc::dev_t, libc::ino_t)>,
    records: Vec<SavedRecord>,
    repo_tops: Vec<String>,
    /// The writable rules' paths (absent from older entries: their
    /// repository tops stand in).
    #[serde(default)]
    writable: Vec<String>,
    since: (i64, i64),
    /// The run's private temp directory.
    temp: Option<String>,
    /// Python's user site at launch.
    #[serde(default)]
    usersite: super::usersite::Saved,
    /// The identities of the git directories beneath the repository
    /// tops at launch, sorted (absent from older entries, and where that
    /// search did not finish: the sweep decides by ctimes alone).
    #[serde(default)]
    known: Option<Vec<super::repos::Identity>>,
}

#[derive(Serialize, Deserialize)]
struct SavedRecord {
    path: String,
    top: usize,
    rel: String,
    /// Absent: `None`.
    object: Option<SavedObject>,
}

#[derive(Serialize, Deserialize)]
struct SavedObject {
    dev: libc::dev_t,
    ino: libc::ino_t,
    kind: u32,
    target: Option<Vec<u8>>,
    birth: Option<(i64, u32)>,
}

/// The runs directory: `$XDG_STATE_HOME/sbx/runs`, made (0700) if need be.
pub fn dir() -> io::Result<PathBuf> {
    let state = crate::runtime::state_dir()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no HOME or XDG_STATE_HOME"))?;
    let runs = state.join("runs").into_std_path_buf();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&runs)?;
    private_dir(&runs)?;
    Ok(runs)
}

/// `d` is a real directory of ours that nobody else can write.
fn private_dir(d: &Path) -> io::Result<()> {
    let m = std::fs::symlink_metadata(d)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.is_dir() || m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is not a private directory of this user",
            d.display()
        )));
    }
    Ok(())
}

/// This run's entry, locked while the file is open.
#[derive(Debug)]
pub struct Entry {
    path: PathBuf,
    file: File,
}

impl Entry {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The slot's descriptor, which holds its lock.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    /// Record `after` (and the run's temp directory) before the command
    /// starts, in the first slot that is free.
    pub fn write(runs: &Path, after: &AfterRun, temp: Option<&Path>) -> io::Result<Entry> {
        let saved = save(after, temp)?;
        let text = serde_json::to_vec(&saved).map_err(io::Error::other)?;
        let (path, file) = take_slot(runs)?;
        // Locked while written, and whole before its first byte says it
        // is an entry: a writer killed half way leaves a free slot.
        file.write_all_at(&text[1..], 1)?;
        file.set_len(text.len() as u64)?;
        file.write_all_at(&text[..1], 0)?;
        // No fsync: what is guarded against is sbx being killed, and the
        // page cache outlives that.
        // Held while the command runs: a run ending meanwhile may leave
        // its sweep to this one ([`left_to_others`]). Without it (a file
        // system without such locks) none does: each sweeps its own.
        let _ = super::kernel::first_byte_lock(&file, true);
        Ok(Entry { path, file })
    }

    /// The command's tree has ended and the after-run work begins: from
    /// here on no run leaves its sweep to this one, whose sweep may have
    /// passed what that run's command changed.
    pub fn command_ended(&self) {
        command_ended(&self.file);
    }

    /// The work is done: the slot is marked free before the lock goes, so
    /// nobody finishes it twice.
    pub fn remove(self) {
        release(&self.path, &self.file);
        drop(self.file);
    }
}

/// The largest number of slots looked through (runs at once).
const SLOTS: u32 = 4096;

/// The first slot (`N.slot`) that can be locked and holds no entry,
/// made if need be, returned locked.
fn take_slot(runs: &Path) -> io::Result<(PathBuf, File)> {
    for n in 0..SLOTS {
        let path = runs.join(format!("{n}.slot"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path);
        let file = match file {
            // A lease another process holds on it (not the command's:
            // seccomp refuses it that): another slot.
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => continue,
            other => other?,
        };
        if super::kernel::flock(&file, false).is_err() {
            // A live run's, or a sweep finishing it.
            continue;
        }
        if !is_private_file(&file.metadata()?) {
            return Err(io::Error::other(format!(
                "{} is not a private file of this user",
                path.display()
            )));
        }
        if !holds_entry(&file) {
            return Ok((path, file));
        }
        // A dead run's entry not finished yet (or left alone): not ours.
    }
    Err(io::Error::other(format!(
        "all {SLOTS} journal slots in {} are taken",
        runs.display()
    )))
}

/// A regular file of this user that nobody else can read or write, as
/// sbx makes its entries and slots.
fn is_private_file(meta: &std::fs::Metadata) -> bool {
    // SAFETY: geteuid has no preconditions.
    meta.is_file() && meta.uid() == unsafe { libc::geteuid() } && meta.mode() & 0o077 == 0
}

/// The slot's first byte says it holds an entry.
fn holds_entry(file: &File) -> bool {
    let mut first = [0u8; 1];
    matches!(file.read_at(&mut first, 0), Ok(1) if first[0] == b'{')
}

/// A finished entry goes: a slot is marked free (its block kept), an
/// entry of an earlier version (its own file) is removed.
fn release(path: &Path, file: &File) {
    // Not while a run's launch walk is at work ([`walking`]); a walk
    // gives up within WALK_TIME, so past RELEASE_WAIT none is.
    let _none = path
        .parent()
        .and_then(|runs| walks_lock(runs, true, RELEASE_WAIT));
    if is_slot(path) {
        let _ = file.write_all_at(b".", 0);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// The file in the journal's directory that a run's launch walk holds
/// shared and a finished entry's release holds exclusive.
const WALKS: &str = "walks.lock";

/// How long a launch walk may take ([`super::repos::known_at_launch`]
/// gives up after it), and how long a release waits for the walks going
/// on: longer, so that no walk that could still be at work is passed.
/// A command may be able to read the state directory, never to write it
/// (the layer mounts it read-only, and a run without the layer where a
/// rule lets the command write it is refused): it can take the read
/// lock a walk takes, so make releases wait this long, and never the
/// write lock a release takes, which would keep runs from their launch
/// record.
pub const WALK_TIME: std::time::Duration = std::time::Duration::from_secs(2);
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(4);

/// The [`WALKS`] lock, taken (waiting at most `wait`): exclusive (a
/// write lock) or shared (a read lock). `None` where it cannot be had.
/// Locks on open file descriptions, not `flock`: a `flock` is exclusive
/// on any descriptor, one open only for reading too.
fn walks_lock(runs: &Path, exclusive: bool, wait: std::time::Duration) -> Option<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        // Never waiting on a lease: without the lock, as past `wait`.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(runs.join(WALKS))
        .ok()?;
    super::kernel::ofd_lock_within(&file, exclusive, wait).then_some(file)
}

/// Held while a run's launch walk reads the tree (the journal read
/// before it and after it): no entry is released meanwhile, so every
/// run whose command could change the tree during the walk is still
/// going, and its record read, when the walk ends. A run that began and
/// ended within the walk would otherwise be seen by neither read.
/// `None` where it could not be had within [`WALK_TIME`] (another
/// holds it exclusively): the run then has no launch record.
pub struct Walking(#[allow(dead_code)] File);

pub fn walking(runs: &Path) -> Option<Walking> {
    walks_lock(runs, false, WALK_TIME).map(Walking)
}

fn is_slot(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "slot")
}

/// A name the journal reads entries from: slots, and earlier versions'
/// one file per run.
fn is_entry_name(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "slot" || x == "json")
}

fn save(after: &AfterRun, temp: Option<&Path>) -> io::Result<Saved> {
    let tops = after
        .tops
        .all()
        .iter()
        .map(|t| t.identity().map(|(d, i)| (t.path.clone(), d, i)))
        .collect::<io::Result<Vec<_>>>()?;
    let records = after
        .records
        .iter()
        .map(|r| SavedRecord {
            path: r.path.clone(),
            top: r.top,
            rel: String::from_utf8_lossy(&r.rel).into_owned(),
            object: match &r.seen {
                Seen::Absent => None,
                Seen::Object {
                    dev,
                    ino,
                    kind,
                    target,
                    birth,
                    ..
                } => Some(SavedObject {
                    dev: *dev,
                    ino: *ino,
                    kind: *kind,
                    target: target.clone(),
                    birth: *birth,
                }),
            },
        })
        .collect();
    Ok(Saved {
        version: VERSION,
        pid: std::process::id(),
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        tops,
        records,
        repo_tops: after.repo_tops.clone(),
        writable: after.writable.clone(),
        since: after.since.parts(),
        temp: temp.and_then(|t| t.to_str()).map(String::from),
        usersite: after.usersite.saved(),
        known: after.known.as_ref().map(|k| {
            let mut v: Vec<_> = k.iter().copied().collect();
            v.sort_unstable();
            v
        }),
    })
}

/// What another run recorded at its launch, as [`live_known`] reads it.
#[derive(Deserialize)]
struct Launched {
    repo_tops: Vec<String>,
    #[serde(default)]
    known: Option<Vec<Identity>>,
}

/// The launch records of the other runs going now (their entries
/// locked) whose repository tops lie in one of `tops` or hold one, each
/// with those tops: `None` for one without a record (its launch walk
/// did not finish, or an earlier version wrote it). Their commands may
/// have changed the tree since those launches, so a run starting now
/// trusts only a git directory that they knew too
/// ([`super::after::AfterRun::launch`]).
pub fn live_known(runs: &Path, tops: &[String]) -> Vec<(Vec<String>, Option<HashSet<Identity>>)> {
    use crate::ir::path_within;
    live::<Launched>(runs, None, Going::Any)
        .into_iter()
        .filter(|other| {
            other
                .repo_tops
                .iter()
                .any(|o| tops.iter().any(|t| path_within(t, o) || path_within(o, t)))
        })
        .map(|other| {
            (
                other.repo_tops,
                other.known.map(|k| k.into_iter().collect()),
            )
        })
        .collect()
}

/// Let go of the lock that says a run's command still runs.
fn command_ended(file: &File) {
    let _ = super::kernel::first_byte_lock(file, false);
}

/// Which runs [`live`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Going {
    /// Every run going now, its after-run work included.
    Any,
    /// Only those whose command still runs.
    Commands,
}

/// What the entries of the runs going now (locked) in `runs` hold, as
/// `T` reads it; `own` (this run's entry) skipped. An entry that cannot
/// be read or parsed is left out.
fn live<T: serde::de::DeserializeOwned>(runs: &Path, own: Option<&Path>, going: Going) -> Vec<T> {
    let mut out = Vec::new();
    let Ok(list) = crate::dirents::read_dir(runs) else {
        return out;
    };
    for path in list.flatten().map(crate::dirents::Entry::into_path) {
        if Some(path.as_path()) == own || !is_entry_name(&path) {
            continue;
        }
        // Never waiting on a lease (a lease-breaking open would block).
        let Ok(mut file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        if super::kernel::flock(&file, false).is_ok() {
            // Not a live run (a free slot, or one ended without its
            // work, which is the next sweep's).
            continue;
        }
        if going == Going::Commands && !super::kernel::first_byte_locked(&file) {
            continue;
        }
        let Ok(text) = read_entry(&mut file) else {
            continue;
        };
        if let Ok(entry) = serde_json::from_slice::<T>(&text) {
            out.push(entry);
        }
    }
    out
}

/// The sweep starts of the other runs still going (their entries
/// locked), each with the moment its sweep counts changes from.
#[derive(Deserialize)]
struct Sweeps {
    repo_tops: Vec<String>,
    since: (i64, i64),
}

/// Sweep starts of `ours` that a run still going will sweep itself, from
/// an earlier moment than ours: left to it, so that no run sweeps the
/// tree of another while that run lasts (its fresh clone's config moved
/// aside under it). `own` is this run's entry, skipped.
pub fn left_to_others(own: &Path, ours: &[String], since: Stamp) -> Vec<String> {
    let Some(runs) = own.parent() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Only to a run whose command still runs: one already at its
    // after-run work may have swept past what our command changed.
    for other in live::<Sweeps>(runs, Some(own), Going::Commands) {
        if Stamp::from_parts(other.since) > since {
            continue;
        }
        for t in ours {
            if other.repo_tops.contains(t) && !out.contains(t) {
                out.push(t.clone());
            }
        }
    }
    out
}

/// An entry read back, checked, with its tops open again.
struct Loaded {
    after: AfterRun,
    temp: Option<PathBuf>,
    pid: u32,
    /// Paths that could not be checked (their top is gone or another
    /// directory now).
    lost: Vec<String>,
}

/// `held`: the entry's tops are those descriptors rather than its paths
/// opened again.
fn load(text: &[u8], held: Option<Held>) -> Result<Loaded, String> {
    let s: Saved = serde_json::from_slice(text).map_err(|e| format!("unreadable: {e}"))?;
    if s.version != VERSION {
        return Err(format!("written by another sbx (format {})", s.version));
    }
    let handed = held.is_some();
    let mut held = held.unwrap_or_default();
    let (tops, map) = if handed {
        Tops::adopt(&s.tops, std::mem::take(&mut held.tops))
    } else {
        Tops::reopen(&s.tops)
    };
    let mut records = Vec::new();
    let mut lost = Vec::new();
    for (i, r) in s.records.into_iter().enumerate() {
        let Some(saved_top) = s.tops.get(r.top) else {
            return Err(format!("{} names no recorded top", r.path));
        };
        // The path must be the top joined with a plain relative path.
        let rel = r.rel.as_bytes();
        if super::beneath::normal(rel).as_deref() != Some(rel) || rel.is_empty() {
            return Err(format!("{} is not a plain path beneath its top", r.path));
        }
        if super::beneath::show_in(&saved_top.0, rel) != r.path {
            return Err(format!("{} does not lie beneath {}", r.path, saved_top.0));
        }
        let Some(top) = map[r.top] else {
            lost.push(r.path);
            continue;
        };
        records.push(Record {
            path: r.path,
            top,
            rel: r.rel.into_bytes(),
            seen: match r.object {
                None => Seen::Absent,
                Some(o) => Seen::Object {
                    hold: held
                        .holds
                        .get_mut(i)
                        .and_then(Option::take)
                        .filter(|fd| super::handover::is(fd, o.dev, o.ino)),
                    dev: o.dev,
                    ino: o.ino,
                    kind: o.kind,
                    target: o.target,
                    birth: o.birth,
                },
            },
        });
    }
    // Sweeps start only beneath a top still open.
    let repo_tops: Vec<String> = s
        .repo_tops
        .into_iter()
        .filter(|t| tops.holding(t).next().is_some())
        .collect();
    let writable = if s.writable.is_empty() {
        repo_tops.clone()
    } else {
        s.writable
    };
    let temp = match s.temp {
        None => None,
        Some(t) => Some(super::temp::check_base(Path::new(&t)).map_err(|e| format!("{t}: {e}"))?),
    };
    Ok(Loaded {
        after: AfterRun::from_parts(
            tops,
            records,
            repo_tops,
            writable,
            Stamp::from_parts(s.since),
            super::usersite::Snapshot::from_saved(s.usersite, &map, held.site),
            s.known.map(|k| k.into_iter().collect()),
        ),
        temp,
        pid: s.pid,
        lost,
    })
}

/// Finish the after-run work of every run that ended without it (its
/// entry unlocked). Returns the warnings to show, each run's introduced.
pub fn finish_dead(runs: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(list) = crate::dirents::read_dir(runs) else {
        return out;
    };
    let mut names: Vec<PathBuf> = Vec::new();
    for p in list.flatten().map(crate::dirents::Entry::into_path) {
        match p.extension().and_then(|x| x.to_str()) {
            Some("json" | "slot") => names.push(p),
            // An earlier version's writer killed before its rename left
            // this; one alive holds it locked, and is past it within a
            // minute.
            Some("new") if stale(&p) => {
                if let Ok(f) = std::fs::File::open(&p) {
                    if super::kernel::flock(&f, false).is_ok() {
                        let _ = std::fs::remove_file(&p);
                    }
                }
            }
            _ => {}
        }
    }
    names.sort();
    for path in names {
        // A slot is written to mark it free once finished.
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(is_slot(&path))
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        if super::kernel::flock(&file, false).is_err() {
            // A live run, or another sweep at it.
            continue;
        }
        // Freed or unlinked by whoever held the lock before us: done
        // already (a free slot, or one whose writer was killed half way).
        let done = if is_slot(&path) {
            !holds_entry(&file)
        } else {
            std::fs::symlink_metadata(&path).is_err()
        };
        if done {
            continue;
        }
        out.extend(finish_one(&path, file));
    }
    out
}

/// An entry's text, at most [`MAX_BYTES`] of it, from its start.
fn read_entry(file: &mut File) -> io::Result<Vec<u8>> {
    use std::io::Seek;
    file.rewind()?;
    let mut text = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut text)?;
    Ok(text)
}

/// Written more than a minute ago.
fn stale(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|d| d.as_secs() > 60)
}

/// The guardian's hand-over ([`super::handover`]): finish this run's
/// own entry, through the descriptors sbx held. Nothing when sbx freed
/// the slot before it died (the work was done).
pub fn finish_handed(given: super::handover::Given) -> Vec<String> {
    let super::handover::Given { entry, slot, held } = given;
    // The lock is the guardian's already (the descriptor is the one sbx
    // locked); taken again, it refuses a slot some other process holds.
    if super::kernel::flock(&slot, false).is_err() || !holds_entry(&slot) {
        return Vec::new();
    }
    finish_one_held(&entry, slot, Some(held))
}

fn finish_one(path: &Path, file: File) -> Vec<String> {
    finish_one_held(path, file, None)
}

/// `held`: the guardian's hand-over of this run's own entry, whose
/// warnings are the run's own (as sbx would have written them) and
/// whose temp directory is parked for the next run, as sbx parks it.
fn finish_one_held(path: &Path, mut file: File, held: Option<Held>) -> Vec<String> {
    // The guardian's hand-over shares the run's lock on the first byte.
    command_ended(&file);
    let own = held.is_some();
    let shown = path.display();
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return vec![format!("sbx: warning: after-run journal {shown}: {e}")],
    };
    if !is_private_file(&meta) {
        return vec![format!(
            "sbx: warning: after-run journal {shown} is not a private file of this user: \
             left alone"
        )];
    }
    let text = match read_entry(&mut file) {
        Ok(t) => t,
        Err(e) => return vec![format!("sbx: warning: after-run journal {shown}: {e}")],
    };
    let loaded = match load(&text, held) {
        Ok(l) => l,
        Err(e) => {
            return vec![format!(
                "sbx: warning: after-run journal {shown} is {e}: left alone (remove it once \
                 reviewed)"
            )]
        }
    };
    let mut out = Vec::new();
    if !own {
        out.push(format!(
            "sbx: a run (sbx pid {}) ended without its after-run work (sbx was killed): \
             finishing it now",
            loaded.pid
        ));
    }
    for p in &loaded.lost {
        out.push(format!(
            "sbx: warning: {p} could not be checked: the writable tree above it is gone or \
             is another directory now"
        ));
    }
    out.extend(loaded.after.work(Some(path)));
    if let Some(t) = &loaded.temp {
        out.extend(if own {
            super::temp::park_or_remove(t)
        } else {
            super::temp::remove_base(t)
        });
    }
    release(path, &file);
    drop(file);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Write;

    fn scratch(name: &str) -> PathBuf {
        let t = std::env::temp_dir().join(format!("sbx-journal-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        fs::create_dir_all(&t).unwrap();
        t
    }

    #[test]
    fn a_dead_runs_entry_is_finished_by_the_next() {
        let (t, runs) = scratch_runs("dead");
        let (after, entry) = launch_repo(&t, &runs);
        // While the run lives, nobody finishes it.
        assert!(finish_dead(&runs).is_empty());
        // The run plants, then sbx dies: the lock goes with the file.
        plant(&t);
        drop(after);
        drop(entry.file);
        let said = finish_dead(&runs);
        assert!(
            said[0].contains("ended without its after-run work"),
            "{said:?}"
        );
        assert!(!t.join("ws/.envrc").exists());
        assert!(!t.join("ws/.git/config").exists(), "{said:?}");
        // The slot stays, free.
        // (Beside the lock launch walks take.)
        let slots: Vec<_> = fs::read_dir(&runs)
            .unwrap()
            .flatten()
            .filter(|e| is_entry_name(&e.path()))
            .collect();
        assert_eq!(slots.len(), 1);
        assert!(!holds_entry(&File::open(slots[0].path()).unwrap()));
        // Done once: the next finds nothing.
        assert!(finish_dead(&runs).is_empty());
        fs::remove_dir_all(&t).unwrap();
    }

    /// A run on `t/ws`, a repository, protecting its `.git/config` and
    /// `.envrc`, with its journal entry.
    fn launch_repo(t: &Path, runs: &Path) -> (AfterRun, Entry) {
        fs::create_dir_all(t.join("ws/.git/hooks")).unwrap();
        fs::write(t.join("ws/.git/config"), "[core]\n").unwrap();
        let p = |r: &str| t.join(r).to_str().unwrap().to_string();
        let after = AfterRun::launch(
            &[p("ws")],
            &[p("ws/.git/config"), p("ws/.envrc")],
            Vec::new(),
            "",
            Some(runs),
        );
        let entry = Entry::write(runs, &after, None).unwrap();
        (after, entry)
    }

    /// What a command plants: an `.envrc`, and a config put in place of
    /// the recorded one.
    fn plant(t: &Path) {
        fs::write(t.join("ws/.envrc"), "evil").unwrap();
        fs::rename(t.join("ws/.git/config"), t.join("ws/config.old")).unwrap();
        fs::write(t.join("ws/.git/config"), "[core]\n\tfsmonitor = evil\n").unwrap();
    }

    /// The guardian's hand-over: a workspace renamed after launch is
    /// still finished through the descriptors sbx held. The control: the
    /// same entry read back by its paths alone cannot reach it.
    #[test]
    fn a_handed_over_entry_is_finished_through_what_sbx_held() {
        use std::os::fd::{FromRawFd, OwnedFd};
        let (t, runs) = scratch_runs("handed");
        let dup = |fd: i32| {
            // SAFETY: a copy of a descriptor this test holds.
            unsafe { OwnedFd::from_raw_fd(libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3)) }
        };
        for handed in [false, true] {
            let _ = fs::remove_dir_all(t.join("moved"));
            let (after, entry) = launch_repo(&t, &runs);
            plant(&t);
            fs::rename(t.join("ws"), t.join("moved")).unwrap();
            let fds = after.fds();
            let given = super::super::handover::Given {
                entry: entry.path().to_path_buf(),
                slot: File::from(dup(entry.fd())),
                held: Held {
                    tops: fds.tops.iter().map(|&f| Some(dup(f))).collect(),
                    holds: fds.holds.iter().map(|f| f.map(dup)).collect(),
                    site: fds.site.iter().map(|f| f.map(dup)).collect(),
                },
            };
            assert_eq!(given.held.tops.len(), 1);
            assert!(given.held.holds[0].is_some() && given.held.holds[1].is_none());
            // sbx dies: its own descriptors go.
            drop(after);
            drop(entry);
            let said = if handed {
                finish_handed(given)
            } else {
                drop(given);
                finish_dead(&runs)
            };
            let left = t.join("moved/.envrc").exists();
            if handed {
                assert!(!left && !t.join("moved/.git/config").exists(), "{said:?}");
                assert!(t.join("moved/.envrc.sbx-blocked").exists(), "{said:?}");
                assert!(
                    said.iter().all(|l| !l.contains("ended without")),
                    "{said:?}"
                );
            } else {
                assert!(left && t.join("moved/.git/config").exists(), "{said:?}");
                assert!(
                    said.iter().any(|l| l.contains("could not be checked")),
                    "{said:?}"
                );
            }
            // Finished either way: the slot is free.
            for e in fs::read_dir(&runs).unwrap().flatten() {
                assert!(!holds_entry(&File::open(e.path()).unwrap()));
            }
            let _ = fs::remove_dir_all(t.join("ws"));
        }
        // What the lock says: a slot another process locked is not taken.
        let after = launch(&t);
        let entry = Entry::write(&runs, &after, None).unwrap();
        let other = File::open(entry.path()).unwrap();
        let given = super::super::handover::Given {
            entry: entry.path().to_path_buf(),
            slot: other,
            held: Held::default(),
        };
        assert!(finish_handed(given).is_empty());
        assert!(holds_entry(&entry.file));
        entry.remove();
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn a_poisoned_entry_is_refused() {
        let (t, runs) = scratch_runs("poison");
        fs::create_dir_all(t.join("ws")).unwrap();
        fs::create_dir_all(t.join("home/.ssh")).unwrap();
        fs::write(t.join("home/.ssh/authorized_keys"), "key").unwrap();
        let ws = t.join("ws");
        let meta = fs::metadata(&ws).unwrap();
        let top = (ws.to_str().unwrap().to_string(), meta.dev(), meta.ino());
        let keys = t.join("home/.ssh/authorized_keys");
        let poisoned = [
            // A path outside its top.
            serde_json::json!({"version": 1, "pid": 1, "started": 0, "tops": [top],
                "records": [{"path": keys, "top": 0, "rel": "../home/.ssh/authorized_keys",
                "object": null}], "repo_tops": [], "since": [0, 0], "temp": null}),
            // A path that does not match its top and rel.
            serde_json::json!({"version": 1, "pid": 1, "started": 0, "tops": [top],
                "records": [{"path": keys, "top": 0, "rel": "x", "object": null}],
                "repo_tops": [], "since": [0, 0], "temp": null}),
            // A temp directory that is not one sbx makes.
            serde_json::json!({"version": 1, "pid": 1, "started": 0, "tops": [top],
                "records": [], "repo_tops": [], "since": [0, 0],
                "temp": t.join("home").to_str().unwrap()}),
        ];
        for (i, p) in poisoned.iter().enumerate() {
            let f = runs.join(format!("{i}.json"));
            private_file(&f)
                .write_all(p.to_string().as_bytes())
                .unwrap();
            let said = finish_dead(&runs);
            assert!(said.iter().any(|l| l.contains("left alone")), "{said:?}");
            assert!(keys.exists());
            assert!(t.join("home").exists());
            fs::remove_file(&f).unwrap();
        }
        // Another user's (or a shared) file is not read at all.
        let f = runs.join("open.json");
        fs::write(&f, poisoned[0].to_string()).unwrap();
        fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let said = finish_dead(&runs);
        assert!(said[0].contains("not a private file"), "{said:?}");
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn a_live_run_that_started_first_keeps_its_sweep() {
        let (t, runs) = scratch_runs("live");
        fs::create_dir_all(t.join("ws")).unwrap();
        let ws = t.join("ws").to_str().unwrap().to_string();
        let early = AfterRun::launch(std::slice::from_ref(&ws), &[], vec![ws.clone()], "", None);
        let live = Entry::write(&runs, &early, None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let late = AfterRun::launch(std::slice::from_ref(&ws), &[], vec![ws.clone()], "", None);
        let ours = Entry::write(&runs, &late, None).unwrap();
        let tops = [ws.clone(), "/elsewhere".to_string()];
        assert_eq!(left_to_others(ours.path(), &tops, late.since), [ws]);
        // The other way round: the live run started later and would miss
        // what was changed before it began.
        assert!(left_to_others(live.path(), &tops, early.since).is_empty());
        // Once its command has ended, its sweep may have passed what
        // ours changed: nothing is left to it (nor once it has ended).
        live.command_ended();
        assert!(left_to_others(ours.path(), &tops, late.since).is_empty());
        live.remove();
        assert!(left_to_others(ours.path(), &tops, late.since).is_empty());
        ours.remove();
        fs::remove_dir_all(&t).unwrap();
    }

    /// A run going now vouches only for what it knew at its own launch:
    /// a repository its command moved into the tree before this run's
    /// launch is not there at launch for this run either (the other
    /// command may move it away before its own sweep, and back later).
    /// Control: the repository both knew stays known.
    #[test]
    fn a_run_going_now_narrows_what_counts_as_there_at_launch() {
        let (t, runs) = scratch_runs("narrow");
        let ws = t.join("ws");
        let git = |d: &str| {
            for sub in ["objects", "refs"] {
                fs::create_dir_all(ws.join(d).join(sub)).unwrap();
            }
            fs::write(ws.join(d).join("HEAD"), "ref: refs/heads/main\n").unwrap();
        };
        git(".git");
        git("old/.git");
        let w = ws.to_str().unwrap().to_string();
        let id = |d: &str| {
            let m = fs::symlink_metadata(ws.join(d)).unwrap();
            (m.dev(), m.ino())
        };
        let launch = |runs: Option<&Path>| {
            AfterRun::launch(std::slice::from_ref(&w), &[], vec![w.clone()], "", runs)
        };
        let early = launch(Some(&runs));
        let live = Entry::write(&runs, &early, None).unwrap();
        // Its command moves a repository in.
        git("planted/.git");
        let alone = launch(None).known.unwrap();
        assert!(alone.contains(&id("planted/.git")));
        let late = launch(Some(&runs)).known.unwrap();
        assert!(!late.contains(&id("planted/.git")), "{late:?}");
        assert!(late.contains(&id("old/.git")) && late.contains(&id(".git")));
        // Once it has ended, its sweep has looked there: known again.
        live.remove();
        assert!(launch(Some(&runs))
            .known
            .unwrap()
            .contains(&id("planted/.git")));
        // A run on a workspace inside this one counts for what lies in
        // it, and only that: a repository there it did not know is not
        // known; one outside its tree is.
        let lib = ws.join("lib");
        fs::create_dir_all(&lib).unwrap();
        let l = lib.to_str().unwrap().to_string();
        let inner = AfterRun::launch(std::slice::from_ref(&l), &[], vec![l.clone()], "", None);
        let live = Entry::write(&runs, &inner, None).unwrap();
        git("lib/x/.git");
        let late = launch(Some(&runs)).known.unwrap();
        assert!(!late.contains(&id("lib/x/.git")), "{late:?}");
        assert!(late.contains(&id("planted/.git")) && late.contains(&id(".git")));
        live.remove();
        fs::remove_dir_all(&t).unwrap();
    }

    /// While a launch walk is at work no entry is released, so a run
    /// that began during the walk is still going at its end, and read
    /// (an audit helper's run began and ended within another's walk,
    /// unseen by both reads). Control: once the walk is over, the
    /// release goes through.
    #[test]
    fn no_entry_is_released_during_a_launch_walk() {
        let (t, runs) = scratch_runs("walking");
        fs::create_dir_all(t.join("ws")).unwrap();
        let ws = t.join("ws").to_str().unwrap().to_string();
        let after = AfterRun::launch(std::slice::from_ref(&ws), &[], vec![ws.clone()], "", None);
        let entry = Entry::write(&runs, &after, None).unwrap();
        let walk = walking(&runs);
        let (tx, rx) = std::sync::mpsc::channel();
        let ended = std::thread::spawn(move || {
            entry.remove();
            tx.send(()).unwrap();
        });
        let wait = std::time::Duration::from_millis;
        assert!(
            rx.recv_timeout(wait(200)).is_err(),
            "released during the walk"
        );
        assert_eq!(live::<Sweeps>(&runs, None, Going::Any).len(), 1);
        drop(walk);
        rx.recv_timeout(wait(5000))
            .expect("released after the walk");
        ended.join().unwrap();
        assert!(live::<Sweeps>(&runs, None, Going::Any).is_empty());
        fs::remove_dir_all(&t).unwrap();
    }

    /// A command that can read the state directory (never write it) can
    /// no longer keep a run from its launch record: its exclusive
    /// `flock` and a write lock it cannot have leave the walk's lock
    /// free. The command's read lock makes a release wait, no more.
    /// Control: a write lock, which only sbx's descriptors can take,
    /// keeps the walk out.
    #[test]
    fn a_reader_of_the_state_cannot_stop_a_launch_walk() {
        let (t, runs) = scratch_runs("reader");
        let wait = std::time::Duration::from_millis;
        drop(walks_lock(&runs, false, wait(0)).unwrap());
        let read_only = File::open(runs.join(WALKS)).unwrap();
        // SAFETY: flock on a descriptor we own.
        use std::os::fd::AsRawFd;
        assert_eq!(
            unsafe { libc::flock(read_only.as_raw_fd(), libc::LOCK_EX) },
            0
        );
        assert!(!super::super::kernel::ofd_lock_within(
            &read_only,
            true,
            wait(0)
        ));
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EBADF)
        );
        let walk = walks_lock(&runs, false, wait(0));
        assert!(walk.is_some(), "the reader kept the walk out");
        drop(walk);
        assert!(super::super::kernel::ofd_lock_within(
            &read_only,
            false,
            wait(0)
        ));
        assert!(
            walks_lock(&runs, true, wait(50)).is_none(),
            "released under a read lock"
        );
        drop(read_only);
        let writer = walks_lock(&runs, true, wait(0)).expect("free once the reader is gone");
        assert!(
            walks_lock(&runs, false, wait(50)).is_none(),
            "walked under a write lock"
        );
        drop(writer);
        fs::remove_dir_all(&t).unwrap();
    }

    /// A scratch directory and its private `runs` directory.
    fn scratch_runs(name: &str) -> (PathBuf, PathBuf) {
        let t = scratch(name);
        let runs = t.join("runs");
        fs::DirBuilder::new().mode(0o700).create(&runs).unwrap();
        (t, runs)
    }

    /// A new file of this user's, mode 0600, as sbx makes its entries.
    fn private_file(p: &Path) -> File {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(p)
            .unwrap()
    }

    fn launch(t: &Path) -> AfterRun {
        fs::create_dir_all(t.join("ws")).unwrap();
        let ws = t.join("ws").to_str().unwrap().to_string();
        AfterRun::launch(&[ws], &[], Vec::new(), "", None)
    }

    #[test]
    fn a_slot_is_reused_in_place() {
        let (t, runs) = scratch_runs("reuse");
        let first = Entry::write(&runs, &launch(&t), None).unwrap();
        let path = first.path().to_path_buf();
        let ino = fs::metadata(&path).unwrap().ino();
        // Taken while the run lives: the next run gets another slot.
        let second = Entry::write(&runs, &launch(&t), None).unwrap();
        assert_ne!(second.path(), path);
        second.remove();
        first.remove();
        // Free again: the same file, written over, no new one made.
        let third = Entry::write(&runs, &launch(&t), None).unwrap();
        assert_eq!(third.path(), path);
        assert_eq!(fs::metadata(&path).unwrap().ino(), ino);
        let text = fs::read(&path).unwrap();
        assert!(serde_json::from_slice::<Saved>(&text).is_ok());
        third.remove();
        let entries = fs::read_dir(&runs)
            .unwrap()
            .flatten()
            .filter(|e| is_entry_name(&e.path()))
            .count();
        assert_eq!(entries, 2);
        assert!(finish_dead(&runs).is_empty());
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn a_dead_runs_slot_is_not_written_over() {
        let (t, runs) = scratch_runs("skip");
        let dead = Entry::write(&runs, &launch(&t), None).unwrap();
        let dead_path = dead.path().to_path_buf();
        let before = fs::read(&dead_path).unwrap();
        // Killed: the lock goes, the entry stays.
        drop(dead.file);
        let next = Entry::write(&runs, &launch(&t), None).unwrap();
        assert_ne!(next.path(), dead_path);
        assert_eq!(fs::read(&dead_path).unwrap(), before);
        next.remove();
        let said = finish_dead(&runs);
        assert!(said[0].contains("ended without"), "{said:?}");
        assert!(!holds_entry(&File::open(&dead_path).unwrap()));
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn a_half_written_slot_is_free() {
        let (t, runs) = scratch_runs("half");
        // What a writer killed before its first byte leaves: a hole there.
        let slot = runs.join("0.slot");
        let f = private_file(&slot);
        f.write_all_at(b"\"version\": 1, \"pid\"", 1).unwrap();
        drop(f);
        assert!(finish_dead(&runs).is_empty());
        let e = Entry::write(&runs, &launch(&t), None).unwrap();
        assert_eq!(e.path(), slot);
        e.remove();
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn an_earlier_versions_entry_is_finished_and_removed() {
        let (t, runs) = scratch_runs("legacy");
        let e = Entry::write(&runs, &launch(&t), None).unwrap();
        let text = fs::read(e.path()).unwrap();
        e.remove();
        let old = runs.join("123-456-0.json");
        private_file(&old).write_all(&text).unwrap();
        let said = finish_dead(&runs);
        assert!(said[0].contains("ended without"), "{said:?}");
        assert!(!old.exists());
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn a_slot_not_ours_is_refused() {
        let (t, runs) = scratch_runs("mode");
        let slot = runs.join("0.slot");
        fs::write(&slot, "").unwrap();
        fs::set_permissions(&slot, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let err = Entry::write(&runs, &launch(&t), None).unwrap_err();
        assert!(err.to_string().contains("not a private file"), "{err}");
        fs::remove_dir_all(&t).unwrap();
    }
}
