//! The proxy on real loopback sockets: a test server, the proxy on two
//! listeners, and clients that speak HTTP and SOCKS5 to it. Names map to
//! addresses through the resolver table, so no test uses DNS.

use super::*;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

/// An HTTP server on 127.0.0.1: answers each request with its method,
/// path and `Host` header, or echoes raw bytes after `ECHO\n`.
struct Server {
    port: u16,
}

fn server() -> Server {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || answer(s));
        }
    });
    Server { port }
}

fn answer(mut s: TcpStream) {
    let mut buf = vec![0u8; 5];
    if s.read_exact(&mut buf).is_err() {
        return;
    }
    if buf == b"ECHO\n" {
        let mut r = &s;
        let _ = std::io::copy(&mut r, &mut &s);
        return;
    }
    let mut b = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let line = head.lines().next().unwrap_or("").to_string();
    let host = head
        .lines()
        .find_map(|l| l.strip_prefix("Host: "))
        .unwrap_or("")
        .to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let at = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let mut body = buf[at..].to_vec();
    // A chunked body (the proxy's framing) is kept raw, up to its end.
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    while chunked && !body.ends_with(b"0\r\n\r\n") {
        match s.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&b[..n]),
        }
    }
    while body.len() < len {
        match s.read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&b[..n]),
        }
    }
    let text = format!("{line}|host={host}|body={}", String::from_utf8_lossy(&body));
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

use super::rules::tests::rule;

fn table() -> Resolver {
    Resolver::parse_table(
        "127.0.0.1 allowed.test other.test a.wild.test wild.test\n\
         169.254.169.254 meta.test\n\
         fd00:ec2::254 meta6.test\n",
    )
    .unwrap()
}

fn listen() -> TcpListener {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap()
}

fn proxy(rules: &[NetRule]) -> Proxy {
    proxy_with(rules, Options::default())
}

fn proxy_with(rules: &[NetRule], options: Options) -> Proxy {
    start(rules, options, None)
}

/// A proxy that serves only clients presenting `token`, as on macOS.
fn proxy_token(rules: &[NetRule], token: &str) -> Proxy {
    start(rules, Options::default(), Some(token.into()))
}

fn start(rules: &[NetRule], options: Options, token: Option<String>) -> Proxy {
    let config = Config {
        rules: Rules::new(rules),
        resolver: table(),
        log: Log::new(Echo::Off),
        options,
        token,
    };
    Proxy::start(config, listen(), listen()).unwrap()
}

fn dial(port: u16) -> TcpStream {
    let s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

fn read_bytes(mut s: &TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

fn read_all(s: &TcpStream) -> String {
    String::from_utf8_lossy(&read_bytes(s)).to_string()
}

/// Send raw bytes to the HTTP listener and read the whole answer.
fn http_raw(p: &Proxy, bytes: &[u8]) -> String {
    let mut s = dial(p.ports().0);
    s.write_all(bytes).unwrap();
    read_all(&s)
}

fn get(p: &Proxy, url: &str) -> String {
    http_raw(
        p,
        format!("GET {url} HTTP/1.1\r\nHost: ignored\r\n\r\n").as_bytes(),
    )
}

/// CONNECT, then talk to the echo server through the tunnel.
fn connect_echo(p: &Proxy, target: &str) -> Result<String, String> {
    connect_echo_with(p, target, "")
}

/// [`connect_echo`] with `extra` header lines.
fn connect_echo_with(p: &Proxy, target: &str, extra: &str) -> Result<String, String> {
    let mut s = dial(p.ports().0);
    write!(
        s,
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{extra}\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).unwrap_or(0) == 0 {
            return Err(String::from_utf8_lossy(&head).to_string());
        }
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    if !head.starts_with("HTTP/1.1 200 ") {
        return Err(head + &read_all(&s));
    }
    s.write_all(b"ECHO\nping").unwrap();
    let mut got = [0u8; 4];
    s.read_exact(&mut got).unwrap();
    Ok(String::from_utf8_lossy(&got).to_string())
}

/// A SOCKS5 CONNECT by name; the reply code, and the echo on success.
fn socks_echo(p: &Proxy, host: &str, port: u16) -> (u8, String) {
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 0]).unwrap();
    let mut m = [0u8; 2];
    s.read_exact(&mut m).unwrap();
    assert_eq!(m, [5, 0]);
    let mut req = vec![5, 1, 0, 3, host.len() as u8];
    req.extend_from_slice(host.as_bytes());
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).unwrap();
    if rep[1] != 0 {
        return (rep[1], String::new());
    }
    s.write_all(b"ECHO\nping").unwrap();
    let mut got = [0u8; 4];
    s.read_exact(&mut got).unwrap();
    (0, String::from_utf8_lossy(&got).to_string())
}

