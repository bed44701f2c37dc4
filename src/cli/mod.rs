//! Argument parsing and the per-command drivers.

mod approve;
mod caches;
#[cfg(unix)]
mod caller;
mod check;
mod denials;
mod explain;
mod learn;
mod mount;
mod quick;
mod run;
mod sbpl;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod speak;

use camino::Utf8PathBuf;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use sbx::atomic::Staged;
use sbx::compile::{self, Failure, Inputs, Options, Target};
use sbx::diag::{self, Diagnostic, Files, Severity};
use std::ffi::OsString;
use std::io::{BufWriter, IsTerminal, Write};

#[derive(Parser)]
#[command(
    name = "sbx",
    version,
    about = "Compile one declarative sandbox policy for macOS, Linux and Windows",
    after_help = "Example:\n  sbx compile policy.toml --target macos -o profile.sb\n  sbx run policy.toml -- cargo test"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compile policy files (merged left to right) into an artifact.
    #[command(
        after_help = "Example:\n  sbx compile base.toml local.toml --target linux -o linux.json\n  sbx compile policy.toml --target all --portable -o out/"
    )]
    Compile(CompileArgs),
    /// Validate, lower, lint and compile for every target without writing.
    #[command(
        after_help = "Example:\n  sbx check policy.toml --format github --deny-warnings\n  sbx check new.toml --baseline old.toml\n  sbx check --explain SBX020"
    )]
    Check(check::CheckArgs),
    /// May the tool do this? Allow or deny, the deciding rule, and what each OS enforces.
    #[command(
        after_help = "Example:\n  sbx explain policy.toml --read ~/.ssh/id_ed25519\n  sbx explain policy.toml --connect https://api.example.com/v1/\n  sbx explain policy.toml --command -- git push\n\nExit status: 0 allowed, 1 denied (or invalid policy), 2 usage error."
    )]
    Explain(explain::ExplainArgs),
    /// Print the JSON Schema of the policy format.
    #[command(after_help = "Example:\n  sbx schema -o sbx.schema.json")]
    Schema {
        /// Write to FILE instead of stdout.
        #[arg(short, long)]
        output: Option<Utf8PathBuf>,
    },
    /// Reach a directory outside the workspace through a symlink in it
    /// (RFD D43): create the symlink, add the rule, record the approval.
    #[command(
        after_help = "Example:\n  sbx mount fork=~/code/forks/x --policy sbx.toml\n  sbx mount fs_modify_file:vendor/x=../x:rw --policy conversation.toml"
    )]
    Mount(mount::MountArgs),
    /// List unapproved, retargeted and broken external rules; approve them.
    #[command(
        after_help = "Example:\n  sbx approve sbx.toml\n  sbx approve sbx.toml --yes   # in scripts"
    )]
    Approve(approve::ApproveArgs),
    /// Work with SBPL (macOS sandbox profile) files.
    #[command(
        subcommand,
        after_help = "Example:\n  sbx sbpl check profile.sb\n  sbx compile policy.toml --target macos -o profile.sb && sbx sbpl check profile.sb"
    )]
    Sbpl(SbplCmd),
    /// Apply a policy (or a compiled artifact) to a command and run it.
    #[command(
        after_help = "Example:\n  sbx run policy.toml -- cargo test\n  sbx run --quiet --tool cargo_check config.toml -- cargo check\n  sbx run --artifact windows.json --report -- cmd /c dir\n  sbx run --artifact linux.json --workspace . -- ./build.sh"
    )]
    Run(run::RunArgs),
    /// Run a command, traced, and write a policy that lets it run: the base
    /// policy plus the rules the command needed (Linux, with strace).
    #[command(
        after_help = "Example:\n  sbx learn -o policy.toml -- cargo test\n  sbx learn --policy base.toml -o app.toml -- ./build.sh\n\nSensitive paths the command used are listed in the file, never granted.\nEnvironment variables are not learned: the minimal set stays."
    )]
    Learn(learn::LearnArgs),
    /// Finish the after-run work of runs whose sbx was killed (Linux): move
    /// aside what they planted, sweep, remove their temp directories.
    #[command(
        after_help = "Example:\n  sbx sweep\n\n`sbx run` does the same before it starts. Exit status: 0 done (or nothing to do), 1 a journal entry was left alone."
    )]
    Sweep,
    /// List the private package caches `sbx run` keeps per workspace and
    /// policy (Linux), or clear them.
    #[command(
        after_help = "Example:\n  sbx caches\n  sbx caches clear                # the current directory's\n  sbx caches clear --workspace ~/code/app\n  sbx caches clear --all\n\nEach line: key, size, last use (UTC), workspace, policy hash."
    )]
    Caches(caches::CachesArgs),
    /// Print a shell completion script for sbx.
    #[command(
        after_help = "Example:\n  sbx completions bash > ~/.local/share/bash-completion/completions/sbx\n  sbx completions zsh > ~/.zfunc/_sbx\n  sbx completions fish > ~/.config/fish/completions/sbx.fish"
    )]
    Completions {
        /// The shell: bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// Print sbx's manual page (roff), or write a page per command into DIR.
    #[command(
        after_help = "Example:\n  sbx man | man -l -\n  sbx man -o /usr/local/share/man/man1"
    )]
    Man {
        /// Write sbx.1 and sbx-COMMAND.1 for every command into DIR.
        #[arg(short, long, value_name = "DIR")]
        output: Option<Utf8PathBuf>,
    },
}

