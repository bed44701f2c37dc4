//! Adding an external rule to a policy file with `toml_edit`, so the
//! user's comments, ordering and formatting survive.
//!
//! Both layouts are handled: a plain policy (`[[fs]]` at the top) and the
//! RFD 075 layout (`conversation.tools.NAME.access.fs`). `fs` may be an
//! array of tables, an inline array, or a merge table (`[fs] strategy`,
//! `[[fs.value]]`).

use super::spec::Mode;
use toml_edit::{value, ArrayOfTables, DocumentMut, InlineTable, Item, Table, TableLike, Value};

/// Which shape the file has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    Plain,
    /// Tool names in file order, and whether each may carry access rules.
    Tools(Vec<Tool>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    pub name: String,
    /// Local and enabled: builtin and MCP tools never take access rules
    /// (RFD 076), and a disabled tool gets no new grant.
    pub eligible: bool,
}

pub fn layout(doc: &DocumentMut) -> Layout {
    let Some(tools) = doc
        .get("conversation")
        .and_then(|c| c.get("tools"))
        .and_then(Item::as_table_like)
    else {
        return Layout::Plain;
    };
    let list = tools
        .iter()
        .filter_map(|(name, item)| {
            let t = item.as_table_like()?;
            let source = t.get("source").and_then(Item::as_str).unwrap_or("local");
            let remote = source == "builtin" || source == "mcp" || source.starts_with("mcp.");
            let disabled = t.get("enable").and_then(Item::as_bool) == Some(false);
            Some(Tool {
                name: name.to_string(),
                eligible: !remote && !disabled,
            })
        })
        .collect();
    Layout::Tools(list)
}

/// What adding a rule did to one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A new rule. `with_workspace`: the scope had no `fs` (so the default
    /// policy applied) and the workspace rule was added to keep it.
    Added { with_workspace: bool },
    /// A rule for the same path existed and gained rights (or `external`).
    Widened,
    /// A rule for the same path already grants this.
    Unchanged,
}

/// Add `path = KEY, external = true, read = true[, write = true]` to the
/// `fs` list of `tool` (or of the top level). A rule for the same path is
/// widened, never narrowed or duplicated.
pub fn add_rule(
    doc: &mut DocumentMut,
    tool: Option<&str>,
    key: &str,
    mode: Mode,
    windows: bool,
) -> Result<Change, String> {
    let container: &mut Item = match tool {
        None => doc.as_item_mut(),
        Some(t) => access_of(doc, t)?,
    };
    // Under a `[commands]` allow-list the default's execute right is
    // withdrawn, so the preserving rule must not bring it back.
    let has_commands = container
        .as_table_like()
        .is_some_and(|c| c.contains_key("commands"));
    let rules = |with_workspace: bool| {
        let mut v = Vec::new();
        if with_workspace {
            let mut ws = vec![("path", Value::from(".")), ("read", true.into())];
            ws.push(("write", true.into()));
            if !has_commands {
                ws.push(("execute", true.into()));
            }
            v.push(ws);
        }
        let mut r = vec![
            ("path", Value::from(key)),
            ("external", true.into()),
            ("read", true.into()),
        ];
        if mode == Mode::ReadWrite {
            r.push(("write", true.into()));
        }
        v.push(r);
        v
    };
    let inline = container.is_inline_table();
    let Some(c) = container.as_table_like_mut() else {
        return Err("the policy's top level is not a table".into());
    };
    let Some(list) = c.get_mut("fs") else {
        let items = rules(true);
        let new = if inline {
            Item::Value(Value::Array(items.into_iter().map(inline_rule).collect()))
        } else {
            let mut a = ArrayOfTables::new();
            for r in items {
                a.push(table_rule(r));
            }
            Item::ArrayOfTables(a)
        };
        c.insert("fs", new);
        return Ok(Change::Added {
            with_workspace: true,
        });
    };
    let list = rule_list(list)?;
    if let Some(change) = widen_existing(list, key, mode, windows)? {
        return Ok(change);
    }
    let rule = rules(false).pop().expect("one rule");
    match list {
        Item::ArrayOfTables(a) => a.push(table_rule(rule)),
        Item::Value(Value::Array(a)) => a.push(inline_rule(rule)),
        _ => return Err("`fs` is neither a list nor a merge table".into()),
    }
    Ok(Change::Added {
        with_workspace: false,
    })
}

