//! Host rules end to end under `sbx run` (#15): the child reaches an
//! allowed host only through the proxy, and nothing else: not a host the
//! rules do not name, not a direct connection, not UDP. The proxy itself
//! is unreachable from outside the sandbox. Every denial here stands
//! beside a positive control under the same policy.
//!
//! These need the private network namespace: on a host without
//! namespaces each test skips, saying why (under CI=true it fails).

#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::Duration;

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

struct Fx {
    dir: tempfile::TempDir,
}

impl Fx {
    fn new(rules: &str) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("policy.toml"),
            format!("version = 1\n{rules}"),
        )
        .unwrap();
        Fx { dir }
    }

    fn command(&self, script: &str) -> Command {
        self.command_with(&[], script)
    }

    fn command_with(&self, flags: &[&str], script: &str) -> Command {
        let mut c = Command::new(SBX);
        c.current_dir(self.dir.path())
            .args(["run", "--workspace", "."])
            .args(flags)
            .args(["policy.toml", "--", "bash", "-c", script])
            .stdin(Stdio::null());
        c
    }

    /// Whether this sbx runs host rules through the proxy; `false` (and a
    /// line saying so) when the loader reports that it cannot.
    fn proxied(&self) -> bool {
        let out = self.command_with(&["--report"], "true").output().unwrap();
        common::namespaced(&String::from_utf8_lossy(&out.stderr))
    }
}

#[test]
fn allowed_host_through_the_proxy_and_nothing_else() {
    if !common::have("curl") {
        println!("SKIPPED: no curl");
        return;
    }
    let port = common::request_line_server();
    let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let uport = udp.local_addr().unwrap().port();
    let fx = Fx::new(&format!("[[net]]\nhost = \"127.0.0.1\"\nport = {port}\n"));
    if !fx.proxied() {
        return;
    }
    let script = format!(
        "curl -sS -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{port}/via-http; echo \" rc=$?\"
         curl -sS -m 5 --noproxy '' -x \"$ALL_PROXY\" http://127.0.0.1:{port}/via-socks; echo \" rc=$?\"
         curl -sS -f -m 5 -x \"$HTTP_PROXY\" http://127.0.0.2:{port}/other; echo \" rc=$?\"
         curl -sS -f -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{wrong}/port; echo \" rc=$?\"
         curl -sS -f -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://refused.invalid:{port}/name; echo \" rc=$?\"
         curl -sS -m 5 --noproxy '*' http://127.0.0.1:{wrong}/direct; echo \" rc=$?\"
         curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/forward; echo \" rc=$?\"
         echo udp > /dev/udp/127.0.0.1/{uport}; echo \" udp rc=$?\"",
        wrong = port.wrapping_add(1).max(1)
    );
    let out = fx.command(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 8, "{stdout}\n{stderr}");
    assert_eq!(
        lines[0], "GET /via-http HTTP/1.1 rc=0",
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        lines[1], "GET /via-socks HTTP/1.1 rc=0",
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        lines[2], " rc=22",
        "a host no rule names: 403\n{stdout}\n{stderr}"
    );
    assert_eq!(lines[3], " rc=22", "another port: 403\n{stdout}\n{stderr}");
    assert_eq!(lines[4], " rc=22", "a name: 403\n{stdout}\n{stderr}");
    // The sandbox's own loopback has no server at a port no rule names:
    // the host's is out of reach there.
    assert_eq!(
        lines[5], " rc=7",
        "a direct connection fails\n{stdout}\n{stderr}"
    );
    // At the rule's port a direct connection reaches the host's server
    // through the loopback forward (#36).
    assert_eq!(
        lines[6], "GET /forward HTTP/1.1 rc=0",
        "the forward\n{stdout}\n{stderr}"
    );
    let mut b = [0u8; 16];
    assert!(udp.recv(&mut b).is_err(), "a UDP datagram left the sandbox");
    // Control: the same datagram from outside arrives.
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .send_to(b"udp\n", (Ipv4Addr::LOCALHOST, uport))
        .unwrap();
    assert_eq!(udp.recv(&mut b).unwrap(), 4);
    // The summary at exit names the refusals and a rule for each, but
    // none for this host's loopback (docs/linux.md).
    assert!(
        stderr.contains("sbx: the network proxy refused 3:"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("127.0.0.2:{port}: no [[net]] rule")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "[[net]]\nhost = \"refused.invalid\"\nport = {port}\nscheme = \"http\"\n"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("host = \"127.0.0.2\""), "{stderr}");
    assert!(!stderr.contains("host = \"127.0.0.1\""), "{stderr}");
}

/// `path_prefix` under `sbx run`: paths that common servers route to
/// another path (a Tomcat or Spring path parameter, double encoding, an
/// empty segment) are refused like `..`, each logged with its reason; a
/// path under the prefix is the control.
#[test]
fn path_prefix_tricks_are_refused() {
    if !common::have("curl") {
        println!("SKIPPED: no curl");
        return;
    }
    let port = common::request_line_server();
    let fx = Fx::new(&format!(
        "[[net]]\nhost = \"127.0.0.1\"\nport = {port}\npath_prefix = \"/v1/\"\n"
    ));
    if !fx.proxied() {
        return;
    }
    let paths = [
        "/v1/ok",
        "/v1/..;/admin",
        "/v1/%252e%252e/admin",
        "/v1//admin",
        "/v1/../admin",
    ];
    let script: String = paths
        .iter()
        .map(|p| {
            format!(
                "curl -sS -f -m 5 --path-as-is --noproxy '' -x \"$HTTP_PROXY\" \
                 'http://127.0.0.1:{port}{p}'; echo \" rc=$?\"\n"
            )
        })
        .collect();
    let out = fx.command_with(&["--report"], &script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), paths.len(), "{stdout}\n{stderr}");
    assert_eq!(lines[0], "GET /v1/ok HTTP/1.1 rc=0", "{stdout}\n{stderr}");
    for (path, line) in paths.iter().zip(&lines).skip(1) {
        assert_eq!(*line, " rc=22", "{path}: 403\n{stdout}\n{stderr}");
    }
    let logged =
        format!("sbx: proxy refused http 127.0.0.1:{port}: no [[net]] rule allows this URL path");
    assert_eq!(stderr.matches(&logged).count(), paths.len() - 1, "{stderr}");
}

