//! `sbx run POLICY… -- CMD` and `sbx run --artifact FILE -- CMD`: apply
//! the sandbox on this OS and run CMD. Every failure before the command
//! starts exits 125 (CLI.md).

use super::PolicyArgs;
use camino::Utf8PathBuf;
use clap::Args;
use std::ffi::OsString;

#[derive(Args)]
pub struct RunArgs {
    /// Policy files, merged left to right (not with --artifact).
    #[arg(required_unless_present = "artifact", conflicts_with = "artifact")]
    policy: Vec<Utf8PathBuf>,
    /// Run a compiled artifact (`sbx compile --target linux`, possibly
    /// `--portable`) instead of a policy.
    #[arg(long)]
    artifact: Option<Utf8PathBuf>,
    #[command(flatten)]
    common: PolicyArgs,
    /// Print what is enforced (ABI, rights dropped, approximations) to
    /// stderr before the command starts.
    #[arg(long)]
    report: bool,
    /// Use at most this Landlock ABI (tests of older kernels).
    #[arg(long, hide = true)]
    landlock_abi: Option<u32>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

#[cfg(target_os = "linux")]
pub fn run(a: RunArgs) -> i32 {
    use sbx::runtime::linux::{self, RunOptions};
    use sbx::runtime::EXIT_SBX_FAILED;
    let opts = RunOptions {
        report: a.report,
        workspace: a.common.workspace.clone().map(Into::into),
        home: a.common.home.clone().map(Into::into),
        landlock_abi: a.landlock_abi,
    };
    if let Some(path) = &a.artifact {
        return match std::fs::read_to_string(path) {
            Ok(text) => linux::run_json(&text, &a.command, &opts),
            Err(e) => {
                eprintln!("error: cannot read {path}: {e}");
                EXIT_SBX_FAILED
            }
        };
    }
    match policy_artifact(&a) {
        Some(art) => linux::run(&art, &a.command, &opts),
        None => EXIT_SBX_FAILED,
    }
}

/// Compile the policy for this host, printing diagnostics; `None` when it
/// does not compile (the reason is already printed).
#[cfg(target_os = "linux")]
fn policy_artifact(a: &RunArgs) -> Option<sbx::back::landlock::LinuxArtifact> {
    use sbx::compile::{self, Inputs};
    use sbx::diag::Files;
    let inputs = match Inputs::read(&a.policy) {
        Ok(i) => i,
        Err(f) => {
            super::report(&f.diagnostics, &Files::default(), false);
            return None;
        }
    };
    let files = inputs.files();
    let mut opts = super::options(&a.common, false);
    opts.approvals = super::load_approvals(None).ok()?;
    let (policy, diags) = match compile::load(&inputs, &opts) {
        Ok(x) => x,
        Err(f) => {
            super::report(&f.diagnostics, &files, false);
            return None;
        }
    };
    super::report(&diags, &files, false);
    let lowered = match compile::lower_for(&policy, &opts, sbx::ir::Os::Linux) {
        Ok(l) => l,
        Err(f) => {
            super::report(&f.diagnostics, &files, false);
            return None;
        }
    };
    super::report(&lowered.diagnostics, &files, false);
    match sbx::back::landlock::build(&lowered.ir) {
        Ok(art) => Some(art),
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn run(_a: RunArgs) -> i32 {
    eprintln!("error: `sbx run` is not available on this OS in this build");
    sbx::runtime::EXIT_SBX_FAILED
}
