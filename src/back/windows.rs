//! `--target windows`: a JSON job-object / token / AppContainer spec.
//!
//! The Windows loader (`sbx run`) deserialises these same types, so what is
//! emitted here is exactly what is applied. Enums are written as names, never
//! as raw flag values; the mapping to `JOB_OBJECT_*` lives in the loader.

use super::{collect, write_json, EmitError, Emitted, Header};
use crate::ir::{
    self, Access, Enforcement, Ir, PathKind, PathMode, Ports, Precision, Roots, Status,
};
use crate::runtime::env::MINIMAL_WINDOWS;
use serde::{Deserialize, Serialize};

pub const TARGET: &str = "windows";

/// Longest path Windows accepts (with the `\\?\` prefix), in UTF-16 units.
const MAX_PATH_UNITS: usize = 32_767;

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

/// Privileges removed from the restricted token. Windows drops them all with
/// `disable_max_privilege` anyway; the list makes the removal explicit.
const DELETE_PRIVILEGES: &[&str] = &[
    "SeAssignPrimaryTokenPrivilege",
    "SeBackupPrivilege",
    "SeCreateGlobalPrivilege",
    "SeCreatePagefilePrivilege",
    "SeCreatePermanentPrivilege",
    "SeCreateSymbolicLinkPrivilege",
    "SeCreateTokenPrivilege",
    "SeDebugPrivilege",
    "SeDelegateSessionUserImpersonatePrivilege",
    "SeEnableDelegationPrivilege",
    "SeImpersonatePrivilege",
    "SeIncreaseBasePriorityPrivilege",
    "SeIncreaseQuotaPrivilege",
    "SeLoadDriverPrivilege",
    "SeLockMemoryPrivilege",
    "SeMachineAccountPrivilege",
    "SeManageVolumePrivilege",
    "SeProfileSingleProcessPrivilege",
    "SeRelabelPrivilege",
    "SeRemoteShutdownPrivilege",
    "SeRestorePrivilege",
    "SeSecurityPrivilege",
    "SeShutdownPrivilege",
    "SeSyncAgentPrivilege",
    "SeSystemEnvironmentPrivilege",
    "SeSystemProfilePrivilege",
    "SeSystemtimePrivilege",
    "SeTakeOwnershipPrivilege",
    "SeTcbPrivilege",
    "SeTimeZonePrivilege",
    "SeTrustedCredManAccessPrivilege",
    "SeUndockPrivilege",
];

pub fn emit(ir: &Ir) -> Result<Emitted, EmitError> {
    collect(0, |out| emit_to(ir, out))
}

/// [`emit`], the text to `out` as it is written.
pub fn emit_to(ir: &Ir, out: &mut dyn FnMut(&[u8])) -> Result<Vec<Precision>, EmitError> {
    let req = ir.enforcement;
    check_paths(ir)?;
    let mut notes = Notes::default();

    let job = job(ir, &mut notes)?;
    let token = token(ir)?;
    let appcontainer = ir.windows.appcontainer.then(|| appcontainer(ir, req));
    fs_notes(ir, token.as_ref(), appcontainer.as_ref(), &mut notes);
    net_notes(ir, appcontainer.is_some(), &mut notes);
    if ir.commands.is_some() {
        notes.add(
            "commands",
            Status::Wider,
            "no exec allow-list on Windows: the child may start any program its token \
             can run; [commands] is cooperative only",
        );
    }

    let header = Header::new(ir, TARGET);
    let mut precision = ir.precision.clone();
    let from_ir = precision.len();
    precision.append(&mut notes.0);
    let mut spec = Spec {
        sbx: header.sbx,
        policy_hash: header.policy_hash,
        target: header.target,
        sbx_version: header.sbx_version,
        enforcement: req,
        mode: ir.mode,
        roots: ir.roots.clone(),
        program: Program {
            path: None,
            argv: Vec::new(),
            cwd: ir.roots.workspace.clone(),
        },
        env: env(&ir.env),
        job,
        token,
        appcontainer,
        precision,
    };
    write_json(&spec, out);
    // This back end's own lines, moved rather than copied.
    Ok(spec.precision.split_off(from_ir))
}

