//! Lowering: the merged policy, in the user's terms, becomes the IR:
//! absolute normalised grants, port sets, env patterns, resolved commands.

pub(crate) mod above;
mod commands;
mod env;
pub mod external;
pub mod git;
pub mod hidden;
mod lookup;
mod net;
pub mod paths;
pub mod presets;
pub mod protect;
pub mod ssh;
#[cfg(unix)]
pub(crate) mod steered;
#[cfg(target_os = "linux")]
mod walk;

use crate::diag::{codes, Diagnostic, Location, Severity};
use crate::hashed::Map;
use crate::ir::{
    self, Access, Grant, Ir, Os, PathKind, PathMode, Ports, Precision, Source, Status,
};
use crate::policy::model::{Enforcement, Preset};
use crate::policy::{Located, Policy};
use paths::{anchor, join, macos_alias, normalise, Anchor, Resolver};

use commands::lower_commands;
pub use commands::resolve_command;
use env::lower_env;
pub use env::{denied as env_denied, KEPT_BY_DEFAULT};
use net::lower_net;

/// RFD 075's built-in sensitive paths; user entries are appended.
pub const SENSITIVE_PATHS: &[&str] = &[
    "~/.ssh/",
    "~/.gnupg/",
    "~/.gpg/",
    "~/.aws/credentials",
    "~/.config/gcloud/",
    "~/.kube/config",
    "~/.docker/config.json",
    "**/.env",
    "**/.env.*",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh/",
    "~/.azure/",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials.toml",
];

/// One approved external mount (RFD D43), as read from the approvals store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Approval {
    pub workspace: String,
    pub rule_path: String,
    pub canonical_target: String,
}

/// Everything lowering needs to know about the host.
#[derive(Debug, Clone)]
pub struct Options {
    /// Absolute workspace directory.
    pub workspace: String,
    pub home: String,
    pub temp: String,
    pub os: Os,
    /// Portable: placeholders instead of host paths, nothing resolved.
    pub portable: bool,
    /// `PATH` used to resolve `[commands]`.
    pub path_var: Option<String>,
    pub approvals: Vec<Approval>,
}

/// The IR plus the warnings lowering produced.
#[derive(Debug, Clone)]
pub struct Lowered {
    pub ir: Ir,
    pub diagnostics: Vec<Diagnostic>,
}

struct Ctx<'a> {
    opts: &'a Options,
    /// Resolve on this host: not portable, and lowering for the host OS.
    resolve: bool,
    roots: ir::Roots,
    diags: Vec<Diagnostic>,
    notes: Vec<Precision>,
    /// Memoised canonicalisation for this lowering.
    resolver: Resolver,
    /// The approvals by rule path, in store order: each external rule
    /// looks at its own, not at the whole store.
    approvals: Map<&'a str, Vec<Approval>>,
}

pub fn lower(policy: &Policy, opts: &Options) -> Result<Lowered, Vec<Diagnostic>> {
    let mut l = lower_unhashed(policy, opts)?;
    l.ir.ir_hash = ir_hash(&l.ir);
    l.ir.policy_hash = crate::policy::hash::policy_hash(policy);
    Ok(l)
}

