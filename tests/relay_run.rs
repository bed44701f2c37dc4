//! Host rules for clients that ignore the proxy variables (#37), end to
//! end under `sbx run`: the namespace's DNS responder gives an allowed
//! name a relay address, and a connection to it reaches the host the
//! rule names, decided as the proxy decides. Refused names get NXDOMAIN
//! and a logged refusal with a rule. Nothing of the relay is reachable
//! or left on the host's network.
//!
//! Servers are on this machine's loopback only: `sbx` built for tests
//! has the `test-resolver` feature (Cargo.toml), and SBX_TEST_RESOLVER
//! names a table mapping the test names to 127.0.0.1. On a host without
//! namespaces each test skips, saying why (under CI=true it fails).

#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::process::{Command, Stdio};

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

/// A TCP echo on this host's loopback: answers `echo:` and what it read.
fn echo_server() -> u16 {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 256];
                let n = s.read(&mut buf).unwrap_or(0);
                // One write: a client reading once must get it all.
                let _ = s.write_all(&[b"echo:", &buf[..n]].concat());
            });
        }
    });
    port
}

struct Fx {
    dir: tempfile::TempDir,
}

impl Fx {
    fn new(rules: &str, table: &str) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("policy.toml"), format!("version = 1\n{rules}")).unwrap();
        std::fs::write(p.join("hosts"), table).unwrap();
        Fx { dir }
    }

    fn command(&self, script: &str) -> Command {
        let mut c = Command::new(SBX);
        c.current_dir(self.dir.path())
            .env("SBX_TEST_RESOLVER", self.dir.path().join("hosts"))
            .args(["run", "--workspace", ".", "policy.toml", "--"])
            // No proxy variables: the clients here must not need them.
            .args(common::WITHOUT_PROXY_VARS)
            .args(["bash", "-c", script])
            .stdin(Stdio::null());
        c
    }

    /// What `sbx run --report` of the policy says on stderr.
    fn report(&self) -> String {
        let out = Command::new(SBX)
            .current_dir(self.dir.path())
            .args([
                "run",
                "--report",
                "--workspace",
                ".",
                "policy.toml",
                "--",
                "true",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Whether the run gets the private network namespace.
    fn namespaced(&self) -> bool {
        common::namespaced(&self.report())
    }
}

/// A Python client: connect by name, send, print what came back or the
/// error's kind.
const CLIENT: &str = r#"
import socket, sys
name, port = sys.argv[1], int(sys.argv[2])
try:
    s = socket.create_connection((name, port), timeout=5)
    s.sendall(b"hi")
    print(s.recv(100).decode() or "closed")
except socket.gaierror as e:
    print("gaierror", e.args[0] == socket.EAI_NONAME)
except OSError as e:
    print("oserror")
"#;

/// A Python client over IPv6 by name: looks up the AAAA record only,
/// connects, sends, prints the reply and whether the address is in the
/// relay's IPv6 range.
const CLIENT6: &str = r#"
import socket, sys
name, port = sys.argv[1], int(sys.argv[2])
try:
    ai = socket.getaddrinfo(name, port, socket.AF_INET6, socket.SOCK_STREAM)
    s = socket.create_connection(ai[0][4][:2], timeout=5)
    s.sendall(b"v6")
    print(s.recv(100).decode(), ai[0][4][0].startswith("fd73:6278::"))
except OSError as e:
    print("oserror", e)
"#;

/// A raw DNS question to the responder: prints the response code and
/// the number of answers.
const ASK: &str = r#"
import socket, struct, sys
name, qtype = sys.argv[1], int(sys.argv[2])
q = struct.pack(">HHHHHH", 77, 0x0100, 1, 0, 0, 0)
for label in name.split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\0" + struct.pack(">HH", qtype, 1)
if sys.argv[3:] == ["tcp"]:
    s = socket.create_connection(("198.18.0.1", 53), timeout=5)
    s.sendall(struct.pack(">H", len(q)) + q)
    r = b""
    while len(r) < 2 or len(r) < 2 + struct.unpack(">H", r[:2])[0]:
        more = s.recv(512)
        if not more:
            break
        r += more
    r = r[2:]
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(q, ("198.18.0.1", 53))
    r = s.recv(512)
print("rcode", r[3] & 15, "answers", struct.unpack(">H", r[6:8])[0])
"#;

#[test]
fn clients_without_proxy_variables_reach_allowed_names_only() {
    if !common::have("python3") {
        println!("SKIPPED: no python3");
        return;
    }
    let port = echo_server();
    let fx = Fx::new(
        &format!(
            "[[net]]\nhost = \"*.test\"\nport = {port}\n\
             [[net]]\nhost = \"secret.test\"\nallow = false\n\
             [[net]]\nhost = \"meta.test\"\nport = {port}\n"
        ),
        "127.0.0.1 echo.test secret.test\n169.254.169.254 meta.test\n",
    );
    if !fx.namespaced() {
        return;
    }
    std::fs::write(fx.dir.path().join("client.py"), CLIENT).unwrap();
    std::fs::write(fx.dir.path().join("ask.py"), ASK).unwrap();
    std::fs::write(fx.dir.path().join("client6.py"), CLIENT6).unwrap();
    let script = format!(
        "test -z \"$HTTP_PROXY$ALL_PROXY\" || echo proxy variables set
         python3 client.py echo.test {port}
         exec 3<>/dev/tcp/echo.test/{port} && echo bash >&3 && head -c 9 <&3; echo
         python3 client.py nope.example {port}
         python3 client.py secret.test {port}
         python3 client.py meta.test {port}
         python3 ask.py echo.test 28
         python3 ask.py nope.example 28
         python3 client.py echo.test {other}
         python3 client.py 198.18.200.200 {port}
         python3 client6.py echo.test {port}
         python3 client6.py nope.example {port}
         python3 ask.py echo.test 1 tcp
         python3 ask.py nope.example 1 tcp",
        other = port.wrapping_add(1).max(1)
    );
    let out = fx.command(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    let ctx = format!("{stdout}\n{stderr}");
    assert_eq!(lines.len(), 13, "{ctx}");
    assert_eq!(lines[0], "echo:hi", "Python by name: {ctx}");
    assert_eq!(lines[1], "echo:bash", "bash /dev/tcp by name: {ctx}");
    assert_eq!(lines[2], "gaierror True", "no rule: NXDOMAIN: {ctx}");
    assert_eq!(lines[3], "gaierror True", "a deny rule: NXDOMAIN: {ctx}");
    // The name is allowed; its address is a metadata service's: the
    // relay refuses the connection (closed unanswered).
    assert!(
        lines[4] == "closed" || lines[4] == "oserror",
        "metadata: {ctx}"
    );
    // IPv6: an allowed name has an AAAA record in the relay's IPv6
    // range (where this kernel has IPv6), a refused one is NXDOMAIN.
    let ipv6 = std::path::Path::new("/proc/sys/net/ipv6").exists();
    let aaaa = if ipv6 {
        "rcode 0 answers 1"
    } else {
        "rcode 0 answers 0"
    };
    assert_eq!(lines[5], aaaa, "{ctx}");
    assert_eq!(lines[6], "rcode 3 answers 0", "{ctx}");
    // A port no rule names: nothing listens at the relay address.
    assert_eq!(lines[7], "oserror", "{ctx}");
    // An address no answer gave: the relay closes it unserved.
    assert!(
        lines[8] == "closed" || lines[8] == "oserror",
        "a dialled address: {ctx}"
    );
    // Those that went around the proxy are named, with what to do;
    // not a name a deny rule refused.
    assert!(
        stderr.contains(
            "sbx: a program looked up nope.example itself instead of asking the proxy: \
             make it use the proxy variables"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "sbx: a program connected to 198.18.200.200:{port} directly, which reaches nothing"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("looked up secret.test"), "{stderr}");
    // A Python client over IPv6 by name reaches the host through the
    // relay's IPv6 address; a refused name has no address.
    if ipv6 {
        assert_eq!(lines[9], "echo:v6 True", "IPv6 by name: {ctx}");
    }
    assert!(lines[10].starts_with("oserror"), "{ctx}");
    // The responder over TCP: the same answers.
    assert_eq!(lines[11], "rcode 0 answers 1", "DNS over TCP: {ctx}");
    assert_eq!(lines[12], "rcode 3 answers 0", "{ctx}");
    // The refusals, with the rule that would allow the unknown name and
    // none against the deny rule or for metadata.
    assert!(
        stderr.contains("dns      nope.example: no [[net]] rule"),
        "{stderr}"
    );
    assert!(
        stderr.contains("dns      secret.test: denied by net[1]"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "relay    meta.test:{port}: 169.254.169.254 is link-local"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("host = \"nope.example\""), "{stderr}");
    assert!(!stderr.contains("host = \"secret.test\""), "{stderr}");
    assert!(!stderr.contains("host = \"meta.test\""), "{stderr}");
}

/// Lines of /proc/net/{tcp,udp} (this test's network namespace: the
/// host's) whose local address is in the relay range, on any address at
/// `port` (the responder is at 198.18.0.1:53, in the range).
fn relay_sockets_on_host(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for f in [
        "/proc/net/tcp",
        "/proc/net/udp",
        "/proc/net/tcp6",
        "/proc/net/udp6",
    ] {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for line in text.lines().skip(1) {
            let local = line.split_whitespace().nth(1).unwrap_or("");
            let Some((addr, p)) = local.split_once(':') else {
                continue;
            };
            let p = u16::from_str_radix(p, 16).unwrap_or(0);
            // IPv4 in /proc/net is the address's bytes as a host-order
            // (little-endian here) word: 198.18.x.y reads "..12C6".
            let relay_range = addr.len() == 8 && (addr.ends_with("12C6") || addr.ends_with("13C6"));
            // fd73:6278::/64, the IPv6 range: its first word reads
            // "786273FD" the same way.
            let relay6 = addr.len() == 32 && addr.starts_with("786273FD");
            let wildcard = addr.chars().all(|c| c == '0') && p == port;
            if relay_range || relay6 || wildcard {
                found.push(format!("{f}: {line}"));
            }
        }
    }
    found
}

#[test]
fn nothing_of_the_relay_on_the_host_network_during_or_after() {
    let port = echo_server();
    let fx = Fx::new(
        &format!("[[net]]\nhost = \"echo.test\"\nport = {port}\n"),
        "127.0.0.1 echo.test\n",
    );
    if !fx.namespaced() {
        return;
    }
    let before = std::fs::read("/etc/resolv.conf").ok();
    let mut child = fx
        .command(&format!(
            "exec 3<>/dev/tcp/echo.test/{port} && echo up >&3 && head -c 7 <&3; echo; read -t 10 _ <&0"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first.trim(), "echo:up", "the relay works in this run");
    // While the command runs: the relay's listeners and the responder
    // are in its namespace, not on this host's network.
    assert_eq!(relay_sockets_on_host(port), Vec::<String>::new());
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(relay_sockets_on_host(port), Vec::<String>::new());
    // The generated resolv.conf was mounted in the namespace only.
    assert_eq!(std::fs::read("/etc/resolv.conf").ok(), before);
}

/// `scheme = "ssh"` without a port: the relay serves port 22, and ssh
/// reaches the named host by name with no proxy set up (the server here
/// only trades banners: the client's shows it arrived through the
/// relay). Needs port 22 on this host's loopback (root, and free).
#[test]
fn ssh_by_name_with_a_scheme_rule() {
    if !have_ssh() {
        println!("SKIPPED: no ssh client");
        return;
    }
    let Ok(l) = TcpListener::bind((Ipv4Addr::LOCALHOST, 22)) else {
        println!("SKIPPED: port 22 on 127.0.0.1 is taken or needs root");
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if let Some(Ok(mut s)) = l.incoming().next() {
            let _ = s.write_all(b"SSH-2.0-sbxtest\r\n");
            let mut line = String::new();
            let _ = BufReader::new(&s).read_line(&mut line);
            let _ = tx.send(line);
        }
    });
    let fx = Fx::new(
        "[[net]]\nhost = \"git.test\"\nscheme = \"ssh\"\n",
        "127.0.0.1 git.test\n",
    );
    if !fx.namespaced() {
        return;
    }
    let out = fx
        .command(
            "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
             -o ConnectTimeout=5 -T git@git.test true",
        )
        .output()
        .unwrap();
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap_or_default();
    assert!(
        got.starts_with("SSH-2.0-"),
        "ssh's banner did not arrive ({got:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn have_ssh() -> bool {
    Command::new("ssh")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A Python client that connects to an address (IPv6 when it has a
/// colon), sends, and prints what came back or the errno's name.
const RAW_CLIENT: &str = r#"
import errno, socket, sys
addr, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
s.settimeout(5)
try:
    s.connect((addr, port))
    s.sendall(b"hi")
    print(s.recv(100).decode() or "closed")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
"#;

/// Listening TCP sockets at `port` on this host's network (the test's
/// namespace), as /proc/net shows them: (file, local address).
fn host_listeners(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (cols.get(1), cols.get(3)) else {
                continue;
            };
            let p = local.rsplit(':').next().unwrap_or("");
            // 0A: TCP_LISTEN.
            if *state == "0A" && u16::from_str_radix(p, 16) == Ok(port) {
                found.push(format!("{f} {local}"));
            }
        }
    }
    found
}

/// Loopback forwards (#36): a rule naming this host's loopback with a
/// port lets a plain client (no proxy) reach the host's server at
/// 127.0.0.1 and at ::1 inside; `localhost` reaches a server listening
/// on the host's ::1 only; a port no rule names is refused (EACCES:
/// Landlock's connect rules); nothing of sbx listens on the host.
#[test]
fn loopback_forwards_reach_the_named_ports_only() {
    if !common::have("python3") {
        println!("SKIPPED: no python3");
        return;
    }
    let port = echo_server();
    // A second server, on the host's ::1 only, for the `localhost` rule.
    let Ok(l6) = TcpListener::bind("[::1]:0") else {
        println!("SKIPPED: no IPv6 loopback on this host");
        return;
    };
    let port6 = l6.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l6.incoming().flatten() {
            let _ = s.write_all(b"six");
        }
    });
    let other = port.wrapping_add(1).max(1);
    let fx = Fx::new(
        &format!(
            "[[net]]\nhost = \"127.0.0.1\"\nport = {port}\n\
             [[net]]\nhost = \"localhost\"\nport = {port6}\n\
             [[net]]\nhost = \"echo.test\"\nport = {other}\n"
        ),
        "127.0.0.1 echo.test\n",
    );
    if !fx.namespaced() {
        return;
    }
    std::fs::write(fx.dir.path().join("raw.py"), RAW_CLIENT).unwrap();
    let mut child = fx
        .command(&format!(
            "python3 raw.py 127.0.0.1 {port}
             python3 raw.py ::1 {port}
             python3 raw.py 127.0.0.1 {port6}
             python3 raw.py ::1 {port6}
             python3 raw.py 127.0.0.1 {unnamed}
             python3 raw.py ::1 {unnamed}
             read -t 10 _ <&0",
            unnamed = port.wrapping_add(2).max(1)
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..6 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        lines.push(l.trim().to_string());
    }
    // While the command runs: on this host only the test's own servers
    // listen at those ports.
    assert_eq!(host_listeners(port).len(), 1, "{:?}", host_listeners(port));
    assert_eq!(
        host_listeners(port6).len(),
        1,
        "{:?}",
        host_listeners(port6)
    );
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    let done = child.wait_with_output().unwrap();
    let ctx = format!("{lines:?}\n{}", String::from_utf8_lossy(&done.stderr));
    assert_eq!(lines[0], "echo:hi", "127.0.0.1: {ctx}");
    assert_eq!(
        lines[1], "echo:hi",
        "::1 leads to the rule's 127.0.0.1: {ctx}"
    );
    assert_eq!(
        lines[2], "six",
        "localhost: 127.0.0.1 first, then ::1: {ctx}"
    );
    assert_eq!(lines[3], "six", "{ctx}");
    // A port no rule names: Landlock refuses the connect before
    // anything could answer (no forward, nothing listening there).
    assert_eq!(lines[4], "EACCES", "a port no rule names: {ctx}");
    assert_eq!(lines[5], "EACCES", "{ctx}");
    assert!(done.status.success(), "{ctx}");
}

/// The report says that a loopback rule without a port is not
/// forwarded; one with a port is exact, so it is not among the
/// approximations.
#[test]
fn the_report_names_the_forward() {
    let fx = Fx::new(
        "[[net]]\nhost = \"127.0.0.1\"\nport = 5432\n[[net]]\nhost = \"::1\"\n",
        "",
    );
    let report = fx.report();
    assert!(
        report
            .contains("narrower net[1] (linux): host \"::1\" is this host's loopback with no port"),
        "{report}"
    );
    assert!(!report.contains(" net[0] "), "{report}");
}

/// A server on this host's loopback that records the first bytes of
/// each connection (up to 8), then closes it.
fn first_bytes_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            let mut b = [0u8; 8];
            let mut got = 0;
            while got < b.len() {
                match s.read(&mut b[got..]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got += n,
                }
            }
            keep.lock().unwrap().push(b[..got].to_vec());
        }
    });
    (port, seen)
}

/// Opens a connection by name and starts TLS (with the server name
/// given, or none) or sends the text given.
const OPENER: &str = r#"
import socket, ssl, sys
mode, name, port, arg = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = socket.create_connection((name, port), timeout=5)
try:
    if mode == "tls":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.wrap_socket(s, server_hostname=None if arg == "-" else arg)
    else:
        s.sendall(arg.encode().decode("unicode_escape").encode("latin-1"))
        s.recv(10)
except Exception:
    pass
print("done")
"#;

/// On an `https` rule's port the relay passes a ClientHello that names
/// the rule's host and refuses one naming another host or none; on an
/// `ssh` rule's port an SSH-2.0 identification line and not another
/// protocol, nor the prefix followed by bytes no such line holds. Each
/// refusal is logged; the allowed openings reach the server unchanged.
#[test]
fn tls_server_name_and_ssh_identification_are_checked() {
    if !common::have("python3") {
        println!("SKIPPED: no python3");
        return;
    }
    let (tls_port, tls_seen) = first_bytes_server();
    let (ssh_port, ssh_seen) = first_bytes_server();
    let fx = Fx::new(
        &format!(
            "[[net]]\nhost = \"tls.test\"\nscheme = \"https\"\nport = {tls_port}\n\
             [[net]]\nhost = \"git.test\"\nscheme = \"ssh\"\nport = {ssh_port}\n"
        ),
        "127.0.0.1 tls.test git.test\n",
    );
    if !fx.namespaced() {
        return;
    }
    std::fs::write(fx.dir.path().join("open.py"), OPENER).unwrap();
    let out = fx
        .command(&format!(
            "python3 open.py tls tls.test {tls_port} tls.test
             python3 open.py tls tls.test {tls_port} other.test
             python3 open.py tls tls.test {tls_port} -
             python3 open.py raw tls.test {tls_port} 'GET / HTTP/1.0'
             python3 open.py raw git.test {ssh_port} 'SSH-2.0-test\\r\\n'
             python3 open.py raw git.test {ssh_port} 'GET / HTTP/1.0\\r\\n'
             python3 open.py raw git.test {ssh_port} 'SSH-2.0-\\x00\\x01\\r\\n'"
        ))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ctx = format!("{stdout}\n{stderr}");
    assert_eq!(stdout.matches("done").count(), 7, "{ctx}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let tls = tls_seen.lock().unwrap().clone();
    let ssh = ssh_seen.lock().unwrap().clone();
    // Positive controls: the right server name and an SSH client got
    // through, their first bytes as sent.
    assert_eq!(tls.len(), 1, "{tls:?}\n{ctx}");
    assert_eq!(tls[0][0], 0x16, "a TLS handshake record: {tls:?}");
    assert_eq!(ssh, vec![b"SSH-2.0-".to_vec()], "{ctx}");
    assert!(
        stderr.contains("TLS server name \"other.test\" is not tls.test"),
        "{stderr}"
    );
    assert!(
        stderr.contains("a TLS ClientHello without a server name for tls.test"),
        "{stderr}"
    );
    assert!(
        stderr.contains("not a TLS ClientHello on an https rule's port"),
        "{stderr}"
    );
    // Both refusals, as they happened (the summary lists them once).
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("sbx: proxy refused relay git.test")
                && l.ends_with("not an SSH-2.0 client on an ssh rule's port"))
            .count(),
        2,
        "{stderr}"
    );
}

