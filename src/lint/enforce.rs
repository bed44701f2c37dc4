//! What each OS target enforces, in words. Shared by `explain` and the
//! cooperative-only lint so both say the same thing.

use crate::ir::{Ir, NetRule, Ports, Status};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforced {
    /// The OS enforces this decision as the policy states it.
    Exact,
    /// The OS enforces part of it (the port, not the host).
    Partial,
    /// The OS allows more than the policy here.
    Wider,
    /// The OS allows less than the policy here.
    Narrower,
    /// Nothing at the OS level: only cooperating programs check it.
    Cooperative,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetNote {
    /// `linux`, `macos` or `windows`.
    pub target: &'static str,
    pub enforced: Enforced,
    pub note: String,
}

pub fn note(target: &'static str, enforced: Enforced, note: impl Into<String>) -> TargetNote {
    TargetNote {
        target,
        enforced,
        note: note.into(),
    }
}

/// Whether the Windows artifact can filter the network at all.
pub fn windows_net(ir: &Ir) -> TargetNote {
    let n = &ir.net;
    let closed = n.connect == Ports::None && n.bind == Ports::None && !n.other_protocols;
    if !ir.windows.appcontainer {
        return note(
            "windows",
            if closed {
                Enforced::Wider
            } else {
                Enforced::Cooperative
            },
            "no network filtering without windows.appcontainer = true: a job and a \
             restricted token do not block the network",
        );
    }
    if closed {
        note(
            "windows",
            Enforced::Exact,
            "AppContainer without network capabilities: all traffic is dropped",
        )
    } else {
        note(
            "windows",
            Enforced::Partial,
            "AppContainer enforces network on/off only: with internetClient any host and \
             port is reachable (loopback is not)",
        )
    }
}

/// Linux and macOS filter outbound TCP by port (macOS: to the proxy
/// only, with host rules).
pub fn port_notes(ir: &Ir, port: Option<u16>, bind: bool) -> Vec<TargetNote> {
    let ports = if bind { &ir.net.bind } else { &ir.net.connect };
    let dir = if bind {
        "listening on"
    } else {
        "connecting to"
    };
    let (enforced, what) = match port {
        Some(p) if ports.allows(p) => (
            Enforced::Partial,
            format!("enforces the port only: {dir} TCP port {p} is allowed, to any host"),
        ),
        Some(p) => (Enforced::Exact, format!("denies {dir} TCP port {p}")),
        None => (
            Enforced::Cooperative,
            format!("cannot narrow this: {dir} any TCP port is allowed"),
        ),
    };
    // With host rules the macOS profile sends outbound TCP through the
    // proxy (docs/macos.md): no port is open to any host.
    let macos = if !bind && crate::back::sbpl::proxy_spec(ir).is_some() {
        note(
            "macos",
            Enforced::Partial,
            "Seatbelt lets outbound TCP reach only `sbx run`'s proxy on localhost and the \
             loopback rules; the proxy checks host and port",
        )
    } else {
        note("macos", enforced, format!("Seatbelt {what}"))
    };
    vec![
        note(
            "linux",
            enforced,
            format!("Landlock (ABI 4 and later) {what}"),
        ),
        macos,
        windows_net(ir),
    ]
}

/// What each target enforces of the `[[net]]` rule `r`: the artifacts'
/// own precision lines (the Landlock back end's for Linux, the SBPL back
/// end's for macOS), so that `explain`, SBX022 and the artifacts say one
/// thing. A rule that names no host or path has no such line on Linux:
/// Landlock holds it to its port, which is all it says.
pub fn rule_notes(ir: &Ir, r: &NetRule) -> Vec<TargetNote> {
    let label = format!("net[{}]", r.index);
    let mut lines = Vec::new();
    crate::back::landlock::proxy::precision(ir, crate::back::landlock::TARGET, &mut lines);
    let linux = match lines.into_iter().find(|p| p.rule == label) {
        Some(p) => note("linux", from_status(p.status), p.reason),
        None => {
            let what = match (r.port, r.allow) {
                (Some(p), true) => format!("allows TCP port {p}, as the rule says"),
                (Some(p), false) => format!("denies TCP port {p}"),
                (None, _) => "filters no TCP port, as the rule says".to_string(),
            };
            let dir = if r.bind { "listening: " } else { "" };
            note(
                "linux",
                Enforced::Exact,
                format!("Landlock (ABI 4 and later) {dir}{what}"),
            )
        }
    };
    let macos = crate::back::sbpl::net_precision(ir)
        .into_iter()
        .find(|p| p.rule == label)
        .map(|p| note("macos", from_status(p.status), p.reason))
        .unwrap_or_else(|| note("macos", Enforced::Exact, "Seatbelt holds it to its port"));
    vec![linux, macos, windows_net(ir)]
}

/// A precision line's status in `explain`'s words.
pub fn from_status(s: Status) -> Enforced {
    match s {
        Status::Exact => Enforced::Exact,
        Status::Wider => Enforced::Wider,
        Status::Narrower => Enforced::Narrower,
        Status::Unsupported | Status::Dropped => Enforced::Cooperative,
    }
}

/// The executable allow-list (kernel on Linux and macOS) and argument
/// prefixes (cooperative everywhere).
pub fn command_notes(path: Option<&str>, has_args: bool) -> Vec<TargetNote> {
    let exe = match path {
        Some(p) => format!("only listed executables may run ({p} is one)"),
        None => "only listed executables may run".into(),
    };
    let args = if has_args {
        "; argument prefixes are cooperative only"
    } else {
        ""
    };
    let e = if has_args {
        Enforced::Partial
    } else {
        Enforced::Exact
    };
    vec![
        note("linux", e, format!("Landlock `execute`: {exe}{args}")),
        note(
            "macos",
            e,
            format!("Seatbelt `process-exec` literals: {exe}{args}"),
        ),
        note(
            "windows",
            Enforced::Cooperative,
            "no exec allow-list on Windows: [commands] is cooperative only",
        ),
    ]
}
