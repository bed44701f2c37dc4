//! Semantic checks the schema cannot express, each located.

use super::model::{EnvRule, FsRule, NetRule, Scheme};
use super::schema::describe;
use super::source::Parsed;
use crate::diag::{codes, Diagnostic};
use serde_json::Value;

/// The longest path any target accepts (Linux PATH_MAX).
pub const MAX_PATH_BYTES: usize = 4096;

/// The longest file name (path component) every target accepts: NAME_MAX
/// on Linux, 255 UTF-8 bytes on APFS, 255 UTF-16 units on NTFS (never
/// more than 255 bytes of UTF-8).
pub const MAX_NAME_BYTES: usize = 255;

/// NUL or control characters in any string or key: no target can carry
/// them safely, so they are refused wherever they appear.
pub fn control_characters(parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    /// The pointer is built only when something is found: formatting one
    /// per node would be a tenth of a large compile.
    fn pointer(path: &[Seg]) -> String {
        let mut p = String::new();
        for s in path {
            p.push('/');
            match s {
                Seg::Key(k) => p.push_str(&super::source::escape_pointer(k)),
                Seg::Index(i) => p.push_str(&i.to_string()),
            }
        }
        p
    }
    fn walk<'a>(v: &'a Value, path: &mut Vec<Seg<'a>>, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
        match v {
            Value::String(s) => {
                if let Some(c) = s.chars().find(|c| c.is_control()) {
                    let at = pointer(path);
                    out.push(bad_char(describe(&at), c).at(parsed.locate(&at)));
                }
            }
            Value::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    path.push(Seg::Index(i));
                    walk(item, path, parsed, out);
                    path.pop();
                }
            }
            Value::Object(m) => {
                for (k, item) in m {
                    path.push(Seg::Key(k));
                    if let Some(c) = k.chars().find(|c| c.is_control()) {
                        let p = pointer(path);
                        out.push(bad_char(format!("key {k:?}"), c).at(parsed.locate_key(&p)));
                    }
                    walk(item, path, parsed, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    walk(&parsed.value, &mut Vec::new(), parsed, out);
}

enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

fn bad_char(what: String, c: char) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_CHARACTER,
        format!("{what} contains the control character U+{:04X}", c as u32),
    )
    .help("remove it: paths and names with control characters cannot be represented safely")
}

/// The semantic checks. They read each rule on its own from the JSON
/// value, so a file with schema errors still gets every other error
/// reported in the same run; a rule that does not deserialise was already
/// reported by the schema and is skipped here.
pub fn layer(parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    let root = &parsed.value;
    for (ptr, rule) in items::<FsRule>(root, "fs") {
        fs_rule(&rule, &ptr, parsed, out);
    }
    for (ptr, rule) in items::<NetRule>(root, "net") {
        net_rule(&rule, &ptr, parsed, out);
    }
    for (ptr, rule) in items::<EnvRule>(root, "env") {
        let at = format!("{ptr}/name");
        // `NAME=VALUE` is how every OS stores a variable: no name holds `=`.
        if rule.name.contains('=') {
            out.push(
                Diagnostic::new(
                    codes::BAD_CHARACTER,
                    format!("env name {:?} contains `=`", rule.name),
                )
                .at(parsed.locate(&at))
                .help("an environment variable name cannot contain `=`: name the variable alone"),
            );
        }
        pattern(&rule.name, &at, parsed, out);
    }
    for (ptr, p) in items::<String>(root, "sensitive_paths") {
        pattern(&p, &ptr, parsed, out);
    }
    for (ptr, p) in items::<String>(root, "protected_paths") {
        if let Some(why) = bad_protected(&p) {
            out.push(
                Diagnostic::new(codes::BAD_PATH, format!("protected path {p:?} {why}"))
                    .at(parsed.locate(&ptr))
                    .help("name a file or directory: `.husky`, `tools/run.sh`, `~/.config/fish`, `/etc/x`"),
            );
        }
    }
    if let Some(c) = root.get("commands").and_then(Value::as_object) {
        for name in c.keys() {
            let ptr = format!("/commands/{}", super::source::escape_pointer(name));
            if name.contains("${") {
                out.push(
                    Diagnostic::new(
                        codes::BAD_PATH,
                        format!("command name {name:?} contains `${{`"),
                    )
                    .at(parsed.locate_key(&ptr))
                    .help("`${` is reserved for sbx's placeholders"),
                );
            }
            if name.trim().is_empty() {
                out.push(
                    Diagnostic::new(codes::SCHEMA, "empty command name")
                        .at(parsed.locate_key(&ptr))
                        .help("name the program: `[commands.git]`, or an absolute path in quotes"),
                );
            }
        }
    }
    for (i, c) in root
        .pointer("/linux/capabilities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(name) = c.as_str() else { continue };
        if let Some(why) = super::caps::refusal(name) {
            out.push(
                Diagnostic::new(codes::CAPABILITY, format!("capability {name:?} {why}"))
                    .at(parsed.locate(&format!("/linux/capabilities/{i}")))
                    .help("list only what the command needs as root: CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_FOWNER cover `tar x`, `cp -a` and a workspace of another uid (docs/linux.md)"),
            );
        }
    }
    for key in ["read_roots", "write_roots"] {
        let list = root.pointer(&format!("/process/{key}"));
        for (i, r) in list
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(r) = r.as_str() {
                let ptr = format!("/process/{key}/{i}");
                path_text(r, &ptr, parsed, out);
                climbing(r, &ptr, false, parsed, out);
            }
        }
    }
}

