//! spawn (vfork-style), restrict, exec.
//!
//! Everything the child needs (C strings, the ruleset descriptor, the BPF
//! programs, rlimits) is built before the child is created. Between
//! `clone` and `execve` the child only makes async-signal-safe system
//! calls on that prepared data and never allocates: the parent may be
//! multi-threaded, and another thread could hold the allocator's lock.
//! (`std::process::Command::pre_exec` would also work, but it offers no
//! way to report *which* step failed, and the landlock crate's
//! `restrict_self` allocates on its error paths.)
//!
//! The child is created with `clone(CLONE_VM | CLONE_VFORK)` on a stack of
//! its own, as `posix_spawn` does: it shares the parent's memory until
//! `execve` (no page tables to copy, which a `fork` of this process costs
//! about 0.25 ms), and the calling thread waits until then. (With the
//! namespace layer the setup process clones the command without
//! `CLONE_VFORK` and ends; the calling thread then waits on the failure
//! pipe, whose last end the command's `execve` closes.) So it also
//! writes nothing but its own stack, and it runs with every signal blocked
//! until its handlers are back to the default: a handler of the parent
//! running in the child would run on the parent's memory. Failures still
//! go through a close-on-exec pipe, which works whether or not the memory
//! is shared (valgrind, for one, turns a vfork into a fork).

use std::ffi::{c_char, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The step that failed in the child, reported to the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Step {
    Capabilities = 7,
    Rlimit = 1,
    NoNewPrivs = 2,
    Landlock = 3,
    CloseFds = 4,
    Seccomp = 5,
    Exec = 6,
    UserNamespace = 8,
    Mounts = 9,
    Loopback = 10,
    Listeners = 11,
    PidNamespace = 12,
    Proc = 13,
    Namespaces = 14,
    ListenCheck = 15,
    Probe = 16,
    Root = 17,
}

impl Step {
    fn from_i32(v: i32) -> Option<Step> {
        [
            Step::Capabilities,
            Step::Rlimit,
            Step::NoNewPrivs,
            Step::Landlock,
            Step::CloseFds,
            Step::Seccomp,
            Step::Exec,
            Step::UserNamespace,
            Step::Mounts,
            Step::Loopback,
            Step::Listeners,
            Step::PidNamespace,
            Step::Proc,
            Step::Namespaces,
            Step::ListenCheck,
            Step::Probe,
            Step::Root,
        ]
        .into_iter()
        .find(|s| *s as i32 == v)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Step::Capabilities => "dropping capabilities",
            Step::Rlimit => "setrlimit",
            Step::NoNewPrivs => "prctl(PR_SET_NO_NEW_PRIVS)",
            Step::Landlock => "landlock_restrict_self",
            Step::CloseFds => "close_range",
            Step::Seccomp => "seccomp(SECCOMP_SET_MODE_FILTER)",
            Step::Exec => "execve",
            Step::UserNamespace => "writing the user namespace's id maps",
            Step::Mounts => "mounting the carve-outs",
            Step::Loopback => "bringing up lo in the network namespace",
            Step::Listeners => "binding the proxy's listeners",
            Step::PidNamespace => "creating the PID namespace",
            Step::Proc => "mounting /proc",
            Step::Namespaces => {
                "making or joining the namespaces (CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET)"
            }
            Step::ListenCheck => "handing listen() to sbx (SECCOMP_FILTER_FLAG_NEW_LISTENER)",
            Step::Probe => "mounting a fresh tmpfs (the layer's first mount)",
            Step::Root => "building the new root",
        }
    }

    /// A step of the namespace layer: nothing ran when it failed.
    pub fn is_namespace(self) -> bool {
        (Step::UserNamespace as i32..=Step::Namespaces as i32).contains(&(self as i32))
            || matches!(self, Step::Probe | Step::Root)
    }

    /// The failure says that this host gives no namespaces (disabled,
    /// refused by a seccomp filter or an LSM, a container's masked
    /// `/proc`), whatever the policy names: the only failures a
    /// best-effort run may fall back from. A failure on a path the
    /// policy names (a mount whose target changed during set-up, say)
    /// is not: the child may have caused it, so the run ends instead
    /// (POLICY.md §13, no silent downgrade).
    pub fn host_lacks_namespaces(self, error: &io::Error) -> bool {
        let e = error.raw_os_error().unwrap_or(0);
        let refused = e == libc::EPERM || e == libc::EACCES;
        match self {
            // clone: disabled (EPERM, EACCES), a limit of 0 (ENOSPC,
            // EUSERS), or a kernel without them (EINVAL).
            Step::Namespaces => {
                refused || e == libc::ENOSPC || e == libc::EUSERS || e == libc::EINVAL
            }
            Step::PidNamespace => refused || e == libc::ENOSPC || e == libc::EINVAL,
            Step::UserNamespace | Step::Probe | Step::Proc => refused,
            _ => false,
        }
    }
}

