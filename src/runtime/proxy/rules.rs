//! Which connections the proxy makes: the IR's outbound `[[net]]` rules,
//! deny rules first, then allow rules, on host, port, scheme and (plain
//! HTTP only) path; then which of a name's addresses it may connect to.

use crate::ir::NetRule;
use std::fmt;
use std::net::IpAddr;

/// How the client asked: a plain-HTTP request is seen whole; a tunnel
/// (HTTP CONNECT, SOCKS5) shows only host and port; a client that ignores
/// the proxy looks a name up with the namespace's DNS responder (`Dns`)
/// and connects to the relay address it got (`Relay`), which shows host
/// and port like a tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Via {
    Http,
    Connect,
    Socks,
    Dns,
    Relay,
}

impl Via {
    pub fn word(self) -> &'static str {
        match self {
            Via::Http => "http",
            Via::Connect => "connect",
            Via::Socks => "socks5",
            Via::Dns => "dns",
            Via::Relay => "relay",
        }
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// No allow rule matches host, port and scheme.
    NoRule,
    /// The deny rule `net[N]` matches.
    DeniedBy(usize),
    /// A rule allows host and port, but not this URL path.
    Path,
    /// A link-local or cloud-metadata destination no rule names literally.
    Metadata(String),
    /// This host's own loopback, which no rule names literally.
    Loopback(String),
    /// Another address of this host's own interfaces (its LAN or public
    /// address), which no rule names literally.
    ThisHost(String),
    /// The name does not resolve.
    Unresolved(String),
    /// Every checked address refused the connection or timed out.
    Unreachable(String),
    /// The request could not be read (garbage, too long, too slow).
    Malformed(String),
    /// A well-formed request the proxy does not serve.
    Unsupported(String),
    /// The client did not present the run's token ([`super::auth`]).
    Unauthenticated,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NoRule => f.write_str("no [[net]] rule allows this host, port and scheme"),
            Reason::DeniedBy(i) => write!(f, "denied by net[{i}]"),
            Reason::Path => f.write_str("no [[net]] rule allows this URL path"),
            Reason::Metadata(a) => write!(
                f,
                "{a} is link-local or a cloud metadata service (a rule must name it literally)"
            ),
            Reason::Loopback(a) => write!(
                f,
                "{a} is this host's loopback (a rule must name it literally)"
            ),
            Reason::ThisHost(a) => write!(
                f,
                "{a} is an address of this host's own (a rule must name it literally)"
            ),
            Reason::Unresolved(e) => write!(f, "name not resolved: {e}"),
            Reason::Unreachable(e) => write!(f, "unreachable: {e}"),
            Reason::Malformed(e) => write!(f, "malformed request: {e}"),
            Reason::Unsupported(e) => write!(f, "unsupported: {e}"),
            Reason::Unauthenticated => f.write_str(
                "without this run's proxy credentials (the user and password in \
                 HTTP_PROXY, HTTPS_PROXY and ALL_PROXY)",
            ),
        }
    }
}

/// A destination as the client named it: `host` is lower case, without a
/// trailing dot or IPv6 brackets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dest {
    pub host: String,
    pub port: u16,
}

/// Names that reach a cloud provider's instance metadata.
const METADATA_NAMES: &[&str] = &["metadata.google.internal", "metadata.goog"];

/// The outbound rules, in the IR's order.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    rules: Vec<NetRule>,
}

/// The allow decision for a destination: which rules matched, so the
/// address check can see whether one names the address literally.
#[derive(Debug, Clone)]
pub struct Allowed {
    hosts: Vec<String>,
    /// Deny rules by address, with their index: they also refuse names
    /// that resolve to the address.
    deny_ips: Vec<(IpAddr, usize)>,
}

impl Rules {
    /// Listening (`bind`) rules are the kernel's concern, not the proxy's.
    pub fn new(rules: &[NetRule]) -> Rules {
        Rules {
            rules: rules.iter().filter(|r| !r.bind).cloned().collect(),
        }
    }

