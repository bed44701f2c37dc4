//! The library API: files in, artifacts out. `build.rs` scripts and the CLI
//! both go through here.

use crate::back::{self, EmitError, Emitted};
use crate::diag::{codes, Diagnostic, Files, Severity};
use crate::hashed::Map;
use crate::ir::{Ir, Os, Precision};
use crate::lower::{self, Approval};
use crate::policy::{self, locate, source::SourceFile, LoadedLayer, Policy};
use camino::{Utf8Path, Utf8PathBuf};

/// What to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// SBPL text for `sandbox-exec`.
    Macos,
    /// JSON: Landlock + seccomp + env descriptor.
    Linux,
    /// The Landlock part alone, in landlockconfig's format.
    Landlockconfig,
    /// JSON job-object / token spec.
    Windows,
    /// The lowered policy as JSON.
    Ir,
}

impl Target {
    pub const ALL: [Target; 5] = [
        Target::Macos,
        Target::Linux,
        Target::Landlockconfig,
        Target::Windows,
        Target::Ir,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Target::Macos => "macos",
            Target::Linux => "linux",
            Target::Landlockconfig => "landlockconfig",
            Target::Windows => "windows",
            Target::Ir => "ir",
        }
    }

    /// File name used by `--target all -o DIR`.
    pub fn file_name(self) -> &'static str {
        match self {
            Target::Macos => "profile.sb",
            Target::Linux => "linux.json",
            Target::Landlockconfig => "landlockconfig.json",
            Target::Windows => "windows.json",
            Target::Ir => "ir.json",
        }
    }

    /// The OS whose paths and presets this target is lowered for.
    pub fn os(self) -> Os {
        match self {
            Target::Macos => Os::Macos,
            Target::Linux | Target::Landlockconfig => Os::Linux,
            Target::Windows => Os::Windows,
            Target::Ir => Os::host(),
        }
    }

    /// The artifact for the host OS.
    pub fn host() -> Target {
        match Os::host() {
            Os::Macos => Target::Macos,
            Os::Linux => Target::Linux,
            Os::Windows => Target::Windows,
        }
    }
}

/// Inputs besides the policy files. Empty fields take the host's values.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub workspace: Option<Utf8PathBuf>,
    pub home: Option<Utf8PathBuf>,
    /// `--tool NAME`: the policy is `conversation.tools.NAME.access`.
    pub tool: Option<String>,
    pub portable: bool,
    /// Approved external mounts (RFD D43).
    pub approvals: Vec<Approval>,
    /// At most this many OSes lowered at once, and as many targets of each
    /// emitted at once; 0: one per core. Each lowering alive at once adds
    /// its memory: 1 runs all on the calling thread, the peak lowest.
    pub jobs: usize,
}

/// A failed compile: every diagnostic, and the exit code CLI.md gives it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub diagnostics: Vec<Diagnostic>,
    /// 1: the policy is invalid or cannot be compiled as required;
    /// 2: an input could not be read.
    pub exit_code: i32,
}

/// Policy files read from disk (or given as text), with their sources kept
/// for rendering diagnostics.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub sources: Vec<SourceFile>,
}

impl Inputs {
    pub fn read(paths: &[Utf8PathBuf]) -> Result<Inputs, Failure> {
        let mut sources = Vec::new();
        let mut diags = Vec::new();
        for p in paths {
            match policy::read_file(p) {
                Ok(s) => sources.push(s),
                Err(d) => diags.push(d),
            }
        }
        if diags.is_empty() {
            Ok(Inputs { sources })
        } else {
            // Unreadable is exit 2; readable but not UTF-8 is an invalid policy.
            let io = diags.iter().any(|d| d.code == codes::IO);
            Err(Failure {
                diagnostics: diags,
                exit_code: if io { 2 } else { 1 },
            })
        }
    }

    pub fn from_text(name: &str, text: &str) -> Inputs {
        Inputs {
            sources: vec![SourceFile {
                name: name.into(),
                text: text.into(),
            }],
        }
    }

