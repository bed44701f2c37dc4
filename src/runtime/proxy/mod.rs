//! The filtering proxy `sbx run` owns for policies with host rules: an
//! HTTP proxy (CONNECT and plain `http://` requests) and a SOCKS5 proxy,
//! deciding each connection with the IR's `[[net]]` rules
//! (docs/linux.md, "Host rules: the proxy").
//!
//! The loader creates the two listening sockets and hands them to
//! [`Proxy::start`]; the child gets [`env`]'s variables. On Linux the
//! sockets are in the child's network namespace, where only the sandbox
//! can reach them; on macOS they are on this host's loopback, and the
//! run's token ([`auth`]) keeps other local processes out
//! (docs/macos.md, "Host rules: the proxy"). The proxy serves in
//! threads until [`Proxy::stop`], which ends every thread and returns
//! what was refused.

pub mod auth;
pub mod book;
mod chunked;
mod direct;
mod dns;
mod forward;
mod http;
mod local;
mod log;
mod peek;
mod relay;
mod resolve;
mod rules;
mod socks;
mod spelling;

#[cfg(test)]
mod tests;

pub use log::{summary, Echo, Log, Refusal};
pub use resolve::Resolver;
pub use rules::{Reason, Rules, Via};

use crate::ir::NetRule;
use rules::Dest;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long [`Proxy::stop`] waits for connection threads.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// How many listeners the proxy takes, in this order: HTTP, SOCKS5.
pub const LISTENERS: usize = 2;

/// The ports `sbx run` binds them at inside the command's new network
/// namespace on Linux (free there: nothing else runs in it), so the
/// proxy variables can be set before the command starts: HTTP, SOCKS5.
/// On macOS the system picks free ports.
pub const PORTS: [u16; LISTENERS] = crate::back::landlock::proxy::PROXY_PORTS;

/// Limits on what a client can make the proxy hold.
#[derive(Debug, Clone)]
pub struct Options {
    /// To connect to one address.
    pub connect_timeout: Duration,
    /// To send a whole request head or SOCKS5 handshake.
    pub head_timeout: Duration,
    /// Bytes of an HTTP request head.
    pub max_head: usize,
    /// Connections served at once; more are closed on accept.
    pub max_connections: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            connect_timeout: Duration::from_secs(10),
            head_timeout: Duration::from_secs(10),
            max_head: 64 * 1024,
            max_connections: 256,
        }
    }
}

/// What the proxy decides with.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub rules: Rules,
    pub resolver: Resolver,
    pub log: Log,
    pub options: Options,
    /// The run's token ([`auth`]): clients must present it. `None`: any
    /// client that reaches the listeners is served.
    pub token: Option<String>,
}

/// The sockets for clients that ignore the proxy variables (Linux, in
/// the command's network namespace): the DNS responder's UDP socket at
/// [`book::DNS_ADDR`] (when the relay has ports), a TCP listener on
/// `0.0.0.0` at each of the relay's ports ([`relay_ports`]), and the
/// loopback forwards' listeners on 127.0.0.1 and ::1 ([`relay_listens`]).
/// Which one a connection came in on, its local address says.
#[derive(Debug)]
pub struct RelaySockets {
    pub dns: Option<UdpSocket>,
    pub listeners: Vec<TcpListener>,
}

/// The ports of the loopback forwards (issue #36): those of the allow
/// rules for this host's loopback.
pub fn forward_ports(rules: &[NetRule]) -> Vec<u16> {
    let mut ports: Vec<u16> = rules
        .iter()
        .filter(|r| crate::back::landlock::proxy::forwarded(r))
        .filter_map(crate::back::landlock::proxy::relay_port)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Where the relay's and the forwards' listeners are bound in the
/// namespace, in the order they are handed over: `0.0.0.0` at each
/// relay port, and `[::]` (IPv6 only) with `ipv6`; then 127.0.0.1 and
/// (with `ipv6`) ::1 at each forward port that the relay's wildcard
/// listeners do not take already.
pub fn relay_listens(relay: &[u16], forward: &[u16], ipv6: bool) -> Vec<std::net::SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
    let mut out: Vec<SocketAddr> = Vec::new();
    for p in relay {
        out.push(SocketAddr::from((Ipv4Addr::UNSPECIFIED, *p)));
        if ipv6 {
            out.push(SocketAddr::from((Ipv6Addr::UNSPECIFIED, *p)));
        }
    }
    for p in forward.iter().filter(|p| !relay.contains(p)) {
        out.push(SocketAddr::from((Ipv4Addr::LOCALHOST, *p)));
        if ipv6 {
            out.push(SocketAddr::from((Ipv6Addr::LOCALHOST, *p)));
        }
    }
    // The DNS responder over TCP, unless a rule's port 53 has the
    // relay's wildcard listener there already.
    if !relay.is_empty() && !relay.contains(&53) {
        out.push(SocketAddr::from((book::DNS_ADDR, 53)));
    }
    out
}