/// Everything the child uses, owned by the parent across the fork.
pub struct Prepared {
    pub path: CString,
    // Own the memory the pointer arrays and `fprogs` point into.
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    _filters: Vec<Vec<libc::sock_filter>>,
    argv_ptrs: Vec<*const c_char>,
    envp_ptrs: Vec<*const c_char>,
    pub ruleset: Option<OwnedFd>,
    fprogs: Vec<libc::sock_fprog>,
    pub rlimits: Vec<(super::limits::Resource, libc::rlimit)>,
    /// The capabilities the command keeps (bit N: capability N); every
    /// other one from 0 to `last_cap` leaves every set.
    keep_caps: u64,
    /// The kernel's last capability (read before the fork).
    last_cap: u32,
    /// Failing to drop them is fatal (we are root and can).
    caps_fatal: bool,
    /// A terminal we are the foreground of: the child's group takes it.
    tty: Option<RawFd>,
    /// Highest descriptor to mark close-on-exec if `close_range` is
    /// missing (kernels before 5.11).
    max_fd: libc::c_int,
    /// The namespace layer, when this run uses it.
    pub ns: Option<super::nschild::NsPrep>,
    /// The filters that hand `listen` to sbx, used instead of `fprogs`
    /// when the command is on the real network (`listen.rs`).
    pub listen: Option<ListenPrep>,
}

/// The `listen` check's filters, and the socket pair their listener
/// goes to sbx on.
pub struct ListenPrep {
    _filters: Vec<Vec<libc::sock_filter>>,
    fprogs: Vec<libc::sock_fprog>,
    /// The filter installed with a listener (the one that notifies).
    at: usize,
    /// The child's end.
    theirs: OwnedFd,
    /// sbx's end.
    pub mine: OwnedFd,
}

impl ListenPrep {
    pub fn new(filters: Vec<super::seccomp::Filter>) -> io::Result<ListenPrep> {
        let at = filters
            .iter()
            .position(|p| super::seccomp::notifies(p))
            .ok_or_else(|| io::Error::other("no filter hands listen to sbx"))?;
        let (mine, theirs) = super::passfd::socketpair()?;
        let (filters, fprogs) = fprogs(filters);
        Ok(ListenPrep {
            _filters: filters,
            fprogs,
            at,
            theirs,
            mine,
        })
    }
}

/// The programs as the kernel takes them; the `sock_fprog`s point into
/// the returned filters, whose buffers stay put when the vectors move.
fn fprogs(
    filters: Vec<super::seccomp::Filter>,
) -> (Vec<Vec<libc::sock_filter>>, Vec<libc::sock_fprog>) {
    let filters: Vec<Vec<libc::sock_filter>> = filters
        .into_iter()
        .map(|p| p.into_iter().map(Into::into).collect())
        .collect();
    let fprogs = filters
        .iter()
        .map(|f| libc::sock_fprog {
            len: f.len() as u16,
            filter: f.as_ptr() as *mut libc::sock_filter,
        })
        .collect();
    (filters, fprogs)
}

