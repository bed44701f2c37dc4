//! `sbx run --report`: what is enforced, printed before the command
//! starts. A pure function of the plan so every ABI can be snapshotted.

use super::plan::{Enforced, Plan};
use crate::back::landlock::rights::{self, NET, SCOPES};
use crate::back::landlock::LinuxArtifact;
use crate::ir::Precision;
use std::fmt::Write;

pub struct Extras<'a> {
    /// Seccomp programs compiled, or why not.
    pub seccomp: &'a Result<usize, String>,
    /// Executables given `execute` at run time (program, commands,
    /// interpreters).
    pub exec_files: &'a [String],
    pub forced_abi: Option<u32>,
    /// The child runs as root (Landlock does not remove capabilities).
    pub root: bool,
    /// The namespaces this run uses, in words, and its mounts.
    pub namespaces: &'a str,
    pub mounts: &'a [String],
    /// The child sees only the granted paths.
    pub new_root: bool,
    /// The child's network namespace has nothing but `lo`.
    pub private_net: bool,
    /// The names of sbx's environment the child does not get
    /// ([`dropped_env`]).
    pub dropped_env: &'a [String],
    /// The run's own package caches, in words (`caches.rs`).
    pub caches: &'a [String],
}

fn status_word(p: &Precision) -> String {
    format!("{:?}", p.status).to_lowercase()
}

