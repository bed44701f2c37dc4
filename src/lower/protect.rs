//! POLICY.md §7 and §7a as ordinary grants, so that every back end, the
//! precision reports, `explain` and `--baseline` see them with no special
//! case:
//!
//! * a protected path inside a writable grant becomes a read-only grant
//!   (the rights of the grant that covers it, minus create, update and
//!   delete), source [`Source::Protected`];
//! * a sensitive path under home that a broader grant only covers becomes
//!   a grant with no rights at all (hidden), source [`Source::Covered`]
//!   (in [`super::hidden`]).
//!
//! Both rely on most-specific-wins: the new grant is deeper than the one
//! that covered the path, and a rule deeper still (one naming a file in
//! `.vscode/`) keeps deciding for itself.

use super::git;
use super::lookup::{locate, parent, written, Lookup};
use super::paths::{is_normal, join};
use super::Ctx;
use crate::diag::{codes, Diagnostic};
use crate::dirents::Kind;
use crate::hashed::Set;
use crate::ir::{Grant, PathKind, Precision, Source, Status};
use crate::policy::Policy;

/// At the top of every writable tree (POLICY.md §7a).
pub const IN_WRITABLE: &[&str] = &[
    ".git/hooks",
    ".git/config",
    // git reads the hooks and config of the repository this names.
    ".git/commondir",
    ".gitmodules",
    ".envrc",
    ".vscode",
    ".idea",
    ".mcp.json",
    ".claude",
    ".codex",
    ".agents",
];

/// Under a writable home: what runs later, outside the sandbox, when
/// the user starts a shell, logs in, runs git, ssh, an editor or a
/// build tool. Not exhaustive (no list of every program's start-up
/// file can be): the precision report and `sbx run` say so. Python's
/// user-site `*.pth` and `*customize.py` are not here: `pip install
/// --user -e` writes `.pth` files, so on Linux `sbx run` moves aside
/// those the run made instead (`runtime::linux::usersite`).
pub const IN_HOME: &[&str] = &[
    // Shells: every file bash, zsh and fish read at start-up or exit.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".config/fish",
    // The login session: environment, X start-up, autostart entries,
    // systemd user units, desktop entries (`Exec=` runs from a menu).
    ".pam_environment",
    ".xprofile",
    ".xsessionrc",
    ".config/environment.d",
    ".config/autostart",
    ".config/systemd/user",
    ".local/share/applications",
    // On every user's PATH in most distributions' default profile.
    ".local/bin",
    // git's global config (aliases, core.fsmonitor, hooksPath).
    ".gitconfig",
    ".config/git",
    // ssh runs `rc` at each login, `command=` from authorized_keys, and
    // `ProxyCommand` or `LocalCommand` from its config. `~/.ssh` is a
    // sensitive path: where a broader grant covers it, it is hidden,
    // which is stricter, and these are dropped (`protect`).
    ".ssh/rc",
    ".ssh/authorized_keys",
    ".ssh/config",
    // Editors and terminals: files they execute when they start.
    ".vimrc",
    ".vim",
    ".config/nvim",
    ".emacs",
    ".emacs.d",
    ".tmux.conf",
    ".config/Code/User",
    ".vscode/extensions",
    // IPython runs `profile_*/startup/*.py` and each profile's
    // `ipython_config.py`: the whole directory, as a new profile can be
    // made beside the existing ones.
    ".ipython",
    // direnv: `direnvrc` and `lib/*.sh` run before every `.envrc`, and
    // the allow list decides which `.envrc` runs at all.
    ".config/direnv",
    ".direnvrc",
    ".local/share/direnv/allow",
    // Build tools: cargo's `[target] runner`, `[alias]` and build
    // settings, gradle's init scripts, npm's and yarn's settings
    // (`script-shell`, `yarnPath`).
    ".cargo/config.toml",
    ".cargo/config",
    ".gradle/init.d",
    ".gradle/init.gradle",
    ".gradle/init.gradle.kts",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
];

