//! `sbx explain` / `sbx::explain::explain`: every query kind, the deciding
//! rule, per-OS notes, and the nested-escape boundary of external rules.

#![cfg(unix)]

mod common;
use common::Host;
use sbx::compile::{self, Inputs};
use sbx::explain::{explain, Enforced, Explanation, FsOp, Query};
use sbx::ir::{Ir, Os};
use sbx::lint::origin::Origin;
use sbx::lower::Approval;

const POLICY: &str = r#"version = 1

[[fs]]
path = "."
read = true
write = true

[[fs]]
path = ".git"
read = true

[[fs]]
path = "scripts"
read = true
execute = true

[[net]]
host = "api.example.com"
scheme = "https"

[[net]]
host = "*.internal.example"
port = 8443
path_prefix = "/v1/"

[[net]]
host = "evil.example.com"
allow = false

[[env]]
name = "AWS_*"

[[env]]
name = "GIT_DIR"

[commands.git]
args = [["status"], ["diff", "**"]]
envs = ["GIT_*"]

[commands.cargo]
"#;

fn lower(h: &Host, text: &str, approvals: Vec<Approval>) -> (Ir, Vec<sbx::diag::Diagnostic>) {
    let inputs = Inputs::from_text("p.toml", text);
    let mut opts = h.compile_options();
    opts.approvals = approvals;
    let (policy, _) = compile::load(&inputs, &opts).unwrap();
    let mut lo = compile::lower_options(&opts, Os::host()).unwrap();
    lo.path_var = Some(h.bin.to_str().unwrap().into());
    let l = sbx::lower::lower(&policy, &lo).unwrap();
    (l.ir, l.diagnostics)
}

fn fs(ir: &Ir, op: FsOp, path: &str) -> Explanation {
    explain(
        ir,
        &Query::Fs {
            op,
            path: path.into(),
        },
    )
}

fn rule_index(ex: &Explanation) -> Option<usize> {
    match &ex.rule {
        Some(Origin::Fs {
            source: sbx::ir::Source::Rule { index, .. },
            ..
        }) => Some(*index),
        Some(Origin::Net { index, .. }) => Some(*index),
        _ => None,
    }
}

fn target(ex: &Explanation, t: &str) -> Enforced {
    ex.targets.iter().find(|n| n.target == t).unwrap().enforced
}

#[test]
fn filesystem_queries() {
    let h = Host::new();
    let (ir, _) = lower(&h, POLICY, vec![]);
    let ws = h.ws.to_str().unwrap();

    let ex = fs(&ir, FsOp::Read, ".git/config");
    assert!(ex.allowed);
    assert_eq!(rule_index(&ex), Some(1));
    assert_eq!(ex.request, format!("read {ws}/.git/config"));

    // The read-only carve-out: denied by the policy and by Seatbelt, and
    // on Linux by sbx run's read-only mount (Landlock's additive rights
    // alone would let the parent's write through).
    let ex = fs(&ir, FsOp::Write, ".git/config");
    assert!(!ex.allowed);
    assert_eq!(rule_index(&ex), Some(1));
    assert!(
        ex.reason.contains("grants read but not write"),
        "{}",
        ex.reason
    );
    assert_eq!(target(&ex, "linux"), Enforced::Exact);
    let linux = ex.targets.iter().find(|t| t.target == "linux").unwrap();
    assert!(
        linux.note.contains("read-only") && linux.note.contains("Landlock alone"),
        "{}",
        linux.note
    );
    assert_eq!(target(&ex, "macos"), Enforced::Exact);
    assert_eq!(target(&ex, "windows"), Enforced::Wider);

    let ex = fs(&ir, FsOp::Delete, ".git/HEAD");
    assert!(!ex.allowed);
    let ex = fs(&ir, FsOp::Create, "src/new.rs");
    assert!(ex.allowed);
    assert_eq!(rule_index(&ex), Some(0));
    assert_eq!(target(&ex, "linux"), Enforced::Exact);
    let ex = fs(&ir, FsOp::Delete, &format!("{ws}/src/old.rs"));
    assert!(ex.allowed, "absolute paths work too");

    let ex = fs(&ir, FsOp::Exec, "scripts/run.sh");
    assert!(ex.allowed);
    assert_eq!(rule_index(&ex), Some(2));
    let ex = fs(&ir, FsOp::Exec, "src/main.rs");
    assert!(!ex.allowed);
    assert_eq!(rule_index(&ex), Some(0));

    // Outside every rule: default deny, no rule.
    let ex = fs(&ir, FsOp::Read, "~/.ssh/id_ed25519");
    assert!(!ex.allowed);
    assert_eq!(ex.rule, None);
    assert!(ex.reason.contains("default-deny"));
    assert_eq!(target(&ex, "linux"), Enforced::Exact);

    // A symlink cannot dodge a rule: the resolved path decides.
    std::os::unix::fs::symlink(h.ws.join(".git"), h.ws.join("g")).unwrap();
    let ex = fs(&ir, FsOp::Write, "g/config");
    assert!(!ex.allowed);
    assert_eq!(rule_index(&ex), Some(1));
}

