//! The Linux artifact and the landlockconfig document of every fixture,
//! compiled in portable mode so the snapshots do not depend on this
//! machine. Each artifact must also be accepted by the loader's parser.

mod common;

use camino::Utf8PathBuf;
use sbx::back::landlock::{self, check_config, LandlockConfig};
use sbx::compile::{self, Inputs, Options};
use sbx::ir::Os;

fn options(tool: Option<&str>) -> Options {
    Options {
        workspace: Some(Utf8PathBuf::from("/work/ws")),
        home: Some(Utf8PathBuf::from("/home/user")),
        tool: tool.map(String::from),
        portable: true,
        approvals: Vec::new(),
        jobs: 0,
    }
}

/// A fixture's policy lowered for Linux with `opts`.
fn lowered(case: &common::Case, opts: &Options) -> sbx::ir::Ir {
    let root = env!("CARGO_MANIFEST_DIR");
    let name = &case.name;
    let inputs = Inputs {
        sources: case
            .files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(format!("{root}/{f}")).unwrap();
                Inputs::from_text(f, &text).sources.remove(0)
            })
            .collect(),
    };
    let (policy, _) =
        compile::load(&inputs, opts).unwrap_or_else(|f| panic!("{name}: {:?}", f.diagnostics));
    compile::lower_for(&policy, opts, Os::Linux)
        .unwrap_or_else(|f| panic!("{name}: {:?}", f.diagnostics))
        .ir
}

#[test]
fn linux_artifacts_for_every_fixture() {
    for case in common::fixture_cases() {
        let name = &case.name;
        let ir = lowered(&case, &options(case.tool.as_deref()));
        let linux = landlock::emit(&ir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let doc = landlock::emit_landlockconfig(&ir).unwrap_or_else(|e| panic!("{name}: {e}"));

        let parsed: LandlockConfig = serde_json::from_str(&doc.text).unwrap();
        check_config(&parsed).unwrap_or_else(|e| panic!("{name}: {e}"));
        #[cfg(target_os = "linux")]
        {
            let art = sbx::runtime::linux::parse_artifact(&linux.text)
                .unwrap_or_else(|e| panic!("{name}: the loader refuses it: {e}"));
            assert_eq!(art.landlock, parsed, "{name}");
        }

        insta::with_settings!({
            snapshot_path => "../snapshots",
            prepend_module_to_snapshot => false,
            description => case.files.join(" "),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("linux_fixture_{name}"), linux.text);
            insta::assert_snapshot!(format!("landlockconfig_fixture_{name}"), doc.text);
        });
    }
}

/// Resolved mode against a real workspace and home, where paths exist or
/// not (protections present and absent, carve-outs mounted): every
/// artifact passes the loader's checks, consistency included.
#[cfg(target_os = "linux")]
#[test]
fn resolved_artifacts_for_every_fixture_load() {
    let host = common::Host::new();
    for d in [".git/hooks", ".git/info", "src", "target"] {
        std::fs::create_dir_all(host.ws.join(d)).unwrap();
    }
    std::fs::write(host.ws.join(".git/config"), "").unwrap();
    for d in [".ssh", ".aws", ".config/gh", ".cargo", ".gnupg"] {
        std::fs::create_dir_all(host.home.join(d)).unwrap();
    }
    let opts = |tool: Option<&str>| Options {
        workspace: Some(Utf8PathBuf::from_path_buf(host.ws.clone()).unwrap()),
        home: Some(Utf8PathBuf::from_path_buf(host.home.clone()).unwrap()),
        portable: false,
        ..options(tool)
    };
    for case in common::fixture_cases() {
        let ir = lowered(&case, &opts(case.tool.as_deref()));
        let linux = landlock::emit(&ir).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        if let Err(e) = sbx::runtime::linux::parse_artifact(&linux.text) {
            panic!("{}: the loader refuses it: {e}", case.name);
        }
    }
}