/// Said once when home is writable: no list of what runs later can be
/// complete.
pub const HOME_NOT_EXHAUSTIVE: &str = "home is writable: sbx keeps the start-up files and \
     settings it knows of read-only (shells, the login session, git, ssh, editors, \
     direnv, cargo, gradle, npm, yarn; docs/protected.md), but the list is not \
     exhaustive, and what else in home a program runs later stays writable. On Linux, \
     sbx run moves aside the Python user-site .pth and *customize.py files the run made";

/// Whether `ir` lets the command write home itself (a rule on `~` or
/// above it, or the workspace is home): the case [`IN_HOME`] is for.
/// Nothing protect adds lands on home itself, so the lowered IR answers
/// as the grants before it did.
pub fn home_writable(ir: &crate::ir::Ir) -> bool {
    ir.access_at(&ir.roots.home).writes()
}

/// One place to protect, before it is checked against the grants.
struct Want {
    path: String,
    entry: String,
    /// Known from walking to it: the kind, `path` being canonical.
    found: Option<PathKind>,
}

/// A directory's entries and their types, when it has at most
/// [`LISTED`]: one `readdir` answers the first component of each
/// protected name (nine, most of them absent) where an `lstat` each
/// cost twice as much.
type Listing = Vec<(std::ffi::OsString, Kind)>;

const LISTED: usize = 64;

fn listing(dir: &str) -> Option<Listing> {
    let mut out = Vec::new();
    for e in crate::dirents::read_dir(dir).ok()? {
        let e = e.ok()?;
        if out.len() == LISTED {
            return None;
        }
        // The type `readdir` gave, or an `lstat` where it gave none.
        out.push((e.file_name().to_os_string(), e.kind().ok()?));
    }
    Some(out)
}

/// The kind of `path`, which is `root/entry` for `root` a canonical
/// directory (a grant's path), with one `lstat` per component of
/// `entry` (the first looked up in `listed`, `root`'s listing, when
/// there is one); `None` where a symlink is on the way (the full resolver
/// decides) or `path` is not spelled so. Most entries do not exist,
/// and there are eleven per writable tree.
fn under_root(root: &str, path: &str, listed: Option<&Listing>) -> Option<PathKind> {
    if path.as_bytes().get(root.len()) != Some(&b'/') {
        return None;
    }
    let rel = path.get(root.len() + 1..)?;
    let ends = rel
        .match_indices('/')
        .map(|(i, _)| root.len() + 1 + i)
        .chain([path.len()]);
    let mut ends = ends.peekable();
    let mut listed = listed;
    while let Some(end) = ends.next() {
        let last = ends.peek().is_none();
        let name = &path[root.len() + 1..end];
        // A listing has no `.` or `..` (entries cannot name them, SBX018).
        let found = match listed.take().filter(|_| !matches!(name, "" | "." | "..")) {
            Some(l) => l
                .iter()
                .find(|(n, _)| n.as_os_str() == name)
                .map(|&(_, t)| t)
                .ok_or(std::io::ErrorKind::NotFound),
            None => std::fs::symlink_metadata(&path[..end])
                .map(|m| Kind::from(m.file_type()))
                .map_err(|e| e.kind()),
        };
        match found {
            Ok(Kind::Symlink | Kind::Unknown) => return None,
            Ok(Kind::Dir) if last => return Some(PathKind::Dir),
            Ok(Kind::Dir) => {}
            Ok(_) if last => return Some(PathKind::File),
            Err(std::io::ErrorKind::NotFound) => return Some(PathKind::Missing),
            _ => return None,
        }
    }
    None
}