/// [`lower`] without the IR's `policy_hash` and `ir_hash` (left empty), for an IR that
/// is applied and dropped, never written: `sbx run POLICY`. Hashing costs
/// that run a serialisation of the whole IR and two `cpuid`s, which trap
/// to the hypervisor in a VM.
pub fn lower_unhashed(policy: &Policy, opts: &Options) -> Result<Lowered, Vec<Diagnostic>> {
    let resolve = !opts.portable && opts.os == Os::host();
    let mut resolver = Resolver::default();
    // Whether the workspace is a directory, known from resolving it.
    let mut workspace_dir = None;
    let roots = if opts.portable {
        ir::Roots::portable()
    } else {
        let mut fix = |p: &str| root_in(&mut resolver, p, opts.os, resolve);
        let workspace;
        (workspace, workspace_dir) = fix(&opts.workspace);
        ir::Roots {
            workspace,
            home: fix(&opts.home).0,
            temp: fix(&opts.temp).0,
        }
    };
    let mut cx = Ctx {
        opts,
        resolve,
        roots,
        diags: Vec::new(),
        notes: Vec::new(),
        resolver,
        approvals: Map::default(),
    };
    for a in &opts.approvals {
        cx.approvals
            .entry(a.rule_path.as_str())
            .or_default()
            .push(a.clone());
    }
    if resolve && workspace_dir != Some(true) {
        return Err(vec![Diagnostic::new(
            codes::BAD_PATH,
            format!("workspace {} is not a directory", opts.workspace),
        )
        .help("pass --workspace DIR, or run sbx from the workspace")]);
    }

    let mut grants = Vec::new();
    let presets = policy
        .process
        .presets
        .clone()
        .unwrap_or_else(|| Preset::DEFAULT.to_vec());
    for p in presets {
        for root in presets::roots(p, opts.os) {
            let path = match root.base {
                presets::Base::Absolute => root.path.to_string(),
                presets::Base::Home => join(&cx.roots.home, root.path),
                presets::Base::Temp => join(&cx.roots.temp, root.path),
            };
            let source = Source::Preset {
                name: p.as_str().into(),
            };
            // Preset roots that do not exist here are simply not granted.
            if let Some(g) = cx.grant_abs(&path, root.access, source, false) {
                grants.push(g);
            }
        }
    }
    for (list, access) in [
        (&policy.process.read_roots, Access::READ),
        (&policy.process.write_roots, Access::READ_WRITE),
    ] {
        for r in list.iter().flatten() {
            if let Some(g) = cx.rule_grant(r, access, Source::ProcessRoot, None, false) {
                grants.push(g);
            }
        }
    }
    match &policy.fs {
        None => {
            let all = Access {
                execute: true,
                ..Access::READ_WRITE
            };
            if let Some(g) = cx.rule_grant(".", all, Source::Default, None, false) {
                grants.push(g);
            }
            // The repository the workspace lies in, read-only, so that
            // git works in a subdirectory (not in portable mode: it is
            // the host's layout).
            if resolve {
                grants.extend(cx.repository_above());
            }
        }
        Some(rules) => {
            for (index, r) in rules.iter().enumerate() {
                if let Some(g) = cx.fs_rule(index, r)? {
                    grants.push(g);
                }
            }
        }
    }
    let commands = lower_commands(&mut cx, policy, &mut grants);
    // Links the command could have planted (POLICY.md §13).
    #[cfg(unix)]
    if resolve {
        cx.drop_steered(policy, &mut grants);
    }
    let mut fs = finish_grants(grants);
    cx.protect(policy, &mut fs);
    cx.known_hosts(policy, &mut fs);

    let net = lower_net(&mut cx, policy);
    let env = lower_env(policy, opts.os);
    let mut sensitive: Vec<String> = SENSITIVE_PATHS.iter().map(|s| s.to_string()).collect();
    for s in &policy.sensitive_paths {
        if !sensitive.contains(&s.value) {
            sensitive.push(s.value.clone());
        }
    }
    let mut ir = Ir {
        sbx: ir::FORMAT_VERSION,
        policy_hash: String::new(),
        ir_hash: String::new(),
        enforcement: match policy.enforcement {
            Some(Enforcement::Required) => ir::Enforcement::Required,
            _ => ir::Enforcement::BestEffort,
        },
        mode: if opts.portable {
            PathMode::Portable
        } else {
            PathMode::Resolved
        },
        os: opts.os,
        roots: cx.roots.clone(),
        fs,
        net,
        env,
        commands,
        limits: ir::Limits {
            max_processes: policy.limits.max_processes,
            max_memory_mib: policy.limits.max_memory_mib,
            cpu_time_s: policy.limits.cpu_time_s,
            wall_time_s: policy.limits.wall_time_s,
        },
        sensitive_paths: sensitive,
        macos: ir::MacosExtras {
            mach_lookup: policy.macos.mach_lookup.clone().unwrap_or_default(),
            allow_pty: policy.macos.allow_pty.unwrap_or(false),
        },
        linux: ir::LinuxExtras {
            scopes: policy.linux.scopes.as_ref().map(|s| {
                s.iter()
                    .map(|x| {
                        match x {
                            crate::policy::model::Scope::AbstractUnixSocket => {
                                "abstract_unix_socket"
                            }
                            crate::policy::model::Scope::Signal => "signal",
                        }
                        .to_string()
                    })
                    .collect()
            }),
            min_abi: policy.linux.min_abi,
            namespaces: match policy.linux.namespaces {
                None | Some(crate::policy::model::Namespaces::Auto) => ir::Namespaces::Auto,
                Some(crate::policy::model::Namespaces::Always) => ir::Namespaces::Always,
                Some(crate::policy::model::Namespaces::Never) => ir::Namespaces::Never,
            },
            capabilities: {
                let mut c = policy.linux.capabilities.clone().unwrap_or_default();
                c.sort();
                c.dedup();
                c
            },
            nested_user_namespaces: policy.linux.nested_user_namespaces.unwrap_or(false),
            // Refused unless the policy says otherwise: the runtimes
            // measured (docs/linux.md, "memfd execution") run without it.
            memfd_exec: policy.linux.memfd_exec.unwrap_or(false),
        },
        windows: ir::WindowsExtras {
            token: policy
                .windows
                .token
                .map(|t| t.as_str().to_string())
                .unwrap_or_else(|| "restricted".into()),
            appcontainer: policy.windows.appcontainer.unwrap_or(false),
            ui_restrictions: policy
                .windows
                .ui_restrictions
                .iter()
                .flatten()
                .map(|u| u.as_str().to_string())
                .collect(),
            kill_on_close: policy.windows.kill_on_close.unwrap_or(true),
        },
        precision: Vec::new(),
    };
    cx.notes.sort();
    cx.notes.dedup();
    ir.precision = cx.notes;
    Ok(Lowered {
        ir,
        diagnostics: cx.diags,
    })
}