/// A rule naming this host's loopback with a port is forwarded inside
/// the namespace for every client (#36): exact under `sbx run`.
#[test]
fn loopback_forward_query() {
    let h = Host::new();
    let (ir, _) = lower(
        &h,
        "version = 1\n[[net]]\nhost = \"127.0.0.1\"\nport = 5432\n",
        vec![],
    );
    let ex = explain(&ir, &Query::connect("127.0.0.1:5432").unwrap());
    assert!(ex.allowed);
    assert_eq!(target(&ex, "linux"), Enforced::Exact);
    let linux = ex.targets.iter().find(|t| t.target == "linux").unwrap();
    // The artifact's own line for the rule (one truth, #39).
    assert!(
        linux
            .note
            .contains("forwarded by `sbx run` for every TCP client"),
        "{}",
        linux.note
    );
}

#[test]
fn network_queries() {
    let h = Host::new();
    let (ir, _) = lower(&h, POLICY, vec![]);
    let q = |u: &str| explain(&ir, &Query::connect(u).unwrap());

    let ex = q("https://api.example.com/v2/items");
    assert!(ex.allowed);
    assert_eq!(rule_index(&ex), Some(0));
    // `sbx run` checks the host for every TCP client (#37).
    assert_eq!(target(&ex, "linux"), Enforced::Exact);
    // The profile lets TCP reach only the proxy, which checks the host.
    assert_eq!(target(&ex, "macos"), Enforced::Exact);
    assert_eq!(target(&ex, "windows"), Enforced::Cooperative);

    // Deny rules come first, whatever the allow rules say.
    let ex = q("https://evil.example.com");
    assert!(!ex.allowed);
    assert_eq!(rule_index(&ex), Some(2));
    assert!(ex.reason.contains("deny rules are checked first"));

    let ex = q("https://a.internal.example:8443/v1/x");
    assert!(ex.allowed);
    assert_eq!(rule_index(&ex), Some(1));
    // Its path_prefix is seen in plain HTTP through the proxy only.
    assert_eq!(target(&ex, "linux"), Enforced::Wider);
    assert_eq!(target(&ex, "macos"), Enforced::Wider);
    // Outside the path prefix: denied cooperatively, yet the kernel sees
    // only the port, which is open.
    let ex = q("https://a.internal.example:8443/v2/x");
    assert!(!ex.allowed);
    assert_eq!(ex.rule, None);
    assert_eq!(target(&ex, "linux"), Enforced::Partial);
    assert!(ex.targets[0].note.contains("8443 is allowed"));

    let ex = q("http://api.example.com");
    assert!(!ex.allowed, "port 80 is not https's 443");
    assert_eq!(target(&ex, "linux"), Enforced::Exact);

    assert!(Query::connect("example.com").is_err(), "no port, no scheme");
    assert!(Query::connect("host:99999").is_err());
    assert_eq!(
        Query::connect("[::1]:8080").unwrap(),
        Query::Connect {
            scheme: None,
            host: "::1".into(),
            port: 8080,
            path: "/".into()
        }
    );
}

