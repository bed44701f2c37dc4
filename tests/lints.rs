//! The lints one by one, through the library, on small policies.

#![cfg(unix)]

mod common;
use common::Host;
use sbx::compile::{self, Inputs};
use sbx::diag::{codes, Diagnostic};
use sbx::ir::{Os, Precision, Status};
use sbx::policy::merge;

fn lint_layers(h: &Host, files: &[(&str, &str)], reports: &[Precision]) -> Vec<Diagnostic> {
    let inputs = Inputs {
        sources: files
            .iter()
            .map(|(n, t)| sbx::policy::source::SourceFile {
                name: n.to_string(),
                text: (*t).into(),
            })
            .collect(),
    };
    let opts = h.compile_options();
    let (layers, _) = compile::load_layers(&inputs, &opts).unwrap();
    let policy = merge::merge(&layers);
    // Lowering's own warnings too (SBX029, SBX030), as `sbx check` shows them.
    let lowered = compile::lower_for(&policy, &opts, Os::host()).unwrap();
    let mut d = lowered.diagnostics;
    d.extend(sbx::lint::lint(
        &lowered.ir,
        &policy,
        &layers,
        reports,
        false,
    ));
    d
}

fn lint(h: &Host, text: &str) -> Vec<Diagnostic> {
    lint_layers(h, &[("p.toml", text)], &[])
}

fn with<'a>(d: &'a [Diagnostic], code: &str) -> Vec<&'a Diagnostic> {
    d.iter().filter(|d| d.code == code).collect()
}

const CARVE: &str =
    "[[fs]]\npath = \".\"\nread = true\nwrite = true\n\n[[fs]]\npath = \".git\"\nread = true\n";

fn line(rule: &str, target: &str, status: Status, reason: &str) -> Precision {
    Precision {
        rule: rule.into(),
        target: target.into(),
        status,
        reason: reason.into(),
        advisory: false,
    }
}

#[test]
fn carve_out_from_precision_reports() {
    let h = Host::new();
    let landlock =
        "narrower rule under a broader one cannot be expressed in Landlock (rights are additive)";
    let reports = [
        line("fs[1] (p.toml:6:1)", "linux", Status::Wider, landlock),
        line(
            "fs[1] (p.toml:6:1)",
            "landlockconfig",
            Status::Wider,
            landlock,
        ),
        line(
            "fs[1] (p.toml:6:1)",
            "windows",
            Status::Wider,
            "no per-path filesystem enforcement",
        ),
        line("fs[1] (p.toml:6:1)", "macos", Status::Exact, "subpath rule"),
        line("fs[1] (p.toml:6:1)", "ir", Status::Wider, "lowering note"),
        // A top-level rule is not a carve-out, whatever the target says.
        line(
            "fs[0] (p.toml:1:1)",
            "windows",
            Status::Wider,
            "no per-path filesystem enforcement",
        ),
    ];
    let d = lint_layers(&h, &[("p.toml", CARVE)], &reports);
    let carve = with(&d, codes::CARVE_OUT);
    assert_eq!(carve.len(), 2, "{carve:#?}");
    assert!(carve[0]
        .message
        .contains("fs[1] (p.toml:6:1) narrows its parent fs[0] (p.toml:1:1)"));
    assert!(
        carve[0]
            .message
            .contains("linux, landlockconfig grants more than the policy"),
        "{}",
        carve[0].message
    );
    assert!(carve[1].message.starts_with("fs[1]") && carve[1].message.contains("windows"));
    assert!(carve.iter().all(|c| c.location.as_ref().unwrap().line == 6));
    // No report, no lint.
    assert!(with(&lint(&h, CARVE), codes::CARVE_OUT).is_empty());
}

