//! The namespace layer under Landlock (docs/linux.md): whether a run
//! uses it, and what the child is given to set it up. The child side,
//! which runs between clone and exec, is in `nschild.rs`.
//!
//! - user namespace (unprivileged runs): the caller's own uid and gid
//!   mapped to themselves, so mounts need no privilege;
//! - mount namespace: carve-outs Landlock alone cannot express become
//!   read-only, noexec or hidden mounts (`back::landlock::mounts`);
//! - PID namespace with a fresh `/proc`: only the sandbox's processes
//!   are visible, and the whole tree dies with the run;
//! - network namespace with loopback only when the policy has no
//!   network (or the proxy serves it).

use super::nschild::{NewRoot, NsMount, NsPrep, Visible, MAX_LISTENERS};
use super::plan::{line, Opened};
use super::temp::PrivateTemp;
use crate::back::landlock::{expand_template, LinuxArtifact, MountKind, MountRule};
use crate::ir::{Namespaces, Precision, Status};
use crate::runtime::expand::Values;
use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicI32;

/// A mount rule with its path opened (through no symlink, like rule
/// paths), so the mount lands on what was checked.
#[derive(Debug)]
pub struct MountPlan<F> {
    pub path: String,
    pub handle: F,
    pub is_dir: bool,
    pub kind: MountKind,
    pub read_only: bool,
    pub noexec: bool,
    /// A directory bound onto itself so that it cannot be renamed or
    /// removed: on the way to a carve-out (`pins`).
    pub pin: bool,
    /// A hidden directory's files shown in it all the same, read-only
    /// (host path, opened like `handle`): `ssh_agent`'s known_hosts.
    pub show: Vec<(String, F)>,
}

impl<F> MountPlan<F> {
    /// A carve-out (not a plain bind that keeps a nested rule's rights).
    pub fn is_carve_out(&self) -> bool {
        self.kind == MountKind::Hidden || self.read_only || self.noexec
    }
}

/// Expand and open the artifact's mounts. A carve-out that cannot be
/// opened (it does not exist at launch, or a symlink is on its path) is
/// not mounted: the rights of the rule above apply to it, which the
/// returned lines say.
pub fn plan_mounts<F>(
    mounts: &[MountRule],
    values: &Values,
    open: &mut dyn FnMut(&str) -> io::Result<Opened<F>>,
) -> Result<PlannedMounts<F>, String> {
    let lookup = |name: &str| match name {
        "WORKSPACE" => Some(values.workspace.clone()),
        "HOME" => Some(values.home.clone()),
        "TMPDIR" => Some(values.temp.clone()),
        _ => None,
    };
    let mut out = Vec::new();
    let mut lines = Vec::new();
    let mut protections = Vec::new();
    let mut tops: Vec<String> = Vec::new();
    for m in mounts {
        let path = expand_template(&m.path, &lookup)?;
        if !path.starts_with('/') {
            return Err(format!("mount path {path:?} is not absolute"));
        }
        if m.protection {
            protections.push(path.clone());
            // The repository at a writable tree's top, or one the nested
            // search found: where the sweep after the run starts.
            let top = path
                .strip_suffix("/.git/hooks")
                .or_else(|| path.strip_suffix("/.git/config"));
            if let Some(top) = top {
                tops.push(if top.is_empty() { "/" } else { top }.to_string());
            }
        }
        match open(&path) {
            Ok(o) => out.push(MountPlan {
                path,
                handle: o.handle,
                is_dir: o.is_dir,
                kind: m.kind,
                read_only: m.read_only,
                noexec: m.noexec,
                pin: false,
                show: Vec::new(),
            }),
            Err(e) => {
                let carve = m.kind == MountKind::Hidden || m.read_only || m.noexec;
                // Absent when compiled too: the artifact's report says it.
                let said = m.absent && e.kind() == io::ErrorKind::NotFound;
                if carve && !said {
                    let then = if m.protection && e.kind() == io::ErrorKind::NotFound {
                        "the command can create it with the rights of the rule above it, and \
                         sbx moves what it created aside when the run ends (NAME.sbx-blocked)"
                    } else {
                        "if it is created during the run the rights of the rule above it apply"
                    };
                    let mut l = line(
                        path.clone(),
                        Status::Wider,
                        format!(
                            "cannot open {path} at launch ({e}): it is not mounted over, so {then}"
                        ),
                    );
                    // sbx's own protection of an absent path: reported, not
                    // refused (docs/protected.md).
                    l.advisory = m.protection;
                    lines.push(l);
                }
            }
        }
    }
    // Only the outermost: the sweep looks below each.
    tops.sort();
    tops.dedup();
    let mut repo_tops: Vec<String> = Vec::new();
    for t in tops {
        if !repo_tops.iter().any(|o| crate::ir::path_within(&t, o)) {
            repo_tops.push(t);
        }
    }
    Ok(PlannedMounts {
        mounts: out,
        lines,
        protections,
        repo_tops,
    })
}

