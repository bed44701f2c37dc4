//! `sbx run`: compile (or read) the artifact for this OS and apply it to a
//! command. Exit codes: the child's, or 125/126/127 (CLI.md).

use camino::Utf8PathBuf;
use clap::Args;
use std::ffi::OsString;

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("source").args(["policy", "artifact"]))]
pub struct RunArgs {
    /// Policy file to compile for this OS (default: the default policy,
    /// POLICY.md §4).
    policy: Option<Utf8PathBuf>,
    /// Apply an artifact written by `sbx compile` instead of a policy
    /// (`--portable` artifacts get their placeholders filled here).
    #[arg(long)]
    artifact: Option<Utf8PathBuf>,
    /// Use `conversation.tools.NAME.access` of a larger config file.
    #[arg(long, requires = "policy")]
    tool: Option<String>,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    workspace: Option<Utf8PathBuf>,
    /// Home directory (default: $HOME).
    #[arg(long)]
    home: Option<Utf8PathBuf>,
    /// Approvals store for external paths (RFD D43).
    #[arg(long, requires = "policy")]
    approvals: Option<Utf8PathBuf>,
    /// Print what is enforced to stderr before the command starts.
    #[arg(long)]
    report: bool,
    /// After the command, list what the sandbox refused or hid and the
    /// rules that would allow it (Linux: traces the command, in the same
    /// sandbox, with strace).
    #[arg(long)]
    denials: bool,
    /// Print no warnings or notes before the command starts (errors are
    /// always printed), and no hint after it fails.
    #[arg(long)]
    quiet: bool,
    /// Grant reading PATH (relative to the current directory), in a
    /// layer on top of the policy.
    #[arg(long, value_name = "PATH", conflicts_with = "artifact")]
    allow_read: Vec<String>,
    /// Grant reading and writing PATH, in a layer on top of the policy.
    #[arg(long, value_name = "PATH", conflicts_with = "artifact")]
    allow_write: Vec<String>,
    /// Allow connecting to HOST (any port, or the scheme's) or HOST:PORT,
    /// in a layer on top of the policy.
    #[arg(
        long,
        value_name = "HOST[:PORT]",
        conflicts_with = "artifact",
        value_parser = super::quick::net_flag
    )]
    allow_net: Vec<String>,
    /// Use at most this Landlock ABI (tests of older kernels; Linux).
    #[arg(long, hide = true)]
    landlock_abi: Option<u32>,
    /// Print nothing before the command (`--denials` lowers the policy
    /// once more for its suggestions).
    #[arg(skip)]
    silent: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

/// `sbx run`'s code when sbx itself failed (nothing was run).
const FAILED: i32 = sbx::runtime::EXIT_SBX_FAILED;

/// Print diagnostics before the command starts; `--quiet` keeps only the
/// errors.
#[cfg(any(windows, target_os = "linux", target_os = "macos"))]
fn say(a: &RunArgs, diags: &[sbx::diag::Diagnostic], files: &sbx::diag::Files) {
    if a.silent {
        return;
    }
    if a.quiet {
        let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).cloned().collect();
        super::report(&errors, files, false);
    } else {
        super::report(diags, files, false);
    }
}

pub fn run(a: RunArgs) -> i32 {
    if a.denials {
        // The policy as this host lowers it, for the suggested rules; its
        // diagnostics are the traced run's to print.
        #[cfg(target_os = "linux")]
        let ir = host_ir(
            &RunArgs {
                silent: true,
                ..a.clone_without_denials()
            },
            sbx::ir::Os::host(),
        )
        .map(|h| h.ir);
        #[cfg(not(target_os = "linux"))]
        let ir: Option<sbx::ir::Ir> = None;
        let rerun = || run_here(a.clone_without_denials());
        return super::denials::run(a.workspace.as_ref(), a.home.as_ref(), ir.as_ref(), rerun);
    }
    let quiet = a.quiet;
    let code = run_here(a);
    if !quiet {
        super::denials::hint(code);
    }
    code
}

