//! Lints on the shape of the fs rules: duplicates (SBX026), nested rules
//! that repeat their parent (SBX027), missing paths (SBX015), writable
//! `/` or home (SBX024), machine-specific paths (SBX023).

use super::index::Index;
use super::origin::{Locator, Origin};
use crate::diag::{codes, Diagnostic, Location};
use crate::hashed::Map;
use crate::ir::{path_within, Ir, Os, PathKind, PathMode, Source};
use crate::lower::paths::{anchor, canonicalise, join, normalise, Anchor};
use crate::policy::model::NetRule;
use crate::policy::{Located, Policy};

/// Both written, in one layer (a file, or one tool's part of it).
fn same_layer<T>(a: &Located<T>, b: &Located<T>) -> bool {
    a.loc.is_some() && b.loc.is_some() && a.layer == b.layer
}

fn at(l: &Option<Location>) -> String {
    match l {
        Some(l) => format!(" ({}:{}:{})", l.file, l.line, l.column),
        None => String::new(),
    }
}

/// Where a rule path lands, the way lowering computes it.
fn place(ir: &Ir, path: &str) -> String {
    let (a, rel) = anchor(path, ir.os == Os::Windows);
    let abs = match a {
        Anchor::Workspace => join(&ir.roots.workspace, &rel),
        Anchor::Home => join(&ir.roots.home, &rel),
        Anchor::Absolute => normalise(&rel),
    };
    if ir.mode == PathMode::Resolved && ir.os == Os::host() {
        canonicalise(&abs).0
    } else {
        abs
    }
}

/// SBX026: the same path, env name or network grant twice in one layer.
pub fn duplicates(ir: &Ir, policy: &Policy) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let fs = policy.fs.as_deref().unwrap_or_default();
    let places: Vec<String> = fs.iter().map(|r| place(ir, &r.value.path)).collect();
    let mut first: Map<(&str, usize), usize> = Map::default();
    for (j, r) in fs.iter().enumerate() {
        let i = *first.entry((places[j].as_str(), r.layer)).or_insert(j);
        if i == j || !same_layer(&fs[i], r) {
            continue;
        }
        out.push(
            Diagnostic::new(
                codes::DUPLICATE,
                format!(
                    "fs[{j}] names {}, like fs[{i}]{}; only fs[{j}] applies",
                    places[j],
                    at(&fs[i].loc)
                ),
            )
            .at(r.loc.clone())
            .help("merge the two rules into one"),
        );
    }
    let mut first: Map<(&NetRule, usize), usize> = Map::default();
    for (j, r) in policy.net.iter().enumerate() {
        if r.loc.is_none() {
            continue; // unlocated: no layer to repeat it in
        }
        let i = *first.entry((&r.value, r.layer)).or_insert(j);
        if i != j {
            out.push(
                Diagnostic::new(
                    codes::DUPLICATE,
                    format!("net[{j}] repeats net[{i}]{}", at(&policy.net[i].loc)),
                )
                .at(r.loc.clone())
                .help("remove one of them"),
            );
        }
    }
    let mut first: Map<(&str, usize), usize> = Map::default();
    for (j, r) in policy.env.iter().enumerate() {
        let i = *first.entry((r.value.name.as_str(), r.layer)).or_insert(j);
        if i != j && same_layer(&policy.env[i], r) {
            out.push(
                Diagnostic::new(
                    codes::DUPLICATE,
                    format!(
                        "env[{j}] names {:?} again (env[{i}]{})",
                        r.value.name,
                        at(&policy.env[i].loc)
                    ),
                )
                .at(r.loc.clone())
                .help("remove one of them"),
            );
        }
    }
    out
}

fn authored(s: &Source) -> bool {
    matches!(s, Source::Rule { .. } | Source::ProcessRoot)
}

/// SBX027: a nested rule with exactly its parent rule's rights, or a
/// deny rule (all rights false) that no broader rule grants anything.
pub fn redundant(ir: &Ir, idx: &Index, loc: &Locator) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, g) in ir.fs.iter().enumerate() {
        if !matches!(g.source, Source::Rule { .. }) || g.external.is_some() {
            continue;
        }
        let Some(p) = idx.parent(i).map(|p| &ir.fs[p]) else {
            if g.access.is_empty() {
                let me = Origin::grant(g);
                out.push(
                    Diagnostic::new(
                        codes::REDUNDANT,
                        format!(
                            "{} denies {}, which no broader rule grants: it has no effect",
                            me.label(),
                            g.path
                        ),
                    )
                    .at(loc.locate(&me))
                    .help("remove the deny rule; nothing beneath its path is granted anyway"),
                );
            }
            continue;
        };
        if !authored(&p.source) || p.access != g.access {
            continue;
        }
        let me = Origin::grant(g);
        out.push(
            Diagnostic::new(
                codes::REDUNDANT,
                format!(
                    "{} grants {} on {}, exactly what {} already grants there",
                    me.label(),
                    g.access.names().join(", "),
                    g.path,
                    p.source.label()
                ),
            )
            .at(loc.locate(&me))
            .help("remove the nested rule; it has no effect"),
        );
    }
    out
}

