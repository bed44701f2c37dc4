//! Validation of read SBPL: rule shape, version, known operations and filters.
//!
//! Tolerant by design: real profiles are TinyScheme programs with helpers and
//! variables, so only input that cannot be a working profile is an error.
//! Unknown names are warnings, and names the file itself binds are not reported.

use std::collections::BTreeSet;
use std::fmt;

use camino::Utf8Path;

use super::datum::{Datum, DatumKind};
use super::escape::MAX_LITERAL_BYTES;
use super::names::{is_operation, COMMON_HELPERS, FILTERS, MODIFIERS, PATH_FILTERS, SCHEME_FORMS};
use super::{parse, pattern};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One problem at `line:column` (1-based). Line 0 means the whole file, as for
/// a file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub line: usize,
    pub column: usize,
    pub severity: Severity,
    pub message: String,
}

impl Finding {
    fn at(d: &Datum, severity: Severity, message: impl Into<String>) -> Self {
        Finding {
            line: d.line,
            column: d.column,
            severity,
            message: message.into(),
        }
    }

    /// `file:line:column: error: message`, the format of `sbx sbpl check`.
    pub fn render(&self, file: &str) -> String {
        if self.line == 0 {
            format!("{file}: {}: {}", self.severity, self.message)
        } else {
            format!(
                "{file}:{}:{}: {}: {}",
                self.line, self.column, self.severity, self.message
            )
        }
    }
}

pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

/// Read and check one file. Unreadable files and syntax errors are findings too.
pub fn check_file(path: &Utf8Path) -> Vec<Finding> {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(src) => check_source(&src),
            Err(e) => vec![Finding {
                line: 0,
                column: 0,
                severity: Severity::Error,
                message: format!(
                    "not UTF-8 (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
            }],
        },
        Err(e) => vec![Finding {
            line: 0,
            column: 0,
            severity: Severity::Error,
            message: format!("cannot read file: {e}"),
        }],
    }
}

/// Parse and check SBPL source; a syntax error is the only finding then.
pub fn check_source(src: &str) -> Vec<Finding> {
    match parse(src) {
        Ok(data) => check(&data),
        Err(e) => vec![Finding {
            line: e.line,
            column: e.column,
            severity: Severity::Error,
            message: e.message,
        }],
    }
}

/// Check top-level forms, sorted by position.
pub fn check(data: &[Datum]) -> Vec<Finding> {
    let mut bound = BTreeSet::new();
    for d in data {
        collect_bound(d, &mut bound);
    }
    let mut c = Checker {
        bound,
        findings: Vec::new(),
    };
    c.top_level(data);
    data.iter().for_each(|d| c.long_strings(d));
    c.findings.sort_by_key(|f| (f.line, f.column));
    c.findings
}

struct Checker<'a> {
    /// Names the file defines or binds (functions, variables, parameters).
    bound: BTreeSet<&'a str>,
    findings: Vec<Finding>,
}

impl<'a> Checker<'a> {
    fn error(&mut self, d: &Datum, message: impl Into<String>) {
        self.findings.push(Finding::at(d, Severity::Error, message));
    }

    fn warn(&mut self, d: &Datum, message: impl Into<String>) {
        self.findings
            .push(Finding::at(d, Severity::Warning, message));
    }

    fn top_level(&mut self, data: &'a [Datum]) {
        let mut seen_version = false;
        let mut seen_rule = false;
        for (i, d) in data.iter().enumerate() {
            match &d.kind {
                DatumKind::List(_) if d.head() == Some("version") => {
                    if seen_version {
                        self.error(d, "duplicate (version ...) form");
                    } else if seen_rule {
                        self.error(d, "(version ...) must come before the first rule");
                    } else if i > 0 {
                        // php-safe/profile.sb defines helpers first, and works.
                        self.warn(d, "(version ...) should be the first form of the profile");
                    }
                    seen_version = true;
                    self.version(d);
                }
                DatumKind::Symbol(s) => self.warn(
                    d,
                    format!(
                        "top-level symbol '{s}' has no effect (unreplaced template placeholder?)"
                    ),
                ),
                DatumKind::List(_) | DatumKind::DottedList(..) => {
                    seen_rule |= matches!(d.head(), Some("allow" | "deny"));
                    self.form(d)
                }
                DatumKind::Quote(_) | DatumKind::Quasiquote(_) => {}
                _ => self.warn(d, "top-level constant has no effect"),
            }
        }
    }

