//! Package caches of their own (issue #36, docs/presets.md): under the
//! default policy npm, pip and cargo write their caches inside the
//! sandbox, into a private directory per workspace and policy mounted
//! over the tool's path, which still shows what the host's cache holds;
//! the host's caches stay byte for byte as they were. `sbx caches` lists
//! and clears them.
//!
//! Home is a fresh directory outside every temp directory (which the
//! default policy makes writable, and then decides the caches itself),
//! with links to the real toolchains so that python3 and cargo start.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    state: PathBuf,
    ws: PathBuf,
}

fn setup() -> Option<Env> {
    setup_in(common::outside_presets())
}

fn setup_in(base: PathBuf) -> Option<Env> {
    if sbx::runtime::linux::kernel_abi() == 0 {
        println!("SKIPPED: Landlock is not available");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("caches-")
        .tempdir_in(base)
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws, state) = (root.join("home"), root.join("ws"), root.join("state"));
    for d in [&home, &ws, &state] {
        std::fs::create_dir_all(d).unwrap();
    }
    let real = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    for d in [".rustup", ".pyenv", ".nvm"] {
        if real.join(d).exists() {
            std::os::unix::fs::symlink(real.join(d), home.join(d)).unwrap();
        }
    }
    Some(Env {
        _dir: dir,
        root,
        home,
        state,
        ws,
    })
}

/// `sbx ARGS` with the test's home and state directory, in `dir`, no
/// standard input.
fn sbx_command(env: &Env, dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut c = Command::new(SBX);
    c.args(args)
        .current_dir(dir)
        .env("HOME", &env.home)
        .env("XDG_STATE_HOME", &env.state)
        .envs(vars.iter().copied())
        .stdin(Stdio::null());
    c
}

/// `sbx ARGS` run to its end: exit code, stdout, stderr.
fn sbx_in(env: &Env, dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> (i32, String, String) {
    common::outcome(sbx_command(env, dir, args, vars).output().unwrap())
}

/// `sh -c script` under the default policy with `ws` as the workspace.
fn run_in(env: &Env, ws: &Path, script: &str, vars: &[(&str, &str)]) -> (i32, String, String) {
    sbx_in(
        env,
        ws,
        &["run", "--report", "--", "sh", "-c", script],
        vars,
    )
}

fn ok_in(env: &Env, ws: &Path, script: &str, vars: &[(&str, &str)]) -> (String, String) {
    let (code, out, err) = run_in(env, ws, script, vars);
    assert_eq!(code, 0, "exit {code}\nstdout:\n{out}\nstderr:\n{err}");
    (out, err)
}

/// An environment whose home holds an npm cache with one entry, `n`.
fn with_npm_entry() -> Option<Env> {
    let env = setup()?;
    std::fs::create_dir_all(env.home.join(".npm")).unwrap();
    std::fs::write(env.home.join(".npm/n"), "n\n").unwrap();
    Some(env)
}

/// The one key directory the runs so far made.
fn only_key(env: &Env) -> std::fs::DirEntry {
    std::fs::read_dir(env.state.join("sbx/caches"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
}

/// Every entry beneath `dir`: kind, mode and contents (or link target).
fn tree(dir: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let body = if m.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else if m.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(&p).unwrap()
            };
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            out.insert(rel, (m.mode(), body));
        }
    }
    out
}

/// A source distribution pip builds with a backend of its own (no
/// setuptools, no network), then keeps the wheel in its cache.
fn sdist(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let made = Command::new("python3")
        .arg("-c")
        .arg(
            r#"
import io, sys, tarfile
backend = '''
import zipfile
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "sbxdemo-1.0-py3-none-any.whl"
    z = zipfile.ZipFile(wheel_directory + "/" + name, "w")
    z.writestr("sbxdemo.py", "X = 42\\n")
    d = "sbxdemo-1.0.dist-info/"
    z.writestr(d + "METADATA", "Metadata-Version: 2.1\\nName: sbxdemo\\nVersion: 1.0\\n")
    z.writestr(d + "WHEEL", "Wheel-Version: 1.0\\nGenerator: sbx\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr(d + "RECORD", "")
    z.close()
    return name
'''
files = {
    "PKG-INFO": "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
    "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
    "backend.py": backend,
    "sbxdemo.py": "X = 42\n",
}
with tarfile.open(sys.argv[1] + "/sbxdemo-1.0.tar.gz", "w:gz") as t:
    for n, text in files.items():
        b = text.encode()
        i = tarfile.TarInfo("sbxdemo-1.0/" + n)
        i.size = len(b)
        t.addfile(i, io.BytesIO(b))
"#,
        )
        .arg(dir)
        .status()
        .unwrap();
    assert!(made.success());
}

