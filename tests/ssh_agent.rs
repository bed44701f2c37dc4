//! `ssh_agent = true` under `sbx run` on Linux (issue #37): the caller's
//! agent answers at a fixed path inside, `~/.ssh/known_hosts` is shown
//! read-only, and nothing else of `~/.ssh` nor the agent's own socket is
//! reachable. Each denial is paired with what works under the same policy.

#![cfg(target_os = "linux")]

mod common;
use common::Host;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const WS: &str = "[[fs]]\npath = \".\"\nread = true\nwrite = true\n";
const HOME_READ: &str = "[[fs]]\npath = \"~\"\nread = true\n";

/// A policy: the workspace, `extra` tables, and the opt-in or not.
fn policy(opt_in: bool, extra: &str) -> String {
    let key = if opt_in { "ssh_agent = true\n" } else { "" };
    format!("version = 1\n{key}{WS}{extra}")
}

/// Whether the ssh tools are here; if not, a SKIPPED line (a failure
/// under CI=true).
fn ssh_tools() -> bool {
    let ok = ["ssh-agent", "ssh-add", "ssh-keygen"]
        .iter()
        .all(|t| common::on_path(t));
    if !ok {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v != "true"),
            "ssh-agent, ssh-add or ssh-keygen missing under CI=true"
        );
        eprintln!("SKIPPED: ssh-agent, ssh-add or ssh-keygen not installed");
    }
    ok
}

/// An ssh-agent on a socket in the host's /tmp, with a throwaway key.
struct Agent {
    child: Child,
    sock: PathBuf,
    fingerprint: String,
    _dir: tempfile::TempDir,
}

impl Agent {
    fn start(h: &Host) -> Agent {
        let dir = tempfile::Builder::new()
            .prefix("sbx-agent-")
            .tempdir_in("/tmp")
            .unwrap();
        let sock = dir.path().join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if sock.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let key = h.root.join("throwaway");
        let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
        ok(Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "throwaway", "-f"])
            .arg(&key));
        ok(Command::new("ssh-add")
            .arg("-q")
            .arg(&key)
            .env("SSH_AUTH_SOCK", &sock));
        let out = Command::new("ssh-keygen")
            .arg("-lf")
            .arg(key.with_extension("pub"))
            .output()
            .unwrap();
        let fingerprint = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string();
        Agent {
            child,
            sock,
            fingerprint,
            _dir: dir,
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `sbx run` of `policy` on `script` (sh -c) with the caller's
/// `SSH_AUTH_SOCK` set to `agent`: (exit code, stdout and stderr of the
/// script together, sbx's stderr).
fn run(h: &Host, policy: &str, agent: Option<&Path>, script: &str) -> (i32, String, String) {
    let file = h.root.join("p.toml");
    std::fs::write(&file, policy).unwrap();
    let script = format!("exec 2>&1; {script}");
    let mut c = h.command(&["run", file.to_str().unwrap(), "--", "sh", "-c", &script]);
    c.env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &h.home)
        .current_dir(&h.ws);
    match agent {
        Some(a) => c.env("SSH_AUTH_SOCK", a),
        None => c.env_remove("SSH_AUTH_SOCK"),
    };
    let out = c.output().unwrap();
    common::outcome(out)
}

