//! Members of a Linux artifact that must agree. `compile` writes them
//! from one IR, so they always do; an artifact edited by hand (or
//! written by something else) may not, and the loader would then run
//! with less than the artifact says: a precision line calls a carve-out
//! exact while its mount is gone, and `enforcement = "required"`, which
//! trusts the report, runs anyway.

use super::mounts::{Fix, CLAIM_END, CLAIM_START};
use super::{expand_template, proxy, LinuxArtifact};
use crate::ir::Namespaces;

/// Each contradiction in `art`, naming the members (empty: none).
pub fn contradictions(art: &LinuxArtifact) -> Vec<String> {
    let mut out = Vec::new();
    network(art, &mut out);
    mounts(art, &mut out);
    proxy_claims(art, &mut out);
    out
}

/// TCP connect restricted, or host rules for the proxy, with no socket
/// filter: `compile` writes `sockets = null` only for an unrestricted
/// network, where UDP and raw sockets are allowed too.
fn network(art: &LinuxArtifact, out: &mut Vec<String>) {
    if art.seccomp.sockets.is_some() {
        return;
    }
    let handles_connect = art.landlock.ruleset.iter().any(|r| {
        r.handled_access_net
            .iter()
            .flatten()
            .any(|n| n == "connect_tcp")
    });
    if handles_connect {
        let ports: Vec<String> = art
            .landlock
            .net_port
            .iter()
            .filter(|n| n.allowed_access.iter().any(|a| a == "connect_tcp"))
            .flat_map(|n| n.port.iter().map(u64::to_string))
            .collect();
        let allowed = if ports.is_empty() {
            "no port allowed".to_string()
        } else {
            format!("only port(s) {} allowed", ports.join(", "))
        };
        out.push(format!(
            "landlock handles TCP connect with {allowed} but seccomp.sockets is null"
        ));
    }
    if art.proxy.is_some() {
        out.push("proxy has host rules but seccomp.sockets is null".into());
    }
}

/// A precision line that is exact by a mount needs that mount, and the
/// namespace layer; `namespaces = "never"` has no mounts.
fn mounts(art: &LinuxArtifact, out: &mut Vec<String>) {
    let ns = &art.namespaces;
    let never = ns.mode == Namespaces::Never;
    // Under "never" only sbx's protections are listed, for the after-run
    // check: none is mounted.
    let mounted = ns.mounts.iter().filter(|m| !m.protection).count();
    if never && (mounted > 0 || !ns.links.is_empty()) {
        out.push(format!(
            "namespaces.mode is \"never\" but namespaces lists {mounted} mount(s) and {} link(s)",
            ns.links.len()
        ));
    }
    if !art
        .precision
        .iter()
        .any(|p| p.reason.starts_with(CLAIM_START))
    {
        return;
    }
    // The report writes a rule's path as the IR has it; the mounts
    // escape it as a landlockconfig template. A protection absent when
    // compiled has an advisory line, never an exact one: skipped, as
    // they are most mounts of a policy with many writable trees.
    let as_written = |p: &str| expand_template(p, &|n| Some(format!("${{{n}}}"))).ok();
    let claims: crate::hashed::Set<String> = ns
        .mounts
        .iter()
        .filter(|m| !m.absent)
        .filter_map(|m| Some(Fix::of(m)?.claim(&as_written(&m.path)?)))
        .collect();
    let mut lacking = art.precision.iter().filter(|p| {
        p.reason.starts_with(CLAIM_START)
            && (never
                || !p
                    .reason
                    .match_indices(CLAIM_END)
                    .any(|(i, _)| claims.contains(&p.reason[..i + CLAIM_END.len()])))
    });
    if let Some(first) = lacking.next() {
        let more = lacking.count();
        let claim = first.reason.split(CLAIM_END).next().unwrap_or_default();
        let claim = claim.strip_prefix(CLAIM_START).unwrap_or(claim);
        let missing = if never {
            "namespaces.mode is \"never\"".to_string()
        } else {
            "namespaces.mounts has no such mount".to_string()
        };
        out.push(format!(
            "precision line {} is exact because sbx run {claim}, but {missing}{}",
            first.rule,
            if more > 0 {
                format!(" ({more} more such line(s))")
            } else {
                String::new()
            }
        ));
    }
}

/// A precision line that says the proxy enforces a rule needs the proxy,
/// with that rule.
fn proxy_claims(art: &LinuxArtifact, out: &mut Vec<String>) {
    for i in art.precision.iter().filter_map(proxy::claimed_rule) {
        let has = art
            .proxy
            .as_ref()
            .map(|p| p.rules.iter().any(|r| r.index == i));
        match has {
            Some(true) => {}
            Some(false) => out.push(format!(
                "precision line net[{i}] is exact by sbx run's proxy, but proxy.rules has no \
                 rule {i}"
            )),
            None => {
                out.push(format!(
                    "precision line net[{i}] is exact by sbx run's proxy, but the artifact \
                     has no proxy member"
                ));
                // One line says it: the others are the same member's absence.
                return;
            }
        }
    }
}