#[test]
fn sensitive_paths_directly_and_through_ancestors() {
    let h = Host::new();
    // Covered is not consent (POLICY.md §7): the `~/` paths a broader
    // rule covers are hidden (SBX029, one per path that exists); a
    // pattern is a warning (SBX020) only where something matches it.
    for d in [".ssh", ".aws", ".kube", "proj/deep/er"] {
        std::fs::create_dir_all(h.home.join(d)).unwrap();
    }
    std::fs::write(h.home.join(".aws/credentials"), "").unwrap();
    std::fs::write(h.home.join(".kube/config"), "").unwrap();
    let d = lint(&h, "[[fs]]\npath = \"~\"\nread = true\n");
    // Hidden all the same, but nothing to say about what is not there.
    assert!(with(&d, codes::SENSITIVE_COVERED)
        .iter()
        .all(|c| !c.message.contains("~/.gnupg/")));
    assert!(with(&d, codes::SENSITIVE).is_empty(), "{d:#?}");
    let covered = with(&d, codes::SENSITIVE_COVERED);
    for p in ["~/.ssh/", "~/.aws/credentials", "~/.kube/config"] {
        let c = covered
            .iter()
            .find(|c| c.message.contains(&format!("the sensitive path {p}:")))
            .unwrap_or_else(|| panic!("{p}: {covered:#?}"));
        assert!(c.message.starts_with("fs[0] (p.toml:1:1) grants read on "));
        assert_eq!(c.location.as_ref().unwrap().line, 1);
    }
    // An `.env` two levels down: found, named, located.
    let env = h.home.join("proj/deep/.env");
    std::fs::write(&env, "TOKEN=x").unwrap();
    let d = lint(&h, "[[fs]]\npath = \"~\"\nread = true\n");
    let s = with(&d, codes::SENSITIVE);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert!(
        s[0].message.contains(&format!(
            "holds the sensitive path **/.env ({})",
            env.display()
        )),
        "{}",
        s[0].message
    );
    assert_eq!(s[0].location.as_ref().unwrap().line, 1);
    // Not below a tool's own tree (node_modules), however deep.
    std::fs::remove_file(&env).unwrap();
    std::fs::create_dir_all(h.home.join("proj/node_modules/x")).unwrap();
    std::fs::write(h.home.join("proj/node_modules/x/.env"), "").unwrap();
    let d = lint(&h, "[[fs]]\npath = \"~/proj\"\nread = true\n");
    assert!(with(&d, codes::SENSITIVE).is_empty(), "{d:#?}");

    // A more specific rule decides ~/.ssh: it names it, so it is consent,
    // under a code of its own (accepting SBX020 never hides it).
    let d = lint(&h, "[[fs]]\npath = \"~\"\nread = true\n\n[[fs]]\npath = \"~/.ssh/config\"\nread = true\n\n[[fs]]\npath = \"~/.ssh\"\nexecute = true\n");
    let s = with(&d, codes::SENSITIVE_NAMED);
    assert!(with(&d, codes::SENSITIVE_COVERED)
        .iter()
        .all(|c| !c.message.contains("~/.ssh/")));
    assert!(with(&d, codes::SENSITIVE).is_empty(), "{d:#?}");
    let ssh = s.iter().find(|d| d.message.starts_with("fs[2]")).unwrap();
    assert!(
        ssh.message.contains("inside the sensitive path ~/.ssh/"),
        "{}",
        ssh.message
    );
    assert!(s.iter().any(|d| d.message.starts_with("fs[1]")
        && d.message.contains("inside the sensitive path ~/.ssh/")));

    // User globs extend the list; a file cannot contain `**/.env`.
    std::fs::write(h.home.join(".gitconfig"), "").unwrap();
    std::fs::create_dir_all(h.home.join(".myapp/prod/eu")).unwrap();
    std::fs::write(h.home.join(".myapp/prod/eu/token"), "").unwrap();
    let d = lint(&h, "sensitive_paths = [\"~/.myapp/*/*/token\"]\n\n[[fs]]\npath = \"~/.myapp/prod\"\nread = true\n\n[[fs]]\npath = \"~/.gitconfig\"\nread = true\n");
    let s = with(&d, codes::SENSITIVE);
    assert_eq!(s.len(), 1, "{s:#?}");
    assert!(
        s[0].message.contains(&format!(
            "holds the sensitive path ~/.myapp/*/*/token ({})",
            h.home.join(".myapp/prod/eu/token").display()
        )),
        "{}",
        s[0].message
    );

    // Preset grants are sbx's own; the default policy is not flagged.
    assert!(with(&lint(&h, "version = 1\n"), codes::SENSITIVE).is_empty());
}

#[test]
fn exfiltration_needs_every_port() {
    let h = Host::new();
    let base = "[[fs]]\npath = \"~/.aws/credentials\"\nread = true\n\n";
    let d = lint(&h, &format!("{base}[[net]]\nhost = \"api.example.com\"\n"));
    let e = with(&d, codes::EXFILTRATION);
    assert_eq!(
        e.len(),
        1,
        "a host without a port opens every port to the kernel"
    );
    assert!(e[0].message.contains("~/.aws/credentials"));
    assert_eq!(e[0].location.as_ref().unwrap().line, 5);
    let d = lint(&h, &format!("{base}[[net]]\nhost = \"*\"\nport = 443\n"));
    assert!(with(&d, codes::EXFILTRATION).is_empty());
    let d = lint(
        &h,
        "[[fs]]\npath = \"~/.aws/credentials\"\nwrite = true\n\n[[net]]\n",
    );
    assert!(
        with(&d, codes::EXFILTRATION).is_empty(),
        "no read, nothing to send"
    );
}

#[test]
fn duplicates_only_within_a_file() {
    let h = Host::new();
    let a = "[[fs]]\npath = \"src\"\nread = true\n";
    let b = "[[fs]]\npath = \"./src/\"\nread = true\nwrite = true\n";
    let d = lint_layers(&h, &[("a.toml", a), ("b.toml", b)], &[]);
    assert!(
        with(&d, codes::DUPLICATE).is_empty(),
        "overriding across layers is what layers are for"
    );
    let d = lint(
        &h,
        &format!("{a}\n{b}\n[[net]]\nport = 1\n[[net]]\nport = 1\n[[net]]\nport = 2\n"),
    );
    let dup = with(&d, codes::DUPLICATE);
    assert_eq!(dup.len(), 2, "{dup:#?}");
    assert!(dup[0].message.contains("fs[1] names") && dup[0].message.contains("like fs[0]"));
    assert_eq!(dup[0].location.as_ref().unwrap().line, 5);
    assert!(dup[1].message.contains("net[1] repeats net[0]"));
}

