//! `sbx run --denials`: what the sandbox refused, and the paths the
//! command looked for that exist on the host but not inside the sandbox,
//! read from a trace of its system calls (strace's output, split by
//! process in [`trace`]), and the rules that would allow them, as TOML to
//! paste.
//!
//! The trace is taken only with the flag: a run without it pays nothing.
//! Parsing is plain text and has no OS dependency, so it is tested
//! everywhere.

pub mod trace;
#[cfg(target_os = "linux")]
pub mod tracer;

use std::collections::BTreeSet;
use std::fmt::Write;

/// What was refused.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    /// A path and the access the call needed.
    Path { op: Op, path: String },
    /// A path the call did not find (ENOENT). Under the namespace layer's
    /// new root a path outside the policy does not exist: one that exists
    /// on the host was hidden by the sandbox ([`on_host`] keeps only
    /// those).
    Missing { op: Op, path: String },
    /// An outbound TCP connection, or a listening port.
    Net { bind: bool, host: String, port: u16 },
    /// A socket kind the policy does not allow (UDP, raw, …).
    Socket,
    /// A call no policy allows (sbx's baseline: seccomp), by name.
    Baseline(String),
    /// A user namespace refused (`unshare` or `clone` with
    /// `CLONE_NEWUSER`, `setns`), by the call's name: allowed only by
    /// `[linux] nested_user_namespaces = true`.
    UserNamespace(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Read,
    /// Write, create, rename or delete.
    Write,
    Execute,
}

impl Op {
    fn word(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Execute => "execute",
        }
    }
}

/// Calls that join a user namespace, refused unless `[linux]
/// nested_user_namespaces = true`, traced besides `%process` and
/// [`BASELINE`] (which has `unshare`).
pub const USER_NAMESPACE: &[&str] = &["setns"];

/// Calls seccomp refuses whatever the policy, with EPERM.
pub const BASELINE: &[&str] = &[
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "mount",
    "umount2",
    "ptrace",
    "prlimit64",
    "setpriority",
    "sched_setaffinity",
    "sched_setscheduler",
    "bpf",
    "io_uring_setup",
    "keyctl",
    "perf_event_open",
    "unshare",
];

/// Which calls a trace keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Refusals (EACCES, EPERM, EROFS: a read-only mount) and paths not
    /// found (ENOENT): `sbx run --denials`.
    Refusals,
    /// Those and every call that succeeded: `sbx learn`, whose command
    /// runs under a policy that lets it read but not write everywhere.
    Uses,
}

/// The errors that mean the sandbox refused the call.
const REFUSED: &[&str] = &["EACCES", "EPERM", "EROFS"];

/// Calls that look a path up without opening it: a path they do not find
/// is [`Denied::Missing`] (what they find is not a use worth a rule:
/// every `PATH` search stats a dozen places).
const LOOKUPS: &[&str] = &[
    "stat",
    "lstat",
    "newfstatat",
    "fstatat64",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
];

/// The denials in one process's trace (no pid before each line). `cwd`
/// anchors relative paths (the directory the command started in).
pub fn parse(trace: &str, cwd: &str) -> Vec<Denied> {
    parse_where(trace, cwd, Keep::Refusals)
}

/// The calls of one process's trace that `keep` keeps.
pub fn parse_where(trace: &str, cwd: &str, keep: Keep) -> Vec<Denied> {
    // The process's directory, followed through `chdir`/`fchdir` and
    // through strace's `AT_FDCWD</dir>`, which shows it at each call.
    let mut cwd = cwd.to_string();
    let mut out = Vec::new();
    for l in trace.lines() {
        if let Some(dir) = new_cwd(l, &cwd) {
            cwd = dir;
        }
        out.extend(line(l, &cwd, keep));
    }
    out
}

