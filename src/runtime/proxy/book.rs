//! The relay addresses the DNS responder hands out, one per name, and
//! the name each stands for when a client connects to it.
//!
//! The range is 198.18.0.0/15 (RFC 2544's benchmarking range): it is
//! routed nowhere on the Internet, so no real destination is hidden by a
//! relay address, and it stays out of 127/8, where the sandbox's own
//! loopback and loopback forwards live. Inside the command's network
//! namespace the whole range is a local route on `lo`, so a listener on
//! `0.0.0.0:PORT` accepts a connection to any address in it, and
//! `getsockname` gives the address the client dialled.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;

/// The range: its first address and prefix length.
pub const RANGE: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 18, 0, 0), 15);

/// The IPv6 range: a unique-local /64 (`fd73:6278::/64`, "sbx" in its
/// global ID), also a local route on `lo` in the namespace. A name's
/// IPv6 relay address ends in the 32 bits of its IPv4 one
/// ([`six`]), so one book serves both.
pub const RANGE6: (Ipv6Addr, u8) = (Ipv6Addr::new(0xfd73, 0x6278, 0, 0, 0, 0, 0, 0), 64);

/// The IPv6 relay address that stands for the IPv4 one `a`.
pub fn six(a: Ipv4Addr) -> Ipv6Addr {
    let mut o = RANGE6.0.octets();
    o[12..].copy_from_slice(&a.octets());
    Ipv6Addr::from(o)
}

/// Where the DNS responder listens (UDP port 53); never handed out.
pub const DNS_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);

/// Names a run may be given addresses for: a wildcard rule would
/// otherwise let a client use up sbx's memory one name at a time.
pub const MAX_NAMES: usize = 4096;

/// The first address handed out (after the network and the responder).
const FIRST: u32 = u32::from_be_bytes([198, 18, 0, 2]);

#[derive(Debug, Default)]
pub struct Book {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_name: HashMap<String, Ipv4Addr>,
    by_addr: HashMap<Ipv4Addr, String>,
}

impl Book {
    /// The address for `name`, the same on every question; `None` once
    /// [`MAX_NAMES`] names have one.
    pub fn address(&self, name: &str) -> Option<Ipv4Addr> {
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = b.by_name.get(name) {
            return Some(*a);
        }
        if b.by_name.len() >= MAX_NAMES {
            return None;
        }
        let a = Ipv4Addr::from(FIRST + b.by_name.len() as u32);
        b.by_name.insert(name.to_string(), a);
        b.by_addr.insert(a, name.to_string());
        Some(a)
    }

    /// Every name with its address (`sbx learn` maps the addresses its
    /// trace saw back to names).
    pub fn entries(&self) -> Vec<(String, Ipv4Addr)> {
        let b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        b.by_name.iter().map(|(n, a)| (n.clone(), *a)).collect()
    }

    /// The name the IPv6 relay address `addr` stands for.
    pub fn name6(&self, addr: Ipv6Addr) -> Option<String> {
        let o = addr.octets();
        if o[..12] != six(Ipv4Addr::UNSPECIFIED).octets()[..12] {
            return None;
        }
        self.name(Ipv4Addr::new(o[12], o[13], o[14], o[15]))
    }

    /// The name `addr` was handed out for.
    pub fn name(&self, addr: Ipv4Addr) -> Option<String> {
        let b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        b.by_addr.get(&addr).cloned()
    }
}

/// Whether `addr` is in [`RANGE`].
pub fn in_range(addr: Ipv4Addr) -> bool {
    let mask = u32::MAX << (32 - RANGE.1);
    u32::from(addr) & mask == u32::from(RANGE.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_per_name_in_the_range_and_a_cap() {
        let b = Book::default();
        let a = b.address("a.test").unwrap();
        assert_eq!(a, Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!(b.address("a.test"), Some(a), "stable");
        assert_ne!(b.address("b.test").unwrap(), a);
        assert_eq!(b.name(a).as_deref(), Some("a.test"));
        assert!(b.entries().contains(&("a.test".to_string(), a)));
        assert_eq!(b.name(DNS_ADDR), None);
        assert_eq!(six(a), "fd73:6278::c612:2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(b.name6(six(a)).as_deref(), Some("a.test"));
        assert_eq!(b.name6("fd73:6278:0:1::c612:2".parse().unwrap()), None);
        for i in 0..MAX_NAMES {
            b.address(&format!("n{i}.test"));
        }
        assert_eq!(b.address("late.test"), None);
        let last = Ipv4Addr::from(FIRST + MAX_NAMES as u32 - 1);
        assert!(in_range(last) && in_range(DNS_ADDR));
        assert!(!in_range(Ipv4Addr::new(198, 20, 0, 0)));
        assert!(!in_range(Ipv4Addr::new(127, 0, 0, 1)));
    }
}