/// Whether this kernel has IPv6 (booted with `ipv6.disable=1` it has
/// no `/proc/sys/net/ipv6`): the relay's IPv6 range and the forwards'
/// ::1 listeners need it.
pub fn ipv6() -> bool {
    std::path::Path::new("/proc/sys/net/ipv6").exists()
}

/// The ports the relay listens on: those the allow rules for names
/// name, which lowering filled in from the scheme where the rule gave
/// none (`ssh` 22, `https` 443); not the proxy's own. A rule with neither port nor scheme would need a
/// listener on every port: clients that ignore the proxy variables do
/// not reach it (the precision report says so).
pub fn relay_ports(rules: &[NetRule]) -> Vec<u16> {
    let mut ports: Vec<u16> = rules
        .iter()
        .filter(|r| crate::back::landlock::proxy::relayed(r))
        .filter_map(crate::back::landlock::proxy::relay_port)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

impl Config {
    /// The system resolver and default limits.
    pub fn new(rules: &[NetRule], log: Log) -> Config {
        Config {
            rules: Rules::new(rules),
            log,
            ..Config::default()
        }
    }
}

/// The context each connection's thread reads.
pub(crate) struct Cx {
    rules: Rules,
    resolver: Resolver,
    log: Log,
    options: Options,
    token: Option<String>,
    /// Relay addresses handed out by the DNS responder.
    book: book::Book,
    /// The relay's ports (empty: no relay).
    relay_ports: Vec<u16>,
    /// The relay listens on IPv6 too (the namespace has its range).
    relay6: bool,
    stopping: AtomicBool,
    next: AtomicU64,
    /// Open sockets by connection, shut down on stop so that no thread
    /// waits on a peer.
    live: Mutex<Vec<(u64, TcpStream)>>,
}

/// Removes a socket from [`Cx::live`] when its connection ends.
pub(crate) struct Tracked<'a> {
    cx: &'a Cx,
    id: u64,
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        let mut l = self.cx.live.lock().unwrap_or_else(|e| e.into_inner());
        l.retain(|(i, _)| *i != self.id);
    }
}

impl Cx {
    /// Decide, resolve, check each address, connect.
    fn open(&self, via: Via, dest: &Dest, path: Option<&str>) -> Result<TcpStream, Reason> {
        let allowed = self.rules.decide(via, dest, path)?;
        let s = resolve::connect(&self.resolver, &allowed, dest, self.options.connect_timeout)?;
        self.log.reach(via, &dest.host, dest.port);
        Ok(s)
    }

    /// Log a refusal; failures to reach an allowed host are not the
    /// sandbox's refusals (the client got a 502 or a SOCKS error).
    fn refuse(&self, via: Via, host: &str, port: u16, reason: Reason) {
        if matches!(reason, Reason::Unresolved(_) | Reason::Unreachable(_)) {
            return;
        }
        self.log.push(Refusal {
            via,
            host: host.to_string(),
            port,
            reason,
        });
    }

