//! SBX021: a nested rule (a carve-out that narrows or widens its parent)
//! that a target reports it cannot express exactly. Reads the back ends'
//! precision reports; lines from lowering (`target = "ir"`) are other
//! lints' business.

use super::index::Index;
use super::origin::{Locator, Origin};
use crate::diag::{codes, Diagnostic};
use crate::hashed::Map;
use crate::ir::{Ir, Precision, Source, Status};

pub fn lint(
    ir: &Ir,
    idx: &Index,
    reports: &[Precision],
    loc: &Locator,
    cap: &mut super::Cap,
) -> Vec<Diagnostic> {
    let mut by_rule: Map<&str, Vec<&Precision>> = Map::default();
    for l in reports.iter().filter(|l| {
        l.target != "ir"
            && matches!(
                l.status,
                Status::Wider | Status::Narrower | Status::Unsupported
            )
    }) {
        by_rule.entry(l.rule.as_str()).or_default().push(l);
    }
    let mut out = Vec::new();
    for (i, g) in ir.fs.iter().enumerate() {
        if !matches!(g.source, Source::Rule { .. } | Source::ProcessRoot) {
            continue;
        }
        let Some(p) = idx.parent(i).map(|p| &ir.fs[p]) else {
            continue;
        };
        // Same rights as the parent: not a carve-out (SBX027 says so).
        if p.access == g.access {
            continue;
        }
        let label = g.source.label();
        // (status, reason) → targets, in report order.
        let mut groups: Vec<(Status, &str, Vec<&str>)> = Vec::new();
        for line in by_rule.get(label.as_str()).into_iter().flatten() {
            match groups
                .iter_mut()
                .find(|(s, r, _)| *s == line.status && *r == line.reason)
            {
                Some((_, _, ts)) => {
                    if !ts.contains(&line.target.as_str()) {
                        ts.push(&line.target)
                    }
                }
                None => groups.push((line.status, &line.reason, vec![&line.target])),
            }
        }
        let kind = if g.access.contains(p.access) {
            "widens"
        } else if p.access.contains(g.access) {
            "narrows"
        } else {
            "changes the rights of"
        };
        let me = Origin::grant(g);
        for (status, reason, targets) in groups {
            if !cap.admit() {
                continue;
            }
            let status = match status {
                Status::Wider => "grants more than the policy",
                Status::Narrower => "grants less than the policy",
                _ => "cannot express it",
            };
            out.push(
                Diagnostic::new(
                    codes::CARVE_OUT,
                    format!(
                        "{} {kind} its parent {} at {}, and {} {status}: {reason}",
                        me.label(),
                        p.source.label(),
                        g.path,
                        targets.join(", ")
                    ),
                )
                .at(loc.locate(&me))
                .help("restructure the rules so no rule narrows a broader one on that target, or accept the approximation (enforcement = \"required\" refuses it)"),
            );
        }
    }
    out
}