/// Report lines in insertion order, deduplicated through a map from each
/// line's hash to where lines with that hash are: linear overall (a scan
/// per line was quadratic, minutes for 100,000 rules) without a second
/// copy of every line.
#[derive(Default)]
struct Notes(Vec<Precision>, std::collections::HashMap<u64, Vec<usize>>);

impl Notes {
    /// Presets give several grants one label: report each line once.
    fn add(&mut self, rule: impl Into<String>, status: Status, reason: impl Into<String>) {
        use std::hash::{Hash, Hasher};
        let p = Precision {
            rule: rule.into(),
            target: TARGET.into(),
            status,
            reason: reason.into(),
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&p.rule, std::mem::discriminant(&p.status), &p.reason).hash(&mut h);
        let same = self.1.entry(h.finish()).or_default();
        if same.iter().all(|&i| self.0[i] != p) {
            same.push(self.0.len());
            self.0.push(p);
        }
    }
}

fn err(rule: &str, message: impl Into<String>) -> EmitError {
    EmitError {
        rule: rule.into(),
        message: message.into(),
    }
}

/// Windows paths cannot hold NUL or control characters; refuse rather than
/// hand the loader a string it would truncate.
fn check_path(rule: &str, p: &str) -> Result<(), EmitError> {
    if let Some(c) = p.chars().find(|c| c.is_control()) {
        return Err(err(
            rule,
            format!(
                "path {p:?} contains the control character {c:?}, which Windows paths cannot hold"
            ),
        ));
    }
    if p.encode_utf16().count() > MAX_PATH_UNITS {
        return Err(err(
            rule,
            format!("path is longer than Windows allows ({MAX_PATH_UNITS} UTF-16 units)"),
        ));
    }
    Ok(())
}

fn check_paths(ir: &Ir) -> Result<(), EmitError> {
    check_path("workspace", &ir.roots.workspace)?;
    for g in &ir.fs {
        check_path(&g.source.label(), &g.path)?;
    }
    for pat in ir.env.minimal.iter().chain(&ir.env.allow) {
        if pat.is_empty() || pat.contains('=') || pat.chars().any(|c| c.is_control()) {
            return Err(err(
                "env",
                format!("{pat:?} cannot name a Windows environment variable"),
            ));
        }
    }
    Ok(())
}

fn env(env: &ir::Env) -> EnvSpec {
    let mut minimal = env.minimal.clone();
    for name in MINIMAL_WINDOWS {
        if !minimal.iter().any(|m| m.eq_ignore_ascii_case(name)) {
            minimal.push(name.to_string());
        }
    }
    EnvSpec {
        case_insensitive: true,
        minimal,
        allow: env.allow.clone(),
    }
}