impl RunArgs {
    fn clone_without_denials(&self) -> RunArgs {
        RunArgs {
            policy: self.policy.clone(),
            artifact: self.artifact.clone(),
            tool: self.tool.clone(),
            workspace: self.workspace.clone(),
            home: self.home.clone(),
            approvals: self.approvals.clone(),
            report: self.report,
            denials: false,
            quiet: self.quiet,
            landlock_abi: self.landlock_abi,
            silent: self.silent,
            command: self.command.clone(),
            allow_read: self.allow_read.clone(),
            allow_write: self.allow_write.clone(),
            allow_net: self.allow_net.clone(),
        }
    }

    fn allow(&self) -> super::quick::Allow {
        super::quick::Allow {
            read: self.allow_read.clone(),
            write: self.allow_write.clone(),
            net: self.allow_net.clone(),
        }
    }

    /// The policy files, or the default policy's text when none is given.
    fn inputs(&self) -> Result<sbx::compile::Inputs, sbx::compile::Failure> {
        match &self.policy {
            Some(p) => sbx::compile::Inputs::read(std::slice::from_ref(p)),
            None => Ok(sbx::compile::Inputs::from_text(
                DEFAULT_POLICY_NAME,
                "version = 1\n",
            )),
        }
    }
}

/// How diagnostics name the default policy when no file is given.
const DEFAULT_POLICY_NAME: &str = "(default policy)";

/// The `--allow-*` layer on top of `layers` (none without flags), its
/// source added to `files`. `None` when it is refused; the reason is
/// printed.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn allow_layer(
    a: &RunArgs,
    layers: &[sbx::policy::LoadedLayer],
    files: &mut sbx::diag::Files,
) -> Option<Option<sbx::policy::LoadedLayer>> {
    let allow = a.allow();
    if allow.is_empty() {
        return Some(None);
    }
    let below = sbx::policy::merge::merge(layers);
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot read the current directory: {e}");
            return None;
        }
    };
    let source = match allow.layer(&cwd, below.fs.is_none()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return None;
        }
    };
    files.add(&source.name, source.text.clone());
    match sbx::policy::load_layer(source, None) {
        Ok(l) => Some(Some(l)),
        Err(d) => {
            say(a, &d, files);
            None
        }
    }
}

fn run_here(a: RunArgs) -> i32 {
    #[cfg(windows)]
    {
        windows(a)
    }
    #[cfg(target_os = "linux")]
    {
        linux(a)
    }
    #[cfg(target_os = "macos")]
    {
        macos(a)
    }
    #[cfg(not(any(windows, target_os = "linux", target_os = "macos")))]
    {
        let _ = (
            &a.policy,
            &a.artifact,
            &a.tool,
            &a.workspace,
            &a.home,
            &a.approvals,
            a.report,
            a.denials,
            a.quiet,
            a.landlock_abi,
            &a.command,
        );
        eprintln!("error: `sbx run` is not available on this OS in this build");
        FAILED
    }
}

#[cfg(target_os = "linux")]
fn linux(a: RunArgs) -> i32 {
    use sbx::runtime::linux::{self, RunOptions};
    let opts = RunOptions {
        report: a.report,
        workspace: a.workspace.clone().map(Into::into),
        home: a.home.clone().map(Into::into),
        landlock_abi: a.landlock_abi,
        proxy: None,
        own_files: a.artifact.iter().map(Into::into).collect(),
        quiet: a.quiet,
        earlier_runs_finished: false,
    };
    if let Some(path) = &a.artifact {
        return match std::fs::read_to_string(path) {
            Ok(text) => match linux::parse_artifact_to_run(&text, a.report) {
                Ok(art) => exiting(linux::run(&art, &a.command, &opts), art),
                Err(e) => {
                    eprintln!("sbx: {e}");
                    FAILED
                }
            },
            Err(e) => {
                eprintln!("error: cannot read {path}: {e}");
                FAILED
            }
        };
    }
    // Runs killed before their after-run work first: the lowering's
    // search of the workspace then sees what they planted moved aside,
    // and sbx's state directory exists for the rule that keeps it
    // read-only. Without a journal, `linux::run` says so.
    if let Ok(lines) = linux::sweep() {
        linux::write_warnings(&lines);
    }
    let opts = RunOptions {
        earlier_runs_finished: true,
        ..opts
    };
    match linux_artifact(&a) {
        Some(art) => exiting(linux::run(&art, &a.command, &opts), art),
        None => FAILED,
    }
}

