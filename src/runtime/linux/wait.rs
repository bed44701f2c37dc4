//! Waiting for the sandboxed child: exit status, terminal hand-back,
//! signal forwarding and the wall-clock limit.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The child's process group, for the forwarding signal handler.
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let g = CHILD_GROUP.load(Ordering::SeqCst);
    if g > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(-g, sig) };
    }
}

const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Signals sent to sbx (not through the terminal, which the child's
/// group owns) reach the child's group too, while the guard lives.
pub struct Forwarding {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl Forwarding {
    pub fn install(group: libc::pid_t) -> Forwarding {
        CHILD_GROUP.store(group, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in FORWARDED {
            // SAFETY: installing a handler that only calls kill.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = forward as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        Forwarding { old }
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring what sigaction returned.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
        CHILD_GROUP.store(0, Ordering::SeqCst);
    }
}

/// Give the terminal's foreground to `group` without being stopped for
/// it (we may be in the background at that point).
fn hand_tty(tty: RawFd, group: libc::pid_t) {
    // SAFETY: blocking SIGTTOU for this thread around one ioctl.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        libc::tcsetpgrp(tty, group);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// `sbx run`'s exit code for a wait status (CLI.md).
pub fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        super::super::EXIT_SBX_FAILED
    }
}

/// Wait for `pid` to terminate. With a terminal, a stopped child (^Z)
/// stops sbx too so the shell's job control sees it, and `fg` resumes
/// both.
fn wait_status(pid: libc::pid_t, tty: Option<RawFd>) -> libc::c_int {
    let flags = if tty.is_some() { libc::WUNTRACED } else { 0 };
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return libc::W_EXITCODE(super::super::EXIT_SBX_FAILED, 0);
        }
        if libc::WIFSTOPPED(status) {
            // A child that called PTRACE_TRACEME made us its tracer: pass
            // the signal on and keep going.
            // SAFETY: fails harmlessly (ESRCH) when we are not the tracer.
            let sig = libc::WSTOPSIG(status);
            if unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, sig) } == 0 {
                continue;
            }
            if let Some(t) = tty {
                // SAFETY: process-group and signal calls on our own groups.
                unsafe {
                    hand_tty(t, libc::getpgrp());
                    libc::kill(0, libc::SIGSTOP);
                    hand_tty(t, pid);
                    libc::kill(-pid, libc::SIGCONT);
                }
            }
            continue;
        }
        return status;
    }
}

pub struct Outcome {
    pub status: libc::c_int,
    pub timed_out: bool,
}

/// Wait for the child; past `wall`, kill its whole tree. Whatever the
/// child left running is killed once it has exited: nothing the sandbox
/// started outlives the run (a process left behind could take the
/// terminal back, or write after the user thinks the run is over).
/// Needs sbx to be the subreaper of its descendants.
pub fn wait(
    pid: libc::pid_t,
    init: Option<libc::pid_t>,
    tty: Option<RawFd>,
    wall: Option<Duration>,
    not_ours: &[libc::pid_t],
) -> Outcome {
    let out = match wall {
        None => Outcome {
            status: wait_status(pid, tty),
            timed_out: false,
        },
        Some(limit) => {
            let (tx, rx) = std::sync::mpsc::channel();
            let waiter = std::thread::spawn(move || {
                let _ = tx.send(wait_status(pid, tty));
            });
            let out = match rx.recv_timeout(limit) {
                Ok(status) => Outcome {
                    status,
                    timed_out: false,
                },
                Err(_) => {
                    stop_and_kill(Some(pid), not_ours);
                    Outcome {
                        status: rx
                            .recv()
                            .unwrap_or(libc::W_EXITCODE(super::super::EXIT_SBX_FAILED, 0)),
                        timed_out: true,
                    }
                }
            };
            let _ = waiter.join();
            out
        }
    };
    if let Some(init) = init {
        // The kernel kills every process of the PID namespace once its
        // init dies: the walk below then finds none left.
        // SAFETY: our own child, unreaped.
        unsafe { libc::kill(init, libc::SIGKILL) };
    }
    // Once the init is reaped no process of the sandbox is left: every
    // one was in its namespace. Otherwise (no init, or a failed wait)
    // the walk finds and kills them.
    if !init.is_some_and(reap_until) {
        kill_leftovers(not_ours);
    }
    if let Some(t) = tty {
        // SAFETY: getpgrp has no preconditions.
        hand_tty(t, unsafe { libc::getpgrp() });
    }
    out
}

