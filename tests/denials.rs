//! `sbx run --denials`: what the sandbox refused, and rules that, once
//! added, let the same command run.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

fn run(policy: &Path, ws: &Path, flags: &[&str], script: &str, path: Option<&str>) -> Output {
    let mut c = Command::new(SBX);
    c.arg("run")
        .arg(policy)
        .arg("--workspace")
        .arg(ws)
        .args(flags)
        .args(["--", "sh", "-c", script])
        .current_dir(ws)
        .stdin(Stdio::null());
    if let Some(p) = path {
        c.env("PATH", p);
    }
    c.output().unwrap()
}

fn ready() -> bool {
    if sbx::runtime::linux::kernel_abi() == 0 {
        println!("SKIPPED: Landlock is not available");
        return false;
    }
    let strace = Command::new("strace").arg("-V").output().is_ok();
    if !strace && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("strace is needed (.ci/prereqs.sh installs it)");
    }
    if !strace {
        println!("SKIPPED: strace is not installed");
    }
    strace
}

/// A directory outside the presets and the workspace's grants, with `ws`
/// and `out` in it: the guard, and its path without symlinks.
fn scratch() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir_in(common::outside_presets()).unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["ws", "out"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    (dir, root)
}

fn python() -> bool {
    let ok = Command::new("python3").arg("-V").output().is_ok();
    if !ok {
        println!("SKIPPED: python3 is not installed");
    }
    ok
}

#[test]
fn denials_are_listed_and_the_suggested_rules_allow_the_command() {
    if !ready() {
        return;
    }
    // Neither under /tmp (granted by the default policy) nor the workspace.
    let (_dir, root) = scratch();
    let (ws, out) = (root.join("ws"), root.join("out"));
    std::fs::write(out.join("secret"), "s3cret").unwrap();
    let policy = root.join("policy.toml");
    std::fs::copy(common::root().join("fixtures/default.toml"), &policy).unwrap();
    let o = out.display();
    // A path missing on the host too is a probe, not a denial.
    let script = format!("cat {o}/absent 2>/dev/null; echo x > {o}/new; cat {o}/secret");

    let first = run(&policy, &ws, &["--denials"], &script, None);
    let err = String::from_utf8_lossy(&first.stderr);
    assert_ne!(first.status.code(), Some(0), "{err}");
    // The new root hides both: "No such file or directory", listed as
    // such, with the rules.
    let (_, hidden) = err
        .split_once("not visible in the sandbox, but present on the host (2):\n")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        hidden.starts_with(&format!("  read     {o}/secret\n  write    {o}/new\n")),
        "{err}"
    );
    assert!(!err.contains("absent"), "{err}");
    assert!(!err.contains("the sandbox refused"), "{err}");
    // The command's own exit code is kept.
    assert_eq!(first.status.code(), Some(1), "{err}");

    // The suggested rules, pasted into the policy, let it run.
    let rules = err
        .split_once("(read them before adding):\n")
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("no rules: {err}"));
    let mut text = std::fs::read_to_string(&policy).unwrap();
    text.push('\n');
    text.push_str(rules);
    std::fs::write(&policy, text).unwrap();
    let second = run(&policy, &ws, &["--denials"], &script, None);
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&second.stdout), "s3cret");
    assert!(err.contains("refused nothing"), "{err}");
}

#[test]
fn without_strace_nothing_runs() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir_in(common::outside_presets()).unwrap();
    let policy = common::root().join("fixtures/default.toml");
    let marker = dir.path().join("ran");
    let script = format!("touch {}", marker.display());
    // Tests only (`test-hooks`): where strace is looked for.
    let o = Command::new(SBX)
        .arg("run")
        .arg(&policy)
        .arg("--workspace")
        .arg(dir.path())
        .args(["--denials", "--", "sh", "-c", &script])
        .current_dir(dir.path())
        .env("SBX_TEST_TOOL_DIRS", "/nonexistent")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(err.contains("needs strace in one of /nonexistent"), "{err}");
    assert!(!marker.exists());
}

