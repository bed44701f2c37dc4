//! SBPL regexes (POSIX extended syntax, searched unanchored) on the `regex` crate.

use regex::Regex;

/// Compile an SBPL regex. Differences handled: `.` also matches a newline, as in
/// POSIX, and a `{` that does not start a bound (`{2}`, `{1,}`, `{1,3}`) is a
/// literal brace in POSIX but an error in `regex`. Not handled: a POSIX bracket
/// expression treats `\` as a literal, `regex` as an escape (the corpus writes
/// `[-\w.]` expecting the escape).
pub fn compile(sbpl: &str) -> Result<Regex, regex::Error> {
    let mut out = String::with_capacity(sbpl.len() + 8);
    out.push_str("(?s)");
    let mut chars = sbpl.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
            }
            '{' if !is_bound(&sbpl[i..]) => out.push_str(r"\{"),
            _ => out.push(c),
        }
    }
    Regex::new(&out)
}

/// `{m}`, `{m,}` or `{m,n}` at the start of `s`.
fn is_bound(s: &str) -> bool {
    let Some(end) = s.find('}') else {
        return false;
    };
    let inner = &s[1..end];
    let (lo, hi) = inner.split_once(',').unwrap_or((inner, "0"));
    !lo.is_empty()
        && lo.bytes().all(|b| b.is_ascii_digit())
        && hi.bytes().all(|b| b.is_ascii_digit())
}

/// Escape `s` so a regex matches it literally, as SBPL's `regex-quote` does.
pub fn quote(s: &str) -> String {
    regex::escape(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(re: &str, s: &str) -> bool {
        compile(re).unwrap().is_match(s)
    }

    #[test]
    fn unanchored_search_like_sbpl() {
        assert!(matches(r"\.plist$", "/Library/Preferences/a.plist"));
        assert!(!matches(r"^/tmp", "/private/tmp"));
        assert!(matches(
            r"^(/private)?/var/run/syslog\.pid$",
            "/var/run/syslog.pid"
        ));
        assert!(matches(r"^/Users/[^/]+/Library", "/Users/x/Library/y"));
        assert!(matches(r"\.(DVC\!|dvc\!)$", "/a.dvc!"));
        assert!(matches(r"[-\w.]*", "anything"));
        assert!(matches(r"^/a[[:digit:]]$", "/a7"));
    }

    #[test]
    fn posix_details() {
        assert!(matches("^/a.b$", "/a\nb"));
        assert!(matches("^/a{b}$", "/a{b}"));
        assert!(matches("^/x{2}$", "/xx"));
        assert!(matches("^/x{1,}$", "/xxx"));
        assert!(!matches("^/x{2,3}$", "/x"));
        assert!(compile("^(?/private)").is_err());
    }

    #[test]
    fn quote_matches_literally() {
        let text = "/a.b(c)[d]*+?$^|{e}";
        let re = compile(&format!("^{}$", quote(text))).unwrap();
        assert!(re.is_match(text));
        assert!(!re.is_match("/aXb(c)[d]*+?$^|{e}"));
    }
}
