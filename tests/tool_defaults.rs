//! RFD 075's `conversation.tools.*.access`: with `--tool NAME`, the `"*"`
//! tool's access is the base layer under NAME's (POLICY.md §6), and the
//! RFD's unquoted spelling is a located syntax error whose help shows the
//! quoted key. Tested on the RFD's sensitive-paths example in
//! fixtures/rfd075-defaults/.

mod common;

use common::{root, sbx};
use sbx::compile::{self, Inputs, Options};
use sbx::ir::Os;
use sbx::policy::model::Enforcement;

const AS_WRITTEN: &str = "fixtures/rfd075-defaults/as-written.toml";
const QUOTED: &str = "fixtures/rfd075-defaults/quoted.toml";

fn tool(name: &str) -> Options {
    Options {
        tool: Some(name.into()),
        portable: true,
        ..Options::default()
    }
}

fn read(files: &[&str]) -> Inputs {
    let paths: Vec<camino::Utf8PathBuf> = files
        .iter()
        .map(|f| camino::Utf8PathBuf::from_path_buf(root().join(f)).unwrap())
        .collect();
    Inputs::read(&paths).unwrap()
}

#[test]
fn the_unquoted_star_is_sbx001_with_the_quoted_key() {
    let r = sbx(&[
        "check",
        AS_WRITTEN,
        "--tool",
        "cargo_check",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let d = &r.diagnostics()["diagnostics"][0];
    assert_eq!(d["code"], "SBX001");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(3), Some(21))
    );
    let help = d["help"].as_str().unwrap();
    assert!(
        help.contains(r#"[conversation.tools."*".access]"#),
        "{help}"
    );
}

#[test]
fn star_sensitive_paths_apply_to_every_tool() {
    let inputs = read(&[QUOTED]);
    for name in ["cargo_check", "backup"] {
        let (policy, _) = compile::load(&inputs, &tool(name)).unwrap();
        let ir = compile::lower_for(&policy, &tool(name), Os::Linux)
            .unwrap()
            .ir;
        for p in ["~/.myapp/secrets", "**/.secret.*"] {
            assert!(ir.sensitive_paths.iter().any(|s| s == p), "{name}: {p}");
        }
    }
    // Without the star's defaults the tool would have no such entry: the
    // RFD's example is the only place it is written.
    let text = std::fs::read_to_string(root().join(QUOTED)).unwrap();
    assert_eq!(text.matches("~/.myapp/secrets").count(), 1);
}

#[test]
fn check_warns_about_a_star_sensitive_path() {
    let r = sbx(&[
        "check",
        QUOTED,
        "--tool",
        "backup",
        "--portable",
        "--format",
        "json",
    ]);
    let diags = r.diagnostics();
    let hit = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        // `~/.myapp` covers the star's `~/.myapp/secrets`: hidden, and said.
        .find(|d| d["code"] == "SBX029")
        .unwrap_or_else(|| panic!("no SBX029: {}", r.stderr));
    assert!(
        hit["message"]
            .as_str()
            .unwrap()
            .contains("~/.myapp/secrets"),
        "{hit}"
    );
    assert_eq!(hit["file"], QUOTED);
}

/// The star is the base layer: lists append (its rules first), and a
/// scalar NAME sets wins, even when the star comes from a later file.
#[test]
fn name_is_layered_over_star() {
    let one = Inputs::from_text(
        "one.toml",
        "[conversation.tools.\"*\".access]\nenforcement = \"required\"\n[[conversation.tools.\"*\".access.fs]]\npath = \"docs\"\nread = true\n\n[conversation.tools.t.access]\nenforcement = \"best_effort\"\n[[conversation.tools.t.access.fs]]\npath = \"src\"\nread = true\n",
    );
    let (p, _) = compile::load(&one, &tool("t")).unwrap();
    assert_eq!(p.enforcement, Some(Enforcement::BestEffort));
    let paths: Vec<&str> =
        p.fs.as_ref()
            .unwrap()
            .iter()
            .map(|r| r.value.path.as_str())
            .collect();
    assert_eq!(paths, ["docs", "src"]);

    let mut two = Inputs::from_text(
        "a.toml",
        "[conversation.tools.t.access]\nenforcement = \"best_effort\"\n",
    );
    two.sources.extend(
        Inputs::from_text(
            "b.toml",
            "[conversation.tools.\"*\".access]\nenforcement = \"required\"\n[conversation.tools.t]\n",
        )
        .sources,
    );
    let (p, _) = compile::load(&two, &tool("t")).unwrap();
    assert_eq!(p.enforcement, Some(Enforcement::BestEffort));
    // Selecting the star itself is one layer, as any tool.
    let (p, _) = compile::load(&one, &tool("*")).unwrap();
    assert_eq!(p.enforcement, Some(Enforcement::Required));
}

#[test]
fn errors_in_the_star_are_reported_with_the_tools() {
    let bad = Inputs::from_text(
        "p.toml",
        "[conversation.tools.\"*\".access]\nversion = 2\n\n[conversation.tools.t.access]\nbogus = 1\n",
    );
    let f = compile::load(&bad, &tool("t")).unwrap_err();
    let got: Vec<(&str, usize)> = f
        .diagnostics
        .iter()
        .map(|d| (d.code, d.location.as_ref().unwrap().line))
        .collect();
    assert_eq!(got, [("SBX003", 2), ("SBX002", 5)]);
}

/// A tool repeating a rule of `"*"` overrides it, as a later layer does:
/// not a duplicate (SBX026); a repeat within one of them still is.
#[test]
fn a_tool_repeating_the_star_is_an_override() {
    let text = "[[conversation.tools.\"*\".access.fs]]\npath = \"src\"\nread = true\n\n[[conversation.tools.t.access.fs]]\npath = \"src\"\nread = true\nwrite = true\n";
    let dups = |text: &str| {
        let d = sbx::lint::check(
            &Inputs::from_text("p.toml", text),
            &tool("t"),
            &Default::default(),
        )
        .unwrap();
        d.iter().filter(|d| d.code == "SBX026").count()
    };
    assert_eq!(dups(text), 0);
    let twice =
        format!("{text}\n[[conversation.tools.t.access.fs]]\npath = \"./src\"\nread = true\n");
    assert_eq!(dups(&twice), 1);
}
