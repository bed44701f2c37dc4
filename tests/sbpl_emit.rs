//! The macOS profile's text: snapshots of every fixture (portable, so
//! machine-independent), escaping of hostile names, refusals, the network
//! mapping and the precision report.

mod common;

use sbx::back::sbpl::{emit, emit_with, Meta, Options as EmitOptions};
use sbx::compile::{compile, load, lower_for, Inputs, Options, Target};
use sbx::ir::{Access, Grant, Ir, Os, PathKind, Source, Status};
use sbx::sbpl::{check, parse, Connect, Datum, DatumKind, FileOp, Profile};
use std::collections::BTreeMap;

fn inputs(files: &[&str]) -> Inputs {
    let paths: Vec<camino::Utf8PathBuf> = files.iter().map(|f| (*f).into()).collect();
    Inputs::read(&paths).unwrap_or_else(|f| panic!("{:?}", f.diagnostics))
}

fn lower(inputs: &Inputs, tool: Option<&str>, portable: bool) -> Ir {
    let opts = Options {
        workspace: Some("/private/tmp/sbx-emit-ws".into()),
        home: Some("/Users/sbx-emit".into()),
        tool: tool.map(String::from),
        portable,
        approvals: Vec::new(),
        jobs: 0,
    };
    let (policy, _) = load(inputs, &opts).unwrap_or_else(|f| panic!("{:?}", f.diagnostics));
    lower_for(&policy, &opts, Os::Macos)
        .unwrap_or_else(|f| panic!("{:?}", f.diagnostics))
        .ir
}

fn text_of(toml: &str, portable: bool) -> (Ir, String) {
    let ir = lower(&Inputs::from_text("policy.toml", toml), None, portable);
    let text = emit(&ir).unwrap_or_else(|e| panic!("{e}")).text;
    (ir, text)
}

#[test]
fn sbpl_snapshots_of_every_fixture() {
    for common::Case { name, files, tool } in common::fixture_cases() {
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let ir = lower(&inputs(&files), tool.as_deref(), true);
        let text = emit(&ir).unwrap_or_else(|e| panic!("{name}: {e}")).text;
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("sbpl__{name}"), text);
        });
    }
}

#[test]
fn sbpl_output_is_deterministic() {
    let ir = lower(&inputs(&["fixtures/carve-outs.toml"]), None, false);
    assert_eq!(emit(&ir).unwrap().text, emit(&ir).unwrap().text);
}

