//! Host rules on Linux: the kernel filters TCP by port only, so `sbx run`
//! enforces hosts with its own proxy, the child in a private network
//! namespace. This module says when the artifact asks for the proxy and
//! what the precision report says about each rule, with and without it.

use super::{line, ProxySpec, DNS_UDP, TARGET_LANDLOCKCONFIG};
use crate::ir::{Ir, NetRule, Precision, Status};

/// A rule only the proxy can check: it names a host or a URL path.
fn needs_proxy(r: &NetRule) -> bool {
    !r.bind && (r.host != "*" || r.path_prefix.is_some())
}

/// The proxy's rules, when the policy has host rules. An unrestricted
/// network (`host = "*"` with no port) keeps direct access: a private
/// namespace would take UDP and every other protocol away from it, so
/// its host deny rules stay cooperative.
pub fn spec(ir: &Ir) -> Option<ProxySpec> {
    let net = &ir.net;
    if net.other_protocols || !net.rules.iter().any(needs_proxy) {
        return None;
    }
    Some(ProxySpec {
        rules: net.rules.iter().filter(|r| !r.bind).cloned().collect(),
    })
}

const WITH_PROXY: &str = "enforced by `sbx run`'s proxy for proxy-aware clients \
     (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY), the child in a private network namespace where \
     programs that ignore them reach no network; where no namespace can be made, the port \
     only (see `sbx run --report`)";

/// For a rule whose port the relay serves (issue #37): every TCP client
/// is held to it, not only proxy-aware ones.
const WITH_RELAY: &str = "enforced by `sbx run` for every TCP client, the child in a private \
     network namespace: proxy-aware clients (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) through its \
     proxy, any other through the namespace's DNS responder, which answers only names a rule \
     allows (names in the child's /etc/hosts never reach it), and its relay, which decides as \
     the proxy does; where no namespace can be made, the port only (see `sbx run --report`)";

/// The ports of `sbx run`'s HTTP and SOCKS5 proxies in the child's
/// namespace (`runtime::proxy::PORTS`): the relay leaves them to the
/// proxies.
pub const PROXY_PORTS: [u16; 2] = [3128, 1080];

/// Whether the relay serves `r`'s port: an allow rule for a name (the
/// responder hands out addresses for names; a client given an address
/// connects to it, and the namespace routes nowhere but `lo`) with a
/// port (from the rule or its scheme) that is not one of the proxy's
/// own. Loopback rules are left to the sandbox's own loopback.
pub fn relayed(r: &NetRule) -> bool {
    r.allow
        && !r.bind
        // A path is the proxy's to check: the relay sees none.
        && r.path_prefix.is_none()
        && !loopback(&r.host)
        && r.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_err()
        && relay_port(r).is_some_and(|p| !PROXY_PORTS.contains(&p))
}

/// Whether `r` opens a loopback forward (issue #36): an allow rule for
/// this host's loopback with a port (its own or its scheme's) that is
/// not one of the proxy's. Inside the namespace, 127.0.0.1 and ::1 at
/// that port lead to this host's loopback at that port, for any client.
/// Without a port nothing is forwarded: one listener per port for every
/// port is not practical, and the whole of this host's loopback is not
/// something to open by accident.
pub fn forwarded(r: &NetRule) -> bool {
    r.allow
        && !r.bind
        && loopback(&r.host)
        && relay_port(r).is_some_and(|p| !PROXY_PORTS.contains(&p))
}

/// For a loopback rule with a port: every TCP client reaches it through
/// the forward.
const WITH_FORWARD: &str = "forwarded by `sbx run` for every TCP client, the child in a \
     private network namespace where 127.0.0.1 and [::1] at this port lead to this host's \
     loopback at this port (and no other port of it); where no namespace can be made, the \
     port only (see `sbx run --report`)";

/// The one port a rule holds a client that ignores the proxy to: the
/// rule's, or its scheme's (`ssh` 22, `https` 443); `None` for any port.
/// (The IR keeps a scheme's port implicit: proxy-aware clients may use
/// another port with a scheme rule.)
pub fn relay_port(r: &NetRule) -> Option<u16> {
    let scheme = r.scheme.as_deref().and_then(|s| match s {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        "ssh" => Some(22),
        _ => None,
    });
    r.port.or(scheme)
}

/// What stays cooperative on a TLS connection.
fn tls_note(r: &NetRule) -> &'static str {
    let tls = relay_port(r) == Some(443);
    match r.scheme.as_deref() {
        Some("https" | "wss") => {
            " (the relay checks that the TLS server name is this host; inside the proxy's \
             tunnels a client can name another host in SNI over an allowed connection, \
             domain fronting, cooperative there)"
        }
        _ if tls => {
            " (neither the proxy nor the relay reads the TLS handshake without an https or \
             wss scheme: a client can name another host in SNI over an allowed connection, \
             domain fronting, cooperative only)"
        }
        _ => "",
    }
}

