//! The JSON form of [`NsConfig`]: the mounts as they are, except those of
//! sbx's protections absent when compiled (read-only bind mounts the
//! loader makes if the path exists by launch, and whose path it moves
//! aside after the run otherwise), written per directory as `absent`.
//! A writable tree has ten, and they are most mounts of a policy with
//! many trees. Reading the JSON back gives the same mounts in the same
//! order.

use super::{ir, Link, MountKind, MountRule, NsConfig, NsOut};
use crate::hashed::Map;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

/// The absent protections' mounts in one directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbsentIn {
    dir: String,
    /// Beneath a noexec carve-out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    noexec: bool,
    /// Each `dir/name`.
    names: Vec<String>,
}

/// [`AbsentIn`] as written: borrowed from the mounts, where a copy of
/// every name was half a million strings at 100,000 rules.
#[derive(Serialize)]
struct AbsentOut<'a> {
    dir: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    noexec: bool,
    names: Vec<&'a str>,
}

/// The mount a name of [`AbsentIn`] stands for.
fn absent_mount(path: String, noexec: bool) -> MountRule {
    MountRule {
        path,
        kind: MountKind::Bind,
        read_only: true,
        noexec,
        protection: true,
        absent: true,
    }
}

/// `m`'s directory and name, where `m` is what [`absent_mount`] makes.
fn dir_name<P: AsRef<str>>(m: &MountRule<P>) -> Option<(&str, &str)> {
    let (dir, name) = m.path.as_ref().rsplit_once('/')?;
    let dir = if dir.is_empty() { "/" } else { dir };
    // `*m == absent_mount(m.path, m.noexec)`, without copying the path.
    let MountRule {
        path: _,
        kind,
        read_only,
        noexec: _,
        protection,
        absent,
    } = m;
    let same = *kind == MountKind::Bind && *read_only && *protection && *absent;
    (name_ok(name) && same).then_some((dir, name))
}

/// One component that names an entry of its directory.
fn name_ok(name: &str) -> bool {
    !matches!(name, "" | "." | "..") && !name.contains('/')
}

/// The mounts written as they are, and the absent ones per directory.
/// Only for mounts sorted by path, none twice, so that reading them back
/// puts each where it was.
fn split<P: AsRef<str>>(mounts: &[MountRule<P>]) -> (Vec<&MountRule<P>>, Vec<AbsentOut<'_>>) {
    let ordered = mounts.is_sorted_by(|a, b| a.path.as_ref() < b.path.as_ref());
    let mut plain = Vec::with_capacity(mounts.len());
    let mut dirs: Vec<AbsentOut> = Vec::new();
    let mut at: Map<(&str, bool), usize> = Map::default();
    for m in mounts {
        let Some((dir, name)) = dir_name(m).filter(|_| ordered) else {
            plain.push(m);
            continue;
        };
        let k = *at.entry((dir, m.noexec)).or_insert_with(|| {
            dirs.push(AbsentOut {
                dir,
                noexec: m.noexec,
                names: Vec::new(),
            });
            dirs.len() - 1
        });
        dirs[k].names.push(name);
    }
    (plain, dirs)
}

impl Serialize for NsConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let NsConfig {
            mode,
            mounts,
            links,
        } = self;
        write(s, mode, mounts, links)
    }
}

impl Serialize for NsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let NsOut {
            mode,
            mounts,
            links,
        } = self;
        write(s, mode, mounts, links)
    }
}

/// The members of an [`NsConfig`] or [`NsOut`], which are written alike.
fn write<S: serde::Serializer, P: AsRef<str> + Serialize>(
    s: S,
    mode: &ir::Namespaces,
    mounts: &[MountRule<P>],
    links: &[Link],
) -> Result<S::Ok, S::Error> {
    let (plain, absent) = split(mounts);
    let mut st = s.serialize_struct("NsConfig", 4)?;
    if !mode.is_auto() {
        st.serialize_field("mode", mode)?;
    }
    if !plain.is_empty() {
        st.serialize_field("mounts", &plain)?;
    }
    if !absent.is_empty() {
        st.serialize_field("absent", &absent)?;
    }
    if !links.is_empty() {
        st.serialize_field("links", links)?;
    }
    st.end()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NsIn {
    #[serde(default)]
    mode: ir::Namespaces,
    #[serde(default)]
    mounts: Vec<MountRule>,
    #[serde(default)]
    absent: Vec<AbsentIn>,
    #[serde(default)]
    links: Vec<Link>,
}

impl TryFrom<NsIn> for NsConfig {
    type Error = String;
    fn try_from(w: NsIn) -> Result<NsConfig, String> {
        let mut extra = Vec::new();
        for d in &w.absent {
            for n in &d.names {
                if !name_ok(n) {
                    return Err(format!("absent: {n:?} in {:?} is not a name", d.dir));
                }
                extra.push(absent_mount(ir::joined(&d.dir, n), d.noexec));
            }
        }
        extra.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(NsConfig {
            mode: w.mode,
            mounts: ir::merge_sorted(w.mounts, extra, |m| &m.path),
            links: w.links,
        })
    }
}

#[cfg(test)]
mod tests;
