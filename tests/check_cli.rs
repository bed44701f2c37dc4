//! `sbx check` end to end: every output format on fixtures, exit codes,
//! `--baseline`, `--portable`, `--allow`/`--deny`, `--explain CODE`.

// The snapshots are of Linux lowering (presets, paths).
#![cfg(target_os = "linux")]

mod common;
use common::Host;

fn check(h: &Host, policy: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["check", policy];
    args.extend_from_slice(extra);
    h.sbx(&args)
}

/// The SARIF with the catalogue and version replaced: those are tested
/// against the catalogue in sarif.rs, not frozen here.
fn sarif_for_snapshot(text: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    let driver = &mut v["runs"][0]["tool"]["driver"];
    driver["version"] = "[version]".into();
    driver["rules"] = format!("[{} rules]", driver["rules"].as_array().unwrap().len()).into();
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn every_format_on_the_lint_fixture() {
    let h = Host::new();
    let (code, out, err) = check(&h, "fixtures/lint.toml", &[]);
    assert_eq!(code, 0, "warnings alone pass:\n{err}");
    assert!(out.is_empty());
    snap!("check_lint_human", err);

    let (code, _, err) = check(&h, "fixtures/lint.toml", &["--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&err).unwrap();
    assert_eq!(v["errors"], 0);
    assert!(v["warnings"].as_u64().unwrap() >= 8);
    snap!("check_lint_json", err);

    let (code, out, err) = check(&h, "fixtures/lint.toml", &["--format", "sarif"]);
    assert_eq!(code, 0);
    assert!(err.is_empty(), "{err}");
    snap!("check_lint_sarif", sarif_for_snapshot(&out));

    let (code, out, _) = check(&h, "fixtures/lint.toml", &["--format", "github"]);
    assert_eq!(code, 0);
    assert!(out
        .lines()
        .all(|l| l.starts_with("::warning ") || l.starts_with("::notice ")));
    snap!("check_lint_github", out);
}

#[test]
fn each_lint_fires_on_the_lint_fixture() {
    let h = Host::new();
    let (_, _, err) = check(
        &h,
        "fixtures/lint.toml",
        &["--format", "json", "--portable"],
    );
    let v: serde_json::Value = serde_json::from_str(&err).unwrap();
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    for c in [
        "SBX020", "SBX022", "SBX023", "SBX024", "SBX025", "SBX026", "SBX027", "SBX033",
    ] {
        assert!(codes.contains(&c), "{c} missing from {codes:?}");
    }
    // Without --portable nothing is flagged as machine-specific, and
    // missing paths can be checked.
    let (_, _, err) = check(&h, "fixtures/lint.toml", &["--format", "json"]);
    assert!(!err.contains("SBX023"));
    assert!(err.contains("SBX015"));
}

#[test]
fn portable_human() {
    let h = Host::new();
    let (code, _, err) = check(&h, "fixtures/lint.toml", &["--portable"]);
    assert_eq!(code, 0);
    snap!("check_lint_portable_human", err);
}

#[test]
fn deny_warnings_allow_and_deny() {
    let h = Host::new();
    let (code, _, _) = check(&h, "fixtures/lint.toml", &["--deny-warnings"]);
    assert_eq!(code, 1);
    // Allowing every warning code of the fixture makes --deny-warnings pass.
    let allow: Vec<&str> = [
        "SBX015", "SBX020", "SBX021", "SBX024", "SBX025", "SBX026", "SBX027", "SBX029", "SBX033",
    ]
    .iter()
    .flat_map(|c| ["--allow", c])
    .collect();
    let mut args = vec!["--deny-warnings", "--format", "json"];
    args.extend(allow);
    let (code, _, err) = check(&h, "fixtures/lint.toml", &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("SBX022"), "notes stay: {err}");
    // --deny turns a note into an error.
    let (code, _, err) = check(
        &h,
        "fixtures/minimal.toml",
        &["--deny", "sbx022", "--format", "json"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("\"severity\": \"error\",\n      \"code\": \"SBX022\""),
        "{err}"
    );
    let (code, _, err) = check(&h, "fixtures/minimal.toml", &["--allow", "SBX999"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown diagnostic code"));
}

#[test]
fn human_output_of_every_fixture() {
    let h = Host::new();
    let mut all = String::new();
    for f in [
        "carve-outs",
        "default",
        "env-commands",
        "limits-extras",
        "minimal",
        "net-unrestricted",
        "network",
        "odd-paths",
        "presets",
        "required",
    ] {
        let (code, _, err) = check(&h, &format!("fixtures/{f}.toml"), &[]);
        all.push_str(&format!("=== {f}.toml: exit {code}\n{err}"));
    }
    let (code, _, err) = check(&h, "fixtures/rfd075.toml", &["--tool", "my_script"]);
    all.push_str(&format!(
        "=== rfd075.toml --tool my_script: exit {code}\n{err}"
    ));
    snap!("check_fixtures_human", all);
}

#[test]
fn baseline_widening_fails_with_one_error_each() {
    let h = Host::new();
    let (code, _, err) = check(
        &h,
        "fixtures/baseline/new.toml",
        &[
            "--baseline",
            "fixtures/baseline/old.toml",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&err).unwrap();
    let widenings: Vec<&serde_json::Value> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "SBX028")
        .collect();
    let text: Vec<&str> = widenings
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    for want in [
        "create, update, delete on [TMP]/ws ",
        "outbound TCP port 8080",
        "environment variable \"GITHUB_*\"",
        "arguments [\"publish\", \"**\"] to `cargo`",
        "command `sh`",
        "limits.cpu_time_s raised from 600 to 1200",
        "limits.wall_time_s removed",
    ] {
        assert!(
            text.iter().any(|t| t.contains(want)),
            "{want:?} not in {text:#?}"
        );
    }
    // Each names the responsible rule's line in the new policy.
    let port = widenings
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("8080"))
        .unwrap();
    assert_eq!(
        (port["file"].as_str(), port["line"].as_u64()),
        (Some("fixtures/baseline/new.toml"), Some(18))
    );
    let (_, _, human) = check(
        &h,
        "fixtures/baseline/new.toml",
        &["--baseline", "fixtures/baseline/old.toml"],
    );
    snap!("check_baseline_human", human);
}

#[test]
fn baseline_narrowing_and_identity_pass() {
    let h = Host::new();
    for p in [
        "fixtures/baseline/narrower.toml",
        "fixtures/baseline/old.toml",
    ] {
        let (code, _, err) = check(
            &h,
            p,
            &[
                "--baseline",
                "fixtures/baseline/old.toml",
                "--format",
                "json",
            ],
        );
        assert!(!err.contains("SBX028"), "{p}: {err}");
        let v: serde_json::Value = serde_json::from_str(&err).unwrap();
        assert_eq!(
            code,
            i32::from(v["errors"].as_u64().unwrap() > 0),
            "{p}: {err}"
        );
    }
    let (code, _, err) = check(
        &h,
        "fixtures/baseline/narrower.toml",
        &["--baseline", "fixtures/baseline/old.toml"],
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn invalid_policy_in_every_format() {
    let h = Host::new();
    std::fs::write(
        h.root.join("bad.toml"),
        "version = 2\n[[fs]]\npath = \"x\"\nreed = true\n",
    )
    .unwrap();
    let bad = h.root.join("bad.toml");
    let bad = bad.to_str().unwrap();
    let mut all = String::new();
    for f in ["human", "json", "sarif", "github"] {
        let (code, out, err) = check(&h, bad, &["--format", f]);
        assert_eq!(code, 1, "{f}");
        let text = if f == "sarif" {
            sarif_for_snapshot(&out)
        } else {
            format!("{out}{err}")
        };
        all.push_str(&format!("=== {f}\n{text}\n"));
    }
    snap!("check_invalid_all_formats", all);
    let (code, _, _) = check(&h, "no-such-file.toml", &[]);
    assert_eq!(code, 2);
}

#[test]
fn explain_code() {
    let h = Host::new();
    let (code, out, _) = h.sbx(&["check", "--explain", "SBX020"]);
    assert_eq!(code, 0);
    let info = sbx::diag::codes::lookup("SBX020").unwrap();
    assert!(out.starts_with("SBX020 (warning): directory grant holds a sensitive file\n"));
    assert!(out.contains(info.explanation));
    assert!(out.contains("    path = \".\""));
    snap!("check_explain_sbx020", out);
    let (code, _, err) = h.sbx(&["check", "--explain", "SBX999"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown diagnostic code"));
}

/// `compile` and `run` print `check`'s warnings about rules the target
/// drops or narrows (SBX015, SBX021); `run --quiet` prints none. A target
/// that keeps and expresses them (SBPL) gets none, nor does a carve-out
/// the linux target makes exact with namespaces.
#[test]
fn compile_and_run_warn_like_check_about_dropped_rules() {
    let h = Host::new();
    let p = h.root.join("p.toml");
    std::fs::write(
        &p,
        "[[fs]]\npath = \".\"\nread = true\nwrite = true\n\n[[fs]]\npath = \".git\"\nread = true\n\n[[fs]]\npath = \"nope\"\nread = true\n",
    )
    .unwrap();
    let p = p.to_str().unwrap();
    let codes = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|l| l.strip_prefix("warning["))
            .map(|l| l[..6].to_string())
            .collect()
    };
    let (code, _, checked) = check(&h, p, &[]);
    assert_eq!(code, 0, "{checked}");
    let want = ["SBX021", "SBX015", "SBX021"];
    for w in want {
        assert!(codes(&checked).contains(&w.to_string()), "{checked}");
    }
    // For linux, `sbx run`'s namespaces make the `.git` carve-out exact:
    // only the missing path is warned about.
    let want = ["SBX015", "SBX021"];
    let (code, _, compiled) = h.sbx(&["compile", p, "--target", "linux"]);
    assert_eq!(code, 0, "{compiled}");
    assert_eq!(codes(&compiled), want, "{compiled}");
    // The same diagnostics as check's (which name every target compiled,
    // here linux and landlockconfig): code, rule, location, help.
    let key = |block: &str| -> Vec<String> {
        block
            .lines()
            .filter(|l| l.contains("-->") || l.contains("help:") || l.starts_with("warning["))
            .map(|l| l.split(" and ").next().unwrap().to_string())
            .collect()
    };
    for block in compiled.split("\n\n") {
        assert!(
            checked.split("\n\n").any(|c| key(c) == key(block)),
            "{block}\n--- not in check's ---\n{checked}"
        );
    }
    let (_, _, mac) = h.sbx(&["compile", p, "--target", "macos"]);
    assert!(codes(&mac).is_empty(), "{mac}");
    let (_, _, ran) = h.sbx(&["run", p, "--", "sh"]);
    assert_eq!(codes(&ran), want, "{ran}");
    let (_, _, quiet) = h.sbx(&["run", "--quiet", p, "--", "sh"]);
    assert!(codes(&quiet).is_empty(), "{quiet}");
}

/// A policy of many rules on missing paths: `compile` and `run` show ten
/// warnings of a code and one line counting the rest; JSON and `check`
/// list every one.
#[test]
fn compile_and_run_show_ten_warnings_of_a_code_then_a_count() {
    let h = Host::new();
    let p = h.root.join("many.toml");
    let mut text = String::from("[[fs]]\npath = \".\"\nread = true\n");
    for i in 0..13 {
        text.push_str(&format!(
            "\n[[fs]]\npath = \"missing{i:02}\"\nread = true\n"
        ));
    }
    std::fs::write(&p, text).unwrap();
    let p = p.to_str().unwrap();
    let count = |s: &str| s.matches("warning[SBX015]").count();
    let (code, _, err) = h.sbx(&["compile", p, "--target", "linux"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(count(&err), 11, "{err}");
    assert!(err.contains("missing09 does not exist"), "{err}");
    assert!(!err.contains("missing10 does not exist"), "{err}");
    assert!(
        err.contains("3 more rules on paths that do not exist, not listed here"),
        "{err}"
    );
    let (_, _, ran) = h.sbx(&["run", p, "--", "true"]);
    assert_eq!(count(&ran), 11, "{ran}");
    let (_, _, json) = h.sbx(&[
        "compile",
        p,
        "--target",
        "linux",
        "--message-format",
        "json",
    ]);
    assert_eq!(json.matches("\"SBX015\"").count(), 13, "{json}");
    assert!(!json.contains("more rules on paths"), "{json}");
    let (_, _, checked) = check(&h, p, &[]);
    assert!(checked.contains("missing12 does not exist"), "{checked}");
}

/// SBX030 in every output format, and a lifted protection widens a
/// baseline that kept it (the protection is an ordinary rule of the IR).
#[test]
fn lifted_protection_in_every_format_and_against_a_baseline() {
    let h = Host::new();
    std::fs::create_dir_all(h.ws.join(".git/hooks")).unwrap();
    let base = "[[fs]]\npath = \".\"\nread = true\nwrite = true\n";
    let old = h.root.join("old.toml");
    let new = h.root.join("new.toml");
    std::fs::write(&old, base).unwrap();
    std::fs::write(
        &new,
        format!("{base}\n[[fs]]\npath = \".git/hooks\"\nread = true\nwrite = true\n"),
    )
    .unwrap();
    let new = new.to_str().unwrap();
    for (format, needle) in [
        ("human", "warning[SBX030]: fs[1] ([TMP]/new.toml:6:1) grants read, create, update, delete on .git/hooks"),
        ("json", "\"code\": \"SBX030\""),
        ("sarif", "\"ruleId\": \"SBX030\""),
        ("github", "::warning file=[TMP]/new.toml,line=6,col=1,title=SBX030::"),
    ] {
        let (code, out, err) = check(&h, new, &["--format", format]);
        assert_eq!(code, 0, "{err}");
        // SARIF and GitHub annotations are the report itself, on stdout.
        let text = if matches!(format, "sarif" | "github") {
            out
        } else {
            err
        };
        assert!(text.contains(needle), "{format}: {text}");
    }
    let (code, _, err) = check(&h, new, &["--baseline", old.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("widens the baseline: create, update, delete on [TMP]/ws/.git/hooks"),
        "{err}"
    );
}

/// SBX020 looks at what exists (issue #39): an ordinary directory grant
/// passes `--deny-warnings` until an `.env` appears below it, and a
/// rule naming `~/.ssh` stays flagged under `--allow SBX020` (SBX033).
#[test]
fn sensitive_file_warnings_follow_what_exists() {
    let h = Host::new();
    std::fs::remove_file(h.ws.join(".env")).unwrap();
    std::fs::create_dir_all(h.ws.join("src/deep")).unwrap();
    let p = h.ws.join("p.toml");
    std::fs::write(&p, "[[fs]]\npath = \"src\"\nread = true\nwrite = true\n").unwrap();
    let p = p.to_str().unwrap();
    let (code, _, err) = check(&h, p, &["--deny-warnings"]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(h.ws.join("src/deep/.env.local"), "TOKEN=x\n").unwrap();
    let (code, _, err) = check(&h, p, &["--deny-warnings"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("SBX020") && err.contains("src/deep/.env.local"),
        "{err}"
    );
    let (code, _, err) = check(&h, p, &["--deny-warnings", "--allow", "SBX020"]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(
        h.ws.join("q.toml"),
        "[[fs]]\npath = \"src\"\nread = true\n\n[[fs]]\npath = \"~/.ssh\"\nread = true\n",
    )
    .unwrap();
    let q = h.ws.join("q.toml");
    let (code, _, err) = check(
        &h,
        q.to_str().unwrap(),
        &["--deny-warnings", "--allow", "SBX020"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("SBX033") && err.contains("~/.ssh/"), "{err}");
}

/// `--each` checks each file on its own: one that fails is reported with
/// its name, a good one beside it says nothing, and the exit code is the
/// worst of them; with `--baseline` it is a usage error.
#[test]
fn each_file_on_its_own() {
    let h = Host::new();
    std::fs::write(h.ws.join("a.toml"), "version = 1\n").unwrap();
    std::fs::write(h.ws.join("b.toml"), "version = 1\n[fs]\npath = 3\n").unwrap();
    let a = h.ws.join("a.toml");
    let b = h.ws.join("b.toml");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, _, err) = h.sbx(&["check", "--each", a, b, "--format", "json"]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("b.toml") && !err.contains("a.toml"), "{err}");
    let (code, _, err) = h.sbx(&["check", "--each", a, "--deny-warnings"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = h.sbx(&["check", "--each", a, "--baseline", a]);
    assert_eq!(code, 2, "--each and --baseline together: {err}");
}
