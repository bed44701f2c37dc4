//! `listen()` on the real network (issue #20, landlock-lsm/linux#15).
//!
//! A TCP socket that calls `listen()` without `bind()` gets a port from
//! the kernel, and Landlock's bind check never runs for it. seccomp sees
//! only the descriptor number, not the socket, so the filter hands
//! `listen` to sbx (`SECCOMP_RET_USER_NOTIF`). sbx takes the caller's
//! socket itself (`pidfd_getfd`) and makes the `listen()` call on it for
//! the caller, only on a port the policy lets it bind, and answers with
//! the result. Answering "continue" instead would leave a window in
//! which another thread of the sandbox puts a different socket behind
//! the same number; calling `listen` on the socket that was checked has
//! none.
//!
//! Used only when the command is on the real network and Landlock
//! restricts TCP bind; in a private network namespace such a port is
//! unreachable from the host, and nothing is notified. When sbx is gone
//! the kernel fails the notified call (ENOSYS): it fails closed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Answer the notifications of `listener` on a thread of their own
/// until no process uses its filter any more. `ports`: the TCP ports
/// the policy lets the sandbox bind.
///
/// A bare pthread with a small stack: every run on the real network
/// starts one, and `std::thread` costs several times more (a 2 MiB
/// stack, a signal stack, a malloc arena for the thread).
pub fn supervise(listener: OwnedFd, ports: Vec<u16>) -> io::Result<()> {
    struct Job {
        listener: OwnedFd,
        ports: Vec<u16>,
    }
    extern "C" fn run(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: the Box `supervise` leaked for this thread alone.
        let job = unsafe { Box::from_raw(arg.cast::<Job>()) };
        serve(&job.listener, &job.ports);
        std::ptr::null_mut()
    }
    let job = Box::into_raw(Box::new(Job { listener, ports }));
    // SAFETY: attr is initialised before use and destroyed after; on
    // success the thread owns `job`, on failure it is taken back.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, 128 * 1024);
        libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
        let mut thread: libc::pthread_t = std::mem::zeroed();
        let r = libc::pthread_create(&mut thread, &attr, run, job.cast());
        libc::pthread_attr_destroy(&mut attr);
        if r != 0 {
            drop(Box::from_raw(job));
            return Err(io::Error::from_raw_os_error(r));
        }
    }
    Ok(())
}

fn serve(listener: &OwnedFd, ports: &[u16]) {
    let fd = listener.as_raw_fd();
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, -1) } < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        // POLLHUP alone: every process under the filter is gone.
        if pfd.revents & libc::POLLIN == 0 {
            return;
        }
        // SAFETY: the kernel wants a zeroed struct to fill.
        let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // The request is an int in musl, an unsigned long in glibc.
        #[allow(clippy::unnecessary_cast)]
        // SAFETY: `req` is the struct the request names.
        if unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV as _, &mut req) } != 0 {
            // ENOENT: the caller went away (a signal) before we took it.
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR | libc::ENOENT) => continue,
                _ => return,
            }
        }
        let error = match answer(fd, &req, ports) {
            Some(e) => e,
            // The caller is gone: nothing to answer.
            None => continue,
        };
        let resp = libc::seccomp_notif_resp {
            id: req.id,
            val: 0,
            error: -error,
            flags: 0,
        };
        #[allow(clippy::unnecessary_cast)]
        // SAFETY: as above; ENOENT (the caller was interrupted) is
        // harmless: the call restarts and is notified again.
        unsafe {
            libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND as _, &resp)
        };
    }
}

