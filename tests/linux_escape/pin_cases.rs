//! Pinned directories (docs/protected.md): a carve-out is a mount on a
//! name inside a writable tree, and the kernel lets the command rename
//! the directory that holds it (the mount moves along, the name is free
//! again). Each directory on the way from the writable top is a mount
//! point of itself, so that rename gives EBUSY. The oracle is what runs
//! afterwards outside the sandbox: real git, or the next `sbx run`.

use crate::fixture::{check, expect, Fx, Out};
use crate::protect_cases::{fsmonitor, git, git_repo, sh_under};
use std::path::Path;

/// Namespaces are unavailable on this host (then there is no mount to
/// pin, and the precision report says so): the case is skipped.
fn no_layer(out: &Out) -> bool {
    let missing = out.stderr.contains("namespaces are not available");
    if missing {
        eprintln!("  (skipped: namespaces are not available here)");
    }
    missing
}

/// The control beside each pin: a directory on the way to no carve-out
/// (`ws/sub`) renames.
fn unpinned_renames(fx: &Fx, run: &dyn Fn(&[&str]) -> Out) -> Result<(), String> {
    expect(
        "rename an unpinned directory",
        &run(&["rename", &fx.path("ws/sub"), &fx.path("ws/sub2")]),
        "OK",
    )
}

/// `core.hooksPath = tools/githooks` and `include.path =
/// ../cfg/team.gitconfig` are set before the run. Renaming `tools`,
/// `cfg` or `.git` (to put a writable directory of the same name in
/// its place) gives EBUSY, and the user's `git status` and `git commit`
/// outside afterwards run nothing the command planted. Controls: an
/// unpinned directory beside them renames, and `git commit` works
/// inside the sandbox.
pub fn git_hooks_path_and_include(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "pin_hooks_path_and_include")? {
        return Ok(());
    }
    std::fs::create_dir_all(fx.ws.join("tools/githooks")).unwrap();
    std::fs::create_dir_all(fx.ws.join("cfg")).unwrap();
    let identity = "[user]\n\tname = me\n\temail = me@example.com\n";
    std::fs::write(fx.ws.join("cfg/team.gitconfig"), identity).unwrap();
    for (key, value) in [
        ("core.hooksPath", "tools/githooks"),
        ("include.path", "../cfg/team.gitconfig"),
    ] {
        let o = git(fx, "", &["config", key, value]).map_err(|e| e.to_string())?;
        check(o.status.success(), || format!("git config {key}: {o:?}"))?;
    }
    let o = git(fx, "", &["add", "data"]).map_err(|e| e.to_string())?;
    check(o.status.success(), || format!("git add: {o:?}"))?;
    let p = fx.default_policy();
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let first = fx.run(
        &p,
        &["--report"],
        &["rename", &fx.path("ws/tools"), &fx.path("ws/tools.old")],
    );
    if no_layer(&first) {
        return Ok(());
    }
    expect("rename tools (above core.hooksPath)", &first, "EBUSY")?;
    // `--report` lists the pins.
    for dir in ["ws/tools", "ws/cfg", "ws/.git"] {
        let line = format!("pin {}: ", fx.path(dir));
        check(first.stderr.contains(&line), || {
            format!("--report does not list {line:?}:\n{}", first.stderr)
        })?;
    }
    for (from, to) in [("ws/cfg", "ws/cfg.old"), ("ws/.git", "ws/.git.orig")] {
        expect(
            &format!("rename {from}"),
            &r(&["rename", &fx.path(from), &fx.path(to)]),
            "EBUSY",
        )?;
    }
    unpinned_renames(fx, &r)?;
    // The whole plant, as a command would try it.
    let hook = fx.path("hook-ran");
    let monitor = fx.path("fsmonitor-ran");
    let plant = format!(
        "mv tools tools.old; mv cfg cfg.old; mkdir -p tools/githooks cfg; \
         printf '#!/bin/sh\\ntouch {hook}\\n' > tools/githooks/pre-commit; \
         chmod +x tools/githooks/pre-commit; {} >> cfg/team.gitconfig; \
         echo x >> data && git -c user.name=me -c user.email=me@example.com commit -qam inside && \
         echo committed",
        fsmonitor(&monitor)
    );
    let out = sh_under(fx, &p, &plant);
    // Control: git commits inside the sandbox (the hooks directory and
    // the included config are read, `.git` written).
    check(out.code == 0 && out.answer() == "committed", || {
        format!("the run: {out:?}")
    })?;
    check(out.stderr.contains("Device or resource busy"), || {
        format!("mv did not fail with EBUSY: {}", out.stderr)
    })?;
    let _ = std::fs::remove_file(&monitor);
    let _ = git(fx, "", &["status", "--short"]).map_err(|e| e.to_string())?;
    std::fs::write(fx.ws.join("data"), "changed outside").unwrap();
    // An identity of its own: a replaced include would lose the one in
    // `cfg`, and git would refuse before running the hook.
    let commit = git(
        fx,
        "",
        &[
            "-c",
            "user.name=me",
            "-c",
            "user.email=me@example.com",
            "commit",
            "-qam",
            "outside",
        ],
    )
    .map_err(|e| e.to_string())?;
    check(commit.status.success(), || {
        format!("git commit outside: {commit:?}")
    })?;
    check(!Path::new(&monitor).exists(), || {
        "git status outside ran a planted core.fsmonitor".into()
    })?;
    check(!Path::new(&hook).exists(), || {
        "git commit outside ran a planted pre-commit hook".into()
    })?;
    check(
        std::fs::read_to_string(fx.ws.join("cfg/team.gitconfig")).unwrap() == identity,
        || "the included config changed".into(),
    )
}

