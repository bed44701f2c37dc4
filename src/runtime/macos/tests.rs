use super::*;
use crate::compile::{load, lower_for, Inputs, Options};
use crate::ir::Os;
use crate::runtime::proxy::Echo;
use std::collections::BTreeMap;

fn lower(toml: &str, portable: bool, ws: &Path) -> Ir {
    let opts = Options {
        workspace: Some(ws.to_str().unwrap().into()),
        home: Some("/Users/sbx-run".into()),
        portable,
        ..Options::default()
    };
    let (policy, _) = load(&Inputs::from_text("p.toml", toml), &opts).unwrap();
    lower_for(&policy, &opts, Os::Macos).unwrap().ir
}

fn argv(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

#[test]
fn programs_are_found_like_execvp() {
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("plain");
    std::fs::write(&plain, "x").unwrap();
    let path = OsString::from(format!("{}:/bin:/usr/bin", d.path().display()));
    assert_eq!(
        resolve_program("sh".as_ref(), Some(&path))
            .unwrap()
            .parent(),
        Some(Path::new("/bin"))
            .filter(|_| Path::new("/bin/sh").exists())
            .or(Some(Path::new("/usr/bin")))
    );
    assert_eq!(
        resolve_program("plain".as_ref(), Some(&path))
            .unwrap_err()
            .0,
        EXIT_NOT_EXECUTABLE
    );
    assert_eq!(
        resolve_program("nope-sbx".as_ref(), Some(&path))
            .unwrap_err()
            .0,
        EXIT_NOT_FOUND
    );
    assert_eq!(
        resolve_program(plain.as_os_str(), None).unwrap_err().0,
        EXIT_NOT_EXECUTABLE
    );
    // Relative PATH entries are never searched.
    assert_eq!(
        resolve_program("sh".as_ref(), Some(OsStr::new(".")))
            .unwrap_err()
            .0,
        EXIT_NOT_FOUND
    );
}

#[test]
fn resolved_plans_allow_the_program_by_name() {
    let ws = tempfile::tempdir().unwrap();
    let ir = lower(
        "version = 1\n[commands.definitely-not-installed-sbx]\n",
        false,
        ws.path(),
    );
    let p = plan(
        &ir,
        &argv(&["/bin/sh", "-c", "true"]),
        &RunOptions::default(),
    )
    .unwrap();
    assert!(p.params.is_empty());
    assert!(p.profile.contains("(literal \"/bin/sh\")"), "{}", p.profile);
    assert!(!p.profile.contains("PROGRAM"));
    assert_eq!(p.args, argv(&["-c", "true"]));
    let allowed = ["PATH", "HOME", "USER", "LANG"];
    for (k, _) in &p.env {
        let k = k.to_str().unwrap();
        assert!(
            allowed.contains(&k)
                || k.starts_with("LC_")
                || crate::lower::KEPT_BY_DEFAULT.contains(&k),
            "{k} forwarded"
        );
    }
    let args = sandbox_exec_args(Path::new("/x/profile.sb"), &p);
    assert_eq!(
        args,
        argv(&["-f", "/x/profile.sb", "--", "/bin/sh", "-c", "true"])
    );
}

#[test]
fn portable_plans_fill_in_resolved_parameters() {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ir = lower("version = 1\n[commands.x]\n", true, ws.path());
    let opts = RunOptions {
        workspace: Some(ws.path().to_path_buf()),
        home: Some(home.path().to_path_buf()),
        report: false,
        quiet: false,
    };
    let p = plan(&ir, &argv(&["/bin/sh"]), &opts).unwrap();
    let names: Vec<&str> = p.params.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["HOME", "WORKSPACE", "TMPDIR"]);
    let get = |k: &str| &p.params.iter().find(|(n, _)| n == k).unwrap().1;
    assert_eq!(
        Path::new(get("WORKSPACE")),
        std::fs::canonicalize(ws.path()).unwrap()
    );
    assert_eq!(
        Path::new(get("HOME")),
        std::fs::canonicalize(home.path()).unwrap()
    );
    // The program is a literal in a profile sbx run emits itself.
    assert!(p.profile.contains("(literal \"/bin/sh\")"));

    // The same policy as a compiled artifact reads PROGRAM too.
    let text = sbpl::emit(&ir).unwrap().text;
    let a = plan_artifact(&text, &argv(&["/bin/sh", "-x"]), &opts).unwrap();
    let names: Vec<&str> = a.params.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["HOME", "WORKSPACE", "TMPDIR", "PROGRAM"]);
    assert_eq!(a.args, argv(&["-x"]));
}

