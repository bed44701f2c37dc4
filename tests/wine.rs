//! The Windows loader under Wine: `sbx.exe run --artifact` with the
//! `winprobe` helper as the sandboxed program.
//!
//! Needs `wine` and the cross-built exes: run `bash tests/wine/build.sh`
//! first (see docs/windows.md). Without them the tests print a skip message,
//! or fail when `CI=true`.
//!
//! Wine 8 keeps job membership, kill-on-close and job termination, but it
//! does not enforce job limits, UI restrictions, token restrictions or
//! AppContainer. The tests for those check the loader's honesty instead:
//! whatever the child could do beyond a limit, sbx must have reported the
//! limit as not kept.
#![cfg(not(windows))]

use sbx::back::to_json;
use sbx::back::windows::{emit, Spec};
use sbx::ir::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Wine {
    bin: PathBuf,
    prefix: PathBuf,
}

/// The exes and a booted Wine prefix, or `None` (skip) outside CI.
fn wine() -> Option<&'static Wine> {
    static WINE: OnceLock<Option<Wine>> = OnceLock::new();
    WINE.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let bin = std::env::var_os("SBX_WINE_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/x86_64-pc-windows-gnu/debug"));
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        let problem = if Command::new("wine").arg("--version").output().is_err() {
            Some("wine is not installed (run .ci/prereqs.sh)".to_string())
        } else {
            [
                "sbx.exe",
                "bcryptprimitives.dll",
                "examples/winprobe.exe",
                "examples/bcryptprimitives.dll",
            ]
            .iter()
            .find(|f| !bin.join(f).exists())
            .map(|f| {
                format!(
                    "{} is missing (run tests/wine/build.sh)",
                    bin.join(f).display()
                )
            })
        };
        if let Some(p) = problem {
            assert!(!ci, "Wine tests cannot run: {p}");
            eprintln!("SKIPPED: Wine tests: {p}");
            return None;
        }
        let prefix = std::env::var_os("WINEPREFIX")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/wine-prefix"));
        // First start creates the prefix (wineboot); do it once, not racing.
        boot(&prefix);
        Some(Wine { bin, prefix })
    })
    .as_ref()
}

