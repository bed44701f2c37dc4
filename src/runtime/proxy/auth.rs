//! The run's credentials. On macOS the proxy listens on this host's
//! loopback, where any local process can connect, including one in
//! another sandbox that may reach `localhost` but not these hosts; so
//! each run makes a random token, the child finds it in its proxy
//! variables (user [`USER`], password the token), and the proxy serves
//! only clients that present it. On Linux the listeners live in the
//! child's own network namespace and no token is needed.

use std::io::{self, Read};

/// The user name in the proxy URLs; the token is the password.
pub const USER: &str = "sbx";

/// 128 random bits as 32 hex digits: safe in a URL's user information
/// without escaping.
pub fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(crate::policy::hash::lower_hex(&bytes))
}

/// Equal contents, in time that depends on the lengths only, so a
/// client cannot find the token byte by byte by timing refusals.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether one of the request's `Proxy-Authorization` headers is
/// `Basic` with `sbx:TOKEN`. Compared in base64, padding ignored (some
/// clients leave it off), since a valid encoding of the same bytes is
/// unique otherwise.
pub fn http_ok(headers: &[(String, Vec<u8>)], token: &str) -> bool {
    let want = base64(format!("{USER}:{token}").as_bytes());
    let want = want.trim_end_matches('=').as_bytes();
    headers
        .iter()
        .filter(|(n, _)| n == "proxy-authorization")
        .any(|(_, v)| {
            let v = v.trim_ascii();
            let Some(i) = v.iter().position(|b| *b == b' ') else {
                return false;
            };
            let (scheme, cred) = v.split_at(i);
            let cred = cred.trim_ascii();
            let end = cred.iter().rposition(|b| *b != b'=').map_or(0, |e| e + 1);
            scheme.eq_ignore_ascii_case(b"basic") && same(&cred[..end], want)
        })
}

/// RFC 1929's user and password against [`USER`] and the token.
pub fn socks_ok(user: &[u8], password: &[u8], token: &str) -> bool {
    // Both compared, whatever the first gives.
    let u = same(user, USER.as_bytes());
    let p = same(password, token.as_bytes());
    u & p
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_of_rfc_4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), enc);
        }
    }

    #[test]
    fn tokens_are_fresh_hex() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn basic_credentials_are_checked() {
        let h = |v: &str| vec![("proxy-authorization".to_string(), v.as_bytes().to_vec())];
        // base64("sbx:t0k") = c2J4OnQwaw==
        assert!(http_ok(&h("Basic c2J4OnQwaw=="), "t0k"));
        assert!(http_ok(&h("basic  c2J4OnQwaw "), "t0k"), "padding optional");
        assert!(!http_ok(&h("Basic c2J4OnQwaw=="), "t0K"));
        assert!(!http_ok(&h("Bearer c2J4OnQwaw=="), "t0k"));
        assert!(!http_ok(&h("Basic"), "t0k"));
        assert!(!http_ok(&[], "t0k"));
        // Another user with the right password.
        assert!(!http_ok(&h(&format!("Basic {}", base64(b"me:t0k"))), "t0k"));
        let other = vec![("authorization".to_string(), b"Basic c2J4OnQwaw==".to_vec())];
        assert!(
            !http_ok(&other, "t0k"),
            "the server's header is not the proxy's"
        );
    }

    #[test]
    fn socks_credentials_are_checked() {
        assert!(socks_ok(b"sbx", b"t0k", "t0k"));
        assert!(!socks_ok(b"sbx", b"t0", "t0k"));
        assert!(!socks_ok(b"root", b"t0k", "t0k"));
        assert!(!socks_ok(b"", b"", "t0k"));
    }
}
