//! `sbx approve`: measure every external rule of a policy against the
//! approvals store ([`review`]), then record the approvable ones
//! ([`record`]). Prompting is the CLI's business.

use super::{edit, resolve, rule_key, status, Resolution, Status};
use crate::approvals;
use crate::compile::{self, Failure, Inputs};
use crate::diag::{codes, Diagnostic};
use crate::ir::Access;
use camino::{Utf8Path, Utf8PathBuf};

/// One external rule path, with every rule (per tool) that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Workspace-relative key (the symlink's name).
    pub key: String,
    /// `(tool, rights)` of each rule naming it; tool `None` in a plain policy.
    pub grants: Vec<(Option<String>, Access)>,
    pub state: State,
    /// Sensitive-path patterns the current target hits.
    pub sensitive: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Approved {
        target: String,
    },
    Unapproved {
        target: String,
    },
    Retargeted {
        was: String,
        now: String,
    },
    /// Nothing at the path, or a dangling link: cannot be approved.
    Broken {
        link: Option<String>,
    },
    /// Resolves inside the workspace, or is not a workspace-relative
    /// path: the policy is invalid (the message says why).
    Invalid(String),
}

impl Entry {
    /// The target an approval would record, if this entry needs one.
    pub fn approvable(&self) -> Option<&str> {
        match &self.state {
            State::Unapproved { target } => Some(target),
            State::Retargeted { now, .. } => Some(now),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Review {
    /// Canonical workspace.
    pub workspace: String,
    pub store: Utf8PathBuf,
    /// In first-seen order.
    pub entries: Vec<Entry>,
    /// Store warnings (a corrupt store reads as empty).
    pub warnings: Vec<String>,
}

/// Look at every external rule of `policy` (of `opts.tool`, or of every
/// tool in an RFD 075 layout) without changing anything.
pub fn review(
    policy: &Utf8Path,
    opts: &compile::Options,
    store: Option<&Utf8Path>,
) -> Result<Review, Failure> {
    let io = |m: String| Failure {
        diagnostics: vec![Diagnostic::new(codes::IO, m)],
        exit_code: 2,
    };
    let inputs = Inputs::read(&[policy.to_path_buf()])?;
    let workspace = super::host_workspace(opts)?;
    let lo = compile::lower_options(opts, crate::ir::Os::host())?;
    let store = approvals::store_path(store)
        .ok_or_else(|| io("no approvals store: set HOME or pass --approvals".into()))?;
    approvals::check_outside(&store, &workspace).map_err(|e| io(e.to_string()))?;
    let (stored, warning) = approvals::read(&store).map_err(io)?;
    let known = stored.approvals();

    let tools: Vec<Option<String>> = match &opts.tool {
        Some(t) => vec![Some(t.clone())],
        None => {
            let doc = inputs.sources[0].text.parse::<toml_edit::DocumentMut>();
            match doc.as_ref().map(edit::layout) {
                Ok(edit::Layout::Tools(ts)) => ts
                    .into_iter()
                    .filter(|t| t.eligible)
                    .map(|t| Some(t.name))
                    .collect(),
                _ => vec![None],
            }
        }
    };
    let windows = cfg!(windows);
    let mut entries: Vec<Entry> = Vec::new();
    for tool in tools {
        let o = compile::Options {
            tool: tool.clone(),
            ..opts.clone()
        };
        let (p, _) = compile::load(&inputs, &o)?;
        // The store itself is sensitive: a tool writing it approves itself.
        let extra: Vec<String> = p
            .sensitive_paths
            .iter()
            .map(|s| s.value.clone())
            .chain(super::managed_paths(&store))
            .collect();
        for r in p.fs.iter().flatten() {
            if r.value.external != Some(true) {
                continue;
            }
            let access = crate::lower::rule_access(&r.value);
            let (key, state) = match rule_key(&r.value.path, windows) {
                Err(e) => (
                    r.value.path.clone(),
                    State::Invalid(match e {
                        super::KeyError::NotRelative => "not a workspace-relative path".into(),
                        super::KeyError::ClimbsOut => "climbs above the workspace".into(),
                    }),
                ),
                Ok(key) => {
                    let state = match resolve(&workspace, &key) {
                        Resolution::Broken { link } => State::Broken { link },
                        Resolution::Inside(t) => {
                            State::Invalid(format!("resolves inside the workspace ({t})"))
                        }
                        Resolution::External(t) => match status(&known, &workspace, &key, &t) {
                            Status::Approved => State::Approved { target: t },
                            Status::Unapproved => State::Unapproved { target: t },
                            Status::Retargeted { was } => State::Retargeted { was, now: t },
                        },
                    };
                    (key, state)
                }
            };
            match entries.iter_mut().find(|e| e.key == key) {
                Some(e) => e.grants.push((tool.clone(), access)),
                None => {
                    let sensitive = match &state {
                        State::Approved { target }
                        | State::Unapproved { target }
                        | State::Retargeted { now: target, .. } => {
                            super::sensitive::hits(target, &lo.home, &workspace, &extra)
                        }
                        _ => Vec::new(),
                    };
                    entries.push(Entry {
                        key,
                        grants: vec![(tool.clone(), access)],
                        state,
                        sensitive,
                    });
                }
            }
        }
    }
    Ok(Review {
        workspace,
        store,
        entries,
        warnings: warning.into_iter().collect(),
    })
}

/// Record every approvable entry of `review`. Returns the number recorded
/// and the store's warnings.
pub fn record(review: &Review) -> Result<(usize, Vec<String>), approvals::Error> {
    let mounts: Vec<approvals::Mount> = review
        .entries
        .iter()
        .filter_map(|e| {
            e.approvable()
                .map(|t| approvals::Mount::now(&review.workspace, &e.key, t))
        })
        .collect();
    if mounts.is_empty() {
        return Ok((0, Vec::new()));
    }
    let n = mounts.len();
    let w = approvals::approve_many(&review.store, mounts)?;
    Ok((n, w))
}
