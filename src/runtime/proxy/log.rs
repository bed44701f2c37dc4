//! Refused connections: kept for `--report` and the summary at exit,
//! each with the `[[net]]` rule that would allow it.

use super::rules::{Reason, Via};
use super::spelling;
use crate::runtime::denials::toml_str;
use std::collections::{BTreeMap, BTreeSet};
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

    /// [`Refusal::line`] and, where one is suggested, the rule on the
    /// same line: what is printed as it happens.
    pub fn line_with_rule(&self) -> String {
        match self.rule_line() {
            Some(rule) => format!("{}; to allow it, add: {rule}", self.line()),
            None => self.line(),
        }
    }

    /// [`Refusal::rule`] on one line (`[[net]] host = "x" port = 443`),
    /// for a log line or a reason phrase; comments left out.
    pub fn rule_line(&self) -> Option<String> {
        let rule = self.rule()?;
        let parts: Vec<&str> = rule
            .lines()
            .map(|l| l.split(" #").next().unwrap_or(l).trim())
            .filter(|l| !l.is_empty())
            .collect();
        Some(parts.join(" "))
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

/// Which refusals are printed to stderr as they happen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Echo {
    /// None (`--quiet`, and the proxy's own tests): the summary at exit
    /// still lists them.
    #[default]
    Off,
    /// The first [`PER_DESTINATION`] per destination and at most
    /// [`MAX_LINES`] in all; the summary at exit counts the rest.
    Some,
    /// Every one (`--report`).
    All,
}

impl Echo {
    /// `sbx run`'s flags: `--report` prints every refusal, `--quiet` none.
    pub fn new(report: bool, quiet: bool) -> Echo {
        match (report, quiet) {
            (true, _) => Echo::All,
            (false, true) => Echo::Off,
            (false, false) => Echo::Some,
        }
    }
}

/// `--report` or not, for callers without `--quiet`.
impl From<bool> for Echo {
    fn from(report: bool) -> Echo {
        Echo::new(report, false)
    }
}

/// Lines printed per destination while the command runs: a client
/// retrying in a loop shows its refusal, not a screenful of it.
pub const PER_DESTINATION: usize = 2;

/// Lines printed in all while the command runs.
pub const MAX_LINES: usize = 20;

/// Where refusals go: a shared list, and stderr as they happen as
/// [`Echo`] says.
#[derive(Debug, Clone, Default)]
pub struct Log {
    list: Arc<Mutex<Vec<Refusal>>>,
    /// Destinations the proxy connected to (`sbx learn` reads them).
    reached: Arc<Mutex<BTreeSet<(Via, String, u16)>>>,
    shown: Arc<Mutex<Shown>>,
    echo: Echo,
    /// A line could not be written to stderr: no more are tried.
    stuck: Arc<std::sync::atomic::AtomicBool>,
}

/// What was printed as it happened, and what was held back.
#[derive(Debug, Default)]
struct Shown {
    lines: usize,
    by_destination: BTreeMap<(Via, String, u16), usize>,
    held_back: usize,
}

/// Refusals kept per run: a client retrying in a loop must not grow
/// sbx's memory without bound. Later ones are counted, not kept.
const KEEP: usize = 10_000;

impl Log {
    pub fn new(echo: Echo) -> Log {
        Log {
            echo,
            ..Log::default()
        }
    }

