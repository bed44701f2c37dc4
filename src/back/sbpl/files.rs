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
use super::texts::Texts;
use super::{esc_err, Rule};
use crate::back::EmitError;
use crate::hashed::{Map, Set};
use crate::ir::{Access, Grant, Ir, PathKind, PathMode, Source};

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

/// The filesystem part of the profile, built in profile order: the grants
/// (handed out one at a time: they are most of a profile), then the rest.
pub(super) struct Files<'a> {
    index: Index<'a>,
    /// Parameters the rules read, in first-use order.
    pub params: Vec<&'static str>,
}

/// The filesystem rules after the grants.
pub(super) struct After {
    /// Execute (and read, for `#!` scripts) of the sandboxed program.
    pub program: Option<Rule>,
    /// Directories above granted paths: `stat` must work on them for
    /// `realpath`, `getcwd` and friends.
    pub traversal: Vec<String>,
    /// Create/unlink denies on directories that contain protected paths.
    pub protect: Vec<Rule>,
}

struct Node<'a> {
    grant: &'a Grant,
    /// The first spelling's depth: the emission order's key, counted once.
    depth: usize,
}

impl<'a> Node<'a> {
    /// The grant's path and aliases as spellings, each once. Read again
    /// where needed rather than kept: a list per grant was a tenth of the
    /// peak at 100,000 rules, and [`Files::new`] checked they all parse.
    fn spellings(&self) -> impl Iterator<Item = Spelling<'a>> + Clone + 'a {
        let g = self.grant;
        let texts = move || std::iter::once(&g.path).chain(&g.aliases);
        texts()
            .enumerate()
            .filter(move |&(i, p)| !texts().take(i).any(|q| q == p))
            .filter_map(|(_, p)| Spelling::parse(p))
    }
}

/// Every spelling of every grant, for most-specific-wins lookups in
/// O(depth): walk a path up until a granted spelling is found.
struct Index<'a> {
    nodes: Vec<Node<'a>>,
    /// Each node's texts: a spelling's text is the path or alias it was
    /// read from.
    by_text: Texts<'a>,
    /// Some spelling is two grants' (one's path, another's alias): the
    /// rules matching a path may then be more than its ancestors' nearest.
    shared: bool,
}

/// Node `i`'s `k`th text (0: its path, then its aliases).
fn text_of<'a>(nodes: &[Node<'a>], i: usize, k: usize) -> &'a str {
    let g = nodes[i].grant;
    match k {
        0 => &g.path,
        k => &g.aliases[k - 1],
    }
}

impl Index<'_> {
    /// The grant that decides `s` (the IR's `decide`), in emission order.
    /// `text`: a spelling's [`text`](Spelling::text).
    fn decide_text(&self, mut text: &str) -> Option<usize> {
        let nodes = &self.nodes;
        loop {
            if let Some(i) = self.by_text.get(text, |i, k| text_of(nodes, i, k)) {
                return Some(i);
            }
            text = parent_text(text)?;
        }
    }

    fn access_at(&self, text: &str) -> Access {
        self.decide_text(text)
            .map_or(Access::NONE, |i| self.nodes[i].grant.access)
    }
}

/// `/a/b` → `/a`, `/a` → `/`, `${W}/a` → `${W}`; `None` at a root.
fn parent_text(t: &str) -> Option<&str> {
    match crate::ir::last_slash(t) {
        Some(0) if t.len() > 1 => Some("/"),
        Some(i) if i > 0 => Some(&t[..i]),
        _ => None,
    }
}

/// A list without repeats, in first-seen order. Each filter is kept
/// once, with its place in the list: a list beside a set of copies of it
/// was 45 MiB of the SBPL lane at 100,000 rules (#38).
#[derive(Default)]
struct Unique {
    at: Map<String, usize>,
}

impl Unique {
    fn push(&mut self, f: String) {
        let next = self.at.len();
        self.at.entry(f).or_insert(next);
    }

    /// The filters in the order they were first pushed.
    fn into_list(self) -> Vec<String> {
        let mut v: Vec<(usize, String)> = self.at.into_iter().map(|(f, i)| (i, f)).collect();
        // The places are distinct: an unstable sort gives the one order.
        v.sort_unstable_by_key(|&(i, _)| i);
        v.into_iter().map(|(_, f)| f).collect()
    }
}

