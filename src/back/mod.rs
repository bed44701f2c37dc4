//! Back ends: one emitter per target, each reading only the IR.

use crate::ir::{Ir, Precision};
use serde::Serialize;

pub mod ir_json;
pub mod landlock;
pub mod sbpl;
pub mod windows;

/// What an emitter produces: the artifact text and the precision report
/// lines it added (already embedded in the text for JSON artifacts).
#[derive(Debug, Clone)]
pub struct Emitted {
    pub text: String,
    pub precision: Vec<Precision>,
}

/// An input that a target cannot represent safely (a path with a control
/// character, an over-long literal...). Emitters refuse rather than write a
/// truncated or unescaped string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule}: {message}")]
pub struct EmitError {
    /// The rule's label, see [`crate::ir::Source::label`].
    pub rule: String,
    pub message: String,
}

/// Serialise a JSON artifact deterministically (struct field order, sorted
/// lists, two-space indent, trailing newline).
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("artifact types serialise");
    s.push('\n');
    s
}

/// The members every JSON artifact starts with (CLI.md "Artifacts").
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Header {
    pub sbx: u32,
    pub policy_hash: String,
    pub target: String,
    pub sbx_version: String,
}

impl Header {
    pub fn new(ir: &Ir, target: &str) -> Header {
        Header {
            sbx: crate::ir::FORMAT_VERSION,
            policy_hash: ir.policy_hash.clone(),
            target: target.to_string(),
            sbx_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}
