//! The HTTP proxy: `CONNECT host:port` tunnels and plain `http://`
//! requests. Request heads are parsed with `httparse`.
//!
//! A plain request is forwarded with `Connection: close` and its body by
//! `Content-Length` or, reframed, by chunks (`chunked`); then only the
//! response is relayed. A second request on the same connection never
//! reaches the server unchecked (it could name another path, or another
//! virtual host of the same address).

use super::chunked;
use super::relay::{copy, read_by, tunnel, ReadErr};
use super::rules::{normal_host, Dest, Reason, Via};
use super::{Cx, Refusal};
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Instant;

/// Headers per request head; more is refused (431).
const MAX_HEADERS: usize = 100;

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
    /// Bytes of the head, so the rest of the buffer is the body's start.
    pub len: usize,
}

/// Why a head could not be read, with the status to answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Bad {
    pub status: u16,
    pub why: String,
}

fn bad(status: u16, why: impl Into<String>) -> Bad {
    Bad {
        status,
        why: why.into(),
    }
}

/// Parse `buf` as far as it goes: `Ok(None)` when the head is not
/// complete yet.
pub fn parse(buf: &[u8]) -> Result<Option<Head>, Bad> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(len)) => Ok(Some(Head {
            method: req.method.unwrap_or_default().to_string(),
            target: req.path.unwrap_or_default().to_string(),
            headers: req
                .headers
                .iter()
                .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                .collect(),
            len,
        })),
        Err(httparse::Error::TooManyHeaders) => Err(bad(431, "too many headers")),
        Err(e) => Err(bad(400, e.to_string())),
    }
}

/// Read a head by `deadline`, at most `max` bytes. Returns it and the
/// bytes read (the head, then whatever followed it).
pub fn read_head(s: &TcpStream, deadline: Instant, max: usize) -> Result<(Head, Vec<u8>), Bad> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = match read_by(s, &mut chunk, deadline) {
            Ok(n) => n,
            Err(ReadErr::Slow) => return Err(bad(408, "request head not complete in time")),
            // Opened and closed without a byte: nothing to answer or log.
            Err(ReadErr::Closed) if buf.is_empty() => return Err(bad(0, "")),
            Err(ReadErr::Closed) => {
                return Err(bad(400, "connection closed inside the request head"))
            }
            Err(ReadErr::Io(e)) => return Err(bad(400, e.to_string())),
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(h) = parse(&buf)? {
            return Ok((h, buf));
        }
        if buf.len() >= max {
            return Err(bad(431, format!("request head longer than {max} bytes")));
        }
    }
}

/// `host:port` (CONNECT's target, or a URL's authority with a default
/// port). User information (`user@host`) is refused: it makes the host
/// ambiguous to readers that split differently.
pub fn authority(s: &str, default_port: Option<u16>) -> Result<Dest, Bad> {
    let nope = || bad(400, format!("{s:?} is not host:port"));
    if s.contains('@') {
        return Err(bad(400, "user information in the authority"));
    }
    let (host, port) = if s.starts_with('[') {
        let end = s.find(']').ok_or_else(nope)?;
        (&s[..=end], s[end + 1..].strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(nope)?
        }
        Some(_) => return Err(nope()),
        None => default_port.ok_or_else(nope)?,
    };
    let host = normal_host(host).ok_or_else(nope)?;
    Ok(Dest { host, port })
}

/// An absolute `http://` URL: its destination and path (`/` when empty).
pub fn absolute(target: &str) -> Result<(Dest, String), Bad> {
    let lower = target.get(..8).unwrap_or(target).to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &target[7..]
    } else if lower.starts_with("https://") {
        return Err(bad(
            501,
            "https:// URLs go through CONNECT (HTTPS_PROXY), not as plain requests",
        ));
    } else {
        return Err(bad(
            400,
            "not a proxy request: expected http://HOST/PATH or CONNECT",
        ));
    };
    let (auth, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let dest = authority(auth, Some(80))?;
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    // The fragment is the client's, never sent.
    let path = path.split('#').next().unwrap_or("/").to_string();
    Ok((dest, path))
}

fn respond(s: &TcpStream, status: u16, text: &str) {
    respond_with(s, status, text, None);
}

