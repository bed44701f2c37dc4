//! The DNS responder in the command's network namespace: names a rule
//! allows get a relay address ([`super::book`]), every other name
//! NXDOMAIN and a logged refusal. It answers over UDP and over TCP
//! (each message after its two-byte length, RFC 1035 §4.2.2: resolvers
//! that are configured for TCP, or retry over it), one question per
//! message (what stub resolvers send).
//!
//! A type-A question gets the relay address, a type-AAAA question its
//! IPv6 twin ([`super::book::six`]) when the namespace has the IPv6
//! range; any other type of an allowed name (HTTPS, SVCB, MX, or AAAA
//! without IPv6) an empty answer (NODATA), and a client that gets no
//! IPv6 address for a name uses its IPv4 one. NXDOMAIN is kept for
//! refused names, so that a client does not give up on an allowed name
//! for want of a record of another type.

use super::book::Book;
use super::rules::{normal_host, Dest, Reason, Rules, Via};
use std::net::{IpAddr, Ipv4Addr};

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
const CLASS_IN: u16 = 1;
/// Response codes (RFC 1035 §4.1.1).
const NOERROR: u8 = 0;
const FORMERR: u8 = 1;
const NXDOMAIN: u8 = 3;
const NOTIMP: u8 = 4;
const REFUSED: u8 = 5;
/// Relay addresses do not change during a run.
const TTL: u32 = 300;

/// One question, as read from a query.
#[derive(Debug, PartialEq, Eq)]
pub struct Question {
    pub id: u16,
    /// The query's flags: opcode and RD are echoed.
    pub flags: u16,
    /// As sent, labels joined with dots (not yet checked).
    pub name: String,
    pub qtype: u16,
    pub qclass: u16,
    /// Where the question section ends in the query.
    end: usize,
}

/// Read the header and the one question; `Err(Some(code))` is answered
/// with that code, `Err(None)` dropped (not a query, or too short to
/// carry an id).
pub fn parse(q: &[u8]) -> Result<Question, Option<(u16, u8)>> {
    if q.len() < 12 {
        return Err(None);
    }
    let id = u16::from_be_bytes([q[0], q[1]]);
    let flags = u16::from_be_bytes([q[2], q[3]]);
    if flags & 0x8000 != 0 {
        return Err(None); // a response
    }
    if (flags >> 11) & 0xf != 0 {
        return Err(Some((id, NOTIMP))); // only standard queries
    }
    if u16::from_be_bytes([q[4], q[5]]) != 1 {
        return Err(Some((id, FORMERR)));
    }
    let mut at = 12;
    let mut name = String::new();
    loop {
        let len = usize::from(*q.get(at).ok_or(Some((id, FORMERR)))?);
        at += 1;
        if len == 0 {
            break;
        }
        // No compression in a question with nothing before it.
        if len > 63 || at + len > q.len() || name.len() + len > 254 {
            return Err(Some((id, FORMERR)));
        }
        if !name.is_empty() {
            name.push('.');
        }
        name.extend(q[at..at + len].iter().map(|&b| char::from(b)));
        at += len;
    }
    let rest = q.get(at..at + 4).ok_or(Some((id, FORMERR)))?;
    Ok(Question {
        id,
        flags,
        name,
        qtype: u16::from_be_bytes([rest[0], rest[1]]),
        qclass: u16::from_be_bytes([rest[2], rest[3]]),
        end: at + 4,
    })
}

/// The reply to `query` (whose question `q` is), with `rcode` and an A
/// or AAAA record for `addr` if given.
pub fn reply(query: &[u8], q: &Question, rcode: u8, addr: Option<IpAddr>) -> Vec<u8> {
    let mut out = Vec::with_capacity(q.end + 16);
    out.extend_from_slice(&q.id.to_be_bytes());
    // QR, the opcode and RD as asked, AA (the responder is the authority
    // for what the sandbox may reach), RA.
    let flags = 0x8000 | (q.flags & 0x7900) | 0x0400 | 0x0080 | u16::from(rcode);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&u16::from(addr.is_some()).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&query[12..q.end]);
    if let Some(a) = addr {
        let (kind, data) = match a {
            IpAddr::V4(a) => (TYPE_A, a.octets().to_vec()),
            IpAddr::V6(a) => (TYPE_AAAA, a.octets().to_vec()),
        };
        out.extend_from_slice(&[0xc0, 12]); // the question's name
        out.extend_from_slice(&kind.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&TTL.to_be_bytes());
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(&data);
    }
    out
}

