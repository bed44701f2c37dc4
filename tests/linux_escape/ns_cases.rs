//! Escape attempts against the namespace layer (docs/linux.md): each
//! denial beside a positive control under the same policy, and beside
//! the same probe with `[linux] namespaces = "never"` where that shows
//! what the layer adds.

use crate::fixture::{check, expect, sbx_bin, Fx, Out};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const NEVER: &str = "\n[linux]\nnamespaces = \"never\"\n";
/// `ws/sub` read-only beneath the writable workspace.
const RO_SUB: &str = "\n[[fs]]\npath = \"sub\"\nread = true\n";

pub fn carve_out_read_only(fx: &Fx) -> Result<(), String> {
    std::fs::write(fx.ws.join("sub/f"), "f").unwrap();
    std::os::unix::fs::symlink(fx.path("outside"), fx.ws.join("evil")).unwrap();
    let p = fx.policy("best_effort", RO_SUB);
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let (sub, f) = (fx.path("ws/sub"), fx.path("ws/sub/f"));
    expect("write in", &r(&["write", &fx.path("ws/sub/new")]), "EROFS")?;
    expect("truncate", &r(&["open-trunc", &f]), "EROFS")?;
    expect("unlink", &r(&["unlink", &f]), "EROFS")?;
    expect(
        "rename away",
        &r(&["rename", &sub, &fx.path("ws/moved")]),
        "EBUSY",
    )?;
    expect("rmdir", &r(&["rmdir", &sub]), "EBUSY")?;
    expect(
        "hard link in",
        &r(&["link", &fx.path("ws/data"), &fx.path("ws/sub/l")]),
        "EROFS",
    )?;
    expect(
        "swap for a symlink",
        &r(&["exchange", &fx.path("ws/evil"), &sub]),
        "EBUSY",
    )?;
    // Positive controls under the same policy.
    expect("read in", &r(&["read", &f]), "OK")?;
    expect("write beside", &r(&["write", &fx.path("ws/new")]), "OK")?;
    expect(
        "rename beside",
        &r(&["rename", &fx.path("ws/a"), &fx.path("ws/a2")]),
        "OK",
    )?;
    check(
        std::fs::read_to_string(fx.ws.join("sub/f")).unwrap() == "f",
        || "sub/f changed".into(),
    )?;
    // Landlock alone: the workspace's rights reach into the carve-out.
    let never = fx.policy("best_effort", &format!("{RO_SUB}{NEVER}"));
    expect(
        "write in, no namespaces",
        &fx.run(&never, &[], &["write", &fx.path("ws/sub/new")]),
        "OK",
    )
}

/// A read-only carve-out re-widened beneath: `sub` read-only, `sub/w`
/// writable again.
pub fn carve_out_nested(fx: &Fx) -> Result<(), String> {
    std::fs::create_dir(fx.ws.join("sub/w")).unwrap();
    let p = fx.policy(
        "required",
        &format!("{RO_SUB}\n[[fs]]\npath = \"sub/w\"\nread = true\nwrite = true\n"),
    );
    expect(
        "write nested",
        &fx.run(&p, &[], &["write", &fx.path("ws/sub/w/x")]),
        "OK",
    )?;
    expect(
        "write carve-out",
        &fx.run(&p, &[], &["write", &fx.path("ws/sub/x")]),
        "EROFS",
    )
}

pub fn deny_rule_hides(fx: &Fx) -> Result<(), String> {
    std::fs::write(fx.ws.join("sub/key"), "secret").unwrap();
    let deny = "\n[[fs]]\npath = \"sub\"\nread = false\n";
    let p = fx.policy("required", deny);
    // An empty directory of mode 0, which no one may enter: the command
    // holds no CAP_DAC_OVERRIDE, root included.
    expect(
        "read hidden",
        &fx.run(&p, &[], &["read", &fx.path("ws/sub/key")]),
        "EACCES",
    )?;
    expect(
        "list hidden",
        &fx.run(&p, &[], &["list", &fx.path("ws/sub")]),
        "EACCES",
    )?;
    expect(
        "write hidden",
        &fx.run(&p, &[], &["write", &fx.path("ws/sub/new")]),
        "EACCES",
    )?;
    expect(
        "rename hidden",
        &fx.run(&p, &[], &["rename", &fx.path("ws/sub"), &fx.path("ws/s2")]),
        "EBUSY",
    )?;
    expect(
        "read beside",
        &fx.run(&p, &[], &["read", &fx.path("ws/data")]),
        "OK",
    )?;
    // Without namespaces a required policy refuses to run it.
    let never = fx.policy("required", &format!("{deny}{NEVER}"));
    let out = fx.run(&never, &[], &["read", &fx.path("ws/sub/key")]);
    check(out.code == 125 && out.answer().is_empty(), || {
        format!("required, never: {out:?}")
    })
}

