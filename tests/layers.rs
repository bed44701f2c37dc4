//! The top-level modules of `src/` form layers, and code only uses the
//! layers below its own: no import circle can come back unnoticed.
//!
//! An edge is a `crate::X` path (in `use`, in code or in a doc link) or a
//! `super::` chain that climbs to the crate root, in any file of a module.
//! Test code (`tests.rs` files and `#[cfg(test)] mod` blocks) may reach up:
//! it builds its inputs through the whole pipeline.

use std::fs;
use std::path::Path;

/// Lowest first. A module may use the modules of earlier layers only.
const LAYERS: &[&[&str]] = &[
    // The file system read as std reads it, with fewer allocations in
    // libc (canonical paths, directory listings).
    &["canonical", "dirents"],
    // Leaves: diagnostics, atomic file writes, hash maps, the SBPL
    // reader, the allocator's settings, and the helpers unit tests share.
    &["diag", "atomic", "hashed", "sbpl", "allocator", "testing"],
    // The policy format and its defaults.
    &["policy"],
    // The IR: data every back end reads.
    &["ir"],
    // Policy to IR, including how external rules resolve on this host.
    &["lower"],
    &["back"],
    &["runtime"],
    &["compile"],
    // The approvals store, then the commands that edit it and policies.
    &["approvals"],
    &["external", "lint"],
    &["explain", "fuzzing"],
    // What a traced command needs beyond a policy (`sbx learn`).
    &["learn"],
    // The binary's own modules, which use the library as `sbx::`.
    &["cli"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The text without `#[cfg(test)] mod name { ... }` blocks.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let item = after.strip_prefix("pub ").unwrap_or(after).trim_start();
        let open = item.find('{');
        let is_mod = item.starts_with("mod ") && open.is_some_and(|o| !item[..o].contains(';'));
        if !is_mod {
            out.push_str("#[cfg(test)]");
            rest = &rest[at + "#[cfg(test)]".len()..];
            continue;
        }
        let body = &item[open.unwrap() + 1..];
        let mut depth = 1;
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            depth += match c {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            if depth == 0 {
                end = i + 1;
                break;
            }
        }
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules named right after each `crate::`, including
/// each item of a `crate::{a, b::c}` group.
fn crate_refs(text: &str, out: &mut Vec<String>) {
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push(ident(rest).to_string());
            continue;
        };
        let mut depth = 0;
        let mut start = true;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => start = true,
                c if start && !c.is_whitespace() => {
                    out.push(ident(&group[i..]).to_string());
                    start = false;
                }
                _ => {}
            }
        }
    }
}

/// The top-level modules reached by `super::` chains that climb from a
/// module `depth` levels deep to the crate root.
fn super_refs(text: &str, depth: usize, out: &mut Vec<String>) {
    let mut rest = text;
    while let Some(at) = rest.find("super::") {
        let mut tail = &rest[at..];
        let mut climbs = 0;
        while let Some(t) = tail.strip_prefix("super::") {
            climbs += 1;
            tail = t;
        }
        if climbs == depth {
            out.push(ident(tail).to_string());
        }
        rest = tail;
    }
}

/// Every `.rs` file under `path` with its module depth below the root.
fn files(path: &Path, depth: usize, out: &mut Vec<(std::path::PathBuf, usize)>) {
    if path.is_dir() {
        let mut entries: Vec<_> = fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for e in entries {
            files(&e, depth + 1, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        let name = path.file_stem().unwrap();
        let depth = if name == "mod" { depth - 1 } else { depth };
        if name != "tests" {
            out.push((path.to_path_buf(), depth));
        }
    }
}

#[test]
fn modules_only_use_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: Vec<_> = fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    modules.sort();
    let top: Vec<String> = modules
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut wrong = Vec::new();
    for (path, module) in modules.iter().zip(&top) {
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(own) = layer(module) else {
            wrong.push(format!("{module}: not in LAYERS; place it there"));
            continue;
        };
        let mut list = Vec::new();
        files(path, 1, &mut list);
        for (file, depth) in list {
            let text = without_tests(&fs::read_to_string(&file).unwrap());
            let mut refs = Vec::new();
            crate_refs(&text, &mut refs);
            super_refs(&text, depth, &mut refs);
            refs.sort();
            refs.dedup();
            for r in refs.iter().filter(|r| *r != module && top.contains(r)) {
                if layer(r).is_none_or(|l| l >= own) {
                    let shown = file.strip_prefix(&src).unwrap_or(&file).display();
                    wrong.push(format!("{module} -> {r} (src/{shown})"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses of a module in the same or a higher layer (see LAYERS):\n{}",
        wrong.join("\n")
    );
}
