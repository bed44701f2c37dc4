//! Protected paths (POLICY.md §7a) that git's config reaches only
//! through an include (issue #19).

use crate::cases::protections_exact;
use crate::fixture::{check, expect, Fx};
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// `.git/config` includes `../.gitlocal`, a file in the workspace. Under
/// the default policy the command cannot append a `core.fsmonitor` to
/// it (which the user's next `git status` would run) nor rename a file
/// over it; an ordinary workspace file stays writable.
pub fn git_include(fx: &Fx) -> Result<(), String> {
    for d in ["ws/.git/hooks", "ws/.git/objects"] {
        std::fs::create_dir_all(fx.path(d)).unwrap();
    }
    let put = |rel: &str, text: &str| std::fs::write(fx.path(rel), text).unwrap();
    put(
        "ws/.git/config",
        "[core]\n\tbare = false\n[include]\n\tpath = ../.gitlocal\n",
    );
    let text = "[user]\n\tname = me\n";
    put("ws/.gitlocal", text);
    put("ws/evil", "[core]\n\tfsmonitor = touch /tmp/sbx-planted\n");
    let p = fx.default_policy();
    if !protections_exact(fx, &p, &[], "protected git include")? {
        return Ok(());
    }
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let local = fx.path("ws/.gitlocal");
    expect(
        "append to the included .gitlocal",
        &r(&["append", &local]),
        "EROFS",
    )?;
    expect(
        "rename over the included .gitlocal",
        &r(&["rename", &fx.path("ws/evil"), &local]),
        "EBUSY",
    )?;
    // Positive controls under the same policy.
    expect("read .gitlocal", &r(&["read", &local]), "OK")?;
    expect(
        "append to a workspace file",
        &r(&["append", &fx.path("ws/data")]),
        "OK",
    )?;
    expect(
        "new workspace file",
        &r(&["write", &fx.path("ws/new")]),
        "OK",
    )?;
    check(std::fs::read_to_string(&local).unwrap() == text, || {
        ".gitlocal changed".into()
    })
}

/// git in `dir` (relative to the workspace) as the user runs it after
/// the run: outside the sandbox, without the system config.
pub fn git(fx: &Fx, dir: &str, args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new("git")
        .args(args)
        .current_dir(fx.ws.join(dir))
        .env("HOME", fx.path("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
}

/// `git init` in the workspace (on the host), or `Ok(false)` where git is
/// missing outside CI (CI installs it: .ci/prereqs.sh).
pub fn git_repo(fx: &Fx, case: &str) -> Result<bool, String> {
    match git(fx, "", &["init", "-q", "."]) {
        Ok(o) if o.status.success() => Ok(true),
        _ if std::env::var_os("CI").is_none() => {
            eprintln!("{case}: git is not installed, skipped");
            Ok(false)
        }
        other => Err(format!("git init: {other:?}")),
    }
}

/// `/bin/sh -c SCRIPT` under the default policy, in the workspace.
fn sh(fx: &Fx, script: &str) -> crate::fixture::Out {
    sh_under(fx, &fx.default_policy(), script)
}

/// `/bin/sh -c SCRIPT` under `p`, in the workspace.
pub fn sh_under(fx: &Fx, p: &Path, script: &str) -> crate::fixture::Out {
    let args: Vec<OsString> = [
        "run",
        p.to_str().unwrap(),
        "--workspace",
        fx.ws.to_str().unwrap(),
        "--",
        "/bin/sh",
        "-c",
        script,
    ]
    .iter()
    .map(OsString::from)
    .collect();
    fx.sbx(&args, None)
}

/// Control: the config the sweep moved aside (`config.sbx-blocked`),
/// put back at `config`, runs on `git status` in `dir`: the hole the
/// case closes is real.
fn restored_runs(fx: &Fx, config: &Path, dir: &str, mark: &str) -> Result<(), String> {
    std::fs::rename(config.with_file_name("config.sbx-blocked"), config)
        .map_err(|e| e.to_string())?;
    let _ = git(fx, dir, &["status", "--short"]);
    check(Path::new(mark).exists(), || {
        format!("control: the restored config did not run in {dir:?}")
    })
}

/// A line of git config that makes git run `touch MARK`.
pub fn fsmonitor(mark: &str) -> String {
    format!("printf '[core]\\n\\tfsmonitor = \"touch {mark}; false\"\\n'")
}

/// `.git/commondir` names the directory whose hooks and config git uses,
/// for a `.git` directory too. Under the default policy the command makes
/// a bare repository with a `core.fsmonitor` and writes a `commondir`
/// naming it into the workspace's `.git` (absent at launch, so nothing
/// can be mounted over it): once the run has ended the file is moved
/// aside, and the user's next `git status` runs nothing planted. Put
/// back by hand, the same `git status` does run it, so the case would
/// see the hole.
pub fn git_commondir(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_commondir_cannot_redirect")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "git init -q --bare \"$PWD/evil.git\" && {} >> evil.git/config && \
             printf '%s\\n' \"$PWD/evil.git\" > .git/commondir && echo planted",
            fsmonitor(&mark)
        ),
    );
    let commondir = fx.ws.join(".git/commondir");
    let aside = fx.ws.join(".git/commondir.sbx-blocked");
    // Written during the run (positive control: the rest of .git and the
    // workspace stay writable)…
    check(out.code == 0 && out.answer() == "planted", || {
        format!("the run: {out:?}")
    })?;
    // …moved aside once it ended, with a warning naming both paths.
    check(!commondir.exists() && aside.exists(), || {
        format!("commondir still in place: {}", out.stderr)
    })?;
    check(out.stderr.contains(".git/commondir.sbx-blocked"), || {
        out.stderr.clone()
    })?;
    status_runs_nothing(fx, &mark)?;
    // The bare repository the command made is swept too.
    let evil = fx.ws.join("evil.git/config");
    check(!evil.exists(), || {
        format!("evil.git/config: {}", out.stderr)
    })?;
    // Put back, the planted files redirect git: the hole is real.
    std::fs::rename(&aside, &commondir).map_err(|e| e.to_string())?;
    std::fs::rename(fx.ws.join("evil.git/config.sbx-blocked"), &evil).map_err(|e| e.to_string())?;
    let _ = git(fx, "", &["status", "--short"]);
    check(Path::new(&mark).exists(), || {
        "control: the restored commondir did not redirect git".into()
    })
}

/// A repository the command makes below the workspace's top (`git init
/// sub`) has no protection by name while the run lasts. Its planted
/// `core.fsmonitor` would run on the user's next `git status` in it, and
/// at the top too once the top's index has a submodule entry for it
/// (`git status` recurses into it). Here it is five directories down,
/// deeper than the walk goes, and found through that entry. After the
/// run its config is moved aside; what else the command made stays; put
/// back, the config runs at the top as in the subdirectory.
pub fn git_nested_repo_made_in_the_run(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_repository_made_in_the_run_is_swept")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "git init -q lib/a/b/c/sub && {} >> lib/a/b/c/sub/.git/config && \
             git -C lib/a/b/c/sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && \
             git update-index --add --cacheinfo \"160000,$(git -C lib/a/b/c/sub rev-parse HEAD),lib/a/b/c/sub\" && \
             echo kept > keep.txt && echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.code == 0 && out.answer() == "planted", || {
        format!("the run: {out:?}")
    })?;
    // git ran it inside the sandbox too (commit queries the monitor),
    // where /tmp is writable: only what runs afterwards counts.
    let _ = std::fs::remove_file(&mark);
    let config = fx.ws.join("lib/a/b/c/sub/.git/config");
    let aside = fx.ws.join("lib/a/b/c/sub/.git/config.sbx-blocked");
    check(!config.exists() && aside.exists(), || {
        format!("the nested config is still in place: {}", out.stderr)
    })?;
    check(
        out.stderr.contains("lib/a/b/c/sub/.git/config.sbx-blocked"),
        || out.stderr.clone(),
    )?;
    // Positive controls: the command's ordinary file and the rest of the
    // new repository stay.
    check(
        fx.ws.join("keep.txt").exists() && fx.ws.join("lib/a/b/c/sub/.git/HEAD").exists(),
        || "the run's other files are gone".into(),
    )?;
    for dir in ["", "lib/a/b/c/sub"] {
        let _ = git(fx, dir, &["status", "--short"]).map_err(|e| e.to_string())?;
        check(!Path::new(&mark).exists(), || {
            format!("git status in {dir:?} ran the planted core.fsmonitor")
        })?;
    }
    // Put back, git status at the top runs it (through the submodule).
    std::fs::rename(&aside, &config).map_err(|e| e.to_string())?;
    let _ = git(fx, "", &["status", "--short"]);
    check(Path::new(&mark).exists(), || {
        "control: the restored config did not run at the top".into()
    })
}

