//! What the loader will ask the kernel for, decided before fork: paths
//! expanded and opened, rights trimmed to the file type and to the ABI in
//! use, and every difference from the artifact reported.
//!
//! Generic over the opened handle so tests can plan any ABI against a
//! simulated filesystem.

use crate::back::landlock::rights::{self, FsSet, NET, NET_ABI, SCOPES, SCOPE_ABI};
use crate::back::landlock::{expand_template, LandlockConfig};
use crate::ir::{path_within, Precision, Status};
use crate::runtime::expand::Values;
use std::io;

/// What opening a rule's path gave.
pub struct Opened<F> {
    pub handle: F,
    pub is_dir: bool,
}

/// One path rule, ready for `landlock_add_rule`.
#[derive(Debug)]
pub struct PathRule<F> {
    pub path: String,
    pub rights: FsSet,
    pub handle: F,
    /// The rule's path as written, when a symlink led to `path`.
    pub via: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforced {
    Fully,
    Partially,
    Not,
}

#[derive(Debug)]
pub struct Plan<F> {
    pub kernel_abi: u32,
    /// `min(kernel, --landlock-abi)`: the rights of this ABI are used.
    pub abi: u32,
    pub handled_fs: FsSet,
    pub handled_net: u64,
    pub scoped: u64,
    pub rules: Vec<PathRule<F>>,
    /// (port, net bits) for `landlock_add_rule(NET_PORT)`.
    pub ports: Vec<(u16, u64)>,
    pub enforced: Enforced,
    /// Differences found at run time (ABI, missing paths, overlaps only
    /// visible once placeholders are expanded).
    pub lines: Vec<Precision>,
    /// Said on stderr before the command runs, even without `--report`:
    /// rules dropped because a symlink leads out of the workspace.
    pub warnings: Vec<String>,
}

/// A precision line of this run (target `linux`).
pub(super) fn line(rule: impl Into<String>, status: Status, reason: String) -> Precision {
    Precision {
        rule: rule.into(),
        target: "linux".into(),
        status,
        reason,
        advisory: false,
    }
}

/// `doc`'s rules as paths (absolute, normalised) with their rights, the
/// placeholders expanded with `values` (rules whose template does not
/// expand are left out), for [`rights_at`].
pub fn rule_paths(doc: &LandlockConfig, values: &Values) -> Vec<(String, FsSet)> {
    let lookup = |name: &str| template_value(values, name);
    let mut out: Vec<(String, FsSet)> = Vec::new();
    for pb in &doc.path_beneath {
        let r = pb.allowed_access.iter().fold(FsSet::EMPTY, |r, n| {
            r.or(FsSet::named(n).unwrap_or(FsSet::EMPTY))
        });
        for t in &pb.parent {
            if let Ok(p) = expand_template(t, &lookup) {
                out.push((normalise(&p), r));
            }
        }
    }
    out
}

/// The rights `rules` ([`rule_paths`]) give `path` (absolute,
/// normalised): those of every rule at or above it, as Landlock adds
/// them up.
pub fn rights_at(rules: &[(String, FsSet)], path: &str) -> FsSet {
    rules
        .iter()
        .filter(|(p, _)| path_within(path, p))
        .fold(FsSet::EMPTY, |r, (_, s)| r.or(*s))
}

/// A portable artifact's placeholder, for this run.
fn template_value(values: &Values, name: &str) -> Option<String> {
    match name {
        "WORKSPACE" => Some(values.workspace.clone()),
        "HOME" => Some(values.home.clone()),
        "TMPDIR" => Some(values.temp.clone()),
        _ => None,
    }
}

/// `extra_files`: executables that get `read_file` + `execute` (the
/// program, the listed commands, their interpreters), already absolute.
pub fn plan<F>(
    doc: &LandlockConfig,
    kernel_abi: u32,
    forced_abi: Option<u32>,
    values: &Values,
    extra_files: &[String],
    open: &mut dyn FnMut(&str) -> io::Result<Opened<F>>,
    resolve: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<Plan<F>, String> {
    let abi = forced_abi.map_or(kernel_abi, |f| f.min(kernel_abi));
    let lookup = |name: &str| template_value(values, name);
    let mut lines = Vec::new();

    // Requested sets, from the (single) ruleset.
    let mut want_fs = FsSet::EMPTY;
    let mut want_net = 0u64;
    let mut want_scopes = 0u64;
    for rs in &doc.ruleset {
        for n in rs.handled_access_fs.iter().flatten() {
            want_fs = want_fs.or(FsSet::named(n).ok_or_else(|| format!("unknown right {n}"))?);
        }
        want_net |= rights::bits_of(NET, rs.handled_access_net.as_deref().unwrap_or(&[]))
            .ok_or("unknown network right")?;
        want_scopes |=
            rights::bits_of(SCOPES, rs.scoped.as_deref().unwrap_or(&[])).ok_or("unknown scope")?;
    }

    let usable = FsSet::at_abi(abi);
    let handled_fs = want_fs.and(usable);
    let handled_net = if abi >= NET_ABI { want_net } else { 0 };
    let scoped = if abi >= SCOPE_ABI { want_scopes } else { 0 };
    if abi == 0 {
        lines.push(line(
            "landlock",
            Status::Unsupported,
            "Landlock is not available (ABI 0): no filesystem or network rule is enforced".into(),
        ));
    } else {
        degrade_lines(
            abi,
            want_fs,
            handled_fs,
            want_net,
            handled_net,
            want_scopes,
            scoped,
            &mut lines,
        );
    }

    // Expand every rule; several rules may name one path.
    let mut wanted: Vec<(String, String, FsSet)> = Vec::new(); // (template, path, rights)
    for pb in &doc.path_beneath {
        let mut r = FsSet::EMPTY;
        for n in &pb.allowed_access {
            r = r.or(FsSet::named(n).ok_or_else(|| format!("unknown right {n}"))?);
        }
        for t in &pb.parent {
            let path = expand_template(t, &lookup)?;
            if !path.starts_with('/') {
                return Err(format!("path {path:?} is not absolute"));
            }
            let path = normalise(&path);
            wanted.push((t.clone(), path, r));
        }
    }
    let exec = FsSet::named("read_file")
        .unwrap()
        .or(FsSet::named("execute").unwrap());
    for f in extra_files {
        let path = normalise(f);
        wanted.push((escape_literal(&path), path, exec));
    }
    let mut merged: Vec<(Vec<String>, String, FsSet)> = Vec::new();
    for (t, p, r) in wanted {
        match merged.iter_mut().find(|m| m.1 == p) {
            Some(m) => {
                m.2 = m.2.or(r);
                m.0.push(t);
            }
            None => merged.push((vec![t], p, r)),
        }
    }
    merged.sort_by(|a, b| a.1.cmp(&b.1));

    overlap_lines(&merged, &mut lines);

    let mut rules = Vec::new();
    let mut missing: Vec<(String, FsSet, String)> = Vec::new();
    // `open` goes through no symlink; a path with one is resolved here,
    // as lowering resolves it, and a workspace path that leads out of
    // the workspace is dropped (RFD D43: only an approved external rule
    // may, and its artifact path is already the target).
    let mut ws_canon: Option<Option<String>> = None; // resolved when first needed
    let mut warnings = Vec::new();
    let mut in_workspace = |p: &str, resolve: &mut dyn FnMut(&str) -> Option<String>| {
        let w = ws_canon.get_or_insert_with(|| resolve(&values.workspace));
        path_within(p, &values.workspace) || w.as_deref().is_some_and(|w| path_within(p, w))
    };
    let extra: crate::hashed::Set<String> = extra_files.iter().map(|f| normalise(f)).collect();
    let runnable_elsewhere = |canon: &str| {
        merged.iter().any(|(_, p, r)| {
            !extra.contains(p.as_str()) && path_within(canon, p) && r.contains(exec)
        })
    };
    if abi > 0 {
        for (_, path, r) in &merged {
            let opened = match open(path) {
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => match resolve(path) {
                    Some(canon)
                        if in_workspace(path, resolve) && !in_workspace(&canon, resolve) =>
                    {
                        // The program (or a command) whose target another
                        // rule already lets run, such as a venv's
                        // `bin/python`: nothing is lost, so nothing is said.
                        if extra.contains(path) && runnable_elsewhere(&canon) {
                            continue;
                        }
                        warnings.push(format!(
                            "{path} resolves to {canon} through a symlink, outside the \
                             workspace; the rule is dropped"
                        ));
                        lines.push(line(
                            path.clone(),
                            Status::Dropped,
                            format!(
                                "resolves to {canon} through a symlink, outside the workspace: \
                                 the rule is dropped (an `external = true` rule approved with \
                                 `sbx approve` may reach it)"
                            ),
                        ));
                        continue;
                    }
                    // A symlink on the way (ELOOP) where the command may
                    // change entries could have been put there by an
                    // earlier run or a concurrent one: followed, it would
                    // grant whatever it names. Decided from the written
                    // path and the rules alone, never a second look at
                    // the path, which could change again meanwhile.
                    Some(canon) if !extra.contains(path.as_str()) => {
                        let changeable = |d: &str| {
                            merged.iter().any(|(_, p, r)| {
                                !r.and(FsSet::changes()).is_empty() && path_within(d, p)
                            })
                        };
                        let steered = path
                            .match_indices('/')
                            .map(|(i, _)| if i == 0 { "/" } else { &path[..i] })
                            .find(|d| changeable(d));
                        if let Some(dir) = steered {
                            warnings.push(format!(
                                "{path} leads through a symlink, below {dir}, which the command \
                                 can change; the rule is dropped"
                            ));
                            lines.push(line(
                                path.clone(),
                                Status::Dropped,
                                format!(
                                    "leads through a symlink below {dir}, where the command can \
                                     make or replace entries: the rule is dropped"
                                ),
                            ));
                            continue;
                        }
                        open(&canon).map(|o| (canon, o))
                    }
                    Some(canon) => open(&canon).map(|o| (canon, o)),
                    None => Err(e),
                },
                r => r.map(|o| (path.clone(), o)),
            };
            match opened {
                Ok((resolved, o)) => {
                    let via = (resolved != *path).then(|| path.clone());
                    let path = resolved;
                    let fit = if o.is_dir {
                        *r
                    } else {
                        r.and(FsSet::file_legal())
                    };
                    let rights = fit.and(handled_fs);
                    if !rights.is_empty() {
                        rules.push(PathRule {
                            path,
                            rights,
                            handle: o.handle,
                            via,
                        });
                    }
                }
                Err(e) => missing.push((path.clone(), *r, e.to_string())),
            }
        }
    }
    for (path, r, err) in missing {
        let covered = rules
            .iter()
            .filter(|k| path_within(&path, &k.path))
            .fold(FsSet::EMPTY, |a, k| a.or(k.rights));
        let lost = r.and(handled_fs).minus(covered);
        if !lost.is_empty() {
            lines.push(line(
                path.clone(),
                Status::Dropped,
                format!(
                    "cannot open {path} ({err}): {} not granted",
                    lost.names().join(" ")
                ),
            ));
        }
    }

    let mut ports = Vec::new();
    if handled_net != 0 {
        for np in &doc.net_port {
            let bits = rights::bits_of(NET, &np.allowed_access).ok_or("unknown network right")?;
            for p in &np.port {
                let p = u16::try_from(*p).map_err(|_| format!("port {p} out of range"))?;
                ports.push((p, bits & handled_net));
            }
        }
    }

    let enforced = if abi == 0 {
        Enforced::Not
    } else if handled_fs == want_fs && handled_net == want_net && scoped == want_scopes {
        Enforced::Fully
    } else {
        Enforced::Partially
    };
    Ok(Plan {
        kernel_abi,
        abi,
        handled_fs,
        handled_net,
        scoped,
        rules,
        ports,
        enforced,
        lines,
        warnings,
    })
}

#[allow(clippy::too_many_arguments)]
fn degrade_lines(
    abi: u32,
    want_fs: FsSet,
    handled_fs: FsSet,
    want_net: u64,
    handled_net: u64,
    want_scopes: u64,
    scoped: u64,
    lines: &mut Vec<Precision>,
) {
    for r in rights::FS {
        let bit = FsSet(r.bit);
        if !want_fs.contains(bit) || handled_fs.contains(bit) {
            continue;
        }
        // Without REFER, the kernel refuses every cross-directory rename
        // and link; every other missing right is simply not restricted.
        let (status, effect) = if r.name == "refer" {
            (
                Status::Narrower,
                "renaming or linking across directories always fails (EXDEV)",
            )
        } else {
            (Status::Wider, "not restricted anywhere")
        };
        lines.push(line(
            format!("landlock.{}", r.name),
            status,
            format!("needs Landlock ABI {}, in use: ABI {abi}: {effect}", r.abi),
        ));
    }
    for n in rights::names_of(NET, want_net & !handled_net) {
        lines.push(line(
            format!("landlock.{n}"),
            Status::Wider,
            format!(
                "needs Landlock ABI {NET_ABI}, in use: ABI {abi}: TCP ports are not restricted"
            ),
        ));
    }
    for n in rights::names_of(SCOPES, want_scopes & !scoped) {
        lines.push(line(
            format!("landlock.scope.{n}"),
            Status::Wider,
            format!("needs Landlock ABI {SCOPE_ABI}, in use: ABI {abi}: not scoped"),
        ));
    }
}

/// Overlaps that only exist once placeholders are expanded (`${HOME}`
/// granted read-write with a read-only rule under `${WORKSPACE}`): a
/// compile-time check could not see them.
fn overlap_lines(merged: &[(Vec<String>, String, FsSet)], lines: &mut Vec<Precision>) {
    for (tpl, path, r) in merged {
        for (atpl, apath, ar) in merged {
            if apath == path || !path_within(path, apath) {
                continue;
            }
            let seen_lexically = tpl.iter().any(|t| atpl.iter().any(|a| path_within(t, a)));
            let extra = ar.minus(*r);
            if !seen_lexically && !extra.is_empty() {
                lines.push(line(
                    path.clone(),
                    Status::Wider,
                    format!(
                        "{} from {apath} still apply beneath {path} (Landlock rights are additive)",
                        extra.names().join(" ")
                    ),
                ));
            }
        }
    }
}

/// Lexical normalisation (no symlink resolution: the kernel resolves
/// them when the path is opened).
fn normalise(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

fn escape_literal(p: &str) -> String {
    p.replace('$', "$$")
}
