// Diagnostics are only built on the error path; boxing them buys nothing.
#![allow(clippy::result_large_err)]

//! sbx: one declarative sandbox policy, compiled for every OS.
//!
//! # The pipeline
//!
//! Data flows one way, one stage per folder:
//!
//! 1. [`policy`] (`src/policy/`): read each TOML file, check it against the
//!    schema and the semantic rules, merge the layers left to right. Also
//!    the policy's defaults (presets, the minimal environment).
//! 2. [`lower`] (`src/lower/`): the merged policy, in the user's terms,
//!    becomes the [`Ir`]: paths made absolute, presets expanded, commands
//!    found on `PATH`, external rules resolved and checked against the
//!    approvals.
//! 3. [`ir`] (`src/ir.rs`): the lowered policy, plain data.
//! 4. [`back`] (`src/back/`): one emitter per target, each reading only the
//!    IR: `back::sbpl` (macOS profile), `back::landlock` (Linux JSON and
//!    landlockconfig), `back::windows` (job, token and AppContainer spec),
//!    `back::ir_json` (the IR itself).
//! 5. [`runtime`] (`src/runtime/`): `sbx run`'s loaders, which apply an
//!    artifact to a child process on this OS and exec it.
//!
//! [`mod@compile`] (`src/compile.rs`) drives stages 1 to 4 and is the library
//! API. Above it sit [`lint`] (`sbx check`), [`explain`] (`sbx explain`),
//! the approvals store ([`approvals`]) and the commands that edit it and
//! policies ([`external`]: `sbx mount`, `sbx approve`); the CLI is in
//! `src/cli/`. Beside the pipeline: [`diag`] (located, coded diagnostics),
//! [`sbpl`] (an SBPL reader and evaluator, the oracle for the macOS back
//! end) and [`atomic`] (crash-safe file replacement).
//!
//! A module only uses the modules below it in this order; `tests/layers.rs`
//! fails on any use that goes up.
//!
//! # The IR's rules
//!
//! - Paths are absolute and normalised: host paths in resolved mode,
//!   `${WORKSPACE}`, `${HOME}` or `${TMPDIR}` first in portable mode.
//!   Aliases carry the other spellings the OS may see (`/tmp` and
//!   `/private/tmp`).
//! - Most-specific-wins: the grant with the longest component-wise prefix
//!   of a path decides it ([`Ir::decide`]). A narrower grant may give less
//!   than the one above it; back ends must keep that.
//! - Sorted, with no hash maps: the same inputs give byte-identical IR and
//!   artifacts. Grants are sorted by path.
//! - Precision notes: where a target cannot enforce a rule as written, the
//!   report says so (exact, wider, narrower, unsupported, dropped). The IR
//!   holds lowering's notes (target `ir`); each back end adds its own.
//!   Under `enforcement = "required"`, [`compile()`] refuses any inexact
//!   one.
//!
//! # What each back end reads
//!
//! | back end | reads from the IR |
//! |---|---|
//! | `sbpl` | `fs`, `net`, `env`, `commands`, `limits`, `macos`, `mode` |
//! | `landlock` | `fs`, `net`, `env`, `commands`, `limits`, `linux`, `mode`, `enforcement`, `precision` |
//! | `windows` | `fs`, `net`, `env`, `commands`, `limits`, `windows`, `roots`, `mode`, `enforcement`, `precision` |
//! | `ir_json` | all of it |
//!
//! The loaders read the artifacts, not the IR: Linux and Windows
//! deserialise the back ends' own types, and macOS hands the profile to
//! `sandbox-exec`.

mod allocator;
pub mod approvals;
pub mod atomic;
pub mod back;
pub mod canonical;
pub mod compile;
pub mod diag;
pub mod dirents;
pub mod explain;
pub mod external;
#[doc(hidden)]
pub mod fuzzing;
mod hashed;
pub mod ir;
pub mod learn;
pub mod lint;
pub mod lower;
pub mod policy;
pub mod runtime;
pub mod sbpl;
#[cfg(test)]
mod testing;

pub use compile::{compile, Inputs, Options, Output, Target};
pub use ir::Ir;
