//! What a relayed connection must open with, so that a rule's scheme
//! means what it says for clients that ignore the proxy (issue #37): on
//! an `https`/`wss` rule's port the client's TLS ClientHello must name
//! the rule's host in SNI (else an allowed address could front for
//! another site it serves); on an `ssh` rule's port the client's first
//! line must be an SSH-2.0 identification (RFC 4253 §4.2: the client
//! sends it without waiting for the server's). The bytes are peeked,
//! not read: the server gets them unchanged. Only the opening is
//! checked, what a client sends before the server answers: after it the
//! relay passes bytes through (TLS and SSH encrypt the rest), so a
//! client can send anything after a well-formed opening, to the rule's
//! host and port only.

use super::rules::{normal_host, Reason};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// What to check on a relayed connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    None,
    Tls,
    Ssh,
}

/// The most a ClientHello may take: one TLS record (2^14 bytes) and
/// its header.
const MAX_HELLO: usize = 5 + 16 * 1024;

const SSH_ID: &[u8] = b"SSH-2.0-";

/// An identification line's most bytes, its line end included.
const MAX_IDENT: usize = 255;

/// What a client's first bytes say on an `ssh` rule's port.
#[derive(Debug, PartialEq, Eq)]
pub enum Ident {
    /// Not enough bytes yet.
    More,
    /// A whole SSH-2.0 identification line.
    Ssh,
    /// Anything else.
    Other,
}

/// Whether `b` opens with an SSH-2.0 identification line (RFC 4253
/// §4.2): `SSH-2.0-`, a software version and optional comments in
/// printable US-ASCII, ending in CR LF (a bare LF taken, as OpenSSH
/// takes it), at most 255 bytes.
pub fn ssh_ident(b: &[u8]) -> Ident {
    let n = b.len().min(SSH_ID.len());
    if b[..n] != SSH_ID[..n] {
        return Ident::Other;
    }
    let end = b.iter().position(|&c| c == b'\n');
    let line = &b[..end.unwrap_or(b.len())];
    // The CR of a line end still to come counts as its start.
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let rest = &line[n..];
    if !rest.iter().all(|c| (0x20..=0x7e).contains(c)) {
        return Ident::Other;
    }
    match end {
        None if b.len() < MAX_IDENT => Ident::More,
        Some(e) if e < MAX_IDENT && !rest.is_empty() && !rest.starts_with(b" ") => Ident::Ssh,
        _ => Ident::Other,
    }
}

/// What a (possibly partial) ClientHello says about SNI.
#[derive(Debug, PartialEq, Eq)]
pub enum Sni {
    /// Not enough bytes yet.
    More,
    Name(String),
    /// A ClientHello without a host name.
    Absent,
    /// Not a TLS ClientHello.
    NotTls,
}

/// Read the server name from the first TLS record of `b`.
pub fn sni(b: &[u8]) -> Sni {
    if b.is_empty() {
        return Sni::More;
    }
    // A handshake record.
    if b[0] != 0x16 {
        return Sni::NotTls;
    }
    if b.len() < 5 {
        return Sni::More;
    }
    let len = usize::from(u16::from_be_bytes([b[3], b[4]]));
    if b.len() < 5 + len {
        return Sni::More;
    }
    parse_hello(&b[5..5 + len]).unwrap_or(Sni::NotTls)
}

/// A cursor over a ClientHello; `None` when it is cut short.
fn parse_hello(h: &[u8]) -> Option<Sni> {
    let mut at = 0usize;
    let take = |at: &mut usize, n: usize| -> Option<&[u8]> {
        let s = h.get(*at..*at + n)?;
        *at += n;
        Some(s)
    };
    let int = |s: &[u8]| s.iter().fold(0usize, |v, b| v << 8 | usize::from(*b));
    // Handshake type 1: ClientHello; its length; version; random.
    if take(&mut at, 1)? != [1] {
        return Some(Sni::NotTls);
    }
    take(&mut at, 3 + 2 + 32)?;
    let session = int(take(&mut at, 1)?);
    take(&mut at, session)?;
    let suites = int(take(&mut at, 2)?);
    take(&mut at, suites)?;
    let compression = int(take(&mut at, 1)?);
    take(&mut at, compression)?;
    if at == h.len() {
        return Some(Sni::Absent); // no extensions
    }
    let ext_len = int(take(&mut at, 2)?);
    let end = at + ext_len;
    while at + 4 <= end {
        let kind = int(take(&mut at, 2)?);
        let len = int(take(&mut at, 2)?);
        let data = take(&mut at, len)?;
        if kind != 0 {
            continue;
        }
        // server_name: a list; the first host_name (type 0) counts.
        let list = data.get(2..)?;
        let mut i = 0;
        while i + 3 <= list.len() {
            let (t, n) = (list[i], int(&list[i + 1..i + 3]));
            let name = list.get(i + 3..i + 3 + n)?;
            if t == 0 {
                return Some(Sni::Name(String::from_utf8_lossy(name).into_owned()));
            }
            i += 3 + n;
        }
        return Some(Sni::Absent);
    }
    Some(Sni::Absent)
}