/// Answer DNS over TCP on one connection: length-prefixed queries until
/// the client closes or is silent for the head timeout.
pub fn serve_tcp(mut s: std::net::TcpStream, cx: &super::Cx) {
    use std::io::{Read, Write};
    let names = Names {
        rules: &cx.rules,
        ports: &cx.relay_ports,
        ipv6: cx.relay6,
        book: &cx.book,
    };
    if s.set_read_timeout(Some(cx.options.head_timeout)).is_err() {
        return;
    }
    loop {
        let mut len = [0u8; 2];
        if s.read_exact(&mut len).is_err() {
            return;
        }
        let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if s.read_exact(&mut q).is_err() {
            return;
        }
        let (reply, refused) = names.answer(&q);
        if let Some((name, reason)) = refused {
            cx.refuse(Via::Dns, &name, 0, reason);
        }
        let Some(r) = reply else { return };
        let mut out = (r.len() as u16).to_be_bytes().to_vec();
        out.extend_from_slice(&r);
        if s.write_all(&out).is_err() {
            return;
        }
    }
}

/// A reply carrying only a code, for a query [`parse`] refused.
fn bare(id: u16, rcode: u8) -> Vec<u8> {
    let mut out = id.to_be_bytes().to_vec();
    out.extend_from_slice(&(0x8000u16 | u16::from(rcode)).to_be_bytes());
    out.extend_from_slice(&[0; 8]);
    out
}

/// What the responder decides for a name.
pub struct Names<'a> {
    pub rules: &'a Rules,
    /// The ports the relay listens on.
    pub ports: &'a [u16],
    pub book: &'a Book,
    /// The namespace has the IPv6 relay range: AAAA gets an answer.
    pub ipv6: bool,
}

