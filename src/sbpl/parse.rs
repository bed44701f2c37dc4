//! Reader: pest parse of `grammar/sbpl.pest`, then conversion to [`Datum`]s.
//!
//! The grammar has error productions for broken input; the conversion turns
//! them into one [`SyntaxError`] that names the culprit's line and column.

mod atoms;
mod depth;
mod lines;
#[cfg(test)]
mod tests;

use pest::iterators::Pair;
use pest::Parser as _;

use super::datum::{Datum, DatumKind, Span};
use atoms::{char_value, int_value, unescape};
use depth::check_nesting;
use lines::LineIndex;

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