fn reasons(p: Proxy) -> Vec<(String, u16, Reason)> {
    p.stop()
        .into_iter()
        .map(|r| (r.host, r.port, r.reason))
        .collect()
}

#[test]
fn allowed_host_through_connect_plain_http_and_socks() {
    let srv = server();
    let p = proxy(&[rule(0, "allowed.test", Some(srv.port))]);
    assert_eq!(
        connect_echo(&p, &format!("allowed.test:{}", srv.port)),
        Ok("ping".into())
    );
    let got = get(&p, &format!("http://allowed.test:{}/x?y", srv.port));
    assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    assert!(
        got.ends_with(&format!(
            "GET /x?y HTTP/1.1|host=allowed.test:{}|body=",
            srv.port
        )),
        "{got}"
    );
    assert_eq!(socks_echo(&p, "allowed.test", srv.port), (0, "ping".into()));
    assert_eq!(reasons(p), vec![]);
}

#[test]
fn disallowed_host_and_port_are_refused_and_logged() {
    let srv = server();
    let p = proxy(&[rule(0, "allowed.test", Some(srv.port))]);
    // The controls: the same proxy lets the allowed host through.
    assert_eq!(
        connect_echo(&p, &format!("allowed.test:{}", srv.port)),
        Ok("ping".into())
    );
    let err = connect_echo(&p, &format!("other.test:{}", srv.port)).unwrap_err();
    // The reason is in the status line, which pip and curl show.
    let status = err.lines().next().unwrap_or("");
    assert!(
        status.starts_with("HTTP/1.1 403 Forbidden by sbx: "),
        "{err}"
    );
    assert!(status.contains("no [[net]] rule allows"), "{err}");
    // And the rule to add, there and in the body.
    let rule_line = format!(
        "; to allow it, add: [[net]] host = \"other.test\" port = {}",
        srv.port
    );
    assert!(status.ends_with(&rule_line), "{err}");
    assert!(
        err.contains(&format!(
            "To allow it, add to the policy:\n\n[[net]]\nhost = \"other.test\"\nport = {}\n",
            srv.port
        )),
        "{err}"
    );
    // A name too long for the phrase with its rule: the reason alone
    // there, the rule in the body.
    let long = format!("{}.{}.test", "a".repeat(60), "b".repeat(60));
    let err = connect_echo(&p, &format!("{long}:{}", srv.port)).unwrap_err();
    let status = err.lines().next().unwrap_or("");
    assert!(
        status.len() <= "HTTP/1.1 403 Forbidden by sbx: ".len() + 200,
        "{err}"
    );
    assert!(!status.contains("to allow it"), "{err}");
    assert!(err.contains(&format!("host = \"{long}\"")), "{err}");
    let wrong_port = srv.port.wrapping_add(1).max(1);
    assert!(connect_echo(&p, &format!("allowed.test:{wrong_port}")).is_err());
    let got = get(&p, &format!("http://other.test:{}/", srv.port));
    assert!(got.starts_with("HTTP/1.1 403"), "{got}");
    assert_eq!(
        socks_echo(&p, "other.test", srv.port).0,
        2,
        "not allowed by ruleset"
    );
    // As a multiset: each connection's thread logs its own refusal.
    let key = |l: &Vec<(String, u16, Reason)>| {
        let mut k: Vec<String> = l.iter().map(|e| format!("{e:?}")).collect();
        k.sort();
        k
    };
    let want: Vec<(String, u16, Reason)> = vec![
        ("other.test".into(), srv.port, Reason::NoRule),
        (long, srv.port, Reason::NoRule),
        ("allowed.test".into(), wrong_port, Reason::NoRule),
        ("other.test".into(), srv.port, Reason::NoRule),
        ("other.test".into(), srv.port, Reason::NoRule),
    ];
    assert_eq!(key(&reasons(p)), key(&want));
}

