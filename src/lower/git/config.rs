//! Git's config syntax as git's own reader takes it: `[section]` and
//! `[section "subsection"]` headers, `key = value` lines, quotes,
//! backslash escapes and continuation lines, `#` and `;` comments.
//! Section and key names are case-insensitive; a subsection is not.
//!
//! A line git would reject is skipped here. Git refuses the whole file
//! then, so nothing in it runs, and skipping keeps what sbx reads a
//! superset of what git reads.

/// One `key = value`, or a bare `key` (git's boolean true: no value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Lower case.
    pub section: String,
    pub subsection: Option<String>,
    /// Lower case.
    pub key: String,
    pub value: Option<String>,
}

impl Entry {
    /// `section.key`, with no subsection (names in lower case).
    pub fn is(&self, section: &str, key: &str) -> bool {
        self.subsection.is_none() && self.section == section && self.key == key
    }
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Every entry of a config text, in order.
pub fn parse(text: &str) -> Vec<Entry> {
    read(text).0
}

/// Every entry, or `None` when git would reject any line of the text
/// (and with it the whole file): for a check that must not guess.
pub fn parse_strict(text: &str) -> Option<Vec<Entry>> {
    match read(text) {
        (entries, true) => Some(entries),
        (_, false) => None,
    }
}

/// The entries, and whether every line was one git accepts.
fn read(text: &str) -> (Vec<Entry>, bool) {
    let mut clean = true;
    let text = text.replace("\r\n", "\n");
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut c = text.chars().peekable();
    let mut out = Vec::new();
    // None before the first header and after one git would reject.
    let mut section: Option<(String, Option<String>)> = None;
    while let Some(&ch) = c.peek() {
        if space(ch) || ch == '\n' {
            c.next();
        } else if ch == '#' || ch == ';' {
            skip_line(&mut c);
        } else if ch == '[' {
            c.next();
            section = header(&mut c);
            if section.is_none() {
                clean = false;
                skip_line(&mut c);
            }
        } else if ch.is_ascii_alphabetic() {
            let mut key = String::new();
            while let Some(&k) = c.peek().filter(|k| k.is_ascii_alphanumeric() || **k == '-') {
                key.push(k.to_ascii_lowercase());
                c.next();
            }
            while c.next_if(|&s| s == ' ' || s == '\t').is_some() {}
            let value = match c.next() {
                None | Some('\n') => None,
                Some('=') => match value(&mut c) {
                    Some(v) => Some(v),
                    None => {
                        clean = false;
                        skip_line(&mut c);
                        continue;
                    }
                },
                Some(_) => {
                    clean = false;
                    skip_line(&mut c);
                    continue;
                }
            };
            match &section {
                Some((s, sub)) => out.push(Entry {
                    section: s.clone(),
                    subsection: sub.clone(),
                    key,
                    value,
                }),
                // A key before any header: git rejects the file.
                None => clean = false,
            }
        } else {
            clean = false;
            skip_line(&mut c);
        }
    }
    (out, clean)
}

/// git's `isspace` less the newline, which ends a line.
fn space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\x0b' | '\x0c')
}

fn skip_line(c: &mut Chars) {
    for ch in c.by_ref() {
        if ch == '\n' {
            break;
        }
    }
}

/// After `[`: the section (lower case) and subsection, through `]`.
fn header(c: &mut Chars) -> Option<(String, Option<String>)> {
    let mut name = String::new();
    loop {
        match c.next()? {
            ']' => break,
            ' ' | '\t' => return quoted_subsection(c).map(|sub| (name, Some(sub))),
            ch if ch.is_ascii_alphanumeric() || ch == '-' || ch == '.' => {
                name.push(ch.to_ascii_lowercase())
            }
            _ => return None,
        }
    }
    // `[section.sub]`, the old spelling (its subsection lower-cased too).
    Some(match name.split_once('.') {
        Some((s, sub)) => (s.to_string(), Some(sub.to_string())),
        None => (name, None),
    })
}

/// ` "sub"]` after a section name: `\x` stands for `x`.
fn quoted_subsection(c: &mut Chars) -> Option<String> {
    while c.next_if(|&s| s == ' ' || s == '\t').is_some() {}
    if c.next()? != '"' {
        return None;
    }
    let mut sub = String::new();
    loop {
        match c.next()? {
            '"' => break,
            '\n' => return None,
            '\\' => match c.next()? {
                '\n' => return None,
                ch => sub.push(ch),
            },
            ch => sub.push(ch),
        }
    }
    (c.next()? == ']').then_some(sub)
}

