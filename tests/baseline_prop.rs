//! The baseline subset check, property-tested on generated policies
//! (lowered in portable mode, so nothing depends on this machine).
//!
//! Under most-specific-wins, removing a rule can widen (drop a read-only
//! carve-out and its parent's write applies again), and adding one can
//! narrow. So the properties are exact oracles, not "adding widens":
//! adding a rule widens iff it grants a right the old policy lacked at its
//! path; removing one widens iff the rule narrowed what now applies there.

use proptest::prelude::*;
use sbx::ir::{Access, Ir, Os, Ports, Source};
use sbx::lint::baseline::{widenings, Widened, Widening};
use sbx::lower::paths::{anchor, join, normalise, Anchor};
use sbx::policy::model::{CommandRule, EnvRule, FsRule, NetRule, Preset};
use sbx::policy::{Located, Policy};
use std::collections::BTreeMap;

fn at<T>(value: T) -> Located<T> {
    Located {
        value,
        loc: None,
        layer: 0,
    }
}

fn lower(p: &Policy) -> Ir {
    let opts = sbx::lower::Options {
        workspace: "/w".into(),
        home: "/h".into(),
        temp: "/t".into(),
        os: Os::Linux,
        portable: true,
        path_var: None,
        approvals: Vec::new(),
    };
    sbx::lower::lower(p, &opts)
        .expect("generated policies lower")
        .ir
}

const PATHS: &[&str] = &[".", "a", "a/b", "a/b/c", "b", "~", "~/x", "/opt/d"];

fn fs_rule() -> impl Strategy<Value = FsRule> {
    (
        prop::sample::select(PATHS),
        prop::array::uniform5(any::<bool>()),
    )
        .prop_filter("a rule grants something", |(_, r)| r.iter().any(|b| *b))
        .prop_map(|(path, [read, create, update, delete, execute])| {
            let t = |b: bool| b.then_some(true);
            FsRule {
                path: path.into(),
                read: t(read),
                write: None,
                create: t(create),
                update: t(update),
                delete: t(delete),
                execute: t(execute),
                external: None,
            }
        })
}

fn net_rule() -> impl Strategy<Value = NetRule> {
    (
        prop::sample::select(&["*", "a.com", "*.b.org", "localhost"][..]),
        prop::option::of(prop::sample::select(&[22u16, 443, 8080][..])),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(host, port, bind, allow)| NetRule {
            host: Some(host.into()),
            scheme: None,
            port,
            path_prefix: None,
            bind: (bind && port.is_some()).then_some(true),
            allow: (!allow).then_some(false),
        })
}

const ENV: &[&str] = &["A", "A_*", "B", "LC_X", "AB*"];

fn command() -> impl Strategy<Value = CommandRule> {
    const PREFIXES: &[&[&str]] = &[&["status"], &["diff", "**"], &["**"], &["push"]];
    let prefix = prop::sample::select(PREFIXES)
        .prop_map(|p| p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    (
        prop::option::of(prop::collection::vec(prefix, 0..3)),
        prop::collection::vec(prop::sample::select(ENV), 0..2),
    )
        .prop_map(|(args, envs)| CommandRule {
            args,
            envs: Some(envs.into_iter().map(String::from).collect()),
        })
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        prop::option::of(prop::collection::vec(fs_rule(), 0..6)),
        prop::collection::vec(net_rule(), 0..4),
        prop::collection::vec(prop::sample::select(ENV), 0..3),
        prop::option::of(prop::collection::btree_map(
            prop::sample::select(&["git", "cargo", "make"][..]),
            command(),
            0..3,
        )),
        prop::array::uniform2(prop::option::of(prop::sample::select(&[10u64, 100][..]))),
        any::<bool>(),
    )
        .prop_map(|(fs, net, env, commands, [cpu, wall], presets)| {
            let mut p = Policy {
                fs: fs.map(|v| v.into_iter().map(at).collect()),
                net: net.into_iter().map(at).collect(),
                env: env
                    .into_iter()
                    .map(|n| {
                        at(EnvRule {
                            name: n.into(),
                            read: None,
                        })
                    })
                    .collect(),
                commands: commands.map(|m| {
                    m.into_iter()
                        .map(|(k, v)| (k.to_string(), at(v)))
                        .collect::<BTreeMap<_, _>>()
                }),
                ..Policy::default()
            };
            p.limits.cpu_time_s = cpu;
            p.limits.wall_time_s = wall;
            if !presets {
                p.process.presets = Some(Vec::<Preset>::new());
            }
            p
        })
}