/// The two lists of [`protect`], each without repeats in first-seen
/// order. A filter is a number until the lists are complete (its
/// spelling, how it matches and the node it was first pushed for), and
/// each is made once for both lists: a set of filters per list, beside
/// the directories looked at, was 60 MiB of the SBPL lane at 100,000
/// rules (#38).
#[derive(Default)]
struct Lists {
    /// Each number's filter, as it will be made.
    filters: Vec<Pending>,
    /// Each list, as numbers.
    lists: [Vec<u32>; 2],
    /// Which lists hold each number.
    held: Vec<[bool; 2]>,
}

/// A filter not made yet: `m` of the first `len` bytes of node `node`'s
/// `spelling`th spelling (an ancestor's, or its parameter's root): 12
/// bytes, where the spelling itself took 32.
#[derive(Clone, Copy)]
struct Pending {
    node: u32,
    len: u32,
    spelling: u16,
    m: Match,
}

/// No number yet.
const NONE: u32 = u32::MAX;

impl Lists {
    /// A new filter's number: `m` of `rest` (the first bytes of node
    /// `node`'s `spelling`th spelling), pushed first for that node.
    fn add(&mut self, m: Match, node: usize, spelling: usize, rest: &str) -> u32 {
        let i = u32::try_from(self.filters.len())
            .ok()
            .filter(|&i| i != NONE)
            .expect("fewer than 2^32 - 1 filters");
        self.filters.push(Pending {
            node: u32::try_from(node).expect("fewer than 2^32 grants"),
            len: u32::try_from(rest.len()).expect("a path shorter than 4 GiB"),
            spelling: u16::try_from(spelling).expect("fewer than 2^16 spellings"),
            m,
        });
        self.held.push([false; 2]);
        i
    }

    /// Filter `i` at the end of list `k`, unless it is there already.
    fn push(&mut self, k: usize, i: u32) {
        let held = &mut self.held[i as usize][k];
        if !*held {
            *held = true;
            self.lists[k].push(i);
        }
    }

    /// The first list, and the second unless it is the same. The
    /// filters are made in the order they were first pushed, so that an
    /// error is the one met first.
    fn into_lists(self, nodes: &[Node]) -> Result<(Vec<String>, Option<Vec<String>>), EmitError> {
        let mut texts = Vec::with_capacity(self.filters.len());
        for p in &self.filters {
            let n = &nodes[p.node as usize];
            let s = n
                .spellings()
                .nth(p.spelling.into())
                .expect("the spelling it was added for");
            let s = Spelling {
                param: s.param,
                rest: &s.rest[..p.len as usize],
            };
            texts.push(filter(p.m, &s).map_err(node_err(n))?);
        }
        drop(self.filters);
        let [first, second] = self.lists;
        if first == second {
            let list = first
                .iter()
                .map(|&i| std::mem::take(&mut texts[i as usize]))
                .collect();
            return Ok((list, None));
        }
        let list = first.iter().map(|&i| texts[i as usize].clone()).collect();
        let other = second
            .iter()
            .map(|&i| std::mem::take(&mut texts[i as usize]))
            .collect();
        Ok((list, Some(other)))
    }
}

/// [`Unique::push`] for a grant's few filters, where a scan is cheaper
/// than hashing.
fn push_new(list: &mut Vec<String>, f: String) {
    if !list.contains(&f) {
        list.push(f);
    }
}

