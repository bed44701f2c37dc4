use super::*;
use crate::ir::testing::{roots, rule_grant};
use crate::ir::*;

fn base(fs: Vec<Grant>) -> Ir {
    Ir {
        policy_hash: "sha256:0000".into(),
        fs,
        ..Ir::deny_all(Os::Linux, PathMode::Resolved, roots())
    }
}

/// Rule `index` sits at line `index * 4 + 3` (the snapshots show it).
fn grant(index: usize, path: &str, access: Access, kind: PathKind) -> Grant {
    rule_grant(index, index * 4 + 3, path, access, kind)
}

fn preset(path: &str, access: Access, kind: PathKind) -> Grant {
    Grant {
        source: Source::Preset {
            name: "system_runtime".into(),
        },
        ..grant(0, path, access, kind)
    }
}

/// An absent name a writable tree protects (`missing`, read).
fn protected(path: &str, entry: &str) -> Grant {
    Grant {
        source: Source::Protected {
            entry: entry.into(),
        },
        ..grant(0, path, Access::READ, PathKind::Missing)
    }
}

fn typical() -> Ir {
    base(vec![
        preset("/dev/null", Access::READ_WRITE, PathKind::File),
        preset("/usr", Access::READ_EXEC, PathKind::Dir),
        grant(0, "/w", Access::READ_WRITE, PathKind::Dir),
        grant(1, "/w/.git", Access::READ, PathKind::Dir),
    ])
}

fn snapshot<T: serde::Serialize>(name: &str, value: &T) {
    insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, to_json(value));
    });
}

fn statuses(p: &[Precision]) -> Vec<(String, Status)> {
    p.iter().map(|l| (l.rule.clone(), l.status)).collect()
}

#[test]
fn typical_policy_artifact() {
    let art = build(&typical()).unwrap();
    check_config(&art.landlock).unwrap();
    snapshot("linux_artifact_typical", &art);
}

#[test]
fn narrowing_under_a_broader_grant_is_exact_with_namespaces_only() {
    let label = "fs[1] (policy.toml:7:1)".to_string();
    let art = build(&typical()).unwrap();
    assert_eq!(statuses(&art.precision), [(label.clone(), Status::Exact)]);
    assert!(art.precision[0].reason.contains("exact with namespaces"));
    assert!(art.precision[0]
        .reason
        .contains("create, update, delete from fs[0]"));
    assert_eq!(
        art.namespaces.mounts,
        [MountRule {
            path: "/w/.git".into(),
            kind: MountKind::Bind,
            read_only: true,
            noexec: false,
            protection: false,
            absent: false,
        }]
    );
    // Landlock alone: the landlockconfig target, or namespaces turned off.
    let lc = emit_landlockconfig(&typical()).unwrap().precision;
    assert!(statuses(&lc).contains(&(label.clone(), Status::Wider)));
    let mut never = typical();
    never.linux.namespaces = crate::ir::Namespaces::Never;
    let art = build(&never).unwrap();
    assert_eq!(statuses(&art.precision), [(label, Status::Wider)]);
    assert!(art.namespaces.mounts.is_empty());
    assert!(art.precision[0]
        .reason
        .contains("create, update, delete from fs[0]"));
}

#[test]
fn a_deny_rule_is_hidden_unless_a_rule_beneath_needs_it() {
    let mut ir = typical();
    ir.fs
        .push(grant(2, "/w/secrets", Access::NONE, PathKind::Dir));
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    let art = build(&ir).unwrap();
    let m: Vec<(&str, MountKind)> = art
        .namespaces
        .mounts
        .iter()
        .map(|m| (m.path.as_str(), m.kind))
        .collect();
    assert_eq!(
        m,
        [
            ("/w/.git", MountKind::Bind),
            ("/w/secrets", MountKind::Hidden)
        ]
    );
    // A readable rule beneath: an empty mount would hide it, so the deny
    // rule stays wider.
    ir.fs
        .push(grant(3, "/w/secrets/pub", Access::READ, PathKind::Dir));
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    let art = build(&ir).unwrap();
    assert!(art
        .namespaces
        .mounts
        .iter()
        .all(|m| m.kind != MountKind::Hidden));
    assert!(art
        .precision
        .iter()
        .any(|p| p.rule.starts_with("fs[2]") && p.status == Status::Wider));
}

