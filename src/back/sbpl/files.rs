//! Filesystem rules: the IR's grants in an order where SBPL's "last
//! matching rule wins" gives the IR's "most specific grant wins".
//!
//! Grants are emitted shallow first. Each grant first denies what the
//! grants above it allow and it lacks, then allows its own rights, so a
//! deeper grant always overrides a shallower one. Two Seatbelt details
//! shape the operation lists:
//!
//! * It is disputed whether a specific operation (`file-write-unlink`)
//!   beats a later wildcard (`file-write*`). Every rule list is built so
//!   both readings agree: once a grant uses specific write operations, all
//!   rules that can overlap it below spell the specific ones out too.
//! * Paths are names, not objects: moving a directory moves the paths
//!   below it. Creating, deleting or renaming a directory that contains a
//!   grant lacking create or delete is therefore denied (see `protect`).

use super::paths::{filter, Match, Spelling};
use super::{esc_err, Rule};
use crate::back::EmitError;
use crate::ir::{Access, Grant, Ir, PathKind, PathMode};

pub(super) const READ_OPS: &[&str] = &["file-read*", "file-test-existence"];
pub(super) const EXEC_OPS: &[&str] = &["process-exec*", "file-map-executable"];
const WRITE_ALL: &str = "file-write*";
const CREATE_OPS: &[&str] = &["file-write-create"];
/// Changing an existing file: contents and metadata.
const UPDATE_OPS: &[&str] = &[
    "file-write-data",
    "file-write-times",
    "file-write-mode",
    "file-write-xattr",
    "file-write-flags",
    "file-write-acl",
    "file-write-finderinfo",
    "file-write-owner",
];
const DELETE_OPS: &[&str] = &["file-write-unlink"];
/// Under `file-write*` but none of create/update/delete: granted only
/// with all three write rights.
const EXTRA_OPS: &[&str] = &[
    "file-write-setugid",
    "file-write-mount",
    "file-write-umount",
];

/// The filesystem part of the profile.
#[derive(Debug, Default)]
pub(super) struct Files {
    /// Deny/allow pairs per grant, shallow first.
    pub grants: Vec<Rule>,
    /// Execute (and read, for `#!` scripts) of the sandboxed program.
    pub program: Option<Rule>,
    /// Directories above granted paths: `stat` must work on them for
    /// `realpath`, `getcwd` and friends.
    pub traversal: Vec<String>,
    /// Create/unlink denies on directories that contain protected paths.
    pub protect: Vec<Rule>,
    /// Parameters the rules read, in first-use order.
    pub params: Vec<&'static str>,
}

struct Node<'a> {
    grant: &'a Grant,
    label: String,
    spellings: Vec<Spelling>,
}

impl Node<'_> {
    /// `self` may be `outer` or lie below it once parameters have values.
    fn may_be_within(&self, outer: &Node) -> bool {
        self.spellings
            .iter()
            .any(|s| outer.spellings.iter().any(|o| s.may_be_within(o)))
    }

    fn within(&self, outer: &Node) -> bool {
        self.spellings
            .iter()
            .any(|s| outer.spellings.iter().any(|o| s.within(o)))
    }
}