pub fn required_carve_out_runs(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("required", RO_SUB);
    expect(
        "required with a carve-out",
        &fx.run(&p, &[], &["write", &fx.path("ws/x")]),
        "OK",
    )?;
    let out = fx.run(&p, &["--report"], &["write", &fx.path("ws/sub/x")]);
    expect("carve-out", &out, "EROFS")?;
    check(
        out.stderr.contains("namespaces: ") && out.stderr.contains("sub: read-only"),
        || out.stderr.clone(),
    )
}

pub fn proc_shows_the_sandbox_only(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    // The init and the probe.
    expect("in the sandbox", &fx.run(&p, &[], &["proc-count"]), "2")?;
    // The fresh /proc alone: no clone of the host's lies beneath it, one
    // unmount from showing every host process.
    expect("proc mounts", &fx.run(&p, &[], &["proc-mounts"]), "1")?;
    let host = fx.unsandboxed(&["proc-count"]);
    let n: usize = host.answer().parse().unwrap_or(0);
    check(n > 2, || format!("unsandboxed: {host:?}"))?;
    // A host process is not there to be signalled.
    let mut v = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = v.id().to_string();
    let r = expect(
        "kill host process",
        &fx.run(&p, &[], &["kill", &pid, "15"]),
        "ESRCH",
    );
    let alive = v.try_wait().unwrap().is_none();
    let _ = v.kill();
    let _ = v.wait();
    r?;
    check(alive, || "the host process died".into())?;
    expect("own child", &fx.run(&p, &[], &["kill-own-child"]), "OK")
}

pub fn daemon_dies_with_the_run(fx: &Fx) -> Result<(), String> {
    let mark = fx.path("ws/daemon");
    let p = fx.policy("best_effort", "");
    expect("daemon", &fx.run(&p, &[], &["daemon-writer", &mark]), "OK")?;
    std::thread::sleep(Duration::from_millis(1500));
    let got = std::fs::read_to_string(&mark).unwrap_or_default();
    check(got == "started\n", || {
        format!("sandboxed daemon wrote {got:?}")
    })?;
    // Control: outside the sandbox the daemon lives on and writes.
    let free = fx.path("ws/daemon-free");
    expect(
        "unsandboxed",
        &fx.unsandboxed(&["daemon-writer", &free]),
        "OK",
    )?;
    std::thread::sleep(Duration::from_millis(1500));
    let got = std::fs::read_to_string(&free).unwrap_or_default();
    check(got == "started\nstill\n", || {
        format!("unsandboxed daemon wrote {got:?}")
    })
}

/// `listen()` without `bind()` from a sandbox with no `[[net]]`: the
/// port is in the sandbox's own network namespace, where the host
/// cannot reach it (and sbx does not check the listen: it succeeds).
/// With `namespaces = "never"` sbx refuses it (listen_cases.rs).
pub fn listen_without_bind(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    // Only `lo`, left down: nothing in such a policy could use it (the
    // proxy's case brings it up: ns_proxy_hook_gets_listeners).
    expect("interfaces", &fx.run(&p, &[], &["interfaces"]), "lo:down")?;
    let host = fx.unsandboxed(&["interfaces"]);
    check(host.answer().contains("lo:up"), || format!("{host:?}"))?;
    let never = fx.policy("best_effort", NEVER);
    for fam in ["4", "6"] {
        let (port, reached) = listen_and_probe(fx, Some(&p), fam)?;
        check(port.parse::<u16>().is_ok() && !reached, || {
            format!("v{fam}: port {port}, reached: {reached}")
        })?;
        let (port, reached) = listen_and_probe(fx, None, fam)?;
        check(reached, || {
            format!("v{fam} unsandboxed: port {port} not reached")
        })?;
        // Landlock alone does not see this listen (landlock-lsm/linux#15);
        // sbx does.
        let (port, reached) = listen_and_probe(fx, Some(&never), fam)?;
        check(port == "EACCES" && !reached, || {
            format!("v{fam}, never: port {port}, reached: {reached}")
        })?;
    }
    // UDP to a host listener stays refused.
    let host = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = host.local_addr().unwrap().port().to_string();
    expect("udp", &fx.run(&p, &[], &["udp-send", &port]), "EACCES")
}