impl Prepared {
    pub fn new(
        path: CString,
        argv: Vec<CString>,
        envp: Vec<CString>,
        ruleset: Option<OwnedFd>,
        filters: Vec<super::seccomp::Filter>,
        rlimits: Vec<(super::limits::Resource, libc::rlimit)>,
        keep_caps: u64,
    ) -> Prepared {
        let ptrs = |v: &[CString]| {
            v.iter()
                .map(|c| c.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let (filters, fprogs) = fprogs(filters);
        Prepared {
            argv_ptrs: ptrs(&argv),
            envp_ptrs: ptrs(&envp),
            path,
            _argv: argv,
            _envp: envp,
            _filters: filters,
            ruleset,
            fprogs,
            rlimits,
            keep_caps,
            last_cap: super::limits::last_cap(),
            // SAFETY: geteuid has no preconditions.
            caps_fatal: unsafe { libc::geteuid() } == 0,
            tty: foreground_tty(),
            max_fd: max_fd(),
            ns: None,
            listen: None,
        }
    }

    pub fn tty(&self) -> Option<RawFd> {
        self.tty
    }
}

fn max_fd() -> libc::c_int {
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: lim is a valid out-parameter.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur
    } else {
        1024
    };
    soft.min(1 << 20) as libc::c_int
}

fn foreground_tty() -> Option<RawFd> {
    // SAFETY: plain queries on stdio descriptors.
    (0..3).find(|fd| unsafe { libc::isatty(*fd) == 1 && libc::tcgetpgrp(*fd) == libc::getpgrp() })
}

/// Why the child did not start.
#[derive(Debug)]
pub struct SpawnError {
    pub step: Option<Step>,
    pub error: io::Error,
    /// Which mount failed, for `Step::Mounts` (an index into
    /// `NsPrep::mounts`) and `Step::Root` (into `NewRoot::paths`).
    pub at: Option<usize>,
}

/// A started command.
pub struct Spawned {
    pub pid: libc::pid_t,
    /// The PID namespace's init, when there is one.
    pub init: Option<libc::pid_t>,
    /// The PID namespace's init (killed with the leftovers: the kernel
    /// then kills every process left in the namespace) runs on this stack (it shares our memory): unmapped only
    /// once the init is gone.
    init_stack: Option<Stack>,
}

impl Spawned {
    /// Keep the init's stack mapped until the init has been reaped.
    pub fn finish(self) {
        drop(self.init_stack);
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), SpawnError> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SpawnError {
            step: None,
            error: io::Error::last_os_error(),
            at: None,
        });
    }
    // SAFETY: both descriptors were just created and are owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `clone(CLONE_VM | CLONE_VFORK | extra)` running `f(arg)` on `stack`,
/// with every signal blocked around it (the child starts so).
///
/// # Safety
/// `f` must only make async-signal-safe calls on data that outlives
/// the call (the caller waits until the child execs or exits).
unsafe fn vfork_clone(
    f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: &Stack,
    extra: libc::c_int,
    arg: *mut libc::c_void,
) -> Result<libc::pid_t, io::Error> {
    clone_blocked(
        f,
        stack,
        libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | extra,
        arg,
    )
}

/// Let the helper `pid`, just cloned to work beside this thread, run on
/// any CPU it may but this thread's. A new task starts on its parent's
/// CPU, and where the scheduler does not spread tasks at fork (the
/// bench machine, a 2-CPU guest) it waited there until the parent
/// blocked, with the other CPU idle: 0.4–0.65 ms before the network
/// namespace's helper first ran, in most runs (`perf sched timehist`,
/// docs/performance.md). Best effort: with one CPU allowed, nothing.
pub(super) fn beside_this_cpu(pid: libc::pid_t) {
    // SAFETY: affinity calls on a zeroed set of the right size; the
    // child is ours.
    unsafe {
        let Ok(cpu) = usize::try_from(libc::sched_getcpu()) else {
            return;
        };
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut set) != 0 || cpu >= libc::CPU_SETSIZE as usize {
            return;
        }
        libc::CPU_CLR(cpu, &mut set);
        if libc::CPU_COUNT(&set) > 0 {
            libc::sched_setaffinity(pid, size, &set);
        }
    }
}

/// `clone(flags)` running `f(arg)` on `stack`, with every signal
/// blocked around it: a child sharing our memory starts with them
/// blocked, and never runs one of our handlers.
///
/// # Safety
/// As `vfork_clone`'s, and `arg` and `stack` must outlive the child.
pub(super) unsafe fn clone_blocked(
    f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: &Stack,
    flags: libc::c_int,
    arg: *mut libc::c_void,
) -> Result<libc::pid_t, io::Error> {
    let mut all: libc::sigset_t = std::mem::zeroed();
    let mut old: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    let pid = libc::clone(f, stack.top(), flags, arg);
    let error = io::Error::last_os_error();
    libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    if pid < 0 {
        Err(error)
    } else {
        Ok(pid)
    }
}