/// The errno for one notified `listen` (0: it listens now), or `None`
/// when the caller is gone.
fn answer(listener: RawFd, req: &libc::seccomp_notif, ports: &[u16]) -> Option<i32> {
    if req.data.nr != libc::SYS_listen as i32 {
        return Some(libc::ENOSYS);
    }
    // The kernel reads both arguments as ints.
    let (target, backlog) = (req.data.args[0] as i32, req.data.args[1] as i32);
    let sock = take(req.pid as libc::pid_t, target);
    // The thread is still waiting for this answer, so its pid was not
    // reused by another process before we took the descriptor.
    let id = req.id;
    #[allow(clippy::unnecessary_cast)]
    // SAFETY: the request reads one u64.
    if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _, &id) } != 0 {
        return None;
    }
    Some(match sock {
        Ok(s) => listen(&s, backlog, ports),
        // A number that is no descriptor fails as listen would.
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => libc::EBADF,
        // Not checked, not allowed.
        Err(_) => libc::EACCES,
    })
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `listen(sock, backlog)` if the socket may listen; the errno, 0 when
/// it listens. A TCP socket may listen only on a port in `ports` (the
/// ones Landlock lets it bind). Its address before the call does not
/// prove it is bound: after a failed `connect()` it still shows the port
/// the kernel has given back, and `listen()` would pick a new one (and
/// another thread can make that happen between any check and the call).
/// So the port is checked before, to refuse without listening, and
/// after: listening anywhere else, the socket is disconnected at once,
/// which gives the port back, before the caller can accept.
pub(super) fn listen(sock: &OwnedFd, backlog: i32, ports: &[u16]) -> i32 {
    let fd = sock.as_raw_fd();
    // SAFETY: plain system call on a descriptor we own.
    let call = || {
        if unsafe { libc::listen(fd, backlog) } == 0 {
            0
        } else {
            errno()
        }
    };
    let domain = int_option(sock, libc::SOL_SOCKET, libc::SO_DOMAIN);
    if !matches!(domain, Some(libc::AF_INET | libc::AF_INET6)) {
        // UNIX and other families; not a socket: listen says so itself.
        return call();
    }
    match (
        int_option(sock, libc::SOL_SOCKET, libc::SO_TYPE),
        int_option(sock, libc::SOL_SOCKET, libc::SO_PROTOCOL),
    ) {
        // listen refuses datagram sockets without picking a port.
        (Some(libc::SOCK_DGRAM), _) => return call(),
        (_, Some(libc::IPPROTO_TCP)) => {}
        // SCTP and MPTCP pick a port too, outside Landlock's TCP rules.
        _ => return libc::EACCES,
    }
    let allowed = || local_port(sock).is_some_and(|p| ports.contains(&p));
    if !allowed() {
        return libc::EACCES;
    }
    let e = call();
    if e == 0 && !allowed() {
        // SAFETY: as above. On a listening socket this is a disconnect:
        // pending connections are reset and the port is given back.
        unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        return libc::EACCES;
    }
    e
}

fn int_option(sock: &OwnedFd, level: i32, name: i32) -> Option<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: an int-sized out-parameter.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(v)
}

fn local_port(sock: &OwnedFd) -> Option<u16> {
    // SAFETY: a zeroed sockaddr_storage is a valid out-parameter.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above; the port sits at the same offset in
    // sockaddr_in and sockaddr_in6, right after the family.
    unsafe {
        if libc::getsockname(
            sock.as_raw_fd(),
            (&mut ss as *mut libc::sockaddr_storage).cast(),
            &mut len,
        ) != 0
        {
            return None;
        }
        let sin = &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
        Some(u16::from_be(sin.sin_port))
    }
}

/// The caller's descriptor `fd`, duplicated into sbx (close-on-exec).
fn take(tid: libc::pid_t, fd: i32) -> io::Result<OwnedFd> {
    let pidfd = pidfd(tid)?;
    // SAFETY: plain system call; a descriptor it returns is ours.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
}

