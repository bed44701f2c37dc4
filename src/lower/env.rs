//! `[[env]]`: the names and globs forwarded besides the minimal set.

use super::*;

/// What every policy passes on besides the minimal set, unless a rule
/// names it with `read = false` (POLICY.md §4, docs/presets.md): the
/// terminal's and the clock's settings and where toolchains live, none
/// of them a secret. Kept whatever other `[[env]]` rules say, so that
/// removing a rule never widens what is passed on. The
/// certificate-bundle variables are kept by `sbx run` only, which checks
/// their files (`src/cli/caller.rs`).
pub const KEPT_BY_DEFAULT: &[&str] = &[
    "TERM",
    "COLORTERM",
    "TZ",
    "NO_COLOR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "NVM_DIR",
    // Where caches live: the private caches of `sbx run` on Linux are
    // mounted where the tool inside looks, and a dropped variable would
    // send it elsewhere than the host's cache the overlay reads.
    "GOMODCACHE",
    "GOCACHE",
    "npm_config_cache",
    "NPM_CONFIG_CACHE",
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "GRADLE_USER_HOME",
    "YARN_CACHE_FOLDER",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
];

pub(super) fn lower_env(policy: &Policy, os: Os) -> ir::Env {
    let mut allow: Vec<String> = policy
        .env
        .iter()
        .filter(|r| r.value.read != Some(false))
        .map(|r| r.value.name.clone())
        .collect();
    allow.extend(
        KEPT_BY_DEFAULT
            .iter()
            .filter(|n| !denied(policy, n))
            .map(|s| s.to_string()),
    );
    allow.sort();
    allow.dedup();
    ir::Env {
        allow,
        ..ir::Env::minimal(os)
    }
}

/// A rule names `name` with `read = false`: it is not passed on.
pub fn denied(policy: &Policy, name: &str) -> bool {
    policy
        .env
        .iter()
        .any(|r| r.value.read == Some(false) && r.value.name == name)
}
