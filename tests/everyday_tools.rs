//! The everyday tools of a workspace work under the default policy
//! (`fixtures/default.toml`), each when it is installed: git, cargo and
//! rustc, python3 with a venv and `pip --no-index`, node and npm, java,
//! make and gcc, and a coreutils pipeline. The credential files beside their
//! settings stay unreadable.
//!
//! Home is a fresh directory holding a `.gitconfig`, credential files,
//! and links to the real toolchain directories (`~/.cargo`, `~/.rustup`,
//! `~/.pyenv`, …), so the presets find the toolchains and nothing else of
//! the real home is involved.

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

struct Env {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

/// Whether every tool is installed. A developer's machine may lack one
/// (the test then says SKIPPED); CI installs them all (`.ci/prereqs.sh`),
/// so there a missing tool fails the test.
fn have(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| !common::on_path(t))
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none_or(|v| v != "true"),
        "CI=true but {missing:?} is not installed (.ci/prereqs.sh installs it)"
    );
    println!("SKIPPED: {} not installed", missing.join(", "));
    false
}

fn setup() -> Option<Env> {
    if sbx::runtime::linux::kernel_abi() == 0 {
        println!("SKIPPED: Landlock is not available");
        return None;
    }
    // Not under /tmp, which the default policy grants, nor inside this
    // checkout, whose `.cargo/config.toml` cargo would read as a parent
    // directory's configuration.
    let real = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let base = real.join(".cache/sbx-tests");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("tools-")
        .tempdir_in(&base)
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Sandboxed\n\temail = s@example.invalid\n[init]\n\tdefaultBranch = main\n",
    )
    .unwrap();
    std::fs::write(home.join(".config/git/ignore"), "*.tmp\n").unwrap();
    for secret in [".git-credentials", ".config/git/credentials", ".npmrc"] {
        std::fs::write(home.join(secret), "token-hunter2\n").unwrap();
    }
    for d in [".rustup", ".pyenv", ".nvm", ".local"] {
        if real.join(d).exists() {
            std::os::unix::fs::symlink(real.join(d), home.join(d)).unwrap();
        }
    }
    // Cargo's home holds a registry token beside what cargo needs.
    std::fs::create_dir_all(home.join(".cargo")).unwrap();
    for d in ["bin", "registry", "git", "env", "config.toml"] {
        if real.join(".cargo").join(d).exists() {
            std::os::unix::fs::symlink(real.join(".cargo").join(d), home.join(".cargo").join(d))
                .unwrap();
        }
    }
    std::fs::write(
        home.join(".cargo/credentials.toml"),
        "[registry]\ntoken = \"hunter2\"\n",
    )
    .unwrap();
    Some(Env {
        _dir: dir,
        home,
        ws,
    })
}

/// `sh -c script` under the default policy in `env.ws`; (exit, stdout,
/// stderr).
fn run(env: &Env, script: &str) -> (i32, String, String) {
    run_with(env, script, &[], &[])
}

/// [`run`] with more variables for sbx and flags for `sbx run`.
fn run_with(
    env: &Env,
    script: &str,
    vars: &[(&str, &std::ffi::OsStr)],
    flags: &[&str],
) -> (i32, String, String) {
    let policy = common::root().join("fixtures/default.toml");
    let out = Command::new(SBX)
        .arg("run")
        .arg(&policy)
        .arg("--workspace")
        .arg(&env.ws)
        .args(flags)
        .args(["--", "sh", "-c", script])
        .current_dir(&env.ws)
        .env("HOME", &env.home)
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    common::outcome(out)
}

