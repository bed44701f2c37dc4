//! The macOS profile means what the IR means: for every fixture and for
//! random policies, the SBPL evaluator's answer on the emitted profile
//! equals the IR's most-specific-wins decision, for many generated paths
//! and every file operation. The profile must also read back with no
//! validation finding at all.

mod common;

use proptest::prelude::*;
use sbx::back::sbpl::Meta;
use sbx::compile::{load, lower_for, Inputs, Options};
use sbx::ir::{path_within, Ir, Os, PathKind, PathMode};
use sbx::sbpl::{check, parse, Decision, FileOp, Profile};
use std::collections::{BTreeMap, BTreeSet};

const HOME: &str = "/Users/sbx-oracle";
/// Portable parameter values: the workspace below home, as usual; the
/// proxy's ports for profiles with host rules.
const VALUES: [(&str, &str); 6] = [
    ("WORKSPACE", "/Users/sbx-oracle/src/ws"),
    ("HOME", HOME),
    ("TMPDIR", "/private/var/folders/xy/abcdef/T"),
    ("PROGRAM", "/opt/sbx-oracle/bin/prog"),
    ("PROXY_HTTP_PORT", "50001"),
    ("PROXY_SOCKS_PORT", "50002"),
];

/// Lower `inputs` for macOS; `None` if the policy is invalid.
fn lower(inputs: &Inputs, tool: Option<&str>, portable: bool, ws: &str) -> Option<Ir> {
    let opts = Options {
        workspace: Some(ws.into()),
        home: Some(HOME.into()),
        tool: tool.map(String::from),
        portable,
        approvals: Vec::new(),
        jobs: 0,
    };
    let (policy, _) = load(inputs, &opts).ok()?;
    Some(lower_for(&policy, &opts, Os::Macos).ok()?.ir)
}

/// Compile `inputs` for macOS: the IR and the profile text.
fn compile(inputs: &Inputs, tool: Option<&str>, portable: bool, ws: &str) -> (Ir, String) {
    let ir = lower(inputs, tool, portable, ws).expect("the fixture compiles");
    let text = sbx::back::sbpl::emit(&ir)
        .unwrap_or_else(|e| panic!("{e}"))
        .text;
    (ir, text)
}

/// Fill in the placeholder a portable path starts with. Only the leading
/// one is a placeholder: a directory may be named `${HOME}`, and
/// `runtime::expand` would expand that too.
fn expand_root(p: &str) -> String {
    for (name, value) in &VALUES[..3] {
        if let Some(rest) = p.strip_prefix(&format!("${{{name}}}")) {
            return format!("{value}{rest}");
        }
    }
    p.to_string()
}

/// The IR with portable placeholders filled in, as the kernel would see it.
fn expanded(ir: &Ir) -> Ir {
    let mut ir = ir.clone();
    if ir.mode == PathMode::Portable {
        for g in &mut ir.fs {
            g.path = expand_root(&g.path);
            for a in &mut g.aliases {
                *a = expand_root(a);
            }
        }
    }
    ir
}

struct Oracle {
    ir: Ir,
    profile: Profile,
    program: Option<String>,
    pty: bool,
    /// Parameter values the profile reads (`path-ancestors` matches them).
    roots: Vec<String>,
}

fn spellings(ir: &Ir) -> impl Iterator<Item = (&sbx::ir::Grant, &String)> {
    ir.fs.iter().flat_map(|g| {
        std::iter::once(&g.path)
            .chain(&g.aliases)
            .map(move |p| (g, p))
    })
}

