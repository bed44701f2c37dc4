//! The one catalogue of diagnostic codes. Codes are stable: never reuse or
//! renumber one; retire it instead.

use super::Severity;

pub struct CodeInfo {
    pub code: &'static str,
    /// The constant's name (`SENSITIVE`); SARIF wants a name beside the id.
    pub name: &'static str,
    pub severity: Severity,
    pub title: &'static str,
    pub explanation: &'static str,
    /// A policy (or command line) that produces the diagnostic.
    pub example: Option<&'static str>,
}

impl CodeInfo {
    /// `SENSITIVE_PATH` → `SensitivePath` (SARIF `reportingDescriptor.name`).
    pub fn pascal_name(&self) -> String {
        self.name
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                match c.next() {
                    Some(f) => {
                        f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase()
                    }
                    None => String::new(),
                }
            })
            .collect()
    }
}

macro_rules! codes {
    ($($name:ident = $code:literal, $sev:ident, $title:literal, $expl:literal $(, example = $ex:literal)?;)*) => {
        $(pub const $name: &str = $code;)*
        pub const CATALOGUE: &[CodeInfo] = &[
            $(CodeInfo {
                code: $code,
                name: stringify!($name),
                severity: Severity::$sev,
                title: $title,
                explanation: $expl,
                example: codes!(@opt $($ex)?),
            },)*
        ];
    };
    (@opt) => { None };
    (@opt $ex:literal) => { Some($ex) };
}