/// Run the `listen-nobind` probe (sandboxed under `policy`, or not),
/// connect from the host to the port it prints; (port, connected).
fn listen_and_probe(
    fx: &Fx,
    policy: Option<&std::path::Path>,
    fam: &str,
) -> Result<(String, bool), String> {
    let probe: Vec<OsString> = vec![
        std::env::current_exe().unwrap().into(),
        "--probe".into(),
        "listen-nobind".into(),
        fam.into(),
        "8".into(),
    ];
    let mut cmd = match policy {
        Some(p) => {
            let mut c = Command::new(sbx_bin());
            c.arg("run")
                .arg(p)
                .arg("--quiet")
                .arg("--workspace")
                .arg(&fx.ws)
                .arg("--")
                .args(&probe)
                .env("HOME", fx.root.join("home"));
            c
        }
        None => {
            let mut c = Command::new(&probe[0]);
            c.args(&probe[1..]);
            c
        }
    };
    let mut child = cmd
        .current_dir(&fx.ws)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut port = String::new();
    out.read_line(&mut port).map_err(|e| e.to_string())?;
    let port = port.trim().to_string();
    let addr = if fam == "6" {
        format!("[::1]:{port}")
    } else {
        format!("127.0.0.1:{port}")
    };
    // A few tries: a loaded machine may be slow to answer, and a miss
    // here would pass the sandboxed case for the wrong reason.
    let reached = port.parse::<u16>().is_ok()
        && addr.parse().ok().is_some_and(|a| {
            (0..5).any(|i| {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(200));
                }
                // A reset comes from a listener too: the kernel sometimes
                // resets a connection to a port listen() picked itself.
                match TcpStream::connect_timeout(&a, Duration::from_secs(1)) {
                    Ok(_) => true,
                    Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
                }
            })
        });
    let _ = child.kill();
    let _ = child.wait();
    Ok((port, reached))
}

/// `sbx run POLICY -- PROBE` started by the probe `wrapper`, which
/// installs a seccomp filter over sbx first.
fn wrapped(fx: &Fx, wrapper: &str, p: &std::path::Path, probe: &[&str]) -> crate::fixture::Out {
    let mut args: Vec<OsString> = vec![
        "--probe".into(),
        wrapper.into(),
        sbx_bin().into(),
        "run".into(),
        p.into(),
        "--workspace".into(),
        fx.ws.clone().into(),
        "--".into(),
        std::env::current_exe().unwrap().into(),
        "--probe".into(),
    ];
    args.extend(probe.iter().map(OsString::from));
    fx.exec_self(&args)
}

/// Without user namespaces (`unshare` refused by a seccomp filter that
/// sbx runs under), a best-effort run goes on with Landlock alone and
/// says so; a required policy with a carve-out exits 125 before running
/// anything.
pub fn namespaces_unavailable(fx: &Fx) -> Result<(), String> {
    let mark = fx.path("ws/marker");
    let be = fx.policy("best_effort", RO_SUB);
    let req = fx.policy("required", RO_SUB);
    let run = |p: &std::path::Path, probe: &[&str]| wrapped(fx, "no-namespaces", p, probe);
    let out = run(&be, &["write", &fx.path("ws/sub/x")]);
    expect("best effort without namespaces", &out, "OK")?;
    check(
        out.stderr.contains("namespaces are not available") && out.stderr.contains("ws/sub"),
        || out.stderr.clone(),
    )?;
    let out = run(&req, &["write", &mark]);
    check(out.code == 125 && out.answer().is_empty(), || {
        format!("required without namespaces: {out:?}")
    })?;
    check(out.stderr.contains("namespaces are not available"), || {
        out.stderr.clone()
    })?;
    check(!std::path::Path::new(&mark).exists(), || {
        "the command ran".into()
    })
}

/// The namespaces are made but their first mount is refused (an LSM
/// restricting unprivileged user namespaces does this): the host has no
/// usable namespaces, so best effort goes on with Landlock alone and
/// says what it gives up; required runs nothing.
pub fn first_mount_refused(fx: &Fx) -> Result<(), String> {
    let mark = fx.path("ws/marker");
    let be = fx.policy("best_effort", RO_SUB);
    let req = fx.policy("required", RO_SUB);
    let run = |p: &std::path::Path, probe: &[&str]| wrapped(fx, "no-mounts", p, probe);
    let out = run(&be, &["write", &fx.path("ws/sub/x")]);
    expect("best effort, mounts refused", &out, "OK")?;
    check(
        out.stderr.contains("namespaces are not available")
            && out.stderr.contains("fresh tmpfs")
            && out.stderr.contains("gives up"),
        || out.stderr.clone(),
    )?;
    let out = run(&req, &["write", &mark]);
    check(out.code == 125 && out.answer().is_empty(), || {
        format!("required, mounts refused: {out:?}")
    })?;
    check(!std::path::Path::new(&mark).exists(), || {
        "the command ran".into()
    })
}