pub fn text<F>(art: &LinuxArtifact, plan: &Plan<F>, x: &Extras) -> String {
    let mut s = String::new();
    let enforced = match plan.enforced {
        Enforced::Fully => "fully enforced",
        Enforced::Partially => "partially enforced",
        Enforced::Not => "not enforced",
    };
    let forced = match x.forced_abi {
        Some(f) if f < plan.kernel_abi => format!(" (limited to ABI {f})"),
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "sbx: landlock: kernel ABI {}{forced}, using ABI {}: {enforced} (artifact needs ABI {} to be exact)",
        plan.kernel_abi, plan.abi, art.exact_abi
    );
    if plan.abi > 0 {
        let _ = writeln!(
            s,
            "sbx:   handled fs: {}",
            plan.handled_fs.names().join(" ")
        );
        let net = rights::names_of(NET, plan.handled_net);
        let scopes = rights::names_of(SCOPES, plan.scoped);
        let _ = writeln!(
            s,
            "sbx:   handled net: {}; scopes: {}",
            words(&net),
            words(&scopes)
        );
        for r in &plan.rules {
            let _ = writeln!(s, "sbx:   allow {}: {}", r.path, r.rights.names().join(" "));
        }
        for (port, bits) in &plan.ports {
            let _ = writeln!(
                s,
                "sbx:   allow tcp port {port}: {}",
                rights::names_of(NET, *bits).join(" ")
            );
        }
    }
    let lines: Vec<&Precision> = art
        .precision
        .iter()
        .chain(plan.lines.iter())
        .filter(|p| p.status.is_inexact())
        .collect();
    if lines.is_empty() {
        let _ = writeln!(s, "sbx: precision: every rule is exact");
    } else {
        let _ = writeln!(s, "sbx: precision: {} approximation(s)", lines.len());
        // Said once: the rules that share a status, target and reason are
        // listed together, in the order the first of them came.
        let mut groups: Vec<(&Precision, Vec<&str>)> = Vec::new();
        for p in lines {
            match groups
                .iter_mut()
                .find(|(q, _)| q.status == p.status && q.target == p.target && q.reason == p.reason)
            {
                Some((_, rules)) => rules.push(&p.rule),
                None => groups.push((p, vec![&p.rule])),
            }
        }
        for (p, rules) in groups {
            let _ = writeln!(
                s,
                "sbx:   {} {} ({}): {}",
                status_word(p),
                rules.join(", "),
                p.target,
                p.reason
            );
        }
    }
    match x.seccomp {
        Ok(n) => {
            let sc = &art.seccomp;
            let _ = write!(
                s,
                "sbx: seccomp: {n} filter(s); {} syscalls, ioctl {}, ptrace {} denied ({}); \
                 {} argument rules ({})",
                sc.deny.len(),
                sc.deny_ioctl.join(" "),
                sc.deny_ptrace.join(" "),
                sc.errno,
                sc.deny_args.len(),
                arg_rule_calls(&sc.deny_args)
            );
            match &sc.sockets {
                Some(f) => {
                    let _ = writeln!(
                        s,
                        "; sockets limited to {} ({})",
                        f.allow.join(" "),
                        f.errno
                    );
                }
                None => {
                    let _ = writeln!(s, "; sockets unrestricted");
                }
            }
        }
        Err(e) => {
            let _ = writeln!(s, "sbx: seccomp: not applied: {e}");
        }
    }
    let _ = writeln!(
        s,
        "sbx: env: {}{}",
        art.env.minimal.join(" "),
        if art.env.allow.is_empty() {
            String::new()
        } else {
            format!(" + {}", art.env.allow.join(" "))
        }
    );
    let _ = writeln!(
        s,
        "sbx: env dropped: {}",
        words(&x.dropped_env.iter().map(String::as_str).collect::<Vec<_>>())
    );
    let _ = writeln!(
        s,
        "sbx: exec: {}; executables given execute: {}",
        match &art.exec_allow {
            Some(_) => "only the listed commands and the program",
            None => "any file with an execute grant",
        },
        words(&x.exec_files.iter().map(String::as_str).collect::<Vec<_>>())
    );
    let l = &art.limits;
    let mut lim = Vec::new();
    if let Some(v) = l.cpu_time_s {
        lim.push(format!("cpu_time_s={v} (RLIMIT_CPU)"));
    }
    if let Some(v) = l.max_memory_mib {
        lim.push(format!("max_memory_mib={v} (RLIMIT_AS)"));
    }
    if let Some(v) = l.max_processes {
        lim.push(format!("max_processes={v} (RLIMIT_NPROC, per user)"));
    }
    if let Some(v) = l.wall_time_s {
        lim.push(format!("wall_time_s={v} (process tree killed)"));
    }
    let _ = writeln!(
        s,
        "sbx: limits: {}",
        words(&lim.iter().map(String::as_str).collect::<Vec<_>>())
    );
    if let Some(l) = listen_line(plan.handled_net, x) {
        let _ = writeln!(s, "sbx: listen: {l}");
    }
    let _ = writeln!(s, "sbx: namespaces: {}", x.namespaces);
    for m in x.mounts {
        let _ = writeln!(s, "sbx:   {m}");
    }
    match x.caches {
        [] => {}
        [one] => {
            let _ = writeln!(s, "sbx: caches: {one}");
        }
        all => {
            let _ = writeln!(s, "sbx: caches (private to this workspace and policy):");
            for c in all {
                let _ = writeln!(s, "sbx:   {c}");
            }
        }
    }
    if x.new_root {
        let _ = writeln!(
            s,
            "sbx: note: only the granted paths exist for the child (a new root); pathname \
             UNIX sockets inside them can be connected to (restricting that needs Landlock \
             ABI 9, not used)"
        );
    } else {
        let _ = writeln!(
            s,
            "sbx: note: connecting to pathname UNIX sockets is not restricted (that needs \
             Landlock ABI 9, not used)"
        );
    }
    if x.root {
        let _ = writeln!(
            s,
            "sbx: note: the child runs as uid 0 with no capability but those [linux] \
             capabilities lists (file permission bits apply to it); it owns root's files, so \
             it may change the modes of those it can write (read-only mounts stop it under the \
             new root)"
        );
    }
    s
}

/// What becomes of a port `listen()` picks without `bind()` (none when
/// TCP bind is not restricted at all).
fn listen_line(handled_net: u64, x: &Extras) -> Option<&'static str> {
    if handled_net & landlock::AccessNet::BindTcp as u64 == 0 {
        None
    } else if x.private_net {
        Some(
            "without bind() a TCP socket gets a port in the private network namespace, out of \
             the host's reach",
        )
    } else if x.seccomp.is_err() {
        Some(
            "NOT checked (no seccomp): a TCP socket that listens without bind() gets a port on \
             this host's network",
        )
    } else {
        Some(
            "checked by sbx (seccomp user notification): a TCP socket listens only on a port \
             the policy lets it bind; without bind(), EACCES",
        )
    }
}

fn words(v: &[&str]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(" ")
    }
}

/// The calls argument rules refuse, each once, in order.
fn arg_rule_calls(rules: &[crate::back::landlock::ArgRule]) -> String {
    let mut names: Vec<&str> = rules.iter().map(|r| r.syscall.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.join(" ")
}

/// The names in sbx's own environment the child does not get, sorted:
/// `--report` lists every one, so a tool failing for a missing variable
/// can be told why.
pub fn dropped_env(filter: &crate::runtime::env::EnvFilter) -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| !filter.allows(k))
        .map(|k| k.to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
