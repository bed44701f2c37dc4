//! Reader: pest parse of `grammar/sbpl.pest`, then conversion to [`Datum`]s.
//!
//! The grammar has error productions for broken input; the conversion turns
//! them into one [`SyntaxError`] that names the culprit's line and column.

use pest::iterators::Pair;
use pest::Parser as _;

use super::datum::{Datum, DatumKind, Span};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/sbpl.pest"]
struct SbplParser;

/// Deepest nesting of lists and quotes the reader accepts. The corpus needs 12;
/// the bound keeps the recursive parser off the end of the stack.
pub const MAX_DEPTH: usize = 128;

/// A reader error at `line:column` (1-based; column counts characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
    pub message: String,
}

/// Read SBPL source as a sequence of top-level data.
pub fn parse(src: &str) -> Result<Vec<Datum>, SyntaxError> {
    let index = LineIndex::new(src);
    check_nesting(src, &index)?;
    let file = match SbplParser::parse(Rule::file, src) {
        Ok(mut pairs) => pairs.next().expect("file rule always yields a pair"),
        Err(e) => return Err(from_pest(&e, &index)),
    };
    let mut reader = Reader {
        index: &index,
        errors: Vec::new(),
    };
    let mut data = Vec::new();
    for pair in file.into_inner() {
        match pair.as_rule() {
            Rule::EOI => {}
            Rule::dot => reader.error(Rank::Token, pair.as_span().start(), "'.' outside a list"),
            Rule::close_error => reader.error(
                Rank::Stray,
                pair.as_span().start(),
                "unbalanced ')': no '(' is open here",
            ),
            _ => data.extend(reader.datum(pair)),
        }
    }
    match reader.errors.into_iter().min_by_key(|e| (e.0, e.1.offset)) {
        Some((_, err)) => Err(err),
        None => Ok(data),
    }
}

/// Which error to report when several exist: token-level problems are the
/// cause of structural ones (an unterminated string swallows the ')'), and an
/// unclosed '(' is only known at the end, so it comes last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Token,
    Stray,
    Unclosed,
}

struct Reader<'a> {
    index: &'a LineIndex<'a>,
    errors: Vec<(Rank, SyntaxError)>,
}

