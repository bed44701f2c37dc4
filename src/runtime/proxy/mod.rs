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
mod chunked;
mod http;
mod log;
mod relay;
mod resolve;
mod rules;
mod socks;
mod spelling;

#[cfg(test)]
mod tests;

pub use log::{summary, Log, Refusal};
pub use resolve::Resolver;
pub use rules::{Reason, Rules, Via};

use crate::ir::NetRule;
use rules::Dest;
use std::ffi::OsString;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
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
pub const PORTS: [u16; LISTENERS] = [3128, 1080];

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
        resolve::connect(&self.resolver, &allowed, dest, self.options.connect_timeout)
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
    ports: (u16, u16),
    wake: Option<OwnedFd>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    /// Serve HTTP on `http` and SOCKS5 on `socks` until [`Proxy::stop`].
    pub fn start(config: Config, http: TcpListener, socks: TcpListener) -> io::Result<Proxy> {
        let ports = (http.local_addr()?.port(), socks.local_addr()?.port());
        http.set_nonblocking(true)?;
        socks.set_nonblocking(true)?;
        let (wait, wake) = pipe()?;
        let cx = Arc::new(Cx {
            rules: config.rules,
            resolver: config.resolver,
            log: config.log,
            options: config.options,
            token: config.token,
            stopping: AtomicBool::new(false),
            next: AtomicU64::new(0),
            live: Mutex::new(Vec::new()),
        });
        let acx = Arc::clone(&cx);
        let accept = std::thread::Builder::new()
            .name("sbx-proxy".into())
            .spawn(move || accept_loop(&acx, &http, &socks, &wait))?;
        Ok(Proxy {
            cx,
            ports,
            wake: Some(wake),
            accept: Some(accept),
        })
    }

    /// [`Proxy::start`] with the listeners as the loader hands them over:
    /// [`LISTENERS`] of them, HTTP first.
    pub fn from_listeners(config: Config, listeners: Vec<TcpListener>) -> io::Result<Proxy> {
        let mut it = listeners.into_iter();
        match (it.next(), it.next(), it.next()) {
            (Some(h), Some(s), None) => Proxy::start(config, h, s),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the proxy takes {LISTENERS} listeners"),
            )),
        }
    }

    /// The loader's call: the artifact's rules, the system resolver,
    /// refusals echoed to stderr as they happen when `report` is set,
    /// and the run's token if the listeners are not private.
    pub fn for_run(
        spec: &crate::back::landlock::ProxySpec,
        listeners: Vec<TcpListener>,
        report: bool,
        token: Option<String>,
    ) -> io::Result<Proxy> {
        let config = Config {
            token,
            ..Config::new(&spec.rules, Log::new(report))
        };
        Proxy::from_listeners(config, listeners)
    }

    /// Stop, and the summary to print at exit ("" when nothing was
    /// refused).
    pub fn finish(self) -> String {
        summary(&self.stop())
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

/// Accept on both listeners until the pipe closes; returns the
/// connection threads still to join.
fn accept_loop(
    cx: &Arc<Cx>,
    http: &TcpListener,
    socks: &TcpListener,
    wait: &OwnedFd,
) -> Vec<JoinHandle<()>> {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let mut fds = [
        libc::pollfd {
            fd: wait.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: http.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: socks.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: fds is a valid array of 3 pollfd for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if fds[0].revents != 0 || cx.stopping.load(Ordering::SeqCst) {
            break;
        }
        workers.retain(|w| !w.is_finished());
        for (i, l) in [(1, http), (2, socks)] {
            if fds[i].revents == 0 {
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
                let via = if i == 1 { Via::Http } else { Via::Socks };
                if workers.len() >= cx.options.max_connections {
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
                let wcx = Arc::clone(cx);
                let spawned = std::thread::Builder::new()
                    .name("sbx-proxy-conn".into())
                    .stack_size(256 * 1024)
                    .spawn(move || serve(&wcx, s, i == 1));
                if let Ok(h) = spawned {
                    workers.push(h);
                }
            }
        }
    }
    workers
}

fn serve(cx: &Cx, s: TcpStream, is_http: bool) {
    let Some(_t) = cx.track(&s) else { return };
    if is_http {
        http::serve(s, cx);
    } else {
        socks::serve(s, cx);
    }
}

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
