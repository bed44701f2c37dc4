//! SARIF output validated against the structure of SARIF 2.1.0 (the
//! subset in tests/data) and cross-checked against the catalogue.

mod common;
use common::Host;
use sbx::diag::{codes, sarif, Diagnostic, Location};
use serde_json::Value;

type Breaker = fn(&mut Value);

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/sarif-2.1.0-subset.schema.json"
    ))
    .unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Beyond the schema: ids are the catalogue in order, and every result's
/// ruleIndex names its ruleId.
fn cross_check(doc: &Value) {
    // sarif-multitool wants a driver `informationUri` (SARIF2005): the
    // published docs of the codes, a file of this repository.
    let info = doc["runs"][0]["tool"]["driver"]["informationUri"]
        .as_str()
        .unwrap();
    let (_, file) = info.split_once("/source/").unwrap();
    assert!(common::root().join(file).is_file(), "{info}");
    let rules = doc["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let cat: Vec<&str> = codes::CATALOGUE.iter().map(|c| c.code).collect();
    assert_eq!(ids, cat);
    for (r, c) in rules.iter().zip(codes::CATALOGUE) {
        assert_eq!(r["shortDescription"]["text"], c.title);
        assert_eq!(r["fullDescription"]["text"], c.explanation);
    }
    for res in doc["runs"][0]["results"].as_array().unwrap() {
        let i = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], res["ruleId"]);
    }
}

#[test]
fn cli_sarif_is_valid() {
    let h = Host::new();
    let v = validator();
    for p in ["fixtures/lint.toml", "fixtures/baseline/new.toml"] {
        let (_, out, _) = h.sbx(&[
            "check",
            p,
            "--format",
            "sarif",
            "--baseline",
            "fixtures/baseline/old.toml",
        ]);
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{p}");
        cross_check(&doc);
        let results = doc["runs"][0]["results"].as_array().unwrap();
        assert!(results.len() >= 5, "{p}: {results:?}");
        // Location-less diagnostics are attached to the policy file.
        assert!(results
            .iter()
            .all(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == p));
    }
}

#[test]
fn library_sarif_is_valid_and_the_schema_bites() {
    let v = validator();
    let located = Diagnostic::new(codes::SENSITIVE, "reaches ~/.ssh/")
        .at(Some(Location {
            file: "dir with space/p.toml".into(),
            line: 3,
            column: 7,
            span: 0..1,
        }))
        .help("narrow it");
    let bare = Diagnostic::new(codes::WIDENS, "widens");
    let doc: Value =
        serde_json::from_str(&sarif::render(&[located.clone(), bare.clone()], None)).unwrap();
    assert_eq!(errors(&v, &doc), Vec::<String>::new());
    cross_check(&doc);
    let r = &doc["runs"][0]["results"];
    assert_eq!(r[0]["level"], "warning");
    assert_eq!(
        r[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "dir%20with%20space/p.toml"
    );
    assert_eq!(
        r[0]["locations"][0]["physicalLocation"]["region"]["startColumn"],
        7
    );
    assert_eq!(r[1]["level"], "error");
    assert!(
        r[1].get("locations").is_none(),
        "no file, no fallback: no location"
    );

    // The schema is not vacuous: each of these breaks it.
    let breakers: [(&str, Breaker); 5] = [
        ("no message", |d| {
            d["runs"][0]["results"][0]
                .as_object_mut()
                .unwrap()
                .remove("message");
        }),
        ("bad level", |d| {
            d["runs"][0]["results"][0]["level"] = "fatal".into()
        }),
        ("line 0", |d| {
            d["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
                0.into()
        }),
        ("misspelt key", |d| {
            d["runs"][0]["tool"]["driver"]["rules"][0]["shortDesc"] =
                serde_json::json!({"text": "x"})
        }),
        ("two runs", |d| {
            let run = d["runs"][0].clone();
            d["runs"].as_array_mut().unwrap().push(run);
        }),
    ];
    for (what, f) in breakers {
        let mut bad = doc.clone();
        f(&mut bad);
        assert!(
            !errors(&v, &bad).is_empty(),
            "{what} should fail validation"
        );
    }
}