/// The directory a successful `chdir`/`fchdir` line moves to, or the one
/// an `AT_FDCWD</dir>` shows.
fn new_cwd(l: &str, cwd: &str) -> Option<String> {
    if let Some(dir) = between(l, "AT_FDCWD<", ">") {
        return Some(dir.to_string());
    }
    let ok = l.trim_end().ends_with(" = 0");
    if let Some(rest) = l.strip_prefix("chdir(").filter(|_| ok) {
        let path = quoted(rest).into_iter().next()?;
        return Some(absolute(&path, "", cwd));
    }
    if l.starts_with("fchdir(") && ok {
        return between(l, "<", ">").map(String::from);
    }
    None
}

fn line(l: &str, cwd: &str, keep: Keep) -> Option<Denied> {
    let (call, rest) = l.split_once('(')?;
    let call = call.trim().trim_start_matches("<... ");
    if !call.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') || call.is_empty() {
        return None;
    }
    // strace pads short calls with spaces before ` = `.
    let (args, result) = rest.rsplit_once(" = ")?;
    let args = args.trim_end().strip_suffix(')')?;
    let result = result.trim();
    let errno = match result.strip_prefix("-1 ") {
        Some(e) => e.split(' ').next()?,
        None if result.starts_with('?') => return None,
        None => "",
    };
    let missing = errno == "ENOENT";
    let refused = REFUSED.contains(&errno);
    // An attempt to connect is a use whatever came of it: a non-blocking
    // connect returns EINPROGRESS, and in the learning session's network
    // namespace a direct one reaches nothing (ECONNREFUSED, ENETUNREACH).
    let attempt = keep == Keep::Uses && call == "connect";
    if !(missing || refused || attempt || (keep == Keep::Uses && errno.is_empty())) {
        return None;
    }
    let strings = quoted(args);
    let first = strings
        .first()
        .map(String::as_str)
        .filter(|s| !s.is_empty());
    let at = |s: &str| absolute(s, args, cwd);
    let d = match call {
        c if missing && LOOKUPS.contains(&c) => Denied::Path {
            op: Op::Read,
            path: at(first?),
        },
        "open" | "creat" => path_op(first?, args, call == "creat", &at)?,
        "openat" | "openat2" => path_op(first?, args, false, &at)?,
        "execve" | "execveat" => Denied::Path {
            op: Op::Execute,
            path: at(first?),
        },
        "mkdir" | "mkdirat" | "mknod" | "mknodat" | "unlink" | "unlinkat" | "rmdir"
        | "truncate" => Denied::Path {
            op: Op::Write,
            path: at(first?),
        },
        "rename" | "renameat" | "renameat2" | "link" | "linkat" | "symlink" | "symlinkat" => {
            // The new name is the one written.
            Denied::Path {
                op: Op::Write,
                path: at(strings.last()?),
            }
        }
        "connect" | "bind" => {
            // Port 0: an ephemeral bind, or a UDP connect that only picks
            // a source address; no rule names it.
            let port = between(args, "htons(", ")")?
                .parse()
                .ok()
                .filter(|&p| p != 0)?;
            let host = between(args, "inet_addr(\"", "\"")
                .or_else(|| between(args, "inet_pton(AF_INET6, \"", "\""))
                .unwrap_or("*")
                .to_string();
            Denied::Net {
                bind: call == "bind",
                host,
                port,
            }
        }
        "socket" if errno == "EACCES" => Denied::Socket,
        "unshare" | "clone" if errno == "EPERM" && args.contains("CLONE_NEWUSER") => {
            Denied::UserNamespace(call.to_string())
        }
        "setns" if errno == "EPERM" => Denied::UserNamespace(call.to_string()),
        c if errno == "EPERM" && BASELINE.contains(&c) => Denied::Baseline(c.to_string()),
        _ => return None,
    };
    match d {
        Denied::Path { op, path } if missing => Some(Denied::Missing { op, path }),
        _ if missing => None,
        d => Some(d),
    }
}