fn is_pty(p: &str) -> bool {
    p == "/dev/ptmx"
        || p == "/dev/tty"
        || p.strip_prefix("/dev/ttys")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl Oracle {
    fn new(ir: &Ir, text: &str) -> Oracle {
        let data = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let findings = check(&data);
        assert!(
            findings.is_empty(),
            "validation findings: {findings:?}\n{text}"
        );
        let meta = Meta::read(text).expect("meta line").expect("meta parses");
        let params: BTreeMap<String, String> = VALUES
            .iter()
            .filter(|(k, _)| meta.params.iter().any(|p| p == k))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let profile = Profile::from_datums(&data, &params).unwrap_or_else(|e| panic!("{e}"));
        let program = params.get("PROGRAM").cloned();
        let roots = params
            .iter()
            .filter(|(k, _)| *k != "PROGRAM" && !k.starts_with("PROXY_"))
            .map(|(_, v)| v.clone())
            .collect();
        Oracle {
            ir: expanded(ir),
            profile,
            program,
            pty: ir.macos.allow_pty,
            roots,
        }
    }

    /// A grant strictly below `p` lacks `right` (create or delete): then
    /// creating, deleting or renaming `p` would create or delete it too.
    fn protected_below(&self, p: &str, lacks: impl Fn(sbx::ir::Access) -> bool) -> bool {
        spellings(&self.ir).any(|(g, s)| s != p && path_within(s, p) && lacks(g.access))
    }

    /// What the policy (plus the documented baseline) allows.
    fn expected(&self, op: FileOp, p: &str) -> bool {
        let a = self.ir.access_at(p);
        let dev_rw = ["/dev/null", "/dev/zero", "/dev/dtracehelper"].contains(&p);
        let dev_r = dev_rw || ["/dev/random", "/dev/urandom"].contains(&p);
        let fd = path_within(p, "/dev/fd");
        let pty = self.pty && is_pty(p);
        let program = self.program.as_deref() == Some(p);
        match op {
            FileOp::Read => a.read || p == "/" || dev_r || fd || pty || program,
            FileOp::ReadMetadata => {
                self.expected(FileOp::Read, p)
                    || ["/dev", "/dev/stdin", "/dev/stdout", "/dev/stderr"].contains(&p)
                    || self.roots.iter().any(|r| path_within(r, p))
                    || spellings(&self.ir).any(|(_, s)| s != p && path_within(s, p))
            }
            FileOp::Write => a.update || dev_rw || fd || pty,
            FileOp::WriteCreate => a.create && !self.protected_below(p, |x| !x.create) || pty,
            FileOp::WriteUnlink => a.delete && !self.protected_below(p, |x| !x.delete) || pty,
            FileOp::ProcessExec => a.execute || program,
        }
    }

    /// Below a grant the profile matches as a literal (an existing file):
    /// the profile may be narrower there, never wider.
    fn below_file(&self, p: &str) -> bool {
        let decider = self.ir.decide(p);
        decider.is_some_and(|g| g.kind == PathKind::File && g.path != p)
    }

    fn mismatches(&self, paths: &BTreeSet<String>) -> Vec<String> {
        let mut out = Vec::new();
        for p in paths {
            for op in FileOp::ALL {
                let want = self.expected(op, p);
                let got = match self.profile.decide(op, p) {
                    Decision::Allow { .. } => true,
                    Decision::Deny { .. } => false,
                    d @ Decision::Unknown { .. } => {
                        out.push(format!("{op:?} {p}: {d:?}"));
                        continue;
                    }
                };
                // Narrower below a file grant is fine.
                let narrower_below_file = !got && self.below_file(p);
                if got != want && !narrower_below_file {
                    out.push(format!(
                        "{op:?} {p}: profile {}, IR {} ({:?})",
                        verdict(got),
                        verdict(want),
                        self.profile.decide(op, p)
                    ));
                }
            }
        }
        out
    }
}

fn verdict(b: bool) -> &'static str {
    if b {
        "allow"
    } else {
        "deny"
    }
}

fn parent(p: &str) -> Option<&str> {
    match p.rfind('/') {
        Some(0) if p.len() > 1 => Some("/"),
        Some(i) if i > 0 => Some(&p[..i]),
        _ => None,
    }
}