/// SBX015: rules whose path does not exist (resolved mode only).
pub fn missing(ir: &Ir, idx: &Index, loc: &Locator, cap: &mut super::Cap) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, g) in ir.fs.iter().enumerate() {
        if g.kind != PathKind::Missing || !authored(&g.source) || !cap.admit() {
            continue;
        }
        let me = Origin::grant(g);
        let fallback = match idx.parent(i).map(|p| &ir.fs[p]) {
            Some(p) => format!(
                "Landlock applies the rights of {} there instead",
                p.source.label()
            ),
            None => "Landlock drops the rule".into(),
        };
        out.push(
            Diagnostic::new(
                codes::PATH_MISSING,
                format!("{}: {} does not exist", me.label(), g.path),
            )
            .at(loc.locate(&me))
            .help(format!(
                "create it or fix the path; until it exists, SBPL keeps the rule by name and {fallback}"
            )),
        );
    }
    out
}

fn is_root(path: &str) -> bool {
    let p = path.trim_end_matches('/');
    p.is_empty()
        || (p.len() == 2 && p.as_bytes()[1] == b':' && p.as_bytes()[0].is_ascii_alphabetic())
}

/// SBX024: `/`, a drive root, home, or an ancestor of home, writable.
pub fn broad(ir: &Ir, loc: &Locator) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for g in &ir.fs {
        if !(authored(&g.source) || g.source == Source::Default) || !g.access.writes() {
            continue;
        }
        let what = if is_root(&g.path) {
            "the root directory"
        } else if path_within(&ir.roots.home, &g.path) {
            if g.path == ir.roots.home {
                "the home directory"
            } else {
                "an ancestor of the home directory"
            }
        } else {
            continue;
        };
        let me = Origin::grant(g);
        let writes: Vec<&str> = g
            .access
            .names()
            .into_iter()
            .filter(|n| *n != "read" && *n != "execute")
            .collect();
        out.push(
            Diagnostic::new(
                codes::BROAD_WRITE,
                format!(
                    "{} makes {} ({}) writable: {}",
                    me.label(),
                    what,
                    g.path,
                    writes.join(", ")
                ),
            )
            .at(loc.locate(&me))
            .help("grant write access to the directories the tool writes (the workspace, a cache), not to everything under them"),
        );
    }
    out
}

/// SBX023 (`--portable`): absolute and home paths in a shared policy.
pub fn portable(ir: &Ir, policy: &Policy, loc: &Locator) -> Vec<Diagnostic> {
    let windows = ir.os == Os::Windows;
    let mut found: Vec<(String, String, Option<Location>)> = Vec::new();
    for (i, r) in policy.fs.iter().flatten().enumerate() {
        found.push((format!("fs[{i}]"), r.value.path.clone(), r.loc.clone()));
    }
    for key in ["read_roots", "write_roots"] {
        let list = if key == "read_roots" {
            &policy.process.read_roots
        } else {
            &policy.process.write_roots
        };
        for (i, p) in list.iter().flatten().enumerate() {
            found.push((
                format!("process.{key}[{i}]"),
                p.clone(),
                loc.key(&format!("/process/{key}/{i}")),
            ));
        }
    }
    let mut out = Vec::new();
    for (label, path, l) in found {
        let why = match anchor(&path, windows).0 {
            Anchor::Workspace => continue,
            Anchor::Absolute => "an absolute path: it names a place on this machine's layout",
            Anchor::Home => "under the home directory: it depends on each user's files",
        };
        out.push(
            Diagnostic::new(
                codes::NOT_PORTABLE,
                format!("{label} uses {path:?}, which is {why}"),
            )
            .at(l)
            .help("use a workspace-relative path or a [process] preset, or keep machine-specific rules in a local layer that is not shared"),
        );
    }
    out
}

/// SBX032: `[linux] namespaces = "never"` gives up what only the layer
/// enforces; said at the setting.
pub fn namespaces_never(ir: &Ir, loc: &Locator) -> Option<Diagnostic> {
    if ir.linux.namespaces != crate::ir::Namespaces::Never {
        return None;
    }
    Some(
        Diagnostic::new(
            codes::NAMESPACES_NEVER,
            "[linux] namespaces = \"never\": `sbx run` on Linux gives up protected paths, \
             the run's own temp directories (the host's /tmp and its sockets are shared), \
             hiding host paths and sockets outside the grants, a private process tree, and \
             for a root run read-only mounts"
                .to_string(),
        )
        .at(loc.key("/linux/namespaces"))
        .help("keep the default (`auto`) unless a program cannot run in namespaces"),
    )
}

/// SBX034: `ssh_agent = true` with no allow rule that ssh can use.
pub fn ssh_agent_unused(ir: &Ir, loc: &Locator) -> Option<Diagnostic> {
    let ssh = |r: &crate::ir::NetRule| {
        r.allow && !r.bind && (r.scheme.as_deref() == Some("ssh") || r.port == Some(22))
    };
    if !ir.net.ssh_agent || ir.net.rules.iter().any(ssh) {
        return None;
    }
    Some(
        Diagnostic::new(
            codes::SSH_AGENT_UNUSED,
            "ssh_agent = true, but no [[net]] rule lets ssh out (scheme = \"ssh\" or port 22): \
             the agent is forwarded for nothing the command may reach"
                .to_string(),
        )
        .at(loc.key("/ssh_agent"))
        .help("add the host rule (host = \"github.com\", scheme = \"ssh\"), or drop ssh_agent"),
    )
}
