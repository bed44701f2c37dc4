//! The precision report of the macOS profile: one line per policy rule.

use super::{files, net, TARGET};
use crate::hashed::Map;
use crate::ir::{Ir, PathKind, Precision, Source, Status};
use std::collections::hash_map::Entry;

pub(super) fn report(ir: &Ir) -> Vec<Precision> {
    // Lowering notes, except the network ones: those are restated below
    // for this target (Seatbelt enforces `localhost` exactly).
    let mut out: Vec<Precision> = ir
        .precision
        .iter()
        .filter(|p| !p.rule.starts_with("net["))
        .cloned()
        .collect();
    let line = |rule: String, status, reason: String| Precision {
        rule,
        target: TARGET.into(),
        status,
        reason,
        advisory: false,
    };
    let mut presets: Vec<(String, usize)> = Vec::new();
    // Counted lines: where each is in `out`, its reason and count.
    let mut counted: Vec<(usize, String, usize)> = Vec::new();
    let mut same: Map<(String, String), usize> = Map::default();
    // The protections' counted lines by entry, kind of filter and rights:
    // no label or reason is made for any but the first of each.
    let mut protected: Map<(&str, bool, crate::ir::Access), usize> = Map::default();
    for g in &ir.fs {
        if let Source::Command { .. } = g.source {
            continue; // reported with `[commands]` below
        }
        if let Source::Preset { name } = &g.source {
            match presets.iter_mut().find(|(n, _)| n == name) {
                Some(e) => e.1 += 1,
                None => presets.push((name.clone(), 1)),
            }
            continue;
        }
        let key = match &g.source {
            Source::Protected { entry } => {
                Some((entry.as_str(), g.kind == PathKind::File, g.access))
            }
            _ => None,
        };
        if let Some(&c) = key.as_ref().and_then(|k| protected.get(k)) {
            counted[c].2 += 1;
            continue;
        }
        let filter = match g.kind {
            PathKind::File => "literal",
            _ => "subpath",
        };
        let ops = files::allow_ops(g.access, false);
        let reason = if ops.is_empty() {
            format!("{filter}: denied")
        } else {
            format!("{filter}: {}", ops.join(" "))
        };
        if matches!(g.source, Source::Protected { .. } | Source::Covered { .. }) {
            // sbx's own, ten names per writable tree: one line per name
            // and reason, counted, as for presets.
            let c = match same.entry((g.source.label(), reason)) {
                Entry::Occupied(o) => *o.get(),
                Entry::Vacant(v) => {
                    let (label, reason) = v.key().clone();
                    counted.push((out.len(), reason.clone(), 0));
                    out.push(line(label, Status::Exact, reason));
                    *v.insert(counted.len() - 1)
                }
            };
            counted[c].2 += 1;
            if let Some(k) = key {
                protected.insert(k, c);
            }
            continue;
        }
        out.push(line(g.source.label(), Status::Exact, reason));
    }
    for (at, reason, n) in counted {
        if n > 1 {
            out[at].reason = format!("{reason} ({n} paths)");
        }
    }
    for (name, n) in presets {
        out.push(line(
            format!("preset {name}"),
            Status::Exact,
            format!("{n} paths"),
        ));
    }
    out.extend(net::precision(ir, TARGET));
    for c in ir.commands.iter().flatten() {
        let (status, reason) = match (&c.path, &c.args) {
            (None, _) => continue, // lowering reported it as dropped
            (Some(_), Some(_)) => (
                Status::Wider,
                "process-exec of the executable; argument prefixes are cooperative only".into(),
            ),
            (Some(p), None) => (Status::Exact, format!("process-exec of {p}")),
        };
        out.push(line(format!("commands.{}", c.name), status, reason));
    }
    let l = &ir.limits;
    for (name, set, status, reason) in [
        (
            "ssh_agent",
            ir.net.ssh_agent,
            Status::Unsupported,
            "the caller's ssh agent is not forwarded on macOS: the profile reaches no \
             socket outside the grants (~/.ssh/known_hosts is readable, read-only, where \
             ~/.ssh is not hidden by a broader rule)",
        ),
        (
            "limits.max_processes",
            l.max_processes.is_some(),
            Status::Unsupported,
            "not enforced on macOS",
        ),
        (
            "limits.max_memory_mib",
            l.max_memory_mib.is_some(),
            Status::Unsupported,
            "not enforced on macOS",
        ),
        (
            "limits.cpu_time_s",
            l.cpu_time_s.is_some(),
            Status::Exact,
            "RLIMIT_CPU, set by sbx run (not by the profile)",
        ),
        (
            "limits.wall_time_s",
            l.wall_time_s.is_some(),
            Status::Exact,
            "sbx run kills the command (not the profile)",
        ),
    ] {
        if set {
            out.push(line(name.into(), status, reason.into()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{roots, rule_grant};
    use crate::ir::{Access, Grant, Os, PathMode};

    #[test]
    fn protections_are_one_line_per_name_and_rights() {
        let protected = |path: &str, access| Grant {
            source: Source::Protected {
                entry: ".vscode".into(),
            },
            ..rule_grant(0, 3, path, access, PathKind::Missing)
        };
        let ir = Ir {
            fs: vec![
                rule_grant(0, 3, "/a", Access::READ_WRITE, PathKind::Dir),
                protected("/a/.vscode", Access::READ),
                rule_grant(1, 7, "/b", Access::READ_WRITE, PathKind::Dir),
                protected("/b/.vscode", Access::READ),
                protected("/c/.vscode", Access::READ_EXEC),
            ],
            ..Ir::deny_all(Os::Macos, PathMode::Resolved, roots())
        };
        let report = report(&ir);
        let lines: Vec<(&str, &str)> = report
            .iter()
            .map(|l| (l.rule.as_str(), l.reason.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                (
                    "fs[0] (policy.toml:3:1)",
                    "subpath: file-read* file-test-existence file-write*"
                ),
                (
                    "protected .vscode",
                    "subpath: file-read* file-test-existence (2 paths)"
                ),
                (
                    "fs[1] (policy.toml:7:1)",
                    "subpath: file-read* file-test-existence file-write*"
                ),
                (
                    "protected .vscode",
                    "subpath: file-read* file-test-existence process-exec* file-map-executable"
                ),
            ]
        );
    }
}
