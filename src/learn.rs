//! `sbx learn`: from what a command did (a trace of its calls, read by
//! [`crate::runtime::denials::trace`]), the rules a policy
//! needs beyond its base so that the command runs under it.
//!
//! What the base already allows (workspace, presets) adds nothing, as
//! `sbx explain` decides it. Reads of three or more files of one directory
//! become a rule on the directory; a write (create, rename, delete) is
//! granted on the directory it happens in; an executed file gets read and
//! execute. Sensitive paths (POLICY.md §7) are never granted: they are
//! listed, as comments, for the user to decide.

use crate::explain::{self, FsOp, Query};
use crate::ir::{path_within, Access, Ir, Source};
use crate::runtime::denials::{self, Anchors, Denied, Op};
use std::collections::{BTreeMap, BTreeSet};

/// Files of one directory read before the directory itself is granted.
const FILES_FOR_A_DIRECTORY: usize = 3;

/// Paths whose contents are the process's own or the kernel's, granted by
/// presets where a program needs them: never learned one by one.
const NOT_LEARNED: &[&str] = &["/proc", "/sys", "/dev/pts", "/dev/tty"];

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Learned {
    /// `[[fs]]` and `[[net]]` tables to append to the base policy.
    pub rules: String,
    /// How many rules.
    pub count: usize,
    /// Sensitive paths the command used, not granted.
    pub sensitive: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Rights {
    read: bool,
    write: bool,
    execute: bool,
}

impl Rights {
    /// What a policy rule writes for these rights: `write` only with all
    /// of create, update and delete.
    fn of(a: Access) -> Rights {
        Rights {
            read: a.read,
            write: a.create && a.update && a.delete,
            execute: a.execute,
        }
    }

    fn union(self, o: Rights) -> Rights {
        Rights {
            read: self.read || o.read,
            write: self.write || o.write,
            execute: self.execute || o.execute,
        }
    }

    fn covers(self, o: Rights) -> bool {
        (self.read || !o.read) && (self.write || !o.write) && (self.execute || !o.execute)
    }
}

fn allowed(ir: &Ir, op: FsOp, path: &str) -> bool {
    let q = Query::Fs {
        op,
        path: path.to_string(),
    };
    explain::explain(ir, &q).allowed
}

/// An `[[fs]]` table and the blank line after it.
fn fs_rule(path: &str, r: Rights, a: &Anchors) -> String {
    let mut t = format!(
        "[[fs]]\npath = {}\n",
        denials::toml_str(&denials::policy_path(path, a))
    );
    for (on, name) in [(r.read, "read"), (r.write, "write"), (r.execute, "execute")] {
        if on {
            t.push_str(&format!("{name} = true\n"));
        }
    }
    t.push('\n');
    t
}

/// What a path is on this host now, as [`learn`]'s `kind` wants it: a
/// directory (`Some(true)`), another file (`Some(false)`), or gone or a
/// symlink (`None`).
pub fn kind_on_disk(path: &str) -> Option<bool> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| !m.file_type().is_symlink())
        .map(|m| m.is_dir())
}

/// Whether `ir` allows `op` at `path` (`kind` as for [`learn`]). A file
/// (or device) there now was written; anything else was created, renamed
/// or removed, which is decided on the directory (a new symlink's target
/// is not written).
pub fn allows(ir: &Ir, op: Op, path: &str, kind: &dyn Fn(&str) -> Option<bool>) -> bool {
    match op {
        Op::Read => allowed(ir, FsOp::Read, path),
        Op::Write if kind(path) == Some(false) => allowed(ir, FsOp::Write, path),
        Op::Write => allowed(ir, FsOp::Create, denials::parent_dir(path)),
        Op::Execute => allowed(ir, FsOp::Exec, path),
    }
}

