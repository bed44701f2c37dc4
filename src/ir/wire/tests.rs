use super::*;
use crate::ir::{Os, PathMode, Roots};

fn tree(path: &str, access: Access, aliases: &[&str]) -> Grant {
    Grant {
        path: path.into(),
        access,
        kind: PathKind::Dir,
        source: Source::Default,
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
        external: None,
    }
}

fn ir(mut fs: Vec<Grant>, sort: bool) -> Ir {
    if sort {
        fs.sort_by(|a, b| a.path.cmp(&b.path));
    }
    let mut ir = Ir::deny_all(
        Os::Linux,
        PathMode::Resolved,
        Roots {
            workspace: "/w".into(),
            home: "/h".into(),
            temp: "/t".into(),
        },
    );
    ir.fs = fs;
    ir
}

/// Written, then read back: the same IR, and the JSON's `absent` member.
fn round_trip(ir: &Ir) -> serde_json::Value {
    let text = serde_json::to_string(ir).unwrap();
    let back: Ir = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, ir, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["absent"].clone()
}

#[test]
fn absent_protections_are_written_per_tree_and_read_back_in_place() {
    let w = tree("/w", Access::READ_WRITE, &["/link/w"]);
    let d = tree("/w-d", Access::READ_WRITE, &[]);
    let mut fs = vec![w.clone(), d.clone()];
    for e in [".vscode", ".git/hooks", ".envrc"] {
        fs.push(expand(&w, e));
        fs.push(expand(&d, e));
    }
    // A protection that exists stays a grant of its own.
    fs.push(Grant {
        kind: PathKind::Dir,
        ..expand(&w, ".idea")
    });
    let ir = ir(fs, true);
    let absent = round_trip(&ir);
    // In the order of their first protection (`/w-d` sorts before `/w/.envrc`).
    assert_eq!(
        absent,
        serde_json::json!([
            {"root": "/w-d", "entries": [".envrc", ".git/hooks", ".vscode"]},
            {"root": "/w", "entries": [".envrc", ".git/hooks", ".vscode"]},
        ])
    );
    let text = serde_json::to_string(&ir).unwrap();
    assert_eq!(text.matches("\"path\"").count(), 3, "{text}");
    assert!(!text.contains("/link/w/.vscode"));
    let expanded = &ir.fs[ir.fs.iter().position(|g| g.path == "/w/.vscode").unwrap()];
    assert_eq!(expanded.aliases, ["/link/w/.vscode"]);
}

#[test]
fn a_protection_that_does_not_follow_from_its_tree_stays_a_grant() {
    let w = tree("/w", Access::READ_WRITE, &[]);
    let r = tree("/r", Access::READ, &[]);
    let root = tree("/", Access::READ_WRITE, &[]);
    let odd = [
        // Rights other than the tree's minus writing.
        Grant {
            access: Access::NONE,
            ..expand(&w, ".a")
        },
        // Aliases the tree does not give.
        Grant {
            aliases: vec!["/x/.b".into()],
            ..expand(&w, ".b")
        },
        // An entry under home, or absolute.
        Grant {
            source: Source::Protected {
                entry: "~/.c".into(),
            },
            ..expand(&w, ".c")
        },
        // Under a tree that is not writable.
        expand(&r, ".d"),
        // Not missing.
        Grant {
            kind: PathKind::Unknown,
            ..expand(&w, ".e")
        },
    ];
    let mut fs = vec![w.clone(), r, root.clone(), expand(&root, ".f")];
    fs.extend(odd.iter().cloned());
    let ir = ir(fs, true);
    assert_eq!(
        round_trip(&ir),
        serde_json::json!([{"root": "/", "entries": [".f"]}])
    );
}

#[test]
fn an_unsorted_list_or_a_path_twice_is_written_as_it_is() {
    let w = tree("/w", Access::READ_WRITE, &[]);
    let unsorted = ir(vec![expand(&w, ".b"), w.clone(), expand(&w, ".a")], false);
    assert_eq!(round_trip(&unsorted), serde_json::Value::Null);
    let twice = ir(vec![w.clone(), expand(&w, ".a"), expand(&w, ".a")], false);
    assert_eq!(round_trip(&twice), serde_json::Value::Null);
}

#[test]
fn an_absent_tree_without_its_grant_is_an_error() {
    let w = tree("/w", Access::READ_WRITE, &[]);
    let mut v = serde_json::to_value(ir(vec![w.clone(), expand(&w, ".a")], true)).unwrap();
    v["absent"][0]["root"] = "/elsewhere".into();
    let e = serde_json::from_value::<Ir>(v).unwrap_err().to_string();
    assert!(e.contains("no writable grant at \"/elsewhere\""), "{e}");
}