/// `code`, with `data` left for the process's exit to free: sbx exits
/// next, and freeing the run's structures one by one (tens of
/// microseconds for a lowered policy) only delays the caller.
#[cfg(target_os = "linux")]
fn exiting<T>(code: i32, data: T) -> i32 {
    std::mem::forget(data);
    code
}

/// Compile the policy for this host (not through `compile::compile`, so
/// that a `required` policy reaches the loader, which refuses it with
/// its own report). `None` when it does not compile; the reason is
/// already printed.
#[cfg(target_os = "linux")]
fn linux_artifact(a: &RunArgs) -> Option<sbx::back::landlock::LinuxArtifact> {
    let h = host_ir(a, sbx::ir::Os::Linux)?;
    let learning = learning_ir(&h.ir);
    match sbx::back::landlock::build(learning.as_ref().unwrap_or(&h.ir)) {
        Ok(mut art) => {
            art.policy_hash = match &learning {
                // Any host through the proxy: a wider run, its own key.
                Some(_) => sbx::policy::hash::sha256(format!("{}\0learn", h.key).as_bytes()),
                None => h.key.clone(),
            };
            if let Some(ir) = &learning {
                art.proxy = Some(learning_spec(ir));
            }
            if !a.quiet {
                // What `check` warns about the rules Landlock drops or narrows.
                let targets = [sbx::compile::Target::Linux];
                let w = sbx::lint::target_warnings_up_to(
                    &h.ir,
                    &h.policy,
                    &h.layers,
                    &targets,
                    &art.precision,
                    super::WARNINGS_SHOWN,
                );
                say(a, &w, &h.files);
            }
            // The lowering is not needed again before sbx exits.
            std::mem::forget(h);
            Some(art)
        }
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

/// Besides the certificate variables, the caller's variables that change
/// a run's grants: `PATH` (`[commands]`, the caller's PATH grants) and
/// where the search for a repository above the workspace stops.
#[cfg(any(target_os = "linux", target_os = "macos"))]
const GRANTING_VARS: &[&str] = &["PATH", "GIT_CEILING_DIRECTORIES"];

/// The hash that stands for the policy in the package caches' key
/// (docs/presets.md) when `sbx run POLICY` lowers it: whatever makes this
/// run's grants differ from another's of the same workspace. That is
/// the merged policy (its `--allow-*` layer too), the approvals, the
/// roots, the caller's variables that change grants (`PATH`,
/// certificate bundles, `GIT_CEILING_DIRECTORIES`) and sbx's version
/// (its presets). Hashing these few inputs instead of the lowered
/// artifact keeps a serialisation of every rule off each run's start.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn run_key(
    policy: &sbx::policy::Policy,
    approvals: &[sbx::lower::Approval],
    roots: &sbx::ir::Roots,
    vars: &[(String, String)],
) -> String {
    #[derive(serde::Serialize)]
    struct Inputs<'a> {
        sbx: &'a str,
        policy: String,
        approvals: &'a [sbx::lower::Approval],
        roots: &'a sbx::ir::Roots,
        vars: Vec<&'a (String, String)>,
    }
    let mut vars: Vec<_> = vars
        .iter()
        .filter(|(k, _)| {
            GRANTING_VARS.contains(&k.as_str())
                || super::caller::CERTIFICATE_VARS.contains(&k.as_str())
        })
        .collect();
    vars.sort();
    sbx::policy::hash::sha256_json(&Inputs {
        sbx: env!("CARGO_PKG_VERSION"),
        policy: sbx::policy::hash::policy_hash(policy),
        approvals,
        roots,
        vars,
    })
}

/// `sbx learn`'s session (it sets [`sbx::runtime::proxy::LEARN_NET`]):
/// an unrestricted network goes through the proxy instead, which allows
/// every host and records each by name, the command in a private
/// network namespace where direct connections reach only the relay and
/// with TCP (and UDP for DNS) sockets only. `None`: not learning, or a network already held to
/// rules.
#[cfg(target_os = "linux")]
fn learning_ir(ir: &sbx::Ir) -> Option<sbx::Ir> {
    std::env::var_os(sbx::runtime::proxy::LEARN_NET)?;
    if !ir.net.other_protocols {
        return None;
    }
    let mut l = ir.clone();
    l.net.other_protocols = false;
    // UDP to the DNS responder, as for any policy with host rules.
    l.net.dns = true;
    Some(l)
}