/// strace runs unconfined, as the caller: a copy a sandboxed command
/// planted in a directory on PATH (an activated virtual environment in
/// the workspace) must never be the one run, nor an empty PATH entry's
/// (the current directory). The system's strace is run instead, and
/// the command is traced as before.
#[test]
fn a_strace_planted_on_path_is_never_run() {
    if !ready() {
        return;
    }
    let (_dir, root) = scratch();
    let (ws, out) = (root.join("ws"), root.join("out"));
    let bin = ws.join(".venv/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let policy = common::root().join("fixtures/default.toml");
    let marker = out.join("escaped");
    let path = format!("{}::{}", bin.display(), std::env::var("PATH").unwrap());
    // Run 1, sandboxed: plant strace where PATH looks first (the venv,
    // and the workspace itself for the empty entry).
    let plant = format!(
        "for d in .venv/bin .; do printf '#!/bin/sh\\nid > {m}\\n' > $d/strace && chmod +x $d/strace; done; \
         touch {m} 2>/dev/null || echo refused",
        m = marker.display()
    );
    let o = run(&policy, &ws, &["--quiet"], &plant, Some(&path));
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "refused");
    assert!(bin.join("strace").exists() && ws.join("strace").exists());
    // Run 2: the user asks what the sandbox refused.
    let o = run(
        &policy,
        &ws,
        &["--denials"],
        "cat /etc/hostname >/dev/null",
        Some(&path),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !marker.exists(),
        "the planted strace ran outside the sandbox: {err}"
    );
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("--denials"), "{err}");
}

/// `sbx learn -o out/policy.toml` writes into the directory `out` named
/// when it started, though the command it learned from moved that
/// directory away and put a link to another in its place: nothing is
/// written where the link leads.
#[test]
fn learn_writes_where_the_output_was_named() {
    if !ready() {
        return;
    }
    let (_dir, root) = scratch();
    let (ws, victim) = (root.join("ws"), root.join("out"));
    std::fs::create_dir_all(ws.join("dest")).unwrap();
    let script = format!("mv dest moved && ln -s {} dest", victim.display());
    let o = Command::new(SBX)
        .args(["learn", "-o", "dest/policy.toml", "--", "sh", "-c", &script])
        .current_dir(&ws)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        std::fs::symlink_metadata(ws.join("dest"))
            .unwrap()
            .is_symlink(),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0, "{err}");
    let text = std::fs::read_to_string(ws.join("moved/policy.toml")).unwrap();
    assert!(text.contains("Learned by `sbx learn`"), "{text}");
}

/// `sbx learn`: the learned policy lets the same command run under
/// `sbx run`, passes `sbx check`, and does not grant the sensitive file
/// the command read; that read stays denied.
#[test]
fn learned_policy_runs_the_command_and_keeps_secrets_out() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir_in(common::outside_presets()).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (ws, data, home) = (root.join("ws"), root.join("data"), root.join("home"));
    for d in [&ws, &data, &home.join(".ssh")] {
        std::fs::create_dir_all(d).unwrap();
    }
    for f in ["a", "b", "c"] {
        std::fs::write(data.join(f), f).unwrap();
    }
    std::fs::write(home.join(".ssh/id"), "key").unwrap();
    let learned = root.join("learned.toml");
    let d = data.display();
    let work = format!(
        "cat {d}/a {d}/b {d}/c; mkdir -p {d}/out; echo x > {d}/out/r; git --version >/dev/null"
    );
    let with_key = format!("{work}; cat {}/.ssh/id", home.display());
    let mut outside = std::fs::read_dir(&root).unwrap().count();
    let out = Command::new(SBX)
        .arg("learn")
        .arg("-o")
        .arg(&learned)
        .arg("--home")
        .arg(&home)
        .args(["--", "sh", "-c", &with_key])
        .current_dir(&ws)
        .env("HOME", &home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("sensitive path: not granted"), "{err}");
    // The session ran sandboxed: the write outside the workspace was
    // refused (and learned), not made.
    assert!(!data.join("out").exists(), "{err}");
    outside += 1;
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), outside);
    let text = std::fs::read_to_string(&learned).unwrap();
    // Three files of one directory: the directory.
    assert!(
        text.contains(&format!("path = \"{d}\"\nread = true\nwrite = true\n")),
        "{text}"
    );
    let rules: Vec<&str> = text.lines().filter(|l| l.starts_with("path = ")).collect();
    assert!(rules.iter().all(|l| !l.contains(".ssh")), "{text}");
    let check = Command::new(SBX)
        .arg("check")
        .arg(&learned)
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let run = |script: &str| {
        Command::new(SBX)
            .arg("run")
            .arg(&learned)
            .arg("--home")
            .arg(&home)
            .args(["--", "sh", "-c", script])
            .current_dir(&ws)
            .env("HOME", &home)
            .output()
            .unwrap()
    };
    let ok = run(&work);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "abc");
    let key = run(&format!("cat {}/.ssh/id", home.display()));
    assert_ne!(key.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&key.stdout).contains("key"));
}

