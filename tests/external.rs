//! RFD D43 end to end with the real binary: `sbx mount`, `sbx approve`,
//! retargeting, nested escapes, broken links, a corrupt store, concurrent
//! approvers, and what the compiled IR grants.
#![cfg(unix)]

use sbx::ir::{Access, Ir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A temp root holding a workspace, an external directory, a home and a
/// user-local store; every path canonical.
struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    ext: PathBuf,
    home: PathBuf,
    store: PathBuf,
}

const POLICY: &str = "version = 1\n\n[process]\npresets = []\n";

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        let ext = root.join("ext");
        let home = root.join("home");
        for d in [&ws, &ext.join("src"), &home.join(".ssh")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(ext.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), "secret\n").unwrap();
        std::fs::write(ws.join("sbx.toml"), POLICY).unwrap();
        let store = root.join("state/sbx/approvals.json");
        Env {
            _dir: dir,
            root,
            ws,
            ext,
            home,
            store,
        }
    }

    fn policy(&self) -> PathBuf {
        self.ws.join("sbx.toml")
    }

    /// Run sbx in `cwd` with this env's home and store.
    fn sbx_in(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_sbx"))
            .args(args)
            .args(["--home", s(&self.home), "--approvals", s(&self.store)])
            .current_dir(cwd)
            .stdin(Stdio::null())
            .output()
            .expect("sbx runs")
    }

    fn sbx(&self, args: &[&str]) -> Output {
        self.sbx_in(&self.ws, args)
    }

    fn mount(&self, spec: &str) -> Output {
        self.sbx(&["mount", spec, "--policy", s(&self.policy())])
    }

    fn approve(&self, yes: bool) -> Output {
        let policy = self.policy();
        let mut a = vec!["approve", s(&policy)];
        if yes {
            a.push("--yes");
        }
        self.sbx(&a)
    }

    /// Compile the policy to IR; returns it and stderr.
    fn ir(&self) -> (Ir, String) {
        let o = self.sbx(&["compile", s(&self.policy()), "--target", "ir"]);
        assert_eq!(code(&o), 0, "{}", err(&o));
        (serde_json::from_slice(&o.stdout).unwrap(), err(&o))
    }

    fn store_json(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&self.store).unwrap()).unwrap()
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}
fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What the IR decides for a path after resolving symlinks, as the OS
/// sandbox and `sbx explain` see it.
fn access_through(ir: &Ir, p: &Path) -> Access {
    let c = std::fs::canonicalize(p).unwrap();
    ir.access_at(s(&c))
}

fn relink(link: &Path, to: &Path) {
    std::fs::remove_file(link).unwrap();
    std::os::unix::fs::symlink(to, link).unwrap();
}

