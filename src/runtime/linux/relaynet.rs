//! The namespace's side of the relay for clients that ignore the proxy
//! variables (issue #37, docs/linux.md "Host rules for every TCP
//! client"): a local route for the relay range on `lo`, the DNS
//! responder's UDP socket, and a `resolv.conf` naming it. The setup
//! process does these (it holds the namespace's capabilities: port 53
//! and the route need them, and the command has none to spare); sbx
//! serves the sockets ([`crate::runtime::proxy::RelaySockets`]).
//!
//! The child-side functions follow `nschild.rs`'s rules: system calls on
//! data prepared by the parent, nothing allocated.

use super::nschild::{
    clone_tree, set_attr, tmpfs, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID,
    MOUNT_ATTR_RDONLY, MOVE_MOUNT_F_EMPTY_PATH,
};
use crate::runtime::proxy::book::{DNS_ADDR, RANGE, RANGE6};
use std::ffi::CString;
use std::os::fd::RawFd;

/// The generated `resolv.conf`: the responder only, no search domains
/// (a search list would send every short name to the responder several
/// times, each a logged refusal).
pub const RESOLV_CONF: &str = "nameserver 198.18.0.1\noptions attempts:2 timeout:2\n";

/// What the setup process needs for the relay (its listeners are in
/// `NsPrep::binds`).
pub struct RelayPrep {
    /// Add the IPv6 range too (the kernel has IPv6).
    pub ipv6: bool,
    /// The length of the new root's attach point at the start of
    /// `resolv_at` (0: no new root). Only what lies beyond it may be
    /// created.
    pub root_len: usize,
    /// Where the generated `resolv.conf` goes, as the setup process sees
    /// the command's root (the new root is attached at `attach`).
    pub resolv_at: CString,
}

impl RelayPrep {
    /// `attach`: where the new root is attached in the setup process, if
    /// there is one. The file is mounted over the host's
    /// `/etc/resolv.conf`, or over where it links to (often a file in
    /// `/run`): a mount does not follow the link in the new root.
    pub fn new(attach: Option<&str>, ipv6: bool) -> Result<RelayPrep, String> {
        let target = crate::canonical::canonicalize("/etc/resolv.conf")
            .ok()
            .and_then(|p| p.to_str().map(String::from))
            .unwrap_or_else(|| "/etc/resolv.conf".into());
        let root_len = attach.map_or(0, str::len);
        let at = match attach {
            Some(a) => format!("{a}{target}"),
            None => target,
        };
        Ok(RelayPrep {
            ipv6,
            root_len,
            resolv_at: CString::new(at).map_err(|e| e.to_string())?,
        })
    }
}

/// `struct rtmsg` (linux/rtnetlink.h).
#[repr(C)]
struct RtMsg {
    family: u8,
    dst_len: u8,
    src_len: u8,
    tos: u8,
    table: u8,
    protocol: u8,
    scope: u8,
    kind: u8,
    flags: u32,
}

/// A route attribute with a 4-byte value.
#[repr(C)]
struct Attr4 {
    len: u16,
    kind: u16,
    value: [u8; 4],
}

#[repr(C)]
struct RouteReq {
    head: libc::nlmsghdr,
    rt: RtMsg,
    dst: Attr4,
    oif: Attr4,
}

/// A route attribute with a 16-byte value (an IPv6 address).
#[repr(C)]
struct Attr16 {
    len: u16,
    kind: u16,
    value: [u8; 16],
}

#[repr(C)]
struct Route6Req {
    head: libc::nlmsghdr,
    rt: RtMsg,
    dst: Attr16,
    oif: Attr4,
}

const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RT_TABLE_LOCAL: u8 = 255;
const RTPROT_BOOT: u8 = 3;
const RT_SCOPE_HOST: u8 = 254;
const RTN_LOCAL: u8 = 2;
/// `lo` is the first interface of every network namespace.
const LO_INDEX: u32 = 1;

fn head<T>() -> libc::nlmsghdr {
    libc::nlmsghdr {
        nlmsg_len: std::mem::size_of::<T>() as u32,
        nlmsg_type: libc::RTM_NEWROUTE,
        nlmsg_flags: (libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_EXCL)
            as u16,
        nlmsg_seq: 1,
        nlmsg_pid: 0,
    }
}

fn local(family: i32, dst_len: u8) -> RtMsg {
    RtMsg {
        family: family as u8,
        dst_len,
        src_len: 0,
        tos: 0,
        table: RT_TABLE_LOCAL,
        protocol: RTPROT_BOOT,
        scope: RT_SCOPE_HOST,
        kind: RTN_LOCAL,
        flags: 0,
    }
}

/// `ip route add local 198.18.0.0/15 dev lo`, over netlink: every
/// address of the range is this namespace's own, so one wildcard
/// listener per port takes connections to all of them.
pub unsafe fn local_route() -> bool {
    let req = RouteReq {
        head: head::<RouteReq>(),
        rt: local(libc::AF_INET, RANGE.1),
        dst: Attr4 {
            len: 8,
            kind: RTA_DST,
            value: RANGE.0.octets(),
        },
        oif: Attr4 {
            len: 8,
            kind: RTA_OIF,
            value: LO_INDEX.to_ne_bytes(),
        },
    };
    route(&req)
}