/// The rights an `[[fs]]` rule grants (`write` = create + update + delete).
pub fn rule_access(v: &crate::policy::model::FsRule) -> Access {
    let t = |b: Option<bool>| b == Some(true);
    let w = t(v.write);
    Access {
        read: t(v.read),
        create: w || t(v.create),
        update: w || t(v.update),
        delete: w || t(v.delete),
        execute: t(v.execute),
    }
}

/// A root (workspace, home, temp) spelled as lowering spells it: `mount`
/// and `approve` key approvals on the same canonical workspace.
pub fn root_path(p: &str, os: Os, resolve: bool) -> String {
    root_in(&mut Resolver::default(), p, os, resolve).0
}

/// [`root_path`] with `r`, and whether the root is a directory (`None`
/// when it does not exist or was not looked at).
fn root_in(r: &mut Resolver, p: &str, os: Os, resolve: bool) -> (String, Option<bool>) {
    let p = if os == Os::Windows {
        p.replace('\\', "/")
    } else {
        p.to_string()
    };
    if resolve {
        r.resolve(&p)
    } else {
        (normalise(&p), None)
    }
}

/// sha256 of the IR's JSON with empty hash fields (whatever the IR holds
/// in them): same inputs, same hash.
pub fn ir_hash(ir: &Ir) -> String {
    crate::policy::hash::sha256_json(&crate::ir::Hashes {
        ir,
        policy_hash: "",
        ir_hash: "",
    })
}

fn rule_source(index: usize, loc: &Option<Location>) -> Source {
    match loc {
        Some(l) => Source::Rule {
            index,
            file: l.file.clone(),
            line: l.line,
            column: l.column,
        },
        None => Source::Rule {
            index,
            file: String::new(),
            line: 0,
            column: 0,
        },
    }
}