/// Boots the prefix, once more after stopping its server if the first
/// try fails, and panics with what Wine said and the free space where the
/// prefix lives: a new prefix takes about 700 MB (Debian's Wine copies its
/// DLLs in), and a CI failure must say why without a rerun.
fn boot(prefix: &Path) {
    let try_boot = |debug: &str| {
        Command::new("wine")
            .args(["cmd", "/c", "exit", "0"])
            .env("WINEPREFIX", prefix)
            .env("WINEDEBUG", debug)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("wine starts")
    };
    if try_boot("-all").status.success() {
        return;
    }
    let _ = Command::new("wineserver")
        .arg("-k")
        .env("WINEPREFIX", prefix)
        .status();
    let again = try_boot("err+all,fixme-all");
    if again.status.success() {
        return;
    }
    let said = String::from_utf8_lossy(&again.stderr);
    let tail: Vec<&str> = said.lines().rev().take(40).collect();
    let df = Command::new("df")
        .arg("-h")
        .arg(prefix.parent().unwrap_or(prefix))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    panic!(
        "wine could not boot its prefix {} ({}, twice); space there:\n{df}wine said (last lines):\n{}",
        prefix.display(),
        again.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
}

fn ir() -> Ir {
    Ir {
        policy_hash: "sha256:0123456789abcdef".into(),
        fs: vec![Grant {
            path: "${WORKSPACE}".into(),
            access: Access::READ_WRITE,
            kind: PathKind::Unknown,
            source: Source::Default,
            aliases: vec![],
            external: None,
        }],
        env: Env {
            allow: vec!["AWS_*".into()],
            ..Env::minimal(Os::Windows)
        },
        ..Ir::deny_all(Os::Windows, PathMode::Portable, Roots::portable())
    }
}

fn spec(ir: &Ir) -> Spec {
    Spec::from_json(&emit(ir).expect("emits").text).expect("loads")
}

/// A Windows path for a host path (Wine maps `Z:` to `/`).
fn win(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Start `sbx.exe run --artifact SPEC -- winprobe ARGS` (or `-- CMD` when
/// `args[0]` starts with `=`: a bare command name).
fn start(e: &Wine, dir: &Path, spec: &Spec, args: &[&str], vars: &[(&str, &str)]) -> Child {
    let file = dir.join("windows.json");
    std::fs::write(&file, to_json(spec)).unwrap();
    let mut c = Command::new("wine");
    c.arg(e.bin.join("sbx.exe"))
        .args(["run", "--artifact"])
        .arg(win(&file))
        .arg("--report")
        .arg("--");
    match args.split_first() {
        Some((first, rest)) if first.starts_with('=') => c.arg(&first[1..]).args(rest),
        _ => c.arg(win(&e.bin.join("examples/winprobe.exe"))).args(args),
    };
    c.current_dir(dir)
        .env("WINEPREFIX", &e.prefix)
        .env("WINEDEBUG", "-all")
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.spawn().expect("wine starts")
}

fn finish(mut child: Child, started: Instant, limit: Duration) -> Run {
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("sbx.exe did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let r = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        stderr: String::from_utf8_lossy(&out.stderr).replace('\r', ""),
        took: started.elapsed(),
    };
    eprintln!("--- sbx exit {} after {:?}\n{}", r.code, r.took, r.stderr);
    r
}

fn run(e: &Wine, dir: &Path, spec: &Spec, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let t = Instant::now();
    finish(start(e, dir, spec, args, vars), t, Duration::from_secs(60))
}

fn markers(dir: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.ends_with(&format!(".{ext}")).then_some(n)
        })
        .collect();
    v.sort();
    v
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Tell the reader what Wine did not enforce, in the test output itself.
fn not_enforced(what: &str) {
    println!("NOT ENFORCED under Wine: {what} (reported by sbx as not kept)");
}

#[test]
fn child_and_grandchildren_are_in_the_job() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let marks = d.path().join("m");
    std::fs::create_dir(&marks).unwrap();
    let r = run(e, d.path(), &spec(&ir()), &["tree", &win(&marks), "2"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let found = markers(&marks, "injob");
    assert_eq!(
        found.len(),
        3,
        "child, grandchild, great-grandchild: {found:?}"
    );
    for f in found {
        assert_eq!(std::fs::read_to_string(marks.join(&f)).unwrap(), "1", "{f}");
    }
    assert!(r.stderr.contains("child placed in the job"), "{}", r.stderr);
}

#[test]
fn environment_holds_only_what_the_policy_allows() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let vars = [
        ("SBX_TEST_SECRET", "s3cret"),
        ("AWS_SBX_TEST", "forwarded"),
        ("LC_SBX_TEST", "x"),
    ];
    let r = run(e, d.path(), &spec(&ir()), &["env"], &vars);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let env: Vec<(&str, &str)> = r.stdout.lines().filter_map(|l| l.split_once('=')).collect();
    let has = |n: &str| env.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    assert!(!has("SBX_TEST_SECRET"), "{env:?}");
    assert!(!r.stdout.contains("s3cret"));
    assert!(env.contains(&("AWS_SBX_TEST", "forwarded")), "{env:?}");
    assert!(
        has("LC_SBX_TEST") && has("PATH") && has("SystemRoot"),
        "{env:?}"
    );
    let allowed = [
        "PATH",
        "HOME",
        "USER",
        "LANG",
        "SystemRoot",
        "windir",
        "TEMP",
        "TMP",
        "COMSPEC",
        "PATHEXT",
    ];
    let mut added_by_wine = Vec::new();
    for (k, _) in &env {
        let policy = allowed.iter().any(|a| a.eq_ignore_ascii_case(k))
            || k.starts_with("LC_")
            || k.starts_with("AWS_");
        // Wine's ntdll adds these to every new process, whatever the
        // environment block it was given.
        let wine = k.starts_with("WINE") || k.eq_ignore_ascii_case("SystemDrive");
        assert!(policy || wine, "{k} is not allowed by the policy");
        if wine && !policy {
            added_by_wine.push(*k);
        }
    }
    println!("added by Wine itself, not by sbx: {added_by_wine:?}");
}

#[test]
fn exit_codes_propagate() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let s = spec(&ir());
    assert_eq!(run(e, d.path(), &s, &["exit", "42"], &[]).code, 42);
    // A bare name is looked up in the child's PATH (Wine's builtin cmd).
    assert_eq!(run(e, d.path(), &s, &["=cmd", "/c", "exit 7"], &[]).code, 7);
    let r = run(e, d.path(), &s, &["=sbx-no-such-program"], &[]);
    assert_eq!(r.code, 127, "{}", r.stderr);
    assert!(r.stderr.contains("command not found"));
    // A required artifact with inexact lines is refused before the start.
    let mut i = ir();
    i.enforcement = Enforcement::Required;
    let r = run(e, d.path(), &spec(&i), &["exit", "0"], &[]);
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be enforced exactly on Windows"));
}

#[test]
fn wall_time_kills_the_tree() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let marks = d.path().join("m");
    std::fs::create_dir(&marks).unwrap();
    let mut i = ir();
    i.limits.wall_time_s = Some(3);
    let t = Instant::now();
    // Three processes that would each finish after 10 s.
    let r = finish(
        start(
            e,
            d.path(),
            &spec(&i),
            &["hold", &win(&marks), "10", "2"],
            &[],
        ),
        t,
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 137, "{}", r.stderr);
    assert!(r.stderr.contains("wall time of 3000 ms exceeded"));
    assert!(r.took < Duration::from_secs(10), "{:?}", r.took);
    assert_eq!(markers(&marks, "started").len(), 3);
    std::thread::sleep(Duration::from_secs(13).saturating_sub(t.elapsed()));
    assert_eq!(
        markers(&marks, "done"),
        Vec::<String>::new(),
        "a process survived"
    );
}

