//! Outbound connections: deny rules first, then allow rules, matched on
//! host, port, scheme and path prefix (cooperatively); the kernel sees the
//! port only.

use super::{Explanation, Query};
use crate::ir::{Ir, NetRule};
use crate::lint::cover::host_matches;
use crate::lint::enforce::{port_notes, Enforced};
use crate::lint::origin::Origin;

fn scheme_port(s: &str) -> Option<u16> {
    match s {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        "ssh" => Some(22),
        _ => None,
    }
}

pub fn parse(url: &str) -> Result<Query, String> {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s.to_ascii_lowercase()), r),
        None => (None, url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("{url:?}: unclosed `[` in the host"))?;
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(format!("{url:?} has no host"));
    }
    let port = match port {
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{url:?}: {p:?} is not a TCP port"))?,
        ),
        None => None,
    };
    let port = port
        .or_else(|| scheme.as_deref().and_then(scheme_port))
        .ok_or_else(|| format!("{url:?}: give a port (host:port) or a scheme with a known port"))?;
    Ok(Query::Connect {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
        path: path.to_string(),
    })
}

fn matches(r: &NetRule, scheme: Option<&str>, host: &str, port: u16, path: &str) -> bool {
    !r.bind
        && host_matches(&r.host, host)
        && r.port.is_none_or(|p| p == port)
        && r.scheme.as_deref().is_none_or(|s| Some(s) == scheme)
        && r.path_prefix
            .as_deref()
            .is_none_or(|pp| path.starts_with(pp))
}

pub fn explain(ir: &Ir, scheme: Option<&str>, host: &str, port: u16, path: &str) -> Explanation {
    let shown = match scheme {
        Some(s) => format!("{s}://{host}:{port}{path}"),
        None => format!("{host}:{port}"),
    };
    let request = format!("connect to {shown}");
    let mut targets = port_notes(ir, Some(port), false);
    let rules = &ir.net.rules;
    let hit = rules
        .iter()
        .find(|r| !r.allow && matches(r, scheme, host, port, path))
        .or_else(|| {
            rules
                .iter()
                .find(|r| r.allow && matches(r, scheme, host, port, path))
        });
    // Under `sbx run` with host rules, the host is checked too (#37).
    if crate::back::landlock::proxy::spec(ir).is_some() {
        // A deny rule holds for every client; an allow rule for clients
        // that ignore the proxy when the relay serves its port, and its
        // path_prefix only for plain HTTP through the proxy.
        let forwarded = hit
            .is_some_and(|r| crate::back::landlock::proxy::forwarded(r) && r.path_prefix.is_none());
        let relayed = match hit {
            Some(r) if !r.allow => true,
            Some(r) => {
                (crate::back::landlock::proxy::relayed(r) || forwarded) && r.path_prefix.is_none()
            }
            // Refused for its path only: a tunnel shows no path, so
            // the host and port are all that is checked (said below).
            None => !rules.iter().any(|r| {
                r.allow
                    && r.path_prefix
                        .as_deref()
                        .is_some_and(|pp| matches(r, scheme, host, port, pp))
            }),
        };
        let (enforced, what) = if forwarded {
            (
                Enforced::Exact,
                format!(
                    "`sbx run` forwards port {port} for every TCP client: 127.0.0.1:{port} and \
                     [::1]:{port} in the private network namespace lead to this host's loopback \
                     at that port (an artifact alone: Landlock, the port only)"
                ),
            )
        } else if relayed {
            (
                Enforced::Exact,
                format!(
                    "`sbx run` checks host and port {port} for every TCP client: proxy-aware \
                     ones through its proxy, any other through the DNS responder and relay in \
                     the private network namespace (an artifact alone: Landlock, the port only)"
                ),
            )
        } else {
            (
                Enforced::Partial,
                format!(
                    "`sbx run` checks a path_prefix for plain HTTP through its proxy only; \
                     a tunnel or a client that ignores the proxy is held to host and port \
                     {port}, or reaches nothing where no rule for a name gives the port"
                ),
            )
        };
        for t in targets.iter_mut().filter(|t| t.target == "linux") {
            // Partial: what Landlock alone does stays said.
            t.note = if relayed {
                what.clone()
            } else {
                format!("{what}; {}", t.note)
            };
            t.enforced = enforced;
        }
    }
    let (allowed, rule, reason) = match hit {
        Some(r) => {
            let o = Origin::net(r);
            let what = crate::lint::baseline::describe_net(r);
            if r.allow {
                (
                    true,
                    Some(o.clone()),
                    format!("{} allows {what}", o.label()),
                )
            } else {
                (
                    false,
                    Some(o.clone()),
                    format!("{} denies {what} (deny rules are checked first)", o.label()),
                )
            }
        }
        None if rules.is_empty() => (
            false,
            None,
            "the policy has no [[net]] rules: the network is denied".into(),
        ),
        None => (false, None, format!("no [[net]] rule allows {shown}")),
    };
    Explanation {
        allowed,
        request,
        rule,
        reason,
        boundary: None,
        targets,
    }
}
