//! Loaders: apply an artifact to a child process on this OS and run it.

pub mod denials;
pub mod env;
pub mod expand;
#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(unix)]
pub mod macos;
#[cfg(unix)]
pub mod proxy;
pub mod windows;

/// `sbx run` exit code when sbx itself failed or the sandbox could not be
/// applied as required (nothing was run).
pub const EXIT_SBX_FAILED: i32 = 125;
/// The command was found but could not be executed.
pub const EXIT_NOT_EXECUTABLE: i32 = 126;
/// The command was not found.
pub const EXIT_NOT_FOUND: i32 = 127;