/// After `=`, through the end of the (continued) line: unquoted white
/// space at either end dropped, quotes removed, escapes decoded, a
/// comment outside quotes ignored. None where git reports an error (an
/// unknown escape, an unclosed quote).
fn value(c: &mut Chars) -> Option<String> {
    let mut out = String::new();
    let (mut quoted, mut comment) = (false, false);
    // The length before unquoted white space that may end the value.
    let mut trim = None;
    loop {
        let ch = match c.next() {
            None | Some('\n') if quoted => return None,
            None | Some('\n') => {
                if let Some(t) = trim {
                    out.truncate(t);
                }
                return Some(out);
            }
            Some(ch) => ch,
        };
        if comment {
            continue;
        }
        if space(ch) && !quoted {
            trim.get_or_insert(out.len());
            if !out.is_empty() {
                out.push(ch);
            }
            continue;
        }
        if !quoted && (ch == '#' || ch == ';') {
            comment = true;
            continue;
        }
        trim = None;
        match ch {
            '\\' => match c.next() {
                // A continuation line.
                None | Some('\n') => {}
                Some('t') => out.push('\t'),
                Some('b') => out.push('\u{8}'),
                Some('n') => out.push('\n'),
                Some(e @ ('\\' | '"')) => out.push(e),
                Some(_) => return None,
            },
            '"' => quoted = !quoted,
            ch => out.push(ch),
        }
    }
}

/// A path value as git's `interpolate_path` reads it: `~` and `~/x`
/// against `home`. None for what sbx cannot know the same way: `~user/`
/// and `%(prefix)/` (git's install prefix, outside any workspace).
pub fn expand(v: &str, home: &str) -> Option<String> {
    if v == "~" {
        return Some(home.to_string());
    }
    if let Some(rest) = v.strip_prefix("~/") {
        return Some(crate::lower::paths::join(home, rest));
    }
    if v.starts_with('~') || v.starts_with("%(prefix)/") {
        return None;
    }
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Vec<(String, Option<String>, String, Option<String>)> {
        parse(text)
            .into_iter()
            .map(|e| (e.section, e.subsection, e.key, e.value))
            .collect()
    }

    fn e(
        s: &str,
        sub: Option<&str>,
        k: &str,
        v: Option<&str>,
    ) -> (String, Option<String>, String, Option<String>) {
        (s.into(), sub.map(Into::into), k.into(), v.map(Into::into))
    }

    #[test]
    fn sections_keys_and_values() {
        assert_eq!(
            one("[Core]\n\tHooksPath = .husky\n\tbare\n"),
            vec![
                e("core", None, "hookspath", Some(".husky")),
                e("core", None, "bare", None)
            ]
        );
        // A key on the header's line, and the old `[a.b]` spelling.
        assert_eq!(
            one("[core] hooksPath = x\n[Include.Sub]\npath = y\n"),
            vec![
                e("core", None, "hookspath", Some("x")),
                e("include", Some("sub"), "path", Some("y"))
            ]
        );
        // A subsection keeps its case; `\"` and `\\` stand for themselves.
        assert_eq!(
            one("[includeIf \"gitdir:~/Work/\\\"q\\\\\"]\n\tpath = w\n"),
            vec![e(
                "includeif",
                Some("gitdir:~/Work/\"q\\"),
                "path",
                Some("w")
            )]
        );
        // Before any header, and after a broken one: not entries.
        assert_eq!(one("path = a\n[core\nx = 1\n"), vec![]);
        assert_eq!(one("[a \"b\" c]\nx = 1\n"), vec![]);
    }

    #[test]
    fn values_as_git_reads_them() {
        let v = |line: &str| {
            let mut all = parse(&format!("[s]\n{line}\n"));
            assert_eq!(all.len(), 1, "{line}");
            all.remove(0).value
        };
        assert_eq!(v("k=a"), Some("a".into()));
        assert_eq!(v("k =  a b  # comment"), Some("a b".into()));
        assert_eq!(v("k = \"a ; b\" ; c"), Some("a ; b".into()));
        assert_eq!(v("k = \" a \""), Some(" a ".into()));
        assert_eq!(v("k = a\\\\b\\\"c\\t"), Some("a\\b\"c\t".into()));
        assert_eq!(v("k = a\\\nb"), Some("ab".into()));
        assert_eq!(v("k ="), Some(String::new()));
        // git rejects these lines.
        assert!(parse("[s]\nk = \"a\n").is_empty());
        assert!(parse("[s]\nk = a\\q\n").is_empty());
        assert!(parse("[s]\nk # c\n").is_empty());
        // CRLF line ends and a byte order mark.
        assert_eq!(
            one("\u{feff}[s]\r\nk = a\r\n"),
            vec![e("s", None, "k", Some("a"))]
        );
    }

    #[test]
    fn paths_expand_as_git_expands_them() {
        assert_eq!(expand("~/x", "/h"), Some("/h/x".into()));
        assert_eq!(expand("~", "/h"), Some("/h".into()));
        assert_eq!(expand("a/~", "/h"), Some("a/~".into()));
        assert_eq!(expand("~bob/x", "/h"), None);
        assert_eq!(expand("%(prefix)/etc/x", "/h"), None);
    }
}
