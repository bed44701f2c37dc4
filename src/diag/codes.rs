//! The one catalogue of diagnostic codes. Codes are stable: never reuse or
//! renumber one; retire it instead.

use super::Severity;

pub struct CodeInfo {
    pub code: &'static str,
    pub severity: Severity,
    pub title: &'static str,
    pub explanation: &'static str,
}

macro_rules! codes {
    ($($name:ident = $code:literal, $sev:ident, $title:literal, $expl:literal;)*) => {
        $(pub const $name: &str = $code;)*
        pub const CATALOGUE: &[CodeInfo] = &[
            $(CodeInfo { code: $code, severity: Severity::$sev, title: $title, explanation: $expl },)*
        ];
    };
}

codes! {
    TOML_SYNTAX = "SBX001", Error, "TOML syntax error",
        "The file is not valid TOML (or not UTF-8), so nothing else in it can be checked.";
    SCHEMA = "SBX002", Error, "schema violation",
        "A key is unknown, a value has the wrong type, or a value is out of range. Every key of the policy format is listed in the JSON schema (`sbx schema`).";
    VERSION = "SBX003", Error, "unsupported format version",
        "`version` must be 1: it is the only policy format this sbx understands.";
    NO_CAPABILITY = "SBX004", Error, "rule grants nothing",
        "An [[fs]] rule must set at least one of read, write, create, update, delete, execute to true; a rule that grants nothing is almost always a typo.";
    CONTRADICTION = "SBX005", Error, "contradictory rights",
        "`write = true` means create + update + delete; setting one of those to false in the same rule contradicts it.";
    ESCAPES_WORKSPACE = "SBX006", Error, "path climbs out of the workspace or home",
        "A relative path may not use `..` to leave the workspace (an `external = true` rule neither: it names a symlink inside the workspace, RFD D43), nor a `~/` path to leave the home directory: write the absolute path instead.";
    EXTERNAL_INSIDE = "SBX007", Error, "external rule inside the workspace",
        "`external = true` is for a workspace-relative path that reaches outside the workspace through a symlink; this one is absolute or `~`-relative, or resolves inside the workspace.";
    BAD_CHARACTER = "SBX008", Error, "control character in a string",
        "Paths, names and patterns may not contain NUL or other control characters: no target can represent them safely.";
    TOO_LONG = "SBX009", Error, "path too long",
        "The path is longer than the targets allow (4096 bytes).";
    NO_TOOL = "SBX010", Error, "tool not found",
        "`--tool NAME` selects `conversation.tools.NAME.access`; this file has no such tool, or it is not a table.";
    BAD_PATTERN = "SBX011", Error, "invalid glob pattern",
        "An env name or sensitive path glob does not compile.";
    BAD_NET = "SBX012", Error, "invalid network rule",
        "A [[net]] rule's host, scheme or port is not usable.";
    NOT_EXACT = "SBX013", Error, "cannot be enforced exactly",
        "`enforcement = \"required\"` refuses any rule a target can only approximate; the precision report says why.";
    COMMAND_NOT_FOUND = "SBX014", Warning, "command not found",
        "A [commands] entry was not found on PATH at compile time, so no executable is granted for it.";
    PATH_MISSING = "SBX015", Warning, "path does not exist",
        "The rule's path does not exist. SBPL keeps it (it matches by name); Landlock needs an open file and drops it.";
    EXTERNAL_DROPPED = "SBX016", Warning, "external rule not approved",
        "An `external = true` rule is honoured only when its (path, target) pair is approved; unapproved, retargeted or broken rules are dropped, never granted.";
    IO = "SBX017", Error, "cannot read or write a file",
        "A policy file, the approvals store or the output (`-o`) could not be read or written, or a policy file is over the size limit (64 MiB). Exit code 2.";
    BAD_PATH = "SBX018", Error, "unusable path",
        "A rule's path is blank, or a directory sbx anchors paths to (the workspace, home) is missing or not set.";
    SYMLINK_OUT = "SBX019", Warning, "rule leaves the workspace through a symlink",
        "A workspace-relative rule resolves outside the workspace through a symlink. It is dropped: mark it `external = true` and approve it (sbx approve) if that is intended.";
    SENSITIVE = "SBX020", Warning, "grant reaches a sensitive path",
        "A rule grants access to a built-in or configured sensitive path (keys, credentials), directly or through a parent directory.";
}

pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    CATALOGUE.iter().find(|c| c.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for c in CATALOGUE {
            assert!(seen.insert(c.code), "duplicate {}", c.code);
            assert!(c.code.starts_with("SBX") && c.code.len() == 6, "{}", c.code);
            assert!(!c.title.is_empty() && !c.explanation.is_empty());
        }
    }
}