#[test]
fn lifecycle_mount_compile_retarget_reapprove() {
    let e = Env::new();
    let o = e.mount("fork=../ext");
    assert_eq!(code(&o), 0, "{}", err(&o));
    let link = e.ws.join("fork");
    assert_eq!(std::fs::read_link(&link).unwrap(), e.ext);
    let text = std::fs::read_to_string(e.policy()).unwrap();
    assert!(
        text.contains("[[fs]]\npath = \"fork\"\nexternal = true\nread = true\n"),
        "{text}"
    );
    let m = &e.store_json()["mounts"];
    assert_eq!(m.as_array().unwrap().len(), 1);
    assert_eq!(m[0]["workspace"], s(&e.ws));
    assert_eq!(m[0]["rule_path"], "fork");
    assert_eq!(m[0]["canonical_target"], s(&e.ext));

    // Compiled: the approved canonical target is granted, and only it.
    let (ir, stderr) = e.ir();
    assert!(!stderr.contains("SBX016"), "{stderr}");
    let g = ir.fs.iter().find(|g| g.external.is_some()).unwrap();
    assert_eq!(g.path, s(&e.ext));
    assert!(g.aliases.is_empty());
    assert_eq!(g.access, Access::READ);
    assert_eq!(g.external.as_ref().unwrap().rule_path, "fork");
    assert_eq!(access_through(&ir, &link.join("src/lib.rs")), Access::READ);
    assert!(access_through(&ir, &e.home.join(".ssh/id_ed25519")).is_empty());
    // The Landlock rules of the Linux artifact: the target, and only it.
    let landlock = |e: &Env| -> Vec<String> {
        let o = e.sbx(&["compile", s(&e.policy()), "--target", "linux"]);
        assert_eq!(code(&o), 0, "{}", err(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let rules = v["landlock"]["pathBeneath"].as_array().unwrap();
        let parents = rules.iter().flat_map(|r| r["parent"].as_array().unwrap());
        parents.map(|p| p.as_str().unwrap().to_string()).collect()
    };
    let outside_ws = |paths: Vec<String>| -> Vec<String> {
        let ws = s(&e.ws);
        paths.into_iter().filter(|p| p != ws).collect()
    };
    assert_eq!(outside_ws(landlock(&e)), [s(&e.ext)]);

    // A teammate's commit retargets the link at ~/.ssh: dropped, warned.
    relink(&link, &e.home.join(".ssh"));
    let (ir, stderr) = e.ir();
    assert!(
        stderr.contains("SBX016") && stderr.contains("retargeted"),
        "{stderr}"
    );
    assert!(ir.fs.iter().all(|g| g.external.is_none()));
    assert!(access_through(&ir, &link.join("id_ed25519")).is_empty());
    assert!(access_through(&ir, &e.ext.join("src/lib.rs")).is_empty());
    assert!(outside_ws(landlock(&e)).is_empty());

    // `approve` shows both targets and flags the sensitive one; without a
    // terminal and without --yes it records nothing.
    let before = std::fs::read(&e.store).unwrap();
    let o = e.approve(false);
    assert_eq!(code(&o), 1, "{}", err(&o));
    let listing = out(&o);
    assert!(listing.contains("RETARGETED"), "{listing}");
    assert!(
        listing.contains(&format!("was: {}", s(&e.ext))),
        "{listing}"
    );
    let ssh = e.home.join(".ssh");
    assert!(listing.contains(&format!("now: {}", s(&ssh))), "{listing}");
    assert!(
        listing.contains("SENSITIVE") && listing.contains("~/.ssh/"),
        "{listing}"
    );
    assert!(err(&o).contains("--yes"), "{}", err(&o));
    assert_eq!(std::fs::read(&e.store).unwrap(), before);

    // Approved explicitly: the new target replaces the old one.
    let o = e.approve(true);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let m = &e.store_json()["mounts"];
    assert_eq!(m.as_array().unwrap().len(), 1);
    assert_eq!(m[0]["canonical_target"], s(&ssh));
    let (ir, stderr) = e.ir();
    assert!(!stderr.contains("SBX016"), "{stderr}");
    assert_eq!(access_through(&ir, &link.join("id_ed25519")), Access::READ);
    assert!(access_through(&ir, &e.ext.join("src/lib.rs")).is_empty());

    // Back to the first target: that is a retarget again.
    relink(&link, &e.ext);
    let (ir, stderr) = e.ir();
    assert!(stderr.contains("retargeted"), "{stderr}");
    assert!(ir.fs.iter().all(|g| g.external.is_none()));
}

#[test]
fn nested_symlink_inside_the_target_is_denied() {
    let e = Env::new();
    let outside = e.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("passwd"), "root\n").unwrap();
    std::os::unix::fs::symlink(&outside, e.ext.join("secrets")).unwrap();
    let o = e.mount("fork=../ext:rw");
    assert_eq!(code(&o), 0, "{}", err(&o));
    let (ir, _) = e.ir();
    let fork = e.ws.join("fork");
    let rw = Access::READ_WRITE;
    assert_eq!(access_through(&ir, &fork.join("src/lib.rs")), rw);
    // fork/secrets/passwd canonicalises outside the approved target.
    let via = fork.join("secrets/passwd");
    assert_eq!(std::fs::canonicalize(&via).unwrap(), outside.join("passwd"));
    assert!(access_through(&ir, &via).is_empty());
    // Only the target itself is granted outside the workspace (beside
    // the protections inside it, which only take rights away).
    let outside_grants: Vec<_> = ir
        .fs
        .iter()
        .filter(|g| !g.path.starts_with(s(&e.ws)))
        .filter(|g| !matches!(g.source, sbx::ir::Source::Protected { .. }))
        .map(|g| g.path.clone())
        .collect();
    assert_eq!(outside_grants, [s(&e.ext)]);
}

#[test]
fn broken_symlink_is_dropped_and_cannot_be_approved() {
    let e = Env::new();
    std::os::unix::fs::symlink(e.root.join("gone"), e.ws.join("dead")).unwrap();
    let policy = format!("{POLICY}\n[[fs]]\npath = \"dead\"\nexternal = true\nread = true\n");
    std::fs::write(e.policy(), policy).unwrap();
    let (ir, stderr) = e.ir();
    assert!(
        stderr.contains("SBX016") && stderr.contains("broken symlink"),
        "{stderr}"
    );
    // Every fs rule dropped: still default-deny, not the workspace default.
    assert!(ir.fs.is_empty(), "{:?}", ir.fs);
    assert!(access_through(&ir, &e.ws).is_empty());
    let o = e.approve(true);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(out(&o).contains("broken symlink"), "{}", out(&o));
    assert!(out(&o).contains("cannot be approved"), "{}", out(&o));
    assert!(out(&o).contains("nothing to approve"), "{}", out(&o));
    assert!(!e.store.exists());
    // Once the target exists, the same link can be approved.
    std::fs::create_dir(e.root.join("gone")).unwrap();
    assert_eq!(code(&e.approve(true)), 0);
    let (ir, _) = e.ir();
    assert_eq!(ir.fs.len(), 1);
    assert_eq!(ir.fs[0].path, s(&e.root.join("gone")));
}

#[test]
fn corrupt_store_reads_as_empty_and_approve_rewrites_it() {
    let e = Env::new();
    assert_eq!(code(&e.mount("fork=../ext")), 0);
    std::fs::write(&e.store, "{\"mounts\": [{\"workspace\": ").unwrap();
    let (ir, stderr) = e.ir();
    assert!(stderr.contains("corrupt"), "{stderr}");
    assert!(stderr.contains("not approved"), "{stderr}");
    assert!(ir.fs.iter().all(|g| g.external.is_none()));
    let o = e.approve(true);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(err(&o).contains("corrupt"), "{}", err(&o));
    assert_eq!(e.store_json()["mounts"][0]["rule_path"], "fork");
    let backup = std::fs::read_to_string(format!("{}.corrupt", s(&e.store))).unwrap();
    assert_eq!(backup, "{\"mounts\": [{\"workspace\": ");
    let (ir, stderr) = e.ir();
    assert!(!stderr.contains("corrupt"), "{stderr}");
    assert!(ir.fs.iter().any(|g| g.external.is_some()));
}

#[test]
fn concurrent_approvers_keep_both_entries() {
    for round in 0..5 {
        let e = Env::new();
        // Four workspaces, each with its own unapproved external rule.
        let mut spaces = Vec::new();
        for i in 0..4 {
            let ws = e.root.join(format!("ws{i}"));
            let target = e.root.join(format!("target{i}"));
            std::fs::create_dir_all(&ws).unwrap();
            std::fs::create_dir_all(&target).unwrap();
            std::os::unix::fs::symlink(&target, ws.join("m")).unwrap();
            let p = format!("{POLICY}\n[[fs]]\npath = \"m\"\nexternal = true\nread = true\n");
            std::fs::write(ws.join("sbx.toml"), p).unwrap();
            spaces.push((ws, target));
        }
        let children: Vec<_> = spaces
            .iter()
            .map(|(ws, _)| {
                Command::new(env!("CARGO_BIN_EXE_sbx"))
                    .args(["approve", "sbx.toml", "--yes", "--approvals"])
                    .arg(&e.store)
                    .current_dir(ws)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "round {round}: {}", err(&o));
        }
        let v = e.store_json();
        let mut got: Vec<(String, String)> = v["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["workspace"].as_str().unwrap().to_string(),
                    m["canonical_target"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        got.sort();
        let want: Vec<(String, String)> = spaces
            .iter()
            .map(|(w, t)| (s(w).to_string(), s(t).to_string()))
            .collect();
        assert_eq!(got, want, "round {round}");
    }
}

/// The whole tree under `root` (link targets included) plus the policy
/// text and whether the store exists: what "nothing changed" means.
fn snapshot(e: &Env) -> (Vec<(PathBuf, Option<PathBuf>)>, String, bool) {
    fn walk(d: &Path, out: &mut Vec<(PathBuf, Option<PathBuf>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|x| x.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.push((p.clone(), Some(std::fs::read_link(&p).unwrap())));
            } else {
                out.push((p.clone(), None));
                if m.is_dir() {
                    walk(&p, out);
                }
            }
        }
    }
    let mut tree = Vec::new();
    walk(&e.root, &mut tree);
    let policy = std::fs::read_to_string(e.policy()).unwrap();
    (tree, policy, e.store.exists())
}

#[test]
fn mount_errors_leave_everything_unchanged() {
    let e = Env::new();
    std::fs::write(e.ws.join("notes.txt"), "x").unwrap();
    std::fs::create_dir(e.ws.join("adir")).unwrap();
    std::os::unix::fs::symlink(&e.home, e.ws.join("taken")).unwrap();
    std::os::unix::fs::symlink(&e.root, e.ws.join("up")).unwrap();
    let abs = format!("{}=../ext", s(&e.ws.join("abs")));
    let cases: &[(&str, i32, &str)] = &[
        (&abs, 2, "relative"),
        ("../escape=../ext", 2, "outside the workspace"),
        ("a/../../escape=../ext", 2, "outside the workspace"),
        (".=../ext", 2, "workspace itself"),
        ("~/x=../ext", 2, "relative"),
        ("adir/../~=../ext", 2, "workspace-relative rule path"),
        ("notes.txt=../ext", 1, "not a symlink"),
        ("adir=../ext", 1, "not a symlink"),
        ("taken=../ext", 1, "already a symlink"),
        ("up/sneaky=../ext", 2, "through a symlink"),
        ("fork=../missing", 2, "No such file"),
        ("fork=adir", 1, "inside the workspace"),
        ("tool:fork=../ext", 2, "no conversation.tools"),
        ("fork", 2, "NAME=PATH"),
    ];
    for (spec, want, msg) in cases {
        let before = snapshot(&e);
        let o = e.mount(spec);
        assert_eq!(code(&o), *want, "{spec}: {}", err(&o));
        assert!(err(&o).contains(msg), "{spec}: {}", err(&o));
        assert_eq!(snapshot(&e), before, "{spec} changed something");
    }

    // sbx's own storage: neither a place for the link nor a target.
    std::fs::create_dir_all(e.store.parent().unwrap().join("proj")).unwrap();
    let before = snapshot(&e);
    let o = e.mount("fork=../state");
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("approvals storage"), "{}", err(&o));
    let proj = e.store.parent().unwrap().join("proj");
    std::fs::write(proj.join("sbx.toml"), POLICY).unwrap();
    let o = e.sbx_in(&proj, &["mount", "fork=/", "--policy", "sbx.toml"]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(err(&o).contains("sbx's own storage"), "{}", err(&o));
    std::fs::remove_file(proj.join("sbx.toml")).unwrap();
    assert_eq!(snapshot(&e), before);

    // A store inside the workspace is refused.
    let before = snapshot(&e);
    let o = Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(["mount", "fork=../ext", "--policy", "sbx.toml"])
        .args(["--approvals", ".sbx/approvals.json"])
        .current_dir(&e.ws)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("inside the workspace"), "{}", err(&o));
    assert_eq!(snapshot(&e), before);

    // A failure at the last step (the store cannot be written) undoes the
    // directories, the symlink and the policy edit made before it.
    std::fs::write(e.root.join("blocker"), "").unwrap();
    let before = snapshot(&e);
    let o = Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(["mount", "deep/er/fork=../ext", "--policy", "sbx.toml"])
        .args(["--approvals", s(&e.root.join("blocker/approvals.json"))])
        .current_dir(&e.ws)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert_eq!(snapshot(&e), before);
}

#[test]
fn mount_is_idempotent_and_creates_directories() {
    let e = Env::new();
    let o = e.mount("vendor/libs/fork=../ext");
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(e.ws.join("vendor/libs").is_dir());
    let text = std::fs::read_to_string(e.policy()).unwrap();
    let o = e.mount("vendor/libs/fork=../ext");
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(out(&o).contains("already points"), "{}", out(&o));
    assert_eq!(std::fs::read_to_string(e.policy()).unwrap(), text);
    // :rw on the same mount widens the rule in place.
    let o = e.mount("vendor/libs/fork=../ext:rw");
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = std::fs::read_to_string(e.policy()).unwrap();
    assert_eq!(text.matches("path = \"vendor/libs/fork\"").count(), 1);
    assert!(text.contains("read = true\nwrite = true"), "{text}");
    assert_eq!(e.store_json()["mounts"].as_array().unwrap().len(), 1);
}

#[test]
fn mount_name_is_relative_to_the_current_directory() {
    let e = Env::new();
    std::fs::create_dir_all(e.ws.join("foo")).unwrap();
    let foo = e.ws.join("foo");
    let pol = s(&e.policy()).to_string();
    let ws = s(&e.ws).to_string();
    let run = |spec: &str| e.sbx_in(&foo, &["mount", spec, "--policy", &pol, "--workspace", &ws]);
    let o = run("baz=../../ext");
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(e.ws.join("foo/baz").is_symlink());
    let o = run("../qux/baz=../../ext");
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(e.ws.join("qux/baz").is_symlink());
    let o = run("../../baz=../../ext");
    assert_eq!(code(&o), 2, "{}", err(&o));
    let text = std::fs::read_to_string(e.policy()).unwrap();
    assert!(text.contains("path = \"foo/baz\""), "{text}");
    assert!(text.contains("path = \"qux/baz\""), "{text}");
    let keys: Vec<_> = e.store_json()["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["rule_path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, ["foo/baz", "qux/baz"]);
}

#[test]
fn mount_keeps_the_default_workspace_access() {
    for extra in ["", "\n[commands.true]\n"] {
        let e = Env::new();
        std::fs::write(e.policy(), format!("{POLICY}{extra}")).unwrap();
        let (before, _) = e.ir();
        assert_eq!(code(&e.mount("fork=../ext")), 0);
        let (after, _) = e.ir();
        let file = e.ws.join("Cargo.toml");
        assert_eq!(
            after.access_at(s(&file)),
            before.access_at(s(&file)),
            "{extra:?}"
        );
        assert_eq!(after.access_at(s(&e.ext)), Access::READ);
    }
    // A policy that already has fs rules keeps exactly those.
    let e = Env::new();
    let p = format!("{POLICY}\n[[fs]]\npath = \"src\"\nread = true\n");
    std::fs::write(e.policy(), &p).unwrap();
    assert_eq!(code(&e.mount("fork=../ext")), 0);
    let (ir, _) = e.ir();
    assert!(ir.access_at(s(&e.ws.join("README"))).is_empty());
}

#[test]
fn invalid_external_rules_are_errors() {
    let e = Env::new();
    std::fs::create_dir(e.ws.join("inner")).unwrap();
    std::os::unix::fs::symlink(e.ws.join("inner"), e.ws.join("local")).unwrap();
    for (path, code_want) in [
        ("local", "SBX007"),
        ("inner", "SBX007"),
        ("../ext", "SBX006"),
    ] {
        let p = format!("{POLICY}\n[[fs]]\npath = \"{path}\"\nexternal = true\nread = true\n");
        std::fs::write(e.policy(), p).unwrap();
        let o = e.sbx(&["compile", s(&e.policy()), "--target", "ir"]);
        assert_eq!(code(&o), 1, "{path}: {}", err(&o));
        assert!(err(&o).contains(code_want), "{path}: {}", err(&o));
    }
}

#[test]
fn approvals_are_per_workspace_and_never_read_from_it() {
    let e = Env::new();
    assert_eq!(code(&e.mount("fork=../ext")), 0);
    // The same rule in another workspace, linked to the same target, is
    // not approved by the first workspace's approval.
    let other = e.root.join("other");
    std::fs::create_dir(&other).unwrap();
    std::os::unix::fs::symlink(&e.ext, other.join("fork")).unwrap();
    std::fs::copy(e.policy(), other.join("sbx.toml")).unwrap();
    let o = e.sbx_in(&other, &["compile", "sbx.toml", "--target", "ir"]);
    assert!(err(&o).contains("not approved"), "{}", err(&o));
    // A store committed inside the workspace is not trusted.
    std::fs::create_dir(e.ws.join(".sbx")).unwrap();
    std::fs::copy(&e.store, e.ws.join(".sbx/approvals.json")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(["compile", "sbx.toml", "--target", "ir"])
        .args(["--approvals", ".sbx/approvals.json"])
        .current_dir(&e.ws)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(err(&o).contains("inside the workspace"), "{}", err(&o));
    let ir: Ir = serde_json::from_slice(&o.stdout).unwrap();
    assert!(ir.fs.iter().all(|g| g.external.is_none()));
}

fn snapshot_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
    s.set_prepend_module_to_snapshot(false);
    s
}

#[test]
fn mount_preserves_comments_and_formatting() {
    let e = Env::new();
    let text = r#"#:schema ./sbx.schema.json
# Team policy: reviewed in PRs.
version = 1
enforcement = "best_effort"   # keep going on old kernels

[process]
presets = []

# The workspace, writable.
[[fs]]
path   = "."
read   = true
write  = true

[[fs]]  # read-only git metadata
path = ".git"
read = true

[[net]]
host = "api.example.com"
scheme = "https"

[env]
strategy = "append"
value = [ { name = "AWS_*" } ]   # inline on purpose
"#;
    std::fs::write(e.policy(), text).unwrap();
    let o = e.mount("vendor/fork=../ext:rw");
    assert_eq!(code(&o), 0, "{}", err(&o));
    let edited = std::fs::read_to_string(e.policy()).unwrap();
    snapshot_settings().bind(|| insta::assert_snapshot!("mount_plain_policy", edited));
}

#[test]
fn mount_in_a_tools_layout() {
    let e = Env::new();
    let text = r#"# RFD 075 layout
[conversation.tools.fs_read_file]
source = "local"
command = "jp-tools fs read"   # no access yet: the default applies

[conversation.tools.fs_modify_file]
source = "local"

[[conversation.tools.fs_modify_file.access.fs]]
path = "."
read = true
write = true

[conversation.tools.fs_modify_file.access.commands.cargo]
args = [["check", "**"]]

[conversation.tools.github]
source = "mcp.github"
"#;
    std::fs::write(e.policy(), text).unwrap();
    // :rw needs a tool when several could take it.
    let o = e.mount("fork=../ext:rw");
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(err(&o).contains("explicit TOOL"), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(e.policy()).unwrap(), text);
    // MCP tools take no access rules.
    let o = e.mount("github:fork=../ext");
    assert_eq!(code(&o), 2, "{}", err(&o));
    // Read-only for every local tool, then read-write for one.
    let o = e.mount("fork=../ext");
    assert_eq!(code(&o), 0, "{}", err(&o));
    let o = e.mount("fs_modify_file:fork=../ext:rw");
    assert_eq!(code(&o), 0, "{}", err(&o));
    let edited = std::fs::read_to_string(e.policy()).unwrap();
    snapshot_settings().bind(|| insta::assert_snapshot!("mount_tools_layout", &edited));
    // Each tool compiles with the mount approved.
    for (tool, want) in [
        ("fs_read_file", Access::READ),
        ("fs_modify_file", Access::READ_WRITE),
    ] {
        let o = e.sbx(&["compile", "sbx.toml", "--target", "ir", "--tool", tool]);
        assert_eq!(code(&o), 0, "{}", err(&o));
        let ir: Ir = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(ir.access_at(s(&e.ext.join("src"))), want, "{tool}");
    }
    let o = e.approve(true);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(out(&o).contains("1 approved"), "{}", out(&o));
}

#[test]
fn a_target_holding_the_store_is_flagged() {
    let e = Env::new();
    std::fs::create_dir_all(e.store.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(e.root.join("state"), e.ws.join("st")).unwrap();
    let p = format!("{POLICY}\n[[fs]]\npath = \"st\"\nexternal = true\nread = true\n");
    std::fs::write(e.policy(), p).unwrap();
    let o = e.approve(false);
    let listing = out(&o);
    let dir = e.store.parent().unwrap();
    assert!(
        listing.contains("SENSITIVE") && listing.contains(s(dir)),
        "{listing}"
    );
}

/// On a terminal `approve` asks, and records only on "y". `script` gives
/// the child a pseudo-terminal.
#[cfg(target_os = "linux")]
#[test]
fn approve_prompts_on_a_terminal() {
    let e = Env::new();
    std::os::unix::fs::symlink(&e.ext, e.ws.join("fork")).unwrap();
    let p = format!("{POLICY}\n[[fs]]\npath = \"fork\"\nexternal = true\nread = true\n");
    std::fs::write(e.policy(), p).unwrap();
    let approve = |answer: &str| {
        let cmd = format!(
            "{} approve sbx.toml --home {} --approvals {}",
            env!("CARGO_BIN_EXE_sbx"),
            s(&e.home),
            s(&e.store)
        );
        let mut c = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(&e.ws)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("script(1) from util-linux");
        use std::io::Write;
        c.stdin
            .take()
            .unwrap()
            .write_all(answer.as_bytes())
            .unwrap();
        c.wait_with_output().unwrap()
    };
    let o = approve("n\n");
    assert_eq!(code(&o), 1, "{}", out(&o));
    assert!(out(&o).contains("[y/N]"), "{}", out(&o));
    assert!(!e.store.exists());
    let o = approve("y\n");
    assert_eq!(code(&o), 0, "{}", out(&o));
    assert_eq!(e.store_json()["mounts"][0]["canonical_target"], s(&e.ext));
}

/// `sbx run` on Linux: Landlock grants the approved target, and nothing
/// the link could be retargeted to or a nested link could lead to.
#[cfg(target_os = "linux")]
#[test]
fn run_reads_through_an_approved_mount() {
    let abi = sbx::runtime::linux::kernel_abi();
    if abi < 1 {
        eprintln!("SKIPPED: no Landlock on this kernel (ABI {abi})");
        return;
    }
    let e = Env::new();
    let outside = e.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("passwd"), "root\n").unwrap();
    std::os::unix::fs::symlink(&outside, e.ext.join("secrets")).unwrap();
    let policy = "version = 1\n\n[process]\npresets = [\"system_runtime\"]\n";
    std::fs::write(e.policy(), policy).unwrap();
    assert_eq!(code(&e.mount("fork=../ext")), 0);
    let run = |cmd: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sbx"))
            .args(["run", "sbx.toml", "--home", s(&e.home), "--approvals"])
            .arg(&e.store)
            .arg("--")
            .args(cmd)
            .current_dir(&e.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let fork = e.ws.join("fork");
    let lib = fork.join("src/lib.rs");
    let o = run(&["cat", s(&lib)]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(out(&o), "pub fn f() {}\n");
    // Read-only mount: writing through it fails; the workspace stays writable.
    let o = run(&["sh", "-c", &format!("echo x > {}/new", s(&fork))]);
    assert_ne!(code(&o), 0, "{}", err(&o));
    assert!(!e.ext.join("new").exists());
    let o = run(&["sh", "-c", &format!("echo x > {}/new", s(&e.ws))]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    // The nested link leads outside the approved target: denied.
    let o = run(&["cat", s(&fork.join("secrets/passwd"))]);
    assert_ne!(code(&o), 0, "{}", out(&o));
    // Landlock refuses it, or the namespace layer's new root lacks it.
    assert!(
        err(&o).contains("Permission denied") || err(&o).contains("No such file or directory"),
        "{}",
        err(&o)
    );
    // Retargeted to ~/.ssh and not re-approved: neither target is readable.
    relink(&fork, &e.home.join(".ssh"));
    let o = run(&["cat", s(&fork.join("id_ed25519"))]);
    assert_ne!(code(&o), 0, "{}", out(&o));
    assert!(err(&o).contains("retargeted"), "{}", err(&o));
    // Landlock refuses it, or the namespace layer's new root lacks it.
    assert!(
        err(&o).contains("Permission denied") || err(&o).contains("No such file or directory"),
        "{}",
        err(&o)
    );
    let o = run(&[
        "cat",
        s(&lib.strip_prefix(&fork).map(|r| e.ext.join(r)).unwrap()),
    ]);
    assert_ne!(code(&o), 0, "{}", out(&o));
}

/// The SBPL back end on the IR an approved mount lowers to: the profile
/// allows the canonical target and nothing a nested link leads to. (On
/// this host the IR is lowered for Linux; a macOS host lowers external
/// rules the same way, so only `os` differs.)
#[test]
fn sbpl_allows_the_approved_target_only() {
    use sbx::sbpl::{FileOp, Profile};
    let e = Env::new();
    let outside = e.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, e.ext.join("secrets")).unwrap();
    assert_eq!(code(&e.mount("fork=../ext:rw")), 0);
    let (mut ir, _) = e.ir();
    ir.os = sbx::ir::Os::Macos;
    let text = sbx::compile::emit(&ir, sbx::compile::Target::Macos)
        .unwrap()
        .text;
    assert!(
        text.contains(&format!("(subpath \"{}\")", s(&e.ext))),
        "{text}"
    );
    assert!(!text.contains(s(&e.ws.join("fork"))), "{text}");
    let p = Profile::from_source(&text, &Default::default()).unwrap();
    let lib = s(&e.ext.join("src/lib.rs")).to_string();
    assert!(p.decide(FileOp::Read, &lib).is_allow());
    assert!(p.decide(FileOp::Write, &lib).is_allow());
    // What the nested link resolves to is not under the target.
    let passwd = s(&outside.join("passwd")).to_string();
    assert!(p.decide(FileOp::Read, &passwd).is_deny());
}
