use super::*;
use std::collections::BTreeMap;
use FileOp::*;

fn profile(src: &str) -> Profile {
    profile_with(src, &[])
}

fn profile_with(src: &str, params: &[(&str, &str)]) -> Profile {
    let params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Profile::from_source(src, &params).unwrap_or_else(|e| panic!("{e}"))
}

fn error(src: &str) -> String {
    Profile::from_source(src, &BTreeMap::new())
        .expect_err("profile should be rejected")
        .to_string()
}

/// "allow@3", "deny@default", "unknown@5" etc.
fn d(p: &Profile, op: FileOp, path: &str) -> String {
    let decision = p.decide(op, path);
    let what = match decision {
        Decision::Allow { .. } => "allow",
        Decision::Deny { .. } => "deny",
        Decision::Unknown { .. } => "unknown",
    };
    format!("{what}@{}", line_text(decision.line()))
}

#[test]
fn last_matching_rule_wins() {
    let p = profile(
        r#"(version 1)
(deny default)
(allow file-read* (subpath "/a"))
(deny file-read* (subpath "/a/secret"))
(allow file-read* (literal "/a/secret/ok"))"#,
    );
    assert_eq!(d(&p, Read, "/a/x"), "allow@3");
    assert_eq!(d(&p, Read, "/a/secret/key"), "deny@4");
    assert_eq!(d(&p, Read, "/a/secret"), "deny@4");
    assert_eq!(d(&p, Read, "/a/secret/ok"), "allow@5");
    assert_eq!(d(&p, Read, "/b"), "deny@2");
    assert_eq!(d(&p, Write, "/a/x"), "deny@2");
}

#[test]
fn default_is_the_fallback_wherever_it_is() {
    assert_eq!(d(&profile("(version 1)"), Write, "/x"), "allow@default");
    assert_eq!(d(&profile("(allow default)"), Write, "/x"), "allow@1");
    let p = profile("(allow file-read* (subpath \"/a\"))\n(deny default (with no-log))");
    assert_eq!(d(&p, Read, "/a/b"), "allow@1");
    assert_eq!(d(&p, Read, "/b"), "deny@2");
    // The last default form counts.
    assert_eq!(
        d(&profile("(deny default)\n(allow default)"), Read, "/x"),
        "allow@2"
    );
}

#[test]
fn subpath_matches_on_component_boundaries() {
    let p = profile("(deny default)\n(allow file-read* (subpath \"/a/b\"))");
    assert_eq!(d(&p, Read, "/a/b"), "allow@2");
    assert_eq!(d(&p, Read, "/a/b/c/d"), "allow@2");
    assert_eq!(d(&p, Read, "/a/bc"), "deny@1");
    assert_eq!(d(&p, Read, "/a"), "deny@1");
    let root = profile("(deny default)\n(allow file-read* (subpath \"/\"))");
    assert_eq!(d(&root, Read, "/"), "allow@2");
    assert_eq!(d(&root, Read, "/x/y"), "allow@2");
    let slash = profile("(deny default)\n(allow file-read* (subpath \"/a/\"))");
    assert_eq!(d(&slash, Read, "/a"), "allow@2");
    assert_eq!(d(&slash, Read, "/a/x"), "allow@2");
    assert_eq!(d(&slash, Read, "/ab"), "deny@1");
}

#[test]
fn literal_path_and_prefix() {
    let p = profile(
        "(deny default)\n(allow file-read* (literal \"/etc/hosts\") (path \"/etc/passwd\"))\n(allow file-write* (prefix \"/tmp/sbx\"))",
    );
    assert_eq!(d(&p, Read, "/etc/hosts"), "allow@2");
    assert_eq!(d(&p, Read, "/etc/passwd"), "allow@2");
    assert_eq!(d(&p, Read, "/etc/hosts/x"), "deny@1");
    assert_eq!(d(&p, Write, "/tmp/sbx"), "allow@3");
    assert_eq!(d(&p, Write, "/tmp/sbx-other/f"), "allow@3");
    assert_eq!(d(&p, Write, "/tmp/sb"), "deny@1");
}

