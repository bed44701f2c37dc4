//! The after-run work, and the guardian that does it whether or not sbx
//! survives the run (docs/protected.md, "If sbx is killed").
//!
//! Once the command has started, sbx starts a guardian: a process of its
//! own session (so a terminal's Ctrl-C and a harness's kill of sbx's
//! process group do not reach it) that ignores the signals which end
//! sbx. When the run ends, sbx itself moves aside what was planted,
//! sweeps, removes the run's temp directory and the journal entry,
//! writes the warnings, and then tells the guardian it is done (so no
//! second process's work lies between the command's end and sbx's). If
//! sbx dies first, the guardian sees its end of a pipe close without
//! that word, waits for the sandbox's tree to end (a pidfd on the PID
//! namespace's init, which dies with sbx) and has the same work done
//! again (done twice, it changes nothing the second time). If both are
//! killed, the journal entry stays for the next `sbx run` or `sbx sweep`.
//!
//! The guardian shares sbx's memory and makes system calls only; the
//! work it has done is a fresh sbx's, handed the run's journal entry and
//! the descriptors sbx held ([`super::handover`]). Where a run has no
//! entry, or holds too many descriptors to hand over, the guardian is a
//! fork of sbx that does the work itself.

use super::after::{self, AfterRun, Held};
use super::child::{clone_blocked, Stack};
use super::handover;
use super::journal::Entry;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

/// Everything the after-run work needs, held by whoever does it.
pub struct Work {
    after: Option<AfterRun>,
    temp: Option<PathBuf>,
    entry: Option<Entry>,
}

impl Work {
    pub fn new(after: AfterRun, temp: Option<PathBuf>, entry: Option<Entry>) -> Work {
        Work {
            after: Some(after),
            temp,
            entry,
        }
    }

    /// Nothing to check, sweep, remove or mark done after the run.
    fn is_empty(&self) -> bool {
        self.after.as_ref().is_none_or(AfterRun::is_empty)
            && self.temp.is_none()
            && self.entry.is_none()
    }

    /// Do it all (the command's tree has ended); the warnings to show.
    pub fn run(mut self) -> Vec<String> {
        if let Some(e) = &self.entry {
            e.command_ended();
        }
        let own = self.entry.as_ref().map(|e| e.path().to_path_buf());
        let mut warnings = self
            .after
            .take()
            .map(|a| a.work(own.as_deref()))
            .unwrap_or_default();
        if let Some(t) = self.temp.take() {
            warnings.extend(super::temp::park_or_remove(&t));
        }
        // Last: until here a killed worker leaves the entry to the next run.
        if let Some(e) = self.entry.take() {
            e.remove();
        }
        warnings
    }

    /// Do it all, then write the warnings (each given a bounded time), with
    /// SIGINT, SIGTERM and SIGHUP held off meanwhile so that a Ctrl-C
    /// cannot leave half of it undone and the shell's prompt comes after.
    pub fn finish(self) {
        let held = Held::signals();
        let _ = after::write_bounded(&self.run(), after::WRITE_WAIT_MS);
        drop(held);
    }
}

impl Drop for Work {
    /// Not run (nothing was started): the temp directory and the entry go.
    fn drop(&mut self) {
        if let Some(t) = self.temp.take() {
            if let Some(w) = super::temp::remove_base(&t) {
                eprintln!("{w}");
            }
        }
        if let Some(e) = self.entry.take() {
            e.remove();
        }
    }
}

/// sbx's side of a started guardian: sbx still does the work itself
/// when it lives to the end (nothing waits on another process then),
/// and the guardian does it only if sbx does not say it is done.
pub struct Guardian {
    pub pid: libc::pid_t,
    /// Until [`Guardian::finish`] has said the word.
    done: Option<OwnedFd>,
    /// Until [`Guardian::finish`] does it.
    work: Option<Work>,
    /// What a guardian sharing sbx's memory reads: freed once it is
    /// reaped, never before (were sbx to drop it early, the guardian
    /// would read freed memory).
    light: Option<std::mem::ManuallyDrop<Box<Light>>>,
}

impl Drop for Guardian {
    /// Dropped unfinished (sbx unwinding from a panic): the work is the
    /// guardian's, which sees the pipe close. sbx's own copy is neither
    /// done nor undone here: dropping it would free the journal's slot
    /// and remove the temp directory, and a guardian that hands the work
    /// to a fresh sbx would then find nothing to finish.
    fn drop(&mut self) {
        if let Some(work) = self.work.take() {
            std::mem::forget(work);
        }
    }
}

