//! Every file sbx writes survives a SIGKILL mid-write: `compile -o` and the
//! approvals store (and `sbx mount`'s policy edit, which shares
//! `compile::write_atomic`) hold the old content or the new, never a mix,
//! and killed writers leave at most one temp file behind.
//!
//! Kills land at exact system calls (strace's fault injection: the first
//! writes, the fsync, the rename) and at random moments.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SBX: &str = env!("CARGO_BIN_EXE_sbx");

fn policy(n: usize, tag: &str) -> String {
    let mut t = String::from("version = 1\n");
    for i in 0..n {
        t.push_str(&format!(
            "[[fs]]\npath = \"{tag}/d{}/f{i}\"\nread = true\n",
            i % 50
        ));
    }
    t
}

/// Files in `dir` other than the target, the lock and known inputs.
fn temps(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

fn strace() -> bool {
    let ok = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var("CI").as_deref() != Ok("true"),
        "strace is needed for the crash-safety tests (apt-get install strace)"
    );
    ok
}

/// Run `cmd` under strace, SIGKILLed at the `when`-th call of `syscalls`.
/// Returns whether the kill happened (the call was reached).
fn killed_at(cmd: &[&str], syscalls: &str, when: usize) -> bool {
    use std::os::unix::process::ExitStatusExt;
    let status = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("trace={syscalls}"))
        .arg("-e")
        .arg(format!("inject={syscalls}:signal=KILL:when={when}"))
        .args(cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    // strace passes on the tracee's death by signal (or 128 + N).
    status.signal() == Some(libc::SIGKILL) || status.code() == Some(128 + libc::SIGKILL)
}

/// Kill `cmd` after `delay`; true if it was still running then.
fn killed_after(cmd: &[&str], delay: Duration) -> bool {
    let mut child = Command::new(cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    child.wait().unwrap();
    running
}

/// A tiny deterministic generator for kill delays.
fn delays(seed: u64, n: usize, max: Duration) -> Vec<Duration> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            max.mul_f64((x % 1000) as f64 / 1000.0)
        })
        .collect()
}

#[test]
fn compile_output_is_old_or_new_after_sigkill() {
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("ir.json");
    let (a, b) = (d.path().join("a.toml"), d.path().join("b.toml"));
    std::fs::write(&a, policy(10, "a")).unwrap();
    // Large enough that writing it takes a while.
    std::fs::write(&b, policy(20_000, "b")).unwrap();
    let compile = |p: &Path| -> Vec<String> {
        [
            SBX,
            "compile",
            p.to_str().unwrap(),
            "--target",
            "ir",
            "--portable",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(["--workspace".into(), ws.to_str().unwrap().into()])
        .chain(["-o".into(), out.to_str().unwrap().into()])
        .collect()
    };
    let run = |p: &Path| {
        let c = compile(p);
        let st = Command::new(&c[0]).args(&c[1..]).status().unwrap();
        assert!(st.success());
        std::fs::read(&out).unwrap()
    };
    let new = run(&b);
    let old = run(&a);
    assert_ne!(old, new);
    let check = |what: &str| {
        let now = std::fs::read(&out).unwrap();
        assert!(
            now == old || now == new,
            "{what}: a mix of old and new ({} bytes)",
            now.len()
        );
        let t = temps(&out_dir);
        assert!(t.len() <= 1, "{what}: temp files accumulate: {t:?}");
    };
    let cb = compile(&b);
    let cmd: Vec<&str> = cb.iter().map(String::as_str).collect();
    if strace() {
        for (calls, when) in [
            ("write", 1),
            ("ftruncate", 1),
            ("fsync", 1),
            ("fsync", 2),
            ("rename,renameat,renameat2", 1),
        ] {
            assert!(
                killed_at(&cmd, calls, when),
                "the run did not reach {calls} #{when}"
            );
            check(&format!("killed at {calls} #{when}"));
        }
    }
    // Random moments over a whole run, from start to rename.
    let start = Instant::now();
    run(&a);
    let full = start.elapsed().max(Duration::from_millis(50));
    let mut killed = 0;
    for (i, delay) in delays(0x5eed, 12, full).into_iter().enumerate() {
        killed += usize::from(killed_after(&cmd, delay));
        check(&format!("killed after {delay:?} (run {i})"));
    }
    assert!(killed > 0, "no run was killed while writing");
}

#[test]
fn approvals_store_is_old_or_new_after_sigkill() {
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("ws");
    let outside = d.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("ext")).unwrap();
    let pol = ws.join("sbx.toml");
    std::fs::write(
        &pol,
        "version = 1\n[[fs]]\npath = \"ext\"\nread = true\nexternal = true\n",
    )
    .unwrap();
    let state = d.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let store: PathBuf = state.join("approvals.json");
    // Many earlier approvals, so that rewriting the store takes a while.
    let mounts: Vec<serde_json::Value> = (0..30_000)
        .map(|i| {
            serde_json::json!({"workspace": format!("/w/{i}"), "rule_path": "x",
                "canonical_target": format!("/t/{i}"), "approved_at": "2026-01-01T00:00:00Z"})
        })
        .collect();
    let old = serde_json::to_vec_pretty(&serde_json::json!({ "mounts": mounts })).unwrap();
    let cmd = [
        SBX,
        "approve",
        pol.to_str().unwrap(),
        "--yes",
        "--workspace",
        ws.to_str().unwrap(),
        "--approvals",
        store.to_str().unwrap(),
    ];
    let reset = || std::fs::write(&store, &old).unwrap();
    let check = |what: &str| {
        let now = std::fs::read(&store).unwrap();
        if now != old {
            let v: serde_json::Value = serde_json::from_slice(&now)
                .unwrap_or_else(|e| panic!("{what}: neither old nor a whole new store: {e}"));
            assert_eq!(v["mounts"].as_array().unwrap().len(), 30_001, "{what}");
        }
        let t = temps(&state);
        assert!(t.len() <= 1, "{what}: temp files accumulate: {t:?}");
    };
    reset();
    if strace() {
        for (calls, when) in [("write", 1), ("fsync", 1), ("rename,renameat,renameat2", 1)] {
            reset();
            assert!(
                killed_at(&cmd, calls, when),
                "approve did not reach {calls} #{when}"
            );
            check(&format!("killed at {calls} #{when}"));
        }
    }
    reset();
    let start = Instant::now();
    assert!(Command::new(SBX)
        .args(&cmd[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success());
    let full = start.elapsed().max(Duration::from_millis(50));
    check("a whole run");
    for (i, delay) in delays(0xa11, 10, full).into_iter().enumerate() {
        reset();
        killed_after(&cmd, delay);
        check(&format!("killed after {delay:?} (run {i})"));
    }
}
