use super::{hooks_paths, Hooks, Reader, BUDGET, DEPTH};
use crate::lower::tree::Tree;

/// A directory with `home/` in it.
struct Dir(Tree);

impl std::ops::Deref for Dir {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        &self.0
    }
}

impl Dir {
    fn new() -> Dir {
        Dir(Tree::new(&["home"]))
    }

    /// Read `rel` as a top-level config: (included files with their
    /// origins, hooksPath values, the reader).
    fn read(&self, rel: &str) -> (Vec<(String, String)>, Vec<Hooks>, Reader) {
        let mut r = Reader::new(&self.p("home"));
        let mut hooks = Vec::new();
        r.read(&self.p(rel), true, &mut hooks);
        let found = r
            .found
            .iter()
            .map(|f| (f.path.clone(), f.entry.clone()))
            .collect();
        (found, hooks, r)
    }
}

#[test]
fn relative_home_and_absolute_paths() {
    let d = Dir::new();
    d.write(
        "repo/.git/config",
        &format!(
            "[include]\n\tpath = ../.gitlocal\n\tpath = ~/.gitconfig.d/x\n\
             [Include]\n\tPath = \"{}\" ; absolute\n",
            d.p("abs/inc")
        ),
    );
    d.write("repo/.gitlocal", "[include]\n\tpath = sub/next\n");
    let (found, _, r) = d.read("repo/.git/config");
    let from = format!("git include from {}", d.p("repo/.git/config"));
    assert_eq!(
        found,
        vec![
            (d.p("repo/.gitlocal"), from.clone()),
            // Relative to the file that names it.
            (
                d.p("repo/sub/next"),
                format!("git include from {}", d.p("repo/.gitlocal"))
            ),
            // Absent: still a place to protect.
            (d.p("home/.gitconfig.d/x"), from.clone()),
            (d.p("abs/inc"), from),
        ]
    );
    assert!(!r.out_of_budget && r.too_large.is_none());
}

#[test]
fn under_home_the_origin_is_shown_with_a_tilde() {
    let d = Dir::new();
    d.write("home/.gitconfig", "[include]\n\tpath = .gitconfig.local\n");
    let (found, _, _) = d.read("home/.gitconfig");
    assert_eq!(
        found,
        vec![(
            d.p("home/.gitconfig.local"),
            "git include from ~/.gitconfig".to_string()
        )]
    );
}

/// Relative to the directory as the kernel finds it, through a symlink.
#[cfg(unix)]
#[test]
fn relative_to_the_real_directory() {
    let d = Dir::new();
    d.write("dotfiles/git/config", "[include]\n\tpath = ../local\n");
    d.mkdir("home/.config");
    std::os::unix::fs::symlink(d.p("dotfiles/git"), d.p("home/.config/git")).unwrap();
    let (found, _, _) = d.read("home/.config/git/config");
    assert_eq!(found[0].0, d.p("dotfiles/local"));
}

#[test]
fn every_include_if_condition_is_followed() {
    let d = Dir::new();
    d.write(
        "home/.gitconfig",
        "[includeIf \"gitdir:~/work/\"]\n\tpath = work\n\
         [includeIf \"onbranch:main\"]\n\tpath = main\n\
         [includeIf \"hasconfig:remote.*.url:https://x/**\"]\n\tpath = remote\n\
         [includeIf \"no-such-condition:\"]\n\tpath = other\n\
         [includeIf]\n\tpath = no-condition\n\
         [include \"sub\"]\n\tpath = not-an-include\n\
         [includeIf \"gitdir:/\"]\n\tnotpath = x\n",
    );
    let (found, _, _) = d.read("home/.gitconfig");
    let paths: Vec<String> = found.into_iter().map(|f| f.0).collect();
    let want: Vec<String> = ["work", "main", "remote", "other"]
        .iter()
        .map(|f| d.p(&format!("home/{f}")))
        .collect();
    assert_eq!(paths, want);
}

#[test]
fn cycles_end_and_depth_is_gits() {
    let d = Dir::new();
    // a → b → a: each read once, the loop not followed.
    d.write("a", "[include]\n\tpath = b\n[core]\n\thooksPath = ha\n");
    d.write("b", "[include]\n\tpath = a\n\tpath = b\n");
    let (found, hooks, r) = d.read("a");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(hooks.len(), 1);
    assert!(!r.out_of_budget);
    // f0 includes f1 … f11 includes f12: git reads up to depth 10, and
    // stops with an error at the include in f10.
    for i in 0..12 {
        d.write(
            &format!("f{i}"),
            &format!("[include]\n\tpath = f{}\n", i + 1),
        );
    }
    let (found, _, r) = d.read("f0");
    let last = found.last().unwrap().0.clone();
    assert_eq!(found.len(), DEPTH);
    assert_eq!(last, d.p(&format!("f{DEPTH}")));
    assert!(!r.out_of_budget);
}

#[test]
fn the_budget_bounds_the_work_and_says_so() {
    let d = Dir::new();
    let many: String = (0..=BUDGET)
        .map(|i| format!("[include]\n\tpath = i{i}\n"))
        .collect();
    d.write("top", &many);
    for i in 0..=BUDGET {
        d.write(&format!("i{i}"), &format!("[include]\n\tpath = j{i}\n"));
    }
    let (found, _, r) = d.read("top");
    assert!(r.out_of_budget);
    // Every directive of a file read is a place to protect; only the
    // files past the budget are not read.
    assert!(found.iter().any(|f| f.0 == d.p(&format!("i{BUDGET}"))));
    assert!(!found.iter().any(|f| f.0 == d.p(&format!("j{BUDGET}"))));
    assert!(found.len() <= 2 * BUDGET + 1);
    // A file larger than git files are read is said too.
    d.write("big", &"#".repeat(super::super::MAX_FILE as usize + 1));
    d.write("small", "[include]\n\tpath = big\n");
    let (_, _, r) = d.read("small");
    assert_eq!(r.too_large, Some(d.p("big")));
}

#[test]
fn hooks_path_in_reading_order() {
    let d = Dir::new();
    // Included content is read at the point of the directive.
    d.write(
        "before",
        "[core]\n\thooksPath = a\n[include]\n\tpath = inc\n",
    );
    d.write(
        "after",
        "[include]\n\tpath = inc\n[core]\n\thooksPath = a\n",
    );
    d.write("inc", "[core]\n\thooksPath = ~/from-inc\n");
    let h = |rel: &str| hooks_paths(&d.read(rel).1);
    assert_eq!(h("before"), [d.p("home/from-inc")]);
    assert_eq!(h("after"), ["a"]);
    // A conditional include may or may not win: both are kept.
    d.write(
        "cond",
        "[core]\n\thooksPath = a\n[includeIf \"gitdir:~/w/\"]\n\tpath = inc\n",
    );
    assert_eq!(h("cond"), ["a".to_string(), d.p("home/from-inc")]);
    // An empty value is not a place.
    d.write("empty", "[core]\n\thooksPath = a\n\thooksPath =\n");
    assert_eq!(h("empty"), ["a"]);
}