#[test]
fn wildcards_match_subdomains_only() {
    let srv = server();
    let p = proxy(&[rule(0, "*.wild.test", Some(srv.port))]);
    assert_eq!(socks_echo(&p, "a.wild.test", srv.port), (0, "ping".into()));
    assert_eq!(socks_echo(&p, "wild.test", srv.port).0, 2);
    assert_eq!(
        reasons(p),
        vec![("wild.test".into(), srv.port, Reason::NoRule)]
    );
}

#[test]
fn metadata_and_link_local_are_refused() {
    let srv = server();
    let p = proxy(&[rule(0, "*", None)]);
    // Control: an ordinary allowed name under the same rule.
    assert_eq!(socks_echo(&p, "allowed.test", srv.port), (0, "ping".into()));
    assert_eq!(socks_echo(&p, "meta.test", 80).0, 2);
    assert_eq!(socks_echo(&p, "meta6.test", 80).0, 2);
    assert!(connect_echo(&p, "169.254.169.254:80")
        .unwrap_err()
        .contains("403"));
    assert!(connect_echo(&p, "metadata.google.internal:80")
        .unwrap_err()
        .contains("403"));
    // This host's loopback by address: no rule names it.
    assert!(connect_echo(&p, &format!("127.0.0.1:{}", srv.port))
        .unwrap_err()
        .contains("loopback"));
    assert!(connect_echo(&p, &format!("[::ffff:127.0.0.1]:{}", srv.port)).is_err());
    let log = reasons(p);
    // Each connection's thread logs its refusal; two may log out of order.
    let mut kinds: Vec<&str> = log
        .iter()
        .map(|(_, _, r)| match r {
            Reason::Metadata(_) => "metadata",
            Reason::Loopback(_) => "loopback",
            _ => "other",
        })
        .collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        ["loopback", "loopback", "metadata", "metadata", "metadata", "metadata"]
    );
}

#[test]
fn loopback_named_literally_is_reached() {
    let srv = server();
    let p = proxy(&[rule(0, "127.0.0.1", Some(srv.port))]);
    assert_eq!(
        connect_echo(&p, &format!("127.0.0.1:{}", srv.port)),
        Ok("ping".into())
    );
    assert!(connect_echo(&p, &format!("127.0.0.2:{}", srv.port)).is_err());
}

#[test]
fn path_prefix_on_plain_http() {
    let srv = server();
    let mut r = rule(0, "allowed.test", Some(srv.port));
    r.path_prefix = Some("/simple/".into());
    let p = proxy(&[r]);
    let base = format!("http://allowed.test:{}", srv.port);
    assert!(get(&p, &format!("{base}/simple/pkg/")).contains("GET /simple/pkg/ HTTP/1.1"));
    let got = get(&p, &format!("{base}/admin"));
    assert!(
        got.starts_with("HTTP/1.1 403") && got.contains("URL path"),
        "{got}"
    );
    assert!(get(&p, &format!("{base}/simple/../admin")).starts_with("HTTP/1.1 403"));
    // Paths that common servers route elsewhere: a path parameter that
    // Tomcat and Spring drop, double encoding, an empty segment.
    let tricks = [
        "/simple/..;/admin",
        "/simple/%252e%252e/admin",
        "/simple//admin",
    ];
    for trick in tricks {
        let got = get(&p, &format!("{base}{trick}"));
        assert!(
            got.starts_with("HTTP/1.1 403") && got.contains("URL path"),
            "{trick}: {got}"
        );
    }
    // A tunnel carries no path: cooperative, allowed.
    assert_eq!(
        connect_echo(&p, &format!("allowed.test:{}", srv.port)),
        Ok("ping".into())
    );
    let refused = reasons(p);
    assert_eq!(refused.len(), 2 + tricks.len(), "{refused:?}");
    assert!(refused.iter().all(|r| r.2 == Reason::Path), "{refused:?}");
}