    pub fn files(&self) -> Files {
        let mut f = Files::default();
        for s in &self.sources {
            f.add(&s.name, s.text.clone());
        }
        f
    }
}

/// Load, validate and merge every layer; all files are checked even when an
/// early one fails, so one run reports every error.
pub fn load(inputs: &Inputs, opts: &Options) -> Result<(policy::Policy, Vec<Diagnostic>), Failure> {
    let (layers, diags) = load_layers(inputs, opts)?;
    Ok((policy::merge::merge(&layers), diags))
}

/// [`load`] without the merge: the layers keep their parsed sources, which
/// `check` needs to locate keys the merged policy does not carry.
pub fn load_layers(
    inputs: &Inputs,
    opts: &Options,
) -> Result<(Vec<policy::LoadedLayer>, Vec<Diagnostic>), Failure> {
    let mut layers = Vec::new();
    // `--tool NAME`: every file's `tools."*"` defaults are the base layers,
    // under every file's NAME (a specific setting always wins).
    let mut defaults = Vec::new();
    let mut diags = Vec::new();
    let mut failed = false;
    for s in &inputs.sources {
        let loaded = match opts.tool.as_deref() {
            Some(t) => policy::load_tool_layers(s.clone(), t).map(|(d, l)| {
                defaults.extend(d);
                l
            }),
            None => policy::load_layer(s.clone(), None),
        };
        match loaded {
            Ok(l) => layers.push(l),
            Err(d) => {
                failed = true;
                diags.extend(d);
            }
        }
    }
    defaults.append(&mut layers);
    let layers = defaults;
    if failed {
        return Err(Failure {
            diagnostics: diags,
            exit_code: 1,
        });
    }
    Ok((layers, diags))
}

/// Host values for lowering, for a given OS.
pub fn lower_options(opts: &Options, os: Os) -> Result<lower::Options, Failure> {
    if opts.portable {
        // Nothing on the host is looked at (roots become placeholders), so
        // a build script runs the same without $HOME or a current directory.
        return Ok(lower::Options {
            workspace: String::new(),
            home: String::new(),
            temp: String::new(),
            os,
            portable: true,
            path_var: None,
            approvals: opts.approvals.clone(),
        });
    }
    let io = |m: String| Failure {
        diagnostics: vec![Diagnostic::new(codes::BAD_PATH, m)],
        exit_code: 2,
    };
    let cwd = || {
        std::env::current_dir()
            .ok()
            .and_then(|p| Utf8PathBuf::from_path_buf(p).ok())
    };
    let workspace = match &opts.workspace {
        Some(w) if w.is_absolute() => w.clone(),
        Some(w) => cwd()
            .ok_or_else(|| io("cannot read the current directory".into()))?
            .join(w),
        None => cwd().ok_or_else(|| io("cannot read the current directory".into()))?,
    };
    // A bad --workspace is a usage error (exit 2), not an invalid policy.
    if os == Os::host() && !workspace.is_dir() {
        return Err(Failure {
            diagnostics: vec![Diagnostic::new(
                codes::BAD_PATH,
                format!("workspace {workspace} is not a directory"),
            )
            .help("pass --workspace DIR, or run sbx from the workspace")],
            exit_code: 2,
        });
    }
    let home = match &opts.home {
        Some(h) => h.to_string(),
        None => {
            let var = if os == Os::Windows && Os::host() == Os::Windows {
                "USERPROFILE"
            } else {
                "HOME"
            };
            std::env::var(var).map_err(|_| io(format!("${var} is not set; pass --home DIR")))?
        }
    };
    let temp = if os == Os::host() {
        std::env::temp_dir().to_string_lossy().into_owned()
    } else {
        match os {
            Os::Macos => "/private/tmp".into(),
            Os::Linux => "/tmp".into(),
            Os::Windows => format!("{home}/AppData/Local/Temp"),
        }
    };
    Ok(lower::Options {
        workspace: workspace.to_string(),
        home,
        temp,
        os,
        portable: opts.portable,
        path_var: std::env::var("PATH").ok(),
        approvals: opts.approvals.clone(),
    })
}