#[test]
fn path_ancestors_match_the_path_and_its_parents() {
    let p = profile_with(
        "(deny default)\n(allow file-read-metadata (path-ancestors (param \"W\")))",
        &[("W", "/Users/a/ws")],
    );
    for yes in ["/", "/Users", "/Users/a", "/Users/a/ws"] {
        assert_eq!(d(&p, ReadMetadata, yes), "allow@2", "{yes}");
    }
    for no in ["/Users/a/ws/x", "/Users/ab", "/Users/a/w", "/tmp"] {
        assert_eq!(d(&p, ReadMetadata, no), "deny@1", "{no}");
    }
}

#[test]
fn require_all_any_not() {
    let p = profile(
        r#"(deny default)
(allow file-write*
  (require-all (subpath "/w")
           (require-not (subpath "/w/.git"))
           (require-not (literal "/w/.env"))))
(allow file-read* (require-any (literal "/r1") (subpath "/r2")))"#,
    );
    assert_eq!(d(&p, Write, "/w/src/main.rs"), "allow@2");
    assert_eq!(d(&p, Write, "/w/.git"), "deny@1");
    assert_eq!(d(&p, Write, "/w/.git/config"), "deny@1");
    assert_eq!(d(&p, Write, "/w/.env"), "deny@1");
    assert_eq!(d(&p, Write, "/w/.envrc"), "allow@2");
    assert_eq!(d(&p, Read, "/r1"), "allow@6");
    assert_eq!(d(&p, Read, "/r2/x"), "allow@6");
    assert_eq!(d(&p, Read, "/r3"), "deny@1");
}