/// What [`plan_mounts`] found.
pub struct PlannedMounts<F> {
    pub mounts: Vec<MountPlan<F>>,
    /// Carve-outs that are not mounted, and why.
    pub lines: Vec<Precision>,
    /// Every path of sbx's own protections (and hidden paths), present
    /// or not: what each is at launch is recorded (`identity`).
    pub protections: Vec<String>,
    /// The tops of the writable trees sbx protects (each protected
    /// `.git/hooks` or `.git/config`'s worktree, the outermost only): after the run,
    /// repositories made or changed below them are swept (`repos`).
    pub repo_tops: Vec<String>,
}

/// POLICY.md §13: the files this run was read from (the artifact of
/// `sbx run --artifact`) are read-only to the child when a rule would
/// let it write them, as `sbx run POLICY` keeps its policy file
/// (`lower::hidden::run_files`). A read-only bind mount on the file: no
/// write, no truncation, and nothing renamed over it (EBUSY). Landlock
/// unions the rights of every rule above a path, so any rule above it
/// with a write right is enough to need it.
pub fn run_file_mounts<F>(
    rules: &[super::plan::PathRule<F>],
    files: &[std::path::PathBuf],
) -> Vec<MountRule> {
    let mut out: Vec<MountRule> = Vec::new();
    for f in files {
        let Some(path) = crate::canonical::canonicalize(f)
            .ok()
            .and_then(|c| c.to_str().map(String::from))
        else {
            continue;
        };
        let writable = rules
            .iter()
            .any(|r| crate::ir::path_within(&path, &r.path) && writes(r.rights));
        if writable && !out.iter().any(|m| m.path == path) {
            out.push(MountRule {
                path,
                kind: MountKind::Bind,
                read_only: true,
                noexec: false,
                protection: false,
                absent: false,
            });
        }
    }
    out
}

/// sbx's state directory (`state`, where it exists), hidden where a
/// rule shows it, a rule naming it too: the journal of other runs, their
/// private caches and the records sbx keeps between runs are none of the
/// command's business, and what it can open there it can lock. (A rule
/// naming it may also be sbx's own: `this run's policy` keeps it
/// read-only inside a writable grant.) A rule on a path beneath it
/// consents to that path, as for host sockets: then only
/// [`run_file_mounts`] keeps it read-only.
pub fn state_hidden<F>(
    rules: &[super::plan::PathRule<F>],
    state: &std::path::Path,
) -> Option<MountRule> {
    let path = crate::canonical::canonicalize(state)
        .ok()
        .and_then(|c| c.to_str().map(String::from))?;
    let covered = rules.iter().any(|r| crate::ir::path_within(&path, &r.path));
    let beneath = rules
        .iter()
        .any(|r| crate::ir::path_within(&r.path, &path) && r.path != path);
    (covered && !beneath).then(|| MountRule::hidden(path))
}