/// A host whose `/etc/resolv.conf` is a link into a directory the new
/// root does not have (systemd-resolved's `/run/systemd/resolve`): the
/// setup process creates the target in the new root and mounts the
/// generated file there, readable and read-only; the host's file is
/// unchanged. Staged in a private mount namespace (root only): a copy
/// of `/etc` whose `resolv.conf` links into a fresh `/run` directory.
#[test]
fn resolv_conf_behind_a_link_outside_the_new_root() {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 || !common::have("unshare") {
        println!("SKIPPED: needs root and unshare");
        return;
    }
    let fx = Fx::new(
        "[[net]]\nhost = \"echo.test\"\nscheme = \"https\"\n",
        "127.0.0.1 echo.test\n",
    );
    if !fx.namespaced() {
        return;
    }
    let d = fx.dir.path();
    let run = format!("/run/sbx-test-{}", std::process::id());
    let stage = format!(
        "set -e
         cp -a /etc {d}/etc 2>/dev/null || true
         rm -f {d}/etc/resolv.conf
         ln -s {run}/stub-resolv.conf {d}/etc/resolv.conf
         mkdir -p {run} && echo 'nameserver 192.0.2.1' > {run}/stub-resolv.conf
         mount --bind {d}/etc /etc
         cd {d}
         SBX_TEST_RESOLVER={d}/hosts {sbx} run --workspace . policy.toml -- \
           sh -c 'cat /etc/resolv.conf; echo x 2>/dev/null > /etc/resolv.conf || echo read-only'
         cat {run}/stub-resolv.conf
         rm -rf {run}",
        d = d.display(),
        sbx = SBX
    );
    let out = Command::new("unshare")
        .args(["-m", "bash", "-c", &stage])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ctx = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"nameserver 198.18.0.1"), "{ctx}");
    assert!(lines.contains(&"read-only"), "{ctx}");
    // The host's file, read after the run: as it was.
    assert_eq!(lines.last(), Some(&"nameserver 192.0.2.1"), "{ctx}");
    assert!(!ctx.contains("no generated resolv.conf"), "{ctx}");
}