/// The rules `ir` lacks for `used` (a trace's calls: successful,
/// refused, or of paths the sandbox hid).
/// `kind` tells what a path is now, not following a final symlink:
/// `None` (gone or a symlink), `Some(true)` for a directory, `Some(false)`
/// for a file.
/// `used` with the learning session's record applied
/// ([`crate::runtime::proxy::LEARN_NET`]): a connection to an address the
/// DNS responder gave is one to its name, and each destination the proxy
/// or relay connected to (`via host port` lines) is a use.
pub fn reached(lines: &str, used: Vec<Denied>) -> Vec<Denied> {
    let mut names = BTreeMap::new();
    let mut out = Vec::new();
    for l in lines.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        match w.as_slice() {
            ["name", name, addr] => {
                names.insert(addr.to_string(), name.to_string());
            }
            [_via, host, port] => {
                if let Ok(port) = port.parse() {
                    out.push(Denied::Net {
                        bind: false,
                        host: host.to_string(),
                        port,
                    });
                }
            }
            _ => {}
        }
    }
    let named = used.into_iter().map(|u| match u {
        Denied::Net {
            bind: false,
            host,
            port,
        } if names.contains_key(&host) => Denied::Net {
            bind: false,
            host: names[&host].clone(),
            port,
        },
        u => u,
    });
    named.chain(out).collect()
}

/// A connection to the learning session's own plumbing, which no rule
/// needs: the proxy's listeners on the namespace's loopback, and the DNS
/// responder and relay addresses (the relay range).
fn plumbing(host: &str, port: u16) -> bool {
    let Ok(ip) = host.parse::<std::net::IpAddr>() else {
        return false;
    };
    if ip.is_loopback() && crate::back::landlock::proxy::PROXY_PORTS.contains(&port) {
        return true;
    }
    // The ranges are `sbx run`'s on Linux (a unix module); a trace read
    // elsewhere has none of them.
    #[cfg(unix)]
    {
        use crate::runtime::proxy::book;
        match ip {
            std::net::IpAddr::V4(a) => book::in_range(a),
            std::net::IpAddr::V6(a) => {
                let net = book::RANGE6.0.octets();
                a.octets()[..8] == net[..8]
            }
        }
    }
    #[cfg(not(unix))]
    false
}

