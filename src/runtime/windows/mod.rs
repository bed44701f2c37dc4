//! The Windows loader: apply a [`Spec`](crate::back::windows::Spec) to a
//! child and run it (`sbx run` on Windows).
//!
//! Order: refuse what `required` cannot have; build the environment; create
//! the job, set its limits and read them back; build the token or the
//! AppContainer and read those back; only then start the child (suspended,
//! in the job, stdio the only inherited handles), resume it, and wait with
//! the wall-time limit. The job is terminated when the child exits, when
//! the time is up, and (kill-on-close) when sbx itself dies.

pub mod cmdline;
pub mod plan;

#[cfg(windows)]
mod appcontainer;
#[cfg(windows)]
mod job;
#[cfg(windows)]
mod run;
#[cfg(windows)]
mod spawn;
#[cfg(windows)]
mod token;
#[cfg(windows)]
mod win;

#[cfg(windows)]
pub use run::run;

use std::path::PathBuf;

/// `sbx run`'s exit code when the wall-time limit killed the tree, as a
/// SIGKILL would be reported on Unix (128 + 9).
pub const EXIT_WALL_TIME: i32 = 137;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--workspace`; else the current directory. Fills `${WORKSPACE}`.
    pub workspace: Option<PathBuf>,
    /// `--report`: print what was enforced to stderr before the start.
    pub report: bool,
}
