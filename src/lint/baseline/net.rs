//! Ports (what the kernel enforces), non-TCP traffic, DNS, and the
//! cooperative part of each rule (host, scheme, path prefix).

use super::{Widened, Widening};
use crate::ir::{Ir, NetRule, Ports};
use crate::lint::cover::host_covers;
use crate::lint::origin::Origin;

/// `host:port (scheme, path)` for messages.
pub fn describe(r: &NetRule) -> String {
    let mut s = r.host.clone();
    match r.port {
        Some(p) => s.push_str(&format!(":{p}")),
        None => s.push_str(":*"),
    }
    let mut extra = Vec::new();
    if let Some(sc) = &r.scheme {
        extra.push(sc.clone());
    }
    if let Some(pp) = &r.path_prefix {
        extra.push(format!("path {pp}"));
    }
    if r.bind {
        extra.push("bind".into());
    }
    if !extra.is_empty() {
        s.push_str(&format!(" ({})", extra.join(", ")));
    }
    s
}

fn covers(o: &NetRule, n: &NetRule) -> bool {
    o.bind == n.bind
        && host_covers(&o.host, &n.host)
        && (o.port.is_none() || o.port == n.port)
        && (o.scheme.is_none() || o.scheme == n.scheme)
        && match (&o.path_prefix, &n.path_prefix) {
            (None, _) => true,
            (Some(op), Some(np)) => np.starts_with(op.as_str()),
            (Some(_), None) => false,
        }
}

fn same(a: &NetRule, b: &NetRule) -> bool {
    a.host.eq_ignore_ascii_case(&b.host)
        && a.port == b.port
        && a.scheme == b.scheme
        && a.path_prefix == b.path_prefix
        && a.bind == b.bind
}

pub fn widenings(old: &Ir, new: &Ir) -> Vec<Widening> {
    let mut out = Vec::new();
    let allow = |r: &&NetRule| r.allow;
    let first = |f: &dyn Fn(&NetRule) -> bool| {
        new.net
            .rules
            .iter()
            .find(|r| r.allow && f(r))
            .map(Origin::net)
    };
    match (&old.net.connect, &new.net.connect) {
        (Ports::All, _) | (_, Ports::None) => {}
        (_, Ports::All) => out.push(Widening {
            widened: Widened::Connect { port: None },
            origin: first(&|r| !r.bind && r.port.is_none()),
        }),
        (o, Ports::Some(ps)) => {
            for &p in ps.iter().filter(|p| !o.allows(**p)) {
                out.push(Widening {
                    widened: Widened::Connect { port: Some(p) },
                    origin: first(&|r| !r.bind && r.port == Some(p)),
                });
            }
        }
    }
    if let Ports::Some(ps) = &new.net.bind {
        for &p in ps.iter().filter(|p| !old.net.bind.allows(**p)) {
            out.push(Widening {
                widened: Widened::Bind { port: p },
                origin: first(&|r| r.bind && r.port == Some(p)),
            });
        }
    }
    if new.net.other_protocols && !old.net.other_protocols {
        out.push(Widening {
            widened: Widened::OtherProtocols,
            origin: first(&|r| !r.bind && r.host == "*" && r.port.is_none()),
        });
    }
    let old_dns = old.net.dns || old.net.other_protocols;
    if new.net.dns && !old_dns {
        out.push(Widening {
            widened: Widened::Dns,
            origin: first(&|r| !r.bind && r.host != "*" && r.host != "localhost"),
        });
    }
    // The cooperative layer: a rule no baseline rule covers, unless the
    // kernel-level widening above already names it.
    for r in new.net.rules.iter().filter(allow) {
        let o = Origin::net(r);
        if out.iter().any(|w| w.origin.as_ref() == Some(&o)) {
            continue;
        }
        // Deny rules are checked first: a fully denied grant grants nothing.
        if new.net.rules.iter().any(|d| !d.allow && covers(d, r)) {
            continue;
        }
        if !old.net.rules.iter().filter(allow).any(|x| covers(x, r)) {
            out.push(Widening {
                widened: Widened::NetRule { rule: describe(r) },
                origin: Some(o),
            });
        }
    }
    for d in old.net.rules.iter().filter(|r| !r.allow) {
        if !new.net.rules.iter().any(|r| !r.allow && same(r, d)) {
            out.push(Widening {
                widened: Widened::NetDenyRemoved { rule: describe(d) },
                origin: None,
            });
        }
    }
    out
}