fn job(ir: &Ir, notes: &mut Notes) -> Result<Job, EmitError> {
    let req = ir.enforcement;
    fn lim<T>(value: T, requirement: Requirement) -> Limit<T> {
        Limit { value, requirement }
    }
    let l = &ir.limits;

    let active_process_limit = match l.max_processes {
        None => None,
        Some(0) => return Err(err("limits.max_processes", "must be at least 1")),
        Some(n) => {
            let n = u32::try_from(n)
                .map_err(|_| err("limits.max_processes", "larger than a job allows (2^32-1)"))?;
            notes.add(
                "limits.max_processes",
                Status::Exact,
                "job ActiveProcessLimit (counts every live process in the tree)",
            );
            Some(lim(n, req))
        }
    };
    let process_memory_limit_bytes = match l.max_memory_mib {
        None => None,
        Some(mib) => {
            let b = mib
                .checked_mul(1 << 20)
                .ok_or_else(|| err("limits.max_memory_mib", "too large"))?;
            notes.add(
                "limits.max_memory_mib",
                Status::Exact,
                "job ProcessMemoryLimit (committed memory per process)",
            );
            Some(lim(b, req))
        }
    };
    let per_process_user_time_100ns = match l.cpu_time_s {
        None => None,
        Some(s) => {
            let t = s
                .checked_mul(10_000_000)
                .filter(|t| *t <= i64::MAX as u64)
                .ok_or_else(|| err("limits.cpu_time_s", "too large"))?;
            notes.add(
                "limits.cpu_time_s",
                Status::Wider,
                "job PerProcessUserTimeLimit counts user-mode CPU time only; kernel time is free",
            );
            Some(lim(t, req))
        }
    };
    let wall_time_ms = match l.wall_time_s {
        None => None,
        Some(s) => {
            let ms = s
                .checked_mul(1000)
                .ok_or_else(|| err("limits.wall_time_s", "too large"))?;
            notes.add(
                "limits.wall_time_s",
                Status::Exact,
                "the loader terminates the job when the time is up",
            );
            Some(lim(ms, req))
        }
    };

    let mut ui = Vec::new();
    for name in &ir.windows.ui_restrictions {
        let u = UiRestriction::from_name(name).ok_or_else(|| {
            let known: Vec<_> = UiRestriction::ALL.iter().map(|u| u.name()).collect();
            err(
                "windows.ui_restrictions",
                format!(
                    "unknown UI restriction {name:?} (known: {})",
                    known.join(", ")
                ),
            )
        })?;
        if !ui.contains(&u) {
            ui.push(u);
        }
    }
    ui.sort();
    let ui_restrictions = if ui.is_empty() {
        None
    } else {
        notes.add(
            "windows.ui_restrictions",
            Status::Exact,
            "job UI restrictions; note that a job with UI limits cannot nest inside another job \
             (some CI runners and terminals start processes in one)",
        );
        Some(lim(ui, req))
    };

    if !ir.windows.kill_on_close {
        notes.add(
            "windows.kill_on_close",
            Status::Narrower,
            "kill_on_close = false is not honoured: the job always kills the process tree \
             when sbx exits",
        );
    }

    Ok(Job {
        requirement: req,
        kill_on_job_close: true,
        die_on_unhandled_exception: true,
        breakaway: Breakaway::Deny,
        active_process_limit,
        process_memory_limit_bytes,
        job_memory_limit_bytes: None,
        per_process_user_time_100ns,
        wall_time_ms,
        ui_restrictions,
    })
}

fn token(ir: &Ir) -> Result<Option<Token>, EmitError> {
    let integrity = match ir.windows.token.as_str() {
        "none" => return Ok(None),
        "restricted" => None,
        "low_integrity" => Some(Integrity::Low),
        other => {
            return Err(err(
                "windows.token",
                format!("unknown token mode {other:?} (known: restricted, low_integrity, none)"),
            ))
        }
    };
    Ok(Some(Token {
        requirement: ir.enforcement,
        flags: vec![TokenFlag::DisableMaxPrivilege, TokenFlag::LuaToken],
        delete_privileges: DELETE_PRIVILEGES.iter().map(|s| s.to_string()).collect(),
        deny_only_sids: vec!["administrators".into()],
        // Restricting SIDs break unmodified programs unless every path they
        // touch is re-ACLed; the AppContainer mode is the per-path option.
        restricting_sids: Vec::new(),
        integrity,
    }))
}

/// The AppContainer profile: network capability only when the policy allows
/// outbound traffic, and one ACL grant per filesystem rule.
fn appcontainer(ir: &Ir, req: Requirement) -> AppContainer {
    let capabilities = if ir.net.connect != Ports::None {
        vec![Capability::InternetClient]
    } else {
        Vec::new()
    };
    let grants = ir
        .fs
        .iter()
        .filter(|g| placement(ir, g) == Placement::Acl)
        .map(|g| {
            let parent = enclosing(ir, &g.path).unwrap_or_default();
            AclGrant {
                path: g.path.clone(),
                kind: g.kind,
                allow: g.access,
                deny: parent.minus(g.access),
                rule: g.source.label(),
            }
        })
        .collect();
    // Named after the lowered IR, not the policy: one policy used in two
    // workspaces gets two containers, so ACL grants made for one workspace
    // never serve the other.
    let hash: String = ir
        .ir_hash
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(16)
        .collect();
    AppContainer {
        requirement: req,
        name: format!("sbx.{hash}"),
        capabilities,
        grants,
    }
}

/// Directories every AppContainer may already read and execute from.
const READABLE_BY_ALL_PACKAGES: &[&str] =
    &["C:/Windows", "C:/Program Files", "C:/Program Files (x86)"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Under the workspace, home or temp: sbx adds ACEs for the container.
    Acl,
    /// Read-only grant on a system directory ALL APPLICATION PACKAGES can
    /// already read: nothing to change.
    ReadableByAll,
    /// Elsewhere: sbx does not rewrite ACLs of system or shared locations.
    Outside,
}