impl<'a> Files<'a> {
    /// The grants in emission order, and the parameters.
    pub fn new(ir: &'a Ir, program: &[String]) -> Result<Files<'a>, EmitError> {
        let mut nodes = Vec::with_capacity(ir.fs.len());
        for g in &ir.fs {
            for p in std::iter::once(&g.path).chain(&g.aliases) {
                if Spelling::parse(p).is_none() {
                    return Err(EmitError {
                        rule: g.source.label(),
                        message: format!(
                            "path {p:?} is neither absolute nor rooted at a portable parameter"
                        ),
                    });
                }
            }
            let first = Spelling::parse(&g.path).expect("checked above");
            nodes.push(Node {
                grant: g,
                depth: first.depth(),
            });
        }
        // Lowering leaves the grants in path order; then a stable sort by
        // depth alone gives (depth, path) order without comparing paths.
        if nodes.is_sorted_by(|a, b| a.grant.path <= b.grant.path) {
            nodes.sort_by_key(|n| n.depth);
        } else {
            nodes.sort_by(|a, b| (a.depth, &a.grant.path).cmp(&(b.depth, &b.grant.path)));
        }
        let texts = nodes.iter().map(|n| 1 + n.grant.aliases.len()).sum();
        let mut by_text = Texts::with_capacity(texts);
        let mut shared = false;
        for (i, n) in nodes.iter().enumerate() {
            // The strings the spellings were read from: the same texts.
            for (k, p) in std::iter::once(&n.grant.path)
                .chain(&n.grant.aliases)
                .enumerate()
            {
                shared |= by_text.insert(p, i, k, |i, k| text_of(&nodes, i, k)) != i;
            }
        }
        let mut params = Vec::new();
        for n in &nodes {
            for s in n.spellings() {
                if let Some(p) = s.param {
                    if !params.contains(&p) {
                        params.push(p);
                    }
                }
            }
        }
        // program_rule's parameter.
        if program.is_empty() && ir.commands.is_some() {
            params.push(super::PROGRAM_PARAM);
        }
        Ok(Files {
            index: Index {
                nodes,
                by_text,
                shared,
            },
            params,
        })
    }

    /// The deny/allow pairs per grant, shallow first, to `grant`.
    pub fn grants(
        &self,
        mut grant: impl FnMut(&Rule) -> Result<(), EmitError>,
    ) -> Result<(), EmitError> {
        let index = &self.index;
        let nodes = &index.nodes;
        // No spelling is decided at run time, nor shared by two grants: the
        // rules that match a path are those of the grants at and above it,
        // in depth order.
        let absolute = !index.shared
            && nodes
                .iter()
                .all(|n| n.spellings().all(|s| s.param.is_none()));
        let mut group: Option<Group> = None;
        // Per grant: it, or a grant above it, uses specific write operations.
        let mut specific = Vec::with_capacity(nodes.len());
        // Rights and specific-ness of the grants emitted so far that may
        // contain a parameter's directory at run time. Assumed layout
        // (docs/macos.md): any parameter may lie below an absolute path except
        // the device nodes of /dev; the workspace may lie below home or temp;
        // home and temp lie below no other parameter; an absolute path may
        // lie below any parameter (a rule written as `/Users/me/src/app/x`
        // for a workspace there), so it denies what parameter-rooted grants
        // allow and it lacks.
        let (mut abs, mut abs_specific) = (Access::NONE, false);
        let (mut roots, mut roots_specific) = (Access::NONE, false);
        let (mut params, mut params_specific) = (Access::NONE, false);
        for (i, n) in nodes.iter().enumerate() {
            // What the rules emitted so far allow here: the nearest grant that
            // certainly contains this one, plus any that might at run time.
            let mut nearest: Option<usize> = None;
            let mut spell = partial_write(n.grant.access);
            // Every spelling lies under the same grant.
            let mut one_above = true;
            for s in n.spellings() {
                let text = s.text();
                let above = parent_text(&text)
                    .and_then(|a| index.decide_text(a))
                    .filter(|&j| j < i);
                if let Some(j) = above {
                    spell |= specific[j];
                    one_above &= nearest.is_none_or(|k| k == j);
                    nearest = nearest.max(Some(j));
                } else {
                    one_above = false;
                }
            }
            let mut inherited = nearest.map_or(Access::NONE, |j| nodes[j].grant.access);
            let rooted = |p: Option<&str>| {
                n.spellings()
                    .any(|s| s.param.is_some() && (p.is_none() || s.param == p))
            };
            if rooted(None) {
                inherited = inherited.union(abs);
                spell |= abs_specific;
            }
            if rooted(Some(crate::ir::WORKSPACE_PARAM)) {
                inherited = inherited.union(roots);
                spell |= roots_specific;
            }
            if n.spellings().any(|s| s.may_nest_with_params()) {
                inherited = inherited.union(params);
                spell |= params_specific;
            }
            specific.push(spell);
            let access = n.grant.access;
            for s in n.spellings() {
                match s.param {
                    None if s.may_nest_with_params() => {
                        abs = abs.union(access);
                        abs_specific |= spell;
                    }
                    Some(p) if p != crate::ir::WORKSPACE_PARAM => {
                        roots = roots.union(access);
                        roots_specific |= spell;
                    }
                    _ => {}
                }
                if s.param.is_some() {
                    params = params.union(access);
                    params_specific |= spell;
                }
            }

            let lost = inherited.minus(access);
            // The allow is left out where it would allow again only what
            // the grant above allows and this one's deny leaves alone: it
            // keeps reads and execution the grant above gives, and no
            // rule between that grant's and this one's matches its paths.
            let under = nearest.filter(|&j| {
                let above = nodes[j].grant;
                absolute
                    && one_above
                    && !lost.is_empty()
                    && !access.writes()
                    && above.access.contains(access)
                    && above.kind != PathKind::File
            });
            // On the first rule of the grant, made only for one that is written.
            let mut comment = true;
            let mut comment_of = || {
                std::mem::take(&mut comment).then(|| {
                    [
                        n.grant.source.label().as_str(),
                        ": ",
                        &n.grant.path,
                        " (",
                        &rights_text(access),
                        ")",
                    ]
                    .concat()
                })
            };
            if !lost.is_empty() {
                let mut filters = Vec::with_capacity(2 * n.spellings().count());
                for s in n.spellings() {
                    // The literal as well as the subpath: the directory itself
                    // must not be created where it does not exist yet.
                    push_new(
                        &mut filters,
                        filter(Match::Literal, &s).map_err(node_err(n))?,
                    );
                    push_new(
                        &mut filters,
                        filter(Match::Subpath, &s).map_err(node_err(n))?,
                    );
                }
                let ops = deny_ops(lost, access, spell);
                let entry = match &n.grant.source {
                    Source::Protected { entry } => under.map(|j| (j, entry.as_str())),
                    _ => None,
                };
                match (&mut group, entry) {
                    (Some(g), Some((j, e))) if g.joins(j, access, &ops) => {
                        g.rule.filters.extend(filters);
                        g.entries.push(e);
                    }
                    (_, entry) => {
                        if let Some(g) = group.take() {
                            grant(&g.finish(nodes))?;
                        }
                        let rule = Rule {
                            allow: false,
                            ops,
                            filters,
                            comment: comment_of(),
                        };
                        match entry {
                            Some((j, e)) => {
                                group = Some(Group {
                                    rule,
                                    under: j,
                                    access,
                                    entries: vec![e],
                                })
                            }
                            None => grant(&rule)?,
                        }
                    }
                }
            }
            if under.is_some() {
                continue;
            }
            if let Some(g) = group.take() {
                grant(&g.finish(nodes))?;
            }
            if !access.is_empty() {
                let m = if n.grant.kind == PathKind::File {
                    Match::Literal
                } else {
                    Match::Subpath
                };
                let mut filters = Vec::with_capacity(n.spellings().count());
                for s in n.spellings() {
                    push_new(&mut filters, filter(m, &s).map_err(node_err(n))?);
                }
                grant(&Rule {
                    allow: true,
                    ops: allow_ops(access, spell),
                    filters,
                    comment: comment_of(),
                })?;
            }
        }
        if let Some(g) = group {
            grant(&g.finish(nodes))?;
        }
        Ok(())
    }

    /// What follows the grants.
    pub fn after(&self, ir: &Ir, program: &[String]) -> Result<After, EmitError> {
        Ok(After {
            program: program_rule(ir, program)?,
            traversal: traversal(&self.index)?,
            protect: protect(ir, &self.index)?,
        })
    }
}

/// Protections emitted one after another that lie under the same grant
/// and only deny: one rule, which is what the rules in a row mean.
struct Group<'a> {
    rule: Rule,
    /// The grant above them, and the rights they keep of it.
    under: usize,
    access: Access,
    entries: Vec<&'a str>,
}