/// The index of the `[[net]]` rule an exact line says the proxy enforces
/// (`None`: not such a line). The loader checks that the proxy is in the
/// artifact with that rule (`consistent`): the line alone would let
/// `enforcement = "required"` run without it.
pub fn claimed_rule(p: &Precision) -> Option<usize> {
    if p.status != Status::Exact
        || !(p.reason.ends_with(WITH_PROXY) || p.reason.ends_with(WITH_RELAY))
    {
        return None;
    }
    p.rule.strip_prefix("net[")?.strip_suffix(']')?.parse().ok()
}

/// One line per rule that names a host or a path, and one per allow rule
/// for any host at a port.
pub(crate) fn precision(ir: &Ir, target: &str, out: &mut Vec<Precision>) {
    // Any host at a port is the kernel's port rule, on the host's network
    // or through a namespace's forward: the proxy never sees it, so what
    // it refuses for names (loopback, this host's own addresses, a
    // cloud's metadata service) is reached too. Said, not refused: the
    // rule asks for any host.
    for r in ir
        .net
        .rules
        .iter()
        .filter(|r| r.allow && !r.bind && r.host == "*")
    {
        let Some(port) = r.port else { continue };
        out.push(Precision {
            rule: format!("net[{}]", r.index),
            target: target.into(),
            status: Status::Wider,
            reason: format!(
                "host \"*\" at port {port}: the kernel filters TCP by port, so every address \
                 at that port is reached, this host's loopback and its other addresses (the \
                 services it runs) and a cloud's metadata service (169.254.169.254) included; \
                 name the hosts instead to have sbx's proxy refuse those"
            ),
            advisory: true,
        });
    }
    let proxied = target != TARGET_LANDLOCKCONFIG && spec(ir).is_some();
    for r in ir.net.rules.iter().filter(|r| needs_proxy(r)) {
        let label = format!("net[{}]", r.index);
        let (status, reason) = match (proxied, r.allow, &r.path_prefix) {
            (true, true, Some(_)) => (
                Status::Wider,
                "path_prefix is enforced by the proxy for plain-HTTP requests; an HTTPS \
                 (CONNECT or SOCKS5) tunnel does not show the path: cooperative there; a \
                 client that ignores the proxy variables does not reach it (the relay sees \
                 no path)"
                    .to_string(),
            ),
            (true, true, None) if forwarded(r) => (
                Status::Exact,
                format!(
                    "host {:?} at port {}: {WITH_FORWARD}",
                    r.host,
                    relay_port(r).unwrap_or_default()
                ),
            ),
            (true, true, None) if loopback(&r.host) => (
                Status::Narrower,
                format!(
                    "host {:?} is this host's loopback with no port (or one of the proxy's): \
                     nothing is forwarded, so only the proxy reaches it, and only for a \
                     client that uses it explicitly (NO_PROXY sends localhost to the \
                     sandbox's own loopback: curl --noproxy '' -x \"$HTTP_PROXY\"); name a \
                     port to forward it to every client",
                    r.host
                ),
            ),
            (true, true, None) if relayed(r) => (
                Status::Exact,
                format!("host {:?}{} {WITH_RELAY}", r.host, tls_note(r)),
            ),
            // No port: the relay would need a listener on every port.
            (true, true, None) => (Status::Exact, format!("host {:?} {WITH_PROXY}", r.host)),
            (true, false, _) => (
                Status::Exact,
                format!("deny rule with host {:?} {WITH_RELAY}", r.host),
            ),
            (false, _, _) => (Status::Wider, cooperative(r, target)),
        };
        out.push(line(label, target, status, reason));
    }
}

pub fn loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.to_canonical().is_loopback())
}

fn cooperative(r: &NetRule, target: &str) -> String {
    let why = if target == TARGET_LANDLOCKCONFIG {
        "landlockconfig filters TCP by port (the linux target's proxy checks more)"
    } else {
        "the kernel filters TCP by port, and an unrestricted network is not sent through \
         the proxy"
    };
    match (r.allow, &r.path_prefix) {
        (false, _) => format!(
            "deny rule with host {:?} is cooperative only: {why}",
            r.host
        ),
        (true, Some(_)) if r.host == "*" => format!("path_prefix is cooperative only: {why}"),
        (true, Some(_)) => format!(
            "host {:?} and path_prefix are cooperative only: {why}",
            r.host
        ),
        (true, None) => format!("host {:?} is cooperative only: {why}", r.host),
    }
}

/// The lines `sbx run` adds when it cannot make the namespace: host
/// rules fall back to their ports, and name resolution opens UDP.
pub fn fallback(spec: &ProxySpec, why: &str) -> Vec<Precision> {
    let target = super::TARGET;
    let mut out = Vec::new();
    for r in spec.rules.iter().filter(|r| needs_proxy(r)) {
        out.push(line(
            format!("net[{}]", r.index),
            target,
            Status::Wider,
            format!(
                "host {:?}: no private network namespace ({why}), so no proxy: the kernel \
                 filters TCP by port only",
                r.host
            ),
        ));
    }
    let names = spec.rules.iter().any(|r| {
        r.allow
            && r.host != "*"
            && r.host != "localhost"
            && r.host.parse::<std::net::IpAddr>().is_err()
    });
    if names {
        out.push(line("net".into(), target, Status::Wider, DNS_UDP.into()));
    }
    out
}