/// A deny rule below the top (`dir/secret`, read = false): the first
/// run cannot rename `dir` away, so the second finds the secret still
/// hidden under its name and nothing under a new one. Control: an
/// unpinned directory beside it renames.
pub fn deny_rule_parent(fx: &Fx) -> Result<(), String> {
    std::fs::create_dir_all(fx.ws.join("dir")).unwrap();
    std::fs::write(fx.ws.join("dir/secret"), "secret").unwrap();
    let p = fx.policy(
        "best_effort",
        "\n[[fs]]\npath = \"dir/secret\"\nread = false\n",
    );
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let first = r(&["rename", &fx.path("ws/dir"), &fx.path("ws/dir2")]);
    if no_layer(&first) {
        return Ok(());
    }
    expect("run 1 renames dir", &first, "EBUSY")?;
    expect(
        "run 2 reads dir2/secret",
        &r(&["read", &fx.path("ws/dir2/secret")]),
        "ENOENT",
    )?;
    expect(
        "run 2 reads dir/secret",
        &r(&["read", &fx.path("ws/dir/secret")]),
        "EACCES",
    )?;
    unpinned_renames(fx, &r)?;
    expect(
        "write beside the secret",
        &r(&["write", &fx.path("ws/dir/other")]),
        "OK",
    )
}