    /// Register `s` for shutdown on stop; `None` when stopping already.
    fn track(&self, s: &TcpStream) -> Option<Tracked<'_>> {
        let copy = s.try_clone().ok()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut l = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if self.stopping.load(Ordering::SeqCst) {
            let _ = s.shutdown(Shutdown::Both);
            return None;
        }
        l.push((id, copy));
        Some(Tracked { cx: self, id })
    }

    fn shut_all(&self) {
        let l = self.live.lock().unwrap_or_else(|e| e.into_inner());
        for (_, s) in l.iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// A running proxy. Dropping it stops it too.
pub struct Proxy {
    cx: Arc<Cx>,
    /// Where to write the destinations reached at the end ([`LEARN_NET`]).
    record: Option<std::path::PathBuf>,
    ports: (u16, u16),
    wake: Option<OwnedFd>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

/// What a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Http,
    Socks,
    Relay,
    /// The DNS responder over TCP.
    Dns,
}

impl Proxy {
    /// Serve HTTP on `http` and SOCKS5 on `socks` until [`Proxy::stop`].
    pub fn start(config: Config, http: TcpListener, socks: TcpListener) -> io::Result<Proxy> {
        Proxy::start_with(config, http, socks, None)
    }

    /// [`Proxy::start`], and with `relay` the DNS responder and the relay
    /// for clients that ignore the proxy variables.
    pub fn start_with(
        config: Config,
        http: TcpListener,
        socks: TcpListener,
        relay: Option<RelaySockets>,
    ) -> io::Result<Proxy> {
        let ports = (http.local_addr()?.port(), socks.local_addr()?.port());
        let mut listeners = vec![(http, Kind::Http), (socks, Kind::Socks)];
        let mut relay_ports = Vec::new();
        let mut relay6 = false;
        let mut udp = None;
        if let Some(r) = relay {
            for l in r.listeners {
                let local = l.local_addr()?;
                if local == std::net::SocketAddr::from((book::DNS_ADDR, 53)) {
                    listeners.push((l, Kind::Dns));
                    continue;
                }
                // The forwards' listeners are on loopback, the relay's
                // on every address.
                if local.ip().is_unspecified() {
                    relay6 |= local.is_ipv6();
                    relay_ports.push(local.port());
                }
                listeners.push((l, Kind::Relay));
            }
            udp = r.dns;
        }
        for (l, _) in &listeners {
            l.set_nonblocking(true)?;
        }
        let (wait, wake) = pipe()?;
        let wait = Arc::new(wait);
        let cx = Arc::new(Cx {
            rules: config.rules,
            resolver: config.resolver,
            log: config.log,
            options: config.options,
            token: config.token,
            book: book::Book::default(),
            relay_ports,
            relay6,
            stopping: AtomicBool::new(false),
            next: AtomicU64::new(0),
            live: Mutex::new(Vec::new()),
        });
        if let Some(u) = &udp {
            u.set_nonblocking(true)?;
        }
        // One thread accepts and answers DNS over UDP: an answer is a
        // table look-up, and a thread fewer is less for every run with
        // host rules to start and join.
        let acx = Arc::clone(&cx);
        let accept = std::thread::Builder::new()
            .name("sbx-proxy".into())
            .spawn(move || accept_loop(&acx, &listeners, udp.as_ref(), &wait))?;
        Ok(Proxy {
            cx,
            record: None,
            ports,
            wake: Some(wake),
            accept: Some(accept),
        })
    }

    /// [`Proxy::start`] with the listeners as the loader hands them over:
    /// [`LISTENERS`] of them, HTTP first.
    pub fn from_listeners(config: Config, listeners: Vec<TcpListener>) -> io::Result<Proxy> {
        Proxy::from_listeners_with(config, listeners, None)
    }

    /// [`Proxy::from_listeners`] with the relay's sockets.
    pub fn from_listeners_with(
        config: Config,
        listeners: Vec<TcpListener>,
        relay: Option<RelaySockets>,
    ) -> io::Result<Proxy> {
        let mut it = listeners.into_iter();
        match (it.next(), it.next(), it.next()) {
            (Some(h), Some(s), None) => Proxy::start_with(config, h, s, relay),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the proxy takes {LISTENERS} listeners"),
            )),
        }
    }

    /// The loader's call: the artifact's rules, the system resolver,
    /// refusals printed to stderr as they happen as `echo` says (a bool:
    /// `--report`), and the run's token if the listeners are not private.
    pub fn for_run(
        spec: &crate::back::landlock::ProxySpec,
        listeners: Vec<TcpListener>,
        relay: Option<RelaySockets>,
        echo: impl Into<Echo>,
        token: Option<String>,
    ) -> io::Result<Proxy> {
        let config = Config {
            token,
            resolver: test_resolver()?,
            ..Config::new(&spec.rules, Log::new(echo.into()))
        };
        let mut p = Proxy::from_listeners_with(config, listeners, relay)?;
        p.record = std::env::var_os(LEARN_NET).map(Into::into);
        Ok(p)
    }

    /// Stop, and the summary to print at exit ("" when nothing was
    /// refused).
    pub fn finish(self) -> String {
        let log = self.cx.log.clone();
        let record = self.record.clone();
        let self_book = self.cx.book.entries();
        let mut s = summary(&self.stop());
        let held = log.held_back();
        if let Some(path) = record {
            let mut text = log.reached();
            // Both of a name's relay addresses: a client may connect over
            // either (AAAA answers end in the IPv4 address's bits).
            for (name, addr) in self_book {
                let _ = writeln!(text, "name {name} {addr}");
                let _ = writeln!(text, "name {name} {}", book::six(addr));
            }
            if let Err(e) = std::fs::write(&path, text) {
                let _ = writeln!(s, "sbx: cannot record the hosts reached: {e}");
            }
        }
        if held > 0 && !s.is_empty() {
            let _ = writeln!(
                s,
                "sbx: {held} refusals were not printed as they happened (at most {} per \
                 destination); `sbx run --report` prints each",
                log::PER_DESTINATION
            );
        }
        s
    }

    /// The listeners' ports: HTTP, SOCKS5.
    pub fn ports(&self) -> (u16, u16) {
        self.ports
    }

    /// Stop accepting, end every connection, wait for every thread, and
    /// return the refusals.
    pub fn stop(mut self) -> Vec<Refusal> {
        self.halt();
        self.cx.log.entries()
    }

    fn halt(&mut self) {
        self.cx.stopping.store(true, Ordering::SeqCst);
        // Closing the pipe's writing end wakes the accept loop.
        drop(self.wake.take());
        let mut workers = self
            .accept
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        self.cx.shut_all();
        // Every socket is shut down, so a thread ends at once unless it
        // is in a name lookup or a connect (bounded by their timeouts):
        // those are left to end on their own, finding `stopping` set, so
        // that sbx exits with the command and not seconds later.
        let until = std::time::Instant::now() + STOP_WAIT;
        while !workers.is_empty() && std::time::Instant::now() < until {
            workers.retain(|w| !w.is_finished());
            std::thread::sleep(Duration::from_millis(5));
        }
        for w in workers.into_iter().filter(|w| w.is_finished()) {
            let _ = w.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.halt();
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds has room for two descriptors; pipe writes both or fails.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe just returned these, and nothing else owns them.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&r, &w] {
        // Not inherited by the child the loader forks.
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok((r, w))
}

/// Accept on every listener until the pipe closes; returns the
/// connection threads still to join.
/// Wait until one of `fds` is ready; false once the proxy stops (its
/// wake-up pipe, `fds[0]`, is readable, or `stopping` is set) or poll
/// fails.
fn ready(cx: &Cx, fds: &mut [libc::pollfd]) -> bool {
    loop {
        // SAFETY: fds is a valid array of fds.len() pollfd for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        return fds[0].revents == 0 && !cx.stopping.load(Ordering::SeqCst);
    }
}

/// Accept on `listeners` and answer DNS on `udp` (non-blocking) until
/// the pipe closes.
fn accept_loop(
    cx: &Arc<Cx>,
    listeners: &[(TcpListener, Kind)],
    udp: Option<&UdpSocket>,
    wait: &OwnedFd,
) -> Vec<JoinHandle<()>> {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let poll_in = |fd: RawFd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut fds: Vec<libc::pollfd> = std::iter::once(poll_in(wait.as_raw_fd()))
        .chain(listeners.iter().map(|(l, _)| poll_in(l.as_raw_fd())))
        .chain(udp.map(|u| poll_in(u.as_raw_fd())))
        .collect();
    let mut dns = udp.map(|u| Responder::new(cx, u));
    while ready(cx, &mut fds) {
        if let (Some(d), Some(p)) = (&mut dns, fds.last()) {
            if p.revents != 0 {
                d.answer_all();
            }
        }
        workers.retain(|w| !w.is_finished());
        for (i, (l, kind)) in listeners.iter().enumerate() {
            if fds[i + 1].revents == 0 {
                continue;
            }
            loop {
                let s = match l.accept() {
                    Ok((s, _)) => s,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        // Out of descriptors, or the peer reset before
                        // accept: the listener stays readable, so pause
                        // rather than spin.
                        std::thread::sleep(Duration::from_millis(10));
                        break;
                    }
                };
                if workers.len() >= cx.options.max_connections {
                    let via = match kind {
                        Kind::Http => Via::Http,
                        Kind::Socks => Via::Socks,
                        Kind::Relay => Via::Relay,
                        Kind::Dns => Via::Dns,
                    };
                    let why = format!(
                        "more than {} connections at once",
                        cx.options.max_connections
                    );
                    cx.refuse(via, "", 0, Reason::Unsupported(why));
                    continue; // dropped: closed
                }
                if s.set_nonblocking(false).is_err() {
                    continue;
                }
                let (wcx, kind) = (Arc::clone(cx), *kind);
                let spawned = std::thread::Builder::new()
                    .name("sbx-proxy-conn".into())
                    .stack_size(256 * 1024)
                    .spawn(move || serve(&wcx, s, kind));
                if let Ok(h) = spawned {
                    workers.push(h);
                }
            }
        }
    }
    workers
}

