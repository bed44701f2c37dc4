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

/// `.git/commondir` names the directory whose hooks and config git uses,
/// for a `.git` directory too. Under the default policy the command makes
/// a bare repository with a `core.fsmonitor` and writes a `commondir`
/// naming it into the workspace's `.git` (absent at launch, so nothing
/// can be mounted over it): once the run has ended the file is moved
/// aside, and the user's next `git status` runs nothing planted. Put
/// back by hand, the same `git status` does run it, so the case would
/// see the hole.
pub fn git_commondir(fx: &Fx) -> Result<(), String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&fx.ws)
            .env("HOME", fx.path("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
    };
    match git(&["init", "-q", "."]) {
        Ok(o) if o.status.success() => {}
        // CI installs git (.ci/prereqs.sh); elsewhere say so and stop.
        _ if std::env::var_os("CI").is_none() => {
            eprintln!("git_commondir_cannot_redirect: git is not installed, skipped");
            return Ok(());
        }
        other => return Err(format!("git init: {other:?}")),
    }
    let mark = fx.path("fsmonitor-ran");
    let script = format!(
        "git init -q --bare \"$PWD/evil.git\" && \
         printf '[core]\\n\\tfsmonitor = \"touch {mark}; false\"\\n' >> evil.git/config && \
         printf '%s\\n' \"$PWD/evil.git\" > .git/commondir && echo planted"
    );
    let p = fx.default_policy();
    let args: Vec<OsString> = [
        "run",
        p.to_str().unwrap(),
        "--workspace",
        fx.ws.to_str().unwrap(),
        "--",
        "/bin/sh",
        "-c",
        &script,
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let out = fx.sbx(&args, None);
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
    let status = git(&["status", "--short"]).map_err(|e| e.to_string())?;
    check(status.status.success(), || {
        format!("git status: {status:?}")
    })?;
    check(!Path::new(&mark).exists(), || {
        "git status ran the planted core.fsmonitor".into()
    })?;
    // Put back, the planted file redirects git: the hole is real.
    std::fs::rename(&aside, &commondir).map_err(|e| e.to_string())?;
    let _ = git(&["status", "--short"]);
    check(Path::new(&mark).exists(), || {
        "control: the restored commondir did not redirect git".into()
    })
}
