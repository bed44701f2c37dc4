//! Paths × rights. Under most-specific-wins, `access_at` is constant on
//! each region between rule paths, so comparing both IRs at every path
//! either of them names (and every alias) compares them everywhere.

use super::{Widened, Widening};
use crate::ir::{path_within, Ir};
use crate::lint::index::Index;
use crate::lint::origin::Origin;

pub fn widenings(old: &Ir, new: &Ir) -> Vec<Widening> {
    let mut paths: Vec<&str> = Vec::new();
    for g in old.fs.iter().chain(new.fs.iter()) {
        paths.push(&g.path);
        paths.extend(g.aliases.iter().map(String::as_str));
    }
    paths.sort_unstable();
    paths.dedup();
    let (oi, ni) = (Index::new(old), Index::new(new));
    let mut out: Vec<Widening> = Vec::new();
    for p in paths {
        let before = oi.access_at(p);
        let after = ni.access_at(p);
        let added = after.minus(before);
        if added.is_empty() {
            continue;
        }
        let origin = ni.decide(p).map(Origin::grant);
        // A path below an already reported one, widened by the same rule in
        // the same way, adds nothing a reviewer needs to read twice.
        let repeat = out.iter().any(|w| match &w.widened {
            Widened::Fs { path, added: a, .. } => {
                path_within(p, path) && *a == added && w.origin == origin
            }
            _ => false,
        });
        if !repeat {
            out.push(Widening {
                widened: Widened::Fs {
                    path: p.to_string(),
                    added,
                    before,
                },
                origin,
            });
        }
    }
    // An alias spelling (`/usr/bin/sh` of `/usr/bin/dash`) widened like its
    // grant's own path is the same widening.
    let dup = |w: &Widening| {
        match &w.widened {
        Widened::Fs { path, added, .. } => ni.decide(path).is_some_and(|g| {
            g.path != *path
                && g.aliases.contains(path)
                && out.iter().any(|o| {
                    matches!(&o.widened, Widened::Fs { path: p, added: a, .. } if *p == g.path && a == added)
                        && o.origin == w.origin
                })
        }),
        _ => false,
    }
    };
    let drop: Vec<bool> = out.iter().map(dup).collect();
    let mut drop = drop.into_iter();
    out.retain(|_| !drop.next().unwrap_or(false));
    out
}
