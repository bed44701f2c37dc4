//! Protected paths (POLICY.md §7a) that git's config reaches only
//! through an include (issue #19).

use crate::cases::protections_exact;
use crate::fixture::{check, expect, Fx};

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