    pub fn push(&self, r: Refusal) {
        // Bounded and never panicking: the command shares stderr, and a
        // pipe it filled or closed must not stop the proxy (or sbx,
        // which waits for it before it ends). Once a line could not be
        // written, no more are tried; the summary at the end has them.
        if self.show(&r) && !self.stuck.load(std::sync::atomic::Ordering::Relaxed) {
            let line = r.line_with_rule();
            #[cfg(target_os = "linux")]
            let written = crate::runtime::linux::write_warnings(&[line]);
            #[cfg(not(target_os = "linux"))]
            let written = {
                use std::io::Write;
                writeln!(std::io::stderr(), "{line}").is_ok()
            };
            if !written {
                self.stuck.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let mut l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if l.len() < KEEP {
            l.push(r);
        }
    }

    /// Whether to print `r` now; counts what is held back.
    fn show(&self, r: &Refusal) -> bool {
        let mut s = self.shown.lock().unwrap_or_else(|e| e.into_inner());
        let show = match self.echo {
            Echo::Off => return false,
            Echo::All => true,
            Echo::Some => {
                let key = (r.via, r.host.clone(), r.port);
                let seen = s.by_destination.get(&key).copied().unwrap_or(0);
                let show = seen < PER_DESTINATION && s.lines < MAX_LINES;
                if seen < PER_DESTINATION && s.by_destination.len() < KEEP {
                    s.by_destination.insert(key, seen + 1);
                }
                show
            }
        };
        if show {
            s.lines += 1;
        } else {
            s.held_back += 1;
        }
        show
    }

    /// Refusals not printed as they happened (rate limit), for the
    /// summary at exit.
    pub fn held_back(&self) -> usize {
        self.shown
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .held_back
    }

    /// A destination the proxy connected to; kept up to [`KEEP`].
    pub fn reach(&self, via: Via, host: &str, port: u16) {
        let mut r = self.reached.lock().unwrap_or_else(|e| e.into_inner());
        if r.len() < KEEP {
            r.insert((via, host.to_string(), port));
        }
    }

    /// The destinations reached, as `via host port` lines.
    pub fn reached(&self) -> String {
        let r = self.reached.lock().unwrap_or_else(|e| e.into_inner());
        r.iter()
            .map(|(via, host, port)| format!("{} {host} {port}\n", via.word()))
            .collect()
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
    push_bypass(&mut s, &set);
    crate::runtime::denials::push_rules(&mut s, &rules);
    s
}

/// Programs that went around the proxy, by the name they looked up or
/// the address they dialled (sbx cannot tell which process did), and
/// what to do about it.
fn push_bypass(s: &mut String, set: &BTreeSet<&Refusal>) {
    let listed = |hosts: Vec<String>| {
        let n = hosts.len();
        let mut l: Vec<String> = hosts.into_iter().take(5).collect();
        if n > 5 {
            l.push(format!("{} more", n - 5));
        }
        l.join(", ")
    };
    let looked_up: Vec<String> = set
        .iter()
        .filter(|r| r.via == Via::Dns && r.rule().is_some())
        .map(|r| r.host.clone())
        .collect();
    if !looked_up.is_empty() {
        let _ = writeln!(
            s,
            "sbx: a program looked up {} itself instead of asking the proxy: make it use \
             the proxy variables (HTTPS_PROXY, ALL_PROXY), or allow each name with a \
             [[net]] host rule and the port it connects to",
            listed(looked_up)
        );
    }
    let dialled: Vec<String> = set
        .iter()
        .filter(|r| r.via == Via::Relay && matches!(r.reason, Reason::Unsupported(_)))
        // An address no answer gave; a name refused by its TLS or SSH
        // check was reached by name, and its own line says why.
        .filter(|r| r.host.parse::<std::net::IpAddr>().is_ok())
        .map(|r| host_port(&r.host, r.port))
        .collect();
    if !dialled.is_empty() {
        let _ = writeln!(
            s,
            "sbx: a program connected to {} directly, which reaches nothing in the \
             sandbox: make it use the proxy variables (HTTPS_PROXY, ALL_PROXY), or \
             connect by a name a [[net]] rule allows",
            listed(dialled)
        );
    }
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

    #[test]
    fn summary_names_programs_that_went_around_the_proxy() {
        let list = vec![
            refusal(Via::Dns, "api.test", 0, Reason::NoRule),
            refusal(
                Via::Relay,
                "198.18.9.9",
                443,
                Reason::Unsupported("no relay address".into()),
            ),
            refusal(Via::Connect, "evil.test", 443, Reason::NoRule),
        ];
        let s = summary(&list);
        assert!(
            s.contains("sbx: a program looked up api.test itself instead of asking the proxy: "),
            "{s}"
        );
        assert!(
            s.contains(
                "sbx: a program connected to 198.18.9.9:443 directly, which reaches nothing"
            ),
            "{s}"
        );
        // Control: a refusal through the proxy is no bypass.
        let s = summary(&list[2..]);
        assert!(!s.contains("a program"), "{s}");
        // A name the relay refused for its TLS name was reached by name:
        // not "directly".
        let sni = [refusal(
            Via::Relay,
            "allowed.test",
            443,
            Reason::Unsupported("the TLS name is other.test".into()),
        )];
        let s = summary(&sni);
        assert!(!s.contains("directly"), "{s}");
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
    fn echo_is_rate_limited_per_destination() {
        let log = Log::new(Echo::Some);
        for _ in 0..5 {
            log.push(refusal(Via::Connect, "evil.test", 443, Reason::NoRule));
        }
        log.push(refusal(Via::Connect, "other.test", 443, Reason::NoRule));
        assert_eq!(log.held_back(), 5 - PER_DESTINATION);
        assert_eq!(log.entries().len(), 6, "every refusal is kept");
        // In all, at most MAX_LINES.
        let log = Log::new(Echo::Some);
        for i in 0..MAX_LINES + 3 {
            log.push(refusal(
                Via::Connect,
                &format!("h{i}.test"),
                443,
                Reason::NoRule,
            ));
        }
        assert_eq!(log.held_back(), 3);
        for echo in [Echo::Off, Echo::All] {
            let log = Log::new(echo);
            for _ in 0..5 {
                log.push(refusal(Via::Connect, "evil.test", 443, Reason::NoRule));
            }
            // Under --quiet nothing is held back: nothing was to be shown.
            assert_eq!(log.held_back(), 0, "{echo:?}");
        }
        assert_eq!(Echo::new(false, true), Echo::Off);
        assert_eq!(Echo::new(true, true), Echo::All);
        assert_eq!(Echo::from(false), Echo::Some);
    }

    #[test]
    fn the_line_printed_names_the_rule() {
        let r = refusal(Via::Http, "pypi.test", 80, Reason::NoRule);
        assert_eq!(
            r.line_with_rule(),
            "sbx: proxy refused http pypi.test:80: no [[net]] rule allows this host, port \
             and scheme; to allow it, add: [[net]] host = \"pypi.test\" port = 80 scheme = \"http\""
        );
        let d = refusal(Via::Dns, "api.test", 0, Reason::NoRule);
        assert!(
            d.line_with_rule()
                .ends_with("add: [[net]] host = \"api.test\" scheme = \"https\""),
            "{}",
            d.line_with_rule()
        );
        let l = refusal(Via::Http, "127.0.0.1", 80, Reason::NoRule);
        assert_eq!(l.line_with_rule(), l.line());
    }

    #[test]
    fn lines_bracket_ipv6() {
        let r = refusal(Via::Socks, "::1", 80, Reason::Loopback("::1".into()));
        assert!(r.line().starts_with("sbx: proxy refused socks5 [::1]:80: "));
    }
}
