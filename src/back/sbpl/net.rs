//! Network rules. Seatbelt filters TCP by port and can tell `localhost`
//! from everything else. Host names and URL paths are `sbx run`'s
//! filtering proxy's to check (docs/macos.md, "Host rules: the proxy"):
//! a profile with host rules lets outbound TCP reach only the proxy's
//! two ports on localhost, which it reads from parameters, and the
//! loopback rules the policy names.

use super::{esc_err, Rule, PROXY_PARAMS};
use crate::back::landlock::ProxySpec;
use crate::back::EmitError;
use crate::ir::{Ir, NetRule, Precision, Status};
use crate::sbpl::escape_string;

/// The network part of the profile.
#[derive(Debug, Default)]
pub(super) struct Network {
    pub rules: Vec<Rule>,
    /// Outbound traffic of some kind is allowed: TLS and network
    /// configuration services are needed.
    pub outbound: bool,
    /// Names are resolved: mDNSResponder is needed.
    pub dns: bool,
}

/// This host's loopback: `localhost` to Seatbelt, reached directly.
fn is_local(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.to_canonical().is_loopback())
}

/// A rule only the proxy can check: a host other than this one's
/// loopback, or a URL path. Linux sends loopback rules through its proxy
/// too (the command's own namespace has its own loopback); Seatbelt
/// names `localhost` exactly, so here they stay direct.
fn via_proxy(r: &NetRule) -> bool {
    !r.bind && !is_local(&r.host) && (r.host != "*" || r.path_prefix.is_some())
}

/// The proxy's rules when the profile sends host rules through it. An
/// unrestricted network (`host = "*"` without a port) stays direct, as
/// on Linux: the proxy would take UDP and every other protocol away.
pub(super) fn proxy_spec(ir: &Ir) -> Option<ProxySpec> {
    let net = &ir.net;
    if net.other_protocols || !net.rules.iter().any(via_proxy) {
        return None;
    }
    Some(ProxySpec {
        rules: net.rules.iter().filter(|r| !r.bind).cloned().collect(),
    })
}

/// `(remote tcp (string-append "localhost:" (param "P")))` for each of
/// the proxy's ports. A profile run without the parameters is refused by
/// `sandbox-exec` (an undefined parameter is not a string): no network,
/// nothing run.
fn proxy_filters() -> Result<Vec<String>, EmitError> {
    PROXY_PARAMS
        .iter()
        .map(|p| {
            Ok(format!(
                "(remote tcp (string-append \"localhost:\" (param {})))",
                escape_string(p).map_err(esc_err("net"))?
            ))
        })
        .collect()
}

/// `*:443`, `localhost:8080`, `*:*`.
fn address(local_only: bool, port: Option<u16>) -> String {
    let host = if local_only { "localhost" } else { "*" };
    match port {
        Some(p) => format!("{host}:{p}"),
        None => format!("{host}:*"),
    }
}

/// `(remote tcp "…")` / `(local tcp "…")`.
fn tcp(side: &str, addr: &str) -> Result<String, EmitError> {
    Ok(format!(
        "({side} tcp {})",
        escape_string(addr).map_err(esc_err("net"))?
    ))
}

/// Ports a `host = "*"` deny rule takes away (`bind` or connect).
fn denied(rules: &[NetRule], bind: bool) -> Vec<u16> {
    rules
        .iter()
        .filter(|r| !r.allow && r.bind == bind && r.host == "*")
        .filter_map(|r| r.port)
        .collect()
}

/// For each port (or `None` = any port): is every allow rule that opens it
/// limited to localhost? Sorted, `None` first.
fn open_ports(rules: &[NetRule], bind: bool) -> Vec<(Option<u16>, bool)> {
    let mut out: Vec<(Option<u16>, bool)> = Vec::new();
    for r in rules.iter().filter(|r| r.allow && r.bind == bind) {
        if bind && r.port.is_none() {
            continue; // the IR opens no port for it either
        }
        let local = is_local(&r.host);
        match out.iter_mut().find(|(p, _)| *p == r.port) {
            Some(e) => e.1 &= local,
            None => out.push((r.port, local)),
        }
    }
    out.sort();
    out
}