#[derive(Subcommand)]
enum SbplCmd {
    /// Parse SBPL files and report syntax errors and suspicious rules.
    #[command(after_help = "Example:\n  sbx sbpl check profile.sb")]
    Check {
        #[arg(required = true)]
        files: Vec<Utf8PathBuf>,
    },
}

#[derive(Args, Clone)]
struct PolicyArgs {
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    workspace: Option<Utf8PathBuf>,
    /// Home directory (default: $HOME).
    #[arg(long)]
    home: Option<Utf8PathBuf>,
    /// Use `conversation.tools.NAME.access` of a larger config file.
    #[arg(long)]
    tool: Option<String>,
}

#[derive(Args)]
struct CompileArgs {
    /// Policy files; later layers override earlier ones.
    #[arg(required = true)]
    policy: Vec<Utf8PathBuf>,
    /// Target (default: this OS).
    #[arg(long, value_enum)]
    target: Option<TargetArg>,
    /// Output file (a directory for --target all).
    #[arg(short, long)]
    output: Option<Utf8PathBuf>,
    #[command(flatten)]
    common: PolicyArgs,
    /// Placeholders for workspace, home and temp, filled at run time.
    #[arg(long)]
    portable: bool,
    /// Approvals store for external paths (RFD D43).
    #[arg(long)]
    approvals: Option<Utf8PathBuf>,
    /// Diagnostics format.
    #[arg(long, value_enum, default_value = "human")]
    message_format: MessageFormat,
    #[command(flatten)]
    jobs: JobsArg,
}

/// `--jobs`, for the commands that lower for several OSes.
#[derive(Args)]
pub(crate) struct JobsArg {
    /// Lower at most N OSes at once, and emit at most N targets of each at
    /// once (default: one per core); each adds its memory, so 1 uses the
    /// least.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
}

