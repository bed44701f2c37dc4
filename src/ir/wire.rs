//! The JSON form of [`Ir`]: the lowered grants as they are, except the
//! protections (POLICY.md §7a) at the top of each writable tree, which
//! are written per tree and kind (`protected`). Those are most grants of a
//! policy with many writable trees (ten names each), and every one of them
//! is serialised twice (the IR's hash and `ir.json`).
//!
//! A grant is written per tree only where every field of it follows from
//! the tree's grant, so that reading the JSON back gives the same IR:
//! `root/entry`, protected by `entry`, the tree's rights minus create,
//! update and delete, the tree's aliases with `/entry` appended.

use super::{Grant, Ir, PathKind, Source};
use crate::hashed::Map;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

/// The protections of one kind at the top of one writable tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protected {
    /// The path of the tree's grant: the first writable grant at it.
    pub root: String,
    /// What each path was when lowered (`missing`: absent).
    pub kind: PathKind,
    /// Protected-path entries (`.git/hooks`), each `root/entry`.
    pub entries: Vec<String>,
}

/// [`Protected`] as written: borrowed from the grants, as the IR is
/// serialised twice (its hash and `ir.json`) and a copy of every entry
/// was half a million strings at 100,000 rules.
#[derive(Serialize)]
struct ProtectedOut<'a> {
    root: &'a str,
    kind: PathKind,
    entries: Vec<&'a str>,
}

/// A relative path of plain components, as lowering leaves an entry of
/// the protected list: nothing read back names a place outside its tree.
fn entry_ok(entry: &str) -> bool {
    entry.split('/').all(|c| !matches!(c, "" | "." | "..")) && !entry.starts_with('~')
}

/// The grant `root/entry` of `kind` stands for, given the tree's grant
/// ([`tree_of`] checks the same without making it).
fn expand(tree: &Grant, entry: &str, kind: PathKind) -> Grant {
    let path = super::joined(&tree.path, entry);
    Grant {
        aliases: tree.aliases_below(&path),
        access: tree.access.without_writes(),
        kind,
        source: Source::Protected {
            entry: entry.to_string(),
        },
        external: None,
        path,
    }
}

/// Whether `g` is written per tree, and under which tree (by path): it
/// must be exactly what [`expand`] makes of that tree's grant.
fn tree_of<'a>(g: &'a Grant, writable: &Map<&str, &Grant>) -> Option<&'a str> {
    let Source::Protected { entry } = &g.source else {
        return None;
    };
    if g.external.is_some() || !entry_ok(entry) {
        return None;
    }
    let rest = g.path.strip_suffix(entry.as_str())?;
    // `ir::joined` puts one `/` between: `//x` is not `/` and `x`.
    let root = match rest.strip_suffix('/') {
        Some("") => "/",
        Some(r) if !r.ends_with('/') => r,
        _ => return None,
    };
    let tree = writable.get(root)?;
    // What `expand` would make, compared field by field: `path` is
    // `root/entry` by the split above, and aliases are made only where
    // the tree has any.
    let aliases = match tree.aliases.is_empty() {
        true => g.aliases.is_empty(),
        false => g.aliases == tree.aliases_below(&g.path),
    };
    (g.access == tree.access.without_writes() && aliases).then_some(root)
}

/// `ir.fs` split into the grants written as they are and the trees'
/// protections. Only for a list sorted by path with no path twice among
/// the protections, so that [`merge`] puts each back where it was.
fn split(fs: &[Grant]) -> (Vec<&Grant>, Vec<ProtectedOut<'_>>) {
    let sorted = fs.is_sorted_by(|a, b| a.path <= b.path);
    // The first writable grant at each path: protections never write, so
    // the grants written as they are hold the same first one.
    let mut writable: Map<&str, &Grant> = Map::default();
    if sorted {
        for g in fs.iter().filter(|g| g.access.writes()) {
            writable.entry(g.path.as_str()).or_insert(g);
        }
    }
    let mut plain = Vec::with_capacity(fs.len());
    let mut trees: Vec<ProtectedOut> = Vec::new();
    let mut at: Map<(&str, PathKind), usize> = Map::default();
    for (i, g) in fs.iter().enumerate() {
        let alone = |j: Option<usize>| j.and_then(|j| fs.get(j)).is_none_or(|h| h.path != g.path);
        let tree = match sorted && alone(i.checked_sub(1)) && alone(Some(i + 1)) {
            true => tree_of(g, &writable),
            false => None,
        };
        let Some(root) = tree else {
            plain.push(g);
            continue;
        };
        let Source::Protected { entry } = &g.source else {
            unreachable!("tree_of takes protections only")
        };
        let k = *at.entry((root, g.kind)).or_insert_with(|| {
            trees.push(ProtectedOut {
                root,
                kind: g.kind,
                entries: Vec::new(),
            });
            trees.len() - 1
        });
        trees[k].entries.push(entry);
    }
    (plain, trees)
}

