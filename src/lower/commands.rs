//! `[commands]`: programs resolved through PATH, granted read + execute.

use super::*;

/// Resolve `[commands]` through PATH and grant read + execute on each
/// executable. With an allow-list, implicit execute rights (presets, the
/// default policy, process roots) are withdrawn: only the listed programs
/// (plus the sandboxed program, added by the loader) may run.
pub(super) fn lower_commands(
    cx: &mut Ctx,
    policy: &Policy,
    grants: &mut Vec<Grant>,
) -> Option<Vec<ir::Command>> {
    let cmds = policy.commands.as_ref()?;
    for g in grants.iter_mut() {
        if !matches!(g.source, Source::Rule { .. }) {
            g.access.execute = false;
        }
    }
    let mut out = Vec::new();
    for (name, rule) in cmds {
        let path = if cx.resolve {
            let found = resolve_command(name, cx.opts.path_var.as_deref(), &cx.roots.workspace);
            if found.is_none() {
                cx.diags.push(
                    Diagnostic::new(
                        codes::COMMAND_NOT_FOUND,
                        format!("command `{name}` not found on PATH; it cannot be executed"),
                    )
                    .at(rule.loc.clone())
                    .help("install it, fix PATH, or give an absolute path as the command name"),
                );
                cx.notes.push(Precision {
                    rule: format!("commands.{name}"),
                    target: "ir".into(),
                    status: Status::Dropped,
                    reason: "not found on PATH at compile time".into(),
                    advisory: false,
                });
            }
            found
        } else {
            None
        };
        if let Some(p) = &path {
            // Keep the spelling PATH gave (often a symlink) for name-based targets.
            if let Some(g) = cx.grant_abs(
                p,
                Access::READ_EXEC,
                Source::Command { name: name.clone() },
                false,
            ) {
                grants.push(g);
            }
        }
        out.push(ir::Command {
            name: name.clone(),
            path,
            args: rule.value.args.clone(),
            envs: rule.value.envs.clone().unwrap_or_default(),
        });
    }
    Some(out)
}

/// The first executable regular file named `name` on PATH (not
/// canonicalised: the grant keeps both spellings).
pub fn resolve_command(name: &str, path_var: Option<&str>, workspace: &str) -> Option<String> {
    let is_exec = |p: &std::path::Path| -> bool {
        let Ok(m) = std::fs::metadata(p) else {
            return false;
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        }
        #[cfg(not(unix))]
        {
            m.is_file()
        }
    };
    let canon = |p: &std::path::Path| Some(normalise(p.to_str()?));
    if name.contains('/') {
        let p = if name.starts_with('/') {
            name.to_string()
        } else {
            join(workspace, name)
        };
        let p = std::path::Path::new(&p);
        return if is_exec(p) { canon(p) } else { None };
    }
    let var = path_var?;
    for dir in std::env::split_paths(var) {
        if !dir.is_absolute() {
            continue; // a relative PATH entry would depend on the cwd
        }
        let cand = dir.join(name);
        if is_exec(&cand) {
            return canon(&cand);
        }
        if cfg!(windows) {
            let exe = dir.join(format!("{name}.exe"));
            if is_exec(&exe) {
                return canon(&exe);
            }
        }
    }
    None
}