/// Fixture `name`'s portable artifact as JSON, for editing.
#[cfg(target_os = "linux")]
fn artifact_json(name: &str) -> serde_json::Value {
    let case = common::fixture_cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap();
    let ir = lowered(&case, &options(None));
    let text = landlock::emit(&ir).unwrap().text;
    sbx::runtime::linux::parse_artifact(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The loader's refusal of fixture `name`'s artifact after `edit`.
#[cfg(target_os = "linux")]
fn refused_after(name: &str, edit: &dyn Fn(&mut serde_json::Value)) -> String {
    let mut art = artifact_json(name);
    edit(&mut art);
    match sbx::runtime::linux::parse_artifact(&art.to_string()) {
        Ok(_) => panic!("{name}: an inconsistent artifact was accepted"),
        Err(e) => {
            assert!(e.starts_with("the artifact is inconsistent: "), "{e}");
            assert!(e.ends_with("(edited, or not written by this sbx; compile it again)"));
            e
        }
    }
}

/// Members that contradict each other: each edit of a compiled artifact
/// is refused, naming the members.
#[cfg(target_os = "linux")]
#[test]
fn inconsistent_artifacts_are_refused() {
    use serde_json::{json, Value};
    type Edit = &'static dyn Fn(&mut Value);
    let no_sockets: Edit = &|a| a["seccomp"]["sockets"] = Value::Null;
    let hidden_mount = artifact_json("protected")["namespaces"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let cases: [(&str, Edit, String); 10] = [
        // No [[net]]: TCP connect handled, no port allowed.
        (
            "default",
            no_sockets,
            "landlock handles TCP connect with no port allowed but seccomp.sockets is null".into(),
        ),
        // Port rules: TCP connect handled for those ports.
        (
            "minimal",
            no_sockets,
            "landlock handles TCP connect with only port(s) 443 allowed but seccomp.sockets \
             is null"
                .into(),
        ),
        // Host rules: the proxy and its report lines.
        (
            "network",
            no_sockets,
            "proxy has host rules but seccomp.sockets is null".into(),
        ),
        (
            "network",
            &|a| {
                a.as_object_mut().unwrap().remove("proxy");
            },
            "precision line net[1] is exact by sbx run's proxy, but the artifact has no proxy \
             member"
                .into(),
        ),
        (
            "network",
            &|a| {
                let rules = a["proxy"]["rules"].as_array_mut().unwrap();
                rules.retain(|r| r["index"] != json!(1));
            },
            "but proxy.rules has no rule 1".into(),
        ),
        // Protections and deny rules: the report calls them exact by a mount.
        (
            "protected",
            &|a| {
                a["namespaces"]["mounts"].as_array_mut().unwrap().remove(0);
            },
            format!(
                "is exact because sbx run hides {hidden_mount} under an empty read-only \
                 mount, but namespaces.mounts has no such mount"
            ),
        ),
        // The same mount with other flags is not the one the line counts on.
        (
            "protected",
            &|a| a["namespaces"]["mounts"][0]["kind"] = json!("bind"),
            format!("hides {hidden_mount} under an empty read-only mount, but namespaces.mounts"),
        ),
        (
            "protected",
            &|a| {
                a["namespaces"].as_object_mut().unwrap().remove("mounts");
            },
            "namespaces.mounts has no such mount (".into(),
        ),
        (
            "deny",
            &|a| a["namespaces"] = json!({}),
            "namespaces.mounts has no such mount".into(),
        ),
        // `namespaces = "never"` with the mounts of another mode.
        (
            "protected",
            &|a| a["namespaces"]["mode"] = json!("never"),
            "namespaces.mode is \"never\" but namespaces lists".into(),
        ),
    ];
    for (name, edit, want) in cases {
        let e = refused_after(name, edit);
        assert!(e.contains(&want), "{name}: {e}");
    }
    let e = refused_after("protected", &|a| a["namespaces"]["mode"] = json!("never"));
    assert!(e.contains("but namespaces.mode is \"never\""), "{e}");
    // An unrestricted network has no socket filter: not a contradiction.
    let art = artifact_json("net-unrestricted");
    assert_eq!(art["seccomp"]["sockets"], Value::Null);
}

/// End to end: `sbx run --artifact` refuses an edited artifact with exit
/// 125 and the contradiction, and runs the one `compile` wrote.
#[cfg(target_os = "linux")]
#[test]
fn sbx_run_refuses_an_inconsistent_artifact() {
    let h = common::Host::new();
    let mut json = default_artifact_that_runs(&h);
    json["seccomp"]["sockets"] = serde_json::Value::Null;
    let (code, out, err) = run_edited(&h, "edited", &json);
    assert_eq!(code, 125, "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        "sbx: the artifact is inconsistent: landlock handles TCP connect with no port \
         allowed but seccomp.sockets is null (edited, or not written by this sbx; compile \
         it again)\n"
    );
}

/// An artifact whose seccomp section cannot become a filter on this
/// architecture (a syscall this sbx does not know; rules too long for the
/// kernel) is not run without one, even under `best_effort`: the x32
/// refusal and the foreign architectures' kill would go with the rest.
/// Control: the artifact as compiled runs.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn sbx_run_refuses_a_seccomp_section_it_cannot_apply() {
    let h = common::Host::new();
    let json = default_artifact_that_runs(&h);
    let unknown = |j: &mut serde_json::Value| {
        j["seccomp"]["deny"]
            .as_array_mut()
            .unwrap()
            .push("frobnicate".into())
    };
    // 2,000 conditional rules on as many numbers: past 4,096 instructions.
    let long = |j: &mut serde_json::Value| {
        let rules = j["seccomp"]["deny_args"].as_array_mut().unwrap();
        for n in 0..2000 {
            rules.push(serde_json::json!(format!("fcntl(arg1 == {n}) -> EACCES")));
        }
    };
    for (name, edit) in [("unknown", &unknown as &dyn Fn(&mut _)), ("long", &long)] {
        let mut j = json.clone();
        edit(&mut j);
        let (code, out, err) = run_edited(&h, name, &j);
        assert_eq!((code, out.as_str()), (125, ""), "{name}: {err}");
        assert!(
            err.contains("seccomp section cannot be applied"),
            "{name}: {err}"
        );
    }
}

/// The Linux artifact `compile` writes for the default policy, once
/// `sbx run --artifact` has run it (the control of the edits below).
#[cfg(target_os = "linux")]
fn default_artifact_that_runs(h: &common::Host) -> serde_json::Value {
    let policy = h.root.join("p.toml");
    std::fs::write(&policy, "version = 1\n").unwrap();
    let art = h.root.join("linux.json");
    let (p, a) = (policy.to_str().unwrap(), art.to_str().unwrap());
    let (code, _, err) = h.sbx(&["compile", p, "--target", "linux", "-o", a]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = h.sbx(&["run", "--artifact", a, "--", "/bin/true"]);
    assert_eq!(code, 0, "the control runs: {err}");
    serde_json::from_str(&std::fs::read_to_string(&art).unwrap()).unwrap()
}

/// `sbx run --artifact NAME.json -- /bin/echo ran` of the edited `json`:
/// the exit code, standard output (`ran` if the command ran) and error.
#[cfg(target_os = "linux")]
fn run_edited(h: &common::Host, name: &str, json: &serde_json::Value) -> (i32, String, String) {
    let edited = h.root.join(format!("{name}.json"));
    std::fs::write(&edited, json.to_string()).unwrap();
    h.sbx(&[
        "run",
        "--artifact",
        edited.to_str().unwrap(),
        "--",
        "/bin/echo",
        "ran",
    ])
}