/// POLICY.md §13: what the command may only read, and what it is not
/// granted at all, keeps its modes and times. Landlock checks neither
/// `chmod` nor `utimensat`, and the owner passes them anywhere (root,
/// capabilities or not, owns most of the system): only the new root
/// stops them, read-only mounts (EROFS, `chown` too) and nothing else
/// there (ENOENT). So `auto` uses it for every policy, for a user as for
/// root, also where nothing else would need a namespace (a port rule
/// keeps the real network, no carve-out, no temp directory).
pub fn read_only_grant_metadata(fx: &Fx) -> Result<(), String> {
    let (ro, data, outside) = (
        fx.path("ro/file"),
        fx.path("ws/data"),
        fx.path("outside/secret"),
    );
    let policies = [
        ("no network", fx.policy("best_effort", "")),
        (
            "a port rule",
            fx.policy("best_effort", "\n[[net]]\nhost = \"*\"\nport = 9\n"),
        ),
    ];
    for (what, p) in &policies {
        let r = |args: &[&str]| fx.run(p, &[], args);
        expect(
            &format!("chmod ro, {what}"),
            &r(&["chmod", &ro, "666"]),
            "EROFS",
        )?;
        expect(
            &format!("chown ro, {what}"),
            &r(&["chown", &ro, "0", "0"]),
            "EROFS",
        )?;
        expect(&format!("utime ro, {what}"), &r(&["utime", &ro]), "EROFS")?;
        expect(
            &format!("chmod outside, {what}"),
            &r(&["chmod", &outside, "600"]),
            "ENOENT",
        )?;
        expect(
            &format!("utime outside, {what}"),
            &r(&["utime", &outside]),
            "ENOENT",
        )?;
        // Controls: the same calls on a writable grant, a read beside.
        expect(&format!("read ro, {what}"), &r(&["read", &ro]), "OK")?;
        expect(
            &format!("chmod ws, {what}"),
            &r(&["chmod", &data, "640"]),
            "OK",
        )?;
        expect(&format!("utime ws, {what}"), &r(&["utime", &data]), "OK")?;
    }
    for (f, set) in [("ro/file", 0o666), ("outside/secret", 0o600)] {
        let mode = std::fs::metadata(fx.root.join(f)).unwrap();
        check(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777 != set,
            || format!("{f}'s mode changed"),
        )?;
    }
    Ok(())
}

/// The same outside every temp directory, where nothing else of the
/// policy asks for a namespace: a port rule (the real network), no
/// carve-out (the policy file outside the workspace), no temp preset.
/// `auto` used to run this with Landlock alone for a user, and the
/// command could make a file it was never granted world-readable.
/// The tree is made in `SBX_ESCAPE_NONTEMP` (set by unprivileged.sh) or
/// the caller's home, never beneath `/tmp`.
pub fn metadata_outside_temp(fx: &Fx) -> Result<(), String> {
    let base = crate::fixture::outside_temp()?;
    let t = tempfile::Builder::new()
        .prefix("sbx-escape-")
        .tempdir_in(&base)
        .map_err(|e| format!("{}: {e}", base.display()))?;
    let root = t.path().canonicalize().unwrap();
    let (ws, outside) = (root.join("ws"), root.join("outside"));
    for d in [&ws, &outside] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(ws.join("data"), "x").unwrap();
    std::fs::write(outside.join("secret"), "secret").unwrap();
    let policy = root.join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[process]\npresets = [\"system_runtime\"]\n\
         [[fs]]\npath = \".\"\nread = true\nwrite = true\n\
         [[net]]\nhost = \"*\"\nport = 9\n",
    )
    .unwrap();
    let run = |probe: &[&str]| {
        let mut args: Vec<std::ffi::OsString> = vec!["run".into(), policy.clone().into()];
        args.extend(["--workspace".into(), ws.clone().into(), "--".into()]);
        args.push(std::env::current_exe().unwrap().into());
        args.push("--probe".into());
        args.extend(probe.iter().map(std::ffi::OsString::from));
        fx.sbx(&args, None)
    };
    let secret = outside.join("secret");
    let secret = secret.to_str().unwrap();
    let data = ws.join("data");
    let data = data.to_str().unwrap();
    expect("chmod outside", &run(&["chmod", secret, "606"]), "ENOENT")?;
    expect("utime outside", &run(&["utime", secret]), "ENOENT")?;
    // Controls: the same calls on the workspace.
    expect("chmod ws", &run(&["chmod", data, "606"]), "OK")?;
    expect("utime ws", &run(&["utime", data]), "OK")?;
    let mode = std::fs::metadata(secret).unwrap();
    check(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777 != 0o606,
        || "outside/secret's mode changed".into(),
    )
}

/// Every mount the command sees is `nosuid`, and `nodev` but for
/// device grants, which keep working.
pub fn mounts_nosuid_nodev(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    expect("mount flags", &fx.run(&p, &[], &["mount-flags"]), "OK")?;
    expect(
        "write /dev/null",
        &fx.run(&p, &[], &["write", "/dev/null"]),
        "OK",
    )
}

