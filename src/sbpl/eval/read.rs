//! Reading a profile's forms into rules and filters: what the evaluator
//! can model, and a [`ProfileError`] for what it cannot.

use std::collections::BTreeMap;

use super::net::{self, NetRule};
use super::{coverage, Action, FileOp, Filter, Profile, ProfileError, Rule};
use crate::sbpl::datum::{Datum, DatumKind};
use crate::sbpl::names::is_operation;
use crate::sbpl::{parse, pattern};

pub(super) fn error_at(d: &Datum, message: impl Into<String>) -> ProfileError {
    ProfileError {
        line: d.line,
        column: d.column,
        message: message.into(),
    }
}

impl Profile {
    /// Read `src` and build the profile; syntax errors become [`ProfileError`]s.
    pub fn from_source(src: &str, params: &BTreeMap<String, String>) -> Result<Self, ProfileError> {
        let data = parse(src).map_err(|e| ProfileError {
            line: e.line,
            column: e.column,
            message: e.message,
        })?;
        Self::from_datums(&data, params)
    }

    /// `params` are the `-D NAME=VALUE` values `(param "NAME")` reads.
    pub fn from_datums(
        data: &[Datum],
        params: &BTreeMap<String, String>,
    ) -> Result<Self, ProfileError> {
        let mut profile = Profile {
            default: None,
            rules: Vec::new(),
            net: Vec::new(),
        };
        for d in data {
            match d.head() {
                Some("version") => match d.as_list().expect("a list")[1..] {
                    [Datum {
                        kind: DatumKind::Int(1),
                        ..
                    }] => {}
                    _ => return Err(error_at(d, "only (version 1) profiles are evaluated")),
                },
                Some(verb @ ("allow" | "deny")) => {
                    let action = if verb == "allow" {
                        Action::Allow
                    } else {
                        Action::Deny
                    };
                    profile.add_rule(d, action, params)?;
                }
                Some("debug" | "trace") => {}
                Some(other) => {
                    return Err(error_at(
                        d,
                        format!("cannot evaluate ({other} ...): only version, allow, deny, debug and trace forms are supported"),
                    ))
                }
                None => return Err(error_at(d, "cannot evaluate a top-level form that is not (name ...)")),
            }
        }
        Ok(profile)
    }

    fn add_rule(
        &mut self,
        d: &Datum,
        action: Action,
        params: &BTreeMap<String, String>,
    ) -> Result<(), ProfileError> {
        let mut operations = Vec::new();
        let mut opaque = None;
        let mut is_default = false;
        let mut filter_data = Vec::new();
        for arg in &d.as_list().expect("a list")[1..] {
            match &arg.kind {
                DatumKind::Symbol(s) if s == "default" => is_default = true,
                DatumKind::Symbol(s) if is_operation(s) => operations.push(s.clone()),
                DatumKind::Symbol(s) if s.starts_with("file") || s.starts_with("process") => {
                    opaque = Some(format!(
                        "'{s}' at {} is not a known operation",
                        arg.location()
                    ))
                }
                // Other unknown symbols are taken as variables holding a filter
                // (`cache-path-filter`); `filter` makes them match "maybe".
                DatumKind::Symbol(_) => filter_data.push(arg),
                DatumKind::List(_) if arg.head() == Some("with") => {}
                DatumKind::List(_) => filter_data.push(arg),
                _ => return Err(error_at(arg, "expected an operation, filter or (with ...)")),
            }
        }
        if is_default {
            if !operations.is_empty() || opaque.is_some() || !filter_data.is_empty() {
                return Err(error_at(
                    d,
                    "cannot evaluate 'default' combined with other operations or filters",
                ));
            }
            self.default = Some((action, d.line));
            return Ok(());
        }
        if operations.is_empty() && opaque.is_none() {
            return Err(error_at(d, "rule without an operation"));
        }
        if operations
            .iter()
            .any(|o| coverage(o, net::OUTBOUND).is_some())
        {
            let filters = filter_data
                .iter()
                .map(|f| net::filter(f, params))
                .collect::<Result<_, _>>()?;
            self.net.push(NetRule {
                action,
                line: d.line,
                operations: operations.clone(),
                filters,
            });
        }
        let applies = opaque.is_some()
            || operations.iter().any(|o| {
                FileOp::ALL
                    .iter()
                    .any(|f| coverage(o, f.operation()).is_some())
            });
        if !applies {
            return Ok(());
        }
        let filters = filter_data
            .into_iter()
            .map(|f| filter(f, params))
            .collect::<Result<_, _>>()?;
        self.rules.push(Rule {
            action,
            line: d.line,
            operations,
            opaque,
            filters,
        });
        Ok(())
    }
}

