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

/// The index of the `[[net]]` rule an exact line says the proxy enforces
/// (`None`: not such a line). The loader checks that the proxy is in the
/// artifact with that rule (`consistent`): the line alone would let
/// `enforcement = "required"` run without it.
pub fn claimed_rule(p: &Precision) -> Option<usize> {
    if p.status != Status::Exact || !p.reason.ends_with(WITH_PROXY) {
        return None;
    }
    p.rule.strip_prefix("net[")?.strip_suffix(']')?.parse().ok()
}

/// One line per rule that names a host or a path.
pub(super) fn precision(ir: &Ir, target: &str, out: &mut Vec<Precision>) {
    let proxied = target != TARGET_LANDLOCKCONFIG && spec(ir).is_some();
    for r in ir.net.rules.iter().filter(|r| needs_proxy(r)) {
        let label = format!("net[{}]", r.index);
        let (status, reason) = match (proxied, r.allow, &r.path_prefix) {
            (true, true, Some(_)) => (
                Status::Wider,
                "path_prefix is enforced by the proxy for plain-HTTP requests; an HTTPS \
                 (CONNECT or SOCKS5) tunnel does not show the path: cooperative there"
                    .to_string(),
            ),
            (true, true, None) if loopback(&r.host) => (
                Status::Narrower,
                format!(
                    "host {:?} is this host's loopback, reached through `sbx run`'s proxy \
                     only: NO_PROXY sends localhost to the sandbox's own loopback, so a \
                     client must use the proxy for it explicitly (curl --noproxy '' -x \"$HTTP_PROXY\")",
                    r.host
                ),
            ),
            (true, true, None) => (Status::Exact, format!("host {:?} {WITH_PROXY}", r.host)),
            (true, false, _) => (
                Status::Exact,
                format!("deny rule with host {:?} {WITH_PROXY}", r.host),
            ),
            (false, _, _) => (Status::Wider, cooperative(r, target)),
        };
        out.push(line(label, target, status, reason));
    }
}

fn loopback(host: &str) -> bool {
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
