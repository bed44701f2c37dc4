//! Name resolution and the connection to a checked address. The proxy
//! looks a name up once, checks each address, and connects to an address
//! it checked: a second lookup by the connecting code could return
//! another address (DNS rebinding).

use super::rules::{Allowed, Dest, Reason};
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Where addresses come from.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// The system's resolver (getaddrinfo: /etc/hosts, DNS).
    #[default]
    System,
    /// A fixed table, for tests: names not in it do not resolve. Its
    /// addresses count as named explicitly, so a test may map a name to
    /// this host's loopback; link-local and metadata addresses stay
    /// refused.
    Table(Vec<(String, IpAddr)>),
}

impl Resolver {
    /// A table from `/etc/hosts`-style text: `ADDRESS NAME...` per line,
    /// `#` comments. Errors name the line.
    pub fn parse_table(text: &str) -> Result<Resolver, String> {
        let mut table = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let mut words = line.split_whitespace();
            let Some(addr) = words.next() else { continue };
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| format!("line {}: {addr:?} is not an IP address", n + 1))?;
            let mut any = false;
            for name in words {
                let name = super::rules::normal_host(name)
                    .ok_or_else(|| format!("line {}: {name:?} is not a host name", n + 1))?;
                table.push((name, addr));
                any = true;
            }
            if !any {
                return Err(format!("line {}: an address without a name", n + 1));
            }
        }
        Ok(Resolver::Table(table))
    }

    /// The addresses of `host` (an IP literal is its own address) and
    /// whether they come from the table.
    fn lookup(&self, dest: &Dest) -> Result<(Vec<IpAddr>, bool), Reason> {
        if let Ok(a) = dest.host.parse::<IpAddr>() {
            return Ok((vec![a], false));
        }
        match self {
            Resolver::Table(t) => {
                let found: Vec<IpAddr> = t
                    .iter()
                    .filter(|(n, _)| *n == dest.host)
                    .map(|(_, a)| *a)
                    .collect();
                if found.is_empty() {
                    Err(Reason::Unresolved("not in the resolver table".into()))
                } else {
                    Ok((found, true))
                }
            }
            Resolver::System => {
                let addrs = (dest.host.as_str(), dest.port)
                    .to_socket_addrs()
                    .map_err(|e| Reason::Unresolved(e.to_string()))?;
                let mut out: Vec<IpAddr> = Vec::new();
                for a in addrs {
                    if !out.contains(&a.ip()) {
                        out.push(a.ip());
                    }
                }
                if out.is_empty() {
                    return Err(Reason::Unresolved("no address".into()));
                }
                Ok((out, false))
            }
        }
    }
}

/// Look `dest` up, keep the addresses `allowed` admits, and connect to the
/// first that answers. A refusal names the first address refused.
pub fn connect(
    resolver: &Resolver,
    allowed: &Allowed,
    dest: &Dest,
    timeout: Duration,
) -> Result<TcpStream, Reason> {
    let (addrs, pinned) = resolver.lookup(dest)?;
    let mut refused = None;
    let mut checked = Vec::new();
    for a in addrs {
        match allowed.address(a, pinned) {
            Ok(()) => checked.push(a),
            Err(r) => {
                refused.get_or_insert(r);
            }
        }
    }
    // Any refused address refuses the name: a name that mixes a public
    // address with a special one is a rebinding attempt, and trying the
    // public one first would make the outcome depend on its availability.
    if let Some(r) = refused {
        return Err(r);
    }
    let mut last: Option<io::Error> = None;
    for a in checked {
        match TcpStream::connect_timeout(&SocketAddr::new(a, dest.port), timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(Reason::Unreachable(
        last.map(|e| e.to_string()).unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lines() {
        let Resolver::Table(t) =
            Resolver::parse_table("# test\n127.0.0.1 a.test B.test.\n\n::1 c.test # v6\n").unwrap()
        else {
            panic!()
        };
        assert_eq!(t.len(), 3);
        assert_eq!(t[1].0, "b.test");
        assert_eq!(t[2].1, "::1".parse::<IpAddr>().unwrap());
        assert!(Resolver::parse_table("x a.test")
            .unwrap_err()
            .contains("line 1"));
        assert!(Resolver::parse_table("\n1.2.3.4")
            .unwrap_err()
            .contains("line 2"));
        assert!(Resolver::parse_table("1.2.3.4 a/b").is_err());
    }
}
