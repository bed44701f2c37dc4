//! sbx: one declarative sandbox policy, compiled for every OS.
//!
//! Data flows one way: `policy` (TOML, schema, layers) → `lower` → [`ir`] →
//! `back` (SBPL, Landlock, Windows) → `runtime` (apply and exec).

pub mod back;
pub mod diag;
pub mod ir;
pub mod policy;
pub mod runtime;