    fn version(&mut self, d: &Datum) {
        let args = &d.as_list().expect("version form is a list")[1..];
        match args {
            [v] => match v.kind {
                DatumKind::Int(1) => {}
                DatumKind::Int(n) => self.warn(
                    v,
                    format!("profile version {n}: sbx emits and evaluates version 1 only"),
                ),
                _ => self.error(v, "version must be an integer, e.g. (version 1)"),
            },
            _ => self.error(d, "version takes exactly one integer, e.g. (version 1)"),
        }
    }

    /// Any form: rules are checked wherever they occur (inside `define`, `if`,
    /// ...), except in quoted data, whose meaning depends on later evaluation.
    fn form(&mut self, d: &'a Datum) {
        match &d.kind {
            DatumKind::List(items) => match d.head() {
                Some("allow" | "deny") => self.rule(d, items),
                _ => items.iter().for_each(|i| self.form(i)),
            },
            DatumKind::DottedList(items, tail) => {
                items.iter().for_each(|i| self.form(i));
                self.form(tail);
            }
            _ => {}
        }
    }

    /// Every string literal, quoted data included: the reader limit applies to all.
    fn long_strings(&mut self, d: &Datum) {
        match &d.kind {
            DatumKind::Str(text) | DatumKind::Regex(text) if text.len() > MAX_LITERAL_BYTES => {
                self.error(
                    d,
                    format!(
                        "string literal is {} bytes; sandbox-exec rejects literals over {MAX_LITERAL_BYTES} bytes",
                        text.len()
                    ),
                );
            }
            DatumKind::List(items) => items.iter().for_each(|i| self.long_strings(i)),
            DatumKind::DottedList(items, tail) => {
                items.iter().for_each(|i| self.long_strings(i));
                self.long_strings(tail);
            }
            DatumKind::Quote(i)
            | DatumKind::Quasiquote(i)
            | DatumKind::Unquote(i)
            | DatumKind::UnquoteSplicing(i) => self.long_strings(i),
            _ => {}
        }
    }

    fn rule(&mut self, d: &'a Datum, items: &'a [Datum]) {
        let verb = items[0].as_symbol().expect("rule head is a symbol");
        let mut operations = 0;
        for arg in &items[1..] {
            match &arg.kind {
                DatumKind::Symbol(s) => {
                    operations += 1;
                    if !is_operation(s) && !self.bound.contains(s.as_str()) {
                        self.warn(arg, format!("unknown operation '{s}'"));
                    }
                }
                DatumKind::List(list) => match arg.head() {
                    Some("with") => self.modifier(arg, &list[1..]),
                    _ => self.filter(arg),
                },
                DatumKind::Str(_) | DatumKind::Regex(_) => {
                    self.error(arg, format!("a string cannot stand alone in '{verb}': wrap it in a filter such as (literal ...)"));
                }
                DatumKind::Int(_) | DatumKind::Bool(_) | DatumKind::Char(_) => {
                    self.error(arg, format!("unexpected constant in '{verb}' rule"));
                }
                _ => {}
            }
        }
        if operations == 0 {
            self.error(
                d,
                format!("'{verb}' needs an operation, e.g. ({verb} file-read* ...)"),
            );
        }
    }