/// `denied` without the missing paths that are missing on the host too
/// (a program probing for optional files is normal): a read or execute
/// needs the path, a write its directory.
pub fn on_host(denied: Vec<Denied>, exists: &dyn Fn(&str) -> bool) -> Vec<Denied> {
    denied
        .into_iter()
        .filter(|d| match d {
            Denied::Missing { op, path } => {
                exists(path) || (*op == Op::Write && exists(parent_dir(path)))
            }
            _ => true,
        })
        .collect()
}

/// The directory a path is in (`/` for a top-level name).
pub fn parent_dir(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((dir, _)) => dir,
        None => path,
    }
}

/// An `open` family call: write if the flags write, truncate or create.
fn path_op(path: &str, args: &str, creat: bool, at: &dyn Fn(&str) -> String) -> Option<Denied> {
    let writes = creat
        || [
            "O_WRONLY",
            "O_RDWR",
            "O_CREAT",
            "O_TRUNC",
            "O_APPEND",
            "O_TMPFILE",
        ]
        .iter()
        .any(|f| args.contains(f));
    Some(Denied::Path {
        op: if writes { Op::Write } else { Op::Read },
        path: at(path),
    })
}

/// The string literals of strace's argument text, unescaped.
fn quoted(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut s = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some(o) => s.push(o),
                    None => break,
                },
                c => s.push(c),
            }
        }
        out.push(s);
    }
    out
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = s.find(open)? + open.len();
    let len = s[start..].find(close)?;
    Some(&s[start..start + len])
}

/// A path as the call named it, made absolute: against the directory of
/// a descriptor strace decoded (`3</dir>`), else against `cwd`.
fn absolute(path: &str, args: &str, cwd: &str) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    let base = args
        .split_once('<')
        .filter(|(fd, _)| fd.trim().parse::<u32>().is_ok() || fd.trim() == "AT_FDCWD")
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(dir, _)| dir)
        .unwrap_or(cwd);
    format!("{}/{}", base.trim_end_matches('/'), path)
}

/// Where sbx's policies anchor paths, to write rules as a user would.
pub struct Anchors<'a> {
    pub workspace: &'a str,
    pub home: &'a str,
}

/// The home-anchored sensitive places a suggestion never names (POLICY.md
/// §7: naming is consent, and that is the user's to give).
const SENSITIVE: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".gpg",
    ".aws",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".azure",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
];

/// Whether `path` is one of the home-anchored sensitive places, or a
/// `.env` file.
pub fn sensitive(path: &str, home: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or("");
    if name == ".env" || name.starts_with(".env.") {
        return true;
    }
    path.strip_prefix(home)
        .and_then(|r| r.strip_prefix('/'))
        .is_some_and(|r| {
            SENSITIVE
                .iter()
                .any(|s| r == *s || r.starts_with(&format!("{s}/")))
        })
}

/// A path as a policy writes it: relative inside the workspace, `~/…`
/// under home, else absolute.
pub fn policy_path(path: &str, a: &Anchors) -> String {
    let under = |root: &str| {
        path.strip_prefix(root)
            .filter(|r| r.is_empty() || r.starts_with('/'))
            .map(|r| r.trim_start_matches('/').to_string())
    };
    if let Some(r) = under(a.workspace) {
        return if r.is_empty() { ".".into() } else { r };
    }
    if let Some(r) = under(a.home) {
        return if r.is_empty() {
            "~".into()
        } else {
            format!("~/{r}")
        };
    }
    path.to_string()
}

/// `s` as a TOML string, quoted and escaped.
pub fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The report: each denial once, then the rules that would allow them.
/// `exists` tells whether a path exists now (a refused write to a path
/// that does not exist is granted on its directory).
pub fn report(denied: &[Denied], a: &Anchors, exists: &dyn Fn(&str) -> bool) -> String {
    report_with(denied, a, exists, None)
}