/// Submodules' git directories are named by their path
/// (`.git/modules/a/b/c/d/foo`), at any depth. One that exists at launch
/// keeps its config read-only (old: only `.git/modules/NAME/config` one
/// level down was protected, and a planted `core.fsmonitor` ran on the
/// user's next `git status`); one the command makes during the run, deep
/// in `.git/modules` with its index split (so no index entry leads to
/// it), has its config moved aside after the run (old: the sweep looked
/// only where the index pointed). Control: the command's other files
/// stay, and the existing config is still read.
pub fn git_submodule_dirs_deep_in_modules(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_submodule_dirs_deep_in_modules")? {
        return Ok(());
    }
    let existing = ".git/modules/a/b/c/d/foo";
    git(fx, "", &["init", "-q", "--bare", existing]).map_err(|e| e.to_string())?;
    let config = fx.ws.join(existing).join("config");
    let before = std::fs::read(&config).map_err(|e| e.to_string())?;
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "cat {existing}/config >/dev/null && echo read; {} >> {existing}/config || echo refused",
            fsmonitor(&mark)
        ),
    );
    check(out.answer() == "read\nrefused", || {
        format!("run 1: {out:?}")
    })?;
    check(std::fs::read(&config).ok() == Some(before), || {
        "the existing submodule's config changed".into()
    })?;
    let made = ".git/modules/x/y/z/w";
    let out = sh(
        fx,
        &format!(
            "git init -q --bare {made} && {} >> {made}/config && \
             git update-index --split-index && echo kept > keep.txt && echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.code == 0 && out.answer() == "planted", || {
        format!("run 2: {out:?}")
    })?;
    let made = fx.ws.join(made);
    check(
        !made.join("config").exists() && made.join("config.sbx-blocked").exists(),
        || {
            format!(
                "the new submodule's config is still in place: {}",
                out.stderr
            )
        },
    )?;
    check(
        fx.ws.join("keep.txt").exists() && made.join("HEAD").exists(),
        || "the run's other files are gone".into(),
    )
}

