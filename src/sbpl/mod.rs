//! SBPL (macOS sandbox profile language): reader, validation, string escaping
//! and a file-operation evaluator used as a test oracle for the SBPL emitter.

mod datum;
mod escape;
mod parse;

pub use datum::{Datum, DatumKind, Span};
pub use escape::{escape_string, EscapeError, MAX_LITERAL_BYTES};
pub use parse::{parse, SyntaxError, MAX_DEPTH};
