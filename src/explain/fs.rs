//! Filesystem requests: most-specific-wins on the canonical path, and the
//! nested-escape boundary of external rules (RFD D43).

use super::{Boundary, Explanation, FsOp};
use crate::ir::{path_within, Access, Grant, Ir, Os, PathKind, PathMode};
use crate::lint::enforce::{note, Enforced, TargetNote};
use crate::lint::origin::Origin;
use crate::lower::paths::{anchor, canonicalise, join, normalise, Anchor};

fn rights(a: Access) -> String {
    if a.is_empty() {
        "nothing".into()
    } else {
        a.names().join(", ")
    }
}

pub fn explain(ir: &Ir, op: FsOp, path: &str) -> Explanation {
    let (a, rel) = anchor(path, ir.os == Os::Windows);
    let lexical = match a {
        Anchor::Workspace => join(&ir.roots.workspace, &rel),
        Anchor::Home => join(&ir.roots.home, &rel),
        Anchor::Absolute => normalise(&rel),
    };
    // The kernel sees the resolved path: a symlink cannot dodge a rule.
    let resolved = if ir.mode == PathMode::Resolved && ir.os == Os::host() {
        canonicalise(&lexical).0
    } else {
        lexical.clone()
    };
    let want = op.access();
    let request = format!("{} {resolved}", op.verb());
    let targets = targets(ir, op, &resolved);

    // Through an external rule, the request must stay under its approved target.
    for g in ir.fs.iter() {
        let Some(e) = &g.external else { continue };
        let mount = join(&ir.roots.workspace, &e.rule_path);
        if !path_within(&lexical, &mount) {
            continue;
        }
        let inside = path_within(&resolved, &e.canonical_target);
        let boundary = Some(Boundary {
            rule_path: e.rule_path.clone(),
            canonical_target: e.canonical_target.clone(),
            resolved: resolved.clone(),
            inside,
        });
        if !inside {
            return Explanation {
                allowed: false,
                request,
                rule: Some(origin(g)),
                reason: format!(
                    "{lexical} goes through the external rule {} but resolves to {resolved}, \
                     outside its approved target {} (nested-escape boundary)",
                    g.source.label(),
                    e.canonical_target
                ),
                boundary,
                targets,
            };
        }
        let mut ex = decide(ir, op, want, &resolved, request, targets);
        ex.boundary = boundary;
        return ex;
    }
    decide(ir, op, want, &resolved, request, targets)
}

fn origin(g: &Grant) -> Origin {
    Origin::grant(g)
}

fn decide(
    ir: &Ir,
    op: FsOp,
    want: Access,
    path: &str,
    request: String,
    targets: Vec<TargetNote>,
) -> Explanation {
    match ir.decide(path) {
        Some(g) if g.access.contains(want) => Explanation {
            allowed: true,
            request,
            rule: Some(origin(g)),
            reason: format!(
                "{} grants {} on {} (the most specific rule for this path)",
                g.source.label(),
                rights(g.access),
                g.path
            ),
            boundary: None,
            targets,
        },
        Some(g) => Explanation {
            allowed: false,
            request,
            rule: Some(origin(g)),
            reason: format!(
                "the most specific rule, {} on {}, grants {} but not {}",
                g.source.label(),
                g.path,
                rights(g.access),
                op.verb()
            ),
            boundary: None,
            targets,
        },
        None => Explanation {
            allowed: false,
            request,
            rule: None,
            reason: format!("no rule covers {path}: the filesystem is default-deny"),
            boundary: None,
            targets,
        },
    }
}

/// How `sbx run`'s namespace layer makes the deciding rule's carve-out
/// exact, in words, if it does (back::landlock::mounts decides the same
/// for the artifact).
fn namespace_mount(ir: &Ir, decider: Option<&crate::ir::Grant>) -> Option<String> {
    use crate::back::landlock::mounts::{fix, Fix};
    let g = decider?;
    if ir.linux.namespaces == crate::ir::Namespaces::Never || g.kind == PathKind::Missing {
        return None;
    }
    let above = ir
        .fs
        .iter()
        .filter(|a| path_within(&g.path, &a.path) && a.kind != PathKind::Missing)
        .fold(Access::NONE, |acc, a| acc.union(a.access));
    let f = fix(g.access, above.minus(g.access))?;
    let nested = ir
        .fs
        .iter()
        .any(|n| n.path != g.path && path_within(&n.path, &g.path) && !n.access.is_empty());
    if f == Fix::Hide && nested {
        return None;
    }
    Some(f.words(&g.path))
}

fn targets(ir: &Ir, op: FsOp, path: &str) -> Vec<TargetNote> {
    let want = op.access();
    let policy = ir.access_at(path).contains(want);
    let decider = ir.decide(path);
    // Landlock rights are additive: every rule at or above the path counts.
    let landlock = ir
        .fs
        .iter()
        .filter(|g| path_within(path, &g.path))
        .filter(|g| !(g.kind == PathKind::Missing))
        .fold(Access::NONE, |a, g| a.union(g.access))
        .contains(want);
    let linux = match (policy, landlock) {
        (true, true) => note("linux", Enforced::Exact, "Landlock allows it (kernel)"),
        (false, false) => note("linux", Enforced::Exact, "Landlock denies it (kernel)"),
        (false, true) => match namespace_mount(ir, decider) {
            Some(words) => note(
                "linux",
                Enforced::Exact,
                format!(
                    "sbx run denies it with namespaces: it {words} in a private mount \
                     namespace; with Landlock alone (namespaces = \"never\", or none on the \
                     host) it is allowed, since a rule above {path} grants {}",
                    op.verb()
                ),
            ),
            None => note(
                "linux",
                Enforced::Wider,
                format!(
                    "Landlock allows it anyway: rights are additive, and a rule above {path} \
                     grants {}",
                    op.verb()
                ),
            ),
        },
        (true, false) => note(
            "linux",
            Enforced::Narrower,
            "Landlock denies it: the rule's path does not exist, and Landlock drops rules on missing paths",
        ),
    };
    let macos = note(
        "macos",
        Enforced::Exact,
        if policy {
            "Seatbelt allows it (the most specific rule is emitted last)"
        } else {
            "Seatbelt denies it"
        },
    );
    let windows = if !ir.windows.appcontainer {
        note(
            "windows",
            if policy {
                Enforced::Exact
            } else {
                Enforced::Wider
            },
            "no per-path filesystem enforcement without windows.appcontainer = true: \
             the child can reach whatever the user can",
        )
    } else {
        match decider {
            Some(g) if !policy && matches!(op, FsOp::Create | FsOp::Write) && (g.access.create || g.access.update) => note(
                "windows",
                Enforced::Wider,
                "AppContainer ACLs grant create and update together (one NTFS bit): it is allowed",
            ),
            _ => note(
                "windows",
                Enforced::Exact,
                if policy {
                    "AppContainer ACL grant allows it"
                } else {
                    "AppContainer ACLs deny it"
                },
            ),
        }
    };
    vec![linux, macos, windows]
}