#[test]
fn the_proxy_is_unreachable_from_outside() {
    let port = common::request_line_server();
    let fx = Fx::new(&format!("[[net]]\nhost = \"127.0.0.1\"\nport = {port}\n"));
    if !fx.proxied() {
        return;
    }
    let mut child = fx
        .command("echo \"${HTTP_PROXY##*:} ${ALL_PROXY##*:}\"; read -t 10 _ || true; sleep 1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ports: Vec<u16> = line
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(ports.len(), 2, "{line}");
    for p in ports {
        // On this host's loopback the port is closed, or it is someone
        // else's: either way, not the sandbox's proxy.
        if let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, p)) {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let _ = write!(s, "GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n");
            let mut got = String::new();
            let _ = s.read_to_string(&mut got);
            assert!(
                !got.contains("GET / HTTP/1.1"),
                "reached the proxy from outside: {got}"
            );
        }
    }
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}

/// A server on the host's loopback that answers with the raw body it
/// read after the head (up to a chunked body's end).
fn body_server() -> u16 {
    let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut b = [0u8; 4096];
                loop {
                    if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        if buf[at + 4..].ends_with(b"0\r\n\r\n") {
                            let body = buf[at + 4..].to_vec();
                            let _ = write!(
                                s,
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                body.len()
                            );
                            let _ = s.write_all(&body);
                            return;
                        }
                    }
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                }
            });
        }
    });
    port
}

/// Real clients through the proxy variables: `git clone` over HTTP (git's
/// dumb protocol from a static server) and `curl -T -`, which uploads
/// stdin as a chunked body. The servers are on the host's loopback, which
/// `NO_PROXY` names (the sandbox's own loopback): the clients are told
/// to use the proxy for it anyway.
#[test]
fn git_clone_and_a_chunked_upload_through_the_proxy() {
    if !common::have("curl") || !common::have("git") || !common::have("python3") {
        println!("SKIPPED: needs curl, git and python3");
        return;
    }
    // A bare repository served as static files.
    let srv = tempfile::tempdir().unwrap();
    let git = |args: &[&str], dir: &std::path::Path| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    };
    let work = srv.path().join("w");
    std::fs::create_dir(&work).unwrap();
    git(&["init", "-q"], &work);
    std::fs::write(work.join("hello.txt"), "served\n").unwrap();
    git(&["add", "hello.txt"], &work);
    git(
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "one",
        ],
        &work,
    );
    git(&["clone", "-q", "--bare", "w", "repo.git"], srv.path());
    git(&["update-server-info"], &srv.path().join("repo.git"));
    let mut http = Command::new("python3")
        .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
        .current_dir(srv.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(http.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let hport: u16 = first
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    let bport = body_server();
    let fx = Fx::new(&format!(
        "[[net]]\nhost = \"127.0.0.1\"\nport = {hport}\n\n[[net]]\nhost = \"127.0.0.1\"\nport = {bport}\n"
    ));
    let stop = |mut c: std::process::Child| {
        let _ = c.kill();
        let _ = c.wait();
    };
    if !fx.proxied() {
        stop(http);
        return;
    }
    let script = format!(
        "NO_PROXY= no_proxy= git clone -q http://127.0.0.1:{hport}/repo.git c && cat c/hello.txt
         printf 'streamed body' | curl -sS -m 5 --noproxy '' -T - http://127.0.0.1:{bport}/up; echo \" rc=$?\""
    );
    let out = fx.command(&script).output().unwrap();
    stop(http);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"served"), "{stdout}\n{stderr}");
    // The body arrives in the proxy's framing, whole.
    assert_eq!(
        stdout.split_once("served\n").map(|x| x.1),
        Some("d\r\nstreamed body\r\n0\r\n\r\n rc=0\n"),
        "{stdout}\n{stderr}"
    );
}

