//! The proxy behind a private network namespace, as `sbx run` uses it,
//! without `sbx run`: a child enters a new network namespace, brings `lo`
//! up, binds the two listeners there and hands them to this process over
//! a socket pair (SCM_RIGHTS), then runs a shell. This process serves them
//! with `runtime::proxy`. The child reaches an allowed host on this
//! host's loopback only through the proxy; a direct connection and UDP
//! reach nothing; the listeners answer nothing outside the namespace.
//!
//! The listeners take fixed ports: the namespace is new, so nothing else
//! holds them, and the child's environment can be made before it starts.

#![cfg(target_os = "linux")]

mod common;

use sbx::ir::NetRule;
use sbx::runtime::proxy::{self, Config, Echo, Log, Proxy};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

const HTTP_PORT: u16 = 3128;
const SOCKS_PORT: u16 = 1080;

/// In the forked child: only system calls, no allocation.
fn enter_and_listen(sock: RawFd) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // SAFETY: system calls on descriptors this child owns, with buffers
    // on its stack.
    unsafe {
        let flags = if libc::geteuid() == 0 {
            libc::CLONE_NEWNET
        } else {
            libc::CLONE_NEWUSER | libc::CLONE_NEWNET
        };
        if libc::unshare(flags) != 0 {
            return Err(err());
        }
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        if libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut ifr) != 0 {
            return Err(err());
        }
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(s, libc::SIOCSIFFLAGS as _, &ifr) != 0 {
            return Err(err());
        }
        libc::close(s);
        let mut fds = [0 as RawFd; 2];
        for (i, port) in [HTTP_PORT, SOCKS_PORT].into_iter().enumerate() {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            let mut a: libc::sockaddr_in = std::mem::zeroed();
            a.sin_family = libc::AF_INET as libc::sa_family_t;
            a.sin_port = port.to_be();
            a.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            if libc::bind(fd, &a as *const _ as *const libc::sockaddr, len) != 0
                || libc::listen(fd, 128) != 0
            {
                return Err(err());
            }
            fds[i] = fd;
        }
        // The two descriptors in one SCM_RIGHTS message.
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut space = [0u64; 8];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(8) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(8) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast::<RawFd>(), 2);
        if libc::sendmsg(sock, &msg, 0) != 1 {
            return Err(err());
        }
        libc::close(fds[0]);
        libc::close(fds[1]);
        libc::close(sock);
    }
    Ok(())
}

/// The two listeners from the child, HTTP first.
fn receive(sock: &UnixStream) -> Vec<TcpListener> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut space = [0u64; 8];
    // SAFETY: recvmsg into buffers owned here; the descriptors it
    // returns are new and owned by nothing else.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&space) as _;
        let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        assert_eq!(
            n,
            1,
            "no listeners from the child: {}",
            std::io::Error::last_os_error()
        );
        let c = libc::CMSG_FIRSTHDR(&msg);
        assert!(!c.is_null() && (*c).cmsg_type == libc::SCM_RIGHTS);
        let mut fds = [0 as RawFd; 2];
        std::ptr::copy_nonoverlapping(libc::CMSG_DATA(c).cast::<RawFd>(), fds.as_mut_ptr(), 2);
        fds.iter()
            .map(|fd| TcpListener::from(OwnedFd::from_raw_fd(*fd)))
            .collect()
    }
}

#[test]
fn the_proxy_is_the_only_way_out_of_the_namespace() {
    if Command::new("curl").arg("--version").output().is_err() {
        println!("SKIPPED: no curl");
        return;
    }
    let port = common::request_line_server();
    let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(1000)))
        .unwrap();
    let uport = udp.local_addr().unwrap().port();
    let (ours, theirs) = UnixStream::pair().unwrap();
    let theirs_fd = theirs.as_raw_fd();
    let script = format!(
        "read -t 10 _
         curl -sS -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{port}/via-http; echo \" rc=$?\"
         curl -sS -m 5 --noproxy '' -x \"$ALL_PROXY\" http://127.0.0.1:{port}/via-socks; echo \" rc=$?\"
         curl -sS -f -m 5 -x \"$HTTP_PROXY\" http://127.0.0.2:{port}/other; echo \" rc=$?\"
         curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/direct; echo \" rc=$?\"
         echo udp > /dev/udp/127.0.0.1/{uport}; echo \" udp rc=$?\""
    );
    let mut cmd = Command::new("bash");
    cmd.args(["-c", &script])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(proxy::env(HTTP_PORT, SOCKS_PORT, None))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: enter_and_listen makes only system calls.
    unsafe { cmd.pre_exec(move || enter_and_listen(theirs_fd)) };
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            println!("SKIPPED: cannot make a network namespace here: {e}");
            return;
        }
    };
    drop(theirs);
    let listeners = receive(&ours);
    let rule = NetRule {
        index: 0,
        file: String::new(),
        line: 0,
        column: 0,
        host: "127.0.0.1".into(),
        scheme: None,
        port: Some(port),
        path_prefix: None,
        bind: false,
        allow: true,
    };
    let p = Proxy::from_listeners(Config::new(&[rule], Log::new(Echo::Off)), listeners).unwrap();
    assert_eq!(p.ports(), (HTTP_PORT, SOCKS_PORT));
    // From outside, the proxy's ports are not the proxy.
    for port in [HTTP_PORT, SOCKS_PORT] {
        if let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let _ = write!(s, "GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n");
            let mut got = String::new();
            let _ = s.read_to_string(&mut got);
            assert!(
                !got.contains("sbx:"),
                "reached the proxy from outside: {got}"
            );
        }
    }
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}\n{stderr}");
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
        "a host no rule names\n{stdout}\n{stderr}"
    );
    assert_eq!(lines[3], " rc=7", "a direct connection\n{stdout}\n{stderr}");
    let mut b = [0u8; 16];
    assert!(
        udp.recv(&mut b).is_err(),
        "a UDP datagram left the namespace"
    );
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .send_to(b"udp\n", (Ipv4Addr::LOCALHOST, uport))
        .unwrap();
    assert_eq!(
        udp.recv(&mut b).unwrap(),
        4,
        "control: UDP from outside arrives"
    );
    let summary = p.finish();
    assert!(
        summary.starts_with("sbx: the network proxy refused 1:"),
        "{summary}"
    );
    assert!(summary.contains("127.0.0.2:"), "{summary}");
    // This host's loopback gets no suggested rule (docs/linux.md).
    assert!(!summary.contains("host = \"127.0.0.2\""), "{summary}");
}