#[test]
fn env_and_command_queries() {
    let h = Host::new();
    let (ir, _) = lower(&h, POLICY, vec![]);
    let env = |name: &str, command: Option<&str>| {
        explain(
            &ir,
            &Query::Env {
                name: name.into(),
                command: command.map(String::from),
            },
        )
    };
    let ex = env("AWS_REGION", None);
    assert!(ex.allowed);
    assert_eq!(
        ex.rule,
        Some(Origin::Env {
            pattern: "AWS_*".into()
        })
    );
    assert_eq!(target(&ex, "linux"), Enforced::Exact);
    let ex = env("LC_ALL", None);
    assert_eq!((ex.allowed, ex.rule), (true, Some(Origin::MinimalEnv)));
    assert!(!env("SECRET", None).allowed);
    // For a command: the policy must forward it and the command list it.
    let ex = env("GIT_DIR", Some("git"));
    assert!(ex.allowed);
    assert_eq!(ex.rule, Some(Origin::Command { name: "git".into() }));
    assert_eq!(target(&ex, "linux"), Enforced::Cooperative);
    let ex = env("AWS_REGION", Some("git"));
    assert!(!ex.allowed);
    assert!(ex.reason.contains("does not list it"), "{}", ex.reason);
    assert!(
        !env("GIT_WORK_TREE", Some("git")).allowed,
        "git lists it, the policy does not forward it"
    );
    assert!(env("PATH", Some("cargo")).allowed);
    assert!(!env("AWS_REGION", Some("rm")).allowed);

    let cmd = |argv: &[&str]| {
        explain(
            &ir,
            &Query::Command {
                argv: argv.iter().map(|s| s.to_string()).collect(),
            },
        )
    };
    let ex = cmd(&["git", "status"]);
    assert!(ex.allowed);
    assert_eq!(ex.rule, Some(Origin::Command { name: "git".into() }));
    assert_eq!(target(&ex, "linux"), Enforced::Partial);
    assert_eq!(target(&ex, "windows"), Enforced::Cooperative);
    assert!(cmd(&["git", "diff", "--stat", "HEAD"]).allowed);
    assert!(
        !cmd(&["git", "status", "-s"]).allowed,
        "a prefix without ** is exact"
    );
    let ex = cmd(&["git", "push"]);
    assert!(!ex.allowed);
    assert!(ex.reason.contains("match none of its prefixes"));
    assert!(
        cmd(&["cargo", "publish"]).allowed,
        "no args list: any arguments"
    );
    let git = h.bin.join("git");
    assert!(cmd(&[git.to_str().unwrap(), "status"]).allowed);
    assert!(
        !cmd(&["/elsewhere/git", "status"]).allowed,
        "a path must be the resolved executable"
    );
    let ex = cmd(&["rm", "-rf", "/"]);
    assert!(!ex.allowed);
    assert_eq!(ex.rule, None);
    assert!(ex.reason.contains("not in [commands]"));

    // Without [commands], anything may run.
    let (open, _) = lower(&h, "[[fs]]\npath = \".\"\nread = true\n", vec![]);
    let ex = explain(
        &open,
        &Query::Command {
            argv: vec!["rm".into()],
        },
    );
    assert_eq!((ex.allowed, ex.rule), (true, Some(Origin::NoCommands)));
}

/// ws/ext → outside/target (approved); outside/target/escape → outside/secret.
fn external_host() -> (Host, String, String) {
    let h = Host::new();
    let target = h.root.join("outside/target");
    let secret = h.root.join("outside/secret");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(target.join("data.txt"), "x").unwrap();
    std::fs::write(secret.join("key"), "k").unwrap();
    std::os::unix::fs::symlink(&target, h.ws.join("ext")).unwrap();
    std::os::unix::fs::symlink(&secret, target.join("escape")).unwrap();
    let t = target.to_str().unwrap().to_string();
    let ws = h.ws.to_str().unwrap().to_string();
    (h, ws, t)
}

const EXTERNAL: &str = "[[fs]]\npath = \".\"\nread = true\n\n[[fs]]\npath = \"ext\"\nread = true\nwrite = true\nexternal = true\n";

