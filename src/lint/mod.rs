//! `sbx check`: validate, lower and compile for every target (like
//! `compile`, writing nothing), then lint the result, and with a baseline,
//! check that the policy grants nothing the baseline does not.

pub mod baseline;
pub mod coop;
pub mod cover;
pub mod enforce;
pub mod index;
pub mod origin;
pub mod precision;
pub mod rules;
pub mod sensitive;

use crate::compile::{self, Failure, Inputs, Options, Target};
use crate::diag::{codes, Diagnostic, Severity};
use crate::hashed::Set;
use crate::ir::{Enforcement, Ir, Os, Precision};
use crate::policy::{merge, LoadedLayer, Policy};
use origin::Locator;

/// What `check` does besides validating and compiling.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// `--baseline`: the policy this one must stay within.
    pub baseline: Option<Inputs>,
    /// Codes whose warnings and notes are dropped (`--allow`); errors are
    /// never dropped.
    pub allow: Vec<String>,
    /// Codes raised to errors (`--deny`).
    pub deny: Vec<String>,
}

/// The lints of one policy lowered for this host, given the back ends'
/// precision reports. `portable`: the policy is meant to be shared.
pub fn lint(
    ir: &Ir,
    policy: &Policy,
    layers: &[LoadedLayer],
    reports: &[Precision],
    portable: bool,
) -> Vec<Diagnostic> {
    let loc = Locator { policy, layers };
    let idx = index::Index::new(ir);
    let hits = sensitive::hits(ir, &idx);
    let seen = sensitive::look(ir, &hits, portable);
    let mut out = sensitive::lint(ir, &hits, &seen, &loc);
    out.extend(sensitive::exfiltration(ir, &hits, &seen, &loc));
    out.extend(precision::lint(
        ir,
        &idx,
        reports,
        &loc,
        &mut Cap::new(usize::MAX),
    ));
    out.extend(coop::lint(ir, &loc));
    if portable {
        out.extend(rules::portable(ir, policy, &loc));
    }
    out.extend(rules::broad(ir, &loc));
    out.extend(rules::namespaces_never(ir, &loc));
    out.extend(rules::ssh_agent_unused(ir, &loc));
    out.extend(rules::duplicates(ir, policy));
    out.extend(rules::redundant(ir, &idx, &loc));
    out.extend(rules::missing(ir, &idx, &loc, &mut Cap::new(usize::MAX)));
    sort(&mut out);
    out
}

/// `check`'s warnings about rules dropped or narrowed for `targets`, from
/// their precision `reports`: what `compile` and `run` print. SBX021 for a
/// carve-out a target cannot express; SBX015 for a missing path when a
/// Landlock target is among them (SBPL keeps such a rule by name, and the
/// Windows back ends report per rule).
pub fn target_warnings(
    ir: &Ir,
    policy: &Policy,
    layers: &[LoadedLayer],
    targets: &[Target],
    reports: &[Precision],
) -> Vec<Diagnostic> {
    target_warnings_up_to(ir, policy, layers, targets, reports, usize::MAX)
}

/// [`target_warnings`] with at most `per_code` warnings of each code, and
/// one unlocated line saying how many more there are: a policy of
/// thousands of rules on paths that do not exist would otherwise print
/// (and hold) thousands of the same warning before a command starts.
pub fn target_warnings_up_to(
    ir: &Ir,
    policy: &Policy,
    layers: &[LoadedLayer],
    targets: &[Target],
    reports: &[Precision],
    per_code: usize,
) -> Vec<Diagnostic> {
    let loc = Locator { policy, layers };
    let idx = index::Index::new(ir);
    let mut cap = Cap::new(per_code);
    let mut out = precision::lint(ir, &idx, reports, &loc, &mut cap);
    out.extend(cap.rest(codes::CARVE_OUT, "carve-outs a target cannot express"));
    if targets
        .iter()
        .any(|t| matches!(t, Target::Linux | Target::Landlockconfig))
    {
        let mut cap = Cap::new(per_code);
        out.extend(rules::missing(ir, &idx, &loc, &mut cap));
        out.extend(cap.rest(codes::PATH_MISSING, "rules on paths that do not exist"));
    }
    sort(&mut out);
    out
}

/// Counts the warnings of one code and admits the first `max`.
pub struct Cap {
    max: usize,
    seen: usize,
}

impl Cap {
    pub fn new(max: usize) -> Cap {
        Cap { max, seen: 0 }
    }

    /// Whether the next warning is shown (asked before it is formatted).
    pub fn admit(&mut self) -> bool {
        self.seen += 1;
        self.seen <= self.max
    }