/// A filter argument: known text, or a description of what cannot be computed.
pub(super) enum Value {
    Text(String),
    Unknown(String),
}

fn filter(d: &Datum, params: &BTreeMap<String, String>) -> Result<Filter, ProfileError> {
    let items = match &d.kind {
        DatumKind::List(items) => items,
        DatumKind::Symbol(s) => {
            return Ok(Filter::Unknown(format!(
                "variable '{s}' at {}",
                d.location()
            )))
        }
        _ => return Err(error_at(d, "expected a filter such as (subpath \"/path\")")),
    };
    let Some(head) = d.head() else {
        return Ok(Filter::Unknown(format!(
            "computed filter at {}",
            d.location()
        )));
    };
    let args = &items[1..];
    let nested = |args: &[Datum]| -> Result<Vec<Filter>, ProfileError> {
        args.iter().map(|a| filter(a, params)).collect()
    };
    Ok(match head {
        "literal" | "path" | "subpath" | "prefix" | "regex" | "path-ancestors" => {
            if args.is_empty() {
                return Err(error_at(d, format!("({head}) needs a value")));
            }
            let mut alternatives = Vec::new();
            for a in args {
                alternatives.push(match value(a, params)? {
                    Value::Unknown(what) => Filter::Unknown(format!("{what} in ({head} ...)")),
                    Value::Text(v) => match head {
                        "subpath" => Filter::Subpath(v),
                        "prefix" => Filter::Prefix(v),
                        "path-ancestors" => Filter::Ancestors(v),
                        "regex" => Filter::Regex(
                            pattern::compile(&v)
                                .map_err(|e| error_at(a, format!("invalid regex {v:?}: {e}")))?,
                        ),
                        _ => Filter::Literal(v),
                    },
                });
            }
            if alternatives.len() == 1 {
                alternatives.pop().expect("one element")
            } else {
                Filter::Any(alternatives)
            }
        }
        "require-all" => Filter::All(nested(args)?),
        "require-any" => Filter::Any(nested(args)?),
        "require-not" => match args {
            [one] => Filter::Not(Box::new(filter(one, params)?)),
            _ => return Err(error_at(d, "require-not takes exactly one filter")),
        },
        other => Filter::Unknown(format!("filter '{other}' at {}", d.location())),
    })
}

/// Evaluate a filter argument. Unknown parameters are errors: Seatbelt refuses
/// such a profile too.
pub(super) fn value(d: &Datum, params: &BTreeMap<String, String>) -> Result<Value, ProfileError> {
    if let Some(s) = d.as_string() {
        return Ok(Value::Text(s.to_string()));
    }
    let items = match &d.kind {
        DatumKind::List(items) => items,
        DatumKind::Symbol(s) => {
            return Ok(Value::Unknown(format!(
                "variable '{s}' at {}",
                d.location()
            )))
        }
        _ => return Err(error_at(d, "expected a string value")),
    };
    // `()` has no head and no arguments.
    let args = items.get(1..).unwrap_or_default();
    match d.head() {
        Some("param") => match args {
            [name] => {
                let name = name
                    .as_string()
                    .ok_or_else(|| error_at(name, "param takes a string name"))?;
                match params.get(name) {
                    Some(v) => Ok(Value::Text(v.clone())),
                    None => Err(error_at(d, format!("parameter {name:?} is not defined"))),
                }
            }
            _ => Err(error_at(d, "param takes exactly one name")),
        },
        Some("string-append") => {
            let mut out = String::new();
            for a in args {
                match value(a, params)? {
                    Value::Text(s) => out.push_str(&s),
                    unknown => return Ok(unknown),
                }
            }
            Ok(Value::Text(out))
        }
        Some("regex-quote") => match args {
            [one] => Ok(match value(one, params)? {
                Value::Text(s) => Value::Text(pattern::quote(&s)),
                unknown => unknown,
            }),
            _ => Err(error_at(d, "regex-quote takes exactly one value")),
        },
        _ => Ok(Value::Unknown(format!("expression at {}", d.location()))),
    }
}