/// What the guardian that shares sbx's memory reads, made before it
/// starts and not changed while it lives.
struct Light {
    stack: Stack,
    go: RawFd,
    /// sbx's end of the pipe: closed in the guardian, so that sbx's end
    /// is the last.
    done: RawFd,
    /// -1: none.
    pidfd: RawFd,
    tree: libc::pid_t,
    not_kept: Vec<RawFd>,
    /// Left open across `execve`: the entry's slot and what the work holds.
    handed: Vec<RawFd>,
    _argv: Vec<CString>,
    /// `_argv`'s pointers, and a null.
    argv: Vec<*const libc::c_char>,
}

/// What ends sbx, and what a terminal sends to a background session.
const IGNORED: [libc::c_int; 8] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGPIPE,
];

/// Start the guardian for the tree whose end is `tree`'s (the PID
/// namespace's init, or the command without one). Must be called while
/// sbx has no other thread (where the guardian must be a fork, it runs
/// on after it), and while `tree` is unreaped (its pidfd is opened
/// here). On failure, or when there is nothing to do after the run, the
/// work comes back, for sbx to do itself.
/// `not_kept`: descriptors of sbx's the guardian closes at once, the
/// sockets on which sbx receives what the sandbox's side sends it. A
/// descriptor still in flight on one (the `listen` check's listener,
/// sent as the command starts) would otherwise live on in the
/// guardian's copy of the socket if sbx died before taking it: with
/// the listener alive and no one to answer it, the command's `listen`
/// would wait for ever, and the guardian with it, for the tree's end.
pub fn start(
    tree: libc::pid_t,
    work: Work,
    not_kept: &[std::os::fd::RawFd],
) -> Result<Guardian, Work> {
    if work.is_empty() {
        // Nothing to do after the run: nothing to guard.
        return Err(work);
    }
    // SAFETY: pidfd_open on our own unreaped child.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, tree, 0) };
    // SAFETY: a new descriptor, owned here.
    let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd as i32) });
    let mut fds = [0; 2];
    // SAFETY: a valid 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(work);
    }
    // SAFETY: both were just made and are owned here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if let Some(light) = Light::new(&work, &rd, &wr, pidfd.as_ref(), tree, not_kept) {
        let light = std::mem::ManuallyDrop::new(Box::new(light));
        // SAFETY: `light_main` makes system calls only, on its own stack
        // and on `light`, which lives until the guardian is reaped (or,
        // were sbx to drop the guardian unreaped, for ever).
        let pid = unsafe {
            clone_blocked(
                light_main,
                &light.stack,
                libc::CLONE_VM | libc::SIGCHLD,
                &**light as *const Light as *mut libc::c_void,
            )
        };
        if let Ok(pid) = pid {
            // sbx's copies of `rd` and the pidfd go; the guardian has its own.
            return Ok(Guardian {
                pid,
                done: Some(wr),
                work: Some(work),
                light: Some(light),
            });
        }
        drop(std::mem::ManuallyDrop::into_inner(light));
    }
    // SAFETY: fork in a process with no other thread; the child only
    // runs `guard`, which ends in _exit.
    match unsafe { libc::fork() } {
        -1 => Err(work),
        0 => {
            drop(wr);
            for &fd in not_kept {
                // SAFETY: this process's copy of sbx's descriptor; what
                // owns it in sbx's memory is never dropped here (`guard`
                // ends in `_exit`).
                unsafe { libc::close(fd) };
            }
            guard(rd, pidfd, tree, work)
        }
        pid => Ok(Guardian {
            pid,
            done: Some(wr),
            work: Some(work),
            light: None,
        }),
    }
}