#[test]
fn plain_http_forwards_one_request_and_its_body() {
    let srv = server();
    let mut r = rule(0, "allowed.test", Some(srv.port));
    r.path_prefix = Some("/ok".into());
    let p = proxy(&[r]);
    // A second, pipelined request for a path the rules refuse never
    // reaches the server: the connection closes after the first. A
    // chunked body reaches it in the proxy's own framing.
    for (framing, body, seen) in [
        ("Content-Length: 5", "hello", "hello"),
        (
            "Transfer-Encoding: chunked",
            "5;x=y\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n",
            "5\r\nhello\r\n0\r\n\r\n",
        ),
    ] {
        let got = http_raw(
            &p,
            format!(
                "POST http://allowed.test:{0}/ok HTTP/1.1\r\n{framing}\r\n\r\n{body}\
                 GET http://allowed.test:{0}/secret HTTP/1.1\r\n\r\n",
                srv.port
            )
            .as_bytes(),
        );
        let want = format!(
            "POST /ok HTTP/1.1|host=allowed.test:{}|body={seen}",
            srv.port
        );
        assert!(got.ends_with(&want), "{got}");
        assert!(!got.contains("secret"), "{got}");
    }
    // A request that could be read two ways is refused before it is sent.
    let got = http_raw(
        &p,
        format!(
            "POST http://allowed.test:{}/ok HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\
             Content-Length: 5\r\n\r\n0\r\n\r\n",
            srv.port
        )
        .as_bytes(),
    );
    assert!(got.starts_with("HTTP/1.1 400"), "{got}");
}

#[test]
fn malformed_requests_get_clean_errors() {
    let p = proxy_with(
        &[rule(0, "*", None)],
        Options {
            head_timeout: Duration::from_millis(300),
            max_head: 1024,
            ..Options::default()
        },
    );
    assert!(http_raw(&p, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
    assert!(http_raw(&p, b"GET /relative HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400"));
    assert!(http_raw(&p, b"CONNECT nohost HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400"));
    assert!(http_raw(&p, b"GET https://a.test/ HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 501"));
    let long = format!(
        "GET http://a.test/ HTTP/1.1\r\nX: {}\r\n\r\n",
        "a".repeat(4096)
    );
    assert!(http_raw(&p, long.as_bytes()).starts_with("HTTP/1.1 431"));
    // Slowloris: a head that never ends is cut at the deadline.
    let started = Instant::now();
    let mut s = dial(p.ports().0);
    s.write_all(b"GET http://a.test/ HTTP/1.1\r\nX-Slow: ")
        .unwrap();
    let got = read_all(&s);
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // SOCKS: not version 5, a truncated request, a slow one, UDP.
    let mut s = dial(p.ports().1);
    s.write_all(&[4, 1, 0, 80, 127, 0, 0, 1, 0]).unwrap();
    assert_eq!(read_all(&s), "");
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 0, 5, 1, 0, 3, 9, b'a']).unwrap();
    assert_eq!(read_bytes(&s), [5, 0], "method reply, then closed");
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1, 0, 53])
        .unwrap();
    let mut rep = [0u8; 12];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(rep[2..4], [5, 7], "UDP ASSOCIATE: command not supported");
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 2]).unwrap();
    assert_eq!(read_bytes(&s), [5, 0xff], "no acceptable method");
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 0, 5, 1, 0, 9, 0]).unwrap();
    let mut rep = [0u8; 12];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(rep[2..4], [5, 8], "address type not supported");
    // Connecting and closing without a byte is not a refusal.
    drop(dial(p.ports().0));
    drop(dial(p.ports().1));
    std::thread::sleep(Duration::from_millis(100));
    let log = p.stop();
    assert!(
        log.iter()
            .all(|r| matches!(r.reason, Reason::Malformed(_) | Reason::Unsupported(_))),
        "{log:?}"
    );
    assert!(log.len() >= 9, "{log:?}");
    let empty = Reason::Malformed(String::new());
    assert!(!log.iter().any(|r| r.reason == empty), "{log:?}");
}