#[test]
fn precision_carries_the_lowering_notes_too() {
    let mut ir = typical();
    ir.enforcement = Enforcement::Required;
    ir.precision.push(Precision {
        rule: "commands.x".into(),
        target: "ir".into(),
        status: Status::Dropped,
        reason: "not found on PATH at compile time".into(),
        advisory: false,
    });
    let e = emit(&ir).unwrap();
    assert_eq!(
        statuses(&e.precision),
        [
            ("commands.x".to_string(), Status::Dropped),
            ("fs[1] (policy.toml:7:1)".to_string(), Status::Exact)
        ]
    );
    let art: LinuxArtifact = serde_json::from_str(&e.text).unwrap();
    assert_eq!(art.enforcement, Enforcement::Required);
    assert_eq!(art.precision, e.precision);
    assert_eq!(
        emit_landlockconfig(&ir).unwrap().precision[0].rule,
        "commands.x"
    );
    ir.fs.pop();
    ir.precision.clear();
    assert!(emit(&ir).unwrap().precision.is_empty());
}

#[test]
fn widening_beneath_a_read_only_root_is_exact() {
    let ir = base(vec![
        grant(0, "/w", Access::READ, PathKind::Dir),
        grant(1, "/w/target", Access::READ_WRITE, PathKind::Dir),
    ]);
    assert!(emit(&ir).unwrap().precision.is_empty());
}

#[test]
fn missing_paths_are_dropped_unless_covered() {
    let ir = base(vec![
        grant(0, "/w", Access::READ_WRITE, PathKind::Dir),
        grant(1, "/w/new", Access::READ, PathKind::Missing),
        grant(2, "/w/newer", Access::READ_WRITE, PathKind::Missing),
        grant(3, "/nowhere", Access::READ, PathKind::Missing),
    ]);
    let art = build(&ir).unwrap();
    let parents: Vec<&String> = art
        .landlock
        .path_beneath
        .iter()
        .flat_map(|p| &p.parent)
        .collect();
    assert_eq!(parents, ["/w"]);
    assert_eq!(
        statuses(&art.precision),
        [
            ("fs[1] (policy.toml:7:1)".to_string(), Status::Wider),
            ("fs[3] (policy.toml:15:1)".to_string(), Status::Dropped),
        ]
    );
}

/// A writable rule on a missing path is dropped, and says so; the
/// protections beneath it add no line of their own (they are sbx's, and
/// are never refused by `enforcement = "required"`).
#[test]
fn protections_under_a_missing_rule_add_no_line() {
    let ir = base(vec![
        grant(0, "/gone", Access::READ_WRITE, PathKind::Missing),
        Grant {
            source: Source::Protected {
                entry: ".vscode".into(),
            },
            ..grant(0, "/gone/.vscode", Access::READ, PathKind::Missing)
        },
    ]);
    for target in [TARGET, TARGET_LANDLOCKCONFIG] {
        let mut p = linux_precision(&ir, &rules(&ir).unwrap(), target, None, true);
        p.retain(|l| l.rule.starts_with("fs[") || l.rule.starts_with("protected"));
        assert_eq!(
            statuses(&p),
            [("fs[0] (policy.toml:3:1)".to_string(), Status::Dropped)]
        );
    }
}

/// A landlockconfig report made without its advisory lines is the full
/// report less those, line for line: only sbx's own absent protections
/// are left out, never a line `enforcement = "required"` or the linter
/// reads.
#[test]
fn landlockconfig_without_advisory_lines_keeps_every_other_line() {
    let protected = Grant {
        source: Source::Protected {
            entry: ".vscode".into(),
        },
        ..grant(0, "/w/.vscode", Access::READ, PathKind::Missing)
    };
    let mut ir = typical();
    ir.fs.push(protected);
    // A rule on a missing path and a carve-out: lines that stay.
    ir.fs
        .push(grant(1, "/w/gone", Access::READ_WRITE, PathKind::Missing));
    ir.fs.push(grant(2, "/w/ro", Access::READ, PathKind::Dir));
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    let full = emit_landlockconfig(&ir).unwrap();
    let mut text = Vec::new();
    let lean = landlockconfig_to(&ir, &mut |b| text.extend_from_slice(b), false).unwrap();
    assert_eq!(String::from_utf8(text).unwrap(), full.text);
    assert!(full.precision.iter().any(|l| l.advisory));
    assert!(full.precision.iter().filter(|l| !l.advisory).count() >= 3);
    let kept: Vec<&Precision> = full.precision.iter().filter(|l| !l.advisory).collect();
    assert_eq!(lean.iter().collect::<Vec<_>>(), kept);
}

