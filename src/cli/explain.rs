//! `sbx explain`: allow or deny one request, with the deciding rule.

use super::{load_approvals, options, PolicyArgs};
use camino::Utf8PathBuf;
use clap::{Args, ValueEnum};
use sbx::compile::{self, Inputs};
use sbx::diag::{self, Location};
use sbx::explain::{explain, Explanation, FsOp, Query};
use sbx::ir::Os;
use sbx::lint::origin::Locator;
use serde::Serialize;
use std::io::IsTerminal;

#[derive(Args)]
pub struct ExplainArgs {
    /// Policy files; later layers override earlier ones.
    #[arg(required = true)]
    policy: Vec<Utf8PathBuf>,
    #[command(flatten)]
    common: PolicyArgs,
    /// Approvals store for external paths (RFD D43).
    #[arg(long)]
    approvals: Option<Utf8PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// May the tool read PATH? (Relative paths are in the workspace.)
    #[arg(long, value_name = "PATH")]
    read: Option<String>,
    /// May it modify the existing file PATH?
    #[arg(long, value_name = "PATH")]
    write: Option<String>,
    /// May it create PATH?
    #[arg(long, value_name = "PATH")]
    create: Option<String>,
    /// May it delete PATH?
    #[arg(long, value_name = "PATH")]
    delete: Option<String>,
    /// May it execute the file PATH?
    #[arg(long, value_name = "PATH")]
    exec: Option<String>,
    /// May it connect to URL (`https://host/path`, `host:port`)?
    #[arg(long, value_name = "URL")]
    connect: Option<String>,
    /// May it receive the environment variable NAME? With --command: may
    /// that command?
    #[arg(long, value_name = "NAME")]
    env: Option<String>,
    /// May it run the command line given after `--`?
    #[arg(long)]
    command: bool,
    /// The command line for --command.
    #[arg(last = true, value_name = "ARGV")]
    argv: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Human,
    Json,
}

fn query(a: &ExplainArgs) -> Result<Query, String> {
    let fs = [
        (FsOp::Read, &a.read),
        (FsOp::Write, &a.write),
        (FsOp::Create, &a.create),
        (FsOp::Delete, &a.delete),
        (FsOp::Exec, &a.exec),
    ];
    let mut asked = fs.iter().filter(|(_, p)| p.is_some()).count()
        + usize::from(a.connect.is_some())
        + usize::from(a.env.is_some() || a.command);
    if !a.argv.is_empty() && !a.command {
        asked += 1;
    }
    if asked != 1 {
        return Err(
            "ask exactly one question: --read, --write, --create, --delete, --exec, --connect, --env, or --command -- ARGV (--env may be combined with --command)"
                .into(),
        );
    }
    if a.command && a.argv.is_empty() {
        return Err("--command needs the command line after `--`: --command -- git status".into());
    }
    if let Some((op, Some(p))) = fs.iter().find(|(_, p)| p.is_some()) {
        return Ok(Query::Fs {
            op: *op,
            path: p.to_string(),
        });
    }
    if let Some(url) = &a.connect {
        return Query::connect(url);
    }
    if let Some(name) = &a.env {
        return Ok(Query::Env {
            name: name.clone(),
            command: a.argv.first().cloned(),
        });
    }
    Ok(Query::Command {
        argv: a.argv.clone(),
    })
}

#[derive(Serialize)]
struct Out<'a> {
    #[serde(flatten)]
    explanation: &'a Explanation,
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<Loc>,
}

#[derive(Serialize)]
struct Loc {
    file: String,
    line: usize,
    column: usize,
}

fn human(ex: &Explanation, loc: Option<&Location>) -> String {
    let mut s = format!(
        "{}: {}\n",
        if ex.allowed { "allow" } else { "deny" },
        ex.request
    );
    if let Some(r) = &ex.rule {
        let label = r.label();
        match loc {
            Some(l) if !label.contains(&format!("{}:{}:", l.file, l.line)) => s.push_str(&format!(
                "  rule:     {label} ({}:{}:{})\n",
                l.file, l.line, l.column
            )),
            _ => s.push_str(&format!("  rule:     {label}\n")),
        }
    }
    s.push_str(&format!("  why:      {}\n", ex.reason));
    if let Some(b) = &ex.boundary {
        s.push_str(&format!(
            "  boundary: external {} → {} ({} resolves {} it)\n",
            b.rule_path,
            b.canonical_target,
            b.resolved,
            if b.inside { "inside" } else { "outside" }
        ));
    }
    for t in &ex.targets {
        let e = serde_json::to_value(t.enforced).expect("serialises");
        s.push_str(&format!(
            "  {:<9} {}: {}\n",
            format!("{}:", t.target),
            e.as_str().unwrap_or_default(),
            t.note
        ));
    }
    s
}

pub fn run(a: ExplainArgs) -> i32 {
    let q = match query(&a) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let inputs = match Inputs::read(&a.policy) {
        Ok(i) => i,
        Err(f) => return super::fail(f, &Default::default(), false),
    };
    let files = inputs.files();
    let mut opts = options(&a.common, false);
    match load_approvals(a.approvals.as_ref(), &opts) {
        Ok((list, warnings)) => {
            opts.approvals = list;
            if !warnings.is_empty() {
                eprint!("{}", diag::render_human(&warnings, &files, false));
            }
        }
        Err(d) => {
            eprint!("{}", diag::render_human(&[d], &files, false));
            return 2;
        }
    }
    let (layers, _) = match compile::load_layers(&inputs, &opts) {
        Ok(l) => l,
        Err(f) => return super::fail(f, &files, false),
    };
    let policy = sbx::policy::merge::merge(&layers);
    let lowered = match compile::lower_for(&policy, &opts, Os::host()) {
        Ok(l) => l,
        Err(f) => return super::fail(f, &files, false),
    };
    let ex = explain(&lowered.ir, &q);
    let loc = ex.rule.as_ref().and_then(|r| {
        Locator {
            policy: &policy,
            layers: &layers,
        }
        .locate(r)
    });
    let text = match a.format {
        Format::Human => human(&ex, loc.as_ref()),
        Format::Json => {
            let out = Out {
                explanation: &ex,
                location: loc.as_ref().map(|l| Loc {
                    file: l.file.clone(),
                    line: l.line,
                    column: l.column,
                }),
            };
            let mut s = serde_json::to_string_pretty(&out).expect("serialises");
            s.push('\n');
            s
        }
    };
    // Lowering warnings (an external rule dropped...) explain a deny too.
    if !lowered.diagnostics.is_empty() && a.format == Format::Human {
        eprint!(
            "{}",
            diag::render_human(
                &lowered.diagnostics,
                &files,
                std::io::stderr().is_terminal()
            )
        );
    }
    print!("{text}");
    if ex.allowed {
        0
    } else {
        1
    }
}
