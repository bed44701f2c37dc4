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
    #[cfg(not(windows))]
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
