//! Network rules. Seatbelt filters TCP by port and can tell `localhost`
//! from everything else; host names and URL paths are cooperative only.

use super::{esc_err, Rule};
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

fn is_local(host: &str) -> bool {
    host == "localhost"
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

    let connect = open_ports(&net.rules, false);
    let any = connect.iter().find(|(p, _)| p.is_none()).map(|e| e.1);
    let mut filters = Vec::new();
    if let Some(local) = any {
        filters.push(tcp("remote", &address(local, None))?);
    }
    let denied_connect = denied(&net.rules, false);
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
        out.rules.push(Rule {
            allow: true,
            ops: vec!["network-outbound"],
            filters,
            comment: Some("Outbound TCP ([[net]]): by port, and localhost".into()),
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
    out.dns = net.dns && out.outbound;
    Ok(out)
}

/// One precision line per `[[net]]` rule, for this target.
pub(super) fn precision(ir: &Ir, target: &str) -> Vec<Precision> {
    let mut out = Vec::new();
    for r in &ir.net.rules {
        let (status, reason) = if !r.allow {
            if r.host == "*" && r.port.is_some() {
                (Status::Exact, "port denied".to_string())
            } else {
                (
                    Status::Wider,
                    "deny rules with a host (or without a port) are cooperative only".to_string(),
                )
            }
        } else if r.path_prefix.is_some() {
            (
                Status::Wider,
                "path_prefix is cooperative only: Seatbelt sees TCP ports, not URLs".into(),
            )
        } else if r.host == "*" || is_local(&r.host) {
            let what = match (r.port, r.host.as_str()) {
                (None, "*") => "network*".to_string(),
                (p, h) => format!(
                    "{} tcp {}",
                    if r.bind { "local" } else { "remote" },
                    address(h == "localhost", p)
                ),
            };
            if r.bind && r.port.is_none() {
                (
                    Status::Unsupported,
                    "bind without a port opens nothing".to_string(),
                )
            } else {
                (Status::Exact, what)
            }
        } else {
            (
                Status::Wider,
                format!(
                    "host {:?} is cooperative only: Seatbelt filters outbound TCP by port, not by host name",
                    r.host
                ),
            )
        };
        out.push(Precision {
            rule: format!("net[{}]", r.index),
            target: target.into(),
            status,
            reason,
            advisory: false,
        });
    }
    out
}
