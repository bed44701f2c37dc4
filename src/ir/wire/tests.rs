use super::*;
use crate::ir::{Access, Os, PathMode, Roots};

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

/// Written, then read back: the same IR, and the JSON's `protected` member.
fn round_trip(ir: &Ir) -> serde_json::Value {
    let text = serde_json::to_string(ir).unwrap();
    let back: Ir = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, ir, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["protected"].clone()
}

#[test]
fn protections_are_written_per_tree_and_kind_and_read_back_in_place() {
    let w = tree("/w", Access::READ_WRITE, &["/link/w"]);
    let d = tree("/w-d", Access::READ_WRITE, &[]);
    let mut fs = vec![w.clone(), d.clone()];
    for e in [".vscode", ".git/hooks", ".envrc"] {
        fs.push(expand(&w, e, PathKind::Missing));
        fs.push(expand(&d, e, PathKind::Missing));
    }
    fs.push(expand(&w, ".idea", PathKind::Dir));
    let ir = ir(fs, true);
    let trees = round_trip(&ir);
    // In the order of their first protection (`/w-d` sorts before `/w/.envrc`).
    assert_eq!(
        trees,
        serde_json::json!([
            {"root": "/w-d", "kind": "missing", "entries": [".envrc", ".git/hooks", ".vscode"]},
            {"root": "/w", "kind": "missing", "entries": [".envrc", ".git/hooks", ".vscode"]},
            {"root": "/w", "kind": "dir", "entries": [".idea"]},
        ])
    );
    let text = serde_json::to_string(&ir).unwrap();
    assert_eq!(text.matches("\"path\"").count(), 2, "{text}");
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
            ..expand(&w, ".a", PathKind::Missing)
        },
        // Aliases the tree does not give.
        Grant {
            aliases: vec!["/x/.b".into()],
            ..expand(&w, ".b", PathKind::Missing)
        },
        // An entry under home, or absolute.
        Grant {
            source: Source::Protected {
                entry: "~/.c".into(),
            },
            ..expand(&w, ".c", PathKind::Missing)
        },
        // Under a tree that is not writable.
        expand(&r, ".d", PathKind::Missing),
        // An entry with a `..` component stays as it is.
        Grant {
            path: "/w/../x".into(),
            source: Source::Protected {
                entry: "../x".into(),
            },
            ..expand(&w, ".h", PathKind::Missing)
        },
        // Not spelled `root/entry`.
        Grant {
            path: "//.g".into(),
            ..expand(&root, ".g", PathKind::Missing)
        },
        // Not a protection.
        Grant {
            source: Source::Default,
            ..expand(&w, ".e", PathKind::Missing)
        },
    ];
    let mut fs = vec![w.clone(), r, root.clone()];
    fs.push(expand(&root, ".f", PathKind::Unknown));
    fs.extend(odd.iter().cloned());
    let ir = ir(fs, true);
    assert_eq!(
        round_trip(&ir),
        serde_json::json!([{"root": "/", "kind": "unknown", "entries": [".f"]}])
    );
}

#[test]
fn an_unsorted_list_or_a_path_twice_is_written_as_it_is() {
    let w = tree("/w", Access::READ_WRITE, &[]);
    let m = PathKind::Missing;
    let unsorted = ir(
        vec![expand(&w, ".b", m), w.clone(), expand(&w, ".a", m)],
        false,
    );
    assert_eq!(round_trip(&unsorted), serde_json::Value::Null);
    let twice = ir(
        vec![w.clone(), expand(&w, ".a", m), expand(&w, ".a", m)],
        false,
    );
    assert_eq!(round_trip(&twice), serde_json::Value::Null);
}

#[test]
fn a_tree_without_its_grant_is_an_error() {
    let w = tree("/w", Access::READ_WRITE, &[]);
    let a = expand(&w, ".a", PathKind::Missing);
    let v = serde_json::to_value(ir(vec![w.clone(), a], true)).unwrap();
    let mut elsewhere = v.clone();
    elsewhere["protected"][0]["root"] = "/elsewhere".into();
    let e = serde_json::from_value::<Ir>(elsewhere)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no writable grant at \"/elsewhere\""), "{e}");
    // An entry that would name a place outside its tree.
    for bad in ["../etc", "/etc", "a//b", "~/x", ""] {
        let mut v = v.clone();
        v["protected"][0]["entries"][0] = bad.into();
        let e = serde_json::from_value::<Ir>(v).unwrap_err().to_string();
        assert!(e.contains("is not a relative path"), "{bad}: {e}");
    }
}
