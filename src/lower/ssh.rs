//! `ssh_agent = true`: `~/.ssh/known_hosts` (and `known_hosts2`), read
//! only, so that ssh can check the host it reaches. Never the rest of
//! `~/.ssh`: not the keys, and not `config`, whose `ProxyCommand` and
//! `Match exec` run commands.

use super::lookup::Lookup;
use super::paths::join;
use super::Ctx;
use crate::ir::{Access, Grant, PathKind, Source};
use crate::policy::Policy;

/// The files shown, relative to home.
pub const KNOWN_HOSTS: [&str; 2] = [".ssh/known_hosts", ".ssh/known_hosts2"];

impl Ctx<'_> {
    /// A read-only grant on each known-hosts file that no grant reads
    /// yet. Where a broader grant covers `~/.ssh` it is hidden instead
    /// (a grant with no rights): a grant beneath would lift the hiding,
    /// so none is added, and `sbx run` shows the files in the hidden
    /// directory itself (docs/linux.md, "ssh").
    pub(super) fn known_hosts(&mut self, policy: &Policy, fs: &mut Vec<Grant>) {
        if policy.ssh_agent != Some(true) {
            return;
        }
        let home = self.roots.home.clone();
        let mut add = Vec::new();
        let look = Lookup::new(fs);
        for rel in KNOWN_HOSTS {
            let path = join(&home, rel);
            let kind = self.kind_of(&path);
            if kind == PathKind::Missing {
                continue;
            }
            if let Some(i) = look.decide(&path) {
                let g = &fs[i];
                if g.access.read || matches!(g.source, Source::Covered { .. }) {
                    continue;
                }
            }
            add.push(Grant {
                path,
                access: Access {
                    read: true,
                    ..Access::NONE
                },
                kind,
                source: Source::SshAgent,
                aliases: Vec::new(),
                external: None,
            });
        }
        if !add.is_empty() {
            fs.extend(add);
            fs.sort_by(|a, b| a.path.cmp(&b.path));
        }
    }
}
