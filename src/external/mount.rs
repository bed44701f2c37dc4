//! `sbx mount`: create the workspace symlink, add the external rule to the
//! policy file and record the approval, as one step (RFD D43 `--mount`).
//!
//! [`plan`] checks everything and touches nothing; [`apply`] makes the
//! changes in order (directories, symlink, policy, approval) and undoes
//! the earlier ones if a later one fails, so a failure leaves nothing
//! half-done.

use super::edit::{self, Change, Layout};
use super::spec::{Mode, MountSpec};
use crate::approvals;
use crate::compile::{self, Failure};
use crate::diag::Diagnostic;
use crate::ir::path_within;
use crate::lower::paths::{canonicalise, join, normalise};
use crate::policy::{self, source::SourceFile};
use camino::Utf8PathBuf;
use toml_edit::DocumentMut;

#[derive(Debug, Clone)]
pub struct Request {
    pub spec: MountSpec,
    pub policy: Utf8PathBuf,
    /// Workspace and home; `tool` is ignored (the spec's `TOOL:` decides).
    pub opts: compile::Options,
    /// `--approvals FILE`, else the user-local default.
    pub approvals: Option<Utf8PathBuf>,
}

#[derive(Debug)]
pub enum Error {
    /// The request itself is wrong (bad NAME, missing PATH...): exit 2.
    Usage(String),
    /// The request conflicts with what is on disk or in the policy: exit 1.
    Conflict(String),
    /// The policy file does not load: exit 1, with its diagnostics.
    Policy(Vec<Diagnostic>),
    /// Reading or writing failed: exit 2.
    Io(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Usage(m) | Error::Conflict(m) | Error::Io(m) => f.write_str(m),
            Error::Policy(d) => write!(f, "the policy does not load ({} problems)", d.len()),
        }
    }
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Io(_) => 2,
            Error::Conflict(_) | Error::Policy(_) => 1,
        }
    }
}

/// Everything [`apply`] will do, decided up front.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Canonical workspace (the approval's key).
    pub workspace: String,
    /// Workspace-relative rule path (the symlink's name).
    pub key: String,
    /// The symlink, absolute.
    pub link: String,
    pub target: String,
    /// `false`: the symlink already points at the target.
    pub create_link: bool,
    /// Missing directories above the link, outermost first.
    pub dirs: Vec<String>,
    pub policy: Utf8PathBuf,
    pub old_text: String,
    pub new_text: String,
    /// Per scope (`None`: a plain policy) what happened to its rules.
    pub changes: Vec<(Option<String>, Change)>,
    pub store: Utf8PathBuf,
    /// Sensitive-path patterns the target hits (warned about).
    pub sensitive: Vec<String>,
}

fn failure(f: Failure) -> Error {
    if f.exit_code == 2 {
        Error::Io(
            f.diagnostics
                .iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
        )
    } else {
        Error::Policy(f.diagnostics)
    }
}