/// The failure the child wrote to the pipe, if any (EOF: it exec'ed).
fn failure(rd: &OwnedFd) -> Option<SpawnError> {
    let mut buf = [0u8; 12];
    if read_full(rd.as_raw_fd(), &mut buf) != 12 {
        return None;
    }
    let word = |i: usize| i32::from_ne_bytes(buf[i..i + 4].try_into().unwrap());
    Some(SpawnError {
        step: Step::from_i32(word(0)),
        error: io::Error::from_raw_os_error(word(4)),
        at: usize::try_from(word(8)).ok(),
    })
}

/// Reap our own child `pid` (one `clone`d without `SIGCHLD` too:
/// `__WALL`), waiting for it; its wait status, or `None` when it is not
/// ours to reap (reaped already).
pub(super) fn reap(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    while unsafe { libc::waitpid(pid, &mut status, libc::__WALL) } < 0 {
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
    Some(status)
}

/// Start the child and exec, through the namespace layer when
/// `p.ns` is set. On success the child runs in its own process group
/// (`pid` is also the group id) and owns the terminal if we did.
pub fn spawn(p: &Prepared) -> Result<Spawned, SpawnError> {
    if let Some(ns) = &p.ns {
        return spawn_ns(p, ns);
    }
    let (rd, wr) = pipe()?;
    let stack = Stack::new().map_err(|error| SpawnError {
        step: None,
        error,
        at: None,
    })?;
    let args = ChildArgs {
        p,
        wr: wr.as_raw_fd(),
        // SAFETY: getpid has no preconditions.
        parent: unsafe { libc::getpid() },
    };
    // SAFETY: `child_main` runs on `stack`, which stays mapped until
    // clone returns (the child has exec'ed or exited by then); it reads
    // `args` and `p`, borrowed for that whole time, and only calls
    // async-signal-safe functions before it execs or _exits.
    let pid = unsafe {
        vfork_clone(
            child_main,
            &stack,
            0,
            &args as *const ChildArgs as *mut libc::c_void,
        )
    }
    .map_err(|error| SpawnError {
        step: None,
        error,
        at: None,
    })?;
    drop(stack);
    drop(wr);
    // Also set the group here so a kill right after spawn reaches it.
    // SAFETY: pid is our child.
    unsafe { libc::setpgid(pid, pid) };
    if let Some(e) = failure(&rd) {
        reap(pid);
        return Err(e);
    }
    Ok(Spawned {
        pid,
        init: None,
        init_stack: None,
    })
}

fn spawn_ns(p: &Prepared, ns: &super::nschild::NsPrep) -> Result<Spawned, SpawnError> {
    use super::nschild::{Pids, SetupArgs};
    use std::sync::atomic::Ordering;
    let (rd, wr) = pipe()?;
    let err = |error| SpawnError {
        step: None,
        error,
        at: None,
    };
    let setup_stack = Stack::new().map_err(err)?;
    let cmd_stack = Stack::new().map_err(err)?;
    let init_stack = if ns.pid {
        Some(Stack::new().map_err(err)?)
    } else {
        None
    };
    let pids = Pids::default();
    // SAFETY: pidfd_open of ourselves; the descriptor (close-on-exec) is
    // owned here, and the processes cloned from here get copies.
    let sbx = unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as RawFd;
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    };
    let args = SetupArgs {
        p,
        ns,
        wr: wr.as_raw_fd(),
        pids: &pids,
        init_stack: init_stack.as_ref().map_or(std::ptr::null_mut(), Stack::top),
        cmd_stack: cmd_stack.top(),
        sbx: sbx.as_ref().map_or(-1, |f| f.as_raw_fd()),
    };
    // SAFETY: as in `spawn`; the setup process is done with `args` and
    // its stack when this returns, and the command it clones (sharing
    // our memory, on `cmd_stack`) once `failure` below has seen the
    // pipe's last end close: the command's `execve` closes it, or its
    // exit. The init keeps running on `init_stack`, which `Spawned` keeps.
    // With namespaces made early, the setup process joins them and makes
    // its mount namespace itself (`nschild::setup`).
    let flags = if ns.early.is_some() { 0 } else { ns.flags };
    let setup = unsafe {
        vfork_clone(
            setup_main,
            &setup_stack,
            flags,
            &args as *const SetupArgs as *mut libc::c_void,
        )
    }
    .map_err(|error| SpawnError {
        step: Some(Step::Namespaces),
        error,
        at: None,
    })?;
    drop(wr);
    reap(setup);
    drop(setup_stack);
    let cmd = pids.cmd.load(Ordering::SeqCst);
    let init = pids.init.load(Ordering::SeqCst);
    if cmd > 0 {
        // SAFETY: cmd is our child (CLONE_PARENT).
        unsafe { libc::setpgid(cmd, cmd) };
    }
    // Until the command has exec'd or exited: it reads `args` and runs
    // on `cmd_stack` until then.
    let failed = failure(&rd);
    drop(cmd_stack);
    if failed.is_some() || cmd <= 0 {
        for pid in [cmd, init] {
            if pid > 0 {
                // SAFETY: our own children, about to be reaped.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                reap(pid);
            }
        }
        return Err(failed.unwrap_or_else(|| SpawnError {
            step: Some(Step::Namespaces),
            error: io::Error::other("the setup process exited early"),
            at: None,
        }));
    }
    Ok(Spawned {
        pid: cmd,
        init: (init > 0).then_some(init),
        init_stack,
    })
}