    fn modifier(&mut self, d: &Datum, args: &[Datum]) {
        match args.first().and_then(Datum::as_symbol) {
            Some(m) if MODIFIERS.contains(&m) => {}
            Some(m) => self.warn(d, format!("unknown modifier (with {m} ...)")),
            None => self.error(d, "(with ...) needs a modifier name, e.g. (with no-log)"),
        }
    }

    fn filter(&mut self, d: &'a Datum) {
        let items = d.as_list().expect("filters are lists");
        let Some(head) = d.head() else {
            self.warn(d, "filter does not start with a name");
            return;
        };
        let args = &items[1..];
        match head {
            "require-all" | "require-any" => {
                if args.is_empty() {
                    self.warn(d, format!("({head}) without filters"));
                }
                self.nested_filters(args);
            }
            "require-not" => {
                // Decompiled profiles (SandBlaster) write several; keep them readable.
                if args.len() != 1 {
                    self.warn(
                        d,
                        format!("require-not takes one filter, found {}", args.len()),
                    );
                }
                self.nested_filters(args);
            }
            "apply-message-filter" => args.iter().for_each(|a| self.form(a)),
            h if PATH_FILTERS.contains(&h) => self.path_args(d, head, args),
            h if h == "regex" || h.ends_with("-regex") && FILTERS.contains(&h) => {
                self.regex_args(d, head, args)
            }
            h if FILTERS.contains(&h) => {}
            h if SCHEME_FORMS.contains(&h) || COMMON_HELPERS.contains(&h) => {}
            h if self.bound.contains(h) => {}
            h => self.warn(
                d,
                format!("unknown filter '{h}' (not built in, not defined in this file)"),
            ),
        }
    }

    fn nested_filters(&mut self, args: &'a [Datum]) {
        for a in args {
            match &a.kind {
                DatumKind::List(_) => self.filter(a),
                DatumKind::Str(_) | DatumKind::Regex(_) | DatumKind::Int(_) => {
                    self.error(a, "expected a filter, found a constant")
                }
                _ => {}
            }
        }
    }

    fn path_args(&mut self, d: &Datum, head: &str, args: &[Datum]) {
        if args.is_empty() {
            // Also a SandBlaster artefact; sandbox-exec would reject it.
            self.warn(d, format!("({head}) without a path matches nothing"));
        }
        for a in args {
            match &a.kind {
                DatumKind::Str(p) | DatumKind::Regex(p)
                    if !p.starts_with('/') && !p.starts_with("${") =>
                {
                    self.warn(a, format!("{head} path {p:?} is not absolute"));
                }
                DatumKind::Int(_) | DatumKind::Bool(_) | DatumKind::Char(_) => {
                    self.error(a, format!("{head} expects a path string"));
                }
                _ => {}
            }
        }
    }

    fn regex_args(&mut self, d: &Datum, head: &str, args: &[Datum]) {
        if args.is_empty() {
            self.error(d, format!("({head}) needs a regex"));
        }
        for a in args {
            match &a.kind {
                DatumKind::Str(r) | DatumKind::Regex(r) => {
                    if let Err(e) = pattern::compile(r) {
                        let first = e.to_string();
                        let reason = first.lines().last().unwrap_or("invalid");
                        self.warn(
                            a,
                            format!("{head} {r:?} may not be a valid regex: {reason}"),
                        );
                    }
                }
                DatumKind::Int(_) | DatumKind::Bool(_) | DatumKind::Char(_) => {
                    self.error(a, format!("{head} expects a regex string"));
                }
                _ => {}
            }
        }
    }
}