/// [`report`], with the rules to suggest given: `sbx learn`'s reading of
/// the same denials against the policy (the `learn` module, a layer
/// above this one), which keeps the rights the policy already gives at
/// each path (a rule replaces them there) and leaves out a rule inside
/// another suggested one. `None`: suggested from the denials alone (an `--artifact` run,
/// whose policy is not at hand).
pub fn report_with(
    denied: &[Denied],
    a: &Anchors,
    exists: &dyn Fn(&str) -> bool,
    learned: Option<&str>,
) -> String {
    let set: BTreeSet<&Denied> = denied.iter().collect();
    let (missing, refused): (Vec<&Denied>, Vec<&Denied>) = set
        .into_iter()
        .partition(|d| matches!(d, Denied::Missing { .. }));
    let mut s = String::new();
    if refused.is_empty() && missing.is_empty() {
        s.push_str("sbx: --denials: the sandbox refused nothing the trace shows\n");
        return s;
    }
    let mut rules: BTreeSet<String> = BTreeSet::new();
    if !refused.is_empty() {
        let _ = writeln!(s, "sbx: --denials: the sandbox refused {}:", refused.len());
    }
    for d in refused {
        list(&mut s, &mut rules, d, a, exists, learned.is_none());
    }
    if !missing.is_empty() {
        let _ = writeln!(
            s,
            "sbx: --denials: not visible in the sandbox, but present on the host ({}):",
            missing.len()
        );
    }
    for d in missing {
        list(&mut s, &mut rules, d, a, exists, learned.is_none());
    }
    match learned {
        Some(text) if !text.is_empty() => {
            s.push_str(RULES_HEAD);
            s.push_str(text);
        }
        Some(_) => {}
        None => push_rules(&mut s, &rules),
    }
    s
}

/// One line of the report for `d`, and with `suggest` the rule that
/// would allow it.
fn list(
    s: &mut String,
    rules: &mut BTreeSet<String>,
    d: &Denied,
    a: &Anchors,
    exists: &dyn Fn(&str) -> bool,
    suggest: bool,
) {
    match d {
        Denied::Path { op, path } | Denied::Missing { op, path } => {
            let flag = if sensitive(path, a.home) {
                "  (sensitive: no rule suggested)"
            } else {
                ""
            };
            let _ = writeln!(s, "  {:<8} {path}{flag}", op.word());
            if flag.is_empty() && suggest {
                let target = match op {
                    Op::Write if !exists(path) => parent_dir(path),
                    _ => path,
                };
                rules.insert(format!(
                    "[[fs]]\npath = {}\n{} = true\n",
                    toml_str(&policy_path(target, a)),
                    op.word()
                ));
            }
        }
        Denied::Net { bind, host, port } => {
            let what = if *bind { "listen" } else { "connect" };
            let _ = writeln!(s, "  {what:<8} {host}:{port}");
            if suggest {
                let host = if *bind { "*" } else { host.as_str() };
                let bind = if *bind { "bind = true\n" } else { "" };
                rules.insert(format!(
                    "[[net]]\nhost = {}\nport = {port}\n{bind}",
                    toml_str(host)
                ));
            }
        }
        Denied::Socket => {
            let _ = writeln!(
                s,
                "  socket   a UDP, raw or other non-TCP socket (only `[[net]] host = \"*\"` \
                 with no port, the unrestricted network, allows them)"
            );
        }
        Denied::Baseline(call) => {
            let _ = writeln!(
                s,
                "  {call:<8} refused whatever the policy (sbx's baseline, docs/linux.md)"
            );
        }
        Denied::UserNamespace(call) => {
            let _ = writeln!(
                s,
                "  {call:<8} a user namespace: refused unless the policy sets [linux] \
                 nested_user_namespaces = true (Chromium's own sandbox, rootless containers \
                 and a nested sbx need it)"
            );
        }
    }
}

const RULES_HEAD: &str = "sbx: rules that would allow them (read them before adding):\n\n";