/// The items of a list-or-merge-table that deserialise, with pointers.
fn items<T: serde::de::DeserializeOwned>(root: &Value, key: &str) -> Vec<(String, T)> {
    let (list, base) = match root.get(key) {
        Some(Value::Array(a)) => (a, format!("/{key}")),
        Some(Value::Object(m)) => match m.get("value") {
            Some(Value::Array(a)) => (a, format!("/{key}/value")),
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    list.iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let t = T::deserialize(item).ok()?;
            Some((format!("{base}/{i}"), t))
        })
        .collect()
}

fn fs_rule(r: &FsRule, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    let t = |b: Option<bool>| b == Some(true);
    // Naming capabilities all `false` is a deny rule (POLICY.md §3);
    // naming none is the typo this guards against.
    if [r.read, r.write, r.create, r.update, r.delete, r.execute]
        .into_iter()
        .all(|b| b.is_none())
    {
        out.push(
            Diagnostic::new(
                codes::NO_CAPABILITY,
                format!("rule for {:?} names no capability", r.path),
            )
            .at(parsed.locate(ptr))
            .help("set the rights it grants (read, write, create, update, delete, execute), or `read = false` to deny everything beneath it"),
        );
    }
    if t(r.write) {
        for (name, v) in [
            ("create", r.create),
            ("update", r.update),
            ("delete", r.delete),
        ] {
            if v == Some(false) {
                out.push(
                    Diagnostic::new(
                        codes::CONTRADICTION,
                        format!("`write = true` contradicts `{name} = false`"),
                    )
                    .at(parsed.locate(&format!("{ptr}/{name}")))
                    .help("write means create + update + delete: drop `write` and list the rights you want"),
                );
            }
        }
    }
    path_text(&r.path, &format!("{ptr}/path"), parsed, out);
    if t(r.external) {
        if !workspace_relative(&r.path) {
            out.push(
                Diagnostic::new(
                    codes::EXTERNAL_INSIDE,
                    format!(
                        "external rule {:?} must be a workspace-relative symlink",
                        r.path
                    ),
                )
                .at(parsed.locate(&format!("{ptr}/external")))
                .help("external paths are reached through a symlink inside the workspace (sbx mount); grant an absolute or `~` path directly, without `external`"),
            );
        }
    } else {
        climbing(&r.path, &format!("{ptr}/path"), true, parsed, out);
    }
}