/// Random bytes at both listeners: every connection ends, nothing panics
/// (a panic in a connection thread would make stop's join fail silently,
/// so the proxy is checked to still serve afterwards).
#[test]
fn random_input_never_breaks_the_proxy() {
    use proptest::prelude::*;
    let srv = server();
    let p = proxy_with(
        &[rule(0, "allowed.test", Some(srv.port))],
        Options {
            head_timeout: Duration::from_millis(200),
            ..Options::default()
        },
    );
    let cfg = ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    };
    proptest!(cfg, |(bytes in proptest::collection::vec(any::<u8>(), 0..300), socks in any::<bool>())| {
        let mut s = dial(if socks { p.ports().1 } else { p.ports().0 });
        let _ = s.write_all(&bytes);
        let _ = s.shutdown(Shutdown::Write);
        let _ = read_all(&s);
    });
    assert_eq!(socks_echo(&p, "allowed.test", srv.port), (0, "ping".into()));
    let _ = p.stop();
}

#[test]
fn stop_ends_every_thread_and_connection() {
    let srv = server();
    let p = proxy(&[rule(0, "allowed.test", Some(srv.port))]);
    // An open tunnel, an idle client that sent nothing, a half head.
    let mut tunnel = dial(p.ports().1);
    tunnel.write_all(&[5, 1, 0]).unwrap();
    let mut m = [0u8; 2];
    tunnel.read_exact(&mut m).unwrap();
    let mut req = vec![5, 1, 0, 3, 12];
    req.extend_from_slice(b"allowed.test");
    req.extend_from_slice(&srv.port.to_be_bytes());
    tunnel.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    tunnel.read_exact(&mut rep).unwrap();
    assert_eq!(rep[1], 0);
    let idle = dial(p.ports().0);
    let mut half = dial(p.ports().0);
    half.write_all(b"GET http://allowed.test/ HTTP/1.1\r\n")
        .unwrap();
    let (hp, sp) = p.ports();
    let started = Instant::now();
    let _ = p.stop();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // Every client sees its connection end, and nothing listens.
    for s in [&tunnel, &idle, &half] {
        assert_eq!(read_all(s), "");
    }
    for port in [hp, sp] {
        assert!(TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).is_err());
    }
}

#[test]
fn curl_through_the_proxy_variables() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no curl");
        return;
    }
    let srv = server();
    let p = proxy(&[rule(0, "allowed.test", Some(srv.port))]);
    let (h, s) = p.ports();
    let curl = |url: &str, socks: bool| {
        let mut c = std::process::Command::new("curl");
        c.args(["-sS", "--max-time", "10", url]).env_clear();
        for (k, v) in env(h, s, None) {
            if socks || !k.to_string_lossy().to_ascii_lowercase().starts_with("all_") {
                c.env(k, v);
            }
        }
        if socks {
            c.env_remove("http_proxy").env_remove("HTTP_PROXY");
        }
        c.output().unwrap()
    };
    let ok = curl(&format!("http://allowed.test:{}/hi", srv.port), false);
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout),
        format!("GET /hi HTTP/1.1|host=allowed.test:{}|body=", srv.port)
    );
    let ok = curl(&format!("http://allowed.test:{}/s", srv.port), true);
    assert!(
        String::from_utf8_lossy(&ok.stdout).starts_with("GET /s HTTP/1.1"),
        "{ok:?}"
    );
    let no = curl(&format!("http://other.test:{}/hi", srv.port), false);
    assert!(
        String::from_utf8_lossy(&no.stdout).contains("no [[net]] rule"),
        "{no:?}"
    );
    assert_eq!(p.stop().len(), 1);
}

