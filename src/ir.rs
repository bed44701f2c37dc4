//! The lowered policy: absolute, normalised grants that every back end reads.
//!
//! Everything here is plain data, sorted, with no hash maps, so that the
//! JSON form (`--target ir`) and every artifact derived from it are
//! byte-identical for the same inputs.

use serde::{Deserialize, Serialize};

mod wire;
pub(crate) use wire::Hashes;
pub use wire::Protected;

/// Version of the IR and artifact format (`"sbx": 1` in every JSON artifact).
pub const FORMAT_VERSION: u32 = 1;

/// Serialised by hand ([`wire`]): `ir.json` writes the protections at
/// the top of each writable tree per tree.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "wire::IrIn")]
pub struct Ir {
    pub sbx: u32,
    /// Hash of the merged policy ([`crate::policy::hash`]): the same in
    /// every artifact of one policy.
    pub policy_hash: String,
    /// Hash of this lowered IR (computed with both hashes empty): differs
    /// by OS, host paths and path mode.
    pub ir_hash: String,
    pub enforcement: Enforcement,
    /// `resolved` (host paths, symlinks resolved) or `portable` (placeholders).
    pub mode: PathMode,
    /// The OS family the paths and presets were lowered for.
    pub os: Os,
    pub roots: Roots,
    /// Filesystem grants, sorted by path; matching is most-specific-wins.
    pub fs: Vec<Grant>,
    pub net: Net,
    pub env: Env,
    /// `None`: any program may be executed.
    pub commands: Option<Vec<Command>>,
    pub limits: Limits,
    pub sensitive_paths: Vec<String>,
    pub macos: MacosExtras,
    pub linux: LinuxExtras,
    pub windows: WindowsExtras,
    /// Notes made while lowering (dropped rules, missing paths...).
    pub precision: Vec<Precision>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    #[default]
    BestEffort,
    Required,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathMode {
    Resolved,
    Portable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Os {
    Macos,
    Linux,
    Windows,
}

impl Os {
    pub fn host() -> Os {
        if cfg!(target_os = "macos") {
            Os::Macos
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// Placeholders used in portable mode; the loaders expand them at run time.
pub const WORKSPACE_PARAM: &str = "WORKSPACE";
pub const HOME_PARAM: &str = "HOME";
pub const TEMP_PARAM: &str = "TMPDIR";

/// In portable mode each root is `${NAME}`; in resolved mode an absolute path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roots {
    pub workspace: String,
    pub home: String,
    pub temp: String,
}

/// The five rights of RFD 076, refined per target by the back ends.
/// Serialised as the list of rights that are set: `["read", "update"]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct Access {
    pub read: bool,
    pub create: bool,
    pub update: bool,
    pub delete: bool,
    pub execute: bool,
}

/// By hand rather than through `Vec<String>`: every grant of the IR is
/// serialised twice (its hash and `ir.json`), and the detour allocated a
/// list and a string per right each time.
impl Serialize for Access {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.each_name())
    }
}

impl TryFrom<Vec<String>> for Access {
    type Error = String;
    fn try_from(v: Vec<String>) -> Result<Access, String> {
        let mut a = Access::NONE;
        for n in v {
            match n.as_str() {
                "read" => a.read = true,
                "create" => a.create = true,
                "update" => a.update = true,
                "delete" => a.delete = true,
                "execute" => a.execute = true,
                other => return Err(format!("unknown right {other:?}")),
            }
        }
        Ok(a)
    }
}

impl Access {
    pub const NONE: Access = Access {
        read: false,
        create: false,
        update: false,
        delete: false,
        execute: false,
    };
    pub const READ: Access = Access {
        read: true,
        ..Access::NONE
    };
    pub const READ_EXEC: Access = Access {
        read: true,
        execute: true,
        ..Access::NONE
    };
    pub const READ_WRITE: Access = Access {
        read: true,
        create: true,
        update: true,
        delete: true,
        execute: false,
    };