/// The artifact's links with placeholders expanded.
pub fn expand_links(
    links: &[crate::back::landlock::Link],
    values: &Values,
) -> Result<Vec<(String, String)>, String> {
    let lookup = |name: &str| match name {
        "WORKSPACE" => Some(values.workspace.clone()),
        "HOME" => Some(values.home.clone()),
        "TMPDIR" => Some(values.temp.clone()),
        _ => None,
    };
    links
        .iter()
        .map(|l| {
            let p = expand_template(&l.path, &lookup)?;
            let t = expand_template(&l.target, &lookup)?;
            if !p.starts_with('/') || !t.starts_with('/') {
                return Err(format!("link {p:?} -> {t:?} is not absolute"));
            }
            Ok((p, t))
        })
        .collect()
}

/// What the policy asks of the layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    pub mount: bool,
    pub pid: bool,
    pub net: bool,
}

impl Wanted {
    pub fn any(&self) -> bool {
        self.mount || self.pid || self.net
    }
}

/// The policy has no network at all: TCP handled in both directions
/// with no port, and no socket but local ones.
pub fn private_net(art: &LinuxArtifact) -> bool {
    let handled = art.landlock.ruleset.iter().any(|r| {
        let n = r.handled_access_net.as_deref().unwrap_or(&[]);
        n.iter().any(|x| x == "bind_tcp") && n.iter().any(|x| x == "connect_tcp")
    });
    handled
        && art.landlock.net_port.is_empty()
        && art
            .seccomp
            .sockets
            .as_ref()
            .is_some_and(|s| !s.allow.iter().any(|a| a == "udp"))
}

/// Which namespaces this run uses: `auto` and `always` use the layer
/// (`never`: none). Without it Landlock alone cannot stop the command
/// from changing the modes and times of any file its user owns, granted
/// or not (Landlock checks neither `chmod` nor `utimensat`; as root,
/// most of the system's), so `auto` takes it whatever the policy
/// asks for, and falls back to Landlock alone only where namespaces are
/// unavailable (POLICY.md §13). Once used, the PID namespace comes with
/// it (lifetime and `/proc`); the network namespace only for a policy
/// with no network, or for the `proxy`.
pub fn wanted(art: &LinuxArtifact, proxy: bool) -> Wanted {
    let net = private_net(art) || proxy;
    let used = !matches!(art.namespaces.mode, Namespaces::Never);
    Wanted {
        mount: used,
        pid: used,
        net: used && net,
    }
}

/// What a run without the layer gives up (POLICY.md §13), for the one
/// line `namespaces = "never"` and a host without namespaces print:
/// `carve_outs` are the mounts it would have made, `root` says sbx runs
/// as root.
pub fn given_up(carve_outs: &[String], root: bool) -> String {
    let mut out = String::from(
        "which gives up: protected paths (.git/hooks, .git/config, … can be changed \
         during the run; sbx moves aside what was created or replaced when it ends, not what \
         was edited in place), private temp directories (the host's /tmp and its sockets are \
         shared), hiding the host's paths and sockets outside the grants, a private \
         process tree and /proc",
    );
    out.push_str(if root {
        "; and the modes and times of any file root owns (most of the system's) can be \
         changed, in the grants or not (Landlock checks neither chmod nor utime)"
    } else {
        "; and the modes and times of any file this user owns can be changed, in the \
         grants or not (Landlock checks neither chmod nor utime)"
    });
    if !carve_outs.is_empty() {
        out.push_str("; these carve-outs get the rights of the rule above them: ");
        out.push_str(&carve_outs.join(", "));
    }
    out
}

/// One line for `--report`.
pub fn describe(w: &Wanted, user: bool, mounts: usize) -> String {
    let mut names = Vec::new();
    if user {
        names.push("user");
    }
    if w.mount {
        names.push("mount");
    }
    if w.pid {
        names.push("pid");
    }
    if w.net {
        names.push("net (nothing but lo)");
    }
    if names.is_empty() {
        "none".into()
    } else {
        format!("{}; {mounts} mount(s)", names.join(", "))
    }
}