/// include/uapi/linux/pidfd.h: a pidfd for one thread (Linux 6.9).
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// A pidfd for the thread `tid`; before Linux 6.9, for its process
/// (threads share their descriptors unless made without CLONE_FILES).
fn pidfd(tid: libc::pid_t) -> io::Result<OwnedFd> {
    let open = |pid: libc::pid_t, flags: libc::c_uint| {
        // SAFETY: plain system call; a descriptor it returns is ours.
        let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, flags) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: a fresh descriptor owned from here on.
            Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
        }
    };
    match open(tid, PIDFD_THREAD) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let status = std::fs::read_to_string(format!("/proc/{tid}/status"))?;
            let tgid = status
                .lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
            open(tgid, 0)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, UdpSocket};

    fn socket(domain: i32, ty: i32, proto: i32) -> Option<OwnedFd> {
        // SAFETY: plain system call; the descriptor is ours.
        let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) };
        // SAFETY: fresh.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn listening(s: &OwnedFd) -> bool {
        int_option(s, libc::SOL_SOCKET, libc::SO_ACCEPTCONN) == Some(1)
    }

    fn loopback(port: u16) -> libc::sockaddr_in {
        // SAFETY: plain-old-data struct.
        let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        sa.sin_port = port.to_be();
        sa
    }

    const LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

    /// Unbound TCP sockets are refused on both families, and bound ones
    /// on a port the policy does not bind; UNIX sockets listen; datagram
    /// sockets and non-sockets get listen's own answer.
    #[test]
    fn listens_only_on_a_port_the_policy_binds() {
        for fam in [libc::AF_INET, libc::AF_INET6] {
            let s = socket(fam, libc::SOCK_STREAM, 0).unwrap();
            assert_eq!(listen(&s, 8, &[]), libc::EACCES, "unbound {fam}");
            assert!(!listening(&s));
        }
        let s = socket(libc::AF_INET, libc::SOCK_STREAM, 0).unwrap();
        let sa = loopback(0);
        // SAFETY: a valid sockaddr_in.
        let r = unsafe { libc::bind(s.as_raw_fd(), (&sa as *const libc::sockaddr_in).cast(), LEN) };
        assert_eq!(r, 0);
        let p = local_port(&s).unwrap();
        assert_eq!(listen(&s, 8, &[p + 1]), libc::EACCES);
        assert!(!listening(&s));
        assert_eq!(listen(&s, 8, &[p]), 0);
        assert!(listening(&s));
        // Listening already: a new backlog.
        assert_eq!(listen(&s, 16, &[p]), 0);
        let v6: OwnedFd = TcpListener::bind("[::1]:0").unwrap().into();
        let p6 = local_port(&v6).unwrap();
        assert_eq!(listen(&v6, 8, &[p6]), 0);
        let unix = socket(libc::AF_UNIX, libc::SOCK_STREAM, 0).unwrap();
        assert_eq!(listen(&unix, 8, &[]), libc::EINVAL, "unbound");
        let family = libc::AF_UNIX as libc::sa_family_t;
        let len = std::mem::size_of::<libc::sa_family_t>() as libc::socklen_t;
        // SAFETY: the family alone: an abstract name of the kernel's.
        let r = unsafe { libc::bind(unix.as_raw_fd(), (&family as *const u16).cast(), len) };
        assert_eq!(r, 0);
        assert_eq!(listen(&unix, 8, &[]), 0);
        assert!(listening(&unix));
        let udp: OwnedFd = UdpSocket::bind("127.0.0.1:0").unwrap().into();
        assert_eq!(listen(&udp, 8, &[]), libc::EOPNOTSUPP);
        let file: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        assert_eq!(listen(&file, 8, &[]), libc::ENOTSOCK);
        // Not TCP: SCTP or MPTCP, where this kernel has them.
        for proto in [libc::IPPROTO_SCTP, 262] {
            if let Some(s) = socket(libc::AF_INET, libc::SOCK_STREAM, proto) {
                assert_eq!(listen(&s, 8, &[]), libc::EACCES, "protocol {proto}");
            }
        }
    }

    /// After a failed `connect()` the socket still shows the port the
    /// kernel gave back, and `listen()` picks another: the socket ends
    /// up refused and not listening, though its address named an
    /// allowed port (or, in about one run of 28,000, listening on that
    /// port because the kernel picked it again).
    #[test]
    fn a_port_from_a_failed_connect_is_no_bind() {
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let s = socket(libc::AF_INET, libc::SOCK_STREAM, 0).unwrap();
        let sa = loopback(port);
        // SAFETY: a valid sockaddr_in.
        let r =
            unsafe { libc::connect(s.as_raw_fd(), (&sa as *const libc::sockaddr_in).cast(), LEN) };
        assert_eq!((r, errno()), (-1, libc::ECONNREFUSED));
        let stale = local_port(&s).unwrap();
        assert_ne!(stale, 0);
        match listen(&s, 8, &[stale]) {
            0 => assert_eq!(local_port(&s), Some(stale)),
            e => {
                assert_eq!(e, libc::EACCES);
                assert!(!listening(&s));
            }
        }
    }
}
