//! The Linux artifact (`--target linux`) and its `landlock` member, a
//! landlockconfig document. The loader deserialises these same types, so
//! `sbx run --artifact` accepts exactly what `compile` wrote.

use crate::ir::{self, Enforcement, PathMode, Precision};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

mod ns_wire;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    bound(serialize = "P: Serialize, N: Serialize + NsMembers")
)]
pub struct LinuxArtifact<P = Vec<Precision>, N = NsConfig> {
    pub sbx: u32,
    pub policy_hash: String,
    pub target: String,
    pub sbx_version: String,
    pub enforcement: Enforcement,
    /// `portable`: paths hold `${WORKSPACE}`, `${HOME}`, `${TMPDIR}`.
    pub mode: PathMode,
    /// `[linux] min_abi`: `sbx run` refuses on an older kernel.
    pub min_abi: Option<u32>,
    /// The lowest Landlock ABI that enforces every handled right.
    pub exact_abi: u32,
    pub landlock: LandlockConfig,
    pub seccomp: Seccomp,
    /// Capabilities no policy lets the command keep: those that bypass
    /// Landlock's checks or reach the kernel or hardware directly (the
    /// baseline: `keep_capabilities` never holds one).
    pub drop_capabilities: Vec<String>,
    /// `[linux] capabilities`: the command keeps these, and loses every
    /// other capability from all five sets, whoever runs sbx. Absent:
    /// none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep_capabilities: Vec<String>,
    /// `[linux] nested_user_namespaces = true`: seccomp lets the command
    /// create and join namespaces (absent: refused).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nested_user_namespaces: bool,
    /// `[linux] memfd_exec = true`: memfds may be created executable
    /// (absent: only with `MFD_NOEXEC_SEAL`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub memfd_exec: bool,
    /// `ssh_agent = true`: `sbx run` forwards the caller's ssh agent to a
    /// socket in the run's private temp directory (absent: not forwarded).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ssh_agent: bool,
    pub env: ir::Env,
    /// `None`: any program may be executed (subject to `execute` grants).
    pub exec_allow: Option<Vec<ExecEntry>>,
    pub limits: ir::Limits,
    /// `sbx run`'s namespace layer: when to use it, and the mounts that
    /// make carve-outs exact (absent: `auto`, no carve-out).
    #[serde(default, skip_serializing_if = "NsMembers::is_default")]
    pub namespaces: N,
    /// Host rules, which `sbx run` enforces with its filtering proxy
    /// (docs/linux.md, "Host rules: the proxy"). `None`: the kernel's
    /// port rules are the whole network policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxySpec>,
    /// A [`Vec`] of lines; [`super::Report`] when written by `compile`,
    /// which writes the longest lines' text as it serialises them (and
    /// [`NsOut`] the namespaces, whose paths it borrows).
    pub precision: P,
}

impl<P, N> LinuxArtifact<P, N> {
    /// The same artifact with `precision` as its report (`sbx run` reads
    /// the report only where the run uses it).
    pub fn with_precision<Q>(self, precision: Q) -> LinuxArtifact<Q, N> {
        LinuxArtifact {
            sbx: self.sbx,
            policy_hash: self.policy_hash,
            target: self.target,
            sbx_version: self.sbx_version,
            enforcement: self.enforcement,
            mode: self.mode,
            min_abi: self.min_abi,
            exact_abi: self.exact_abi,
            landlock: self.landlock,
            seccomp: self.seccomp,
            drop_capabilities: self.drop_capabilities,
            keep_capabilities: self.keep_capabilities,
            nested_user_namespaces: self.nested_user_namespaces,
            memfd_exec: self.memfd_exec,
            ssh_agent: self.ssh_agent,
            env: self.env,
            exec_allow: self.exec_allow,
            limits: self.limits,
            namespaces: self.namespaces,
            proxy: self.proxy,
            precision,
        }
    }
}

/// The namespace layer of `sbx run` (docs/linux.md). In JSON the absent
/// protections' mounts are written per directory ([`ns_wire`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ns_wire::NsIn")]
pub struct NsConfig {
    pub mode: ir::Namespaces,
    /// Bind mounts made in the child's mount namespace, sorted by path
    /// (templates as in `landlock`): every carve-out Landlock alone
    /// cannot express, and every rule beneath one.
    pub mounts: Vec<MountRule>,
    /// Symlinks that led to a rule's path when it was resolved (a
    /// grant's aliases): `sbx run`'s new root holds them too, so the
    /// path as written still works.
    pub links: Vec<Link>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub path: String,
    pub target: String,
}