/// `rule`: an [[fs]] rule, which could be made `external` instead.
fn climbing(path: &str, ptr: &str, rule: bool, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    let Some(base) = climbs_out(path) else { return };
    let help = match base {
        Base::Workspace if rule => "use a path inside the workspace, an absolute path, or `external = true` with an approved symlink",
        Base::Workspace => "use a path inside the workspace or an absolute path",
        Base::Home => "write the absolute path instead",
    };
    let base = match base {
        Base::Workspace => "the workspace",
        Base::Home => "the home directory",
    };
    out.push(
        Diagnostic::new(
            codes::ESCAPES_WORKSPACE,
            format!("{path:?} climbs above {base}"),
        )
        .at(parsed.locate(ptr))
        .help(help),
    );
}

/// Anchored at the workspace: not absolute (`/x`, `C:/x`, `\\server`), not `~`.
fn workspace_relative(path: &str) -> bool {
    let b = path.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    !(path.starts_with('/')
        || path.starts_with('\\')
        || drive
        || path == "~"
        || path.starts_with("~/"))
}

/// Length and emptiness checks shared by every path-like field.
fn path_text(p: &str, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    if p.len() > MAX_PATH_BYTES {
        out.push(
            Diagnostic::new(
                codes::TOO_LONG,
                format!("path is {} bytes; the limit is {MAX_PATH_BYTES}", p.len()),
            )
            .at(parsed.locate(ptr))
            .help("no target accepts longer paths; grant a shorter parent directory instead"),
        );
    }
    // No file system holds the name, so the rule could never match: an
    // error, not the "does not exist" warning.
    if let Some(long) = p.split(['/', '\\']).find(|c| c.len() > MAX_NAME_BYTES) {
        let head: String = long.chars().take(16).collect();
        out.push(
            Diagnostic::new(
                codes::TOO_LONG,
                format!(
                    "{}: the path component {head:?}… is {} bytes; the limit is {MAX_NAME_BYTES}",
                    describe(ptr),
                    long.len()
                ),
            )
            .at(parsed.locate(ptr))
            .help("no file system stores a file name longer than 255 bytes: fix the path"),
        );
    }
    // Portable artifacts use `${WORKSPACE}`-style placeholders; a literal
    // `${` in a policy path could be read back as one (a folder named
    // `${HOME}` would turn into the home directory), so it is refused.
    if p.contains("${") {
        out.push(
            Diagnostic::new(codes::BAD_PATH, format!("path {p:?} contains `${{`"))
                .at(parsed.locate(ptr))
                .help("`${` is reserved for sbx's placeholders (${WORKSPACE}, ${HOME}, ${TMPDIR}); rename the directory or grant its parent"),
        );
    }
    // "" is refused by the schema (minLength); catch blank ones here.
    if !p.is_empty() && p.trim().is_empty() {
        out.push(
            Diagnostic::new(codes::BAD_PATH, "blank path")
                .at(parsed.locate(ptr))
                .help("use `.` for the workspace, `~` for home, or an absolute path"),
        );
    }
}

/// What a relative path is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    Workspace,
    Home,
}

/// The base a relative path's `..` climbs above, if any. Both bases are
/// checked: portable artifacts keep them as `${WORKSPACE}` / `${HOME}`
/// placeholders, above which nothing can be expressed. Backslashes count
/// as separators because the policy also compiles for Windows.
pub fn climbs_out(path: &str) -> Option<Base> {
    let (base, rest) = match path.strip_prefix("~/").or(path.strip_prefix("~\\")) {
        Some(rest) => (Base::Home, rest),
        None if path == "~" || !workspace_relative(path) => return None,
        None => (Base::Workspace, path),
    };
    let mut depth: i64 = 0;
    for part in rest.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return Some(base);
                }
            }
            _ => depth += 1,
        }
    }
    None
}

