//! The guardian's hand-over to a fresh sbx (docs/protected.md, "If sbx
//! is killed").
//!
//! The guardian shares sbx's memory and makes system calls only: a fork
//! copied sbx's page tables and made every page sbx wrote afterwards a
//! copy-on-write fault, about 0.2 ms of each run's start
//! (docs/performance.md). Nothing of sbx's memory can be trusted once
//! sbx is killed (an allocator's lock may be held for ever), so a
//! guardian that finds sbx gone runs a fresh sbx in its place:
//! `sbx __after-run ENTRY SLOT TOPS HOLDS SITE`. The work is the run's
//! journal entry, which the guardian's descriptor on the slot keeps
//! locked; the descriptors held since launch come with it (the writable
//! tops, and what each protected path and each user-site start-up file
//! was), so that what is protected keeps its identity whatever was
//! renamed above it, as in sbx itself.

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

/// The hidden first argument that makes sbx the guardian's finisher.
pub const ARG: &str = "__after-run";

/// The longest argument the kernel takes (`MAX_ARG_STRLEN`, 32 pages),
/// and the most the hand-over passes in all: a run holding more
/// descriptors than that gets a forked guardian instead.
const MAX_ONE: usize = 32 * 4096 - 1;
const MAX_ALL: usize = 256 * 1024;

/// The descriptors the after-run work holds, as numbers in sbx.
pub struct Fds {
    pub tops: Vec<RawFd>,
    pub holds: Vec<Option<RawFd>>,
    pub site: Vec<Option<RawFd>>,
}

impl Fds {
    /// Every descriptor named, to be left open across `execve`.
    pub fn all(&self) -> Vec<RawFd> {
        let mut out = self.tops.clone();
        out.extend(self.holds.iter().flatten());
        out.extend(self.site.iter().flatten());
        out
    }
}

/// The finisher's arguments (after the program's name); `None` when
/// they would be too long for `execve`.
pub fn argv(entry: &std::path::Path, slot: RawFd, fds: &Fds) -> Option<Vec<CString>> {
    // One string per list, given up as soon as it is too long (a large
    // policy's records run to hundreds of thousands).
    let list = |fds: &mut dyn Iterator<Item = Option<RawFd>>| -> Option<Vec<u8>> {
        use std::fmt::Write;
        let mut text = String::new();
        for (i, f) in fds.enumerate() {
            if i > 0 {
                text.push(',');
            }
            if let Some(f) = f {
                let _ = write!(text, "{f}");
            }
            if text.len() > MAX_ONE {
                return None;
            }
        }
        Some(text.into_bytes())
    };
    let args = [
        ARG.as_bytes().to_vec(),
        entry.as_os_str().as_bytes().to_vec(),
        slot.to_string().into_bytes(),
        list(&mut fds.tops.iter().map(|&f| Some(f)))?,
        list(&mut fds.holds.iter().copied())?,
        list(&mut fds.site.iter().copied())?,
    ];
    if args.iter().any(|a| a.len() > MAX_ONE) || args.iter().map(Vec::len).sum::<usize>() > MAX_ALL
    {
        return None;
    }
    args.into_iter().map(|a| CString::new(a).ok()).collect()
}

/// What the finisher was handed, its descriptors owned.
pub struct Given {
    pub entry: std::path::PathBuf,
    pub slot: std::fs::File,
    pub held: Held,
}

/// Descriptors still open on what an entry records, in its order: the
/// tops, then what each record's path and each user-site file was.
#[derive(Default)]
pub struct Held {
    pub tops: Vec<Option<OwnedFd>>,
    pub holds: Vec<Option<OwnedFd>>,
    pub site: Vec<Option<OwnedFd>>,
}

/// Read the finisher's arguments (those after [`ARG`]). Every number
/// must be an open descriptor above standard error, named once.
pub fn parse(args: &[OsString]) -> Result<Given, String> {
    let [entry, slot, tops, holds, site] = args else {
        return Err(format!("{ARG}: five arguments expected"));
    };
    let numbers = |text: &OsString| -> Result<Vec<Option<RawFd>>, String> {
        let text = text.to_str().ok_or(format!("{ARG}: not a list"))?;
        if text.is_empty() {
            return Ok(Vec::new());
        }
        text.split(',')
            .map(|n| match n {
                "" => Ok(None),
                n => n
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{ARG}: {n:?} is not a descriptor")),
            })
            .collect()
    };
    let slot = match numbers(slot)?[..] {
        [Some(n)] => n,
        _ => return Err(format!("{ARG}: one slot expected")),
    };
    let lists = [numbers(tops)?, numbers(holds)?, numbers(site)?];
    let mut seen = std::collections::HashSet::new();
    for n in lists.iter().flatten().flatten().chain([&slot]) {
        // SAFETY: F_GETFD only asks whether `n` is open.
        if *n <= 2 || !seen.insert(*n) || unsafe { libc::fcntl(*n, libc::F_GETFD) } < 0 {
            return Err(format!("{ARG}: {n} is not a descriptor handed over"));
        }
    }
    let own = |n: RawFd| {
        // SAFETY: open (checked above), inherited across execve for this
        // process, and owned by nothing else here (each number once).
        let fd = unsafe { OwnedFd::from_raw_fd(n) };
        // SAFETY: F_SETFD on a descriptor owned here.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        fd
    };
    let [tops, holds, site] = lists.map(|l| l.into_iter().map(|n| n.map(own)).collect::<Vec<_>>());
    Ok(Given {
        entry: entry.into(),
        slot: own(slot).into(),
        held: Held { tops, holds, site },
    })
}