/// `sbx run --report` of `sh -c script` under the default policy with
/// `ws` as the workspace and current directory; (exit, stdout, stderr).
fn run_report_in(env: &Env, ws: &Path, script: &str) -> (i32, String, String) {
    let policy = common::root().join("fixtures/default.toml");
    let out = Command::new(SBX)
        .arg("run")
        .arg(&policy)
        .arg("--report")
        .arg("--workspace")
        .arg(ws)
        .args(["--", "sh", "-c", script])
        .current_dir(ws)
        .env("HOME", &env.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    common::outcome(out)
}

fn ok(env: &Env, what: &str, script: &str) -> String {
    let (code, out, err) = run(env, script);
    assert_eq!(
        code, 0,
        "{what}: exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}

fn denied(env: &Env, path: &Path) {
    let (code, out, err) = run(env, &format!("cat '{}'", path.display()));
    assert_ne!(code, 0, "{} was readable", path.display());
    assert!(!out.contains("hunter2"), "{}: {out}", path.display());
    // Landlock refuses it, or (the namespace layer's new root) it is
    // not there at all.
    assert!(
        err.contains("Permission denied") || err.contains("No such file or directory"),
        "{}: {err}",
        path.display()
    );
}

#[test]
fn git_works_and_its_credentials_stay_out() {
    let Some(env) = setup() else { return };
    if !have(&["git"]) {
        return;
    }
    let out = ok(
        &env,
        "git",
        "set -e; git init -q r; cd r; echo a > a; echo x > x.tmp; git add -A; \
         git commit -qm one; git branch b; git checkout -q b; echo b >> a; \
         git stash -q; git stash pop -q; git commit -qam two; git log --format=%an%x20%s; \
         git status --porcelain --ignored",
    );
    assert_eq!(out, "Sandboxed two\nSandboxed one\n!! x.tmp\n", "{out}");
    denied(&env, &env.home.join(".git-credentials"));
    denied(&env, &env.home.join(".config/git/credentials"));
}

/// A repository made during the run (`git init`, `git remote add`,
/// `git config user.name`; at the top, where `.git` was absent at
/// launch, and below it) keeps its config after the run: every key in it
/// is inert (docs/protected.md), so nothing is moved aside but the new
/// top's hooks.
#[test]
fn git_init_and_remote_add_keep_their_config() {
    let Some(env) = setup() else { return };
    if !have(&["git"]) {
        return;
    }
    let (code, out, err) = run(
        &env,
        "set -e; git init -q; git remote add origin https://example.invalid/top.git; \
         git config user.name x; git init -q sub; \
         git -C sub remote add origin https://example.invalid/sub.git; echo made",
    );
    assert_eq!((code, out.as_str()), (0, "made\n"), "{err}");
    assert!(!err.contains(".git/config"), "{err}");
    let git = |dir: &Path, key: &str| {
        let o = Command::new("git")
            .args(["config", "--get", key])
            .current_dir(dir)
            .env("HOME", &env.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(
        git(&env.ws, "remote.origin.url"),
        "https://example.invalid/top.git"
    );
    assert_eq!(git(&env.ws, "user.name"), "x");
    assert_eq!(
        git(&env.ws.join("sub"), "remote.origin.url"),
        "https://example.invalid/sub.git"
    );
    // The top's hooks were made during the run: aside, and said why.
    assert!(err.contains("init.templateDir"), "{err}");
}

/// The workspace is a subdirectory of a repository: git finds the
/// repository (its worktree and `.git` read-only, the report says so and
/// how to commit), and nothing outside the workspace can be written.
#[test]
fn git_in_a_subdirectory_of_a_repository() {
    let Some(env) = setup() else { return };
    if !have(&["git"]) {
        return;
    }
    let sub = env.ws.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(env.ws.join("other"), "top\n").unwrap();
    std::fs::write(sub.join("a"), "a\n").unwrap();
    let host = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&env.ws)
            .env("HOME", &env.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
    };
    host(&["init", "-q"]);
    host(&["add", "-A"]);
    host(&["commit", "-qm", "one"]);
    let config = std::fs::read(env.ws.join(".git/config")).unwrap();
    let (code, out, err) = run_report_in(
        &env,
        &sub,
        "git status --short; git log --format=%s; echo b > a; git status --short; \
         echo x > ../other || echo other-refused; \
         echo '[core]' >> ../.git/config || echo config-refused; \
         echo new > mine && echo mine-written",
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(
        out, "one\n M a\nother-refused\nconfig-refused\nmine-written\n",
        "{err}"
    );
    assert!(
        err.contains("Read-only file system") || err.contains("Permission denied"),
        "{err}"
    );
    assert_eq!(std::fs::read(env.ws.join("other")).unwrap(), b"top\n");
    assert_eq!(std::fs::read(env.ws.join(".git/config")).unwrap(), config);
    // The report: the repository's grant and the hint.
    let ws = env.ws.display().to_string();
    assert!(
        err.contains(&format!("allow {ws}: read_file read_dir")),
        "{err}"
    );
    assert!(
        err.contains(&format!("the workspace lies in the git repository at {ws}"))
            && err.contains(&format!(
                "committing needs the repository's top as the workspace (--workspace {ws})"
            )),
        "{err}"
    );
    // A linked worktree: its gitdir and the common dir are granted too,
    // as `git worktree add` made them (a `.git` file that does not name
    // the worktree back gets nothing: tests/linux_escape).
    let wt = env.home.join("wt");
    host(&["worktree", "add", "-q", wt.to_str().unwrap()]);
    let (code, out, err) = run_report_in(&env, &wt.join("sub"), "git log --format=%s; cat a");
    assert_eq!((code, out.as_str()), (0, "one\na\n"), "{err}");
}

#[test]
fn cargo_and_rustc_build_and_run() {
    let Some(env) = setup() else { return };
    if !have(&["cargo", "rustc"]) {
        return;
    }
    let out = ok(
        &env,
        "cargo",
        "set -e; cargo new -q --vcs none c; cd c; cargo run -q --offline; \
         printf 'fn main() { println!(\"rustc\"); }' > m.rs; rustc m.rs; ./m; \
         cd ..; cargo new -q --lib --vcs none l; cd l; \
         printf '/// ```\\n/// assert_eq!(l::two(), 2);\\n/// ```\\npub fn two() -> u32 { 2 }\\n' > src/lib.rs; \
         cargo test -q --offline > t.log 2>&1 || { cat t.log >&2; exit 1; }; \
         grep -c '1 passed' t.log",
    );
    // `cargo test` runs doctests from the temp directory.
    assert_eq!(out, "Hello, world!\nrustc\n1\n");
    denied(&env, &env.home.join(".cargo/credentials.toml"));
}

#[test]
fn python_venv_and_pip_without_an_index() {
    let Some(env) = setup() else { return };
    if !have(&["python3"]) {
        return;
    }
    // A one-module wheel, made outside the sandbox.
    let wheels = env.ws.join("wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    let made = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1] + '/sbxdemo-1.0-py3-none-any.whl', 'w')\n\
             z.writestr('sbxdemo.py', 'X = 42\\n')\n\
             d = 'sbxdemo-1.0.dist-info/'\n\
             z.writestr(d + 'METADATA', 'Metadata-Version: 2.1\\nName: sbxdemo\\nVersion: 1.0\\n')\n\
             z.writestr(d + 'WHEEL', 'Wheel-Version: 1.0\\nGenerator: sbx\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             z.writestr(d + 'RECORD', '')\n\
             z.close()\n",
        ])
        .arg(&wheels)
        .status()
        .unwrap();
    assert!(made.success());
    let out = ok(
        &env,
        "python",
        "set -e; python3 -m venv v; ./v/bin/pip install -q --no-index --find-links wheels sbxdemo; \
         ./v/bin/python -c 'import sbxdemo; print(sbxdemo.X)'",
    );
    assert_eq!(out.trim_end().lines().last(), Some("42"), "{out}");
}

#[test]
fn node_and_npm() {
    let Some(env) = setup() else { return };
    if !have(&["node", "npm"]) {
        return;
    }
    let out = ok(
        &env,
        "node",
        "set -e; node -e 'console.log(6 * 7)'; mkdir p; cd p; npm init -y >/dev/null; \
         npm pkg set version=2.0.0; npm pkg get version",
    );
    assert_eq!(out, "42\n\"2.0.0\"\n");
    denied(&env, &env.home.join(".npmrc"));
}

/// The JVM runs with memfd execution refused (the default): ZGC asks
/// for a memfd for its heap and, refused, takes a file in /dev/shm.
#[test]
fn java_without_memfd_exec() {
    let Some(env) = setup() else { return };
    if !have(&["java"]) {
        return;
    }
    let out = ok(
        &env,
        "java",
        "set -e; printf 'public class H { public static void main(String[] a) { \
         System.out.println(java.util.stream.IntStream.rangeClosed(1, 9).sum()); } }' > H.java; \
         java H.java; java -XX:+UseZGC H.java",
    );
    assert_eq!(out, "45\n45\n");
}

#[test]
fn make_gcc_and_coreutils() {
    let Some(env) = setup() else { return };
    if !have(&["make", "gcc"]) {
        return;
    }
    let out = ok(
        &env,
        "make",
        "set -e; printf 'int main(void) { return 3; }\\n' > m.c; \
         printf 'm: m.c\\n\\tgcc -o m m.c\\n' > Makefile; make -s; ./m || echo exit=$?; \
         seq 1 100 | sort -rn | head -3 | tr '\\n' ' '; echo; \
         find . -name '*.c' | xargs wc -l | awk '{print $1}'",
    );
    assert_eq!(out, "exit=3\n100 99 98 \n1\n");
}

/// Terminals: `script` and a detached tmux session each open a
/// pseudo-terminal of the run's own (a private `devpts`, docs/linux.md).
#[test]
fn script_and_tmux_get_terminals() {
    let Some(env) = setup() else { return };
    if !have(&["script", "tmux"]) {
        return;
    }
    let out = ok(
        &env,
        "script and tmux",
        "set -e; script -qc 'echo in-a-pty' /dev/null; \
         tmux -S \"$PWD/tmux.sock\" new -d 'sleep 1'; \
         tmux -S \"$PWD/tmux.sock\" kill-server; echo tmux",
    );
    assert_eq!(out.replace('\r', ""), "in-a-pty\ntmux\n", "{out}");
}

/// The variables a policy without `[[env]]` keeps (docs/presets.md):
/// the terminal's, the toolchain homes (cargo with `CARGO_HOME` set
/// builds), and a certificate bundle, whose file becomes readable; a
/// "bundle" that is a sensitive path and a secret are dropped, and
/// `--report` lists them.
#[test]
fn variables_kept_and_dropped() {
    let Some(env) = setup() else { return };
    if !have(&["cargo"]) {
        return;
    }
    let certs = env.home.parent().unwrap().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::write(certs.join("ca.pem"), "corporate-ca\n").unwrap();
    std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
    std::fs::write(env.home.join(".ssh/id_ed25519"), "hunter2\n").unwrap();
    let cargo_home = env.home.join(".cargo");
    let vars = [
        ("TERM", "xterm-256color".as_ref()),
        ("NO_COLOR", "1".as_ref()),
        ("CARGO_HOME", cargo_home.as_os_str()),
        (
            "SSL_CERT_FILE",
            certs.join("ca.pem").into_os_string().leak() as &_,
        ),
        (
            "NODE_EXTRA_CA_CERTS",
            env.home.join(".ssh/id_ed25519").into_os_string().leak() as &_,
        ),
        ("SBX_TEST_TOKEN", "hunter2".as_ref()),
    ];
    let (code, out, err) = run_with(
        &env,
        "set -e; echo \"$TERM $NO_COLOR $CARGO_HOME\"; cat \"$SSL_CERT_FILE\"; \
         echo \"[${NODE_EXTRA_CA_CERTS-}${SBX_TEST_TOKEN-}]\"; cargo --version >/dev/null; \
         cargo new -q --vcs none k; cd k; cargo build -q --offline; ./target/debug/k",
        &vars,
        &["--report"],
    );
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(
        out,
        format!(
            "xterm-256color 1 {}\ncorporate-ca\n[]\nHello, world!\n",
            cargo_home.display()
        )
    );
    let dropped = err
        .lines()
        .find(|l| l.starts_with("sbx: env dropped: "))
        .unwrap_or_else(|| panic!("{err}"));
    for name in ["NODE_EXTRA_CA_CERTS", "SBX_TEST_TOKEN"] {
        assert!(dropped.split(' ').any(|w| w == name), "{dropped}");
    }
    assert!(err.contains("dropped env NODE_EXTRA_CA_CERTS"), "{err}");
}

/// A tool in a directory on the caller's PATH that no preset grants
/// runs, and the directory stays read-only; a world-writable directory
/// on PATH is not granted.
#[test]
fn tools_on_path_run() {
    let Some(env) = setup() else { return };
    let root = env.home.parent().unwrap();
    let (bin, open) = (root.join("tools/bin"), root.join("open/bin"));
    for (dir, name) in [(&bin, "sbx-path-tool"), (&open, "sbx-open-tool")] {
        std::fs::create_dir_all(dir).unwrap();
        let tool = dir.join(name);
        std::fs::write(&tool, "#!/bin/sh\necho ran\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        open.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let vars = [("PATH", path.as_ref())];
    let (code, out, err) = run_with(
        &env,
        &format!(
            "sbx-path-tool; sbx-open-tool 2>/dev/null || echo refused; \
             touch '{}/x' 2>/dev/null || echo read-only",
            bin.display()
        ),
        &vars,
        &["--report"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "ran\nrefused\nread-only\n", "{err}");
    // `--report` says where the grant comes from.
    let line = format!("sbx: preset caller_path: {} (read, execute)", bin.display());
    assert!(err.lines().any(|l| l == line), "{err}");
    assert!(!err.contains(&open.display().to_string()), "{err}");
    assert!(!bin.join("x").exists());
}

/// `sbx learn` on git and a venv: the learned policy runs the same
/// commands under `sbx run` and grants no credential file.
#[test]
fn learned_policy_for_git_and_python() {
    let Some(env) = setup() else { return };
    if !have(&["git", "python3", "strace"]) {
        return;
    }
    let script = "set -e; rm -rf r v; git init -q r; cd r; echo a > a; git add a; \
                  git commit -qm one; cd ..; python3 -m venv v; ./v/bin/python -c 'print(7)'; \
                  cat ~/.git-credentials >/dev/null 2>&1 || true";
    let learned = env.ws.join("learned.toml");
    let out = Command::new(SBX)
        .args(["learn", "-o"])
        .arg(&learned)
        .arg("--workspace")
        .arg(&env.ws)
        .args(["--", "sh", "-c", script])
        .current_dir(&env.ws)
        .env("HOME", &env.home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = std::fs::read_to_string(&learned).unwrap();
    let granted: Vec<&str> = text.lines().filter(|l| l.starts_with("path = ")).collect();
    assert!(
        granted
            .iter()
            .all(|l| !l.contains("credentials") && !l.contains(".ssh")),
        "{text}"
    );
    // The learned run makes the repository anew; removing the first one's
    // hooks from inside would be refused (protected paths, POLICY.md §7a).
    std::fs::remove_dir_all(env.ws.join("r")).unwrap();
    let run = Command::new(SBX)
        .arg("run")
        .arg(&learned)
        .arg("--workspace")
        .arg(&env.ws)
        .args(["--", "sh", "-c", script])
        .current_dir(&env.ws)
        .env("HOME", &env.home)
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}\n{text}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim_end(), "7");
}