#[test]
fn absent_protections_are_one_advisory_line_per_name() {
    let ir = base(vec![
        grant(0, "/a", Access::READ_WRITE, PathKind::Dir),
        protected("/a/.envrc", ".envrc"),
        protected("/a/.vscode", ".vscode"),
        grant(1, "/b", Access::READ_WRITE, PathKind::Dir),
        protected("/b/.vscode", ".vscode"),
        grant(2, "/c", Access::READ_WRITE, PathKind::Dir),
        protected("/c/.vscode", ".vscode"),
    ]);
    for target in [TARGET, TARGET_LANDLOCKCONFIG] {
        let mut p = linux_precision(&ir, &rules(&ir).unwrap(), target, None, true);
        // landlockconfig adds what it cannot carry (net, env).
        p.retain(|l| l.rule.starts_with("protected"));
        assert_eq!(
            statuses(&p),
            [
                ("protected .envrc".to_string(), Status::Wider),
                ("protected .vscode".to_string(), Status::Wider),
            ]
        );
        assert!(p.iter().all(|l| l.advisory && l.target == target));
        // One path: the sentence says what still applies there; the rule's
        // label names the path, so that names sharing it are said once.
        assert!(p[0].reason.starts_with(
            "protection of a path that does not exist at launch: a mount needs an existing \
             path and sbx creates nothing in the workspace, so create, update, delete from \
             fs[0] (policy.toml:3:1) still apply beneath it if the command creates it"
        ));
        // Several: counted, each path listed with what still applies.
        assert!(p[1]
            .reason
            .starts_with("protection of 3 paths that do not exist at launch"));
        assert!(p[1].reason.ends_with(
            "The paths, with what still applies: \
             /a/.vscode (create, update, delete from fs[0] (policy.toml:3:1)); \
             /b/.vscode (create, update, delete from fs[1] (policy.toml:7:1)); \
             /c/.vscode (create, update, delete from fs[2] (policy.toml:11:1))"
        ));
        assert_eq!(
            p[1].reason.contains("sbx run moves what it created aside"),
            target == TARGET
        );
    }
    // The artifact marks the mounts of those paths, so that the loader,
    // finding them still absent, does not report them a second time; a
    // protection that exists is mounted and not marked.
    let mut ir = ir;
    ir.fs.push(Grant {
        source: Source::Protected {
            entry: ".idea".into(),
        },
        ..grant(0, "/a/.idea", Access::READ, PathKind::Dir)
    });
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    let marks: Vec<(String, bool)> = build(&ir)
        .unwrap()
        .namespaces
        .mounts
        .iter()
        .map(|m| (m.path.clone(), m.absent))
        .collect();
    assert_eq!(
        marks,
        [
            ("/a/.envrc".to_string(), true),
            ("/a/.idea".to_string(), false),
            ("/a/.vscode".to_string(), true),
            ("/b/.vscode".to_string(), true),
            ("/c/.vscode".to_string(), true),
        ]
    );
}

#[test]
fn delete_on_a_file_rule_is_reported_narrower() {
    let ir = base(vec![grant(0, "/w/f", Access::READ_WRITE, PathKind::File)]);
    let lines: Vec<_> = emit(&ir)
        .unwrap()
        .precision
        .into_iter()
        .map(|p| (p.rule, p.status))
        .collect();
    assert!(
        lines.contains(&("fs[0] (policy.toml:3:1)".to_string(), Status::Narrower)),
        "{lines:?}"
    );
    // Under a directory rule that grants removal, nothing is lost.
    let ir = base(vec![
        grant(0, "/w", Access::READ_WRITE, PathKind::Dir),
        grant(1, "/w/f", Access::READ_WRITE, PathKind::File),
    ]);
    assert!(emit(&ir)
        .unwrap()
        .precision
        .iter()
        .all(|p| p.status != Status::Narrower));
}

#[test]
fn file_rules_never_carry_directory_rights() {
    let ir = base(vec![grant(0, "/w/f", Access::READ_WRITE, PathKind::File)]);
    let art = build(&ir).unwrap();
    assert_eq!(
        art.landlock.path_beneath[0].allowed_access,
        ["write_file", "read_file", "truncate"]
    );
}

