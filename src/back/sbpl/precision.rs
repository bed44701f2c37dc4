//! The precision report of the macOS profile: one line per policy rule.

use super::{files, net, TARGET};
use crate::ir::{Ir, PathKind, Precision, Source, Status};

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
        out.push(line(g.source.label(), Status::Exact, reason));
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
