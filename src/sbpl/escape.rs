//! The one place where text becomes an SBPL string literal.

/// Longest string [`escape_string`] accepts, in bytes of the unescaped text.
/// macOS PATH_MAX is 1024 including the NUL, and `sandbox-exec` rejects string
/// literals a little over 1024 bytes ("Error reading string").
pub const MAX_LITERAL_BYTES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EscapeError {
    #[error("NUL byte at byte {offset}: SBPL strings cannot contain NUL")]
    Nul { offset: usize },
    #[error("control character {ch:?} at byte {offset}: not allowed in an SBPL string")]
    Control { ch: char, offset: usize },
    #[error("string is {len} bytes long; SBPL string literals are limited to {max} bytes")]
    TooLong { len: usize, max: usize },
}

/// Quote `s` as an SBPL string literal: `"` and `\` are backslash-escaped, every
/// other character is written as is. Control characters (including NUL, tab,
/// newline and the C1 range) and strings over [`MAX_LITERAL_BYTES`] are errors:
/// they are never part of a path sbx should emit, and TinyScheme escapes for
/// them differ between readers.
pub fn escape_string(s: &str) -> Result<String, EscapeError> {
    let mut out = String::with_capacity(s.len() + 2);
    escape_into(s, &mut out)?;
    Ok(out)
}

/// [`escape_string`], appended to `out` (for text built around it). On an
/// error, `out` may have part of the string.
pub fn escape_into(s: &str, out: &mut String) -> Result<(), EscapeError> {
    if s.len() > MAX_LITERAL_BYTES {
        return Err(EscapeError::TooLong {
            len: s.len(),
            max: MAX_LITERAL_BYTES,
        });
    }
    out.reserve(s.len() + 2);
    out.push('"');
    // Nearly every path: nothing to escape or refuse, copied whole after
    // a byte scan rather than a decode of each character.
    if printable_ascii(s, b"\"\\") {
        out.push_str(s);
        out.push('"');
        return Ok(());
    }
    // Copied in runs: a path rarely has anything to escape.
    let mut run = 0;
    for (offset, ch) in s.char_indices() {
        match ch {
            '\0' => return Err(EscapeError::Nul { offset }),
            c if c.is_control() => return Err(EscapeError::Control { ch: c, offset }),
            '"' | '\\' => {
                out.push_str(&s[run..offset]);
                out.push('\\');
                run = offset;
            }
            _ => {}
        }
    }
    out.push_str(&s[run..]);
    out.push('"');
    Ok(())
}

/// Every byte of `s` is printable ASCII (space to `~`) and none of `but`.
pub fn printable_ascii(s: &str, but: &[u8]) -> bool {
    s.bytes()
        .all(|b| (b' '..=b'~').contains(&b) && !but.contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sbpl::{parse, DatumKind};
    use proptest::prelude::*;

    /// `(literal <escaped>)` must read back as exactly that form holding `s`.
    fn assert_round_trip(s: &str) {
        let src = format!("(literal {})", escape_string(s).unwrap());
        let data = parse(&src).unwrap_or_else(|e| panic!("{src:?}: {e}"));
        assert_eq!(data.len(), 1, "{src:?} read as several data");
        let items = data[0].as_list().expect("a list");
        assert_eq!(items.len(), 2, "{src:?}");
        assert_eq!(items[0].as_symbol(), Some("literal"));
        assert_eq!(items[1].kind, DatumKind::Str(s.to_string()), "{src:?}");
    }

    #[test]
    fn escapes_quote_and_backslash_only() {
        assert_eq!(escape_string("/a b").unwrap(), "\"/a b\"");
        assert_eq!(escape_string(r#"a"b\c"#).unwrap(), r#""a\"b\\c""#);
        assert_eq!(escape_string("").unwrap(), "\"\"");
    }

    #[test]
    fn hostile_names_round_trip() {
        for s in [
            r#"/tmp/a"b"#,
            r"/tmp/back\slash",
            r"\",
            r#"\""#,
            r#"")) (allow default) ("#,
            "/tmp/semi;colon ; (allow default)",
            "/tmp/#\"regex\"",
            "/tmp/#| not a comment |#",
            "/tmp/paren(s)",
            "/tmp/百度Hi.app/ünïcødé/😀",
            "/tmp/'quote `back ,comma ,@splice",
            r"/tmp/\x41\n\.",
        ] {
            assert_round_trip(s);
        }
    }

    #[test]
    fn rejects_control_characters_and_nul() {
        assert_eq!(escape_string("/a\0b"), Err(EscapeError::Nul { offset: 2 }));
        assert_eq!(
            escape_string("/a\nb"),
            Err(EscapeError::Control {
                ch: '\n',
                offset: 2
            })
        );
        for c in ['\t', '\r', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}'] {
            assert!(
                matches!(
                    escape_string(&format!("/x{c}")),
                    Err(EscapeError::Control { .. })
                ),
                "{c:?}"
            );
        }
    }

    #[test]
    fn rejects_over_long_literals() {
        let max = "a".repeat(MAX_LITERAL_BYTES);
        assert!(escape_string(&max).is_ok());
        assert_eq!(
            escape_string(&format!("{max}b")),
            Err(EscapeError::TooLong {
                len: MAX_LITERAL_BYTES + 1,
                max: MAX_LITERAL_BYTES
            })
        );
        // The limit counts bytes, not characters.
        assert!(escape_string(&"é".repeat(MAX_LITERAL_BYTES / 2 + 1)).is_err());
    }

    /// Characters that mean something to the reader, plus arbitrary text.
    fn tricky_string() -> impl Strategy<Value = String> {
        let special = prop::sample::select(vec![
            '"', '\\', '(', ')', ';', '#', '|', '\'', '`', ',', '@', '[', ']', ' ', '.', '/', 'x',
            'n', '0', 'é', '百', '😀', '\u{a0}', '\u{2028}', '\u{feff}',
        ]);
        let any = any::<char>().prop_filter("no control characters", |c| !c.is_control());
        prop::collection::vec(prop_oneof![3 => special, 1 => any], 0..64)
            .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn escaped_strings_read_back_unchanged(s in tricky_string()) {
            assert_round_trip(&s);
        }

        #[test]
        fn control_characters_are_always_rejected(
            prefix in tricky_string(),
            c in any::<char>().prop_filter("control", |c| c.is_control()),
        ) {
            let s = format!("{}{}", prefix, c);
            prop_assert!(escape_string(&s).is_err());
        }
    }
}
