//! Outbound TCP connections: "would this profile let the process connect
//! to PORT on this host's loopback, or elsewhere?". Only
//! `network-outbound` (and the wildcards that cover it) with `remote`
//! address filters are modelled; anything else matches "maybe".
//!
//! Seatbelt's address strings are `HOST:PORT` where HOST is `*` or
//! `localhost` and PORT is `*` or a number; any other host is an error
//! there, so it is one here too.

use super::read::{error_at, value, Value};
use super::{any, Action, Match, ProfileError};
use crate::sbpl::datum::Datum;
use std::collections::BTreeMap;

/// A TCP connection to ask [`super::Profile::decide_connect`] about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connect {
    /// To this host's loopback (`localhost` to Seatbelt), or elsewhere.
    pub localhost: bool,
    pub port: u16,
}

/// The operation a connection performs.
pub(super) const OUTBOUND: &str = "network-outbound";

#[derive(Debug)]
pub(super) struct NetRule {
    pub action: Action,
    pub line: usize,
    pub operations: Vec<String>,
    /// Empty means "any connection".
    pub filters: Vec<NetFilter>,
}

#[derive(Debug)]
pub(super) enum NetFilter {
    /// `(remote tcp "localhost:80")`; `port` is `None` for `*`.
    /// `family`: `tcp4`, `ip6` and the like, which match "maybe" where
    /// the address matches (the address family is not asked about).
    Tcp {
        localhost_only: bool,
        port: Option<u16>,
        family: Option<String>,
    },
    /// Never a TCP connection (`udp`, `unix-socket`).
    Never,
    All(Vec<NetFilter>),
    Any(Vec<NetFilter>),
    Not(Box<NetFilter>),
    /// Depends on more than the remote address; the text says what.
    Unknown(String),
}

impl NetRule {
    pub fn matches(&self, c: Connect) -> Match {
        if self.filters.is_empty() {
            return Match::Yes;
        }
        any(self.filters.iter().map(|f| f.matches(c)))
    }
}

impl NetFilter {
    fn matches(&self, c: Connect) -> Match {
        match self {
            NetFilter::Tcp {
                localhost_only,
                port,
                family,
            } => {
                if (*localhost_only && !c.localhost) || port.is_some_and(|p| p != c.port) {
                    Match::No
                } else {
                    family
                        .as_ref()
                        .map_or(Match::Yes, |f| Match::Maybe(format!("protocol {f}")))
                }
            }
            NetFilter::Never => Match::No,
            NetFilter::Any(fs) => any(fs.iter().map(|f| f.matches(c))),
            NetFilter::All(fs) => {
                let mut maybe = None;
                for f in fs {
                    match f.matches(c) {
                        Match::No => return Match::No,
                        Match::Maybe(r) => maybe = maybe.or(Some(r)),
                        Match::Yes => {}
                    }
                }
                maybe.map_or(Match::Yes, Match::Maybe)
            }
            NetFilter::Not(f) => match f.matches(c) {
                Match::Yes => Match::No,
                Match::No => Match::Yes,
                maybe => maybe,
            },
            NetFilter::Unknown(what) => Match::Maybe(what.clone()),
        }
    }
}

/// One filter of a network rule.
pub(super) fn filter(
    d: &Datum,
    params: &BTreeMap<String, String>,
) -> Result<NetFilter, ProfileError> {
    let unknown = |what: &str| NetFilter::Unknown(format!("{what} at {}", d.location()));
    let Some(items) = d.as_list() else {
        return Ok(unknown("a variable or constant filter"));
    };
    // `()` has no head and no arguments.
    let args = items.get(1..).unwrap_or_default();
    let nested = |args: &[Datum]| -> Result<Vec<NetFilter>, ProfileError> {
        args.iter().map(|a| filter(a, params)).collect()
    };
    Ok(match d.head() {
        Some("remote") => remote(d, args, params)?,
        // On outbound a local address filter matches the socket's own
        // address, which is the wildcard before the connection binds
        // (sandbox-runtime's note): not a question of the remote address.
        Some("local") => unknown("a (local ...) filter on outbound"),
        Some("require-all") => NetFilter::All(nested(args)?),
        Some("require-any") => NetFilter::Any(nested(args)?),
        Some("require-not") => match args {
            [one] => NetFilter::Not(Box::new(filter(one, params)?)),
            _ => return Err(error_at(d, "require-not takes exactly one filter")),
        },
        Some(other) => unknown(&format!("filter '{other}'")),
        None => unknown("a computed filter"),
    })
}

/// `(remote PROTOCOL "HOST:PORT"...)`; without an address, any.
fn remote(
    d: &Datum,
    args: &[Datum],
    params: &BTreeMap<String, String>,
) -> Result<NetFilter, ProfileError> {
    let Some((proto, addrs)) = args.split_first() else {
        return Err(error_at(d, "remote takes a protocol and addresses"));
    };
    let family = match proto.as_symbol() {
        Some("ip" | "tcp") => None,
        Some(p @ ("ip4" | "ip6" | "tcp4" | "tcp6")) => Some(format!("{p} at {}", d.location())),
        Some("udp" | "udp4" | "udp6" | "unix-socket") => return Ok(NetFilter::Never),
        _ => {
            return Ok(NetFilter::Unknown(format!(
                "unknown protocol at {}",
                d.location()
            )))
        }
    };
    if addrs.is_empty() {
        return Ok(NetFilter::Tcp {
            localhost_only: false,
            port: None,
            family,
        });
    }
    let mut out = Vec::new();
    for a in addrs {
        out.push(address(a, family.clone(), params)?);
    }
    Ok(match out.len() {
        1 => out.pop().expect("one"),
        _ => NetFilter::Any(out),
    })
}

fn address(
    addr: &Datum,
    family: Option<String>,
    params: &BTreeMap<String, String>,
) -> Result<NetFilter, ProfileError> {
    let text = match value(addr, params)? {
        Value::Text(t) => t,
        Value::Unknown(what) => return Ok(NetFilter::Unknown(what)),
    };
    let bad = || error_at(addr, format!("{text:?} is not \"*|localhost:*|PORT\""));
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let localhost_only = match host {
        "*" => false,
        "localhost" => true,
        _ => return Err(bad()),
    };
    let port = match port {
        "*" => None,
        p => Some(p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(bad)?),
    };
    Ok(NetFilter::Tcp {
        localhost_only,
        port,
        family,
    })
}
