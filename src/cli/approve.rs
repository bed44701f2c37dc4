//! `sbx approve POLICY`: list external rules that are unapproved,
//! retargeted or broken, and record approvals on confirmation.

use camino::Utf8PathBuf;
use clap::Args;
use sbx::compile::{Inputs, Options};
use sbx::diag::Files;
use sbx::external::approve::{self, Entry, State};
use std::io::{BufRead, IsTerminal, Write};

#[derive(Args)]
pub struct ApproveArgs {
    policy: Utf8PathBuf,
    /// Only `conversation.tools.NAME.access` (default: every tool).
    #[arg(long)]
    tool: Option<String>,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    workspace: Option<Utf8PathBuf>,
    /// Home directory, for the sensitive-path check (default: $HOME).
    #[arg(long)]
    home: Option<Utf8PathBuf>,
    /// Approvals store (default: $XDG_STATE_HOME/sbx/approvals.json).
    #[arg(long)]
    approvals: Option<Utf8PathBuf>,
    /// Approve without asking (for scripts).
    #[arg(long)]
    yes: bool,
}

pub fn run(a: ApproveArgs) -> i32 {
    let opts = Options {
        workspace: a.workspace,
        home: a.home,
        tool: a.tool,
        ..Default::default()
    };
    let review = match approve::review(&a.policy, &opts, a.approvals.as_deref()) {
        Ok(r) => r,
        Err(f) => {
            let files = Inputs::read(std::slice::from_ref(&a.policy))
                .map(|i| i.files())
                .unwrap_or_else(|_| Files::default());
            super::report(&f.diagnostics, &files, false);
            return f.exit_code;
        }
    };
    for w in &review.warnings {
        eprintln!("warning: {w}");
    }
    let approved = review
        .entries
        .iter()
        .filter(|e| matches!(e.state, State::Approved { .. }))
        .count();
    let pending: Vec<&Entry> = review
        .entries
        .iter()
        .filter(|e| !matches!(e.state, State::Approved { .. }))
        .collect();
    let invalid = pending.iter().any(|e| matches!(e.state, State::Invalid(_)));
    if review.entries.is_empty() {
        println!("{}: no external rules", a.policy);
        return 0;
    }
    println!(
        "{} (workspace {}): {} external rule(s), {approved} approved",
        a.policy,
        review.workspace,
        review.entries.len()
    );
    for e in &pending {
        print!("{}", describe(e));
    }
    let n = pending.iter().filter(|e| e.approvable().is_some()).count();
    let code = if invalid { 1 } else { 0 };
    if n == 0 {
        println!("nothing to approve");
        return code;
    }
    let sensitive = pending
        .iter()
        .any(|e| e.approvable().is_some() && !e.sensitive.is_empty());
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "error: stdin is not a terminal: nothing was recorded; re-run with --yes to approve the {n} target(s) listed above"
            );
            return 1;
        }
        let warn = if sensitive {
            " (SENSITIVE targets included)"
        } else {
            ""
        };
        eprint!("Approve {n} target binding(s){warn}? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        if !matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            eprintln!("nothing was recorded");
            return 1;
        }
    }
    match approve::record(&review) {
        Ok((count, warnings)) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
            println!("recorded {count} approval(s) in {}", review.store);
            code
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// One entry of the listing: what it is, old and new targets, its grants.
fn describe(e: &Entry) -> String {
    let mut s = String::new();
    let grants = e
        .grants
        .iter()
        .map(|(tool, a)| {
            let rights = if a.is_empty() {
                "nothing".to_string()
            } else {
                a.names().join(", ")
            };
            match tool {
                Some(t) => format!("{t}: {rights}"),
                None => rights,
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    match &e.state {
        State::Unapproved { target } => {
            s += &format!("  {}: not approved\n      target: {target}\n", e.key);
        }
        State::Retargeted { was, now } => {
            s += &format!(
                "  {}: RETARGETED since it was approved\n      was: {was}\n      now: {now}\n",
                e.key
            );
        }
        State::Broken { link: Some(l) } => {
            s += &format!(
                "  {}: broken symlink (-> {l}, which does not exist): cannot be approved\n",
                e.key
            );
        }
        State::Broken { link: None } => {
            s += &format!(
                "  {}: does not exist in the workspace: cannot be approved\n",
                e.key
            );
        }
        State::Invalid(why) => {
            s += &format!("  {}: error: {why}; fix the policy\n", e.key);
        }
        State::Approved { .. } => {}
    }
    if e.approvable().is_some() {
        s += &format!("      grants: {grants}\n");
        if !e.sensitive.is_empty() {
            s += &format!(
                "      !!! SENSITIVE: this target is (or contains) {}: keys and credentials live there !!!\n",
                e.sensitive.join(", ")
            );
        }
    }
    s
}
