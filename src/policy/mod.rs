//! The front end: read each file, validate it against the schema and the
//! semantic rules, deserialise it, and merge the layers left to right.

pub mod caps;
pub mod hash;
pub mod locate;
pub mod merge;
pub mod model;
pub mod schema;
pub mod source;
pub mod typed;
pub mod validate;

use crate::diag::{codes, Diagnostic};
pub use merge::{Located, Policy};
use model::Layer;
use source::{Parsed, SourceFile};

/// One file after validation, ready to merge.
#[derive(Debug, Clone)]
pub struct LoadedLayer {
    pub parsed: Parsed,
    pub layer: Layer,
}

/// The tool whose `access` is every tool's defaults (RFD 075 writes
/// `conversation.tools.*.access`).
pub const ANY_TOOL: &str = "*";

/// Parse, select (`--tool`), schema-check, deserialise and semantically
/// check one file. Returns every problem found, not just the first.
pub fn load_layer(file: SourceFile, tool: Option<&str>) -> Result<LoadedLayer, Vec<Diagnostic>> {
    let mut parsed = Parsed::parse(file).map_err(|d| vec![d])?;
    if let Some(t) = tool {
        parsed = parsed.select_tool(t).map_err(|d| vec![d])?;
    }
    check_layer(parsed)
}

/// One file's layers for `--tool NAME`: `conversation.tools."*".access`
/// when the file has it (the defaults of every tool), then
/// `conversation.tools.NAME.access`. Both are checked, so one run reports
/// the errors of both.
pub fn load_tool_layers(
    file: SourceFile,
    tool: &str,
) -> Result<(Option<LoadedLayer>, LoadedLayer), Vec<Diagnostic>> {
    let parsed = Parsed::parse(file).map_err(|d| vec![d])?;
    let any = format!("/conversation/tools/{ANY_TOOL}");
    let defaults = (tool != ANY_TOOL && parsed.value.pointer(&any).is_some())
        .then(|| parsed.clone().select_tool(ANY_TOOL).map_err(|d| vec![d]));
    let mine = parsed.select_tool(tool).map_err(|d| vec![d]);
    let defaults = defaults.map(|p| p.and_then(check_layer)).transpose();
    let mine = mine.and_then(check_layer);
    match (defaults, mine) {
        (Ok(d), Ok(m)) => Ok((d, m)),
        (d, m) => Err(d.err().into_iter().chain(m.err()).flatten().collect()),
    }
}

/// Schema-check, deserialise and semantically check one selected part.
fn check_layer(parsed: Parsed) -> Result<LoadedLayer, Vec<Diagnostic>> {
    // A schema-valid document deserialises at once; only the others need
    // the schema validator (whose construction is most of a small compile)
    // for its located messages.
    let fast = typed::typed(&parsed);
    // Every check runs, so that all errors are reported in one go.
    let mut diags = match fast {
        Some(_) => Vec::new(),
        None => schema::validate(&parsed),
    };
    // Control characters anywhere are refused, schema-valid or not.
    validate::control_characters(&parsed, &mut diags);
    validate::layer(&parsed, &mut diags);
    diags.sort_by_key(|d| d.location.as_ref().map(|l| l.span.start));
    diags.dedup();
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    let layer: Layer = match fast.map_or_else(|| Layer::deserialize(&parsed.value), Ok) {
        Ok(l) => l,
        // The schema and the types are generated from one definition, so
        // this is a bug; still report it as a located error, not a panic.
        Err(e) => {
            return Err(vec![Diagnostic::new(
                codes::SCHEMA,
                format!("{}: {e}", parsed.file.name),
            )
            .at(parsed.locate(""))])
        }
    };
    Ok(LoadedLayer { parsed, layer })
}

/// A valid file as one layer, for unit tests.
#[cfg(test)]
pub(crate) fn test_layer(name: &str, text: &str) -> LoadedLayer {
    let file = SourceFile {
        name: name.into(),
        text: text.into(),
    };
    load_layer(file, None).unwrap()
}

