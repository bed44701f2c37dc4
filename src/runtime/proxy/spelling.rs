//! Whether a host, however the client spelled it, is one the proxy
//! refuses unless a rule names its address literally: this host's
//! loopback, a link-local or metadata address, or a metadata service's
//! name. The summary at exit suggests no rule for these (docs/linux.md):
//! a rule for `127.1` would not reach 127.0.0.1 anyway (the address
//! check wants the address itself), and one for a real loopback address
//! opens this host's services, which is for the user to decide.

use super::rules::{class, is_metadata_name, Class};
use std::net::{IpAddr, Ipv4Addr};

/// `host` as the proxy logs it: lower case, no brackets, no trailing dot.
pub fn special(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    // RFC 6761: every name under `localhost` is this host's loopback.
    if host == "localhost" || host.ends_with(".localhost") || is_metadata_name(host) {
        return true;
    }
    let addr = host
        .parse::<IpAddr>()
        .ok()
        .or_else(|| numeric_v4(host).map(IpAddr::V4));
    addr.is_some_and(|a| class(a) != Class::Public)
}

/// An IPv4 address in the forms `inet_aton(3)` takes, which is what the
/// system resolver does with a numeric name: one to four parts, each
/// decimal, octal (leading `0`) or hex (`0x`), the last filling the bytes
/// left (`127.1`, `0x7f.1`, `2130706433`).
fn numeric_v4(s: &str) -> Option<Ipv4Addr> {
    let parts = s.split('.').map(number).collect::<Option<Vec<u32>>>()?;
    let (last, head) = parts.split_last()?;
    if head.len() > 3 || head.iter().any(|p| *p > 255) {
        return None;
    }
    let left = 32 - 8 * head.len() as u32;
    if left < 32 && *last >> left != 0 {
        return None;
    }
    let high = head
        .iter()
        .enumerate()
        .fold(0u32, |v, (i, p)| v | p << (24 - 8 * i as u32));
    Some(Ipv4Addr::from(high | last))
}

fn number(s: &str) -> Option<u32> {
    let (digits, radix) = match s.strip_prefix("0x") {
        Some(h) => (h, 16),
        None if s.len() > 1 && s.starts_with('0') => (&s[1..], 8),
        None => (s, 10),
    };
    // `from_str_radix` takes a sign, which inet_aton does not.
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_forms_as_inet_aton_reads_them() {
        let v4 = |s: &str| numeric_v4(s).map(|a| a.to_string());
        for (s, want) in [
            ("127.1", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("127.0.1", "127.0.0.1"),
            ("169.254.43518", "169.254.169.254"),
            ("0", "0.0.0.0"),
            ("1.2.3.4", "1.2.3.4"),
        ] {
            assert_eq!(v4(s).as_deref(), Some(want), "{s}");
        }
        for s in [
            "",
            "1.",
            ".1",
            "1.2.3.4.5",
            "256.1",
            "1.2.3.256",
            "1.16777216",
            "0x",
            "09",
            "+1",
            "4294967296",
            "a.b",
        ] {
            assert_eq!(v4(s), None, "{s:?}");
        }
    }
}
