//! Refused connections: kept for `--report` and the summary at exit,
//! each with the `[[net]]` rule that would allow it.

use super::rules::{Reason, Via};
use super::spelling;
use crate::runtime::denials::toml_str;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// One refused connection. `host` is empty when the request was
/// unreadable.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Refusal {
    pub via: Via,
    pub host: String,
    pub port: u16,
    pub reason: Reason,
}

impl Refusal {
    /// One line: `sbx: proxy refused connect crates.io:80: no [[net]] rule …`.
    pub fn line(&self) -> String {
        if self.via == Via::Dns {
            return format!("sbx: dns refused {} (NXDOMAIN): {}", self.host, self.reason);
        }
        if self.host.is_empty() {
            format!(
                "sbx: proxy refused a {} request: {}",
                self.via.word(),
                self.reason
            )
        } else {
            format!(
                "sbx: proxy refused {} {}: {}",
                self.via.word(),
                host_port(&self.host, self.port),
                self.reason
            )
        }
    }

    /// The rule that would allow it; `None` where a rule should not be
    /// suggested (a deny rule decided, a metadata service, this host's
    /// loopback, or nothing policy can change). Loopback and metadata are
    /// recognised by the host as the client spelled it, since a refusal
    /// for want of a rule comes before any lookup.
    pub fn rule(&self) -> Option<String> {
        match self.reason {
            Reason::NoRule | Reason::Path
                if !self.host.is_empty() && !spelling::special(&self.host) =>
            {
                if self.via == Via::Dns {
                    // A question names no port: the scheme the client
                    // most likely wants, to be changed (`ssh`, a port).
                    return Some(format!(
                        "[[net]]\nhost = {}\nscheme = \"https\" # or the scheme or port the client uses\n",
                        toml_str(&self.host)
                    ));
                }
                let scheme = match self.via {
                    Via::Http => "scheme = \"http\"\n",
                    _ => "",
                };
                Some(format!(
                    "[[net]]\nhost = {}\nport = {}\n{scheme}",
                    toml_str(&self.host),
                    self.port
                ))
            }
            _ => None,
        }
    }
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Where refusals go: a shared list, and stderr as they happen when
/// `echo` is set (`--report`).
#[derive(Debug, Clone, Default)]
pub struct Log {
    list: Arc<Mutex<Vec<Refusal>>>,
    echo: bool,
}

/// Refusals kept per run: a client retrying in a loop must not grow
/// sbx's memory without bound. Later ones are counted, not kept.
const KEEP: usize = 10_000;

impl Log {
    pub fn new(echo: bool) -> Log {
        Log {
            list: Arc::default(),
            echo,
        }
    }

    pub fn push(&self, r: Refusal) {
        if self.echo {
            eprintln!("{}", r.line());
        }
        let mut l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if l.len() < KEEP {
            l.push(r);
        }
    }

    pub fn entries(&self) -> Vec<Refusal> {
        self.list.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The summary at exit: each refused destination once, then the rules
/// that would allow them. Empty when nothing was refused.
pub fn summary(refusals: &[Refusal]) -> String {
    let set: BTreeSet<&Refusal> = refusals.iter().collect();
    if set.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(s, "sbx: the network proxy refused {}:", set.len());
    let mut rules = BTreeSet::new();
    for r in &set {
        let what = match (r.host.as_str(), &r.reason) {
            // SOCKS5 asks for credentials before the destination.
            ("", Reason::Unauthenticated) => "(no destination named)".to_string(),
            ("", _) => "(unreadable request)".to_string(),
            (h, _) if r.via == Via::Dns => h.to_string(),
            (h, _) => host_port(h, r.port),
        };
        let _ = writeln!(s, "  {:<8} {what}: {}", r.via.word(), r.reason);
        rules.extend(r.rule());
    }
    crate::runtime::denials::push_rules(&mut s, &rules);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(via: Via, host: &str, port: u16, reason: Reason) -> Refusal {
        Refusal {
            via,
            host: host.into(),
            port,
            reason,
        }
    }

    #[test]
    fn summary_suggests_rules_that_parse() {
        let list = vec![
            refusal(Via::Connect, "evil.test", 443, Reason::NoRule),
            refusal(Via::Connect, "evil.test", 443, Reason::NoRule),
            refusal(Via::Http, "pypi.test", 80, Reason::Path),
            refusal(Via::Socks, "a\"b", 22, Reason::NoRule),
            refusal(
                Via::Socks,
                "169.254.169.254",
                80,
                Reason::Metadata("x".into()),
            ),
            refusal(Via::Connect, "x.test", 1, Reason::DeniedBy(3)),
            refusal(Via::Http, "", 0, Reason::Malformed("garbage".into())),
            refusal(Via::Socks, "", 0, Reason::Unauthenticated),
        ];
        let s = summary(&list);
        assert!(s.starts_with("sbx: the network proxy refused 7:\n"), "{s}");
        assert!(
            s.contains("  socks5   (no destination named): without this run's proxy credentials"),
            "{s}"
        );
        assert!(
            s.contains("  connect  evil.test:443: no [[net]] rule"),
            "{s}"
        );
        assert!(
            s.contains("(unreadable request): malformed request: garbage"),
            "{s}"
        );
        let rules = s.split("adding):\n\n").nth(1).unwrap();
        let doc: toml::Table = toml::from_str(rules).unwrap();
        let net = doc["net"].as_array().unwrap();
        assert_eq!(net.len(), 3, "{rules}");
        assert!(!rules.contains("169.254"), "no rule for metadata");
        assert!(!rules.contains("x.test"), "no rule against a deny rule");
        assert!(rules.contains("host = \"pypi.test\"\nport = 80\nscheme = \"http\""));
        assert_eq!(summary(&[]), "");
    }

    /// docs/linux.md: no rule is suggested for this host's loopback or a
    /// metadata service, however the client spelled it (the spellings a
    /// resolver turns into those addresses, as the proxy logs them).
    #[test]
    fn no_rule_for_loopback_or_metadata_in_any_spelling() {
        let special = [
            "127.0.0.1",
            "127.0.0.2",
            "127.1",
            "0x7f.1",
            "0x7f000001",
            "017700000001",
            "2130706433",
            "0",
            "0.0.0.0",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "localhost",
            "api.localhost",
            "169.254.169.254",
            "169.254.43518",
            "0xa9fea9fe",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "100.100.100.200",
            "metadata.google.internal",
            "metadata.goog",
        ];
        for host in special {
            for reason in [Reason::NoRule, Reason::Path] {
                let r = refusal(Via::Http, host, 80, reason);
                assert_eq!(r.rule(), None, "{host}");
            }
        }
        // Controls: ordinary names and addresses, including some that
        // only look numeric, still get one.
        for host in [
            "evil.test",
            "93.184.216.34",
            "127.1.example",
            "0x7g.1",
            "1.2.3.4.5",
        ] {
            let r = refusal(Via::Connect, host, 443, Reason::NoRule);
            assert!(r.rule().is_some(), "{host}");
        }
    }

    #[test]
    fn lines_bracket_ipv6() {
        let r = refusal(Via::Socks, "::1", 80, Reason::Loopback("::1".into()));
        assert!(r.line().starts_with("sbx: proxy refused socks5 [::1]:80: "));
    }
}