impl JobsArg {
    pub(crate) fn get(&self) -> usize {
        self.jobs.map_or(0, usize::from)
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum TargetArg {
    Macos,
    Linux,
    Landlockconfig,
    Windows,
    Ir,
    All,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum MessageFormat {
    Human,
    Json,
}

/// `Cli::try_parse`, without freeing clap's command tree afterwards: the
/// process ends soon, and the tree's destructor costs a third as much as
/// building it (`sbx run` starts a process per command).
fn parse() -> Result<Cli, clap::Error> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    match parse_run(&argv) {
        Some(cli) => Ok(cli),
        None => parse_with(Cli::command(), &argv),
    }
}

/// `sbx run …` parsed with a tree of that one subcommand: building every
/// subcommand's arguments would be a tenth of the loader's instructions. Help,
/// version and every error take the full tree, so they read the same.
fn parse_run(argv: &[OsString]) -> Option<Cli> {
    if argv.get(1).is_none_or(|a| a != "run") {
        return None;
    }
    let cmd =
        clap::Command::new("sbx").subcommand(run::RunArgs::augment_args(clap::Command::new("run")));
    parse_with(cmd, argv).ok()
}

fn parse_with(mut cmd: clap::Command, argv: &[OsString]) -> Result<Cli, clap::Error> {
    let parsed = cmd.try_get_matches_from_mut(argv).and_then(|mut m| {
        Cli::from_arg_matches_mut(&mut m).map_err(|e| e.format(&mut Cli::command()))
    });
    std::mem::forget(cmd);
    parsed
}

pub fn main() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // A guardian's hand-over, never a user's command: not in the help.
        let mut argv = std::env::args_os().skip(1);
        if argv
            .next()
            .is_some_and(|a| a == sbx::runtime::linux::AFTER_RUN_ARG)
        {
            return sbx::runtime::linux::after_run(&argv.collect::<Vec<OsString>>());
        }
    }
    let cli = match parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match cli.cmd {
        Cmd::Compile(a) => run_compile(a),
        Cmd::Check(a) => check::run(a),
        Cmd::Explain(a) => explain::run(a),
        Cmd::Sbpl(SbplCmd::Check { files }) => sbpl::check(&files),
        Cmd::Mount(a) => mount::run(a),
        Cmd::Approve(a) => approve::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Learn(a) => learn::run(a),
        Cmd::Sweep => sweep(),
        Cmd::Caches(a) => caches::run(a),
        Cmd::Completions { shell } => {
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "sbx", &mut text);
            print_bytes(&text)
        }
        Cmd::Man { output: None } => {
            let mut text = Vec::new();
            match clap_mangen::Man::new(Cli::command()).render(&mut text) {
                Ok(()) => print_bytes(&text),
                Err(e) => fail(
                    io_failure(io_error(format!("man page: {e}"))),
                    &Files::default(),
                    false,
                ),
            }
        }
        Cmd::Man { output: Some(dir) } => {
            let made = std::fs::create_dir_all(&dir)
                .and_then(|()| clap_mangen::generate_to(Cli::command(), &dir));
            match made {
                Ok(()) => 0,
                Err(e) => fail(
                    io_failure(io_error(format!("cannot write man pages to {dir}: {e}"))),
                    &Files::default(),
                    false,
                ),
            }
        }
        Cmd::Schema { output } => {
            let text = sbx::policy::schema::schema_text();
            match write_text(output.as_ref(), &text) {
                Ok(()) => 0,
                Err(d) => fail(io_failure(d), &Files::default(), false),
            }
        }
    }
}

fn options(common: &PolicyArgs, portable: bool) -> Options {
    Options {
        workspace: common.workspace.clone(),
        home: common.home.clone(),
        tool: common.tool.clone(),
        portable,
        approvals: Vec::new(),
        jobs: 0,
    }
}

fn report(diags: &[Diagnostic], files: &Files, json: bool) {
    if diags.is_empty() && !json {
        return;
    }
    let text = if json {
        diag::render_json(diags)
    } else {
        diag::render_human(&shown(diags), files, std::io::stderr().is_terminal())
    };
    eprint!("{text}");
}

