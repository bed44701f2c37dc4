//! Carve-outs Landlock alone cannot express (its rights are additive:
//! a rule cannot take back what a rule above it grants), made exact by
//! `sbx run` with mounts in a private mount namespace.
//!
//! A mount only has per-mount flags (read-only, noexec) or can hide a
//! path, so a carve-out is exact with namespaces when the rights it takes
//! away are all writes (read-only), `execute` (noexec), or everything (a
//! deny rule: hidden). Every rule beneath a carve-out gets a mount of its
//! own too, so that it keeps its rights under the carve-out's flags.

use super::{policy_access, Rule};
use crate::back::landlock::{escape_portable, escape_template, Link, MountKind, MountRule};
use crate::back::roots::{lookups, slash_end, Index};
use crate::hashed::Map;
use crate::ir::{Access, Ir, PathKind, PathMode, Source};
use std::borrow::Cow;

/// What a mount does about a carve-out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fix {
    Hide,
    Bind { read_only: bool, noexec: bool },
}

impl Fix {
    /// How `sbx run` makes it exact, in words.
    pub fn words(self, path: &str) -> String {
        match self {
            Fix::Hide => format!("hides {path} under an empty read-only mount"),
            Fix::Bind {
                read_only: true,
                noexec: true,
            } => format!("mounts {path} read-only and noexec"),
            Fix::Bind {
                read_only: true, ..
            } => format!("mounts {path} read-only"),
            Fix::Bind { .. } => format!("mounts {path} noexec"),
        }
    }

    /// What `m` does, if it takes rights away (a mount that only keeps a
    /// rule's own flags beneath a carve-out does not).
    pub fn of(m: &MountRule) -> Option<Fix> {
        match m.kind {
            MountKind::Hidden => Some(Fix::Hide),
            MountKind::Bind if m.read_only || m.noexec => Some(Fix::Bind {
                read_only: m.read_only,
                noexec: m.noexec,
            }),
            MountKind::Bind => None,
        }
    }

    /// How an exact precision line about the carve-out at `path` begins.
    /// The loader finds the mount each such line stands on by this text
    /// (`consistent`): the line alone would let `enforcement = "required"`
    /// run without it.
    pub fn claim(self, path: &str) -> String {
        format!("{CLAIM_START}{}{CLAIM_END}", self.words(path))
    }
}

/// How every [`Fix::claim`] begins and ends.
pub const CLAIM_START: &str = "exact with namespaces: sbx run ";
pub const CLAIM_END: &str = " in a private mount namespace";

/// The mount that takes `extra` (what Landlock grants at a rule's path
/// beyond the rule's own rights `want`) away, if a mount can.
pub fn fix(want: Access, extra: Access) -> Option<Fix> {
    if extra.is_empty() {
        return None;
    }
    if want.is_empty() {
        return Some(Fix::Hide);
    }
    // A mount is read-only or not: it cannot keep some writes and
    // refuse others, nor refuse reading while allowing anything else.
    if extra.read || (extra.writes() && want.writes()) {
        return None;
    }
    Some(Fix::Bind {
        read_only: extra.writes(),
        noexec: extra.execute,
    })
}

/// Every carve-out a mount makes exact, by path (the grants').
pub(super) type Carve<'a> = Map<&'a str, Fix>;

/// Every carve-out a mount makes exact.
pub(super) fn carve_outs<'a>(ir: &'a Ir, rules: &[Rule]) -> Carve<'a> {
    let index = Index::new(rules.iter().map(|r| r.path));
    let mut carve = Carve::default();
    for g in &ir.fs {
        if g.kind == PathKind::Missing && !is_protection(g) {
            continue;
        }
        let want = policy_access(ir, g);
        let got = index
            .covering(&g.path)
            .into_iter()
            .fold(Access::NONE, |a, i| a.union(rules[i].access));
        if let Some(f) = fix(want, got.minus(want)) {
            carve.entry(g.path.as_str()).or_insert(f);
        }
    }
    // A hidden path is an empty mount: a rule beneath it would have
    // nothing to stand on, so such a deny rule stays as Landlock has it.
    let mut nested: Vec<&str> = Vec::new();
    if carve.values().any(|&f| f == Fix::Hide) {
        let slash_ends = slash_ends(&carve);
        for g in ir.fs.iter().filter(|g| !g.access.is_empty()) {
            for above in strictly_above(&g.path, slash_ends) {
                if carve.get(above) == Some(&Fix::Hide) {
                    nested.push(above);
                }
            }
        }
    }
    for p in nested {
        carve.remove(p);
    }
    carve
}

