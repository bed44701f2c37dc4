//! Protected paths (POLICY.md §7a) that git's config reaches only
//! through an include (issue #19).

use crate::cases::protections_exact;
use crate::fixture::{check, expect, Fx};
use std::ffi::OsString;
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
    let status = git(fx, "", &["status", "--short"]).map_err(|e| e.to_string())?;
    check(status.status.success(), || {
        format!("git status: {status:?}")
    })?;
    check(!Path::new(&mark).exists(), || {
        "git status ran the planted core.fsmonitor".into()
    })?;
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