/// `conversation.tools.NAME.access`, created (without a header of its
/// own) when the tool has none.
fn access_of<'d>(doc: &'d mut DocumentMut, tool: &str) -> Result<&'d mut Item, String> {
    let t = doc
        .get_mut("conversation")
        .and_then(|c| c.get_mut("tools"))
        .and_then(|t| t.get_mut(tool))
        .ok_or_else(|| format!("no tool `{tool}` in conversation.tools"))?;
    let inline = t.is_inline_table();
    let tl = t
        .as_table_like_mut()
        .ok_or_else(|| format!("conversation.tools.{tool} is not a table"))?;
    if !tl.contains_key("access") {
        let access = if inline {
            Item::Value(Value::InlineTable(InlineTable::new()))
        } else {
            let mut a = Table::new();
            a.set_implicit(true);
            Item::Table(a)
        };
        tl.insert("access", access);
    }
    Ok(tl.get_mut("access").expect("just ensured"))
}

/// The list that holds the rules: `fs` itself, or `fs.value` of a merge
/// table (created when the merge table has none).
fn rule_list(fs: &mut Item) -> Result<&mut Item, String> {
    if fs.is_array_of_tables() || fs.is_array() {
        return Ok(fs);
    }
    let inline = fs.is_inline_table();
    let Some(t) = fs.as_table_like_mut() else {
        return Err("`fs` is neither a list nor a merge table".into());
    };
    if !t.contains_key("value") {
        let empty = if inline {
            Item::Value(Value::Array(Default::default()))
        } else {
            Item::ArrayOfTables(ArrayOfTables::new())
        };
        t.insert("value", empty);
    }
    Ok(t.get_mut("value").expect("just ensured"))
}

fn widen_existing(
    list: &mut Item,
    key: &str,
    mode: Mode,
    windows: bool,
) -> Result<Option<Change>, String> {
    let entries: Vec<&mut dyn TableLike> = match list {
        Item::ArrayOfTables(a) => a.iter_mut().map(|t| t as &mut dyn TableLike).collect(),
        Item::Value(Value::Array(a)) => a
            .iter_mut()
            .filter_map(|v| v.as_inline_table_mut().map(|t| t as &mut dyn TableLike))
            .collect(),
        _ => return Err("`fs` is neither a list nor a merge table".into()),
    };
    // The last rule for a path is the one that counts (later replaces earlier).
    let Some(rule) = entries.into_iter().rev().find(|t| {
        t.get("path")
            .and_then(Item::as_str)
            .is_some_and(|p| super::rule_key(p, windows).as_deref() == Ok(key))
    }) else {
        return Ok(None);
    };
    let on = |t: &dyn TableLike, k: &str| t.get(k).and_then(Item::as_bool) == Some(true);
    let mut changed = false;
    let mut set = |t: &mut dyn TableLike, k: &str| {
        if !on(t, k) {
            t.insert(k, value(true));
            changed = true;
        }
    };
    set(rule, "external");
    set(rule, "read");
    if mode == Mode::ReadWrite && !on(rule, "write") {
        let parts = ["create", "update", "delete"];
        if parts.iter().any(|k| rule.contains_key(k)) {
            // `write = true` next to `create = false` would contradict.
            for k in parts {
                set(rule, k);
            }
        } else {
            set(rule, "write");
        }
    }
    Ok(Some(if changed {
        Change::Widened
    } else {
        Change::Unchanged
    }))
}

fn table_rule(fields: Vec<(&str, Value)>) -> Table {
    let mut t = Table::new();
    for (k, v) in fields {
        t.insert(k, Item::Value(v));
    }
    t
}