/// Where lowering puts a rule path (portable roots).
fn place(ir: &Ir, path: &str) -> String {
    let (a, rel) = anchor(path, false);
    match a {
        Anchor::Workspace => join(&ir.roots.workspace, &rel),
        Anchor::Home => join(&ir.roots.home, &rel),
        Anchor::Absolute => normalise(&rel),
    }
}

fn rights(r: &FsRule) -> Access {
    let t = |b: Option<bool>| b == Some(true);
    Access {
        read: t(r.read),
        create: t(r.create),
        update: t(r.update),
        delete: t(r.delete),
        execute: t(r.execute),
    }
}

/// 200 per property; `PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn fs_only(ws: &[Widening]) -> bool {
    ws.iter().all(|w| matches!(w.widened, Widened::Fs { .. }))
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(cases()) })]

    #[test]
    fn the_index_decides_like_the_ir(p in policy(), extra in prop::sample::select(&["", "/f", "/x/y"][..])) {
        let ir = lower(&p);
        let idx = sbx::lint::index::Index::new(&ir);
        for path in PATHS.iter().map(|q| place(&ir, q) + extra).chain(["/".to_string(), "/usr/bin/x".into()]) {
            let (a, b) = (idx.decide(&path), ir.decide(&path));
            prop_assert!(a.map(|g| g as *const _) == b.map(|g| g as *const _), "{}: {:?} vs {:?}", path, a, b);
        }
    }

    #[test]
    fn a_policy_is_within_itself(p in policy()) {
        let ir = lower(&p);
        prop_assert_eq!(widenings(&ir, &ir), vec![]);
    }

    #[test]
    fn adding_an_fs_rule_widens_exactly_when_it_grants_something_new(p in policy(), r in fs_rule()) {
        let old = lower(&p);
        let mut q = p.clone();
        let index = q.fs.as_ref().map_or(0, Vec::len);
        q.fs.get_or_insert_with(Vec::new).push(at(r.clone()));
        let new = lower(&q);
        let path = place(&new, &r.path);
        let expect = !old.access_at(&path).contains(rights(&r));
        let ws = widenings(&old, &new);
        prop_assert!(fs_only(&ws), "{:?}", ws);
        prop_assert_eq!(!ws.is_empty(), expect, "{:?} at {}: {:?}", r, path, ws);
        if expect {
            // The widening names the added rule.
            let named = ws.iter().any(|w| matches!(&w.origin,
                Some(sbx::lint::origin::Origin::Fs { source: Source::Rule { index: i, .. }, .. }) if *i == index));
            prop_assert!(named, "{:?}", ws);
        }
    }

    #[test]
    fn removing_an_fs_rule_widens_exactly_when_it_narrowed(p in policy(), pick in any::<prop::sample::Index>()) {
        let Some(rules) = p.fs.as_ref().filter(|v| !v.is_empty()) else { return Ok(()) };
        let i = pick.index(rules.len());
        let old = lower(&p);
        let mut q = p.clone();
        let removed = q.fs.as_mut().unwrap().remove(i);
        let new = lower(&q);
        let path = place(&old, &removed.value.path);
        // The rule's path, and the protections (POLICY.md §7a) that a
        // writable rule brings beneath it and takes away with it.
        let mut at_stake = vec![path.clone()];
        at_stake.extend(old.fs.iter().filter(|g| {
            matches!(g.source, Source::Protected { .. } | Source::Covered { .. })
                && sbx::ir::path_within(&g.path, &path)
        }).map(|g| g.path.clone()));
        let expect = at_stake.iter().any(|q| !old.access_at(q).contains(new.access_at(q)));
        let ws = widenings(&old, &new);
        prop_assert!(fs_only(&ws), "{:?}", ws);
        prop_assert_eq!(!ws.is_empty(), expect, "removed {:?}: {:?}", removed.value, ws);
    }

    #[test]
    fn adding_a_port_widens_and_removing_an_allow_rule_never_does(p in policy(), port in prop::sample::select(&[22u16, 80, 443, 8080][..]), pick in any::<prop::sample::Index>()) {
        let old = lower(&p);
        let mut q = p.clone();
        q.net.push(at(NetRule { host: Some("*".into()), scheme: None, port: Some(port), path_prefix: None, bind: None, allow: None }));
        let new = lower(&q);
        let ws = widenings(&old, &new);
        let kernel = ws.iter().any(|w| w.widened == Widened::Connect { port: Some(port) });
        // A deny rule of the policy may still take the port away.
        prop_assert_eq!(kernel, !old.net.connect.allows(port) && new.net.connect.allows(port), "{:?}", ws);
        prop_assert!(ws.iter().all(|w| matches!(w.widened, Widened::Connect { .. } | Widened::NetRule { .. })), "{:?}", ws);

        let allows: Vec<usize> = p.net.iter().enumerate().filter(|(_, r)| r.value.allow != Some(false)).map(|(i, _)| i).collect();
        if !allows.is_empty() {
            let mut q = p.clone();
            q.net.remove(allows[pick.index(allows.len())]);
            prop_assert_eq!(widenings(&old, &lower(&q)), vec![]);
        }
    }

    #[test]
    fn env_and_commands(p in policy(), name in prop::sample::select(&["A", "A_1", "B", "C", "AB", "LC_ALL", "Z*"][..]), pick in any::<prop::sample::Index>()) {
        let old = lower(&p);
        let mut q = p.clone();
        q.env.push(at(EnvRule { name: name.into(), read: None }));
        let ws = widenings(&old, &lower(&q));
        let covered = old.env.minimal.iter().chain(old.env.allow.iter())
            .any(|o| sbx::lint::cover::env_covers(o, name, false));
        prop_assert_eq!(ws.is_empty(), covered, "{} {:?}", name, ws);

        if !p.env.is_empty() {
            let mut q = p.clone();
            q.env.remove(pick.index(p.env.len()));
            prop_assert_eq!(widenings(&old, &lower(&q)), vec![]);
        }
        if let Some(cmds) = &p.commands {
            if !cmds.contains_key("npm") {
                let mut q = p.clone();
                q.commands.as_mut().unwrap().insert("npm".into(), at(CommandRule::default()));
                let ws = widenings(&old, &lower(&q));
                prop_assert!(ws.iter().any(|w| w.widened == Widened::Command { name: "npm".into() }), "{:?}", ws);
            }
            if let Some(name) = cmds.keys().nth(pick.index(cmds.len().max(1))) {
                let mut q = p.clone();
                q.commands.as_mut().unwrap().remove(name);
                prop_assert_eq!(widenings(&old, &lower(&q)), vec![]);
            }
            // Dropping the table: any program may run.
            let mut q = p.clone();
            q.commands = None;
            prop_assert!(widenings(&old, &lower(&q)).iter().any(|w| w.widened == Widened::CommandsUnrestricted));
        }
    }

    #[test]
    fn limits(p in policy()) {
        let old = lower(&p);
        let mut q = p.clone();
        q.limits.max_processes = Some(5);
        prop_assert_eq!(widenings(&old, &lower(&q)), vec![], "adding a limit narrows");
        if let Some(c) = p.limits.cpu_time_s {
            let mut q = p.clone();
            q.limits.cpu_time_s = None;
            let removed = widenings(&old, &lower(&q));
            prop_assert!(matches!(&removed[..], [Widening { widened: Widened::Limit { after: None, .. }, .. }]), "{:?}", removed);
            q.limits.cpu_time_s = Some(c + 1);
            prop_assert_eq!(widenings(&old, &lower(&q)).len(), 1);
            q.limits.cpu_time_s = Some(c - 1);
            prop_assert_eq!(widenings(&old, &lower(&q)), vec![]);
        }
    }
}

