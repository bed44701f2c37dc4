//! Environment names and globs, commands and argument prefixes, limits.

use super::{Widened, Widening};
use crate::ir::{Ir, Os};
use crate::lint::cover::{args_covers, env_covers};
use crate::lint::origin::Origin;

pub fn env(old: &Ir, new: &Ir) -> Vec<Widening> {
    let fold = new.os == Os::Windows;
    let old_all: Vec<&String> = old.env.minimal.iter().chain(old.env.allow.iter()).collect();
    let mut out = Vec::new();
    for (pat, origin) in new
        .env
        .minimal
        .iter()
        .map(|p| (p, Origin::MinimalEnv))
        .chain(
            new.env
                .allow
                .iter()
                .map(|p| (p, Origin::Env { pattern: p.clone() })),
        )
    {
        if !old_all.iter().any(|o| env_covers(o, pat, fold)) {
            out.push(Widening {
                widened: Widened::Env {
                    pattern: pat.clone(),
                },
                origin: Some(origin),
            });
        }
    }
    out
}

pub fn commands(old: &Ir, new: &Ir) -> Vec<Widening> {
    let fold = new.os == Os::Windows;
    let (Some(old_cmds), new_cmds) = (&old.commands, &new.commands) else {
        return Vec::new(); // the baseline runs anything: nothing is wider
    };
    let Some(new_cmds) = new_cmds else {
        return vec![Widening {
            widened: Widened::CommandsUnrestricted,
            origin: Some(Origin::NoCommands),
        }];
    };
    let mut out = Vec::new();
    for c in new_cmds {
        let origin = Some(Origin::Command {
            name: c.name.clone(),
        });
        let Some(o) = old_cmds.iter().find(|o| o.name == c.name) else {
            out.push(Widening {
                widened: Widened::Command {
                    name: c.name.clone(),
                },
                origin,
            });
            continue;
        };
        match (&o.args, &c.args) {
            (None, _) => {}
            (Some(_), None) => out.push(Widening {
                widened: Widened::Args {
                    command: c.name.clone(),
                    prefix: None,
                },
                origin: origin.clone(),
            }),
            (Some(oa), Some(na)) => {
                for p in na.iter().filter(|p| !oa.iter().any(|x| args_covers(x, p))) {
                    out.push(Widening {
                        widened: Widened::Args {
                            command: c.name.clone(),
                            prefix: Some(p.clone()),
                        },
                        origin: origin.clone(),
                    });
                }
            }
        }
        for e in c
            .envs
            .iter()
            .filter(|e| !o.envs.iter().any(|x| env_covers(x, e, fold)))
        {
            out.push(Widening {
                widened: Widened::CommandEnv {
                    command: c.name.clone(),
                    name: e.clone(),
                },
                origin: origin.clone(),
            });
        }
    }
    out
}

pub fn limits(old: &Ir, new: &Ir) -> Vec<Widening> {
    let (o, n) = (&old.limits, &new.limits);
    let mut out = Vec::new();
    for (name, before, after) in [
        ("max_processes", o.max_processes, n.max_processes),
        ("max_memory_mib", o.max_memory_mib, n.max_memory_mib),
        ("cpu_time_s", o.cpu_time_s, n.cpu_time_s),
        ("wall_time_s", o.wall_time_s, n.wall_time_s),
    ] {
        let Some(before) = before else { continue };
        if after.is_none_or(|a| a > before) {
            out.push(Widening {
                widened: Widened::Limit {
                    name: name.into(),
                    before,
                    after,
                },
                // A removed limit is an absence: point at the table, if any.
                origin: Some(Origin::Key {
                    pointer: if after.is_some() {
                        format!("/limits/{name}")
                    } else {
                        "/limits".into()
                    },
                }),
            });
        }
    }
    if old.enforcement == crate::ir::Enforcement::Required
        && new.enforcement == crate::ir::Enforcement::BestEffort
    {
        out.push(Widening {
            widened: Widened::Enforcement,
            origin: Some(Origin::Key {
                pointer: "/enforcement".into(),
            }),
        });
    }
    out
}
