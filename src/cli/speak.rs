//! What `sbx run` says before the command starts about sensitive and
//! protected paths (POLICY.md §7, §7a): one line each on stderr, so that
//! consent given by a rule, or a protection it lifts, is seen at every
//! run and not only by `sbx check`; and one line when home is writable.
//! `--quiet` silences them.

use sbx::diag::{codes, Diagnostic};
use sbx::ir::Ir;
use sbx::lint::{index::Index, sensitive};

/// Lowering's warnings that `sbx run` prints as one line.
pub fn one_line(code: &str) -> bool {
    code == codes::SENSITIVE_COVERED || code == codes::PROTECTION_LIFTED
}

/// The lines, in a fixed order: named sensitive paths (SBX033), then the
/// lowering warnings in theirs (lifted protections, hidden sensitive paths).
/// `patterns`: the IR's sensitive paths ([`sensitive::patterns`]).
pub fn lines(ir: &Ir, lowered: &[Diagnostic], patterns: &[sensitive::Pattern]) -> Vec<String> {
    let mut out = Vec::new();
    for h in sensitive::hits_with(ir, &Index::new(ir), patterns) {
        if h.how != sensitive::How::Direct {
            continue;
        }
        let g = &ir.fs[h.grant];
        out.push(format!(
            "warning[{}]: {} grants {} on {}, inside the sensitive path {}",
            codes::SENSITIVE_NAMED,
            g.source.label(),
            g.access.names().join(", "),
            g.path,
            h.pattern
        ));
    }
    // Their messages start with the rule's label, which says where it is.
    for d in lowered {
        out.push(format!("warning[{}]: {}", d.code, d.message));
    }
    // Once per run, whatever the rules that make home writable.
    if sbx::lower::protect::home_writable(ir) {
        out.push(HOME_WRITABLE.to_string());
    }
    out
}

/// The protections under home cover what sbx knows runs later, and no
/// such list is complete: the user should know home is open.
const HOME_WRITABLE: &str = "warning: home (~) is writable in this run: sbx keeps the \
     start-up files and settings it knows of read-only, but that list is not exhaustive, \
     and anything else in home that runs later, outside the sandbox, can be changed \
     (docs/protected.md)";

pub fn print(ir: &Ir, lowered: &[Diagnostic], patterns: &[sensitive::Pattern]) {
    for l in lines(ir, lowered, patterns) {
        eprintln!("sbx: {l}");
    }
}