extern "C" fn setup_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `SetupArgs` spawn_ns passed, alive until
    // this process exits; `setup` never returns.
    unsafe { super::nschild::setup(&*(arg as *const super::nschild::SetupArgs)) }
}

/// The child's stack: mapped for the spawn, with a guard page below.
pub(super) struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

/// Stacks given back, kept for the next child rather than unmapped (the
/// process's exit unmaps them). A run makes five children on stacks of
/// their own, most sharing sbx's memory, and an `munmap` once they have
/// run on the other core interrupts it to flush its TLB. Held as
/// addresses: a stack is plain memory once its child is done with it.
static SPARE: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());

fn spare() -> std::sync::MutexGuard<'static, Vec<(usize, usize)>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

impl Stack {
    /// The child's frames and the libc calls it makes need a few KiB.
    const SIZE: usize = 64 * 1024;

    pub(super) fn new() -> io::Result<Stack> {
        if let Some((base, len)) = spare().pop() {
            return Ok(Stack {
                base: base as *mut libc::c_void,
                len,
            });
        }
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .unwrap_or(4096)
            .max(4096);
        let len = Self::SIZE + page;
        // SAFETY: a fresh anonymous mapping; the guard page is its first.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            if libc::mprotect(base, page, libc::PROT_NONE) != 0 {
                // Unmapped here: a stack without its guard is not kept.
                let e = io::Error::last_os_error();
                libc::munmap(base, len);
                return Err(e);
            }
            Ok(Stack { base, len })
        }
    }

    /// The highest address (stacks grow down), 16-byte aligned.
    pub(super) fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping; page-aligned.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for Stack {
    /// Kept for the next child: no longer used by this one (it has been
    /// reaped, or has exec'd).
    fn drop(&mut self) {
        spare().push((self.base as usize, self.len));
    }
}

struct ChildArgs<'a> {
    p: &'a Prepared,
    wr: RawFd,
    /// sbx's process id: the child's parent, while sbx lives.
    parent: libc::pid_t,
}

/// The child's entry point on its own stack.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` spawn passed, alive until the
    // child execs or exits; `child` never returns.
    unsafe {
        let args = &*(arg as *const ChildArgs);
        #[cfg(feature = "test-hooks")]
        super::nschild::test_pause();
        child(args.p, args.wr, args.parent)
    }
}

fn read_full(fd: RawFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled tail of buf.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    got
}

/// Report `step` and errno to the parent and exit. Async-signal-safe.
pub(super) unsafe fn fail(wr: RawFd, step: Step) -> ! {
    fail_at(wr, step, -1)
}

