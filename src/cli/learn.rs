//! `sbx learn`: run a command traced, in the sandbox of a plain `sbx run`
//! under a learning session's policy (the base policy, plus reading and
//! running everything the base does not hide, writing the workspace and
//! reaching any host through a proxy that records each by name), and
//! write a policy that lets it run: the base
//! plus the rules it lacked (`sbx::learn`), including writes the session
//! refused. Linux, through strace, as `sbx run --denials`.

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
    use sbx::compile::{Inputs, Options};
    use std::os::fd::AsRawFd;
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
    // The session's policy: the base with everything readable, the
    // workspace writable and any host reachable, in a file no other
    // process can name or change (this process's close-on-exec memfd).
    let session = match memfd(&format!("{base}\n{}", session_layer())) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: cannot hold the learning session's policy: {e}");
            return 2;
        }
    };
    let mut args: Vec<OsString> = vec![
        "run".into(),
        format!("/proc/{}/fd/{}", std::process::id(), session.as_raw_fd()).into(),
        "--quiet".into(),
    ];
    for (flag, v) in [("--workspace", &a.workspace), ("--home", &a.home)] {
        if let Some(v) = v {
            args.push(flag.into());
            args.push(v.as_str().into());
        }
    }
    args.push("--".into());
    args.extend(a.command.iter().cloned());
    // The hosts the session's proxy connects to, by name: written by the
    // traced `sbx run` when it ends (the trace shows only the proxy's
    // address).
    let reached = match memfd("") {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: cannot hold the learning session's hosts: {e}");
            return 2;
        }
    };
    let reached_path = format!("/proc/{}/fd/{}", std::process::id(), reached.as_raw_fd());
    // Single-threaded still: `traced` starts the first thread.
    std::env::set_var(sbx::runtime::proxy::LEARN_NET, &reached_path);
    // Named before the command runs: it may rename or swap the directory
    // the policy goes to (sbx::atomic::Held).
    let out = match sbx::atomic::Held::new(a.output.as_std_path()) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: cannot write {}: {e}: nothing was run", a.output);
            return 2;
        }
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let keep = sbx::runtime::denials::Keep::Uses;
    let (code, used) = match super::denials::traced(&args, keep, &cwd) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: sbx learn: {e}: nothing was run");
            return 2;
        }
    };
    drop(session);
    std::env::remove_var(sbx::runtime::proxy::LEARN_NET);
    let used = sbx::runtime::denials::on_host(used, &|p| std::path::Path::new(p).exists());
    let hosts = std::fs::read_to_string(&reached_path).unwrap_or_default();
    drop(reached);
    let used = sbx::learn::reached(&hosts, used);
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
    // 0o666 less the umask, as `File::create` would.
    if let Err(e) = out.replace(text.as_bytes(), 0o666) {
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

/// The layer a learning session adds to the base: what the command may
/// do while it is watched. Reading and running whatever is under the
/// host's top-level directories, so that a command gets as far as it can
/// in one session; writing is the workspace's only (a refused write is
/// learned); sensitive paths stay hidden, as under any rule that covers
/// them without naming them (POLICY.md §7).
///
/// Each top-level directory is a rule, not `/` itself: a rule on `/`
/// keeps the host's root, and with it the host's temp directories and
/// the sockets in them and in `/run`. So the session runs in the new
/// root as a plain `sbx run` does (its own `/tmp`, known sockets hidden,
/// read-only mounts). Left out: the kernel's and the process's own
/// (`/proc`, `/sys`, `/dev`, granted by the presets where needed), `/run`
/// (sockets and runtime state), the temp directories (the base's temp
/// rules give the run its own), and `/var`, which holds `/var/tmp` and
/// `/var/run`. A path there that the command uses is still learned: it
/// is "not visible in the sandbox" and present on the host.
#[cfg(target_os = "linux")]
fn session_layer() -> String {
    const LEFT_OUT: &[&str] = &[
        "proc",
        "sys",
        "dev",
        "run",
        "tmp",
        "var",
        "lost+found",
        "mnt",
        "media",
    ];
    let mut tops: Vec<String> = std::fs::read_dir("/")
        .into_iter()
        .flatten()
        .flatten()
        // The host's top-level symlinks (`/bin` → `usr/bin`) are in
        // every new root already.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|n| !LEFT_OUT.contains(&n.as_str()))
        .collect();
    tops.sort();
    let mut text = String::from("# sbx learn's session\n");
    for t in tops {
        text.push_str(&format!(
            "[[fs]]\npath = {}\nread = true\nexecute = true\n\n",
            sbx::runtime::denials::toml_str(&format!("/{t}"))
        ));
    }
    text.push_str(
        "[[fs]]\npath = \".\"\nread = true\nwrite = true\nexecute = true\n\n\
         [[net]]\nhost = \"*\"\n",
    );
    text
}

/// A close-on-exec memfd holding `text`.
#[cfg(target_os = "linux")]
fn memfd(text: &str) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a NUL-terminated string; the result is checked.
    let fd = unsafe { libc::memfd_create(c"sbx-learn".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is new and owned by nothing else.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    f.write_all(text.as_bytes())?;
    Ok(f)
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