pub(super) fn build(ir: &Ir, program: &[String]) -> Result<Files, EmitError> {
    let mut nodes = Vec::with_capacity(ir.fs.len());
    for g in &ir.fs {
        let label = g.source.label();
        let mut spellings = Vec::new();
        for p in std::iter::once(&g.path).chain(&g.aliases) {
            let s = Spelling::parse(p).ok_or_else(|| EmitError {
                rule: label.clone(),
                message: format!(
                    "path {p:?} is neither absolute nor rooted at a portable parameter"
                ),
            })?;
            if !spellings.contains(&s) {
                spellings.push(s);
            }
        }
        nodes.push(Node {
            grant: g,
            label,
            spellings,
        });
    }
    nodes.sort_by(|a, b| {
        (a.spellings[0].depth(), &a.grant.path).cmp(&(b.spellings[0].depth(), &b.grant.path))
    });

    let mut out = Files::default();
    for n in &nodes {
        for s in &n.spellings {
            if let Some(p) = s.param {
                if !out.params.contains(&p) {
                    out.params.push(p);
                }
            }
        }
    }
    let mut specific = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let above = &nodes[..i];
        // What the rules emitted so far allow here: the nearest grant that
        // certainly contains this one, plus any that might at run time.
        let nearest = above.iter().rposition(|o| n.within(o));
        let mut inherited = nearest.map_or(Access::NONE, |j| above[j].grant.access);
        for (j, o) in above.iter().enumerate() {
            if Some(j) != nearest && !n.within(o) && n.may_be_within(o) {
                inherited = inherited.union(o.grant.access);
            }
        }
        let access = n.grant.access;
        let spell = above
            .iter()
            .enumerate()
            .any(|(j, o)| specific[j] && n.may_be_within(o))
            || partial_write(access);
        specific.push(spell);

        let lost = inherited.minus(access);
        let mut comment = Some(format!(
            "{}: {} ({})",
            n.label,
            n.grant.path,
            rights_text(access)
        ));
        if !lost.is_empty() {
            let mut filters = Vec::new();
            for s in &n.spellings {
                // The literal as well as the subpath: the directory itself
                // must not be created where it does not exist yet.
                push(
                    &mut filters,
                    filter(Match::Literal, s).map_err(node_err(n))?,
                );
                push(
                    &mut filters,
                    filter(Match::Subpath, s).map_err(node_err(n))?,
                );
            }
            out.grants.push(Rule {
                allow: false,
                ops: deny_ops(lost, access, spell),
                filters,
                comment: comment.take(),
            });
        }
        if !access.is_empty() {
            let m = if n.grant.kind == PathKind::File {
                Match::Literal
            } else {
                Match::Subpath
            };
            let mut filters = Vec::new();
            for s in &n.spellings {
                push(&mut filters, filter(m, s).map_err(node_err(n))?);
            }
            out.grants.push(Rule {
                allow: true,
                ops: allow_ops(access, spell),
                filters,
                comment,
            });
        }
    }

    out.program = program_rule(ir, program, &mut out.params)?;
    out.traversal = traversal(ir, &nodes)?;
    out.protect = protect(ir, &nodes)?;
    Ok(out)
}

fn node_err<'a>(n: &'a Node) -> impl Fn(crate::sbpl::EscapeError) -> EmitError + 'a {
    esc_err(&n.label)
}

fn push(v: &mut Vec<String>, f: String) {
    if !v.contains(&f) {
        v.push(f);
    }
}

fn full_write(a: Access) -> bool {
    a.create && a.update && a.delete
}

fn partial_write(a: Access) -> bool {
    a.writes() && !full_write(a)
}

fn specific_writes(a: Access) -> Vec<&'static str> {
    let mut v = Vec::new();
    if a.create {
        v.extend(CREATE_OPS);
    }
    if a.update {
        v.extend(UPDATE_OPS);
    }
    if a.delete {
        v.extend(DELETE_OPS);
    }
    v
}

fn all_specific_writes() -> Vec<&'static str> {
    let mut v = specific_writes(Access::READ_WRITE);
    v.extend(EXTRA_OPS);
    v
}

/// Operations that grant `a`. `spell`: name every specific write operation
/// next to `file-write*`.
pub(super) fn allow_ops(a: Access, spell: bool) -> Vec<&'static str> {
    let mut v = Vec::new();
    if a.read {
        v.extend(READ_OPS);
    }
    if full_write(a) {
        v.push(WRITE_ALL);
        if spell {
            v.extend(all_specific_writes());
        }
    } else {
        v.extend(specific_writes(a));
    }
    if a.execute {
        v.extend(EXEC_OPS);
    }
    v
}

/// Operations that take `lost` away from a grant that keeps `kept`.
pub(super) fn deny_ops(lost: Access, kept: Access, spell: bool) -> Vec<&'static str> {
    let mut v = Vec::new();
    if lost.read {
        v.extend(READ_OPS);
    }
    if lost.writes() {
        if !kept.writes() {
            v.push(WRITE_ALL);
            if spell {
                v.extend(all_specific_writes());
            }
        } else {
            v.extend(specific_writes(lost));
            v.extend(EXTRA_OPS);
        }
    }
    if lost.execute {
        v.extend(EXEC_OPS);
    }
    v
}

fn rights_text(a: Access) -> String {
    if a.is_empty() {
        "no access".into()
    } else {
        a.names().join(", ")
    }
}