    /// The line about the warnings left out, if any were.
    fn rest(&self, code: &'static str, what: &str) -> Option<Diagnostic> {
        let more = self.seen.checked_sub(self.max).filter(|&n| n > 0)?;
        Some(Diagnostic::new(
            code,
            format!("{more} more {what}, not listed here (`sbx check` lists them all)"),
        ))
    }
}

/// One SBX028 error per widening, located at the responsible rule.
pub fn baseline_diagnostics(old: &Ir, new: &Ir, loc: &Locator) -> Vec<Diagnostic> {
    baseline::widenings(old, new)
        .into_iter()
        .map(|w| {
            let by = match &w.origin {
                Some(o) => format!(" (by {})", o.label()),
                None => String::new(),
            };
            Diagnostic::new(
                codes::WIDENS,
                format!("widens the baseline: {}{by}", w.widened.describe()),
            )
            .at(loc.locate_opt(w.origin.as_ref()))
            .help("narrow the rule, or update the baseline in the same change so the widening is reviewed")
        })
        .collect()
}

fn sort(d: &mut [Diagnostic]) {
    d.sort_by(|a, b| {
        let key = |d: &Diagnostic| {
            d.location
                .as_ref()
                .map(|l| (l.file.clone(), l.line, l.column))
        };
        key(a)
            .cmp(&key(b))
            .then_with(|| a.code.cmp(b.code))
            .then_with(|| a.message.cmp(&b.message))
    });
}

fn with(mut f: Failure, before: &[Diagnostic]) -> Failure {
    let mut all = before.to_vec();
    all.append(&mut f.diagnostics);
    f.diagnostics = all;
    f
}

/// Lower for every OS, host first; lowering warnings are collected once.
fn lower_all(
    policy: &Policy,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<(Os, Ir)>, Failure> {
    let mut oses = vec![Os::host()];
    for t in Target::ALL {
        if !oses.contains(&t.os()) {
            oses.push(t.os());
        }
    }
    let lowered =
        compile::each_on_threads(&oses, opts.jobs, |&os| compile::lower_for(policy, opts, os));
    let mut irs = Vec::new();
    let mut seen: Set<Diagnostic> = diags.iter().cloned().collect();
    for (os, l) in oses.into_iter().zip(lowered) {
        let l = l.map_err(|f| with(f, diags))?;
        for d in l.diagnostics {
            if seen.insert(d.clone()) {
                diags.push(d);
            }
        }
        irs.push((os, l.ir));
    }
    Ok(irs)
}

/// Everything `sbx check` reports. `Err` when the policy (or baseline) is
/// invalid or cannot be lowered (exit 1), or an input is unusable (exit 2).
pub fn check(
    inputs: &Inputs,
    opts: &Options,
    c: &CheckOptions,
) -> Result<Vec<Diagnostic>, Failure> {
    let (layers, mut diags) = compile::load_layers(inputs, opts)?;
    let policy = merge::merge(&layers);
    let irs = lower_all(&policy, opts, &mut diags)?;
    let host = &irs[0].1;
    let mut reports = Vec::new();
    let ir_for = |t: Target| &irs.iter().find(|(o, _)| *o == t.os()).expect("lowered").1;
    // Only the reports are kept: each text is dropped on its thread.
    let emitted = compile::each_on_threads(&Target::ALL, opts.jobs, |&t| {
        compile::emit(ir_for(t), t).map(|e| e.precision)
    });
    for (t, e) in Target::ALL.into_iter().zip(emitted) {
        let ir = ir_for(t);
        match e {
            Ok(precision) => {
                if ir.enforcement == Enforcement::Required {
                    diags.extend(compile::inexact(&precision, t, &policy, &layers));
                }
                reports.extend(precision);
            }
            Err(e) => diags.push(compile::emit_error(&e, &policy, &layers)),
        }
    }
    diags.extend(lint(host, &policy, &layers, &reports, opts.portable));
    if let Some(base) = &c.baseline {
        let (old_layers, _) = compile::load_layers(base, opts).map_err(|f| with(f, &diags))?;
        let old_policy = merge::merge(&old_layers);
        let old = compile::lower_for(&old_policy, opts, Os::host()).map_err(|f| with(f, &diags))?;
        let loc = Locator {
            policy: &policy,
            layers: &layers,
        };
        diags.extend(baseline_diagnostics(&old.ir, host, &loc));
    }
    diags.retain(|d| d.severity == Severity::Error || !c.allow.iter().any(|a| a == d.code));
    for d in diags.iter_mut() {
        if c.deny.iter().any(|x| x == d.code) {
            d.severity = Severity::Error;
        }
    }
    Ok(diags)
}