codes! {
    TOML_SYNTAX = "SBX001", Error, "TOML syntax error",
        "The file is not valid TOML (or not UTF-8), so nothing else in it can be checked.",
        example = r#"[[fs]]
path = "."
read = true,
"#;
    SCHEMA = "SBX002", Error, "schema violation",
        "A key is unknown, a value has the wrong type, or a value is out of range. Every key of the policy format is listed in the JSON schema (`sbx schema`).",
        example = r#"[[fs]]
path = "."
reed = true
"#;
    VERSION = "SBX003", Error, "unsupported format version",
        "`version` must be 1: it is the only policy format this sbx understands.",
        example = r#"version = 2
"#;
    NO_CAPABILITY = "SBX004", Error, "rule names no capability",
        "An [[fs]] rule must name at least one of read, write, create, update, delete, execute: a rule with a path alone is almost always a typo. A rule that names capabilities and sets them all to false (`read = false`) is a deny rule, not this error.",
        example = r#"[[fs]]
path = "docs"
"#;
    CONTRADICTION = "SBX005", Error, "contradictory rights",
        "`write = true` means create + update + delete; setting one of those to false in the same rule contradicts it.",
        example = r#"[[fs]]
path = "."
write = true
delete = false
"#;
    ESCAPES_WORKSPACE = "SBX006", Error, "path climbs out of the workspace or home",
        "A relative path may not use `..` to leave the workspace (an `external = true` rule neither: it names a symlink inside the workspace, RFD D43), nor a `~/` path to leave the home directory: write the absolute path instead.",
        example = r#"[[fs]]
path = "../sibling"
read = true
"#;
    EXTERNAL_INSIDE = "SBX007", Error, "external rule inside the workspace",
        "`external = true` is for a workspace-relative path that reaches outside the workspace through a symlink; this one is absolute or `~`-relative, or resolves inside the workspace.",
        example = r#"# `src` is a plain directory of the workspace
[[fs]]
path = "src"
read = true
external = true
"#;
    BAD_CHARACTER = "SBX008", Error, "character a target cannot represent",
        "Paths, names and patterns may not contain NUL or other control characters, and an [[env]] name may not contain `=` (the separator of NAME=VALUE): no target can represent them safely.",
        example = r#"[[fs]]
path = "logs\u0007"
read = true
"#;
    TOO_LONG = "SBX009", Error, "path too long",
        "The path is longer than the targets allow (4096 bytes), or one of its components (a file or directory name) is longer than 255 bytes, which no target's file system stores.",
        example = r#"[[fs]]
path = "aaaa…(5000 characters)"
read = true
"#;
    NO_TOOL = "SBX010", Error, "tool not found",
        "`--tool NAME` selects `conversation.tools.NAME.access`; this file has no such tool, or it is not a table.",
        example = r#"# sbx check config.toml --tool deploy
[conversation.tools.build.access]
version = 1
"#;
    BAD_PATTERN = "SBX011", Error, "invalid glob pattern",
        "An env name or sensitive path glob does not compile.",
        example = r#"[[env]]
name = "AWS_[A-Z"
"#;
    BAD_NET = "SBX012", Error, "invalid network rule",
        "A [[net]] rule's host, scheme or port is not usable.",
        example = r#"[[net]]
host = "https://api.example.com"
"#;
    NOT_EXACT = "SBX013", Error, "cannot be enforced exactly",
        "`enforcement = \"required\"` refuses any rule a target can only approximate; the precision report says why. The error is located at the rule, or at `enforcement` for what the policy does not write itself (the default policy, presets).",
        example = r#"enforcement = "required"

[[net]]
host = "api.example.com"
port = 443
"#;
    COMMAND_NOT_FOUND = "SBX014", Warning, "command not found",
        "A [commands] entry was not found on PATH at compile time, so no executable is granted for it.",
        example = r#"[commands.no-such-program]
"#;
    PATH_MISSING = "SBX015", Warning, "path does not exist",
        "The rule's path does not exist. SBPL keeps it (it matches by name); Landlock needs an open file and drops it.",
        example = r#"[[fs]]
path = "no-such-directory"
read = true
"#;
    EXTERNAL_DROPPED = "SBX016", Warning, "external rule not approved",
        "An `external = true` rule is honoured only when its (path, target) pair is approved; unapproved, retargeted or broken rules are dropped, never granted.",
        example = r#"# `data` is a symlink to /srv/data, not yet approved with `sbx approve`
[[fs]]
path = "data"
read = true
external = true
"#;
    IO = "SBX017", Error, "cannot read or write a file",
        "A policy file, the approvals store or the output (`-o`) could not be read or written, or a policy file is over the size limit (64 MiB). Exit code 2.",
        example = r#"sbx check no-such-policy.toml
"#;
    BAD_PATH = "SBX018", Error, "unusable path",
        "A rule's path is blank, or a directory sbx anchors paths to (the workspace, home) is missing or not set.",
        example = r#"[[fs]]
path = " "
read = true
"#;
    SYMLINK_OUT = "SBX019", Warning, "rule leaves the workspace through a symlink",
        "A workspace-relative rule resolves outside the workspace through a symlink. It is dropped: mark it `external = true` and approve it (sbx approve) if that is intended.",
        example = r#"# `vendor` is a symlink to ~/src/vendor
[[fs]]
path = "vendor"
read = true
"#;
    SENSITIVE = "SBX020", Warning, "directory grant holds a sensitive file",
        "A directory grant holds, on this machine, a file or directory that a sensitive-path pattern matches (`**/.env`, `~/.ssh/`, an entry of `sensitive_paths`...): the message lists up to three. Only what exists is reported: a pattern that matches nothing below the grant says nothing, so an ordinary `src` grant passes `--deny-warnings`. The search is bounded (depth 8, 2000 directories, not into `.git`, `node_modules`, `target`, `.venv` or `__pycache__`); a search that stops early, and a `--portable` check, which looks at nothing, say so as notes. A grant that names a sensitive path is SBX033. Narrow the rule, move the file, or accept the warning with `--allow SBX020`.",
        example = r#"# with a .env file in the workspace
[[fs]]
path = "."
read = true
"#;
    CARVE_OUT = "SBX021", Warning, "a target cannot express a carve-out",
        "A nested rule narrows or widens its parent (most specific wins), and a target's precision report says it cannot enforce that exactly: Landlock rights are additive, so a read-only directory under a writable one stays writable; Windows without AppContainer has no per-path rules at all. Under `enforcement = \"required\"` compiling for that target fails (SBX013).",
        example = r#"[[fs]]
path = "."
read = true
write = true

[[fs]]
path = ".git"
read = true
"#;
    COOPERATIVE = "SBX022", Note, "not checked by the kernel alone",
        "`host`, `scheme` (beyond its port) and `path_prefix` of [[net]] rules, and argument prefixes and `envs` of [commands], are not checked by the kernel alone. The kernel enforces TCP ports on Linux (Landlock ABI 4 and later) and macOS (Seatbelt), and the executable allow-list on Linux and macOS; Windows enforces network access only as on/off, with `windows.appcontainer = true`. `sbx run` checks hosts and schemes with its proxy (Linux and macOS) and, on Linux, its DNS responder and relay for every TCP client; the message gives each target's own precision line for the rule, as the artifacts and `sbx explain` do. Argument prefixes and `envs` are checked only by cooperating programs (`sbx explain`, RFD 076).",
        example = r#"[[net]]
host = "api.example.com"
scheme = "https"
"#;
    NOT_PORTABLE = "SBX023", Warning, "machine-specific path in a shared policy",
        "With `--portable`, the policy is meant to be shared: absolute paths and paths under `~` name places that differ from machine to machine and user to user. Prefer workspace-relative paths and `[process]` presets.",
        example = r#"# sbx check policy.toml --portable
[[fs]]
path = "/home/alice/data"
read = true
"#;
    BROAD_WRITE = "SBX024", Warning, "writable root or home directory",
        "A rule makes `/`, a drive root, or the home directory (or one of its ancestors) writable: every dotfile, shell profile and key becomes writable, so the sandbox protects almost nothing.",
        example = r#"[[fs]]
path = "~"
read = true
write = true
"#;
    EXFILTRATION = "SBX025", Warning, "unrestricted network with access to secrets",
        "The network is unrestricted (any host, any port) while a rule reads a sensitive path: a compromised tool can read the secret and send it anywhere. Restrict [[net]] to the ports (and hosts) the tool needs, or drop the read.",
        example = r#"[[fs]]
path = "~/.aws/credentials"
read = true

[[net]]
host = "*"
"#;
    DUPLICATE = "SBX026", Warning, "duplicate rule",
        "Two rules in the same layer (a file, or with --tool one tool's part of it) name the same path (or the same env name, or the same network grant). Only the later [[fs]] rule applies; the earlier one is dead. Rules repeated across layers are not flagged: overriding is what layers are for (a tool repeating a rule of `tools.\"*\"` included).",
        example = r#"[[fs]]
path = "src"
read = true

[[fs]]
path = "./src/"
read = true
write = true
"#;
    REDUNDANT = "SBX027", Warning, "rule has no effect",
        "A nested rule grants exactly the rights its parent rule already grants there, so it has no effect (most specific wins, and it changes nothing). A deny rule (every capability it names set to false) outside any broader rule has no effect either: nothing there is granted.",
        example = r#"[[fs]]
path = "."
read = true

[[fs]]
path = "docs"
read = true
"#;
    WIDENS = "SBX028", Error, "widens the baseline",
        "`sbx check --baseline OLD` found a capability the policy grants that the baseline does not: a path and right, a port, non-TCP traffic, an env name or glob, a command or argument prefix, a removed or raised limit, weaker enforcement, or a weaker target extra. Each widening is one diagnostic naming the responsible rule; narrowing passes.",
        example = r#"# sbx check new.toml --baseline old.toml
# old.toml: [[fs]] path = "." read = true
[[fs]]
path = "."
read = true
write = true
"#;
    SENSITIVE_COVERED = "SBX029", Warning, "sensitive path covered by a broader rule, hidden",
        "A sensitive path under home (`~/.ssh/`, `~/.aws/credentials`...) lies inside a broader grant (the workspace is `~`, or a rule grants `~` or `~/.config`) that does not name it. Covered is not consent (POLICY.md §7): sbx adds a rule with no rights for it, so it stays hidden, and says so here and before `sbx run` starts. To give a tool the path, name it in a rule of its own (SBX033 then warns).",
        example = r#"[[fs]]
path = "~"
read = true
"#;
    PROTECTION_LIFTED = "SBX030", Warning, "rule lifts a protected path",
        "A rule names a protected path (POLICY.md §7a: `.git/hooks`, `.git/config`, `.vscode/`, `.envrc`, shell start-up files...) or a path inside one, with write rights. Protected paths hold what runs later outside the sandbox (a git hook on the next commit, an editor task): naming one lifts its protection for that path, so the sandboxed command can plant code there. `sbx run` says so before the command starts.",
        example = r#"[[fs]]
path = "."
read = true
write = true

[[fs]]
path = ".git/hooks"
read = true
write = true
"#;
    CAPABILITY = "SBX031", Error, "capability cannot be kept",
        "`[linux] capabilities` names a capability the command may keep when sbx runs as root. A name that is not a Linux capability is refused, and so is one POLICY.md §13 never lets a command keep (`CAP_SYS_ADMIN`, `CAP_SYS_PTRACE`, `CAP_SYS_MODULE`, `CAP_NET_ADMIN`, `CAP_MAC_*`, `CAP_SETPCAP`, ...: the Linux artifact's `drop_capabilities`): they reach past Landlock, into the kernel or other processes.",
        example = r#"[linux]
capabilities = ["CAP_SYS_ADMIN"]
"#;
    NAMESPACES_NEVER = "SBX032", Warning, "namespaces turned off",
        "`[linux] namespaces = \"never\"` runs the command with Landlock alone. That gives up what only the namespace layer enforces (POLICY.md §13): protected paths (`.git/hooks`, `.git/config`... can be changed during the run; sbx moves aside what was created or replaced when it ends, but an edit in place stays), the run's own temp directories (the host's `/tmp` and its sockets, tmux's and ssh-agent's among them, are shared), the hiding of host paths and sockets outside the grants, a private process tree and `/proc`, and the modes and times of files: Landlock checks neither `chmod` nor `utimensat`, so the command can change those of any file its user owns (as root, most of the system's), granted or not. `sbx run` says the same in one line. Keep `auto` unless a program cannot run in namespaces.",
        example = r#"[linux]
namespaces = "never"
"#;
    SENSITIVE_NAMED = "SBX033", Warning, "grant names a sensitive path",
        "A rule grants access to a built-in or configured sensitive path (keys, credentials) by naming it or a path inside it (`~/.ssh/config`, `~/.aws`). Named is consent (POLICY.md §7): the grant is honoured, and `sbx run` repeats the warning before the command starts. Its own code, apart from SBX020, so that accepting a directory that holds an `.env` never hides a grant of `~/.ssh`. A `~/` sensitive path that a broader rule only covers is hidden instead (SBX029). Narrow the rule, or accept the warning with `--allow SBX033`.",
        example = r#"[[fs]]
path = "~/.ssh"
read = true
"#;
    SSH_AGENT_UNUSED = "SBX034", Warning, "ssh agent forwarded without an ssh rule",
        "`ssh_agent = true` forwards the caller's ssh agent into the sandbox and shows `~/.ssh/known_hosts`, for ssh and `git push` over ssh. No allow rule of the policy lets ssh out (`[[net]]` with `scheme = \"ssh\"` or port 22), so the agent can sign for nothing the command may reach: add the host rule (`host = \"github.com\"`, `scheme = \"ssh\"`), or drop the opt-in.",
        example = r#"ssh_agent = true
"#;
    STEERED_LINK = "SBX035", Warning, "rule reaches its path through a link the command could have made",
        "A rule's path (or a preset's) leads through a symlink that lies in a directory the policy lets the command change: a rule for a path missing at launch beneath a writable rule, made a link by an earlier run, would otherwise grant whatever the link names (`~/.ssh`, a protected `.vscode`). POLICY.md §13: a run cannot widen its own next run. The grant keeps only the rights the other rules give that path anyway (none: it is dropped; a grant that narrows keeps narrowing, since most specific wins), and a protected path reached that way stays protected. Name the link's target in the rule itself, or keep the link out of writable directories; an `external = true` rule approved with `sbx approve` is kept.",
        example = r#"# `steered` is a symlink in the workspace, which this policy makes writable
[[fs]]
path = "."
read = true
write = true

[[fs]]
path = "steered"
read = true
execute = true
"#;
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
            assert!(
                c.example.is_some_and(|e| !e.trim().is_empty()),
                "{} has no example",
                c.code
            );
        }
    }

    #[test]
    fn sarif_names() {
        assert_eq!(lookup(SENSITIVE).unwrap().pascal_name(), "Sensitive");
        assert_eq!(lookup(PATH_MISSING).unwrap().pascal_name(), "PathMissing");
    }
}