/// A repository deeper than the after-run walk goes is not looked at
/// after the run that makes it (a documented limit); once a submodule
/// entry leads git to it, it runs. Run 1 plants one five directories
/// down with a `core.fsmonitor` and no entry; run 2 only adds the entry,
/// into a split index (its entries in `.git/sharedindex.*`): the config
/// moves aside though it is older than run 2 (old: run 2's sweep read
/// only `.git/index`, and only what changed during it). A repository
/// made below the top with its own entry for a deep one (`cd lib && git
/// status`) is swept the same way (old: only the tops' indexes were
/// read). Control: `git status` outside runs nothing; put back, it does.
pub fn git_deep_submodule_entry_is_swept(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_deep_submodule_entry_is_swept")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let g = "git -c user.name=a -c user.email=a@b";
    let deep = "p/q/r/s/sub";
    let out = sh(
        fx,
        &format!(
            "git init -q {deep} && {g} -C {deep} commit -q --allow-empty -m x && \
             {} >> {deep}/.git/config && echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.answer() == "planted", || format!("run 1: {out:?}"))?;
    let config = fx.ws.join(deep).join(".git/config");
    check(config.exists(), || {
        "run 1's plant was swept: the case needs it".into()
    })?;
    let out = sh(
        fx,
        &format!(
            "git update-index --add --cacheinfo \"160000,$(git -C {deep} rev-parse HEAD),{deep}\" && \
             git update-index --split-index && echo added"
        ),
    );
    check(out.answer() == "added", || format!("run 2: {out:?}"))?;
    let _ = std::fs::remove_file(&mark);
    check(!config.exists(), || {
        format!(
            "the deep submodule's config is still in place: {}",
            out.stderr
        )
    })?;
    let _ = git(fx, "", &["status", "--short"]);
    check(!Path::new(&mark).exists(), || {
        "git status at the top ran the planted core.fsmonitor".into()
    })?;
    // A repository below the top, with an entry of its own.
    let nested = "lib/x/y/z/sub";
    let out = sh(
        fx,
        &format!(
            "git init -q lib && git init -q {nested} && \
             {g} -C {nested} commit -q --allow-empty -m x && {} >> {nested}/.git/config && \
             cd lib && git update-index --add --cacheinfo \"160000,$(git -C x/y/z/sub rev-parse HEAD),x/y/z/sub\" && \
             echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.answer() == "planted", || format!("run 3: {out:?}"))?;
    let _ = std::fs::remove_file(&mark);
    let config = fx.ws.join(nested).join(".git/config");
    check(!config.exists(), || {
        format!(
            "the nested repository's deep config is still in place: {}",
            out.stderr
        )
    })?;
    // Put back, git status in `lib` runs it: the hole is real.
    restored_runs(fx, &config, "lib", &mark)
}

/// `git status` in a repository recurses into its submodules, and from
/// each into the submodules that submodule's own index names (in
/// `.git/modules/NAME/index`, reached through the checkout's `.git`
/// file). The user's repository `lib`, below the top, has a real
/// submodule `x`; one run plants a repository six levels down (deeper
/// than the walk) and adds its entry to `x`'s index: the planted config
/// moves aside (old: only `.git/index` files of worktrees with a `.git`
/// directory were read, and `git status` in `lib` ran it). Control: put
/// back, it runs.
pub fn git_submodules_own_index_is_read(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_submodules_own_index_is_read")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let src = fx.path("x-src");
    let id = ["-c", "user.name=a", "-c", "user.email=a@b"];
    let host = |dir: &str, args: &[&str]| -> Result<(), String> {
        let all: Vec<&str> = id.iter().chain(args).copied().collect();
        match git(fx, dir, &all) {
            Ok(o) if o.status.success() => Ok(()),
            other => Err(format!("git {args:?} in {dir:?}: {other:?}")),
        }
    };
    host("", &["init", "-q", &src])?;
    host(
        "",
        &["-C", &src, "commit", "-q", "--allow-empty", "-m", "x"],
    )?;
    host("", &["init", "-q", "lib"])?;
    host(
        "lib",
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "-q",
            "add",
            &src,
            "x",
        ],
    )?;
    host("lib", &["commit", "-q", "-m", "x"])?;
    let deep = "lib/x/a/b/c/d";
    let out = sh(
        fx,
        &format!(
            "git init -q {deep} && git -c user.name=a -c user.email=a@b -C {deep} commit -q \
             --allow-empty -m d && {} >> {deep}/.git/config && cd lib/x && \
             git update-index --add --cacheinfo \"160000,$(git -C a/b/c/d rev-parse HEAD),a/b/c/d\" && \
             echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.answer() == "planted", || format!("the run: {out:?}"))?;
    let config = fx.ws.join(deep).join(".git/config");
    check(!config.exists(), || {
        format!(
            "the config named by the submodule's own index stayed: {}",
            out.stderr
        )
    })?;
    let _ = git(fx, "lib", &["status", "--short"]);
    check(!Path::new(&mark).exists(), || {
        "git status in lib ran the planted core.fsmonitor".into()
    })?;
    // Put back, git status in `lib` runs it (through `x`): the hole is real.
    restored_runs(fx, &config, "lib", &mark)
}

/// The sweep acts only where the command could have: a `.git` file
/// names, by absolute path, the git directory of another of the user's
/// repositories beside the workspace (in a directory the run can
/// neither read nor write), and the next run gives it an index entry.
/// That repository's hooks and config stay (old: the directory above
/// the workspace, opened for the identity checks, counted as a tree the
/// command writes, and the strict look moved them aside); the `.git`
/// file that leads there, which git would follow, moves aside instead.
pub fn git_sweep_stays_in_writable_trees(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_sweep_stays_in_writable_trees")? {
        return Ok(());
    }
    let victim = fx.path("victim");
    match git(fx, "", &["init", "-q", &victim]) {
        Ok(o) if o.status.success() => {}
        other => return Err(format!("git init victim: {other:?}")),
    }
    let hook = Path::new(&victim).join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").map_err(|e| e.to_string())?;
    let out = sh(
        fx,
        &format!(
            "mkdir -p p/q/r/s/sub && printf 'gitdir: {victim}/.git\\n' > p/q/r/s/sub/.git && echo staged"
        ),
    );
    check(out.answer() == "staged", || format!("run 1: {out:?}"))?;
    let out = sh(
        fx,
        "git update-index --add --cacheinfo \
         160000,1111111111111111111111111111111111111111,p/q/r/s/sub && echo added",
    );
    check(out.answer() == "added", || format!("run 2: {out:?}"))?;
    let git_dir = Path::new(&victim).join(".git");
    check(git_dir.join("config").exists() && hook.exists(), || {
        format!(
            "the repository outside the workspace lost its config or hooks: {}",
            out.stderr
        )
    })?;
    // Control: the sweep did act, on the way there.
    check(
        !fx.ws.join("p/q/r/s/sub/.git").exists()
            && fx.ws.join("p/q/r/s/sub/.git.sbx-blocked").exists(),
        || format!("the .git file leading outside stayed: {}", out.stderr),
    )
}

/// A git directory assembled from old files keeps their ctimes when it
/// is moved into place: run 1 makes a repository with a planted
/// `core.fsmonitor` deeper than the walk goes, where no sweep looks;
/// run 2 renames its `.git` to `lib/sub/.git`, within the walk's depth.
/// Every file in it is older than run 2, but it was not there at run
/// 2's launch: its config is moved aside, and the user's `git status`
/// in `lib/sub` runs nothing (old: it stayed, and ran). Controls: its
/// `HEAD` stays; a repository the user made before run 2 keeps its
/// hook; put back, the config runs.
pub fn git_dir_moved_into_place_is_swept(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_dir_moved_into_place_is_swept")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "git init -q deep/a/b/c/x && {} >> deep/a/b/c/x/.git/config && echo staged",
            fsmonitor(&mark)
        ),
    );
    check(out.answer() == "staged", || format!("run 1: {out:?}"))?;
    let config = fx.ws.join("deep/a/b/c/x/.git/config");
    check(config.exists(), || {
        format!("run 1's deep repository was swept already: {}", out.stderr)
    })?;
    // The user's own repository, with a hook, made between the runs.
    git(fx, "", &["init", "-q", "tools/own"]).map_err(|e| e.to_string())?;
    let own_hook = fx.ws.join("tools/own/.git/hooks/pre-commit");
    std::fs::write(&own_hook, "#!/bin/sh\nexit 0\n").map_err(|e| e.to_string())?;
    let out = sh(
        fx,
        "mkdir -p lib/sub && mv deep/a/b/c/x/.git lib/sub/.git && echo moved",
    );
    check(out.answer() == "moved", || format!("run 2: {out:?}"))?;
    check(
        fx.ws.join("lib/sub/.git/HEAD").exists() && own_hook.exists(),
        || {
            format!(
                "the repository's HEAD or the user's hook is gone: {}",
                out.stderr
            )
        },
    )?;
    config_swept_and_real(fx, "lib/sub/.git/config", "lib/sub", &mark, &out)
}

/// After a run that planted `mark`'s `core.fsmonitor` in the config at
/// `config` (relative to the workspace): it was moved aside, the user's
/// `git status` in `dir` runs nothing, and, put back, it runs there
/// (the control: the hole is real).
fn config_swept_and_real(
    fx: &Fx,
    config: &str,
    dir: &str,
    mark: &str,
    run: &crate::fixture::Out,
) -> Result<(), String> {
    let config = fx.ws.join(config);
    let aside = config.with_file_name("config.sbx-blocked");
    check(!config.exists() && aside.exists(), || {
        format!("{} stayed: {}", config.display(), run.stderr)
    })?;
    let _ = git(fx, dir, &["status", "--short"]);
    check(!Path::new(mark).exists(), || {
        format!("git status in {dir:?} ran the planted core.fsmonitor")
    })?;
    std::fs::rename(&aside, &config).map_err(|e| e.to_string())?;
    let _ = git(fx, dir, &["status", "--short"]);
    check(Path::new(mark).exists(), || {
        "control: the restored config did not run".into()
    })
}

/// git takes a directory for a git directory with a `HEAD` link, or
/// `objects` and `refs` through links, where sbx looked only for a
/// file and two directories. In one run the command makes `sub` with
/// its `refs` a link and a config whose `core.worktree` is `.` and
/// whose `core.fsmonitor` runs a program: after the run the config is
/// moved aside, and the user's `git status` in `sub/src` runs nothing
/// (old: it ran). Control: put back, it runs.
pub fn git_dir_with_linked_refs_is_swept(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_dir_with_linked_refs_is_swept")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "mkdir -p sub/objects sub/r sub/src && ln -s r sub/refs && \
             echo 'ref: refs/heads/main' > sub/HEAD && \
             printf '[core]\\n\\trepositoryformatversion = 0\\n\\tworktree = .\\n' > sub/config && \
             {} >> sub/config && echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.answer() == "planted", || format!("the run: {out:?}"))?;
    config_swept_and_real(fx, "sub/config", "sub/src", &mark, &out)
}

/// A submodule entry deeper than the walk, added in one run while
/// nothing is there, and a repository with a planted `core.fsmonitor`
/// made deeper still in the same run; the next run leaves the index
/// alone and moves the repository to the entry. Its files are older
/// than that run, but it was not there at launch: its config is moved
/// aside, and the user's `git status` at the top runs nothing (old: it
/// ran). Control: put back, it runs there.
pub fn git_repo_moved_to_an_old_entry_is_swept(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_repo_moved_to_an_old_entry_is_swept")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "git init -q e1/e2/e3/e4/sub && {} >> e1/e2/e3/e4/sub/.git/config && \
             git -C e1/e2/e3/e4/sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && \
             git update-index --add --cacheinfo \"160000,$(git -C e1/e2/e3/e4/sub rev-parse HEAD),d1/d2/d3/d4\" && \
             echo staged",
            fsmonitor(&mark)
        ),
    );
    check(out.answer() == "staged", || format!("run 1: {out:?}"))?;
    let _ = std::fs::remove_file(&mark);
    let out = sh(
        fx,
        "mkdir -p d1/d2/d3 && mv e1/e2/e3/e4/sub d1/d2/d3/d4 && echo moved",
    );
    check(out.answer() == "moved", || format!("run 2: {out:?}"))?;
    config_swept_and_real(fx, "d1/d2/d3/d4/.git/config", "", &mark, &out)
}

