//! Looking grants up by path while lowering adds protections and hidden
//! paths ([`super::protect`], [`super::hidden`]): most-specific-wins in
//! O(depth), and how a grant's path is spelled for messages.

use crate::diag::Location;
use crate::hashed::Map;
use crate::ir::{Grant, Source};
use crate::policy::Policy;

/// Grants by every spelling, for most-specific-wins lookups in O(depth).
pub(super) struct Lookup {
    by_path: Map<String, usize>,
}

impl Lookup {
    pub(super) fn new(fs: &[Grant]) -> Lookup {
        let mut by_path = Map::with_capacity_and_hasher(fs.len(), Default::default());
        for (i, g) in fs.iter().enumerate() {
            for p in std::iter::once(&g.path).chain(&g.aliases) {
                by_path.entry(p.clone()).or_insert(i);
            }
        }
        Lookup { by_path }
    }

    /// The grant with exactly this spelling, if any.
    pub(super) fn at(&self, path: &str) -> Option<usize> {
        self.by_path.get(path).copied()
    }

    /// The grant deciding `path` ([`crate::ir::Ir::decide`]): the nearest
    /// granted spelling walking up.
    pub(super) fn decide(&self, path: &str) -> Option<usize> {
        let mut p = path;
        loop {
            if let Some(&i) = self.by_path.get(p) {
                return Some(i);
            }
            p = parent(p)?;
        }
    }
}

/// `/a/b` → `/a`, `/a` → `/`, `${W}/a` → `${W}`, `C:\a` → `C:\`; `None` at a root.
pub(super) fn parent(p: &str) -> Option<&str> {
    let i = p
        .as_bytes()
        .iter()
        .rposition(|&b| b == b'/' || b == b'\\')?;
    if i + 1 == p.len() {
        return None;
    }
    if i == 0 || p[..i].ends_with(':') {
        Some(&p[..=i])
    } else {
        Some(&p[..i])
    }
}

pub(super) fn locate(policy: &Policy, s: &Source) -> Option<Location> {
    match s {
        Source::Rule { index, .. } => policy.fs.as_ref()?.get(*index)?.loc.clone(),
        _ => None,
    }
}

/// A grant's path as the policy writes it, so that a warning reads the
/// same whichever OS the policy is lowered for (`sbx check` lowers for
/// each, and keeps one copy of equal warnings).
pub(super) fn written(policy: &Policy, g: &Grant) -> String {
    match &g.source {
        Source::Rule { index, .. } => policy
            .fs
            .as_ref()
            .and_then(|f| f.get(*index))
            .map_or_else(|| g.path.clone(), |r| r.value.path.clone()),
        Source::Default => "the workspace".into(),
        _ => g.path.clone(),
    }
}