#[test]
fn artifacts_that_cannot_be_run_are_refused() {
    let o = RunOptions::default();
    let bad = plan_artifact(
        "(version 1)\n(allow file-read* (subpath \"/x)\n",
        &argv(&["/bin/sh"]),
        &o,
    );
    assert_eq!(bad.unwrap_err().0, EXIT_SBX_FAILED);
    let unknown = plan_artifact(
        "(version 1)\n(deny default)\n(allow file-read* (subpath (param \"OTHER\")))\n",
        &argv(&["/bin/sh"]),
        &o,
    );
    assert!(unknown.unwrap_err().1.contains("OTHER"));
    let linux = ";; sbx-meta: {\"sbx\":1,\"target\":\"linux\",\"policy_hash\":\"x\",\"params\":[],\"env\":{\"minimal\":[],\"allow\":[]},\"limits\":{}}\n(version 1)\n";
    assert!(plan_artifact(linux, &argv(&["/bin/sh"]), &o)
        .unwrap_err()
        .1
        .contains("linux"));
    // A hand-written profile gets the minimal environment.
    let hand = plan_artifact("(version 1)\n(allow default)\n", &argv(&["/bin/sh"]), &o).unwrap();
    assert!(hand.params.is_empty());
    assert!(hand.limits == Limits::default());
}

#[test]
fn required_enforcement_refuses_approximations() {
    let ws = tempfile::tempdir().unwrap();
    let required = "version = 1\nenforcement = \"required\"\n[[net]]\nhost = \"example.com\"\n";
    // A URL path is not seen inside a tunnel.
    let ir = lower(
        &format!("{required}port = 443\npath_prefix = \"/v1/\"\n"),
        false,
        ws.path(),
    );
    let (code, msg) = plan(&ir, &argv(&["/bin/sh"]), &RunOptions::default()).unwrap_err();
    assert_eq!(code, EXIT_SBX_FAILED);
    assert!(msg.contains("net[0]"), "{msg}");
    // A host is exact through the proxy.
    let ir = lower(&format!("{required}port = 443\n"), false, ws.path());
    assert!(plan(&ir, &argv(&["/bin/sh"]), &RunOptions::default()).is_ok());
}

/// The value of `name` in the plan's environment.
fn env_of<'a>(p: &'a Plan, name: &str) -> &'a str {
    p.env
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.to_str())
        .unwrap_or_else(|| panic!("{name} not set"))
}