#[test]
fn tree_dies_when_sbx_is_killed() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let marks = d.path().join("m");
    std::fs::create_dir(&marks).unwrap();
    let mut child = start(
        e,
        d.path(),
        &spec(&ir()),
        &["hold", &win(&marks), "10", "2"],
        &[],
    );
    let t = Instant::now();
    wait_for("three sleepers", Duration::from_secs(30), || {
        markers(&marks, "started").len() == 3
    });
    // SIGKILL: sbx gets no chance to clean up; only kill-on-job-close can
    // take the tree down with it.
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(13).saturating_sub(t.elapsed()));
    assert_eq!(
        markers(&marks, "done"),
        Vec::<String>::new(),
        "a process survived sbx"
    );
}

#[test]
fn leftover_grandchildren_die_with_the_run() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let marks = d.path().join("m");
    std::fs::create_dir(&marks).unwrap();
    let t = Instant::now();
    let r = run(
        e,
        d.path(),
        &spec(&ir()),
        &["linger", &win(&marks), "6"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(markers(&marks, "started").len(), 1, "the grandchild ran");
    std::thread::sleep(Duration::from_secs(9).saturating_sub(t.elapsed()));
    assert_eq!(
        markers(&marks, "done"),
        Vec::<String>::new(),
        "the grandchild survived"
    );
}

#[test]
fn read_back_reports_limits_that_were_not_kept() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let mut i = ir();
    i.limits.max_memory_mib = Some(64);
    i.limits.max_processes = Some(2);
    i.limits.cpu_time_s = Some(30);
    let s = spec(&i);

    // Memory: either the commit fails, or sbx said the limit was not kept.
    let r = run(e, d.path(), &s, &["alloc", "256"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    if r.stdout.contains("alloc=ok") {
        assert!(r
            .stderr
            .contains("not kept: job.process_memory_limit_bytes"));
        not_enforced("ProcessMemoryLimit: committed 256 MiB under a 64 MiB limit");
    } else {
        assert!(r.stdout.contains("alloc=failed"), "{}", r.stdout);
    }
    // Processes: the probe plus one child fit in 2; more means not kept.
    let r = run(e, d.path(), &s, &["spawn", "3"], &[]);
    let spawned: u32 = r
        .stdout
        .trim()
        .strip_prefix("spawned=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", r.stdout));
    if spawned > 1 {
        assert!(r.stderr.contains("not kept: job.active_process_limit"));
        not_enforced(&format!(
            "ActiveProcessLimit 2: {} processes ran",
            spawned + 1
        ));
    }
    if r.stderr
        .contains("not kept: job.per_process_user_time_100ns")
    {
        not_enforced("PerProcessUserTimeLimit");
    }

    // The same limit marked required: refused before anything runs.
    let mut strict = s.clone();
    strict
        .job
        .active_process_limit
        .as_mut()
        .unwrap()
        .requirement = Enforcement::Required;
    let marks = d.path().join("m");
    std::fs::create_dir(&marks).unwrap();
    let r = run(e, d.path(), &strict, &["tree", &win(&marks), "0"], &[]);
    if r.stderr.contains("job.active_process_limit") {
        assert_eq!(r.code, 125, "{}", r.stderr);
        assert!(r.stderr.contains("required but not kept (nothing was run)"));
        assert!(markers(&marks, "injob").is_empty(), "the child ran anyway");
    } else {
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
}

#[test]
fn token_privileges_are_deleted_and_the_rest_is_reported() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let mut i = ir();
    i.windows.token = "low_integrity".into();
    let s = spec(&i);
    let deleted = s.token.as_ref().unwrap().delete_privileges.clone();
    let r = run(e, d.path(), &s, &["privs"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let held: Vec<&str> = r.stdout.lines().collect();
    assert!(!held.is_empty(), "the probe read its token");
    for p in &held {
        assert!(!deleted.iter().any(|d| d == p), "{p} was to be deleted");
    }
    if held.iter().any(|p| *p != "SeChangeNotifyPrivilege") {
        assert!(r
            .stderr
            .contains("not kept: token.flags.disable_max_privilege"));
        not_enforced("DISABLE_MAX_PRIVILEGE (explicitly deleted privileges are gone)");
    }
    // Wine reports every token as High integrity.
    if r.stderr.contains("not kept: token.integrity") {
        not_enforced("low integrity level");
    }
}

#[test]
fn appcontainer_unavailable_is_reported_or_refused() {
    let Some(e) = wine() else { return };
    let d = tempfile::tempdir().unwrap();
    let mut i = ir();
    i.windows.appcontainer = true;
    let s = spec(&i);
    // Best effort: sbx must not abort on Wine's missing userenv exports.
    let r = run(e, d.path(), &s, &["exit", "3"], &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    if r.stderr.contains("not kept: appcontainer") {
        not_enforced("AppContainer (network and filesystem confinement)");
        let mut strict = s.clone();
        strict.appcontainer.as_mut().unwrap().requirement = Enforcement::Required;
        let r = run(e, d.path(), &strict, &["exit", "3"], &[]);
        assert_eq!(r.code, 125, "{}", r.stderr);
        assert!(r.stderr.contains("appcontainer"));
    }
}

/// `sbx.exe compile` in resolved mode on Windows: `std::fs::canonicalize`
/// answers `\\?\Z:\...`; the IR must hold the plain drive paths that
/// policies, approvals and `sbx explain` queries use.
#[test]
fn resolved_paths_on_windows_are_plain_drive_paths() {
    let Some(e) = wine() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let policy = dir.path().join("p.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[fs]]\npath = \"src\"\nread = true\n\n[[fs]]\npath = \"~/x/y\"\nread = true\n",
    )
    .unwrap();
    let out = Command::new("wine")
        .arg(e.bin.join("sbx.exe"))
        .args(["compile", "--target", "ir"])
        .arg(win(&policy))
        .current_dir(dir.path())
        .env("WINEPREFIX", &e.prefix)
        .env("WINEDEBUG", "-all")
        .stdin(Stdio::null())
        .output()
        .expect("wine starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ir: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let ws = win(&std::fs::canonicalize(dir.path()).unwrap());
    assert_eq!(ir["roots"]["workspace"], ws.as_str(), "{stdout}");
    let src = format!("{ws}\\src");
    assert!(
        ir["fs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["path"] == src.as_str()),
        "{stdout}"
    );
    assert!(
        !stdout.contains(r"\\\\?\\"),
        "verbatim path in the IR: {stdout}"
    );
    // Lexical forms that differ only in separators or case are no aliases.
    for g in ir["fs"].as_array().unwrap() {
        for a in g["aliases"].as_array().into_iter().flatten() {
            let a = a.as_str().unwrap();
            assert!(!a.contains('/'), "alias {a} in {stdout}");
        }
    }
}