/// `fd` is still the object recorded as (`dev`, `ino`).
pub fn is(fd: &OwnedFd, dev: libc::dev_t, ino: libc::ino_t) -> bool {
    super::beneath::fstat(fd).is_ok_and(|st| st.st_dev == dev && st.st_ino == ino)
}

/// `sbx __after-run …`: finish the run whose entry was handed over.
pub fn main(args: &[OsString]) -> i32 {
    match parse(args) {
        Ok(given) => {
            let warnings = super::journal::finish_handed(given);
            let _ = super::after::write_bounded(&warnings, super::after::WRITE_WAIT_MS);
            0
        }
        Err(e) => {
            eprintln!("sbx: {e}");
            crate::runtime::EXIT_SBX_FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list longer than `execve` takes in one argument gives no
    /// arguments (the run gets a forked guardian); one just within does.
    #[test]
    fn too_many_descriptors_for_execve() {
        let entry = std::path::Path::new("/state/runs/0.slot");
        let fds = |holds: Vec<Option<RawFd>>| Fds {
            tops: vec![3],
            holds,
            site: Vec::new(),
        };
        // "10," per descriptor: 3 bytes.
        let fits = MAX_ONE / 3;
        let args = argv(entry, 4, &fds(vec![Some(10); fits])).unwrap();
        assert_eq!(args[4].as_bytes().len(), fits * 3 - 1);
        assert!(argv(entry, 4, &fds(vec![Some(10); fits + 1])).is_none());
        // Absent holds cost a comma each.
        assert!(argv(entry, 4, &fds(vec![None; fits])).is_some());
    }

    /// The arguments made for a run are read back as the same
    /// descriptors; a number named twice, a closed one and standard
    /// error are refused.
    #[test]
    fn arguments_round_trip() {
        let open = || std::fs::File::open("/").unwrap();
        let (a, b, c, slot) = (open(), open(), open(), open());
        let fds = Fds {
            tops: vec![a.as_raw_fd()],
            holds: vec![None, Some(b.as_raw_fd())],
            site: vec![Some(c.as_raw_fd())],
        };
        let entry = std::path::Path::new("/state/runs/0.slot");
        let args: Vec<OsString> = argv(entry, slot.as_raw_fd(), &fds)
            .unwrap()
            .into_iter()
            .skip(1)
            .map(|c| std::ffi::OsStr::from_bytes(c.as_bytes()).to_os_string())
            .collect();
        let nums = [a, b, c, slot].map(std::os::fd::IntoRawFd::into_raw_fd);
        let g = parse(&args).unwrap();
        let raw = |v: &[Option<OwnedFd>]| -> Vec<Option<RawFd>> {
            v.iter()
                .map(|f| f.as_ref().map(|f| f.as_raw_fd()))
                .collect()
        };
        assert_eq!(g.entry, entry);
        assert_eq!(g.slot.as_raw_fd(), nums[3]);
        assert_eq!(raw(&g.held.tops), [Some(nums[0])]);
        assert_eq!(raw(&g.held.holds), [None, Some(nums[1])]);
        assert_eq!(raw(&g.held.site), [Some(nums[2])]);
        drop(g);
        // Each case with a slot of its own, open: only the list differs.
        let ok = |tops: String| {
            let slot = std::os::fd::IntoRawFd::into_raw_fd(open());
            let a: Vec<OsString> = [
                "/e".into(),
                slot.to_string(),
                tops,
                String::new(),
                String::new(),
            ]
            .map(OsString::from)
            .to_vec();
            let r = parse(&a);
            if r.is_err() {
                // SAFETY: refused before anything was owned: still ours.
                unsafe { libc::close(slot) };
            }
            r.is_ok()
        };
        let fresh = || std::os::fd::IntoRawFd::into_raw_fd(open());
        assert!(ok(fresh().to_string()), "control");
        let again = fresh();
        assert!(!ok(format!("{again},{again}")));
        assert!(!ok("2".into()));
        assert!(!ok("999999".into()));
        assert!(!ok("x".into()));
    }
}