/// pip and npm write their caches in the sandbox; the host's caches are
/// unchanged; a second run in the workspace sees the first one's
/// entries, a run in another workspace does not.
#[test]
fn npm_and_pip_caches_are_private_per_workspace() {
    let Some(env) = setup() else { return };
    if !common::on_path("npm") || !common::on_path("python3") {
        println!("SKIPPED: npm or python3 not installed");
        return;
    }
    let npm = env.home.join(".npm");
    let pip = env.home.join(".cache/pip");
    std::fs::create_dir_all(npm.join("_cacache")).unwrap();
    std::fs::create_dir_all(&pip).unwrap();
    std::fs::write(npm.join("_cacache/host-entry"), "host npm\n").unwrap();
    std::fs::write(pip.join("host-entry"), "host pip\n").unwrap();
    let (npm_before, pip_before) = (tree(&npm), tree(&pip));
    sdist(&env.ws.join("sdists"));

    let (out, err) = ok_in(
        &env,
        &env.ws,
        "set -e; cat ~/.npm/_cacache/host-entry ~/.cache/pip/host-entry; \
         mkdir p; cd p; npm init -y >/dev/null; npm pack --silent >/dev/null; cd ..; \
         npm cache add ./p/p-1.0.0.tgz; grep -rl 'p-1.0.0.tgz' ~/.npm/_cacache/index-v5 >/dev/null; \
         python3 -m venv v; ./v/bin/pip install -q --no-index --find-links sdists sbxdemo; \
         ./v/bin/python -c 'import sbxdemo; print(sbxdemo.X)'; \
         ls ~/.cache/pip/wheels",
        &[],
    );
    assert!(out.starts_with("host npm\nhost pip\n42\n"), "{out}\n{err}");
    assert!(
        err.contains("npm at ") && err.contains("private, over the host's cache"),
        "{err}"
    );
    // The host's caches: not a byte changed, nothing added.
    assert_eq!(tree(&npm), npm_before);
    assert_eq!(tree(&pip), pip_before);

    // The same workspace and policy: the first run's entries are there.
    let (out, _) = ok_in(
        &env,
        &env.ws,
        "grep -rl 'p-1.0.0.tgz' ~/.npm/_cacache/index-v5 | wc -l; \
         find ~/.cache/pip/wheels -name 'sbxdemo-1.0-py3-none-any.whl' | wc -l",
        &[],
    );
    let counts: Vec<u32> = out.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert!(counts[0] > 0 && counts[1] == 1, "{out}");

    // Another workspace: its own caches, without them, over the same
    // host's entries.
    let other = env.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (out, _) = ok_in(
        &env,
        &other,
        "cat ~/.npm/_cacache/host-entry; ls ~/.npm/_cacache; ls ~/.cache/pip",
        &[],
    );
    assert_eq!(out, "host npm\nhost-entry\nhost-entry\n");
    assert_eq!(tree(&npm), npm_before);
    assert_eq!(tree(&pip), pip_before);

    // Listed, then cleared, per workspace.
    let (code, out, err) = sbx_in(&env, &env.ws, &["caches"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    let ws = env.ws.to_str().unwrap();
    assert!(
        out.lines().any(|l| l.contains(&format!("  {ws}  sha256:"))),
        "{out}"
    );
    let (code, out, err) = sbx_in(
        &env,
        &env.root,
        &["caches", "clear", "--workspace", ws],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("removed ") && out.lines().count() == 1,
        "{out}"
    );
    let (_, out, _) = sbx_in(&env, &env.ws, &["caches"], &[]);
    assert!(
        out.lines().count() == 1 && out.contains("/other  "),
        "{out}"
    );
    let (code, out, _) = sbx_in(&env, &env.ws, &["caches", "clear", "--all"], &[]);
    assert_eq!(code, 0);
    assert!(out.starts_with("removed "), "{out}");
    let (_, out, _) = sbx_in(&env, &env.ws, &["caches"], &[]);
    assert_eq!(out, "sbx: no private caches\n");
    assert_eq!(tree(&npm), npm_before);
}

/// `caches clear --gone` removes the keys of workspaces that no longer
/// exist, and only those: a live workspace's stay, and so does one whose
/// workspace is a dangling link (something is there).
#[test]
fn clear_gone_removes_only_the_caches_of_removed_workspaces() {
    let Some(env) = with_npm_entry() else { return };
    let [kept, removed, linked] = ["kept", "removed", "linked"].map(|n| env.root.join(n));
    for ws in [&kept, &removed, &linked] {
        std::fs::create_dir_all(ws).unwrap();
        ok_in(&env, ws, "echo x > ~/.npm/y", &[]);
    }
    let (_, out, _) = sbx_in(&env, &env.root, &["caches"], &[]);
    assert_eq!(out.lines().count(), 3, "{out}");
    std::fs::remove_dir(&removed).unwrap();
    std::fs::remove_dir(&linked).unwrap();
    std::os::unix::fs::symlink(env.root.join("nowhere"), &linked).unwrap();
    let (code, out, err) = sbx_in(&env, &env.root, &["caches", "clear", "--gone"], &[]);
    assert_eq!(code, 0, "{err}");
    let removed_line = format!("  {}  sha256:", removed.display());
    assert!(
        out.lines().count() == 1 && out.starts_with("removed ") && out.contains(&removed_line),
        "{out}"
    );
    let (_, out, _) = sbx_in(&env, &env.root, &["caches"], &[]);
    assert!(
        out.lines().count() == 2
            && out.contains(&format!("  {}  sha256:", kept.display()))
            && out.contains(&format!("  {}  sha256:", linked.display())),
        "{out}"
    );
    // Nothing more to clear: said so, exit 0.
    let (code, out, _) = sbx_in(&env, &env.root, &["caches", "clear", "--gone"], &[]);
    assert_eq!(
        (code, out.as_str()),
        (0, "sbx: no private caches to clear\n")
    );
    // With --workspace or --all it is refused.
    for other in [&["--all"][..], &["--workspace", "kept"]] {
        let mut args = vec!["caches", "clear", "--gone"];
        args.extend(other);
        let (code, _, err) = sbx_in(&env, &env.root, &args, &[]);
        assert_eq!(code, 2, "{other:?}: {err}");
    }
    // From a directory removed since (no current directory): it works.
    let cwd = env.root.join("cwd-removed");
    std::fs::create_dir(&cwd).unwrap();
    let out = Command::new("sh")
        .args([
            "-c",
            "cd \"$1\" && rmdir \"$1\" && exec \"$2\" caches clear --gone",
        ])
        .arg("sh")
        .arg(&cwd)
        .arg(SBX)
        .env("HOME", &env.home)
        .env("XDG_STATE_HOME", &env.state)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (code, out, err) = common::outcome(out);
    assert_eq!(
        (code, out.as_str()),
        (0, "sbx: no private caches to clear\n"),
        "{err}"
    );
}

/// The overlay shows the host's entries; writing one copies it up: the
/// next run sees the new contents, the host keeps its own.
#[test]
fn the_host_cache_is_read_and_copied_up() {
    let Some(env) = setup() else { return };
    let npm = env.home.join(".npm");
    std::fs::create_dir_all(npm.join("_cacache/sub")).unwrap();
    std::fs::write(npm.join("_cacache/sub/entry"), "host\n").unwrap();
    let before = tree(&npm);
    let (out, _) = ok_in(
        &env,
        &env.ws,
        "set -e; cat ~/.npm/_cacache/sub/entry; echo sandbox >> ~/.npm/_cacache/sub/entry; \
         rm ~/.npm/_cacache/sub/entry; echo again > ~/.npm/_cacache/sub/entry; echo new > ~/.npm/new",
        &[],
    );
    assert_eq!(out, "host\n");
    assert_eq!(tree(&npm), before);
    let (out, _) = ok_in(
        &env,
        &env.ws,
        "cat ~/.npm/_cacache/sub/entry ~/.npm/new",
        &[],
    );
    assert_eq!(out, "again\nnew\n");
    // Not executable there: the cache holds data, not programs.
    let (code, _, err) = run_in(
        &env,
        &env.ws,
        "printf '#!/bin/sh\\necho ran\\n' > ~/.npm/run.sh; chmod +x ~/.npm/run.sh; ~/.npm/run.sh",
        &[],
    );
    assert_eq!(code, 126, "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert_eq!(tree(&npm), before);
}

/// `errno` name of writing `path` in the sandbox, or `ok`.
const WRITE: &str = "python3 -c 'import errno, sys\n\
try:\n    open(sys.argv[1], \"w\").write(\"x\"); print(\"ok\")\n\
except OSError as e:\n    print(errno.errorcode[e.errno])' ";

/// cargo with `CARGO_HOME` set: its registry and git caches are private
/// and writable, its `bin` is not, and nothing reaches the host.
#[test]
fn cargo_home_caches_are_private_and_bin_is_not_writable() {
    let Some(env) = setup() else { return };
    if !common::on_path("cargo") || !common::on_path("python3") {
        println!("SKIPPED: cargo or python3 not installed");
        return;
    }
    let cargo_home = env.root.join("cargo-home");
    for d in ["registry/index", "git/db", "bin"] {
        std::fs::create_dir_all(cargo_home.join(d)).unwrap();
    }
    std::fs::write(cargo_home.join("registry/index/host"), "host\n").unwrap();
    let before = tree(&cargo_home);
    let ch = cargo_home.to_str().unwrap();
    let path = format!("{ch}/bin:{}", std::env::var("PATH").unwrap_or_default());
    let vars = [("CARGO_HOME", ch), ("PATH", path.as_str())];
    let script = format!(
        "set -e; cat $CARGO_HOME/registry/index/host; \
         {WRITE} $CARGO_HOME/registry/index/new; {WRITE} $CARGO_HOME/git/db/new; \
         {WRITE} $CARGO_HOME/bin/planted; {WRITE} $CARGO_HOME/registry/../planted; \
         cargo new -q --vcs none demo; cd demo; cargo build -q --offline; ./target/debug/demo"
    );
    let (out, err) = ok_in(&env, &env.ws, &script, &vars);
    assert_eq!(out, "host\nok\nok\nEROFS\nEROFS\nHello, world!\n", "{err}");
    assert!(err.contains("cargo-registry at "), "{err}");
    assert_eq!(tree(&cargo_home), before);
    // The positive control for `bin`: outside the sandbox it is writable.
    std::fs::write(cargo_home.join("bin/planted"), "x").unwrap();
    // A second run reads what the first wrote in the cache.
    let (out, _) = ok_in(
        &env,
        &env.ws,
        "cat $CARGO_HOME/registry/index/new $CARGO_HOME/git/db/new",
        &vars,
    );
    assert_eq!(out, "xx");
}

/// Every cache is mounted `nosuid`, `nodev` and `noexec`, whether it is
/// a directory of home's overlay (npm, with a host cache), its own
/// private directory (maven, none on the host) or beside home (cargo's
/// registry under a `CARGO_HOME` elsewhere): a program the command puts in
/// a cache cannot be run from there. Positive control: the same script
/// runs from the workspace.
#[test]
fn caches_are_mounted_without_exec_suid_or_devices() {
    let Some(env) = with_npm_entry() else { return };
    let cargo_home = env.root.join("cargo-home");
    std::fs::create_dir_all(cargo_home.join("registry")).unwrap();
    let ch = cargo_home.to_str().unwrap();
    let home = env.home.to_str().unwrap();
    let script = format!(
        "for d in {home}/.npm {home}/.m2/repository {ch}/registry; do \
           awk -v d=$d '$5 == d {{ print d, $6 }}' /proc/self/mountinfo; \
           printf '#!/bin/sh\\necho ran\\n' > $d/x.sh; chmod +x $d/x.sh; \
           $d/x.sh 2>/dev/null || echo \"refused $?\"; \
         done; cp {ch}/registry/x.sh ./x.sh; ./x.sh"
    );
    let (out, err) = ok_in(&env, &env.ws, &script, &[("CARGO_HOME", ch)]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}\n{err}");
    for (i, d) in [
        format!("{home}/.npm"),
        format!("{home}/.m2/repository"),
        format!("{ch}/registry"),
    ]
    .iter()
    .enumerate()
    {
        let (path, opts) = lines[2 * i].split_once(' ').unwrap();
        assert_eq!(path, d, "{out}");
        let opts: Vec<&str> = opts.split(',').collect();
        for want in ["nosuid", "nodev", "noexec"] {
            assert!(opts.contains(&want), "{d}: {opts:?}");
        }
        assert_eq!(lines[2 * i + 1], "refused 126", "{d}: {out}");
    }
    assert_eq!(lines[6], "ran", "{out}");
}

/// A rule that names the cache path decides it: no private cache there.
#[test]
fn a_rule_on_the_cache_path_wins() {
    let Some(env) = setup() else { return };
    let npm = env.home.join(".npm");
    std::fs::create_dir_all(&npm).unwrap();
    let rw = npm.to_str().unwrap();
    let (code, out, err) = sbx_in(
        &env,
        &env.ws,
        &[
            "run",
            "--report",
            "--allow-write",
            rw,
            "--",
            "sh",
            "-c",
            "echo host > ~/.npm/written",
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("not mounted: npm") && err.contains("a rule lets the command write"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(npm.join("written")).unwrap(),
        "host\n"
    );
}

/// Unprivileged (a user namespace), a host cache holding a file of
/// another user cannot be copied up: the cache is a plain private
/// directory, said so, and works. Run as root, the test runs sbx as
/// uid 65534 (nobody).
#[test]
fn foreign_owned_host_cache_falls_back_to_a_plain_directory() {
    // Where uid 65534 can reach it: the usual place is under root's home
    // (0700) when the checkout is a git repository.
    let Some(env) = setup_in(common::outside_presets_for_anyone()) else {
        return;
    };
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 || !common::on_path("setpriv") {
        println!("SKIPPED: needs root (to make a root-owned file) and setpriv");
        return;
    }
    let npm = env.home.join(".npm");
    std::fs::create_dir_all(npm.join("_cacache")).unwrap();
    std::fs::write(npm.join("_cacache/mine"), "mine\n").unwrap();
    let nobody = |p: &Path| std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    for d in [&env.root, &env.home, &env.ws, &env.state] {
        nobody(d);
    }
    for p in [npm.clone(), npm.join("_cacache"), npm.join("_cacache/mine")] {
        nobody(&p);
    }
    // `sudo npm` once left a file of root's there.
    std::fs::write(npm.join("_cacache/roots"), "root\n").unwrap();
    let before = tree(&npm);
    let run = |script: &str| {
        let out = Command::new("setpriv")
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "--",
            ])
            .arg(SBX)
            .args(["run", "--report", "--", "sh", "-c", script])
            .current_dir(&env.ws)
            .env("HOME", &env.home)
            .env("XDG_STATE_HOME", &env.state)
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        common::outcome(out)
    };
    let (code, out, err) = run("ls ~/.npm; echo private > ~/.npm/new; cat ~/.npm/new");
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out, "private\n", "{err}");
    assert!(
        err.contains("the npm cache at ") && err.contains("cannot copy it up (EOVERFLOW)"),
        "{err}"
    );
    assert!(
        err.contains("private and empty of the host's entries"),
        "{err}"
    );
    assert_eq!(tree(&npm), before);
    // The positive control: without the foreign file, the overlay.
    std::fs::remove_file(npm.join("_cacache/roots")).unwrap();
    let (code, out, err) = run("cat ~/.npm/_cacache/mine ~/.npm/new");
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out, "mine\nprivate\n", "{err}");
    assert!(err.contains("private, over the host's cache"), "{err}");
}

/// `namespaces = "never"`: no new root, no private caches, said so.
#[test]
fn without_a_new_root_no_private_caches() {
    let Some(env) = setup() else { return };
    let policy = env.root.join("never.toml");
    std::fs::write(
        &policy,
        "[[fs]]\npath = \".\"\nread = true\nwrite = true\n\n[linux]\nnamespaces = \"never\"\n",
    )
    .unwrap();
    let (code, out, err) = sbx_in(
        &env,
        &env.ws,
        &["run", "--report", policy.to_str().unwrap(), "--", "true"],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("sbx: caches: none: [linux] namespaces = \"never\""),
        "{err}"
    );
    assert!(!env.state.join("sbx/caches").exists());
}

/// A run whose policy can write where sbx keeps the caches cannot fill
/// another key's cache for later: sbx's state directory is hidden from a
/// command whose rules cover it (EACCES).
#[test]
fn another_keys_cache_is_out_of_reach() {
    let Some(env) = setup() else { return };
    if !common::on_path("python3") {
        println!("SKIPPED: python3 not installed");
        return;
    }
    std::fs::create_dir_all(env.home.join(".npm")).unwrap();
    ok_in(&env, &env.ws, "echo first > ~/.npm/entry", &[]);
    let (_, out, _) = sbx_in(&env, &env.ws, &["caches"], &[]);
    let key = out.split_whitespace().next().unwrap().to_string();
    // Caches under home keep their entries at their place in a mirror
    // of home (the upper layer of home's overlay).
    let data = env
        .state
        .join("sbx/caches")
        .join(&key)
        .join("home/data/.npm");
    assert_eq!(
        std::fs::read_to_string(data.join("entry")).unwrap(),
        "first\n"
    );
    let wide = env.root.to_str().unwrap();
    let planted = data.join("planted");
    let free = env.root.join("free");
    let script = format!(
        "{WRITE} '{}'; {WRITE} '{}'",
        planted.display(),
        free.display()
    );
    let (code, out, err) = sbx_in(
        &env,
        &env.ws,
        &["run", "--allow-write", wide, "--", "sh", "-c", &script],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, "EACCES\nok\n", "{err}");
    assert!(!planted.exists());
    assert!(free.exists());
}

/// The key names what the run grants, not the state of the workspace:
/// `--allow-*` flags, another `PATH`, a certificate bundle or a git
/// ceiling make a key
/// of their own (a narrower run cannot fill a wider one's cache), while a
/// repeated run, or one after a repository appeared in the workspace,
/// finds its cache again. Each run writes an entry that only later runs
/// of its key see.
#[test]
fn keys_follow_what_the_run_grants() {
    let Some(env) = with_npm_entry() else { return };
    let keys = || {
        let mut k: Vec<String> = std::fs::read_dir(env.state.join("sbx/caches"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit()))
            .collect();
        k.sort();
        k
    };
    let path = std::env::var("PATH").unwrap();
    let run = |extra: &[&str], vars: &[(&str, &str)], mark: &str| {
        let script = format!("ls ~/.npm | tr '\\n' ' '; echo; touch ~/.npm/{mark}");
        let mut args = vec!["run"];
        args.extend_from_slice(extra);
        args.extend(["--", "sh", "-c", &script]);
        let (code, out, err) = sbx_in(&env, &env.ws, &args, vars);
        assert_eq!(code, 0, "{out}{err}");
        out
    };
    assert_eq!(run(&[], &[], "a"), "n \n");
    assert_eq!(keys().len(), 1);
    assert_eq!(run(&[], &[], "b"), "a n \n", "the same run finds its cache");
    // A repository made in the workspace changes the lowered policy
    // (its files are protected), not what the run grants.
    std::fs::create_dir_all(env.ws.join("sub/.git/hooks")).unwrap();
    assert_eq!(run(&[], &[], "c"), "a b n \n");
    assert_eq!(keys().len(), 1);

    let extra = env.root.join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    let extra = extra.to_str().unwrap();
    assert_eq!(run(&["--allow-read", extra], &[], "d"), "n \n");
    assert_eq!(keys().len(), 2);
    let bin = env.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let longer = format!("{}:{path}", bin.display());
    assert_eq!(run(&[], &[("PATH", &longer)], "e"), "n \n");
    assert_eq!(keys().len(), 3);
    let bundle = env.root.join("ca.pem");
    std::fs::write(&bundle, "-----BEGIN CERTIFICATE-----\n").unwrap();
    let bundle = bundle.to_str().unwrap();
    assert_eq!(run(&[], &[("SSL_CERT_FILE", bundle)], "f"), "n \n");
    assert_eq!(keys().len(), 4);
    // Where the search for a repository above the workspace stops.
    let ceiling = env.root.to_str().unwrap();
    assert_eq!(
        run(&[], &[("GIT_CEILING_DIRECTORIES", ceiling)], "j"),
        "n \n"
    );
    assert_eq!(keys().len(), 5);
    // Each of them again: its own entries only.
    assert_eq!(run(&["--allow-read", extra], &[], "g"), "d n \n");
    assert_eq!(run(&[], &[("PATH", &longer)], "h"), "e n \n");
    assert_eq!(run(&[], &[], "i"), "a b c n \n");
    assert_eq!(keys().len(), 5);
}

/// Caches under home are directories of one overlay of home: the rest
/// of home is not reachable through them. No descriptor of the overlay
/// reaches the command, the mount table shows only the caches' own
/// directories of it, and a home file that no rule grants stays out of
/// reach through `..` (positive control: each cache reads its host
/// entry and the two share one overlay).
#[test]
fn home_overlay_shows_only_the_caches() {
    let Some(env) = setup() else { return };
    home_overlay_is_out_of_reach(&env, &["run", "--report", "--"]);
}

/// The same with home in the host's `/tmp`, where the new root is
/// attached while it is built (home's overlay is left in the host's
/// tree, to be detached with it: `caches::leave_home_overlays`), and no
/// temp preset (which would make home writable, and so leave its
/// caches alone).
#[test]
fn home_overlay_shows_only_the_caches_with_home_in_tmp() {
    let Some(env) = setup_in(PathBuf::from("/tmp")) else {
        return;
    };
    let policy = env.root.join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n\n[process]\npresets = [\"system_runtime\", \"developer_toolchains\"]\n\n\
         [[fs]]\npath = \".\"\nread = true\nwrite = true\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    home_overlay_is_out_of_reach(&env, &["run", "--report", policy, "--"]);
}

/// `run`: `sbx` up to the command.
fn home_overlay_is_out_of_reach(env: &Env, run: &[&str]) {
    if !common::on_path("python3") {
        println!("SKIPPED: python3 not installed");
        return;
    }
    for (dir, entry) in [(".npm", "n"), (".cache/pip", "p")] {
        std::fs::create_dir_all(env.home.join(dir)).unwrap();
        std::fs::write(env.home.join(dir).join(entry), format!("{entry}\n")).unwrap();
    }
    std::fs::write(env.home.join("secret"), "secret\n").unwrap();
    let script = r#"import os
home = os.environ['HOME']
npm, pip = os.stat(home + '/.npm'), os.stat(home + '/.cache/pip')
print(open(home + '/.npm/n').read().strip(), open(home + '/.cache/pip/p').read().strip())
print('same overlay', npm.st_dev == pip.st_dev)
fds = []
for fd in os.listdir('/proc/self/fd'):
    try:
        if os.fstat(int(fd)).st_dev == npm.st_dev:
            fds.append(fd)
    except OSError:
        pass
print('overlay fds', fds)
dev = '%d:%d' % (os.major(npm.st_dev), os.minor(npm.st_dev))
roots = [l.split()[3] for l in open('/proc/self/mountinfo') if l.split()[2] == dev]
print('overlay roots', sorted(roots))
for p in [home + '/.npm/../secret', home + '/.cache/pip/../../secret', home + '/secret']:
    try:
        open(p).read()
        print('read', p)
    except OSError as e:
        print('refused', e.errno)
"#;
    std::fs::write(env.ws.join("probe.py"), script).unwrap();
    let args: Vec<&str> = run.iter().copied().chain(["python3", "probe.py"]).collect();
    let (code, out, err) = sbx_in(env, &env.ws, &args, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "n p", "{err}");
    assert_eq!(lines[1], "same overlay True", "{out}\n{err}");
    assert_eq!(lines[2], "overlay fds []", "{out}");
    assert_eq!(lines[3], "overlay roots ['/.cache/pip', '/.npm']", "{out}");
    assert_eq!(
        &lines[4..],
        ["refused 2", "refused 2", "refused 2"],
        "{out}"
    );
}

/// Nothing of a run's mount namespace outlives `sbx run`: sbx keeps the
/// namespace past the init's exit (so that its teardown, the caches'
/// overlay included, runs beside the after-run work), and it is gone by
/// the time sbx returns: no process is in it and no descriptor holds it.
#[test]
fn the_mount_namespace_is_gone_when_sbx_returns() {
    let Some(env) = with_npm_entry() else { return };
    let (out, err) = ok_in(
        &env,
        &env.ws,
        "readlink /proc/self/ns/mnt; cat ~/.npm/n; echo x > ~/.npm/w",
        &[],
    );
    let mut lines = out.lines();
    let ns = lines.next().unwrap_or_default().to_string();
    assert!(ns.starts_with("mnt:["), "{out}\n{err}");
    assert_eq!(lines.next(), Some("n"), "{out}\n{err}");
    let own = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    assert_ne!(
        own.to_string_lossy(),
        ns,
        "the run had a mount namespace of its own"
    );
    let mut holders = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = p.path();
        if std::fs::read_link(dir.join("ns/mnt")).is_ok_and(|l| l.to_string_lossy() == ns) {
            holders.push(dir.display().to_string());
        }
        for fd in std::fs::read_dir(dir.join("fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == ns) {
                holders.push(fd.path().display().to_string());
            }
        }
    }
    assert!(holders.is_empty(), "{ns} is still held by {holders:?}");
}

/// Each run's overlay keeps its scratch directory in a work directory
/// of its own (`KEY/home/work/run-PID-…`), left after the run; the
/// next run removes it while its command runs, with those of killed
/// runs and what earlier versions left; a live run's is kept. Each run
/// also leaves an empty `spare` there, which the next run takes as its
/// own instead of making one.
#[test]
fn work_directories_are_the_runs_own_and_cleared() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(env) = setup() else { return };
    std::fs::create_dir_all(env.home.join(".npm")).unwrap();
    let work_dirs = || -> Vec<PathBuf> {
        let caches = env.state.join("sbx/caches");
        std::fs::read_dir(&caches)
            .into_iter()
            .flatten()
            .flatten()
            .map(|k| k.path().join("home/work"))
            .filter(|w| w.is_dir())
            .collect()
    };
    let listing = |w: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(w)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    ok_in(&env, &env.ws, "echo x > ~/.npm/a", &[]);
    let works = work_dirs();
    assert_eq!(works.len(), 1, "{works:?}");
    let first = listing(&works[0]);
    assert!(
        first.len() == 2 && first[0].starts_with("run-") && first[1] == "spare",
        "{first:?}"
    );
    let ino = |p: PathBuf| std::fs::metadata(p).unwrap().ino();
    let spare = ino(works[0].join("spare"));
    // A killed run's (no such process), a live one's (this test's), and
    // an earlier version's, locked. In the killed run's, links to a
    // directory and a file outside: removed as links, never followed.
    let live = format!("run-{}-1", std::process::id());
    for name in ["run-4194300-abc", &live, "work", "old-1-abc"] {
        std::fs::create_dir_all(works[0].join(name).join("work/d/e/f")).unwrap();
        std::fs::set_permissions(
            works[0].join(name).join("work"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
    }
    let outside = env.home.join("outside");
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("dir/kept"), "k").unwrap();
    std::fs::write(outside.join("file"), "k").unwrap();
    let dead = works[0].join("run-4194300-abc");
    std::os::unix::fs::symlink(outside.join("dir"), dead.join("to-dir")).unwrap();
    std::os::unix::fs::symlink(outside.join("file"), dead.join("to-file")).unwrap();
    // Each dead directory marked (an extended attribute, which a rename
    // keeps): the helper empties one of them into the next spare rather
    // than removing it and making a new one. (Not the inode: a directory
    // made after removals may get a number just freed.)
    for (i, n) in [first[0].as_str(), "run-4194300-abc", "work", "old-1-abc"]
        .iter()
        .enumerate()
    {
        common::xattr::mark(&works[0].join(n), i as u8 + 1);
    }
    let (out, _) = ok_in(&env, &env.ws, "cat ~/.npm/a", &[]);
    assert_eq!(out.trim(), "x");
    assert!(
        outside.join("dir/kept").is_file() && outside.join("file").is_file(),
        "a link in a dead work directory was followed"
    );
    let second = listing(&works[0]);
    let own: Vec<&String> = second
        .iter()
        .filter(|n| **n != live && *n != "spare")
        .collect();
    assert!(
        second.contains(&live)
            && second.contains(&"spare".to_string())
            && own.len() == 1
            && own[0].starts_with("run-")
            && *own[0] != first[0],
        "{second:?} after {first:?}"
    );
    // The second run's work directory is the spare the first left; its
    // helper made the next spare of a dead directory, emptied.
    assert_eq!(ino(works[0].join(own[0])), spare);
    let next = works[0].join("spare");
    let next_mark = common::xattr::marked(&next);
    assert!(next_mark.is_some(), "the spare is not a dead directory");
    assert_eq!(listing(&next), Vec::<String>::new());
    let meta = std::fs::symlink_metadata(&next).unwrap();
    assert!(meta.is_dir() && meta.permissions().mode() & 0o7777 == 0o700);
    // And the third run takes it as its own.
    ok_in(&env, &env.ws, "true", &[]);
    let third: Vec<String> = listing(&works[0])
        .into_iter()
        .filter(|n| *n != live && n != "spare" && n != own[0])
        .collect();
    assert_eq!(third.len(), 1, "{third:?}");
    assert_eq!(common::xattr::marked(&works[0].join(&third[0])), next_mark);
}

/// Two runs of one workspace and policy at once: the second's overlay
/// does not take the first's scratch directory away, so the first can
/// still copy a host entry up (it failed with EPERM when they shared
/// one work directory).
#[test]
fn concurrent_runs_of_one_key_both_copy_up() {
    let Some(env) = with_npm_entry() else { return };
    let started = env.ws.join("started");
    let script = format!(
        "touch {} && sleep 1.5 && echo y >> ~/.npm/n && cat ~/.npm/n",
        started.display()
    );
    let first = sbx_command(&env, &env.ws, &["run", "--", "sh", "-c", &script], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (out, err) = ok_in(&env, &env.ws, "cat ~/.npm/n", &[]);
    assert_eq!(out, "n\n", "{err}");
    let (code, out, err) = common::outcome(first.wait_with_output().unwrap());
    assert_eq!((code, out.as_str()), (0, "n\ny\n"), "{err}");
    assert_eq!(
        std::fs::read_to_string(env.home.join(".npm/n")).unwrap(),
        "n\n"
    );
}

/// A cache outside home gets an overlay of its own, whose work
/// directory the setup process makes for the run; the host's entry is
/// read and copied up, never changed, and the next run removes the
/// work directory.
#[test]
fn a_cache_outside_home_has_its_own_overlay() {
    let Some(env) = setup() else { return };
    let cargo = env.root.join("cargohome");
    std::fs::create_dir_all(cargo.join("registry/cache")).unwrap();
    std::fs::write(cargo.join("registry/cache/h"), "h\n").unwrap();
    let home = cargo.to_str().unwrap();
    let (out, err) = ok_in(
        &env,
        &env.ws,
        "cat $CARGO_HOME/registry/cache/h && echo y >> $CARGO_HOME/registry/cache/h \
         && cat $CARGO_HOME/registry/cache/h",
        &[("CARGO_HOME", home)],
    );
    assert_eq!(out, "h\nh\ny\n", "{err}");
    assert!(
        err.contains("cargo-registry at") && err.contains("over the host's cache"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(cargo.join("registry/cache/h")).unwrap(),
        "h\n"
    );
    let key = only_key(&env);
    let work = key.path().join("cargo-registry/work");
    let names = || -> Vec<String> {
        std::fs::read_dir(&work)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let first = names();
    assert!(
        first.len() == 1 && first[0].starts_with("run-"),
        "{}: {first:?}",
        work.display()
    );
    ok_in(
        &env,
        &env.ws,
        "cat $CARGO_HOME/registry/cache/h",
        &[("CARGO_HOME", home)],
    );
    let second = names();
    assert!(
        second.len() == 1 && second[0].starts_with("run-") && second != first,
        "{}: {second:?} after {first:?}",
        work.display()
    );
}

/// The caches' overlay is `volatile` (no sync of the state directory's
/// file system when it goes), and a key last used in another boot
/// starts from the host's cache alone: what an earlier boot's runs
/// wrote may never have reached the disk whole. A key of an earlier
/// version (no boot recorded) keeps its entries.
#[test]
fn a_private_cache_from_another_boot_is_thrown_away() {
    let Some(env) = with_npm_entry() else { return };
    let (out, err) = ok_in(
        &env,
        &env.ws,
        "echo w > ~/.npm/w; grep ' /.npm ' /proc/self/mountinfo",
        &[],
    );
    assert!(out.contains("volatile"), "{out}\n{err}");
    let key = only_key(&env).path();
    let about = key.join("about.json");
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&about).unwrap()).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(recorded["boot"].as_str(), Some(boot.trim()), "{recorded}");
    let set_boot = |b: Option<&str>| {
        let mut v = recorded.clone();
        match b {
            Some(b) => v["boot"] = b.into(),
            None => {
                v.as_object_mut().unwrap().remove("boot");
            }
        }
        std::fs::write(&about, v.to_string()).unwrap();
    };
    // An earlier version's key: kept.
    set_boot(None);
    let (out, _) = ok_in(&env, &env.ws, "cat ~/.npm/w ~/.npm/n", &[]);
    assert_eq!(out, "w\nn\n");
    // Used in another boot: set aside, the host's entries still there.
    set_boot(Some("00000000-0000-0000-0000-000000000000"));
    let (code, out, _) = run_in(&env, &env.ws, "cat ~/.npm/n; cat ~/.npm/w", &[]);
    assert_eq!((code, out.as_str()), (1, "n\n"));
    // The next run (same boot) keeps what this one writes, and nothing
    // set aside is left once a run has cleared it.
    ok_in(&env, &env.ws, "echo v > ~/.npm/v", &[]);
    let (out, _) = ok_in(&env, &env.ws, "cat ~/.npm/v", &[]);
    assert_eq!(out, "v\n");
    let left: Vec<_> = std::fs::read_dir(key.join("home"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("stale-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        std::fs::read_to_string(env.home.join(".npm/n")).unwrap(),
        "n\n"
    );
    assert!(!env.home.join(".npm/w").exists());
}

/// The private cache's directory in sbx's state directory is used only
/// through no symlink: one put in its place (by whoever else can write
/// that directory) would send the run's cache writes into the directory
/// it names, the host's own `~/.npm` or any other. The run is refused
/// and names the path; the directory the link names is untouched.
/// Control: with the directory put back, the same run writes its cache.
#[test]
fn a_symlinked_private_cache_is_refused() {
    let Some(env) = with_npm_entry() else { return };
    ok_in(&env, &env.ws, "true", &[]);
    let data = only_key(&env).path().join("home/data/.npm");
    let elsewhere = env.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::rename(&data, env.root.join("kept")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &data).unwrap();
    let (code, _, err) = run_in(&env, &env.ws, "echo x > ~/.npm/written", &[]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("home/data/.npm"), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(!env.home.join(".npm/written").exists());
    std::fs::remove_file(&data).unwrap();
    std::fs::rename(env.root.join("kept"), &data).unwrap();
    ok_in(&env, &env.ws, "echo x > ~/.npm/written", &[]);
    assert!(!env.home.join(".npm/written").exists());
}