#[test]
fn env_pairs_in_both_cases() {
    let e: Vec<(String, String)> = env(3128, 1080, None)
        .into_iter()
        .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
        .collect();
    let get = |k: &str| e.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("HTTP_PROXY"), Some("http://127.0.0.1:3128"));
    assert_eq!(get("https_proxy"), Some("http://127.0.0.1:3128"));
    assert_eq!(get("ALL_PROXY"), Some("socks5h://127.0.0.1:1080"));
    assert_eq!(get("no_proxy"), Some("localhost,127.0.0.1,::1"));
    assert_eq!(get("NODE_USE_ENV_PROXY"), Some("1"));
    assert_eq!(e.len(), 9);
    let mut vars = vec![
        (OsString::from("PATH"), OsString::from("/bin")),
        (
            OsString::from("https_proxy"),
            OsString::from("http://corp:8080"),
        ),
    ];
    merge_env(&mut vars, 3128, 1080, None);
    assert_eq!(vars.len(), 10);
    assert!(!vars.iter().any(|(_, v)| v == "http://corp:8080"));
}

/// The loader's calls: the artifact's rules on the handed listeners,
/// and the summary at exit.
#[test]
fn for_run_and_finish() {
    let spec = crate::back::landlock::ProxySpec {
        rules: vec![rule(0, "crates.io", Some(443))],
    };
    assert!(Proxy::for_run(&spec, vec![listen()], None, false, None).is_err());
    let p = Proxy::for_run(&spec, vec![listen(), listen()], None, false, None).unwrap();
    let err = connect_echo(&p, "203.0.113.9:9").unwrap_err();
    assert!(err.starts_with("HTTP/1.1 403"), "{err}");
    // This host's loopback is listed, with no rule (docs/linux.md).
    let err = connect_echo(&p, "127.0.0.1:9").unwrap_err();
    assert!(err.starts_with("HTTP/1.1 403"), "{err}");
    let s = p.finish();
    assert!(s.starts_with("sbx: the network proxy refused 2:\n"), "{s}");
    assert!(s.contains("127.0.0.1:9: no [[net]] rule"), "{s}");
    assert!(
        s.ends_with("[[net]]\nhost = \"203.0.113.9\"\nport = 9\n\n"),
        "{s}"
    );
    assert!(!s.contains("host = \"127.0.0.1\""), "{s}");
}

/// 8 MiB of varied bytes through a tunnel and back (the echo server),
/// both directions at once: nothing lost, reordered or changed.
#[test]
fn large_transfer_is_intact() {
    let srv = server();
    let p = proxy(&[rule(0, "allowed.test", Some(srv.port))]);
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 0]).unwrap();
    let mut m = [0u8; 2];
    s.read_exact(&mut m).unwrap();
    let mut req = vec![5, 1, 0, 3, 12];
    req.extend_from_slice(b"allowed.test");
    req.extend_from_slice(&srv.port.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(rep[1], 0);
    s.write_all(b"ECHO\n").unwrap();
    let data: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut w = s.try_clone().unwrap();
    let sent = data.clone();
    let writer = std::thread::spawn(move || {
        w.write_all(&sent).unwrap();
        w.shutdown(Shutdown::Write).unwrap();
    });
    let got = read_bytes(&s);
    writer.join().unwrap();
    assert!(got == data, "{} bytes back of {}", got.len(), data.len());
    assert!(p.stop().is_empty());
}

/// A listener with a backlog of 0 that never accepts: once its queue is
/// full, Linux drops further SYNs and a connect waits.
#[cfg(target_os = "linux")]
fn black_hole() -> (OwnedFd, u16, Vec<TcpStream>) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns.
    let fd = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        OwnedFd::from_raw_fd(fd)
    };
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_in of `len` bytes.
    unsafe {
        assert_eq!(
            libc::bind(
                fd.as_raw_fd(),
                &addr as *const _ as *const libc::sockaddr,
                len
            ),
            0
        );
        assert_eq!(libc::listen(fd.as_raw_fd(), 0), 0);
    }
    let l = TcpListener::from(fd.try_clone().unwrap());
    let port = l.local_addr().unwrap().port();
    // Fill the queue; a connect that does not complete at once means it is full.
    let mut held = Vec::new();
    for _ in 0..8 {
        match TcpStream::connect_timeout(
            &SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            Duration::from_millis(200),
        ) {
            Ok(s) => held.push(s),
            Err(_) => break,
        }
    }
    (fd, port, held)
}

