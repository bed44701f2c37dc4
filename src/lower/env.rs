//! `[[env]]`: the names and globs forwarded besides the minimal set.

use super::*;

pub(super) fn lower_env(policy: &Policy, os: Os) -> ir::Env {
    let mut allow: Vec<String> = policy
        .env
        .iter()
        .filter(|r| r.value.read != Some(false))
        .map(|r| r.value.name.clone())
        .collect();
    allow.sort();
    allow.dedup();
    ir::Env {
        allow,
        ..ir::Env::minimal(os)
    }
}
