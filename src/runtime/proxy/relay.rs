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
