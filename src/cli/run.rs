//! `sbx run`: compile (or read) the artifact for this OS and apply it to a
//! command. Exit codes: the child's, or 125/126/127 (CLI.md).

use camino::Utf8PathBuf;
use clap::Args;
use std::ffi::OsString;

#[derive(Args)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["policy", "artifact"]))]
pub struct RunArgs {
    /// Policy file to compile for this OS.
    policy: Option<Utf8PathBuf>,
    /// Apply an artifact written by `sbx compile` instead of a policy.
    #[arg(long)]
    artifact: Option<Utf8PathBuf>,
    /// Use `conversation.tools.NAME.access` of a larger config file.
    #[arg(long, requires = "policy")]
    tool: Option<String>,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    workspace: Option<Utf8PathBuf>,
    /// Print what is enforced to stderr before the command starts.
    #[arg(long)]
    report: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

/// `sbx run`'s code when sbx itself failed (nothing was run).
const FAILED: i32 = sbx::runtime::EXIT_SBX_FAILED;

pub fn run(a: RunArgs) -> i32 {
    #[cfg(windows)]
    {
        windows(a)
    }
    #[cfg(target_os = "macos")]
    {
        macos(a)
    }
    #[cfg(not(any(windows, target_os = "macos")))]
    {
        let _ = (
            &a.policy,
            &a.artifact,
            &a.tool,
            &a.workspace,
            a.report,
            &a.command,
        );
        eprintln!("error: `sbx run` is not available on this OS in this build");
        FAILED
    }
}

#[cfg(windows)]
fn windows(a: RunArgs) -> i32 {
    use sbx::back::windows::Spec;
    use sbx::compile::{self, Inputs, Options, Target};

    let text = match (&a.artifact, &a.policy) {
        (Some(file), _) => match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {file}: {e}");
                return FAILED;
            }
        },
        (None, Some(policy)) => {
            let inputs = match Inputs::read(std::slice::from_ref(policy)) {
                Ok(i) => i,
                Err(f) => return super::fail(f, &Default::default(), false).max(FAILED),
            };
            let opts = Options {
                workspace: a.workspace.clone(),
                tool: a.tool.clone(),
                ..Options::default()
            };
            match compile::compile(&inputs, &[Target::Windows], &opts) {
                Ok(mut out) => {
                    super::report(&out.diagnostics, &inputs.files(), false);
                    out.artifacts.remove(0).text
                }
                Err(f) => {
                    super::report(&f.diagnostics, &inputs.files(), false);
                    return FAILED;
                }
            }
        }
        (None, None) => unreachable!("clap requires one source"),
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

/// macOS: the policy is lowered for this host (resolved paths, commands
/// found on PATH) and emitted with the program as a literal; an artifact
/// is a profile `sbx compile --target macos` wrote.
#[cfg(target_os = "macos")]
fn macos(a: RunArgs) -> i32 {
    use sbx::compile::{self, Inputs, Options};
    use sbx::runtime::macos::{self as mac, RunOptions};

    let opts = RunOptions {
        report: a.report,
        workspace: a.workspace.clone().map(Into::into),
        home: None,
    };
    let policy = match (&a.artifact, &a.policy) {
        (Some(file), _) => {
            return match std::fs::read_to_string(file) {
                Ok(text) => mac::run_artifact(&text, &a.command, &opts),
                Err(e) => {
                    eprintln!("error: cannot read {file}: {e}");
                    FAILED
                }
            }
        }
        (None, Some(policy)) => policy,
        (None, None) => unreachable!("clap requires one source"),
    };
    let inputs = match Inputs::read(std::slice::from_ref(policy)) {
        Ok(i) => i,
        Err(f) => return super::fail(f, &Default::default(), false).max(FAILED),
    };
    let files = inputs.files();
    let mut copts = Options {
        workspace: a.workspace.clone(),
        tool: a.tool.clone(),
        ..Options::default()
    };
    match super::load_approvals(None) {
        Ok(list) => copts.approvals = list,
        Err(_) => return FAILED,
    }
    let (policy, diags) = match compile::load(&inputs, &copts) {
        Ok(x) => x,
        Err(f) => {
            super::report(&f.diagnostics, &files, false);
            return FAILED;
        }
    };
    super::report(&diags, &files, false);
    match compile::lower_for(&policy, &copts, sbx::ir::Os::Macos) {
        Ok(l) => {
            super::report(&l.diagnostics, &files, false);
            mac::run(&l.ir, &a.command, &opts)
        }
        Err(f) => {
            super::report(&f.diagnostics, &files, false);
            FAILED
        }
    }
}
