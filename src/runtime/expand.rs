//! Portable artifacts carry `${WORKSPACE}`, `${HOME}` and `${TMPDIR}`
//! placeholders; the loader fills them in at apply time.

use crate::ir::{HOME_PARAM, TEMP_PARAM, WORKSPACE_PARAM};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Values {
    pub workspace: String,
    pub home: String,
    pub temp: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("unknown placeholder ${{{0}}} in {1:?}")]
    Unknown(String, String),
    #[error("unterminated placeholder in {0:?}")]
    Unterminated(String),
}

/// Replace every `${NAME}` in `s`. Unknown names are errors: a typo must not
/// turn into a literal path that silently grants nothing (or something else).
pub fn expand(s: &str, v: &Values) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| ExpandError::Unterminated(s.to_string()))?;
        let name = &after[..end];
        let val = match name {
            n if n == WORKSPACE_PARAM => &v.workspace,
            n if n == HOME_PARAM => &v.home,
            n if n == TEMP_PARAM => &v.temp,
            _ => return Err(ExpandError::Unknown(name.to_string(), s.to_string())),
        };
        out.push_str(val);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> Values {
        Values {
            workspace: "/w".into(),
            home: "/h".into(),
            temp: "/t".into(),
        }
    }

    #[test]
    fn expands_known_placeholders() {
        assert_eq!(expand("${WORKSPACE}/.git", &v()).unwrap(), "/w/.git");
        assert_eq!(expand("${HOME}/x${TMPDIR}", &v()).unwrap(), "/h/x/t");
        assert_eq!(expand("/plain", &v()).unwrap(), "/plain");
    }

    #[test]
    fn rejects_unknown_and_unterminated() {
        assert!(matches!(
            expand("${NOPE}/x", &v()),
            Err(ExpandError::Unknown(..))
        ));
        assert!(matches!(
            expand("${WORKSPACE", &v()),
            Err(ExpandError::Unterminated(_))
        ));
    }
}