#[test]
fn the_agent_answers_inside_only_with_the_opt_in() {
    if !ssh_tools() {
        return;
    }
    let h = Host::new();
    let agent = Agent::start(&h);
    let real = agent.sock.to_str().unwrap();

    // Opted in: the key is listed through the forwarded socket.
    let opted = policy(true, "");
    let (code, out, err) = run(
        &h,
        &opted,
        Some(&agent.sock),
        "echo \"sock=$SSH_AUTH_SOCK\"; ssh-add -l",
    );
    if !common::namespaced(&err) {
        return;
    }
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("sock=/tmp/sbx-ssh-agent/agent.sock\n"),
        "{out}"
    );
    assert!(out.contains(&agent.fingerprint), "{out}");
    // What git's ssh does with it: a signature by the key, which stays
    // outside (only its public half is in the workspace), checked outside.
    std::fs::copy(h.root.join("throwaway.pub"), h.ws.join("k.pub")).unwrap();
    std::fs::write(h.ws.join("msg"), "data\n").unwrap();
    let sign = "ssh-keygen -Y sign -f k.pub -n git msg; echo rc=$?";
    let (code, out, _) = run(&h, &opted, Some(&agent.sock), sign);
    assert_eq!(code, 0);
    assert!(out.ends_with("rc=0\n"), "{out}");
    let checked = Command::new("ssh-keygen")
        .args([
            "-Y",
            "check-novalidate",
            "-n",
            "git",
            "-f",
            "k.pub",
            "-s",
            "msg.sig",
        ])
        .current_dir(&h.ws)
        .stdin(std::fs::File::open(h.ws.join("msg")).unwrap())
        .output()
        .unwrap();
    assert!(checked.status.success(), "{checked:?}");
    std::fs::remove_file(h.ws.join("msg.sig")).unwrap();
    // Not opted in: nothing signs.
    let (code, out, _) = run(&h, &policy(false, ""), Some(&agent.sock), sign);
    assert_eq!(code, 0);
    // (ssh-keygen ends its error lines with \r\n)
    assert_eq!(
        out,
        "No private key found for public key \"k.pub\"\r\nrc=255\n"
    );
    assert!(!h.ws.join("msg.sig").exists());
    // ... and the agent's own socket is still out of reach.
    let (code, out, _) = run(
        &h,
        &opted,
        Some(&agent.sock),
        &format!("SSH_AUTH_SOCK={real} ssh-add -l; echo rc=$?"),
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("Error connecting to agent: No such file or directory\nrc=2"),
        "{out}"
    );

    // Not opted in: no SSH_AUTH_SOCK, and the real socket (the host's
    // /tmp is the run's own) is not there, even when the variable is
    // forwarded by an [[env]] rule.
    for extra in ["", "[[env]]\nname = \"SSH_AUTH_SOCK\"\n"] {
        let (code, out, err) = run(
            &h,
            &policy(false, extra),
            Some(&agent.sock),
            &format!(
                "echo \"sock=${{SSH_AUTH_SOCK-unset}}\"; SSH_AUTH_SOCK={real} ssh-add -l; echo rc=$?"
            ),
        );
        assert_eq!(code, 0, "{err}");
        let sock = if extra.is_empty() { "unset" } else { real };
        assert!(out.starts_with(&format!("sock={sock}\n")), "{out}");
        assert!(
            out.contains("Error connecting to agent: No such file or directory\nrc=2"),
            "{out}"
        );
    }
    // The positive control of that policy: the host's agent works outside.
    let listed = Command::new("ssh-add")
        .arg("-l")
        .env("SSH_AUTH_SOCK", &agent.sock)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&agent.fingerprint));
}

/// The forwarded agent signs and lists, and nothing more: the command
/// cannot remove the caller's keys, add its own or lock the agent with
/// a password of its choosing. Each gets the agent's failure answer, and
/// the host's agent is unchanged afterwards; listing (the control) works
/// in the same run.
#[test]
fn the_forwarded_agent_cannot_be_changed() {
    if !ssh_tools() {
        return;
    }
    let h = Host::new();
    let agent = Agent::start(&h);
    let script = "ssh-keygen -q -t ed25519 -N '' -C planted -f /tmp/evil >/dev/null; \
         ssh-add -D; echo rc=$?; ssh-add /tmp/evil; echo rc=$?; \
         printf '#!/bin/sh\\necho pw\\n' > /tmp/ap; chmod +x /tmp/ap; \
         SSH_ASKPASS=/tmp/ap SSH_ASKPASS_REQUIRE=force DISPLAY=x ssh-add -x; echo rc=$?; \
         ssh-add -l; echo rc=$?";
    let (code, out, err) = run(&h, &policy(true, ""), Some(&agent.sock), script);
    if !common::namespaced(&err) {
        return;
    }
    assert_eq!(code, 0, "{out}\n{err}");
    let rcs: Vec<&str> = out.lines().filter(|l| l.starts_with("rc=")).collect();
    assert_eq!(rcs, ["rc=1", "rc=1", "rc=1", "rc=0"], "{out}");
    assert!(out.contains(&agent.fingerprint), "{out}");
    // Outside: the same one key, no lock, no planted key.
    let listed = Command::new("ssh-add")
        .arg("-l")
        .env("SSH_AUTH_SOCK", &agent.sock)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains(&agent.fingerprint) && !text.contains("planted"),
        "{text}"
    );
}