/// The closing part of a denial summary: the rules to paste, if any.
pub fn push_rules(s: &mut String, rules: &std::collections::BTreeSet<String>) {
    if !rules.is_empty() {
        s.push_str(RULES_HEAD);
        for r in rules {
            s.push_str(r);
            s.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sbx learn` keeps every connect, whatever came of it; `--denials`
    /// only refusals.
    #[test]
    fn learn_keeps_connect_attempts_whatever_their_outcome() {
        let trace = "connect(3, {sa_family=AF_INET, sin_port=htons(8443), sin_addr=inet_addr(\"10.0.0.1\")}, 16) = -1 EINPROGRESS (Operation now in progress)\n\
                     connect(4, {sa_family=AF_INET, sin_port=htons(22), sin_addr=inet_addr(\"10.0.0.2\")}, 16) = -1 ECONNREFUSED (Connection refused)\n\
                     connect(5, {sa_family=AF_INET, sin_port=htons(25), sin_addr=inet_addr(\"10.0.0.3\")}, 16) = -1 ENETUNREACH (Network is unreachable)\n\
                     connect(6, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr(\"10.0.0.4\")}, 16) = 0\n\
                     openat(AT_FDCWD, \"/x\", O_RDONLY) = -1 EISDIR (Is a directory)\n";
        let net = |h: &str, port| Denied::Net {
            bind: false,
            host: h.into(),
            port,
        };
        assert_eq!(
            parse_where(trace, "/", Keep::Uses),
            vec![
                net("10.0.0.1", 8443),
                net("10.0.0.2", 22),
                net("10.0.0.3", 25),
                net("10.0.0.4", 80),
            ]
        );
        assert_eq!(parse_where(trace, "/", Keep::Refusals), vec![]);
    }

    const TRACE: &str = r#"openat(AT_FDCWD, "/srv/f", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EACCES (Permission denied)
mkdir("/srv/d", 0777)                   = -1 EACCES (Permission denied)
openat(AT_FDCWD, "/etc/hosts", O_RDONLY) = 3
faccessat2(AT_FDCWD, "/x", X_OK, AT_EACCESS) = -1 ENOENT (No such file or directory)
connect(3, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EACCES (Permission denied)
connect(4, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 EACCES (Permission denied)
openat(AT_FDCWD, "/home/u/.cache", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = -1 EACCES (Permission denied)
openat(3</home/u/ws>, "out/a \"b\"", O_WRONLY|O_CREAT, 0644) = -1 EACCES (Permission denied)
openat(AT_FDCWD, "rel.txt", O_RDONLY) = -1 EACCES (Permission denied)
openat(AT_FDCWD, "/home/u/.ssh/id_ed25519", O_RDONLY) = -1 EACCES (Permission denied)
execve("/opt/tool/bin/t", ["t"], 0x7ffd /* 3 vars */) = -1 EACCES (Permission denied)
renameat2(AT_FDCWD, "/tmp/a", AT_FDCWD, "/srv/b", RENAME_NOREPLACE) = -1 EACCES (Permission denied)
socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, IPPROTO_IP) = -1 EACCES (Permission denied)
chmod("/home/u/ws/x", 04755)            = -1 EPERM (Operation not permitted)
bind(5, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("0.0.0.0")}, 16) = -1 EACCES (Permission denied)
+++ exited with 1 +++
"#;

    #[test]
    fn strace_lines_become_denials() {
        let d = parse(TRACE, "/home/u/ws/sub");
        let path = |op, p: &str| Denied::Path {
            op,
            path: p.to_string(),
        };
        assert_eq!(
            d,
            [
                path(Op::Write, "/srv/f"),
                path(Op::Write, "/srv/d"),
                Denied::Missing {
                    op: Op::Read,
                    path: "/x".into()
                },
                Denied::Net {
                    bind: false,
                    host: "127.0.0.1".into(),
                    port: 9
                },
                Denied::Net {
                    bind: false,
                    host: "::1".into(),
                    port: 443
                },
                path(Op::Read, "/home/u/.cache"),
                path(Op::Write, "/home/u/ws/out/a \"b\""),
                path(Op::Read, "/home/u/ws/sub/rel.txt"),
                path(Op::Read, "/home/u/.ssh/id_ed25519"),
                path(Op::Execute, "/opt/tool/bin/t"),
                path(Op::Write, "/srv/b"),
                Denied::Socket,
                Denied::Baseline("chmod".into()),
                Denied::Net {
                    bind: true,
                    host: "0.0.0.0".into(),
                    port: 8080
                },
            ]
        );
    }

    /// A refused user namespace is named with the setting that allows
    /// it; an `unshare` of other namespaces stays a baseline refusal,
    /// and clone3's ENOSYS (libc then falls back to clone) is no denial.
    #[test]
    fn a_refused_user_namespace_names_the_setting() {
        let t = "unshare(CLONE_NEWUSER|CLONE_NEWNS) = -1 EPERM (Operation not permitted)\n\
                 clone3({flags=CLONE_NEWUSER, exit_signal=SIGCHLD}, 88) = -1 ENOSYS (Function not implemented)\n\
                 clone(child_stack=NULL, flags=CLONE_NEWUSER|SIGCHLD) = -1 EPERM (Operation not permitted)\n\
                 unshare(CLONE_NEWNS) = -1 EPERM (Operation not permitted)\n\
                 setns(3</proc/1/ns/user>, CLONE_NEWUSER) = -1 EPERM (Operation not permitted)\n";
        let d = parse(t, "/w");
        let user = |c: &str| Denied::UserNamespace(c.into());
        assert_eq!(
            d,
            [
                user("unshare"),
                user("clone"),
                Denied::Baseline("unshare".into()),
                user("setns")
            ]
        );
        let text = report(&d, &ANCHORS, &|_| true);
        assert!(
            text.contains("unshare  a user namespace: refused unless the policy sets [linux] nested_user_namespaces = true"),
            "{text}"
        );
    }

    /// The workspace and home [`TRACE`] is read against.
    const ANCHORS: Anchors = Anchors {
        workspace: "/home/u/ws",
        home: "/home/u",
    };

    #[test]
    fn report_suggests_rules_but_not_for_sensitive_paths() {
        let exists = |p: &str| p == "/home/u/.cache";
        let d = on_host(parse(TRACE, "/home/u/ws"), &exists);
        let a = ANCHORS;
        let r = report(&d, &a, &exists);
        assert!(r.contains("refused 13:"), "{r}");
        assert!(
            r.contains("/home/u/.ssh/id_ed25519  (sensitive: no rule suggested)"),
            "{r}"
        );
        assert!(!r.contains("path = \"~/.ssh"), "{r}");
        // A write to a path that does not exist is granted on its directory.
        assert!(r.contains("[[fs]]\npath = \"/srv\"\nwrite = true\n"), "{r}");
        assert!(
            r.contains("[[fs]]\npath = \"~/.cache\"\nread = true\n"),
            "{r}"
        );
        // Workspace paths are relative; quotes are escaped.
        assert!(r.contains("[[fs]]\npath = \"out\"\nwrite = true\n"), "{r}");
        assert!(
            r.contains("[[fs]]\npath = \"/opt/tool/bin/t\"\nexecute = true\n"),
            "{r}"
        );
        assert!(
            r.contains("[[net]]\nhost = \"127.0.0.1\"\nport = 9\n"),
            "{r}"
        );
        assert!(
            r.contains("[[net]]\nhost = \"*\"\nport = 8080\nbind = true\n"),
            "{r}"
        );
        assert!(r.contains("chmod    refused whatever the policy"), "{r}");
        // The suggestions are TOML a policy accepts.
        let rules = r.split_once("\n\n").unwrap().1;
        let doc: toml::Table = toml::from_str(rules).unwrap();
        assert_eq!(doc["fs"].as_array().unwrap().len(), 5, "{rules}");
        assert!(report(&[], &a, &|_| true).contains("refused nothing"));
    }

    /// With the policy at hand the rules come from `sbx learn`'s reading
    /// (given here), not from the denials one by one.
    #[test]
    fn given_rules_replace_the_simple_ones() {
        let d = parse(TRACE, "/home/u/ws");
        let a = ANCHORS;
        let learned = "[[fs]]\npath = \"/srv\"\nread = true\nwrite = true\n\n";
        let r = report_with(&d, &a, &|_| false, Some(learned));
        assert!(r.contains("refused 13:"), "{r}");
        assert!(r.ends_with(&format!("{RULES_HEAD}{learned}")), "{r}");
        assert!(!r.contains("[[net]]\nhost"), "{r}");
        assert_eq!(r.matches("[[fs]]").count(), 1, "{r}");
        // Nothing the policy lacks: the listing alone.
        let r = report_with(&d, &a, &|_| false, Some(""));
        assert!(!r.contains("[[fs]]") && !r.contains("[[net]]\nhost"), "{r}");
        assert!(!r.contains(RULES_HEAD), "{r}");
    }

    /// Paths the sandbox hid are listed apart, with their rules; a path
    /// missing on the host too is dropped (a write needs its directory).
    #[test]
    fn missing_paths_are_listed_when_the_host_has_them() {
        let trace = "openat(AT_FDCWD, \"/opt/a\", O_RDONLY) = -1 ENOENT (No such file or directory)\n\
                     statx(AT_FDCWD, \"/opt/gone\", 0, STATX_ALL, 0x7f) = -1 ENOENT (No such file or directory)\n\
                     openat(AT_FDCWD, \"/opt/new\", O_WRONLY|O_CREAT, 0666) = -1 ENOENT (No such file or directory)\n\
                     mkdir(\"/nowhere/d\", 0777) = -1 ENOENT (No such file or directory)\n\
                     chdir(\"/opt/a\") = -1 ENOENT (No such file or directory)\n\
                     openat(AT_FDCWD, \"/srv/f\", O_RDONLY) = -1 EROFS (Read-only file system)\n";
        let exists = |p: &str| p == "/opt" || p == "/opt/a";
        let d = on_host(parse(trace, "/"), &exists);
        let r = report(&d, &ANCHORS, &exists);
        assert_eq!(
            r,
            "sbx: --denials: the sandbox refused 1:\n  read     /srv/f\n\
             sbx: --denials: not visible in the sandbox, but present on the host (2):\n\
             \x20 read     /opt/a\n  write    /opt/new\n\
             sbx: rules that would allow them (read them before adding):\n\n\
             [[fs]]\npath = \"/opt\"\nwrite = true\n\n\
             [[fs]]\npath = \"/opt/a\"\nread = true\n\n\
             [[fs]]\npath = \"/srv/f\"\nread = true\n\n"
        );
    }

    #[test]
    fn the_directory_is_followed() {
        let trace = "openat(AT_FDCWD</w/a>, \"x\", O_RDONLY) = -1 EACCES (Permission denied)\n\
                     mkdir(\"y\", 0777) = -1 EACCES (Permission denied)\n\
                     chdir(\"sub\") = 0\n\
                     unlink(\"z\") = -1 EACCES (Permission denied)\n\
                     fchdir(3</elsewhere>) = 0\n\
                     rmdir(\"q\") = -1 EACCES (Permission denied)\n";
        let paths: Vec<String> = parse(trace, "/start")
            .into_iter()
            .map(|d| match d {
                Denied::Path { path, .. } => path,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(paths, ["/w/a/x", "/w/a/y", "/w/a/sub/z", "/elsewhere/q"]);
    }

    #[test]
    fn odd_lines_are_ignored() {
        for l in [
            "",
            "+++ exited with 0 +++",
            "--- SIGCHLD {si_signo=SIGCHLD} ---",
            "openat(AT_FDCWD, \"/x\", O_RDONLY <unfinished ...>",
            "connect(3, {sa_family=AF_UNIX, sun_path=\"/run/x\"}, 110) = -1 EACCES (Permission denied)",
            "weird line ) = -1 EACCES",
            "bind(5, {sa_family=AF_INET, sin_port=htons(0), sin_addr=inet_addr(\"0.0.0.0\")}, 16) = -1 EACCES (Permission denied)",
        ] {
            assert_eq!(parse(l, "/"), [], "{l}");
        }
    }
}
