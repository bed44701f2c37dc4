//! `sbx mount [TOOL:]NAME=PATH[:ro|:rw] --policy FILE`.

use camino::Utf8PathBuf;
use clap::Args;
use sbx::external::{edit::Change, mount, spec};

#[derive(Args)]
pub struct MountArgs {
    /// `[TOOL:]NAME=PATH[:ro|:rw]`: NAME is relative to the current
    /// directory; `:ro` (the default) grants read, `:rw` read + write.
    spec: String,
    /// The policy file to add the `external = true` rule to.
    #[arg(long)]
    policy: Utf8PathBuf,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    workspace: Option<Utf8PathBuf>,
    /// Home directory, for `~` in PATH (default: $HOME).
    #[arg(long)]
    home: Option<Utf8PathBuf>,
    /// Approvals store (default: $XDG_STATE_HOME/sbx/approvals.json).
    #[arg(long)]
    approvals: Option<Utf8PathBuf>,
}

pub fn run(a: MountArgs) -> i32 {
    let spec = match spec::parse(&a.spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let req = mount::Request {
        spec,
        policy: a.policy,
        opts: sbx::compile::Options {
            workspace: a.workspace,
            home: a.home,
            ..Default::default()
        },
        approvals: a.approvals,
    };
    let result = mount::plan(&req).and_then(|plan| mount::apply(&plan).map(|done| (plan, done)));
    let (plan, done) = match result {
        Ok(x) => x,
        Err(mount::Error::Policy(diags)) => {
            let files = sbx::compile::Inputs::read(std::slice::from_ref(&req.policy))
                .map(|i| i.files())
                .unwrap_or_default();
            super::report(&diags, &files, false);
            eprintln!("error: {} does not load; nothing was changed", req.policy);
            return 1;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return e.exit_code();
        }
    };
    for w in &done.warnings {
        eprintln!("warning: {w}");
    }
    for p in &plan.sensitive {
        eprintln!(
            "warning: {} is (or contains) the sensitive path {p}: tools with this mount can read it",
            plan.target
        );
    }
    if plan.create_link {
        println!("created symlink {} -> {}", plan.key, plan.target);
    } else {
        println!("symlink {} already points to {}", plan.key, plan.target);
    }
    for (tool, change) in &plan.changes {
        let scope = tool
            .as_ref()
            .map(|t| format!(" for tool {t}"))
            .unwrap_or_default();
        let what = match change {
            Change::Added {
                with_workspace: false,
            } => "added the external rule",
            Change::Added {
                with_workspace: true,
            } => "added the external rule and the workspace rule (keeping the default access)",
            Change::Widened => "widened the existing rule",
            Change::Unchanged => "the rule was already there",
        };
        println!("{}: {what}{scope}", plan.policy);
    }
    println!("approved {} -> {} in {}", plan.key, plan.target, plan.store);
    0
}