#[test]
fn regex_filters() {
    let p = profile(
        r#"(deny default)
(allow file-read* (regex #"^/tmp/[^/]+\.txt$" "^/x\\.y$"))
(deny file-read* (regex #"/\.ssh(/|$)"))"#,
    );
    assert_eq!(d(&p, Read, "/tmp/a.txt"), "allow@2");
    assert_eq!(d(&p, Read, "/tmp/a/b.txt"), "deny@1");
    assert_eq!(d(&p, Read, "/tmp/aXtxt"), "deny@1");
    assert_eq!(d(&p, Read, "/x.y"), "allow@2");
    assert_eq!(d(&p, Read, "/xzy"), "deny@1");
    let all = profile("(deny default)\n(allow file-read* (regex #\"^/\"))\n(deny file-read* (regex #\"/\\.ssh(/|$)\"))");
    assert_eq!(d(&all, Read, "/home/u/.ssh"), "deny@3");
    assert_eq!(d(&all, Read, "/home/u/.ssh/id"), "deny@3");
    assert_eq!(d(&all, Read, "/home/u/.sshx"), "allow@2");
}

#[test]
fn params_and_string_append() {
    let src = r#"(deny default)
(allow file-read* (subpath (param "HOME")))
(deny file-read* (literal (string-append (param "HOME") "/.netrc")))
(allow file-write* (regex (string-append "^" (regex-quote (param "HOME")) "/out\.[0-9]+$")))"#;
    let p = profile_with(src, &[("HOME", "/Users/a.b")]);
    assert_eq!(d(&p, Read, "/Users/a.b/x"), "allow@2");
    assert_eq!(d(&p, Read, "/Users/a.b/.netrc"), "deny@3");
    assert_eq!(d(&p, Write, "/Users/a.b/out.1"), "allow@4");
    // regex-quote makes the '.' in the parameter literal.
    assert_eq!(d(&p, Write, "/Users/aXb/out.1"), "deny@1");
    assert_eq!(
        error("(allow file-read* (subpath (param \"HOME\")))"),
        "1:28: parameter \"HOME\" is not defined"
    );
}

#[test]
fn operations_map_to_queries() {
    let p = profile(
        r#"(deny default)
(allow file-read-metadata (subpath "/m"))
(allow file-read* (subpath "/r"))
(allow file-write-create (subpath "/c"))
(allow file* (subpath "/f"))
(allow process-exec* (subpath "/bin"))
(allow network-outbound (remote ip "localhost:*"))
(allow mach-lookup (global-name (param "UNSET")))"#,
    );
    assert_eq!(d(&p, ReadMetadata, "/m/x"), "allow@2");
    assert_eq!(d(&p, Read, "/m/x"), "deny@1");
    assert_eq!(d(&p, Read, "/r/x"), "allow@3");
    assert_eq!(d(&p, ReadMetadata, "/r/x"), "allow@3");
    assert_eq!(d(&p, Write, "/r/x"), "deny@1");
    assert_eq!(d(&p, WriteCreate, "/c/x"), "allow@4");
    assert_eq!(d(&p, Write, "/c/x"), "deny@1");
    for op in [Read, ReadMetadata, Write, WriteCreate, WriteUnlink] {
        assert_eq!(d(&p, op, "/f/x"), "allow@5", "{op:?}");
    }
    assert_eq!(d(&p, ProcessExec, "/f/x"), "deny@1");
    assert_eq!(d(&p, ProcessExec, "/bin/ls"), "allow@6");
    assert_eq!(d(&p, Read, "/bin/ls"), "deny@1");
    let exec =
        profile("(deny default)\n(allow process-exec (literal \"/bin/sh\") (with no-sandbox))");
    assert_eq!(d(&exec, ProcessExec, "/bin/sh"), "allow@2");
}

#[test]
fn unknown_filters_give_unknown_decisions() {
    let p = profile(
        r#"(deny default)
(allow file-read* (subpath "/a"))
(allow file-read* (require-all (subpath "/v") (vnode-type DIRECTORY)))
(deny file-read* (extension "com.apple.x"))"#,
    );
    // A maybe-matching deny after an allow could flip it.
    assert_eq!(d(&p, Read, "/a/x"), "unknown@4");
    // Outside /v the require-all is certainly false; the maybe-deny agrees
    // with the default deny, so the answer is known.
    assert_eq!(d(&p, Read, "/b"), "deny@1");
    let q = profile(
        "(deny default)\n(allow file-read* (require-all (subpath \"/v\") (vnode-type DIRECTORY)))",
    );
    assert_eq!(d(&q, Read, "/v/x"), "unknown@2");
    assert_eq!(d(&q, Read, "/w"), "deny@1");
    // A later certain match decides regardless of earlier unknown rules.
    let r = profile("(deny default)\n(allow file-read* (home-subpath \"/x\"))\n(deny file-read* (subpath \"/\"))");
    assert_eq!(d(&r, Read, "/x"), "deny@3");
    match r.decide(Read, "/x") {
        Decision::Deny { line: Some(3) } => {}
        other => panic!("{other:?}"),
    }
    let Decision::Unknown { reason, .. } = q.decide(Read, "/v/x") else {
        panic!("expected unknown")
    };
    assert_eq!(
        reason,
        "the rule at line 2 may match: filter 'vnode-type' at 2:47"
    );
}

#[test]
fn unknown_symbols_in_rules() {
    // A variable in filter position maybe matches.
    let p = profile("(deny default)\n(allow file-read* cache-path-filter)");
    assert_eq!(d(&p, Read, "/x"), "unknown@2");
    assert_eq!(d(&p, ProcessExec, "/x"), "deny@1");
    // An unknown operation-like name maybe covers every file operation.
    let o = profile("(deny default)\n(allow file-raed* (subpath \"/x\"))");
    assert_eq!(d(&o, Write, "/x"), "unknown@2");
    assert_eq!(d(&o, ProcessExec, "/x"), "unknown@2");
    // Non-file rules with variables are skipped like any other non-file rule.
    let m = profile("(deny default)\n(allow mach-lookup mach-filter)");
    assert_eq!(d(&m, Read, "/x"), "deny@1");
    assert_eq!(error("(allow my-filter)"), "1:1: rule without an operation");
    let q = profile("(deny default)\n(allow file-read* (subpath my-dir))");
    assert_eq!(d(&q, Read, "/x"), "unknown@2");
    assert_eq!(d(&q, Write, "/x"), "deny@1");
}

#[test]
fn specific_versus_wildcard_precedence_is_not_guessed() {
    let p = profile(
        "(deny default)\n(deny file-write-unlink (subpath \"/w\"))\n(allow file-write* (subpath \"/w\"))",
    );
    assert_eq!(d(&p, Write, "/w/f"), "allow@3");
    assert_eq!(d(&p, WriteUnlink, "/w/f"), "unknown@3");
    assert_eq!(d(&p, WriteUnlink, "/x"), "deny@1");
    // Both readings agree when the specific rule comes last.
    let q = profile(
        "(deny default)\n(allow file-write* (subpath \"/w\"))\n(deny file-write-unlink (subpath \"/w\"))",
    );
    assert_eq!(d(&q, WriteUnlink, "/w/f"), "deny@3");
}

#[test]
fn paths_must_be_normalized() {
    let p = profile("(allow default)");
    for bad in ["", "rel", "/a/", "/a//b", "/a/./b", "/a/../b"] {
        assert_eq!(d(&p, Read, bad), "unknown@default", "{bad:?}");
    }
    assert_eq!(d(&p, Read, "/"), "allow@1");
}

#[test]
fn unsupported_profiles_are_errors() {
    assert_eq!(
        error("(version 1)\n(define x 1)"),
        "2:1: cannot evaluate (define ...): only version, allow, deny, debug and trace forms are supported"
    );
    assert!(error("(import \"bsd.sb\")").starts_with("1:1: cannot evaluate (import ...)"));
    assert_eq!(
        error("(version 2)"),
        "1:1: only (version 1) profiles are evaluated"
    );
    assert_eq!(
        error("(allow default (literal \"/a\"))"),
        "1:1: cannot evaluate 'default' combined with other operations or filters"
    );
    assert_eq!(
        error("(allow (literal \"/a\"))"),
        "1:1: rule without an operation"
    );
    assert_eq!(
        error("(allow file-read* (require-not (literal \"/a\") (literal \"/b\")))"),
        "1:19: require-not takes exactly one filter"
    );
    assert!(error("(allow file-read* (regex #\"^(?/x)\"))")
        .starts_with("1:26: invalid regex \"^(?/x)\""));
    assert_eq!(
        error("(allow file-read* (literal 5))"),
        "1:28: expected a string value"
    );
    assert_eq!(
        error("(allow file-read* (subpath))"),
        "1:19: (subpath) needs a value"
    );
    assert_eq!(
        error("(allow file-read* \"/a\")"),
        "1:19: expected an operation, filter or (with ...)"
    );
    assert_eq!(
        error("(allow file-read*"),
        "1:1: unclosed '(' opened at 1:1"
    );
    assert_eq!(
        error("x"),
        "1:1: cannot evaluate a top-level form that is not (name ...)"
    );
    // Debug and trace forms are harmless.
    assert_eq!(
        d(
            &profile("(version 1)\n(debug deny)\n(trace \"t.sb\")"),
            Read,
            "/"
        ),
        "allow@default"
    );
}

/// Path components built from characters that mean something to the reader.
fn component() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let c = prop::sample::select(vec![
        'a', 'Z', '0', '.', '-', ' ', '"', '\\', '(', ')', ';', '#', '|', '\'', '`', ',', '*', '[',
        '$', '^', 'é', '百',
    ]);
    prop::collection::vec(c, 1..8)
        .prop_map(|v| v.into_iter().collect::<String>())
        .prop_filter("not . or ..", |s| s != "." && s != "..")
}

proptest::proptest! {
    /// escape_string -> reader -> evaluator keeps the exact path: the chain
    /// the emitter relies on.
    #[test]
    fn escaped_paths_match_exactly(
        parts in proptest::collection::vec(component(), 1..4),
        child in component(),
    ) {
        let path = format!("/{}", parts.join("/"));
        let lit = crate::sbpl::escape_string(&path).unwrap();
        let p = profile(&format!(
            "(deny default)\n(allow file-read* (literal {lit}))\n(allow file-write* (subpath {lit}))"
        ));
        proptest::prop_assert_eq!(d(&p, Read, &path), "allow@2");
        proptest::prop_assert_eq!(d(&p, Read, &format!("{path}/{child}")), "deny@1");
        proptest::prop_assert_eq!(d(&p, Read, &format!("{path}{child}")), "deny@1");
        proptest::prop_assert_eq!(d(&p, Write, &path), "allow@3");
        proptest::prop_assert_eq!(d(&p, Write, &format!("{path}/{child}")), "allow@3");
        proptest::prop_assert_eq!(d(&p, Write, &format!("{path}{child}")), "deny@1");
    }
}

/// "allow@3" etc. for a TCP connection to `localhost` or elsewhere.
fn c(p: &Profile, localhost: bool, port: u16) -> String {
    let decision = p.decide_connect(Connect { localhost, port });
    let what = match decision {
        Decision::Allow { .. } => "allow",
        Decision::Deny { .. } => "deny",
        Decision::Unknown { .. } => "unknown",
    };
    format!("{what}@{}", line_text(decision.line()))
}

#[test]
fn outbound_tcp_by_host_and_port() {
    let p = profile(
        r#"(version 1)
(deny default)
(allow network-outbound
  (remote tcp "*:443")
  (remote tcp "localhost:8080")
  (remote udp "*:53")
  (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))
(deny network-outbound (remote ip "*:444"))
(allow file-read* (subpath "/"))"#,
    );
    assert_eq!(c(&p, false, 443), "allow@3");
    assert_eq!(c(&p, true, 443), "allow@3", "* covers localhost");
    assert_eq!(c(&p, true, 8080), "allow@3");
    assert_eq!(c(&p, false, 8080), "deny@2");
    assert_eq!(c(&p, false, 53), "deny@2", "udp is not tcp");
    assert_eq!(c(&p, true, 444), "deny@8");
    // File rules do not answer for the network, nor the reverse.
    assert_eq!(d(&p, Read, "/x"), "allow@9");
    let any = profile("(deny default)\n(allow network*)\n(deny network-bind)");
    assert_eq!(c(&any, false, 1), "allow@2");
    assert_eq!(c(&profile("(version 1)"), false, 1), "allow@default");
    // Without an address: any; several addresses: any of them.
    let bare = profile("(deny default)\n(allow network-outbound (remote tcp) (remote udp))");
    assert_eq!(c(&bare, false, 9), "allow@2");
    let two =
        profile("(deny default)\n(allow network-outbound (remote tcp \"*:1\" \"localhost:2\"))");
    assert_eq!(c(&two, false, 1), "allow@2");
    assert_eq!(c(&two, true, 2), "allow@2");
    assert_eq!(c(&two, false, 2), "deny@1");
}

#[test]
fn outbound_addresses_from_parameters() {
    let src = r#"(deny default)
(allow network-outbound (remote tcp (string-append "localhost:" (param "PORT"))))"#;
    let p = profile_with(src, &[("PORT", "50001")]);
    assert_eq!(c(&p, true, 50001), "allow@2");
    assert_eq!(c(&p, true, 50002), "deny@1");
    assert_eq!(c(&p, false, 50001), "deny@1");
    // Seatbelt refuses a profile whose parameter is missing.
    let e = Profile::from_source(src, &BTreeMap::new()).unwrap_err();
    assert!(e.message.contains("\"PORT\" is not defined"), "{e}");
    for bad in ["50001", "example.com:443", "localhost:0", "localhost:http"] {
        let text = format!("(allow network-outbound (remote tcp \"{bad}\"))");
        let e = Profile::from_source(&text, &BTreeMap::new()).unwrap_err();
        assert!(e.message.contains("is not"), "{bad}: {e}");
    }
}

#[test]
fn outbound_filters_the_evaluator_cannot_decide() {
    let p = profile(
        r#"(deny default)
(allow network-outbound (local ip "localhost:*"))
(allow network-outbound (remote tcp4 "*:22"))"#,
    );
    assert_eq!(c(&p, false, 80), "unknown@2");
    assert_eq!(c(&p, false, 22), "unknown@3");
    let four = profile("(deny default)\n(allow network-outbound (remote tcp4 \"*:22\"))");
    assert_eq!(c(&four, false, 22), "unknown@2");
    assert_eq!(c(&four, false, 80), "deny@1", "the address does not match");
    let n = profile(
        r#"(deny default)
(allow network-outbound (require-all (remote tcp "*:*") (require-not (remote tcp "localhost:*"))))"#,
    );
    assert_eq!(c(&n, false, 80), "allow@2");
    assert_eq!(c(&n, true, 80), "deny@1");
}