/// The run's own policy file (`sbx run cfg/policy.toml`) and artifact
/// (`--artifact .sbx/linux.json`) below the top: the command cannot
/// rename `cfg` or `.sbx` to put a policy that grants `/` in their
/// place, and the next run from `cfg/policy.toml` still cannot write
/// outside the workspace. Control: the workspace stays writable, and
/// an unpinned directory renames.
pub fn own_policy_parent(fx: &Fx) -> Result<(), String> {
    std::fs::create_dir_all(fx.ws.join("cfg")).unwrap();
    std::fs::create_dir_all(fx.ws.join(".sbx")).unwrap();
    let own = fx.ws.join("cfg/policy.toml");
    std::fs::copy(fx.policy("best_effort", ""), &own).unwrap();
    let art = fx.ws.join(".sbx/linux.json");
    let c = fx.compile_linux(&own, &art);
    check(c.code == 0, || format!("compile: {c:?}"))?;
    let r = |args: &[&str]| fx.run(&own, &[], args);
    let first = r(&["rename", &fx.path("ws/cfg"), &fx.path("ws/cfg.old")]);
    if no_layer(&first) {
        return Ok(());
    }
    expect("rename cfg (above the policy)", &first, "EBUSY")?;
    expect(
        "rename .sbx (above the artifact)",
        &fx.run_artifact(&art, &["rename", &fx.path("ws/.sbx"), &fx.path("ws/.sbx2")]),
        "EBUSY",
    )?;
    let plant = "mv cfg cfg.old; mkdir -p cfg; \
                 printf 'version = 1\\n[[fs]]\\npath = \"/\"\\nread = true\\nwrite = true\\n' \
                 > cfg/policy.toml; echo done";
    let out = sh_under(fx, &own, plant);
    check(out.code == 0 && out.answer() == "done", || {
        format!("the run: {out:?}")
    })?;
    // Outside the grants is not even there (the new root); the planted
    // policy, granting `/`, would show the host's root and write it.
    expect(
        "the next run writes outside",
        &r(&["write", &fx.path("outside/new")]),
        "ENOENT",
    )?;
    expect(
        "the next run writes the workspace",
        &r(&["write", &fx.path("ws/new")]),
        "OK",
    )?;
    unpinned_renames(fx, &r)
}

/// A linked worktree outside the workspace (`git worktree add ../wt`):
/// git run there reads `.git/worktrees/wt/commondir` in the workspace,
/// which is protected. Renaming `.git/worktrees` or `.git/worktrees/wt`
/// away (to put a `commondir` naming a repository the command made in
/// their place) gives EBUSY, and the user's `git status` in the
/// worktree afterwards runs nothing planted. The planted repository is
/// deeper than the sweep after the run looks, so only the pins stop it.
pub fn git_linked_worktree(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "pin_linked_worktree")? {
        return Ok(());
    }
    let id = ["-c", "user.name=me", "-c", "user.email=me@example.com"];
    let o = git(
        fx,
        "",
        &[&id[..], &["commit", "-q", "--allow-empty", "-m", "x"]].concat(),
    )
    .map_err(|e| e.to_string())?;
    check(o.status.success(), || format!("git commit: {o:?}"))?;
    let wt = fx.path("wt");
    let o = git(fx, "", &["worktree", "add", "-q", &wt]).map_err(|e| e.to_string())?;
    check(o.status.success(), || format!("git worktree add: {o:?}"))?;
    let p = fx.default_policy();
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let first = r(&[
        "rename",
        &fx.path("ws/.git/worktrees"),
        &fx.path("ws/.git/wt-old"),
    ]);
    if no_layer(&first) {
        return Ok(());
    }
    expect("rename .git/worktrees", &first, "EBUSY")?;
    expect(
        "rename .git/worktrees/wt",
        &r(&[
            "rename",
            &fx.path("ws/.git/worktrees/wt"),
            &fx.path("ws/.git/worktrees/x"),
        ]),
        "EBUSY",
    )?;
    unpinned_renames(fx, &r)?;
    let mark = fx.path("fsmonitor-ran");
    let evil = "lib/a/b/c/d/evil.git";
    let plant = format!(
        "git init -q --bare {evil} && {} >> {evil}/config && \
         mv .git/worktrees .git/wt-old; mkdir -p .git/worktrees/wt && \
         cp .git/wt-old/wt/HEAD .git/wt-old/wt/gitdir .git/worktrees/wt/ && \
         echo \"$PWD/{evil}\" > .git/worktrees/wt/commondir; echo done",
        fsmonitor(&mark)
    );
    let out = sh_under(fx, &p, &plant);
    check(out.code == 0 && out.answer() == "done", || {
        format!("the run: {out:?}")
    })?;
    let status = std::process::Command::new("git")
        .args(["status", "--short"])
        .current_dir(&wt)
        .env("HOME", fx.path("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .map_err(|e| e.to_string())?;
    check(status.status.success(), || {
        format!("git status in the worktree: {status:?}")
    })?;
    check(!Path::new(&mark).exists(), || {
        "git status in the worktree ran a planted core.fsmonitor".into()
    })
}
