//! The policy hash (CLI.md "Artifacts"): sha256 of the merged policy in a
//! canonical JSON form, without where each value was written. It depends
//! on nothing but the policy, so every artifact compiled from one policy
//! carries the same hash, whatever the target, host or path mode.

use super::merge::{Located, Policy};
use super::model::{CommandRule, Enforcement, EnvRule, FsRule, Limits, Linux, Macos, NetRule};
use super::model::{Process, Windows};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;

/// The merged policy's values in a fixed order: struct fields in
/// declaration order, `commands` sorted by name, lists as merged.
#[derive(Serialize)]
struct Canonical<'a> {
    enforcement: Option<Enforcement>,
    fs: Option<Vec<&'a FsRule>>,
    net: Vec<&'a NetRule>,
    env: Vec<&'a EnvRule>,
    commands: Option<BTreeMap<&'a str, &'a CommandRule>>,
    sensitive_paths: Vec<&'a str>,
    /// Left out when empty, so that policies without it keep their hash.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    protected_paths: Vec<&'a str>,
    /// Left out when absent, for the same reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    ssh_agent: Option<bool>,
    process: &'a Process,
    limits: &'a Limits,
    macos: &'a Macos,
    linux: &'a Linux,
    windows: &'a Windows,
}

fn values<T>(list: &[Located<T>]) -> Vec<&T> {
    list.iter().map(|l| &l.value).collect()
}

/// `sha256:` and 64 hex digits.
pub fn policy_hash(p: &Policy) -> String {
    let c = Canonical {
        enforcement: p.enforcement,
        fs: p.fs.as_deref().map(values),
        net: values(&p.net),
        env: values(&p.env),
        commands: p
            .commands
            .as_ref()
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), &v.value)).collect()),
        sensitive_paths: p.sensitive_paths.iter().map(|s| s.value.as_str()).collect(),
        protected_paths: p.protected_paths.iter().map(|s| s.value.as_str()).collect(),
        ssh_agent: p.ssh_agent,
        process: &p.process,
        limits: &p.limits,
        macos: &p.macos,
        linux: &p.linux,
        windows: &p.windows,
    };
    sha256_json(&c)
}

/// `sha256:` and the hex digest of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    hex(Sha256::digest(bytes).as_slice())
}

/// [`sha256`] of `value`'s JSON text, hashed as it is written: the text of
/// a large IR is never held whole.
pub fn sha256_json(value: &impl Serialize) -> String {
    let mut h = Sha256::new();
    // serde_json writes a few bytes at a time; `update` per piece cost
    // more than the hashing itself.
    let mut w = std::io::BufWriter::with_capacity(1 << 13, &mut h);
    serde_json::to_writer(&mut w, value).expect("the value serialises");
    w.flush().expect("a hash takes everything");
    drop(w);
    hex(h.finalize().as_slice())
}

fn hex(digest: &[u8]) -> String {
    let mut out = String::with_capacity(7 + 2 * digest.len());
    out.push_str("sha256:");
    push_hex(&mut out, digest);
    out
}

/// `bytes` as lower-case hex digits, two per byte.
pub fn lower_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    push_hex(&mut out, bytes);
    out
}

/// One string, not one per byte: every `sbx run` makes a few digests.
fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{merge::merge, test_layer};

    fn hash_of(text: &str) -> String {
        policy_hash(&merge(&[test_layer("p.toml", text)]))
    }

    #[test]
    fn layout_does_not_count_values_do() {
        let a = hash_of("[[fs]]\npath = \"src\"\nread = true\n");
        let b = hash_of("# a comment\n\n[[fs]]\nread = true\npath = \"src\"\n");
        let c = hash_of("[[fs]]\npath = \"src\"\nread = true\nwrite = true\n");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with("sha256:") && a.len() == 71, "{a}");
    }

    /// FIPS 180-2's first example, and a digest with bytes below 0x10.
    #[test]
    fn digests_are_written_in_lower_case_hex() {
        assert_eq!(
            sha256(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "sha256:000fa0ff");
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }
}
