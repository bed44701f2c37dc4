//! SBPL (macOS sandbox profile language): reader, validation, string escaping
//! and a file-operation evaluator used as a test oracle for the SBPL emitter.

mod check;
mod datum;
mod escape;
mod eval;
mod names;
mod parse;
mod pattern;

pub use check::{check, check_file, check_source, has_errors, Finding, Severity};
pub use datum::{Datum, DatumKind, Span};
pub use escape::{escape_into, escape_string, printable_ascii, EscapeError, MAX_LITERAL_BYTES};
pub use eval::{Action, Connect, Decision, FileOp, Profile, ProfileError};
pub use parse::{parse, SyntaxError, MAX_DEPTH};