/// Top-level forms with every string replaced by `S`: the shape of a
/// profile, independent of the names in it.
fn shape(d: &Datum) -> String {
    match &d.kind {
        DatumKind::List(items) => format!(
            "({})",
            items.iter().map(shape).collect::<Vec<_>>().join(" ")
        ),
        DatumKind::Str(_) | DatumKind::Regex(_) => "S".into(),
        DatumKind::Symbol(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

fn shapes(text: &str) -> Vec<String> {
    parse(text).unwrap().iter().map(shape).collect()
}

/// Names that mean something to SBPL, TOML or the sandbox compiler.
const HOSTILE: &[&str] = &[
    r#"dir with "quotes""#,
    r"back\slash",
    r#"paren) (allow file-write* (subpath "/"))"#,
    "semi;colon #| not a comment",
    r#"")) (allow default) (""#,
    r#"\"))(allow default)(literal "\"#,
    "ünïcödé/日本",
    "tab-free #\"regex\"",
    "'quote `back ,comma",
];

#[test]
fn sbpl_hostile_names_change_strings_only() {
    let policy = |names: &[String]| {
        let mut t = String::from("version = 1\n[[fs]]\npath = \".\"\nread = true\nwrite = true\n");
        for n in names {
            t.push_str(&format!(
                "[[fs]]\npath = {}\nread = true\n",
                toml::Value::String(n.clone())
            ));
        }
        t
    };
    let hostile: Vec<String> = HOSTILE.iter().map(|s| s.to_string()).collect();
    // Same nesting, plain names, same sort order of depth, and on the
    // same side of the protected names (`.git/hooks`, ...), whose rules
    // in a row are one.
    let plain: Vec<String> = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let depth = s.matches('/').count();
            let side = if s.as_bytes()[0] < b'.' { "-" } else { "" };
            let mut p = format!("{side}plain{i:02}");
            for _ in 0..depth {
                p.push_str("/x");
            }
            p
        })
        .collect();
    for portable in [false, true] {
        let (ir, text) = text_of(&policy(&hostile), portable);
        let (_, plain_text) = text_of(&policy(&plain), portable);
        assert_eq!(shapes(&text), shapes(&plain_text), "{text}");
        assert!(check(&parse(&text).unwrap()).is_empty());
        // Every hostile name comes back as exactly one path string.
        let data = parse(&text).unwrap();
        let mut strings = Vec::new();
        fn collect(d: &Datum, out: &mut Vec<String>) {
            match &d.kind {
                DatumKind::List(items) => items.iter().for_each(|i| collect(i, out)),
                DatumKind::Str(s) => out.push(s.clone()),
                _ => {}
            }
        }
        data.iter().for_each(|d| collect(d, &mut strings));
        for g in ir
            .fs
            .iter()
            .filter(|g| matches!(g.source, Source::Rule { .. }))
        {
            let rest = g.path.trim_start_matches("${WORKSPACE}");
            assert!(
                strings.iter().any(|s| s.ends_with(rest)),
                "{} not found in {strings:?}",
                g.path
            );
        }
        // Nothing but the baseline's and the rules' allow forms.
        for d in &data {
            if d.head() == Some("allow") {
                assert_ne!(d.as_list().unwrap()[1].as_symbol(), Some("default"));
            }
        }
    }
}

#[test]
fn sbpl_dollar_brace_is_never_a_variable() {
    // The sandbox compiler expands ${NAME} inside strings: such names are
    // matched by a quoted regex instead. Policies may not write `${` (the
    // front end refuses it), but a workspace directory may be named so.
    let (mut ir, _) = text_of("version = 1\n[[fs]]\npath = \".\"\nread = true\n", false);
    let dir = format!("{}/${{HOME}}/x", ir.roots.workspace);
    ir.fs.push(grant(&dir, Access::READ_WRITE));
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    let text = emit(&ir).unwrap_or_else(|e| panic!("{e}")).text;
    let ws = &ir.roots.workspace;
    assert!(text.contains(r"/\\$\\{HOME\\}/x(/|$)"), "{text}");
    for line in text.lines().filter(|l| !l.trim_start().starts_with(';')) {
        assert!(!line.contains("${"), "{line}");
    }
    let p = Profile::from_source(&text, &BTreeMap::new()).unwrap();
    assert!(p
        .decide(FileOp::Write, &format!("{ws}/${{HOME}}/x/f"))
        .is_allow());
    assert!(!p
        .decide(FileOp::Write, &format!("{ws}/${{HOME}}/xy"))
        .is_allow());
    assert!(!p.decide(FileOp::Write, "/Users/sbx-emit/x").is_allow());
}

fn grant(path: &str, access: Access) -> Grant {
    Grant {
        path: path.into(),
        access,
        kind: PathKind::Dir,
        source: Source::Rule {
            index: 3,
            file: "p.toml".into(),
            line: 9,
            column: 1,
        },
        aliases: vec![],
        external: None,
    }
}

fn ir_with(grants: Vec<Grant>) -> Ir {
    let mut ir = lower(
        &Inputs::from_text(
            "p.toml",
            "version = 1\n[process]\npresets = []\n[[fs]]\npath = \".\"\nread = true\n",
        ),
        None,
        false,
    );
    ir.fs = grants;
    ir
}

#[test]
fn sbpl_unrepresentable_paths_are_errors_naming_the_rule() {
    for bad in [
        "/a\0b",
        "/a\nb",
        "/a\u{1b}b",
        &format!("/{}", "x".repeat(1100)),
    ] {
        let err = emit(&ir_with(vec![grant(bad, Access::READ)])).unwrap_err();
        assert_eq!(err.rule, "fs[3] (p.toml:9:1)", "{bad:?}");
    }
    let err = emit(&ir_with(vec![grant("relative", Access::READ)])).unwrap_err();
    assert!(err.message.contains("neither absolute"), "{err}");
    let mut ir = ir_with(vec![]);
    ir.macos.mach_lookup = vec!["com.example.ok".into(), "com.x\"\n".into()];
    assert_eq!(emit(&ir).unwrap_err().rule, "macos.mach_lookup[1]");
    ir.macos.mach_lookup = vec!["${HOME}".into()];
    assert_eq!(emit(&ir).unwrap_err().rule, "macos.mach_lookup[0]");
    let err = emit_with(
        &ir_with(vec![]),
        &EmitOptions {
            program: vec!["/bin/x\ny".into()],
        },
    )
    .unwrap_err();
    assert_eq!(err.rule, "sandboxed program");
}

#[test]
fn sbpl_files_are_literals_directories_subpaths() {
    let mut f = grant("/etc/hosts", Access::READ);
    f.kind = PathKind::File;
    let text = emit(&ir_with(vec![f, grant("/srv", Access::READ)]))
        .unwrap()
        .text;
    assert!(
        text.contains("(allow file-read* file-test-existence\n  (literal \"/etc/hosts\"))"),
        "{text}"
    );
    assert!(
        text.contains("(allow file-read* file-test-existence\n  (subpath \"/srv\"))"),
        "{text}"
    );
    let p = Profile::from_source(&text, &BTreeMap::new()).unwrap();
    assert!(p.decide(FileOp::Read, "/etc/hosts").is_allow());
    assert!(!p.decide(FileOp::Read, "/etc/hosts/x").is_allow());
}

/// `/w/.vscode` as lowering protects it under a writable `/w`.
fn protected_vscode() -> Grant {
    Grant {
        source: Source::Protected {
            entry: ".vscode".into(),
        },
        ..grant("/w/.vscode", Access::READ)
    }
}

/// A read-only rule under a writable one leaves its reads to the
/// writable rule's allow only where that rule lies above every spelling
/// of it: here the resolved path of `/w/link/sub` lies under no grant.
#[test]
fn sbpl_a_read_only_rule_allows_itself_where_a_spelling_has_no_grant_above() {
    let mut sub = grant("/other/sub", Access::READ);
    sub.aliases = vec!["/w/link/sub".into()];
    let vscode = protected_vscode();
    let text = emit(&ir_with(vec![grant("/w", Access::READ_WRITE), vscode]))
        .unwrap()
        .text;
    // The protection's reads are the workspace's: only its deny is written.
    assert!(
        !text.contains("(allow file-read* file-test-existence\n  (subpath \"/w/.vscode\"))"),
        "{text}"
    );
    let mut ir = ir_with(vec![grant("/w", Access::READ_WRITE), sub]);
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    let text = emit(&ir).unwrap().text;
    let p = Profile::from_source(&text, &BTreeMap::new()).unwrap();
    for path in ["/other/sub/f", "/w/link/sub/f"] {
        assert!(p.decide(FileOp::Read, path).is_allow(), "{path}\n{text}");
        assert!(!p.decide(FileOp::Write, path).is_allow(), "{path}\n{text}");
    }
    assert!(p.decide(FileOp::Write, "/w/f").is_allow(), "{text}");
}

/// Where two grants share a spelling (one's alias is another's path), a
/// rule other than the nearest grant's may match below it: every grant
/// then keeps its allow. Here the denied `/x`, also spelled `/w`, comes
/// after the workspace's allow; the protection's own allow keeps its reads.
#[test]
fn sbpl_a_shared_spelling_keeps_every_allow() {
    let mut x = grant("/x", Access::NONE);
    x.aliases = vec!["/w".into()];
    let vscode = protected_vscode();
    let ir = ir_with(vec![
        grant("/", Access::READ),
        grant("/w", Access::READ_WRITE),
        vscode,
        x,
    ]);
    let text = emit(&ir).unwrap().text;
    let p = Profile::from_source(&text, &BTreeMap::new()).unwrap();
    assert!(
        p.decide(FileOp::Read, "/w/.vscode/settings.json")
            .is_allow(),
        "{text}"
    );
    assert!(
        !p.decide(FileOp::Write, "/w/.vscode/settings.json")
            .is_allow(),
        "{text}"
    );
}

#[test]
fn sbpl_partial_write_rights_use_the_write_sub_operations() {
    let create_only = Access {
        read: true,
        create: true,
        ..Access::NONE
    };
    let text = emit(&ir_with(vec![
        grant("/w", Access::READ_WRITE),
        grant("/w/log", create_only),
    ]))
    .unwrap()
    .text;
    let p = Profile::from_source(&text, &BTreeMap::new()).unwrap();
    assert!(p.decide(FileOp::WriteCreate, "/w/log/new").is_allow());
    assert!(p.decide(FileOp::Write, "/w/log/new").is_deny());
    assert!(p.decide(FileOp::WriteUnlink, "/w/log/old").is_deny());
    assert!(p.decide(FileOp::WriteUnlink, "/w/other").is_allow());
}

#[test]
fn sbpl_network_mapping() {
    let (_, ports) = text_of(
        "version = 1\n[[net]]\nport = 443\n[[net]]\nhost = \"localhost\"\nport = 8080\n",
        true,
    );
    assert!(
        ports.contains(
            "(allow network-outbound\n  (remote tcp \"*:443\")\n  (remote tcp \"localhost:8080\"))"
        ),
        "{ports}"
    );
    assert!(!ports.contains("PROXY"), "no host rule, no proxy");

    let (_, none) = text_of("version = 1\n", true);
    assert!(none.contains("(deny network*)"));
    assert!(!none.contains("trustd"));
    // Unrestricted network stays direct, its host deny rules cooperative.
    let (_, all) = text_of(
        "version = 1\n[[net]]\nhost = \"*\"\n[[net]]\nport = 25\nallow = false\n\
         [[net]]\nhost = \"evil.test\"\nallow = false\n",
        true,
    );
    assert!(all.contains("(allow network*)"), "{all}");
    assert!(
        all.contains("(deny network-outbound\n  (remote tcp \"*:25\"))"),
        "{all}"
    );
    assert!(!all.contains("PROXY"), "{all}");
    let (_, local) = text_of(
        "version = 1\n[[net]]\nhost = \"localhost\"\n[[net]]\nhost = \"*\"\nport = 443\n",
        true,
    );
    assert!(
        local.contains("(remote tcp \"localhost:*\")\n  (remote tcp \"*:443\"))"),
        "{local}"
    );
    // Loopback addresses are Seatbelt's `localhost`, directly, without a
    // proxy: a little wider than the address.
    let (ir, lo) = text_of(
        "version = 1\n[[net]]\nhost = \"127.0.0.1\"\nport = 5432\n[[net]]\nhost = \"::1\"\nport = 6379\n",
        true,
    );
    assert!(
        lo.contains("(remote tcp \"localhost:5432\")\n  (remote tcp \"localhost:6379\"))"),
        "{lo}"
    );
    assert!(!lo.contains("PROXY") && !lo.contains("\"*:5432\""), "{lo}");
    let out = emit(&ir).unwrap();
    assert!(out
        .precision
        .iter()
        .filter(|p| p.rule.starts_with("net["))
        .all(|p| p.status == Status::Wider && p.reason.contains("localhost:")));
}

/// A policy with host rules: outbound TCP only to the proxy's ports on
/// localhost, read from parameters, and to the loopback port the policy
/// names; no direct port rule, no resolver.
#[test]
fn sbpl_host_rules_reach_only_the_proxy() {
    let ir = lower(&inputs(&["fixtures/network.toml"]), None, true);
    let out = emit(&ir).unwrap();
    let t = &out.text;
    for want in [
        "(allow network-outbound\n  (remote tcp \"localhost:8080\"))",
        "(allow network-outbound\n  (remote tcp (string-append \"localhost:\" (param \"PROXY_HTTP_PORT\")))\n  \
         (remote tcp (string-append \"localhost:\" (param \"PROXY_SOCKS_PORT\"))))",
        "(allow network-bind network-inbound\n  (local tcp \"*:9000\"))",
        "(global-name \"com.apple.trustd.agent\")",
        "-D PROXY_HTTP_PORT=… -D PROXY_SOCKS_PORT=… -- COMMAND",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    for gone in ["\"*:22\"", "\"*:443\"", "*:8443", "dnssd", "mDNSResponder"] {
        assert!(!t.contains(gone), "{gone}\n{t}");
    }
    let meta = Meta::read(t).unwrap().unwrap();
    assert_eq!(
        meta.params,
        [
            "HOME",
            "WORKSPACE",
            "TMPDIR",
            "PROXY_HTTP_PORT",
            "PROXY_SOCKS_PORT"
        ]
    );
    let spec = meta.proxy.expect("the proxy's rules");
    let indexes: Vec<usize> = spec.rules.iter().map(|r| r.index).collect();
    assert_eq!(indexes, [0, 1, 2, 3, 5], "every outbound rule, deny too");

    let mut params: BTreeMap<String, String> = [
        ("HOME", "/Users/sbx-emit"),
        ("WORKSPACE", "/Users/sbx-emit/ws"),
        ("TMPDIR", "/private/var/folders/x/T"),
        ("PROXY_HTTP_PORT", "50001"),
        ("PROXY_SOCKS_PORT", "50002"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let p = Profile::from_source(t, &params).unwrap();
    let connect = |localhost, port| p.decide_connect(Connect { localhost, port });
    for port in [50001, 50002, 8080] {
        assert!(connect(true, port).is_allow(), "localhost:{port}");
    }
    for (localhost, port) in [
        (false, 50001),
        (false, 443),
        (false, 22),
        (false, 8080),
        (false, 8443),
        (true, 443),
        (true, 8443),
        (true, 9000),
        (true, 50003),
    ] {
        assert!(connect(localhost, port).is_deny(), "{localhost} {port}");
    }
    // Fails closed without the ports: the profile does not compile.
    params.remove("PROXY_SOCKS_PORT");
    let e = Profile::from_source(t, &params).unwrap_err();
    assert!(
        e.message.contains("\"PROXY_SOCKS_PORT\" is not defined"),
        "{e}"
    );

    let status = |rule: &str| {
        out.precision
            .iter()
            .find(|p| p.rule == rule && p.target == "macos")
            .map(|p| (p.status, p.reason.as_str()))
            .unwrap()
    };
    assert_eq!(
        status("net[0]"),
        (Status::Exact, "remote tcp localhost:8080")
    );
    for rule in ["net[1]", "net[2]"] {
        let (s, why) = status(rule);
        assert_eq!(s, Status::Exact);
        assert!(why.contains("for proxy-aware clients"), "{why}");
    }
    let (s, why) = status("net[3]");
    assert_eq!(s, Status::Wider, "path_prefix in tunnels");
    assert!(why.contains("plain-HTTP"), "{why}");
    assert_eq!(status("net[5]").0, Status::Exact);
    assert!(t.contains(";; exact       net[1] [macos]: host \"*.crates.io\" enforced by `sbx run`'s proxy for proxy-aware clients"));

    // A port rule beside a host rule goes through the proxy too.
    let (ir, both) = text_of(
        "version = 1\n[[net]]\nport = 443\n[[net]]\nhost = \"github.com\"\nscheme = \"ssh\"\n",
        true,
    );
    assert!(
        both.contains("PROXY_HTTP_PORT") && !both.contains("\"*:443\""),
        "{both}"
    );
    let line = emit(&ir)
        .unwrap()
        .precision
        .into_iter()
        .find(|p| p.rule == "net[0]")
        .unwrap();
    assert_eq!(line.status, Status::Exact);
    assert!(line
        .reason
        .starts_with("port 443, any host, enforced by `sbx run`'s proxy"));
}

#[test]
fn sbpl_baseline_switches() {
    let (_, plain) = text_of("version = 1\n", true);
    assert!(!plain.contains("pseudo-tty"));
    assert!(!plain.contains("/dev/ptmx"));
    let (_, pty) = text_of(
        "version = 1\n[macos]\nallow_pty = true\nmach_lookup = [\"com.example.svc\"]\n",
        true,
    );
    assert!(pty.contains("(allow pseudo-tty)"));
    assert!(pty.contains("(literal \"/dev/ptmx\")"));
    assert!(
        pty.contains("(allow mach-lookup\n  (global-name \"com.example.svc\"))"),
        "{pty}"
    );
}

#[test]
fn sbpl_commands_limit_exec_and_name_the_program() {
    let (ir, text) = text_of(
        "version = 1\n[commands.definitely-not-installed-sbx]\n",
        true,
    );
    assert!(ir.commands.is_some());
    let meta = Meta::read(&text).unwrap().unwrap();
    assert!(meta.params.contains(&"PROGRAM".to_string()));
    assert!(text.contains("-D PROGRAM=…"));
    let params: BTreeMap<String, String> = [
        ("WORKSPACE", "/w"),
        ("HOME", "/h"),
        ("TMPDIR", "/t"),
        ("PROGRAM", "/opt/x/prog"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let p = Profile::from_source(&text, &params).unwrap();
    assert!(p.decide(FileOp::ProcessExec, "/opt/x/prog").is_allow());
    // The default policy's execute right and the presets' are withdrawn.
    assert!(p.decide(FileOp::ProcessExec, "/w/build.sh").is_deny());
    assert!(p.decide(FileOp::ProcessExec, "/bin/sh").is_deny());

    let with = emit_with(
        &ir,
        &EmitOptions {
            program: vec!["/usr/local/bin/tool".into(), "/opt/tool/bin/tool".into()],
        },
    )
    .unwrap()
    .text;
    assert!(!with.contains("PROGRAM"));
    assert!(with.contains("(literal \"/usr/local/bin/tool\")\n  (literal \"/opt/tool/bin/tool\"))"));
}

#[test]
fn sbpl_meta_carries_what_the_profile_cannot() {
    let ir = lower(&inputs(&["fixtures/limits-extras.toml"]), None, true);
    let text = emit(&ir).unwrap().text;
    let meta = Meta::read(&text).unwrap().unwrap();
    assert_eq!(meta.limits, ir.limits);
    assert_eq!(meta.env, ir.env);
    assert_eq!(meta.policy_hash, ir.policy_hash);
    assert_eq!(meta.params, ["HOME", "WORKSPACE", "TMPDIR"]);
    assert!(Meta::read("(version 1)\n").is_none());
}

#[test]
fn sbpl_required_policies_compile_for_macos_only_when_exact() {
    let out = compile(
        &inputs(&["fixtures/required.toml"]),
        &[Target::Macos],
        &Options {
            portable: true,
            ..Options::default()
        },
    )
    .unwrap_or_else(|f| panic!("{:?}", f.diagnostics));
    // Exact but for sbx's own advisory lines (repositories made during
    // the run), which `required` never refuses.
    assert!(out.artifacts[0]
        .precision
        .iter()
        .all(|p| p.status == Status::Exact || p.advisory));
    // Host rules are exact through `sbx run`'s proxy; a URL path in a
    // tunnel is not.
    let exact =
        "version = 1\nenforcement = \"required\"\n[[net]]\nhost = \"example.com\"\nport = 443\n";
    let portable = Options {
        portable: true,
        ..Options::default()
    };
    assert!(compile(
        &Inputs::from_text("r.toml", exact),
        &[Target::Macos],
        &portable
    )
    .is_ok());
    let toml = "version = 1\nenforcement = \"required\"\n[[net]]\nhost = \"example.com\"\nport = 443\npath_prefix = \"/v1/\"\n";
    let err = compile(
        &Inputs::from_text("r.toml", toml),
        &[Target::Macos],
        &Options {
            portable: true,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.exit_code, 1);
    assert!(err
        .diagnostics
        .iter()
        .any(|d| d.message.contains("net[0]") && d.message.contains("cooperative there")));
}

/// Ancestor lookups are hashed, not scans: thousands of nested rules stay
/// fast (the quadratic version took minutes for 10k rules).
#[test]
fn sbpl_many_nested_rules_are_emitted_quickly() {
    let mut toml = String::from("version = 1\n[[fs]]\npath = \".\"\nread = true\nwrite = true\n");
    for i in 0..5000 {
        let dir = format!("d{}/e{}/f{}", i % 7, i % 13, i % 29);
        toml.push_str(&format!("[[fs]]\npath = \"{dir}/r{i}\"\nread = true\n"));
    }
    for portable in [false, true] {
        let ir = lower(&Inputs::from_text("big.toml", &toml), None, portable);
        let t = std::time::Instant::now();
        let out = emit(&ir).unwrap();
        assert!(
            t.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t.elapsed()
        );
        assert!(out.text.contains("/d1/e7/f11/r4999"));
    }
}

/// A deny rule (every capability it names false) is exact in SBPL: the
/// profile denies every right the broader rule grants, on the path and
/// beneath it.
#[test]
fn sbpl_deny_rules_are_exact() {
    let ir = lower(&inputs(&["fixtures/deny.toml"]), None, false);
    let out = emit(&ir).unwrap();
    assert!(
        out.precision
            .iter()
            .all(|p| !p.status.is_inexact() || p.advisory),
        "{:?}",
        out.precision
    );
    let p = Profile::from_source(&out.text, &BTreeMap::new()).unwrap();
    let ws = "/private/tmp/sbx-emit-ws";
    for (op, path) in [
        (FileOp::Read, format!("{ws}/secrets")),
        (FileOp::Read, format!("{ws}/secrets/key")),
        (FileOp::WriteCreate, format!("{ws}/secrets/new")),
        (FileOp::WriteUnlink, format!("{ws}/secrets")),
        (FileOp::Read, format!("{ws}/config/prod.env")),
        (FileOp::Write, format!("{ws}/config/prod.env")),
    ] {
        assert!(
            !p.decide(op, &path).is_allow(),
            "{op:?} {path}\n{}",
            out.text
        );
    }
    for op in [FileOp::Read, FileOp::Write] {
        assert!(p.decide(op, &format!("{ws}/src/main.rs")).is_allow());
    }
}
