//! Connections from clients that ignore the proxy variables: they looked
//! a name up with the namespace's DNS responder and connected to the
//! relay address it gave. The address the client dialled names the
//! host, the listener's port the port; the decision is the proxy's
//! ([`super::Cx::open`]: deny rules, host and port, one lookup, each
//! address checked), then the bytes are relayed.

use super::relay::tunnel;
use super::rules::{Dest, Reason, Via};
use super::Cx;
use std::net::{IpAddr, TcpStream};

/// Serve one connection accepted on a relay listener.
pub fn serve(client: TcpStream, cx: &Cx) {
    let Ok(local) = client.local_addr() else {
        return;
    };
    if super::rules::canonical(local.ip()).is_loopback() {
        if let Some(host) = cx.rules.forward_host(local.port()) {
            return super::forward::serve(client, cx, host);
        }
    }
    let name = match local.ip() {
        IpAddr::V4(a) => cx.book.name(a),
        IpAddr::V6(a) => cx
            .book
            .name6(a)
            .or_else(|| a.to_ipv4_mapped().and_then(|a| cx.book.name(a))),
    };
    let Some(host) = name else {
        // The listener takes every address of the namespace: a client
        // dialling its own loopback, or a relay address no answer gave.
        let why = format!("{} is no relay address the DNS responder gave", local.ip());
        cx.refuse(
            Via::Relay,
            &local.ip().to_string(),
            local.port(),
            Reason::Unsupported(why),
        );
        return;
    };
    let dest = Dest {
        host,
        port: local.port(),
    };
    // So that a scheme rule means it: SNI for https, SSH for ssh.
    let check = cx.rules.relay_check(&dest);
    if let Err(r) = super::peek::check(&client, check, &dest.host, cx.options.head_timeout) {
        return cx.refuse(Via::Relay, &dest.host, dest.port, r);
    }
    let _ = client.set_read_timeout(None);
    match cx.open(Via::Relay, &dest, None) {
        Ok(upstream) => {
            let Some(_u) = cx.track(&upstream) else {
                return;
            };
            tunnel(&client, &upstream);
        }
        Err(r) => cx.refuse(Via::Relay, &dest.host, dest.port, r),
    }
}