/// The program `sbx run` starts (literal spellings), or with `[commands]`
/// in a compiled profile the `PROGRAM` parameter `sandbox-exec -D` sets.
fn program_rule(
    ir: &Ir,
    program: &[String],
    params: &mut Vec<&'static str>,
) -> Result<Option<Rule>, EmitError> {
    let label = "sandboxed program";
    let err = |e| esc_err(label)(e);
    let mut filters = Vec::new();
    if !program.is_empty() {
        for p in program {
            let s = Spelling::parse(p)
                .filter(|s| s.param.is_none())
                .ok_or_else(|| EmitError {
                    rule: label.into(),
                    message: format!("program path {p:?} is not absolute"),
                })?;
            push(&mut filters, filter(Match::Literal, &s).map_err(err)?);
        }
    } else if ir.commands.is_some() {
        params.push(super::PROGRAM_PARAM);
        filters.push(format!(
            "(literal (param {}))",
            crate::sbpl::escape_string(super::PROGRAM_PARAM).map_err(err)?
        ));
    } else {
        return Ok(None);
    }
    let mut ops = vec!["process-exec*"];
    ops.extend(READ_OPS);
    Ok(Some(Rule {
        allow: true,
        ops,
        filters,
        comment: Some(
            "The sandboxed program itself (read too, so `#!` scripts can be interpreted)".into(),
        ),
    }))
}

/// Directories above every granted path, where `stat` must work; those
/// the policy already lets the process read are left out. `/` itself is
/// in the baseline.
fn traversal(ir: &Ir, nodes: &[Node]) -> Result<Vec<String>, EmitError> {
    let mut out = Vec::new();
    let mut roots = Vec::new();
    for n in nodes {
        for s in &n.spellings {
            for a in s.ancestors() {
                if a.param.is_none() && a.rest == "/" || ir.access_at(&a.text()).read {
                    continue;
                }
                push(&mut out, filter(Match::Literal, &a).map_err(node_err(n))?);
            }
            if let Some(p) = s.param {
                if !roots.contains(&p) {
                    roots.push(p);
                }
            }
        }
    }
    for p in roots {
        let s = Spelling {
            param: Some(p),
            rest: String::new(),
        };
        push(&mut out, filter(Match::Ancestors, &s).map_err(esc_err(p))?);
    }
    Ok(out)
}

/// Deny creating, deleting and renaming a directory when a grant below it
/// lacks that right: renaming `ws/a` would move a read-only `ws/a/b/.git`
/// out of its protection, and renaming a prepared directory onto a missing
/// `ws/a` would create one. Only where the policy would otherwise allow
/// it, except at and above a parameter's directory in portable mode,
/// where that is unknown until run time.
fn protect(ir: &Ir, nodes: &[Node]) -> Result<Vec<Rule>, EmitError> {
    let portable = ir.mode == PathMode::Portable;
    let mut lists: [(Vec<String>, &str); 2] = [
        (Vec::new(), "file-write-create"),
        (Vec::new(), "file-write-unlink"),
    ];
    for n in nodes {
        let a = n.grant.access;
        for (k, lacks) in [!a.create, !a.delete].into_iter().enumerate() {
            if !lacks {
                continue;
            }
            let list = &mut lists[k].0;
            for s in &n.spellings {
                for anc in s.ancestors() {
                    let at = ir.access_at(&anc.text());
                    let allowed = if k == 0 { at.create } else { at.delete };
                    // Whether a parameter's directory is granted from
                    // outside its root is unknown until run time.
                    if allowed || anc.param.is_some() && portable {
                        push(list, filter(Match::Literal, &anc).map_err(node_err(n))?);
                    }
                }
                if portable && s.param.is_some() {
                    let root = Spelling {
                        param: s.param,
                        rest: String::new(),
                    };
                    push(list, filter(Match::Ancestors, &root).map_err(node_err(n))?);
                }
            }
        }
    }
    let [(create, _), (unlink, _)] = lists;
    let mut out = Vec::new();
    if !create.is_empty() && create == unlink {
        out.push(Rule {
            allow: false,
            ops: vec!["file-write-create", "file-write-unlink"],
            filters: create,
            comment: Some(
                "Directories that contain protected paths: no creating, deleting or renaming them"
                    .into(),
            ),
        });
        return Ok(out);
    }
    for (filters, op, what) in [
        (create, "file-write-create", "creating (or renaming onto)"),
        (unlink, "file-write-unlink", "deleting or renaming"),
    ] {
        if !filters.is_empty() {
            out.push(Rule {
                allow: false,
                ops: vec![op],
                filters,
                comment: Some(format!(
                    "Directories that contain protected paths: no {what} them"
                )),
            });
        }
    }
    Ok(out)
}
