//! `--target ir`: the lowered policy itself as JSON, with the members every
//! JSON artifact carries (CLI.md "Artifacts").

use super::{to_json, write_json, Emitted};
use crate::ir::{Ir, Precision};
use serde::Serialize;

/// `target` and `sbx_version` beside the IR's own members (`sbx`,
/// `policy_hash`...): the IR type itself stays what every back end reads.
#[derive(Serialize)]
struct Artifact<'a> {
    target: &'static str,
    sbx_version: &'static str,
    #[serde(flatten)]
    ir: &'a Ir,
}

fn artifact(ir: &Ir) -> Artifact<'_> {
    Artifact {
        target: "ir",
        sbx_version: env!("CARGO_PKG_VERSION"),
        ir,
    }
}

pub fn emit(ir: &Ir) -> Emitted {
    Emitted {
        text: to_json(&artifact(ir)),
        precision: ir.precision.clone(),
    }
}

/// [`emit`], the text to `out` as it is written.
pub fn emit_to(ir: &Ir, out: &mut dyn FnMut(&[u8])) -> Vec<Precision> {
    write_json(&artifact(ir), out);
    ir.precision.clone()
}
