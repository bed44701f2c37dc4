//! Back ends: one emitter per target, each reading only the IR.

use crate::ir::{Ir, Precision};
use serde::Serialize;
use std::io::Write;

pub mod ir_json;
pub mod landlock;
pub(crate) mod roots;
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

/// [`to_json`], handed to `out` piece by piece as it is serialised.
pub fn write_json<T: Serialize>(value: &T, out: &mut dyn FnMut(&[u8])) {
    // serde_json writes a few bytes at a time.
    let mut w = std::io::BufWriter::with_capacity(1 << 16, Pieces(out));
    serde_json::to_writer_pretty(&mut w, value).expect("artifact types serialise");
    w.write_all(b"\n")
        .and_then(|()| w.flush())
        .expect("Pieces takes everything");
}

/// An `emit_to`'s text, collected: `emit` is `emit_to` into a String.
/// `capacity`: the expected size (doubling a large buffer leaves each
/// smaller copy behind as resident freed heap).
pub(crate) fn collect<E>(
    capacity: usize,
    emit_to: impl FnOnce(&mut dyn FnMut(&[u8])) -> Result<Vec<Precision>, E>,
) -> Result<Emitted, E> {
    let mut buf = Vec::with_capacity(capacity);
    let precision = emit_to(&mut |b| buf.extend_from_slice(b))?;
    let text = String::from_utf8(buf).expect("emitters write UTF-8");
    Ok(Emitted { text, precision })
}

/// `out` as an `io::Write` that takes everything.
pub(crate) struct Pieces<'a>(pub &'a mut dyn FnMut(&[u8]));

impl std::io::Write for Pieces<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        (self.0)(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