/// A refused destination: the reason and, where one is suggested, the
/// rule that would allow it, in the reason phrase when it fits and in
/// the body; then the refusal is logged.
fn refuse(client: &TcpStream, cx: &Cx, via: Via, dest: &Dest, text: &str, reason: Reason) {
    let r = Refusal {
        via,
        host: dest.host.clone(),
        port: dest.port,
        reason,
    };
    let rule = r.rule().zip(r.rule_line());
    let status = status_of(&r.reason);
    // Logged first: its line reaches stderr before the client can react.
    cx.refuse(via, &dest.host, dest.port, r.reason);
    respond_with(client, status, text, rule);
}

/// Printable ASCII for a reason phrase: anything else becomes `?`.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// The longest reason phrase sbx sends after "Forbidden by sbx: ".
const PHRASE_MAX: usize = 200;

/// `rule`: the rule as TOML and on one line.
fn respond_with(s: &TcpStream, status: u16, text: &str, rule: Option<(String, String)>) {
    let phrase = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        _ => "Error",
    };
    // pip and curl show the reason phrase of a failed CONNECT, often
    // not the body: a refusal says there why (one line, printable ASCII).
    // The rule goes there too when the whole phrase fits.
    let phrase = if status == 403 {
        let why = printable(text);
        let with_rule = rule
            .as_ref()
            .map(|(_, line)| printable(&format!("{why}; to allow it, add: {line}")))
            .filter(|p| p.len() <= PHRASE_MAX);
        let why: String = with_rule.unwrap_or(why).chars().take(PHRASE_MAX).collect();
        format!("Forbidden by sbx: {why}")
    } else {
        phrase.to_string()
    };
    let mut body = format!("sbx: {text}\n");
    if let Some((toml, _)) = &rule {
        body.push_str("To allow it, add to the policy:\n\n");
        body.push_str(toml);
    }
    // The challenge: clients that wait for it send the credentials of
    // their proxy URL only then.
    let challenge = if status == 407 {
        "Proxy-Authenticate: Basic realm=\"sbx\"\r\n"
    } else {
        ""
    };
    let msg = format!(
        "HTTP/1.1 {status} {phrase}\r\n{challenge}Content-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = (&mut &*s).write_all(msg.as_bytes());
}

fn status_of(r: &Reason) -> u16 {
    match r {
        Reason::Unresolved(_) | Reason::Unreachable(_) => 502,
        Reason::Malformed(_) => 400,
        Reason::Unsupported(_) => 501,
        Reason::Unauthenticated => 407,
        _ => 403,
    }
}

/// Serve one HTTP proxy client.
pub fn serve(client: TcpStream, cx: &Cx) {
    let deadline = Instant::now() + cx.options.head_timeout;
    let (head, buf) = match read_head(&client, deadline, cx.options.max_head) {
        Ok(x) => x,
        Err(b) if b.status == 0 => return,
        Err(b) => {
            respond(&client, b.status, &b.why);
            cx.refuse(Via::Http, "", 0, Reason::Malformed(b.why));
            return;
        }
    };
    let _ = client.set_read_timeout(None);
    let early = &buf[head.len..];
    if head.method.eq_ignore_ascii_case("CONNECT") {
        connect(client, cx, &head, early);
    } else {
        plain(client, cx, &head, early);
    }
}

fn connect(client: TcpStream, cx: &Cx, head: &Head, early: &[u8]) {
    let dest = match authority(&head.target, None) {
        Ok(d) => d,
        Err(b) => {
            respond(&client, b.status, &b.why);
            cx.refuse(Via::Connect, "", 0, Reason::Malformed(b.why));
            return;
        }
    };
    if !authorized(cx, head) {
        refuse_unauthenticated(&client, cx, Via::Connect, &dest);
        return;
    }
    let upstream = match cx.open(Via::Connect, &dest, None) {
        Ok(u) => u,
        Err(r) => {
            let text = format!("{}:{}: {r}", dest.host, dest.port);
            refuse(&client, cx, Via::Connect, &dest, &text, r);
            return;
        }
    };
    let Some(_u) = cx.track(&upstream) else {
        return;
    };
    if (&mut &client)
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
        || (!early.is_empty() && (&mut &upstream).write_all(early).is_err())
    {
        return;
    }
    tunnel(&client, &upstream);
}

/// The request carries the run's token, or none is needed.
fn authorized(cx: &Cx, head: &Head) -> bool {
    cx.token
        .as_deref()
        .is_none_or(|t| super::auth::http_ok(&head.headers, t))
}