/// `namespaces = "never"` says in one line what it gives up; a run with
/// the layer says nothing of the kind.
pub fn never_says_what_it_gives_up(fx: &Fx) -> Result<(), String> {
    let never = fx.policy("best_effort", NEVER);
    let out = fx.run(&never, &[], &["read", &fx.path("ws/data")]);
    expect("never", &out, "OK")?;
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("namespaces = \"never\""))
        .collect();
    check(
        lines.len() == 1
            && lines[0].contains("protected paths")
            && lines[0].contains("/tmp")
            && lines[0].contains("modes and times of any file"),
        || out.stderr.clone(),
    )?;
    let out = fx.run(
        &fx.policy("best_effort", ""),
        &[],
        &["read", &fx.path("ws/data")],
    );
    expect("auto", &out, "OK")?;
    check(!out.stderr.contains("gives up"), || out.stderr.clone())
}

/// The temp preset's directories (`user_temp`) as rules, with a port
/// rule so that an unprivileged `auto` run needs the layer for nothing
/// else.
fn temp_policy(fx: &Fx, extra: &str) -> std::path::PathBuf {
    let mut text = String::from("\n[[net]]\nhost = \"*\"\nport = 9\n");
    for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
        text.push_str(&format!(
            "\n[[fs]]\npath = \"{dir}\"\nread = true\nwrite = true\nexecute = true\n"
        ));
    }
    text.push_str(extra);
    fx.policy("best_effort", &text)
}

/// POLICY.md §13: a socket another program made in the host's `/tmp`
/// (tmux, ssh-agent, X11) is not reachable through the temp preset: the
/// run gets its own `/tmp`. A socket in the workspace (itself under the
/// host's `/tmp` here, shown on a stub) still connects.
pub fn private_temp_hides_host_sockets(fx: &Fx) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;
    let host_dir = tempfile::Builder::new()
        .prefix("sbx-host-socket-")
        .tempdir_in("/tmp")
        .unwrap();
    // Reachable for uid 65534 too, as a user's own socket would be.
    std::fs::set_permissions(host_dir.path(), PermissionsExt::from_mode(0o777)).unwrap();
    let host = host_dir.path().join("agent.sock");
    let _l = UnixListener::bind(&host).unwrap();
    std::fs::set_permissions(&host, PermissionsExt::from_mode(0o777)).unwrap();
    let in_ws = fx.ws.join("s");
    let _w = UnixListener::bind(&in_ws).unwrap();
    let (h, w) = (host.to_str().unwrap(), in_ws.to_str().unwrap());
    let p = temp_policy(fx, "");
    expect(
        "host socket in /tmp",
        &fx.run(&p, &[], &["unix-connect", h]),
        "ENOENT",
    )?;
    expect(
        "socket in the workspace",
        &fx.run(&p, &[], &["unix-connect", w]),
        "OK",
    )?;
    // What the layer adds: Landlock alone leaves the host's /tmp shared.
    // The fixture's home lies in /tmp, which this policy lets the command
    // write: sbx's state goes elsewhere, or `never` is refused for it.
    let state = tempfile::Builder::new()
        .prefix("sbx-escape-state-")
        .tempdir_in(crate::fixture::outside_temp()?)
        .unwrap();
    let never = temp_policy(fx, NEVER);
    let run_never = |flags: &[&str], probe: &[&str]| {
        let mut args: Vec<std::ffi::OsString> = vec!["run".into(), never.clone().into()];
        args.extend(["--workspace".into(), fx.ws.clone().into()]);
        args.extend(flags.iter().map(std::ffi::OsString::from));
        args.push("--".into());
        args.push(std::env::current_exe().unwrap().into());
        args.push("--probe".into());
        args.extend(probe.iter().map(std::ffi::OsString::from));
        fx.sbx_with(
            &args,
            None,
            &[("XDG_STATE_HOME", state.path().to_str().unwrap())],
        )
    };
    expect(
        "host socket, no namespaces",
        &run_never(&[], &["unix-connect", h]),
        "OK",
    )?;
    // With the state in the fixture's home: refused.
    let refused = fx.run(&never, &[], &["unix-connect", h]);
    check(
        refused.code == 125 && refused.stderr.contains("sbx's state directory"),
        || format!("never with the state in /tmp ran: {}", refused.stderr),
    )?;
    let out = run_never(&["--report"], &["read", &fx.path("ws/data")]);
    check(out.stderr.contains("linux.private_temp"), || {
        out.stderr.clone()
    })
}