/// Each grant path, its children, siblings and `/`-boundary lookalikes
/// (`/ws/.gitx`), its parents, plus the baseline's devices.
fn probes(ir: &Ir, extra: &[String]) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = [
        "/",
        "/dev",
        "/dev/null",
        "/dev/zero",
        "/dev/fd/1",
        "/dev/tty",
        "/dev/ttys003",
        "/dev/ptmx",
        "/dev/stdout",
        "/Users",
        "/nowhere/x",
        "/private/etc/passwd",
        "/etc/passwd",
        "/tmp/x",
        "/private/tmp/x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    out.extend(extra.iter().cloned());
    for (_, s) in spellings(ir) {
        out.insert(s.clone());
        for c in ["child", ".git", "x y", "child/deeper"] {
            out.insert(format!("{}/{c}", s.trim_end_matches('/')));
        }
        if s != "/" {
            out.insert(format!("{s}x"));
            out.insert(format!("{s}.d"));
        }
        let mut cur = s.as_str();
        while let Some(p) = parent(cur) {
            out.insert(p.to_string());
            if p != "/" {
                out.insert(format!("{p}/sibling"));
            }
            cur = p;
        }
    }
    out
}

fn read(files: &[String]) -> Inputs {
    let paths: Vec<camino::Utf8PathBuf> = files.iter().map(|f| f.into()).collect();
    Inputs::read(&paths).unwrap_or_else(|f| panic!("{:?}", f.diagnostics))
}

fn assert_agrees(name: &str, ir: &Ir, text: &str) {
    let oracle = Oracle::new(ir, text);
    let extra: Vec<String> = oracle.program.iter().cloned().collect();
    let paths = probes(&oracle.ir, &extra);
    let bad = oracle.mismatches(&paths);
    assert!(
        bad.is_empty(),
        "{name}: {} of {} paths disagree:\n{}\n\n{text}",
        bad.len(),
        paths.len(),
        bad.join("\n")
    );
}

#[test]
fn sbpl_every_fixture_means_what_the_ir_means() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().to_str().unwrap().to_string();
    for f in common::fixture_cases() {
        let inputs = read(&f.files);
        for portable in [false, true] {
            let (ir, text) = compile(&inputs, f.tool.as_deref(), portable, &ws);
            assert_agrees(&format!("{} (portable: {portable})", f.name), &ir, &text);
        }
    }
}

/// The `.git` carve-out of the issue, path by path.
#[test]
fn sbpl_read_only_git_inside_a_writable_workspace() {
    let inputs = read(&["fixtures/minimal.toml".into()]);
    let (ir, text) = compile(&inputs, None, true, "/unused");
    let o = Oracle::new(&ir, &text);
    let ws = VALUES[0].1;
    let allow = |op, p: &str| o.profile.decide(op, p).is_allow();
    let git = format!("{ws}/.git");
    assert!(allow(FileOp::Write, &format!("{ws}/src/main.rs")));
    assert!(allow(FileOp::WriteCreate, &format!("{ws}/.gitx")));
    assert!(allow(FileOp::Read, &format!("{git}/config")));
    for op in [FileOp::Write, FileOp::WriteCreate, FileOp::WriteUnlink] {
        assert!(!allow(op, &format!("{git}/config")), "{op:?}");
        assert!(!allow(op, &format!("{git}/hooks/pre-commit")), "{op:?}");
        // Creating `.git` where there is none, or renaming it away.
        assert!(!allow(op, &git), "{op:?}");
    }
    // Renaming the workspace (or a directory above it) would move `.git`.
    for p in [ws, "/Users/sbx-oracle/src", HOME] {
        assert!(!allow(FileOp::WriteUnlink, p), "{p}");
        assert!(!allow(FileOp::WriteCreate, p), "{p}");
    }
}