/// 407, checked once the destination is read so the refusal names it.
fn refuse_unauthenticated(client: &TcpStream, cx: &Cx, via: Via, dest: &Dest) {
    let r = Reason::Unauthenticated;
    respond(client, 407, &format!("{}:{}: {r}", dest.host, dest.port));
    cx.refuse(via, &dest.host, dest.port, r);
}

/// Headers that concern one hop, or that sbx sets itself.
fn hop_by_hop(name: &str, listed: &[String]) -> bool {
    matches!(
        name,
        "connection"
            | "proxy-connection"
            | "keep-alive"
            | "proxy-authorization"
            | "proxy-authenticate"
            | "te"
            | "trailer"
            | "upgrade"
            | "host"
    ) || listed.iter().any(|l| l == name)
}

/// The comma-separated tokens of every `name` header, lower case.
fn tokens(head: &Head, name: &str) -> Vec<String> {
    head.headers
        .iter()
        .filter(|(n, _)| n == name)
        .flat_map(|(_, v)| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// How the request's body ends.
#[derive(Debug, PartialEq, Eq)]
enum Body {
    Length(u64),
    Chunked,
}

/// The body's framing: `None` for no body. A `Transfer-Encoding` must end
/// in `chunked` and comes without `Content-Length` (RFC 9112 §6.3: either
/// could smuggle a request past a reader that picks the other).
fn body_len(head: &Head) -> Result<Option<Body>, Bad> {
    let codings = tokens(head, "transfer-encoding");
    let lengths = head.headers.iter().filter(|(n, _)| n == "content-length");
    if !codings.is_empty() {
        let chunked = codings.iter().filter(|c| *c == "chunked").count();
        if codings.last().map(String::as_str) != Some("chunked") || chunked != 1 {
            return Err(bad(400, "Transfer-Encoding must end in chunked"));
        }
        if lengths.count() > 0 {
            return Err(bad(400, "both Transfer-Encoding and Content-Length"));
        }
        return Ok(Some(Body::Chunked));
    }
    let mut len = None;
    for (_, v) in lengths {
        let n = std::str::from_utf8(v)
            .ok()
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| bad(400, "bad Content-Length"))?;
        if len.is_some_and(|l| l != n) {
            return Err(bad(400, "conflicting Content-Length headers"));
        }
        len = Some(n);
    }
    Ok(len.map(Body::Length))
}

/// The head sent to the server: origin-form target, the client's
/// end-to-end headers, `Host` from the checked URL, `Connection: close`.
pub fn forward_head(head: &Head, dest: &Dest, path: &str) -> Vec<u8> {
    let listed = tokens(head, "connection");
    let mut out = format!("{} {path} HTTP/1.1\r\n", head.method).into_bytes();
    for (n, v) in head.headers.iter().filter(|(n, _)| !hop_by_hop(n, &listed)) {
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    let host = if dest.host.contains(':') {
        format!("[{}]", dest.host)
    } else {
        dest.host.clone()
    };
    let host = if dest.port == 80 {
        host
    } else {
        format!("{host}:{}", dest.port)
    };
    out.extend_from_slice(format!("Host: {host}\r\nConnection: close\r\n\r\n").as_bytes());
    out
}

fn plain(client: TcpStream, cx: &Cx, head: &Head, early: &[u8]) {
    let parsed = absolute(&head.target).and_then(|(d, p)| Ok((d, p, body_len(head)?)));
    let (dest, path, body) = match parsed {
        Ok(x) => x,
        Err(b) => {
            respond(&client, b.status, &b.why);
            let r = if b.status == 400 {
                Reason::Malformed(b.why)
            } else {
                Reason::Unsupported(b.why)
            };
            cx.refuse(Via::Http, "", 0, r);
            return;
        }
    };
    if !authorized(cx, head) {
        refuse_unauthenticated(&client, cx, Via::Http, &dest);
        return;
    }
    let upstream = match cx.open(Via::Http, &dest, Some(&path)) {
        Ok(u) => u,
        Err(r) => {
            let text = format!("{}:{}{path}: {r}", dest.host, dest.port);
            refuse(&client, cx, Via::Http, &dest, &text, r);
            return;
        }
    };
    let Some(_u) = cx.track(&upstream) else {
        return;
    };
    if (&mut &upstream)
        .write_all(&forward_head(head, &dest, &path))
        .is_err()
    {
        return;
    }
    std::thread::scope(|s| {
        let down = s.spawn(|| copy(&upstream, &client));
        match body {
            Some(Body::Chunked) => {
                let mut from = BufReader::new(early.chain(&client));
                if chunked::relay(&mut from, &mut &upstream).is_err() {
                    // Malformed or cut short: the server must not take
                    // a partial body for a whole one.
                    let _ = upstream.shutdown(Shutdown::Both);
                }
            }
            Some(Body::Length(len)) => {
                let first = early.len().min(usize::try_from(len).unwrap_or(usize::MAX));
                if (&mut &upstream).write_all(&early[..first]).is_ok() {
                    let rest = len - first as u64;
                    let _ = std::io::copy(&mut (&client).take(rest), &mut &upstream);
                }
            }
            None => {}
        }
        let _ = down.join();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_or_name_the_problem() {
        assert_eq!(parse(b"GET http://a/ HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        let h = parse(b"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\nxyz")
            .unwrap()
            .unwrap();
        assert_eq!(h.method, "CONNECT");
        assert_eq!(h.target, "a.test:443");
        assert_eq!(h.len, 45);
        assert_eq!(
            parse(b"\x16\x03\x01garbage\r\n\r\n").unwrap_err().status,
            400
        );
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect();
        let text = format!("GET http://a/ HTTP/1.1\r\n{many}\r\n");
        assert_eq!(parse(text.as_bytes()).unwrap_err().status, 431);
    }

    #[test]
    fn authorities_and_urls() {
        let d = |h: &str, p| Dest {
            host: h.into(),
            port: p,
        };
        assert_eq!(authority("A.test:443", None), Ok(d("a.test", 443)));
        assert_eq!(authority("[::1]:8080", None), Ok(d("::1", 8080)));
        assert_eq!(authority("a.test", Some(80)), Ok(d("a.test", 80)));
        for bad in [
            "a.test",
            "a.test:",
            "a.test:0",
            "a.test:65536",
            "a.test:+1",
            "u@a.test:1",
            "[::1:1",
            ":80",
            "a b:1",
        ] {
            assert!(authority(bad, None).is_err(), "{bad}");
        }
        assert_eq!(
            absolute("http://a.test:8080/x/y?q#f"),
            Ok((d("a.test", 8080), "/x/y?q".into()))
        );
        assert_eq!(absolute("HTTP://a.test"), Ok((d("a.test", 80), "/".into())));
        assert_eq!(
            absolute("http://a.test?q"),
            Ok((d("a.test", 80), "/?q".into()))
        );
        assert_eq!(absolute("https://a.test/").unwrap_err().status, 501);
        assert_eq!(absolute("/just/a/path").unwrap_err().status, 400);
        assert!(absolute("http://evil@a.test/").is_err());
    }

    #[test]
    fn forwarded_head_drops_hop_headers_and_sets_host() {
        let h = parse(
            b"GET http://a.test:81/p HTTP/1.1\r\nHost: other.test\r\nProxy-Authorization: x\r\n\
              Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\nAccept: */*\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        let (dest, path) = absolute(&h.target).unwrap();
        let out = String::from_utf8(forward_head(&h, &dest, &path)).unwrap();
        assert_eq!(
            out,
            "GET /p HTTP/1.1\r\naccept: */*\r\nHost: a.test:81\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn body_lengths() {
        let h = |extra: &str| {
            parse(format!("POST http://a/ HTTP/1.1\r\n{extra}\r\n").as_bytes())
                .unwrap()
                .unwrap()
        };
        assert_eq!(body_len(&h("")), Ok(None));
        assert_eq!(
            body_len(&h("Content-Length: 5\r\n")),
            Ok(Some(Body::Length(5)))
        );
        assert_eq!(
            body_len(&h("Content-Length: 5\r\nContent-Length: 5\r\n")),
            Ok(Some(Body::Length(5)))
        );
        assert_eq!(
            body_len(&h("Content-Length: 5\r\nContent-Length: 6\r\n"))
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            body_len(&h("Content-Length: -1\r\n")).unwrap_err().status,
            400
        );
        assert_eq!(
            body_len(&h("Transfer-Encoding: chunked\r\n")),
            Ok(Some(Body::Chunked))
        );
        assert_eq!(
            body_len(&h(
                "Transfer-Encoding: gzip\r\nTransfer-Encoding: Chunked\r\n"
            )),
            Ok(Some(Body::Chunked))
        );
        for refused in [
            "Transfer-Encoding: gzip\r\n",
            "Transfer-Encoding: chunked, gzip\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        ] {
            assert_eq!(body_len(&h(refused)).unwrap_err().status, 400, "{refused}");
        }
    }
}
