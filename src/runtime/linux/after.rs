//! The work `sbx run` does once the command's tree has ended
//! (docs/protected.md, "After the run"): what is recorded when the run
//! starts, then the protected paths compared with it ([`planted`]) and
//! the repositories made or changed during the run swept ([`repos`]),
//! every file operation beneath a writable tree's top ([`beneath`]).
//! The warnings are written only once every file is safe.

use super::beneath::Tops;
use super::identity::{self, Record};
use super::{journal, planted, repos, usersite};
use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// What the run starts with.
pub struct AfterRun {
    pub(super) tops: Tops,
    pub(super) records: Vec<Record>,
    pub(super) repo_tops: Vec<String>,
    /// The writable rules' paths (the tops above protections are not).
    pub(super) writable: Vec<String>,
    pub(super) since: repos::Stamp,
    pub(super) usersite: usersite::Snapshot,
    /// The git directories beneath the repository tops at launch
    /// (`repos::known_at_launch`; `None`: that search did not finish).
    pub(super) known: Option<HashSet<repos::Identity>>,
}

impl AfterRun {
    /// Just before the command starts: open the tops (`writable`: the
    /// writable rules' paths) and record what each of `protections` is,
    /// and the start-up files of Python's user site under `home`.
    /// A protection beneath no writable rule (none without Landlock) is
    /// reached from the directory above it.
    /// `runs`: the journal's directory, where the runs going now are
    /// found.
    pub fn launch(
        writable: &[String],
        protections: &[String],
        repo_tops: Vec<String>,
        home: &str,
        runs: Option<&std::path::Path>,
    ) -> Self {
        // Whatever changes from here on, during the walks below too, has
        // a ctime from here on.
        let since = repos::Stamp::now();
        let mut dirs: Vec<String> = writable.to_vec();
        for p in protections.iter().chain(&repo_tops) {
            let covered = writable
                .iter()
                .any(|w| crate::ir::path_within(p, w) && p != w);
            if !covered {
                if let Some((d, _)) = p.rsplit_once('/') {
                    dirs.push(if d.is_empty() { "/" } else { d }.to_string());
                }
            }
        }
        let tops = Tops::open(&dirs);
        let records = identity::record(&tops, protections);
        let usersite = usersite::Snapshot::take(&tops, home);
        // The other runs going now, before and after the walk (one may
        // start meanwhile): what their commands put in the tree since
        // their launch no sweep has looked at yet, so a git directory
        // counts as there at launch only where each of them knew it too.
        // Without repository tops there is nothing to walk, nor to ask
        // the other runs about.
        let runs = runs.filter(|_| !repo_tops.is_empty());
        let live = |known: &mut Vec<_>| {
            if let Some(runs) = runs {
                known.extend(journal::live_known(runs, &repo_tops));
            }
        };
        // No run's entry is released until the second read; without
        // that lock there is no record.
        let walking = runs.map(journal::walking);
        let held = walking.as_ref().is_none_or(Option::is_some);
        // Given up past this, so that no finished run waits for it.
        let until = std::time::Instant::now() + journal::WALK_TIME;
        let mut others = Vec::new();
        live(&mut others);
        let own = repos::known_at_launch(
            &repos::Sweep {
                tops: &tops,
                recorded: &HashSet::new(),
                since,
                writable,
                known: None,
            },
            &repo_tops,
            crate::lower::git::NESTED_DEPTH,
            crate::lower::git::DIR_BUDGET,
            until,
        );
        live(&mut others);
        drop(walking);
        let known = own.filter(|_| held).and_then(|own| narrowed(own, &others));
        AfterRun {
            tops,
            records,
            repo_tops,
            writable: writable.to_vec(),
            since,
            usersite,
            known,
        }
    }

    /// The descriptors the work holds, as the guardian hands them over
    /// ([`super::handover`]), in the journal entry's order.
    pub fn fds(&self) -> super::handover::Fds {
        super::handover::Fds {
            tops: self.tops.all().iter().map(|t| t.raw_fd()).collect(),
            holds: self.records.iter().map(Record::held_fd).collect(),
            site: self.usersite.held_fds(),
        }
    }

    /// Nothing to check or sweep after the run (no writable tree).
    pub fn is_empty(&self) -> bool {
        self.tops.all().is_empty() && self.records.is_empty()
    }

