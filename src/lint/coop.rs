//! SBX022: fields the kernel alone does not check (host, scheme beyond its
//! port, path_prefix, argument prefixes, per-command envs), with what each
//! target does enforce for the rule.

use super::enforce::{command_notes, rule_notes, TargetNote};
use super::origin::{Locator, Origin};
use crate::diag::{codes, Diagnostic};
use crate::ir::Ir;

fn join_notes(notes: &[TargetNote]) -> String {
    notes
        .iter()
        .map(|n| format!("{}: {}", n.target, n.note))
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn lint(ir: &Ir, loc: &Locator) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for r in &ir.net.rules {
        let mut fields = Vec::new();
        if r.host != "*" {
            fields.push(format!("host {:?}", r.host));
        }
        if let Some(s) = &r.scheme {
            fields.push(format!("scheme {s:?}"));
        }
        if let Some(p) = &r.path_prefix {
            fields.push(format!("path_prefix {p:?}"));
        }
        if fields.is_empty() {
            continue;
        }
        let o = Origin::net(r);
        // What each target does: the artifacts' own lines (`explain`
        // says the same).
        let rule = if r.allow { "" } else { "a deny rule's " };
        let msg = format!(
            "{}: {rule}{} {} not checked by the kernel alone. {}",
            o.label(),
            fields.join(", "),
            if fields.len() == 1 { "is" } else { "are" },
            join_notes(&rule_notes(ir, r))
        );
        out.push(
            Diagnostic::new(codes::COOPERATIVE, msg)
                .at(loc.locate(&o))
                .help(
                    "`sbx run` checks hosts with its proxy and relay; a compiled artifact \
                     used without it holds the rule to its port, and tools that honour the \
                     policy check the rest through `sbx explain` (or the library)",
                ),
        );
    }
    for c in ir.commands.iter().flatten() {
        let o = Origin::Command {
            name: c.name.clone(),
        };
        if c.args.is_some() {
            out.push(
                Diagnostic::new(
                    codes::COOPERATIVE,
                    format!(
                        "{}: argument prefixes are cooperative only. {}",
                        o.label(),
                        join_notes(&command_notes(c.path.as_deref(), true))
                    ),
                )
                .at(loc.locate(&o))
                .help("the kernel decides which executables may run, never with which arguments"),
            );
        }
        if !c.envs.is_empty() {
            out.push(
                Diagnostic::new(
                    codes::COOPERATIVE,
                    format!(
                        "{}: envs {:?} is cooperative only: the environment is filtered once, when `sbx run` starts the tool, not per command",
                        o.label(),
                        c.envs
                    ),
                )
                .at(loc.locate(&o)),
            );
        }
    }
    out
}
