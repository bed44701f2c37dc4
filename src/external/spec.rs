//! `[TOOL:]NAME=PATH[:ro|:rw]`, parsed as RFD D43 says: split on the first
//! `=`; a `:` on the left separates the tool; the mode is peeled from the
//! right's tail, so `C:\x` on the right stays a path.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadOnly,
    ReadWrite,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountSpec {
    pub tool: Option<String>,
    /// As typed: relative to the current directory.
    pub name: String,
    /// As typed: `~` not yet expanded, maybe relative.
    pub path: String,
    pub mode: Mode,
    /// Whether `:ro`/`:rw` was written (`:rw` is never implied).
    pub explicit_mode: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// Tool names are identifiers, which keeps the `TOOL:` prefix unambiguous.
pub fn is_tool_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_lowercase() || f == '_')
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '_')
}

pub fn parse(s: &str) -> Result<MountSpec, SpecError> {
    let err = |m: String| Err(SpecError(m));
    let Some((left, right)) = s.split_once('=') else {
        return err(format!("{s:?}: expected [TOOL:]NAME=PATH[:ro|:rw]"));
    };
    let (tool, name) = match left.split_once(':') {
        Some((t, n)) => {
            if !is_tool_name(t) {
                return err(format!(
                    "{t:?} is not a tool name (lowercase letters, digits and `_`)"
                ));
            }
            (Some(t.to_string()), n)
        }
        None => (None, left),
    };
    let (path, mode, explicit_mode) = if let Some(p) = right.strip_suffix(":ro") {
        (p, Mode::ReadOnly, true)
    } else if let Some(p) = right.strip_suffix(":rw") {
        (p, Mode::ReadWrite, true)
    } else {
        (right, Mode::ReadOnly, false)
    };
    if name.is_empty() {
        return err(format!("{s:?}: the mount NAME is empty"));
    }
    if path.is_empty() {
        return err(format!("{s:?}: the target PATH is empty"));
    }
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return err(format!(
            "{s:?} contains the control character U+{:04X}",
            c as u32
        ));
    }
    Ok(MountSpec {
        tool,
        name: name.into(),
        path: path.into(),
        mode,
        explicit_mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> (Option<String>, String, String, Mode) {
        let m = parse(s).unwrap();
        (m.tool, m.name, m.path, m.mode)
    }

    #[test]
    fn forms_from_the_rfd() {
        use Mode::*;
        assert_eq!(
            ok("fork=~/code/x"),
            (None, "fork".into(), "~/code/x".into(), ReadOnly)
        );
        assert_eq!(
            ok("fork=~/code/x:ro"),
            (None, "fork".into(), "~/code/x".into(), ReadOnly)
        );
        assert_eq!(
            ok("fs_modify_file:fork=/x:rw"),
            (
                Some("fs_modify_file".into()),
                "fork".into(),
                "/x".into(),
                ReadWrite
            )
        );
        // A drive letter on the right is part of the path.
        assert_eq!(
            ok("fs_read_file:fork=C:\\code\\x:ro"),
            (
                Some("fs_read_file".into()),
                "fork".into(),
                "C:\\code\\x".into(),
                ReadOnly
            )
        );
        assert_eq!(
            ok("a/b=/p=q"),
            (None, "a/b".into(), "/p=q".into(), ReadOnly)
        );
        assert!(!parse("fork=/x").unwrap().explicit_mode);
    }

    #[test]
    fn malformed() {
        for bad in [
            "fork",
            "=x",
            "fork=",
            "fork=:rw",
            "Tool:fork=/x",
            "a-b:fork=/x",
            ":fork=/x",
            "fork=/x\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