    /// What an earlier run recorded, read back from its journal.
    pub fn from_parts(
        tops: Tops,
        records: Vec<Record>,
        repo_tops: Vec<String>,
        writable: Vec<String>,
        since: repos::Stamp,
        usersite: usersite::Snapshot,
        known: Option<HashSet<repos::Identity>>,
    ) -> Self {
        AfterRun {
            tops,
            records,
            repo_tops,
            writable,
            since,
            usersite,
            known,
        }
    }

    /// Every file operation of the after-run work; the warnings to show.
    /// Done again on the same files it changes nothing (what was moved
    /// aside is absent, and absent is the same as at launch or gone), so
    /// a guardian or a later run may repeat work a killed sbx began.
    /// `own`: this run's journal entry, through which the sweeps of other
    /// runs still going are found ([`journal::left_to_others`]).
    pub fn work(self, own: Option<&std::path::Path>) -> Vec<String> {
        let mut warnings = Vec::new();
        self.usersite.sweep(&self.tops, &mut warnings);
        planted::move_aside(&self.tops, &self.records, &mut warnings);
        let left = own
            .map(|e| journal::left_to_others(e, &self.repo_tops, self.since))
            .unwrap_or_default();
        for t in &left {
            warnings.push(format!(
                "sbx: the search of {t} for repositories made during the run is left to \
                 another sbx run still going there, which does it when it ends"
            ));
        }
        let starts: Vec<String> = self
            .repo_tops
            .iter()
            .filter(|t| !left.contains(t))
            .cloned()
            .collect();
        let recorded: HashSet<String> = self.records.iter().map(|r| r.path.clone()).collect();
        let sweep = repos::Sweep {
            tops: &self.tops,
            recorded: &recorded,
            since: self.since,
            writable: &self.writable,
            known: self.known.as_ref(),
        };
        let swept = repos::sweep(
            &sweep,
            &starts,
            crate::lower::git::NESTED_DEPTH,
            crate::lower::git::DIR_BUDGET,
        );
        repos::report(&swept, crate::lower::git::DIR_BUDGET, &mut warnings);
        if self.known.is_none() && !starts.is_empty() && swept.unswept == 0 {
            // Without it, a git directory moved into place keeps its
            // files' old times, and those decided: said, as a bound met.
            warnings.push(LAUNCH_UNRECORDED.to_string());
        }
        warnings
    }
}

/// Said when the git directories there at launch were not recorded (the
/// launch walk met a bound, or a run going then had no record) and the
/// sweep said nothing of a bound itself.
pub const LAUNCH_UNRECORDED: &str = "sbx: warning: the search at launch for git repositories \
     did not finish (its bounds, or another sbx run going then without its record): a \
     repository moved into place during the run was judged by its files' times alone: \
     review repositories below the workspace before running git there";

/// The git directories found at launch (each with where it was) that
/// count as there at launch: each one beneath another live run's tops
/// only where that run knew it too; `None` where such a run has no
/// record.
fn narrowed(
    own: Vec<(repos::Identity, String)>,
    others: &[(Vec<String>, Option<HashSet<repos::Identity>>)],
) -> Option<HashSet<repos::Identity>> {
    let mut known = HashSet::new();
    for (id, path) in own {
        let mut vouched = true;
        for (tops, theirs) in others {
            let Some(top) = tops.iter().find(|t| crate::ir::path_within(&path, t)) else {
                continue;
            };
            // Deeper below its top than its walk went, that run cannot
            // say: no record (the run says so) rather than every
            // repository there taken for one planted.
            if walk_level(top, &path) > crate::lower::git::NESTED_DEPTH {
                return None;
            }
            vouched &= theirs.as_ref()?.contains(&id);
        }
        if vouched {
            known.insert(id);
        }
    }
    Some(known)
}

/// The level below `top` at which a walk meets `path`: a `.git` and what
/// lies in it at its worktree's level, any other directory at its own.
fn walk_level(top: &str, path: &str) -> usize {
    let rel = path[top.len()..].trim_start_matches('/');
    rel.split('/')
        .take_while(|c| *c != ".git")
        .filter(|c| !c.is_empty())
        .count()
}

/// How long one warning may wait for stderr to take it.
pub const WRITE_WAIT_MS: i32 = 2000;