fn inline_rule(fields: Vec<(&str, Value)>) -> Value {
    let mut t = InlineTable::new();
    for (k, v) in fields {
        t.insert(k, v);
    }
    t.fmt();
    Value::InlineTable(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(text: &str, tool: Option<&str>, key: &str, mode: Mode) -> (String, Change) {
        let mut doc: DocumentMut = text.parse().unwrap();
        let c = add_rule(&mut doc, tool, key, mode, false).unwrap();
        (doc.to_string(), c)
    }

    #[test]
    fn appends_after_the_last_rule_keeping_comments() {
        let text =
            "# top\nversion = 1\n\n[[fs]] # ws\npath = \".\"\nread = true\n\n[[net]]\nport = 443\n";
        let (out, c) = add(text, None, "fork", Mode::ReadOnly);
        assert_eq!(
            c,
            Change::Added {
                with_workspace: false
            }
        );
        assert_eq!(
            out,
            "# top\nversion = 1\n\n[[fs]] # ws\npath = \".\"\nread = true\n\n[[fs]]\npath = \"fork\"\nexternal = true\nread = true\n\n[[net]]\nport = 443\n"
        );
    }

    #[test]
    fn absent_fs_keeps_the_default() {
        let (out, c) = add("version = 1\n", None, "fork", Mode::ReadWrite);
        assert_eq!(
            c,
            Change::Added {
                with_workspace: true
            }
        );
        assert!(out.contains("path = \".\"\nread = true\nwrite = true\nexecute = true\n"));
        assert!(out.contains("path = \"fork\"\nexternal = true\nread = true\nwrite = true\n"));
        // Under an allow-list, the default has no execute right to keep.
        let (out, _) = add(
            "[commands.cargo]\nargs = [[\"check\"]]\n",
            None,
            "fork",
            Mode::ReadOnly,
        );
        assert!(out.contains("path = \".\"\nread = true\nwrite = true\n"));
        assert!(!out.contains("execute"));
    }

    #[test]
    fn inline_arrays_and_merge_tables() {
        let (out, _) = add(
            "fs = [{ path = \".\", read = true }]\n",
            None,
            "a",
            Mode::ReadOnly,
        );
        assert_eq!(
            out,
            "fs = [{ path = \".\", read = true }, { path = \"a\", external = true, read = true }]\n"
        );
        let (out, _) = add(
            "[fs]\nstrategy = \"replace\"\n[[fs.value]]\npath = \".\"\nread = true\n",
            None,
            "a",
            Mode::ReadOnly,
        );
        assert!(out.ends_with("[[fs.value]]\npath = \"a\"\nexternal = true\nread = true\n"));
    }

    #[test]
    fn existing_rules_are_widened_not_duplicated() {
        let text = "[[fs]]\npath = \"./fork\"\nexternal = true\nread = true\n";
        let (out, c) = add(text, None, "fork", Mode::ReadOnly);
        assert_eq!((out.as_str(), c), (text, Change::Unchanged));
        let (out, c) = add(text, None, "fork", Mode::ReadWrite);
        assert_eq!(c, Change::Widened);
        assert!(out.ends_with("read = true\nwrite = true\n"));
        let (out, _) = add(
            "[[fs]]\npath = \"fork\"\nread = true\ncreate = false\n",
            None,
            "fork",
            Mode::ReadWrite,
        );
        assert!(out.contains("create = true"));
        assert!(!out.contains("write"));
    }

    #[test]
    fn tools() {
        let text = "[conversation.tools.a]\nsource = \"local\"\n\n[conversation.tools.b]\nsource = \"mcp.github\"\n\n[conversation.tools.c]\nenable = false\n";
        let doc: DocumentMut = text.parse().unwrap();
        let Layout::Tools(t) = layout(&doc) else {
            panic!("tools layout")
        };
        let e: Vec<_> = t.iter().map(|t| (t.name.as_str(), t.eligible)).collect();
        assert_eq!(e, [("a", true), ("b", false), ("c", false)]);
        let (out, _) = add(text, Some("a"), "fork", Mode::ReadOnly);
        assert!(
            out.starts_with("[conversation.tools.a]\nsource = \"local\"\n\n[[conversation.tools.a.access.fs]]\npath = \".\""),
            "{out}"
        );
        assert!(out.ends_with("read = true\n\n[conversation.tools.b]\nsource = \"mcp.github\"\n\n[conversation.tools.c]\nenable = false\n"));
        let mut doc: DocumentMut = text.parse().unwrap();
        assert!(add_rule(&mut doc, Some("x"), "fork", Mode::ReadOnly, false).is_err());
        assert_eq!(layout(&"[[fs]]\n".parse().unwrap()), Layout::Plain);
    }
}