/// The grants `plain` and the trees' protections as one list, sorted by
/// path (`plain` first where paths are equal).
fn merge(plain: Vec<Grant>, trees: &[Protected]) -> Result<Vec<Grant>, String> {
    if trees.is_empty() {
        return Ok(plain);
    }
    let mut writable: Map<&str, &Grant> = Map::default();
    for g in plain.iter().filter(|g| g.access.writes()) {
        writable.entry(g.path.as_str()).or_insert(g);
    }
    let mut extra = Vec::new();
    for t in trees {
        let tree = writable
            .get(t.root.as_str())
            .ok_or_else(|| format!("protected: no writable grant at {:?}", t.root))?;
        if let Some(e) = t.entries.iter().find(|e| !entry_ok(e)) {
            return Err(format!(
                "protected: {e:?} under {:?} is not a relative path",
                t.root
            ));
        }
        extra.extend(t.entries.iter().map(|e| expand(tree, e, t.kind)));
    }
    extra.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(super::merge_sorted(plain, extra, |g| &g.path))
}

/// By hand, for `protected`: the members are those of [`Ir`], in its
/// order, with `protected` after `fs` where there is any.
impl Serialize for Ir {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Hashes {
            ir: self,
            policy_hash: &self.policy_hash,
            ir_hash: &self.ir_hash,
        }
        .serialize(s)
    }
}

/// An [`Ir`] serialised with these hash members instead of its own: the
/// IR's hash is taken with both empty, and `ir.json` can carry a hash
/// taken while the IR already holds its policy's.
pub(crate) struct Hashes<'a> {
    pub ir: &'a Ir,
    pub policy_hash: &'a str,
    pub ir_hash: &'a str,
}

impl Serialize for Hashes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Ir {
            sbx,
            policy_hash: _,
            ir_hash: _,
            enforcement,
            mode,
            os,
            roots,
            fs,
            net,
            env,
            commands,
            limits,
            sensitive_paths,
            macos,
            linux,
            windows,
            precision,
        } = self.ir;
        let (plain, trees) = split(fs);
        let mut st = s.serialize_struct("Ir", 17 + usize::from(!trees.is_empty()))?;
        st.serialize_field("sbx", sbx)?;
        st.serialize_field("policy_hash", self.policy_hash)?;
        st.serialize_field("ir_hash", self.ir_hash)?;
        st.serialize_field("enforcement", enforcement)?;
        st.serialize_field("mode", mode)?;
        st.serialize_field("os", os)?;
        st.serialize_field("roots", roots)?;
        st.serialize_field("fs", &plain)?;
        if !trees.is_empty() {
            st.serialize_field("protected", &trees)?;
        }
        st.serialize_field("net", net)?;
        st.serialize_field("env", env)?;
        st.serialize_field("commands", commands)?;
        st.serialize_field("limits", limits)?;
        st.serialize_field("sensitive_paths", sensitive_paths)?;
        st.serialize_field("macos", macos)?;
        st.serialize_field("linux", linux)?;
        st.serialize_field("windows", windows)?;
        st.serialize_field("precision", precision)?;
        st.end()
    }
}

/// What `ir.json` holds, read back into an [`Ir`] by [`TryFrom`].
#[derive(Deserialize)]
pub(super) struct IrIn {
    sbx: u32,
    policy_hash: String,
    #[serde(default)]
    ir_hash: String,
    enforcement: super::Enforcement,
    mode: super::PathMode,
    os: super::Os,
    roots: super::Roots,
    fs: Vec<Grant>,
    #[serde(default)]
    protected: Vec<Protected>,
    net: super::Net,
    env: super::Env,
    commands: Option<Vec<super::Command>>,
    limits: super::Limits,
    sensitive_paths: Vec<String>,
    macos: super::MacosExtras,
    linux: super::LinuxExtras,
    windows: super::WindowsExtras,
    precision: Vec<super::Precision>,
}

impl TryFrom<IrIn> for Ir {
    type Error = String;
    fn try_from(w: IrIn) -> Result<Ir, String> {
        Ok(Ir {
            sbx: w.sbx,
            policy_hash: w.policy_hash,
            ir_hash: w.ir_hash,
            enforcement: w.enforcement,
            mode: w.mode,
            os: w.os,
            roots: w.roots,
            fs: merge(w.fs, &w.protected)?,
            net: w.net,
            env: w.env,
            commands: w.commands,
            limits: w.limits,
            sensitive_paths: w.sensitive_paths,
            macos: w.macos,
            linux: w.linux,
            windows: w.windows,
            precision: w.precision,
        })
    }
}

#[cfg(test)]
mod tests;