/// The IR for one OS, plus warnings.
pub fn lower_for(
    policy: &policy::Policy,
    opts: &Options,
    os: Os,
) -> Result<lower::Lowered, Failure> {
    lower_with(lower::lower, policy, opts, os)
}

/// [`lower_for`] with no `policy_hash` in the IR: for `sbx run`, which
/// applies it and writes nothing ([`lower::lower_unhashed`]).
pub fn lower_to_apply(
    policy: &policy::Policy,
    opts: &Options,
    os: Os,
) -> Result<lower::Lowered, Failure> {
    lower_with(lower::lower_unhashed, policy, opts, os)
}

type Lower = fn(&policy::Policy, &lower::Options) -> Result<lower::Lowered, Vec<Diagnostic>>;

fn lower_with(
    lower: Lower,
    policy: &policy::Policy,
    opts: &Options,
    os: Os,
) -> Result<lower::Lowered, Failure> {
    let lo = lower_options(opts, os)?;
    lower(policy, &lo).map_err(|d| Failure {
        diagnostics: d,
        exit_code: 1,
    })
}

/// Run one back end on an IR. [`emit_error`] turns a refusal into a
/// diagnostic located at the rule.
pub fn emit(ir: &Ir, target: Target) -> Result<Emitted, EmitError> {
    let capacity = match target {
        Target::Macos => back::sbpl::size_hint(ir),
        _ => 0,
    };
    back::collect(capacity, |out| emit_to(ir, target, out))
}

/// [`emit`], handing the text to `out` piece by piece as it is written
/// instead of keeping it. Returns the precision report.
pub fn emit_to(
    ir: &Ir,
    target: Target,
    out: &mut dyn FnMut(&[u8]),
) -> Result<Vec<Precision>, EmitError> {
    emit_lines_to(ir, target, out, true)
}

/// [`emit_to`], the report's advisory lines only if `advisory`. Without
/// it, landlockconfig makes none, and the Linux artifact (which carries
/// them, and the exact lines of its carve-outs) returns neither: what is
/// returned is what `enforcement = "required"` and `warn` read.
fn emit_lines_to(
    ir: &Ir,
    target: Target,
    out: &mut dyn FnMut(&[u8]),
    advisory: bool,
) -> Result<Vec<Precision>, EmitError> {
    match target {
        // Hashed here where the lowering left it unhashed: on this
        // target's thread, beside the other targets' work.
        Target::Ir if ir.ir_hash.is_empty() => {
            Ok(back::ir_json::emit_hashed_to(ir, &lower::ir_hash(ir), out))
        }
        Target::Ir => Ok(back::ir_json::emit_to(ir, out)),
        Target::Macos => back::sbpl::emit_to(ir, &Default::default(), out),
        Target::Linux => back::landlock::linux_to(ir, out, advisory),
        Target::Landlockconfig => back::landlock::landlockconfig_to(ir, out, advisory),
        Target::Windows => back::windows::emit_to(ir, out),
    }
}

/// A back end's refusal (a value the target cannot represent), located at
/// the rule it names.
pub fn emit_error(e: &EmitError, policy: &Policy, layers: &[LoadedLayer]) -> Diagnostic {
    Diagnostic::new(codes::BAD_CHARACTER, e.to_string()).at(locate::label(policy, layers, &e.rule))
}

/// A compiled artifact.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub target: Target,
    pub text: String,
    pub precision: Vec<Precision>,
}

