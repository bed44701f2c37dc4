//! Known host sockets beneath a broad grant (POLICY.md §13): a rule on
//! `/run`, `/nix` or `~` (read-only or not: `connect()` on a UNIX socket
//! needs no write right Landlock or a read-only mount checks) would hand
//! the command the Docker or Podman daemon (root on the host), the user's
//! D-Bus session, gpg-agent or the Nix daemon. Where one exists, a rule
//! above it does not name it, and nothing beneath it is granted, it is
//! hidden like a deny rule (an empty mount over it). Naming the path in a
//! rule is consent, and shows it.

use crate::back::landlock::MountRule;
use crate::ir::path_within;

/// Places on the host that hold sockets of more privileged or other
/// programs. Absolute, or beneath the home directory (`~/`).
const KNOWN: &[&str] = &[
    // Container engines: access is root on the host.
    "/run/docker.sock",
    "/run/docker",
    "/run/containerd",
    "/run/podman",
    "/run/crio",
    "/run/k3s",
    "~/.docker/run",
    "~/.docker/desktop",
    "~/.colima",
    "~/.lima",
    "~/.rd",
    "~/.local/share/containers/podman",
    // System and session buses, per-user runtime directories (D-Bus,
    // PulseAudio, Wayland, gpg-agent, podman, systemd --user).
    "/run/dbus",
    "/run/user",
    "/run/systemd/private",
    "/run/snapd.socket",
    "/run/snapd-snap.socket",
    // The Nix daemon (the toolchains preset grants /nix).
    "/nix/var/nix/daemon-socket",
    // gpg-agent's sockets when they live in the home.
    "~/.gnupg",
];

/// Hidden mounts for the known socket places that exist (`$XDG_RUNTIME_DIR`
/// too) beneath a rule path and are not named by one (`rules`: the
/// plan's rule paths). Each is returned with its canonical path, which
/// is what the rules hold.
pub fn hide(rules: &[&str], home: &str, runtime_dir: Option<&str>) -> Vec<MountRule> {
    let mut out: Vec<MountRule> = Vec::new();
    let places = KNOWN
        .iter()
        .map(|p| match p.strip_prefix("~/") {
            Some(rest) if !home.is_empty() => format!("{}/{rest}", home.trim_end_matches('/')),
            Some(_) => String::new(),
            None => p.to_string(),
        })
        .chain(runtime_dir.map(String::from));
    for place in places {
        if !place.starts_with('/') {
            continue;
        }
        // Only what is there (one lstat for the usual absent place),
        // canonical, as the rules' paths are (a `/var/run` link leads
        // to `/run`).
        if std::fs::symlink_metadata(&place).is_err() {
            continue;
        }
        let Some(path) = crate::canonical::canonicalize(&place)
            .ok()
            .and_then(|p| p.to_str().map(String::from))
        else {
            continue;
        };
        let covered = rules
            .iter()
            .any(|r| path_within(&path, r) && path.as_str() != *r);
        let named = rules.iter().any(|r| path_within(r, &path));
        if covered && !named && !out.iter().any(|m| path_within(&path, &m.path)) {
            out.retain(|m| !path_within(&m.path, &path));
            out.push(MountRule::hidden(path));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_socket_place_under_a_broad_rule_is_hidden_unless_named() {
        let d = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(d.path()).unwrap();
        let home = home.to_str().unwrap();
        std::fs::create_dir_all(format!("{home}/.docker/run")).unwrap();
        std::fs::create_dir_all(format!("{home}/rt")).unwrap();
        let rt = format!("{home}/rt");
        // `~` read: both hidden (the runtime directory too).
        let m = hide(&[home], home, Some(&rt));
        let paths: Vec<&str> = m.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, [format!("{home}/.docker/run"), rt.clone()]);
        assert!(m
            .iter()
            .all(|m| m.kind == crate::back::landlock::MountKind::Hidden));
        // Named (or something beneath it granted): consent, shown.
        let named = format!("{home}/.docker/run");
        assert!(hide(&[home, &named], home, None).is_empty());
        // Not covered, or not there: nothing.
        assert!(hide(&["/usr"], home, Some(&rt)).is_empty());
        assert!(hide(&[home], "/nonexistent-home", None).is_empty());
    }
}