/// Names bound by `define`, `define-once`, `macro`, `let`-family, `lambda` and `do`.
fn collect_bound<'a>(d: &'a Datum, out: &mut BTreeSet<&'a str>) {
    let items: &[Datum] = match &d.kind {
        DatumKind::List(items) => items,
        DatumKind::DottedList(items, tail) => {
            collect_bound(tail, out);
            items
        }
        DatumKind::Quote(inner)
        | DatumKind::Quasiquote(inner)
        | DatumKind::Unquote(inner)
        | DatumKind::UnquoteSplicing(inner) => return collect_bound(inner, out),
        _ => return,
    };
    match d.head() {
        Some("define" | "define-once" | "macro" | "lambda") => {
            if let Some(target) = items.get(1) {
                params(target, out);
            }
        }
        Some("let" | "let*" | "letrec" | "do") => {
            let mut rest = &items[1..];
            if let Some(name) = rest.first().and_then(Datum::as_symbol) {
                out.insert(name);
                rest = &rest[1..];
            }
            for binding in rest.first().and_then(Datum::as_list).unwrap_or(&[]) {
                if let Some(name) = binding.as_list().and_then(|b| b.first()?.as_symbol()) {
                    out.insert(name);
                }
            }
        }
        _ => {}
    }
    items.iter().for_each(|i| collect_bound(i, out));
}

