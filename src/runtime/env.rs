//! The child's environment: exactly the minimal set plus what the policy
//! forwards. Everything else from the parent is dropped.

use crate::ir;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::ffi::{OsStr, OsString};

/// Always forwarded on every OS (RFD 075).
pub const MINIMAL: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_*"];
/// What Windows needs to start a process at all.
pub const MINIMAL_WINDOWS: &[&str] = &["SystemRoot", "windir", "TEMP", "TMP", "COMSPEC", "PATHEXT"];

/// A compiled matcher for the names the child may receive.
#[derive(Debug, Clone)]
pub struct EnvFilter {
    set: GlobSet,
    case_insensitive: bool,
}

impl EnvFilter {
    /// Build from the IR's env section. `case_insensitive` is for Windows,
    /// where `Path` and `PATH` are the same variable.
    pub fn new(env: &ir::Env, case_insensitive: bool) -> Result<EnvFilter, globset::Error> {
        let mut b = GlobSetBuilder::new();
        for pat in env.minimal.iter().chain(env.allow.iter()) {
            let g = globset::GlobBuilder::new(pat)
                .case_insensitive(case_insensitive)
                .literal_separator(false)
                .build()?;
            b.add(g);
        }
        Ok(EnvFilter {
            set: b.build()?,
            case_insensitive,
        })
    }

    pub fn allows(&self, name: &OsStr) -> bool {
        // A name that is not valid Unicode cannot match a policy glob.
        match name.to_str() {
            Some(n) if !n.is_empty() => self.set.is_match(n),
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

/// Check every pattern compiles; used when lowering so a bad glob is a
/// located policy error, not a run-time failure.
pub fn check_pattern(pat: &str) -> Result<(), String> {
    Glob::new(pat).map(|_| ()).map_err(|e| e.kind().to_string())
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

    #[test]
    fn windows_names_are_case_insensitive() {
        let f = EnvFilter::new(&env(&[]), true).unwrap();
        assert_eq!(names(&f, &["Path", "SECRET"]), ["Path"]);
    }
}
