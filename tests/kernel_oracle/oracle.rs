//! Policies, queries and the comparison.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use sbx::compile::{load, lower_for, Inputs, Options};
use sbx::ir::{path_within, Access, Ir, Os, Status};
use std::path::Path;
use std::process::Command;

const SBX: &str = env!("CARGO_BIN_EXE_sbx");
const DIRS: [&str; 3] = ["a", "a/b", "c"];
const FILES: [&str; 4] = ["a/f", "a/b/g", "c/h", "top"];
/// Rule paths: the workspace, directories and files.
const RULE_PATHS: [&str; 6] = [".", "a", "a/b", "c", "a/f", "c/h"];
/// Names created by `create` queries.
const NEW: [&str; 4] = ["a/new", "a/b/new", "c/new", "new"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    Update,
    Create,
    Delete,
}

/// One operation in the sandbox: `OK` or the errno.
pub fn probe(op: &str, path: &str) -> String {
    use std::fs::OpenOptions;
    let r = match op {
        "read" => std::fs::File::open(path).map(drop),
        "update" => OpenOptions::new().write(true).open(path).map(drop),
        // mknod: creating alone (opening the new file for writing would
        // also need the update right).
        "create" => {
            let c = std::ffi::CString::new(path).unwrap();
            // SAFETY: a valid C string; creates a regular file.
            match unsafe { libc::mknod(c.as_ptr(), libc::S_IFREG | 0o644, 0) } {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        }
        "delete" => std::fs::remove_file(path),
        _ => panic!("unknown probe {op}"),
    };
    match r {
        Ok(()) => "OK".into(),
        Err(e) => format!("errno {}", e.raw_os_error().unwrap_or(0)),
    }
}

fn rights() -> impl Strategy<Value = Vec<&'static str>> {
    prop::sample::subsequence(vec!["read", "write", "create", "update", "delete"], 1..=3)
}

fn policy() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(RULE_PATHS.to_vec()), rights()), 1..5).prop_map(
        |rules| {
            // The system runtime only, so that no preset root covers the
            // workspace; rights only ever set to true (no contradictions).
            let mut t = String::from("version = 1\n[process]\npresets = [\"system_runtime\"]\n");
            for (path, rights) in rules {
                t.push_str(&format!("[[fs]]\npath = \"{path}\"\n"));
                for r in rights {
                    t.push_str(&format!("{r} = true\n"));
                }
            }
            t
        },
    )
}

fn query() -> impl Strategy<Value = (Op, &'static str)> {
    prop_oneof![
        prop::sample::select(FILES.to_vec()).prop_map(|f| (Op::Read, f)),
        prop::sample::select(FILES.to_vec()).prop_map(|f| (Op::Update, f)),
        prop::sample::select(FILES.to_vec()).prop_map(|f| (Op::Delete, f)),
        prop::sample::select(NEW.to_vec()).prop_map(|f| (Op::Create, f)),
    ]
}

fn fresh_tree(ws: &Path) {
    let _ = std::fs::remove_dir_all(ws);
    for d in DIRS {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    for f in FILES {
        std::fs::write(ws.join(f), "x").unwrap();
    }
}

/// What the IR grants for `op` on `path`.
fn ir_allows(ir: &Ir, op: Op, path: &str) -> bool {
    let a: Access = ir.access_at(path);
    match op {
        Op::Read => a.read,
        Op::Update => a.update,
        Op::Create => a.create,
        Op::Delete => a.delete,
    }
}

/// Labels of the grants that decide for `path` or sit above it, whose
/// precision line says the kernel cannot enforce them exactly.
fn excused(ir: &Ir, inexact: &[String], path: &str) -> Option<String> {
    let parent = Path::new(path)
        .parent()
        .and_then(|p| p.to_str())
        .unwrap_or("/");
    ir.fs
        .iter()
        .filter(|g| {
            path_within(path, &g.path) || path_within(parent, &g.path) || path_within(&g.path, path)
        })
        .map(|g| g.source.label())
        .find(|l| inexact.iter().any(|i| i == l))
}

pub fn run() -> u32 {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kernel-oracle");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let ws = dir.path().join("ws");
    let pol = dir.path().join("policy.toml");
    let me = std::env::current_exe().unwrap();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    // A handful per run (each query is a fresh `sbx run`); more by hand
    // with KERNEL_ORACLE_CASES=N.
    let n = std::env::var("KERNEL_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut runner = TestRunner::new(Config {
        cases: n,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (policy(), prop::collection::vec(query(), 5..=5));
    let cases = std::cell::Cell::new(0);
    runner
        .run(&strategy, |(text, queries)| {
            cases.set(cases.get() + 1);
            fresh_tree(&ws);
            std::fs::write(&pol, &text).unwrap();
            let opts = Options {
                workspace: Some(ws.to_str().unwrap().into()),
                home: Some(home.clone().into()),
                ..Options::default()
            };
            let inputs = Inputs::from_text("policy.toml", &text);
            let (policy, _) = load(&inputs, &opts).map_err(|f| {
                TestCaseError::fail(format!("{:?}", f.diagnostics))
            })?;
            let ir = lower_for(&policy, &opts, Os::Linux)
                .map_err(|f| TestCaseError::fail(format!("{:?}", f.diagnostics)))?
                .ir;
            let emitted = sbx::back::landlock::emit(&ir).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let inexact: Vec<String> = emitted
                .precision
                .iter()
                .filter(|p| p.status != Status::Exact)
                .map(|p| p.rule.clone())
                .collect();
            for (op, rel) in queries {
                fresh_tree(&ws);
                let path = ws.join(rel);
                let path = path.to_str().unwrap();
                let name = format!("{op:?}").to_lowercase();
                let out = Command::new(SBX)
                    .args(["run", pol.to_str().unwrap(), "--workspace", ws.to_str().unwrap()])
                    .args(["--home", &home, "--"])
                    .arg(&me)
                    .args(["--probe", &name, path])
                    .output()
                    .unwrap();
                let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
                prop_assert!(
                    out.status.success() && !said.is_empty(),
                    "sbx run failed: {:?}\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                let kernel = said == "OK";
                let canon = std::fs::canonicalize(ws.join(rel).parent().unwrap())
                    .unwrap()
                    .join(Path::new(rel).file_name().unwrap());
                let canon = canon.to_str().unwrap();
                let want = ir_allows(&ir, op, canon);
                if kernel != want {
                    prop_assert!(
                        excused(&ir, &inexact, canon).is_some(),
                        "{op:?} {rel}: kernel {said}, IR {}, and no precision line covers it\n{text}\nprecision: {:#?}",
                        if want { "allow" } else { "deny" },
                        emitted.precision
                    );
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    cases.get()
}
