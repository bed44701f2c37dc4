//! Diagnostics: located, coded messages rendered for people (source line
//! with a caret) or machines (JSON, SARIF, GitHub annotations).

pub mod codes;
pub mod github;
pub mod sarif;

use serde::Serialize;
use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Note,
}

/// Where in which file: 1-based line and column plus the byte span.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub location: Option<Location>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(code: &'static str, message: impl Into<String>) -> Diagnostic {
        let severity = codes::lookup(code)
            .map(|c| c.severity)
            .unwrap_or(Severity::Error);
        Diagnostic {
            severity,
            code,
            message: message.into(),
            location: None,
            help: None,
        }
    }
    pub fn at(mut self, loc: Option<Location>) -> Diagnostic {
        self.location = loc;
        self
    }
    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
    pub fn severity(mut self, s: Severity) -> Diagnostic {
        self.severity = s;
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Byte offset → 1-based line and column (columns count characters).
/// For many lookups in one text, build a [`LineIndex`] once instead.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_col(text, offset)
}

/// Start offsets of every line, so each lookup is a binary search rather
/// than a scan of the file (policies with 100,000 rules).
#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, text[start..offset].chars().count() + 1)
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Input files by name, so renderers can show the source line.
#[derive(Debug, Default, Clone)]
pub struct Files {
    /// Name, text, and the offset where each line starts. The text is
    /// shared with the input file's: a copy of a 100,000-rule policy was
    /// 5 MiB of the peak.
    files: Vec<(String, std::sync::Arc<str>, Vec<usize>)>,
}

impl Files {
    pub fn add(&mut self, name: &str, text: impl Into<std::sync::Arc<str>>) {
        if self.get(name).is_none() {
            let text: std::sync::Arc<str> = text.into();
            let starts = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                // The end of a file with a final line break is shown on its
                // last line, not on an empty one after it.
                .filter(|&i| i == 0 || i < text.len())
                .collect();
            self.files.push((name.to_string(), text, starts));
        }
    }
    pub fn get(&self, name: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, t, _)| &**t)
    }

    /// The line of `name` that `span` starts on: its number (from 1), its
    /// text with the line break, and `span` within it, cut at the line's
    /// end. Renderers get one line, not the whole file, so that many
    /// diagnostics on a large policy cost no more than a few lines each.
    fn excerpt(&self, name: &str, span: &Range<usize>) -> Option<(usize, &str, Range<usize>)> {
        let (_, text, starts) = self.files.iter().find(|(n, _, _)| n == name)?;
        let span = clamp_span(text, span);
        let line = starts.partition_point(|&s| s <= span.start);
        let begin = starts[line - 1];
        let end = starts.get(line).copied().unwrap_or(text.len());
        Some((
            line,
            &text[begin..end],
            span.start - begin..span.end - begin,
        ))
    }
}

/// rustc/cargo-deny style: `error[SBX004]: …` with the source line and a caret.
pub fn render_human(diags: &[Diagnostic], files: &Files, color: bool) -> String {
    use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for d in diags {
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Note => Level::NOTE,
        };
        let title = level.primary_title(d.message.as_str()).id(d.code);
        let mut group = Group::with_title(title);
        if let Some(loc) = &d.location {
            match files.excerpt(&loc.file, &loc.span) {
                Some((line, text, span)) => {
                    group = group.element(
                        Snippet::source(text)
                            .line_start(line)
                            .path(loc.file.as_str())
                            .annotation(AnnotationKind::Primary.span(span)),
                    );
                }
                None => {
                    group = group.element(
                        Level::NOTE.message(format!("{}:{}:{}", loc.file, loc.line, loc.column)),
                    );
                }
            }
        }
        if let Some(h) = &d.help {
            group = group.element(Level::HELP.message(h.as_str()));
        }
        // A blank line between diagnostics, as rustc does.
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&renderer.render(&[group]));
        out.push('\n');
    }
    out
}

fn clamp_span(text: &str, span: &Range<usize>) -> Range<usize> {
    let start = floor_char_boundary(text, span.start.min(text.len()));
    let mut end = span.end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    // Point at the first line only: long multi-line tables drown the caret.
    let end = text[start..end]
        .find('\n')
        .map(|i| start + i)
        .unwrap_or(end);
    start..end.max(start)
}

/// The JSON form of CLI.md.
pub fn render_json(diags: &[Diagnostic]) -> String {
    #[derive(Serialize)]
    struct Item<'a> {
        severity: Severity,
        code: &'a str,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        column: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        help: Option<&'a str>,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        diagnostics: Vec<Item<'a>>,
        errors: usize,
        warnings: usize,
    }
    let doc = Doc {
        diagnostics: diags
            .iter()
            .map(|d| Item {
                severity: d.severity,
                code: d.code,
                message: &d.message,
                file: d.location.as_ref().map(|l| l.file.as_str()),
                line: d.location.as_ref().map(|l| l.line),
                column: d.location.as_ref().map(|l| l.column),
                help: d.help.as_deref(),
            })
            .collect(),
        errors: count(diags, Severity::Error),
        warnings: count(diags, Severity::Warning),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("diagnostics serialise");
    s.push('\n');
    s
}

pub fn count(diags: &[Diagnostic], sev: Severity) -> usize {
    diags.iter().filter(|d| d.severity == sev).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let t = "ab\ncé\nx";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 3), (2, 1));
        assert_eq!(line_col(t, 6), (2, 3));
        assert_eq!(line_col(t, 7), (3, 1));
        assert_eq!(line_col(t, 99), (3, 2));
    }

    #[test]
    fn human_output_has_caret_and_code() {
        let mut files = Files::default();
        files.add("p.toml", "version = 2\n");
        let d = Diagnostic::new(codes::VERSION, "unsupported version 2")
            .at(Some(Location {
                file: "p.toml".into(),
                line: 1,
                column: 11,
                span: 10..11,
            }))
            .help("use version = 1");
        let s = render_human(&[d], &files, false);
        assert!(s.contains("error[SBX003]: unsupported version 2"), "{s}");
        assert!(s.contains("p.toml:1:11"), "{s}");
        assert!(s.contains('^'), "{s}");
        assert!(s.contains("help: use version = 1"), "{s}");
    }

    /// Rendering one line gives what rendering the whole file gives.
    #[test]
    fn excerpt_renders_as_whole_file() {
        use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
        for text in [
            "a = 1\n\n[[fs]]\npath = \"é\"\nread = true\n",
            "x = 1\ny",
            "",
        ] {
            let mut files = Files::default();
            files.add("p.toml", text);
            for start in 0..=text.len() + 1 {
                for len in [0, 1, 3, 40] {
                    let span = start..start + len;
                    let whole = Snippet::source(text)
                        .path("p.toml")
                        .annotation(AnnotationKind::Primary.span(clamp_span(text, &span)));
                    let want = Renderer::plain()
                        .render(&[
                            Group::with_title(Level::ERROR.primary_title("m")).element(whole)
                        ]);
                    let d = Diagnostic::new(codes::VERSION, "m").at(Some(Location {
                        file: "p.toml".into(),
                        line: 1,
                        column: 1,
                        span: span.clone(),
                    }));
                    let got = render_human(&[d], &files, false);
                    let got = got.replacen("error[SBX003]", "error", 1);
                    assert_eq!(got.trim_end(), want.trim_end(), "{text:?} {span:?}");
                }
            }
        }
    }
}