pub fn plan(req: &Request) -> Result<Plan, Error> {
    let windows = cfg!(windows);
    let lo = compile::lower_options(&req.opts, crate::ir::Os::host()).map_err(failure)?;
    let workspace = super::host_workspace(&req.opts).map_err(failure)?;
    if !std::path::Path::new(&workspace).is_dir() {
        return Err(Error::Usage(format!(
            "workspace {} is not a directory",
            lo.workspace
        )));
    }
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| d.to_str().map(str::to_string))
        .ok_or_else(|| Error::Io("cannot read the current directory".into()))?;
    let key = name_key(&req.spec.name, &cwd, &lo.workspace, &workspace, windows)?;
    let link = join(&workspace, &key);

    let store = approvals::store_path(req.approvals.as_deref()).ok_or_else(|| {
        Error::Usage("no approvals store: set HOME (or XDG_STATE_HOME) or pass --approvals".into())
    })?;
    approvals::check_outside(&store, &workspace).map_err(|e| Error::Conflict(e.to_string()))?;
    let managed = super::managed_paths(&store);
    if let Some(m) = managed.iter().find(|m| path_within(&link, m)) {
        return Err(Error::Usage(format!(
            "{} is inside sbx's own storage ({m})",
            req.spec.name
        )));
    }

    let target = target_path(&req.spec.path, &cwd, &lo.home)?;
    if path_within(&target, &workspace) {
        return Err(Error::Conflict(format!(
            "{} resolves to {target}, inside the workspace: use an ordinary rule, not a mount",
            req.spec.path
        )));
    }
    let exposes = |m: &String| path_within(&target, m) || path_within(m, &target);
    if let Some(m) = managed.iter().find(|m| exposes(m)) {
        return Err(Error::Conflict(format!(
            "{target} is or contains sbx's approvals storage ({m}): a tool could approve its own mounts"
        )));
    }
    let create_link = check_link(&link, &req.spec.name, &target)?;
    let dirs = missing_dirs(&workspace, &key)?;

    let edited = edit_policy(req, &key)?;
    let sensitive = super::sensitive::hits(&target, &lo.home, &workspace, &edited.extra_sensitive);
    Ok(Plan {
        workspace,
        key,
        link,
        target,
        create_link,
        dirs,
        policy: req.policy.clone(),
        old_text: edited.old_text,
        new_text: edited.new_text,
        changes: edited.changes,
        store,
        sensitive,
    })
}

/// NAME (relative to `cwd`) as a workspace-relative key. Absolute names,
/// `..` escapes and the workspace itself are refused, and so is a NAME
/// whose directory leaves the workspace through a symlink.
fn name_key(
    name: &str,
    cwd: &str,
    ws_given: &str,
    ws: &str,
    windows: bool,
) -> Result<String, Error> {
    let name = if windows {
        name.replace('\\', "/")
    } else {
        name.to_string()
    };
    let absolute = name.starts_with('/')
        || name.starts_with('~')
        || (windows && name.as_bytes().get(1) == Some(&b':'));
    if absolute {
        return Err(Error::Usage(format!(
            "mount NAME {name:?} must be relative to the current directory"
        )));
    }
    let cwd = if windows {
        cwd.replace('\\', "/")
    } else {
        cwd.to_string()
    };
    let abs = join(&cwd, &name);
    let rel = strip(&abs, ws).or_else(|| strip(&abs, &normalise(ws_given)));
    let Some(rel) = rel else {
        return Err(Error::Usage(format!(
            "mount NAME {name:?} resolves to {abs}, outside the workspace {ws}"
        )));
    };
    if rel == "." {
        return Err(Error::Usage(format!(
            "mount NAME {name:?} is the workspace itself; name a path inside it"
        )));
    }
    // `~` as the first component would read back as the home directory.
    if super::rule_key(&rel, windows).as_deref() != Ok(rel.as_str()) {
        return Err(Error::Usage(format!(
            "mount NAME {name:?} cannot be written as a workspace-relative rule path ({rel})"
        )));
    }
    let full = join(ws, &rel);
    let parent = full.rsplit_once('/').map(|(p, _)| p).unwrap_or(ws);
    let (canon_parent, _) = canonicalise(parent);
    if !path_within(&canon_parent, ws) {
        return Err(Error::Usage(format!(
            "mount NAME {name:?} lies under {canon_parent}, outside the workspace, through a symlink"
        )));
    }
    Ok(rel)
}

/// `path` relative to `root`, lexically (`.` for the root itself).
fn strip(path: &str, root: &str) -> Option<String> {
    if !path_within(path, root) {
        return None;
    }
    let rest = path[root.len()..].trim_start_matches('/');
    Some(if rest.is_empty() {
        ".".into()
    } else {
        rest.into()
    })
}

/// PATH with `~` expanded and made absolute, canonical; it must exist.
fn target_path(path: &str, cwd: &str, home: &str) -> Result<String, Error> {
    let p = if path == "~" {
        home.to_string()
    } else if let Some(rest) = path.strip_prefix("~/").or(path.strip_prefix("~\\")) {
        format!("{home}/{rest}")
    } else {
        path.to_string()
    };
    let p = std::path::Path::new(cwd).join(p);
    let c = crate::lower::paths::realpath(&p)
        .map_err(|e| Error::Usage(format!("mount PATH {path}: {e}")))?;
    c.to_str()
        .map(str::to_string)
        .ok_or_else(|| Error::Usage(format!("mount PATH {path} is not valid UTF-8")))
}