/// The learning session's proxy: its rules (any host), and any host at
/// the ports clients that ignore the proxy variables use most, so that
/// the DNS responder answers every name (the relay serves those ports;
/// a connection to another is refused, and the trace records it).
#[cfg(target_os = "linux")]
fn learning_spec(ir: &sbx::Ir) -> sbx::back::landlock::ProxySpec {
    let mut rules: Vec<sbx::ir::NetRule> =
        ir.net.rules.iter().filter(|r| !r.bind).cloned().collect();
    for port in [22, 80, 443] {
        rules.push(sbx::ir::NetRule {
            index: rules.len(),
            file: "sbx learn".into(),
            line: 0,
            column: 0,
            host: "*".into(),
            scheme: None,
            port: Some(port),
            path_prefix: None,
            bind: false,
            allow: true,
        });
    }
    sbx::back::landlock::ProxySpec { rules }
}

/// A policy lowered for this host, with what its warnings need (macOS
/// reads only `ir`: SBPL drops and narrows no rule).
#[cfg(any(target_os = "linux", target_os = "macos"))]
#[cfg_attr(target_os = "macos", allow(dead_code))]
struct Host {
    ir: sbx::ir::Ir,
    policy: sbx::policy::Policy,
    layers: Vec<sbx::policy::LoadedLayer>,
    files: sbx::diag::Files,
    /// What names this run's grants for the package caches' key
    /// ([`run_key`]).
    key: String,
}

/// The policy lowered for this host (resolved paths, `[commands]` found
/// on PATH), diagnostics printed; `None` when it does not compile.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn host_ir(a: &RunArgs, os: sbx::ir::Os) -> Option<Host> {
    use sbx::compile::{self, Options};
    let inputs = match a.inputs() {
        Ok(i) => i,
        Err(f) => {
            say(a, &f.diagnostics, &Default::default());
            return None;
        }
    };
    let mut files = inputs.files();
    let mut opts = Options {
        workspace: a.workspace.clone(),
        home: a.home.clone(),
        tool: a.tool.clone(),
        portable: false,
        approvals: Vec::new(),
        jobs: 0,
    };
    match super::load_approvals(a.approvals.as_ref(), &opts) {
        Ok((list, warnings)) => {
            say(a, &warnings, &files);
            opts.approvals = list;
        }
        Err(d) => {
            say(a, &[d], &files);
            return None;
        }
    }
    let (mut layers, diags) = match compile::load_layers(&inputs, &opts) {
        Ok(x) => x,
        Err(f) => {
            say(a, &f.diagnostics, &files);
            return None;
        }
    };
    say(a, &diags, &files);
    layers.extend(allow_layer(a, &layers, &mut files)?);
    let policy = sbx::policy::merge::merge(&layers);
    match compile::lower_to_apply(&policy, &opts, os) {
        Ok(l) => {
            let mut ir = l.ir;
            // POLICY.md §13: the run's own policy, approvals store and
            // sbx's state (the after-run journal among it).
            let mut own: Vec<String> = a.policy.iter().map(|p| p.to_string()).collect();
            let state = sbx::approvals::state_dir();
            // The default store lies in the state directory, kept whole.
            own.extend(
                sbx::approvals::store_path(a.approvals.as_deref())
                    .filter(|p| !state.as_ref().is_some_and(|d| p.starts_with(d)))
                    .map(String::from),
            );
            own.extend(state.map(String::from));
            sbx::lower::hidden::run_files(&mut ir, &own);
            // The caller's certificate bundles and PATH (issue #36).
            let vars: Vec<(String, String)> = std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect();
            // Made once: the caller's PATH and the warnings test paths
            // against them (caller::add changes no sensitive path).
            let sensitive = sbx::lint::sensitive::patterns(&ir);
            let made = super::caller::add(&mut ir, &policy, &vars, &sensitive);
            let key = run_key(&policy, &opts.approvals, &ir.roots, &vars);
            if a.report && !a.silent {
                // Where these grants come from: the report's own lines
                // name paths and rights only.
                for line in made {
                    eprintln!("sbx: {line}");
                }
            }
            let (lines, rest): (Vec<_>, Vec<_>) = l
                .diagnostics
                .into_iter()
                .partition(|d| super::speak::one_line(d.code));
            say(a, &rest, &files);
            if !a.quiet && !a.silent {
                super::speak::print(&ir, &lines, &sensitive);
            }
            Some(Host {
                ir,
                policy,
                layers,
                files,
                key,
            })
        }
        Err(f) => {
            say(a, &f.diagnostics, &files);
            None
        }
    }
}

