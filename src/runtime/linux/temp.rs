//! The run's own temp directories (POLICY.md §13, docs/linux.md): under
//! the new root, a rule on `/tmp`, `/var/tmp`, `/dev/shm` or `$TMPDIR`
//! shows an empty directory of this run instead of the host's, whose
//! UNIX sockets (tmux, ssh-agent, X11, editors' IPC) would otherwise be
//! connectable. `/tmp`, `/var/tmp` and `$TMPDIR` live on disk, since
//! builds write large temp files, in one directory made for the run
//! (0700) and removed after it. `/dev/shm` is a fresh tmpfs, as the
//! host's is (the JVM's ZGC, for one, looks for a tmpfs there), made in
//! the child and gone with the run's mount namespace.
//!
//! A rule that names a path beneath a host temp directory (a workspace
//! made by `mktemp -d`, say) still shows that host path: it is mounted
//! on an empty stub made here, at the same place in the private copy.

mod idle;

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The host's shared temp directories on Linux.
const SHARED: [&str; 3] = ["/tmp", "/var/tmp", SHM];

/// Shared memory: a fresh tmpfs rather than a directory on disk.
pub const SHM: &str = "/dev/shm";

/// Where the run's directory is made: outside every private path's
/// view (the child's `/var/tmp` is its own), on disk.
const PARENTS: [&str; 2] = ["/var/tmp", "/tmp"];

/// `path` is a shared temp directory (`temp`: the host's `$TMPDIR`).
pub fn is_shared(path: &str, temp: &str) -> bool {
    SHARED.contains(&path) || (path == temp && temp != "/")
}

/// The run's temp directories; removed when dropped.
#[derive(Debug)]
pub struct PrivateTemp {
    base: PathBuf,
    /// (rule path, the private directory shown there, opened as
    /// Landlock rules and mounts want it).
    dirs: Vec<(String, PathBuf, File)>,
    /// A rule names `/dev/shm`: the new root gets a fresh tmpfs there.
    pub shm: bool,
    /// The after-run work removes `base` ([`PrivateTemp::hand_over`]).
    handed: bool,
    /// A parked base's empty directories, taken for stubs before any
    /// is made (`idle`).
    pool: std::cell::RefCell<Option<idle::Pool>>,
}