fn net_rule(r: &NetRule, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    // An empty host is the schema's to report (minLength).
    if let Some(h) = r.host.as_ref().filter(|h| !h.is_empty()) {
        let ok = h == "*"
            || h.strip_prefix("*.").unwrap_or(h).split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            })
            || h.parse::<std::net::IpAddr>().is_ok();
        if !ok {
            out.push(
                Diagnostic::new(codes::BAD_NET, format!("invalid host {h:?}"))
                    .at(parsed.locate(&format!("{ptr}/host")))
                    .help("use a hostname, `*.domain`, an IP address, `localhost` or `*`"),
            );
        }
    }
    if let Some(pp) = &r.path_prefix {
        if !pp.starts_with('/') {
            out.push(
                Diagnostic::new(
                    codes::BAD_NET,
                    format!("path_prefix {pp:?} must start with `/`"),
                )
                .at(parsed.locate(&format!("{ptr}/path_prefix")))
                .help(format!(
                    "write the URL path from its first slash: \"/{}\"",
                    pp.trim_start_matches('/')
                )),
            );
        }
    }
    // Denying every bind is meaningful; granting every port is not.
    let allow = r.allow != Some(false);
    if allow
        && r.bind == Some(true)
        && r.port.is_none()
        && r.scheme.and_then(Scheme::default_port).is_none()
    {
        out.push(
            Diagnostic::new(codes::BAD_NET, "a bind rule needs a port")
                .at(parsed.locate(ptr))
                .help("add `port = N`: listening on any port is not a useful grant"),
        );
    }
}

fn pattern(p: &str, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    if let Err(e) = check_pattern(p) {
        out.push(
            Diagnostic::new(codes::BAD_PATTERN, format!("invalid glob {p:?}: {e}"))
                .at(parsed.locate(ptr))
                .help("globs use `*`, `?`, `[abc]` and `{a,b}`; escape a literal bracket as `[[]`"),
        );
    }
}

/// Why a `protected_paths` entry is unusable: protections are matched
/// by name, so no globs, and an entry names something below its anchor.
fn bad_protected(p: &str) -> Option<&'static str> {
    let t = p.trim_end_matches('/');
    let rest = t.strip_prefix("~/").unwrap_or(t);
    if rest.trim().is_empty() || rest == "~" || rest == "." {
        Some("names no file or directory")
    } else if rest.contains(['*', '?', '[', '{']) {
        Some("is a glob; protected paths are names, not patterns")
    } else if rest.split(['/', '\\']).any(|c| c == "..") {
        Some("contains `..`")
    } else if rest.chars().any(char::is_control) {
        Some("contains a control character")
    } else {
        None
    }
}

/// Check every pattern compiles, so a bad glob is a located policy error,
/// not a run-time failure.
fn check_pattern(pat: &str) -> Result<(), String> {
    globset::Glob::new(pat)
        .map(|_| ())
        .map_err(|e| e.kind().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_for_external() {
        assert!(workspace_relative("vendor/lib"));
        assert!(workspace_relative("./x"));
        assert!(!workspace_relative("/opt"));
        assert!(!workspace_relative("~/x"));
        assert!(!workspace_relative("C:/x"));
        assert!(!workspace_relative("\\\\srv\\share"));
    }

    #[test]
    fn climbing() {
        assert_eq!(climbs_out(".."), Some(Base::Workspace));
        assert_eq!(climbs_out("a/../../b"), Some(Base::Workspace));
        assert_eq!(climbs_out("a\\..\\..\\b"), Some(Base::Workspace));
        assert_eq!(climbs_out("a/../b"), None);
        assert_eq!(climbs_out("./x/.."), None);
        assert_eq!(climbs_out("/etc/../x"), None);
        assert_eq!(climbs_out("C:/a/../../x"), None);
        assert_eq!(climbs_out("~/../x"), Some(Base::Home));
        assert_eq!(climbs_out("~/a/../b"), None);
        assert_eq!(climbs_out("~"), None);
    }
}
