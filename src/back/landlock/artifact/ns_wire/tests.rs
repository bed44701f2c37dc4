use super::*;

fn ns(mounts: Vec<MountRule>) -> NsConfig {
    NsConfig {
        mode: ir::Namespaces::Auto,
        mounts,
        links: vec![Link {
            path: "/l".into(),
            target: "/t".into(),
        }],
    }
}

/// Written, then read back: the same mounts; and the JSON.
fn round_trip(n: &NsConfig) -> serde_json::Value {
    let text = serde_json::to_string(n).unwrap();
    let back: NsConfig = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, n, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn absent_protections_are_written_per_directory_and_read_back_in_place() {
    let carve = MountRule {
        path: "/w/.git".into(),
        kind: MountKind::Bind,
        read_only: true,
        noexec: false,
        protection: false,
        absent: false,
    };
    // A protection that exists is mounted as it is.
    let present = MountRule {
        absent: false,
        ..absent_mount("/w/.idea".into(), false)
    };
    let mut mounts = vec![
        absent_mount("/a".into(), false),
        absent_mount("/w/.envrc".into(), false),
        carve,
        absent_mount("/w/.git/hooks".into(), false),
        present,
        absent_mount("/w/.vscode".into(), false),
        absent_mount("/w-x/.envrc".into(), false),
        // Beneath a noexec carve-out.
        absent_mount("/w/.vscode/x".into(), true),
    ];
    mounts.sort_by(|a, b| a.path.cmp(&b.path));
    let v = round_trip(&ns(mounts));
    // In the order of their first mount (`/w-x/.envrc` sorts before `/w/.envrc`).
    assert_eq!(
        v["absent"],
        serde_json::json!([
            {"dir": "/", "names": ["a"]},
            {"dir": "/w-x", "names": [".envrc"]},
            {"dir": "/w", "names": [".envrc", ".vscode"]},
            {"dir": "/w/.git", "names": ["hooks"]},
            {"dir": "/w/.vscode", "noexec": true, "names": ["x"]},
        ])
    );
    let plain: Vec<&str> = v["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(plain, ["/w/.git", "/w/.idea"]);
}

#[test]
fn unsorted_mounts_are_written_as_they_are() {
    let n = ns(vec![
        absent_mount("/b/x".into(), false),
        absent_mount("/a/x".into(), false),
    ]);
    let v = round_trip(&n);
    assert!(v.get("absent").is_none(), "{v}");
    let empty = NsConfig::default();
    assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
    round_trip(&empty);
}

#[test]
fn a_name_that_is_not_one_component_or_an_unknown_member_is_an_error() {
    for name in ["../x", "..", ".", ""] {
        let bad = format!(r#"{{"absent": [{{"dir": "/w", "names": ["{name}"]}}]}}"#);
        let e = serde_json::from_str::<NsConfig>(&bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a name"), "{name}: {e}");
    }
    let unknown = r#"{"mount": []}"#;
    assert!(serde_json::from_str::<NsConfig>(unknown).is_err());
}