impl PrivateTemp {
    /// Shared temp directories among `rule_paths` (with `temp`, the
    /// host's `$TMPDIR`), each given a fresh directory; `None` when no
    /// rule names one.
    pub fn make<'a>(
        rule_paths: impl Iterator<Item = &'a str>,
        temp: &str,
    ) -> io::Result<Option<PrivateTemp>> {
        let mut names: Vec<&str> = rule_paths.filter(|p| is_shared(p, temp)).collect();
        names.sort_unstable();
        names.dedup();
        let shm = names.contains(&SHM);
        names.retain(|n| *n != SHM);
        if names.is_empty() && !shm {
            return Ok(None);
        }
        // A parked base of an earlier run, emptied and checked (`idle`),
        // or a fresh one.
        let parked = if names.is_empty() {
            None
        } else {
            let run_name = run_name();
            PARENTS
                .iter()
                .find_map(|parent| idle::take(parent, names.len(), &run_name))
        };
        let (parked, pool) = parked.unzip();
        let mut out = PrivateTemp {
            base: match (&parked, names.is_empty()) {
                (Some(b), _) => b.clone(),
                (None, true) => PathBuf::new(),
                (None, false) => fresh_base()?,
            },
            dirs: Vec::new(),
            shm,
            handed: false,
            // Checked with the base when it was taken.
            pool: std::cell::RefCell::new(pool),
        };
        for (i, name) in names.into_iter().enumerate() {
            let dir = out.base.join(i.to_string());
            if parked.is_none() {
                // Like the host's: anyone may create, only owners delete.
                std::fs::DirBuilder::new().mode(0o1777).create(&dir)?;
            }
            let handle = super::kernel::open_path(
                dir.to_str()
                    .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))?,
            )?
            .handle;
            // The umask took some bits. Set through the handle, opened
            // without following a symlink: where another command may
            // write in the parent, a name swapped meanwhile for a
            // symlink must not have sbx change the mode of what it
            // leads to.
            // SAFETY: an open descriptor.
            if parked.is_none() && !unsafe { super::nofollow::chmod_fd(handle.as_raw_fd(), 0o1777) }
            {
                return Err(io::Error::last_os_error());
            }
            out.dirs.push((name.to_string(), dir, handle));
        }
        Ok(Some(out))
    }

    /// The private directory shown at `rule_path`, if it is one, and
    /// its handle.
    pub fn source(&self, rule_path: &str) -> Option<(&Path, &File)> {
        self.dirs
            .iter()
            .find(|(p, _, _)| p == rule_path)
            .map(|(_, d, f)| (d.as_path(), f))
    }

    /// (rule path, handle) of each private directory: each gets the
    /// Landlock rights of the rule it stands for.
    pub fn handles(&self) -> impl Iterator<Item = (&str, &File)> {
        self.dirs.iter().map(|(p, _, f)| (p.as_str(), f))
    }

    /// Make the empty directory or file that `rule_path` (beneath the
    /// private path `under`) is mounted on, with its parents. Another
    /// command that may write under the host's `/var/tmp` (a rule on
    /// it, `namespaces = "never"`) could swap a directory on the way for
    /// a symlink: each step is taken from the one above, beneath the
    /// private directory's handle, through no symlink.
    pub fn stub(&self, under: &str, rule_path: &str, is_dir: bool) -> io::Result<()> {
        let Some((_, top)) = self.source(under) else {
            return Ok(());
        };
        let rel = rule_path[under.len()..].trim_start_matches('/');
        let mut names = Vec::new();
        for n in rel.split('/').filter(|n| !n.is_empty()) {
            if n == "." || n == ".." {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            }
            names.push(std::ffi::CString::new(n).map_err(|_| io::ErrorKind::InvalidInput)?);
        }
        let Some(last) = names.pop() else {
            return Ok(());
        };
        let mut dir = std::os::fd::OwnedFd::from(top.try_clone()?);
        for n in &names {
            dir = self.stub_dir(&dir, n)?;
        }
        if is_dir {
            return self.stub_dir(&dir, &last).map(drop);
        }
        // SAFETY: an open directory and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                last.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        drop(unsafe { File::from_raw_fd(fd) });
        Ok(())
    }
}

impl PrivateTemp {
    /// The directory `name` in `dir`, taken from the pool while it
    /// lasts, or made; opened, not through a symlink.
    fn stub_dir(
        &self,
        dir: &std::os::fd::OwnedFd,
        name: &std::ffi::CStr,
    ) -> io::Result<std::os::fd::OwnedFd> {
        match super::nofollow::open_dir(dir, name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            r => return r,
        }
        let taken = self
            .pool
            .borrow_mut()
            .as_mut()
            .is_some_and(|pool| pool.take_out(dir, name));
        // SAFETY: an open directory and a NUL-terminated name.
        if !taken && unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) } != 0 {
            return Err(io::Error::last_os_error());
        }
        super::nofollow::open_dir(dir, name)
    }

    /// Leave the removal to the after-run work, which gets the path
    /// (the handles stay open until this is dropped).
    pub fn hand_over(&mut self) -> Option<PathBuf> {
        if self.handed || self.dirs.is_empty() {
            return None;
        }
        self.handed = true;
        Some(self.base.clone())
    }
}

impl Drop for PrivateTemp {
    fn drop(&mut self) {
        if self.dirs.is_empty() || self.handed {
            return;
        }
        if let Some(e) = remove_base(&self.base) {
            eprintln!("{e}");
        }
    }
}

/// Remove a run's temp directory; the warning when it cannot be.
/// std's remove_dir_all opens each level without following symlinks, so
/// a link the command left points nowhere it can reach. A directory it
/// made unreadable is opened up first.
pub fn remove_base(base: &Path) -> Option<String> {
    if std::fs::remove_dir_all(base).is_err() {
        super::nofollow::open_up(base);
        if let Err(e) = std::fs::remove_dir_all(base) {
            if e.kind() != io::ErrorKind::NotFound {
                return Some(format!(
                    "sbx: warning: cannot remove the run's temp directory {}: {e}",
                    base.display()
                ));
            }
        }
    }
    None
}