impl Light {
    /// `None` where the work cannot be handed over: no journal entry,
    /// or more descriptors than `execve`'s arguments can name.
    fn new(
        work: &Work,
        go: &OwnedFd,
        done: &OwnedFd,
        pidfd: Option<&OwnedFd>,
        tree: libc::pid_t,
        not_kept: &[RawFd],
    ) -> Option<Light> {
        let entry = work.entry.as_ref()?;
        let after = work.after.as_ref()?;
        let fds = after.fds();
        let mut args = vec![c"sbx".to_owned()];
        args.extend(handover::argv(entry.path(), entry.fd(), &fds)?);
        let mut handed = fds.all();
        handed.push(entry.fd());
        let argv = args
            .iter()
            .map(|a| a.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        Some(Light {
            stack: Stack::new().ok()?,
            go: go.as_raw_fd(),
            done: done.as_raw_fd(),
            pidfd: pidfd.map_or(-1, |f| f.as_raw_fd()),
            tree,
            not_kept: not_kept.to_vec(),
            handed,
            _argv: args,
            argv,
        })
    }
}

impl Guardian {
    /// The tree has ended: sbx does the work, with SIGINT, SIGTERM and
    /// SIGHUP held off so that the shell's prompt comes after the
    /// warnings, then tells the guardian it is done, runs `meanwhile`
    /// (what sbx waits for anyway: the guardian exits beside it) and
    /// reaps the guardian. Killed before the word, sbx leaves the work
    /// to the guardian, which repeats what was done already without
    /// changing it (`AfterRun::work`).
    pub fn finish(mut self, meanwhile: impl FnOnce()) {
        // Held over the word to the guardian and its reaping too: killed
        // between the work and the word, sbx would have the work done twice.
        let held = Held::signals();
        if let Some(work) = self.work.take() {
            let _ = after::write_bounded(&work.run(), after::WRITE_WAIT_MS);
        }
        if let Some(done) = self.done.take() {
            // SAFETY: one byte to our own pipe.
            unsafe { libc::write(done.as_raw_fd(), b"D".as_ptr().cast(), 1) };
        }
        meanwhile();
        // Our own child, which exits on the byte.
        super::child::reap(self.pid);
        if let Some(light) = self.light.take() {
            // Reaped: nothing reads it any more.
            drop(std::mem::ManuallyDrop::into_inner(light));
        }
        drop(held);
    }
}

/// The guardian process.
fn guard(go: OwnedFd, pidfd: Option<OwnedFd>, tree: libc::pid_t, work: Work) -> ! {
    // SAFETY: process-wide settings of this new process only.
    unsafe { detach() };
    let mut byte = [0u8; 1];
    let done = loop {
        // SAFETY: a valid buffer of one byte.
        let n = unsafe { libc::read(go.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break n == 1;
    };
    if done {
        // sbx did the work: nothing of it is done again here (_exit runs
        // no destructor, so `work`'s is not run either).
        // SAFETY: ends this process without running sbx's exit handlers.
        unsafe { libc::_exit(0) }
    }
    // sbx is gone before the end of its work: wait for the tree.
    wait_for(pidfd.as_ref().map(AsRawFd::as_raw_fd), tree);
    let warnings = work.run();
    let _ = after::write_bounded(&warnings, after::WRITE_WAIT_MS);
    // SAFETY: ends this process without running sbx's exit handlers.
    unsafe { libc::_exit(0) }
}

/// The guardian that shares sbx's memory: system calls only, on its
/// own stack and the [`Light`] made for it, with a descriptor table of
/// its own. Entered with every signal blocked.
extern "C" fn light_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the Light, alive until this process is reaped.
    let l = unsafe { &*(arg as *const Light) };
    // SAFETY: process-wide settings and descriptors of this process only;
    // no allocation, no lock, no write to sbx's memory.
    unsafe {
        super::child::default_handlers();
        libc::close(l.done);
        for &fd in &l.not_kept {
            libc::close(fd);
        }
        detach();
        // No handler is left to interrupt the read (errno, which this
        // process would share with sbx's thread, is not read).
        let mut byte = 0u8;
        if libc::read(l.go, (&mut byte as *mut u8).cast(), 1) == 1 {
            libc::_exit(0);
        }
        // sbx is gone before the end of its work: once the tree has
        // ended, a fresh sbx does it, with what sbx held.
        wait_for((l.pidfd >= 0).then_some(l.pidfd), l.tree);
        for &fd in &l.handed {
            libc::fcntl(fd, libc::F_SETFD, 0);
        }
        let env: [*const libc::c_char; 1] = [std::ptr::null()];
        libc::execve(c"/proc/self/exe".as_ptr(), l.argv.as_ptr(), env.as_ptr());
        let said = b"sbx: warning: the guardian could not start the after-run work of a killed \
                     sbx: the next `sbx run` or `sbx sweep` does it\n";
        libc::write(2, said.as_ptr().cast(), said.len());
        libc::_exit(1)
    }
}

/// What either guardian does first, in the process it runs in: a
/// session of its own, the signals that end sbx ignored, every signal
/// let in, and standard input and output on `/dev/null` (standard
/// output may be a pipe a caller reads to its end: the guardian must
/// not hold it open; standard error keeps the warnings).
///
/// # Safety
/// System calls only, changing this process alone; no allocation.
unsafe fn detach() {
    libc::setsid();
    for sig in IGNORED {
        libc::signal(sig, libc::SIG_IGN);
    }
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
    if null >= 0 {
        libc::dup2(null, 0);
        libc::dup2(null, 1);
    }
}

/// Until `tree` has ended: its pidfd becomes readable then; without one
/// (kernels before 5.3), it is looked for every 20 ms. System calls
/// only (the guardian sharing sbx's memory calls it too).
fn wait_for(pidfd: Option<RawFd>, tree: libc::pid_t) {
    if let Some(fd) = pidfd {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        while unsafe { libc::poll(&mut p, 1, -1) } < 0 {}
        return;
    }
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    // SAFETY: signal 0 only checks that the process exists; a valid
    // timespec.
    while unsafe { libc::kill(tree, 0) } == 0 {
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
}
