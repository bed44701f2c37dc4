//! `--target windows`: a JSON job-object / token / AppContainer spec.
//!
//! The Windows loader (`sbx run`) deserialises these same types, so what is
//! emitted here is exactly what is applied. Enums are written as names, never
//! as raw flag values; the mapping to `JOB_OBJECT_*` lives in the loader.

mod notes;
mod spec;
#[cfg(test)]
mod tests;

pub use spec::{
    AclGrant, AppContainer, Breakaway, Capability, EnvSpec, Integrity, Job, Limit, LoadError,
    Program, Requirement, Spec, Token, TokenFlag, UiRestriction, WELL_KNOWN_SIDS,
};

use super::{collect, write_json, EmitError, Emitted, Header};
use crate::ir::{self, Access, Ir, Ports, Precision, Status};
use crate::policy::model::MINIMAL_ENV_WINDOWS;
use notes::{fs_notes, net_notes, Notes};

pub const TARGET: &str = "windows";

/// Longest path Windows accepts (with the `\\?\` prefix), in UTF-16 units.
const MAX_PATH_UNITS: usize = 32_767;

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
    if ir.net.ssh_agent {
        precision.push(Precision {
            rule: "ssh_agent".into(),
            target: TARGET.into(),
            status: crate::ir::Status::Unsupported,
            reason: "the caller's ssh agent is not forwarded on Windows".into(),
            advisory: false,
        });
    }
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

fn err(rule: &str, message: impl Into<String>) -> EmitError {
    EmitError {
        rule: rule.into(),
        message: message.into(),
    }
}

/// Windows paths cannot hold NUL or control characters; refuse rather than
/// hand the loader a string it would truncate.
/// (The caller names the rule: its label is made only on an error.)
fn check_path(p: &str) -> Result<(), String> {
    if let Some(c) = p.chars().find(|c| c.is_control()) {
        return Err(format!(
            "path {p:?} contains the control character {c:?}, which Windows paths cannot hold"
        ));
    }
    if p.encode_utf16().count() > MAX_PATH_UNITS {
        return Err(format!(
            "path is longer than Windows allows ({MAX_PATH_UNITS} UTF-16 units)"
        ));
    }
    Ok(())
}

fn check_paths(ir: &Ir) -> Result<(), EmitError> {
    check_path(&ir.roots.workspace).map_err(|m| err("workspace", m))?;
    for g in &ir.fs {
        check_path(&g.path).map_err(|m| err(&g.source.label(), m))?;
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
    for name in MINIMAL_ENV_WINDOWS {
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
    // The digest's first 16 hex digits (64 bits), not its `sha256:` label.
    let digest = ir.ir_hash.rsplit(':').next().unwrap_or_default();
    let hash: String = digest
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