/// `fail`, naming the mount (`SpawnError::at`; -1 for none).
pub(super) unsafe fn fail_at(wr: RawFd, step: Step, at: i32) -> ! {
    let errno = *libc::__errno_location();
    let mut buf = [0u8; 12];
    buf[..4].copy_from_slice(&(step as i32).to_ne_bytes());
    buf[4..8].copy_from_slice(&errno.to_ne_bytes());
    buf[8..].copy_from_slice(&at.to_ne_bytes());
    libc::write(wr, buf.as_ptr().cast(), 12);
    libc::_exit(if step == Step::Exec { 127 } else { 125 })
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_V3: u32 = 0x2008_0522;
/// linux/capability.h
const CAP_SETPCAP: u32 = 8;

/// Leave the command the capabilities of `p.keep_caps` and no other, in
/// any set: each other one from 0 to the kernel's last leaves the
/// bounding set (after exec a root command's permitted set is its
/// bounding set), the effective and permitted sets keep only the kept
/// ones, the inheritable and ambient sets are emptied. An unprivileged
/// command holds the capabilities of its user namespace until it execs
/// as a non-zero uid, which clears them; they go here all the same.
/// Async-signal-safe (system calls on stack data).
unsafe fn drop_caps(p: &Prepared, wr: RawFd) {
    // EINVAL on kernels without ambient capabilities: nothing to clear.
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    );
    let mut hdr = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if libc::syscall(
        libc::SYS_capget,
        &mut hdr as *mut CapHeader,
        data.as_mut_ptr(),
    ) != 0
    {
        fail(wr, Step::Capabilities);
    }
    // Dropping from the bounding set takes CAP_SETPCAP. Without it (an
    // unprivileged run with no user namespace) every drop would fail, so
    // none is tried: no_new_privs keeps exec from granting any. Root, or
    // whoever holds CAP_SETPCAP, must succeed. EINVAL: a capability this
    // kernel does not know.
    let setpcap = data[0].effective & (1 << CAP_SETPCAP) != 0;
    let must = setpcap || p.caps_fatal;
    if must {
        for cap in 0..=p.last_cap {
            if p.keep_caps & (1u64 << cap) != 0
                || libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) == 0
            {
                continue;
            }
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
                && *libc::__errno_location() != libc::EINVAL
            {
                fail(wr, Step::Capabilities);
            }
        }
    }
    for (i, d) in data.iter_mut().enumerate() {
        let keep = (p.keep_caps >> (32 * i)) as u32;
        d.effective &= keep;
        d.permitted &= keep;
        d.inheritable = 0;
    }
    if libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) != 0 {
        fail(wr, Step::Capabilities);
    }
}

/// Install the seccomp filters; with `listen`, its notifying filter with
/// a listener, which goes to sbx. Async-signal-safe.
unsafe fn install(fprogs: &[libc::sock_fprog], listen: Option<&ListenPrep>, wr: RawFd) {
    for (i, prog) in fprogs.iter().enumerate() {
        let notify = listen.filter(|l| l.at == i);
        let flags = if notify.is_some() {
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_uint
        } else {
            0
        };
        let r = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            prog as *const libc::sock_fprog,
        );
        if r < 0 {
            // EBUSY: a filter sbx runs under has a listener already, and
            // the kernel allows one. sbx decides whether to go on.
            if notify.is_some() && *libc::__errno_location() == libc::EBUSY {
                fail(wr, Step::ListenCheck);
            }
            fail(wr, Step::Seccomp);
        }
        if let Some(l) = notify {
            // Close-on-exec: sbx holds the only copy once we exec.
            let fd = r as RawFd;
            if !super::passfd::send(l.theirs.as_raw_fd(), &[fd]) {
                fail(wr, Step::ListenCheck);
            }
            libc::close(fd);
        }
    }
}

/// Signal numbers the child resets (1 to SIGRTMAX on Linux).
const NSIG: libc::c_int = 65;

/// Handlers the parent installed would run on the parent's memory: back
/// to the default, in a child sharing that memory, before any signal can
/// be delivered (it starts with every signal blocked). Ignored signals
/// stay ignored (execve keeps them so too), except SIGPIPE: Rust ignores
/// it, and programs expect the default. (glibc's own two signals cannot
/// be queried through sigaction; they are only ever sent to the
/// parent's threads.)
///
/// # Safety
/// System calls only, on this process's own signal table.
pub(super) unsafe fn default_handlers() {
    for sig in 1..NSIG {
        let mut sa: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut sa) == 0
            && (sa.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE)
            && sa.sa_sigaction != libc::SIG_DFL
        {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
    }
}