/// Whether a carve-out lies strictly above `path`. `slash_ends`: that of
/// `carve` ([`slash_ends`]).
fn beneath_carve_out(carve: &Carve, path: &str, slash_ends: bool) -> bool {
    !carve.is_empty() && strictly_above(path, slash_ends).any(|above| carve.contains_key(above))
}

/// Whether a carve-out's path [`slash_end`]s.
fn slash_ends(carve: &Carve) -> bool {
    carve.keys().any(|k| slash_end(k))
}

/// The [`lookups`] of `path` but `path` itself.
fn strictly_above(path: &str, slash_ends: bool) -> impl Iterator<Item = &str> {
    lookups(path, slash_ends).filter(move |&c| c != path)
}

/// sbx's own protections (POLICY.md §7, §7a).
fn is_protection(g: &crate::ir::Grant) -> bool {
    matches!(g.source, Source::Protected { .. } | Source::Covered { .. })
}

/// The mounts of every carve-out a mount makes exact, and of every rule
/// beneath one, sorted by path. Paths that do not exist at compile time
/// get none (the loader could not mount on them; the precision report
/// says what applies instead), except sbx's own protections: the loader
/// mounts one that exists by then, and moves aside what the command
/// creates at one that does not (`runtime::linux::planted`).
pub(super) fn mounts<'a>(ir: &'a Ir, carve: &Carve) -> Vec<MountRule<Cow<'a, str>>> {
    // Borrowed where escaping changes nothing (a path without `$`): at
    // 100,000 rules, half a million mounts of absent protections.
    let escape = |p: &'a str| match ir.mode {
        _ if !p.contains('$') => Cow::Borrowed(p),
        PathMode::Resolved => Cow::Owned(escape_template(p)),
        PathMode::Portable => Cow::Owned(escape_portable(p)),
    };
    // At most a mount per grant: sized once, so that the list is not
    // copied as it grows.
    let mut out: Vec<MountRule<Cow<'a, str>>> = Vec::with_capacity(ir.fs.len());
    // The first grant at each path makes its mount. In a list sorted by
    // path (as lowering leaves it) the grants at one path are adjacent,
    // so the last mount's path is all there is to compare with; a set of
    // every path (half a million protections at 100,000 rules) only for
    // lists built otherwise.
    let sorted = ir.fs.is_sorted_by(|a, b| a.path <= b.path);
    let mut seen = crate::hashed::Set::default();
    let mut last: Option<&str> = None;
    let slash_ends = slash_ends(carve);
    for g in &ir.fs {
        let skip = g.kind == PathKind::Missing && !is_protection(g);
        let done = match sorted {
            true => last == Some(g.path.as_str()),
            false => seen.contains(g.path.as_str()),
        };
        if skip || done {
            continue;
        }
        let own = carve.get(g.path.as_str()).copied();
        let beneath = beneath_carve_out(carve, &g.path, slash_ends);
        let protection = is_protection(g);
        let absent = protection && g.kind == PathKind::Missing;
        let rule = match own {
            Some(Fix::Hide) => MountRule {
                path: escape(&g.path),
                kind: MountKind::Hidden,
                read_only: true,
                noexec: true,
                protection,
                absent,
            },
            Some(Fix::Bind { read_only, noexec }) => MountRule {
                path: escape(&g.path),
                kind: MountKind::Bind,
                read_only,
                noexec,
                protection,
                absent,
            },
            // Beneath a carve-out: its own mount, so the carve-out's
            // flags do not reach it. Landlock still decides its rights.
            None if beneath => MountRule {
                path: escape(&g.path),
                kind: MountKind::Bind,
                read_only: false,
                noexec: false,
                protection,
                absent,
            },
            None => continue,
        };
        match sorted {
            true => last = Some(&g.path),
            false => {
                seen.insert(g.path.as_str());
            }
        }
        out.push(rule);
    }
    // Sorted already when the grants were (as lowering leaves them) and
    // escaping kept their order: a sort would only allocate its scratch
    // copy of half the list.
    if !out.is_sorted_by(|a, b| a.path <= b.path) {
        out.sort_by(|a, b| a.path.cmp(&b.path));
    }
    out
}

/// The symlinks that led to granted paths (their aliases), sorted.
pub(super) fn links(ir: &Ir) -> Vec<Link> {
    let escape = |p: &str| match ir.mode {
        PathMode::Resolved => escape_template(p),
        PathMode::Portable => escape_portable(p),
    };
    let mut out: Vec<Link> = ir
        .fs
        .iter()
        .filter(|g| g.external.is_none() && g.kind != PathKind::Missing && !g.access.is_empty())
        .flat_map(|g| {
            g.aliases.iter().map(|a| Link {
                path: escape(a),
                target: escape(&g.path),
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup();
    out
}
