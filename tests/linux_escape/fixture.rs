//! A throw-away directory tree, policies written into it, and a runner
//! for `sbx run` with a deadline.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

/// The `sbx` under test: `SBX_BIN` when set (the unprivileged run copies
/// both binaries where any user can execute them), else cargo's build.
pub fn sbx_bin() -> String {
    std::env::var("SBX_BIN").unwrap_or_else(|_| SBX.to_string())
}

/// Layout (under a fresh temp dir):
/// `ws/` the workspace (read-write): `data`, `a`, `b`, `c`, `sub/`,
/// `link_in -> ws/data`, `link_out -> outside/secret`;
/// `outside/secret` (no grant); `ro/file` (read-only);
/// `execdir/` (read-write-execute); `home/` ($HOME, empty).
pub struct Fx {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: PathBuf,
}

#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Out {
    /// The probe's one-line answer.
    pub fn answer(&self) -> &str {
        self.stdout.trim()
    }
}

impl Fx {
    pub fn new() -> Fx {
        let dir = tempfile::Builder::new()
            .prefix("sbx-escape-")
            .tempdir()
            .expect("temp dir");
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        for d in ["ws/sub", "outside", "ro", "execdir", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (f, text) in [
            ("ws/data", "ws-data"),
            ("ws/a", "a"),
            ("ws/b", "b"),
            ("ws/c", "c"),
            ("outside/secret", "secret"),
            ("ro/file", "ro-data"),
        ] {
            std::fs::write(root.join(f), text).unwrap();
        }
        std::os::unix::fs::symlink(root.join("outside/secret"), ws.join("link_out")).unwrap();
        std::os::unix::fs::symlink(ws.join("data"), ws.join("link_in")).unwrap();
        Fx {
            _dir: dir,
            root,
            ws,
        }
    }

    pub fn path(&self, rel: &str) -> String {
        self.root.join(rel).to_str().unwrap().to_string()
    }

    /// The base policy: system runtime only (no /tmp, no toolchains), the
    /// workspace read-write, `ro/` read-only, `execdir/` read-write-execute;
    /// `extra` is appended verbatim.
    pub fn policy(&self, enforcement: &str, extra: &str) -> PathBuf {
        let text = format!(
            r#"version = 1
enforcement = "{enforcement}"

[process]
presets = ["system_runtime"]

[[fs]]
path = "."
read = true
write = true

[[fs]]
path = "{ro}"
read = true

[[fs]]
path = "{exec}"
read = true
write = true
execute = true
{extra}
"#,
            ro = self.path("ro"),
            exec = self.path("execdir"),
        );
        self.write_policy(&text)
    }

    /// [`Fx::policy`] with nothing writable. A `required` policy that grants
    /// a write cannot run with Landlock alone: the protected paths inside
    /// every writable grant (POLICY.md §7a) need the namespace layer.
    pub fn policy_read_only(&self, enforcement: &str, extra: &str) -> PathBuf {
        let text = format!(
            r#"version = 1
enforcement = "{enforcement}"

[process]
presets = ["system_runtime"]

[[fs]]
path = "."
read = true

[[fs]]
path = "{exec}"
read = true
execute = true
{extra}
"#,
            exec = self.path("execdir"),
        );
        self.write_policy(&text)
    }

    /// The default policy (POLICY.md §4): the workspace read, write and
    /// execute, the default presets.
    pub fn default_policy(&self) -> PathBuf {
        self.write_policy("version = 1\n")
    }

    /// A new policy file in the fixture's root holding `text`.
    pub fn write_policy(&self, text: &str) -> PathBuf {
        let n = std::fs::read_dir(&self.root).unwrap().count();
        let p = self.root.join(format!("policy{n}.toml"));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `sbx compile POLICY --target linux --workspace WS -o OUT`.
    pub fn compile_linux(&self, policy: &Path, out: &Path) -> Out {
        let args: Vec<OsString> = vec![
            "compile".into(),
            policy.into(),
            "--target".into(),
            "linux".into(),
            "--workspace".into(),
            self.ws.clone().into(),
            "-o".into(),
            out.into(),
        ];
        self.sbx(&args, None)
    }

    /// `sbx run --artifact ART --workspace WS -- <this binary> --probe PROBE…`
    pub fn run_artifact(&self, art: &Path, probe: &[&str]) -> Out {
        let mut args: Vec<OsString> = vec!["run".into(), "--artifact".into(), art.into()];
        args.extend(["--workspace".into(), self.ws.clone().into(), "--".into()]);
        args.push(std::env::current_exe().unwrap().into());
        args.push("--probe".into());
        args.extend(probe.iter().map(OsString::from));
        self.sbx(&args, None)
    }

    /// `sbx run POLICY --workspace WS FLAGS -- <this binary> --probe PROBE…`
    pub fn run(&self, policy: &Path, flags: &[&str], probe: &[&str]) -> Out {
        let mut args: Vec<OsString> = vec!["run".into(), policy.into()];
        args.extend(["--workspace".into(), self.ws.clone().into()]);
        args.extend(flags.iter().map(OsString::from));
        args.push("--".into());
        args.push(std::env::current_exe().unwrap().into());
        args.push("--probe".into());
        args.extend(probe.iter().map(OsString::from));
        self.sbx(&args, None)
    }

    /// Run `sbx ARGS` with a fixed environment (including a secret that
    /// must not reach the child), stdin from /dev/null, a 60 s deadline,
    /// and optionally `keep_fd` inherited as descriptor 5.
    pub fn sbx(&self, args: &[OsString], keep_fd: Option<i32>) -> Out {
        self.sbx_with(args, keep_fd, &[])
    }

    /// [`Fx::sbx`] with `vars` set over its environment (`PATH` too).
    pub fn sbx_with(&self, args: &[OsString], keep_fd: Option<i32>, vars: &[(&str, &str)]) -> Out {
        let mut cmd = Command::new(sbx_bin());
        cmd.args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.root.join("home"))
            .env("USER", "root")
            .env("LANG", "C.UTF-8")
            .env("SBX_TEST_SECRET", "hunter2")
            .env("AWS_REGION", "eu-west-1")
            .envs(vars.iter().copied())
            .current_dir(&self.ws)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(fd) = keep_fd {
            // SAFETY: dup2 is async-signal-safe; the copy is not CLOEXEC,
            // so sbx inherits descriptor 5 the way a careless caller's
            // child would.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::dup2(fd, 5) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        run_with_deadline(cmd, Duration::from_secs(60))
    }

    /// Run this binary with `args` and the environment `sbx` gets.
    pub fn exec_self(&self, args: &[OsString]) -> Out {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.root.join("home"))
            .env("LANG", "C.UTF-8")
            .current_dir(&self.ws)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        run_with_deadline(cmd, Duration::from_secs(60))
    }

    /// Run this binary's probe directly, outside any sandbox.
    pub fn unsandboxed(&self, probe: &[&str]) -> Out {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.arg("--probe")
            .args(probe)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        run_with_deadline(cmd, Duration::from_secs(30))
    }
}

fn run_with_deadline(mut cmd: Command, limit: Duration) -> Out {
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t2 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 1000 + status.signal().unwrap_or(0));
    let elapsed = start.elapsed();
    Out {
        code,
        stdout: t1.join().unwrap(),
        stderr: t2.join().unwrap(),
        elapsed,
    }
}

/// A directory outside every temp directory (which temp rules grant):
/// `SBX_ESCAPE_NONTEMP` (unprivileged.sh makes one under /var/lib), else
/// this process's home.
pub fn outside_temp() -> Result<PathBuf, String> {
    std::env::var_os("SBX_ESCAPE_NONTEMP")
        .or_else(|| std::env::var_os("HOME"))
        .map(PathBuf::from)
        .filter(|b| b.is_dir() && !b.starts_with("/tmp") && !b.starts_with("/var/tmp"))
        .ok_or_else(|| "no directory outside the temp directories: set SBX_ESCAPE_NONTEMP".into())
}

/// Assert the probe printed `want` and sbx exited 0.
pub fn expect(what: &str, out: &Out, want: &str) -> Result<(), String> {
    if out.code == 0 && out.answer() == want {
        Ok(())
    } else {
        Err(format!(
            "{what}: expected {want} (exit 0), got {:?} (exit {})\nstderr:\n{}",
            out.answer(),
            out.code,
            out.stderr
        ))
    }
}

pub fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}