/// Direct children of `pid`, from every thread's `children` file.
fn children(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let dir = if pid == 0 {
        "/proc/self/task".to_string()
    } else {
        format!("/proc/{pid}/task")
    };
    let mut out = Vec::new();
    for task in crate::dirents::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                s.split_whitespace()
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            );
        }
    }
    out
}

/// Our own children right now (taken before fork, so the tree kill
/// spares processes that were never the sandbox's).
pub fn own_children() -> Vec<libc::pid_t> {
    children(0)
}

/// Stop the child's group (while the child is unreaped, so its id is
/// still that group's), then every process found below our own children
/// (top-down: a stopped process cannot fork, so its children list is
/// complete once read), then kill them all. No depth limit: the walk
/// ends when no unseen process is left. Returns what was killed.
fn stop_and_kill(group: Option<libc::pid_t>, not_ours: &[libc::pid_t]) -> Vec<libc::pid_t> {
    if let Some(g) = group {
        // SAFETY: signals to the child's group, which we created.
        unsafe { libc::kill(-g, libc::SIGSTOP) };
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut todo: Vec<libc::pid_t> = own_children()
        .into_iter()
        .filter(|c| !not_ours.contains(c))
        .collect();
    while let Some(p) = todo.pop() {
        if !seen.insert(p) {
            continue;
        }
        // SAFETY: p is the child or one of its descendants.
        unsafe { libc::kill(p, libc::SIGSTOP) };
        todo.extend(children(p));
    }
    for p in &seen {
        // SAFETY: as above.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    if let Some(g) = group {
        // SAFETY: as above.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    seen.into_iter().collect()
}

/// Reap children until `init` (a PID namespace's, killed) is among
/// them; whether it was. Its end is the end of every process of its
/// namespace: the kernel kills them all, and the init does not exit
/// before each has been reaped, so processes the command made with
/// `CLONE_PARENT` (ours) are reaped here as they end, whichever comes
/// first. A process of the sandbox outside the namespace cannot exist:
/// every process the command and its descendants make is in it.
fn reap_until(init: libc::pid_t) -> bool {
    loop {
        let mut status = 0;
        // SAFETY: reaping children of ours; the init ends once the
        // namespace's processes have, and nothing of it outlives SIGKILL.
        let r = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if r == init {
            return true;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

/// After the child has been reaped: kill and reap everything it left,
/// until none of our children is the sandbox's. Processes whose parents
/// die come back to us (we are their subreaper), so each round finds
/// what a fork raced past the last.
///
/// Each round reaps whichever child ends first, never one in
/// particular: a PID namespace's init does not end until every process
/// of its namespace has been reaped, and a process the command made with
/// `CLONE_PARENT` is ours to reap, so waiting for the init first would
/// wait for ever (sbx would never return, nor do its after-run work).
fn kill_leftovers(not_ours: &[libc::pid_t]) {
    loop {
        let ours = own_children().into_iter().any(|c| !not_ours.contains(&c));
        if !ours {
            return;
        }
        stop_and_kill(None, not_ours);
        let mut status = 0;
        // SAFETY: reaping a child of ours; every one of the sandbox's
        // was just killed, so one ends. (A child that was never the
        // sandbox's may be reaped here too: nothing else waits for it.)
        let r = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
        // Then whatever else has ended, without waiting.
        // SAFETY: as above.
        while unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) } > 0 {}
    }
}
