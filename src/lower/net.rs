//! `[[net]]`: rules to port sets and the rules the proxy matches.

use super::*;

pub(super) fn lower_net(cx: &mut Ctx, policy: &Policy) -> ir::Net {
    let mut rules = Vec::new();
    let mut connect: Option<Vec<u16>> = Some(Vec::new()); // None = all ports
    let mut bind: Vec<u16> = Vec::new();
    let mut other = false;
    let mut dns = false;
    for (index, r) in policy.net.iter().enumerate() {
        let v = &r.value;
        let host = v.host.clone().unwrap_or_else(|| "*".into());
        let port = v.port.or(v.scheme.and_then(|s| s.default_port()));
        let (file, line, column) = match &r.loc {
            Some(l) => (l.file.clone(), l.line, l.column),
            None => (String::new(), 0, 0),
        };
        let rule = ir::NetRule {
            index,
            file,
            line,
            column,
            host: host.clone(),
            scheme: v.scheme.map(|s| s.as_str().to_string()),
            port,
            path_prefix: v.path_prefix.clone(),
            bind: v.bind == Some(true),
            allow: v.allow != Some(false),
        };
        rules.push(rule);
    }
    // Allow rules first, then deny rules take ports away.
    for r in rules.iter().filter(|r| r.allow) {
        if r.bind {
            if let Some(p) = r.port {
                bind.push(p);
            }
            continue;
        }
        match (r.host.as_str(), r.port) {
            ("*", None) => {
                connect = None;
                other = true;
            }
            (_, None) => connect = None,
            (_, Some(p)) => {
                if let Some(c) = connect.as_mut() {
                    c.push(p);
                }
            }
        }
        let is_name =
            r.host != "*" && r.host != "localhost" && r.host.parse::<std::net::IpAddr>().is_err();
        dns |= is_name;
        // Host, scheme and path: each back end says how far it enforces
        // them (the Linux one through `sbx run`'s proxy).
    }
    for r in rules.iter().filter(|r| !r.allow) {
        let label = format!("net[{}]", r.index);
        match (r.host.as_str(), r.port) {
            // Deny everything (in that direction): deny rules come first,
            // so no allow rule can reopen it.
            ("*", None) if r.bind => bind.clear(),
            ("*", None) => {
                connect = Some(Vec::new());
                other = false;
                dns = false;
            }
            ("*", Some(p)) => {
                let list = if r.bind {
                    Some(&mut bind)
                } else {
                    connect.as_mut()
                };
                match list {
                    Some(l) => l.retain(|x| *x != p),
                    None => cx.notes.push(Precision {
                        rule: label,
                        target: "ir".into(),
                        status: Status::Wider,
                        reason: format!("deny of port {p} under unrestricted network cannot be enforced by port allow-lists"),
                        advisory: false,
                    }),
                }
            }
            // A host: the back ends' lines.
            _ => {}
        }
    }
    let ports = |mut v: Vec<u16>| {
        v.sort_unstable();
        v.dedup();
        if v.is_empty() {
            Ports::None
        } else {
            Ports::Some(v)
        }
    };
    ir::Net {
        connect: match connect {
            None => Ports::All,
            Some(v) => ports(v),
        },
        bind: ports(bind),
        other_protocols: other,
        dns: dns && !other,
        ssh_agent: policy.ssh_agent == Some(true),
        rules,
    }
}
