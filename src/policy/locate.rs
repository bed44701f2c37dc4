//! Where a rule named by a back end's label is written: the labels of
//! precision lines and emit errors (`fs[2] (p.toml:7:1)`, `net[0]`,
//! `commands.git`, `preset system_runtime`, `limits.cpu_time_s`,
//! `macos.mach_lookup[1]`), mapped back to the merged policy and its
//! layers.

use super::{LoadedLayer, Policy};
use crate::diag::Location;

/// The value at `pointer` in the last layer that sets it (later wins).
pub fn key(layers: &[LoadedLayer], pointer: &str) -> Option<Location> {
    layers
        .iter()
        .rev()
        .find(|l| l.parsed.value.pointer(pointer).is_some())
        .and_then(|l| l.parsed.locate(pointer))
}

/// The rule or key `label` names, or its nearest written ancestor
/// (`limits.cpu_time_s` → `[limits]`); `None` when the policy does not
/// write it (the default policy, a preset not listed).
pub fn label(policy: &Policy, layers: &[LoadedLayer], label: &str) -> Option<Location> {
    // `fs[2] (p.toml:7:1)`: indices into the merged lists.
    let head = label.split(' ').next().unwrap_or_default();
    if let Some(i) = indexed(head, "fs") {
        return policy.fs.as_ref()?.get(i)?.loc.clone();
    }
    if let Some(i) = indexed(head, "net") {
        return policy.net.get(i)?.loc.clone();
    }
    if let Some(name) = label.strip_prefix("commands.") {
        return policy.commands.as_ref()?.get(name)?.loc.clone();
    }
    if label.starts_with("preset ") {
        return key(layers, "/process/presets");
    }
    if label == "process roots" {
        return key(layers, "/process/write_roots").or_else(|| key(layers, "/process/read_roots"));
    }
    if label.contains(' ') {
        return None;
    }
    // A dotted key, with `[i]` for list items.
    let mut pointer = String::new();
    for seg in label.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, i)) => (n, i.strip_suffix(']')),
            None => (seg, None),
        };
        pointer.push('/');
        pointer.push_str(name);
        if let Some(i) = index {
            pointer.push('/');
            pointer.push_str(i);
        }
    }
    while !pointer.is_empty() {
        if let Some(l) = key(layers, &pointer) {
            return Some(l);
        }
        pointer.truncate(pointer.rfind('/').unwrap_or(0));
    }
    None
}

/// `name[i]` → `i`.
fn indexed(s: &str, name: &str) -> Option<usize> {
    s.strip_prefix(name)?
        .strip_prefix('[')?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{merge::merge, test_layer};

    #[test]
    fn labels_map_to_lines() {
        let text = "[[fs]]\npath = \".\"\nread = true\n\n[[net]]\nport = 443\n\n[limits]\ncpu_time_s = 5\n\n[macos]\nmach_lookup = [\"a\", \"b\"]\n\n[commands.git]\n";
        let layers = [test_layer("p.toml", text)];
        let p = merge(&layers);
        let line = |s: &str| label(&p, &layers, s).map(|l| l.line);
        assert_eq!(line("fs[0] (p.toml:1:1)"), Some(1));
        assert_eq!(line("net[0]"), Some(5));
        assert_eq!(line("net"), Some(5));
        assert_eq!(line("limits.cpu_time_s"), Some(9));
        assert_eq!(line("limits.wall_time_s"), Some(8));
        assert_eq!(line("macos.mach_lookup[1]"), Some(12));
        assert_eq!(line("commands.git"), Some(14));
        assert_eq!(line("env"), None);
        assert_eq!(line("default policy"), None);
        assert_eq!(line("fs[7]"), None);
    }
}
