//! The SOCKS5 proxy (RFC 1928): CONNECT only, with the name resolved
//! here (`socks5h://`). BIND and UDP ASSOCIATE are refused: UDP would
//! bypass the host rules. No authentication, or with the run's token
//! the user name and password of RFC 1929 ([`super::auth`]).
//!
//! The frames are fixed-layout: a few length-prefixed fields, read here
//! with explicit bounds. The SOCKS crates for Rust are built on async
//! runtimes that the rest of sbx does not use.

use super::relay::{read_exact_by, tunnel, ReadErr};
use super::rules::{normal_host, Dest, Reason, Via};
use super::Cx;
use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr, TcpStream};
use std::time::Instant;

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const USER_PASSWORD: u8 = 2;
const NO_METHOD: u8 = 0xff;
/// RFC 1929's own version byte, and its status codes.
const AUTH_VERSION: u8 = 1;
const AUTH_OK: u8 = 0;
const AUTH_FAILED: u8 = 1;
const CMD_CONNECT: u8 = 1;

/// Reply codes (RFC 1928 §6).
const OK: u8 = 0;
const FAILURE: u8 = 1;
const NOT_ALLOWED: u8 = 2;
const HOST_UNREACHABLE: u8 = 4;
const REFUSED: u8 = 5;
const BAD_COMMAND: u8 = 7;
const BAD_ADDRESS: u8 = 8;

/// A request as read: the command and where to.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub command: u8,
    pub dest: Dest,
}

/// Why a handshake failed, and the reply code to send (`None`: the
/// client is not speaking SOCKS5, so nothing is sent).
#[derive(Debug)]
pub struct Failure {
    pub reply: Option<u8>,
    pub reason: Reason,
}

fn malformed(why: &str) -> Failure {
    Failure {
        reply: None,
        reason: Reason::Malformed(why.into()),
    }
}

fn read_err(e: ReadErr, what: &str) -> Failure {
    malformed(&match e {
        ReadErr::Slow => format!("{what} not complete in time"),
        ReadErr::Closed => format!("{what} cut short"),
        ReadErr::Io(e) => format!("{what}: {e}"),
    })
}

/// The method negotiation, the credentials when `token` is set, and the
/// request. Replies to the negotiation and the credentials; the caller
/// replies to the request.
pub fn handshake(
    s: &TcpStream,
    deadline: Instant,
    token: Option<&str>,
) -> Result<Request, Failure> {
    let read =
        |buf: &mut [u8], what: &str| read_exact_by(s, buf, deadline).map_err(|e| read_err(e, what));
    let mut head = [0u8; 2];
    match read_exact_by(s, &mut head[..1], deadline) {
        // Opened and closed without a byte: nothing to log.
        Err(ReadErr::Closed) => {
            return Err(Failure {
                reply: None,
                reason: Reason::Malformed(String::new()),
            })
        }
        r => r.map_err(|e| read_err(e, "greeting"))?,
    }
    read(&mut head[1..], "greeting")?;
    if head[0] != VERSION {
        return Err(malformed("not SOCKS version 5"));
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    read(&mut methods, "greeting")?;
    let method = if token.is_some() {
        USER_PASSWORD
    } else {
        NO_AUTH
    };
    if !methods.contains(&method) {
        let _ = (&mut &*s).write_all(&[VERSION, NO_METHOD]);
        return Err(Failure {
            reply: None,
            reason: match token {
                Some(_) => Reason::Unauthenticated,
                None => {
                    Reason::Unsupported("SOCKS5 authentication (only \"no authentication\")".into())
                }
            },
        });
    }
    (&mut &*s)
        .write_all(&[VERSION, method])
        .map_err(|e| malformed(&e.to_string()))?;
    if let Some(t) = token {
        credentials(s, deadline, t)?;
    }
    let mut req = [0u8; 4];
    read(&mut req, "request")?;
    if req[0] != VERSION || req[2] != 0 {
        return Err(malformed("bad request header"));
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            read(&mut a, "request")?;
            Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            read(&mut a, "request")?;
            Ipv6Addr::from(a).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            read(&mut len, "request")?;
            let mut name = vec![0u8; usize::from(len[0])];
            read(&mut name, "request")?;
            let name = std::str::from_utf8(&name).ok().and_then(normal_host);
            name.ok_or_else(|| Failure {
                reply: Some(FAILURE),
                reason: Reason::Malformed("not a host name".into()),
            })?
        }
        _ => {
            return Err(Failure {
                reply: Some(BAD_ADDRESS),
                reason: Reason::Malformed("unknown address type".into()),
            })
        }
    };
    let mut port = [0u8; 2];
    read(&mut port, "request")?;
    let port = u16::from_be_bytes(port);
    if port == 0 {
        return Err(Failure {
            reply: Some(FAILURE),
            reason: Reason::Malformed("port 0".into()),
        });
    }
    Ok(Request {
        command: req[1],
        dest: Dest { host, port },
    })
}

