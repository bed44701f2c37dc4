//! Plans and reports for every ABI, against a simulated filesystem.

use super::plan::{plan, Enforced, Opened, Plan};
use super::report;
use crate::back::landlock::{self, LinuxArtifact};
use crate::ir::*;
use crate::runtime::expand::Values;
use std::io;

fn grant(index: usize, path: &str, access: Access, kind: PathKind) -> Grant {
    Grant {
        path: path.into(),
        access,
        kind,
        source: Source::Rule {
            index,
            file: "policy.toml".into(),
            line: index + 1,
            column: 1,
        },
        aliases: vec![],
        external: None,
    }
}

fn ir(mode: PathMode, fs: Vec<Grant>) -> Ir {
    let roots = Roots {
        workspace: "/w".into(),
        home: "/h".into(),
        temp: "/t".into(),
    };
    Ir {
        policy_hash: "sha256:0000".into(),
        fs,
        net: Net {
            connect: Ports::Some(vec![443]),
            ..Net::none()
        },
        env: Env {
            minimal: vec!["PATH".into(), "HOME".into()],
            allow: vec!["AWS_*".into()],
        },
        limits: Limits {
            cpu_time_s: Some(5),
            ..Limits::default()
        },
        ..Ir::deny_all(Os::Linux, mode, roots)
    }
}

fn artifact() -> LinuxArtifact {
    landlock::build(&ir(
        PathMode::Resolved,
        vec![
            grant(0, "/usr", Access::READ_EXEC, PathKind::Dir),
            grant(1, "/w", Access::READ_WRITE, PathKind::Dir),
            grant(2, "/w/notes.txt", Access::READ_WRITE, PathKind::File),
        ],
    ))
    .unwrap()
}

/// A fake filesystem: directories and files by path.
fn fake(
    dirs: &'static [&'static str],
    files: &'static [&'static str],
) -> impl FnMut(&str) -> io::Result<Opened<()>> {
    move |p: &str| {
        if dirs.contains(&p) {
            Ok(Opened {
                handle: (),
                is_dir: true,
            })
        } else if files.contains(&p) {
            Ok(Opened {
                handle: (),
                is_dir: false,
            })
        } else {
            Err(io::Error::from_raw_os_error(libc::ENOENT))
        }
    }
}

fn values() -> Values {
    Values {
        workspace: "/home/u/ws".into(),
        home: "/home/u".into(),
        temp: "/tmp".into(),
    }
}

fn plan_at(art: &LinuxArtifact, abi: u32) -> Plan<()> {
    plan(
        &art.landlock,
        7,
        Some(abi),
        &values(),
        &["/usr/bin/prog".to_string()],
        &mut fake(&["/usr", "/w"], &["/w/notes.txt", "/usr/bin/prog"]),
    )
    .unwrap()
}

fn report_at(art: &LinuxArtifact, abi: u32) -> String {
    let p = plan_at(art, abi);
    report::text(
        art,
        &p,
        &report::Extras {
            seccomp: &Ok(3),
            exec_files: &["/usr/bin/prog".to_string()],
            forced_abi: Some(abi),
            root: false,
        },
    )
}

#[test]
fn report_for_every_abi() {
    let art = artifact();
    for abi in 0..=7 {
        insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("linux_report_abi{abi}"), report_at(&art, abi));
        });
    }
}

#[test]
fn degradation_by_abi() {
    let art = artifact();
    let names = |p: &Plan<()>| -> Vec<String> { p.lines.iter().map(|l| l.rule.clone()).collect() };
    assert_eq!(plan_at(&art, 7).enforced, Enforced::Fully);
    assert!(plan_at(&art, 6).lines.is_empty());
    assert_eq!(
        names(&plan_at(&art, 5)),
        [
            "landlock.scope.abstract_unix_socket",
            "landlock.scope.signal"
        ]
    );
    let p3 = plan_at(&art, 3);
    assert_eq!(p3.enforced, Enforced::Partially);
    assert_eq!(p3.handled_net, 0);
    assert!(p3.ports.is_empty());
    assert!(names(&p3).contains(&"landlock.connect_tcp".to_string()));
    let p1 = plan_at(&art, 1);
    let refer = p1
        .lines
        .iter()
        .find(|l| l.rule == "landlock.refer")
        .unwrap();
    assert_eq!(refer.status, Status::Narrower);
    assert!(p1.rules.iter().all(|r| r.rights.needed_abi() == 1));
    assert_eq!(plan_at(&art, 0).enforced, Enforced::Not);
}

#[test]
fn file_rules_are_trimmed_and_exec_files_added() {
    let p = plan_at(&artifact(), 7);
    let rule = |path: &str| {
        p.rules
            .iter()
            .find(|r| r.path == path)
            .unwrap()
            .rights
            .names()
    };
    assert_eq!(
        rule("/w/notes.txt"),
        ["write_file", "read_file", "truncate"]
    );
    assert_eq!(rule("/usr/bin/prog"), ["execute", "read_file"]);
}

#[test]
fn portable_paths_expand_and_overlaps_are_found_at_run_time() {
    let mut i = ir(
        PathMode::Portable,
        vec![
            grant(0, "${HOME}", Access::READ_WRITE, PathKind::Unknown),
            grant(1, "${WORKSPACE}", Access::READ, PathKind::Unknown),
            grant(
                2,
                "${WORKSPACE}/gone",
                Access::READ_WRITE,
                PathKind::Unknown,
            ),
        ],
    );
    i.net.connect = Ports::All;
    i.net.bind = Ports::All;
    let art = landlock::build(&i).unwrap();
    // Nothing to see lexically: ${HOME} and ${WORKSPACE} are unrelated.
    assert!(art.precision.is_empty());
    let p = plan(
        &art.landlock,
        7,
        None,
        &values(),
        &[],
        &mut fake(&["/home/u", "/home/u/ws"], &[]),
    )
    .unwrap();
    let lines: Vec<(String, Status)> = p.lines.iter().map(|l| (l.rule.clone(), l.status)).collect();
    // /home/u/ws/gone is missing, but ${HOME} already grants it all.
    assert_eq!(lines, [("/home/u/ws".to_string(), Status::Wider)]);
    assert_eq!(
        p.rules.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
        ["/home/u", "/home/u/ws"]
    );
}

#[test]
fn missing_paths_at_run_time_are_dropped() {
    let art = artifact();
    let p = plan(
        &art.landlock,
        7,
        None,
        &values(),
        &[],
        &mut fake(&["/usr"], &[]),
    )
    .unwrap();
    let dropped: Vec<&str> = p
        .lines
        .iter()
        .filter(|l| l.status == Status::Dropped)
        .map(|l| l.rule.as_str())
        .collect();
    assert_eq!(dropped, ["/w", "/w/notes.txt"]);
}
