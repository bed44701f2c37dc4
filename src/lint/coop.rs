//! SBX022: fields only cooperating programs check (host, scheme beyond its
//! port, path_prefix, argument prefixes, per-command envs), with what each
//! OS does enforce for the rule.

use super::enforce::{command_notes, port_notes, TargetNote};
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
    // `sbx run` checks host, scheme and (plain-HTTP) path with its proxy:
    // said once per rule. macOS needs it for fewer policies (Seatbelt
    // names `localhost` itself).
    let proxied = crate::back::landlock::proxy::spec(ir).is_some();
    let linux_proxy = match (proxied, crate::back::sbpl::proxy_spec(ir).is_some()) {
        (true, true) => {
            ". On Linux and macOS, `sbx run` enforces host and scheme with its proxy for \
             proxy-aware clients (path_prefix for plain HTTP only)"
        }
        (true, false) => {
            ". On Linux, `sbx run` enforces host and scheme with its proxy for proxy-aware \
             clients (path_prefix for plain HTTP only)"
        }
        _ => "",
    };
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
        let msg = if r.allow {
            format!(
                "{}: {} cooperative only. {}{linux_proxy}",
                o.label(),
                if fields.len() == 1 {
                    format!("{} is", fields[0])
                } else {
                    format!("{} are", fields.join(", "))
                },
                join_notes(&port_notes(ir, r.port, r.bind))
            )
        } else if proxied {
            format!(
                "{}: a deny rule with {} is cooperative only in the compiled artifacts{linux_proxy}",
                o.label(),
                fields.join(", ")
            )
        } else {
            format!(
                "{}: a deny rule with {} is cooperative only; no OS enforces it",
                o.label(),
                fields.join(", ")
            )
        };
        out.push(
            Diagnostic::new(codes::COOPERATIVE, msg)
                .at(loc.locate(&o))
                .help("tools that honour the policy check it through `sbx explain` (or the library); the kernel does not"),
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
