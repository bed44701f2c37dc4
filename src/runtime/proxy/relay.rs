//! Moving bytes once a connection is allowed, and reading a client's
//! opening bytes under a deadline (a client that sends its request
//! slowly or never must not hold a thread for ever).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Instant;

/// Large enough that a loopback download is not bound by system calls.
const BUF: usize = 128 * 1024;

/// Copy until `from` ends, then end `to`'s writing side so the peer
/// sees the end too.
pub fn copy(from: &TcpStream, to: &TcpStream) -> io::Result<u64> {
    #[cfg(target_os = "linux")]
    if let Some(r) = splice::copy(from, to) {
        let _ = to.shutdown(Shutdown::Write);
        return r;
    }
    let mut buf = vec![0u8; BUF];
    let (mut from, mut to) = (from, to);
    let mut total = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
    let _ = to.shutdown(Shutdown::Write);
    Ok(total)
}

/// Linux: socket to pipe to socket with splice(2), so the bytes stay in
/// the kernel; a buffered copy costs a second pass through user memory
/// per direction, about half the throughput of a direct download
/// (docs/performance.md).
#[cfg(target_os = "linux")]
mod splice {
    use std::io;
    use std::net::TcpStream;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    const CHUNK: usize = 1 << 20;

    /// `None` when no pipe can be made (the caller copies instead).
    pub fn copy(from: &TcpStream, to: &TcpStream) -> Option<io::Result<u64>> {
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: pipe2 just returned them; nothing else owns them.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A larger pipe moves more per call; the default works too.
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
        Some(pump(from.as_raw_fd(), &r, &w, to.as_raw_fd()))
    }

    fn splice(from: i32, to: i32, len: usize) -> io::Result<usize> {
        loop {
            // SAFETY: plain descriptors, no offsets (null: current position).
            let n = unsafe {
                libc::splice(
                    from,
                    std::ptr::null_mut(),
                    to,
                    std::ptr::null_mut(),
                    len,
                    libc::SPLICE_F_MOVE,
                )
            };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    fn pump(from: i32, r: &OwnedFd, w: &OwnedFd, to: i32) -> io::Result<u64> {
        let mut total = 0u64;
        loop {
            let n = splice(from, w.as_raw_fd(), CHUNK)?;
            if n == 0 {
                return Ok(total);
            }
            let mut left = n;
            while left > 0 {
                let m = splice(r.as_raw_fd(), to, left)?;
                if m == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                left -= m;
            }
            total += n as u64;
        }
    }
}

/// Both directions until both end. An error on one side ends both, so
/// neither thread waits on a peer that is gone.
pub fn tunnel(client: &TcpStream, upstream: &TcpStream) {
    std::thread::scope(|s| {
        let down = s.spawn(|| {
            if copy(upstream, client).is_err() {
                let _ = client.shutdown(Shutdown::Both);
                let _ = upstream.shutdown(Shutdown::Both);
            }
        });
        if copy(client, upstream).is_err() {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
        }
        let _ = down.join();
    });
}

/// Why reading the opening bytes stopped.
#[derive(Debug)]
pub enum ReadErr {
    /// The deadline passed.
    Slow,
    /// The client closed before sending everything.
    Closed,
    Io(io::Error),
}

/// Read once, waiting at most until `deadline`.
pub fn read_by(s: &TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, ReadErr> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadErr::Slow);
        }
        s.set_read_timeout(Some(left)).map_err(ReadErr::Io)?;
        match (&mut &*s).read(buf) {
            Ok(0) => return Err(ReadErr::Closed),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(ReadErr::Slow)
            }
            Err(e) => return Err(ReadErr::Io(e)),
        }
    }
}

/// Fill `buf` by `deadline`.
pub fn read_exact_by(s: &TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), ReadErr> {
    let mut at = 0;
    while at < buf.len() {
        at += read_by(s, &mut buf[at..], deadline)?;
    }
    Ok(())
}