/// The result of [`compile`]: artifacts (in the order asked) and warnings.
#[derive(Debug, Clone)]
pub struct Output {
    pub artifacts: Vec<Artifact>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Validate, lower and emit `targets`. Under `enforcement = "required"` an
/// artifact whose precision report is not all exact is refused (SBX013).
pub fn compile(inputs: &Inputs, targets: &[Target], opts: &Options) -> Result<Output, Failure> {
    compile_with(inputs, targets, opts, None)
}

/// Extra warnings about one lowering, given the targets compiled from it
/// and the inexact lines of their precision reports (less the advisory
/// ones: `compile -o` does not keep the others). The CLI passes the linter's
/// `target_warnings`: `check`'s warnings about rules a target drops or
/// narrows (the linter depends on this module, not the other way round).
pub type Warn<'a> =
    &'a (dyn Fn(&Ir, &Policy, &[LoadedLayer], &[Target], &[Precision]) -> Vec<Diagnostic> + Sync);

/// [`compile`], adding `warn`'s warnings.
pub fn compile_warned(
    inputs: &Inputs,
    targets: &[Target],
    opts: &Options,
    warn: Warn,
) -> Result<Output, Failure> {
    compile_with(inputs, targets, opts, Some(warn))
}

fn compile_with(
    inputs: &Inputs,
    targets: &[Target],
    opts: &Options,
    warn: Option<Warn>,
) -> Result<Output, Failure> {
    let texts: Vec<std::sync::Mutex<String>> = targets.iter().map(|_| Default::default()).collect();
    let (precision, diagnostics) = compile_each(inputs, targets, opts, true, warn, |i, ir, t| {
        let e = emit(ir, t)?;
        *texts[i].lock().unwrap_or_else(|e| e.into_inner()) = e.text;
        Ok(e.precision)
    })?;
    let texts = texts
        .into_iter()
        .map(|t| t.into_inner().unwrap_or_else(|e| e.into_inner()));
    let artifacts = targets
        .iter()
        .zip(texts)
        .zip(precision)
        .map(|((&target, text), precision)| Artifact {
            target,
            text,
            precision,
        })
        .collect();
    Ok(Output {
        artifacts,
        diagnostics,
    })
}

/// [`compile`] for writing the artifacts out: the text of `targets[i]` goes
/// to `out(i, piece)` as it is emitted and is not kept (the SBPL profile,
/// the largest, while it is rendered). Returns the warnings. On `Err`,
/// discard what `out` received: it may hold some artifacts, or part of one.
pub fn compile_to(
    inputs: &Inputs,
    targets: &[Target],
    opts: &Options,
    out: impl Fn(usize, &[u8]) + Sync,
) -> Result<Vec<Diagnostic>, Failure> {
    compile_each(inputs, targets, opts, false, None, emit_each(out))
        .map(|(_, diagnostics)| diagnostics)
}

/// [`compile_to`], adding `warn`'s warnings.
pub fn compile_to_warned(
    inputs: &Inputs,
    targets: &[Target],
    opts: &Options,
    warn: Warn,
    out: impl Fn(usize, &[u8]) + Sync,
) -> Result<Vec<Diagnostic>, Failure> {
    compile_each(inputs, targets, opts, false, Some(warn), emit_each(out))
        .map(|(_, diagnostics)| diagnostics)
}

/// `emit_to` of target `i` into `out(i, piece)`. The reports are not
/// kept, so no advisory line is made that the artifact does not carry:
/// neither `enforcement = "required"` nor `warn` reads one.
fn emit_each(
    out: impl Fn(usize, &[u8]) + Sync,
) -> impl Fn(usize, &Ir, Target) -> Result<Vec<Precision>, EmitError> + Sync {
    move |i, ir, t| emit_lines_to(ir, t, &mut |s| out(i, s), false)
}

/// What one OS's lowering gave: its warnings, and for each of its targets
/// (by index) the precision report or a refusal, what
/// `enforcement = "required"` refuses, and `warn`'s warnings.
struct Lane {
    lowered: Vec<Diagnostic>,
    reports: Vec<(usize, Vec<Precision>)>,
    errors: Vec<(usize, Diagnostic)>,
    warned: Vec<Diagnostic>,
}

/// Lower for each OS and `emit(i, ir, targets[i])`; the precision reports
/// (by target, if `keep`) and the warnings. Each OS is lowered and emitted
/// on its own thread, at most `opts.jobs` at once (each lowering is alive
/// only while its targets are emitted); the results are merged in the
/// order asked, so the output does not depend on which finished first.
fn compile_each(
    inputs: &Inputs,
    targets: &[Target],
    opts: &Options,
    keep: bool,
    warn: Option<Warn>,
    emit: impl Fn(usize, &Ir, Target) -> Result<Vec<Precision>, EmitError> + Sync,
) -> Result<(Vec<Vec<Precision>>, Vec<Diagnostic>), Failure> {
    let (layers, mut diags) = load_layers(inputs, opts)?;
    let policy = policy::merge::merge(&layers);
    let mut oses: Vec<Os> = Vec::new();
    for t in targets {
        if !oses.contains(&t.os()) {
            oses.push(t.os());
        }
    }
    // The same for every OS: hashed once. The IR's own hash only where an
    // artifact carries it: the Windows container's name, taken before the
    // lane's targets are emitted, and `ir.json`, whose `emit_to` takes it
    // on its own thread when the IR does not hold it yet.
    let policy_hash = policy::hash::policy_hash(&policy);
    let large = policy.fs.as_ref().map_or(0, Vec::len) >= LARGE_POLICY;
    let large_jobs = match opts.jobs {
        0 if large => 1,
        n => n,
    };
    // Each phase of a large compile (loading, a lowering, a target) frees
    // much of what it held before the next one touches pages of its own:
    // those go back to the system when the phase ends (#38).
    let phase_done = || {
        if large {
            crate::allocator::phase_done();
        }
    };
    if large {
        crate::allocator::large_compile();
    }
    let lane = |&os: &Os| -> Result<Lane, Failure> {
        phase_done();
        let mut l = lower_to_apply(&policy, opts, os)?;
        phase_done();
        if targets
            .iter()
            .any(|t| t.os() == os && matches!(t, Target::Windows))
        {
            l.ir.ir_hash = lower::ir_hash(&l.ir);
        }
        l.ir.policy_hash = policy_hash.clone();
        let mut out = Lane {
            lowered: l.diagnostics,
            reports: Vec::new(),
            errors: Vec::new(),
            warned: Vec::new(),
        };
        let mine: Vec<(usize, Target)> = targets
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, t)| t.os() == os)
            .collect();
        // The targets of one lowering on threads too: the Linux IR has
        // three, and they are most of the work of `--target all`. A large
        // policy's one at a time unless `--jobs` says otherwise, as its
        // lowerings: each target holds its own view of every protection
        // beside the IR, and three at once were the peak of `--target
        // all` (#38).
        let emitted = each_on_threads(&mine, large_jobs, |&(i, t)| {
            let e = emit(i, &l.ir, t);
            phase_done();
            e
        });
        let these: Vec<Target> = mine.iter().map(|&(_, t)| t).collect();
        let mut reports = Vec::new();
        for ((i, t), e) in mine.into_iter().zip(emitted) {
            match e {
                Ok(p) => {
                    if l.ir.enforcement == crate::ir::Enforcement::Required {
                        let refused = inexact(&p, t, &policy, &layers);
                        out.errors.extend(refused.into_iter().map(|d| (i, d)));
                    }
                    // `warn` is given the inexact lines that are not
                    // advisory: advisory lines are about sbx's own
                    // protections, which no warning is about, exact
                    // lines say nothing to warn of, and at 100,000 rules
                    // both are most of the reports (a line per absent
                    // protection, carve-out or rule), which `compile -o`
                    // therefore does not return for Linux.
                    let warned = |l: &Precision| !l.advisory && l.status.is_inexact();
                    match (warn.is_some(), keep) {
                        (true, true) => {
                            reports.extend(p.iter().filter(|l| warned(l)).cloned());
                            out.reports.push((i, p));
                        }
                        (true, false) => reports.extend(p.into_iter().filter(warned)),
                        (false, true) => out.reports.push((i, p)),
                        (false, false) => {}
                    }
                }
                Err(e) => out.errors.push((i, emit_error(&e, &policy, &layers))),
            }
        }
        if let Some(warn) = warn {
            out.warned = warn(&l.ir, &policy, &layers, &these, &reports);
        }
        Ok(out)
    };
    // A large policy's lowerings one at a time by default: each is alive
    // while its targets are emitted, and two of them at once doubled the
    // peak (#38: 100,000 rules took 1.15 GB with two lanes); their
    // targets too (above).
    let lanes = each_on_threads(&oses, large_jobs, lane);
    let mut seen = Seen::default();
    for i in 0..diags.len() {
        seen.first(&diags, i);
    }
    let mut precision = vec![Vec::new(); targets.len()];
    let mut errors = Vec::new();
    for lane in lanes {
        let lane = lane.map_err(|mut f| {
            diags.append(&mut f.diagnostics);
            Failure {
                diagnostics: std::mem::take(&mut diags),
                exit_code: f.exit_code,
            }
        })?;
        for d in lane.lowered.into_iter().chain(lane.warned) {
            diags.push(d);
            if !seen.first(&diags, diags.len() - 1) {
                diags.pop();
            }
        }
        for (i, p) in lane.reports {
            precision[i] = p;
        }
        errors.extend(lane.errors);
    }
    if !errors.is_empty() {
        errors.sort_by_key(|&(i, _)| i);
        diags.extend(errors.into_iter().map(|(_, d)| d));
        return Err(Failure {
            diagnostics: diags,
            exit_code: 1,
        });
    }
    Ok((precision, diags))
}