/// `ip -6 route add local fd73:6278::/64 dev lo`: the same for IPv6.
pub unsafe fn local_route6() -> bool {
    let req = Route6Req {
        head: head::<Route6Req>(),
        rt: local(libc::AF_INET6, RANGE6.1),
        dst: Attr16 {
            len: 20,
            kind: RTA_DST,
            value: RANGE6.0.octets(),
        },
        oif: Attr4 {
            len: 8,
            kind: RTA_OIF,
            value: LO_INDEX.to_ne_bytes(),
        },
    };
    route(&req)
}

/// Send one route request and read its acknowledgement.
unsafe fn route<T>(req: &T) -> bool {
    let s = libc::socket(
        libc::AF_NETLINK,
        libc::SOCK_RAW | libc::SOCK_CLOEXEC,
        libc::NETLINK_ROUTE,
    );
    if s < 0 {
        return false;
    }
    let mut kernel: libc::sockaddr_nl = std::mem::zeroed();
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    let sent = libc::sendto(
        s,
        (req as *const T).cast(),
        std::mem::size_of::<T>(),
        0,
        (&kernel as *const libc::sockaddr_nl).cast(),
        std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
    );
    // The acknowledgement: a header, then the error (0: done) and the
    // request's header.
    let mut ack = [0u32; 64];
    let got = if sent > 0 {
        libc::recv(s, ack.as_mut_ptr().cast(), std::mem::size_of_val(&ack), 0)
    } else {
        -1
    };
    libc::close(s);
    let head = std::mem::size_of::<libc::nlmsghdr>();
    got >= (head + 4) as isize && ack[1] & 0xffff == libc::NLMSG_ERROR as u32 && ack[head / 4] == 0
}

/// Create the file `/etc/resolv.conf` leads to in the new root, and its
/// missing directories, when the new root lacks it (the host's is often
/// a link into `/run`, which a policy rarely grants). The host has the
/// file (the parent resolved the link), so every bind mount of a host
/// directory on the way has it too: what is missing lies on the new
/// root's own tmpfs, or under a read-only mount, where creating fails
/// and the caller warns. Nothing allocated: the path is cut in a
/// buffer on the stack.
unsafe fn make_target(r: &RelayPrep) {
    let path = r.resolv_at.as_bytes_with_nul();
    let mut buf = [0u8; 4096];
    if r.root_len == 0 || path.len() > buf.len() {
        return;
    }
    buf[..path.len()].copy_from_slice(path);
    for i in r.root_len + 1..path.len() - 1 {
        if buf[i] == b'/' {
            buf[i] = 0;
            libc::mkdir(buf.as_ptr().cast(), 0o755);
            buf[i] = b'/';
        }
    }
    let f = libc::open(
        r.resolv_at.as_ptr(),
        libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        0o644,
    );
    if f >= 0 {
        libc::close(f);
    }
}

/// The responder's UDP socket at 198.18.0.1:53, or -1.
pub unsafe fn dns_socket() -> RawFd {
    let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return -1;
    }
    let mut addr: libc::sockaddr_in = std::mem::zeroed();
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_addr.s_addr = u32::from_ne_bytes(DNS_ADDR.octets());
    addr.sin_port = 53u16.to_be();
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    if libc::bind(s, (&addr as *const libc::sockaddr_in).cast(), len) != 0 {
        libc::close(s);
        return -1;
    }
    s
}

/// Mount the generated `resolv.conf` (read-only, from a small tmpfs of
/// its own) at `r.resolv_at`. `false` when there is nothing there to
/// mount over: the command then has the host's resolver configuration,
/// which reaches nothing from the namespace.
pub unsafe fn mount_resolv(r: &RelayPrep) -> bool {
    if libc::access(r.resolv_at.as_ptr(), libc::F_OK) != 0 {
        make_target(r);
    }
    let m = tmpfs(
        (c"size", c"4k"),
        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
    );
    if m < 0 {
        return false;
    }
    let f = libc::openat(
        m,
        c"resolv.conf".as_ptr(),
        libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
        0o644,
    );
    let body = RESOLV_CONF.as_bytes();
    let written = f >= 0 && libc::write(f, body.as_ptr().cast(), body.len()) == body.len() as isize;
    if f >= 0 {
        libc::close(f);
    }
    let file = if written {
        clone_tree(m, c"resolv.conf", false)
    } else {
        -1
    };
    libc::close(m);
    if file < 0 {
        return false;
    }
    let ok = set_attr(file, MOUNT_ATTR_RDONLY)
        && libc::syscall(
            libc::SYS_move_mount,
            file,
            c"".as_ptr(),
            libc::AT_FDCWD,
            r.resolv_at.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ) == 0;
    libc::close(file);
    ok
}