/// The signals a terminal or a caller's timeout sends to end sbx.
const HELD: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first of [`HELD`] that arrived while they were held (0: none).
static ARRIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn note(sig: libc::c_int) {
    let _ = ARRIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

/// While alive, [`HELD`] are noted instead of acted on, in every thread
/// (a mask would hold them off in this thread only, and sbx has others);
/// once dropped, the previous handlers are back and the first noted
/// signal is raised again, so it still ends sbx, with its files safe.
pub struct Held(Vec<(libc::c_int, libc::sigaction)>);

impl Held {
    pub fn signals() -> Held {
        let mut old = Vec::new();
        for sig in HELD {
            // SAFETY: a handler that only stores an integer.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = note as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                sa.sa_flags = libc::SA_RESTART;
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        Held(old)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        for (sig, prev) in &self.0 {
            // SAFETY: restoring what sigaction returned.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
        let sig = ARRIVED.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // SAFETY: plain raise of a signal to ourselves.
            unsafe { libc::raise(sig) };
        }
    }
}

/// Write each line to stderr, waiting at most `wait_ms` each time for it
/// to accept more (`poll`), so a terminal whose output the command
/// stopped (`tcflow(TCOOFF)`) cannot hold sbx forever. stderr is shared
/// with the user's shell: it stays blocking, and a write is only made
/// once poll says some room is there. What cannot be written is dropped;
/// returns false then.
pub fn write_bounded(lines: &[String], wait_ms: i32) -> bool {
    let err = std::io::stderr();
    let fd = err.as_raw_fd();
    for line in lines {
        let text = format!("{line}\n");
        let mut rest = text.as_bytes();
        while !rest.is_empty() {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut p, 1, wait_ms) } != 1 || p.revents & libc::POLLOUT == 0 {
                return false;
            }
            // A terminal that polls writable takes at least some bytes
            // without blocking; at most a pipe's atomic size at a time.
            let n = rest.len().min(libc::PIPE_BUF);
            // SAFETY: a valid buffer of n bytes.
            let w = unsafe { libc::write(fd, rest.as_ptr().cast(), n) };
            if w <= 0 {
                return false;
            }
            rest = &rest[w as usize..];
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run going then without a record (its launch walk met a bound,
    /// or an earlier version) leaves this run none either; another
    /// run's record counts only beneath its own tops.
    #[test]
    fn narrowed_by_the_runs_going_then() {
        let own = vec![
            ((1, 1), "/ws/.git".to_string()),
            ((1, 2), "/ws/lib/x/.git".to_string()),
        ];
        let inner = |k: Option<HashSet<repos::Identity>>| vec![(vec!["/ws/lib".to_string()], k)];
        let all: HashSet<_> = [(1, 1), (1, 2)].into();
        assert_eq!(narrowed(own.clone(), &[]), Some(all.clone()));
        assert_eq!(narrowed(own.clone(), &inner(Some(all.clone()))), Some(all));
        assert_eq!(
            narrowed(own.clone(), &inner(Some(HashSet::new()))),
            Some([(1, 1)].into())
        );
        assert_eq!(narrowed(own.clone(), &inner(None)), None);
        // A run whose top lies four levels above a repository did not
        // walk there: no record, rather than a false alarm.
        let outer = vec![(vec!["/".to_string()], Some(HashSet::new()))];
        assert_eq!(narrowed(own.clone(), &outer), Some(HashSet::new()));
        let deep = vec![((1, 3), "/a/b/c/d/.git".to_string())];
        assert_eq!(narrowed(deep, &outer), None);
        assert_eq!(walk_level("/ws", "/ws/a/b/.git/modules/x"), 2);
        assert_eq!(walk_level("/ws", "/ws/.git"), 0);
        assert_eq!(walk_level("/ws/", "/ws/a/bare.git"), 2);
    }

    /// Without a launch record the sweep says so, unless it already said
    /// that it met a bound.
    #[test]
    fn a_missing_launch_record_is_said() {
        let t = std::env::temp_dir().join(format!("sbx-after-unrecorded-{}", std::process::id()));
        let ws = t.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let w = ws.to_str().unwrap().to_string();
        let run = |known| {
            let mut a = AfterRun::launch(std::slice::from_ref(&w), &[], vec![w.clone()], "", None);
            a.known = known;
            a.work(None)
        };
        assert!(run(Some(HashSet::new())).is_empty());
        assert_eq!(run(None), [LAUNCH_UNRECORDED]);
        std::fs::remove_dir_all(&t).unwrap();
    }
}