/// An absolute rule inside a parameter's directory (here the workspace and
/// home at their run-time values) narrows what the parameter's rule grants
/// there, as a relative rule would (the workspace's rule must not decide
/// inside it; the `sbpl_injection` fuzzer reaches this case); above a
/// workspace rule, it leaves that rule to decide.
#[test]
fn sbpl_absolute_rule_inside_a_parameter_narrows_it() {
    let ws = VALUES[0].1;
    let toml = format!(
        "version = 1\n\
         [[fs]]\npath = \".\"\nread = true\nwrite = true\n\
         [[fs]]\npath = \"{ws}/vendor\"\nread = true\n\
         [[fs]]\npath = \"~/docs\"\nread = true\nwrite = true\n\
         [[fs]]\npath = \"{HOME}/docs/signed\"\nread = true\n\
         [[fs]]\npath = \"{ws}/lib\"\nread = true\n\
         [[fs]]\npath = \"lib/gen\"\nread = true\nwrite = true\n"
    );
    let inputs = Inputs::from_text("policy.toml", &toml);
    let (ir, text) = compile(&inputs, None, true, "/unused");
    assert_agrees("absolute inside a parameter", &ir, &text);
    let o = Oracle::new(&ir, &text);
    let allow = |op, p: &str| o.profile.decide(op, p).is_allow();
    for dir in [format!("{ws}/vendor"), format!("{HOME}/docs/signed")] {
        let f = format!("{dir}/f");
        assert!(allow(FileOp::Read, &f), "{f}");
        for op in [FileOp::Write, FileOp::WriteCreate, FileOp::WriteUnlink] {
            assert!(!allow(op, &f), "{op:?} {f}");
        }
    }
    assert!(allow(FileOp::Write, &format!("{ws}/src/main.rs")));
    assert!(allow(FileOp::Write, &format!("{HOME}/docs/notes.txt")));
    // Above a workspace rule: the workspace rule still decides inside it.
    assert!(!allow(FileOp::Write, &format!("{ws}/lib/f")));
    assert!(allow(FileOp::Write, &format!("{ws}/lib/gen/f")));
}

/// A protection under a parameter's rule keeps its own allow: an absolute
/// rule the parameter's directory may turn out to be at run time (here
/// the workspace's value, denied) comes between the workspace's rules and
/// the protection's, and would otherwise take back the reads the
/// protection keeps.
#[test]
fn sbpl_protection_under_a_parameter_allows_its_reads_itself() {
    let ws = VALUES[0].1;
    let toml = format!(
        "version = 1\n\
         [[fs]]\npath = \".\"\nread = true\nwrite = true\n\
         [[fs]]\npath = \"{ws}\"\nread = false\n"
    );
    let inputs = Inputs::from_text("policy.toml", &toml);
    let (ir, text) = compile(&inputs, None, true, "/unused");
    assert_agrees("protection under a parameter", &ir, &text);
    let o = Oracle::new(&ir, &text);
    let allow = |op, p: &str| o.profile.decide(op, p).is_allow();
    let vscode = format!("{ws}/.vscode/settings.json");
    assert!(
        o.ir.decide(&vscode).is_some_and(|g| g.access.read),
        "{vscode}"
    );
    assert!(allow(FileOp::Read, &vscode), "{vscode}");
    assert!(!allow(FileOp::Write, &vscode), "{vscode}");
}

/// Rights for one random rule.
fn rights() -> impl Strategy<Value = Vec<&'static str>> {
    prop::sample::subsequence(
        vec!["read", "write", "create", "update", "delete", "execute"],
        1..=4,
    )
}

/// Path components that mean something to SBPL, TOML or the sandbox compiler.
fn component() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b",
        ".git",
        "c d",
        "q\"x",
        r"b\s",
        "p)(allow default)(",
        "s;c",
        "#|x",
        "${HOME}",
        "é",
        "..x",
    ])
}

fn rule_path() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(".".to_string()),
        6 => prop::collection::vec(component(), 1..4).prop_map(|v| v.join("/")),
    ]
}