/// A directory the sweep cannot list (mode 0111: git still goes
/// through it) hides nothing: a repository made in it, within the
/// walk's depth, has its planted config moved aside and the run says
/// what it could not list (old, run as a user: skipped, unsaid).
/// Control: the repository's `HEAD` stays.
pub fn git_repo_in_unlistable_dir_is_swept(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_repo_in_unlistable_dir_is_swept")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "git init -q hid/app && {} >> hid/app/.git/config && chmod 111 hid && echo planted",
            fsmonitor(&mark)
        ),
    );
    let hid = fx.ws.join("hid");
    let perms = |m| std::fs::set_permissions(&hid, std::fs::Permissions::from_mode(m));
    perms(0o755).map_err(|e| e.to_string())?;
    check(out.answer() == "planted", || format!("the run: {out:?}"))?;
    let app = hid.join("app/.git");
    check(!app.join("config").exists(), || {
        format!(
            "the config below the unlistable directory stayed: {}",
            out.stderr
        )
    })?;
    check(app.join("HEAD").exists(), || {
        "the repository's HEAD is gone".into()
    })
}

/// Issue #36: a config made during the run stays only when every key in
/// it is inert. Under the default policy, in a workspace with no
/// repository at launch, the command makes one at the top with a
/// `core.fsmonitor` (the identity check: `.git/config` absent at
/// launch), one below it whose remote has an `uploadpack` (the sweep),
/// and a clean clone-like one. After the run the first two are moved
/// aside, the warnings name the keys, and the user's `git status` and
/// `git fetch` outside run nothing; the clean one keeps its remote
/// (control). Put back, both planted configs run: the holes are real.
pub fn git_config_kept_only_when_inert(fx: &Fx) -> Result<(), String> {
    if Command::new("git").arg("--version").output().is_err() {
        if std::env::var_os("CI").is_none() {
            eprintln!("git_config_kept_only_when_inert: git is not installed, skipped");
            return Ok(());
        }
        return Err("git is not installed".into());
    }
    let mark = fx.path("fsmonitor-ran");
    let pack = fx.path("uploadpack-ran");
    let out = sh(
        fx,
        &format!(
            "git init -q . && {} >> .git/config && \
             git init -q clean && git -C clean remote add origin https://example.invalid/r.git && \
             git -C clean config user.name x && \
             git init -q up && git -C up remote add origin \"$PWD/clean\" && \
             git -C up config remote.origin.uploadpack 'touch {pack}; git-upload-pack' && \
             echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.code == 0 && out.answer() == "planted", || {
        format!("the run: {out:?}")
    })?;
    let _ = std::fs::remove_file(&mark);
    let top = fx.ws.join(".git/config");
    let top_aside = fx.ws.join(".git/config.sbx-blocked");
    let up = fx.ws.join("up/.git/config");
    let up_aside = fx.ws.join("up/.git/config.sbx-blocked");
    check(!top.exists() && top_aside.exists(), || {
        format!("the top's planted config is in place: {}", out.stderr)
    })?;
    check(!up.exists() && up_aside.exists(), || {
        format!("up's planted config is in place: {}", out.stderr)
    })?;
    check(
        out.stderr.contains("it sets core.fsmonitor,")
            && out.stderr.contains("it sets remote.origin.uploadpack,"),
        || format!("the warnings do not name the keys: {}", out.stderr),
    )?;
    // Control: the clean repository keeps its remote.
    let url =
        git(fx, "clean", &["config", "--get", "remote.origin.url"]).map_err(|e| e.to_string())?;
    check(
        String::from_utf8_lossy(&url.stdout).trim() == "https://example.invalid/r.git",
        || format!("the clean config lost its remote: {url:?} {}", out.stderr),
    )?;
    status_runs_nothing(fx, &mark)?;
    let _ = git(fx, "up", &["fetch", "-q", "origin"]);
    check(!Path::new(&pack).exists(), || {
        "git fetch in up ran the planted uploadpack".into()
    })?;
    // Put back, each runs: the holes are real.
    std::fs::rename(&up_aside, &up).map_err(|e| e.to_string())?;
    let _ = git(fx, "up", &["fetch", "-q", "origin"]);
    check(Path::new(&pack).exists(), || {
        "control: the restored uploadpack did not run".into()
    })?;
    std::fs::rename(&top_aside, &top).map_err(|e| e.to_string())?;
    let _ = git(fx, "", &["status", "--short"]);
    check(Path::new(&mark).exists(), || {
        "control: the restored fsmonitor did not run".into()
    })
}

/// Issue #35, two runs. The first writes a git directory's config and
/// hook under another name (`stash/`, no repository there, so nothing is
/// swept); the second only renames: `.git` aside, `stash` in its place,
/// the repository's objects back in. Renaming changes no time of the
/// files inside, but `.git/config` and `.git/hooks` are no longer what
/// they were at launch: both move aside, and the user's next `git
/// status` runs nothing planted. Put back, it does run.
pub fn git_swapped_by_renames(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "git_swapped_by_renames_is_caught")? {
        return Ok(());
    }
    // A nested repository too: only its `.git` is pinned, not `sub`.
    git(fx, "", &["init", "-q", "sub"]).map_err(|e| e.to_string())?;
    let mark = fx.path("fsmonitor-ran");
    let one = sh(
        fx,
        &format!(
            "mkdir -p stash/hooks && {} > stash/config && \
             printf '#!/bin/sh\\ntouch {mark}\\n' > stash/hooks/pre-commit && \
             chmod +x stash/hooks/pre-commit && echo planted",
            fsmonitor(&mark)
        ),
    );
    check(one.code == 0 && one.answer() == "planted", || {
        format!("run 1: {one:?}")
    })?;
    check(fx.ws.join("stash/config").exists(), || {
        format!("run 1 moved the stash: {}", one.stderr)
    })?;
    // The first line: the top's `.git` is pinned (a mount point of
    // itself), so it cannot be renamed at all.
    let pinned = sh(fx, "mv .git .git.orig");
    check(
        pinned.stderr.contains("Device or resource busy") && fx.ws.join(".git/HEAD").exists(),
        || format!("run 2, pinned: {pinned:?}"),
    )?;
    // The second line: renaming the nested repository's parent is not
    // pinned; the identity recorded at launch catches the swap, whose
    // renames change no ctime inside.
    let two = sh(
        fx,
        "mv sub sub.old && mkdir sub && mv stash sub/.git && \
         for f in HEAD objects refs description info; do \
           [ -e sub.old/.git/$f ] && mv sub.old/.git/$f sub/.git/; done; echo swapped",
    );
    check(two.code == 0 && two.answer() == "swapped", || {
        format!("run 2: {two:?}")
    })?;
    let config = fx.ws.join("sub/.git/config");
    let aside = fx.ws.join("sub/.git/config.sbx-blocked");
    check(!config.exists() && aside.exists(), || {
        format!("the swapped-in config is in place: {}", two.stderr)
    })?;
    check(!fx.ws.join("sub/.git/hooks/pre-commit").exists(), || {
        format!("the swapped-in hook is in place: {}", two.stderr)
    })?;
    check(two.stderr.contains("is not what it was at launch"), || {
        two.stderr.clone()
    })?;
    let status = git(fx, "sub", &["status", "--short"]).map_err(|e| e.to_string())?;
    check(
        status.status.success() && !Path::new(&mark).exists(),
        || format!("git status in sub ran the planted monitor: {status:?}"),
    )?;
    // Put back, the swapped-in config runs: the hole is real.
    std::fs::rename(&aside, &config).map_err(|e| e.to_string())?;
    let _ = git(fx, "sub", &["status", "--short"]);
    check(Path::new(&mark).exists(), || {
        "control: the restored config did not run".into()
    })
}

/// The user's `git status` at the top, after the run, succeeds and runs
/// no planted `core.fsmonitor` (which would create `mark`).
fn status_runs_nothing(fx: &Fx, mark: &str) -> Result<(), String> {
    let status = git(fx, "", &["status", "--short"]).map_err(|e| e.to_string())?;
    check(status.status.success(), || {
        format!("git status: {status:?}")
    })?;
    check(!Path::new(mark).exists(), || {
        "git status ran the planted core.fsmonitor".into()
    })
}

