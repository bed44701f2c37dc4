//! Environment variables and commands (argv[0] in the allow-list, argv[1..]
//! against the argument prefixes).

use super::Explanation;
use crate::ir::{Command, Ir, Os};
use crate::lint::cover::{args_match, env_matches};
use crate::lint::enforce::{command_notes, note, Enforced, TargetNote};
use crate::lint::origin::Origin;
use crate::lower::paths::normalise;

/// The listed command argv[0] names: by name when it is a bare name, by
/// resolved executable when it is a path (`/opt/x/git` is not `git`).
fn find<'a>(cmds: &'a [Command], argv0: &str) -> Option<&'a Command> {
    if argv0.contains('/') || argv0.contains('\\') {
        let want = normalise(&argv0.replace('\\', "/"));
        cmds.iter()
            .find(|c| c.path.as_deref() == Some(want.as_str()) || c.name == argv0)
    } else {
        cmds.iter().find(|c| c.name == argv0)
    }
}

fn env_targets(for_command: bool) -> Vec<TargetNote> {
    let (e, how) = if for_command {
        (
            Enforced::Cooperative,
            "a command's `envs` are cooperative only: the environment is filtered once, when `sbx run` starts the tool",
        )
    } else {
        (
            Enforced::Exact,
            "`sbx run` filters the environment before it starts the tool",
        )
    };
    ["linux", "macos", "windows"]
        .into_iter()
        .map(|t| note(t, e, how))
        .collect()
}

pub fn env(ir: &Ir, name: &str, command: Option<&str>) -> Explanation {
    let fold = ir.os == Os::Windows;
    let request = match command {
        Some(c) => format!("pass {name} to `{c}`"),
        None => format!("read the environment variable {name}"),
    };
    let targets = env_targets(command.is_some());
    let minimal = ir.env.minimal.iter().find(|p| env_matches(p, name, fold));
    let allowed_by = ir.env.allow.iter().find(|p| env_matches(p, name, fold));
    let base: Option<Origin> = match (minimal, allowed_by) {
        (Some(_), _) => Some(Origin::MinimalEnv),
        (None, Some(p)) => Some(Origin::Env { pattern: p.clone() }),
        (None, None) => None,
    };
    let out = |allowed: bool, rule: Option<Origin>, reason: String| Explanation {
        allowed,
        request: request.clone(),
        rule,
        reason,
        boundary: None,
        targets: targets.clone(),
    };
    let Some(base) = base else {
        return out(
            false,
            None,
            format!("{name} is neither in the minimal set nor allowed by an [[env]] rule"),
        );
    };
    let (Some(c), Some(cmds)) = (command, &ir.commands) else {
        return out(
            true,
            Some(base.clone()),
            format!("{} forwards {name}", base.label()),
        );
    };
    let Some(cmd) = find(cmds, c) else {
        return out(false, None, format!("`{c}` is not in [commands]"));
    };
    let o = Origin::Command {
        name: cmd.name.clone(),
    };
    if base == Origin::MinimalEnv {
        let mut ex = out(
            true,
            Some(base),
            format!("{name} is in the minimal set every program gets"),
        );
        ex.targets = env_targets(false);
        return ex;
    }
    match cmd.envs.iter().find(|e| env_matches(e, name, fold)) {
        Some(_) => out(
            true,
            Some(o.clone()),
            format!("{} lists {name} in its envs", o.label()),
        ),
        None => out(
            false,
            Some(o.clone()),
            format!(
                "the policy forwards {name}, but {} does not list it in its envs",
                o.label()
            ),
        ),
    }
}

pub fn command(ir: &Ir, argv: &[String]) -> Explanation {
    let request = format!("run {}", shell_words(argv));
    let Some(argv0) = argv.first() else {
        return Explanation {
            allowed: false,
            request,
            rule: None,
            reason: "empty command line".into(),
            boundary: None,
            targets: Vec::new(),
        };
    };
    let Some(cmds) = &ir.commands else {
        return Explanation {
            allowed: true,
            request,
            rule: Some(Origin::NoCommands),
            reason: "the policy has no [commands] table: any program may run (the filesystem rules still decide which files are executable)".into(),
            boundary: None,
            targets: vec![
                note("linux", Enforced::Exact, "no exec allow-list: execute rights of the fs rules apply"),
                note("macos", Enforced::Exact, "no exec allow-list: execute rights of the fs rules apply"),
                note("windows", Enforced::Exact, "no exec allow-list"),
            ],
        };
    };
    let Some(c) = find(cmds, argv0) else {
        return Explanation {
            allowed: false,
            request,
            rule: None,
            reason: format!("`{argv0}` is not in [commands]"),
            boundary: None,
            targets: command_notes(None, false),
        };
    };
    let o = Origin::Command {
        name: c.name.clone(),
    };
    let targets = command_notes(c.path.as_deref(), c.args.is_some());
    let ex = |allowed: bool, reason: String| Explanation {
        allowed,
        request: request.clone(),
        rule: Some(o.clone()),
        reason,
        boundary: None,
        targets: targets.clone(),
    };
    let Some(path) = &c.path else {
        return ex(
            false,
            format!(
                "{}: `{}` was not found on PATH when the policy was lowered, so no executable is granted",
                o.label(),
                c.name
            ),
        );
    };
    let args = &argv[1..];
    match &c.args {
        None => ex(true, format!("{} allows {path} with any arguments", o.label())),
        Some(prefixes) => match prefixes.iter().find(|p| args_match(p, args)) {
            Some(p) => ex(
                true,
                format!("{} allows {path} with the argument prefix {p:?}", o.label()),
            ),
            None => ex(
                false,
                format!(
                    "{} lists {path}, but the arguments {args:?} match none of its prefixes {prefixes:?}",
                    o.label()
                ),
            ),
        },
    }
}

fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
