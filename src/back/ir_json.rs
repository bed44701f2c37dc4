//! `--target ir`: the lowered policy itself as JSON.

use super::{to_json, Emitted};
use crate::ir::Ir;

pub fn emit(ir: &Ir) -> Emitted {
    Emitted {
        text: to_json(ir),
        precision: ir.precision.clone(),
    }
}