/// Plants a symlink to `argv[1]` for each of the next 500 pids in each
/// trace directory under /tmp.
const PLANT: &str = r#"
import glob, os, sys
for d in glob.glob("/tmp/sbx-denials-*"):
    top = max((int(n[2:]) for n in os.listdir(d) if n[2:].isdigit()), default=0)
    for p in range(top + 1, top + 500):
        try: os.symlink(sys.argv[1], f"{d}/t.{p}")
        except OSError: pass
"#;

/// The sandboxed command cannot steer the tracer. strace once wrote one
/// file per process into a directory under /tmp, which the default policy
/// grants: a command that planted symlinks there, named for the next
/// process ids, had strace write into any file. The trace now goes to a
/// pipe the command neither holds nor can name.
#[test]
fn the_tracer_writes_nowhere_the_command_reaches() {
    if !ready() || !python() {
        return;
    }
    let (_dir, root) = scratch();
    let ws = root.join("ws");
    let victim = root.join("ld.so.preload");
    std::fs::write(&victim, "original\n").unwrap();
    let policy = common::root().join("fixtures/default.toml");
    // For every trace directory in /tmp, links named for the next 500
    // pids (after the highest there), made by one process so as not to
    // use them up; then processes to fill them.
    let script = format!(
        "python3 -c '{PLANT}' {v}; \
         i=0; while [ $i -lt 40 ]; do /bin/true; i=$((i+1)); done; \
         ls /proc/self/fd",
        v = victim.display()
    );
    let traced = run(&policy, &ws, &["--denials"], &script, None);
    let err = String::from_utf8_lossy(&traced.stderr);
    assert_eq!(traced.status.code(), Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\n");
    // The command holds no descriptor but stdio (3 is `ls`'s directory),
    // as under a plain run.
    let plain = run(&policy, &ws, &[], &script, None);
    assert_eq!(String::from_utf8_lossy(&traced.stdout), "0\n1\n2\n3\n");
    assert_eq!(traced.stdout, plain.stdout);
}

/// `--denials` confines as a plain run does: a host UNIX socket outside
/// the policy is not reachable (it does not exist in the new root), while
/// one in the workspace connects.
#[test]
fn a_host_socket_outside_the_policy_stays_out_of_reach() {
    if !ready() || !python() {
        return;
    }
    let (_dir, root) = scratch();
    let (ws, out) = (root.join("ws"), root.join("out"));
    let mut servers = Vec::new();
    for path in [out.join("host.sock"), ws.join("ws.sock")] {
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        servers.push(std::thread::spawn(move || {
            for c in l.incoming() {
                drop(c);
            }
        }));
    }
    let policy = common::root().join("fixtures/default.toml");
    let script = format!(
        "for p in {o}/host.sock {w}/ws.sock; do python3 -c '\
import socket, sys\n\
s = socket.socket(socket.AF_UNIX)\n\
try:\n    s.connect(sys.argv[1]); print(\"OK\")\n\
except OSError as e: print(e.strerror)' \"$p\"; done",
        o = out.display(),
        w = ws.display()
    );
    for flags in [&["--denials"][..], &[]] {
        let o = run(&policy, &ws, flags, &script, None);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "No such file or directory\nOK\n",
            "{flags:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// `sbx learn` runs its session in the new root, as a plain run does:
/// a socket another program made in the host's `/tmp` (tmux's,
/// ssh-agent's) is out of reach while the command reads what it needs
/// from the host. The session once granted `/`, which kept the host's
/// root and its `/tmp`.
#[test]
fn learn_keeps_host_temp_sockets_out_of_reach() {
    if !ready() || !python() {
        return;
    }
    let (_dir, root) = scratch();
    let host = tempfile::Builder::new()
        .prefix("sbx-learn-socket-")
        .tempdir_in("/tmp")
        .unwrap();
    let sock = host.path().join("agent.sock");
    let ws_sock = root.join("ws/ws.sock");
    let mut servers = Vec::new();
    for path in [sock.clone(), ws_sock.clone()] {
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        servers.push(std::thread::spawn(move || {
            for c in l.incoming() {
                drop(c);
            }
        }));
    }
    let script = format!(
        "for p in {h} {w}; do python3 -c '\
import socket, sys\n\
s = socket.socket(socket.AF_UNIX)\n\
try:\n    s.connect(sys.argv[1]); print(\"OK\")\n\
except OSError as e: print(e.strerror)' \"$p\"; done",
        h = sock.display(),
        w = ws_sock.display()
    );
    let out = Command::new(SBX)
        .arg("learn")
        .arg("-o")
        .arg(root.join("learned.toml"))
        .args(["--", "sh", "-c", &script])
        .current_dir(root.join("ws"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "No such file or directory\nOK\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A command that fails because sbx refused it a user namespace (the
/// default: `[linux] nested_user_namespaces = false`) learns why from
/// `--denials`, which names the setting.
#[test]
fn denials_name_the_user_namespace_setting() {
    if !ready() {
        return;
    }
    let (_dir, root) = scratch();
    let ws = root.join("ws");
    let policy = common::root().join("fixtures/default.toml");
    let o = run(&policy, &ws, &["--denials"], "unshare -U true", None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("a user namespace: refused unless the policy sets [linux] nested_user_namespaces = true"),
        "{err}"
    );
    // Control: the same run allowed by the setting succeeds.
    let allowed = root.join("userns.toml");
    std::fs::write(
        &allowed,
        "version = 1\n[linux]\nnested_user_namespaces = true\n",
    )
    .unwrap();
    let o = run(&allowed, &ws, &["--denials"], "unshare -U true", None);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// After a failed run on a terminal (and only there), the hint names
/// missing paths too; `--denials` then lists the host file the policy
/// does not grant, with its rule. The control: a file the policy grants
/// is read under the same policy.
#[test]
fn a_missing_path_is_hinted_on_a_terminal_and_listed() {
    if !ready() {
        return;
    }
    let (_dir, root) = scratch();
    let (ws, out) = (root.join("ws"), root.join("out"));
    std::fs::write(out.join("host-file"), "on the host").unwrap();
    std::fs::write(ws.join("granted"), "granted").unwrap();
    let policy = root.join("policy.toml");
    std::fs::copy(common::root().join("fixtures/default.toml"), &policy).unwrap();
    let o = out.display();
    let script = format!("cat granted; echo; cat {o}/host-file");
    // Not a terminal: no hint (a script's output stays its own).
    let plain = run(&policy, &ws, &[], &script, None);
    let err = String::from_utf8_lossy(&plain.stderr);
    assert_eq!(plain.status.code(), Some(1), "{err}");
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "granted\n");
    assert!(err.contains("No such file or directory"), "{err}");
    assert!(!err.contains("--denials"), "{err}");
    // On a terminal (script(1) gives the run one): the hint.
    let line = format!(
        "{SBX} run {} --workspace {} -- sh -c '{script}'",
        policy.display(),
        ws.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(&ws)
        .stdin(Stdio::null())
        .output();
    if let Some(tty) = tty.ok().filter(|o| !o.stdout.is_empty()) {
        let text = String::from_utf8_lossy(&tty.stdout);
        assert!(text.contains("granted"), "{text}");
        assert!(
            text.contains(
                "or hid a path it needed (\"No such file or directory\"), `sbx run --denials"
            ),
            "{text}"
        );
    } else {
        println!("SKIPPED (the terminal part): script(1) did not run");
    }
    let listed = run(&policy, &ws, &["--denials"], &script, None);
    let err = String::from_utf8_lossy(&listed.stderr);
    assert_eq!(listed.status.code(), Some(1), "{err}");
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "granted\n");
    assert!(
        err.contains(&format!(
            "not visible in the sandbox, but present on the host (1):\n  read     {o}/host-file\n"
        )),
        "{err}"
    );
    // The rule names a path under home as `~/…` (the scratch directory
    // is under home where the checkout is a git repository).
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let named = match out.join("host-file").strip_prefix(&home) {
        Ok(rest) if home.is_absolute() => format!("~/{}", rest.display()),
        _ => format!("{o}/host-file"),
    };
    assert!(
        err.contains(&format!("[[fs]]\npath = \"{named}\"\nread = true\n")),
        "{err}"
    );
}

/// A tiny HTTP server on this host's loopback: answers every request
/// with `hello`.
fn hello_server() -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

/// `sbx learn` learns the host name a proxy-aware client reached
/// through the session's proxy (not the proxy's own address), and the
/// learned policy lets the same command run under `sbx run`. The
/// control: under the policy without it, the same command is refused.
/// The name is a test name the test resolver maps to this host's
/// loopback (Cargo.toml, `test-resolver`).
#[test]
fn learn_learns_a_host_name_through_the_proxy() {
    if !ready() || Command::new("curl").arg("--version").output().is_err() {
        println!("SKIPPED: needs strace and curl");
        return;
    }
    let port = hello_server();
    let (_dir, root) = scratch();
    let ws = root.join("ws");
    let hosts = root.join("hosts");
    std::fs::write(&hosts, "127.0.0.1 web.test\n").unwrap();
    let learned = root.join("learned.toml");
    let script = format!("curl -sS -f -m 10 http://web.test:{port}/x");
    let out = Command::new(SBX)
        .arg("learn")
        .arg("-o")
        .arg(&learned)
        .args(["--", "sh", "-c", &script])
        .current_dir(&ws)
        .env("SBX_TEST_RESOLVER", &hosts)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello", "{err}");
    let text = std::fs::read_to_string(&learned).unwrap();
    assert!(
        text.contains(&format!("[[net]]\nhost = \"web.test\"\nport = {port}\n")),
        "{text}"
    );
    // Not the session's plumbing.
    assert!(!text.contains("3128"), "{text}");
    let run = |policy: &Path| {
        Command::new(SBX)
            .arg("run")
            .arg(policy)
            .args(["--", "sh", "-c", &script])
            .current_dir(&ws)
            .env("SBX_TEST_RESOLVER", &hosts)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let ok = run(&learned);
    let err = String::from_utf8_lossy(&ok.stderr);
    assert_eq!(ok.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "hello", "{err}");
    // Control: without the learned rule (another host named instead, so
    // the run still has its proxy), the same request is refused.
    let other = root.join("other.toml");
    std::fs::write(
        &other,
        text.replace("host = \"web.test\"", "host = \"other.test\""),
    )
    .unwrap();
    let refused = run(&other);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(22), "{err}");
    assert!(err.contains("sbx: proxy refused http web.test"), "{err}");
}

/// A TCP echo on this host's loopback: answers `echo:` and what it read.
fn echo_server() -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 256];
            let n = s.read(&mut buf).unwrap_or(0);
            // One write: a client that reads once must get all of it.
            let _ = s.write_all(&[b"echo:", &buf[..n]].concat());
        }
    });
    port
}

/// A client that ignores the proxy variables: a name lookup, then a
/// connect with a timeout (non-blocking: EINPROGRESS).
const DIRECT: &str = r#"
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    s.sendall(b"hi")
    print(s.recv(100).decode() or "closed")
except socket.gaierror:
    print("gaierror")
except OSError as e:
    print("oserror", e)
"#;

/// `sbx learn` learns a host rule for a program that looks a name up and
/// connects itself, with a timeout: the session's DNS responder gives
/// the name an address, the trace sees the connect to it, and the rule
/// names the host; under `sbx run` the responder and relay then serve
/// it. The control: the same policy naming another host refuses it.
#[test]
fn learn_learns_a_direct_connect_with_a_timeout() {
    if !ready() || !python() {
        return;
    }
    let port = echo_server();
    let (_dir, root) = scratch();
    let ws = root.join("ws");
    let hosts = root.join("hosts");
    std::fs::write(&hosts, "127.0.0.1 echo.test\n").unwrap();
    std::fs::write(ws.join("direct.py"), DIRECT).unwrap();
    let learned = root.join("learned.toml");
    let cmd = |c: &mut Command| {
        c.arg("--")
            .args(common::WITHOUT_PROXY_VARS)
            .args(["python3", "direct.py", "echo.test", &port.to_string()])
            .current_dir(&ws)
            .env("SBX_TEST_RESOLVER", &hosts)
            .stdin(Stdio::null());
    };
    let mut c = Command::new(SBX);
    c.arg("learn").arg("-o").arg(&learned);
    cmd(&mut c);
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = std::fs::read_to_string(&learned).unwrap();
    assert!(
        text.contains(&format!("[[net]]\nhost = \"echo.test\"\nport = {port}\n")),
        "{text}\n{err}"
    );
    assert!(!text.contains("198.18."), "{text}");
    let run = |policy: &Path| {
        let mut c = Command::new(SBX);
        c.arg("run").arg(policy);
        cmd(&mut c);
        c.output().unwrap()
    };
    let ok = run(&learned);
    let err = String::from_utf8_lossy(&ok.stderr);
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "echo:hi\n", "{err}");
    let other = root.join("other.toml");
    std::fs::write(
        &other,
        text.replace("host = \"echo.test\"", "host = \"other.test\""),
    )
    .unwrap();
    let refused = run(&other);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(
        String::from_utf8_lossy(&refused.stdout),
        "gaierror\n",
        "{err}"
    );
}
