//! Semantic checks the schema cannot express, each located.

use super::model::*;
use super::schema::describe;
use super::source::Parsed;
use crate::diag::{codes, Diagnostic};
use serde_json::Value;

/// The longest path any target accepts (Linux PATH_MAX).
pub const MAX_PATH_BYTES: usize = 4096;

/// NUL or control characters in any string or key: no target can carry
/// them safely, so they are refused wherever they appear.
pub fn control_characters(parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    /// The pointer is built only when something is found: formatting one
    /// per node was a tenth of a large compile.
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

pub fn layer(l: &Layer, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    if let Some(v) = l.version {
        if v != 1 {
            out.push(
                Diagnostic::new(codes::VERSION, format!("unsupported policy version {v}"))
                    .at(parsed.locate("/version"))
                    .help("this sbx understands version = 1"),
            );
        }
    }
    if let Some(m) = &l.fs {
        for (ptr, rule) in items(m, "fs") {
            fs_rule(rule, &ptr, parsed, out);
        }
    }
    if let Some(m) = &l.net {
        for (ptr, rule) in items(m, "net") {
            net_rule(rule, &ptr, parsed, out);
        }
    }
    if let Some(m) = &l.env {
        for (ptr, rule) in items(m, "env") {
            pattern(&rule.name, &format!("{ptr}/name"), parsed, out);
        }
    }
    if let Some(m) = &l.sensitive_paths {
        for (ptr, p) in items(m, "sensitive_paths") {
            pattern(p, &ptr, parsed, out);
        }
    }
    if let Some(c) = &l.commands {
        for name in c.keys() {
            if name.trim().is_empty() {
                let ptr = format!("/commands/{}", super::source::escape_pointer(name));
                out.push(
                    Diagnostic::new(codes::SCHEMA, "empty command name")
                        .at(parsed.locate_key(&ptr)),
                );
            }
        }
    }
    if let Some(p) = &l.process {
        for (key, roots) in [
            ("read_roots", &p.read_roots),
            ("write_roots", &p.write_roots),
        ] {
            for (i, r) in roots.iter().flatten().enumerate() {
                path_text(r, &format!("/process/{key}/{i}"), parsed, out);
            }
        }
    }
}

/// The items of a list-or-merge-table with their pointers.
fn items<'a, T>(m: &'a Mergeable<T>, key: &str) -> Vec<(String, &'a T)> {
    match m {
        Mergeable::List(v) => v
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("/{key}/{i}"), r))
            .collect(),
        Mergeable::Merge(t) => t
            .value
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("/{key}/value/{i}"), r))
            .collect(),
    }
}

fn fs_rule(r: &FsRule, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    let t = |b: Option<bool>| b == Some(true);
    if ![r.read, r.write, r.create, r.update, r.delete, r.execute]
        .into_iter()
        .any(t)
    {
        out.push(
            Diagnostic::new(
                codes::NO_CAPABILITY,
                format!("rule for {:?} grants nothing", r.path),
            )
            .at(parsed.locate(ptr))
            .help("set at least one of read, write, create, update, delete, execute to true"),
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
    if !t(r.external) && climbs_out(&r.path) {
        out.push(
            Diagnostic::new(
                codes::ESCAPES_WORKSPACE,
                format!("{:?} climbs above the workspace", r.path),
            )
            .at(parsed.locate(&format!("{ptr}/path")))
            .help("use a path inside the workspace, an absolute path, or `external = true` with an approved symlink"),
        );
    }
}

/// Length and emptiness checks shared by every path-like field.
fn path_text(p: &str, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    if p.len() > MAX_PATH_BYTES {
        out.push(
            Diagnostic::new(
                codes::TOO_LONG,
                format!("path is {} bytes; the limit is {MAX_PATH_BYTES}", p.len()),
            )
            .at(parsed.locate(ptr)),
        );
    }
    if p.trim().is_empty() {
        out.push(Diagnostic::new(codes::BAD_PATH, "empty path").at(parsed.locate(ptr)));
    }
}

/// A workspace-relative path whose `..` leaves the workspace.
pub fn climbs_out(path: &str) -> bool {
    if path.starts_with('/') || path == "~" || path.starts_with("~/") {
        return false;
    }
    let mut depth: i64 = 0;
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}

fn net_rule(r: &NetRule, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    if let Some(h) = &r.host {
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
                .at(parsed.locate(&format!("{ptr}/path_prefix"))),
            );
        }
    }
    if r.bind == Some(true) && r.port.is_none() && r.scheme.and_then(Scheme::default_port).is_none()
    {
        out.push(
            Diagnostic::new(codes::BAD_NET, "a bind rule needs a port")
                .at(parsed.locate(ptr))
                .help("add `port = N`: listening on any port is not a useful grant"),
        );
    }
}

fn pattern(p: &str, ptr: &str, parsed: &Parsed, out: &mut Vec<Diagnostic>) {
    if let Err(e) = crate::runtime::env::check_pattern(p) {
        out.push(
            Diagnostic::new(codes::BAD_PATTERN, format!("invalid glob {p:?}: {e}"))
                .at(parsed.locate(ptr)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn climbing() {
        assert!(climbs_out(".."));
        assert!(climbs_out("a/../../b"));
        assert!(!climbs_out("a/../b"));
        assert!(!climbs_out("./x/.."));
        assert!(!climbs_out("/etc/../x"));
        assert!(!climbs_out("~/../x"));
    }
}