/// Every symbol of a parameter list such as `(f a b . rest)`, or a lone symbol.
fn params<'a>(d: &'a Datum, out: &mut BTreeSet<&'a str>) {
    match &d.kind {
        DatumKind::Symbol(s) => {
            out.insert(s);
        }
        DatumKind::List(items) => items.iter().for_each(|i| params(i, out)),
        DatumKind::DottedList(items, tail) => {
            items.iter().for_each(|i| params(i, out));
            params(tail, out);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Findings as `line:column severity message` strings.
    fn findings(src: &str) -> Vec<String> {
        check_source(src)
            .iter()
            .map(|f| format!("{}:{} {} {}", f.line, f.column, f.severity, f.message))
            .collect()
    }

    fn errors(src: &str) -> Vec<String> {
        findings(src)
            .into_iter()
            .filter(|f| f.contains(" error "))
            .collect()
    }

    #[test]
    fn clean_profile_has_no_findings() {
        let src = r#"(version 1)
(deny default (with no-log))
(allow file-read* file-write-data (subpath (param "HOME")) (literal "/dev/null"))
(allow file-write* (require-all (subpath "/tmp") (require-not (regex #"\.git/"))))
(allow process-exec (path "/bin/ls") (with no-sandbox))
(allow network-outbound (remote ip "localhost:*"))
"#;
        assert_eq!(findings(src), Vec::<String>::new());
    }

    #[test]
    fn version_rules() {
        assert_eq!(
            errors("(version 1)\n(version 1)"),
            ["2:1 error duplicate (version ...) form"]
        );
        assert_eq!(
            errors("(allow file-read*)\n(version 1)"),
            ["2:1 error (version ...) must come before the first rule"]
        );
        assert_eq!(
            findings("(define x 1)\n(version 1)"),
            ["2:1 warning (version ...) should be the first form of the profile"]
        );
        assert_eq!(
            findings("(version 3)"),
            ["1:10 warning profile version 3: sbx emits and evaluates version 1 only"]
        );
        assert_eq!(
            errors("(version \"1\")"),
            ["1:10 error version must be an integer, e.g. (version 1)"]
        );
        assert_eq!(
            errors("(version)"),
            ["1:1 error version takes exactly one integer, e.g. (version 1)"]
        );
    }

    #[test]
    fn rules_need_an_operation() {
        assert_eq!(
            errors("(allow (literal \"/a\"))"),
            ["1:1 error 'allow' needs an operation, e.g. (allow file-read* ...)"]
        );
        assert_eq!(
            errors("(define (f) (deny (with no-log)))"),
            ["1:13 error 'deny' needs an operation, e.g. (deny file-read* ...)"]
        );
        assert_eq!(
            errors("(allow file-read* \"/etc\")"),
            ["1:19 error a string cannot stand alone in 'allow': wrap it in a filter such as (literal ...)"]
        );
        assert_eq!(
            errors("(allow file-read* 42)"),
            ["1:19 error unexpected constant in 'allow' rule"]
        );
    }

    #[test]
    fn unknown_names_are_warnings() {
        assert_eq!(
            findings("(allow file-raed* (subpth \"/a\") (with no-lgo))"),
            [
                "1:8 warning unknown operation 'file-raed*'",
                "1:19 warning unknown filter 'subpth' (not built in, not defined in this file)",
                "1:33 warning unknown modifier (with no-lgo ...)",
            ]
        );
        assert_eq!(
            findings("(allow priv-netinet-reservedport)"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn names_the_file_binds_are_known() {
        let src = r#"(define (cache-subpath rel) (subpath (string-append "/c" rel)))
(let ((my-filter (literal "/x")))
  (allow file-read* my-filter (cache-subpath "/y")))
(define (op-read op) (allow file-read* (home-subpath "/z")))"#;
        assert_eq!(findings(src), Vec::<String>::new());
    }

    #[test]
    fn filter_arguments() {
        assert_eq!(
            findings("(allow file-read* (literal 7) (subpath \"rel\") (literal))"),
            [
                "1:28 error literal expects a path string",
                "1:40 warning subpath path \"rel\" is not absolute",
                "1:47 warning (literal) without a path matches nothing",
            ]
        );
        assert_eq!(
            findings("(allow file-read* (regex #\"^(?/private)\" \"^/ok$\"))"),
            ["1:26 warning regex \"^(?/private)\" may not be a valid regex: error: unrecognized flag"]
        );
        assert_eq!(
            findings(
                "(allow file-read* (require-not (literal \"/a\") (literal \"/b\")) (require-any))"
            ),
            [
                "1:19 warning require-not takes one filter, found 2",
                "1:63 warning (require-any) without filters",
            ]
        );
        assert_eq!(
            errors("(allow file-read* (require-all \"/a\"))"),
            ["1:32 error expected a filter, found a constant"]
        );
    }

    #[test]
    fn nested_rules_and_quoted_data() {
        // Rules inside apply-message-filter are checked; quoted templates are not.
        assert_eq!(
            errors("(allow iokit-open-user-client (apply-message-filter (deny (with no-log))))"),
            ["1:53 error 'deny' needs an operation, e.g. (deny file-read* ...)"]
        );
        assert_eq!(
            findings("(macro (m form) `(allow ,@(cdr form)))"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn over_long_literals_are_errors() {
        let long = "a".repeat(MAX_LITERAL_BYTES + 1);
        assert_eq!(
            errors(&format!("(allow file-read* (literal \"/{long}\"))")),
            [format!("1:28 error string literal is {} bytes; sandbox-exec rejects literals over 1024 bytes", MAX_LITERAL_BYTES + 2)]
        );
    }

    #[test]
    fn top_level_placeholders_warn() {
        assert_eq!(
            findings("(version 1)\n__PLACEHOLDER__\n"),
            ["2:1 warning top-level symbol '__PLACEHOLDER__' has no effect (unreplaced template placeholder?)"]
        );
    }

    #[test]
    fn syntax_errors_become_findings() {
        assert_eq!(
            findings("(allow file-read*\n"),
            ["1:1 error unclosed '(' opened at 1:1"]
        );
    }

    #[test]
    fn render_and_check_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = camino::Utf8PathBuf::from_path_buf(dir.path().join("p.sb")).unwrap();
        std::fs::write(&path, "(version 1)\n(allow file-read* (literal \"/a)\n").unwrap();
        let found = check_file(&path);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].render("p.sb"),
            "p.sb:2:28: error: unterminated string starting at 2:28"
        );
        assert!(has_errors(&found));

        let missing = check_file(&path.with_file_name("missing.sb"));
        assert_eq!(missing[0].line, 0);
        assert!(missing[0]
            .render("missing.sb")
            .starts_with("missing.sb: error: cannot read file: "));

        std::fs::write(&path, b"(allow \xff)").unwrap();
        assert_eq!(
            check_file(&path)[0].render("p.sb"),
            "p.sb: error: not UTF-8 (invalid byte at offset 7)"
        );
    }
}