    /// The host of the first loopback forward at `port` (issue #36): an
    /// allow rule for this host's loopback, as written.
    pub fn forward_host(&self, port: u16) -> Option<String> {
        use crate::back::landlock::proxy::{forwarded, relay_port};
        self.rules
            .iter()
            .find(|r| forwarded(r) && relay_port(r) == Some(port))
            .map(|r| r.host.clone())
    }

    /// What a relayed connection to `dest` must open with: a TLS
    /// ClientHello naming the host when every allow rule that matches
    /// it is an `https` or `wss` rule, an SSH identification when every
    /// one is an `ssh` rule; nothing when a rule without such a scheme
    /// (or none) matches.
    pub fn relay_check(&self, dest: &Dest) -> super::peek::Check {
        use super::peek::Check;
        let schemes: Vec<Option<&str>> = self
            .rules
            .iter()
            .filter(|r| r.allow && host_matches(&r.host, &dest.host))
            .filter(|r| port_matches(r, Via::Relay, dest.port))
            .map(|r| r.scheme.as_deref())
            .collect();
        let all =
            |f: &dyn Fn(Option<&str>) -> bool| !schemes.is_empty() && schemes.iter().all(|s| f(*s));
        if all(&|s| matches!(s, Some("https" | "wss"))) {
            Check::Tls
        } else if all(&|s| s == Some("ssh")) {
            Check::Ssh
        } else {
            Check::None
        }
    }

    /// Host, port, scheme and path; addresses are checked after lookup
    /// ([`Allowed::address`]). `path` is the plain-HTTP request's path.
    pub fn decide(&self, via: Via, dest: &Dest, path: Option<&str>) -> Result<Allowed, Reason> {
        let hit = |r: &NetRule| {
            host_matches(&r.host, &dest.host)
                && port_matches(r, via, dest.port)
                && scheme_matches(r.scheme.as_deref(), via)
        };
        // Deny rules come first, whatever the order in the file.
        if let Some(r) = self.rules.iter().find(|r| !r.allow && hit(r)) {
            return Err(Reason::DeniedBy(r.index));
        }
        let candidates: Vec<&NetRule> = self.rules.iter().filter(|r| r.allow && hit(r)).collect();
        if candidates.is_empty() {
            return Err(Reason::NoRule);
        }
        // CONNECT and SOCKS carry no path: path_prefix stays cooperative.
        // The relay and the responder serve no rule with a path: a client
        // that ignores the proxy variables would send any path, unseen
        // (and for `http`, plain HTTP the proxy would have checked).
        let matched: Vec<&NetRule> = candidates
            .into_iter()
            .filter(|r| match (via, &r.path_prefix) {
                (Via::Http, Some(pp)) => path.is_some_and(|p| path_within(p, pp)),
                (Via::Relay | Via::Dns, Some(_)) => false,
                _ => true,
            })
            .collect();
        if matched.is_empty() {
            return Err(Reason::Path);
        }
        // Refused before any lookup: the name alone reaches the metadata
        // service on its cloud.
        if is_metadata_name(&dest.host)
            && !matched
                .iter()
                .any(|r| r.host.eq_ignore_ascii_case(&dest.host))
        {
            return Err(Reason::Metadata(dest.host.clone()));
        }
        let deny_ips = self
            .rules
            .iter()
            .filter(|r| !r.allow && port_matches(r, via, dest.port))
            .filter(|r| scheme_matches(r.scheme.as_deref(), via))
            .filter_map(|r| Some((canonical(r.host.parse::<IpAddr>().ok()?), r.index)))
            .collect();
        Ok(Allowed {
            hosts: matched
                .iter()
                .map(|r| r.host.to_ascii_lowercase())
                .collect(),
            deny_ips,
        })
    }
}