fn placement(ir: &Ir, g: &ir::Grant) -> Placement {
    // An approved external target (RFD D43): the user consented to this
    // directory by approving it, so it is re-ACLed like the workspace.
    if g.external.is_some() {
        return Placement::Acl;
    }
    let r = &ir.roots;
    if [&r.workspace, &r.home, &r.temp]
        .iter()
        .any(|root| ir::path_within(&g.path, root))
    {
        return Placement::Acl;
    }
    let lower = g.path.to_ascii_lowercase();
    let system = READABLE_BY_ALL_PACKAGES
        .iter()
        .any(|d| ir::path_within(&lower, &d.to_ascii_lowercase()));
    if system && Access::READ_EXEC.contains(g.access) {
        Placement::ReadableByAll
    } else {
        Placement::Outside
    }
}

/// The rights a path would inherit from the closest grant strictly above it.
fn enclosing(ir: &Ir, path: &str) -> Option<Access> {
    ir.fs
        .iter()
        .filter(|p| p.path != path && ir::path_within(path, &p.path))
        .max_by_key(|p| p.path.len())
        .map(|p| p.access)
}

fn fs_notes(ir: &Ir, token: Option<&Token>, ac: Option<&AppContainer>, notes: &mut Notes) {
    if ac.is_some() {
        notes.add(
            "fs",
            Status::Wider,
            "an AppContainer can also read what ALL APPLICATION PACKAGES may read \
             (the Windows directory, Program Files)",
        );
        for g in &ir.fs {
            let a = g.access;
            match placement(ir, g) {
                Placement::Acl => {}
                Placement::ReadableByAll => {
                    notes.add(
                        g.source.label(),
                        Status::Exact,
                        "readable by ALL APPLICATION PACKAGES already; no ACL change",
                    );
                    continue;
                }
                Placement::Outside => {
                    notes.add(
                        g.source.label(),
                        Status::Narrower,
                        "sbx changes ACLs only under the workspace, home and temp \
                         directories; elsewhere the container has only what the existing \
                         ACL gives AppContainers",
                    );
                    continue;
                }
            }
            if a.create != a.update {
                notes.add(
                    g.source.label(),
                    Status::Wider,
                    "NTFS uses one bit for adding a file to a directory and writing file data: \
                     create and update are granted together",
                );
            } else {
                notes.add(
                    g.source.label(),
                    Status::Exact,
                    "ACL grant to the AppContainer SID",
                );
            }
        }
        return;
    }
    let low = token.is_some_and(|t| t.integrity.is_some());
    for g in &ir.fs {
        notes.add(
            g.source.label(),
            Status::Wider,
            "no per-path filesystem enforcement with a job alone: the child reads (and, unless \
             the token is low integrity, writes) whatever the user can; set \
             windows.appcontainer = true for ACL-based grants",
        );
        if low && g.access.writes() {
            notes.add(
                g.source.label(),
                Status::Narrower,
                "a low-integrity token cannot write where the integrity label is medium \
                 (most user files), whatever this rule grants",
            );
        }
    }
}

