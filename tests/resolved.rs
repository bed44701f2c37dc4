//! Resolved mode against a real temporary workspace: symlinks are
//! canonicalised (and keep their spelling as an alias), a rule that leaves
//! the workspace through a symlink is dropped, missing paths are kept as
//! `missing`, missing preset roots are left out, external rules need an
//! approval, and commands resolve through PATH. Paths are redacted in the
//! snapshot; the snapshot is Linux's (macOS adds `/private` aliases).
#![cfg(target_os = "linux")]

mod common;

use common::{sbx_in, settings};
use serde_json::Value;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

const POLICY: &str = r#"version = 1

[process]
presets = ["package_manager_config"]

[[fs]]
path = "."
read = true
write = true

[[fs]]
path = ".git"
read = true

[[fs]]
path = "link_in"
read = true
execute = true

[[fs]]
path = "link_out/data"
read = true

[[fs]]
path = "not/yet/there"
read = true
create = true

[[fs]]
path = "~/notes"
read = true

[[fs]]
path = "ext"
read = true
external = true

[[fs]]
path = "ext_unapproved"
read = true
external = true

[commands.tool]
[commands.missing-tool]
"#;

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn mkdir(p: &Path) {
    std::fs::create_dir_all(p).unwrap();
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    mkdir(&ws.join(".git"));
    mkdir(&ws.join("src"));
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    mkdir(&root.join("outside/data"));
    mkdir(&root.join("shared"));
    mkdir(&root.join("shared2"));
    symlink("src", ws.join("link_in")).unwrap();
    symlink("../outside", ws.join("link_out")).unwrap();
    symlink("../shared", ws.join("ext")).unwrap();
    symlink("../shared2", ws.join("ext_unapproved")).unwrap();
    // The workspace reached through a symlink must lower the same.
    symlink("ws", root.join("ws_link")).unwrap();
    let home = root.join("home");
    mkdir(&home.join("notes"));
    std::fs::write(home.join(".gitconfig"), "[user]\n").unwrap();
    mkdir(&root.join("tmp"));
    let bin = root.join("bin");
    mkdir(&bin);
    std::fs::write(bin.join("tool"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(bin.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("policy.toml"), POLICY).unwrap();
    let approvals = serde_json::json!({"mounts": [{
        "workspace": ws.to_str().unwrap(),
        "rule_path": "ext",
        "canonical_target": root.join("shared").to_str().unwrap(),
        "approved_at": 0
    }]});
    std::fs::write(root.join("approvals.json"), approvals.to_string()).unwrap();
    World { _dir: dir, root }
}

/// `sbx compile policy.toml --target ir` in the world, with PATH, HOME and
/// TMPDIR pointing into it. Returns the IR and the JSON diagnostics.
fn compile(w: &World, workspace: &str) -> (Value, Value) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args([
            "compile",
            "policy.toml",
            "--target",
            "ir",
            "--workspace",
            workspace,
            "--home",
            "home",
            "--approvals",
            "approvals.json",
            "--message-format",
            "json",
        ])
        .current_dir(&w.root)
        .env("PATH", w.root.join("bin"))
        .env("HOME", w.root.join("home"))
        .env("TMPDIR", w.root.join("tmp"))
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let ir = serde_json::from_slice(&out.stdout).unwrap();
    (ir, serde_json::from_str(&stderr).unwrap())
}

/// Replace the temporary root with `[ROOT]` (and the IR's hash, which
/// covers it; the policy hash does not, and stays).
fn redact(w: &World, mut v: Value) -> String {
    if v.get("ir_hash").is_some() {
        v["ir_hash"] = "[HASH]".into();
    }
    serde_json::to_string_pretty(&v)
        .unwrap()
        .replace(w.root.to_str().unwrap(), "[ROOT]")
}

fn grant<'a>(ir: &'a Value, path: &str) -> Option<&'a Value> {
    ir["fs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["path"] == path)
}

#[test]
fn resolved_workspace() {
    let w = world();
    let r = |p: &str| format!("{}/{p}", w.root.display());
    let (ir, diags) = compile(&w, "ws");

    assert_eq!(ir["mode"], "resolved");
    assert_eq!(ir["roots"]["workspace"], r("ws"));
    assert_eq!(ir["roots"]["temp"], r("tmp"));
    // The symlink is resolved; its spelling is kept as an alias.
    let src = grant(&ir, &r("ws/src")).expect("link_in → src");
    assert_eq!(src["aliases"], serde_json::json!([r("ws/link_in")]));
    assert_eq!(src["kind"], "dir");
    // The link lies in the writable workspace (an earlier run could have
    // made it): the rule keeps only what the workspace already gives
    // there, read, not its execute (SBX035).
    assert_eq!(src["access"], serde_json::json!(["read"]));
    assert!(diags.to_string().contains("SBX035"), "{diags}");
    // Leaving the workspace through a symlink is never granted.
    assert!(ir["fs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| !g["path"].as_str().unwrap().starts_with(&r("outside"))));
    assert_eq!(
        grant(&ir, &r("ws/not/yet/there")).unwrap()["kind"],
        "missing"
    );
    // Preset roots: the one that exists is granted, the others left out.
    assert!(grant(&ir, &r("home/.gitconfig")).is_some());
    assert!(grant(&ir, &r("home/.npmrc")).is_none());
    // External: the approved one is granted at its target, the other not.
    let ext = grant(&ir, &r("shared")).expect("approved external");
    assert_eq!(ext["external"]["rule_path"], "ext");
    assert!(grant(&ir, &r("shared2")).is_none());
    assert_eq!(
        ir["commands"][1]["path"],
        r("bin/tool"),
        "{}",
        ir["commands"]
    );
    let codes: Vec<&str> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    for want in ["SBX014", "SBX016", "SBX019"] {
        assert!(codes.contains(&want), "{want} not in {codes:?}");
    }
    assert_eq!(diags["errors"], 0);

    settings().bind(|| {
        insta::assert_snapshot!("ir__resolved_workspace", redact(&w, ir.clone()));
        insta::assert_snapshot!("diagnostics__resolved_workspace", redact(&w, diags));
    });

    // Through a symlinked workspace: the same IR, byte for byte.
    let (via_link, _) = compile(&w, "ws_link");
    assert_eq!(via_link, ir);
}

/// Retargeting an approved symlink drops the rule and says so.
#[test]
fn retargeted_external_is_dropped() {
    let w = world();
    let link = w.root.join("ws/ext");
    std::fs::remove_file(&link).unwrap();
    symlink("../shared2", &link).unwrap();
    let (ir, diags) = compile(&w, "ws");
    assert!(grant(&ir, &format!("{}/shared2", w.root.display())).is_none());
    let msgs: Vec<&str> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "SBX016")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert!(msgs.iter().any(|m| m.contains("retargeted")), "{msgs:?}");
}

#[test]
fn workspace_that_is_not_a_directory_exits_2() {
    let w = world();
    let r = sbx_in(
        &w.root,
        &[
            "compile",
            "policy.toml",
            "--target",
            "ir",
            "--workspace",
            "nope",
        ],
    );
    // A bad --workspace is a usage error, not an invalid policy.
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a directory"), "{}", r.stderr);
}