pub fn learn(
    ir: &Ir,
    used: &[Denied],
    a: &Anchors,
    kind: &dyn Fn(&str) -> Option<bool>,
) -> Learned {
    let is_dir = |p: &str| kind(p) == Some(true);
    let mut out = Learned::default();
    let mut grants: BTreeMap<String, Rights> = BTreeMap::new();
    let mut reads: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut net: BTreeSet<(String, u16, bool)> = BTreeSet::new();
    let mut sensitive = BTreeSet::new();
    for u in used.iter().collect::<BTreeSet<_>>() {
        match u {
            // A path the sandbox hid is learned as one it let through.
            Denied::Path { op, path } | Denied::Missing { op, path } => {
                if NOT_LEARNED.iter().any(|p| path_within(path, p)) {
                    continue;
                }
                if denials::sensitive(path, a.home) {
                    sensitive.insert(path.clone());
                    continue;
                }
                if allows(ir, *op, path, kind) {
                    continue;
                }
                match op {
                    Op::Read => {
                        if is_dir(path) {
                            grants.entry(path.clone()).or_default().read = true;
                        } else {
                            reads
                                .entry(denials::parent_dir(path).to_string())
                                .or_default()
                                .insert(path.clone());
                        }
                    }
                    Op::Write => {
                        let dir = denials::parent_dir(path);
                        if denials::sensitive(dir, a.home) {
                            sensitive.insert(path.clone());
                            continue;
                        }
                        let r = grants.entry(dir.to_string()).or_default();
                        r.read = true;
                        r.write = true;
                    }
                    Op::Execute => {
                        let r = grants.entry(path.clone()).or_default();
                        r.read = true;
                        r.execute = true;
                    }
                }
            }
            Denied::Net { bind, host, port } => {
                if !*bind && plumbing(host, *port) {
                    continue;
                }
                let ok = if *bind {
                    ir.net.bind.allows(*port)
                } else {
                    let q = Query::Connect {
                        scheme: None,
                        host: host.clone(),
                        port: *port,
                        path: "/".into(),
                    };
                    explain::explain(ir, &q).allowed
                };
                if !ok {
                    net.insert((host.clone(), *port, *bind));
                }
            }
            Denied::Socket | Denied::Baseline(_) | Denied::UserNamespace(_) => {}
        }
    }
    for (dir, files) in reads {
        if files.len() >= FILES_FOR_A_DIRECTORY && !denials::sensitive(&dir, a.home) {
            grants.entry(dir).or_default().read = true;
        } else {
            for f in files {
                grants.entry(f).or_default().read = true;
            }
        }
    }
    // A grant inside another with at least its rights adds nothing.
    let all: Vec<(String, Rights)> = grants.into_iter().collect();
    for (path, r) in &all {
        let covered = all
            .iter()
            .any(|(p, o)| p != path && path_within(path, p) && o.covers(*r));
        if covered {
            continue;
        }
        // A rule replaces what the base grants at its path (most specific
        // wins): keep those rights too.
        let base = ir.decide(path).map(|g| g.access).unwrap_or(Access::NONE);
        let r = r.union(Rights::of(base));
        out.rules.push_str(&fs_rule(path, r, a));
        out.count += 1;
    }
    // Declaring any `[[fs]]` rule replaces the default policy's workspace
    // rule (POLICY.md §4): restate it, or pasting these rules would take
    // the workspace away.
    if out.count > 0 {
        if let Some(g) = ir.fs.iter().find(|g| g.source == Source::Default) {
            let mut text = format!(
                "# The default workspace rule, which any [[fs]] rule replaces.\n{}",
                fs_rule(&g.path, Rights::of(g.access), a)
            );
            text.push_str(&out.rules);
            out.rules = text;
            out.count += 1;
        }
    }
    for (host, port, bind) in net {
        let host = if bind { "*".to_string() } else { host };
        out.rules.push_str(&format!(
            "[[net]]\nhost = {}\nport = {port}\n{}\n",
            denials::toml_str(&host),
            if bind { "bind = true\n" } else { "" }
        ));
        out.count += 1;
    }
    out.sensitive = sensitive.into_iter().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{roots, rule_grant};
    use crate::ir::{Grant, Os, PathKind, PathMode};

    fn path(op: Op, p: &str) -> Denied {
        Denied::Path {
            op,
            path: p.to_string(),
        }
    }

    #[test]
    fn hosts_reached_are_learned_and_the_plumbing_is_not() {
        let trace = vec![
            Denied::Net {
                bind: false,
                host: "198.18.0.2".into(),
                port: 8443,
            },
            Denied::Net {
                bind: false,
                host: "198.18.0.3".into(),
                port: 8443,
            },
        ];
        let record =
            "connect web.test 443\nhttp api.test 80\nbad line\nname echo.test 198.18.0.2\n";
        assert_eq!(
            reached(record, trace),
            vec![
                Denied::Net {
                    bind: false,
                    host: "echo.test".into(),
                    port: 8443
                },
                // No name for it: left as it is (and not learned).
                Denied::Net {
                    bind: false,
                    host: "198.18.0.3".into(),
                    port: 8443
                },
                Denied::Net {
                    bind: false,
                    host: "web.test".into(),
                    port: 443
                },
                Denied::Net {
                    bind: false,
                    host: "api.test".into(),
                    port: 80
                },
            ]
        );
        assert!(plumbing("127.0.0.1", 3128));
        assert!(plumbing("::1", 1080));
        assert!(plumbing("198.18.0.1", 53));
        assert!(plumbing("198.19.255.1", 443));
        // Controls.
        assert!(!plumbing("127.0.0.1", 8080));
        assert!(!plumbing("198.20.0.1", 443));
        assert!(!plumbing("web.test", 3128));
    }

    #[test]
    fn only_what_the_base_lacks_collapsed_by_directory() {
        let mut ir = Ir::deny_all(Os::Linux, PathMode::Resolved, roots());
        let dev = Access {
            read: true,
            update: true,
            ..Access::NONE
        };
        ir.fs = vec![
            rule_grant(
                0,
                1,
                &ir.roots.workspace.clone(),
                Access::READ_WRITE,
                PathKind::Dir,
            ),
            rule_grant(1, 2, "/dev/null", dev, PathKind::File),
        ];
        let ws = ir.roots.workspace.clone();
        let home = ir.roots.home.clone();
        let a = Anchors {
            workspace: &ws,
            home: &home,
        };
        let used = [
            path(Op::Read, &format!("{ws}/src/main.rs")),
            path(Op::Write, &format!("{ws}/target/x")),
            path(Op::Read, "/opt/sdk/a.h"),
            path(Op::Read, "/opt/sdk/b.h"),
            path(Op::Read, "/opt/sdk/c.h"),
            path(Op::Read, "/opt/sdk/sub/d.h"),
            path(Op::Read, "/etc/tool.conf"),
            path(Op::Write, "/var/cache/tool/db"),
            path(Op::Execute, "/opt/bin/tool"),
            path(Op::Read, &format!("{home}/.ssh/id_ed25519")),
            path(Op::Read, "/proc/self/status"),
            // An update of an existing device the base allows.
            path(Op::Write, "/dev/null"),
            Denied::Net {
                bind: false,
                host: "10.0.0.7".into(),
                port: 443,
            },
        ];
        let l = learn(&ir, &used, &a, &|p| (p == "/dev/null").then_some(false));
        assert_eq!(
            l.rules,
            "[[fs]]\npath = \"/etc/tool.conf\"\nread = true\n\n\
             [[fs]]\npath = \"/opt/bin/tool\"\nread = true\nexecute = true\n\n\
             [[fs]]\npath = \"/opt/sdk\"\nread = true\n\n\
             [[fs]]\npath = \"/var/cache/tool\"\nread = true\nwrite = true\n\n\
             [[net]]\nhost = \"10.0.0.7\"\nport = 443\n\n",
            "{}",
            l.rules
        );
        assert_eq!(l.count, 5);
        assert_eq!(l.sensitive, [format!("{home}/.ssh/id_ed25519")]);
        // The rules are TOML a policy accepts.
        let doc: toml::Table = toml::from_str(&l.rules).unwrap();
        assert_eq!(doc["fs"].as_array().unwrap().len(), 4);
    }

    /// Under the default policy (no `[[fs]]`), the first learned `[[fs]]`
    /// rule would replace the workspace rule: it is restated.
    #[test]
    fn the_default_workspace_rule_is_restated() {
        let mut ir = Ir::deny_all(Os::Linux, PathMode::Resolved, roots());
        let ws = ir.roots.workspace.clone();
        let home = ir.roots.home.clone();
        let all = Access {
            execute: true,
            ..Access::READ_WRITE
        };
        ir.fs = vec![Grant {
            source: Source::Default,
            ..rule_grant(0, 1, &ws, all, PathKind::Dir)
        }];
        let a = Anchors {
            workspace: &ws,
            home: &home,
        };
        let none = |_: &str| None;
        let l = learn(&ir, &[path(Op::Read, "/opt/sdk")], &a, &none);
        assert_eq!(
            l.rules,
            "# The default workspace rule, which any [[fs]] rule replaces.\n\
             [[fs]]\npath = \".\"\nread = true\nwrite = true\nexecute = true\n\n\
             [[fs]]\npath = \"/opt/sdk\"\nread = true\n\n"
        );
        assert_eq!(l.count, 2);
        // Nothing to add for the filesystem: nothing restated.
        let net = Denied::Net {
            bind: false,
            host: "10.0.0.7".into(),
            port: 443,
        };
        let l = learn(&ir, &[net], &a, &none);
        assert!(l.rules.starts_with("[[net]]"), "{}", l.rules);
    }
}