#[test]
fn ioctl_only_on_device_paths() {
    let ir = base(vec![
        grant(0, "/dev/tty", Access::READ_WRITE, PathKind::File),
        grant(1, "/w", Access::READ_WRITE, PathKind::Dir),
    ]);
    let art = build(&ir).unwrap();
    let with_ioctl: Vec<&String> = art
        .landlock
        .path_beneath
        .iter()
        .filter(|p| p.allowed_access.iter().any(|a| a == "ioctl_dev"))
        .flat_map(|p| &p.parent)
        .collect();
    assert_eq!(with_ioctl, ["/dev/tty"]);
}

#[test]
fn commands_move_execute_to_the_listed_files() {
    let mut ir = typical();
    ir.fs.pop();
    ir.commands = Some(vec![
        Command {
            name: "git".into(),
            path: Some("/usr/bin/git".into()),
            args: Some(vec![vec!["status".into()]]),
            envs: vec![],
        },
        Command {
            name: "nope".into(),
            path: None,
            args: None,
            envs: vec![],
        },
    ]);
    let art = build(&ir).unwrap();
    for pb in &art.landlock.path_beneath {
        let exec = pb.allowed_access.iter().any(|a| a == "execute");
        assert_eq!(exec, pb.parent == ["/usr/bin/git"], "{pb:?}");
    }
    assert_eq!(
        art.exec_allow.as_ref().unwrap()[1],
        ExecEntry {
            name: "nope".into(),
            path: None
        }
    );
    assert_eq!(
        statuses(&art.precision),
        [
            ("commands".to_string(), Status::Wider),
            ("commands.git".to_string(), Status::Wider)
        ]
    );
    snapshot("linux_artifact_commands", &art);
    // The memfd rule comes with [commands], and the loader wants it.
    assert_eq!(missing_baseline(&art), Vec::<String>::new());
    let mut edited = art.clone();
    edited
        .seccomp
        .deny_args
        .retain(|r| r.syscall != "memfd_create");
    assert!(missing_baseline(&edited)
        .join(", ")
        .contains("memfd_create"));
    // Allowed env vars not in a command's list: cooperative.
    ir.env.allow = vec!["AWS_*".into()];
    let lines = statuses(&build(&ir).unwrap().precision);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[3], ("commands.nope".to_string(), Status::Wider));
}

#[test]
fn commands_granted_by_the_lowering_are_not_repeated() {
    let mut ir = typical();
    ir.fs.pop();
    ir.fs.push(Grant {
        source: Source::Command { name: "sh".into() },
        ..grant(0, "/usr/bin/dash", Access::READ_EXEC, PathKind::File)
    });
    ir.commands = Some(vec![Command {
        name: "sh".into(),
        path: Some("/usr/bin/sh".into()),
        args: None,
        envs: vec![],
    }]);
    let art = build(&ir).unwrap();
    let exec: Vec<&String> = art
        .landlock
        .path_beneath
        .iter()
        .filter(|p| p.allowed_access.iter().any(|a| a == "execute"))
        .flat_map(|p| &p.parent)
        .collect();
    assert_eq!(exec, ["/usr/bin/dash"]);
}

#[test]
fn tcp_ports_and_dns() {
    let mut ir = typical();
    ir.fs.pop();
    ir.net = Net {
        connect: Ports::Some(vec![443]),
        bind: Ports::None,
        other_protocols: false,
        dns: true,
        ssh_agent: false,
        rules: vec![NetRule {
            index: 0,
            file: "policy.toml".into(),
            line: 9,
            column: 1,
            host: "api.example.com".into(),
            scheme: Some("https".into()),
            port: Some(443),
            path_prefix: Some("/v1".into()),
            bind: false,
            allow: true,
        }],
    };
    let art = build(&ir).unwrap();
    assert_eq!(
        art.landlock.net_port,
        [NetPort {
            allowed_access: vec!["connect_tcp".into()],
            port: vec![443]
        }]
    );
    assert_eq!(
        art.landlock.ruleset[0].handled_access_net,
        Some(vec!["bind_tcp".into(), "connect_tcp".into()])
    );
    assert_eq!(art.exact_abi, 6);
    // The host goes through the proxy, exactly; the path only for plain
    // HTTP. The child resolves no names itself, so no DNS line.
    assert_eq!(
        statuses(&art.precision),
        [("net[0]".to_string(), Status::Wider)]
    );
    assert!(art.precision[0].reason.contains("plain-HTTP"));
    assert_eq!(art.proxy.as_ref().unwrap().rules, ir.net.rules);
    // Without the namespace the loader says the port alone decides,
    // and that names need UDP.
    let lines = proxy::fallback(art.proxy.as_ref().unwrap(), "test");
    assert_eq!(
        statuses(&lines),
        [
            ("net[0]".to_string(), Status::Wider),
            ("net".to_string(), Status::Wider)
        ]
    );
    // landlockconfig carries no proxy: cooperative, and DNS is open.
    let lc = emit_landlockconfig(&ir).unwrap().precision;
    assert!(lc
        .iter()
        .any(|p| p.rule == "net[0]" && p.reason.contains("cooperative only")));
    assert!(lc
        .iter()
        .any(|p| p.rule == "net" && p.reason.contains("UDP")));
    assert_eq!(
        art.seccomp.sockets.unwrap().allow,
        ["netlink", "tcp", "udp", "unix"]
    );
}