#[cfg(target_os = "linux")]
#[test]
fn stop_does_not_wait_for_a_hanging_connect() {
    let (_fd, port, _held) = black_hole();
    let p = proxy(&[rule(0, "allowed.test", Some(port))]);
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 0]).unwrap();
    let mut m = [0u8; 2];
    s.read_exact(&mut m).unwrap();
    let mut req = vec![5, 1, 0, 3, 12];
    req.extend_from_slice(b"allowed.test");
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let _ = p.stop();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(
        took >= Duration::from_millis(1500),
        "the connect really hung: {took:?}"
    );
}

/// Past `max_connections`, a connection is closed at once and logged;
/// the ones being served go on.
#[test]
fn connections_over_the_limit_are_closed_and_logged() {
    let srv = server();
    let p = proxy_with(
        &[rule(0, "allowed.test", Some(srv.port))],
        Options {
            max_connections: 1,
            ..Options::default()
        },
    );
    let held = dial(p.ports().0);
    std::thread::sleep(Duration::from_millis(100));
    let over = dial(p.ports().1);
    assert_eq!(read_bytes(&over), b"", "closed at once");
    drop(held);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(socks_echo(&p, "allowed.test", srv.port), (0, "ping".into()));
    let log = p.stop();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        log[0].reason,
        Reason::Unsupported("more than 1 connections at once".into())
    );
}

/// With a token (macOS), HTTP clients must send it as Basic
/// credentials: 407 and a challenge without them or with others, the
/// usual service with them. Each refusal names the destination.
#[test]
fn http_clients_must_present_the_token() {
    let srv = server();
    let p = proxy_token(&[rule(0, "allowed.test", Some(srv.port))], "t0k");
    let target = format!("allowed.test:{}", srv.port);
    let basic = |cred: &str| {
        format!(
            "Proxy-Authorization: Basic {}\r\n",
            auth_b64(cred.as_bytes())
        )
    };
    let none = connect_echo(&p, &target).unwrap_err();
    assert!(
        none.starts_with("HTTP/1.1 407 Proxy Authentication Required\r\n"),
        "{none}"
    );
    assert!(
        none.contains("\r\nProxy-Authenticate: Basic realm=\"sbx\"\r\n"),
        "{none}"
    );
    let wrong = connect_echo_with(&p, &target, &basic("sbx:t0K")).unwrap_err();
    assert!(wrong.starts_with("HTTP/1.1 407 "), "{wrong}");
    assert_eq!(
        connect_echo_with(&p, &target, &basic("sbx:t0k")),
        Ok("ping".into())
    );
    let url = format!("http://allowed.test:{}/x", srv.port);
    let get_with = |extra: &str| {
        http_raw(
            &p,
            format!("GET {url} HTTP/1.1\r\nHost: a\r\n{extra}\r\n").as_bytes(),
        )
    };
    assert!(get_with("").starts_with("HTTP/1.1 407 "));
    let ok = get_with(&basic("sbx:t0k"));
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
    // The credentials are this hop's: the server never sees them.
    assert!(!ok.to_ascii_lowercase().contains("authorization"), "{ok}");
    let log = reasons(p);
    assert_eq!(log.len(), 3, "{log:?}");
    for (host, port, reason) in log {
        assert_eq!((host.as_str(), port), ("allowed.test", srv.port));
        assert_eq!(reason, Reason::Unauthenticated);
    }
}

fn auth_b64(bytes: &[u8]) -> String {
    // Bit by bit, independent of the proxy's encoder.
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = String::new();
    for b in bytes {
        bits.push_str(&format!("{b:08b}"));
    }
    while bits.len() % 6 != 0 {
        bits.push('0');
    }
    let mut out: String = bits
        .as_bytes()
        .chunks(6)
        .map(|c| ABC[usize::from_str_radix(std::str::from_utf8(c).unwrap(), 2).unwrap()] as char)
        .collect();
    while out.len() % 4 != 0 {
        out.push('=');
    }
    out
}