    pub fn is_empty(&self) -> bool {
        *self == Access::NONE
    }
    pub fn writes(&self) -> bool {
        self.create || self.update || self.delete
    }
    pub fn union(self, o: Access) -> Access {
        Access {
            read: self.read || o.read,
            create: self.create || o.create,
            update: self.update || o.update,
            delete: self.delete || o.delete,
            execute: self.execute || o.execute,
        }
    }
    /// `self` without create, update and delete: what a protection keeps
    /// of the grant that covers it.
    pub fn without_writes(self) -> Access {
        Access {
            create: false,
            update: false,
            delete: false,
            ..self
        }
    }
    /// Rights in `self` that `o` lacks.
    pub fn minus(self, o: Access) -> Access {
        Access {
            read: self.read && !o.read,
            create: self.create && !o.create,
            update: self.update && !o.update,
            delete: self.delete && !o.delete,
            execute: self.execute && !o.execute,
        }
    }
    pub fn contains(self, o: Access) -> bool {
        o.minus(self).is_empty()
    }
    /// Names of the rights that are set, in a fixed order.
    pub fn names(&self) -> Vec<&'static str> {
        self.each_name().collect()
    }

    /// The names of the rights that are set, in the IR's order.
    pub fn each_name(self) -> impl Iterator<Item = &'static str> {
        [
            (self.read, "read"),
            (self.create, "create"),
            (self.update, "update"),
            (self.delete, "delete"),
            (self.execute, "execute"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
    }
}

/// What the path was when it was lowered (resolved mode stats it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    Dir,
    File,
    /// Does not exist at compile time.
    Missing,
    /// Not looked at (portable mode).
    Unknown,
}

/// Where a grant came from, for diagnostics, `explain` and precision reports.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// A rule in a policy file (`fs[index]` of the merged policy).
    Rule {
        index: usize,
        file: String,
        line: usize,
        column: usize,
    },
    /// The default policy (no `fs` key at all).
    Default,
    /// A `[process]` preset, by name.
    Preset { name: String },
    /// `[process] read_roots` / `write_roots`.
    ProcessRoot,
    /// An executable resolved from `[commands]`.
    Command { name: String },
    /// POLICY.md §7a: a protected path inside a writable grant, read-only.
    /// `entry` is the list entry that produced it (`.git/hooks`, `~/.bashrc`).
    Protected { entry: String },
    /// POLICY.md §7: a sensitive path that a broader grant only covers,
    /// hidden (all rights false). `by` is the covering grant's source.
    Covered { pattern: String, by: Box<Source> },
    /// POLICY.md §13: a policy file, layer or artifact of this `sbx run`,
    /// read-only to the child so it cannot widen its own next run.
    RunFile,
    /// `ssh_agent = true`: `~/.ssh/known_hosts`, read-only.
    SshAgent,
}

impl Source {
    /// A short, stable label: `fs[2] (policy.toml:7:1)`, `preset system_runtime`.
    pub fn label(&self) -> String {
        match self {
            Source::Rule {
                index,
                file,
                line,
                column,
            } => {
                // Sized up front: `format!` grew it twice per rule.
                use std::fmt::Write;
                let mut s = String::with_capacity(file.len() + 32);
                let _ = write!(s, "fs[{index}] ({file}:{line}:{column})");
                s
            }
            Source::Default => "default policy".into(),
            // Concatenated, not formatted: labels are made per grant in
            // every back end, and protections are most grants.
            Source::Preset { name } => ["preset ", name].concat(),
            Source::ProcessRoot => "process roots".into(),
            Source::Command { name } => ["commands.", name].concat(),
            Source::Protected { entry } => ["protected ", entry].concat(),
            Source::Covered { pattern, by } => {
                format!("sensitive {pattern}, covered by {}", by.label())
            }
            Source::RunFile => "this run's policy".into(),
            Source::SshAgent => "ssh_agent".into(),
        }
    }

    /// Written by the user: a rule or a `[process]` root. The default
    /// policy and sbx's own additions (presets, commands, protections) are not.
    pub fn authored(&self) -> bool {
        matches!(self, Source::Rule { .. } | Source::ProcessRoot)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Absolute, normalised; in portable mode may start with `${WORKSPACE}` etc.
    pub path: String,
    pub access: Access,
    pub kind: PathKind,
    pub source: Source,
    /// Other spellings of the same place the OS may see (macOS `/tmp` vs
    /// `/private/tmp`, or the path before symlinks were resolved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// RFD D43: set when the rule reaches outside the workspace through an
    /// approved symlink; `path` is then the approved canonical target.
    /// Boxed: few grants have one, and every pass over the grants moves
    /// them (a grant is 112 bytes with it boxed, 152 without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<Box<External>>,
}

impl Grant {
    /// Whether this grant's rule names `path` itself: as written (an
    /// alias), or as its path where no link led there. A grant that only
    /// reaches `path` through a symlink does not name it: the command may
    /// have made that link in an earlier run (POLICY.md §13).
    pub fn names(&self, path: &str) -> bool {
        self.aliases.iter().any(|a| a == path) || (self.path == path && self.aliases.is_empty())
    }

