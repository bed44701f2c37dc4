//! Layers merge left to right (POLICY.md §6): scalars and tables later-wins
//! per key, `fs`/`net`/`env`/`sensitive_paths` append unless the layer's
//! merge table says otherwise, `commands` merge by name.

use super::model::*;
use super::LoadedLayer;
use crate::diag::Location;
use crate::hashed::Set;
use std::collections::BTreeMap;
use std::hash::Hash;

/// A value with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    pub value: T,
    pub loc: Option<Location>,
    /// The index of its layer in merge order: two layers may come from one
    /// file (`--tool NAME` over the file's `tools."*"`).
    pub layer: usize,
}

/// The merged policy, still in the user's terms (relative paths etc.).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    pub enforcement: Option<Enforcement>,
    /// `None`: no layer declared `fs`, so the default policy applies.
    pub fs: Option<Vec<Located<FsRule>>>,
    pub net: Vec<Located<NetRule>>,
    pub env: Vec<Located<EnvRule>>,
    pub commands: Option<BTreeMap<String, Located<CommandRule>>>,
    pub sensitive_paths: Vec<Located<String>>,
    pub protected_paths: Vec<Located<String>>,
    /// `ssh_agent`: the last layer that sets it wins.
    pub ssh_agent: Option<bool>,
    pub process: Process,
    pub limits: Limits,
    pub macos: Macos,
    pub linux: Linux,
    pub windows: Windows,
}

pub fn merge(layers: &[LoadedLayer]) -> Policy {
    let mut p = Policy::default();
    for (n, l) in layers.iter().enumerate() {
        let layer = &l.layer;
        let at = |ptr: String| l.parsed.locate(&ptr);
        if layer.enforcement.is_some() {
            p.enforcement = layer.enforcement;
        }
        if layer.ssh_agent.is_some() {
            p.ssh_agent = layer.ssh_agent;
        }
        if let Some(m) = &layer.fs {
            let items = located(m, "fs", n, &at);
            let mut cur = p.fs.take().unwrap_or_default();
            apply(&mut cur, items, strategy(m));
            p.fs = Some(cur);
        }
        if let Some(m) = &layer.net {
            apply(&mut p.net, located(m, "net", n, &at), strategy(m));
        }
        if let Some(m) = &layer.env {
            apply(&mut p.env, located(m, "env", n, &at), strategy(m));
        }
        if let Some(m) = &layer.sensitive_paths {
            apply(
                &mut p.sensitive_paths,
                located(m, "sensitive_paths", n, &at),
                strategy(m),
            );
        }
        if let Some(m) = &layer.protected_paths {
            apply(
                &mut p.protected_paths,
                located(m, "protected_paths", n, &at),
                strategy(m),
            );
        }
        if let Some(c) = &layer.commands {
            let cur = p.commands.get_or_insert_with(BTreeMap::new);
            // One pass over the table's keys rather than a lookup per name.
            let keys: BTreeMap<&str, Location> =
                l.parsed.locate_keys("/commands").into_iter().collect();
            for (name, rule) in c {
                let loc = match keys.get(name.as_str()) {
                    Some(k) => Some(k.clone()),
                    None => l.parsed.locate_key(&format!(
                        "/commands/{}",
                        super::source::escape_pointer(name)
                    )),
                };
                cur.insert(
                    name.clone(),
                    Located {
                        value: rule.clone(),
                        loc,
                        layer: n,
                    },
                );
            }
        }
        if let Some(x) = &layer.process {
            later(&mut p.process.presets, &x.presets);
            later(&mut p.process.read_roots, &x.read_roots);
            later(&mut p.process.write_roots, &x.write_roots);
        }
        if let Some(x) = &layer.limits {
            later(&mut p.limits.max_processes, &x.max_processes);
            later(&mut p.limits.max_memory_mib, &x.max_memory_mib);
            later(&mut p.limits.cpu_time_s, &x.cpu_time_s);
            later(&mut p.limits.wall_time_s, &x.wall_time_s);
        }
        if let Some(x) = &layer.macos {
            later(&mut p.macos.mach_lookup, &x.mach_lookup);
            later(&mut p.macos.allow_pty, &x.allow_pty);
        }
        if let Some(x) = &layer.linux {
            later(&mut p.linux.scopes, &x.scopes);
            later(&mut p.linux.min_abi, &x.min_abi);
            later(&mut p.linux.namespaces, &x.namespaces);
            later(&mut p.linux.capabilities, &x.capabilities);
            later(
                &mut p.linux.nested_user_namespaces,
                &x.nested_user_namespaces,
            );
            later(&mut p.linux.memfd_exec, &x.memfd_exec);
        }
        if let Some(x) = &layer.windows {
            later(&mut p.windows.token, &x.token);
            later(&mut p.windows.appcontainer, &x.appcontainer);
            later(&mut p.windows.ui_restrictions, &x.ui_restrictions);
            later(&mut p.windows.kill_on_close, &x.kill_on_close);
        }
    }
    p
}