/// The child side. No allocation, no locks, no Rust std I/O, no writes
/// outside its own stack (it shares the parent's memory). Entered with
/// every signal blocked.
/// `parent`: sbx's process id where no PID namespace's init ends the
/// command with sbx (0 where one does).
pub(super) unsafe fn child(p: &Prepared, wr: RawFd, parent: libc::pid_t) -> ! {
    default_handlers();
    libc::setpgid(0, 0);
    if let Some(tty) = p.tty {
        // Take the terminal for the new group (SIGTTOU, which would stop
        // us since we are not yet its foreground group, is blocked).
        libc::tcsetpgrp(tty, libc::getpid());
    }

    drop_caps(p, wr);
    for (res, lim) in &p.rlimits {
        if libc::setrlimit(*res, lim) != 0 {
            fail(wr, Step::Rlimit);
        }
    }
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
        fail(wr, Step::NoNewPrivs);
    }
    if let Some(fd) = &p.ruleset {
        if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) != 0 {
            fail(wr, Step::Landlock);
        }
        libc::close(fd.as_raw_fd());
    }
    // Descriptors opened before the sandbox bypass it: none but stdio may
    // survive exec. The error pipe is close-on-exec already.
    if libc::syscall(
        libc::SYS_close_range,
        3u32,
        u32::MAX,
        libc::CLOSE_RANGE_CLOEXEC,
    ) != 0
    {
        if *libc::__errno_location() != libc::ENOSYS {
            fail(wr, Step::CloseFds);
        }
        for fd in 3..p.max_fd {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    if parent > 0 {
        // Without a PID namespace the command dies with sbx, as the
        // namespace's init makes it with one: the after-run work (the
        // guardian's, or the next run's) must never run while it can
        // still write. Asked once the credentials are final (a change of
        // capabilities clears it); where sbx died before (killed during
        // the spawn), no signal comes: sbx is no longer the parent.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    // In a private network namespace a port listen() picks is out of
    // the host's reach: no check, so no notification.
    let private_net =
        p.ns.as_ref()
            .is_some_and(|ns| ns.flags & libc::CLONE_NEWNET != 0);
    match &p.listen {
        Some(l) if !private_net => install(&l.fprogs, Some(l), wr),
        _ => install(&p.fprogs, None, wr),
    }
    // execve keeps the signal mask: the program starts with none blocked.
    let mut empty: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut empty);
    libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    libc::execve(p.path.as_ptr(), p.argv_ptrs.as_ptr(), p.envp_ptrs.as_ptr());
    fail(wr, Step::Exec)
}

#[cfg(test)]
mod tests {
    use super::Stack;

    /// The CPUs `pid` may run on.
    fn allowed(pid: libc::pid_t) -> Vec<usize> {
        // SAFETY: a zeroed set of the right size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            assert_eq!(libc::sched_getaffinity(pid, size, &mut set), 0);
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    /// A helper started to work beside sbx may run on every CPU sbx may
    /// but one (the one sbx was on), so that it does not wait for sbx to
    /// block; with one CPU allowed it keeps it.
    #[test]
    fn a_helper_runs_beside_this_cpu() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let ours = allowed(0);
        super::beside_this_cpu(pid);
        let theirs = allowed(pid);
        if ours.len() > 1 {
            assert_eq!(theirs.len(), ours.len() - 1, "{ours:?} {theirs:?}");
            assert!(
                theirs.iter().all(|c| ours.contains(c)),
                "{ours:?} {theirs:?}"
            );
        } else {
            assert_eq!(theirs, ours);
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The permissions `/proc/self/maps` gives the page at `addr`.
    fn perms(addr: usize) -> String {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        for line in maps.lines() {
            let (range, rest) = line.split_once(' ').unwrap();
            let (a, b) = range.split_once('-').unwrap();
            let (a, b) = (
                usize::from_str_radix(a, 16).unwrap(),
                usize::from_str_radix(b, 16).unwrap(),
            );
            if (a..b).contains(&addr) {
                return rest[..4].to_string();
            }
        }
        panic!("{addr:#x} is not mapped");
    }

    /// Every stack handed out, new or kept from an earlier child, has its
    /// guard page and is writable above it.
    #[test]
    fn stacks_kept_for_reuse_keep_their_guard() {
        for _ in 0..3 {
            let stacks: Vec<Stack> = (0..4).map(|_| Stack::new().unwrap()).collect();
            for s in &stacks {
                let base = s.base as usize;
                assert_eq!(perms(base), "---p");
                assert_eq!(perms(base + 4096), "rw-p");
                assert_eq!(perms(s.top() as usize - 1), "rw-p");
            }
            drop(stacks);
        }
    }
}