fn net_notes(ir: &Ir, ac: bool, notes: &mut Notes) {
    let n = &ir.net;
    let open = n.connect == Ports::All && n.bind == Ports::All && n.other_protocols;
    let closed = n.connect == Ports::None && n.bind == Ports::None && !n.other_protocols;
    if !ac {
        if closed {
            notes.add(
                "net",
                Status::Unsupported,
                "network deny needs AppContainer (windows.appcontainer = true): a job or a \
                 restricted token does not block the network",
            );
        } else if !open {
            notes.add(
                "net",
                Status::Wider,
                "no network filtering without AppContainer: all traffic is allowed",
            );
        }
        return;
    }
    if closed {
        notes.add(
            "net",
            Status::Exact,
            "AppContainer without network capabilities: all traffic is dropped, loopback included",
        );
        return;
    }
    for r in &n.rules {
        let label = format!("net[{}] ({}:{}:{})", r.index, r.file, r.line, r.column);
        let loopback = matches!(r.host.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]");
        let (status, reason) = if !r.allow {
            (
                Status::Unsupported,
                "deny rules cannot be expressed with AppContainer capabilities",
            )
        } else if r.bind {
            (
                Status::Narrower,
                "listening needs internetClientServer, which sbx does not grant",
            )
        } else if loopback {
            (
                Status::Narrower,
                "an AppContainer cannot reach loopback, even with internetClient",
            )
        } else if r.host == "*" && r.port.is_none() {
            (
                Status::Exact,
                "internetClient: outbound to the Internet (private networks excluded)",
            )
        } else {
            (
                Status::Wider,
                "internetClient allows outbound traffic to any host and port; host and port \
                 filtering is cooperative only",
            )
        };
        notes.add(label, status, reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::*;

    pub(crate) fn base() -> Ir {
        Ir {
            policy_hash: "sha256:00ff".into(),
            fs: vec![Grant {
                path: "${WORKSPACE}".into(),
                access: Access::READ_WRITE,
                kind: PathKind::Unknown,
                source: Source::Default,
                aliases: vec![],
                external: None,
            }],
            env: Env {
                minimal: vec!["PATH".into(), "HOME".into()],
                allow: vec!["AWS_*".into()],
            },
            ..Ir::deny_all(Os::Windows, PathMode::Portable, Roots::portable())
        }
    }

    fn spec(ir: &Ir) -> Spec {
        Spec::from_json(&emit(ir).unwrap().text).unwrap()
    }

    #[test]
    fn round_trips_through_the_loader_types() {
        let mut ir = base();
        ir.limits = Limits {
            max_processes: Some(4),
            max_memory_mib: Some(64),
            cpu_time_s: Some(2),
            wall_time_s: Some(3),
        };
        ir.windows.ui_restrictions = vec!["desktop".into(), "handles".into()];
        let s = spec(&ir);
        assert!(s.job.kill_on_job_close);
        assert_eq!(s.job.active_process_limit.unwrap().value, 4);
        assert_eq!(s.job.process_memory_limit_bytes.unwrap().value, 64 << 20);
        assert_eq!(s.job.per_process_user_time_100ns.unwrap().value, 20_000_000);
        assert_eq!(s.job.wall_time_ms.unwrap().value, 3000);
        assert_eq!(
            s.job.ui_restrictions.unwrap().value,
            [UiRestriction::Handles, UiRestriction::Desktop]
        );
        assert_eq!(s.program.cwd, "${WORKSPACE}");
    }

    #[test]
    fn env_adds_what_windows_needs_once() {
        let mut ir = base();
        ir.env.minimal.push("systemroot".into());
        let s = spec(&ir);
        assert!(s.env.case_insensitive);
        assert_eq!(
            s.env.minimal,
            [
                "PATH",
                "HOME",
                "systemroot",
                "windir",
                "TEMP",
                "TMP",
                "COMSPEC",
                "PATHEXT"
            ]
        );
        assert_eq!(s.env.allow, ["AWS_*"]);
    }

    #[test]
    fn requirement_follows_enforcement() {
        let mut ir = base();
        ir.enforcement = Enforcement::Required;
        ir.limits.max_processes = Some(2);
        let s = spec(&ir);
        assert_eq!(s.job.requirement, Enforcement::Required);
        assert_eq!(
            s.job.active_process_limit.unwrap().requirement,
            Enforcement::Required
        );
        assert_eq!(s.token.unwrap().requirement, Enforcement::Required);
    }

    #[test]
    fn precision_without_appcontainer() {
        let s = spec(&base());
        let fs = s
            .precision
            .iter()
            .find(|p| p.rule == "default policy")
            .unwrap();
        assert_eq!(fs.status, Status::Wider);
        assert!(fs.reason.contains("no per-path filesystem enforcement"));
        let net = s.precision.iter().find(|p| p.rule == "net").unwrap();
        assert_eq!(net.status, Status::Unsupported);
        assert!(net.reason.contains("network deny needs AppContainer"));
        assert!(s.appcontainer.is_none());
    }

    #[test]
    fn appcontainer_denies_network_and_narrows_by_deny_ace() {
        let mut ir = base();
        ir.windows.appcontainer = true;
        ir.ir_hash = "sha256:00ff".into();
        ir.fs.push(Grant {
            path: "${WORKSPACE}/.git".into(),
            access: Access::READ,
            kind: PathKind::Unknown,
            source: Source::ProcessRoot,
            aliases: vec![],
            external: None,
        });
        let s = spec(&ir);
        let ac = s.appcontainer.unwrap();
        assert!(ac.capabilities.is_empty());
        assert_eq!(ac.name, "sbx.sha25600ff");
        assert_eq!(ac.grants[1].allow, Access::READ);
        assert_eq!(
            ac.grants[1].deny,
            Access::READ_WRITE.minus(Access::READ),
            "the workspace's inherited write must be denied on .git"
        );
        assert_eq!(ac.grants[0].deny, Access::NONE);
        let net = s.precision.iter().find(|p| p.rule == "net").unwrap();
        assert_eq!(net.status, Status::Exact);
    }

    #[test]
    fn approved_external_target_gets_an_acl_grant() {
        let mut ir = base();
        ir.windows.appcontainer = true;
        let target = "D:/code/forks/x";
        let source = Source::Rule {
            index: 1,
            file: "sbx.toml".into(),
            line: 9,
            column: 1,
        };
        ir.fs.push(Grant {
            path: target.into(),
            access: Access::READ,
            kind: PathKind::Dir,
            source: source.clone(),
            aliases: vec![],
            external: Some(External {
                rule_path: "fork".into(),
                canonical_target: target.into(),
            }),
        });
        // The same directory without an approval stays outside the ACL set.
        let mut plain = ir.clone();
        plain.fs[1].external = None;
        assert_eq!(spec(&plain).appcontainer.unwrap().grants.len(), 1);
        let s = spec(&ir);
        let g = &s.appcontainer.unwrap().grants[1];
        assert_eq!((g.path.as_str(), g.allow), (target, Access::READ));
        let note = s
            .precision
            .iter()
            .find(|p| p.rule == source.label() && p.target == TARGET)
            .unwrap();
        assert_eq!(note.status, Status::Exact, "{note:?}");
    }

    #[test]
    fn appcontainer_network_only_with_internet_client() {
        let mut ir = base();
        ir.windows.appcontainer = true;
        ir.net.connect = Ports::Some(vec![443]);
        ir.net.rules.push(NetRule {
            index: 0,
            file: "p.toml".into(),
            line: 3,
            column: 1,
            host: "api.example.com".into(),
            scheme: Some("https".into()),
            port: Some(443),
            path_prefix: None,
            bind: false,
            allow: true,
        });
        let s = spec(&ir);
        assert_eq!(
            s.appcontainer.unwrap().capabilities,
            [Capability::InternetClient]
        );
        let p = s
            .precision
            .iter()
            .find(|p| p.rule == "net[0] (p.toml:3:1)")
            .unwrap();
        assert_eq!(p.status, Status::Wider);
    }

    #[test]
    fn refuses_what_windows_cannot_hold() {
        let mut ir = base();
        ir.fs[0].path = "C:/a\u{1}b".into();
        let e = emit(&ir).unwrap_err();
        assert_eq!(e.rule, "default policy");
        assert!(e.message.contains("control character"));

        let mut ir = base();
        ir.windows.ui_restrictions = vec!["clipboard".into()];
        assert_eq!(emit(&ir).unwrap_err().rule, "windows.ui_restrictions");

        let mut ir = base();
        ir.windows.token = "admin".into();
        assert_eq!(emit(&ir).unwrap_err().rule, "windows.token");

        let mut ir = base();
        ir.limits.max_processes = Some(0);
        assert_eq!(emit(&ir).unwrap_err().rule, "limits.max_processes");
    }

    #[test]
    fn loader_rejects_unknown_members_and_targets() {
        let text = emit(&base()).unwrap().text;
        let extra = text.replacen("{", "{\n  \"future\": 1,", 1);
        assert!(matches!(Spec::from_json(&extra), Err(LoadError::Json(_))));
        let linux = text.replace("\"target\": \"windows\"", "\"target\": \"linux\"");
        assert!(matches!(Spec::from_json(&linux), Err(LoadError::Target(_))));
    }

    #[test]
    fn output_is_deterministic() {
        let mut ir = base();
        ir.windows.ui_restrictions = vec!["handles".into(), "desktop".into(), "handles".into()];
        assert_eq!(emit(&ir).unwrap().text, emit(&ir).unwrap().text);
        assert_eq!(
            spec(&ir).job.ui_restrictions.unwrap().value,
            [UiRestriction::Handles, UiRestriction::Desktop]
        );
    }
}
