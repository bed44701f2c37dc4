//! Snapshots of the Windows spec (`--target windows --portable`) for every
//! fixture, lowered for Windows and emitted even where `required` would
//! refuse it, so every policy's spec is reviewed.

use camino::Utf8PathBuf;
use sbx::back::windows::{emit, Spec};
use sbx::compile::{load, lower_for, Inputs, Options};
use sbx::ir::Os;

fn spec_text(files: &[Utf8PathBuf], tool: Option<&str>) -> String {
    let opts = Options {
        portable: true,
        home: Some("/home/user".into()),
        workspace: Some("/work/space".into()),
        tool: tool.map(String::from),
        ..Options::default()
    };
    let inputs = Inputs::read(files).expect("fixture readable");
    let (policy, _) = load(&inputs, &opts).expect("fixture loads");
    let lowered = lower_for(&policy, &opts, Os::Windows).expect("fixture lowers");
    let text = emit(&lowered.ir).expect("windows emits").text;
    // What compile writes is exactly what the loader reads back.
    Spec::from_json(&text).expect("the loader accepts the spec");
    text
}

/// `conversation.tools.*` names of an RFD 075-style config, if any.
fn tools(path: &std::path::Path) -> Vec<String> {
    let doc: toml::Table = std::fs::read_to_string(path).unwrap().parse().unwrap();
    doc.get("conversation")
        .and_then(|c| c.get("tools"))
        .and_then(|t| t.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn windows_spec() {
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::glob!("../fixtures", "*.toml", |path| {
            // Relative (tests run in the crate root): rule labels name the file.
            let rel = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
            let file = Utf8PathBuf::from_path_buf(rel.to_path_buf()).unwrap();
            let names = tools(path);
            if names.is_empty() {
                insta::assert_snapshot!(spec_text(&[file], None));
            } else {
                for t in names {
                    let name = format!("windows_spec_{}_{t}", file.file_stem().unwrap());
                    insta::assert_snapshot!(name, spec_text(std::slice::from_ref(&file), Some(&t)));
                }
            }
        });
    });
}

#[test]
fn windows_spec_for_layers() {
    let dir = Utf8PathBuf::from("fixtures/layers");
    let files = ["base.toml", "team.toml", "local.toml"].map(|f| dir.join(f));
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("windows_spec_layers", spec_text(&files, None));
    });
}