/// SOCKS5 with a token: only the user name and password method is
/// offered; the wrong password is refused and the connection closed,
/// the right one gets the usual CONNECT.
#[test]
fn socks_clients_must_present_the_token() {
    let srv = server();
    let p = proxy_token(&[rule(0, "allowed.test", Some(srv.port))], "t0k");
    // Only "no authentication" offered: no acceptable method.
    let mut s = dial(p.ports().1);
    s.write_all(&[5, 1, 0]).unwrap();
    assert_eq!(read_bytes(&s), [5, 0xff]);
    let login = |user: &[u8], password: &[u8]| {
        let mut s = dial(p.ports().1);
        s.write_all(&[5, 2, 0, 2]).unwrap();
        let mut m = [0u8; 2];
        s.read_exact(&mut m).unwrap();
        assert_eq!(m, [5, 2], "user name and password chosen");
        let mut msg = vec![1, user.len() as u8];
        msg.extend_from_slice(user);
        msg.push(password.len() as u8);
        msg.extend_from_slice(password);
        s.write_all(&msg).unwrap();
        let mut st = [0u8; 2];
        s.read_exact(&mut st).unwrap();
        (s, st)
    };
    let (bad, st) = login(b"sbx", b"t0K");
    assert_eq!(st, [1, 1]);
    assert_eq!(read_bytes(&bad), b"", "closed after the failure");
    let (_, st) = login(b"root", b"t0k");
    assert_eq!(st, [1, 1]);
    let (mut s, st) = login(b"sbx", b"t0k");
    assert_eq!(st, [1, 0]);
    let mut req = vec![5, 1, 0, 3, 12];
    req.extend_from_slice(b"allowed.test");
    req.extend_from_slice(&srv.port.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(rep[1], 0);
    s.write_all(b"ECHO\nping").unwrap();
    let mut got = [0u8; 4];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    let log = reasons(p);
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log
        .iter()
        .all(|(h, _, r)| h.is_empty() && *r == Reason::Unauthenticated));
}

#[test]
fn env_carries_the_token() {
    let e: Vec<(String, String)> = env(50001, 50002, Some("t0k"))
        .into_iter()
        .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
        .collect();
    let get = |k: &str| e.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("HTTP_PROXY"), Some("http://sbx:t0k@127.0.0.1:50001"));
    assert_eq!(get("https_proxy"), Some("http://sbx:t0k@127.0.0.1:50001"));
    assert_eq!(get("ALL_PROXY"), Some("socks5h://sbx:t0k@127.0.0.1:50002"));
    assert_eq!(get("NO_PROXY"), Some("localhost,127.0.0.1,::1"));
}

/// curl takes the credentials from the proxy variables, for HTTP and
/// SOCKS5 alike.
#[test]
fn curl_presents_the_token_from_the_variables() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no curl");
        return;
    }
    let srv = server();
    let token = auth::new_token().unwrap();
    let p = proxy_token(&[rule(0, "allowed.test", Some(srv.port))], &token);
    let (h, s) = p.ports();
    let url = format!("http://allowed.test:{}/hi", srv.port);
    let curl = |token: &str, socks: bool| {
        let mut c = std::process::Command::new("curl");
        c.args(["-sS", "--max-time", "10", &url]).env_clear();
        for (k, v) in env(h, s, Some(token)) {
            let all = k.to_string_lossy().to_ascii_lowercase().starts_with("all_");
            if socks == all {
                c.env(k, v);
            }
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).to_string()
    };
    let want = format!("GET /hi HTTP/1.1|host=allowed.test:{}|body=", srv.port);
    assert_eq!(curl(&token, false), want);
    assert_eq!(curl(&token, true), want);
    assert!(curl("wrong", false).contains("credentials"));
    assert_eq!(curl("wrong", true), "");
    assert_eq!(p.stop().len(), 2);
}