#[test]
fn external_rule_and_nested_escape() {
    let (h, ws, target) = external_host();
    let approved = vec![Approval {
        workspace: ws.clone(),
        rule_path: "ext".into(),
        canonical_target: target.clone(),
    }];
    let (ir, diags) = lower(&h, EXTERNAL, approved);
    assert!(diags.is_empty(), "{diags:?}");

    let ex = fs(&ir, FsOp::Write, "ext/data.txt");
    assert!(ex.allowed, "{ex:?}");
    assert_eq!(rule_index(&ex), Some(1));
    let b = ex.boundary.unwrap();
    assert!(b.inside);
    assert_eq!(b.canonical_target, target);
    assert_eq!(b.resolved, format!("{target}/data.txt"));

    // A symlink inside the approved target that points elsewhere: denied.
    let ex = fs(&ir, FsOp::Read, "ext/escape/key");
    assert!(!ex.allowed);
    assert_eq!(rule_index(&ex), Some(1));
    assert!(
        ex.reason.contains("nested-escape boundary"),
        "{}",
        ex.reason
    );
    let b = ex.boundary.unwrap();
    assert!(!b.inside);
    assert!(b.resolved.ends_with("/outside/secret/key"));

    // Not approved, or approved for another target: the rule is dropped
    // (SBX016) and nothing reaches the target.
    for approvals in [
        vec![],
        vec![Approval {
            workspace: ws.clone(),
            rule_path: "ext".into(),
            canonical_target: format!("{target}-old"),
        }],
    ] {
        let retargeted = !approvals.is_empty();
        let (ir, diags) = lower(&h, EXTERNAL, approvals);
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].code, "SBX016");
        assert_eq!(diags[0].message.contains("retargeted"), retargeted);
        let ex = fs(&ir, FsOp::Read, "ext/data.txt");
        assert!(!ex.allowed);
        assert_eq!(ex.rule, None);
    }
}