/// Host rules: the proxy runs on loopback before the command, its ports
/// become the profile's parameters, its URLs (with the run's token) the
/// command's proxy variables; the profile then reaches only those ports
/// and the loopback rule. What `start` does on macOS, here on any Unix.
#[test]
fn host_rules_start_the_proxy_and_pass_its_ports() {
    let ws = tempfile::tempdir().unwrap();
    let ir = lower(
        "version = 1\n[[net]]\nhost = \"allowed.test\"\nport = 443\n\
         [[net]]\nhost = \"localhost\"\nport = 8080\n",
        false,
        ws.path(),
    );
    let mut p = plan(
        &ir,
        &argv(&["/bin/sh", "-c", "true"]),
        &RunOptions::default(),
    )
    .unwrap();
    assert!(p.proxy.is_some() && p.params.is_empty());
    let proxy = start_proxy(&mut p, Echo::Off).unwrap().expect("a proxy");
    let (h, s) = proxy.ports();
    let params: Vec<(&str, String)> = p
        .params
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    assert_eq!(
        params,
        [
            ("PROXY_HTTP_PORT", h.to_string()),
            ("PROXY_SOCKS_PORT", s.to_string())
        ]
    );
    let http = env_of(&p, "HTTP_PROXY");
    let token = http
        .strip_prefix("http://sbx:")
        .and_then(|t| t.strip_suffix(&format!("@127.0.0.1:{h}")))
        .unwrap_or_else(|| panic!("{http}"))
        .to_string();
    assert_eq!(token.len(), 32);
    assert_eq!(env_of(&p, "https_proxy"), http);
    assert_eq!(
        env_of(&p, "ALL_PROXY"),
        format!("socks5h://sbx:{token}@127.0.0.1:{s}")
    );
    assert_eq!(env_of(&p, "NO_PROXY"), "localhost,127.0.0.1,::1");
    assert_eq!(
        sandbox_exec_args(Path::new("/x/profile.sb"), &p),
        argv(&[
            "-f",
            "/x/profile.sb",
            "-D",
            &format!("PROXY_HTTP_PORT={h}"),
            "-D",
            &format!("PROXY_SOCKS_PORT={s}"),
            "--",
            "/bin/sh",
            "-c",
            "true"
        ])
    );

    // The profile with these values (as write_private reads it): the
    // proxy and localhost:8080 only.
    let values: BTreeMap<String, String> = p.params.iter().cloned().collect();
    let prof = Profile::from_source(&p.profile, &values).unwrap();
    let connect = |localhost, port| prof.decide_connect(crate::sbpl::Connect { localhost, port });
    for port in [h, s, 8080] {
        assert!(connect(true, port).is_allow(), "localhost:{port}");
    }
    for (localhost, port) in [(false, h), (false, 443), (true, 443), (false, 8080)] {
        assert!(connect(localhost, port).is_deny(), "{localhost} {port}");
    }

    // The listeners serve only this run's token.
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", h)).unwrap();
    c.write_all(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 407 "), "{out}");
    let socks = |password: &str| {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s)).unwrap();
        c.write_all(&[5, 1, 2]).unwrap();
        let mut m = [0u8; 2];
        c.read_exact(&mut m).unwrap();
        let mut login = vec![1, 3];
        login.extend_from_slice(b"sbx");
        login.push(password.len() as u8);
        login.extend_from_slice(password.as_bytes());
        c.write_all(&login).unwrap();
        let mut st = [0u8; 2];
        c.read_exact(&mut st).unwrap();
        if st != [1, 0] {
            return None;
        }
        let mut req = vec![5, 1, 0, 3, 10];
        req.extend_from_slice(b"other.test");
        req.extend_from_slice(&443u16.to_be_bytes());
        c.write_all(&req).unwrap();
        let mut rep = [0u8; 10];
        c.read_exact(&mut rep).unwrap();
        Some(rep[1])
    };
    assert_eq!(socks("not-the-token"), None);
    assert_eq!(socks(&token), Some(2), "in, then refused by the rules");
    let summary = proxy.finish();
    assert!(
        summary.contains("connect  other.test:443: without this run's proxy credentials"),
        "{summary}"
    );
    assert!(
        summary.contains("socks5   other.test:443: no [[net]] rule"),
        "{summary}"
    );
}

/// A compiled profile carries the proxy's rules, so `sbx run --artifact`
/// starts the same proxy; a profile that reads the ports without them
/// is refused.
#[test]
fn artifacts_with_host_rules_start_the_same_proxy() {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ir = lower(
        "version = 1\n[[net]]\nhost = \"allowed.test\"\nport = 443\n",
        true,
        ws.path(),
    );
    let opts = RunOptions {
        workspace: Some(ws.path().to_path_buf()),
        home: Some(home.path().to_path_buf()),
        report: false,
        quiet: false,
    };
    let text = sbpl::emit(&ir).unwrap().text;
    let mut a = plan_artifact(&text, &argv(&["/bin/sh"]), &opts).unwrap();
    assert_eq!(a.proxy, sbpl::proxy_spec(&ir));
    let proxy = start_proxy(&mut a, Echo::Off).unwrap().expect("a proxy");
    let names: Vec<&str> = a.params.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "HOME",
            "WORKSPACE",
            "TMPDIR",
            "PROXY_HTTP_PORT",
            "PROXY_SOCKS_PORT"
        ]
    );
    assert!(env_of(&a, "HTTP_PROXY").ends_with(&format!("@127.0.0.1:{}", proxy.ports().0)));
    drop(proxy);

    let hand = "(version 1)\n(deny default)\n\
        (allow network-outbound (remote tcp (string-append \"localhost:\" (param \"PROXY_HTTP_PORT\"))))\n";
    let (code, msg) = plan_artifact(hand, &argv(&["/bin/sh"]), &opts).unwrap_err();
    assert_eq!(code, EXIT_SBX_FAILED);
    assert!(msg.contains("no proxy rules"), "{msg}");
    // Without host rules nothing starts.
    let mut none =
        plan_artifact("(version 1)\n(allow default)\n", &argv(&["/bin/sh"]), &opts).unwrap();
    assert!(start_proxy(&mut none, Echo::Off).unwrap().is_none());
    assert!(none.env.iter().all(|(k, _)| k != "HTTP_PROXY"));
}