/// What a person is shown: every error and unlocated line, at most
/// [`WARNINGS_SHOWN`] located warnings or notes of a code, then a line per
/// code saying how many were left out. A policy of thousands of rules can
/// have a warning per rule (external rules not approved), and printing
/// them all would bury the rest and cost more than compiling.
fn shown(diags: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut count: std::collections::BTreeMap<(&'static str, bool), usize> = Default::default();
    let mut out = Vec::new();
    for d in diags {
        if d.severity == Severity::Error || d.location.is_none() {
            out.push(d.clone());
            continue;
        }
        let n = count
            .entry((d.code, d.severity == Severity::Warning))
            .or_default();
        *n += 1;
        if *n <= WARNINGS_SHOWN {
            out.push(d.clone());
        }
    }
    for ((code, warning), n) in count {
        if n > WARNINGS_SHOWN {
            let (what, severity) = match warning {
                true => ("warnings", Severity::Warning),
                false => ("notes", Severity::Note),
            };
            out.push(
                Diagnostic::new(
                    code,
                    format!(
                        "{} more {code} {what}, not listed here (`sbx check` lists them all)",
                        n - WARNINGS_SHOWN
                    ),
                )
                .severity(severity),
            );
        }
    }
    out
}

/// Warnings of one code that `compile` and `run` print before a summary
/// line (`check` and JSON output list them all).
pub(crate) const WARNINGS_SHOWN: usize = 10;

fn fail(f: Failure, files: &Files, json: bool) -> i32 {
    report(&f.diagnostics, files, json);
    f.exit_code
}

fn run_compile(a: CompileArgs) -> i32 {
    let json = a.message_format == MessageFormat::Json;
    let inputs = match Inputs::read(&a.policy) {
        Ok(i) => i,
        Err(f) => return fail(f, &Files::default(), json),
    };
    let files = inputs.files();
    let targets: Vec<Target> = match a.target {
        None => vec![Target::host()],
        Some(TargetArg::All) => Target::ALL.to_vec(),
        Some(t) => vec![match t {
            TargetArg::Macos => Target::Macos,
            TargetArg::Linux => Target::Linux,
            TargetArg::Landlockconfig => Target::Landlockconfig,
            TargetArg::Windows => Target::Windows,
            TargetArg::Ir => Target::Ir,
            TargetArg::All => unreachable!("handled above"),
        }],
    };
    let all = matches!(a.target, Some(TargetArg::All));
    if all && a.output.is_none() {
        eprintln!("error: --target all writes several files: give a directory with -o DIR");
        return 2;
    }
    let mut opts = options(&a.common, a.portable);
    opts.jobs = a.jobs.get();
    let mut diags = Vec::new();
    match load_approvals(a.approvals.as_ref(), &opts) {
        Ok((list, warnings)) => {
            opts.approvals = list;
            diags.extend(warnings);
        }
        Err(d) => return fail(io_failure(d), &files, json),
    }
    // With -o, each artifact goes to its file while it is emitted: held
    // whole, the SBPL profile would be most of the peak memory.
    let mut outs: Vec<OutFile> = match &a.output {
        Some(dir) if all => targets
            .iter()
            .map(|t| OutFile::new(dir.join(t.file_name()), Some(dir.clone())))
            .collect(),
        Some(p) => vec![OutFile::new(p.clone(), None)],
        None => Vec::new(),
    };
    // A failed compile leaves no directory it made behind.
    let new_dir = a.output.as_ref().filter(|d| all && !d.exists());
    // `check`'s warnings about rules these targets drop or narrow.
    let warn: compile::Warn = if json {
        &sbx::lint::target_warnings
    } else {
        &|ir, policy, layers, targets, reports| {
            sbx::lint::target_warnings_up_to(ir, policy, layers, targets, reports, WARNINGS_SHOWN)
        }
    };
    let compiled = if outs.is_empty() {
        compile::compile_warned(&inputs, &targets, &opts, warn)
            .map(|o| (o.diagnostics, Some(o.artifacts)))
    } else {
        // Each target is written by the one thread that emits it.
        let files: Vec<std::sync::Mutex<&mut OutFile>> =
            outs.iter_mut().map(std::sync::Mutex::new).collect();
        compile::compile_to_warned(&inputs, &targets, &opts, warn, |i, b| {
            files[i].lock().unwrap_or_else(|e| e.into_inner()).write(b)
        })
        .map(|d| (d, None))
    };
    let (warnings, artifacts) = match compiled {
        Ok(o) => o,
        Err(mut f) => {
            drop(outs); // removes the temp files
            if let Some(d) = new_dir {
                let _ = std::fs::remove_dir(d);
            }
            diags.append(&mut f.diagnostics);
            f.diagnostics = diags;
            return fail(f, &files, json);
        }
    };
    diags.extend(warnings);
    // Diagnostics (and write errors) in one report, so JSON stays one document.
    let written = match artifacts {
        Some(arts) => write_text(None, &arts[0].text),
        None => commit(outs),
    };
    match written {
        Ok(()) => {
            report(&diags, &files, json);
            0
        }
        Err(d) => {
            diags.push(d);
            report(&diags, &files, json);
            2
        }
    }
}

/// An artifact's file while the compile writes it: a temp file beside it
/// (see `sbx::atomic`), renamed over it once everything compiled. A write
/// error is kept for the report, after any error in the policy.
struct OutFile {
    path: Utf8PathBuf,
    /// Made before the file (`--target all -o DIR`).
    dir: Option<Utf8PathBuf>,
    file: Result<Option<BufWriter<Staged>>, Diagnostic>,
}

impl OutFile {
    fn new(path: Utf8PathBuf, dir: Option<Utf8PathBuf>) -> OutFile {
        OutFile {
            path,
            dir,
            file: Ok(None),
        }
    }

    fn write(&mut self, b: &[u8]) {
        self.open_once();
        if let Ok(Some(f)) = &mut self.file {
            if let Err(e) = f.write_all(b) {
                self.file = Err(self.error(e));
            }
        }
    }

    /// Open the staged file on the first write (or at the end, for an
    /// empty artifact); an error stays for the report.
    fn open_once(&mut self) {
        if let Ok(None) = self.file {
            self.file = self.open().map(Some);
        }
    }

    fn open(&self) -> Result<BufWriter<Staged>, Diagnostic> {
        if let Some(d) = &self.dir {
            std::fs::create_dir_all(d).map_err(|e| io_error(format!("cannot create {d}: {e}")))?;
        }
        compile::stage_atomic(&self.path)
            .map(|s| BufWriter::with_capacity(1 << 16, s))
            .map_err(|e| self.error(e))
    }

    fn error(&self, e: std::io::Error) -> Diagnostic {
        io_error(format!("cannot write {}: {e}", self.path))
    }

    /// The written file, flushed, to commit.
    fn finish(mut self) -> Result<(Utf8PathBuf, Staged), Diagnostic> {
        self.open_once();
        let f = std::mem::replace(&mut self.file, Ok(None))?.expect("opened above");
        let staged = f.into_inner().map_err(|e| self.error(e.into_error()))?;
        Ok((self.path, staged))
    }
}

/// Commit every file, or none if one could not be written.
fn commit(outs: Vec<OutFile>) -> Result<(), Diagnostic> {
    let ready = outs
        .into_iter()
        .map(OutFile::finish)
        .collect::<Result<Vec<_>, _>>()?;
    ready.into_iter().try_for_each(|(p, s)| {
        s.commit()
            .map_err(|e| io_error(format!("cannot write {p}: {e}")))
    })
}

fn io_error(message: String) -> Diagnostic {
    Diagnostic::new(sbx::diag::codes::IO, message)
}

fn io_failure(d: Diagnostic) -> Failure {
    Failure {
        diagnostics: vec![d],
        exit_code: 2,
    }
}

/// The approvals store: `--approvals FILE`, else the user-local default.
/// A corrupt store, or one inside the workspace, is a warning (it reads
/// as empty).
fn load_approvals(
    path: Option<&Utf8PathBuf>,
    opts: &Options,
) -> Result<(Vec<sbx::lower::Approval>, Vec<Diagnostic>), Diagnostic> {
    let Ok(ws) = sbx::external::host_workspace(opts) else {
        return Ok((Vec::new(), Vec::new())); // lowering reports the unusable workspace
    };
    match sbx::external::load_approvals(path.map(|p| p.as_path()), &ws) {
        Ok((list, warnings)) => Ok((
            list,
            warnings
                .into_iter()
                .map(|w| io_error(w).severity(diag::Severity::Warning))
                .collect(),
        )),
        Err(e) => Err(io_error(e)),
    }
}

/// Write to `-o` atomically, or to stdout.
/// Generated text to stdout; exit code.
fn print_bytes(bytes: &[u8]) -> i32 {
    let text = String::from_utf8_lossy(bytes);
    match write_text(None, &text) {
        Ok(()) => 0,
        Err(d) => fail(io_failure(d), &Files::default(), false),
    }
}

fn write_text(output: Option<&Utf8PathBuf>, text: &str) -> Result<(), Diagnostic> {
    match output {
        Some(p) => {
            compile::write_atomic(p, text).map_err(|e| io_error(format!("cannot write {p}: {e}")))
        }
        None => {
            use std::io::Write;
            let mut so = std::io::stdout().lock();
            match so.write_all(text.as_bytes()).and_then(|_| so.flush()) {
                Ok(()) => Ok(()),
                // A closed pipe (`sbx compile … | head`) is not our failure.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(io_error(format!("cannot write to stdout: {e}"))),
            }
        }
    }
}

/// `sbx sweep`.
fn sweep() -> i32 {
    #[cfg(target_os = "linux")]
    {
        match sbx::runtime::linux::sweep() {
            Ok(lines) if lines.is_empty() => {
                println!("sbx: no unfinished run");
                0
            }
            Ok(lines) => {
                for l in &lines {
                    eprintln!("{l}");
                }
                i32::from(lines.iter().any(|l| l.contains("left alone")))
            }
            Err(e) => {
                eprintln!("sbx: {e}");
                2
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        println!("sbx: no unfinished run (after-run work exists on Linux only)");
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(cli: Cli) -> String {
        match cli.cmd {
            Cmd::Run(a) => format!("{a:?}"),
            _ => panic!("not run"),
        }
    }

    /// CLI.md: every command's `--help` has an example, subcommand groups
    /// (`sbx sbpl`) and the top level included.
    #[test]
    fn every_help_has_an_example() {
        fn walk(c: &clap::Command, path: &str) {
            let help = c
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.contains("Example:\n  sbx"),
                "`{path} --help` has no example"
            );
            for sub in c.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(sub, &format!("{path} {}", sub.get_name()));
            }
        }
        walk(&Cli::command(), "sbx");
    }

    /// The one-subcommand tree accepts exactly what the full tree accepts
    /// for `run`, with the same result; everything else falls back.
    #[test]
    fn run_parses_alike_with_one_subcommand() {
        let cases: &[&[&str]] = &[
            &["run", "p.toml", "--", "true"],
            &["run", "--artifact", "a.json", "--", "cmd", "--help", "-x"],
            &[
                "run",
                "--artifact=a.json",
                "--report",
                "--workspace",
                "w",
                "--",
                "x",
            ],
            &[
                "run",
                "p.toml",
                "--tool",
                "t",
                "--home",
                "h",
                "--approvals",
                "s",
                "--",
                "x",
                "y",
            ],
            &["run", "--landlock-abi", "3", "p.toml", "--", "x"],
            &["run", "--quiet", "p.toml", "--", "x"],
            &["run", "p.toml", "--", "--", "x"],
            &["run", "p.toml", "x"],
            &["run", "p.toml", "--"],
            &["run", "--", "x"],
            &["run", "p.toml", "--artifact", "a.json", "--", "x"],
            &["run", "--artifact", "a.json", "--tool", "t", "--", "x"],
            &["run", "--artifact", "a.json", "--approvals", "s", "--", "x"],
            &["run", "--landlock-abi", "x", "p.toml", "--", "x"],
            &["run", "--frobnicate", "p.toml", "--", "x"],
            &["run", "--help"],
            &["run", "--version"],
            &["run"],
            &["check", "p.toml"],
            &["--version"],
        ];
        for case in cases {
            let argv: Vec<OsString> = std::iter::once("sbx")
                .chain(case.iter().copied())
                .map(OsString::from)
                .collect();
            let full = parse_with(Cli::command(), &argv);
            match (parse_run(&argv), full) {
                (Some(fast), Ok(full)) => assert_eq!(run_args(fast), run_args(full), "{case:?}"),
                (None, Ok(full)) => assert!(
                    !matches!(full.cmd, Cmd::Run(_)),
                    "{case:?}: a valid `run` took the slow path"
                ),
                (Some(_), Err(e)) => panic!("{case:?}: accepted, but the full tree says {e}"),
                (None, Err(_)) => {}
            }
        }
    }
}