fn serve(cx: &Cx, s: TcpStream, kind: Kind) {
    let Some(_t) = cx.track(&s) else { return };
    match kind {
        Kind::Http => http::serve(s, cx),
        Kind::Socks => socks::serve(s, cx),
        Kind::Relay => direct::serve(s, cx),
        Kind::Dns => dns::serve_tcp(s, cx),
    }
}

/// The DNS responder over UDP: each answer is a table look-up, with no
/// lookup of its own.
struct Responder<'a> {
    cx: &'a Cx,
    udp: &'a UdpSocket,
    names: dns::Names<'a>,
    /// A refused name is logged once, not once per retry and record type.
    logged: std::collections::HashSet<String>,
}

impl<'a> Responder<'a> {
    fn new(cx: &'a Cx, udp: &'a UdpSocket) -> Responder<'a> {
        Responder {
            cx,
            udp,
            names: dns::Names {
                rules: &cx.rules,
                ports: &cx.relay_ports,
                ipv6: cx.relay6,
                book: &cx.book,
            },
            logged: std::collections::HashSet::new(),
        }
    }

    /// Answer every question waiting.
    fn answer_all(&mut self) {
        let mut buf = [0u8; 1500];
        while let Ok((len, from)) = self.udp.recv_from(&mut buf) {
            let (reply, refused) = self.names.answer(&buf[..len]);
            if let Some(r) = reply {
                let _ = self.udp.send_to(&r, from);
            }
            if let Some((name, reason)) = refused {
                if self.logged.len() < 10_000 && self.logged.insert(name.clone()) {
                    self.cx.refuse(Via::Dns, &name, 0, reason);
                }
            }
        }
    }
}

