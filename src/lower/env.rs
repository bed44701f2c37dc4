//! `[[env]]`: the names and globs forwarded besides the minimal set.

use super::*;

/// What a policy without `[[env]]` passes on besides the minimal set
/// (POLICY.md §4, docs/presets.md): the terminal's and the clock's
/// settings and where toolchains live, none of them a secret. The
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
];

pub(super) fn lower_env(policy: &Policy, os: Os) -> ir::Env {
    let mut allow: Vec<String> = policy
        .env
        .iter()
        .filter(|r| r.value.read != Some(false))
        .map(|r| r.value.name.clone())
        .collect();
    if policy.env.is_empty() {
        allow.extend(KEPT_BY_DEFAULT.iter().map(|s| s.to_string()));
    }
    allow.sort();
    allow.dedup();
    ir::Env {
        allow,
        ..ir::Env::minimal(os)
    }
}