impl NsConfig {
    pub fn is_default(&self) -> bool {
        *self == NsConfig::default()
    }
}

/// [`NsConfig`] as `compile` writes it: each mount's path borrowed from
/// the IR where escaping leaves it as it is (half a million mounts of
/// absent protections at 100,000 rules were 45 MiB of copies, #38). It
/// serialises as the [`NsConfig`] of [`NsOut::into_owned`].
#[derive(Debug, Clone, Default)]
pub struct NsOut<'a> {
    pub mode: ir::Namespaces,
    pub mounts: Vec<MountRule<Cow<'a, str>>>,
    pub links: Vec<Link>,
}

impl NsOut<'_> {
    pub fn into_owned(self) -> NsConfig {
        NsConfig {
            mode: self.mode,
            mounts: self
                .mounts
                .into_iter()
                .map(|m| MountRule {
                    path: m.path.into_owned(),
                    kind: m.kind,
                    read_only: m.read_only,
                    noexec: m.noexec,
                    protection: m.protection,
                    absent: m.absent,
                })
                .collect(),
            links: self.links,
        }
    }
}

/// What the artifact's `namespaces` member needs of its type: whether it
/// is left out (the default).
pub trait NsMembers {
    fn is_default(&self) -> bool;
}

impl NsMembers for NsConfig {
    fn is_default(&self) -> bool {
        NsConfig::is_default(self)
    }
}

impl NsMembers for NsOut<'_> {
    fn is_default(&self) -> bool {
        self.mode == ir::Namespaces::default() && self.mounts.is_empty() && self.links.is_empty()
    }
}

/// One mount of the namespace layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountRule<S = String> {
    pub path: S,
    /// `hidden`: an empty read-only mount over the path (a deny rule);
    /// `bind`: the path mounted on itself with the flags below.
    pub kind: MountKind,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noexec: bool,
    /// A protection sbx adds itself (POLICY.md §7, §7a): if its path is
    /// absent at launch, the loader reports it without refusing a
    /// `required` run (`Precision::advisory`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protection: bool,
    /// Such a protection whose path did not exist when compiled: the
    /// artifact's precision report says so already, and the loader, finding
    /// it still absent, does not say it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub absent: bool,
}

impl<S> MountRule<S> {
    /// An empty read-only mount over `path`, that sbx adds at run time
    /// (not a protection of the policy's).
    pub fn hidden(path: S) -> MountRule<S> {
        MountRule {
            path,
            kind: MountKind::Hidden,
            read_only: false,
            noexec: false,
            protection: false,
            absent: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountKind {
    Hidden,
    Bind,
}

/// What the proxy decides with: every outbound `[[net]]` rule, allow and
/// deny, in the IR's order (deny rules are checked first, whatever the
/// order). The child runs in a private network namespace and reaches
/// the network only through the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxySpec {
    pub rules: Vec<ir::NetRule>,
}

/// A landlockconfig document (landlock-lsm/landlockconfig JSON schema:
/// camelCase keys, kernel right names, `${var}` templates, `$$` for `$`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandlockConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abi: Option<u32>,
    /// Portable mode declares the placeholders without a value: a tool
    /// composing this document supplies them (unset, their rules vanish).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variable: Vec<Variable>,
    pub ruleset: Vec<RulesetAttr>,
    #[serde(default, rename = "pathBeneath", skip_serializing_if = "Vec::is_empty")]
    pub path_beneath: Vec<PathBeneath>,
    #[serde(default, rename = "netPort", skip_serializing_if = "Vec::is_empty")]
    pub net_port: Vec<NetPort>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesetAttr {
    #[serde(
        default,
        rename = "handledAccessFs",
        skip_serializing_if = "Option::is_none"
    )]
    pub handled_access_fs: Option<Vec<String>>,
    #[serde(
        default,
        rename = "handledAccessNet",
        skip_serializing_if = "Option::is_none"
    )]
    pub handled_access_net: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoped: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathBeneath {
    #[serde(rename = "allowedAccess")]
    pub allowed_access: Vec<String>,
    pub parent: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetPort {
    #[serde(rename = "allowedAccess")]
    pub allowed_access: Vec<String>,
    pub port: Vec<u64>,
}

/// The seccomp part, by name: the loader compiles it to one BPF program
/// for the running architecture (`runtime::linux::seccomp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seccomp {
    /// Errno for `deny`, `deny_ioctl` and `deny_ptrace`.
    pub errno: String,
    /// Syscalls refused outright.
    pub deny: Vec<String>,
    /// `ioctl` requests refused on any descriptor (terminal injection).
    pub deny_ioctl: Vec<String>,
    /// `ptrace` requests refused (attaching to an existing process).
    pub deny_ptrace: Vec<String>,
    /// `None`: every socket family and type may be created.
    pub sockets: Option<SocketFilter>,
    /// Calls refused by their arguments: reaching processes outside the
    /// sandbox, set-user-ID and set-group-ID modes, TCP Fast Open past
    /// Landlock's connect check (`back::landlock::ARG_RULES`).
    pub deny_args: Vec<ArgRule>,
}