pub(super) fn build(ir: &Ir) -> Result<Network, EmitError> {
    let net = &ir.net;
    let mut out = Network::default();
    if net.other_protocols {
        out.rules.push(Rule {
            allow: true,
            ops: vec!["network*"],
            filters: vec![],
            comment: Some("Unrestricted network ([[net]] host = \"*\" without a port)".into()),
        });
        out.outbound = true;
        out.dns = true;
        for (bind, op, side) in [
            (false, "network-outbound", "remote"),
            (true, "network-bind", "local"),
        ] {
            for p in denied(&net.rules, bind) {
                out.rules.push(Rule {
                    allow: false,
                    ops: vec![op],
                    filters: vec![tcp(side, &address(false, Some(p)))?],
                    comment: Some(format!("[[net]] deny of port {p}")),
                });
            }
        }
        return Ok(out);
    }

    let proxied = proxy_spec(ir).is_some();
    // With the proxy, only loopback rules connect directly; deny rules
    // still take their ports away from those.
    let direct: Vec<NetRule> = net
        .rules
        .iter()
        .filter(|r| !proxied || r.bind || !r.allow || is_local(&r.host))
        .cloned()
        .collect();
    let connect = open_ports(&direct, false);
    let any = connect.iter().find(|(p, _)| p.is_none()).map(|e| e.1);
    let mut filters = Vec::new();
    if let Some(local) = any {
        filters.push(tcp("remote", &address(local, None))?);
    }
    let denied_connect = denied(&direct, false);
    for (port, local) in connect.iter().filter(|(p, _)| p.is_some()) {
        let p = port.expect("filtered");
        // Covered by `*:*`, or taken away by a deny rule.
        if any == Some(false) || denied_connect.contains(&p) || (any == Some(true) && *local) {
            continue;
        }
        filters.push(tcp("remote", &address(*local, *port))?);
    }
    if !filters.is_empty() {
        out.outbound = true;
        let comment = if proxied {
            "Outbound TCP ([[net]]): this host's loopback, directly"
        } else {
            "Outbound TCP ([[net]]): by port, and localhost"
        };
        out.rules.push(Rule {
            allow: true,
            ops: vec!["network-outbound"],
            filters,
            comment: Some(comment.into()),
        });
        if any.is_some() {
            for p in &denied_connect {
                out.rules.push(Rule {
                    allow: false,
                    ops: vec!["network-outbound"],
                    filters: vec![tcp("remote", &address(false, Some(*p)))?],
                    comment: Some(format!("[[net]] deny of port {p}")),
                });
            }
        }
    }

    if proxied {
        // After any port deny: the proxy's ports are not the policy's.
        out.outbound = true;
        out.rules.push(Rule {
            allow: true,
            ops: vec!["network-outbound"],
            filters: proxy_filters()?,
            comment: Some(
                "Host rules ([[net]]): outbound TCP through `sbx run`'s proxy on localhost \
                 (-D PROXY_HTTP_PORT=… -D PROXY_SOCKS_PORT=…)"
                    .into(),
            ),
        });
    }

    let denied_bind = denied(&net.rules, true);
    let mut filters = Vec::new();
    for (port, local) in open_ports(&net.rules, true) {
        if !port.is_some_and(|p| denied_bind.contains(&p)) {
            filters.push(tcp("local", &address(local, port))?);
        }
    }
    if !filters.is_empty() {
        out.rules.push(Rule {
            allow: true,
            ops: vec!["network-bind", "network-inbound"],
            filters,
            comment: Some("Listening sockets ([[net]] bind = true)".into()),
        });
    }

    if out.rules.is_empty() {
        out.rules.push(Rule {
            allow: false,
            ops: vec!["network*"],
            filters: vec![],
            comment: Some("No [[net]] rules: no network".into()),
        });
    }
    // Through the proxy, names are resolved by the proxy (CONNECT and
    // socks5h carry them): the child gets no resolver, which would be a
    // channel to any name server around the host rules.
    out.dns = net.dns && out.outbound && !proxied;
    Ok(out)
}

