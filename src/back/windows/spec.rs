//! The Windows artifact's types. The loader (`sbx run`) deserialises these
//! same types, so what is emitted is exactly what is applied.

use super::TARGET;
use crate::ir::{self, Access, Enforcement, PathKind, PathMode, Precision, Roots};
use serde::{Deserialize, Serialize};

/// `required`: the loader fails (exit 125, nothing run) when it cannot apply
/// or confirm the feature. `best_effort`: it warns and goes on.
pub type Requirement = Enforcement;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub sbx: u32,
    pub policy_hash: String,
    pub target: String,
    pub sbx_version: String,
    pub enforcement: Enforcement,
    pub mode: PathMode,
    /// Absolute in resolved mode, `${WORKSPACE}`-style in portable mode.
    pub roots: Roots,
    pub program: Program,
    pub env: EnvSpec,
    pub job: Job,
    pub token: Option<Token>,
    pub appcontainer: Option<AppContainer>,
    pub precision: Vec<Precision>,
}

/// What to run. `compile` leaves `path` and `argv` empty: `sbx run -- CMD`
/// fills them in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    pub path: Option<String>,
    pub argv: Vec<String>,
    pub cwd: String,
}

/// The environment block is built at run time from the parent's variables:
/// only names matching `minimal` or `allow` are kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    /// Windows variable names are case-insensitive (`Path` is `PATH`).
    pub case_insensitive: bool,
    pub minimal: Vec<String>,
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Applies to the flags below; the child's assignment to the job is
    /// always required.
    pub requirement: Requirement,
    /// Always true: closing the job (sbx exiting) kills the whole tree.
    pub kill_on_job_close: bool,
    pub die_on_unhandled_exception: bool,
    pub breakaway: Breakaway,
    pub active_process_limit: Option<Limit<u32>>,
    /// Committed memory; whole MiB, so already page-aligned.
    pub process_memory_limit_bytes: Option<Limit<u64>>,
    pub job_memory_limit_bytes: Option<Limit<u64>>,
    /// User-mode CPU time per process, in 100 ns units.
    pub per_process_user_time_100ns: Option<Limit<u64>>,
    /// Enforced by the loader, not by the job: it terminates the job.
    pub wall_time_ms: Option<Limit<u64>>,
    pub ui_restrictions: Option<Limit<Vec<UiRestriction>>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit<T> {
    pub value: T,
    pub requirement: Requirement,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Breakaway {
    /// Children can never leave the job.
    Deny,
    /// `CREATE_BREAKAWAY_FROM_JOB` is honoured.
    Allow,
    /// Children are never added to the job.
    Silent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UiRestriction {
    Handles,
    ReadClipboard,
    WriteClipboard,
    SystemParameters,
    DisplaySettings,
    GlobalAtoms,
    Desktop,
    ExitWindows,
}

impl UiRestriction {
    pub const ALL: [UiRestriction; 8] = [
        UiRestriction::Handles,
        UiRestriction::ReadClipboard,
        UiRestriction::WriteClipboard,
        UiRestriction::SystemParameters,
        UiRestriction::DisplaySettings,
        UiRestriction::GlobalAtoms,
        UiRestriction::Desktop,
        UiRestriction::ExitWindows,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UiRestriction::Handles => "handles",
            UiRestriction::ReadClipboard => "read_clipboard",
            UiRestriction::WriteClipboard => "write_clipboard",
            UiRestriction::SystemParameters => "system_parameters",
            UiRestriction::DisplaySettings => "display_settings",
            UiRestriction::GlobalAtoms => "global_atoms",
            UiRestriction::Desktop => "desktop",
            UiRestriction::ExitWindows => "exit_windows",
        }
    }

    pub fn from_name(s: &str) -> Option<UiRestriction> {
        UiRestriction::ALL.into_iter().find(|u| u.name() == s)
    }
}

/// A restricted copy of the caller's primary token for the child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    pub requirement: Requirement,
    pub flags: Vec<TokenFlag>,
    /// Privilege names (`SeDebugPrivilege`); listed explicitly because
    /// `disable_max_privilege` is not honoured everywhere (Wine).
    pub delete_privileges: Vec<String>,
    /// Well-known SID names (see [`WELL_KNOWN_SIDS`]) made deny-only.
    pub deny_only_sids: Vec<String>,
    /// Well-known SID names; when non-empty every access is checked twice.
    pub restricting_sids: Vec<String>,
    /// `None`: keep the caller's level.
    pub integrity: Option<Integrity>,
}

/// `SANDBOX_INERT` is deliberately absent: it turns off AppLocker/SRP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenFlag {
    DisableMaxPrivilege,
    LuaToken,
    WriteRestricted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Integrity {
    Low,
    Untrusted,
}

/// SID names a spec may use in `deny_only_sids` / `restricting_sids`.
pub const WELL_KNOWN_SIDS: &[&str] = &[
    "administrators",
    "authenticated_users",
    "everyone",
    "interactive",
    "restricted",
    "users",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppContainer {
    pub requirement: Requirement,
    /// Profile name; derived from the policy hash so runs of the same
    /// policy share one profile (and its ACL grants).
    pub name: String,
    pub capabilities: Vec<Capability>,
    /// ACEs for the container SID, applied before the start and removed
    /// after the run.
    pub grants: Vec<AclGrant>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    InternetClient,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclGrant {
    pub path: String,
    pub kind: PathKind,
    /// Rights (names as in the policy: read, create, update, delete, execute).
    pub allow: Access,
    /// Rights the enclosing grant would pass down by inheritance but this
    /// (more specific) rule withholds: written as a deny ACE.
    pub deny: Access,
    pub rule: String,
}

/// Why the loader refuses an artifact before doing anything.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("not a Windows spec: {0}")]
    Json(#[from] serde_json::Error),
    #[error("artifact format {0} is not supported (this sbx reads format {1})")]
    Version(u32, u32),
    #[error("artifact target is {0:?}, not \"windows\"")]
    Target(String),
}

impl Spec {
    /// Parse what `emit` wrote; unknown members are errors so a newer
    /// artifact is never half-applied.
    pub fn from_json(text: &str) -> Result<Spec, LoadError> {
        let spec: Spec = serde_json::from_str(text)?;
        if spec.sbx != ir::FORMAT_VERSION {
            return Err(LoadError::Version(spec.sbx, ir::FORMAT_VERSION));
        }
        if spec.target != TARGET {
            return Err(LoadError::Target(spec.target));
        }
        Ok(spec)
    }
}
