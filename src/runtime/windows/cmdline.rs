//! Building the child's command line and environment block (UTF-16).
//! Pure, so it is tested on every host.

const QUOTE: u16 = b'"' as u16;
const BACKSLASH: u16 = b'\\' as u16;
const SPACE: u16 = b' ' as u16;
const TAB: u16 = b'\t' as u16;
const NEWLINE: u16 = b'\n' as u16;
const EQUALS: u16 = b'=' as u16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmdError {
    #[error("no command given")]
    Empty,
    #[error("an argument contains a NUL character")]
    Nul,
    #[error("the program name contains a double quote, which Windows cannot pass")]
    QuoteInProgram,
}

/// Join `argv` into one command line that `CommandLineToArgvW` (and the
/// MSVC CRT) split back into the same strings. The program name follows
/// the simpler rules `CreateProcess` uses for the first token.
pub fn command_line(argv: &[Vec<u16>]) -> Result<Vec<u16>, CmdError> {
    let (prog, args) = argv.split_first().ok_or(CmdError::Empty)?;
    if argv.iter().any(|a| a.contains(&0)) {
        return Err(CmdError::Nul);
    }
    if prog.contains(&QUOTE) {
        return Err(CmdError::QuoteInProgram);
    }
    let mut out = Vec::new();
    out.push(QUOTE);
    out.extend_from_slice(prog);
    out.push(QUOTE);
    for a in args {
        out.push(SPACE);
        quote_arg(a, &mut out);
    }
    Ok(out)
}

fn quote_arg(a: &[u16], out: &mut Vec<u16>) {
    let plain = !a.is_empty()
        && !a
            .iter()
            .any(|c| matches!(*c, SPACE | TAB | NEWLINE | QUOTE));
    if plain {
        out.extend_from_slice(a);
        return;
    }
    out.push(QUOTE);
    let mut backslashes = 0;
    for &c in a {
        if c == BACKSLASH {
            backslashes += 1;
            continue;
        }
        // Backslashes are literal unless they precede a quote.
        let n = if c == QUOTE {
            2 * backslashes + 1
        } else {
            backslashes
        };
        out.extend(std::iter::repeat_n(BACKSLASH, n));
        backslashes = 0;
        out.push(c);
    }
    out.extend(std::iter::repeat_n(BACKSLASH, 2 * backslashes));
    out.push(QUOTE);
}

/// `NAME=VALUE\0...\0\0`, sorted by upper-cased name as Windows expects.
/// Names that are empty or hold `=` past the first character (drive-cwd
/// entries like `=C:` are allowed) or NUL are skipped.
pub fn env_block(mut vars: Vec<(Vec<u16>, Vec<u16>)>) -> Vec<u16> {
    vars.retain(|(k, v)| {
        !k.is_empty() && !k[1..].contains(&EQUALS) && !k.contains(&0) && !v.contains(&0)
    });
    vars.sort_by_cached_key(|(k, _)| k.iter().map(|&c| upper(c)).collect::<Vec<u16>>());
    let mut out = Vec::new();
    for (k, v) in vars {
        out.extend_from_slice(&k);
        out.push(EQUALS);
        out.extend_from_slice(&v);
        out.push(0);
    }
    if out.is_empty() {
        out.push(0);
    }
    out.push(0);
    out
}

fn upper(c: u16) -> u16 {
    if (b'a' as u16..=b'z' as u16).contains(&c) {
        c - 32
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn line(args: &[&str]) -> String {
        String::from_utf16(&command_line(&args.iter().map(|a| w(a)).collect::<Vec<_>>()).unwrap())
            .unwrap()
    }

    /// CommandLineToArgvW's rules for arguments after the first.
    fn split(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        let c: Vec<char> = s.chars().collect();
        let mut i = 0;
        while i < c.len() {
            while i < c.len() && (c[i] == ' ' || c[i] == '\t') {
                i += 1;
            }
            if i == c.len() {
                break;
            }
            let mut cur = String::new();
            let mut inq = false;
            while i < c.len() && (inq || (c[i] != ' ' && c[i] != '\t')) {
                if c[i] == '\\' {
                    let mut n = 0;
                    while i < c.len() && c[i] == '\\' {
                        n += 1;
                        i += 1;
                    }
                    if i < c.len() && c[i] == '"' {
                        cur.extend(std::iter::repeat_n('\\', n / 2));
                        if n % 2 == 1 {
                            cur.push('"');
                            i += 1;
                        }
                    } else {
                        cur.extend(std::iter::repeat_n('\\', n));
                    }
                    continue;
                }
                if c[i] == '"' {
                    inq = !inq;
                } else {
                    cur.push(c[i]);
                }
                i += 1;
            }
            out.push(cur);
        }
        out
    }

    #[test]
    fn quoting_round_trips() {
        let cases: &[&[&str]] = &[
            &["a b", "", "x"],
            &[
                r"C:\p",
                r#"say "hi""#,
                r"trail\",
                r"mid\\x",
                r#"\\"q"#,
                "tab\there",
            ],
        ];
        for args in cases {
            let mut all = vec!["prog"];
            all.extend_from_slice(args);
            let l = line(&all);
            assert!(l.starts_with("\"prog\" "));
            assert_eq!(split(&l[7..]), *args, "{l}");
        }
    }

    #[test]
    fn rejects_what_cannot_be_passed() {
        assert_eq!(command_line(&[]), Err(CmdError::Empty));
        assert_eq!(command_line(&[w("a\"b")]), Err(CmdError::QuoteInProgram));
        assert_eq!(command_line(&[w("a"), w("x\0")]), Err(CmdError::Nul));
    }

    #[test]
    fn env_block_is_sorted_case_insensitively_and_terminated() {
        let b = env_block(vec![
            (w("path"), w("p")),
            (w("=C:"), w("C:\\")),
            (w("Alpha"), w("1")),
            (w("bad=name"), w("x")),
        ]);
        assert_eq!(
            String::from_utf16(&b).unwrap(),
            "=C:=C:\\\0Alpha=1\0path=p\0\0"
        );
        assert_eq!(env_block(vec![]), [0, 0]);
    }
}