/// Read a policy file from disk (I/O errors are exit-2 errors, SBX017).
pub fn read_file(path: &camino::Utf8Path) -> Result<SourceFile, Diagnostic> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Diagnostic::new(codes::IO, format!("cannot read {path}: {e}")))?;
    if meta.len() > source::MAX_FILE_BYTES as u64 {
        return Err(Diagnostic::new(
            codes::IO,
            format!(
                "{path}: policy file is {} bytes; the limit is {}",
                meta.len(),
                source::MAX_FILE_BYTES
            ),
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Diagnostic::new(codes::IO, format!("cannot read {path}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| not_utf8(path.as_str(), e))?;
    Ok(SourceFile {
        name: path.to_string(),
        text: text.into(),
    })
}

/// A file that is not UTF-8 is readable but not TOML: a located syntax
/// error (exit 1), pointing at the first bad byte.
fn not_utf8(name: &str, e: std::string::FromUtf8Error) -> Diagnostic {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.as_bytes();
    let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
    let (line, column) = crate::diag::line_col(valid, at);
    Diagnostic::new(
        codes::TOML_SYNTAX,
        format!("not UTF-8: invalid byte 0x{:02X} at offset {at}", bytes[at]),
    )
    .at(Some(crate::diag::Location {
        file: name.to_string(),
        line,
        column,
        span: at..at + 1,
    }))
    .help("policy files are TOML, which must be UTF-8: re-save the file as UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<LoadedLayer, Vec<Diagnostic>> {
        load_layer(
            SourceFile {
                name: "p.toml".into(),
                text: text.into(),
            },
            None,
        )
    }

    fn codes_of(text: &str) -> Vec<&'static str> {
        load(text).unwrap_err().iter().map(|d| d.code).collect()
    }

    #[test]
    fn schema_and_semantic_errors_are_reported_together() {
        let c = codes_of(
            "version = 2\nx = 1\n[[fs]]\npath = \"..\"\nread = true\n[[fs]]\npath = \"a\"\n",
        );
        assert_eq!(
            c,
            [
                codes::VERSION,
                codes::SCHEMA,
                codes::ESCAPES_WORKSPACE,
                codes::NO_CAPABILITY
            ]
        );
    }

    #[test]
    fn a_name_over_255_bytes_is_an_error_naming_the_rule() {
        let policy = |name: &str| format!("[[fs]]\npath = 'C:\\x\\{name}\\y'\nread = true\n");
        assert!(load(&policy(&"n".repeat(255))).is_ok());
        let d = load(&policy(&"n".repeat(256))).unwrap_err();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, codes::TOO_LONG);
        assert!(
            d[0].message.starts_with("`fs[0].path`: "),
            "{}",
            d[0].message
        );
        assert_eq!(d[0].location.as_ref().unwrap().line, 2);
        // Bytes, not characters: 128 two-byte characters are too many.
        let d = load(&format!(
            "[process]\nread_roots = ['/{}']\n",
            "é".repeat(128)
        ))
        .unwrap_err();
        assert!(d[0].message.contains("256 bytes"), "{}", d[0].message);
    }

    #[test]
    fn capabilities_unknown_or_never_kept_are_located_errors() {
        let ok = "[linux]\ncapabilities = [\"CAP_CHOWN\", \"CAP_FOWNER\"]\n";
        assert!(load(ok).is_ok());
        let d =
            load("[linux]\ncapabilities = [\"CAP_CHOWN\", \"CAP_SYS_ADMIN\",\n  \"CAP_NOPE\"]\n")
                .unwrap_err();
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().all(|d| d.code == codes::CAPABILITY));
        assert_eq!(
            d[0].message,
            "capability \"CAP_SYS_ADMIN\" is never kept: POLICY.md §13"
        );
        let l = d[0].location.as_ref().unwrap();
        assert_eq!((l.line, l.column), (2, 30));
        assert_eq!(
            d[1].message,
            "capability \"CAP_NOPE\" is not a Linux capability"
        );
        let l = d[1].location.as_ref().unwrap();
        assert_eq!((l.line, l.column), (3, 3));
    }

    #[test]
    fn integral_floats_are_not_integers() {
        // JSON Schema calls 80.0 an integer; serde does not. Both must refuse.
        let d = load("[[net]]\nport = 80.0\n").unwrap_err();
        assert_eq!(d.len(), 1);
        assert!(
            d[0].message.contains("found the float 80.0"),
            "{}",
            d[0].message
        );
        assert_eq!(d[0].location.as_ref().unwrap().line, 2);
    }

    #[test]
    fn datetimes_are_not_strings() {
        let d = load("[[fs]]\npath = 1979-05-27\nread = true\n").unwrap_err();
        assert_eq!(d.len(), 1);
        assert!(d[0]
            .message
            .contains("expected a string, found the datetime"));
    }

    #[test]
    fn not_utf8_is_a_located_syntax_error() {
        let e = String::from_utf8(b"a = 1\nb = \"x\xff\"\n".to_vec()).unwrap_err();
        let d = not_utf8("p.toml", e);
        assert_eq!(d.code, codes::TOML_SYNTAX);
        let l = d.location.unwrap();
        assert_eq!((l.line, l.column), (2, 7));
    }
}