impl Ctx<'_> {
    fn windows(&self) -> bool {
        self.opts.os == Os::Windows
    }

    fn fs_rule(
        &mut self,
        index: usize,
        r: &Located<crate::policy::model::FsRule>,
    ) -> Result<Option<Grant>, Vec<Diagnostic>> {
        let v = &r.value;
        let access = rule_access(v);
        let source = rule_source(index, &r.loc);
        if v.external == Some(true) {
            return self.external(r, access, source);
        }
        Ok(self.rule_grant(&v.path, access, source, r.loc.clone(), true))
    }

    /// A grant for a policy path (`.`, `~/x`, `/abs`).
    fn rule_grant(
        &mut self,
        path: &str,
        access: Access,
        source: Source,
        loc: Option<Location>,
        check_symlink_escape: bool,
    ) -> Option<Grant> {
        let (a, rel) = anchor(path, self.windows());
        let abs = match a {
            Anchor::Workspace => join(&self.roots.workspace, &rel),
            Anchor::Home => join(&self.roots.home, &rel),
            Anchor::Absolute => normalise(&rel),
        };
        if check_symlink_escape && a == Anchor::Workspace && self.resolve {
            let (canon, _) = self.resolver.canonicalise(&abs);
            if !ir::path_within(&canon, &self.roots.workspace) {
                self.diags.push(
                    Diagnostic::new(
                        codes::SYMLINK_OUT,
                        format!("{path:?} resolves to {canon}, outside the workspace; the rule is dropped"),
                    )
                    .at(loc)
                    .help("mark the rule `external = true` and approve it with `sbx approve`"),
                );
                self.notes.push(Precision {
                    rule: source.label(),
                    target: "ir".into(),
                    status: Status::Dropped,
                    reason: format!("resolves outside the workspace through a symlink ({canon})"),
                    advisory: false,
                });
                return None;
            }
        }
        self.grant_abs(&abs, access, source, true)
    }

    /// A grant for an absolute (or placeholder-rooted) path. `keep_missing`:
    /// policy rules are kept when missing (SBPL matches by name); preset
    /// roots that do not exist on this host are left out.
    fn grant_abs(
        &mut self,
        abs: &str,
        access: Access,
        source: Source,
        keep_missing: bool,
    ) -> Option<Grant> {
        let mut aliases = Vec::new();
        let (path, kind) = if self.resolve {
            let (canon, dir) = self.resolver.resolve(abs);
            // Windows: `C:/x` and `c:\X` name the canonical `C:\x`; only a
            // real difference (a junction, a link) is worth an alias.
            let lexical = if self.windows() {
                abs.replace('/', "\\")
            } else {
                abs.to_string()
            };
            let same = if self.windows() {
                canon.eq_ignore_ascii_case(&lexical)
            } else {
                canon == lexical
            };
            if !same {
                aliases.push(lexical);
            }
            let kind = match dir {
                None => PathKind::Missing,
                Some(true) => PathKind::Dir,
                Some(false) => PathKind::File,
            };
            (canon, kind)
        } else {
            match macos_alias(abs) {
                // On a Mac `/etc`, `/tmp` and `/var` are links into
                // `/private`: spelled as resolving would spell them there,
                // so a rule and a preset on one directory are one grant.
                Some(long) if self.opts.os == Os::Macos && long.starts_with("/private/") => {
                    aliases.push(abs.to_string());
                    (long, PathKind::Unknown)
                }
                _ => (abs.to_string(), PathKind::Unknown),
            }
        };
        if kind == PathKind::Missing && !keep_missing {
            return None;
        }
        if self.opts.os == Os::Macos {
            for p in [path.clone()].iter().chain(aliases.clone().iter()) {
                if let Some(a) = macos_alias(p) {
                    if a != path && !aliases.contains(&a) {
                        aliases.push(a);
                    }
                }
            }
        }
        aliases.sort();
        Some(Grant {
            path,
            access,
            kind,
            source,
            aliases,
            external: None,
        })
    }

    /// RFD D43: an `external = true` rule is granted only through an
    /// approved (rule path, canonical target) pair. The grant is on the
    /// canonical target alone, so every back end allows exactly the approved
    /// directory and a nested symlink leading elsewhere stays denied.
    fn external(
        &mut self,
        r: &Located<crate::policy::model::FsRule>,
        access: Access,
        source: Source,
    ) -> Result<Option<Grant>, Vec<Diagnostic>> {
        use crate::lower::external::{self as ext, KeyError, Resolution, Status as ApprovalStatus};
        let path = &r.value.path;
        let key = match ext::rule_key(path, self.windows()) {
            Ok(k) => k,
            Err(e) => {
                let (code, msg) = match e {
                    KeyError::NotRelative => (
                        codes::EXTERNAL_INSIDE,
                        format!("external rule {path:?} must be a workspace-relative symlink"),
                    ),
                    KeyError::ClimbsOut => (
                        codes::ESCAPES_WORKSPACE,
                        format!("external rule {path:?} climbs above the workspace"),
                    ),
                };
                return Err(vec![Diagnostic::new(code, msg).at(r.loc.clone()).help(
                    "external paths are reached through a symlink inside the workspace (sbx mount)",
                )]);
            }
        };
        // Lowering for another OS cannot see that OS's symlinks: expected,
        // so a note; a portable artifact losing the rule deserves a warning.
        let severity = if self.resolve || self.opts.portable {
            Severity::Warning
        } else {
            Severity::Note
        };
        let drop = |cx: &mut Ctx, why: String| {
            cx.diags.push(
                Diagnostic::new(
                    codes::EXTERNAL_DROPPED,
                    format!("external rule {path:?} dropped: {why}"),
                )
                .severity(severity)
                .at(r.loc.clone())
                .help("review the target and run `sbx approve POLICY`"),
            );
            cx.notes.push(Precision {
                rule: source.label(),
                target: "ir".into(),
                status: Status::Dropped,
                reason: format!("external rule not granted: {why}"),
                advisory: false,
            });
        };
        if !self.resolve {
            let why = if self.opts.portable {
                "a portable artifact cannot carry this host's symlinks and approvals"
            } else {
                "external rules are resolved only when lowering for this host's OS"
            };
            drop(self, why.into());
            return Ok(None);
        }
        let ws = self.roots.workspace.clone();
        let target = match ext::resolve_with(&mut self.resolver, &ws, &key) {
            Resolution::External(t) => t,
            Resolution::Inside(t) => {
                return Err(vec![Diagnostic::new(
                    codes::EXTERNAL_INSIDE,
                    format!("external rule {path:?} resolves inside the workspace ({t})"),
                )
                .at(r.loc.clone())
                .help("drop `external = true`: this path is in the workspace")])
            }
            Resolution::Broken { link: Some(l) } => {
                drop(
                    self,
                    format!("broken symlink ({key} -> {l}, which does not exist)"),
                );
                return Ok(None);
            }
            Resolution::Broken { link: None } => {
                drop(self, format!("{key} does not exist in the workspace"));
                return Ok(None);
            }
        };
        let approvals = self
            .approvals
            .get(key.as_str())
            .map_or(&[][..], Vec::as_slice);
        match ext::status(approvals, &ws, &key, &target) {
            ApprovalStatus::Approved => {}
            ApprovalStatus::Unapproved => {
                drop(self, format!("not approved (target {target})"));
                return Ok(None);
            }
            ApprovalStatus::Retargeted { was } => {
                drop(
                    self,
                    format!("retargeted: {key} was approved for {was} but now points to {target}"),
                );
                return Ok(None);
            }
        }
        let Some(mut g) = self.grant_abs(&target, access, source, true) else {
            return Ok(None);
        };
        // Only the canonical target: no other spelling may widen the boundary.
        g.aliases.clear();
        g.external = Some(Box::new(ir::External {
            rule_path: key,
            canonical_target: target,
        }));
        Ok(Some(g))
    }
}