/// Issue #35, the sweep outside the grants. The command adds a submodule
/// entry `lnk/lib` to the workspace's index and makes `lnk` a symlink to
/// a repository elsewhere on the machine, whose submodule config changes
/// during the run (its owner at work). After the run that repository is
/// untouched; the sweep still moves what the command planted in a
/// repository inside the workspace (the control).
pub fn sweep_stays_inside(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "after_run_work_stays_inside_the_tree")? {
        return Ok(());
    }
    let other = fx.root.join("outside/other");
    let modules = other.join(".git/modules/lib");
    std::fs::create_dir_all(modules.join("objects")).unwrap();
    std::fs::create_dir_all(modules.join("refs")).unwrap();
    std::fs::create_dir_all(other.join("lib")).unwrap();
    std::fs::write(modules.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(modules.join("config"), "[core]\n").unwrap();
    std::fs::write(other.join("lib/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
    let mark = fx.path("fsmonitor-ran");
    let ready = fx.ws.join("ready");
    let go = fx.ws.join("go");
    let owner = {
        let (ready, go, config) = (ready.clone(), go.clone(), modules.join("config"));
        std::thread::spawn(move || {
            let t = std::time::Instant::now();
            while !ready.exists() && t.elapsed().as_secs() < 50 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            // The owner's own change, during the run.
            std::fs::write(&config, "[core]\n[user]\n\tname = me\n").unwrap();
            std::fs::write(&go, "").unwrap();
        })
    };
    let out = sh(
        fx,
        &format!(
            "git update-index --add --cacheinfo \
               160000,0123456789abcdef0123456789abcdef01234567,lnk/lib && \
             ln -s {other} lnk && git init -q sub && {} >> sub/.git/config && \
             touch ready && while [ ! -e go ]; do sleep 0.02; done; echo planted",
            fsmonitor(&mark),
            other = other.display()
        ),
    );
    let _ = owner.join();
    check(out.code == 0 && out.answer() == "planted", || {
        format!("the run: {out:?}")
    })?;
    check(
        modules.join("config").exists() && other.join("lib/.git").exists(),
        || format!("sbx moved files outside the workspace: {}", out.stderr),
    )?;
    let moved: Vec<_> = std::fs::read_dir(&modules)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("sbx-blocked"))
        .collect();
    check(moved.is_empty(), || format!("{moved:?}: {}", out.stderr))?;
    // Control: inside the workspace the sweep ran.
    check(
        !fx.ws.join("sub/.git/config").exists()
            && fx.ws.join("sub/.git/config.sbx-blocked").exists(),
        || format!("the control was not swept: {}", out.stderr),
    )
}

/// Issue #35, decoys. Every name a counter would try
/// (`commondir.sbx-blocked`, `.2` … `.100`) is made before the
/// `commondir` that points git at a planted repository: it still moves
/// aside, under a name no one could guess, the decoys stay as they were,
/// and the user's next `git status` runs nothing planted.
pub fn quarantine_decoys(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "quarantine_cannot_be_exhausted")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let out = sh(
        fx,
        &format!(
            "echo decoy > .git/commondir.sbx-blocked && i=2 && \
             while [ $i -le 100 ]; do echo decoy > .git/commondir.sbx-blocked.$i; i=$((i+1)); done && \
             git init -q --bare \"$PWD/evil.git\" && {} >> evil.git/config && \
             printf '%s\\n' \"$PWD/evil.git\" > .git/commondir && echo planted",
            fsmonitor(&mark)
        ),
    );
    check(out.code == 0 && out.answer() == "planted", || {
        format!("the run: {out:?}")
    })?;
    check(!fx.ws.join(".git/commondir").exists(), || {
        format!("commondir still in place: {}", out.stderr)
    })?;
    let aside: Vec<String> = std::fs::read_dir(fx.ws.join(".git"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("commondir.sbx-blocked-"))
        .collect();
    check(aside.len() == 1, || format!("{aside:?}: {}", out.stderr))?;
    check(out.stderr.contains(&aside[0]), || out.stderr.clone())?;
    // Control: the decoys are as the command left them.
    let decoy = std::fs::read_to_string(fx.ws.join(".git/commondir.sbx-blocked.100"));
    check(decoy.is_ok_and(|d| d == "decoy\n"), || {
        "decoys changed".into()
    })?;
    status_runs_nothing(fx, &mark)
}

/// Issue #35, links. `.vscode` is a symlink to a directory outside the
/// workspace at launch (nothing can be mounted over it): replaced by a
/// real directory holding a task, it moves aside after the run. A run
/// that leaves the link alone leaves it in place (the control).
pub fn protected_link_replaced(fx: &Fx) -> Result<(), String> {
    std::fs::create_dir_all(fx.root.join("outside/vsc")).unwrap();
    let link = fx.ws.join(".vscode");
    std::os::unix::fs::symlink(fx.root.join("outside/vsc"), &link).unwrap();
    let calm = sh(fx, "echo ran");
    check(calm.code == 0 && calm.answer() == "ran", || {
        format!("control run: {calm:?}")
    })?;
    check(
        std::fs::symlink_metadata(&link).is_ok_and(|m| m.is_symlink())
            && !calm.stderr.contains("sbx-blocked"),
        || format!("the untouched link moved: {}", calm.stderr),
    )?;
    let out = sh(
        fx,
        "rm .vscode && mkdir .vscode && echo '{}' > .vscode/tasks.json && echo planted",
    );
    check(out.code == 0 && out.answer() == "planted", || {
        format!("the run: {out:?}")
    })?;
    check(!link.exists(), || {
        format!("the replaced .vscode is in place: {}", out.stderr)
    })?;
    check(
        fx.ws.join(".vscode.sbx-blocked/tasks.json").exists()
            && out.stderr.contains(".vscode.sbx-blocked"),
        || out.stderr.clone(),
    )?;
    check(fx.root.join("outside/vsc").is_dir(), || {
        "the link's target changed".into()
    })
}

/// Issue #35, the sweep's budget. The command makes more directories
/// than the sweep lists, then a repository after them: the run says on
/// stderr (without `--report`) that the search stopped and how much is
/// left unswept. A run without them says nothing of it (the control).
pub fn sweep_budget_said(fx: &Fx) -> Result<(), String> {
    let said = "stopped after 2000 directories";
    let calm = sh(fx, "git init -q zz 2>/dev/null; echo ran");
    check(calm.code == 0 && !calm.stderr.contains(said), || {
        format!("control run: {calm:?}")
    })?;
    let out = sh(fx, "seq 1 2100 | sed 's/^/a/' | xargs mkdir && echo made");
    check(out.code == 0 && out.answer() == "made", || {
        format!("the run: {out:?}")
    })?;
    check(
        out.stderr.contains(said) && out.stderr.contains("unswept"),
        || out.stderr.clone(),
    )
}

/// Issue #35, a stopped terminal. The command plants `.envrc` and
/// `.vscode/tasks.json`, then stops the terminal's output
/// (`tcflow(TCOOFF)`) on the stderr it shares with sbx: sbx still moves
/// both aside and exits, dropping the warnings it cannot write. The
/// control: the command ran (both were created) and exited 0.
pub fn stopped_terminal(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    let probe = std::env::current_exe().unwrap();
    let ws = fx.ws.to_str().unwrap();
    let args = [
        probe.to_str().unwrap(),
        "--probe",
        "plant-and-stop-output",
        ws,
    ];
    let (mut child, _master) = crate::cases::on_terminal(fx, &p, &args);
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed().as_secs() > 30 {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let envrc = fx.ws.join(".envrc.sbx-blocked");
    let vscode = fx.ws.join(".vscode.sbx-blocked/tasks.json");
    check(envrc.exists() && vscode.exists(), || {
        format!(
            "not moved aside: .envrc {}, .vscode {} (sbx: {status:?})",
            envrc.exists(),
            vscode.exists()
        )
    })?;
    check(
        !fx.ws.join(".envrc").exists() && !fx.ws.join(".vscode").exists(),
        || "a planted file is in place".into(),
    )?;
    check(status.is_some_and(|s| s.success()), || {
        format!("sbx did not exit in time, or failed: {status:?}")
    })
}

/// Python runs every `*.pth` in its user site at each start, outside the
/// sandbox. Under a policy that makes home writable, a `.pth` the
/// command writes there is moved aside once the run has ended, as is an
/// existing one it appends to; one that existed before and is unchanged
/// stays, and so does an ordinary module written beside them (the
/// positive controls: the site is writable during the run).
pub fn user_site_pth_swept(fx: &Fx) -> Result<(), String> {
    let site = fx.root.join("home/.local/lib/python3.12/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("keep.pth"), "/opt/lib\n").unwrap();
    std::fs::write(site.join("edited.pth"), "/opt/lib\n").unwrap();
    let p = fx.policy(
        "best_effort",
        "\n[[fs]]\npath = \"~\"\nread = true\nwrite = true\n",
    );
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let at = |name: &str| site.join(name).to_str().unwrap().to_string();
    let out = r(&["write", &at("evil.pth")]);
    expect("write evil.pth in the user site", &out, "OK")?;
    check(
        !site.join("evil.pth").exists() && site.join("evil.pth.sbx-blocked").exists(),
        || format!("evil.pth not moved aside: {}", out.stderr),
    )?;
    check(
        out.stderr.contains(&format!(
            "changed {0}, in Python's user site (Python runs it at its next start, outside \
             the sandbox): moved it to {0}.sbx-blocked",
            at("evil.pth")
        )),
        || out.stderr.clone(),
    )?;
    check(!out.stderr.contains("keep.pth"), || out.stderr.clone())?;
    let out = r(&["append", &at("edited.pth")]);
    expect("append to an existing .pth", &out, "OK")?;
    check(site.join("edited.pth.sbx-blocked").exists(), || {
        format!("edited.pth not moved aside: {}", out.stderr)
    })?;
    let out = r(&["write", &at("module.py")]);
    expect("write a module in the user site", &out, "OK")?;
    check(site.join("module.py").exists(), || out.stderr.clone())?;
    check(!out.stderr.contains("user site"), || out.stderr.clone())?;
    check(
        std::fs::read_to_string(site.join("keep.pth"))
            .ok()
            .as_deref()
            == Some("/opt/lib\n"),
        || "keep.pth changed or moved".into(),
    )
}

/// What `sbx run POLICY` adds from the caller's environment (the
/// directories on `PATH` and where their links lead, certificate
/// bundles) follows no way the command could have changed: a link a run
/// plants in an activated `.venv/bin`, a `PATH` entry or a bundle in the
/// workspace swapped for a link, grants nothing in the next run; nor does
/// a `PATH` directory with a read-only rule of its own that was missing at
/// launch beneath the writable workspace (the run made it). Controls: a
/// bundle outside the workspace is granted and read; a workspace file is
/// read.
pub fn caller_grants_not_steered(fx: &Fx) -> Result<(), String> {
    let p = fx.write_policy(
        "version = 1\n[process]\npresets = [\"system_runtime\", \"developer_toolchains\"]\n\
         [[fs]]\npath = \".\"\nread = true\nwrite = true\n",
    );
    let ws = |rel: &str| fx.ws.join(rel).to_str().unwrap().to_string();
    std::fs::create_dir_all(ws(".venv/bin")).unwrap();
    let outside = fx.path("outside");
    let secret = fx.path("outside/secret");
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        ws(".venv/bin"),
        ws("bin")
    );
    let run = |vars: &[(&str, &str)], probe: &[&str]| {
        let mut args: Vec<OsString> = vec!["run".into(), p.clone().into()];
        args.extend(["--workspace".into(), fx.ws.clone().into(), "--".into()]);
        args.push(std::env::current_exe().unwrap().into());
        args.push("--probe".into());
        args.extend(probe.iter().map(OsString::from));
        fx.sbx_with(&args, None, vars)
    };
    let cert = ws("ca.pem");
    let vars = [("PATH", path.as_str()), ("SSL_CERT_FILE", cert.as_str())];
    // Run 1 plants: a link in the venv, a PATH entry, a bundle.
    expect("read outside", &run(&vars, &["read", &secret]), "ENOENT")?;
    expect(
        "plant in venv",
        &run(&vars, &["symlink", &secret, &ws(".venv/bin/s")]),
        "OK",
    )?;
    expect(
        "plant entry",
        &run(&vars, &["symlink", &outside, &ws("bin")]),
        "OK",
    )?;
    expect(
        "plant bundle",
        &run(&vars, &["symlink", &secret, &cert]),
        "OK",
    )?;
    // Run 2: nothing of it is granted.
    let venv = format!("{}:/usr/local/bin:/usr/bin:/bin", ws(".venv/bin"));
    let entry = format!("{}:/usr/local/bin:/usr/bin:/bin", ws("bin"));
    for (what, vars) in [
        ("venv link", [("PATH", venv.as_str())]),
        ("swapped entry", [("PATH", entry.as_str())]),
        ("bundle", [("SSL_CERT_FILE", cert.as_str())]),
    ] {
        expect(what, &run(&vars, &["read", &secret]), "ENOENT")?;
        expect(
            &format!("{what}: workspace"),
            &run(&vars, &["read", &ws("data")]),
            "OK",
        )?;
    }
    // The workspace seen through a bind mount (root only): the same
    // directories to the kernel, so the same refusal.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let view = fx.root.join("view");
        std::fs::create_dir_all(&view).unwrap();
        let c = |p: &Path| std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        let (src, dst) = (c(&fx.ws), c(&view));
        // SAFETY: C strings; a bind mount undone below.
        let bound = unsafe {
            libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            )
        } == 0;
        if bound {
            let aliased = format!("{}/.venv/bin:/usr/local/bin:/usr/bin:/bin", view.display());
            let out = run(&[("PATH", aliased.as_str())], &["read", &secret]);
            // SAFETY: as above.
            unsafe { libc::umount2(dst.as_ptr(), libc::MNT_DETACH) };
            expect("venv link through a bind mount", &out, "ENOENT")?;
        }
    }
    // A read-only rule does not make its directory the caller's: missing
    // at launch, the writable workspace above let run 1 make it and fill
    // it (old: the most specific rule decided, and the link was followed).
    let ro_rule = fx.write_policy(
        "version = 1\n[process]\npresets = [\"system_runtime\", \"developer_toolchains\"]\n\
         [[fs]]\npath = \".\"\nread = true\nwrite = true\n\
         [[fs]]\npath = \"tools\"\nread = true\nexecute = true\n",
    );
    let run_ro = |vars: &[(&str, &str)], probe: &[&str]| {
        let mut args: Vec<OsString> = vec!["run".into(), ro_rule.clone().into()];
        args.extend(["--workspace".into(), fx.ws.clone().into(), "--".into()]);
        args.push(std::env::current_exe().unwrap().into());
        args.push("--probe".into());
        args.extend(probe.iter().map(OsString::from));
        fx.sbx_with(&args, None, vars)
    };
    let tools = format!("{}:/usr/local/bin:/usr/bin:/bin", ws("tools"));
    let in_tools = [("PATH", tools.as_str())];
    // One run makes the directory and plants in it: the next finds the
    // rule's directory there, read-only to it.
    let mut args: Vec<OsString> = vec!["run".into(), ro_rule.clone().into()];
    args.extend(["--workspace".into(), fx.ws.clone().into(), "--".into()]);
    args.extend(["/bin/sh".into(), "-c".into()]);
    args.push(format!("mkdir '{0}' && ln -s '{1}' '{0}/s'", ws("tools"), secret).into());
    let out = fx.sbx_with(&args, None, &in_tools);
    check(std::fs::read_link(ws("tools/s")).is_ok(), || {
        format!("run 1 did not plant in tools: {}", out.stderr)
    })?;
    expect(
        "tools link",
        &run_ro(&in_tools, &["read", &secret]),
        "ENOENT",
    )?;
    expect(
        "tools link: workspace",
        &run_ro(&in_tools, &["read", &ws("data")]),
        "OK",
    )?;
    // Controls: a bundle outside the workspace is granted, by the same
    // code, and `--report` names what it would not follow.
    let ro = fx.path("ro/file");
    expect(
        "bundle outside",
        &run(&[("SSL_CERT_FILE", ro.as_str())], &["read", &ro]),
        "OK",
    )?;
    let mut args: Vec<OsString> = vec!["run".into(), p.clone().into(), "--report".into()];
    args.extend([
        "--workspace".into(),
        fx.ws.clone().into(),
        "--".into(),
        "true".into(),
    ]);
    let out = fx.sbx_with(&args, None, &vars);
    check(
        out.stderr.contains(&format!(
            "{}: nothing granted and its links not followed",
            ws(".venv/bin")
        )) && out
            .stderr
            .contains(&format!("{cert} not granted (passed on")),
        || {
            format!(
                "--report does not name what it did not follow:\n{}",
                out.stderr
            )
        },
    )
}