/// The run's `/tmp`, `/var/tmp` and `/dev/shm` are empty at start,
/// usable (write, run a script) and gone after the run; nothing written
/// there reaches the host's.
pub fn private_temp_is_the_runs_own(fx: &Fx) -> Result<(), String> {
    let p = temp_policy(fx, "");
    let name = format!("sbx-private-{}", std::process::id());
    let planted = format!("/tmp/{name}");
    std::fs::write(&planted, "host").unwrap();
    let r = |args: &[&str]| fx.run(&p, &[], args);
    expect("host file hidden", &r(&["read", &planted]), "ENOENT")?;
    for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
        let f = format!("{dir}/{name}.new");
        expect(&format!("write {dir}"), &r(&["write", &f]), "OK")?;
        check(!std::path::Path::new(&f).exists(), || {
            format!("{f} reached the host")
        })?;
    }
    let script = format!("/tmp/{name}.sh");
    let sh = format!("printf '#!/bin/sh\\necho OK\\n' > {script} && chmod +x {script} && {script}");
    expect(
        "run a script in /tmp",
        &r(&["exec", "/bin/sh", "-c", &sh]),
        "OK",
    )?;
    check(std::fs::read_to_string(&planted).unwrap() == "host", || {
        "the host's file changed".into()
    })?;
    std::fs::remove_file(&planted).unwrap();
    // Removed after the run: no directory of a run holds the name.
    let left: Vec<String> = ["/var/tmp", "/tmp"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("sbx-run-") || n.starts_with("sbx-idle-")
        })
        .filter(|e| walk_has(&e.path(), &name))
        .map(|e| e.path().display().to_string())
        .collect();
    check(left.is_empty(), || format!("left behind: {left:?}"))
}

/// A run's temp directory is parked for the next run (docs/linux.md):
/// emptied, whatever the command did to it (a file, a directory it
/// locked, a symlink out, `chmod 700 /tmp`), and the next run that takes
/// it finds `/tmp` as the first found it (the stubs of the rules beneath
/// it) and mode 1777.
pub fn private_temp_parked_holds_nothing_of_the_last_run(fx: &Fx) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let p = temp_policy(fx, "");
    let name = format!("sbx-parked-{}", std::process::id());
    let look = "stat -c '%i %a' /tmp && ls -A /tmp | tr '\\n' ' ' && echo";
    let first = fx.run(
        &p,
        &[],
        &[
            "exec",
            "/bin/sh",
            "-c",
            &format!(
                "{look} && echo secret > /tmp/{name} && mkdir -p /tmp/{name}.d/e \\
                 && echo x > /tmp/{name}.d/e/f && chmod 000 /tmp/{name}.d \\
                 && ln -s /etc/passwd /tmp/{name}.l && chmod 700 /tmp"
            ),
        ],
    );
    let view = |out: &Out| -> Option<(u64, String, String)> {
        let mut lines = out.stdout.lines();
        let (ino, mode) = lines.next()?.split_once(' ')?;
        Some((
            ino.parse().ok()?,
            mode.to_string(),
            lines.next()?.to_string(),
        ))
    };
    let Some((ino, mode, listing)) = view(&first).filter(|_| first.code == 0) else {
        return Err(format!("first run: {first:?}"));
    };
    check(mode == "1777" && !listing.contains(&name), || {
        format!("{first:?}")
    })?;
    // Parked: an idle directory of this user holds that /tmp, emptied.
    let parked: Vec<std::path::PathBuf> = ["/var/tmp", "/tmp"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with("sbx-idle-"))
        .map(|e| e.path().join("0"))
        .filter(|t| std::fs::symlink_metadata(t).is_ok_and(|m| m.ino() == ino))
        .collect();
    check(parked.len() == 1, || {
        format!("parked /tmp {ino}: {parked:?}")
    })?;
    let m = std::fs::symlink_metadata(&parked[0]).unwrap();
    check(m.mode() & 0o7777 == 0o1777, || {
        format!("mode {:o}", m.mode())
    })?;
    let left: Vec<_> = std::fs::read_dir(&parked[0]).unwrap().flatten().collect();
    check(left.is_empty(), || {
        format!("left in the parked /tmp: {left:?}")
    })?;
    let out = fx.run(&p, &[], &["exec", "/bin/sh", "-c", look]);
    let Some((got, mode, again)) = view(&out) else {
        return Err(format!("second run: {out:?}"));
    };
    check(mode == "1777" && again == listing, || {
        format!("second run's /tmp: {mode} {again:?}, the first's {listing:?}")
    })?;
    // Taken by this run, unless another run of this user took it first.
    check(got == ino || !parked[0].exists(), || {
        format!("the parked /tmp {ino} was not taken: {got}")
    })
}

/// Some entry below `dir` has `name` in its name.
fn walk_has(dir: &std::path::Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            e.file_name().to_string_lossy().contains(name)
                || (e.file_type().is_ok_and(|t| t.is_dir()) && walk_has(&e.path(), name))
        })
}

