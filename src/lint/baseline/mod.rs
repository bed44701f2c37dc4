//! `sbx check --baseline OLD`: is the new policy a subset of the old one,
//! capability by capability? Every capability the new IR grants and the
//! old one does not is one [`Widening`], with the rule responsible.

mod extras;
mod fs;
mod net;
pub use net::describe as describe_net;
mod process;

use super::origin::Origin;
use crate::ir::{Access, Ir};
use serde::Serialize;

/// What widened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Widened {
    /// Rights at a path (and below it, down to the next rule).
    Fs {
        path: String,
        added: Access,
        before: Access,
    },
    /// Outbound TCP; `None` = every port.
    Connect {
        port: Option<u16>,
    },
    /// Listening TCP port.
    Bind {
        port: u16,
    },
    /// UDP, raw and other non-TCP traffic.
    OtherProtocols,
    /// Name resolution (DNS over UDP).
    Dns,
    /// A network grant the kernel cannot see (host, scheme, path prefix).
    NetRule {
        rule: String,
    },
    /// A deny rule of the baseline is gone.
    NetDenyRemoved {
        rule: String,
    },
    /// An env name or glob not covered by the baseline's.
    Env {
        pattern: String,
    },
    /// No `[commands]` table any more: any program may run.
    CommandsUnrestricted,
    Command {
        name: String,
    },
    /// An argument prefix; `None` = any arguments.
    Args {
        command: String,
        prefix: Option<Vec<String>>,
    },
    CommandEnv {
        command: String,
        name: String,
    },
    /// A limit removed (`after` = None) or raised.
    Limit {
        name: String,
        before: u64,
        after: Option<u64>,
    },
    /// `required` became `best_effort`.
    Enforcement,
    /// A target extra that weakens isolation (`macos.allow_pty`...).
    Extra {
        key: String,
        detail: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Widening {
    pub widened: Widened,
    /// The rule in the new policy that grants it; `None` when the widening
    /// is an absence (a removed limit or deny rule).
    pub origin: Option<Origin>,
}

impl Widened {
    /// A sentence naming the capability, for diagnostics.
    pub fn describe(&self) -> String {
        let rights = |a: &Access| {
            if a.is_empty() {
                "nothing".to_string()
            } else {
                a.names().join(", ")
            }
        };
        match self {
            Widened::Fs {
                path,
                added,
                before,
            } => format!(
                "{} on {path} (the baseline grants {} there)",
                rights(added),
                rights(before)
            ),
            Widened::Connect { port: Some(p) } => format!("outbound TCP port {p}"),
            Widened::Connect { port: None } => "outbound TCP to any port".into(),
            Widened::Bind { port } => format!("listening on TCP port {port}"),
            Widened::OtherProtocols => "UDP, raw and other non-TCP traffic".into(),
            Widened::Dns => "name resolution (DNS over UDP)".into(),
            Widened::NetRule { rule } => format!("network grant {rule} (cooperative)"),
            Widened::NetDenyRemoved { rule } => format!("the baseline's deny rule {rule} is gone"),
            Widened::Env { pattern } => format!("environment variable {pattern:?}"),
            Widened::CommandsUnrestricted => {
                "no [commands] table: any program may be executed".into()
            }
            Widened::Command { name } => format!("command `{name}`"),
            Widened::Args {
                command,
                prefix: None,
            } => format!("any arguments to `{command}`"),
            Widened::Args {
                command,
                prefix: Some(p),
            } => format!("arguments {p:?} to `{command}`"),
            Widened::CommandEnv { command, name } => {
                format!("environment variable {name:?} for `{command}`")
            }
            Widened::Limit {
                name,
                before,
                after: None,
            } => format!("limits.{name} removed (the baseline sets {before})"),
            Widened::Limit {
                name,
                before,
                after: Some(a),
            } => format!("limits.{name} raised from {before} to {a}"),
            Widened::Enforcement => {
                "enforcement weakened from \"required\" to \"best_effort\"".into()
            }
            Widened::Extra { key, detail } => format!("{key}: {detail}"),
        }
    }
}

/// Every capability `new` grants that `old` does not. Empty means `new` is
/// within `old` (narrowing, or the same). Both IRs must be lowered with the
/// same options (workspace, home, OS, mode) for paths to compare.
pub fn widenings(old: &Ir, new: &Ir) -> Vec<Widening> {
    let mut out = fs::widenings(old, new);
    out.extend(net::widenings(old, new));
    out.extend(process::env(old, new));
    out.extend(process::commands(old, new));
    out.extend(process::limits(old, new));
    out.extend(extras::widenings(old, new));
    // A new command brings read + execute on its executable: one widening.
    let new_cmds: Vec<String> = out
        .iter()
        .filter_map(|w| match &w.widened {
            Widened::Command { name } => Some(name.clone()),
            _ => None,
        })
        .collect();
    out.retain(|w| {
        !matches!(&w.origin, Some(Origin::Fs { source: crate::ir::Source::Command { name }, .. }) if new_cmds.contains(name))
    });
    out
}