/// Under the default policy a workspace inside a repository gets the
/// repository's worktree read-only, and the gitdir its `.git` file
/// names. A run with the wider workspace plants such a file deeper than
/// the after-run sweep looks, naming a secret directory: the next run,
/// in a directory below it, is not granted that directory (old: read
/// through the "linked worktree" grant). Control: the workspace is read.
pub fn gitdir_planted_above_grants_nothing(fx: &Fx) -> Result<(), String> {
    let p = fx.default_policy();
    let deep = fx.ws.join("a1/b/c/d");
    let below = deep.join("e");
    let run = |ws: &Path, cmd: &[&str]| {
        let mut args: Vec<OsString> = vec!["run".into(), p.clone().into()];
        args.extend(["--workspace".into(), ws.into(), "--".into()]);
        args.extend(cmd.iter().map(OsString::from));
        fx.sbx_with(&args, None, &[])
    };
    let plant = format!(
        "mkdir -p '{}' && printf 'gitdir: {}\\n' > '{}/.git'",
        below.display(),
        fx.path("outside"),
        deep.display()
    );
    let out = run(&fx.ws, &["/bin/sh", "-c", &plant]);
    check(deep.join(".git").is_file(), || {
        format!("run 1 did not plant the .git file: {}", out.stderr)
    })?;
    std::fs::write(below.join("mine"), "mine").unwrap();
    let probe = |what: &str| {
        let exe = std::env::current_exe().unwrap();
        let exe = exe.to_str().unwrap();
        run(&below, &[exe, "--probe", "read", what])
    };
    expect(
        "secret through the planted gitdir",
        &probe(&fx.path("outside/secret")),
        "ENOENT",
    )?;
    expect(
        "workspace",
        &probe(below.join("mine").to_str().unwrap()),
        "OK",
    )
}