#[cfg(windows)]
fn windows(a: RunArgs) -> i32 {
    use sbx::back::windows::Spec;
    use sbx::compile::{self, Options, Target};

    let _ = (&a.home, a.landlock_abi);
    let text = match (&a.artifact, &a.policy) {
        (Some(file), _) => match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {file}: {e}");
                return FAILED;
            }
        },
        (None, _) => {
            let mut inputs = match a.inputs() {
                Ok(i) => i,
                Err(f) => return super::fail(f, &Default::default(), false).max(FAILED),
            };
            let mut opts = Options {
                workspace: a.workspace.clone(),
                tool: a.tool.clone(),
                ..Options::default()
            };
            match super::load_approvals(a.approvals.as_ref(), &opts) {
                Ok((list, warnings)) => {
                    say(&a, &warnings, &inputs.files());
                    opts.approvals = list;
                }
                Err(d) => {
                    say(&a, &[d], &inputs.files());
                    return FAILED;
                }
            }
            let allow = a.allow();
            if !allow.is_empty() {
                // The layer writes the default workspace rule out when
                // the policy below has no [[fs]] (it adds, not replaces).
                let default_fs = match compile::load(&inputs, &opts) {
                    Ok((p, _)) => p.fs.is_none(),
                    Err(f) => {
                        say(&a, &f.diagnostics, &inputs.files());
                        return FAILED;
                    }
                };
                let layer = std::env::current_dir()
                    .map_err(|e| e.to_string())
                    .and_then(|cwd| allow.layer(&cwd, default_fs));
                match layer {
                    Ok(l) => inputs.sources.push(l),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return FAILED;
                    }
                }
            }
            let warn: compile::Warn = &|ir, policy, layers, targets, reports| {
                sbx::lint::target_warnings_up_to(
                    ir,
                    policy,
                    layers,
                    targets,
                    reports,
                    super::WARNINGS_SHOWN,
                )
            };
            match compile::compile_warned(&inputs, &[Target::Windows], &opts, warn) {
                Ok(mut out) => {
                    say(&a, &out.diagnostics, &inputs.files());
                    out.artifacts.remove(0).text
                }
                Err(f) => {
                    say(&a, &f.diagnostics, &inputs.files());
                    return FAILED;
                }
            }
        }
    };
    let spec = match Spec::from_json(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return FAILED;
        }
    };
    let opts = sbx::runtime::windows::RunOptions {
        workspace: a.workspace.map(Into::into),
        report: a.report,
    };
    sbx::runtime::windows::run(&spec, &a.command, &opts)
}

/// macOS: the policy is lowered for this host and emitted with the
/// program as a literal; an artifact is a profile `sbx compile --target
/// macos` wrote (or a hand-written one).
#[cfg(target_os = "macos")]
fn macos(a: RunArgs) -> i32 {
    use sbx::runtime::macos::{self as mac, RunOptions};
    let _ = a.landlock_abi;
    let opts = RunOptions {
        report: a.report,
        quiet: a.quiet,
        workspace: a.workspace.clone().map(Into::into),
        home: a.home.clone().map(Into::into),
    };
    if let Some(path) = &a.artifact {
        return match std::fs::read_to_string(path) {
            Ok(text) => mac::run_artifact(&text, &a.command, &opts),
            Err(e) => {
                eprintln!("error: cannot read {path}: {e}");
                FAILED
            }
        };
    }
    // SBPL keeps a missing path by name and expresses carve-outs: no
    // rule is dropped or narrowed here, so no target warnings.
    match host_ir(&a, sbx::ir::Os::Macos) {
        Some(h) => mac::run(&h.ir, &a.command, &opts),
        None => FAILED,
    }
}