impl Names<'_> {
    /// The relay address for `name` when a rule allows it at one of the
    /// relay's ports (the same decision the relay makes on connect, so
    /// that a deny rule or a metadata name is refused here already).
    pub fn decide(&self, name: &str) -> Result<Ipv4Addr, Reason> {
        if name.parse::<IpAddr>().is_ok() {
            return Err(Reason::Unsupported("an address, not a name".into()));
        }
        let mut refused = None;
        for &port in self.ports {
            let dest = Dest {
                host: name.to_string(),
                port,
            };
            match self.rules.decide(Via::Relay, &dest, None) {
                Ok(_) => {
                    return self.book.address(name).ok_or_else(|| {
                        Reason::Unsupported(format!(
                            "more than {} names in one run",
                            super::book::MAX_NAMES
                        ))
                    })
                }
                // A reason that names something (a deny rule, metadata)
                // says more than "no rule".
                Err(Reason::NoRule) => {}
                Err(r) => {
                    refused.get_or_insert(r);
                }
            }
        }
        Err(refused.unwrap_or(Reason::NoRule))
    }

    /// The reply to one query, and the refusal to log (with the name as
    /// normalised) if the name was refused.
    pub fn answer(&self, query: &[u8]) -> (Option<Vec<u8>>, Option<(String, Reason)>) {
        let q = match parse(query) {
            Ok(q) => q,
            Err(Some((id, code))) => return (Some(bare(id, code)), None),
            Err(None) => return (None, None),
        };
        if q.qclass != CLASS_IN {
            return (Some(reply(query, &q, REFUSED, None)), None);
        }
        let Some(name) = normal_host(&q.name) else {
            return (Some(reply(query, &q, NXDOMAIN, None)), None);
        };
        match self.decide(&name) {
            Ok(a) if q.qtype == TYPE_A => (Some(reply(query, &q, NOERROR, Some(a.into()))), None),
            Ok(a) if q.qtype == TYPE_AAAA && self.ipv6 => {
                let six = super::book::six(a).into();
                (Some(reply(query, &q, NOERROR, Some(six))), None)
            }
            Ok(_) => (Some(reply(query, &q, NOERROR, None)), None),
            Err(r) => (Some(reply(query, &q, NXDOMAIN, None)), Some((name, r))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::proxy::rules::tests::rule;

    /// A query as a stub resolver sends it.
    pub(crate) fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
        let mut q = id.to_be_bytes().to_vec();
        q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
        for l in name.split('.') {
            q.push(l.len() as u8);
            q.extend_from_slice(l.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&CLASS_IN.to_be_bytes());
        q
    }

    fn rcode(r: &[u8]) -> u8 {
        r[3] & 0xf
    }

    fn answers(r: &[u8]) -> u16 {
        u16::from_be_bytes([r[6], r[7]])
    }

    #[test]
    fn allowed_names_get_a_relay_address_and_others_nxdomain() {
        let mut deny = rule(2, "secret.example.com", None);
        deny.allow = false;
        let rules = Rules::new(&[
            rule(0, "git.test", Some(22)),
            rule(1, "*.example.com", Some(443)),
            deny,
            rule(3, "metadata.google.internal", Some(80)),
        ]);
        let book = Book::default();
        let names = Names {
            rules: &rules,
            ports: &[22, 443],
            book: &book,
            ipv6: false,
        };
        let (r, refused) = names.answer(&query(7, "Git.Test", TYPE_A));
        let r = r.unwrap();
        assert_eq!(refused, None);
        assert_eq!((r[0], r[1]), (0, 7), "the id");
        assert_eq!(rcode(&r), NOERROR);
        assert_eq!(answers(&r), 1);
        assert_eq!(&r[r.len() - 4..], &[198, 18, 0, 2]);
        assert_eq!(book.name(Ipv4Addr::new(198, 18, 0, 2)).unwrap(), "git.test");
        // AAAA of an allowed name without IPv6: NODATA, not NXDOMAIN.
        let (r, refused) = names.answer(&query(8, "git.test", TYPE_AAAA));
        let r = r.unwrap();
        assert_eq!((rcode(&r), answers(&r), refused), (NOERROR, 0, None));
        // With IPv6: the IPv4 address's twin in the IPv6 range.
        let names6 = Names {
            ipv6: true,
            ..names
        };
        let r = names6.answer(&query(8, "git.test", TYPE_AAAA)).0.unwrap();
        assert_eq!((rcode(&r), answers(&r)), (NOERROR, 1));
        let six = super::super::book::six(Ipv4Addr::new(198, 18, 0, 2)).octets();
        assert_eq!(&r[r.len() - 16..], &six);
        // Refused: no rule, a deny rule, a metadata name on a port the
        // relay does not serve.
        let (r, refused) = names.answer(&query(9, "evil.test", TYPE_A));
        assert_eq!(rcode(&r.unwrap()), NXDOMAIN);
        assert_eq!(refused, Some(("evil.test".into(), Reason::NoRule)));
        let (r, refused) = names.answer(&query(9, "secret.example.com", 28));
        assert_eq!(rcode(&r.unwrap()), NXDOMAIN);
        assert_eq!(refused.unwrap().1, Reason::DeniedBy(2));
        assert!(names.answer(&query(9, "a.example.com", TYPE_A)).1.is_none());
        let (_, refused) = names.answer(&query(9, "metadata.google.internal", TYPE_A));
        assert_eq!(refused.unwrap().1, Reason::NoRule, "port 80 is not served");
        assert!(names.decide("1.2.3.4").is_err());
    }

    #[test]
    fn malformed_queries() {
        let rules = Rules::new(&[rule(0, "a.test", Some(22))]);
        let book = Book::default();
        let names = Names {
            rules: &rules,
            ports: &[22],
            book: &book,
            ipv6: true,
        };
        assert_eq!(names.answer(&[1, 2, 3]).0, None, "too short");
        let mut q = query(5, "a.test", TYPE_A);
        q[2] |= 0x80; // a response
        assert_eq!(names.answer(&q).0, None);
        let q = query(5, "a.test", TYPE_A);
        let r = names.answer(&q[..q.len() - 2]).0.unwrap();
        assert_eq!(rcode(&r), FORMERR);
        let mut q = query(5, "a.test", TYPE_A);
        q[2] |= 0x10; // opcode 2 (status)
        assert_eq!(rcode(&names.answer(&q).0.unwrap()), NOTIMP);
        let mut q = query(5, "a.test", TYPE_A);
        q[12] = 0xc0; // a pointer where a label starts
        assert_eq!(rcode(&names.answer(&q).0.unwrap()), FORMERR);
        let r = names.answer(&query(5, "a b.test", TYPE_A)).0.unwrap();
        assert_eq!(rcode(&r), NXDOMAIN);
    }
}
