//! `--target ir`: the lowered policy itself as JSON, with the members every
//! JSON artifact carries (CLI.md "Artifacts").

use super::{to_json, write_json, Emitted};
use crate::ir::{Hashes, Ir, Precision};
use serde::Serialize;

/// `target` and `sbx_version` beside the IR's own members (`sbx`,
/// `policy_hash`...): the IR type itself stays what every back end reads.
#[derive(Serialize)]
struct Artifact<'a> {
    target: &'static str,
    sbx_version: &'static str,
    #[serde(flatten)]
    ir: Hashes<'a>,
}

fn artifact<'a>(ir: &'a Ir, ir_hash: &'a str) -> Artifact<'a> {
    Artifact {
        target: "ir",
        sbx_version: env!("CARGO_PKG_VERSION"),
        ir: Hashes {
            ir,
            policy_hash: &ir.policy_hash,
            ir_hash,
        },
    }
}

pub fn emit(ir: &Ir) -> Emitted {
    Emitted {
        text: to_json(&artifact(ir, &ir.ir_hash)),
        precision: ir.precision.clone(),
    }
}

/// [`emit`], the text to `out` as it is written.
pub fn emit_to(ir: &Ir, out: &mut dyn FnMut(&[u8])) -> Vec<Precision> {
    emit_hashed_to(ir, &ir.ir_hash, out)
}

/// [`emit_to`] with `ir_hash` as the IR's hash: one taken while the
/// other targets of the IR are emitted, which do not carry it.
pub fn emit_hashed_to(ir: &Ir, ir_hash: &str, out: &mut dyn FnMut(&[u8])) -> Vec<Precision> {
    write_json(&artifact(ir, ir_hash), out);
    ir.precision.clone()
}