impl Allowed {
    /// Whether the proxy may connect to `addr`, one of the addresses the
    /// destination resolved to. `pinned`: the address comes from the
    /// test resolver table, which names it explicitly.
    ///
    /// Only a rule that names a special address literally (the address
    /// itself, `localhost` for loopback, a metadata name for its
    /// link-local address) reaches it: a rule naming an ordinary host
    /// does not, or a name re-pointed at 127.0.0.1 or 169.254.169.254
    /// (DNS rebinding) would reach services on this host or the cloud's
    /// credentials.
    pub fn address(&self, addr: IpAddr, pinned: bool) -> Result<(), Reason> {
        let addr = canonical(addr);
        if let Some((_, i)) = self.deny_ips.iter().find(|(a, _)| *a == addr) {
            return Err(Reason::DeniedBy(*i));
        }
        let literal = |f: &dyn Fn(&str) -> bool| self.hosts.iter().any(|h| f(h));
        let names_ip = literal(&|h| h.parse::<IpAddr>().is_ok_and(|a| canonical(a) == addr));
        match class(addr) {
            // Another address of this host's own reaches what it serves
            // on every address: only a rule naming it reaches it (not
            // `localhost`, nor the test table, which names loopback).
            Class::Public if !names_ip && super::local::this_host(addr) => {
                Err(Reason::ThisHost(addr.to_string()))
            }
            Class::Public => Ok(()),
            Class::Loopback if names_ip || pinned || literal(&|h| h == "localhost") => Ok(()),
            Class::Loopback => Err(Reason::Loopback(addr.to_string())),
            Class::Metadata if names_ip || literal(&|h| METADATA_NAMES.contains(&h)) => Ok(()),
            Class::Metadata => Err(Reason::Metadata(addr.to_string())),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Public,
    /// 127.0.0.0/8, ::1, and the unspecified addresses (a connect to
    /// 0.0.0.0 or :: reaches this host).
    Loopback,
    /// Link-local (169.254.0.0/16, fe80::/10) and metadata services.
    Metadata,
}

/// `addr` as the rules compare it: an IPv6 address that stands for an
/// IPv4 one (mapped, compatible, NAT64) as that IPv4 address, so that a
/// deny rule, a rule naming an address and this host's own addresses
/// match it in every spelling. `::1` and `::` stay as they are.
pub fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(a) if a.is_loopback() || a.is_unspecified() => addr,
        // The well-known NAT64 prefix only: it embeds the IPv4 address
        // in the last 32 bits always; the local-use /48 may embed it
        // elsewhere, so it is an IPv4 address only for refusing
        // ([`class`]), never for matching an allow rule.
        IpAddr::V6(a) => a
            .to_ipv4()
            .or_else(|| nat64(a, false))
            .map_or(addr, IpAddr::V4),
        IpAddr::V4(_) => addr,
    }
}

/// What kind of destination `addr` is; an IPv6 address that stands for
/// an IPv4 one ([`canonical`]) counts as that IPv4 address.
pub fn class(addr: IpAddr) -> Class {
    let v4 = match canonical(addr) {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(a) if a.is_loopback() || a.is_unspecified() => return Class::Loopback,
        IpAddr::V6(a) => nat64(a, true),
    };
    if let Some(a) = v4 {
        let o = a.octets();
        return if a.is_loopback() || a.is_unspecified() || o[0] == 0 {
            Class::Loopback
        } else if a.is_link_local() || o == [100, 100, 100, 200] {
            // 100.100.100.200: Alibaba Cloud's metadata service.
            Class::Metadata
        } else {
            Class::Public
        };
    }
    let IpAddr::V6(a) = addr else {
        unreachable!("IPv4 handled above")
    };
    let s = a.segments();
    // fe80::/10 link-local; fd00:ec2::254 is AWS's IPv6 metadata service.
    if s[0] & 0xffc0 == 0xfe80 || s == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254] {
        Class::Metadata
    } else {
        Class::Public
    }
}

/// The IPv4 address a NAT64 address (64:ff9b::/96, RFC 6052; and the
/// local-use 64:ff9b:1::/48, RFC 8215) translates to: on a NAT64
/// network, 64:ff9b::a9fe:a9fe reaches 169.254.169.254.
/// `local`: the local-use prefix too.
fn nat64(a: std::net::Ipv6Addr, local: bool) -> Option<std::net::Ipv4Addr> {
    let s = a.segments();
    let well_known = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    let local = local && s[..3] == [0x64, 0xff9b, 1];
    (well_known || local).then(|| {
        let o = a.octets();
        std::net::Ipv4Addr::new(o[12], o[13], o[14], o[15])
    })
}