/// `syscall` fails with `errno` when every test in `when` holds (no
/// tests: always). Written as one line, `openat(arg2 has O_CREAT, arg3
/// has S_ISUID) -> EPERM` or `openat2 -> ENOSYS`, so the artifact stays
/// short and reads like the rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct ArgRule {
    pub syscall: String,
    pub errno: String,
    pub when: Vec<ArgTest>,
}

/// A test of one argument's low 32 bits (every argument these rules
/// read is an `int`, a mode or a flag word): `argN has V` (every bit of
/// V set), `argN == V`, `argN != V`. `value` is a constant's name
/// (`S_ISUID`, `MSG_FASTOPEN`, …) or a decimal number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ArgTest {
    pub arg: u8,
    pub op: ArgOp,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ArgOp {
    /// Every bit of `value` is set.
    Has,
    /// No bit of `value` is set.
    Lacks,
    Eq,
    Ne,
}

impl ArgOp {
    fn word(self) -> &'static str {
        match self {
            ArgOp::Has => "has",
            ArgOp::Lacks => "lacks",
            ArgOp::Eq => "==",
            ArgOp::Ne => "!=",
        }
    }
}

/// The rule's one line. Written straight into the output (serde's
/// `collect_str`): a copy of each rule made into a string of its own
/// cost more than the rest of the seccomp section.
impl std::fmt::Display for ArgRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.syscall)?;
        for (i, t) in self.when.iter().enumerate() {
            f.write_str(if i == 0 { "(" } else { ", " })?;
            write!(f, "arg{} {} {}", t.arg, t.op.word(), t.value)?;
        }
        if !self.when.is_empty() {
            f.write_str(")")?;
        }
        write!(f, " -> {}", self.errno)
    }
}

impl Serialize for ArgRule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl TryFrom<String> for ArgRule {
    type Error = String;

