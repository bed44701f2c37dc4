//! The nesting bound, checked on the raw text before the recursive parse.

use super::{LineIndex, SyntaxError, MAX_DEPTH};

/// Reject nesting deeper than [`MAX_DEPTH`] before the recursive parse runs.
/// A cheap scan: it only needs to be exact for input the parser would accept.
pub(super) fn check_nesting(src: &str, index: &LineIndex) -> Result<(), SyntaxError> {
    #[derive(PartialEq)]
    enum Open {
        List,
        Quote,
    }
    let b = src.as_bytes();
    let mut stack: Vec<Open> = Vec::new();
    let mut i = 0;
    // A datum ended: quotes waiting for it are complete too.
    fn finish(stack: &mut Vec<Open>) {
        while stack.last() == Some(&Open::Quote) {
            stack.pop();
        }
    }
    let skip_string = |mut j: usize| {
        while j < b.len() && b[j] != b'"' {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        j + 1
    };
    while i < b.len() {
        match b[i] {
            b';' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i = skip_string(i + 1);
                finish(&mut stack);
            }
            b'#' if b.get(i + 1) == Some(&b'"') => {
                i = skip_string(i + 2);
                finish(&mut stack);
            }
            b'#' if b.get(i + 1) == Some(&b'|') => {
                i = src[i..].find("|#").map_or(b.len(), |n| i + n + 2);
            }
            b'(' | b'\'' | b'`' | b',' => {
                stack.push(if b[i] == b'(' {
                    Open::List
                } else {
                    Open::Quote
                });
                if stack.len() > MAX_DEPTH {
                    let (line, column) = index.line_col(i);
                    return Err(SyntaxError {
                        line,
                        column,
                        offset: i,
                        message: format!("nesting deeper than {MAX_DEPTH} levels"),
                    });
                }
                i += if b[i] == b',' && b.get(i + 1) == Some(&b'@') {
                    2
                } else {
                    1
                };
            }
            b')' => {
                finish(&mut stack);
                stack.pop();
                finish(&mut stack);
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                // An atom; `#\(` is a character, not a paren.
                if b[i] == b'#' && b.get(i + 1) == Some(&b'\\') {
                    i += 3;
                }
                while i < b.len() && !b" \t\r\n()\";'`,".contains(&b[i]) {
                    i += 1;
                }
                finish(&mut stack);
            }
        }
    }
    Ok(())
}