/// The resolver `sbx run` uses: the system's. A build with the
/// `test-resolver` feature (tests only: release builds leave it out, see
/// Cargo.toml) reads the table in the file `SBX_TEST_RESOLVER` names,
/// so that tests reach test names on this host's loopback; its
/// addresses count as named explicitly ([`Resolver::Table`]).
fn test_resolver() -> io::Result<Resolver> {
    #[cfg(feature = "test-resolver")]
    if let Some(path) = std::env::var_os("SBX_TEST_RESOLVER") {
        let text = std::fs::read_to_string(path)?;
        return Resolver::parse_table(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("SBX_TEST_RESOLVER: {e}"),
            )
        });
    }
    Ok(Resolver::System)
}

/// The variable `sbx learn` sets for the `sbx run` it traces: a file
/// where the proxy writes, when the run ends, each destination it
/// connected to (`via host port` lines) and each name the DNS responder
/// gave an address (`name NAME ADDRESS`), so that host names are learned
/// for clients that use the proxy and for those that look names up.
pub const LEARN_NET: &str = "SBX_LEARN_NET";

/// Loopback names the child reaches directly: on Linux its own
/// loopback, inside its namespace; on macOS this host's, at the ports
/// the profile allows.
pub const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// The child's proxy variables, upper and lower case: HTTP(S)_PROXY at
/// the HTTP port, ALL_PROXY at the SOCKS5 port with remote name
/// resolution (`socks5h`: the child has no DNS of its own). With a
/// token, each URL carries it as `sbx:TOKEN@`.
pub fn env(http_port: u16, socks_port: u16, token: Option<&str>) -> Vec<(OsString, OsString)> {
    let cred = token.map_or(String::new(), |t| format!("{}:{t}@", auth::USER));
    let http = format!("http://{cred}127.0.0.1:{http_port}");
    let socks = format!("socks5h://{cred}127.0.0.1:{socks_port}");
    let mut out = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", http.as_str()),
        ("HTTPS_PROXY", http.as_str()),
        ("ALL_PROXY", socks.as_str()),
        ("NO_PROXY", NO_PROXY),
    ] {
        out.push((OsString::from(name), OsString::from(value)));
        out.push((
            OsString::from(name.to_ascii_lowercase()),
            OsString::from(value),
        ));
    }
    // Node's fetch reads the variables above only when asked to (recent
    // releases; older ones ignore this and reach names through the relay).
    out.push((OsString::from("NODE_USE_ENV_PROXY"), OsString::from("1")));
    out
}

/// Put [`env`]'s variables into a filtered environment, replacing any
/// the policy forwarded from the parent (a parent's proxy would route
/// around the rules).
pub fn merge_env(
    vars: &mut Vec<(OsString, OsString)>,
    http_port: u16,
    socks_port: u16,
    token: Option<&str>,
) {
    let ours = env(http_port, socks_port, token);
    vars.retain(|(k, _)| !ours.iter().any(|(n, _)| n == k));
    vars.extend(ours);
}
