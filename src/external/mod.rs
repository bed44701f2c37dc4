//! External paths through workspace symlinks (RFD D43): the `mount` and
//! `approve` commands, which edit policies and the approvals store.
//!
//! How a rule resolves and whether it is approved is decided in
//! [`crate::lower::external`], re-exported here, which lowering uses too.

pub mod approve;
pub mod edit;
pub mod mount;
pub mod sensitive;
pub mod spec;

pub use crate::lower::external::{
    inside_workspace, resolve, rule_key, status, KeyError, Resolution, Status,
};

use crate::compile::{self, Failure};
use crate::ir::Os;
use crate::lower::paths::canonicalise;
use crate::lower::Approval;
use camino::Utf8Path;

/// sbx's own storage around the approvals store at `store`, canonical:
/// the directory when it is sbx's own (`…/sbx/approvals.json`), else the
/// store file with its lock and backup. A sandboxed tool that could write
/// here could approve its own mounts.
pub fn managed_paths(store: &Utf8Path) -> Vec<String> {
    let dir = store.parent().filter(|d| !d.as_str().is_empty());
    let paths: Vec<String> = match dir {
        Some(d) if d.file_name() == Some("sbx") => vec![d.to_string()],
        _ => ["", ".lock", ".corrupt"]
            .iter()
            .map(|x| format!("{store}{x}"))
            .collect(),
    };
    paths.iter().map(|p| canonicalise(p).0).collect()
}

/// The canonical workspace on this host, spelled as lowering spells it.
pub fn host_workspace(opts: &compile::Options) -> Result<String, Failure> {
    let lo = compile::lower_options(opts, Os::host())?;
    Ok(crate::lower::root_path(&lo.workspace, Os::host(), true))
}

/// Approvals for compiling: the store at `explicit`, else the default.
/// Returns the approvals and warnings. A corrupt store reads as empty; a
/// store inside the workspace is not trusted (it could be committed).
pub fn load_approvals(
    explicit: Option<&Utf8Path>,
    workspace: &str,
) -> Result<(Vec<Approval>, Vec<String>), String> {
    let Some(path) = crate::approvals::store_path(explicit) else {
        return Ok((Vec::new(), Vec::new()));
    };
    if let Err(e) = crate::approvals::check_outside(&path, workspace) {
        return Ok((Vec::new(), vec![format!("{e}; ignoring it")]));
    }
    let (store, warning) = crate::approvals::read(&path)?;
    Ok((store.approvals(), warning.into_iter().collect()))
}
