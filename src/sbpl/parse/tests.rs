use super::*;

fn err(src: &str) -> (usize, usize, String) {
    let e = parse(src).expect_err("input should be rejected");
    (e.line, e.column, e.message)
}

fn one(src: &str) -> Datum {
    let mut data = parse(src).expect("input should parse");
    assert_eq!(data.len(), 1, "{src}");
    data.remove(0)
}

fn sym(s: &str) -> DatumKind {
    DatumKind::Symbol(s.into())
}

/// The tree without positions, for compact assertions.
fn shape(d: &Datum) -> String {
    match &d.kind {
        DatumKind::List(items) => {
            let inner: Vec<String> = items.iter().map(shape).collect();
            format!("({})", inner.join(" "))
        }
        DatumKind::DottedList(items, tail) => {
            let inner: Vec<String> = items.iter().map(shape).collect();
            format!("({} . {})", inner.join(" "), shape(tail))
        }
        DatumKind::Str(s) => format!("str:{s:?}"),
        DatumKind::Regex(s) => format!("re:{s:?}"),
        DatumKind::Symbol(s) => s.clone(),
        DatumKind::Int(n) => format!("int:{n}"),
        DatumKind::Bool(b) => format!("bool:{b}"),
        DatumKind::Char(c) => format!("char:{c:?}"),
        DatumKind::Quote(d) => format!("'{}", shape(d)),
        DatumKind::Quasiquote(d) => format!("`{}", shape(d)),
        DatumKind::Unquote(d) => format!(",{}", shape(d)),
        DatumKind::UnquoteSplicing(d) => format!(",@{}", shape(d)),
    }
}

#[test]
fn reads_rules_with_positions() {
    let src = "(version 1)\n(deny default)\n  (allow file-read* (subpath \"/usr\"))\n";
    let data = parse(src).unwrap();
    assert_eq!(data.len(), 3);
    assert_eq!(
        shape(&data[2]),
        r#"(allow file-read* (subpath str:"/usr"))"#
    );
    assert_eq!((data[2].line, data[2].column), (3, 3));
    let subpath = &data[2].as_list().unwrap()[2];
    assert_eq!((subpath.line, subpath.column), (3, 21));
    assert_eq!(
        &src[subpath.span.start..subpath.span.end],
        "(subpath \"/usr\")"
    );
    assert_eq!(data[0].head(), Some("version"));
}

#[test]
fn reads_atoms() {
    let d = one(
        r##"(#t #f #x682f #o0004 -12 +3 0000 00ec 2a #\/ #\space #\( ... - + file-read* %string-prefix? string->number @TOKEN@ <MyApp> a#b)"##,
    );
    assert_eq!(
        shape(&d),
        "(bool:true bool:false int:26671 int:4 int:-12 int:3 int:0 00ec 2a char:'/' char:' ' char:'(' ... - + file-read* %string-prefix? string->number @TOKEN@ <MyApp> a#b)"
    );
}

