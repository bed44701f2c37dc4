//! `sbx check`: the CI gate.

use super::{load_approvals, options, PolicyArgs};
use camino::Utf8PathBuf;
use clap::{Args, ValueEnum};
use sbx::compile::Inputs;
use sbx::diag::{self, codes, Diagnostic, Files, Severity};
use sbx::lint::{self, CheckOptions};
use std::io::IsTerminal;

#[derive(Args)]
pub struct CheckArgs {
    /// Policy files; later layers override earlier ones.
    #[arg(required_unless_present = "explain")]
    policy: Vec<Utf8PathBuf>,
    /// human and json go to stderr; sarif and github to stdout.
    #[arg(long, value_enum, default_value = "human")]
    format: CheckFormat,
    /// Treat warnings as errors (exit 1).
    #[arg(long)]
    deny_warnings: bool,
    /// Fail on every capability the policy grants that this one does not
    /// (repeat for a layered baseline).
    #[arg(long, value_name = "POLICY")]
    baseline: Vec<Utf8PathBuf>,
    /// The policy is meant to be shared: flag absolute and home paths, and
    /// compile with placeholders.
    #[arg(long)]
    portable: bool,
    /// Approvals store for external paths (RFD D43).
    #[arg(long)]
    approvals: Option<Utf8PathBuf>,
    /// Drop warnings and notes with this code (repeatable); errors stay.
    #[arg(long, value_name = "CODE")]
    allow: Vec<String>,
    /// Report this code as an error (repeatable).
    #[arg(long, value_name = "CODE")]
    deny: Vec<String>,
    /// Check each file on its own rather than as layers of one policy (as
    /// pre-commit passes every changed file to one call).
    #[arg(long, conflicts_with = "baseline")]
    each: bool,
    /// Print the catalogue entry of a diagnostic code and exit.
    #[arg(long, value_name = "CODE")]
    explain: Option<String>,
    #[command(flatten)]
    common: PolicyArgs,
    #[command(flatten)]
    jobs: super::JobsArg,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum CheckFormat {
    Human,
    Json,
    Sarif,
    Github,
}

/// The catalogue entry, as `--explain CODE` prints it.
pub fn explain_code(code: &str) -> Option<String> {
    let c = codes::lookup(&code.to_ascii_uppercase())?;
    let sev = match c.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    let mut s = format!("{} ({sev}): {}\n\n{}\n", c.code, c.title, c.explanation);
    if let Some(ex) = c.example {
        s.push_str("\nExample:\n\n");
        for line in ex.lines() {
            s.push_str(&format!("    {line}\n"));
        }
    }
    Some(s)
}

fn render(format: CheckFormat, diags: &[Diagnostic], files: &Files, fallback: Option<&str>) {
    match format {
        CheckFormat::Human => {
            if !diags.is_empty() {
                eprint!(
                    "{}",
                    diag::render_human(diags, files, std::io::stderr().is_terminal())
                );
            }
        }
        CheckFormat::Json => eprint!("{}", diag::render_json(diags)),
        CheckFormat::Sarif => print!("{}", diag::sarif::render(diags, fallback)),
        CheckFormat::Github => print!("{}", diag::github::render(diags, fallback)),
    }
}

pub fn run(a: CheckArgs) -> i32 {
    if let Some(code) = &a.explain {
        return match explain_code(code) {
            Some(text) => {
                print!("{text}");
                0
            }
            None => {
                eprintln!("error: unknown diagnostic code {code:?} (codes look like SBX020)");
                2
            }
        };
    }
    for code in a.allow.iter().chain(a.deny.iter()) {
        if codes::lookup(&code.to_ascii_uppercase()).is_none() {
            eprintln!("error: unknown diagnostic code {code:?} (codes look like SBX020)");
            return 2;
        }
    }
    let fallback = a.policy.last().map(|p| p.as_str());
    let groups: Vec<Vec<Utf8PathBuf>> = if a.each {
        a.policy.iter().map(|p| vec![p.clone()]).collect()
    } else {
        vec![a.policy.clone()]
    };
    let mut files = Files::default();
    let mut diags = Vec::new();
    let mut failed: Option<i32> = None;
    for g in &groups {
        let (mut d, code) = check_layers(&a, g, &mut files);
        diags.append(&mut d);
        // The first failure's exit code (2 for a usage or I/O problem).
        if let Some(c) = code {
            failed = Some(failed.map_or(c, |f| f.max(c)));
        }
    }
    render(a.format, &diags, &files, fallback);
    if let Some(code) = failed {
        return code;
    }
    let errors = diag::count(&diags, Severity::Error);
    let warnings = diag::count(&diags, Severity::Warning);
    if errors > 0 || (a.deny_warnings && warnings > 0) {
        1
    } else {
        0
    }
}

/// Check `policy` (its files merged as layers): the diagnostics, and the
/// exit code when it could not be checked (unreadable, invalid).
fn check_layers(
    a: &CheckArgs,
    policy: &[Utf8PathBuf],
    files: &mut Files,
) -> (Vec<Diagnostic>, Option<i32>) {
    let inputs = match Inputs::read(policy) {
        Ok(i) => i,
        Err(f) => return (f.diagnostics, Some(f.exit_code)),
    };
    for s in &inputs.sources {
        files.add(&s.name, s.text.clone());
    }
    let baseline = if a.baseline.is_empty() {
        None
    } else {
        match Inputs::read(&a.baseline) {
            Ok(b) => {
                for s in &b.sources {
                    files.add(&s.name, s.text.clone());
                }
                Some(b)
            }
            Err(f) => return (f.diagnostics, Some(f.exit_code)),
        }
    };
    let mut opts = options(&a.common, a.portable);
    opts.jobs = a.jobs.get();
    // A corrupt (or misplaced) approvals store is a warning: it reads as empty.
    let mut first = Vec::new();
    match load_approvals(a.approvals.as_ref(), &opts) {
        Ok((list, warnings)) => {
            opts.approvals = list;
            first.extend(warnings);
        }
        Err(d) => return (vec![d], Some(2)),
    }
    let c = CheckOptions {
        baseline,
        allow: a.allow.iter().map(|s| s.to_ascii_uppercase()).collect(),
        deny: a.deny.iter().map(|s| s.to_ascii_uppercase()).collect(),
    };
    match lint::check(&inputs, &opts, &c) {
        Ok(mut d) => {
            first.append(&mut d);
            (first, None)
        }
        Err(mut f) => {
            first.append(&mut f.diagnostics);
            (first, Some(f.exit_code))
        }
    }
}