#[test]
fn dropping_a_read_only_carve_out_widens() {
    let rule = |path: &str, write: bool| {
        at(FsRule {
            path: path.into(),
            read: Some(true),
            write: write.then_some(true),
            create: None,
            update: None,
            delete: None,
            execute: None,
            external: None,
        })
    };
    let old = Policy {
        fs: Some(vec![rule(".", true), rule(".git", false)]),
        ..Policy::default()
    };
    let new = Policy {
        fs: Some(vec![rule(".", true)]),
        ..Policy::default()
    };
    let ws = widenings(&lower(&old), &lower(&new));
    assert_eq!(ws.len(), 1, "{ws:?}");
    assert_eq!(
        ws[0].widened,
        Widened::Fs {
            path: "${WORKSPACE}/.git".into(),
            added: Access::READ_WRITE.minus(Access::READ),
            before: Access::READ
        }
    );
    // And the kernel-level port set: unrestricted network over port 443.
    let net = |port: Option<u16>| Policy {
        net: vec![at(NetRule {
            host: None,
            scheme: None,
            port,
            path_prefix: None,
            bind: None,
            allow: None,
        })],
        ..Policy::default()
    };
    let ws = widenings(&lower(&net(Some(443))), &lower(&net(None)));
    assert!(ws.contains(&Widening {
        widened: Widened::Connect { port: None },
        origin: Some(sbx::lint::origin::Origin::Net {
            index: 0,
            file: String::new(),
            line: 0,
            column: 0
        })
    }));
    assert!(ws.iter().any(|w| w.widened == Widened::OtherProtocols));
    assert_eq!(lower(&net(None)).net.connect, Ports::All);
}