#[test]
fn unrestricted_network_handles_no_net_and_no_socket_filter() {
    let mut ir = typical();
    ir.net.connect = Ports::All;
    ir.net.bind = Ports::All;
    ir.net.other_protocols = true;
    ir.linux.scopes = Some(vec![]);
    let art = build(&ir).unwrap();
    assert_eq!(art.landlock.ruleset[0].handled_access_net, None);
    assert_eq!(art.landlock.ruleset[0].scoped, None);
    assert!(art.seccomp.sockets.is_none());
    assert_eq!(art.exact_abi, 5);
}

#[test]
fn limits_are_reported() {
    let mut ir = typical();
    ir.fs.pop();
    ir.limits = Limits {
        max_processes: Some(10),
        max_memory_mib: Some(512),
        cpu_time_s: Some(5),
        wall_time_s: Some(60),
    };
    assert_eq!(
        statuses(&emit(&ir).unwrap().precision),
        [
            ("limits.max_processes".to_string(), Status::Wider),
            ("limits.max_memory_mib".to_string(), Status::Narrower)
        ]
    );
    let lc = emit_landlockconfig(&ir).unwrap().precision;
    assert!(lc
        .iter()
        .filter(|p| p.rule.starts_with("limits."))
        .all(|p| p.status == Status::Unsupported));
    assert_eq!(
        lc.iter().filter(|p| p.rule.starts_with("limits.")).count(),
        4
    );
}

#[test]
fn portable_paths_keep_placeholders() {
    let mut ir = base(vec![
        grant(0, "${WORKSPACE}", Access::READ_WRITE, PathKind::Unknown),
        grant(1, "${HOME}/co$t", Access::READ, PathKind::Unknown),
    ]);
    ir.mode = PathMode::Portable;
    let art = build(&ir).unwrap();
    check_config(&art.landlock).unwrap();
    let parents: Vec<&String> = art
        .landlock
        .path_beneath
        .iter()
        .flat_map(|p| &p.parent)
        .collect();
    assert_eq!(parents, ["${WORKSPACE}", "${HOME}/co$$t"]);
    let names: Vec<&str> = art
        .landlock
        .variable
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(names, ["WORKSPACE", "HOME"]);
}

#[test]
fn unrepresentable_paths_are_errors() {
    for bad in ["/w/a\nb", "relative/x", "/w/\u{0}"] {
        let ir = base(vec![grant(0, bad, Access::READ, PathKind::Dir)]);
        let e = build(&ir).unwrap_err();
        assert_eq!(e.rule, "fs[0] (policy.toml:3:1)", "{bad:?}");
    }
    let mut ir = typical();
    ir.linux.scopes = Some(vec!["ipc".into()]);
    assert_eq!(build(&ir).unwrap_err().rule, "linux.scopes");
}

#[test]
fn output_is_deterministic_and_round_trips() {
    let a = emit(&typical()).unwrap().text;
    let b = emit(&typical()).unwrap().text;
    assert_eq!(a, b);
    let back: LinuxArtifact = serde_json::from_str(&a).unwrap();
    assert_eq!(to_json(&back), a);
    let doc = emit_landlockconfig(&typical()).unwrap().text;
    let parsed: LandlockConfig = serde_json::from_str(&doc).unwrap();
    check_config(&parsed).unwrap();
}