/// The `[[fs]]` rule count from which the OSes are lowered, and each
/// one's targets emitted, one after another unless `--jobs` says
/// otherwise.
pub const LARGE_POLICY: usize = 20_000;

/// `f` of each item, in order, on at most `jobs` threads at once (0: as
/// many as there are cores), this one among them. A panic in `f` is raised
/// again here.
pub(crate) fn each_on_threads<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let jobs = match jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let workers = jobs.min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let work = || loop {
        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(item) = items.get(k) else { break };
        let r = f(item);
        *results[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    };
    std::thread::scope(|s| {
        let others: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
        work();
        for h in others {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every item was taken by a worker")
        })
        .collect()
}

/// Which diagnostics a list already holds, by hash with the indices that
/// share it: lowering for several OSes repeats warnings, and a policy of
/// 100,000 rules has as many, so neither a scan per warning nor a second
/// copy of each.
#[derive(Default)]
struct Seen(Map<u64, Vec<usize>>);

impl Seen {
    /// Whether `list[i]` is the first of its kind in `list` (recording it).
    fn first(&mut self, list: &[Diagnostic], i: usize) -> bool {
        use std::hash::BuildHasher;
        let h = self.0.hasher().hash_one(&list[i]);
        let same = self.0.entry(h).or_default();
        if same.iter().any(|&j| list[j] == list[i]) {
            return false;
        }
        same.push(i);
        true
    }
}

/// One SBX013 error per inexact precision line, located at the rule, or
/// at `enforcement` (what makes it an error) for what the policy does not
/// write (the default policy, a preset it does not list).
pub fn inexact(
    precision: &[Precision],
    t: Target,
    policy: &Policy,
    layers: &[LoadedLayer],
) -> Vec<Diagnostic> {
    precision
        .iter()
        .filter(|p| p.status.is_inexact() && !p.advisory)
        .map(|p| {
            Diagnostic::new(
                codes::NOT_EXACT,
                format!(
                    "{} cannot be enforced exactly for {} ({:?}): {}",
                    p.rule,
                    t.name(),
                    p.status,
                    p.reason
                ),
            )
            .at(locate::label(policy, layers, &p.rule)
                .or_else(|| locate::key(layers, "/enforcement")))
            .help(
                "change the rule, or set enforcement = \"best_effort\" to accept the approximation",
            )
        })
        .collect()
}

/// Write `text` to `path` atomically (see [`crate::atomic`]): a failed or
/// killed compile never leaves a half-written `-o`.
pub fn write_atomic(path: &Utf8Path, text: &str) -> std::io::Result<()> {
    // 0o666 less the umask, as `File::create` would.
    crate::atomic::replace(path.as_std_path(), text.as_bytes(), 0o666)
}

/// [`write_atomic`] for text written piece by piece: write to the result,
/// then [`commit`](crate::atomic::Staged::commit) it.
pub fn stage_atomic(path: &Utf8Path) -> std::io::Result<crate::atomic::Staged> {
    crate::atomic::Staged::new(path.as_std_path(), 0o666)
}

/// Counts for exit-code decisions.
pub fn has_errors(d: &[Diagnostic]) -> bool {
    d.iter().any(|d| d.severity == Severity::Error)
}

#[cfg(test)]
mod tests {
    use super::each_on_threads;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Results come back in the order of the items, whichever finished
    /// first, and no more run at once than there are cores.
    #[test]
    fn threads_keep_the_order_and_the_core_count() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let items: Vec<u64> = (0..6).collect();
        let got = each_on_threads(&items, 0, |&k| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // The first item finishes last.
            std::thread::sleep(Duration::from_millis(if k == 0 { 60 } else { 5 }));
            running.fetch_sub(1, Ordering::SeqCst);
            k * 10
        });
        assert_eq!(got, [0, 10, 20, 30, 40, 50]);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(most.load(Ordering::SeqCst) <= cores.min(items.len()));
        if cores > 1 {
            assert!(most.load(Ordering::SeqCst) > 1, "nothing ran at once");
        }
    }

    #[test]
    fn one_job_runs_one_at_a_time_on_this_thread() {
        let here = std::thread::current().id();
        let running = AtomicUsize::new(0);
        let got = each_on_threads(&[1, 2, 3], 1, |&k| {
            assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0);
            assert_eq!(std::thread::current().id(), here);
            std::thread::sleep(Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            k
        });
        assert_eq!(got, [1, 2, 3]);
    }

    #[test]
    fn a_panic_on_a_thread_is_raised_by_the_caller() {
        let items = [1, 2, 3];
        let r = std::panic::catch_unwind(|| {
            each_on_threads(&items, 0, |&k| {
                assert!(k != 3, "item three");
                k
            })
        });
        let p = r.expect_err("the panic reaches the caller");
        let text = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        assert_eq!(text.as_deref(), Some("item three"));
    }

    /// Writing out (`compile_to`: reports not kept, so no advisory line
    /// is made that an artifact does not carry) gives the same artifacts,
    /// and `warn` the same report lines, as `compile`, whose landlockconfig
    /// report has advisory lines (a writable tree's absent protections).
    #[test]
    fn writing_out_gives_what_compile_gives() {
        use super::*;
        let dir = tempfile::tempdir().unwrap();
        let ws = Utf8PathBuf::from_path_buf(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(ws.join("home")).unwrap();
        let text = "version = 1\n\
                    [[fs]]\npath = \".\"\nread = true\nwrite = true\n\
                    [[fs]]\npath = \"sub\"\nread = true\n\
                    [[fs]]\npath = \"gone\"\nread = true\n";
        let inputs = Inputs::from_text("p.toml", text);
        let opts = Options {
            workspace: Some(ws.clone()),
            home: Some(ws.join("home")),
            ..Options::default()
        };
        let warn: Warn = &|_, _, _, targets, reports| {
            reports
                .iter()
                .map(|l| {
                    let m = format!("{targets:?} {} {:?} {}", l.rule, l.status, l.reason);
                    Diagnostic::new(codes::IO, m)
                })
                .collect()
        };
        let whole = compile_warned(&inputs, &Target::ALL, &opts, warn).unwrap();
        let texts: Vec<std::sync::Mutex<Vec<u8>>> =
            Target::ALL.iter().map(|_| Default::default()).collect();
        let diags = compile_to_warned(&inputs, &Target::ALL, &opts, warn, |i, b| {
            texts[i].lock().unwrap().extend_from_slice(b)
        })
        .unwrap();
        for (a, t) in whole.artifacts.iter().zip(texts) {
            assert_eq!(a.text.as_bytes(), t.into_inner().unwrap(), "{:?}", a.target);
        }
        assert_eq!(
            crate::diag::render_json(&diags),
            crate::diag::render_json(&whole.diagnostics)
        );
        assert!(whole.diagnostics.len() > 2);
        let lc = &whole.artifacts[2];
        assert_eq!(lc.target, Target::Landlockconfig);
        assert!(lc.precision.iter().any(|l| l.advisory));
    }
}
