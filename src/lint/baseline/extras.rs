//! Target extras that weaken isolation when they change.

use super::{Widened, Widening};
use crate::ir::Ir;
use crate::lint::origin::Origin;

fn w(out: &mut Vec<Widening>, pointer: &str, detail: String) {
    out.push(Widening {
        widened: Widened::Extra {
            key: pointer.trim_start_matches('/').replace('/', "."),
            detail,
        },
        origin: Some(Origin::Key {
            pointer: pointer.into(),
        }),
    });
}

/// Landlock scopes in force: `None` means both (the default).
fn scopes(ir: &Ir) -> Vec<String> {
    ir.linux
        .scopes
        .clone()
        .unwrap_or_else(|| vec!["abstract_unix_socket".into(), "signal".into()])
}

pub fn widenings(old: &Ir, new: &Ir) -> Vec<Widening> {
    let mut out = Vec::new();
    for m in &new.macos.mach_lookup {
        if !old.macos.mach_lookup.contains(m) {
            w(
                &mut out,
                "/macos/mach_lookup",
                format!("Mach service {m:?} added"),
            );
        }
    }
    if new.macos.allow_pty && !old.macos.allow_pty {
        w(
            &mut out,
            "/macos/allow_pty",
            "pseudo-terminals allowed".into(),
        );
    }
    let now = scopes(new);
    for s in scopes(old).iter().filter(|s| !now.contains(s)) {
        w(
            &mut out,
            "/linux/scopes",
            format!("Landlock scope {s:?} dropped"),
        );
    }
    if let Some(before) = old.linux.min_abi {
        if new.linux.min_abi.is_none_or(|a| a < before) {
            w(
                &mut out,
                "/linux/min_abi",
                format!("accepts kernels below Landlock ABI {before}"),
            );
        }
    }
    for c in &new.linux.capabilities {
        if !old.linux.capabilities.contains(c) {
            w(
                &mut out,
                "/linux/capabilities",
                format!("the command keeps {c} as root"),
            );
        }
    }
    if new.linux.nested_user_namespaces && !old.linux.nested_user_namespaces {
        w(
            &mut out,
            "/linux/nested_user_namespaces",
            "the command may create user namespaces".into(),
        );
    }
    if new.linux.memfd_exec && !old.linux.memfd_exec {
        w(
            &mut out,
            "/linux/memfd_exec",
            "the command may run programs from a memfd".into(),
        );
    }
    if new.net.ssh_agent && !old.net.ssh_agent {
        w(
            &mut out,
            "/ssh_agent",
            "the command may use the caller's ssh agent".into(),
        );
    }
    let (ot, nt) = (&old.windows.token, &new.windows.token);
    // restricted and low_integrity protect different things: changing one
    // for the other loses a protection, as does `none`.
    if ot != nt && ot != "none" {
        w(
            &mut out,
            "/windows/token",
            format!("token {ot:?} replaced by {nt:?}"),
        );
    }
    if old.windows.appcontainer && !new.windows.appcontainer {
        w(
            &mut out,
            "/windows/appcontainer",
            "AppContainer disabled".into(),
        );
    }
    for u in &old.windows.ui_restrictions {
        if !new.windows.ui_restrictions.contains(u) {
            w(
                &mut out,
                "/windows/ui_restrictions",
                format!("UI restriction {u:?} dropped"),
            );
        }
    }
    if old.windows.kill_on_close && !new.windows.kill_on_close {
        w(
            &mut out,
            "/windows/kill_on_close",
            "the process tree outlives sbx".into(),
        );
    }
    out
}
