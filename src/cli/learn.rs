//! `sbx learn`: run a command outside any sandbox, traced, and write a
//! policy that lets it run: the base policy plus the rules it lacked
//! (`sbx::learn`). Linux, through strace, as `sbx run --denials`.

use camino::Utf8PathBuf;
use clap::Args;
use std::ffi::OsString;

#[derive(Args, Debug)]
pub struct LearnArgs {
    /// The policy to start from (default: the default policy).
    #[arg(long)]
    policy: Option<Utf8PathBuf>,
    /// Where to write the learned policy.
    #[arg(short, long)]
    output: Utf8PathBuf,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    workspace: Option<Utf8PathBuf>,
    /// Home directory (default: $HOME).
    #[arg(long)]
    home: Option<Utf8PathBuf>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

#[cfg(not(target_os = "linux"))]
pub fn run(a: LearnArgs) -> i32 {
    let _ = (&a.policy, &a.output, &a.workspace, &a.home, &a.command);
    eprintln!("error: `sbx learn` traces the command with strace: Linux only");
    2
}

#[cfg(target_os = "linux")]
pub fn run(a: LearnArgs) -> i32 {
    use sbx::compile::{self, Inputs, Options};
    use std::path::PathBuf;

    let base = match &a.policy {
        Some(p) => match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {p}: {e}");
                return 2;
            }
        },
        None => "version = 1\n".to_string(),
    };
    let name = a
        .policy
        .as_ref()
        .map_or("default policy".to_string(), |p| p.to_string());
    let opts = Options {
        workspace: a.workspace.clone(),
        home: a.home.clone(),
        ..Options::default()
    };
    let ir = match lower(&Inputs::from_text(&name, &base), &opts) {
        Ok(ir) => ir,
        Err(code) => return code,
    };
    let Some(strace) = super::denials::find("strace") else {
        eprintln!(
            "error: sbx learn needs strace on PATH (apt-get install strace): nothing was run"
        );
        return 2;
    };
    let dir = match super::denials::private_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot make a directory for the trace: {e}");
            return 2;
        }
    };
    let status = std::process::Command::new(strace)
        .args(["-f", "-ff", "-qq", "-y", "-s", "4096", "-e", "signal=none"])
        .args(["-e", "trace=%file,%network,execve,execveat,fchdir", "-o"])
        .arg(dir.join("t"))
        .arg("--")
        .args(&a.command)
        .status();
    let code = status.map(|s| s.code().unwrap_or(128));
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut used = Vec::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path()) {
            used.extend(sbx::runtime::denials::parse_where(
                &text,
                &cwd.to_string_lossy(),
                &|errno| errno.is_empty(),
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let code = match code {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot start strace: {e}");
            return 2;
        }
    };
    let anchors = sbx::runtime::denials::Anchors {
        workspace: &ir.roots.workspace,
        home: &ir.roots.home,
    };
    let learned = sbx::learn::learn(&ir, &used, &anchors, &sbx::learn::kind_on_disk);

    let mut text = base.clone();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let shown: Vec<String> = a
        .command
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    text.push_str(&format!(
        "\n# Learned by `sbx learn` from: {}\n",
        comment(&shown.join(" "))
    ));
    if !learned.sensitive.is_empty() {
        text.push_str("# Used but not granted (sensitive): add a rule naming one only if the\n# command must have it.\n");
        for p in &learned.sensitive {
            text.push_str(&format!("#   {}\n", comment(p)));
        }
    }
    text.push('\n');
    text.push_str(&learned.rules);
    // What is written must load as the policy it claims to be.
    if lower(&Inputs::from_text(a.output.as_str(), &text), &opts).is_err() {
        eprintln!("error: the learned policy does not compile (a bug in sbx learn); not written");
        return 1;
    }
    if let Err(e) = compile::write_atomic(&a.output, &text) {
        eprintln!("error: cannot write {}: {e}", a.output);
        return 2;
    }
    eprintln!(
        "sbx learn: the command exited with {code}; wrote {} with {} rule(s) beyond {name}",
        a.output, learned.count
    );
    for p in &learned.sensitive {
        eprintln!("sbx learn: warning: the command used {p}, a sensitive path: not granted");
    }
    0
}

/// The policy lowered for this host; diagnostics printed.
#[cfg(target_os = "linux")]
fn lower(inputs: &sbx::compile::Inputs, opts: &sbx::compile::Options) -> Result<sbx::Ir, i32> {
    let files = inputs.files();
    let (policy, diags) = sbx::compile::load(inputs, opts).map_err(|f| {
        super::report(&f.diagnostics, &files, false);
        f.exit_code.max(1)
    })?;
    super::report(&diags, &files, false);
    match sbx::compile::lower_for(&policy, opts, sbx::ir::Os::Linux) {
        Ok(l) => Ok(l.ir),
        Err(f) => {
            super::report(&f.diagnostics, &files, false);
            Err(f.exit_code.max(1))
        }
    }
}

/// Text a TOML comment can hold: control characters (a newline would end
/// it) shown as `?`.
#[cfg(target_os = "linux")]
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
        .collect()
}