/// A metadata service's name (refused like its address).
pub fn is_metadata_name(host: &str) -> bool {
    METADATA_NAMES.contains(&host)
}

/// `*` any host; `*.d` the subdomains of `d` (not `d` itself); else the
/// same name, or the same address for IP literals.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    let pattern = pattern.trim_end_matches('.');
    if let Some(domain) = pattern.strip_prefix("*.") {
        let (h, d) = (host.as_bytes(), domain.as_bytes());
        return h.len() > d.len() + 1
            && h[h.len() - d.len()..].eq_ignore_ascii_case(d)
            && h[h.len() - d.len() - 1] == b'.';
    }
    match (pattern.parse::<IpAddr>(), host.parse::<IpAddr>()) {
        (Ok(a), Ok(b)) => canonical(a) == canonical(b),
        _ => pattern.eq_ignore_ascii_case(host),
    }
}

/// The rule's port; through the relay, which sees no scheme, a rule
/// with a scheme and no port allows only the scheme's port (`ssh` 22).
fn port_matches(r: &NetRule, via: Via, port: u16) -> bool {
    let p = match via {
        Via::Relay | Via::Dns => crate::back::landlock::proxy::relay_port(r),
        _ => r.port,
    };
    p.is_none_or(|p| p == port)
}

/// `http` and `ws` name plain-HTTP requests, which the proxy sees whole;
/// the other schemes name tunnels; no scheme matches both. The relay sees
/// only a TCP connection to a port, which lowering already set from the
/// scheme (`ssh` is 22, `https` 443): any scheme matches there, as the
/// port does. A DNS question has no port or scheme yet.
fn scheme_matches(scheme: Option<&str>, via: Via) -> bool {
    match scheme {
        None => true,
        _ if matches!(via, Via::Relay | Via::Dns) => true,
        Some("http" | "ws") => via == Via::Http,
        Some(_) => via != Via::Http,
    }
}

/// `path` is `prefix` or beneath it, and cannot mean another path to the
/// server: no `.`/`..` segment and no encoded dot, slash or backslash
/// (a server would resolve `/allowed/../secret`); no `%25`, which a
/// server that decodes twice turns into any of those (`%252e%252e`); no
/// `;`, plain or encoded, which starts a path parameter that Tomcat and
/// Spring drop before routing (`/allowed/..;/secret` is `/secret` there);
/// no empty segment (`//`), which servers merge or route differently.
/// On a segment boundary: `/v1` is `/v1` and `/v1/…`, not `/v1admin`.
fn path_within(path: &str, prefix: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let lower = path.to_ascii_lowercase();
    let refused = ["%2e", "%2f", "%5c", "%25", "%3b", "\\", ";", "//"];
    if refused.iter().any(|r| lower.contains(r)) {
        return false;
    }
    if path.split('/').any(|seg| seg == "." || seg == "..") {
        return false;
    }
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || prefix.ends_with('/'))
}