#[test]
fn reads_strings_and_escapes() {
    let d =
        one(r#"("a\\b" "q\"q" "com\.apple\." "Mobile\ Documents" "t\tn\nx\x41" "" "百度Hi.app")"#);
    assert_eq!(
        shape(&d),
        r#"(str:"a\\b" str:"q\"q" str:"com.apple." str:"Mobile Documents" str:"t\tn\nxA" str:"" str:"百度Hi.app")"#
    );
    // Strings may span lines.
    assert_eq!(shape(&one("\"a\nb\"")), r#"str:"a\nb""#);
}

#[test]
fn regex_strings_keep_backslashes() {
    let d = one(r#"(regex #"^/private/var/run/syslog\.pid$" #"" #"\(A\)" #"a\"b")"#);
    assert_eq!(
        shape(&d),
        r#"(regex re:"^/private/var/run/syslog\\.pid$" re:"" re:"\\(A\\)" re:"a\\\"b")"#
    );
}

#[test]
fn reads_quotes_and_dotted_lists() {
    let d = one("(list 'a '() '(1 . #t) `(literal ,path ,@rest) ' b)");
    assert_eq!(
        shape(&d),
        "(list 'a '() '(int:1 . bool:true) `(literal ,path ,@rest) 'b)"
    );
    assert_eq!(
        shape(&one("(define (f . args) args)")),
        "(define (f . args) args)"
    );
}

#[test]
fn skips_comments_and_odd_whitespace() {
    let src = ";;;;;; header\r\n(allow ; trailing\r\n\tfile-read*) #| block\n ( |#\n(deny default)";
    let data = parse(src).unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!((data[1].line, data[1].column), (5, 1));
    // Block comments do not nest: the first "|#" ends them.
    assert_eq!(
        err("#| a #| b |# |#"),
        (1, 14, "unexpected character \"|\"".into())
    );
    assert!(parse("; only a comment").unwrap().is_empty());
    assert!(parse("").unwrap().is_empty());
}

#[test]
fn columns_count_characters() {
    let data = parse("(path \"百度\") (x)").unwrap();
    assert_eq!((data[1].line, data[1].column), (1, 13));
    assert_eq!(data[1].span.start, 16);
}

#[test]
fn rejects_unclosed_paren_at_the_opening_paren() {
    let (l, c, m) = err("(version 1)\n(allow file-read*\n  (subpath \"/a\")\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(m, "unclosed '(' opened at 2:1");
    // The outermost open form is named; a column-1 form inside it is the hint.
    let (l, c, m) = err("(allow file-read* (subpath \"/a\")\n(deny default)\n");
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("the form at 2:1 starts in column 1"), "{m}");
}

#[test]
fn rejects_stray_close_paren() {
    let (l, c, m) = err("(allow file-read*)\n  (deny default))\n");
    assert_eq!((l, c), (2, 17));
    assert!(m.starts_with("unbalanced ')'"), "{m}");
    assert_eq!(err(")").0, 1);
}

#[test]
fn rejects_unterminated_strings() {
    let (l, c, m) = err("(version 1)\n(allow file-read*\n (literal \"/etc/passwd))\n");
    assert_eq!((l, c), (3, 11));
    assert_eq!(m, "unterminated string starting at 3:11");
    let (l, c, m) = err("(allow file-read* (regex #\"^/tmp))");
    assert_eq!((l, c), (1, 26));
    assert_eq!(m, "unterminated regex string #\"...\" starting at 1:26");
    assert_eq!(err("\"abc\\").2, "unterminated string starting at 1:1");
}

#[test]
fn rejects_bad_tokens_with_positions() {
    assert_eq!(
        err("(a [b])"),
        (
            1,
            4,
            "'[' is not SBPL syntax (lists use '(' and ')')".into()
        )
    );
    assert_eq!(err("(a #zz)"), (1, 4, "unknown '#' syntax '#zz'".into()));
    assert_eq!(
        err("(a\n  | b)"),
        (2, 3, "unexpected character \"|\"".into())
    );
    assert_eq!(
        err("#\\bogus"),
        (1, 1, "unknown character name '#\\bogus'".into())
    );
    assert_eq!(
        err("(n 99999999999999999999)").2,
        "integer '99999999999999999999' does not fit in 64 bits"
    );
    assert_eq!(
        err("x #| open"),
        (
            1,
            3,
            "unterminated block comment '#|' starting at 1:3".into()
        )
    );
    assert_eq!(
        err("\"a\\q\\7\"").2,
        "octal escape '\\7' is not supported in SBPL strings"
    );
    assert_eq!(
        err("\"\\xZ1\"").2,
        "invalid escape '\\xZ1': expected two hex digits below 80"
    );
}

#[test]
fn rejects_misplaced_quote_and_dot() {
    assert_eq!(
        err("(a ')"),
        (1, 4, "''' must be followed by a datum".into())
    );
    assert_eq!(err("`"), (1, 1, "'`' must be followed by a datum".into()));
    assert_eq!(err("(. a)").2, "'.' needs a datum before it");
    assert_eq!(
        err("(a . b c)"),
        (
            1,
            4,
            "'.' must be followed by exactly one datum and then ')'".into()
        )
    );
    assert_eq!(
        err("(a . )").2,
        "'.' must be followed by exactly one datum and then ')'"
    );
    assert_eq!(
        err("(a . b . c)"),
        (1, 8, "more than one '.' in a list".into())
    );
    assert_eq!(err("a . b"), (1, 3, "'.' outside a list".into()));
}

#[test]
fn token_errors_win_over_the_unclosed_paren_they_cause() {
    // The unterminated string swallows the ')'; the string is the real problem.
    assert_eq!(
        err("(a (b \"c)\n(d)").2,
        "unterminated string starting at 1:7"
    );
}

#[test]
fn nesting_is_bounded() {
    let ok = format!("{}x{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert!(parse(&ok).is_ok());
    let deep = format!(
        "{}x{}",
        "(".repeat(MAX_DEPTH + 1),
        ")".repeat(MAX_DEPTH + 1)
    );
    let (l, c, m) = err(&deep);
    assert_eq!((l, c), (1, MAX_DEPTH + 1));
    assert_eq!(m, format!("nesting deeper than {MAX_DEPTH} levels"));
    assert!(parse(&"'".repeat(100_000)).is_err());
    assert!(parse(&"(".repeat(100_000)).is_err());
    // Quotes that finished do not count: a long flat quoted list is fine.
    assert!(parse(&format!("({})", "'a ".repeat(10_000))).is_ok());
}

#[test]
fn huge_inputs_stay_linear() {
    // One 600 KB line with 400k data, and 100k unclosed block comments.
    let line = "(a é)".repeat(100_000);
    let data = parse(&line).unwrap();
    assert_eq!((data[99_999].line, data[99_999].column), (1, 499_996));
    assert!(parse(&"#|".repeat(100_000)).is_err());
    // Quote levels count toward the nesting bound too.
    let quoted = format!("{}x{}", "'(".repeat(65), ")".repeat(65));
    assert!(err(&quoted).2.starts_with("nesting deeper than"));
    let fine = format!("{}x{}", "'(".repeat(60), ")".repeat(60));
    assert!(parse(&fine).is_ok());
}

#[test]
fn line_index_counts_characters() {
    let src = "ab\nçé\n\n😀x";
    let index = LineIndex::new(src);
    assert_eq!(index.line_col(0), (1, 1));
    assert_eq!(index.line_col(3), (2, 1));
    assert_eq!(index.line_col(5), (2, 2));
    assert_eq!(index.line_col(8), (3, 1));
    assert_eq!(index.line_col(9), (4, 1));
    assert_eq!(index.line_col(13), (4, 2));
    assert_eq!(index.line_col(14), (4, 3));
    let long = format!("{}\n{}z", "é".repeat(100), "ü".repeat(70));
    let index = LineIndex::new(&long);
    assert_eq!(index.line_col(long.len() - 1), (2, 71));
}

#[test]
fn symbol_kinds() {
    assert_eq!(one("file-read*").kind, sym("file-read*"));
    assert_eq!(one("...").kind, sym("..."));
}

/// Input made of the characters the reader cares about.
fn sbpl_noise() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let c = prop::sample::select(vec![
        '(', ')', '"', '#', '\\', ';', '|', '\'', '`', ',', '@', '.', ' ', '\n', 'a', '1', 'x',
        't', '[', 'é',
    ]);
    prop::collection::vec(c, 0..80).prop_map(|v| v.into_iter().collect())
}

proptest::proptest! {
    /// Every input either reads or gets an error production's message at a
    /// position inside the input; pest's own failure path is never taken.
    #[test]
    fn any_input_reads_or_names_a_position(src in sbpl_noise()) {
        if let Err(e) = parse(&src) {
            proptest::prop_assert!(e.offset <= src.len());
            proptest::prop_assert!(e.line >= 1 && e.line <= src.lines().count().max(1) + 1);
            proptest::prop_assert!(!e.message.starts_with("cannot read SBPL here"), "{}", e.message);
        }
    }
}