/// Every artifact carries the baseline; the loader's check names what
/// an edited one lacks, and the Fast Open rules follow the network.
#[test]
fn baseline_is_carried_and_checked() {
    let art = build(&typical()).unwrap();
    assert_eq!(missing_baseline(&art), Vec::<String>::new());
    let mut edited = art.clone();
    edited.seccomp.deny.retain(|n| n != "mount");
    edited
        .seccomp
        .deny_args
        .retain(|r| r.syscall != "prlimit64");
    edited.drop_capabilities.clear();
    let missing = missing_baseline(&edited).join(", ");
    for want in [
        "seccomp deny mount",
        "prlimit64",
        "drop_capabilities CAP_SYS_ADMIN",
    ] {
        assert!(missing.contains(want), "{missing}");
    }
    let tfo = |a: &LinuxArtifact| {
        a.seccomp
            .deny_args
            .iter()
            .any(|r| r.when.iter().any(|t| t.value == "MSG_FASTOPEN"))
    };
    assert!(tfo(&art));
    let mut open = typical();
    open.net.connect = crate::ir::Ports::All;
    open.net.other_protocols = true;
    let open = build(&open).unwrap();
    assert!(!tfo(&open));
    assert_eq!(missing_baseline(&open), Vec::<String>::new());
}

/// memfd execution and nested user namespaces are refused unless the
/// policy's `[linux]` allows them; the loader wants the rules exactly
/// when the artifact does not say they are allowed.
#[test]
fn memfd_and_user_namespace_rules_follow_the_settings() {
    let has =
        |a: &LinuxArtifact, syscall: &str| a.seccomp.deny_args.iter().any(|r| r.syscall == syscall);
    let art = build(&typical()).unwrap();
    for s in ["memfd_create", "clone", "clone3", "setns", "unshare"] {
        assert!(has(&art, s), "{s}");
    }
    let lines: Vec<String> = userns_rules().into_iter().map(|r| r.to_string()).collect();
    assert_eq!(
        lines,
        [
            "clone(arg0 has CLONE_NEWUSER) -> EPERM",
            "clone3 -> ENOSYS",
            "setns -> EPERM",
            "unshare(arg0 has CLONE_NEWUSER) -> EPERM",
        ]
    );
    for s in ["memfd_create", "clone3", "unshare"] {
        let mut edited = art.clone();
        edited.seccomp.deny_args.retain(|r| r.syscall != s);
        assert!(missing_baseline(&edited).join(", ").contains(s), "{s}");
    }
    let mut ir = typical();
    ir.linux.memfd_exec = true;
    ir.linux.nested_user_namespaces = true;
    let open = build(&ir).unwrap();
    for s in ["memfd_create", "clone", "clone3", "setns", "unshare"] {
        assert!(!has(&open, s), "{s}");
    }
    assert_eq!(missing_baseline(&open), Vec::<String>::new());
    let json = to_json(&open);
    assert!(json.contains("\"nested_user_namespaces\": true"), "{json}");
    assert!(json.contains("\"memfd_exec\": true"), "{json}");
    // Switched back off by hand, the rules are missing again.
    let mut edited = open.clone();
    edited.memfd_exec = false;
    edited.nested_user_namespaces = false;
    let missing = missing_baseline(&edited).join(", ");
    assert!(
        missing.contains("memfd_create") && missing.contains("clone3"),
        "{missing}"
    );
}

/// Kept capabilities are a member of their own, absent when empty, so
/// artifacts without them do not change.
#[test]
fn kept_capabilities_are_carried_only_when_listed() {
    let art = build(&typical()).unwrap();
    assert!(art.keep_capabilities.is_empty());
    assert!(!to_json(&art).contains("keep_capabilities"));
    let mut ir = typical();
    ir.linux.capabilities = vec!["CAP_CHOWN".into(), "CAP_FOWNER".into()];
    let art = build(&ir).unwrap();
    assert_eq!(art.keep_capabilities, ["CAP_CHOWN", "CAP_FOWNER"]);
    let back: LinuxArtifact = serde_json::from_str(&to_json(&art)).unwrap();
    assert_eq!(back, art);
}

