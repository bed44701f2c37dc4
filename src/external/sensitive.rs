//! Is an external target sensitive? A target is flagged when it lies under
//! a sensitive path (`~/.ssh/id_rsa`, `~/.ssh`) or contains one (granting
//! `~` reaches `~/.ssh`), using the built-in list plus the policy's own.

use crate::ir::path_within;
use crate::lower::paths::{canonicalise, join, normalise};
use globset::{GlobBuilder, GlobMatcher};

/// The patterns (as written) that `target` hits. `target` is canonical;
/// `~` expands to `home`, both as given and canonicalised; other relative
/// patterns are anchored at `workspace`.
pub fn hits(target: &str, home: &str, workspace: &str, extra: &[String]) -> Vec<String> {
    let homes = {
        let mut h = vec![normalise(home)];
        let c = canonicalise(home).0;
        if !h.contains(&c) {
            h.push(c);
        }
        h
    };
    let mut out = Vec::new();
    let patterns = crate::lower::SENSITIVE_PATHS
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned());
    for pat in patterns {
        let trimmed = pat.trim_end_matches('/');
        let expanded: Vec<String> = if trimmed == "~" {
            homes.clone()
        } else if let Some(rest) = trimmed.strip_prefix("~/") {
            homes.iter().map(|h| join(h, rest)).collect()
        } else if trimmed.starts_with('/') || trimmed.starts_with("**") {
            vec![trimmed.to_string()]
        } else {
            vec![join(workspace, trimmed)]
        };
        if expanded.iter().any(|p| hit(target, p)) && !out.contains(&pat) {
            out.push(pat);
        }
    }
    out
}

fn hit(target: &str, pattern: &str) -> bool {
    let below = |p: &str| -> Option<GlobMatcher> {
        GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .ok()
            .map(|g| g.compile_matcher())
    };
    for p in [pattern.to_string(), format!("{pattern}/**")] {
        if below(&p).is_some_and(|m| m.is_match(target)) {
            return true;
        }
    }
    // The target contains the pattern's fixed part: the grant reaches it.
    let fixed: Vec<&str> = pattern
        .split('/')
        .take_while(|c| !c.contains(['*', '?', '[', '{']))
        .collect();
    let fixed = fixed.join("/");
    fixed.starts_with('/') && fixed != "/" && path_within(&fixed, target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_or_containing_a_sensitive_path() {
        let h = "/home/u";
        let f = |t: &str| hits(t, h, "/w", &[]);
        assert_eq!(f("/home/u/.ssh"), ["~/.ssh/"]);
        assert_eq!(f("/home/u/.ssh/keys"), ["~/.ssh/"]);
        assert_eq!(f("/home/u/.aws/credentials"), ["~/.aws/credentials"]);
        assert_eq!(f("/proj/.env"), ["**/.env"]);
        assert_eq!(f("/proj/.env.local"), ["**/.env.*"]);
        // Granting home (or `/`) reaches every `~/…` entry.
        assert!(f("/home/u").contains(&"~/.ssh/".to_string()));
        assert!(f("/").contains(&"~/.gnupg/".to_string()));
        assert!(f("/home/u/code/fork").is_empty());
        assert!(f("/home/u/.sshx").is_empty());
        assert!(f("/home").contains(&"~/.kube/config".to_string()));
        let extra = ["/srv/secrets/".to_string()];
        assert_eq!(hits("/srv/secrets/db", h, "/w", &extra), ["/srv/secrets/"]);
    }
}
