//! `--target ir`: the lowered policy itself as JSON.

use super::{to_json, write_json, Emitted};
use crate::ir::{Ir, Precision};

pub fn emit(ir: &Ir) -> Emitted {
    Emitted {
        text: to_json(ir),
        precision: ir.precision.clone(),
    }
}

/// [`emit`], the text to `out` as it is written.
pub fn emit_to(ir: &Ir, out: &mut dyn FnMut(&[u8])) -> Vec<Precision> {
    write_json(ir, out);
    ir.precision.clone()
}
