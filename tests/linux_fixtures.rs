//! The Linux artifact and the landlockconfig document of every fixture,
//! compiled in portable mode so the snapshots do not depend on this
//! machine. Each artifact must also be accepted by the loader's parser.

mod common;

use camino::Utf8PathBuf;
use sbx::back::landlock::{self, check_config, LandlockConfig};
use sbx::compile::{self, Inputs, Options};
use sbx::ir::Os;

fn options(tool: Option<&str>) -> Options {
    Options {
        workspace: Some(Utf8PathBuf::from("/work/ws")),
        home: Some(Utf8PathBuf::from("/home/user")),
        tool: tool.map(String::from),
        portable: true,
        approvals: Vec::new(),
        jobs: 0,
    }
}

#[test]
fn linux_artifacts_for_every_fixture() {
    let root = env!("CARGO_MANIFEST_DIR");
    for common::Case { name, files, tool } in common::fixture_cases() {
        let inputs = Inputs {
            sources: files
                .iter()
                .map(|f| {
                    let text = std::fs::read_to_string(format!("{root}/{f}")).unwrap();
                    Inputs::from_text(f, &text).sources.remove(0)
                })
                .collect(),
        };
        let opts = options(tool.as_deref());
        let (policy, _) =
            compile::load(&inputs, &opts).unwrap_or_else(|f| panic!("{name}: {:?}", f.diagnostics));
        let lowered = compile::lower_for(&policy, &opts, Os::Linux)
            .unwrap_or_else(|f| panic!("{name}: {:?}", f.diagnostics));
        let linux = landlock::emit(&lowered.ir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let doc =
            landlock::emit_landlockconfig(&lowered.ir).unwrap_or_else(|e| panic!("{name}: {e}"));

        let parsed: LandlockConfig = serde_json::from_str(&doc.text).unwrap();
        check_config(&parsed).unwrap_or_else(|e| panic!("{name}: {e}"));
        #[cfg(target_os = "linux")]
        {
            let art = sbx::runtime::linux::parse_artifact(&linux.text)
                .unwrap_or_else(|e| panic!("{name}: the loader refuses it: {e}"));
            assert_eq!(art.landlock, parsed, "{name}");
        }

        insta::with_settings!({
            snapshot_path => "../snapshots",
            prepend_module_to_snapshot => false,
            description => files.join(" "),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("linux_fixture_{name}"), linux.text);
            insta::assert_snapshot!(format!("landlockconfig_fixture_{name}"), doc.text);
        });
    }
}
