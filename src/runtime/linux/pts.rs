//! The new root's own pseudo-terminals (issue #36): a private `devpts`
//! instance at `/dev/pts` and `/dev/ptmx` leading into it, so that tmux,
//! `script`, `ssh -t`, editors and REPLs can open terminals while the
//! host's (`/dev/pts/N` of the user's other sessions) do not exist in the
//! sandbox.
//!
//! Only where the policy lets the command use its terminal: the new root
//! shows `/dev/tty` (the `system_runtime` preset grants it). A rule that
//! names `/dev` itself, `/dev/pts` or `/dev/ptmx` shows the host's, as
//! it asks.

use crate::back::landlock::rights::FsSet;

pub const PTS: &str = "/dev/pts";
const TTY: &str = "/dev/tty";

/// Whether a new root holding these rule paths gets the private
/// instance.
pub fn wanted<'a>(mut paths: impl Iterator<Item = &'a str> + Clone) -> bool {
    let host_named = |p: &str| {
        p == "/dev"
            || p == "/"
            || crate::ir::path_within(p, PTS)
            || crate::ir::path_within(p, "/dev/ptmx")
    };
    paths.clone().any(|p| p == TTY) && !paths.any(host_named)
}

/// The Landlock rule the command adds on the fresh `/dev/pts` once it is
/// mounted (its inodes are new, as `/proc`'s are): the rights `/dev/tty`
/// has, and listing, which `ttyname()` and tmux use to find a terminal's
/// name.
pub fn rule<'a>(
    mut rules: impl Iterator<Item = (&'a str, FsSet)> + Clone,
) -> Option<(String, u64)> {
    if !wanted(rules.clone().map(|(p, _)| p)) {
        return None;
    }
    let (_, tty) = rules.find(|(p, _)| *p == TTY)?;
    let list = FsSet::named("read_dir").unwrap_or(FsSet::EMPTY);
    Some((PTS.to_string(), tty.or(list).0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_with_the_terminal_and_not_over_a_host_grant() {
        assert!(wanted(["/usr", "/dev/tty", "/dev/null"].into_iter()));
        assert!(!wanted(["/usr", "/dev/null"].into_iter()));
        assert!(!wanted(["/dev/tty", "/dev"].into_iter()));
        assert!(!wanted(["/dev/tty", "/dev/pts/3"].into_iter()));
        assert!(!wanted(["/dev/tty", "/dev/ptmx"].into_iter()));
    }

    #[test]
    fn the_rule_has_the_terminals_rights_and_listing() {
        let tty = FsSet::named("read_file")
            .unwrap()
            .or(FsSet::named("write_file").unwrap());
        let (path, bits) = rule([("/dev/tty", tty), ("/usr", FsSet::all())].into_iter()).unwrap();
        assert_eq!(path, "/dev/pts");
        assert_eq!(
            FsSet(bits).names(),
            tty.or(FsSet::named("read_dir").unwrap()).names()
        );
        assert!(rule([("/usr", FsSet::all())].into_iter()).is_none());
    }
}