#[test]
fn cli_exit_codes_and_output() {
    let (h, ws, target) = external_host();
    std::fs::write(h.root.join("p.toml"), POLICY).unwrap();
    std::fs::write(h.root.join("ext.toml"), EXTERNAL).unwrap();
    let store = serde_json::json!({"mounts": [{
        "workspace": ws, "rule_path": "ext", "canonical_target": target, "approved_at": 0
    }]});
    std::fs::write(h.root.join("approvals.json"), store.to_string()).unwrap();
    let p = h.root.join("p.toml");
    let p = p.to_str().unwrap();
    let e = h.root.join("ext.toml");
    let e = e.to_str().unwrap();

    let mut all = String::new();
    for (policy, q) in [
        (p, vec!["--read", ".git/config"]),
        (p, vec!["--write", ".git/config"]),
        (p, vec!["--create", "src/new.rs"]),
        (p, vec!["--delete", ".git/HEAD"]),
        (p, vec!["--exec", "scripts/run.sh"]),
        (p, vec!["--connect", "https://api.example.com/v1"]),
        (p, vec!["--connect", "https://evil.example.com"]),
        (p, vec!["--env", "AWS_REGION"]),
        (p, vec!["--env", "AWS_REGION", "--command", "--", "git"]),
        (p, vec!["--command", "--", "git", "status"]),
        (p, vec!["--command", "--", "git", "push", "--force"]),
        (e, vec!["--read", "ext/data.txt"]),
        (e, vec!["--read", "ext/escape/key"]),
    ] {
        let mut args = vec!["explain", policy];
        args.extend(q.iter());
        let (code, out, err) = h.sbx(&args);
        assert_eq!(
            code,
            if out.starts_with("allow:") { 0 } else { 1 },
            "{q:?}: {out}{err}"
        );
        assert!(err.is_empty(), "{q:?}: {err}");
        all.push_str(&format!(
            "$ sbx explain {} {}\nexit {code}\n{out}\n",
            if policy == p { "p.toml" } else { "ext.toml" },
            q.join(" ")
        ));
    }
    snap!("explain_cli_human", all);

    let (code, out, _) = h.sbx(&["explain", p, "--write", ".git/config", "--format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["allowed"], false);
    assert_eq!(v["rule"]["source"]["index"], 1);
    assert_eq!(v["location"]["line"], 8);
    snap!("explain_cli_json", out);

    // Usage errors: no question, two questions, a bad URL.
    for bad in [
        vec!["explain", p],
        vec!["explain", p, "--read", "a", "--exec", "b"],
        vec!["explain", p, "--connect", "example.com"],
        vec!["explain", p, "--command"],
    ] {
        let (code, _, err) = h.sbx(&bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}

/// POLICY.md §7a and §7: a protection and a hidden sensitive path are the
/// deciding rules `explain` names, with what each target enforces.
#[test]
fn protections_decide_and_are_named() {
    let h = Host::new();
    std::fs::create_dir_all(h.ws.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(h.home.join(".ssh")).unwrap();
    let policy =
        "[[fs]]\npath = \".\"\nread = true\nwrite = true\n\n[[fs]]\npath = \"~\"\nread = true\n";
    let (ir, _) = lower(&h, policy, vec![]);
    let ex = fs(&ir, FsOp::Write, ".git/hooks/pre-commit");
    assert!(!ex.allowed);
    let Some(Origin::Fs { source, .. }) = &ex.rule else {
        panic!("{:?}", ex.rule)
    };
    assert_eq!(source.label(), "protected .git/hooks");
    assert_eq!(target(&ex, "macos"), Enforced::Exact);
    // A read-only bind mount in sbx run's mount namespace.
    assert_eq!(target(&ex, "linux"), Enforced::Exact);
    // The rest of .git stays writable.
    let ex = fs(&ir, FsOp::Create, ".git/objects/ab");
    assert!(ex.allowed);
    assert_eq!(rule_index(&ex), Some(0));

    let ex = fs(&ir, FsOp::Read, "~/.ssh/id_ed25519");
    assert!(!ex.allowed);
    let Some(Origin::Fs { source, .. }) = &ex.rule else {
        panic!("{:?}", ex.rule)
    };
    assert_eq!(
        source.label(),
        "sensitive ~/.ssh/, covered by fs[1] (p.toml:6:1)"
    );
    assert!(fs(&ir, FsOp::Read, "~/notes.txt").allowed);
}

/// One truth (#39): for every fixture, what `explain` says each target
/// enforces of the `[[net]]` rule that decides a connection is the
/// status of that rule's line in the target's artifact (no line: the
/// rule names no host or path, and its port is enforced exactly).
#[test]
fn explain_agrees_with_the_artifacts() {
    use sbx::compile::Target;
    use sbx::lint::enforce::from_status;
    let mut compared = 0;
    for case in common::fixture_cases() {
        let mut sources = Vec::new();
        for f in &case.files {
            let path = camino::Utf8PathBuf::from_path_buf(common::root().join(f)).unwrap();
            sources.push(sbx::policy::read_file(&path).unwrap());
        }
        let inputs = Inputs { sources };
        let opts = sbx::Options {
            tool: case.tool.clone(),
            portable: true,
            ..Default::default()
        };
        let (policy, _) = compile::load(&inputs, &opts)
            .unwrap_or_else(|f| panic!("{}: {:?}", case.name, f.diagnostics));
        for (os, artifact, name) in [
            (Os::Linux, Target::Linux, "linux"),
            (Os::Macos, Target::Macos, "macos"),
        ] {
            let ir = compile::lower_for(&policy, &opts, os)
                .unwrap_or_else(|f| panic!("{}: {:?}", case.name, f.diagnostics))
                .ir;
            let lines = compile::emit(&ir, artifact).unwrap().precision;
            for r in ir.net.rules.iter().filter(|r| !r.bind) {
                let host = match r.host.as_str() {
                    "*" => "example.org".to_string(),
                    h => h.replace("*.", "a."),
                };
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host
                };
                let path = r.path_prefix.clone().unwrap_or_else(|| "/".into());
                let url = match (&r.scheme, r.port) {
                    (Some(s), Some(p)) => format!("{s}://{host}:{p}{path}"),
                    (Some(s), None) => format!("{s}://{host}{path}"),
                    (None, p) => format!("{host}:{}{path}", p.unwrap_or(443)),
                };
                let Ok(q) = Query::connect(&url) else {
                    continue; // a scheme with no known port, and no port
                };
                let ex = explain(&ir, &q);
                let Some(Origin::Net { index, .. }) = &ex.rule else {
                    panic!("{}: {url} is decided by no rule: {ex:?}", case.name);
                };
                let label = format!("net[{index}]");
                let want = lines
                    .iter()
                    .find(|p| p.rule == label)
                    .map_or(Enforced::Exact, |p| from_status(p.status));
                assert_eq!(
                    target(&ex, name),
                    want,
                    "{}: {name}, {url} ({label}): explain says {:?}",
                    case.name,
                    ex.targets
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 10, "only {compared} rules compared");
}