#[test]
fn weaker_enforcement_and_extras_widen() {
    let mut old = Policy {
        enforcement: Some(sbx::policy::model::Enforcement::Required),
        ..Policy::default()
    };
    old.windows.appcontainer = Some(true);
    old.linux.min_abi = Some(4);
    let mut new = Policy::default();
    new.macos.allow_pty = Some(true);
    new.linux.scopes = Some(vec![sbx::policy::model::Scope::Signal]);
    new.linux.capabilities = Some(vec!["CAP_CHOWN".into()]);
    new.linux.nested_user_namespaces = Some(true);
    new.linux.memfd_exec = Some(true);
    new.ssh_agent = Some(true);
    let (fs, got): (Vec<Widened>, Vec<Widened>) = widenings(&lower(&old), &lower(&new))
        .into_iter()
        .map(|w| w.widened)
        .partition(|w| matches!(w, Widened::Fs { .. }));
    // ssh_agent's read-only known_hosts grants widen too.
    let fs: Vec<String> = fs
        .into_iter()
        .filter_map(|w| match w {
            Widened::Fs { path, added, .. } if added.each_name().eq(["read"]) => Some(path),
            _ => None,
        })
        .collect();
    assert_eq!(
        fs,
        ["${HOME}/.ssh/known_hosts", "${HOME}/.ssh/known_hosts2"]
    );
    let extra = |key: &str, detail: &str| Widened::Extra {
        key: key.into(),
        detail: detail.into(),
    };
    assert_eq!(
        got,
        vec![
            Widened::Enforcement,
            extra("macos.allow_pty", "pseudo-terminals allowed"),
            extra(
                "linux.scopes",
                "Landlock scope \"abstract_unix_socket\" dropped"
            ),
            extra("linux.min_abi", "accepts kernels below Landlock ABI 4"),
            extra("linux.capabilities", "the command keeps CAP_CHOWN as root"),
            extra(
                "linux.nested_user_namespaces",
                "the command may create user namespaces"
            ),
            extra(
                "linux.memfd_exec",
                "the command may run programs from a memfd"
            ),
            extra("ssh_agent", "the command may use the caller's ssh agent"),
            extra("windows.appcontainer", "AppContainer disabled"),
        ]
    );
    assert_eq!(
        widenings(&lower(&new), &lower(&old)),
        vec![],
        "and back is narrower"
    );
}