#[test]
fn no_agent_is_a_warning_and_no_variable() {
    let h = Host::new();
    let (code, out, err) = run(
        &h,
        &policy(true, ""),
        None,
        "echo \"sock=${SSH_AUTH_SOCK-unset}\"",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "sock=unset\n");
    assert!(
        err.contains(
            "sbx: warning: ssh_agent = true, but the agent is not forwarded: \
             SSH_AUTH_SOCK is not set (no agent is running)"
        ),
        "{err}"
    );
}

/// known_hosts read-only, keys and config not at all: where `~/.ssh` is
/// not covered (a grant of its own) and where `~` covers and hides it
/// (the files shown in the hidden directory).
#[test]
fn known_hosts_only_and_read_only() {
    let h = Host::new();
    let ssh = h.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("known_hosts"), "github.com ssh-ed25519 AAAA\n").unwrap();
    std::fs::write(ssh.join("known_hosts2"), "gitlab.com ssh-ed25519 BBBB\n").unwrap();
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE\n").unwrap();
    std::fs::write(ssh.join("config"), "Host *\n").unwrap();
    let kh = ssh.join("known_hosts");
    let d = ssh.to_str().unwrap();
    let script = format!(
        "cat {d}/known_hosts {d}/known_hosts2; cat {d}/id_ed25519; cat {d}/config; \
         ls {d}; echo x >> {d}/known_hosts; touch {d}/new; echo done"
    );
    let denied = |what: &str, errno: &str| format!("{d}/{what}: {errno}");
    // (layout, extra rules, errno on known_hosts without the opt-in)
    for (layout, extra, without) in [
        ("not covered", "", "No such file or directory"),
        ("hidden by ~", HOME_READ, "Permission denied"),
    ] {
        let (code, out, err) = run(&h, &policy(true, extra), None, &script);
        if !common::namespaced(&err) {
            return;
        }
        assert_eq!(code, 0, "{layout}: {out}\n{err}");
        assert!(
            out.starts_with("github.com ssh-ed25519 AAAA\ngitlab.com ssh-ed25519 BBBB\n"),
            "{layout}: {out}"
        );
        assert!(
            out.contains(&denied("id_ed25519", "No such file or directory")),
            "{layout}: {out}"
        );
        assert!(
            out.contains(&denied("config", "No such file or directory")),
            "{layout}: {out}"
        );
        assert!(
            out.contains(&format!("cannot open directory '{d}': Permission denied")),
            "{layout}: {out}"
        );
        assert!(
            out.contains(&denied("known_hosts", "Read-only file system")),
            "{layout}: {out}"
        );
        assert!(out.ends_with("done\n"), "{layout}: {out}");
        assert!(!out.contains("PRIVATE"), "{layout}: {out}");

        // Without the opt-in known_hosts is out of reach too.
        let (code, out, _) = run(&h, &policy(false, extra), None, &script);
        assert_eq!(code, 0);
        assert!(
            out.contains(&denied("known_hosts", without)),
            "{layout}: {out}"
        );
        assert!(!out.contains("PRIVATE"), "{layout}: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(&kh).unwrap(),
        "github.com ssh-ed25519 AAAA\n"
    );
}

/// SBX034: the opt-in with no rule ssh can use is a warning at the key;
/// a host rule with `scheme = "ssh"` or port 22 silences it.
#[test]
fn the_opt_in_without_an_ssh_rule_is_flagged() {
    let h = Host::new();
    let check = |extra: &str| {
        let file = h.root.join("p.toml");
        std::fs::write(&file, policy(true, extra)).unwrap();
        let (_, _, err) = h.sbx(&["check", file.to_str().unwrap()]);
        err
    };
    let err = check("");
    assert!(
        err.contains("warning[SBX034]: ssh_agent = true, but no [[net]] rule lets ssh out"),
        "{err}"
    );
    assert!(err.contains("p.toml:2:13"), "{err}");
    for rule in [
        "[[net]]\nhost = \"github.com\"\nscheme = \"ssh\"\n",
        "[[net]]\nhost = \"git.example.com\"\nport = 22\n",
    ] {
        let err = check(rule);
        assert!(!err.contains("SBX034"), "{rule}: {err}");
    }
    let err = check("[[net]]\nhost = \"github.com\"\nscheme = \"https\"\n");
    assert!(err.contains("SBX034"), "{err}");
}
