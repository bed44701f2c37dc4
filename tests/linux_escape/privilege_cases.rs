//! What the command holds besides its grants (POLICY.md §13): no
//! capabilities but those `[linux] capabilities` lists, no nested user
//! namespaces, no program run from a memfd.

use crate::fixture::{check, expect, Fx};

const NEVER: &str = "\n[linux]\nnamespaces = \"never\"\n";

pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The five capability sets the probe prints: inheritable, permitted,
/// effective, bounding, ambient.
fn sets(fx: &Fx, extra: &str) -> Result<[u64; 5], String> {
    let out = fx.run(&fx.policy("best_effort", extra), &[], &["caps"]);
    let v: Vec<u64> = out
        .answer()
        .split_whitespace()
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .collect();
    v.try_into()
        .map_err(|_| format!("caps with {extra:?}: {out:?}"))
}

/// CapInh, CapPrm, CapEff, CapBnd and CapAmb are all empty, whoever runs
/// sbx, with the namespace layer and without; a listed capability is
/// the only one left (in the bounding set, and for root in the
/// permitted and effective sets too), and works.
pub fn no_capabilities(fx: &Fx) -> Result<(), String> {
    let root = root();
    let names = ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"];
    for extra in ["", NEVER] {
        let got = sets(fx, extra)?;
        for (name, v) in names.iter().zip(got) {
            // Unprivileged without a user namespace there is no
            // CAP_SETPCAP to cut the bounding set with; no_new_privs
            // keeps exec from granting any of it.
            let bounding_kept = !root && extra == NEVER && *name == "CapBnd";
            check(v == 0 || bounding_kept, || {
                format!("{name} {v:x} with {extra:?} (all: {got:x?})")
            })?;
        }
    }
    // Positive control: the probe reads real sets (root holds some
    // outside), and a listed capability stays.
    if root {
        let out = fx.unsandboxed(&["caps"]);
        check(
            out.answer().split_whitespace().nth(2) != Some("0000000000000000"),
            || format!("unsandboxed root: {out:?}"),
        )?;
    }
    let chown = "\n[linux]\ncapabilities = [\"CAP_CHOWN\"]\n";
    let got = sets(fx, chown)?;
    let want = if root {
        [0, 1, 1, 1, 0]
    } else {
        [0, 0, 0, 1, 0]
    };
    check(got == want, || format!("CAP_CHOWN kept: {got:x?}"))?;
    if root {
        let file = fx.path("ws/data");
        let none = fx.policy("best_effort", "");
        expect(
            "chown without",
            &fx.run(&none, &[], &["chown", &file, "1234"]),
            "EPERM",
        )?;
        let kept = fx.policy("best_effort", chown);
        expect(
            "chown with CAP_CHOWN",
            &fx.run(&kept, &[], &["chown", &file, "1234"]),
            "OK",
        )?;
    }
    Ok(())
}

/// A user namespace cannot be made: `unshare` and `clone` with
/// `CLONE_NEWUSER` get EPERM, `clone3` ENOSYS, `setns` EPERM; fork and
/// threads still work. `nested_user_namespaces = true` allows them.
pub fn nested_user_namespaces(fx: &Fx) -> Result<(), String> {
    for extra in ["", NEVER] {
        let p = fx.policy("best_effort", extra);
        let run = |probe: &str| fx.run(&p, &[], &[probe]);
        expect(&format!("unshare {extra:?}"), &run("unshare-user"), "EPERM")?;
        expect(&format!("clone {extra:?}"), &run("clone-user"), "EPERM")?;
        expect(&format!("clone3 {extra:?}"), &run("clone3"), "ENOSYS")?;
        expect(&format!("setns {extra:?}"), &run("setns-user"), "EPERM")?;
        expect(
            &format!("fork, thread {extra:?}"),
            &run("fork-thread"),
            "OK",
        )?;
    }
    let on = "\n[linux]\nnested_user_namespaces = true\n";
    for extra in [on.to_string(), format!("{on}namespaces = \"never\"\n")] {
        let p = fx.policy("best_effort", &extra);
        let run = |probe: &str| fx.run(&p, &[], &[probe]);
        expect(&format!("unshare {extra:?}"), &run("unshare-user"), "OK")?;
        expect(&format!("clone {extra:?}"), &run("clone-user"), "OK")?;
        expect(&format!("clone3 {extra:?}"), &run("clone3"), "OK")?;
        expect(&format!("setns {extra:?}"), &run("setns-user"), "EINVAL")?;
    }
    // The real tool, as a user would run it.
    let p = fx.policy("best_effort", "");
    let args = ["exec", "/usr/bin/unshare", "-U", "true"];
    let out = fx.run(&p, &[], &args);
    check(
        out.code != 0 && out.stderr.contains("Operation not permitted"),
        || format!("unshare -U: {out:?}"),
    )?;
    let out = fx.run(&fx.policy("best_effort", on), &[], &args);
    check(out.code == 0, || format!("unshare -U allowed: {out:?}"))
}

/// A memfd lives on an internal mount Landlock does not check: by
/// default, and with `[commands]`, creating one without MFD_NOEXEC_SEAL
/// is refused, and a sealed one cannot be executed by
/// `execveat(AT_EMPTY_PATH)` or `/proc/self/fd/N`. `memfd_exec = true`
/// lets both routes run, `[commands]` or not.
pub fn memfd_exec(fx: &Fx) -> Result<(), String> {
    let refused = [
        fx.policy("best_effort", ""),
        fx.policy("best_effort", "\n[commands.true]\n"),
        fx.policy("best_effort", "\n[linux]\nmemfd_exec = false\n"),
    ];
    let allowed = [
        fx.policy("best_effort", "\n[linux]\nmemfd_exec = true\n"),
        fx.policy(
            "best_effort",
            "\n[linux]\nmemfd_exec = true\n\n[commands.true]\n",
        ),
    ];
    for how in ["execveat", "proc"] {
        for p in &refused {
            let name = p.display();
            expect(
                &format!("plain memfd, {how}, {name}"),
                &fx.run(p, &[], &["memfd-exec", "plain", how]),
                "EACCES",
            )?;
            expect(
                &format!("sealed memfd, {how}, {name}"),
                &fx.run(p, &[], &["memfd-exec", "seal", how]),
                "EACCES",
            )?;
        }
        for p in &allowed {
            let out = fx.run(p, &[], &["memfd-exec", "plain", how]);
            check(out.code == 0 && out.answer().is_empty(), || {
                format!("memfd_exec = true, {how}, {}: {out:?}", p.display())
            })?;
        }
    }
    // The listed program still runs.
    let out = fx.run(&refused[1], &[], &["exec", "/usr/bin/true"]);
    check(out.code == 0 && out.answer().is_empty(), || {
        format!("listed: {out:?}")
    })
}