#[test]
fn broad_writes() {
    let h = Host::new();
    let d = lint(&h, "[[fs]]\npath = \"/\"\nread = true\ncreate = true\n");
    let b = with(&d, codes::BROAD_WRITE);
    assert_eq!(b.len(), 1);
    assert!(b[0]
        .message
        .contains("the root directory (/) writable: create"));
    assert!(with(
        &lint(&h, "[[fs]]\npath = \"/\"\nread = true\n"),
        codes::BROAD_WRITE
    )
    .is_empty());
    let parent = h.home.parent().unwrap().to_str().unwrap().to_string();
    let d = lint(&h, &format!("[[fs]]\npath = \"{parent}\"\nupdate = true\n"));
    assert!(with(&d, codes::BROAD_WRITE)[0]
        .message
        .contains("an ancestor of the home directory"));
    // The default policy on a workspace that is the home directory.
    let mut opts = h.compile_options();
    opts.workspace = opts.home.clone();
    let d = sbx::lint::check(
        &Inputs::from_text("p.toml", "version = 1\n"),
        &opts,
        &Default::default(),
    )
    .unwrap();
    let b = with(&d, codes::BROAD_WRITE);
    assert_eq!(b.len(), 1);
    assert!(b[0]
        .message
        .starts_with("default policy makes the home directory"));
    // Not written in the file: located at the policy itself.
    let at = b[0].location.as_ref().unwrap();
    assert_eq!((at.file.as_str(), at.line, at.column), ("p.toml", 1, 1));
}

/// A deny rule has no effect outside any broader rule (SBX027), and
/// grants nothing for the sensitive-path lint to report (SBX020).
#[test]
fn deny_rules_redundant_outside_any_grant() {
    let h = Host::new();
    let d = lint(
        &h,
        "[[fs]]\npath = \".\"\nread = true\n\n[[fs]]\npath = \"src\"\nread = false\n\n[[fs]]\npath = \"/srv/sbx-lint-nowhere\"\nread = false\n",
    );
    let r = with(&d, codes::REDUNDANT);
    assert_eq!(r.len(), 1, "{r:#?}");
    assert!(r[0].message.starts_with("fs[2]"), "{}", r[0].message);
    assert!(r[0].message.contains("no broader rule grants"));
    assert!(with(&d, codes::SENSITIVE)
        .iter()
        .all(|s| !s.message.starts_with("fs[1]") && !s.message.starts_with("fs[2]")));
}

#[test]
fn redundant_and_missing() {
    let h = Host::new();
    let d = lint(&h, "[[fs]]\npath = \".\"\nread = true\n\n[[fs]]\npath = \"src\"\nread = true\n\n[[fs]]\npath = \".git\"\nread = true\nexecute = true\n\n[[fs]]\npath = \"~/.cargo\"\nread = true\nexecute = true\n");
    let r = with(&d, codes::REDUNDANT);
    assert_eq!(r.len(), 1, "{r:#?}");
    assert!(r[0].message.starts_with("fs[1]"));
    assert!(with(&d, codes::PATH_MISSING)
        .iter()
        .all(|m| m.message.starts_with("fs[3]")));
    let d = lint(&h, "[[fs]]\npath = \"nope\"\nread = true\n");
    let m = with(&d, codes::PATH_MISSING);
    assert_eq!(m.len(), 1);
    assert!(m[0]
        .help
        .as_deref()
        .unwrap()
        .contains("Landlock drops the rule"));
}

#[test]
fn cooperative_notes() {
    let h = Host::new();
    let d = lint(&h, "[[net]]\nhost = \"a.example\"\nport = 8443\n\n[[net]]\nport = 80\n\n[[net]]\nhost = \"b.example\"\nallow = false\n");
    let c = with(&d, codes::COOPERATIVE);
    assert_eq!(c.len(), 2, "a port-only rule is enforced exactly: {c:#?}");
    // Each target's own precision line for the rule, as the artifacts
    // and `explain` give it (#39): `sbx run` enforces hosts on Linux.
    assert!(c[0]
        .message
        .contains("host \"a.example\" is not checked by the kernel alone"));
    assert!(c[0]
        .message
        .contains("linux: host \"a.example\" enforced by `sbx run` for every TCP client"));
    assert!(
        !c[0].message.contains("cooperative only"),
        "{}",
        c[0].message
    );
    assert!(c[1]
        .message
        .contains("a deny rule's host \"b.example\" is not checked by the kernel alone"));
    assert!(c.iter().all(|d| d.severity == sbx::diag::Severity::Note));
}