impl Reader<'_> {
    fn error(&mut self, rank: Rank, offset: usize, message: impl Into<String>) {
        let (line, column) = self.index.line_col(offset);
        let message = message.into();
        self.errors.push((
            rank,
            SyntaxError {
                line,
                column,
                offset,
                message,
            },
        ));
    }

    fn at(&self, offset: usize) -> String {
        let (line, column) = self.index.line_col(offset);
        format!("{line}:{column}")
    }

    fn make(&self, kind: DatumKind, span: pest::Span<'_>) -> Datum {
        let (line, column) = self.index.line_col(span.start());
        Datum {
            kind,
            span: Span {
                start: span.start(),
                end: span.end(),
            },
            line,
            column,
        }
    }

    /// Convert one datum pair; `None` when it is broken (an error was recorded).
    fn datum(&mut self, pair: Pair<'_, Rule>) -> Option<Datum> {
        let span = pair.as_span();
        let (start, text) = (span.start(), pair.as_str());
        let kind = match pair.as_rule() {
            Rule::list => return self.list(pair),
            Rule::quoted => return self.quoted(pair),
            Rule::string | Rule::regex_string => return self.string(pair),
            Rule::boolean => Ok(DatumKind::Bool(text.starts_with("#t"))),
            Rule::character => char_value(&text[2..])
                .map(DatumKind::Char)
                .ok_or_else(|| format!("unknown character name '{text}'")),
            Rule::number => int_value(text)
                .map(DatumKind::Int)
                .ok_or_else(|| format!("integer '{text}' does not fit in 64 bits")),
            Rule::symbol => Ok(DatumKind::Symbol(text.to_string())),
            Rule::block_comment_error => Err(format!(
                "unterminated block comment '#|' starting at {}",
                self.at(start)
            )),
            Rule::bracket_error => Err(format!(
                "'{text}' is not SBPL syntax (lists use '(' and ')')"
            )),
            Rule::hash_error => Err(format!("unknown '#' syntax '{text}'")),
            Rule::char_error => Err(format!("unexpected character {text:?}")),
            other => unreachable!("rule {other:?} is not a datum"),
        };
        match kind {
            Ok(kind) => Some(self.make(kind, span)),
            Err(message) => {
                self.error(Rank::Token, start, message);
                None
            }
        }
    }

    /// `"..."` (escapes decoded) or `#"..."` (kept as written).
    fn string(&mut self, pair: Pair<'_, Rule>) -> Option<Datum> {
        let span = pair.as_span();
        let regex = pair.as_rule() == Rule::regex_string;
        let mut inner = pair.into_inner();
        let body = inner.next().expect("strings have a body");
        if inner
            .next()
            .is_some_and(|p| p.as_rule() == Rule::unterminated)
        {
            let what = if regex {
                "regex string #\"...\""
            } else {
                "string"
            };
            let at = self.at(span.start());
            self.error(
                Rank::Token,
                span.start(),
                format!("unterminated {what} starting at {at}"),
            );
            return None;
        }
        if regex {
            return Some(self.make(DatumKind::Regex(body.as_str().to_string()), span));
        }
        match unescape(body.as_str()) {
            Ok(s) => Some(self.make(DatumKind::Str(s), span)),
            Err((offset, message)) => {
                self.error(Rank::Token, body.as_span().start() + offset, message);
                None
            }
        }
    }

    fn list(&mut self, pair: Pair<'_, Rule>) -> Option<Datum> {
        let span = pair.as_span();
        let mut items = Vec::new();
        let mut dots = Vec::new();
        let mut closed = true;
        let mut broken = false;
        for inner in pair.into_inner() {
            match inner.as_rule() {
                Rule::close => {}
                Rule::unclosed => closed = false,
                Rule::dot => dots.push((items.len(), inner.as_span().start())),
                _ => match self.datum(inner) {
                    Some(d) => items.push(d),
                    None => broken = true,
                },
            }
        }
        if !closed {
            let at = self.at(span.start());
            let mut message = format!("unclosed '(' opened at {at}");
            if let Some(d) = items.iter().find_map(|d| first_col1_list(d, span.start())) {
                message.push_str(&format!(
                    " (the form at {} starts in column 1: is a ')' missing before it?)",
                    d.location()
                ));
            }
            self.error(Rank::Unclosed, span.start(), message);
            return None;
        }
        if broken {
            return None;
        }
        let kind = match dots.as_slice() {
            [] => DatumKind::List(items),
            [(0, at)] => {
                self.error(Rank::Token, *at, "'.' needs a datum before it");
                return None;
            }
            [(n, at)] if *n + 1 != items.len() => {
                self.error(
                    Rank::Token,
                    *at,
                    "'.' must be followed by exactly one datum and then ')'",
                );
                return None;
            }
            [_] => {
                let tail = items.pop().expect("checked above");
                DatumKind::DottedList(items, Box::new(tail))
            }
            [_, (_, at), ..] => {
                self.error(Rank::Token, *at, "more than one '.' in a list");
                return None;
            }
        };
        Some(self.make(kind, span))
    }

    fn quoted(&mut self, pair: Pair<'_, Rule>) -> Option<Datum> {
        let span = pair.as_span();
        let mut inner = pair.into_inner();
        let mark = inner.next().expect("quote mark");
        let target = inner.next().expect("quoted datum or missing_datum");
        if target.as_rule() == Rule::missing_datum {
            self.error(
                Rank::Token,
                span.start(),
                format!("'{}' must be followed by a datum", mark.as_str()),
            );
            return None;
        }
        let d = Box::new(self.datum(target)?);
        let kind = match mark.as_str() {
            "'" => DatumKind::Quote(d),
            "`" => DatumKind::Quasiquote(d),
            ",@" => DatumKind::UnquoteSplicing(d),
            _ => DatumKind::Unquote(d),
        };
        Some(self.make(kind, span))
    }
}