impl Ctx<'_> {
    pub(super) fn kind_of(&self, path: &str) -> PathKind {
        if !self.resolve {
            return PathKind::Unknown;
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => PathKind::Dir,
            Ok(_) => PathKind::File,
            Err(_) => PathKind::Missing,
        }
    }

    /// Every place §7a names, for the writable trees of `fs`.
    fn wanted(&mut self, policy: &Policy, fs: &[Grant], look: &Lookup) -> Vec<Want> {
        let mut out = Vec::new();
        let home = self.roots.home.clone();
        let writes = |p: &str| look.decide(p).is_some_and(|i| fs[i].access.writes());
        // The top of each writable tree: a writable grant whose directory
        // above the policy does not make writable (presets such as the
        // temp directory are sbx's own, and not protected). A writable
        // rule inside a writable tree adds no protections of its own, so
        // that removing such a rule (redundant for writing) never
        // unprotects anything; repositories inside the tree are found by
        // the nested search instead.
        let policy_writes = |p: &str| {
            look.decide(p).is_some_and(|i| {
                let g = &fs[i];
                (g.source.authored() || g.source == Source::Default) && g.access.writes()
            })
        };
        // Each with whether it was absent when resolved: nothing below it
        // can exist, so it is neither read nor searched.
        let mut roots: Vec<(String, bool)> = fs
            .iter()
            .filter(|g| {
                (g.source.authored() || g.source == Source::Default)
                    && g.access.writes()
                    && g.kind != PathKind::File
                    && !parent(&g.path).is_some_and(policy_writes)
            })
            .map(|g| (g.path.clone(), self.resolve && g.kind == PathKind::Missing))
            .collect();
        let is_root = |roots: &[(String, bool)], p: &str| roots.iter().any(|(r, _)| r == p);
        // The workspace when a broader grant makes it writable (a grant on
        // it under another spelling, macOS `/private/tmp`, is there already).
        let ws = &self.roots.workspace;
        let named = look.at(ws).is_some_and(|i| is_root(&roots, &fs[i].path));
        if writes(ws) && !named && !is_root(&roots, ws) {
            roots.push((ws.clone(), false));
        }
        let user: Vec<&str> = policy
            .protected_paths
            .iter()
            .map(|p| p.value.as_str())
            .collect();
        let (anchored, relative): (Vec<&str>, Vec<&str>) = user
            .iter()
            .partition(|p| p.starts_with("~/") || p.starts_with('/'));
        // In path order, so that the protections of the (sorted) roots
        // come out nearly sorted and cost `protect` little to sort.
        let mut names: Vec<&str> = IN_WRITABLE
            .iter()
            .chain(relative.iter())
            .map(|e| e.trim_end_matches('/'))
            .collect();
        names.sort_unstable();
        names.dedup();
        // A writable rule at or inside a protected path lifts it; the list
        // is not applied again below it (`.vscode/settings.json/.git/hooks`).
        // A normal name under a normal root is normal as `ir::joined` puts
        // them together (what `join` would check again, ten times per tree),
        // and a path is one of them exactly when it ends in `/NAME` after a
        // root.
        let plain = names.iter().all(|e| !e.starts_with('/') && is_normal(e))
            && roots.iter().all(|(r, _)| is_normal(r));
        let joined: Vec<Vec<String>> = roots
            .iter()
            .map(|(r, _)| {
                names
                    .iter()
                    .map(|e| {
                        if plain {
                            crate::ir::joined(r, e)
                        } else {
                            join(r, e)
                        }
                    })
                    .collect()
            })
            .collect();
        let keep: Vec<bool> = if plain {
            let tops: Set<&str> = roots.iter().map(|(r, _)| r.as_str()).collect();
            let listed = |q: &str| {
                names.iter().any(|e| {
                    q.strip_suffix(e)
                        .and_then(|p| p.strip_suffix('/'))
                        .is_some_and(|p| tops.contains(p))
                })
            };
            roots
                .iter()
                .map(|(r, _)| !ancestry(r).any(listed))
                .collect()
        } else {
            let listed: Set<&str> = joined.iter().flatten().map(String::as_str).collect();
            roots
                .iter()
                .map(|(r, _)| !ancestry(r).any(|q| listed.contains(q)))
                .collect()
        };
        out.reserve(roots.len() * names.len());
        let mut repos = Vec::new();
        let mut budget = git::DIR_BUDGET;
        let mut complete = true;
        let mut trees = 0;
        for (((r, absent), paths), keep) in roots.iter().zip(joined).zip(keep) {
            if !keep {
                continue;
            }
            trees += 1;
            // `None` where paths are not resolved (portable) or the tree
            // was absent (nothing to read).
            let listed = (self.resolve && !absent).then(|| listing(r));
            for (path, &e) in paths.into_iter().zip(&names) {
                out.push(Want {
                    found: match &listed {
                        _ if *absent => Some(PathKind::Missing),
                        Some(l) => under_root(r, &path, l.as_ref()),
                        None => None,
                    },
                    path,
                    entry: e.to_string(),
                });
            }
            if let Some(l) = &listed {
                let top = l.as_deref();
                // A listing without `.git` says `git::repo` finds nothing.
                if top.is_none_or(|l| l.iter().any(|(n, _)| n == ".git")) {
                    repos.push(r.clone());
                }
                complete &= git::nested(r, top, &mut budget, &mut repos);
            }
        }
        if writes(&home) {
            for e in IN_HOME {
                out.push(Want {
                    path: join(&home, e),
                    entry: format!("~/{e}"),
                    found: None,
                });
            }
            // One line for the whole list, not one per name.
            self.notes.push(Precision {
                rule: "protected paths".into(),
                target: "ir".into(),
                status: Status::Wider,
                reason: HOME_NOT_EXHAUSTIVE.into(),
                advisory: true,
            });
        } else if self.resolve {
            // A start-up file that is a symlink into a writable tree (a
            // dotfiles repository linked into home, by stow or by hand)
            // runs later as surely as one in a writable home: its target
            // is protected.
            // Home's own entries, where they are few: a name whose first
            // component home lacks, or holds as a plain entry when the
            // name has no other, leads nowhere else (home is canonical).
            let entries = listing(&home);
            let plain = |e: &str| {
                let (first, rest) = e.split_once('/').unwrap_or((e, ""));
                entries.as_ref().is_some_and(|l| {
                    match l
                        .iter()
                        .find(|(n, _)| n.as_encoded_bytes() == first.as_bytes())
                    {
                        None => true,
                        Some((_, k)) => rest.is_empty() && *k != Kind::Symlink,
                    }
                })
            };
            for e in IN_HOME.iter().filter(|e| !plain(e)) {
                let link = join(&home, e);
                let canon = self.resolver.resolve(&link).0;
                if canon != link {
                    out.push(Want {
                        path: canon,
                        entry: format!("~/{e}"),
                        found: None,
                    });
                }
            }
        }
        for e in anchored {
            let e = e.trim_end_matches('/');
            let path = match e.strip_prefix("~/") {
                Some(r) => join(&home, r),
                None => super::paths::normalise(e),
            };
            out.push(Want {
                path,
                entry: e.to_string(),
                found: None,
            });
        }
        if trees > 0 {
            // What no name covers: a repository the command makes or
            // changes below a tree's top (docs/protected.md).
            self.notes.push(Precision {
                rule: "protected paths".into(),
                target: "ir".into(),
                status: Status::Wider,
                reason: format!(
                    "a git repository the command makes or changes below the top of a \
                     writable tree (git init sub) is protected by no name while the run \
                     lasts; git would run its hooks and config outside the sandbox later \
                     (a git status there, or at the top through a submodule entry). On \
                     Linux, sbx run moves aside what changed in such repositories up to \
                     {} directories below each top (at most {} directories listed), and \
                     in each submodule the top's index names, when the run ends; deeper \
                     ones that no submodule entry names, and on macOS and Windows every \
                     one, stay as the command left them",
                    git::NESTED_DEPTH,
                    git::DIR_BUDGET
                ),
                advisory: true,
            });
        }
        let mut stopped = Vec::new();
        if self.resolve {
            let mut configs = git::include::Reader::new(&home);
            let global = git::global(&home, &mut configs);
            // The repository the default policy's workspace lies in
            // (`above`): its `core.hooksPath` or an included config may
            // name a file in the workspace, which must not be writable.
            if policy.fs.is_none() {
                let ws = &self.roots.workspace;
                repos.extend(super::above::top_above(ws, &home));
            }
            repos.sort();
            repos.dedup();
            let mut found = Vec::new();
            for d in repos {
                found.extend(git::repo(&d, &global, &mut budget, &mut configs));
            }
            found.append(&mut configs.found);
            out.extend(found.into_iter().map(|f| Want {
                path: f.path,
                entry: f.entry,
                found: None,
            }));
            if configs.out_of_budget {
                stopped.push(format!(
                    "git's config includes were followed {} times, the bound: a file \
                     included beyond it keeps writable what it sets",
                    git::include::BUDGET
                ));
            }
            if let Some(f) = configs.too_large {
                stopped.push(format!(
                    "the git config {f} is larger than {} KiB and was not read: \
                     the files it includes keep writable what they set",
                    git::MAX_FILE / 1024
                ));
            }
        }
        if !complete {
            stopped.push(format!(
                "the search for nested git repositories stopped after {} directories: \
                 a repository it did not reach keeps writable hooks and config",
                git::DIR_BUDGET
            ));
        }
        for reason in stopped {
            self.notes.push(Precision {
                rule: "protected paths".into(),
                target: "ir".into(),
                status: Status::Wider,
                reason,
                advisory: false,
            });
        }
        out
    }

    /// Add the protections and hidden sensitive paths to `fs` (sorted by
    /// path, as lowering leaves it); warn about lifted protections
    /// (SBX030) and covered sensitive paths (SBX029).
    pub(super) fn protect(&mut self, policy: &Policy, fs: &mut Vec<Grant>) {
        let look = Lookup::new(fs);
        let mut wanted = self.wanted(policy, fs, &look);
        // A protected path reached through a symlink is protected by both
        // names: the link (so it cannot be replaced) and its target.
        if self.resolve {
            let mut extra = Vec::new();
            for w in &wanted {
                let canon = match w.found {
                    Some(_) => continue,
                    None => self.resolver.resolve(&w.path).0,
                };
                if canon != w.path {
                    extra.push(Want {
                        path: canon,
                        entry: w.entry.clone(),
                        found: None,
                    });
                }
            }
            wanted.extend(extra);
        }
        // The first of each path, marked without copying the paths.
        let mut seen: Set<&str> = Set::with_capacity_and_hasher(wanted.len(), Default::default());
        let first: Vec<bool> = wanted.iter().map(|w| seen.insert(&w.path)).collect();
        drop(seen);
        // The protections are appended to `fs` itself, after its `rules`
        // grants, and sorted there: a list of their own, merged into a
        // third, held three lists of half a million grants at once at
        // 100,000 rules (#38). `look` and its indices stay those of the
        // first `rules` grants, which nothing below reorders or removes
        // until the final sort.
        let rules = fs.len();
        // Relied on by the final sort, which must give what merging the
        // sorted lists gave.
        debug_assert!(fs.is_sorted_by(|x, y| x.path <= y.path));
        // Room for the hidden paths too (at most one per sensitive
        // pattern) and the few grants lowering adds after this
        // (`known_hosts`): growing a list this long copies it whole.
        let sensitive = super::SENSITIVE_PATHS.len() + policy.sensitive_paths.len();
        fs.reserve(wanted.len() + sensitive + 8);
        let mut lifted: Vec<(usize, String, String)> = Vec::new();
        for (w, first) in wanted.into_iter().zip(first) {
            if !first {
                continue;
            }
            let Some(i) = look.decide(&w.path) else {
                continue;
            };
            let g = &fs[i];
            if !g.access.writes() {
                continue;
            }
            let exact = g.path == w.path || g.aliases.contains(&w.path);
            // Lifted only by a rule that names the path itself: one that
            // reaches it through a symlink (which the command may have
            // made in an earlier run) protects it like any other grant.
            if g.names(&w.path) && g.source.authored() {
                lifted.push((i, w.path, w.entry));
                continue;
            }
            let access = g.access.without_writes();
            if exact {
                // A preset's or the default policy's grant on the very path.
                let g = &mut fs[i];
                g.access = access;
                g.source = Source::Protected { entry: w.entry };
                continue;
            }
            let aliases = g.aliases_below(&w.path);
            let kind = match w.found {
                Some(k) => k,
                None => self.kind_of(&w.path),
            };
            fs.push(Grant {
                kind,
                aliases,
                path: w.path,
                access,
                source: Source::Protected { entry: w.entry },
                external: None,
            });
        }
        // Sorted here rather than before the merge below: a writable rule
        // inside a protected path is looked up by binary search, where a
        // map of every protection's path (half a million at 100,000
        // rules) cost more memory than the grants' own list.
        fs[rules..].sort_by(|a, b| a.path.cmp(&b.path));
        // A writable rule inside a protected path lifts it there.
        let (ruled, added) = fs.split_at(rules);
        if !added.is_empty() {
            let protected = |q: &str| {
                let i = added.binary_search_by(|g| g.path.as_str().cmp(q)).ok()?;
                let Source::Protected { entry } = &added[i].source else {
                    unreachable!("only protections are added here")
                };
                Some(entry.as_str())
            };
            for (i, g) in ruled.iter().enumerate() {
                if !g.source.authored() || !g.access.writes() {
                    continue;
                }
                let mut p = parent(&g.path);
                while let Some(q) = p {
                    if let Some(e) = protected(q) {
                        lifted.push((i, q.to_string(), e.to_string()));
                        break;
                    }
                    p = parent(q);
                }
            }
        }
        let mut said = Set::default();
        for (i, path, entry) in lifted {
            let g = &fs[i];
            if !said.insert((i, entry.clone())) {
                continue;
            }
            let inside = if g.path == path || g.aliases.contains(&path) {
                String::new()
            } else {
                format!(" inside the protected {entry}")
            };
            self.diags.push(
                Diagnostic::new(
                    codes::PROTECTION_LIFTED,
                    format!(
                        "{} grants {} on {}{inside}: the protection of {entry} is lifted there, \
                         and what the sandbox writes there can run later outside it",
                        g.source.label(),
                        g.access.names().join(", "),
                        written(policy, g)
                    ),
                )
                .at(locate(policy, &g.source))
                .help("drop the write rights unless the tool must change this file; if it must, accept the warning with `--allow SBX030`"),
            );
        }
        let mut hidden = self.covered(policy, &fs[..rules], &look);
        // Hidden is stricter than read-only where a user entry names a
        // sensitive path too, or lies inside one (`~/.ssh/config` in a
        // hidden `~/.ssh`: a read-only grant there would win over the
        // hiding, most-specific-wins, and let it be read).
        if !hidden.is_empty() {
            let hidden_at: Set<&str> = hidden.iter().map(|g| g.path.as_str()).collect();
            let mut at = 0;
            fs.retain(|g| {
                at += 1;
                at <= rules || !ancestry(&g.path).any(|p| hidden_at.contains(p))
            });
        }
        hidden.sort_by(|a, b| a.path.cmp(&b.path));
        fs.extend(hidden);
        // Three runs sorted by path (the rules, the protections, the
        // hidden paths), in that order: a stable sort keeps the first
        // run's grant first where paths are equal, as merging them did,
        // and finds the runs rather than sorting from scratch.
        fs.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

/// `p` and the paths above it, nearest first.
fn ancestry(p: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(p), |q| parent(q))
}

#[cfg(test)]
mod tests;
