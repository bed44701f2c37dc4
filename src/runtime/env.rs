//! The child's environment: exactly the minimal set plus what the policy
//! forwards. Everything else from the parent is dropped.

use crate::ir;
use globset::{GlobSet, GlobSetBuilder};
use std::ffi::{OsStr, OsString};

/// A compiled matcher for the names the child may receive.
///
/// Names and `PREFIX*` patterns (the minimal set's `LC_*`, and most
/// policies' `AWS_*`-style globs) are matched directly; only other globs
/// are compiled with `globset`, whose build (a regex and an Aho-Corasick
/// automaton, and CPU feature detection on first use) costs more than the
/// rest of `sbx run --artifact`'s own work before the child starts.
#[derive(Debug, Clone)]
pub struct EnvFilter {
    exact: Vec<String>,
    prefixes: Vec<String>,
    /// The other patterns; `None` when there are none.
    set: Option<GlobSet>,
    case_insensitive: bool,
}

/// A pattern globset would match as a plain name or a prefix: no glob
/// syntax but one trailing `*`. `None` for anything else.
fn simple(pat: &str) -> Option<(&str, bool)> {
    let (body, star) = match pat.strip_suffix('*') {
        Some(b) => (b, true),
        None => (pat, false),
    };
    let meta = |c: char| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\');
    (!body.contains(meta)).then_some((body, star))
}

impl EnvFilter {
    /// Build from the IR's env section. `case_insensitive` is for Windows,
    /// where `Path` and `PATH` are the same variable.
    pub fn new(env: &ir::Env, case_insensitive: bool) -> Result<EnvFilter, globset::Error> {
        let mut exact = Vec::new();
        let mut prefixes = Vec::new();
        let mut globs = Vec::new();
        for pat in env.minimal.iter().chain(env.allow.iter()) {
            match simple(pat) {
                // globset folds Unicode case: leave that to it.
                _ if case_insensitive => globs.push(pat),
                Some((name, false)) => exact.push(name.to_string()),
                Some((prefix, true)) => prefixes.push(prefix.to_string()),
                None => globs.push(pat),
            }
        }
        let set = if globs.is_empty() {
            None
        } else {
            let mut b = GlobSetBuilder::new();
            for pat in globs {
                let g = globset::GlobBuilder::new(pat)
                    .case_insensitive(case_insensitive)
                    .literal_separator(false)
                    .build()?;
                b.add(g);
            }
            Some(b.build()?)
        };
        Ok(EnvFilter {
            exact,
            prefixes,
            set,
            case_insensitive,
        })
    }

    pub fn allows(&self, name: &OsStr) -> bool {
        // A name that is not valid Unicode cannot match a policy glob.
        match name.to_str() {
            Some(n) if !n.is_empty() => {
                self.exact.iter().any(|e| e == n)
                    || self.prefixes.iter().any(|p| n.starts_with(p.as_str()))
                    || self.set.as_ref().is_some_and(|s| s.is_match(n))
            }
            _ => false,
        }
    }

    /// The filtered environment, in the parent's order.
    pub fn apply<I>(&self, vars: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let _ = self.case_insensitive;
        vars.into_iter().filter(|(k, _)| self.allows(k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(allow: &[&str]) -> ir::Env {
        ir::Env {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            ..ir::Env::minimal(ir::Os::Linux)
        }
    }

    fn names(f: &EnvFilter, vars: &[&str]) -> Vec<String> {
        f.apply(
            vars.iter()
                .map(|n| (OsString::from(n), OsString::from("v"))),
        )
        .into_iter()
        .map(|(k, _)| k.into_string().unwrap())
        .collect()
    }

    #[test]
    fn minimal_set_and_globs() {
        let f = EnvFilter::new(&env(&["AWS_*", "GITHUB_TOKEN"]), false).unwrap();
        assert_eq!(
            names(
                &f,
                &[
                    "PATH",
                    "SECRET",
                    "AWS_KEY",
                    "LC_ALL",
                    "GITHUB_TOKEN",
                    "GITHUB_TOKENX",
                    "HOME",
                    "path"
                ]
            ),
            ["PATH", "AWS_KEY", "LC_ALL", "GITHUB_TOKEN", "HOME"]
        );
    }

    /// The direct matches decide as globset would on its own.
    #[test]
    fn plain_names_and_prefixes_match_like_globset() {
        use proptest::prelude::*;
        let glob = |pat: &str| {
            globset::GlobBuilder::new(pat)
                .literal_separator(false)
                .build()
                .map(|g| g.compile_matcher())
        };
        let cfg = ProptestConfig {
            cases: 2000,
            ..ProptestConfig::default()
        };
        proptest!(cfg, |(pat in "[A_a/é*?\\[\\]{},!\\\\-]{0,5}", names in proptest::collection::vec("[A_a/é*?\\[\\]{},\\\\]{0,5}", 1..8))| {
            let Ok(reference) = glob(&pat) else {
                // globset refuses it: so must the filter.
                prop_assert!(EnvFilter::new(&env(&[&pat]), false).is_err());
                return Ok(());
            };
            let f = EnvFilter::new(
                &ir::Env { minimal: vec![], allow: vec![pat.clone()] },
                false,
            ).unwrap();
            for n in names.iter().chain([&pat]) {
                let want = !n.is_empty() && reference.is_match(n);
                prop_assert_eq!(f.allows(OsStr::new(n)), want, "pattern {:?} name {:?}", pat, n);
            }
        });
        for pat in ["LC_*", "AWS_*", "PATH", "*", ""] {
            assert!(simple(pat).is_some(), "{pat}");
        }
        for pat in ["A*B", "A**", "A?", "[A]*", "{A,B}", "A\\*"] {
            assert!(simple(pat).is_none(), "{pat}");
        }
        let f = EnvFilter::new(&env(&["AWS_*"]), false).unwrap();
        assert!(f.set.is_none(), "no globset for names and prefixes");
    }

    #[test]
    fn windows_names_are_case_insensitive() {
        let f = EnvFilter::new(&env(&[]), true).unwrap();
        assert_eq!(names(&f, &["Path", "SECRET"]), ["Path"]);
    }
}