    fn try_from(s: String) -> Result<ArgRule, String> {
        let bad = || {
            format!("argument rule {s:?}: expected `call(argN has|lacks|==|!= VALUE, …) -> ERRNO`")
        };
        let (head, errno) = s.split_once(" -> ").ok_or_else(bad)?;
        let (syscall, when) = match head.split_once('(') {
            None => (head, Vec::new()),
            Some((name, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(bad)?;
                let tests = inner
                    .split(", ")
                    .map(|t| {
                        let mut w = t.split(' ');
                        let (Some(arg), Some(op), Some(value), None) =
                            (w.next(), w.next(), w.next(), w.next())
                        else {
                            return Err(bad());
                        };
                        let arg = arg
                            .strip_prefix("arg")
                            .and_then(|n| n.parse::<u8>().ok())
                            .ok_or_else(bad)?;
                        let op = match op {
                            "has" => ArgOp::Has,
                            "lacks" => ArgOp::Lacks,
                            "==" => ArgOp::Eq,
                            "!=" => ArgOp::Ne,
                            _ => return Err(bad()),
                        };
                        Ok(ArgTest {
                            arg,
                            op,
                            value: value.to_string(),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (name, tests)
            }
        };
        let word =
            |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !word(syscall) || !word(errno) {
            return Err(bad());
        }
        Ok(ArgRule {
            syscall: syscall.to_string(),
            errno: errno.to_string(),
            when,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SocketFilter {
    pub errno: String,
    /// The only sockets `socket(2)` may create: `unix`, `netlink`, `tcp`
    /// (AF_INET/AF_INET6, SOCK_STREAM, protocol 0 or IPPROTO_TCP) and, when
    /// names must resolve, `udp` (SOCK_DGRAM, protocol 0 or IPPROTO_UDP).
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecEntry {
    pub name: String,
    /// Absolute executable; `None` when it was not found at compile time
    /// (the loader looks it up through `PATH` again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Structural checks the landlockconfig schema makes (non-empty lists,
/// known right names, valid variable names, ports in range), so the
/// loader refuses a hand-edited artifact that other tools would reject.
pub fn check_config(doc: &LandlockConfig) -> Result<(), String> {
    use super::rights::{FsSet, NET, SCOPES};
    let known = |table: &[(&str, u64)], names: &[String], what: &str| {
        if names.is_empty() {
            return Err(format!("empty {what} list"));
        }
        match names.iter().find(|n| !table.iter().any(|(t, _)| t == n)) {
            Some(n) => Err(format!("unknown {what} {n:?}")),
            None => Ok(()),
        }
    };
    let fs_known = |names: &[String]| {
        if names.is_empty() {
            return Err("empty filesystem access list".to_string());
        }
        match names.iter().find(|n| FsSet::named(n).is_none()) {
            Some(n) => Err(format!("unknown filesystem access {n:?}")),
            None => Ok(()),
        }
    };
    if doc.ruleset.is_empty() {
        return Err("no ruleset".into());
    }
    for rs in &doc.ruleset {
        if rs.handled_access_fs.is_none() && rs.handled_access_net.is_none() && rs.scoped.is_none()
        {
            return Err("empty ruleset".into());
        }
        if let Some(v) = &rs.handled_access_fs {
            fs_known(v)?;
        }
        if let Some(v) = &rs.handled_access_net {
            known(NET, v, "network access")?;
        }
        if let Some(v) = &rs.scoped {
            known(SCOPES, v, "scope")?;
        }
    }
    for pb in &doc.path_beneath {
        fs_known(&pb.allowed_access)?;
        if pb.parent.is_empty() {
            return Err("pathBeneath without parent".into());
        }
    }
    for np in &doc.net_port {
        known(NET, &np.allowed_access, "network access")?;
        if np.port.is_empty() {
            return Err("netPort without port".into());
        }
        if let Some(p) = np.port.iter().find(|p| **p > 65535) {
            return Err(format!("port {p} out of range"));
        }
    }
    for v in &doc.variable {
        if placeholder_len(&format!("${{{}}}", v.name)).is_none() {
            return Err(format!("invalid variable name {:?}", v.name));
        }
        if v.literal.as_ref().is_some_and(|l| l.is_empty()) {
            return Err(format!("variable {} has an empty literal list", v.name));
        }
    }
    Ok(())
}

/// Escape literal text for a landlockconfig template (`$` → `$$`).
pub fn escape_template(literal: &str) -> String {
    literal.replace('$', "$$")
}

/// Escape a portable IR path: keep `${NAME}` placeholders, escape any
/// other `$`.
pub fn escape_portable(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        match placeholder_len(after) {
            Some(n) => out.push_str(&after[..n]),
            None => out.push_str("$$"),
        }
        rest = &after[placeholder_len(after).unwrap_or(1)..];
    }
    out.push_str(rest);
    out
}

/// Length of a `${NAME}` at the start of `s` (landlockconfig name rules).
fn placeholder_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("${")?;
    let end = body.find('}')?;
    let name = &body[..end];
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(end + 3)
}

/// Parse a landlockconfig template: `$$` → `$`, `${NAME}` → `lookup(NAME)`,
/// any other `$` is literal.
pub fn expand_template(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        if let Some(tail) = after.strip_prefix("$$") {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix("${") {
            let end = body
                .find('}')
                .ok_or_else(|| format!("unclosed variable reference in {s:?}"))?;
            let name = &body[..end];
            let value =
                lookup(name).ok_or_else(|| format!("unknown variable ${{{name}}} in {s:?}"))?;
            out.push_str(&value);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(n: &str) -> Option<String> {
        (n == "WORKSPACE").then(|| "/w".to_string())
    }

    #[test]
    fn templates_round_trip() {
        let lit = "/a/$x/${y}/$$";
        assert_eq!(
            expand_template(&escape_template(lit), &lookup).unwrap(),
            lit
        );
        let portable = "${WORKSPACE}/cost$/${not-a-var}";
        let esc = escape_portable(portable);
        assert_eq!(esc, "${WORKSPACE}/cost$$/$${not-a-var}");
        assert_eq!(
            expand_template(&esc, &lookup).unwrap(),
            "/w/cost$/${not-a-var}"
        );
    }

    #[test]
    fn unknown_or_unclosed_variables_are_errors() {
        assert!(expand_template("${HOME}/x", &lookup).is_err());
        assert!(expand_template("${WORKSPACE", &lookup).is_err());
        assert_eq!(expand_template("$x", &lookup).unwrap(), "$x");
    }
}