fn plan_with(profile: &str) -> Plan {
    Plan {
        profile: profile.into(),
        params: Vec::new(),
        program: "/bin/sh".into(),
        args: Vec::new(),
        env: Vec::new(),
        limits: Limits::default(),
        precision: Vec::new(),
        proxy: None,
    }
}

#[test]
fn the_profile_file_is_private_and_out_of_the_sandbox_reach() {
    use std::os::unix::fs::MetadataExt;
    let base = tempfile::tempdir().unwrap();
    let canon = std::fs::canonicalize(base.path()).unwrap();
    let text = "(version 1)\n(deny default)\n";
    let f = write_private(&plan_with(text), &[base.path().to_path_buf()]).unwrap();
    assert!(f.path.starts_with(&canon));
    assert_eq!(std::fs::read_to_string(&f.path).unwrap(), text);
    assert_eq!(std::fs::metadata(&f.path).unwrap().mode() & 0o777, 0o600);
    let dir = f.path.parent().unwrap().to_path_buf();
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    drop(f);
    assert!(!dir.exists());

    // A base the sandbox may write to is skipped for the next one.
    let other = tempfile::tempdir().unwrap();
    let writable = format!(
        "(version 1)\n(deny default)\n(allow file-write* (subpath {}))\n",
        crate::sbpl::escape_string(canon.to_str().unwrap()).unwrap()
    );
    let f = write_private(
        &plan_with(&writable),
        &[base.path().to_path_buf(), other.path().to_path_buf()],
    )
    .unwrap();
    assert!(f
        .path
        .starts_with(std::fs::canonicalize(other.path()).unwrap()));
    // Renaming a directory above the file is as bad as writing it.
    let parent = canon.parent().unwrap().to_str().unwrap();
    let movable = format!(
        "(version 1)\n(deny default)\n(allow file-write-unlink (literal {}))\n",
        crate::sbpl::escape_string(parent).unwrap()
    );
    assert!(write_private(&plan_with(&movable), &[base.path().to_path_buf()]).is_err());
}

fn sh(script: &str, env: &[(&str, &str)], limits: Limits) -> i32 {
    let env: Vec<(OsString, OsString)> = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    spawn_and_wait(Path::new("/bin/sh"), &argv(&["-c", script]), &env, &limits).unwrap()
}

#[test]
fn exit_codes_signals_env_and_limits() {
    assert_eq!(sh("exit 7", &[], Limits::default()), 7);
    assert_eq!(
        sh("kill -TERM $$", &[], Limits::default()),
        128 + libc::SIGTERM
    );
    // Exactly the given environment.
    assert_eq!(
        sh(
            "[ \"$FOO\" = bar ] && [ -z \"$HOME\" ]",
            &[("FOO", "bar")],
            Limits::default()
        ),
        0
    );
    let cpu = Limits {
        cpu_time_s: Some(3),
        ..Limits::default()
    };
    assert_eq!(sh("[ \"$(ulimit -t)\" = 3 ]", &[], cpu), 0);
    let wall = Limits {
        wall_time_s: Some(1),
        ..Limits::default()
    };
    let t = std::time::Instant::now();
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let script = format!("sleep 30 & echo $! > '{}'; sleep 30", pidfile.display());
    assert_eq!(sh(&script, &[], wall), 128 + libc::SIGKILL);
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
    // The whole group died, the background child too.
    let bg: libc::pid_t = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    // SAFETY: probing a pid with signal 0. A killed orphan may stay a
    // zombie when init does not reap (containers): that is dead too.
    let zombie = std::fs::read_to_string(format!("/proc/{bg}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    });
    let alive = unsafe { libc::kill(bg, 0) } == 0 && !zombie;
    assert!(!alive, "background child {bg} survived");
    let err = spawn_and_wait(Path::new("/nonexistent/sbx"), &[], &[], &Limits::default());
    assert_eq!(err.unwrap_err().0, EXIT_SBX_FAILED);
}