/// A list that starts in column 1 below `after`: a likely place for a missing ')'.
fn first_col1_list(d: &Datum, after: usize) -> Option<&Datum> {
    let items = match &d.kind {
        DatumKind::List(items) => items.as_slice(),
        DatumKind::DottedList(items, _) => items.as_slice(),
        _ => return None,
    };
    if d.column == 1 && d.span.start > after {
        return Some(d);
    }
    items.iter().find_map(|i| first_col1_list(i, after))
}

/// Decode `"..."` escapes. TinyScheme drops the backslash of an unknown escape
/// (`\.` reads as `.`, `\ ` as a space); the corpus relies on that.
fn unescape(body: &str) -> Result<String, (usize, String)> {
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

fn char_value(name: &str) -> Option<char> {
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

fn int_value(text: &str) -> Option<i64> {
    let (radix, digits) = match text.get(..2) {
        Some("#x") => (16, &text[2..]),
        Some("#o") => (8, &text[2..]),
        Some("#b") => (2, &text[2..]),
        Some("#d") => (10, &text[2..]),
        _ => (10, text),
    };
    i64::from_str_radix(digits, radix).ok()
}

/// The error productions make the grammar accept every input, so pest should
/// never fail; if a grammar change breaks that, this still gives a position.
fn from_pest(e: &pest::error::Error<Rule>, index: &LineIndex) -> SyntaxError {
    let offset = match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((s, _)) => s,
    };
    let (line, column) = index.line_col(offset);
    SyntaxError {
        line,
        column,
        offset,
        message: format!("cannot read SBPL here: {}", e.variant.message()),
    }
}

/// Reject nesting deeper than [`MAX_DEPTH`] before the recursive parse runs.
/// A cheap scan: it only needs to be exact for input the parser would accept.
fn check_nesting(src: &str, index: &LineIndex) -> Result<(), SyntaxError> {
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

/// Byte offset to 1-based line and character column, in O(1)-ish time even on
/// one huge line: character counts are kept at every [`BLOCK`] bytes.
pub(crate) struct LineIndex<'a> {
    src: &'a [u8],
    starts: Vec<usize>,
    /// `chars_at[k]` = characters that start before byte `k * BLOCK`.
    chars_at: Vec<usize>,
}

const BLOCK: usize = 64;

/// UTF-8 continuation bytes do not start a character.
fn starts_char(b: &u8) -> bool {
    b & 0xC0 != 0x80
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        let src = src.as_bytes();
        let mut chars_at = vec![0];
        for chunk in src.chunks(BLOCK) {
            let before = chars_at.last().copied().unwrap_or(0);
            chars_at.push(before + chunk.iter().filter(|b| starts_char(b)).count());
        }
        Self {
            src,
            starts,
            chars_at,
        }
    }

    fn chars_before(&self, offset: usize) -> usize {
        let block = offset / BLOCK;
        let from = block * BLOCK;
        self.chars_at[block]
            + self.src[from..offset]
                .iter()
                .filter(|b| starts_char(b))
                .count()
    }

    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.src.len());
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (
            line,
            self.chars_before(offset) - self.chars_before(start) + 1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> (usize, usize, String) {
        let e = parse(src).expect_err("input should be rejected");
        (e.line, e.column, e.message)
    }

    fn one(src: &str) -> Datum {
        let mut data = parse(src).expect("input should parse");
        assert_eq!(data.len(), 1, "{src}");
        data.remove(0)
    }

    fn sym(s: &str) -> DatumKind {
        DatumKind::Symbol(s.into())
    }

    /// The tree without positions, for compact assertions.
    fn shape(d: &Datum) -> String {
        match &d.kind {
            DatumKind::List(items) => {
                let inner: Vec<String> = items.iter().map(shape).collect();
                format!("({})", inner.join(" "))
            }
            DatumKind::DottedList(items, tail) => {
                let inner: Vec<String> = items.iter().map(shape).collect();
                format!("({} . {})", inner.join(" "), shape(tail))
            }
            DatumKind::Str(s) => format!("str:{s:?}"),
            DatumKind::Regex(s) => format!("re:{s:?}"),
            DatumKind::Symbol(s) => s.clone(),
            DatumKind::Int(n) => format!("int:{n}"),
            DatumKind::Bool(b) => format!("bool:{b}"),
            DatumKind::Char(c) => format!("char:{c:?}"),
            DatumKind::Quote(d) => format!("'{}", shape(d)),
            DatumKind::Quasiquote(d) => format!("`{}", shape(d)),
            DatumKind::Unquote(d) => format!(",{}", shape(d)),
            DatumKind::UnquoteSplicing(d) => format!(",@{}", shape(d)),
        }
    }

    #[test]
    fn reads_rules_with_positions() {
        let src = "(version 1)\n(deny default)\n  (allow file-read* (subpath \"/usr\"))\n";
        let data = parse(src).unwrap();
        assert_eq!(data.len(), 3);
        assert_eq!(
            shape(&data[2]),
            r#"(allow file-read* (subpath str:"/usr"))"#
        );
        assert_eq!((data[2].line, data[2].column), (3, 3));
        let subpath = &data[2].as_list().unwrap()[2];
        assert_eq!((subpath.line, subpath.column), (3, 21));
        assert_eq!(
            &src[subpath.span.start..subpath.span.end],
            "(subpath \"/usr\")"
        );
        assert_eq!(data[0].head(), Some("version"));
    }

    #[test]
    fn reads_atoms() {
        let d = one(
            r##"(#t #f #x682f #o0004 -12 +3 0000 00ec 2a #\/ #\space #\( ... - + file-read* %string-prefix? string->number @TOKEN@ <MyApp> a#b)"##,
        );
        assert_eq!(
            shape(&d),
            "(bool:true bool:false int:26671 int:4 int:-12 int:3 int:0 00ec 2a char:'/' char:' ' char:'(' ... - + file-read* %string-prefix? string->number @TOKEN@ <MyApp> a#b)"
        );
    }

    #[test]
    fn reads_strings_and_escapes() {
        let d = one(
            r#"("a\\b" "q\"q" "com\.apple\." "Mobile\ Documents" "t\tn\nx\x41" "" "百度Hi.app")"#,
        );
        assert_eq!(
            shape(&d),
            r#"(str:"a\\b" str:"q\"q" str:"com.apple." str:"Mobile Documents" str:"t\tn\nxA" str:"" str:"百度Hi.app")"#
        );
        // Strings may span lines.
        assert_eq!(shape(&one("\"a\nb\"")), r#"str:"a\nb""#);
    }

    #[test]
    fn regex_strings_keep_backslashes() {
        let d = one(r#"(regex #"^/private/var/run/syslog\.pid$" #"" #"\(A\)" #"a\"b")"#);
        assert_eq!(
            shape(&d),
            r#"(regex re:"^/private/var/run/syslog\\.pid$" re:"" re:"\\(A\\)" re:"a\\\"b")"#
        );
    }

    #[test]
    fn reads_quotes_and_dotted_lists() {
        let d = one("(list 'a '() '(1 . #t) `(literal ,path ,@rest) ' b)");
        assert_eq!(
            shape(&d),
            "(list 'a '() '(int:1 . bool:true) `(literal ,path ,@rest) 'b)"
        );
        assert_eq!(
            shape(&one("(define (f . args) args)")),
            "(define (f . args) args)"
        );
    }

    #[test]
    fn skips_comments_and_odd_whitespace() {
        let src =
            ";;;;;; header\r\n(allow ; trailing\r\n\tfile-read*) #| block\n ( |#\n(deny default)";
        let data = parse(src).unwrap();
        assert_eq!(data.len(), 2);
        assert_eq!((data[1].line, data[1].column), (5, 1));
        // Block comments do not nest: the first "|#" ends them.
        assert_eq!(
            err("#| a #| b |# |#"),
            (1, 14, "unexpected character \"|\"".into())
        );
        assert!(parse("; only a comment").unwrap().is_empty());
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn columns_count_characters() {
        let data = parse("(path \"百度\") (x)").unwrap();
        assert_eq!((data[1].line, data[1].column), (1, 13));
        assert_eq!(data[1].span.start, 16);
    }

    #[test]
    fn rejects_unclosed_paren_at_the_opening_paren() {
        let (l, c, m) = err("(version 1)\n(allow file-read*\n  (subpath \"/a\")\n");
        assert_eq!((l, c), (2, 1));
        assert_eq!(m, "unclosed '(' opened at 2:1");
        // The outermost open form is named; a column-1 form inside it is the hint.
        let (l, c, m) = err("(allow file-read* (subpath \"/a\")\n(deny default)\n");
        assert_eq!((l, c), (1, 1));
        assert!(m.contains("the form at 2:1 starts in column 1"), "{m}");
    }

    #[test]
    fn rejects_stray_close_paren() {
        let (l, c, m) = err("(allow file-read*)\n  (deny default))\n");
        assert_eq!((l, c), (2, 17));
        assert!(m.starts_with("unbalanced ')'"), "{m}");
        assert_eq!(err(")").0, 1);
    }

    #[test]
    fn rejects_unterminated_strings() {
        let (l, c, m) = err("(version 1)\n(allow file-read*\n (literal \"/etc/passwd))\n");
        assert_eq!((l, c), (3, 11));
        assert_eq!(m, "unterminated string starting at 3:11");
        let (l, c, m) = err("(allow file-read* (regex #\"^/tmp))");
        assert_eq!((l, c), (1, 26));
        assert_eq!(m, "unterminated regex string #\"...\" starting at 1:26");
        assert_eq!(err("\"abc\\").2, "unterminated string starting at 1:1");
    }

    #[test]
    fn rejects_bad_tokens_with_positions() {
        assert_eq!(
            err("(a [b])"),
            (
                1,
                4,
                "'[' is not SBPL syntax (lists use '(' and ')')".into()
            )
        );
        assert_eq!(err("(a #zz)"), (1, 4, "unknown '#' syntax '#zz'".into()));
        assert_eq!(
            err("(a\n  | b)"),
            (2, 3, "unexpected character \"|\"".into())
        );
        assert_eq!(
            err("#\\bogus"),
            (1, 1, "unknown character name '#\\bogus'".into())
        );
        assert_eq!(
            err("(n 99999999999999999999)").2,
            "integer '99999999999999999999' does not fit in 64 bits"
        );
        assert_eq!(
            err("x #| open"),
            (
                1,
                3,
                "unterminated block comment '#|' starting at 1:3".into()
            )
        );
        assert_eq!(
            err("\"a\\q\\7\"").2,
            "octal escape '\\7' is not supported in SBPL strings"
        );
        assert_eq!(
            err("\"\\xZ1\"").2,
            "invalid escape '\\xZ1': expected two hex digits below 80"
        );
    }

    #[test]
    fn rejects_misplaced_quote_and_dot() {
        assert_eq!(
            err("(a ')"),
            (1, 4, "''' must be followed by a datum".into())
        );
        assert_eq!(err("`"), (1, 1, "'`' must be followed by a datum".into()));
        assert_eq!(err("(. a)").2, "'.' needs a datum before it");
        assert_eq!(
            err("(a . b c)"),
            (
                1,
                4,
                "'.' must be followed by exactly one datum and then ')'".into()
            )
        );
        assert_eq!(
            err("(a . )").2,
            "'.' must be followed by exactly one datum and then ')'"
        );
        assert_eq!(
            err("(a . b . c)"),
            (1, 8, "more than one '.' in a list".into())
        );
        assert_eq!(err("a . b"), (1, 3, "'.' outside a list".into()));
    }

    #[test]
    fn token_errors_win_over_the_unclosed_paren_they_cause() {
        // The unterminated string swallows the ')'; the string is the real problem.
        assert_eq!(
            err("(a (b \"c)\n(d)").2,
            "unterminated string starting at 1:7"
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let ok = format!("{}x{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let deep = format!(
            "{}x{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        let (l, c, m) = err(&deep);
        assert_eq!((l, c), (1, MAX_DEPTH + 1));
        assert_eq!(m, format!("nesting deeper than {MAX_DEPTH} levels"));
        assert!(parse(&"'".repeat(100_000)).is_err());
        assert!(parse(&"(".repeat(100_000)).is_err());
        // Quotes that finished do not count: a long flat quoted list is fine.
        assert!(parse(&format!("({})", "'a ".repeat(10_000))).is_ok());
    }

    #[test]
    fn huge_inputs_stay_linear() {
        // One 600 KB line with 400k data, and 100k unclosed block comments.
        let line = "(a é)".repeat(100_000);
        let data = parse(&line).unwrap();
        assert_eq!((data[99_999].line, data[99_999].column), (1, 499_996));
        assert!(parse(&"#|".repeat(100_000)).is_err());
        // Quote levels count toward the nesting bound too.
        let quoted = format!("{}x{}", "'(".repeat(65), ")".repeat(65));
        assert!(err(&quoted).2.starts_with("nesting deeper than"));
        let fine = format!("{}x{}", "'(".repeat(60), ")".repeat(60));
        assert!(parse(&fine).is_ok());
    }

    #[test]
    fn line_index_counts_characters() {
        let src = "ab\nçé\n\n😀x";
        let index = LineIndex::new(src);
        assert_eq!(index.line_col(0), (1, 1));
        assert_eq!(index.line_col(3), (2, 1));
        assert_eq!(index.line_col(5), (2, 2));
        assert_eq!(index.line_col(8), (3, 1));
        assert_eq!(index.line_col(9), (4, 1));
        assert_eq!(index.line_col(13), (4, 2));
        assert_eq!(index.line_col(14), (4, 3));
        let long = format!("{}\n{}z", "é".repeat(100), "ü".repeat(70));
        let index = LineIndex::new(&long);
        assert_eq!(index.line_col(long.len() - 1), (2, 71));
    }

    #[test]
    fn symbol_kinds() {
        assert_eq!(one("file-read*").kind, sym("file-read*"));
        assert_eq!(one("...").kind, sym("..."));
    }

    /// Input made of the characters the reader cares about.
    fn sbpl_noise() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let c = prop::sample::select(vec![
            '(', ')', '"', '#', '\\', ';', '|', '\'', '`', ',', '@', '.', ' ', '\n', 'a', '1', 'x',
            't', '[', 'é',
        ]);
        prop::collection::vec(c, 0..80).prop_map(|v| v.into_iter().collect())
    }

    proptest::proptest! {
        /// Every input either reads or gets an error production's message at a
        /// position inside the input; pest's own failure path is never taken.
        #[test]
        fn any_input_reads_or_names_a_position(src in sbpl_noise()) {
            if let Err(e) = parse(&src) {
                proptest::prop_assert!(e.offset <= src.len());
                proptest::prop_assert!(e.line >= 1 && e.line <= src.lines().count().max(1) + 1);
                proptest::prop_assert!(!e.message.starts_with("cannot read SBPL here"), "{}", e.message);
            }
        }
    }
}