/// The interpreters sbx grants so that a program can start (`#!`, an
/// ELF's `PT_INTERP`) are named by files the command may have written in
/// an earlier run: a listed command in the workspace whose `#!` names a
/// directory or a file outside the grants gets neither granted (old:
/// `read_file` and `execute` on it, a directory's reaching everything
/// beneath). Controls: a workspace file is read; the same command with
/// `#!/bin/sh` runs.
pub fn exec_chain_not_steered(fx: &Fx) -> Result<(), String> {
    let bin = fx.ws.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let p = fx.policy("best_effort", "[commands.fmt]\n");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let run = |probe: &[&str]| {
        let mut args: Vec<OsString> = vec!["run".into(), p.clone().into()];
        args.extend(["--workspace".into(), fx.ws.clone().into(), "--".into()]);
        args.push(std::env::current_exe().unwrap().into());
        args.push("--probe".into());
        args.extend(probe.iter().map(OsString::from));
        fx.sbx_with(&args, None, &[("PATH", path.as_str())])
    };
    let fmt = bin.join("fmt");
    let secret = fx.path("outside/secret");
    let data = fx.ws.join("data");
    let data = data.to_str().unwrap();
    for named in [fx.path("outside"), secret.clone()] {
        // Planted by an earlier run: the workspace is writable.
        std::fs::write(&fmt, format!("#!{named}\n")).unwrap();
        std::fs::set_permissions(
            &fmt,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        expect(&format!("#!{named}"), &run(&["read", &secret]), "ENOENT")?;
        expect(
            &format!("#!{named}: workspace"),
            &run(&["read", data]),
            "OK",
        )?;
    }
    let out = run(&["read", data]);
    check(
        out.stderr.contains("is not granted") && out.stderr.contains("names it as its interpreter"),
        || format!("no warning for the dropped interpreter:\n{}", out.stderr),
    )?;
    std::fs::write(&fmt, "#!/bin/sh\necho fmt\n").unwrap();
    expect("#!/bin/sh", &run(&["read", data]), "OK")?;

    // A portable artifact run with the workspace named through a
    // symlink: `${WORKSPACE}` is that path, the program's is the real one.
    std::fs::write(&fmt, format!("#!{secret}\n")).unwrap();
    let art = fx.root.join("portable.json");
    let mut args: Vec<OsString> = vec!["compile".into(), p.clone().into()];
    args.extend(["--target", "linux", "--portable", "-o"].map(OsString::from));
    args.push(art.clone().into());
    let made = fx.sbx_with(&args, None, &[("PATH", path.as_str())]);
    check(made.code == 0, || {
        format!("compile --portable: {}", made.stderr)
    })?;
    let alias = fx.root.join("ws-link");
    std::os::unix::fs::symlink(&fx.ws, &alias).unwrap();
    let mut args: Vec<OsString> = vec!["run".into(), "--artifact".into(), art.into()];
    args.extend(["--workspace".into(), alias.into(), "--".into()]);
    args.push(std::env::current_exe().unwrap().into());
    args.extend(["--probe", "read", &secret].map(OsString::from));
    let out = fx.sbx_with(&args, None, &[("PATH", path.as_str())]);
    expect("portable, workspace through a symlink", &out, "ENOENT")?;

    // A listed command outside the workspace with a second name inside
    // it: written through that name, its `#!` changes too.
    let tools = fx.root.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::remove_file(&fmt).unwrap();
    let real = tools.join("fmt");
    std::fs::write(&real, format!("#!{secret}\n")).unwrap();
    std::fs::set_permissions(
        &real,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    std::fs::hard_link(&real, fx.ws.join("fmt-copy")).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", tools.display());
    let mut args: Vec<OsString> = vec!["run".into(), p.clone().into()];
    args.extend(["--workspace".into(), fx.ws.clone().into(), "--".into()]);
    args.push(std::env::current_exe().unwrap().into());
    args.extend(["--probe", "read", &secret].map(OsString::from));
    let out = fx.sbx_with(&args, None, &[("PATH", path.as_str())]);
    expect("hard-linked into the workspace", &out, "ENOENT")
}

/// sbx's state directory holds what sbx itself acts on outside the
/// sandbox (the journal of runs to finish, approvals, records). Beneath a
/// writable rule only the layer's read-only mount keeps it from the
/// command, so `namespaces = "never"` with such a rule is refused (exit
/// 125) instead of letting the command forge a journal entry that a later
/// sbx would replay. Controls: the same rule with the layer runs, and the
/// state directory is hidden there (EACCES); `never` without the rule
/// runs.
pub fn never_with_writable_state_is_refused(fx: &Fx) -> Result<(), String> {
    let home = fx.path("home");
    let state = fx.root.join("home/.local/state/sbx");
    std::fs::create_dir_all(&state).unwrap();
    let rule = format!("[[fs]]\npath = \"{home}\"\nread = true\nwrite = true\n");
    let never = "[linux]\nnamespaces = \"never\"\n";
    let data = fx.ws.join("data");
    let data = data.to_str().unwrap();
    let out = fx.run(
        &fx.policy("best_effort", &format!("{rule}{never}")),
        &[],
        &["read", data],
    );
    check(
        out.code == 125 && out.stderr.contains("sbx's state directory") && out.answer().is_empty(),
        || {
            format!(
                "never with a writable state directory ran: exit {}\n{}",
                out.code, out.stderr
            )
        },
    )?;
    expect(
        "never, no rule",
        &fx.run(&fx.policy("best_effort", never), &[], &["read", data]),
        "OK",
    )?;
    let layered = fx.policy("best_effort", &rule);
    let slot = state.join("forged.slot");
    expect(
        "layer: state",
        &fx.run(&layered, &[], &["create", slot.to_str().unwrap(), "600"]),
        "EACCES",
    )?;
    let mine = fx.root.join("home/mine");
    expect(
        "layer: home",
        &fx.run(&layered, &[], &["create", mine.to_str().unwrap(), "600"]),
        "OK",
    )
}

/// A rule for a path missing at launch, beneath a writable rule: an
/// earlier run can make that path a symlink to anything (`~/.ssh`, the
/// protected `.vscode`), and the next run's rule must not follow it
/// (SBX035: the grant is dropped). Controls: a rule through a link in a
/// directory the command cannot change is followed; the workspace reads.
pub fn rule_link_planted_is_not_followed(fx: &Fx) -> Result<(), String> {
    let home = fx.root.join("home");
    for d in ["shared/pub", ".ssh"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::write(home.join(".ssh/id"), "key").unwrap();
    std::os::unix::fs::symlink(fx.root.join("ro"), home.join("other")).unwrap();
    std::fs::create_dir_all(fx.ws.join(".vscode")).unwrap();
    std::fs::write(fx.ws.join(".vscode/settings.json"), "{}").unwrap();
    let p = fx.policy(
        "best_effort",
        "[[fs]]\npath = \"~/shared\"\nread = true\nwrite = true\n\
         [[fs]]\npath = \"~/shared/docs\"\nread = true\n\
         [[fs]]\npath = \"~/shared/pub\"\nread = true\n\
         [[fs]]\npath = \"~/other\"\nread = true\n\
         [[fs]]\npath = \"out\"\nread = true\nwrite = true\n",
    );
    let s = |p: std::path::PathBuf| p.to_str().unwrap().to_string();
    let key = s(home.join(".ssh/id"));
    let ssh = s(home.join(".ssh"));
    // An artifact compiled while `docs` and `out` are missing (it has no
    // rule for them) and `pub` is a directory (it has one).
    let art = fx.root.join("links.json");
    let made = fx.compile_linux(&p, &art);
    check(made.code == 0, || format!("compile: {}", made.stderr))?;
    // Run 1 plants.
    let r = |probe: &[&str]| fx.run(&p, &[], probe);
    expect("read key", &r(&["read", &key]), "ENOENT")?;
    expect(
        "plant docs",
        &r(&["symlink", &ssh, &s(home.join("shared/docs"))]),
        "OK",
    )?;
    expect(
        "plant out",
        &r(&["symlink", ".vscode", &s(fx.ws.join("out"))]),
        "OK",
    )?;
    // `pub` is pinned while a run lasts (EBUSY); swapped between runs,
    // as a concurrent run with the directory writable could.
    let pubd = home.join("shared/pub");
    std::fs::rename(&pubd, home.join("shared/pub.old")).unwrap();
    std::os::unix::fs::symlink(&ssh, &pubd).unwrap();
    // Run 2: no rule follows its link.
    let out = r(&["read", &key]);
    expect("key through ~/shared", &out, "ENOENT")?;
    check(out.stderr.contains("SBX035"), || {
        format!("no SBX035:\n{}", out.stderr)
    })?;
    let task = s(fx.ws.join("out/tasks.json"));
    expect("task through out", &r(&["create", &task, "600"]), "EROFS")?;
    // The artifact at run time: `pub`'s rule meets the link and drops.
    let out = fx.run_artifact(&art, &["read", &key]);
    expect("artifact: key", &out, "ENOENT")?;
    check(
        out.stderr
            .contains("which the command can change; the rule is dropped"),
        || format!("artifact: no warning for pub:\n{}", out.stderr),
    )?;
    expect(
        "artifact: task",
        &fx.run_artifact(&art, &["create", &task, "600"]),
        "EROFS",
    )?;
    // Controls.
    expect("~/other", &r(&["read", &fx.path("ro/file")]), "OK")?;
    expect("workspace", &r(&["read", &s(fx.ws.join("data"))]), "OK")
}

/// Shapes past the first steered-link check (found by attacking it): a
/// directory with its own read-only rule, missing at launch beneath a
/// writable rule, made by the command with a link in it; a link in a
/// writable directory reached as the second hop of a user's own link;
/// a planted link that would lift the hiding of `~/.ssh` under a rule
/// on home. Controls: home reads; the workspace reads.
pub fn rule_link_chains_are_not_followed(fx: &Fx) -> Result<(), String> {
    let home = fx.root.join("home");
    for d in ["work", ".ssh", ".config"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::write(home.join(".ssh/id"), "key").unwrap();
    std::fs::write(home.join("notes"), "notes").unwrap();
    // The user's own link, into the writable `work` (missing at first).
    std::os::unix::fs::symlink(home.join("work/foo"), home.join(".config/foo")).unwrap();
    let p = fx.policy(
        "best_effort",
        "[[fs]]\npath = \"~\"\nread = true\n\
         [[fs]]\npath = \"~/work\"\nread = true\nwrite = true\n\
         [[fs]]\npath = \"~/work/cache\"\nread = true\n\
         [[fs]]\npath = \"~/work/cache/sub\"\nread = true\n\
         [[fs]]\npath = \"~/.config/foo\"\nread = true\n\
         [[fs]]\npath = \"~/work/keys\"\nread = true\n",
    );
    let s = |p: std::path::PathBuf| p.to_str().unwrap().to_string();
    let key = s(home.join(".ssh/id"));
    let r = |probe: &[&str]| fx.run(&p, &[], probe);
    let hidden = r(&["read", &key]);
    check(hidden.code == 0 && hidden.answer() != "OK", || {
        format!("~/.ssh not hidden at first: {}", hidden.stderr)
    })?;
    let hidden = hidden.answer().to_string();
    // Run 1 plants.
    let ssh = s(home.join(".ssh"));
    // One run makes `cache` (missing at its launch) and a link in it.
    let script = format!(
        "mkdir {c} && ln -s {ssh} {c}/sub",
        c = s(home.join("work/cache"))
    );
    let mut args: Vec<OsString> = vec!["run".into(), p.clone().into()];
    args.extend(["--workspace".into(), fx.ws.clone().into(), "--".into()]);
    args.extend(["/bin/sh", "-c", &script].map(OsString::from));
    let planted = fx.sbx(&args, None);
    check(planted.code == 0, || {
        format!("plant cache/sub: {}", planted.stderr)
    })?;
    expect(
        "plant foo",
        &r(&["symlink", &key, &s(home.join("work/foo"))]),
        "OK",
    )?;
    expect(
        "plant keys",
        &r(&["symlink", &ssh, &s(home.join("work/keys"))]),
        "OK",
    )?;
    // Run 2: still hidden, whichever way.
    expect("key after the plants", &r(&["read", &key]), &hidden)?;
    expect("notes", &r(&["read", &s(home.join("notes"))]), "OK")?;
    expect("workspace", &r(&["read", &s(fx.ws.join("data"))]), "OK")
}
