use super::*;
use crate::ir::*;

pub(crate) fn base() -> Ir {
    Ir {
        policy_hash: "sha256:00ff".into(),
        fs: vec![Grant {
            path: "${WORKSPACE}".into(),
            access: Access::READ_WRITE,
            kind: PathKind::Unknown,
            source: Source::Default,
            aliases: vec![],
            external: None,
        }],
        env: Env {
            minimal: vec!["PATH".into(), "HOME".into()],
            allow: vec!["AWS_*".into()],
        },
        ..Ir::deny_all(Os::Windows, PathMode::Portable, Roots::portable())
    }
}

fn spec(ir: &Ir) -> Spec {
    Spec::from_json(&emit(ir).unwrap().text).unwrap()
}

#[test]
fn round_trips_through_the_loader_types() {
    let mut ir = base();
    ir.limits = Limits {
        max_processes: Some(4),
        max_memory_mib: Some(64),
        cpu_time_s: Some(2),
        wall_time_s: Some(3),
    };
    ir.windows.ui_restrictions = vec!["desktop".into(), "handles".into()];
    let s = spec(&ir);
    assert!(s.job.kill_on_job_close);
    assert_eq!(s.job.active_process_limit.unwrap().value, 4);
    assert_eq!(s.job.process_memory_limit_bytes.unwrap().value, 64 << 20);
    assert_eq!(s.job.per_process_user_time_100ns.unwrap().value, 20_000_000);
    assert_eq!(s.job.wall_time_ms.unwrap().value, 3000);
    assert_eq!(
        s.job.ui_restrictions.unwrap().value,
        [UiRestriction::Handles, UiRestriction::Desktop]
    );
    assert_eq!(s.program.cwd, "${WORKSPACE}");
}

#[test]
fn env_adds_what_windows_needs_once() {
    let mut ir = base();
    ir.env.minimal.push("systemroot".into());
    let s = spec(&ir);
    assert!(s.env.case_insensitive);
    assert_eq!(
        s.env.minimal,
        [
            "PATH",
            "HOME",
            "systemroot",
            "windir",
            "TEMP",
            "TMP",
            "COMSPEC",
            "PATHEXT"
        ]
    );
    assert_eq!(s.env.allow, ["AWS_*"]);
}

#[test]
fn requirement_follows_enforcement() {
    let mut ir = base();
    ir.enforcement = Enforcement::Required;
    ir.limits.max_processes = Some(2);
    let s = spec(&ir);
    assert_eq!(s.job.requirement, Enforcement::Required);
    assert_eq!(
        s.job.active_process_limit.unwrap().requirement,
        Enforcement::Required
    );
    assert_eq!(s.token.unwrap().requirement, Enforcement::Required);
}

#[test]
fn precision_without_appcontainer() {
    let s = spec(&base());
    let fs = s
        .precision
        .iter()
        .find(|p| p.rule == "default policy")
        .unwrap();
    assert_eq!(fs.status, Status::Wider);
    assert!(fs.reason.contains("no per-path filesystem enforcement"));
    let net = s.precision.iter().find(|p| p.rule == "net").unwrap();
    assert_eq!(net.status, Status::Unsupported);
    assert!(net.reason.contains("network deny needs AppContainer"));
    assert!(s.appcontainer.is_none());
}

#[test]
fn appcontainer_denies_network_and_narrows_by_deny_ace() {
    let mut ir = base();
    ir.windows.appcontainer = true;
    ir.ir_hash = "sha256:00112233445566778899".into();
    ir.fs.push(Grant {
        path: "${WORKSPACE}/.git".into(),
        access: Access::READ,
        kind: PathKind::Unknown,
        source: Source::ProcessRoot,
        aliases: vec![],
        external: None,
    });
    let s = spec(&ir);
    let ac = s.appcontainer.unwrap();
    assert!(ac.capabilities.is_empty());
    assert_eq!(ac.name, "sbx.0011223344556677");
    assert_eq!(ac.grants[1].allow, Access::READ);
    assert_eq!(
        ac.grants[1].deny,
        Access::READ_WRITE.minus(Access::READ),
        "the workspace's inherited write must be denied on .git"
    );
    assert_eq!(ac.grants[0].deny, Access::NONE);
    let net = s.precision.iter().find(|p| p.rule == "net").unwrap();
    assert_eq!(net.status, Status::Exact);
}