/// Sort grants by path. Where several name the same path: a policy rule
/// replaces a preset's grant, a later rule replaces an earlier one (that is
/// what layering means), and implicit grants (presets, roots, commands)
/// add up.
fn finish_grants(grants: Vec<Grant>) -> Vec<Grant> {
    let mut out: Vec<Grant> = Vec::with_capacity(grants.len());
    let mut at: crate::hashed::Map<String, usize> =
        crate::hashed::Map::with_capacity_and_hasher(grants.len(), Default::default());
    for g in grants {
        let explicit = |s: &Source| matches!(s, Source::Rule { .. } | Source::Default);
        match at.get(&g.path) {
            Some(&i) if explicit(&g.source) => out[i] = g,
            Some(&i) => {
                let o = &mut out[i];
                o.access = o.access.union(g.access);
                for a in g.aliases {
                    if !o.aliases.contains(&a) {
                        o.aliases.push(a);
                    }
                }
                o.aliases.sort();
            }
            None => {
                at.insert(g.path.clone(), out.len());
                out.push(g);
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
pub(crate) mod tree;
#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{load_layer, merge::merge, source::SourceFile};

    fn lower_text(text: &str) -> Ir {
        lower_text_for(text, Os::Linux)
    }

    pub(super) fn lower_text_for(text: &str, os: Os) -> Ir {
        let layer = load_layer(
            SourceFile {
                name: "p.toml".into(),
                text: text.into(),
            },
            None,
        )
        .unwrap();
        let opts = Options {
            workspace: String::new(),
            home: String::new(),
            temp: String::new(),
            os,
            portable: true,
            path_var: None,
            approvals: Vec::new(),
        };
        lower(&merge(&[layer]), &opts).unwrap().ir
    }

    /// Unresolved, for macOS: `/etc` is spelled `/private/etc` as on a
    /// Mac, so a rule on it and the preset on `/private/etc` are one grant
    /// (the rule's), and the IR decides as the profile does. (Found by the
    /// `sbpl_injection` fuzzer: two grants of equal length disagreed.)
    #[test]
    fn macos_private_links_are_one_grant() {
        let ir = lower_text_for(
            "[[fs]]\npath = \"/etc\"\nread = true\nupdate = true\n[[fs]]\npath = \"/tmp/x\"\nread = true\n",
            Os::Macos,
        );
        let etc: Vec<_> = ir
            .fs
            .iter()
            .filter(|g| g.path == "/private/etc" || g.aliases.iter().any(|a| a == "/etc"))
            .collect();
        assert_eq!(etc.len(), 1, "{etc:?}");
        assert_eq!(etc[0].path, "/private/etc");
        assert_eq!(etc[0].aliases, ["/etc"]);
        assert!(matches!(etc[0].source, Source::Rule { index: 0, .. }));
        for p in ["/etc/x", "/private/etc/x"] {
            assert!(ir.access_at(p).update, "{p}");
        }
        assert!(ir
            .fs
            .iter()
            .any(|g| g.path == "/private/tmp/x" && g.aliases == ["/tmp/x"]));
        // Other OSes keep the path as written.
        let ir = lower_text("[[fs]]\npath = \"/etc\"\nread = true\n");
        assert!(ir
            .fs
            .iter()
            .any(|g| g.path == "/etc" && g.aliases.is_empty()));
    }

    #[test]
    fn deny_all_beats_every_allow() {
        let ir = lower_text(
            "[[net]]\nhost = \"*\"\n[[net]]\nhost = \"a.example\"\nport = 443\n[[net]]\nport = 80\nbind = true\n[[net]]\nallow = false\n",
        );
        assert_eq!(ir.net.connect, Ports::None);
        assert!(!ir.net.other_protocols && !ir.net.dns);
        assert_eq!(ir.net.bind, Ports::Some(vec![80]));
        let ir =
            lower_text("[[net]]\nport = 80\nbind = true\n[[net]]\nbind = true\nallow = false\n");
        assert_eq!(ir.net.bind, Ports::None);
    }

    #[test]
    fn deny_port_removes_it() {
        let ir = lower_text(
            "[[net]]\nport = 443\n[[net]]\nport = 22\n[[net]]\nport = 22\nallow = false\n",
        );
        assert_eq!(ir.net.connect, Ports::Some(vec![443]));
    }

    /// Lowering on the host refuses a workspace that is not a directory
    /// (a file, nothing, a link to a file), and takes a link to one.
    #[cfg(unix)]
    #[test]
    fn host_workspace_must_be_a_directory() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_str().unwrap();
        std::fs::create_dir(d.path().join("ws")).unwrap();
        std::fs::write(d.path().join("file"), "").unwrap();
        std::os::unix::fs::symlink("ws", d.path().join("to-ws")).unwrap();
        std::os::unix::fs::symlink("file", d.path().join("to-file")).unwrap();
        let layer = load_layer(
            SourceFile {
                name: "p.toml".into(),
                text: "[[fs]]\npath = \".\"\nread = true\n".into(),
            },
            None,
        )
        .unwrap();
        let policy = merge(&[layer]);
        for (ws, ok) in [
            ("ws", true),
            ("to-ws", true),
            ("file", false),
            ("to-file", false),
            ("missing", false),
        ] {
            let opts = Options {
                workspace: format!("{root}/{ws}"),
                home: root.to_string(),
                temp: root.to_string(),
                os: Os::host(),
                portable: false,
                path_var: None,
                approvals: Vec::new(),
            };
            match lower(&policy, &opts) {
                Ok(l) => assert!(ok, "{ws} was taken as {}", l.ir.roots.workspace),
                Err(d) => {
                    assert!(!ok, "{ws}: {d:?}");
                    assert!(d[0].message.contains("is not a directory"), "{d:?}");
                }
            }
        }
    }
}

#[cfg(test)]
mod ssh_tests {
    use super::*;

    fn lower_portable(text: &str) -> Ir {
        tests::lower_text_for(text, Os::Linux)
    }

    fn from_opt_in(ir: &Ir) -> Vec<(&str, Access)> {
        ir.fs
            .iter()
            .filter(|g| g.source == Source::SshAgent)
            .map(|g| (g.path.as_str(), g.access))
            .collect()
    }

    const WS: &str = "[[fs]]\npath = \".\"\nread = true\nwrite = true\n";

    /// Read-only grants on the two files, and only with the opt-in.
    #[test]
    fn known_hosts_read_only_where_home_is_not_covered() {
        let ir = lower_portable(&format!("ssh_agent = true\n{WS}"));
        assert!(ir.net.ssh_agent);
        let read = Access {
            read: true,
            ..Access::NONE
        };
        assert_eq!(
            from_opt_in(&ir),
            [
                ("${HOME}/.ssh/known_hosts", read),
                ("${HOME}/.ssh/known_hosts2", read)
            ]
        );
        assert!(!ir.access_at("${HOME}/.ssh/id_ed25519").read);
        assert!(!ir.access_at("${HOME}/.ssh/config").read);
        let ir = lower_portable(WS);
        assert!(!ir.net.ssh_agent && from_opt_in(&ir).is_empty());
    }

    /// Under a rule on `~` the hidden `~/.ssh` stays hidden in the IR (a
    /// grant beneath would lift it): `sbx run` shows the two files.
    #[test]
    fn no_grant_beneath_a_hidden_ssh_directory() {
        let ir = lower_portable(&format!(
            "ssh_agent = true\n{WS}[[fs]]\npath = \"~\"\nread = true\n"
        ));
        assert!(from_opt_in(&ir).is_empty());
        let hidden = ir.fs.iter().find(|g| g.path == "${HOME}/.ssh").unwrap();
        assert!(hidden.access.is_empty());
    }
}