fn later<T: Clone>(cur: &mut Option<T>, new: &Option<T>) {
    if new.is_some() {
        cur.clone_from(new);
    }
}

fn strategy<T>(m: &Mergeable<T>) -> Strategy {
    match m {
        Mergeable::List(_) => Strategy::Append,
        Mergeable::Merge(t) => t.strategy,
    }
}

/// The layer's items with their locations (`/fs/0` or `/fs/value/0`).
fn located<T: Clone>(
    m: &Mergeable<T>,
    key: &str,
    layer: usize,
    at: &dyn Fn(String) -> Option<Location>,
) -> Vec<Located<T>> {
    let (items, base) = match m {
        Mergeable::List(v) => (v, format!("/{key}")),
        Mergeable::Merge(t) => (&t.value, format!("/{key}/value")),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| Located {
            value: v.clone(),
            loc: at(format!("{base}/{i}")),
            layer,
        })
        .collect()
}

fn apply<T: Eq + Hash>(cur: &mut Vec<Located<T>>, new: Vec<Located<T>>, s: Strategy) {
    match s {
        Strategy::Append => cur.extend(new),
        Strategy::Prepend => {
            let old = std::mem::replace(cur, new);
            cur.extend(old);
        }
        Strategy::Replace => *cur = new,
        Strategy::Dedup => {
            cur.extend(new);
            // Keep the first occurrence of each value.
            let first: Vec<bool> = {
                let mut seen: Set<&T> =
                    Set::with_capacity_and_hasher(cur.len(), Default::default());
                cur.iter().map(|item| seen.insert(&item.value)).collect()
            };
            let mut first = first.into_iter();
            cur.retain(|_| first.next().unwrap_or(true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load_layer;
    use crate::policy::source::SourceFile;

    fn layer(name: &str, text: &str) -> LoadedLayer {
        load_layer(
            SourceFile {
                name: name.into(),
                text: text.into(),
            },
            None,
        )
        .unwrap()
    }

    fn paths(p: &Policy) -> Vec<String> {
        p.fs.as_ref()
            .unwrap()
            .iter()
            .map(|r| r.value.path.clone())
            .collect()
    }

    const BASE: &str = "[[fs]]\npath = \"a\"\nread = true\n[[fs]]\npath = \"b\"\nread = true\n";

    #[test]
    fn strategies() {
        let b = layer("base.toml", BASE);
        let app = layer("l.toml", "[[fs]]\npath = \"c\"\nread = true\n");
        assert_eq!(paths(&merge(&[b.clone(), app])), ["a", "b", "c"]);
        let pre = layer(
            "l.toml",
            "[fs]\nstrategy = \"prepend\"\n[[fs.value]]\npath = \"c\"\nread = true\n",
        );
        assert_eq!(paths(&merge(&[b.clone(), pre])), ["c", "a", "b"]);
        let rep = layer(
            "l.toml",
            "[fs]\nstrategy = \"replace\"\n[[fs.value]]\npath = \"c\"\nread = true\n",
        );
        assert_eq!(paths(&merge(&[b.clone(), rep])), ["c"]);
        let dd = layer(
            "l.toml",
            "[fs]\nstrategy = \"dedup\"\n[[fs.value]]\npath = \"a\"\nread = true\n[[fs.value]]\npath = \"d\"\nread = true\n",
        );
        let m = merge(&[b, dd]);
        assert_eq!(paths(&m), ["a", "b", "d"]);
        // The surviving `a` keeps the base file's location.
        assert_eq!(m.fs.unwrap()[0].loc.as_ref().unwrap().file, "base.toml");
    }

    #[test]
    fn scalars_and_commands_later_wins() {
        let a = layer(
            "a.toml",
            "enforcement = \"required\"\n[limits]\ncpu_time_s = 5\nwall_time_s = 9\n[commands.git]\nargs = [[\"status\"]]\n",
        );
        let b = layer(
            "b.toml",
            "enforcement = \"best_effort\"\n[limits]\ncpu_time_s = 7\n[commands.git]\n[commands.cargo]\n",
        );
        let m = merge(&[a, b]);
        assert_eq!(m.enforcement, Some(Enforcement::BestEffort));
        assert_eq!(m.limits.cpu_time_s, Some(7));
        assert_eq!(m.limits.wall_time_s, Some(9));
        let c = m.commands.unwrap();
        assert_eq!(c["git"].value.args, None);
        assert!(c.contains_key("cargo"));
    }

    #[test]
    fn fs_absent_everywhere_means_default() {
        let a = layer("a.toml", "[[net]]\nport = 443\n");
        assert!(merge(&[a]).fs.is_none());
    }
}
