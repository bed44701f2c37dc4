//! The data tree the reader produces: TinyScheme values with source positions.

/// Byte offsets `start..end` into the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// One value read from SBPL source, with the position of its first character.
/// `line` and `column` are 1-based; `column` counts characters, not bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datum {
    pub kind: DatumKind,
    pub span: Span,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatumKind {
    List(Vec<Datum>),
    /// `(a b . c)`: at least one item before the dot, exactly one after it.
    DottedList(Vec<Datum>, Box<Datum>),
    /// `"..."` with escapes decoded.
    Str(String),
    /// `#"..."` exactly as written between the quotes (backslashes kept).
    Regex(String),
    Symbol(String),
    Int(i64),
    Bool(bool),
    Char(char),
    Quote(Box<Datum>),
    Quasiquote(Box<Datum>),
    Unquote(Box<Datum>),
    UnquoteSplicing(Box<Datum>),
}

impl Datum {
    pub fn as_symbol(&self) -> Option<&str> {
        match &self.kind {
            DatumKind::Symbol(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Datum]> {
        match &self.kind {
            DatumKind::List(items) => Some(items),
            _ => None,
        }
    }

    /// The symbol at the head of a proper list, e.g. `allow` for `(allow ...)`.
    pub fn head(&self) -> Option<&str> {
        self.as_list()?.first()?.as_symbol()
    }

    /// `"..."` and `#"..."` are both strings to TinyScheme; only the reader treats
    /// their backslashes differently.
    pub fn as_string(&self) -> Option<&str> {
        match &self.kind {
            DatumKind::Str(s) | DatumKind::Regex(s) => Some(s),
            _ => None,
        }
    }

    /// `line:column` for messages.
    pub fn location(&self) -> String {
        format!("{}:{}", self.line, self.column)
    }
}