/// Remove `dir` and what it holds, opening up directories left
/// unreadable (an overlay's work directory is mode 0) first.
pub fn remove_tree(dir: &Path) -> io::Result<()> {
    if std::fs::remove_dir_all(dir).is_err() {
        super::nofollow::open_up(dir);
        return std::fs::remove_dir_all(dir);
    }
    Ok(())
}

/// `base`, read back from a journal, is a run's temp directory as
/// [`fresh_base`] makes them: `sbx-run-*` right in one of [`PARENTS`], a
/// real directory of this user's.
pub fn check_base(base: &Path) -> io::Result<PathBuf> {
    let bad = || io::Error::other("not a temp directory of an sbx run");
    let parent = base.parent().and_then(Path::to_str).ok_or_else(bad)?;
    let name = base.file_name().and_then(|n| n.to_str()).ok_or_else(bad)?;
    if !PARENTS.contains(&parent) || !name.starts_with("sbx-run-") || name.contains('/') {
        return Err(bad());
    }
    match std::fs::symlink_metadata(base) {
        Ok(m) => {
            use std::os::unix::fs::MetadataExt;
            // SAFETY: geteuid has no preconditions.
            if !m.is_dir() || m.uid() != unsafe { libc::geteuid() } {
                return Err(bad());
            }
        }
        // Removed already: nothing to do, and nothing wrong.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(base.to_path_buf())
}

/// A new directory for the run (0700), under the first parent that
/// takes one. The name is not secret: creation fails on anything that
/// is there already, a symlink included, and the next name is tried.
fn fresh_base() -> io::Result<PathBuf> {
    let run_name = run_name();
    let mut last = io::Error::from(io::ErrorKind::NotFound);
    for parent in PARENTS {
        for n in 0..64u32 {
            let dir = Path::new(parent).join(run_name(n));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(dir),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => {
                    last = e;
                    break;
                }
            }
        }
    }
    Err(last)
}

/// The names of this run's directory: `sbx-run-PID-NANOS-N`, the first
/// N that is free.
fn run_name() -> impl Fn(u32) -> String {
    let tag = super::run_tag();
    move |n| format!("sbx-run-{tag}-{n}")
}