impl Group<'_> {
    fn joins(&self, under: usize, access: Access, ops: &[&str]) -> bool {
        self.under == under && self.access == access && self.rule.ops == ops
    }

    fn finish(mut self, nodes: &[Node]) -> Rule {
        if self.entries.len() > 1 {
            self.rule.comment = Some(
                [
                    "protected ",
                    &self.entries.join(", "),
                    ": in ",
                    &nodes[self.under].grant.path,
                    " (",
                    &rights_text(self.access),
                    ")",
                ]
                .concat(),
            );
        }
        self.rule
    }
}

/// Made only on error: a label per grant is a string per grant.
fn node_err<'a>(n: &'a Node) -> impl Fn(crate::sbpl::EscapeError) -> EmitError + 'a {
    |e| esc_err(&n.grant.source.label())(e)
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
fn program_rule(ir: &Ir, program: &[String]) -> Result<Option<Rule>, EmitError> {
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
        // Files::new lists the parameter.
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
fn traversal(index: &Index) -> Result<Vec<String>, EmitError> {
    let mut out = Unique::default();
    let mut seen: Set<String> = Set::default();
    let mut roots = Vec::new();
    let mut text = String::new();
    // A directory readable by its spelling's grants may still be denied at
    // run time by an unreadable grant of the other kind of spelling (an
    // absolute rule on the directory a parameter turns out to be).
    let unreadable = |param: bool| {
        index.nodes.iter().any(|n| {
            !n.grant.access.read
                && n.spellings().any(|s| {
                    if param {
                        s.param.is_some()
                    } else {
                        s.may_nest_with_params()
                    }
                })
        })
    };
    let (params_unreadable, abs_unreadable) = (unreadable(true), unreadable(false));
    for n in &index.nodes {
        for s in n.spellings() {
            let other_unreadable = match s.param {
                Some(_) => abs_unreadable,
                None => s.may_nest_with_params() && params_unreadable,
            };
            for rest in s.ancestor_rests() {
                if s.param.is_none() && rest == "/" {
                    continue;
                }
                s.text_of(rest, &mut text);
                if seen.contains(&text) {
                    // Its ancestors were looked at with it.
                    break;
                }
                seen.insert(text.clone());
                if index.access_at(&text).read && !other_unreadable {
                    continue;
                }
                let a = Spelling {
                    param: s.param,
                    rest,
                };
                out.push(filter(Match::Literal, &a).map_err(node_err(n))?);
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
            rest: "",
        };
        out.push(filter(Match::Ancestors, &s).map_err(esc_err(p))?);
    }
    Ok(out.into_list())
}

/// Deny creating, deleting and renaming a directory when a grant below it
/// lacks that right: renaming `ws/a` would move a read-only `ws/a/b/.git`
/// out of its protection, and renaming a prepared directory onto a missing
/// `ws/a` would create one. Only where the policy would otherwise allow
/// it, except at and above a parameter's directory in portable mode,
/// where that is unknown until run time.
fn protect(ir: &Ir, index: &Index) -> Result<Vec<Rule>, EmitError> {
    let portable = ir.mode == PathMode::Portable;
    // Rights parameter-rooted grants give: at run time they may cover an
    // absolute directory above an absolute grant (a workspace rule and a
    // rule written as `/Users/me/src/app/x`).
    let from_params = index
        .nodes
        .iter()
        .filter(|n| n.spellings().any(|s| s.param.is_some()))
        .fold(Access::NONE, |a, n| a.union(n.grant.access));
    let mut lists = Lists::default();
    // Which of the two rights each directory was looked at for (one
    // copy of its text for both, where a set per right held two), and
    // its filter's number once it has one.
    let mut done: Map<String, ([bool; 2], u32)> = Map::default();
    // The parameters' `path-ancestors` filters' numbers.
    let mut roots: Vec<(&'static str, u32)> = Vec::new();
    let mut text = String::new();
    // The two rights, in the order of `lists`: create, delete.
    let rights: [fn(Access) -> bool; 2] = [|a| a.create, |a| a.delete];
    for (ni, n) in index.nodes.iter().enumerate() {
        for (k, right) in rights.iter().enumerate() {
            if right(n.grant.access) {
                continue;
            }
            for (si, s) in n.spellings().enumerate() {
                for rest in s.ancestor_rests() {
                    // Each directory is looked at once per right, and
                    // its ancestors with it.
                    s.text_of(rest, &mut text);
                    match done.get_mut(text.as_str()) {
                        Some(d) if d.0[k] => break,
                        Some(d) => d.0[k] = true,
                        None => {
                            let mut d = [false; 2];
                            d[k] = true;
                            done.insert(text.clone(), (d, NONE));
                        }
                    }
                    let allowed = right(index.access_at(&text));
                    // Whether a parameter's directory is granted from
                    // outside its root, or an absolute directory from a
                    // parameter's grant, is unknown until run time.
                    if allowed || portable && (s.param.is_some() || right(from_params)) {
                        let d = done.get_mut(text.as_str()).expect("looked at above");
                        if d.1 == NONE {
                            d.1 = lists.add(Match::Literal, ni, si, rest);
                        }
                        lists.push(k, d.1);
                    }
                }
                if let Some(p) = s.param.filter(|_| portable) {
                    let i = match roots.iter().find(|(q, _)| *q == p) {
                        Some(&(_, i)) => i,
                        None => {
                            let i = lists.add(Match::Ancestors, ni, si, "");
                            roots.push((p, i));
                            i
                        }
                    };
                    lists.push(k, i);
                }
            }
        }
    }
    // Before the filters are made: the directories' texts are as many.
    drop(done);
    let (create, unlink) = lists.into_lists(&index.nodes)?;
    let mut out = Vec::new();
    if !create.is_empty() && unlink.is_none() {
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
        // Both empty where the second is not given.
        (
            unlink.unwrap_or_default(),
            "file-write-unlink",
            "deleting or renaming",
        ),
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
