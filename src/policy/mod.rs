//! The front end: read each file, validate it against the schema and the
//! semantic rules, deserialise it, and merge the layers left to right.

pub mod merge;
pub mod model;
pub mod schema;
pub mod source;
pub mod typed;
pub mod validate;

use crate::diag::{codes, Diagnostic};
pub use merge::{Located, Policy};
use model::Layer;
use serde::Deserialize;
use source::{Parsed, SourceFile};

/// One file after validation, ready to merge.
#[derive(Debug, Clone)]
pub struct LoadedLayer {
    pub parsed: Parsed,
    pub layer: Layer,
}

/// Parse, select (`--tool`), schema-check, deserialise and semantically
/// check one file. Returns every problem found, not just the first.
pub fn load_layer(file: SourceFile, tool: Option<&str>) -> Result<LoadedLayer, Vec<Diagnostic>> {
    let mut parsed = Parsed::parse(file).map_err(|d| vec![d])?;
    if let Some(t) = tool {
        parsed = parsed.select_tool(t).map_err(|d| vec![d])?;
    }
    // Control characters anywhere are refused, schema-valid or not.
    let mut control = Vec::new();
    validate::control_characters(&parsed, &mut control);
    let fast = typed::typed(&parsed.value);
    let (layer, mut diags) = match fast {
        Some(l) if control.is_empty() => (l, control),
        // Something is wrong: the schema validator's located messages.
        _ => {
            let mut diags = schema::validate(&parsed);
            diags.append(&mut control);
            if diags.iter().any(Diagnostic::is_error) {
                return Err(diags);
            }
            match fast.map_or_else(|| Layer::deserialize(&parsed.value), Ok) {
                Ok(l) => (l, diags),
                // The schema and the types are generated from one
                // definition, so this is a bug; still report it as a
                // located error, not a panic.
                Err(e) => {
                    return Err(vec![Diagnostic::new(
                        codes::SCHEMA,
                        format!("{}: {e}", parsed.file.name),
                    )
                    .at(parsed.locate(""))])
                }
            }
        }
    };
    validate::layer(&layer, &parsed, &mut diags);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    Ok(LoadedLayer { parsed, layer })
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
    let text = String::from_utf8(bytes).map_err(|e| {
        Diagnostic::new(
            codes::IO,
            format!(
                "{path}: not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
        .help("policy files are TOML, which must be UTF-8")
    })?;
    Ok(SourceFile {
        name: path.to_string(),
        text,
    })
}
