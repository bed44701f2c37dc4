//! Loopback forwards (issue #36): a rule naming this host's loopback
//! with a port makes 127.0.0.1 and ::1 at that port, inside the
//! command's network namespace, lead to this host's loopback at that
//! port, for any client (a database client never uses an HTTP proxy).
//! sbx connects from the host's network, where it runs.

use super::relay::tunnel;
use super::rules::{Dest, Via};
use super::Cx;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};

/// Where a forward for `host` connects: the rule's address, or for
/// `localhost` 127.0.0.1 then ::1 (a server may listen on either).
/// Never a lookup: `localhost` is this host's loopback by definition.
pub fn targets(host: &str) -> Vec<IpAddr> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(a) => vec![a],
        Err(_) => vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()],
    }
}

/// Serve one connection to a forward's port; `host` is its rule's host.
/// Deny rules still come first (a deny rule for the address or port).
pub fn serve(client: TcpStream, cx: &Cx, host: String) {
    let Ok(port) = client.local_addr().map(|a| a.port()) else {
        return;
    };
    let dest = Dest { host, port };
    let allowed = match cx.rules.decide(Via::Relay, &dest, None) {
        Ok(a) => a,
        Err(r) => return cx.refuse(Via::Relay, &dest.host, port, r),
    };
    let mut upstream = None;
    for a in targets(&dest.host) {
        if let Err(r) = allowed.address(a, false) {
            return cx.refuse(Via::Relay, &dest.host, port, r);
        }
        let to = SocketAddr::new(a, port);
        if let Ok(s) = TcpStream::connect_timeout(&to, cx.options.connect_timeout) {
            upstream = Some(s);
            break;
        }
    }
    // Nothing listens there on this host: the client sees its connection
    // closed, as a refused connection through the relay.
    let Some(upstream) = upstream else { return };
    let Some(_u) = cx.track(&upstream) else {
        return;
    };
    tunnel(&client, &upstream);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_tries_both_loopbacks() {
        assert_eq!(
            targets("localhost"),
            [
                "127.0.0.1".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        assert_eq!(targets("[::1]"), ["::1".parse::<IpAddr>().unwrap()]);
        assert_eq!(
            targets("127.0.0.5"),
            ["127.0.0.5".parse::<IpAddr>().unwrap()]
        );
    }
}
