//! Descriptors handed from the child to sbx over a UNIX socket pair
//! (`SCM_RIGHTS`): the proxy's listeners, and the listener of the
//! `listen` check's filter. The child sends before it execs, so sbx
//! receives once the spawn has returned.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The most descriptors one message carries.
pub const MAX_FDS: usize = 64;

/// A control buffer with room for [`MAX_FDS`], aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Buf([u8; 320]);

/// A connected pair, close-on-exec: sbx's end and the child's.
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors owned from here on.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Send `fds` (at most [`MAX_FDS`]) in one message with one data byte.
/// Async-signal-safe: system calls on stack data only.
pub unsafe fn send(sock: RawFd, fds: &[RawFd]) -> bool {
    let n = fds.len().min(MAX_FDS);
    let mut buf = Buf([0; 320]);
    let payload = (n * std::mem::size_of::<RawFd>()) as libc::c_uint;
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if n > 0 {
        msg.msg_control = buf.0.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(payload) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(payload) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr().cast::<u8>(),
            libc::CMSG_DATA(c),
            payload as usize,
        );
    }
    libc::sendmsg(sock, &msg, 0) == 1
}

/// Up to `n` descriptors from one message, close-on-exec (none if
/// nothing usable came). Without `wait`, a message not sent yet counts
/// as none.
pub fn receive(sock: &OwnedFd, n: usize, wait: bool) -> Vec<OwnedFd> {
    let mut buf = Buf([0; 320]);
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let flags = libc::MSG_CMSG_CLOEXEC | if wait { 0 } else { libc::MSG_DONTWAIT };
    // SAFETY: a zeroed msghdr pointing at our buffers; the control
    // message is parsed with the CMSG macros within `buf`, and every
    // descriptor it carries is owned here (the kernel installed them).
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = buf.0.as_mut_ptr().cast();
        msg.msg_controllen = buf.0.len() as _;
        if libc::recvmsg(sock.as_raw_fd(), &mut msg, flags) != 1 {
            return Vec::new();
        }
        let mut out = Vec::new();
        let c = libc::CMSG_FIRSTHDR(&msg);
        if !c.is_null() && (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS
        {
            let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
            let count = len / std::mem::size_of::<RawFd>();
            let data = libc::CMSG_DATA(c).cast::<RawFd>();
            for i in 0..count {
                let fd = OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i)));
                // Past `n`: closed when dropped.
                if i < n {
                    out.push(fd);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is sent arrives, at most `n`; an empty socket gives none
    /// without waiting.
    #[test]
    fn descriptors_cross_the_pair() {
        let (mine, theirs) = socketpair().unwrap();
        assert!(receive(&mine, 4, false).is_empty());
        let (a, b) = socketpair().unwrap();
        // SAFETY: valid descriptors owned by this test.
        assert!(unsafe { send(theirs.as_raw_fd(), &[a.as_raw_fd(), b.as_raw_fd()]) });
        let got = receive(&mine, 1, true);
        assert_eq!(got.len(), 1);
        // The first is `a`: writing to it reaches `b`.
        assert_eq!(
            unsafe { libc::write(got[0].as_raw_fd(), b"x".as_ptr().cast(), 1) },
            1
        );
        let mut c = [0u8; 1];
        assert_eq!(
            unsafe { libc::read(b.as_raw_fd(), c.as_mut_ptr().cast(), 1) },
            1
        );
    }
}
