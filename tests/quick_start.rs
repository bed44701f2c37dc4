//! `sbx run` without a policy file, and its one-off grants
//! (`--allow-read`, `--allow-write`, `--allow-net`; CLI.md): the default
//! policy runs, the flags add a layer on top of it, and with
//! `--artifact` they are a usage error.

#![cfg(target_os = "linux")]

mod common;

use common::{outside_presets, sbx_in};

struct Dirs {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
}

/// A workspace and a directory beside it, neither under a preset root.
fn dirs() -> Option<Dirs> {
    if sbx::runtime::linux::kernel_abi() == 0 {
        println!("SKIPPED: Landlock is not available");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("sbx-quick-")
        .tempdir_in(outside_presets())
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (ws, outside) = (root.join("ws"), root.join("outside"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(outside.join("out")).unwrap();
    std::fs::write(outside.join("notes.txt"), "notes\n").unwrap();
    Some(Dirs {
        _dir: dir,
        ws,
        outside,
    })
}

#[test]
fn no_policy_runs_the_default_policy() {
    let Some(d) = dirs() else { return };
    let r = sbx_in(&d.ws, &["run", "--", "true"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The default policy: the workspace is writable, what is beside it
    // is not there.
    let r = sbx_in(
        &d.ws,
        &[
            "run",
            "--",
            "sh",
            "-c",
            "echo x > mine; cat mine; cat ../outside/notes.txt 2>/dev/null || echo hidden",
        ],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "x\nhidden\n"),
        "{}",
        r.stderr
    );
}

#[test]
fn allow_flags_add_a_layer() {
    let Some(d) = dirs() else { return };
    // Relative to the current directory; the workspace stays writable
    // (the layer adds to the default rules).
    let r = sbx_in(
        &d.ws,
        &[
            "run",
            "--allow-read",
            "../outside/notes.txt",
            "--allow-write",
            "../outside/out",
            "--report",
            "--",
            "sh",
            "-c",
            "cat ../outside/notes.txt; echo w > ../outside/out/f; echo y > mine; \
             echo z > ../outside/notes.txt 2>/dev/null || echo read-only",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "notes\nread-only\n", "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(d.outside.join("out/f")).unwrap(),
        "w\n"
    );
    assert_eq!(std::fs::read_to_string(d.ws.join("mine")).unwrap(), "y\n");
    let notes = d.outside.join("notes.txt");
    assert!(
        r.stderr
            .contains(&format!("allow {}: read_file", notes.display())),
        "{}",
        r.stderr
    );
    // On top of a policy file too.
    let policy = d.ws.join("p.toml");
    std::fs::write(&policy, "version = 1\n[[fs]]\npath = \".\"\nread = true\n").unwrap();
    let r = sbx_in(
        &d.ws,
        &[
            "run",
            "p.toml",
            "--allow-read",
            "../outside/notes.txt",
            "--",
            "cat",
            "../outside/notes.txt",
        ],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "notes\n"), "{}", r.stderr);
}

#[test]
fn allow_net_is_a_host_rule() {
    let Some(d) = dirs() else { return };
    let r = sbx_in(
        &d.ws,
        &[
            "run",
            "--allow-net",
            "example.invalid:443",
            "--report",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The host rule's port, through the proxy.
    assert!(
        r.stderr.contains("allow tcp port 443: connect_tcp"),
        "{}",
        r.stderr
    );
    let r = sbx_in(&d.ws, &["run", "--allow-net", "host:port", "--", "true"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("HOST:PORT"), "{}", r.stderr);
}

#[test]
fn allow_flags_with_an_artifact_are_a_usage_error() {
    let Some(d) = dirs() else { return };
    for flag in ["--allow-read", "--allow-write", "--allow-net"] {
        let r = sbx_in(
            &d.ws,
            &["run", "--artifact", "x.json", flag, "y", "--", "true"],
        );
        assert_eq!(r.code, 2, "{flag}: {}", r.stderr);
        assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
    }
}