/// With `[commands]`, letting memfds run says so in the precision line.
#[test]
fn memfd_exec_under_commands_is_reported() {
    let mut ir = typical();
    ir.commands = Some(vec![]);
    let reason = |ir: &Ir| {
        build(ir)
            .unwrap()
            .precision
            .into_iter()
            .find(|p| p.rule == "commands")
            .unwrap()
            .reason
    };
    assert!(reason(&ir).contains("MFD_NOEXEC_SEAL"));
    ir.linux.memfd_exec = true;
    assert!(reason(&ir).contains("memfd_exec = true"));
}

/// Argument rules are one line each in the artifact, and read back as
/// written; malformed lines are refused.
#[test]
fn argument_rules_round_trip_as_lines() {
    for r in arg_rules(true) {
        let line = r.to_string();
        assert_eq!(ArgRule::try_from(line.clone()).unwrap(), r, "{line}");
    }
    let line = arg_rules(true).remove(0).to_string();
    assert_eq!(line, "prlimit64(arg0 != 0) -> EPERM");
    for bad in [
        "prlimit64(arg0 != 0)",
        "prlimit64(arg0 != 0 -> EPERM",
        "prlimit64(argx != 0) -> EPERM",
        "prlimit64(arg0 < 0) -> EPERM",
        "prlimit64(arg0 != 0 1) -> EPERM",
        "pr limit -> EPERM",
        " -> EPERM",
        "openat2 -> ",
    ] {
        assert!(ArgRule::try_from(bad.to_string()).is_err(), "{bad}");
    }
}

/// `namespaces = "never"` mounts nothing, but the artifact still lists
/// sbx's protections for the after-run check (docs/protected.md), and
/// such an artifact is consistent; a carve-out's mount is not listed.
#[test]
fn never_lists_the_protections_only() {
    let mut ir = typical();
    ir.fs.push(Grant {
        source: Source::Protected {
            entry: ".envrc".into(),
        },
        ..grant(2, "/w/.envrc", Access::READ, PathKind::File)
    });
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    ir.linux.namespaces = crate::ir::Namespaces::Never;
    let art = build(&ir).unwrap();
    let listed: Vec<(&str, bool)> = art
        .namespaces
        .mounts
        .iter()
        .map(|m| (m.path.as_str(), m.protection))
        .collect();
    assert_eq!(listed, [("/w/.envrc", true)]);
    assert!(crate::back::landlock::contradictions(&art).is_empty());
    // A carve-out's mount listed under "never" is an edited artifact.
    let mut edited = art.clone();
    edited.namespaces.mounts[0].protection = false;
    assert!(!crate::back::landlock::contradictions(&edited).is_empty());
}

/// The artifact as `compile` writes it, the absent protections' text
/// written while it is serialised, is byte for byte what `build` makes
/// (escapes included); the report returned without advisory lines is
/// the full one less those of the absent protections and the exact
/// lines of carve-outs.
#[test]
fn written_artifact_is_the_built_one() {
    let mut ir = base(vec![
        grant(0, "/a", Access::READ_WRITE, PathKind::Dir),
        protected("/a/.envrc", ".envrc"),
        protected("/a/.vscode", ".vscode"),
        grant(1, "/b\"q\\", Access::READ_WRITE, PathKind::Dir),
        protected("/b\"q\\/.vscode", ".vscode"),
        grant(2, "/c", Access::READ_WRITE, PathKind::Dir),
        protected("/c/.vscode", ".vscode"),
        grant(3, "/c/ro", Access::READ, PathKind::Dir),
        grant(4, "/gone", Access::READ, PathKind::Missing),
    ]);
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    ir.net.ssh_agent = true;
    let built = build(&ir).unwrap();
    let full = emit(&ir).unwrap();
    assert_eq!(full.text, to_json(&built));
    assert_eq!(full.precision, built.precision);
    assert!(full
        .text
        .contains("/b\\\"q\\\\/.vscode (create, update, delete from fs[1]"));
    let mut text = Vec::new();
    let lean = linux_to(&ir, &mut |b| text.extend_from_slice(b), false).unwrap();
    assert_eq!(String::from_utf8(text).unwrap(), full.text);
    // Less the absent protections' two lines and the carve-out's.
    let kept: Vec<Precision> = full
        .precision
        .iter()
        .filter(|l| !(l.advisory && l.rule.starts_with("protected ")))
        .filter(|l| !l.reason.starts_with(mounts::CLAIM_START))
        .cloned()
        .collect();
    assert_eq!(kept.len() + 3, full.precision.len());
    assert_eq!(lean, kept);
}