/// After a run: park its temp directory for the next run (`idle`), or
/// remove it; the warning when it can be neither.
pub fn park_or_remove(base: &Path) -> Option<String> {
    if idle::park(base) {
        return None;
    }
    remove_base(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_temp_rules_get_fresh_directories_removed_after() {
        let t = PrivateTemp::make(["/tmp", "/usr", "/dev/shm", "/tmp"].into_iter(), "/tmp")
            .unwrap()
            .unwrap();
        // /dev/shm is a tmpfs the child makes: no directory here.
        assert_eq!(t.dirs.len(), 1);
        assert!(t.shm && t.source(SHM).is_none());
        let tmp = t.source("/tmp").unwrap().0.to_path_buf();
        assert!(t.source("/usr").is_none());
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        t.stub("/tmp", "/tmp/a/b/ws", true).unwrap();
        t.stub("/tmp", "/tmp/a/f", false).unwrap();
        assert!(tmp.join("a/b/ws").is_dir() && tmp.join("a/f").is_file());
        // What the command leaves, however locked, goes with the run.
        std::fs::create_dir(tmp.join("locked")).unwrap();
        std::fs::write(tmp.join("locked/x"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tmp.join("link")).unwrap();
        std::fs::set_permissions(
            tmp.join("locked"),
            std::os::unix::fs::PermissionsExt::from_mode(0o000),
        )
        .unwrap();
        let base = t.base.clone();
        drop(t);
        assert!(!base.exists());
        assert!(Path::new("/etc/passwd").exists());
    }

    /// `base` made with a private `/tmp` (`base/0`, holding `dirs`) and
    /// a pool of `pooled` directories, as a taken base has them.
    fn stub_base(base: &Path, dirs: &[&str], pooled: usize) -> PrivateTemp {
        let private = base.join("0");
        std::fs::create_dir_all(&private).unwrap();
        for d in dirs {
            std::fs::create_dir_all(private.join(d)).unwrap();
        }
        std::fs::create_dir_all(base.join(idle::POOL)).unwrap();
        for n in 0..pooled {
            std::fs::create_dir(base.join(idle::POOL).join(n.to_string())).unwrap();
        }
        for d in [base, &base.join(idle::POOL)] {
            std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .unwrap();
        }
        PrivateTemp {
            base: base.to_path_buf(),
            dirs: vec![(
                "/tmp".into(),
                private.clone(),
                File::open(&private).unwrap(),
            )],
            shm: false,
            handed: true,
            pool: std::cell::RefCell::new(Some(idle::Pool::checked(base).unwrap())),
        }
    }

    /// Stubs take a parked base's pooled directories first, parents
    /// first, then are made.
    #[test]
    fn stubs_come_from_the_pool() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir_in("/var/tmp").unwrap();
        let base = t.path().join("sbx-run-stubs");
        let private = base.join("0");
        let ino = |p: &Path| std::fs::symlink_metadata(p).unwrap().ino();
        let temp = stub_base(&base, &[], 2);
        let pooled = [ino(&base.join("pool/0")), ino(&base.join("pool/1"))];
        temp.stub("/tmp", "/tmp/tmp.X/ws", true).unwrap();
        temp.stub("/tmp", "/tmp/tmp.X/policy.toml", false).unwrap();
        temp.stub("/tmp", "/tmp/other", true).unwrap();
        assert!(pooled.contains(&ino(&private.join("tmp.X"))));
        assert!(pooled.contains(&ino(&private.join("tmp.X/ws"))));
        assert!(!pooled.contains(&ino(&private.join("other"))));
        assert!(private.join("tmp.X/policy.toml").is_file());
        assert_eq!(std::fs::read_dir(base.join(idle::POOL)).unwrap().count(), 0);
    }

    /// A directory on the way to a stub swapped for a symlink to a
    /// directory of the user's while the stubs are made (another command
    /// writing under `/var/tmp`): nothing is made, moved or removed
    /// there; the stub fails instead.
    #[test]
    fn a_directory_swapped_for_a_symlink_while_stubbing_steers_nothing() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let t = tempfile::tempdir_in("/var/tmp").unwrap();
        let victim = t.path().join("victim");
        std::fs::create_dir_all(victim.join("keep")).unwrap();
        let mut failed = 0;
        // 300 rounds at least, more until some stubs met the symlink (a
        // busy machine may run the swapping thread late).
        for round in 0..5000 {
            if round >= 300 && failed > 0 {
                break;
            }
            let base = t.path().join("sbx-run-stubs");
            let private = base.join("0");
            let temp = stub_base(&base, &["a"], 4);
            let (stop, started) = (AtomicBool::new(false), AtomicBool::new(false));
            std::thread::scope(|s| {
                s.spawn(|| {
                    started.store(true, Ordering::Relaxed);
                    super::super::nofollow::tests::swap_for_symlink(
                        &stop,
                        &private.join("a"),
                        &victim,
                    )
                });
                while !started.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
                for stub in ["/tmp/a/b/c", "/tmp/a/d/e"] {
                    failed += usize::from(temp.stub("/tmp", stub, true).is_err());
                }
                failed += usize::from(temp.stub("/tmp", "/tmp/a/f", false).is_err());
                stop.store(true, Ordering::Relaxed);
            });
            let left: Vec<_> = std::fs::read_dir(&victim)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(
                left,
                ["keep"],
                "round {round}: made or moved through the symlink"
            );
            std::fs::remove_dir_all(&base).unwrap();
        }
        // The race was run: some stubs met the symlink.
        assert!(failed > 0);
    }

    #[test]
    fn no_temp_rule_makes_nothing() {
        assert!(PrivateTemp::make(["/usr", "/tmp/ws"].into_iter(), "/tmp")
            .unwrap()
            .is_none());
    }

    #[test]
    fn tmpdir_counts_as_temp() {
        let t = PrivateTemp::make(["/run/user/1/t"].into_iter(), "/run/user/1/t")
            .unwrap()
            .unwrap();
        assert!(t.source("/run/user/1/t").is_some());
    }
}
