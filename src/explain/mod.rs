//! `sbx explain`: the cooperative check (RFD 076 layer). May this tool do
//! X, which rule says so, and what does each OS actually enforce for it?
//!
//! Library users (agent hosts, tool runners) call [`explain`] with an IR
//! they lowered for this host; `sbx explain` prints the result.

mod fs;
mod net;
mod process;

pub use crate::lint::enforce::{command_notes, port_notes, Enforced, TargetNote};

use crate::ir::{Access, Ir};
use crate::lint::origin::Origin;
use serde::Serialize;

/// A filesystem operation, each needing one right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FsOp {
    Read,
    /// Modify an existing file (`update`).
    Write,
    Create,
    Delete,
    Exec,
}

impl FsOp {
    pub fn access(self) -> Access {
        let mut a = Access::NONE;
        match self {
            FsOp::Read => a.read = true,
            FsOp::Write => a.update = true,
            FsOp::Create => a.create = true,
            FsOp::Delete => a.delete = true,
            FsOp::Exec => a.execute = true,
        }
        a
    }
    pub fn verb(self) -> &'static str {
        match self {
            FsOp::Read => "read",
            FsOp::Write => "write",
            FsOp::Create => "create",
            FsOp::Delete => "delete",
            FsOp::Exec => "execute",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Query {
    /// `path` as a policy path: relative to the workspace, `~/…`, or absolute.
    Fs { op: FsOp, path: String },
    /// An outbound connection; build it with [`Query::connect`].
    Connect {
        scheme: Option<String>,
        host: String,
        port: u16,
        path: String,
    },
    /// May the child (or, with `command`, that command) receive `name`?
    Env {
        name: String,
        command: Option<String>,
    },
    /// May the tool run this argv?
    Command { argv: Vec<String> },
}

impl Query {
    /// Parse `scheme://host[:port][/path]`, `host:port` or `[v6]:port`.
    /// Without a port, the scheme's (http 80, https 443, ssh 22...) is used.
    pub fn connect(url: &str) -> Result<Query, String> {
        net::parse(url)
    }
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    pub allowed: bool,
    /// The request in words: `read /w/src/main.rs`.
    pub request: String,
    /// The rule that decided; `None` when nothing matched (default deny).
    pub rule: Option<Origin>,
    pub reason: String,
    /// RFD D43: the request goes through an approved external rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boundary: Option<Boundary>,
    /// What each OS target enforces for this request.
    pub targets: Vec<TargetNote>,
}

/// The nested-escape boundary of an external rule: accesses through the
/// rule must stay under its approved canonical target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Boundary {
    /// The rule's path as written (relative to the workspace).
    pub rule_path: String,
    pub canonical_target: String,
    /// Where the requested path really is.
    pub resolved: String,
    pub inside: bool,
}

pub fn explain(ir: &Ir, q: &Query) -> Explanation {
    match q {
        Query::Fs { op, path } => fs::explain(ir, *op, path),
        Query::Connect {
            scheme,
            host,
            port,
            path,
        } => net::explain(ir, scheme.as_deref(), host, *port, path),
        Query::Env { name, command } => process::env(ir, name, command.as_deref()),
        Query::Command { argv } => process::command(ir, argv),
    }
}
