//! `listen()` without `bind()` on the real network (issue #20,
//! landlock-lsm/linux#15): sbx checks each listen, so a TCP socket
//! listens only on a port Landlock let it bind.

use crate::fixture::{check, expect, sbx_bin, Fx};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NEVER: &str = "\n[linux]\nnamespaces = \"never\"\n";

/// A loopback port nothing listens on.
fn free_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port().to_string()
}

/// Unbound TCP sockets are refused (EACCES) on IPv4 and IPv6 under
/// `namespaces = "never"` with no `[[net]]`, with a port-only connect
/// rule (the namespace layer without a network namespace), and with a
/// bind rule. Controls: the probe listens unsandboxed; under each
/// policy a UNIX-socket server listens and accepts; with the bind rule,
/// bind(P) + listen works, and another port is refused by Landlock.
/// Swapping what the descriptor number holds while listen is checked
/// gains nothing.
pub fn listen_on_the_real_network(fx: &Fx) -> Result<(), String> {
    let (p, other) = (free_port(), free_port());
    let none = fx.policy("best_effort", NEVER);
    let connect = fx.policy("best_effort", "\n[[net]]\nhost = \"*\"\nport = 443\n");
    let bind = fx.policy(
        "best_effort",
        &format!("\n[[net]]\nhost = \"*\"\nport = {p}\nbind = true\n{NEVER}"),
    );
    let policies = [
        ("no [[net]], never", &none),
        ("connect 443", &connect),
        ("bind rule, never", &bind),
    ];
    for fam in ["4", "6"] {
        let out = fx.unsandboxed(&["listen-tcp", fam, "0"]);
        expect(&format!("v{fam} unsandboxed"), &out, "OK")?;
        for (name, policy) in policies {
            let out = fx.run(policy, &[], &["listen-tcp", fam, "0"]);
            expect(
                &format!("v{fam} {name}: listen without bind"),
                &out,
                "EACCES",
            )?;
        }
        let out = fx.run(&bind, &[], &["listen-tcp", fam, &p]);
        expect(&format!("v{fam}: bind({p}) + listen"), &out, "OK")?;
        let out = fx.run(&bind, &[], &["listen-tcp", fam, &other]);
        expect(&format!("v{fam}: bind({other})"), &out, "bind: EACCES")?;
    }
    for (i, (name, policy)) in policies.into_iter().enumerate() {
        let sock = fx.path(&format!("ws/server{i}.sock"));
        let out = fx.run(policy, &[], &["unix-server", &sock]);
        expect(&format!("{name}: UNIX-socket server"), &out, "OK")?;
        let out = fx.run(policy, &[], &["listen-swap"]);
        expect(&format!("{name}: swapped descriptor"), &out, "OK")?;
    }
    let out = fx.run(&none, &["--report"], &["listen-tcp", "4", "0"]);
    check(out.stderr.contains("sbx: listen: checked by sbx"), || {
        format!("--report: {}", out.stderr)
    })
}

/// With sbx gone nobody answers: the kernel fails every listen (ENOSYS),
/// even one that would be allowed, in a process of the run that
/// outlives sbx (the command dies with sbx unless it drops that death
/// signal, as the probe does; a descendant of it never has one).
pub fn listen_fails_closed_without_sbx(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", NEVER);
    let file = fx.path("ws/orphan");
    let mut child = Command::new(sbx_bin())
        .arg("run")
        .arg(&p)
        .arg("--workspace")
        .arg(&fx.ws)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(["--probe", "listen-orphaned", &file])
        .env("HOME", fx.root.join("home"))
        .current_dir(&fx.ws)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).map_err(|e| e.to_string())?;
    check(line.trim() == "ready", || format!("probe said {line:?}"))?;
    let _ = child.kill();
    let _ = child.wait();
    // The probe creates the file, then writes its word: wait for the
    // word, not the file (read between the two, it was "" under load).
    let start = Instant::now();
    let mut got = String::new();
    while got.is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        got = std::fs::read_to_string(&file).unwrap_or_default();
    }
    check(got == "ENOSYS", || {
        format!("listen once sbx was gone: {got:?}")
    })?;
    // Control: the same listen with sbx alive.
    let sock = fx.path("ws/alive.sock");
    expect("with sbx", &fx.run(&p, &[], &["unix-server", &sock]), "OK")
}

/// Under a filter that holds a listener already (the kernel allows one),
/// sbx cannot check listen: `best_effort` says so and runs (listen
/// without bind then works, as before the check), `required` exits 125
/// and runs nothing.
pub fn listen_unchecked_under_another_listener(fx: &Fx) -> Result<(), String> {
    let be = fx.policy("best_effort", NEVER);
    // On the real network through a port rule, not `never`: a root run
    // without the new root's read-only mounts is not exact.
    let req = fx.policy_read_only("required", "\n[[net]]\nhost = \"*\"\nport = 9\n");
    let run = |p: &std::path::Path| {
        let mut args: Vec<OsString> = vec!["--probe".into(), "with-listener".into()];
        args.extend([
            sbx_bin().into(),
            "run".into(),
            p.into(),
            "--workspace".into(),
        ]);
        args.extend([fx.ws.clone().into(), "--".into()]);
        args.extend([std::env::current_exe().unwrap().into(), "--probe".into()]);
        args.extend(["listen-tcp".into(), "4".into(), "0".into()]);
        fx.exec_self(&args)
    };
    let out = run(&be);
    expect("best effort", &out, "OK")?;
    check(out.stderr.contains("listen() is not checked"), || {
        out.stderr.clone()
    })?;
    let out = run(&req);
    check(out.code == 125 && out.answer().is_empty(), || {
        format!("required: {out:?}")
    })?;
    check(out.stderr.contains("listen() cannot be checked"), || {
        out.stderr.clone()
    })?;
    // Control: without the other listener, required runs and refuses.
    expect(
        "required alone",
        &fx.run(&req, &[], &["listen-tcp", "4", "0"]),
        "EACCES",
    )
}
