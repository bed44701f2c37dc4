use crate::diag::{codes, Diagnostic};
use crate::ir::{Access, Grant, Ir, Os, PathKind, Source};
use crate::lower::lookup::parent;
use crate::lower::tree::Tree;
use crate::lower::{lower, Options};
use crate::policy::{load_layer, merge::merge, source::SourceFile};

#[test]
fn parents() {
    assert_eq!(parent("/a/b"), Some("/a"));
    assert_eq!(parent("/a"), Some("/"));
    assert_eq!(parent("/"), None);
    assert_eq!(parent("${WORKSPACE}/a"), Some("${WORKSPACE}"));
    assert_eq!(parent("${WORKSPACE}"), None);
    assert_eq!(parent(r"C:\a"), Some(r"C:\"));
    assert_eq!(parent(r"C:\"), None);
}

/// A host with `ws/` and `home/` in a temporary directory.
struct Host(Tree);

impl std::ops::Deref for Host {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        &self.0
    }
}

impl Host {
    fn new() -> Host {
        Host(Tree::new(&["ws", "home"]))
    }

    /// A repository's skeleton as `git init` leaves it.
    fn repo(&self, rel: &str) {
        self.mkdir(&format!("{rel}/.git/hooks"));
        self.mkdir(&format!("{rel}/.git/objects"));
        self.write(&format!("{rel}/.git/config"), "[core]\n\tbare = false\n");
    }

    /// Lowered with no presets: the temp preset would make this
    /// directory (under /tmp) and so home writable.
    fn lower(&self, policy: &str) -> (Ir, Vec<Diagnostic>) {
        let layer = load_layer(
            SourceFile {
                name: "p.toml".into(),
                text: format!("{policy}\n[process]\npresets = []\n").into(),
            },
            None,
        )
        .unwrap();
        let opts = Options {
            workspace: self.p("ws"),
            home: self.p("home"),
            temp: self.p("tmp"),
            os: Os::host(),
            portable: false,
            path_var: None,
            approvals: Vec::new(),
        };
        let l = lower(&merge(&[layer]), &opts).unwrap();
        (l.ir, l.diagnostics)
    }
}

const RW: &str = "[[fs]]\npath = \".\"\nread = true\nwrite = true\n";

fn grant<'a>(ir: &'a Ir, path: &str) -> Option<&'a Grant> {
    ir.fs.iter().find(|g| g.path == path)
}

fn protected(ir: &Ir, path: &str) -> bool {
    grant(ir, path)
        .is_some_and(|g| matches!(g.source, Source::Protected { .. }) && g.access == Access::READ)
}

fn codes_of(d: &[Diagnostic], code: &str) -> Vec<String> {
    d.iter()
        .filter(|d| d.code == code)
        .map(|d| d.message.clone())
        .collect()
}

#[test]
fn the_workspace_repository_is_read_only_where_it_runs_code() {
    let h = Host::new();
    h.repo("ws");
    let (ir, d) = h.lower(RW);
    for p in [
        ".git/hooks",
        ".git/config",
        ".vscode",
        ".envrc",
        ".gitmodules",
    ] {
        assert!(
            protected(&ir, &h.p(&format!("ws/{p}"))),
            "{p}: {:#?}",
            ir.fs
        );
    }
    assert_eq!(
        grant(&ir, &h.p("ws/.git/hooks")).unwrap().kind,
        PathKind::Dir
    );
    assert_eq!(
        grant(&ir, &h.p("ws/.vscode")).unwrap().kind,
        PathKind::Missing
    );
    // The rest of .git stays writable: git add and commit work.
    assert!(ir.access_at(&h.p("ws/.git/objects/ab")).create);
    assert!(ir.access_at(&h.p("ws/.git/index")).update);
    assert!(!ir.access_at(&h.p("ws/.git/hooks/pre-commit")).create);
    assert!(d.is_empty(), "{d:?}");
    // Home is not writable here: its start-up files are left alone.
    assert!(grant(&ir, &h.p("home/.bashrc")).is_none());
    // What no name covers is said, and never refused (advisory).
    let made = |ir: &Ir| {
        ir.precision
            .iter()
            .filter(|p| p.rule == "protected paths" && p.reason.contains("git init sub"))
            .map(|p| (p.status, p.advisory))
            .collect::<Vec<_>>()
    };
    assert_eq!(made(&ir), [(crate::ir::Status::Wider, true)]);
    // A read-only workspace needs no protection.
    let (ir, _) = h.lower("[[fs]]\npath = \".\"\nread = true\n");
    assert!(!ir
        .fs
        .iter()
        .any(|g| matches!(g.source, Source::Protected { .. })));
    assert!(made(&ir).is_empty());
}

#[test]
fn a_worktree_protects_the_repository_its_git_file_names() {
    let h = Host::new();
    h.repo("home/main");
    h.mkdir("home/main/.git/worktrees/wt");
    h.write("home/main/.git/worktrees/wt/commondir", "../..\n");
    h.write(
        "ws/.git",
        &format!("gitdir: {}\n", h.p("home/main/.git/worktrees/wt")),
    );
    let policy = format!("{RW}\n[[fs]]\npath = \"~/main\"\nread = true\nwrite = true\n");
    let (ir, _) = h.lower(&policy);
    for p in [
        "ws/.git",
        "home/main/.git/hooks",
        "home/main/.git/config",
        "home/main/.git/worktrees/wt/commondir",
        "home/main/.git/worktrees/wt/config.worktree",
    ] {
        assert!(protected(&ir, &h.p(p)), "{p}: {:#?}", ir.fs);
    }
    assert!(ir.access_at(&h.p("home/main/.git/objects/x")).create);
    // The main worktree's config.worktree: protected once it exists (or
    // once the config names `extensions.worktreeConfig`).
    assert!(!protected(&ir, &h.p("home/main/.git/config.worktree")));
    h.write(
        "home/main/.git/config.worktree",
        "[core]\n\tsparseCheckout = true\n",
    );
    let (ir, _) = h.lower(&policy);
    assert!(protected(&ir, &h.p("home/main/.git/config.worktree")));
    // The named repository outside every writable grant is left as it is.
    let (ir, _) = h.lower(RW);
    assert!(protected(&ir, &h.p("ws/.git")));
    assert!(grant(&ir, &h.p("home/main/.git/hooks")).is_none());
}

#[test]
fn submodules_hooks_path_and_nested_repositories() {
    let h = Host::new();
    h.repo("ws");
    h.write(
        "ws/.git/config",
        "[core]\n\tbare = false\n\thooksPath = .husky\n",
    );
    h.mkdir("ws/.git/modules/sub/hooks");
    h.write("ws/sub/.git", "gitdir: ../.git/modules/sub\n");
    h.repo("ws/a/b/c");
    h.repo("ws/a/b/c/d");
    let (ir, _) = h.lower(RW);
    for p in [
        "ws/.husky",
        "ws/sub/.git",
        "ws/.git/modules/sub/hooks",
        "ws/.git/modules/sub/config",
        "ws/a/b/c/.git/hooks",
        "ws/a/b/c/.git/config",
    ] {
        assert!(protected(&ir, &h.p(p)), "{p}: {:#?}", ir.fs);
    }
    // Deeper than the documented bound (3 directories): not searched.
    assert!(grant(&ir, &h.p("ws/a/b/c/d/.git/hooks")).is_none());
    assert!(!ir
        .precision
        .iter()
        .any(|p| p.rule == "protected paths" && !p.advisory));
}

/// git reads every gitdir's `commondir` and takes the hooks and config of
/// the directory it names: written into a `.git` directory, it would
/// point the user's next `git status` at a repository the command made.
/// So it is protected, absent or not, wherever git would read one; and
/// one that exists is followed.
#[test]
fn a_gitdir_commondir_is_protected_and_followed() {
    let h = Host::new();
    h.repo("ws");
    h.repo("ws/n");
    h.mkdir("ws/.git/modules/sub/hooks");
    h.write("ws/sub/.git", "gitdir: ../.git/modules/sub\n");
    // A linked worktree elsewhere: git run there reads the commondir kept
    // in this repository's `.git/worktrees`.
    h.write("ws/.git/worktrees/wt/commondir", "../..\n");
    let (ir, _) = h.lower(RW);
    for p in [
        "ws/.git/commondir",
        "ws/n/.git/commondir",
        "ws/.git/modules/sub/commondir",
        "ws/.git/worktrees/wt/commondir",
        "ws/.git/worktrees/wt/config.worktree",
    ] {
        assert!(protected(&ir, &h.p(p)), "{p}: {:#?}", ir.fs);
    }
    assert_eq!(
        grant(&ir, &h.p("ws/.git/commondir")).unwrap().kind,
        PathKind::Missing
    );
    // A `.git` directory that names a common dir: git uses that one's
    // hooks and config (here deeper than the nested search goes).
    h.mkdir("ws/a/b/c/d/common.git/hooks");
    h.write("ws/a/b/c/d/common.git/config", "[core]\n");
    h.write("ws/.git/commondir", "../a/b/c/d/common.git\n");
    let (ir, _) = h.lower(RW);
    for p in [
        "ws/.git/commondir",
        "ws/a/b/c/d/common.git/hooks",
        "ws/a/b/c/d/common.git/config",
    ] {
        assert!(protected(&ir, &h.p(p)), "{p}: {:#?}", ir.fs);
    }
}

#[test]
fn the_search_is_bounded_and_says_so() {
    let h = Host::new();
    for i in 0..crate::lower::git::DIR_BUDGET {
        h.mkdir(&format!("ws/d{i}"));
    }
    let (ir, _) = h.lower(RW);
    let note = ir
        .precision
        .iter()
        .find(|p| p.rule == "protected paths" && !p.advisory)
        .expect("a note when the search stops");
    assert_eq!(note.status, crate::ir::Status::Wider);
}

/// A writable rule on an absent directory is neither read nor searched:
/// its protections are absent, and it spends none of the search's budget,
/// so a repository in an existing tree after a budget's worth of them is
/// still found.
#[test]
fn absent_trees_spend_none_of_the_search() {
    let h = Host::new();
    h.repo("ws/real/sub");
    let mut policy = String::new();
    for i in 0..crate::lower::git::DIR_BUDGET {
        policy.push_str(&format!(
            "[[fs]]\npath = \"gone{i:04}\"\nread = true\nwrite = true\n"
        ));
    }
    policy.push_str("[[fs]]\npath = \"real\"\nread = true\nwrite = true\n");
    let (ir, _) = h.lower(&policy);
    assert!(
        protected(&ir, &h.p("ws/real/sub/.git/hooks")),
        "{:#?}",
        ir.precision
    );
    assert!(!ir
        .precision
        .iter()
        .any(|p| p.rule == "protected paths" && !p.advisory));
    let absent = grant(&ir, &h.p("ws/gone0007/.vscode")).expect("protected");
    assert_eq!(absent.kind, PathKind::Missing);
    assert!(protected(&ir, &h.p("ws/gone0007/.git/hooks")));
}

#[test]
fn user_entries_and_a_writable_home() {
    let h = Host::new();
    let policy = "protected_paths = [\"tools/run.sh\", \"~/.config/fish/\"]\n\
                  [[fs]]\npath = \"~\"\nread = true\nwrite = true\n";
    let (ir, _) = h.lower(policy);
    // The workspace is not writable here; home is.
    assert!(grant(&ir, &h.p("ws/tools/run.sh")).is_none());
    for p in [
        "home/tools/run.sh",
        "home/.config/fish",
        "home/.bashrc",
        "home/.zshenv",
        "home/.config/systemd/user",
        "home/.gitconfig",
        "home/.config/git",
        "home/.local/bin",
        "home/.vimrc",
        "home/.tmux.conf",
        "home/.config/autostart",
        "home/.cargo/config.toml",
        "home/.gradle/init.d",
        "home/.yarnrc.yml",
        "home/.config/environment.d",
        "home/.pam_environment",
        "home/.xprofile",
        "home/.xsessionrc",
        "home/.config/nvim",
        "home/.vim",
        "home/.emacs.d",
        "home/.config/Code/User",
        "home/.vscode/extensions",
        "home/.local/share/applications",
        "home/.ipython",
        "home/.config/direnv",
        "home/.direnvrc",
    ] {
        assert!(protected(&ir, &h.p(p)), "{p}: {:#?}", ir.fs);
    }
    // A sensitive path too: hidden, which is stricter.
    assert!(ir.access_at(&h.p("home/.npmrc")).is_empty());
    assert!(crate::lower::protect::home_writable(&ir));
    // The list is said to be incomplete once, not per name.
    let notes = ir
        .precision
        .iter()
        .filter(|n| n.reason == crate::lower::protect::HOME_NOT_EXHAUSTIVE)
        .count();
    assert_eq!(notes, 1, "{:#?}", ir.precision);
    // Not writable: no list, no note.
    let (ir, _) = h.lower("[[fs]]\npath = \"~\"\nread = true\n");
    assert!(!crate::lower::protect::home_writable(&ir));
    assert!(grant(&ir, &h.p("home/.yarnrc.yml")).is_none());
    assert!(!ir
        .precision
        .iter()
        .any(|n| n.reason == crate::lower::protect::HOME_NOT_EXHAUSTIVE));
}

/// `~/.ssh` is a sensitive path: covered by a writable home it is
/// hidden, and its `rc`, `config` and `authorized_keys` get no read-only
/// grant of their own (which would win over the hiding and let them be
/// read). Named with write rights, it is the user's, and those three
/// stay read-only inside it, as any protection inside a writable grant.
#[test]
fn ssh_files_under_a_writable_home() {
    let h = Host::new();
    h.write("home/.ssh/config", "Host x\n");
    h.write("home/.ssh/authorized_keys", "ssh-ed25519 AAAA\n");
    let (ir, _) = h.lower("[[fs]]\npath = \"~\"\nread = true\nwrite = true\n");
    for f in ["config", "authorized_keys", "rc"] {
        let p = h.p(&format!("home/.ssh/{f}"));
        assert!(grant(&ir, &p).is_none(), "{f}: {:#?}", ir.fs);
        assert!(ir.access_at(&p).is_empty(), "{f}");
    }
    let (ir, _) = h.lower(
        "[[fs]]\npath = \"~\"\nread = true\nwrite = true\n\n\
         [[fs]]\npath = \"~/.ssh\"\nread = true\nwrite = true\n",
    );
    for f in ["config", "authorized_keys", "rc"] {
        assert!(protected(&ir, &h.p(&format!("home/.ssh/{f}"))), "{f}");
    }
    assert!(ir.access_at(&h.p("home/.ssh/known_hosts")).create);
}

/// The main worktree's `config.worktree` is read by git only under
/// `extensions.worktreeConfig`: protected (absent) once the config names
/// it, not otherwise.
#[test]
fn main_worktree_config_under_the_extension() {
    let h = Host::new();
    h.repo("ws");
    let (ir, _) = h.lower(RW);
    assert!(grant(&ir, &h.p("ws/.git/config.worktree")).is_none());
    h.write(
        "ws/.git/config",
        "[core]\n\tbare = false\n[extensions]\n\tworktreeConfig = true\n",
    );
    let (ir, _) = h.lower(RW);
    assert!(
        protected(&ir, &h.p("ws/.git/config.worktree")),
        "{:#?}",
        ir.fs
    );
}

/// Home is not writable, but its start-up files link into the writable
/// workspace (a dotfiles repository): the targets are protected.
#[cfg(unix)]
#[test]
fn start_up_files_linked_into_a_writable_tree() {
    let h = Host::new();
    h.write("ws/dotfiles/bashrc", "# rc\n");
    h.write("ws/dotfiles/fish/config.fish", "# fish\n");
    h.write("ws/notes", "x\n");
    h.mkdir("home/.config");
    std::os::unix::fs::symlink(h.p("ws/dotfiles/bashrc"), h.p("home/.bashrc")).unwrap();
    std::os::unix::fs::symlink(h.p("ws/dotfiles/fish"), h.p("home/.config/fish")).unwrap();
    let (ir, _) = h.lower(RW);
    assert!(protected(&ir, &h.p("ws/dotfiles/bashrc")), "{:#?}", ir.fs);
    assert!(protected(&ir, &h.p("ws/dotfiles/fish")), "{:#?}", ir.fs);
    assert!(ir.access_at(&h.p("ws/notes")).update);
    assert!(ir.access_at(&h.p("ws/dotfiles/other")).create);
}

/// A directory of home that links into the writable tree (`~/.local`
/// kept in a dotfiles repository): the names beneath it are protected at
/// their targets, and names home lacks, or holds as plain entries, add
/// nothing.
#[cfg(unix)]
#[test]
fn a_home_directory_linked_into_a_writable_tree() {
    let h = Host::new();
    h.write("ws/local/bin/tool", "#!/bin/sh\n");
    h.write("ws/notes", "x\n");
    h.write("home/.profile", "# plain\n");
    std::os::unix::fs::symlink(h.p("ws/local"), h.p("home/.local")).unwrap();
    let (ir, _) = h.lower(RW);
    assert!(protected(&ir, &h.p("ws/local/bin")), "{:#?}", ir.fs);
    assert!(protected(&ir, &h.p("ws/local/share/applications")));
    assert!(ir.access_at(&h.p("ws/notes")).update);
    assert!(ir.access_at(&h.p("ws/local/other")).create);
    // Nothing was added for what lies in home itself.
    assert!(
        ir.fs
            .iter()
            .all(|g| !g.path.starts_with(&h.p("home"))
                || !matches!(g.source, Source::Protected { .. })),
        "{:#?}",
        ir.fs
    );
}

#[test]
fn naming_a_protected_path_lifts_it() {
    let h = Host::new();
    h.repo("ws");
    let policy = format!(
        "{RW}\n[[fs]]\npath = \".git/hooks\"\nread = true\nwrite = true\n\
         \n[[fs]]\npath = \".vscode/settings.json\"\nread = true\nupdate = true\n\
         \n[[fs]]\npath = \".idea\"\nread = true\n"
    );
    let (ir, d) = h.lower(&policy);
    let hooks = grant(&ir, &h.p("ws/.git/hooks")).unwrap();
    assert!(matches!(hooks.source, Source::Rule { index: 1, .. }));
    assert!(hooks.access.create);
    // Only the file is lifted; the rest of .vscode stays protected.
    assert!(protected(&ir, &h.p("ws/.vscode")));
    assert!(ir.access_at(&h.p("ws/.vscode/settings.json")).update);
    assert!(!ir.access_at(&h.p("ws/.vscode/tasks.json")).create);
    assert!(protected(&ir, &h.p("ws/.git/config")));
    let lifted = codes_of(&d, codes::PROTECTION_LIFTED);
    assert_eq!(lifted.len(), 2, "{lifted:#?}");
    assert!(lifted[0]
        .starts_with("fs[1] (p.toml:6:1) grants read, create, update, delete on .git/hooks: "));
    assert!(
        lifted[1].contains("on .vscode/settings.json inside the protected .vscode"),
        "{}",
        lifted[1]
    );
    // A read-only rule on a protected path lifts nothing.
    assert!(lifted.iter().all(|m| !m.contains(".idea")));
    let at = d
        .iter()
        .find(|d| d.code == codes::PROTECTION_LIFTED)
        .unwrap()
        .location
        .as_ref()
        .unwrap()
        .line;
    assert_eq!(at, 6);
}

#[test]
fn covered_sensitive_paths_are_hidden_named_ones_granted() {
    let h = Host::new();
    h.write("home/.ssh/id_rsa", "key");
    h.write("home/.aws/credentials", "x");
    let (ir, d) = h.lower("[[fs]]\npath = \"~\"\nread = true\n");
    let ssh = grant(&ir, &h.p("home/.ssh")).expect("hidden");
    assert_eq!(ssh.access, Access::NONE);
    assert_eq!(
        ssh.source.label(),
        "sensitive ~/.ssh/, covered by fs[0] (p.toml:1:1)"
    );
    assert!(ir.access_at(&h.p("home/.ssh/id_rsa")).is_empty());
    assert!(ir.access_at(&h.p("home/notes.txt")).read);
    // Hidden even where it does not exist, said only where it does.
    assert_eq!(
        grant(&ir, &h.p("home/.gnupg")).unwrap().access,
        Access::NONE
    );
    let said = codes_of(&d, codes::SENSITIVE_COVERED);
    assert_eq!(said.len(), 2, "{said:#?}");
    // Not writable: no protections under home.
    assert!(grant(&ir, &h.p("home/.bashrc")).is_none());
    // Naming it is consent.
    let (ir, d) =
        h.lower("[[fs]]\npath = \"~\"\nread = true\n\n[[fs]]\npath = \"~/.ssh\"\nread = true\n");
    assert!(ir.access_at(&h.p("home/.ssh/id_rsa")).read);
    assert!(codes_of(&d, codes::SENSITIVE_COVERED)
        .iter()
        .all(|m| !m.contains("~/.ssh/")));
    // The workspace is home under the default policy.
    let layer = "version = 1\n[process]\npresets = []\n";
    let (ir, _) = {
        let h2 = &h;
        let l = load_layer(
            SourceFile {
                name: "p.toml".into(),
                text: layer.into(),
            },
            None,
        )
        .unwrap();
        let opts = Options {
            workspace: h2.p("home"),
            home: h2.p("home"),
            temp: h2.p("tmp"),
            os: Os::host(),
            portable: false,
            path_var: None,
            approvals: Vec::new(),
        };
        let l = lower(&merge(&[l]), &opts).unwrap();
        (l.ir, l.diagnostics)
    };
    assert!(ir.access_at(&h.p("home/.ssh/id_rsa")).is_empty());
    assert!(protected_like(&ir, &h.p("home/.bashrc")));
}

/// Protected, with the default policy's execute kept.
fn protected_like(ir: &Ir, path: &str) -> bool {
    grant(ir, path).is_some_and(|g| {
        matches!(g.source, Source::Protected { .. }) && g.access.read && !g.access.writes()
    })
}

#[test]
fn the_runs_own_files_are_read_only() {
    let h = Host::new();
    h.write("ws/sbx.toml", RW);
    let (mut ir, _) = h.lower(RW);
    crate::lower::hidden::run_files(&mut ir, &[h.p("ws/sbx.toml"), h.p("home/outside.toml")]);
    let g = grant(&ir, &h.p("ws/sbx.toml")).unwrap();
    assert_eq!(g.source, Source::RunFile);
    assert_eq!(g.access, Access::READ);
    assert!(ir.fs.windows(2).all(|w| w[0].path <= w[1].path));
    // Outside every writable grant: nothing to add.
    assert!(grant(&ir, &h.p("home/outside.toml")).is_none());
}

/// The list applies at the top of each writable tree: a writable rule
/// inside one adds nothing, one under a read-only parent starts a tree.
#[test]
fn names_are_protected_at_the_top_of_each_writable_tree() {
    let h = Host::new();
    let nested = format!("{RW}\n[[fs]]\npath = \"target\"\nread = true\nwrite = true\n");
    let (ir, _) = h.lower(&nested);
    assert!(protected(&ir, &h.p("ws/.vscode")));
    assert!(grant(&ir, &h.p("ws/target/.vscode")).is_none());
    let (without, _) = h.lower(RW);
    assert_eq!(
        ir.access_at(&h.p("ws/target/.vscode")),
        without.access_at(&h.p("ws/target/.vscode"))
    );
    let (ir, _) = h.lower(
        "[[fs]]\npath = \".\"\nread = true\n\n[[fs]]\npath = \"out\"\nread = true\nwrite = true\n",
    );
    assert!(protected(&ir, &h.p("ws/out/.vscode")));
    assert!(grant(&ir, &h.p("ws/.vscode")).is_none());
}

/// Issue #19: a file git's config includes, inside a writable grant,
/// is protected like `.git/config`, with the config that includes it as
/// its origin; a `core.hooksPath` it sets counts too.
#[test]
fn git_includes_in_a_writable_grant_are_protected() {
    let h = Host::new();
    h.repo("ws");
    h.write(
        "ws/.git/config",
        "[core]\n\tbare = false\n[include]\n\tpath = ../.gitlocal\n\
         [includeIf \"gitdir:~/elsewhere/\"]\n\tpath = ../.gitcond\n\
         [include]\n\tpath = ~/outside.inc\n",
    );
    h.write("ws/.gitlocal", "[core]\n\thooksPath = .hooks-inc\n");
    h.write("home/.gitconfig", "[include]\n\tpath = ~/.gitconfig.d/x\n");
    let (ir, d) = h.lower(RW);
    let local = grant(&ir, &h.p("ws/.gitlocal")).expect("protected");
    assert_eq!(local.access, Access::READ);
    assert_eq!(local.kind, PathKind::File);
    assert_eq!(
        local.source.label(),
        format!("protected git include from {}", h.p("ws/.git/config"))
    );
    // Absent at launch, under every condition: protected as absent.
    let cond = grant(&ir, &h.p("ws/.gitcond")).expect("protected");
    assert_eq!(cond.kind, PathKind::Missing);
    assert!(protected(&ir, &h.p("ws/.gitcond")));
    assert!(protected(&ir, &h.p("ws/.hooks-inc")));
    // Outside every writable grant: left as it is.
    assert!(grant(&ir, &h.p("home/outside.inc")).is_none());
    assert!(grant(&ir, &h.p("home/.gitconfig.d/x")).is_none());
    assert!(!ir
        .precision
        .iter()
        .any(|p| p.rule == "protected paths" && !p.advisory));
    assert!(d.is_empty(), "{d:?}");
    // The workspace is home: the global config's include is protected.
    let policy = format!("{RW}\n[[fs]]\npath = \"~\"\nread = true\nwrite = true\n");
    let (ir, _) = h.lower(&policy);
    let x = grant(&ir, &h.p("home/.gitconfig.d/x")).expect("protected");
    assert_eq!(x.source.label(), "protected git include from ~/.gitconfig");
    assert!(protected(&ir, &h.p("home/outside.inc")));
}

#[test]
fn too_many_git_includes_say_so() {
    let h = Host::new();
    h.repo("ws");
    let many: String = (0..=crate::lower::git::include::BUDGET)
        .map(|i| format!("[include]\n\tpath = i{i}\n"))
        .collect();
    h.write("ws/.git/config", &many);
    let (ir, _) = h.lower(RW);
    let note = ir
        .precision
        .iter()
        .find(|p| p.rule == "protected paths" && !p.advisory)
        .expect("a note when the includes stop");
    assert_eq!(note.status, crate::ir::Status::Wider);
    assert!(!note.advisory);
    assert!(note.reason.contains("includes"), "{}", note.reason);
}

#[cfg(unix)]
#[test]
fn a_roots_listing_gives_the_kinds_its_lstats_give() {
    use super::{listing, under_root, IN_WRITABLE, LISTED};
    let h = Host::new();
    h.mkdir("ws/.vscode/tasks");
    h.write("ws/.envrc", "export X=1\n");
    h.write("ws/.git", "gitdir: ../elsewhere\n");
    h.mkdir("ws/.claude");
    std::os::unix::fs::symlink(h.p("home"), h.p("ws/.idea")).unwrap();
    let root = h.p("ws");
    let listed = listing(&root).expect("a small directory is listed");
    let names = IN_WRITABLE
        .iter()
        .chain(&[".vscode/tasks", ".vscode/tasks/x", ".envrc/x", ".idea/x"])
        .chain(&["../ws/.envrc", "./.envrc"]);
    for name in names {
        let path = format!("{root}/{name}");
        let walked = under_root(&root, &path, None);
        assert_eq!(under_root(&root, &path, Some(&listed)), walked, "{name}");
    }
    let kind = |name: &str| under_root(&root, &format!("{root}/{name}"), Some(&listed));
    assert_eq!(kind(".vscode"), Some(PathKind::Dir));
    assert_eq!(kind(".vscode/tasks"), Some(PathKind::Dir));
    assert_eq!(kind(".envrc"), Some(PathKind::File));
    assert_eq!(kind(".codex"), Some(PathKind::Missing));
    assert_eq!(
        kind(".git/hooks"),
        None,
        "under a file: the resolver decides"
    );
    assert_eq!(kind(".idea"), None, "a symlink: the resolver decides");
    assert_eq!(kind("../ws/.envrc"), Some(PathKind::File));
    // A large directory is not listed: its names are looked up one by one.
    for i in 0..LISTED {
        h.write(&format!("ws/many/{i}"), "");
    }
    assert!(listing(&h.p("ws/many")).is_some());
    h.write("ws/many/one-more", "");
    assert!(listing(&h.p("ws/many")).is_none());
}

#[test]
fn the_nested_search_reads_the_same_from_the_listing() {
    use super::listing;
    use crate::lower::git::nested;
    let h = Host::new();
    h.repo("ws/a");
    h.repo("ws/b/c");
    h.mkdir("ws/d/e/f/g/.git");
    h.write("ws/f", "a file\n");
    let root = h.p("ws");
    let search = |top: Option<&[_]>| {
        let (mut budget, mut out) = (100, Vec::new());
        let complete = nested(&root, top, &mut budget, &mut out);
        (complete, budget, out)
    };
    let listed = listing(&root).expect("a small directory is listed");
    let read = search(None);
    assert_eq!(read.2, [h.p("ws/a"), h.p("ws/b/c")]);
    assert_eq!(search(Some(&listed)), read);
}

#[test]
fn ir_json_writes_protections_per_tree_and_reads_them_back() {
    let h = Host::new();
    h.repo("ws");
    h.mkdir("ws/.vscode");
    let policy = format!(
        "{RW}[[fs]]\npath = \"{}\"\nread = true\nwrite = true\n",
        h.p("home/tree")
    );
    let (ir, _) = h.lower(&policy);
    let text = serde_json::to_string(&ir).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let trees: Vec<(&str, &str, usize)> = v["protected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let n = t["entries"].as_array().unwrap().len();
            (t["root"].as_str().unwrap(), t["kind"].as_str().unwrap(), n)
        })
        .collect();
    let (tree, ws) = (h.p("home/tree"), h.p("ws"));
    // The absent tree's eleven; in the workspace, `.git/config` (a file),
    // `.git/hooks` and `.vscode` (directories) and the eight absent ones
    // (`.git/commondir` among them).
    assert_eq!(
        trees,
        [
            (tree.as_str(), "missing", 11),
            (ws.as_str(), "missing", 8),
            (ws.as_str(), "file", 1),
            (ws.as_str(), "dir", 2),
        ]
    );
    assert!(text.contains(&format!("\"path\":\"{ws}\"")));
    assert!(!text.contains(&format!("\"path\":\"{ws}/.vscode\"")));
    assert!(protected(&ir, &h.p("ws/.vscode")));
    let back: Ir = serde_json::from_str(&text).unwrap();
    assert_eq!(back, ir);
}

/// A writable tree inside a protected path (under a read-only rule
/// there) is the user's decision: the list is not applied again below
/// it, while another writable tree still gets it.
#[test]
fn no_protections_inside_a_protected_path() {
    let h = Host::new();
    h.repo("ws");
    let policy = format!(
        "{RW}\n[[fs]]\npath = \".idea\"\nread = true\n\
         \n[[fs]]\npath = \".idea/cache\"\nread = true\nwrite = true\n\
         \n[[fs]]\npath = \"build\"\nread = true\n\
         \n[[fs]]\npath = \"build/out\"\nread = true\nwrite = true\n"
    );
    let (ir, _) = h.lower(&policy);
    assert!(ir.access_at(&h.p("ws/.idea/cache/.envrc")).create);
    assert!(!protected(&ir, &h.p("ws/.idea/cache/.vscode")));
    assert!(protected(&ir, &h.p("ws/build/out/.envrc")));
    assert!(!ir.access_at(&h.p("ws/build/out/.envrc")).create);
}