/// Wait for the client's first bytes (up to `timeout`) and check them
/// against `check` for `host`.
pub fn check(
    client: &TcpStream,
    check: Check,
    host: &str,
    timeout: Duration,
) -> Result<(), Reason> {
    if check == Check::None {
        return Ok(());
    }
    let until = Instant::now() + timeout;
    let mut buf = vec![0u8; MAX_HELLO];
    let slow = || Reason::Malformed("the client sent nothing in time".into());
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || client.set_read_timeout(Some(left)).is_err() {
            return Err(slow());
        }
        let n = client.peek(&mut buf).map_err(|_| slow())?;
        if n == 0 {
            return Err(Reason::Malformed("closed before sending anything".into()));
        }
        let got = &buf[..n];
        match check {
            Check::Ssh => match ssh_ident(got) {
                Ident::More => {}
                Ident::Ssh => return Ok(()),
                Ident::Other => {
                    return Err(Reason::Unsupported(
                        "not an SSH-2.0 client on an ssh rule's port".into(),
                    ))
                }
            },
            Check::Tls => match sni(got) {
                Sni::More if n < MAX_HELLO => {}
                Sni::Name(n) if normal_host(&n).as_deref() == Some(host) => return Ok(()),
                Sni::Name(n) => {
                    return Err(Reason::Unsupported(format!(
                        "TLS server name {n:?} is not {host} (domain fronting)"
                    )))
                }
                Sni::Absent => {
                    return Err(Reason::Unsupported(format!(
                        "a TLS ClientHello without a server name for {host}"
                    )))
                }
                _ => {
                    return Err(Reason::Unsupported(
                        "not a TLS ClientHello on an https rule's port".into(),
                    ))
                }
            },
            _ => {}
        }
        // Part of it has arrived: peek again shortly.
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ClientHello record with `name` in SNI (none: no
    /// extension).
    pub(crate) fn hello(name: Option<&str>) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]); // random
        body.push(0); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]); // one suite
        body.extend_from_slice(&[1, 0]); // no compression
        let mut ext = Vec::new();
        // An unrelated extension first (supported_versions).
        ext.extend_from_slice(&[0, 43, 0, 3, 2, 3, 4]);
        if let Some(n) = name {
            let n = n.as_bytes();
            let mut list = vec![0u8];
            list.extend_from_slice(&(n.len() as u16).to_be_bytes());
            list.extend_from_slice(n);
            let mut data = (list.len() as u16).to_be_bytes().to_vec();
            data.extend_from_slice(&list);
            ext.extend_from_slice(&[0, 0]);
            ext.extend_from_slice(&(data.len() as u16).to_be_bytes());
            ext.extend_from_slice(&data);
        }
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let mut hs = vec![1];
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut rec = vec![0x16, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    #[test]
    fn ssh_identification_lines() {
        for ok in [
            &b"SSH-2.0-OpenSSH_9.6\r\n"[..],
            b"SSH-2.0-x\n",
            b"SSH-2.0-PuTTY_Release_0.80 comments here\r\nmore",
        ] {
            assert_eq!(ssh_ident(ok), Ident::Ssh, "{ok:?}");
        }
        for more in [&b""[..], b"SS", b"SSH-2.0-", b"SSH-2.0-OpenSSH_9.6\r"] {
            assert_eq!(ssh_ident(more), Ident::More, "{more:?}");
        }
        let long = [b"SSH-2.0-".as_slice(), &[b'x'; 300]].concat();
        for other in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"SSH-1.5-old\r\n",
            b"SSH-2.0-\r\n",
            b"SSH-2.0- x\r\n",
            b"SSH-2.0-x\x00y\r\n",
            b"SSH-2.0-x\ty\r\n",
            &long,
        ] {
            assert_eq!(ssh_ident(other), Ident::Other, "{other:?}");
        }
    }

    #[test]
    fn server_names() {
        let h = hello(Some("Example.COM"));
        assert_eq!(sni(&h), Sni::Name("Example.COM".into()));
        for cut in [0, 3, 10, h.len() - 1] {
            assert_eq!(sni(&h[..cut]), Sni::More, "cut at {cut}");
        }
        assert_eq!(sni(&hello(None)), Sni::Absent);
        assert_eq!(sni(b"GET / HTTP/1.1\r\n"), Sni::NotTls);
        assert_eq!(sni(b"SSH-2.0-x"), Sni::NotTls);
        // A record whose inside is cut short is no ClientHello.
        let mut bad = hello(Some("a.test"));
        bad[3..5].copy_from_slice(&20u16.to_be_bytes());
        bad.truncate(25);
        assert_eq!(sni(&bad), Sni::NotTls);
    }
}

#[cfg(test)]
mod which {
    use super::Check;
    use crate::runtime::proxy::rules::{tests::rule, Dest, Rules};

    #[test]
    fn the_check_follows_the_schemes_of_the_matching_rules() {
        let mut tls = rule(0, "a.test", None);
        tls.scheme = Some("https".into());
        let mut ssh = rule(1, "git.test", None);
        ssh.scheme = Some("ssh".into());
        let plain = rule(2, "b.test", Some(443));
        let mut also = rule(3, "a.test", Some(8443));
        also.scheme = Some("wss".into());
        let r = Rules::new(&[tls, ssh, plain, also]);
        let d = |h: &str, port| Dest {
            host: h.into(),
            port,
        };
        assert_eq!(r.relay_check(&d("a.test", 443)), Check::Tls);
        assert_eq!(r.relay_check(&d("a.test", 8443)), Check::Tls);
        assert_eq!(r.relay_check(&d("git.test", 22)), Check::Ssh);
        assert_eq!(r.relay_check(&d("b.test", 443)), Check::None);
        assert_eq!(r.relay_check(&d("c.test", 443)), Check::None);
    }
}
