//! Matching values against the policy's patterns (hosts, env globs,
//! argument prefixes), and deciding whether one pattern covers another,
//! which the baseline check needs. Covering is decided conservatively: when
//! in doubt a pattern is *not* covered, so the check reports a widening
//! rather than missing one.

use globset::GlobBuilder;

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// `*`, `*.domain` (any subdomain, not the domain itself), or an exact
/// name or address, ASCII case-insensitive.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    let host = host.trim_end_matches('.');
    if pattern == "*" {
        return true;
    }
    match pattern.strip_prefix("*.") {
        Some(domain) => {
            let (h, d) = (host.as_bytes(), domain.as_bytes());
            h.len() > d.len() + 1
                && h[h.len() - d.len()..].eq_ignore_ascii_case(d)
                && h[h.len() - d.len() - 1] == b'.'
        }
        None => pattern.eq_ignore_ascii_case(host),
    }
}

/// Every host `inner` admits is admitted by `outer`.
pub fn host_covers(outer: &str, inner: &str) -> bool {
    if outer == "*" || outer.eq_ignore_ascii_case(inner) {
        return true;
    }
    if inner == "*" {
        return false;
    }
    match (outer.strip_prefix("*."), inner.strip_prefix("*.")) {
        // `*.a.b` is covered by `*.b`: every subdomain of a.b is one of b.
        (Some(_), Some(i)) => host_matches(outer, i),
        (_, None) => host_matches(outer, inner),
        (None, Some(_)) => false,
    }
}

/// An env name against a name or glob (`AWS_*`, `LC_*`).
pub fn env_matches(pattern: &str, name: &str, fold_case: bool) -> bool {
    if !is_glob(pattern) {
        return if fold_case {
            pattern.eq_ignore_ascii_case(name)
        } else {
            pattern == name
        };
    }
    GlobBuilder::new(pattern)
        .case_insensitive(fold_case)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher().is_match(name))
        .unwrap_or(false)
}

/// Every name `inner` (a name or glob) admits is admitted by `outer`.
/// Exact for names; for globs only the forms that can be decided simply:
/// equal patterns, and a `PREFIX*` outer over an inner whose literal
/// prefix starts with PREFIX.
pub fn env_covers(outer: &str, inner: &str, fold_case: bool) -> bool {
    let eq = |a: &str, b: &str| {
        if fold_case {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    if eq(outer, inner) {
        return true;
    }
    if !is_glob(inner) {
        return env_matches(outer, inner, fold_case);
    }
    let Some(prefix) = outer.strip_suffix('*') else {
        return false;
    };
    if is_glob(prefix) {
        return false;
    }
    let lit_end = inner.find(['*', '?', '[', '{']).unwrap_or(inner.len());
    let lit = &inner[..lit_end];
    lit.len() >= prefix.len() && eq(&lit[..prefix.len()], prefix)
}

/// argv[1..] against one allowed prefix: exact, or with `**` last, the
/// fixed part followed by anything.
pub fn args_match(prefix: &[String], args: &[String]) -> bool {
    match prefix.split_last() {
        Some((last, fixed)) if last == "**" => {
            args.len() >= fixed.len() && args[..fixed.len()] == *fixed
        }
        _ => prefix == args,
    }
}

/// Every argument list `inner` admits is admitted by `outer`.
pub fn args_covers(outer: &[String], inner: &[String]) -> bool {
    let split = |p: &[String]| -> (Vec<String>, bool) {
        match p.split_last() {
            Some((last, fixed)) if last == "**" => (fixed.to_vec(), true),
            _ => (p.to_vec(), false),
        }
    };
    let (of, o_rest) = split(outer);
    let (inf, i_rest) = split(inner);
    if o_rest {
        inf.len() >= of.len() && inf[..of.len()] == of[..]
    } else {
        !i_rest && of == inf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn hosts() {
        assert!(host_matches("*", "x.org"));
        assert!(host_matches("*.crates.io", "static.crates.io"));
        assert!(!host_matches("*.crates.io", "crates.io"));
        assert!(!host_matches("*.crates.io", "evilcrates.io"));
        assert!(host_matches("API.example.com", "api.example.com."));
        assert!(host_covers("*.io", "*.crates.io"));
        assert!(host_covers("*.io", "crates.io"));
        assert!(!host_covers("*.crates.io", "*.io"));
        assert!(!host_covers("a.io", "*"));
        assert!(!host_covers("*.io", "*"));
    }

    #[test]
    fn env_globs() {
        assert!(env_matches("AWS_*", "AWS_KEY", false));
        assert!(!env_matches("AWS_*", "aws_key", false));
        assert!(env_matches("Path", "PATH", true));
        assert!(env_covers("AWS_*", "AWS_S*", false));
        assert!(env_covers("AWS_*", "AWS_KEY", false));
        assert!(env_covers("*", "X?", false));
        assert!(!env_covers("AWS_S*", "AWS_*", false));
        assert!(!env_covers("A?", "A*", false));
        assert!(!env_covers("AWS_KEY", "AWS_*", false));
    }

    #[test]
    fn argument_prefixes() {
        assert!(args_match(&v(&["status"]), &v(&["status"])));
        assert!(!args_match(&v(&["status"]), &v(&["status", "-s"])));
        assert!(args_match(&v(&["diff", "**"]), &v(&["diff"])));
        assert!(args_match(&v(&["diff", "**"]), &v(&["diff", "a", "b"])));
        assert!(!args_match(&v(&["diff", "**"]), &v(&["push"])));
        assert!(args_covers(&v(&["**"]), &v(&["push", "**"])));
        assert!(args_covers(&v(&["diff", "**"]), &v(&["diff", "--stat"])));
        assert!(!args_covers(&v(&["diff"]), &v(&["diff", "**"])));
        assert!(!args_covers(&v(&["diff", "--stat"]), &v(&["diff", "**"])));
    }
}
