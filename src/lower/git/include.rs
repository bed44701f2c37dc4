//! Git config files with their `include.path` and
//! `includeIf.<condition>.path` directives followed, as git follows them:
//! the included file is read at the point of the directive, a relative
//! path is relative to the directory of the file that names it, `~/` is
//! home. Every condition counts as true: it may be true at the user's
//! next git command (a `gitdir:`, `onbranch:` or `hasconfig:` condition
//! changes with where and when git runs).
//!
//! Each included file is a place to protect: written from inside the
//! sandbox, it could set `core.fsmonitor` or `core.hooksPath` for the
//! user's next `git status` outside it.

use super::config::{self, Entry};
use super::{anchored, found, open_small, Found};
use crate::hashed::{Map, Set};

/// Git's own limit on nested includes (`MAX_INCLUDE_DEPTH` in its
/// config.c): past it git stops with an error and runs nothing.
pub const DEPTH: usize = 10;
/// At most this many include directives are followed per lowering, each
/// reading at most one file (of at most 64 KiB): bounded work at every
/// `sbx run`, whatever a config nested in the workspace says.
pub const BUDGET: usize = 100;

/// A `core.hooksPath` value in git's reading order, `~/` expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooks {
    pub value: String,
    /// Read whatever the conditions: no `includeIf` on the way, and not
    /// from a file git reads only under a setting (`config.worktree`).
    pub sure: bool,
}

/// What a config file says that matters here, in its order.
#[derive(Debug, Clone)]
enum Item {
    Hooks(String),
    Include {
        path: String,
        conditional: bool,
    },
    /// `extensions.worktreeConfig` is set (to any value: reading more
    /// than git reads is the safe side), so git may read `config.worktree`.
    WorktreeConfig,
}

/// Config files read during one lowering, each at most once.
pub struct Reader {
    home: String,
    budget: usize,
    /// What each file read says (`None`: absent, unreadable, too large).
    read: Map<String, Option<Vec<Item>>>,
    /// Included files, each once: the places to protect.
    pub found: Vec<Found>,
    listed: Set<String>,
    /// The budget ran out before every directive was followed.
    pub out_of_budget: bool,
    /// A config file too large to read, whose includes are unknown.
    pub too_large: Option<String>,
}

impl Reader {
    pub fn new(home: &str) -> Reader {
        Reader {
            home: home.to_string(),
            budget: BUDGET,
            read: Map::default(),
            found: Vec::new(),
            listed: Set::default(),
            out_of_budget: false,
            too_large: None,
        }
    }

    /// Read `path`, a file git reads as config of its own, with what it
    /// includes; append its `core.hooksPath` values to `hooks`. `sure`:
    /// git reads the file whatever the settings.
    pub fn read(&mut self, path: &str, sure: bool, hooks: &mut Vec<Hooks>) {
        let mut chain = vec![path.to_string()];
        self.walk(path, sure, &mut chain, hooks);
    }

    /// `chain`: the files being read, `path` last; its length is git's
    /// include depth plus one.
    fn walk(&mut self, path: &str, sure: bool, chain: &mut Vec<String>, hooks: &mut Vec<Hooks>) {
        for item in self.items(path) {
            let (inc, conditional) = match item {
                Item::Hooks(value) => {
                    hooks.push(Hooks { value, sure });
                    continue;
                }
                Item::Include { path, conditional } => (path, conditional),
                Item::WorktreeConfig => continue,
            };
            // Past git's depth, and around a cycle (which git reads until
            // that depth), git stops with an error: nothing to follow.
            if chain.len() > DEPTH || chain.contains(&inc) {
                continue;
            }
            if self.listed.insert(inc.clone()) {
                let from = format!("git include from {}", self.shown(path));
                self.found.push(found(inc.clone(), &from));
            }
            if self.budget == 0 {
                self.out_of_budget = true;
                continue;
            }
            self.budget -= 1;
            chain.push(inc.clone());
            self.walk(&inc, sure && !conditional, chain, hooks);
            chain.pop();
        }
    }

    /// Whether `path` itself sets `extensions.worktreeConfig`.
    pub fn names_worktree_config(&mut self, path: &str) -> bool {
        self.items(path)
            .iter()
            .any(|i| matches!(i, Item::WorktreeConfig))
    }

    fn items(&mut self, path: &str) -> Vec<Item> {
        if let Some(known) = self.read.get(path) {
            return known.clone().unwrap_or_default();
        }
        let items = self.load(path);
        self.read.insert(path.to_string(), items.clone());
        items.unwrap_or_default()
    }

    fn load(&mut self, path: &str) -> Option<Vec<Item>> {
        let text = match open_small(path) {
            Ok(t) => t?,
            Err(()) => {
                self.too_large.get_or_insert_with(|| path.to_string());
                return None;
            }
        };
        // Relative to the directory as the kernel finds it: `..` after a
        // symlinked directory (`~/.config/git` into a dotfiles checkout)
        // leaves the link's target.
        let dir = super::parent_dir(path);
        let dir = crate::lower::paths::realpath(std::path::Path::new(&dir))
            .ok()
            .and_then(|d| d.to_str().map(str::to_string))
            .unwrap_or(dir);
        Some(
            config::parse(&text)
                .into_iter()
                .filter_map(|e| item(e, &dir, &self.home))
                .collect(),
        )
    }

    /// `path` as the user knows it: `~/x` under home.
    fn shown(&self, path: &str) -> String {
        match path.strip_prefix(self.home.as_str()) {
            Some(rest) if rest.starts_with('/') && self.home != "/" => format!("~{rest}"),
            _ => path.to_string(),
        }
    }
}

fn item(e: Entry, dir: &str, home: &str) -> Option<Item> {
    if e.is("extensions", "worktreeconfig") {
        return Some(Item::WorktreeConfig);
    }
    let v = e.value.as_deref().filter(|v| !v.is_empty())?;
    if e.is("core", "hookspath") {
        return config::expand(v, home).map(Item::Hooks);
    }
    let conditional = match (e.section.as_str(), &e.subsection, e.key.as_str()) {
        ("include", None, "path") => false,
        ("includeif", Some(_), "path") => true,
        _ => return None,
    };
    let path = anchored(dir, &config::expand(v, home)?);
    Some(Item::Include { path, conditional })
}

/// The `core.hooksPath` values git may end up with: the last one it reads
/// whatever the conditions, and each conditional one read after it.
pub fn hooks_paths(hooks: &[Hooks]) -> Vec<String> {
    let mut out = Vec::new();
    for h in hooks.iter().rev() {
        if !out.contains(&h.value) {
            out.push(h.value.clone());
        }
        if h.sure {
            break;
        }
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests;
