//! This host's own addresses. A connection to one of them reaches the
//! services this host listens with on every address (`0.0.0.0`, `::`),
//! as a connection to loopback does, so the proxy treats them as
//! loopback: a rule that allows any host, or a name re-pointed at this
//! host's LAN address (DNS rebinding), must not reach them.

use std::net::IpAddr;

/// Whether `addr` is an address of one of this host's interfaces now
/// (read at each call: an address may come and go during a run).
pub fn this_host(addr: IpAddr) -> bool {
    addresses().contains(&addr)
}

/// The addresses of this host's interfaces; none where they cannot be
/// listed.
pub fn addresses() -> Vec<IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `list`, freed
    // below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` is an entry of the list getifaddrs made.
        let entry = unsafe { &*at };
        // SAFETY: a non-null ifa_addr points at a sockaddr of the family
        // its sa_family says, as large as that family's sockaddr.
        out.extend(unsafe { address(entry.ifa_addr) });
        at = entry.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The IP address in `sa`, if it holds one.
///
/// # Safety
/// `sa` is null or points at a sockaddr as large as its family's.
unsafe fn address(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    match i32::from((*sa).sa_family) {
        libc::AF_INET => {
            let v4 = &*(sa as *const libc::sockaddr_in);
            Some(IpAddr::from(u32::from_be(v4.sin_addr.s_addr).to_be_bytes()))
        }
        libc::AF_INET6 => {
            let v6 = &*(sa as *const libc::sockaddr_in6);
            Some(super::rules::canonical(IpAddr::from(v6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loopback is an interface's address on every host; a documentation
    /// address is none.
    #[test]
    fn loopback_is_this_host_and_a_documentation_address_is_not() {
        assert!(this_host("127.0.0.1".parse().unwrap()));
        assert!(!this_host("203.0.113.77".parse().unwrap()));
    }
}
