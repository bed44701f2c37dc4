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

/// sbx's user-local state: `$XDG_STATE_HOME/sbx`, else
/// `~/.local/state/sbx` (`%LOCALAPPDATA%\sbx` on Windows). It holds the
/// approvals store and the after-run journal; `sbx run` keeps it
/// read-only to the command (POLICY.md §13).
pub fn state_dir() -> Option<camino::Utf8PathBuf> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if cfg!(windows) {
        return var("LOCALAPPDATA").map(|d| camino::Utf8PathBuf::from(d).join("sbx"));
    }
    if let Some(x) = var("XDG_STATE_HOME") {
        return Some(camino::Utf8PathBuf::from(x).join("sbx"));
    }
    var("HOME").map(|h| camino::Utf8PathBuf::from(h).join(".local/state/sbx"))
}