/// A mount for `--report`.
pub fn mount_words<F>(m: &MountPlan<F>) -> String {
    if m.pin {
        return format!(
            "pin {}: on the way to a carve-out, cannot be renamed or removed",
            m.path
        );
    }
    let what = match (m.kind, m.read_only, m.noexec) {
        (MountKind::Hidden, _, _) => "hidden",
        (_, true, true) => "read-only, noexec",
        (_, true, false) => "read-only",
        (_, false, true) => "noexec",
        _ => "bind (keeps its rule's rights beneath a carve-out)",
    };
    format!("mount {}: {what}", m.path)
}

/// A new user namespace's `setgroups`, `uid_map` and `gid_map`: this
/// user's ids mapped to themselves, and no `setgroups`.
pub fn own_id_maps() -> Result<[CString; 3], String> {
    // SAFETY: no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let c = |s: String| CString::new(s).map_err(|e| e.to_string());
    Ok([
        c("deny".into())?,
        c(format!("{uid} {uid} 1\n"))?,
        c(format!("{gid} {gid} 1\n"))?,
    ])
}

/// The child's part of the layer, and the parent's end of the socket
/// the proxy's listeners come back on.
pub fn prepare(
    w: &Wanted,
    user: bool,
    mounts: Vec<MountPlan<std::fs::File>>,
    // The proxy's listeners' ports, the relay's (issue #37) and the
    // loopback forwards' (#36).
    (ports, relay_ports, forward_ports): (&[u16], &[u16], &[u16]),
    net_rules: bool,
    proc_rules: Vec<(String, u64)>,
    root: Option<NewRoot>,
) -> Result<(NsPrep, Handback), String> {
    let mut flags = libc::CLONE_NEWNS;
    if user {
        flags |= libc::CLONE_NEWUSER;
    }
    if w.net {
        flags |= libc::CLONE_NEWNET;
    }
    let maps = if user { Some(own_id_maps()?) } else { None };
    let listeners = ports.len();
    let ipv6 = crate::runtime::proxy::ipv6();
    let binds = crate::runtime::proxy::relay_listens(relay_ports, forward_ports, ipv6);
    if listeners + binds.len() > MAX_LISTENERS {
        return Err(format!(
            "the proxy, relay and forwards ask for {} listeners (at most {MAX_LISTENERS})",
            listeners + binds.len()
        ));
    }
    let (mine, theirs) = if listeners > 0 && w.net {
        let (mine, theirs) = super::passfd::socketpair().map_err(|e| format!("socketpair: {e}"))?;
        (Some(mine), Some(theirs))
    } else {
        (None, None)
    };
    let (keep_mine, keep) = super::passfd::socketpair().map_err(|e| format!("socketpair: {e}"))?;
    let mounts = mounts
        .into_iter()
        .map(|m| {
            Ok(NsMount {
                dev: m.kind != MountKind::Hidden && device_path(&m.path),
                path: CString::new(m.path).map_err(|e| e.to_string())?,
                fd: m.handle.into(),
                is_dir: m.is_dir,
                hidden: m.kind == MountKind::Hidden,
                read_only: m.read_only,
                noexec: m.noexec,
                pin: m.pin,
                show: m
                    .show
                    .into_iter()
                    .map(|(p, f)| {
                        let name = p.rsplit('/').next().unwrap_or_default().to_string();
                        Ok(super::nschild::Shown {
                            path: CString::new(p).map_err(|e| e.to_string())?,
                            name: CString::new(name).map_err(|e| e.to_string())?,
                            fd: f.into(),
                        })
                    })
                    .collect::<Result<_, String>>()?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((
        NsPrep {
            flags,
            pid: w.pid,
            maps,
            early: None,
            mounts,
            listeners: if theirs.is_some() { listeners } else { 0 },
            ports: {
                let mut p = [0; MAX_LISTENERS];
                p[..listeners].copy_from_slice(ports);
                p
            },
            relay: match (&theirs, relay_ports.is_empty()) {
                (Some(_), false) => {
                    let attach = root
                        .as_ref()
                        .filter(|_| w.pid)
                        .and_then(|r| r.attach.to_str().ok());
                    Some(super::relaynet::RelayPrep::new(attach, ipv6)?)
                }
                _ => None,
            },
            bind_count: if theirs.is_some() { binds.len() } else { 0 },
            binds: {
                let mut b = [std::net::SocketAddr::from(([0, 0, 0, 0], 0)); MAX_LISTENERS];
                b[..binds.len()].copy_from_slice(&binds);
                b
            },
            sock: theirs,
            keep: Some(keep),
            net_rules,
            proc_rules: if w.pid {
                proc_rules
                    .into_iter()
                    .map(|(p, r)| Ok((CString::new(p).map_err(|e| e.to_string())?, r)))
                    .collect::<Result<_, String>>()?
            } else {
                Vec::new()
            },
            root: if w.pid { root } else { None },
        },
        Handback {
            proxy: mine,
            mount_ns: keep_mine,
        },
    ))
}

/// sbx's ends of the sockets the setup process sends descriptors over.
pub struct Handback {
    /// The proxy's, the relay's and the forwards' listeners.
    pub proxy: Option<OwnedFd>,
    /// The setup process's mount namespace (`NsPrep::keep`).
    pub mount_ns: OwnedFd,
}

/// The mount namespace the setup process sent, once the spawn has
/// returned (none if it sent nothing).
pub fn receive_mount_ns(sock: &OwnedFd) -> Option<OwnedFd> {
    super::passfd::receive(sock, 1, false).pop()
}

/// The listeners the child sent (none if it sent nothing usable).
pub fn receive_listeners(sock: &OwnedFd, n: usize) -> Vec<std::net::TcpListener> {
    super::passfd::receive(sock, n, true)
        .into_iter()
        .map(std::net::TcpListener::from)
        .collect()
}

/// `/dev`'s links into the process's own descriptors.
const DEV_LINKS: [&str; 4] = ["fd", "stdin", "stdout", "stderr"];

/// The new root's plan: every rule path (opened before the fork), none
/// beneath another, their ancestors, and the host's top-level symlinks.
/// A rule path for the new root, opened before the fork.
pub struct RootRule {
    pub path: String,
    pub file: std::fs::File,
    /// The path as written when a symlink led to `path`: the new root
    /// gets the same symlink there.
    pub via: Option<String>,
    /// The rule itself has a right beyond reading and executing
    /// ([`writes`]).
    pub writable: bool,
}

/// The rule's rights go beyond reading and executing: its path is not
/// mounted read-only in the new root.
pub fn writes(rights: crate::back::landlock::rights::FsSet) -> bool {
    use crate::back::landlock::rights::FsSet;
    let reads = ["execute", "read_file", "read_dir", "ioctl_dev"]
        .iter()
        .filter_map(|n| FsSet::named(n))
        .fold(FsSet::EMPTY, FsSet::or);
    !rights.minus(reads).is_empty()
}

/// A device grant keeps its device files usable: every other mount of
/// the new root is `nodev`.
fn device_path(path: &str) -> bool {
    crate::ir::path_within(path, "/dev")
}

/// What a new root's path shows instead of the host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Private {
    No,
    /// The run's own directory on disk.
    Dir,
    /// A fresh tmpfs, `paths[N]`.
    Fresh(usize),
}

/// Every proper ancestor of `rel` (`a`, `a/b` for `a/b/c`).
fn ancestors(rel: &str, out: &mut Vec<String>) {
    let mut at = 0;
    while let Some(i) = rel[at..].find('/') {
        out.push(rel[..at + i].to_string());
        at += i + 1;
    }
}

/// `None` when a rule grants `/` itself (the new root would be the
/// host's).
/// `aliases`: (symlink, target) pairs from the artifact (`namespaces.links`,
/// expanded).
/// `temp`: the run's own temp directories, shown instead of the host's.
/// `caches`: the run's own package caches, mounted over their paths.
pub fn new_root(
    mut rules: Vec<RootRule>,
    aliases: &[(String, String)],
    cwd: &std::path::Path,
    temp: Option<&PrivateTemp>,
    caches: Vec<super::caches::Mount>,
) -> Result<Option<NewRoot>, String> {
    use std::os::unix::ffi::OsStrExt;
    let c = |s: &[u8]| CString::new(s).map_err(|e| e.to_string());
    rules.sort_by(|a, b| a.path.cmp(&b.path));
    let mut paths: Vec<Visible> = Vec::new();
    let mut dirs: Vec<String> = Vec::new();
    let mut links = Vec::new();
    let pts = super::pts::wanted(rules.iter().map(|r| r.path.as_str()));
    for m in &caches {
        // Beneath a rule's path the directory exists already (the host's,
        // shown there); elsewhere the new root gets it and its parents.
        let rel = m.rel.to_str().map_err(|e| e.to_string())?;
        let abs = format!("/{rel}");
        if !rules.iter().any(|r| crate::ir::path_within(&abs, &r.path)) {
            ancestors(rel, &mut dirs);
            dirs.push(rel.to_string());
        }
    }
    if pts {
        dirs.extend(["dev".to_string(), "dev/pts".to_string()]);
        links.push((c(b"dev/ptmx")?, c(b"pts/ptmx")?));
    }
    let vias: Vec<(&str, &str)> = rules
        .iter()
        .filter_map(|r| r.via.as_deref().map(|v| (v, r.path.as_str())))
        .chain(aliases.iter().map(|(a, t)| (a.as_str(), t.as_str())))
        .collect();
    for (via, target) in vias {
        // A symlink that led to a rule path, where it was. Only when no
        // ancestor is a symlink (nothing is created through one) and it
        // is not inside a granted path (the bind mount shows it there).
        let rel = via.trim_start_matches('/');
        let mut up = Vec::new();
        ancestors(rel, &mut up);
        let through_link = up.iter().any(|a| {
            std::fs::symlink_metadata(format!("/{a}")).is_ok_and(|m| m.file_type().is_symlink())
        });
        let inside = rules.iter().any(|o| crate::ir::path_within(via, &o.path));
        let seen = links
            .iter()
            .any(|(p, _): &(CString, CString)| p.as_bytes() == rel.as_bytes());
        if !through_link && !inside && !seen {
            dirs.extend(up);
            links.push((c(rel.as_bytes())?, c(target.as_bytes())?));
        }
    }
    // Landlock unions the rights of every rule above a path, so a path
    // is writable when its rule or any rule above it is. The outermost
    // rules are mounted, and beneath a read-only one each rule that
    // writes gets its own writable mount on top (moved in after its
    // parent: the list is sorted). A nested rule that does not change
    // writability rides along in its parent's recursive clone.
    // A shared temp directory shows the run's own instead (a directory
    // on disk, or for `/dev/shm` a fresh tmpfs), and every rule directly
    // beneath it gets its own mount, on a stub there.
    // The rules above the current one: (path, writable, private temp).
    let mut above: Vec<(String, bool, Private)> = Vec::new();
    for RootRule {
        path,
        file,
        writable,
        ..
    } in rules
    {
        if path == "/" {
            return Ok(None);
        }
        // The PID namespace's fresh `/proc` is mounted over `/proc` in
        // every new root (`nschild::enter_root`): a clone of the host's
        // beneath it would be hidden, cost a clone and its teardown, and
        // leave the host's processes one unmount away.
        if crate::ir::path_within(&path, "/proc") {
            continue;
        }
        while above
            .last()
            .is_some_and(|(p, _, _)| !crate::ir::path_within(&path, p))
        {
            above.pop();
        }
        let parent = above.last().map(|&(_, w, _)| w);
        let in_private = above
            .last()
            .filter(|(_, _, private)| *private != Private::No)
            .map(|(p, _, private)| (p.clone(), *private));
        let private = match temp {
            Some(t) if t.shm && path == super::temp::SHM => Private::Fresh(paths.len()),
            Some(t) if t.source(&path).is_some() => Private::Dir,
            _ => Private::No,
        };
        let writable = writable || parent == Some(true);
        above.push((path.clone(), writable, private));
        if parent == Some(writable) && private == Private::No && in_private.is_none() {
            continue;
        }
        let (file, open_at, is_dir) = match temp.and_then(|t| t.source(&path)) {
            Some((dir, handle)) => (
                handle
                    .try_clone()
                    .map_err(|e| format!("{}: {e}", dir.display()))?,
                dir.as_os_str().as_bytes().to_vec(),
                true,
            ),
            None => {
                let is_dir = file.metadata().map_err(|e| e.to_string())?.is_dir();
                (file, path.as_bytes().to_vec(), is_dir)
            }
        };
        match (&in_private, temp) {
            (Some((under, Private::Dir)), Some(t)) => t
                .stub(under, &path, is_dir)
                .map_err(|e| format!("the run's temp directory, for {path}: {e}"))?,
            (Some((under, Private::Fresh(at))), _) => {
                // Made in the fresh tmpfs by the child, parents first.
                let rel = path[under.len()..].trim_start_matches('/');
                let mut up = Vec::new();
                ancestors(rel, &mut up);
                let stubs = &mut paths[*at].stubs;
                for d in up {
                    stubs.push((c(d.as_bytes())?, true));
                }
                stubs.push((c(rel.as_bytes())?, is_dir));
            }
            _ => {}
        }
        let rel = path.trim_start_matches('/').to_string();
        if parent.is_none() {
            // Beneath another mount the directories exist already.
            ancestors(&rel, &mut dirs);
        }
        paths.push(Visible {
            dev: private == Private::No && device_path(&path),
            path: c(&open_at)?,
            rel: c(rel.as_bytes())?,
            fd: file.into(),
            is_dir,
            read_only: !writable,
            nested: parent.is_some(),
            fresh: matches!(private, Private::Fresh(_)),
            stubs: Vec::new(),
        });
    }
    dirs.sort();
    dirs.dedup();
    // Where only some of `/dev` is visible, its links into the process's
    // own descriptors as the host has them (`/dev/fd` → `/proc/self/fd`,
    // `/dev/stderr` …): shells open them for `<(…)` and `> /dev/stderr`.
    // They reach nothing the command does not hold already, and the fresh
    // `/proc` is its own; what a descriptor names is checked again when
    // it is reopened through one.
    if dirs.binary_search_by(|d| d.as_str().cmp("dev")).is_ok() {
        for name in DEV_LINKS {
            let rel = format!("dev/{name}");
            let taken = paths
                .iter()
                .any(|v| crate::ir::path_within(v.rel.to_str().unwrap_or(""), &rel))
                || links.iter().any(|(p, _)| p.as_bytes() == rel.as_bytes());
            if taken {
                continue;
            }
            if let Ok(target) = std::fs::read_link(format!("/{rel}")) {
                let t = target.as_os_str().as_bytes();
                if t.starts_with(b"/proc/self/") {
                    links.push((c(rel.as_bytes())?, c(t)?));
                }
            }
        }
    }
    for e in crate::dirents::read_dir("/")
        .map_err(|e| format!("/: {e}"))?
        .flatten()
    {
        if e.is_symlink() {
            if let Ok(target) = std::fs::read_link(e.path()) {
                links.push((
                    c(e.file_name().as_bytes())?,
                    c(target.as_os_str().as_bytes())?,
                ));
            }
        }
    }
    let trees = paths.iter().map(|_| AtomicI32::new(-1)).collect();
    Ok(Some(NewRoot {
        paths,
        dirs: dirs
            .iter()
            .map(|d| c(d.as_bytes()))
            .collect::<Result<_, _>>()?,
        links,
        attach: c(b"/tmp")?,
        attach_proc: c(b"/tmp/proc")?,
        cwd: c(cwd.as_os_str().as_bytes())?,
        trees,
        tmpfs: AtomicI32::new(-1),
        pts,
        caches,
    }))
}
