use super::*;
use std::fs;
use std::path::{Path, PathBuf};

struct Tree(PathBuf);

impl Tree {
    fn new(name: &str) -> Tree {
        let t = std::env::temp_dir().join(format!("sbx-repos-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        fs::create_dir_all(&t).unwrap();
        Tree(t)
    }
    fn p(&self, rel: &str) -> String {
        self.0.join(rel).to_str().unwrap().to_string()
    }
    fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    /// A git directory at `rel` as `git init` lays one out, its config
    /// holding a key that runs a program (an inert one stays: below).
    fn gitdir(&self, rel: &str) {
        for d in ["objects", "refs/heads", "hooks"] {
            fs::create_dir_all(self.0.join(rel).join(d)).unwrap();
        }
        self.write(&format!("{rel}/HEAD"), "ref: refs/heads/main\n");
        self.write(&format!("{rel}/config"), "[core]\n\tfsmonitor = planted\n");
        self.write(&format!("{rel}/hooks/pre-commit.sample"), "#!/bin/sh\n");
    }
    fn exists(&self, rel: &str) -> bool {
        Path::new(&self.p(rel)).exists()
    }
    /// The moment after everything made so far: what is made after it
    /// counts as changed during the run.
    fn start(&self) -> Stamp {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let s = Stamp::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        s
    }
}

/// The sweep of `ws` (its top), nothing recorded at launch.
fn swept(t: &Tree, since: Stamp, budget: usize) -> Swept {
    swept_knowing(t, since, budget, None)
}

/// The sweep of `ws`, with the git directories `known` at launch.
fn swept_knowing(
    t: &Tree,
    since: Stamp,
    budget: usize,
    known: Option<&HashSet<Identity>>,
) -> Swept {
    let tops = Tops::open(&[t.p("ws")]);
    let recorded = HashSet::new();
    let writable = [t.p("ws")];
    let s = Sweep {
        tops: &tops,
        recorded: &recorded,
        since,
        writable: &writable,
        known,
    };
    sweep(&s, &[t.p("ws")], 3, budget)
}

/// What [`known_at_launch`] records of `ws` now.
fn launch(t: &Tree, budget: usize) -> Option<HashSet<Identity>> {
    let tops = Tops::open(&[t.p("ws")]);
    let writable = [t.p("ws")];
    let s = Sweep {
        tops: &tops,
        recorded: &HashSet::new(),
        since: Stamp::now(),
        writable: &writable,
        known: None,
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    known_at_launch(&s, &[t.p("ws")], 3, budget, until)
        .map(|k| k.into_iter().map(|(i, _)| i).collect())
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn repositories_made_during_the_run_lose_what_git_would_run() {
    let t = Tree::new("made");
    // Before the run: the workspace's repository, a nested one, a file.
    t.gitdir("ws/.git");
    t.gitdir("ws/old/.git");
    t.write("ws/src/main.rs", "fn main() {}\n");
    let since = t.start();
    // During it: `git init sub` with a planted fsmonitor, a gitdir file
    // two levels down, a bare repository, and one four levels down.
    t.gitdir("ws/sub/.git");
    t.write("ws/sub/.git/config", "[core]\n\tfsmonitor = x\n");
    t.write("ws/sub/.git/hooks/post-checkout", "#!/bin/sh\n");
    t.write("ws/a/b/.git", "gitdir: ../../elsewhere\n");
    t.gitdir("ws/vendor/evil.git");
    t.gitdir("ws/d1/d2/d3/d4/.git");
    // At the search's last level: looked up, not listed.
    t.gitdir("ws/l1/l2/l3/.git");
    t.gitdir("ws/l1/l2/bare.git");
    t.write("ws/src/new.rs", "\n");
    let s = swept(&t, since, 100);
    let moved: Vec<&str> = s.moved.iter().map(|(p, _)| p.as_str()).collect();
    let want = [
        t.p("ws/a/b/.git"),
        t.p("ws/l1/l2/bare.git/config"),
        t.p("ws/l1/l2/l3/.git/config"),
        t.p("ws/sub/.git/hooks"),
        t.p("ws/sub/.git/config"),
        t.p("ws/vendor/evil.git/config"),
    ];
    assert_eq!(moved, want.iter().map(String::as_str).collect::<Vec<_>>());
    for (p, to) in &s.moved {
        assert_eq!(to, &format!("{p}.sbx-blocked"));
        assert!(Path::new(to).exists() && !Path::new(p).exists());
    }
    // What git needs to see a repository stays, and so does everything
    // older than the run and every ordinary file.
    for kept in [
        "ws/sub/.git/HEAD",
        "ws/sub/.git/objects",
        // Only the samples `git init` writes, which git never runs.
        "ws/vendor/evil.git/hooks/pre-commit.sample",
        "ws/.git/config",
        "ws/.git/hooks",
        "ws/old/.git/config",
        "ws/src/new.rs",
        // Deeper than the search goes (the launch search's depth too).
        "ws/d1/d2/d3/d4/.git/config",
    ] {
        assert!(t.exists(kept), "{kept}");
    }
    assert!(s.unswept == 0 && s.failed.is_empty());
}

/// A clone's config (remote, branch, `user.name`) runs nothing: it
/// stays. One key outside the allow-list, or a file git would refuse,
/// moves it aside, and the warning names the keys.
#[test]
fn inert_configs_stay() {
    let t = Tree::new("inert");
    t.gitdir("ws/.git");
    let since = t.start();
    let clone = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                 \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://example.com/r\n\
                 \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                 \tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = x\n";
    for (dir, config) in [
        ("ws/clone", clone.to_string()),
        (
            "ws/fsm",
            format!("{clone}[core]\n\tfsmonitor = touch /tmp/x\n"),
        ),
        (
            "ws/up",
            format!("{clone}[remote \"origin\"]\n\tuploadpack = evil\n"),
        ),
        ("ws/bad", String::from("[core\n\tbare = false\n")),
    ] {
        t.gitdir(&format!("{dir}/.git"));
        t.write(&format!("{dir}/.git/config"), &config);
    }
    let s = swept(&t, since, 100);
    assert!(t.exists("ws/clone/.git/config"));
    let moved: Vec<&str> = s.moved.iter().map(|(p, _)| p.as_str()).collect();
    let bad = t.p("ws/bad/.git/config");
    let fsm = t.p("ws/fsm/.git/config");
    let up = t.p("ws/up/.git/config");
    assert_eq!(moved, [bad.as_str(), fsm.as_str(), up.as_str()]);
    let mut warnings = Vec::new();
    report(&s, 100, &mut warnings);
    assert!(warnings[0].contains("does not parse"), "{warnings:?}");
    assert!(
        warnings[1].contains("it sets core.fsmonitor,"),
        "{warnings:?}"
    );
    assert!(
        warnings[2].contains("it sets remote.origin.uploadpack,"),
        "{warnings:?}"
    );
}

#[test]
fn changes_in_place_count_and_links_are_not_followed() {
    let t = Tree::new("inplace");
    t.gitdir("ws/.git");
    t.write("ws/.git/hooks/pre-commit", "#!/bin/sh\ntrue\n");
    t.gitdir("outside/.git");
    std::os::unix::fs::symlink(t.p("outside"), t.p("ws/link")).unwrap();
    // An old gitdir file naming a git directory: git run in `wt` reads
    // that directory's config.
    t.gitdir("ws/.git/modules/m");
    t.write("ws/wt/.git", "gitdir: ../.git/modules/m\n");
    let since = t.start();
    // An existing hook rewritten in place: only its own ctime changes.
    t.write("ws/.git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/x\n");
    // Changed, but reached only through a symlink: not the tree's.
    t.write("outside/.git/config", "[core]\n\tfsmonitor = x\n");
    t.write("ws/.git/modules/m/config", "[core]\n\tfsmonitor = y\n");
    let s = swept(&t, since, 100);
    assert_eq!(
        s.moved,
        [
            (t.p("ws/.git/hooks"), t.p("ws/.git/hooks.sbx-blocked")),
            (
                t.p("ws/.git/modules/m/config"),
                t.p("ws/.git/modules/m/config.sbx-blocked")
            ),
        ]
    );
    assert!(t.exists("ws/.git/config") && t.exists("outside/.git/config"));
    assert!(t.exists("ws/wt/.git"));
}

#[test]
fn the_search_is_bounded_and_says_so() {
    let t = Tree::new("bounded");
    for i in 0..5 {
        fs::create_dir_all(t.0.join(format!("ws/d{i}"))).unwrap();
    }
    let since = t.start();
    t.gitdir("ws/d4/.git");
    let s = swept(&t, since, 4);
    assert_eq!(s.unswept, 2);
    assert!(t.exists("ws/d4/.git/config"));
    let s = swept(&t, since, 6);
    assert_eq!(s.unswept, 0);
    // Its config; its hooks hold only a sample.
    assert_eq!(s.moved.len(), 1);
}

/// A git directory assembled from files older than the run (prepared
/// in an earlier run deeper than the walk goes, where no sweep looked)
/// and moved into place during the run keeps their ctimes; it was not
/// there at launch, so what would run in it moves aside: renamed as
/// `.git`, below a directory renamed into place, or in place of a
/// repository's `.git`, or named by an old gitdir file moved in with
/// its directory. A repository there at launch, renamed during the run,
/// keeps its hooks and config (control), and so does everything with
/// no launch record (an older journal entry): by ctimes alone.
#[test]
fn a_git_directory_moved_into_place_gets_the_strict_look() {
    let t = Tree::new("moved-in");
    t.gitdir("ws/.git");
    t.gitdir("ws/old/.git");
    t.write("ws/old/.git/hooks/pre-commit", "#!/bin/sh\n");
    t.gitdir("ws/kept/.git");
    for d in ["x", "y", "z"] {
        t.gitdir(&format!("ws/deep/a/b/c/{d}"));
        t.write(
            &format!("ws/deep/a/b/c/{d}/hooks/post-checkout"),
            "#!/bin/sh\n",
        );
    }
    t.gitdir("ws/deep/a/b/c/d/e/.git");
    t.gitdir("ws/deep/a/b/c/gd");
    t.write("ws/deep/a/b/c/w/.git", "gitdir: ../gd\n");
    let known = launch(&t, 100).expect("the launch search finished");
    let since = t.start();
    let mv = |from: &str, to: &str| {
        if let Some(p) = Path::new(&t.p(to)).parent() {
            fs::create_dir_all(p).unwrap();
        }
        fs::rename(t.p(from), t.p(to)).unwrap();
    };
    mv("ws/deep/a/b/c/x", "ws/lib/sub/.git");
    mv("ws/deep/a/b/c/d", "ws/lib2/d");
    fs::remove_dir_all(t.0.join("ws/kept/.git")).unwrap();
    mv("ws/deep/a/b/c/y", "ws/kept/.git");
    mv("ws/deep/a/b/c/z", "ws/bare.git");
    mv("ws/deep/a/b/c/w", "ws/w");
    mv("ws/deep/a/b/c/gd", "ws/gd");
    mv("ws/old", "ws/old2");
    // No launch record: by ctimes alone, nothing here changed.
    let s = swept(&t, since, 100);
    assert!(s.moved.is_empty(), "{:?}", s.moved);
    let s = swept_knowing(&t, since, 100, Some(&known));
    let moved: Vec<&str> = s.moved.iter().map(|(p, _)| p.as_str()).collect();
    let want = [
        "ws/bare.git/hooks",
        "ws/bare.git/config",
        "ws/gd/config",
        "ws/kept/.git/hooks",
        "ws/kept/.git/config",
        "ws/lib/sub/.git/hooks",
        "ws/lib/sub/.git/config",
        "ws/lib2/d/e/.git/config",
    ]
    .map(|p| t.p(p));
    assert_eq!(moved, want.iter().map(String::as_str).collect::<Vec<_>>());
    for kept in [
        "ws/old2/.git/config",
        "ws/old2/.git/hooks/pre-commit",
        "ws/.git/config",
    ] {
        assert!(t.exists(kept), "{kept}");
    }
    // Where the launch search did not finish, there is no record.
    assert_eq!(launch(&t, 2), None);
}

/// An entry deeper than the walk, added in an earlier run (when nothing
/// was there), to which this run moves a repository planted deeper
/// still: the index did not change in this run, but the repository was
/// not there at launch, so its config moves aside (old: its ctime
/// decided). Control: a deep submodule there at launch, its git
/// directory in the top's `.git/modules` (as `git submodule` makes it),
/// keeps its own. (One whose git directory lies in its deep worktree is
/// not in the launch record, which does not read indexes: it gets the
/// strict look too, docs/protected.md.)
#[test]
fn a_repository_moved_to_an_old_deep_entry_gets_the_strict_look() {
    let t = Tree::new("deep-entry");
    t.gitdir("ws/.git");
    fs::write(
        t.0.join("ws/.git/index"),
        index_of(&["d1/d2/d3/d4", "k1/k2/k3/k4"]),
    )
    .unwrap();
    t.gitdir("ws/e1/e2/e3/e4/sub/.git");
    t.gitdir("ws/.git/modules/k");
    t.write(
        "ws/k1/k2/k3/k4/.git",
        "gitdir: ../../../../.git/modules/k\n",
    );
    let known = launch(&t, 100).unwrap();
    let since = t.start();
    fs::create_dir_all(t.0.join("ws/d1/d2/d3")).unwrap();
    fs::rename(t.0.join("ws/e1/e2/e3/e4/sub"), t.0.join("ws/d1/d2/d3/d4")).unwrap();
    let s = swept_knowing(&t, since, 100, Some(&known));
    assert!(!t.exists("ws/d1/d2/d3/d4/.git/config"), "{s:?}");
    assert!(t.exists("ws/.git/modules/k/config"), "{s:?}");
}

/// git takes more for a git directory than `HEAD`, `objects` and `refs`
/// as a file and two directories: a `HEAD` link, `objects` or `refs`
/// through a link, or a `commondir` naming where they are. Each such
/// directory made in the run has its config, or its `commondir`, moved
/// aside.
#[test]
fn git_directories_as_git_takes_them_are_swept() {
    use std::os::unix::fs::symlink;
    let t = Tree::new("as-git");
    t.gitdir("ws/.git");
    let since = t.start();
    t.gitdir("ws/a");
    fs::remove_file(t.0.join("ws/a/HEAD")).unwrap();
    symlink("refs/heads/main", t.0.join("ws/a/HEAD")).unwrap();
    t.gitdir("ws/b");
    fs::rename(t.0.join("ws/b/refs"), t.0.join("ws/b/r")).unwrap();
    symlink("r", t.0.join("ws/b/refs")).unwrap();
    t.write("ws/c/HEAD", "ref: refs/heads/main\n");
    t.write("ws/c/commondir", "../common\n");
    let s = swept(&t, since, 100);
    let moved: Vec<&str> = s.moved.iter().map(|(p, _)| p.as_str()).collect();
    let want = ["ws/a/config", "ws/b/config", "ws/c/commondir"].map(|p| t.p(p));
    assert_eq!(moved, want.iter().map(String::as_str).collect::<Vec<_>>());
}

/// The launch record is on the way to the command: a git directory
/// named by many `.git` files is looked in once, and the directories
/// below all `modules` share one budget; past it there is no record
/// (the run says so).
#[test]
fn the_launch_record_is_bounded() {
    let t = Tree::new("launch-bound");
    t.gitdir("ws/.git");
    t.gitdir("ws/g");
    for i in 0..50 {
        t.write(&format!("ws/w{i}/.git"), "gitdir: ../g\n");
    }
    // Looked in once: 50 times 30 directories would be past the budget.
    for i in 0..30 {
        fs::create_dir_all(t.0.join(format!("ws/g/modules/m/{i}"))).unwrap();
    }
    assert!(launch(&t, 100).is_some());
    for i in 0..LAUNCH_MODULES_BUDGET {
        fs::create_dir_all(t.0.join(format!("ws/g/modules/m/{i}"))).unwrap();
    }
    assert_eq!(launch(&t, 100), None);
}

/// A repository whose parts were recorded at launch but which was not
/// there at launch as far as the record says (another run's command
/// put it there) is judged like the rest: its recorded config moves
/// aside. Control: with it known, the recorded config stays.
#[test]
fn recorded_parts_of_an_unvetted_repository_are_judged() {
    let t = Tree::new("unvetted");
    t.gitdir("ws/.git");
    t.gitdir("ws/sub/.git");
    let since = t.start();
    let tops = Tops::open(&[t.p("ws")]);
    let recorded: HashSet<String> = [t.p("ws/sub/.git/config")].into_iter().collect();
    let writable = [t.p("ws")];
    let sweep_with = |known: &HashSet<Identity>| {
        let s = Sweep {
            tops: &tops,
            recorded: &recorded,
            since,
            writable: &writable,
            known: Some(known),
        };
        sweep(&s, &[t.p("ws")], 3, 100)
    };
    let all = launch(&t, 100).unwrap();
    let s = sweep_with(&all);
    assert!(s.moved.is_empty(), "{s:?}");
    let m = fs::symlink_metadata(t.0.join("ws/sub/.git")).unwrap();
    let without: HashSet<Identity> = {
        use std::os::unix::fs::MetadataExt;
        all.iter()
            .copied()
            .filter(|i| *i != (m.dev(), m.ino()))
            .collect()
    };
    let s = sweep_with(&without);
    assert_eq!(s.moved.len(), 1, "{s:?}");
    assert!(!t.exists("ws/sub/.git/config"));
}

#[test]
fn a_hooks_directory_renamed_into_place_counts() {
    let t = Tree::new("renamed");
    t.gitdir("ws/.git");
    t.write("ws/scripts/pre-commit", "#!/bin/sh\n");
    fs::remove_dir_all(t.0.join("ws/.git/hooks")).unwrap();
    let since = t.start();
    // Old scripts (old ctimes) put where git looks for hooks.
    fs::rename(t.0.join("ws/scripts"), t.0.join("ws/.git/hooks")).unwrap();
    let s = swept(&t, since, 100);
    assert_eq!(
        s.moved,
        [(t.p("ws/.git/hooks"), t.p("ws/.git/hooks.sbx-blocked"))]
    );
}

/// `git` in `dir`; `None` where git is missing outside CI (CI installs
/// it: .ci/prereqs.sh).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    match std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
    {
        Ok(o) => {
            assert!(o.status.success(), "git {args:?}: {o:?}");
            Some(String::from_utf8(o.stdout).unwrap())
        }
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("git is not installed ({e}), skipped");
            None
        }
        Err(e) => panic!("git: {e}"),
    }
}

/// The submodule entries of index files as git writes them: versions 2,
/// 3 (an entry with extended flags) and 4 (paths prefix-compressed).
#[test]
fn gitlinks_of_every_index_version() {
    let t = Tree::new("index");
    let ws = t.0.join("ws");
    fs::create_dir_all(&ws).unwrap();
    let Some(_) = git(&ws, &["init", "-q", "."]) else {
        return;
    };
    t.write("ws/a.txt", "a\n");
    t.write("ws/deep/x/y/z/file", "f\n");
    git(&ws, &["add", "a.txt", "deep/x/y/z/file"]);
    let sha = "0123456789abcdef0123456789abcdef01234567";
    for p in ["deep/x/y/z/sub", "s2"] {
        git(
            &ws,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{sha},{p}"),
            ],
        );
    }
    let want: Vec<Vec<u8>> = vec![b"deep/x/y/z/sub".to_vec(), b"s2".to_vec()];
    let index = || fs::read(ws.join(".git/index")).unwrap();
    assert_eq!(gitlinks(&index()), want, "version 2");
    t.write("ws/later.txt", "l\n");
    git(&ws, &["add", "--intent-to-add", "later.txt"]);
    assert_eq!(index()[7], 3, "git wrote version 3");
    assert_eq!(gitlinks(&index()), want, "version 3");
    git(&ws, &["update-index", "--index-version", "4"]);
    assert_eq!(index()[7], 4);
    assert_eq!(gitlinks(&index()), want, "version 4");
    // Not an index, or cut short: nothing.
    assert!(gitlinks(b"DIRC").is_empty());
    let i = index();
    assert!(gitlinks(&i[..i.len() / 2]).is_empty());
}

/// The index is the command's to write: a submodule entry that leaves the
/// top, or names a `.git`, leads nowhere; one git reaches through empty
/// or `.` components is looked at where git reaches it.
#[test]
fn only_plain_submodule_paths_are_followed() {
    for (ok, at) in [
        ("sub", "sub"),
        ("a/b/c/d/sub", "a/b/c/d/sub"),
        ("x.git", "x.git"),
        ("a/.gitx", "a/.gitx"),
        ("a//b", "a/b"),
        ("./a", "a"),
        ("a/.", "a"),
        ("a/b/c/d/", "a/b/c/d"),
    ] {
        assert_eq!(plain(ok.as_bytes()).as_deref(), Some(at.as_bytes()), "{ok}");
    }
    for bad in ["", "/etc", "../up", "a/../../up", ".git/x", "a/.GIT", "./"] {
        assert_eq!(plain(bad.as_bytes()), None, "{bad}");
    }
}

/// git reads an entry's name by the length in its flags: a NUL later than
/// that hides no entry after it (old: the whole index was dropped).
#[test]
fn a_name_length_that_disagrees_with_its_nul_hides_nothing() {
    let mut index = index_of(&["zzz", "lib/a/b/c/sub"]);
    // The first entry's flags: 12 bytes of header, 60 before the flags.
    let flags = 12 + 60;
    assert_eq!(&index[flags..flags + 2], &3u16.to_be_bytes());
    index[flags..flags + 2].copy_from_slice(&2u16.to_be_bytes());
    assert_eq!(
        gitlinks(&index),
        [b"zz".to_vec(), b"lib/a/b/c/sub".to_vec()]
    );
}

/// A version 2 index holding one submodule entry per path, as git lays
/// entries out (62 bytes before the name, NUL-padded to eight), and the
/// 20 bytes of its checksum.
fn index_of(paths: &[&str]) -> Vec<u8> {
    let mut b = b"DIRC".to_vec();
    b.extend(2u32.to_be_bytes());
    b.extend(u32::try_from(paths.len()).unwrap().to_be_bytes());
    for p in paths {
        let start = b.len();
        b.extend([0u8; 24]);
        b.extend(0o160000u32.to_be_bytes());
        b.extend([0u8; 12 + 20]);
        b.extend(u16::try_from(p.len()).unwrap().to_be_bytes());
        b.extend(p.as_bytes());
        let len = (b.len() - start + 8) & !7;
        b.resize(start + len, 0);
    }
    // The trailing checksum (zeros, as with `index.skipHash`).
    b.extend([0u8; 20]);
    b
}

#[test]
fn submodule_entries_outside_the_top_are_not_followed() {
    let t = Tree::new("outside");
    t.gitdir("ws/.git");
    t.gitdir("ws/in/deep/er/still/sub/.git");
    t.gitdir("other/.git");
    let index = index_of(&["../other", "in/deep/er/still/sub"]);
    assert_eq!(
        gitlinks(&index),
        [b"../other".to_vec(), b"in/deep/er/still/sub".to_vec()]
    );
    fs::write(t.0.join("ws/.git/index"), index).unwrap();
    let since = t.start();
    t.write("other/.git/config", "[user]\n\tname = me\n");
    t.write(
        "ws/in/deep/er/still/sub/.git/config",
        "[core]\n\tfsmonitor = x\n",
    );
    let s = swept(&t, since, 100);
    // Found only through its entry (five levels down)…
    assert_eq!(
        s.moved.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        [t.p("ws/in/deep/er/still/sub/.git/config")]
    );
    // …while a repository outside the top, changed by someone else
    // meanwhile, is left alone whatever the index says.
    assert!(t.exists("other/.git/config"));
}

/// A submodule entry behind a symlink the command made, and a gitdir
/// file naming a repository outside the top: neither is followed, so a
/// repository elsewhere on the machine, changed meanwhile, keeps its
/// files.
#[test]
fn nothing_outside_the_top_is_moved() {
    let t = Tree::new("beneath");
    t.gitdir("ws/.git");
    t.gitdir("other/.git/modules/lib");
    t.write("other/lib/.git", "gitdir: ../.git/modules/lib\n");
    t.write(
        "ws/wt/.git",
        &format!("gitdir: {}\n", t.p("other/.git/modules/lib")),
    );
    fs::write(t.0.join("ws/.git/index"), index_of(&["lnk/lib"])).unwrap();
    let since = t.start();
    std::os::unix::fs::symlink(t.p("other"), t.p("ws/lnk")).unwrap();
    t.write("other/.git/modules/lib/config", "[user]\n\tname = me\n");
    t.write("other/lib/.git", "gitdir: ../.git/modules/lib\n");
    let s = swept(&t, since, 100);
    assert!(s.moved.is_empty() && s.failed.is_empty(), "{s:?}");
    assert!(t.exists("other/.git/modules/lib/config") && t.exists("other/lib/.git"));
}

/// A submodule path that is not UTF-8 is one entry like another, and
/// hides none of the others (an index is the command's to write).
#[test]
fn a_path_that_is_not_utf8_hides_no_entry() {
    let mut index = index_of(&["lib/a/b/c/sub", "zz"]);
    let at = index.windows(2).position(|w| w == b"zz").unwrap();
    index[at + 1] = 0xff;
    assert_eq!(
        gitlinks(&index),
        [b"lib/a/b/c/sub".to_vec(), b"z\xff".to_vec()]
    );
}

/// A NUL inside a submodule entry's name ends it where git's lstat ends
/// it; bytes after the last extension that are not the checksum make
/// the file no index (said, not read out of step with git).
#[test]
fn names_end_at_a_nul_and_an_index_ends_at_its_checksum() {
    let mut index = index_of(&["deep/sub_x"]);
    let at = index.windows(2).position(|w| w == b"_x").unwrap();
    index[at] = 0;
    assert_eq!(gitlinks(&index), [b"deep/sub".to_vec()]);
    let mut junk = index_of(&["sub"]);
    let sum = junk.split_off(junk.len() - 20);
    junk.extend(b"JUNK");
    junk.extend(sum);
    assert!(super::gitlinks_checked(&junk).is_none());
}

/// One deep repository named by two indexes: the top's, unchanged
/// during the run, and that of a repository below it, which the run
/// changed. The second entry's look is strict, and moves a config
/// planted before the run (old: the first entry's lenient look was the
/// only one, the repository counted as seen).
#[test]
fn a_deep_repository_named_twice_gets_the_strict_look() {
    let t = Tree::new("twice");
    t.gitdir("ws/.git");
    t.gitdir("ws/lib/.git");
    t.gitdir("ws/lib/x/y/z/sub/.git");
    fs::write(t.0.join("ws/.git/index"), index_of(&["lib/x/y/z/sub"])).unwrap();
    let since = t.start();
    fs::write(t.0.join("ws/lib/.git/index"), index_of(&["x/y/z/sub"])).unwrap();
    let s = swept(&t, since, 100);
    assert!(
        !t.exists("ws/lib/x/y/z/sub/.git/config"),
        "the planted config stayed: {s:?}"
    );
}

/// `git status` recurses from a submodule into the submodules its own
/// index names (`.git/modules/NAME/index`, reached through its `.git`
/// file). A submodule deeper than the walk goes, named by the top's old
/// entry, gets an entry during the run for a repository planted deeper
/// still in an earlier run: that repository's config moves aside (old:
/// only `.git/index` files of worktrees with a `.git` directory were
/// read). The submodule's own inert config stays.
#[test]
fn a_submodules_own_index_is_read() {
    let t = Tree::new("own");
    t.gitdir("ws/.git");
    t.gitdir("ws/.git/modules/p/q/r/s/sub");
    t.write(
        "ws/.git/modules/p/q/r/s/sub/config",
        "[user]\n\tname = me\n",
    );
    t.write(
        "ws/p/q/r/s/sub/.git",
        "gitdir: ../../../../../.git/modules/p/q/r/s/sub\n",
    );
    t.gitdir("ws/p/q/r/s/sub/a/b/c/d/.git");
    fs::write(t.0.join("ws/.git/index"), index_of(&["p/q/r/s/sub"])).unwrap();
    let since = t.start();
    fs::write(
        t.0.join("ws/.git/modules/p/q/r/s/sub/index"),
        index_of(&["a/b/c/d"]),
    )
    .unwrap();
    let s = swept(&t, since, 100);
    assert_eq!(
        s.moved.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        [t.p("ws/p/q/r/s/sub/a/b/c/d/.git/config")],
        "{s:?}"
    );
    assert!(t.exists("ws/.git/modules/p/q/r/s/sub/config"));
}

/// git takes a gitlink by the type bits of its mode alone
/// (`S_ISGITLINK`): other bits set hide nothing.
#[test]
fn a_gitlink_is_known_by_its_type_bits() {
    let mut index = index_of(&["deep/sub"]);
    // The mode's low bits, in the entry's mode word (after 24 bytes).
    index[12 + 24 + 2] = 0xe1;
    index[12 + 24 + 3] = 0xa4;
    assert_eq!(gitlinks(&index), [b"deep/sub".to_vec()]);
}

/// git follows a symlinked index; it never makes one. One put there
/// (naming a copy with an entry for a deep planted repository) moves
/// aside instead of being skipped unsaid.
#[test]
fn a_symlinked_index_moves_aside() {
    let t = Tree::new("symindex");
    t.gitdir("ws/.git");
    t.gitdir("ws/p/q/r/s/sub/.git");
    fs::write(t.0.join("ws/copy"), index_of(&["p/q/r/s/sub"])).unwrap();
    let since = t.start();
    std::os::unix::fs::symlink("../copy", t.0.join("ws/.git/index")).unwrap();
    let s = swept(&t, since, 100);
    assert!(
        s.moved.iter().any(|(p, _)| *p == t.p("ws/.git/index")),
        "{s:?}"
    );
}

/// A gitdir file is read as git reads it: it starts with `gitdir: `,
/// and only line ends are cut (a trailing space is part of the name);
/// `..` is taken after a directory, never after a symlink (the kernel
/// takes a symlink's `..` from its target); and it leads only into a
/// writable tree, never into a top above one (where the command could
/// not have made it).
#[test]
fn gitdir_files_are_read_as_git_reads_them() {
    let t = Tree::new("gitfile");
    t.gitdir("ws/g");
    t.gitdir("ws/g ");
    fs::create_dir_all(t.0.join("ws/d/e")).unwrap();
    std::os::unix::fs::symlink("d/e", t.0.join("ws/l")).unwrap();
    t.gitdir("outside/.git");
    let above = t.0.to_str().unwrap().to_string();
    let tops = Tops::open(&[t.p("ws"), above]);
    let recorded = HashSet::new();
    let writable = [t.p("ws")];
    let s = Sweep {
        tops: &tops,
        recorded: &recorded,
        since: Stamp::now(),
        writable: &writable,
        known: None,
    };
    // The top a path is reached through, and the path beneath it.
    let (ws, under) = tops.reach(&t.p("ws")).unwrap();
    let under = String::from_utf8(under).unwrap();
    let at = |rel: &str| format!("{under}/{rel}").trim_start_matches('/').to_string();
    let named = |text: &str| {
        t.write("ws/wt/.git", text);
        super::named_gitdir(&s, ws, at("wt").as_bytes())
            .map(|(i, rel)| (i, String::from_utf8(rel).unwrap()))
    };
    assert_eq!(named("gitdir: ../g\n"), Some((ws, at("g"))));
    assert_eq!(named("gitdir: ../g \r\n"), Some((ws, at("g "))));
    assert_eq!(named(" gitdir: ../g\n"), None);
    assert_eq!(named("x\ngitdir: ../g\n"), None);
    assert_eq!(named("gitdir: ../l/../g\n"), None);
    assert_eq!(named("gitdir: ../d/../g\n"), Some((ws, at("g"))));
    assert_eq!(named(&format!("gitdir: {}\n", t.p("outside/.git"))), None);
    assert_eq!(
        named(&format!("gitdir: {}\n", t.p("ws/g"))),
        Some((ws, at("g")))
    );
}

/// git reads one index for each worktree whose `.git` names its git
/// directory, its entries relative to that worktree. A deep checkout
/// whose `.git` file names the top's own git directory makes the top's
/// entry `m/n/o/evil` lead to `X/m/n/o/evil`: that is looked at too
/// (old: the index counted as read once, from the top).
#[test]
fn an_index_is_read_for_each_worktree_it_serves() {
    let t = Tree::new("perworktree");
    t.gitdir("ws/.git");
    t.write("ws/p/q/r/s/x/.git", "gitdir: ../../../../../.git\n");
    t.gitdir("ws/p/q/r/s/x/m/n/o/evil/.git");
    let since = t.start();
    fs::write(
        t.0.join("ws/.git/index"),
        index_of(&["m/n/o/evil", "p/q/r/s/x"]),
    )
    .unwrap();
    let s = swept(&t, since, 100);
    assert!(
        !t.exists("ws/p/q/r/s/x/m/n/o/evil/.git/config"),
        "the planted config stayed: {s:?}"
    );
}

/// A linked worktree (`git worktree add`) has its index in
/// `.git/worktrees/NAME`. Where the worktree lies in the writable tree,
/// deeper than the walk goes, its entries lead to what is looked at
/// strictly; where it lies out of the command's reach, an entry that
/// climbs back (`../ws/x`: git never writes one, but follows it) moves
/// the index aside. Old: these indexes were never read.
#[test]
fn linked_worktrees_indexes_are_read() {
    let t = Tree::new("linked");
    t.gitdir("ws/.git");
    // Inside, five levels down.
    t.write(
        "ws/a/b/c/d/wt/.git",
        &format!("gitdir: {}\n", t.p("ws/.git/worktrees/wt")),
    );
    t.write(
        "ws/.git/worktrees/wt/gitdir",
        &format!("{}\n", t.p("ws/a/b/c/d/wt/.git")),
    );
    t.write("ws/.git/worktrees/wt/HEAD", "ref: refs/heads/wt\n");
    t.gitdir("ws/a/b/c/d/wt/x/.git");
    // Outside the writable tree.
    t.write(
        "out/.git",
        &format!("gitdir: {}\n", t.p("ws/.git/worktrees/out")),
    );
    t.write(
        "ws/.git/worktrees/out/gitdir",
        &format!("{}\n", t.p("out/.git")),
    );
    let since = t.start();
    fs::write(t.0.join("ws/.git/worktrees/wt/index"), index_of(&["x"])).unwrap();
    fs::write(
        t.0.join("ws/.git/worktrees/out/index"),
        index_of(&["../ws/deep"]),
    )
    .unwrap();
    let s = swept(&t, since, 100);
    assert!(!t.exists("ws/a/b/c/d/wt/x/.git/config"), "{s:?}");
    assert!(!t.exists("ws/.git/worktrees/out/index"), "{s:?}");
    assert!(t.exists("ws/.git/worktrees/wt/index"));
}

/// The warning names the bound that was met: the walk's directories,
/// or the others (old: every place unswept was said to be past the
/// 2000 directories).
#[test]
fn the_warning_names_the_bound_met() {
    let said = |stopped| {
        let s = Swept {
            unswept: 3,
            stopped,
            ..Swept::default()
        };
        let mut w = Vec::new();
        report(&s, 2000, &mut w);
        w.join("\n")
    };
    assert!(said(true).contains("stopped after 2000 directories, 3 unswept"));
    let other = said(false);
    assert!(
        other.contains("left 3 places unswept") && other.contains("100 indexes"),
        "{other}"
    );
    let mut none = Vec::new();
    report(&Swept::default(), 2000, &mut none);
    assert!(none.is_empty());
}

/// A linked worktree's git directory (`.git/worktrees/NAME`) is in the
/// launch record, and so the sweep looks in it too: one the command
/// makes there, with a planted config, loses it (old: only a gitdir
/// file naming it led there, and a known one was judged by ctimes).
/// A file where git looks for a directory there is nothing to look at,
/// not a bound met.
#[test]
fn linked_worktrees_git_directories_are_looked_in() {
    let t = Tree::new("worktrees");
    t.gitdir("ws/.git");
    t.write("ws/.git/worktrees/stray", "not a directory\n");
    fs::create_dir_all(t.0.join("ws/.git/worktrees/old")).unwrap();
    t.write("ws/.git/worktrees/old/commondir", "../..\n");
    let known = launch(&t, 100).expect("a file in worktrees is no bound");
    let since = t.start();
    t.gitdir("ws/.git/worktrees/w");
    let s = swept_knowing(&t, since, 100, Some(&known));
    assert!(!t.exists("ws/.git/worktrees/w/config"), "{s:?}");
    assert!(t.exists("ws/.git/worktrees/old/commondir"), "{s:?}");
}

/// A submodule deeper than the walk whose gitdir lies out of the
/// writable trees (the workspace a linked worktree or a submodule
/// checkout of a superproject elsewhere) keeps its `.git` file in a run
/// that left the index alone: the launch record never holds a deep
/// `.git`, so its ctime decides (old, in the second audit's review:
/// moved aside after every run).
#[test]
fn a_deep_gitdir_file_out_of_reach_stays() {
    let t = Tree::new("deep-gitfile");
    t.gitdir("ws/.git");
    fs::write(t.0.join("ws/.git/index"), index_of(&["a/b/c/d/sub"])).unwrap();
    t.write(
        "ws/a/b/c/d/sub/.git",
        "gitdir: /nonexistent/main/.git/worktrees/w/modules/sub\n",
    );
    let known = launch(&t, 100).unwrap();
    let since = t.start();
    let s = swept_knowing(&t, since, 100, Some(&known));
    assert!(t.exists("ws/a/b/c/d/sub/.git"), "{s:?}");
}