/// A refusal is printed when it happens, before the command goes on,
/// with the rule to add; repeated ones are capped; the 403's body names
/// the rule; `--quiet` prints none. The control: the allowed host under
/// the same policy.
#[test]
fn refusals_are_printed_as_they_happen() {
    if !common::have("curl") {
        println!("SKIPPED: no curl");
        return;
    }
    let port = common::request_line_server();
    let fx = Fx::new(&format!("[[net]]\nhost = \"127.0.0.1\"\nport = {port}\n"));
    if !fx.proxied() {
        return;
    }
    let script = format!(
        "curl -sS -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{port}/ok; echo \" rc=$?\"
         curl -s -m 5 -x \"$HTTP_PROXY\" -o body.txt -w '%{{http_code}}\\n' http://refused.invalid:{port}/a
         echo MARKER >&2
         for i in 1 2 3 4 5; do curl -s -m 5 -x \"$HTTP_PROXY\" -o /dev/null http://refused.invalid:{port}/a; done
         echo END >&2"
    );
    let line = format!(
        "sbx: proxy refused http refused.invalid:{port}: no [[net]] rule allows this host, port \
         and scheme; to allow it, add: [[net]] host = \"refused.invalid\" port = {port} scheme = \"http\"\n"
    );
    let out = fx.command(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout, "GET /ok HTTP/1.1 rc=0\n403\n", "{stderr}");
    let first = stderr.find(&line).expect(&stderr);
    let marker = stderr.find("MARKER\n").expect(&stderr);
    assert!(
        first < marker,
        "printed before the command went on\n{stderr}"
    );
    // Six refusals of one destination: two lines, and a count at exit.
    assert_eq!(stderr.matches(&line).count(), 2, "{stderr}");
    let end = stderr.find("END\n").expect(&stderr);
    assert!(
        stderr[end..].contains("sbx: 4 refusals were not printed as they happened"),
        "{stderr}"
    );
    let body = std::fs::read_to_string(fx.dir.path().join("body.txt")).unwrap();
    assert!(
        body.contains(&format!(
            "To allow it, add to the policy:\n\n[[net]]\nhost = \"refused.invalid\"\nport = {port}\nscheme = \"http\"\n"
        )),
        "{body}"
    );
    // --quiet: no line as it happens; the summary at exit stays.
    let out = fx.command_with(&["--quiet"], &script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout, "GET /ok HTTP/1.1 rc=0\n403\n", "{stderr}");
    assert!(!stderr.contains("sbx: proxy refused"), "{stderr}");
    assert!(!stderr.contains("not printed as they happened"), "{stderr}");
    assert!(
        stderr.contains("sbx: the network proxy refused 1:"),
        "{stderr}"
    );
}

/// A service this host serves on every address is reached through its
/// LAN address as well as loopback. The proxy treats this host's own
/// addresses as loopback: a name re-pointed at one (DNS rebinding; here
/// the test resolver table) does not reach it, and a rule naming the
/// address does (the control).
#[test]
fn this_hosts_own_address_needs_a_literal_rule() {
    if !common::have("curl") {
        println!("SKIPPED: no curl");
        return;
    }
    // The address this host would send from: an interface's own.
    let probe = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let own = match probe
        .connect(("203.0.113.1", 9))
        .and_then(|_| probe.local_addr())
    {
        Ok(a) if !a.ip().is_loopback() && !a.ip().is_unspecified() => a.ip(),
        _ => {
            println!("SKIPPED: no route off this host, so no address but loopback");
            return;
        }
    };
    let server = std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in server.incoming() {
            let Ok(mut c) = c else { continue };
            let mut b = [0u8; 1024];
            let _ = c.read(&mut b);
            let _ = c.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nHOST-ONLY");
        }
    });
    let fx = Fx::new(&format!(
        "[[net]]\nhost = \"rebound.test\"\nport = {port}\n\
         [[net]]\nhost = \"{own}\"\nport = {port}\n"
    ));
    std::fs::write(fx.dir.path().join("hosts"), format!("{own} rebound.test\n")).unwrap();
    if !fx.proxied() {
        return;
    }
    let get = |host: &str| {
        format!(
            "curl -sS -f -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://{host}:{port}/; echo \" rc=$?\"; "
        )
    };
    let script = get("rebound.test") + &get(&own.to_string());
    let out = fx
        .command(&script)
        .env("SBX_TEST_RESOLVER", fx.dir.path().join("hosts"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, [" rc=22", "HOST-ONLY rc=0"], "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("{own} is an address of this host's own")),
        "{stderr}"
    );
}