/// `host` as the rules compare it: lower case, no trailing dot, IPv6
/// without brackets; `None` for something that is not a host name or an
/// IP address.
pub fn normal_host(host: &str) -> Option<String> {
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().ok().map(|a| a.to_string());
    }
    if let Ok(a) = host.parse::<IpAddr>() {
        return Some(a.to_string());
    }
    let h = host.strip_suffix('.').unwrap_or(host);
    let ok = !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|l| !l.is_empty() && l.len() <= 63)
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    ok.then(|| h.to_ascii_lowercase())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An allow rule for `host` (and `port`), as the proxy's tests write them.
    pub(crate) fn rule(index: usize, host: &str, port: Option<u16>) -> NetRule {
        NetRule {
            index,
            file: String::new(),
            line: 0,
            column: 0,
            host: host.into(),
            scheme: None,
            port,
            path_prefix: None,
            bind: false,
            allow: true,
        }
    }

    fn dest(host: &str, port: u16) -> Dest {
        Dest {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn hosts_wildcards_and_ports() {
        let rules = Rules::new(&[
            rule(0, "crates.io", Some(443)),
            rule(1, "*.example.com", None),
        ]);
        let ok = |h: &str, p| rules.decide(Via::Connect, &dest(h, p), None).is_ok();
        assert!(ok("crates.io", 443));
        assert!(!ok("crates.io", 80), "port mismatch");
        assert!(!ok("static.crates.io", 443), "exact host only");
        assert!(ok("a.example.com", 1));
        assert!(ok("a.b.example.com", 8443));
        assert!(!ok("example.com", 443), "*.d is the subdomains of d");
        assert!(!ok("badexample.com", 443));
        assert!(!ok("example.com.evil.net", 443));
        assert_eq!(
            rules
                .decide(Via::Socks, &dest("evil.net", 443), None)
                .unwrap_err(),
            Reason::NoRule
        );
    }

    #[test]
    fn deny_rules_come_first() {
        let mut deny = rule(1, "secret.example.com", None);
        deny.allow = false;
        let rules = Rules::new(&[rule(0, "*.example.com", None), deny]);
        assert_eq!(
            rules
                .decide(Via::Connect, &dest("secret.example.com", 443), None)
                .unwrap_err(),
            Reason::DeniedBy(1)
        );
        assert!(rules
            .decide(Via::Connect, &dest("open.example.com", 443), None)
            .is_ok());
    }

    #[test]
    fn deny_rules_by_address_apply_to_resolved_names() {
        let mut deny = rule(1, "203.0.113.7", None);
        deny.allow = false;
        let rules = Rules::new(&[rule(0, "*", Some(443)), deny]);
        let a = rules
            .decide(Via::Connect, &dest("api.example.com", 443), None)
            .unwrap();
        assert_eq!(
            a.address("203.0.113.7".parse().unwrap(), false),
            Err(Reason::DeniedBy(1))
        );
        assert!(a.address("203.0.113.8".parse().unwrap(), false).is_ok());
        // In every IPv6 spelling of it: mapped, and NAT64 (a DNS64
        // network answers AAAA with 64:ff9b::/96).
        for six in ["::ffff:203.0.113.7", "64:ff9b::cb00:7107"] {
            assert_eq!(
                a.address(six.parse().unwrap(), false),
                Err(Reason::DeniedBy(1)),
                "{six}"
            );
        }
        assert_eq!(
            canonical("64:ff9b::cb00:7107".parse().unwrap()),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            canonical("::1".parse().unwrap()),
            "::1".parse::<IpAddr>().unwrap()
        );
        // The local-use /48 is no IPv4 address for matching (it may embed
        // one elsewhere), only for refusing loopback and metadata.
        let local = "64:ff9b:1:abcd::cb00:7107".parse().unwrap();
        assert_eq!(canonical(local), local);
    }

    #[test]
    fn schemes_split_plain_http_from_tunnels() {
        let mut http = rule(0, "a.test", None);
        http.scheme = Some("http".into());
        let mut https = rule(1, "b.test", None);
        https.scheme = Some("https".into());
        let rules = Rules::new(&[http, https]);
        let ok = |via, h: &str| rules.decide(via, &dest(h, 80), Some("/")).is_ok();
        assert!(ok(Via::Http, "a.test"));
        assert!(!ok(Via::Connect, "a.test"), "a tunnel is not plain HTTP");
        assert!(!ok(Via::Http, "b.test"), "https is not plain HTTP");
        assert!(ok(Via::Connect, "b.test"));
        assert!(ok(Via::Socks, "b.test"));
    }

    #[test]
    fn the_relay_holds_a_scheme_rule_to_its_port() {
        let mut ssh = rule(0, "git.test", None);
        ssh.scheme = Some("ssh".into());
        let mut deny = rule(1, "secret.git.test", None);
        deny.scheme = Some("ssh".into());
        deny.allow = false;
        let rules = Rules::new(&[ssh, deny, rule(2, "*.git.test", Some(443))]);
        let relay = |h: &str, p| rules.decide(Via::Relay, &dest(h, p), None).map(|_| ());
        assert_eq!(relay("git.test", 22), Ok(()));
        assert_eq!(relay("git.test", 443), Err(Reason::NoRule));
        assert_eq!(relay("secret.git.test", 22), Err(Reason::DeniedBy(1)));
        assert_eq!(
            relay("secret.git.test", 443),
            Ok(()),
            "the deny rule is ssh's"
        );
        // Through the proxy, a scheme rule keeps any port (as before).
        assert!(rules
            .decide(Via::Socks, &dest("git.test", 2222), None)
            .is_ok());
    }

    #[test]
    fn path_prefix_on_plain_http_only() {
        let mut r = rule(0, "pypi.test", None);
        r.path_prefix = Some("/simple/".into());
        let rules = Rules::new(&[r]);
        let d = dest("pypi.test", 80);
        let http = |p: &str| rules.decide(Via::Http, &d, Some(p)).map(|_| ());
        assert_eq!(http("/simple/pkg/"), Ok(()));
        assert_eq!(http("/simple/pkg/?x=1"), Ok(()));
        assert_eq!(http("/admin"), Err(Reason::Path));
        assert_eq!(http("/simple/../admin"), Err(Reason::Path));
        assert_eq!(http("/simple/%2e%2e/admin"), Err(Reason::Path));
        assert_eq!(http("/simple/x%2Fy"), Err(Reason::Path));
        assert_eq!(http("/simple\\..\\admin"), Err(Reason::Path));
        // Path parameters, double encoding and empty segments.
        for trick in [
            "/simple/..;/admin",
            "/simple/pkg;jsessionid=1",
            "/simple/%3B/admin",
            "/simple/%252e%252e/admin",
            "/simple/%25",
            "/simple//admin",
            "/simple/pkg//",
        ] {
            assert_eq!(http(trick), Err(Reason::Path), "{trick}");
        }
        // A `;` or `%25` in the query is the server's business, not a path.
        assert_eq!(http("/simple/pkg/?a=1;b=%25"), Ok(()));
        assert!(rules.decide(Via::Connect, &d, None).is_ok(), "cooperative");
        // The relay and the responder cannot see a path: not theirs.
        assert_eq!(
            rules.decide(Via::Relay, &d, None).map(|_| ()),
            Err(Reason::Path)
        );
        assert!(rules.decide(Via::Dns, &d, None).is_err());
        // On a segment boundary.
        let mut v1 = rule(0, "api.test", Some(80));
        v1.path_prefix = Some("/v1".into());
        let rules = Rules::new(&[v1]);
        let d = dest("api.test", 80);
        let http = |p: &str| rules.decide(Via::Http, &d, Some(p)).map(|_| ());
        assert_eq!(http("/v1"), Ok(()));
        assert_eq!(http("/v1/users?q=1"), Ok(()));
        assert_eq!(http("/v1?q=1"), Ok(()));
        assert_eq!(http("/v1admin"), Err(Reason::Path));
    }

    #[test]
    fn address_classes() {
        let c = |s: &str| class(s.parse().unwrap());
        assert_eq!(c("127.0.0.1"), Class::Loopback);
        assert_eq!(c("127.8.9.1"), Class::Loopback);
        assert_eq!(c("0.0.0.0"), Class::Loopback);
        assert_eq!(c("::1"), Class::Loopback);
        assert_eq!(c("::"), Class::Loopback);
        assert_eq!(c("::ffff:127.0.0.1"), Class::Loopback);
        assert_eq!(c("169.254.169.254"), Class::Metadata);
        assert_eq!(c("::ffff:169.254.169.254"), Class::Metadata);
        assert_eq!(c("169.254.170.2"), Class::Metadata);
        assert_eq!(c("100.100.100.200"), Class::Metadata);
        assert_eq!(c("fe80::1"), Class::Metadata);
        assert_eq!(c("febf::1"), Class::Metadata);
        assert_eq!(c("fd00:ec2::254"), Class::Metadata);
        assert_eq!(c("64:ff9b::a9fe:a9fe"), Class::Metadata);
        assert_eq!(c("64:ff9b::7f00:1"), Class::Loopback);
        assert_eq!(c("64:ff9b:1::a9fe:a9fe"), Class::Metadata);
        assert_eq!(c("64:ff9b::5db8:d822"), Class::Public);
        assert_eq!(c("93.184.216.34"), Class::Public);
        assert_eq!(c("2606:4700::1"), Class::Public);
        assert_eq!(c("fec0::1"), Class::Public);
    }

    #[test]
    fn special_addresses_need_a_literal_rule() {
        let rules = Rules::new(&[
            rule(0, "*", Some(80)),
            rule(1, "ok.test", Some(80)),
            rule(2, "127.0.0.1", Some(8080)),
            rule(3, "localhost", Some(9000)),
            rule(4, "169.254.169.254", Some(80)),
        ]);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let md: IpAddr = "169.254.169.254".parse().unwrap();
        let at = |h: &str, p| rules.decide(Via::Connect, &dest(h, p), None).unwrap();
        // A name re-pointed at loopback or metadata (rebinding).
        assert!(matches!(
            at("ok.test", 80).address(lo, false),
            Err(Reason::Loopback(_))
        ));
        assert!(at("ok.test", 80).address(lo, true).is_ok(), "pinned");
        assert!(matches!(
            at("ok.test", 80).address(md, true),
            Err(Reason::Metadata(_))
        ));
        assert!(at("127.0.0.1", 8080).address(lo, false).is_ok());
        assert!(at("localhost", 9000).address(lo, false).is_ok());
        assert!(at("169.254.169.254", 80).address(md, false).is_ok());
        assert!(matches!(
            at("anything.test", 80).address("::ffff:169.254.169.254".parse().unwrap(), false),
            Err(Reason::Metadata(_))
        ));
    }

    /// This host's own addresses beside loopback (a LAN address that a
    /// service listening on every address answers at) are loopback to
    /// the proxy: a wildcard rule or a re-pointed name does not reach
    /// them; a rule naming the address does.
    #[test]
    fn this_hosts_own_addresses_need_a_literal_rule() {
        let Some(own) = super::super::local::addresses()
            .into_iter()
            .find(|a| class(*a) == Class::Public)
        else {
            println!("SKIPPED: no interface has an ordinary address");
            return;
        };
        let text = own.to_string();
        let rules = Rules::new(&[rule(0, "*", Some(80)), rule(1, &text, Some(81))]);
        let at = |h: &str, p| rules.decide(Via::Connect, &dest(h, p), None).unwrap();
        assert!(matches!(
            at("rebound.test", 80).address(own, false),
            Err(Reason::ThisHost(_))
        ));
        assert!(matches!(
            at(&text, 80).address(own, false),
            Err(Reason::ThisHost(_))
        ));
        assert!(at(&text, 81).address(own, false).is_ok());
        // Control: an address of no interface here.
        assert!(at("far.test", 80)
            .address("203.0.113.77".parse().unwrap(), false)
            .is_ok());
    }

    #[test]
    fn host_names_are_checked_and_normalised() {
        assert_eq!(normal_host("Crates.IO.").as_deref(), Some("crates.io"));
        assert_eq!(normal_host("[::1]").as_deref(), Some("::1"));
        assert_eq!(
            normal_host("::ffff:1.2.3.4").as_deref(),
            Some("::ffff:1.2.3.4")
        );
        for bad in [
            "", ".", "a..b", "a b", "a/b", "a@b", "[::1", "é.test", "a:1",
        ] {
            assert_eq!(normal_host(bad), None, "{bad:?}");
        }
        assert_eq!(normal_host(&"a".repeat(254)), None);
        assert!(host_matches("::FFFF:127.0.0.1", "127.0.0.1"));
        assert!(host_matches("*.Example.COM", "x.example.com"));
    }
}