fn policy() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((rule_path(), rights()), 1..6),
        any::<bool>(),
    )
        .prop_map(|(rules, presets)| {
            let mut t = String::from("version = 1\n");
            if !presets {
                t.push_str("[process]\npresets = []\n");
            }
            for (path, rights) in rules {
                t.push_str(&format!("[[fs]]\npath = {}\n", toml::Value::String(path)));
                // `write` with explicit create/update/delete = false is a
                // contradiction; only ever set rights to true.
                for r in rights {
                    t.push_str(&format!("{r} = true\n"));
                }
            }
            t
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random nested rules with random rights: the profile agrees with the
    /// IR on every probe path, in both path modes.
    #[test]
    fn sbpl_random_policies_mean_what_the_ir_means(
        text in policy(),
        portable in any::<bool>(),
        extra in prop::collection::vec(prop::collection::vec(component(), 1..5), 0..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("sbx oracle");
        std::fs::create_dir(&ws).unwrap();
        let ws = ws.to_str().unwrap();
        let inputs = Inputs::from_text("random.toml", &text);
        let Some(ir) = lower(&inputs, None, portable, ws) else {
            return Err(TestCaseError::reject("invalid policy"));
        };
        let profile = sbx::back::sbpl::emit(&ir).unwrap_or_else(|e| panic!("{e}")).text;
        let oracle = Oracle::new(&ir, &profile);
        let root = if portable { VALUES[0].1.to_string() } else { ir.roots.workspace.clone() };
        let extra: Vec<String> = extra
            .iter()
            .map(|c| format!("{root}/{}", c.join("/")))
            .chain(oracle.program.clone())
            .collect();
        let paths = probes(&oracle.ir, &extra);
        let bad = oracle.mismatches(&paths);
        prop_assert!(bad.is_empty(), "{}\n\n{}\n\n{}", bad.join("\n"), text, profile);
    }
}

/// POLICY.md §7a and §7 in the profile: protected paths stay read-only
/// inside a writable workspace, by name (they need not exist), with no
/// gap for creating or renaming them; a rule naming one lifts it; a
/// sensitive path that `~` covers is hidden, home's rc files read-only.
#[test]
fn sbpl_protected_and_covered_paths() {
    let ws = VALUES[0].1;
    let allow = |o: &Oracle, op, p: &str| o.profile.decide(op, p).is_allow();
    let writes = [FileOp::Write, FileOp::WriteCreate, FileOp::WriteUnlink];

    let inputs = read(&["fixtures/default.toml".into()]);
    let (ir, text) = compile(&inputs, None, true, "/unused");
    assert_agrees("default", &ir, &text);
    let o = Oracle::new(&ir, &text);
    for p in [
        ".git/hooks/pre-commit",
        ".git/hooks",
        ".git/config",
        ".git/commondir",
        ".gitmodules",
        ".envrc",
        ".vscode",
        ".vscode/tasks.json",
        ".idea/workspace.xml",
        ".mcp.json",
        ".claude/settings.json",
        ".codex/config.toml",
        ".agents/x",
    ] {
        let p = format!("{ws}/{p}");
        assert!(allow(&o, FileOp::Read, &p), "{p}");
        for op in writes {
            assert!(!allow(&o, op, &p), "{op:?} {p}");
        }
    }
    // `.git` itself can be neither created nor renamed away.
    for op in [FileOp::WriteCreate, FileOp::WriteUnlink] {
        assert!(!allow(&o, op, &format!("{ws}/.git")), "{op:?}");
    }
    // The rest of `.git` stays writable: git add, commit, branch, stash.
    for p in [
        ".git/index",
        ".git/objects/ab/cdef",
        ".git/refs/heads/b",
        "src/main.rs",
    ] {
        let p = format!("{ws}/{p}");
        for op in writes {
            assert!(allow(&o, op, &p), "{op:?} {p}");
        }
    }

    // Naming `.git/hooks` lifts that protection, and only that one.
    let toml = "[[fs]]\npath = \".\"\nread = true\nwrite = true\n\n\
                [[fs]]\npath = \".git/hooks\"\nread = true\nwrite = true\n";
    let (ir, text) = compile(&Inputs::from_text("p.toml", toml), None, true, "/unused");
    assert_agrees("lifted", &ir, &text);
    let o = Oracle::new(&ir, &text);
    assert!(allow(
        &o,
        FileOp::WriteCreate,
        &format!("{ws}/.git/hooks/pre-commit")
    ));
    assert!(!allow(&o, FileOp::Write, &format!("{ws}/.git/config")));

    // A rule on `~` covers ~/.ssh: hidden; home's start-up files read-only.
    let toml = "[[fs]]\npath = \"~\"\nread = true\nwrite = true\n";
    let (ir, text) = compile(&Inputs::from_text("p.toml", toml), None, true, "/unused");
    assert_agrees("home", &ir, &text);
    let o = Oracle::new(&ir, &text);
    for p in [
        ".ssh",
        ".ssh/id_rsa",
        ".aws/credentials",
        ".config/gh/hosts.yml",
    ] {
        let p = format!("{HOME}/{p}");
        assert!(!allow(&o, FileOp::Read, &p), "{p}");
        for op in writes {
            assert!(!allow(&o, op, &p), "{op:?} {p}");
        }
    }
    for p in [".bashrc", ".zshrc", ".gitconfig", ".config/git/config"] {
        let p = format!("{HOME}/{p}");
        assert!(allow(&o, FileOp::Read, &p), "{p}");
        assert!(!allow(&o, FileOp::Write, &p), "{p}");
        assert!(!allow(&o, FileOp::WriteCreate, &p), "{p}");
    }
    assert!(allow(&o, FileOp::Write, &format!("{HOME}/notes.txt")));
    // Renaming a parent: SBPL matches names, so a directory above a
    // protected name can be neither renamed away (unlink) nor made, or
    // renamed onto, anew (create): `mv ~/.config ~/x && mv ~/prep
    // ~/.config` is refused at the first step, and so is the second
    // alone. The protected name itself refuses both.
    for p in [
        ".config",
        ".config/systemd",
        ".local",
        ".local/share",
        ".cargo",
        ".gradle",
        ".vscode",
    ] {
        let p = format!("{HOME}/{p}");
        for op in [FileOp::WriteCreate, FileOp::WriteUnlink] {
            assert!(!allow(&o, op, &p), "{op:?} {p}");
        }
    }
    for p in [
        ".config/nvim",
        ".ipython",
        ".local/bin",
        ".vscode/extensions",
    ] {
        let p = format!("{HOME}/{p}");
        for op in [FileOp::WriteCreate, FileOp::WriteUnlink] {
            assert!(!allow(&o, op, &p), "{op:?} {p}");
        }
    }
    // What is beside them stays writable (positive control).
    for p in [".config/other/x", ".local/state/y", ".cache/z"] {
        let p = format!("{HOME}/{p}");
        assert!(allow(&o, FileOp::WriteCreate, &p), "{p}");
        assert!(allow(&o, FileOp::WriteUnlink, &p), "{p}");
    }
}

/// POLICY.md §13: the policy `sbx run` read is read-only to the command
/// inside the writable workspace (the grant `sbx run` adds), in the profile.
#[test]
fn sbpl_the_runs_own_policy_is_read_only() {
    let ws = VALUES[0].1;
    let inputs = read(&["fixtures/default.toml".into()]);
    let (mut ir, _) = compile(&inputs, None, false, ws);
    let policy = format!("{ws}/sbx.toml");
    sbx::lower::hidden::run_files(&mut ir, std::slice::from_ref(&policy));
    let text = sbx::back::sbpl::emit(&ir)
        .unwrap_or_else(|e| panic!("{e}"))
        .text;
    assert_agrees("run files", &ir, &text);
    let o = Oracle::new(&ir, &text);
    let allow = |op, p: &str| o.profile.decide(op, p).is_allow();
    assert!(allow(FileOp::Read, &policy));
    for op in [FileOp::Write, FileOp::WriteCreate, FileOp::WriteUnlink] {
        assert!(!allow(op, &policy), "{op:?}");
    }
    assert!(allow(FileOp::Write, &format!("{ws}/other.toml")));
}
