// Diagnostics are only built on the error path; boxing them buys nothing.
#![allow(clippy::result_large_err)]

//! sbx: one declarative sandbox policy, compiled for every OS.
//!
//! Data flows one way: `policy` (TOML, schema, layers) → `lower` → [`ir`] →
//! `back` (SBPL, Landlock, Windows) → `runtime` (apply and exec).

pub mod approvals;
pub mod atomic;
pub mod back;
pub mod compile;
pub mod diag;
pub mod explain;
pub mod external;
#[doc(hidden)]
pub mod fuzzing;
pub mod ir;
pub mod lint;
pub mod lower;
pub mod policy;
pub mod runtime;
pub mod sbpl;

pub use compile::{compile, Inputs, Options, Output, Target};
pub use ir::Ir;