/// Whether the link must be created: `false` when it already points at
/// the target. Anything else already at NAME is a conflict.
fn check_link(link: &str, name: &str, target: &str) -> Result<bool, Error> {
    match std::fs::symlink_metadata(link) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(Error::Io(format!("{link}: {e}"))),
        Ok(m) if m.file_type().is_symlink() => {
            let now = crate::lower::paths::realpath(std::path::Path::new(link))
                .ok()
                .and_then(|c| c.to_str().map(str::to_string));
            match now {
                Some(c) if c == target => Ok(false),
                Some(c) => Err(Error::Conflict(format!(
                    "{name} is already a symlink to {c}, not {target}; remove it first to retarget it"
                ))),
                None => {
                    let text = std::fs::read_link(link)
                        .map(|l| l.display().to_string())
                        .unwrap_or_default();
                    Err(Error::Conflict(format!(
                        "{name} is already a symlink (broken, to {text}); remove it first"
                    )))
                }
            }
        }
        Ok(m) => Err(Error::Conflict(format!(
            "{name} already exists and is a {}, not a symlink; nothing was changed",
            if m.is_dir() { "directory" } else { "file" }
        ))),
    }
}

/// Directories between the workspace and the link that do not exist yet.
fn missing_dirs(ws: &str, key: &str) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    for i in 1..parts.len() {
        let d = join(ws, &parts[..i].join("/"));
        match std::fs::metadata(&d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::Conflict(format!(
                    "{d} exists and is not a directory"
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push(d),
            Err(e) => return Err(Error::Io(format!("{d}: {e}"))),
        }
    }
    Ok(out)
}

/// The policy text before and after, what changed per scope, and the
/// policy's extra sensitive paths.
struct Edited {
    old_text: String,
    new_text: String,
    changes: Vec<(Option<String>, Change)>,
    extra_sensitive: Vec<String>,
}

/// Add the rule in memory. The file must load before and after.
fn edit_policy(req: &Request, key: &str) -> Result<Edited, Error> {
    let src = policy::read_file(&req.policy).map_err(|d| Error::Io(d.message))?;
    let mut doc: DocumentMut = src
        .text
        .parse()
        .map_err(|_| Error::Policy(load(&src, None).err().unwrap_or_default()))?;
    let spec = &req.spec;
    let scopes: Vec<Option<String>> = match (edit::layout(&doc), &spec.tool) {
        (Layout::Plain, None) => vec![None],
        (Layout::Plain, Some(t)) => {
            return Err(Error::Usage(format!(
                "{} has no conversation.tools: drop the `{t}:` prefix",
                req.policy
            )))
        }
        (Layout::Tools(tools), Some(t)) => match tools.iter().find(|x| &x.name == t) {
            Some(x) if x.eligible => vec![Some(t.clone())],
            Some(_) => {
                return Err(Error::Usage(format!(
                    "tool `{t}` is builtin, MCP or disabled: it takes no access rules"
                )))
            }
            None => {
                return Err(Error::Usage(format!(
                    "{} has no tool `{t}` in conversation.tools",
                    req.policy
                )))
            }
        },
        (Layout::Tools(tools), None) => {
            let eligible: Vec<Option<String>> = tools
                .iter()
                .filter(|t| t.eligible)
                .map(|t| Some(t.name.clone()))
                .collect();
            if eligible.is_empty() {
                return Err(Error::Usage(format!(
                    "{} has no local, enabled tool to mount for",
                    req.policy
                )));
            }
            if spec.mode == Mode::ReadWrite && eligible.len() > 1 {
                return Err(Error::Usage(format!(
                    ":rw needs an explicit TOOL: {} holds several tools; write TOOL:{}={}:rw",
                    req.policy, spec.name, spec.path
                )));
            }
            eligible
        }
    };
    let mut changes = Vec::new();
    let mut extra = Vec::new();
    for scope in &scopes {
        let before = load(&src, scope.as_deref()).map_err(Error::Policy)?;
        extra.extend(before.sensitive_paths.iter().map(|s| s.value.clone()));
        let c = edit::add_rule(&mut doc, scope.as_deref(), key, spec.mode, cfg!(windows))
            .map_err(Error::Conflict)?;
        changes.push((scope.clone(), c));
    }
    let new_text = doc.to_string();
    let edited = SourceFile {
        name: src.name.clone(),
        text: new_text.as_str().into(),
    };
    for scope in &scopes {
        let after = load(&edited, scope.as_deref()).map_err(Error::Policy)?;
        // The rule that will be lowered must be the external one we meant.
        let ok = after
            .fs
            .iter()
            .flatten()
            .rev()
            .find(|r| super::rule_key(&r.value.path, cfg!(windows)).as_deref() == Ok(key));
        if ok.is_none_or(|r| r.value.external != Some(true)) {
            return Err(Error::Conflict(format!(
                "could not add an external rule for {key} to {}",
                req.policy
            )));
        }
    }
    Ok(Edited {
        old_text: src.text.to_string(),
        new_text,
        changes,
        extra_sensitive: extra,
    })
}

fn load(src: &SourceFile, tool: Option<&str>) -> Result<policy::Policy, Vec<Diagnostic>> {
    let layers = match tool {
        Some(t) => {
            let (defaults, l) = policy::load_tool_layers(src.clone(), t)?;
            defaults.into_iter().chain([l]).collect()
        }
        None => vec![policy::load_layer(src.clone(), None)?],
    };
    Ok(policy::merge::merge(&layers))
}

/// What [`apply`] did, for the report.
#[derive(Debug, Clone, Default)]
pub struct Done {
    pub warnings: Vec<String>,
}

/// Make the planned changes. On failure, every earlier change is undone.
pub fn apply(plan: &Plan) -> Result<Done, Error> {
    let mut made_dirs: Vec<&str> = Vec::new();
    let mut made_link = false;
    let mut wrote_policy = false;
    let undo = |dirs: &[&str], link: bool, policy: bool| {
        if policy {
            let _ = compile::write_atomic(&plan.policy, &plan.old_text);
        }
        if link {
            let _ = std::fs::remove_file(&plan.link);
        }
        for d in dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    };
    let res = (|| {
        for d in &plan.dirs {
            std::fs::create_dir(d).map_err(|e| Error::Io(format!("cannot create {d}: {e}")))?;
            made_dirs.push(d);
        }
        if plan.create_link {
            symlink(&plan.target, &plan.link)
                .map_err(|e| Error::Io(format!("cannot create the symlink {}: {e}", plan.link)))?;
            made_link = true;
        }
        if plan.new_text != plan.old_text {
            compile::write_atomic(&plan.policy, &plan.new_text)
                .map_err(|e| Error::Io(format!("cannot write {}: {e}", plan.policy)))?;
            wrote_policy = true;
        }
        let m = approvals::Mount::now(&plan.workspace, &plan.key, &plan.target);
        approvals::record(&plan.store, m).map_err(|e| match e {
            approvals::Error::InWorkspace { .. } => Error::Conflict(e.to_string()),
            approvals::Error::Io(..) => Error::Io(e.to_string()),
        })
    })();
    match res {
        Ok(warnings) => Ok(Done { warnings }),
        Err(e) => {
            undo(&made_dirs, made_link, wrote_policy);
            Err(e)
        }
    }
}

#[cfg(unix)]
fn symlink(target: &str, link: &str) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Directory targets need `symlink_dir` (Developer Mode or admin); the
/// junction fallback of RFD D43 is not implemented.
#[cfg(windows)]
fn symlink(target: &str, link: &str) -> std::io::Result<()> {
    if std::path::Path::new(target).is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}