/// The proxy's hook: listeners bound inside the sandbox's network
/// namespace reach the callback; the sandbox connects to them (their
/// ports are added to the Landlock ruleset) and nowhere else.
pub fn proxy_hook_gets_listeners(fx: &Fx) -> Result<(), String> {
    use sbx::runtime::linux::{parse_artifact, run, ProxyHook, RunOptions};
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let policy = fx.policy("best_effort", "");
    let art_path = fx.root.join("proxy.json");
    let compile: Vec<OsString> = vec![
        "compile".into(),
        policy.into(),
        "--target".into(),
        "linux".into(),
        "--workspace".into(),
        fx.ws.clone().into(),
        "-o".into(),
        art_path.clone().into(),
    ];
    let out = fx.sbx(&compile, None);
    check(out.code == 0, || format!("compile: {out:?}"))?;
    let art = parse_artifact(&std::fs::read_to_string(&art_path).unwrap())?;
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = got.clone();
    let serve = Arc::new(move |listeners: Vec<std::net::TcpListener>| {
        seen.lock()
            .unwrap()
            .push(format!("{} listener(s)", listeners.len()));
        for l in listeners {
            let seen = seen.clone();
            std::thread::spawn(move || {
                if let Ok((mut s, _)) = l.accept() {
                    let mut buf = [0u8; 4];
                    if s.read_exact(&mut buf).is_ok() {
                        seen.lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&buf).into_owned());
                        let _ = s.write_all(b"pong");
                    }
                }
            });
        }
    });
    let reply = fx.path("ws/reply");
    let argv: Vec<OsString> = vec![
        std::env::current_exe().unwrap().into(),
        "--probe".into(),
        "proxy-client".into(),
        reply.clone().into(),
    ];
    let opts = RunOptions {
        workspace: Some(fx.ws.clone()),
        home: Some(fx.root.join("home")),
        proxy: Some(ProxyHook {
            ports: vec![0],
            relay_ports: Vec::new(),
            forward_ports: Vec::new(),
            serve,
        }),
        ..RunOptions::default()
    };
    let code = run(&art, &argv, &opts);
    check(code == 0, || format!("run: exit {code}"))?;
    let got = got.lock().unwrap().clone();
    check(got == ["1 listener(s)", "ping"], || {
        format!("hook saw {got:?}")
    })?;
    let r = std::fs::read_to_string(&reply).unwrap_or_default();
    check(r == "pong", || format!("the sandbox got {r:?}"))?;
    // Control: other loopback ports stay closed to it.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = other.local_addr().unwrap().port().to_string();
    expect(
        "another port",
        &fx.run(&fx.policy("best_effort", ""), &[], &["connect-tcp", &port]),
        "EACCES",
    )
}

/// Only granted paths exist for the sandbox: a pathname UNIX socket
/// outside every grant (a Docker or D-Bus socket) is not there to be
/// connected to, while one in the workspace works. With Landlock alone
/// (ABI < 9) the outside one is reachable.
pub fn pathname_socket_outside(fx: &Fx) -> Result<(), String> {
    use std::os::unix::net::UnixListener;
    let out_path = fx.root.join("outside/s");
    let in_path = fx.ws.join("s");
    let _out = UnixListener::bind(&out_path).unwrap();
    let _in = UnixListener::bind(&in_path).unwrap();
    let (o, i) = (out_path.to_str().unwrap(), in_path.to_str().unwrap());
    let p = fx.policy("best_effort", "");
    expect("outside", &fx.run(&p, &[], &["unix-connect", o]), "ENOENT")?;
    expect("inside", &fx.run(&p, &[], &["unix-connect", i]), "OK")?;
    expect(
        "outside, no namespaces",
        &fx.run(&fx.policy("best_effort", NEVER), &[], &["unix-connect", o]),
        "OK",
    )?;
    expect("unsandboxed", &fx.unsandboxed(&["unix-connect", o]), "OK")
}

/// With the namespace layer, what no rule grants does not exist for the
/// sandbox (ENOENT, where Landlock alone answers EACCES: the
/// `read_write_outside` family runs with namespaces = "never"); what is
/// granted is where it always was.
pub fn outside_is_invisible(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let secret = fx.path("outside/secret");
    expect("read outside", &r(&["read", &secret]), "ENOENT")?;
    expect(
        "write outside",
        &r(&["write", &fx.path("outside/new")]),
        "ENOENT",
    )?;
    expect(
        "symlink out",
        &r(&["read", &fx.path("ws/link_out")]),
        "ENOENT",
    )?;
    expect(
        "link out",
        &r(&["link", &fx.path("ws/data"), &fx.path("outside/x")]),
        "ENOENT",
    )?;
    expect("list /", &r(&["list", "/"]), "EACCES")?;
    expect("new top-level dir", &r(&["mkdir", "/planted"]), "EROFS")?;
    // Controls: granted paths and the presets' system paths.
    expect("read workspace", &r(&["read", &fx.path("ws/data")]), "OK")?;
    expect("read ro", &r(&["read", &fx.path("ro/file")]), "OK")?;
    expect("read /etc", &r(&["read", "/etc/hostname"]), "OK")?;
    expect("write /dev/null", &r(&["write", "/dev/null"]), "OK")?;
    // `/dev`'s links into the command's own descriptors, which shells
    // open (`> /dev/stderr`, `<(…)` through `/dev/fd`): there, while
    // nothing else can be made in `/dev`.
    expect("write /dev/stderr", &r(&["write", "/dev/stderr"]), "OK")?;
    expect("read /dev/stdin", &r(&["read", "/dev/stdin"]), "OK")?;
    let fds = r(&["list", "/dev/fd"]);
    check(fds.answer().ends_with(" entries"), || {
        format!("list /dev/fd: {fds:?}")
    })?;
    expect("new /dev entry", &r(&["write", "/dev/planted"]), "EROFS")?;
    let out = r(&["exec", "/bin/true"]);
    check(out.code == 0 && out.answer().is_empty(), || {
        format!("exec /bin/true through the /bin symlink: {out:?}")
    })?;
    check(
        std::fs::read_to_string(&secret).unwrap() == "secret",
        || "outside/secret changed".into(),
    )
}