#[test]
fn approved_external_target_gets_an_acl_grant() {
    let mut ir = base();
    ir.windows.appcontainer = true;
    let target = "D:/code/forks/x";
    let source = Source::Rule {
        index: 1,
        file: "sbx.toml".into(),
        line: 9,
        column: 1,
    };
    ir.fs.push(Grant {
        path: target.into(),
        access: Access::READ,
        kind: PathKind::Dir,
        source: source.clone(),
        aliases: vec![],
        external: Some(Box::new(External {
            rule_path: "fork".into(),
            canonical_target: target.into(),
        })),
    });
    // The same directory without an approval stays outside the ACL set.
    let mut plain = ir.clone();
    plain.fs[1].external = None;
    assert_eq!(spec(&plain).appcontainer.unwrap().grants.len(), 1);
    let s = spec(&ir);
    let g = &s.appcontainer.unwrap().grants[1];
    assert_eq!((g.path.as_str(), g.allow), (target, Access::READ));
    let note = s
        .precision
        .iter()
        .find(|p| p.rule == source.label() && p.target == TARGET)
        .unwrap();
    assert_eq!(note.status, Status::Exact, "{note:?}");
}

#[test]
fn appcontainer_network_only_with_internet_client() {
    let mut ir = base();
    ir.windows.appcontainer = true;
    ir.net.connect = Ports::Some(vec![443]);
    ir.net.rules.push(NetRule {
        index: 0,
        file: "p.toml".into(),
        line: 3,
        column: 1,
        host: "api.example.com".into(),
        scheme: Some("https".into()),
        port: Some(443),
        path_prefix: None,
        bind: false,
        allow: true,
    });
    let s = spec(&ir);
    assert_eq!(
        s.appcontainer.unwrap().capabilities,
        [Capability::InternetClient]
    );
    let p = s
        .precision
        .iter()
        .find(|p| p.rule == "net[0] (p.toml:3:1)")
        .unwrap();
    assert_eq!(p.status, Status::Wider);
}

#[test]
fn refuses_what_windows_cannot_hold() {
    let mut ir = base();
    ir.fs[0].path = "C:/a\u{1}b".into();
    let e = emit(&ir).unwrap_err();
    assert_eq!(e.rule, "default policy");
    assert!(e.message.contains("control character"));

    let mut ir = base();
    ir.windows.ui_restrictions = vec!["clipboard".into()];
    assert_eq!(emit(&ir).unwrap_err().rule, "windows.ui_restrictions");

    let mut ir = base();
    ir.windows.token = "admin".into();
    assert_eq!(emit(&ir).unwrap_err().rule, "windows.token");

    let mut ir = base();
    ir.limits.max_processes = Some(0);
    assert_eq!(emit(&ir).unwrap_err().rule, "limits.max_processes");
}

#[test]
fn loader_rejects_unknown_members_and_targets() {
    let text = emit(&base()).unwrap().text;
    let extra = text.replacen("{", "{\n  \"future\": 1,", 1);
    assert!(matches!(Spec::from_json(&extra), Err(LoadError::Json(_))));
    let linux = text.replace("\"target\": \"windows\"", "\"target\": \"linux\"");
    assert!(matches!(Spec::from_json(&linux), Err(LoadError::Target(_))));
}

#[test]
fn output_is_deterministic() {
    let mut ir = base();
    ir.windows.ui_restrictions = vec!["handles".into(), "desktop".into(), "handles".into()];
    assert_eq!(emit(&ir).unwrap().text, emit(&ir).unwrap().text);
    assert_eq!(
        spec(&ir).job.ui_restrictions.unwrap().value,
        [UiRestriction::Handles, UiRestriction::Desktop]
    );
}

/// A protection (POLICY.md §7a) gets its deny ACE, and the report says
/// what NTFS still allows: a missing path is created with the rights of
/// the directory above, and delete-child above undoes a delete deny.
#[test]
fn protections_are_deny_aces_reported_wider() {
    let mut ir = base();
    ir.windows.appcontainer = true;
    let protected = |path: &str, kind| Grant {
        path: path.into(),
        access: Access::READ,
        kind,
        source: Source::Protected {
            entry: path.rsplit('/').next().unwrap().into(),
        },
        aliases: vec![],
        external: None,
    };
    ir.fs
        .push(protected("${WORKSPACE}/.vscode", PathKind::Missing));
    ir.fs.push(protected("${WORKSPACE}/.envrc", PathKind::File));
    ir.fs.sort_by(|a, b| a.path.cmp(&b.path));
    let s = spec(&ir);
    let ac = s.appcontainer.unwrap();
    for g in &ac.grants[1..] {
        assert_eq!(g.deny, Access::READ_WRITE.minus(Access::READ), "{g:?}");
    }
    let note = |rule: &str| {
        s.precision
            .iter()
            .find(|p| p.rule == rule && p.status == Status::Wider)
            .unwrap_or_else(|| panic!("{rule}: {:?}", s.precision))
            .reason
            .clone()
    };
    assert!(note("protected .vscode").contains("does not exist at launch"));
    assert!(note("protected .envrc").contains("delete-child"));
    // Renaming a directory above is said once: the deny goes with it.
    let once: Vec<_> = s
        .precision
        .iter()
        .filter(|p| {
            p.reason
                .contains("renaming a directory above a protected path")
        })
        .collect();
    assert_eq!(once.len(), 1, "{:?}", s.precision);
    assert_eq!(once[0].rule, "protected paths");
}
