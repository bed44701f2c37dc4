//! Which rule is responsible for a capability, and where it is written.
//! The IR carries file:line for fs and net rules only; env patterns,
//! commands, limits and extras are located through the merged policy.

use crate::diag::Location;
use crate::ir::Source;
use crate::policy::{LoadedLayer, Policy};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// A filesystem grant (a rule, the default policy, a preset...) and
    /// the path it grants.
    Fs { source: Source, path: String },
    /// A `[[net]]` rule.
    Net {
        index: usize,
        file: String,
        line: usize,
        column: usize,
    },
    /// An `[[env]]` rule, by name or glob.
    Env { pattern: String },
    /// The minimal environment every child gets.
    MinimalEnv,
    /// `[commands.NAME]`.
    Command { name: String },
    /// No `[commands]` table: any program may run.
    NoCommands,
    /// A key of the policy (`/limits/cpu_time_s`, `/enforcement`...).
    Key { pointer: String },
}

impl Origin {
    pub fn grant(g: &crate::ir::Grant) -> Origin {
        Origin::Fs {
            source: g.source.clone(),
            path: g.path.clone(),
        }
    }

    pub fn net(r: &crate::ir::NetRule) -> Origin {
        Origin::Net {
            index: r.index,
            file: r.file.clone(),
            line: r.line,
            column: r.column,
        }
    }

    /// A short label: `fs[2] (p.toml:7:1)`, `commands.git`, `limits.cpu_time_s`.
    pub fn label(&self) -> String {
        match self {
            Origin::Fs {
                source: Source::ProcessRoot,
                path,
            } => format!("[process] root {path}"),
            Origin::Fs { source, .. } => source.label(),
            Origin::Net {
                index,
                file,
                line,
                column,
            } => {
                if file.is_empty() {
                    format!("net[{index}]")
                } else {
                    format!("net[{index}] ({file}:{line}:{column})")
                }
            }
            Origin::Env { pattern } => format!("env {pattern:?}"),
            Origin::MinimalEnv => "the minimal environment".into(),
            Origin::Command { name } => format!("commands.{name}"),
            Origin::NoCommands => "no [commands] table (any program may run)".into(),
            Origin::Key { pointer } => pointer.trim_start_matches('/').replace('/', "."),
        }
    }
}

/// Finds where an [`Origin`] is written, in the merged policy and its layers.
pub struct Locator<'a> {
    pub policy: &'a Policy,
    pub layers: &'a [LoadedLayer],
}

impl Locator<'_> {
    /// Where `o` is written; for what the policy does not write (the
    /// default policy, the minimal environment, a removed table), the
    /// policy itself: the top of the last file, or its tool's `access`
    /// table under `--tool`.
    pub fn locate(&self, o: &Origin) -> Option<Location> {
        self.written(o).or_else(|| self.document())
    }

    /// [`Self::locate`] for an optional origin.
    pub fn locate_opt(&self, o: Option<&Origin>) -> Option<Location> {
        o.and_then(|o| self.written(o)).or_else(|| self.document())
    }

    /// The policy of the last layer (later layers win).
    pub fn document(&self) -> Option<Location> {
        self.layers.last().and_then(|l| l.parsed.locate(""))
    }

    fn written(&self, o: &Origin) -> Option<Location> {
        match o {
            Origin::Fs {
                source: Source::ProcessRoot,
                path,
            } => self.process_root(path),
            Origin::Fs { source, .. } => self.source(source),
            Origin::Net { index, .. } => self.policy.net.get(*index)?.loc.clone(),
            Origin::Env { pattern } => self
                .policy
                .env
                .iter()
                .rev()
                .find(|r| &r.value.name == pattern)?
                .loc
                .clone(),
            Origin::MinimalEnv | Origin::NoCommands => None,
            Origin::Command { name } => self.command(name),
            Origin::Key { pointer } => self.key(pointer),
        }
    }

    pub fn source(&self, s: &Source) -> Option<Location> {
        match s {
            Source::Rule { index, .. } => self.policy.fs.as_ref()?.get(*index)?.loc.clone(),
            Source::Default => None,
            Source::Preset { .. } => self.key("/process/presets"),
            Source::ProcessRoot => self
                .key("/process/write_roots")
                .or_else(|| self.key("/process/read_roots")),
            Source::Command { name } => self.command(name),
            // A built-in protection is sbx's own: the policy as a whole.
            Source::Protected { entry } => self
                .policy
                .protected_paths
                .iter()
                .find(|p| p.value.trim_end_matches('/') == entry)?
                .loc
                .clone(),
            Source::Covered { by, .. } => self.source(by),
            Source::RunFile => None,
            Source::SshAgent => self.key("/ssh_agent"),
        }
    }

    /// The `read_roots`/`write_roots` entry that lowers to `path`, matched
    /// by its anchored tail (lowering may have resolved the anchor).
    fn process_root(&self, path: &str) -> Option<Location> {
        use crate::lower::paths::{anchor, normalise, Anchor};
        let p = &self.policy.process;
        for (key, list) in [
            ("write_roots", &p.write_roots),
            ("read_roots", &p.read_roots),
        ] {
            for (i, root) in list.iter().flatten().enumerate() {
                let (a, rel) = anchor(root, path.contains(':'));
                let rel = normalise(&rel);
                let hit = match a {
                    Anchor::Absolute => rel == path,
                    _ if rel == "." => false,
                    _ => path.ends_with(&format!("/{rel}")),
                };
                if hit {
                    return self.key(&format!("/process/{key}/{i}"));
                }
            }
        }
        self.source(&Source::ProcessRoot)
    }

    pub fn command(&self, name: &str) -> Option<Location> {
        self.policy.commands.as_ref()?.get(name)?.loc.clone()
    }

    /// The value at `pointer` in the last layer that sets it (later wins).
    pub fn key(&self, pointer: &str) -> Option<Location> {
        crate::policy::locate::key(self.layers, pointer)
    }
}