/// RFC 1929: `VER ULEN UNAME PLEN PASSWD`, answered `VER STATUS`; on a
/// failure the connection is closed.
fn credentials(s: &TcpStream, deadline: Instant, token: &str) -> Result<(), Failure> {
    let read =
        |buf: &mut [u8]| read_exact_by(s, buf, deadline).map_err(|e| read_err(e, "credentials"));
    let mut head = [0u8; 2];
    read(&mut head)?;
    if head[0] != AUTH_VERSION {
        return Err(malformed("not RFC 1929 credentials"));
    }
    let mut user = vec![0u8; usize::from(head[1])];
    read(&mut user)?;
    let mut len = [0u8; 1];
    read(&mut len)?;
    let mut password = vec![0u8; usize::from(len[0])];
    read(&mut password)?;
    let ok = super::auth::socks_ok(&user, &password, token);
    let status = if ok { AUTH_OK } else { AUTH_FAILED };
    let _ = (&mut &*s).write_all(&[AUTH_VERSION, status]);
    if ok {
        Ok(())
    } else {
        Err(Failure {
            reply: None,
            reason: Reason::Unauthenticated,
        })
    }
}

fn reply(s: &TcpStream, code: u8) {
    // The bound address is not meaningful through sbx: all zeros.
    let _ = (&mut &*s).write_all(&[VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

/// Serve one SOCKS5 client.
pub fn serve(client: TcpStream, cx: &Cx) {
    let deadline = Instant::now() + cx.options.head_timeout;
    let req = match handshake(&client, deadline, cx.token.as_deref()) {
        Ok(r) => r,
        Err(f) => {
            if let Some(code) = f.reply {
                reply(&client, code);
            }
            if f.reason != Reason::Malformed(String::new()) {
                cx.refuse(Via::Socks, "", 0, f.reason);
            }
            return;
        }
    };
    let _ = client.set_read_timeout(None);
    if req.command != CMD_CONNECT {
        reply(&client, BAD_COMMAND);
        let what = match req.command {
            2 => "SOCKS5 BIND",
            3 => "SOCKS5 UDP ASSOCIATE",
            _ => "unknown SOCKS5 command",
        };
        let r = Reason::Unsupported(what.into());
        cx.refuse(Via::Socks, &req.dest.host, req.dest.port, r);
        return;
    }
    match cx.open(Via::Socks, &req.dest, None) {
        Ok(upstream) => {
            reply(&client, OK);
            let Some(_u) = cx.track(&upstream) else {
                return;
            };
            tunnel(&client, &upstream);
        }
        Err(r) => {
            let code = match r {
                Reason::Unresolved(_) => HOST_UNREACHABLE,
                Reason::Unreachable(_) => REFUSED,
                _ => NOT_ALLOWED,
            };
            reply(&client, code);
            cx.refuse(Via::Socks, &req.dest.host, req.dest.port, r);
        }
    }
}