/// The wording for rules `sbx run`'s proxy enforces (as on Linux, "for
/// proxy-aware clients"), and what the profile needs without `sbx run`.
const VIA_PROXY: &str = "enforced by `sbx run`'s proxy for proxy-aware clients (HTTP_PROXY, \
     HTTPS_PROXY, ALL_PROXY): the profile lets outbound TCP reach only the proxy's ports on \
     localhost, so programs that ignore them reach no network (SBPL cannot redirect a \
     connection: no relay as on Linux); without `sbx run` the profile \
     needs a filtering proxy there (-D PROXY_HTTP_PORT=… -D PROXY_SOCKS_PORT=…)";

/// One precision line per `[[net]]` rule, for this target.
pub(super) fn precision(ir: &Ir, target: &str) -> Vec<Precision> {
    let proxied = proxy_spec(ir).is_some();
    ir.net
        .rules
        .iter()
        .map(|r| {
            let (status, reason) = line(r, proxied);
            Precision {
                rule: format!("net[{}]", r.index),
                target: target.into(),
                status,
                reason,
                advisory: false,
            }
        })
        .collect()
}

fn line(r: &NetRule, proxied: bool) -> (Status, String) {
    // With the proxy every outbound rule but the loopback ones goes
    // through it, `host = "*"` with a port too.
    let through_proxy = proxied && !r.bind && !is_local(&r.host);
    if !r.allow {
        return if r.host == "*" && r.port.is_some() {
            (Status::Exact, "port denied".to_string())
        } else if through_proxy && r.host != "*" {
            (
                Status::Exact,
                format!("deny rule with host {:?} {VIA_PROXY}", r.host),
            )
        } else {
            (
                Status::Wider,
                "deny rules with a host (or without a port) are cooperative only".to_string(),
            )
        };
    }
    if r.path_prefix.is_some() {
        return if through_proxy {
            (
                Status::Wider,
                "path_prefix is enforced by the proxy for plain-HTTP requests; an HTTPS \
                 (CONNECT or SOCKS5) tunnel does not show the path: cooperative there"
                    .into(),
            )
        } else if r.host == "*" || is_local(&r.host) {
            (
                Status::Wider,
                "path_prefix is cooperative only: Seatbelt sees TCP ports, not URLs".into(),
            )
        } else {
            (
                Status::Wider,
                format!(
                    "host {:?} and path_prefix are cooperative only: Seatbelt sees TCP \
                     ports, not host names or URLs",
                    r.host
                ),
            )
        };
    }
    if through_proxy {
        return match (r.host.as_str(), r.port) {
            ("*", Some(p)) => (Status::Exact, format!("port {p}, any host, {VIA_PROXY}")),
            (h, _) => (Status::Exact, format!("host {h:?} {VIA_PROXY}")),
        };
    }
    if r.bind && r.port.is_none() && (r.host == "*" || is_local(&r.host)) {
        return (
            Status::Unsupported,
            "bind without a port opens nothing".to_string(),
        );
    }
    let side = if r.bind { "local" } else { "remote" };
    match (r.host.as_str(), r.port) {
        ("*", None) => (Status::Exact, "network*".to_string()),
        ("*" | "localhost", p) => (
            Status::Exact,
            format!("{side} tcp {}", address(r.host == "localhost", p)),
        ),
        (h, p) if is_local(h) => (
            Status::Wider,
            format!(
                "{side} tcp {}: Seatbelt names this host's loopback only as localhost, which \
                 covers its other loopback addresses too",
                address(true, p)
            ),
        ),
        (h, _) => (
            Status::Wider,
            format!(
                "host {h:?} is cooperative only: Seatbelt filters outbound TCP by port, not by host name"
            ),
        ),
    }
}
