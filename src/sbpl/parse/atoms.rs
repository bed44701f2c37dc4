//! The text of atoms: string escapes, `#\a` characters and `#x1f` integers,
//! as TinyScheme reads them.

/// Decode `"..."` escapes. TinyScheme drops the backslash of an unknown escape
/// (`\.` reads as `.`, `\ ` as a space); the corpus relies on that.
pub(super) fn unescape(body: &str) -> Result<String, (usize, String)> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            return Err((i, "a string cannot end with a lone '\\'".into()));
        };
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'x' => {
                let hex: String = chars.by_ref().take(2).map(|(_, h)| h).collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(v) if hex.len() == 2 && v.is_ascii() => out.push(char::from(v)),
                    _ => {
                        return Err((
                            i,
                            format!("invalid escape '\\x{hex}': expected two hex digits below 80"),
                        ))
                    }
                }
            }
            '0'..='9' => {
                return Err((
                    i,
                    format!("octal escape '\\{e}' is not supported in SBPL strings"),
                ))
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

pub(super) fn char_value(name: &str) -> Option<char> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Some(c);
    }
    Some(match name {
        "space" => ' ',
        "newline" | "linefeed" => '\n',
        "tab" => '\t',
        "return" => '\r',
        "nul" | "null" => '\0',
        "altmode" | "escape" => '\u{1b}',
        "backspace" => '\u{8}',
        "delete" | "rubout" => '\u{7f}',
        "alarm" => '\u{7}',
        _ => {
            let hex = name.strip_prefix('x')?;
            char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
        }
    })
}

pub(super) fn int_value(text: &str) -> Option<i64> {
    let (radix, digits) = match text.get(..2) {
        Some("#x") => (16, &text[2..]),
        Some("#o") => (8, &text[2..]),
        Some("#b") => (2, &text[2..]),
        Some("#d") => (10, &text[2..]),
        _ => (10, text),
    };
    i64::from_str_radix(digits, radix).ok()
}