    /// The other spellings of `path`, which lies at or below this grant's
    /// path: each alias with the rest of `path` appended, sorted.
    pub fn aliases_below(&self, path: &str) -> Vec<String> {
        let Some(rest) = path.strip_prefix(self.path.as_str()) else {
            return Vec::new();
        };
        let mut v: Vec<String> = self
            .aliases
            .iter()
            .map(|a| [a.trim_end_matches('/'), rest].concat())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct External {
    /// The rule's path as written, relative to the workspace.
    pub rule_path: String,
    pub canonical_target: String,
}

/// A port set for one direction of TCP traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "ports")]
pub enum Ports {
    None,
    Some(Vec<u16>),
    All,
}

impl Ports {
    pub fn allows(&self, port: u16) -> bool {
        match self {
            Ports::None => false,
            Ports::All => true,
            Ports::Some(p) => p.binary_search(&port).is_ok(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Net {
    /// What the kernel can enforce: outbound TCP by port.
    pub connect: Ports,
    /// Listening sockets by port.
    pub bind: Ports,
    /// Non-TCP IP traffic (UDP, raw): allowed only with unrestricted network.
    pub other_protocols: bool,
    /// Name resolution is needed (an allow rule names a host): DNS over
    /// UDP must work even though other UDP is denied.
    pub dns: bool,
    /// The rules as lowered, for cooperative checks and reports.
    pub rules: Vec<NetRule>,
    /// `ssh_agent = true`: `sbx run` forwards the caller's ssh agent and
    /// shows `~/.ssh/known_hosts` read-only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ssh_agent: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetRule {
    pub index: usize,
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Explicit port, or the scheme's; `None` = any port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    pub bind: bool,
    pub allow: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Env {
    /// Always forwarded when set in the parent: exact names and `LC_*`.
    pub minimal: Vec<String>,
    /// Names or globs from `[[env]]` with `read = true`.
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    pub name: String,
    /// The absolute executable `name` resolved to through PATH, if found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Allowed argument prefixes (cooperative); `None` = any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<Vec<String>>>,
    pub envs: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_s: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacosExtras {
    pub mach_lookup: Vec<String>,
    pub allow_pty: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinuxExtras {
    /// `None`: the default (both scopes on ABI >= 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_abi: Option<u32>,
    /// `[linux] namespaces`: whether `sbx run` adds its namespace layer.
    #[serde(default, skip_serializing_if = "Namespaces::is_auto")]
    pub namespaces: Namespaces,
    /// `[linux] capabilities`: what the command keeps when sbx runs as
    /// root, sorted, without duplicates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// `[linux] nested_user_namespaces`: the command may create them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nested_user_namespaces: bool,
    /// `[linux] memfd_exec`: the command may run a program from a memfd.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub memfd_exec: bool,
}

/// `sbx run`'s namespace layer on Linux (user, mount, PID, network).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Namespaces {
    /// Where the policy needs them: carve-outs, deny rules, no network.
    #[default]
    Auto,
    Always,
    Never,
}

impl Namespaces {
    pub fn is_auto(&self) -> bool {
        *self == Namespaces::Auto
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowsExtras {
    pub token: String,
    pub appcontainer: bool,
    pub ui_restrictions: Vec<String>,
    pub kill_on_close: bool,
}

impl Default for WindowsExtras {
    fn default() -> Self {
        WindowsExtras {
            token: "restricted".into(),
            appcontainer: false,
            ui_restrictions: Vec::new(),
            kill_on_close: true,
        }
    }
}

/// One line of a precision report.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Precision {
    /// The rule's label (see [`Source::label`]) or a feature name (`net`, `limits.max_processes`).
    pub rule: String,
    /// `ir` for notes made while lowering, else the back end's target name.
    pub target: String,
    pub status: Status,
    pub reason: String,
    /// Reported, but never a reason for `enforcement = "required"` to
    /// refuse: a protection sbx adds itself (POLICY.md §7a) that a target
    /// cannot hold, such as a protected path absent at launch on Linux.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advisory: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Exact,
    /// The OS grants more than the policy.
    Wider,
    /// The OS grants less than the policy.
    Narrower,
    Unsupported,
    /// The rule was dropped (missing path, unapproved external...).
    Dropped,
}

impl Status {
    /// Whether `enforcement = "required"` must refuse this.
    pub fn is_inexact(self) -> bool {
        !matches!(self, Status::Exact)
    }

    /// The name JSON gives it (`wider`), without serialising.
    pub fn name(self) -> &'static str {
        match self {
            Status::Exact => "exact",
            Status::Wider => "wider",
            Status::Narrower => "narrower",
            Status::Unsupported => "unsupported",
            Status::Dropped => "dropped",
        }
    }
}

impl Roots {
    /// Portable mode's roots: `${WORKSPACE}`, `${HOME}`, `${TMPDIR}`.
    pub fn portable() -> Roots {
        Roots {
            workspace: format!("${{{WORKSPACE_PARAM}}}"),
            home: format!("${{{HOME_PARAM}}}"),
            temp: format!("${{{TEMP_PARAM}}}"),
        }
    }
}

impl Net {
    /// No network of any kind.
    pub fn none() -> Net {
        Net {
            connect: Ports::None,
            bind: Ports::None,
            other_protocols: false,
            dns: false,
            ssh_agent: false,
            rules: Vec::new(),
        }
    }
}

impl Env {
    /// The variables every child gets on `os` (when set), and no others.
    pub fn minimal(os: Os) -> Env {
        use crate::policy::model::{MINIMAL_ENV, MINIMAL_ENV_WINDOWS};
        let extra: &[&str] = if os == Os::Windows {
            MINIMAL_ENV_WINDOWS
        } else {
            &[]
        };
        Env {
            minimal: MINIMAL_ENV
                .iter()
                .chain(extra)
                .map(|s| s.to_string())
                .collect(),
            allow: Vec::new(),
        }
    }
}

impl Ir {
    /// What a policy that grants nothing lowers to: no paths, no network,
    /// the minimal environment, any command, no limits. The starting point
    /// for an IR built by hand (tools, tests); set the fields to grant.
    pub fn deny_all(os: Os, mode: PathMode, roots: Roots) -> Ir {
        Ir {
            sbx: FORMAT_VERSION,
            policy_hash: String::new(),
            ir_hash: String::new(),
            enforcement: Enforcement::BestEffort,
            mode,
            os,
            roots,
            fs: Vec::new(),
            net: Net::none(),
            env: Env::minimal(os),
            commands: None,
            limits: Limits::default(),
            sensitive_paths: Vec::new(),
            macos: MacosExtras::default(),
            linux: LinuxExtras::default(),
            windows: WindowsExtras::default(),
            precision: Vec::new(),
        }
    }

    /// Most-specific-wins: the grant whose path is the longest
    /// component-wise prefix of `path` decides. `path` must be absolute and
    /// normalised the same way the grants are.
    pub fn decide(&self, path: &str) -> Option<&Grant> {
        decide_in(&self.fs, path)
    }

    /// The rights the policy gives `path` (empty when no grant covers it).
    pub fn access_at(&self, path: &str) -> Access {
        self.decide(path).map(|g| g.access).unwrap_or_default()
    }
}

/// `dir/name` with one `/` between (`/name` under `/`), as lowering
/// spells a protected path below its tree; nothing is normalised, so
/// the JSON forms that store the two parts give back the same path.
pub fn joined(dir: &str, name: &str) -> String {
    let sep = if dir.ends_with('/') { "" } else { "/" };
    [dir, sep, name].concat()
}

/// Two lists sorted by `key` as one, `a`'s first where keys are equal (a
/// stable sort of `a` then `b` gives the same). Lists that are not sorted
/// give some order, the same for the same lists.
pub fn merge_sorted<T>(a: Vec<T>, b: Vec<T>, key: impl Fn(&T) -> &str) -> Vec<T> {
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut b = b.into_iter().peekable();
    for x in a {
        while let Some(y) = b.next_if(|y| key(y) < key(&x)) {
            out.push(y);
        }
        out.push(x);
    }
    out.extend(b);
    out
}

/// Whether the command can make, replace or remove entries of `dir`: a
/// grant at or above it gives a write right. Any, not only the most
/// specific: a read-only rule on a directory that is missing at launch
/// keeps nothing from the writable one above (the command can make it,
/// and what is in it, in an earlier run). Relied on wherever a link
/// found on disk may have been planted by an earlier run: lowering's
/// SBX035 and the caller's `PATH` and certificate grants.
pub fn changeable_in(fs: &[Grant], dir: &str) -> bool {
    fs.iter().any(|g| {
        g.access.writes()
            && std::iter::once(&g.path)
                .chain(&g.aliases)
                .any(|p| path_within(dir, p))
    })
}

/// [`Ir::decide`] over any list of grants.
pub fn decide_in<'a>(fs: &'a [Grant], path: &str) -> Option<&'a Grant> {
    fs.iter()
        .filter(|g| {
            std::iter::once(g.path.as_str())
                .chain(g.aliases.iter().map(String::as_str))
                .any(|p| path_within(path, p))
        })
        .max_by_key(|g| {
            std::iter::once(g.path.as_str())
                .chain(g.aliases.iter().map(String::as_str))
                .filter(|p| path_within(path, p))
                .map(str::len)
                .max()
                .unwrap_or(0)
        })
}

/// The index of the last `/` in `s`. A byte scan from the end: the last
/// component is short, where `rfind`'s word-at-a-time search costs more
/// to set up than it saves (a parent lookup per rule and prefix).
pub fn last_slash(s: &str) -> Option<usize> {
    s.as_bytes().iter().rposition(|&b| b == b'/')
}

/// `path` equals `root` or lies below it, on component boundaries.
pub fn path_within(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    // `\` separates only in Windows paths (`C:\x`, `\\srv\share`); in a
    // Unix path it is an ordinary character of the name.
    let windows = root.as_bytes().get(1) == Some(&b':') || root.starts_with("\\\\");
    let sep = |c: char| c == '/' || (windows && c == '\\');
    match path.strip_prefix(root) {
        Some("") => true,
        Some(rest) => rest.starts_with(sep) || root.ends_with(sep),
        None => false,
    }
}

/// Hand-built IR pieces for the back ends' and loaders' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Resolved roots `/w`, `/h`, `/t`.
    pub fn roots() -> Roots {
        Roots {
            workspace: "/w".into(),
            home: "/h".into(),
            temp: "/t".into(),
        }
    }

    /// The grant of rule `index` of `policy.toml`, written at `line`.
    pub fn rule_grant(
        index: usize,
        line: usize,
        path: &str,
        access: Access,
        kind: PathKind,
    ) -> Grant {
        Grant {
            path: path.into(),
            access,
            kind,
            source: Source::Rule {
                index,
                file: "policy.toml".into(),
                line,
                column: 1,
            },
            aliases: vec![],
            external: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_are_the_json_names() {
        for s in [
            Status::Exact,
            Status::Wider,
            Status::Narrower,
            Status::Unsupported,
            Status::Dropped,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
    }

    #[test]
    fn within_respects_component_boundaries() {
        assert!(path_within("/a/b", "/a/b"));
        assert!(path_within("/a/b/c", "/a/b"));
        assert!(!path_within("/a/bc", "/a/b"));
        assert!(path_within("/x", "/"));
        assert!(!path_within("/a", "/a/b"));
        // Windows paths separate with `\` too; Unix names may contain it.
        assert!(path_within(r"C:\ws\src", r"C:\ws"));
        assert!(path_within("C:/ws/src", "C:/ws"));
        assert!(path_within(r"C:\x", r"C:\"));
        assert!(!path_within(r"C:\wsx", r"C:\ws"));
        assert!(path_within(r"\\srv\share\a", r"\\srv\share"));
        assert!(!path_within(r"/w\evil", "/w"));
    }

    #[test]
    fn access_set_algebra() {
        assert!(Access::READ_WRITE.contains(Access::READ));
        assert!(!Access::READ.contains(Access::READ_WRITE));
        assert_eq!(
            Access::READ_WRITE.minus(Access::READ).names(),
            ["create", "update", "delete"]
        );
        assert!(Access::READ.union(Access::NONE) == Access::READ);
    }
}