/// POLICY.md §13: a broad rule (`~` read) does not hand the command a
/// known host socket beneath it (Docker's, here under the home); naming
/// the place in a rule shows it, and a socket elsewhere under the rule
/// still connects.
pub fn known_sockets_hidden(fx: &Fx) -> Result<(), String> {
    use std::os::unix::net::UnixListener;
    let home = fx.root.join("home");
    std::fs::create_dir_all(home.join(".docker/run")).unwrap();
    let docker = home.join(".docker/run/docker.sock");
    let other = home.join("other.sock");
    let _d = UnixListener::bind(&docker).unwrap();
    let _o = UnixListener::bind(&other).unwrap();
    let (d, o) = (docker.to_str().unwrap(), other.to_str().unwrap());
    let home_read = "\n[[fs]]\npath = \"~\"\nread = true\n";
    let p = fx.policy("best_effort", home_read);
    // Covered by an empty mode-0 directory, as a deny rule is.
    expect(
        "docker socket under ~",
        &fx.run(&p, &[], &["unix-connect", d]),
        "EACCES",
    )?;
    expect(
        "other socket under ~",
        &fx.run(&p, &[], &["unix-connect", o]),
        "OK",
    )?;
    let named = fx.policy(
        "best_effort",
        &format!("{home_read}\n[[fs]]\npath = \"~/.docker/run\"\nread = true\n"),
    );
    expect(
        "docker socket named",
        &fx.run(&named, &[], &["unix-connect", d]),
        "OK",
    )?;
    // Landlock alone cannot hide it, and the report says so.
    let never = fx.policy("best_effort", &format!("{home_read}{NEVER}"));
    expect(
        "no namespaces",
        &fx.run(&never, &[], &["unix-connect", d]),
        "OK",
    )?;
    let out = fx.run(&never, &["--report"], &["unix-connect", o]);
    check(
        out.stderr.contains("linux.sockets") && out.stderr.contains(".docker/run"),
        || out.stderr.clone(),
    )
}

/// The new root's pseudo-terminals are a private `devpts` instance: a
/// terminal of the host's, open outside for the whole run, cannot be
/// opened inside by its name (ENOENT: that `/dev/pts` has none of the
/// host's), while the command can make terminals of its own.
pub fn ptys_are_the_runs_own(fx: &Fx) -> Result<(), String> {
    // SAFETY: plain libc calls on a descriptor this function owns.
    let (master, host) = unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if m < 0 || libc::grantpt(m) != 0 || libc::unlockpt(m) != 0 {
            return Err(format!(
                "no pseudo-terminal on the host: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut buf = [0 as libc::c_char; 64];
        if libc::ptsname_r(m, buf.as_mut_ptr(), buf.len()) != 0 {
            return Err("ptsname_r failed".into());
        }
        let name = std::ffi::CStr::from_ptr(buf.as_ptr());
        (m, name.to_string_lossy().into_owned())
    };
    let p = fx.default_policy();
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let result = (|| {
        expect(
            "the host's terminal, outside",
            &fx.unsandboxed(&["open-rw", &host]),
            "OK",
        )?;
        expect("the host's terminal", &r(&["open-rw", &host]), "ENOENT")?;
        expect("openpty inside", &r(&["openpty"]), "OK")?;
        // The system preset alone grants the terminal too.
        let sys = fx.policy("best_effort", "");
        expect(
            "openpty, system preset",
            &fx.run(&sys, &[], &["openpty"]),
            "OK",
        )?;
        expect(
            "the host's terminal, system preset",
            &fx.run(&sys, &[], &["open-rw", &host]),
            "ENOENT",
        )
    })();
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(master) };
    result
}
