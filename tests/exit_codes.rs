//! Exit codes of compile / check / schema (CLI.md): 0 success, 1 invalid
//! policy, 2 usage or I/O error; `-o` is never half-written; and the
//! executable is linked at a fixed address on Linux.

mod common;

use common::{root, sbx, sbx_in};
use std::path::Path;

const VALID: &str = "fixtures/minimal.toml";
const INVALID: &str = "tests/malformed/mixed-many-errors.toml";

/// Names in `dir`, sorted (to spot stray temp files).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["compile"],
        &["check"],
        &["frobnicate"],
        &["compile", VALID, "--target", "plan9"],
        &["check", VALID, "--format", "xml"],
        &["compile", VALID, "--no-such-flag"],
        &["schema", "extra-argument"],
        &["compile", VALID, "--jobs", "0"],
        &["check", VALID, "-j", "many"],
    ] {
        let r = sbx(args);
        assert_eq!(r.code, 2, "sbx {args:?}\n{}", r.stderr);
        assert!(!r.stderr.is_empty(), "sbx {args:?}: no message");
        assert!(r.stdout.is_empty(), "sbx {args:?}: {}", r.stdout);
    }
}

#[test]
fn target_all_needs_a_directory() {
    let r = sbx(&["compile", VALID, "--target", "all"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("-o DIR"), "{}", r.stderr);
}

#[test]
fn help_and_version_exit_0() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["compile", "--help"],
        &["check", "--help"],
        &["schema", "--help"],
    ] {
        let r = sbx(args);
        assert_eq!(r.code, 0, "sbx {args:?}\n{}", r.stderr);
        assert!(!r.stdout.is_empty());
    }
    // Every command's help has an example.
    for cmd in ["compile", "check", "schema"] {
        let r = sbx(&[cmd, "--help"]);
        assert!(r.stdout.contains("Example"), "{cmd}: {}", r.stdout);
    }
}

#[test]
fn schema_exits_0() {
    let r = sbx(&["schema"]);
    assert_eq!(r.code, 0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let r = sbx(&["schema", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        sbx::policy::schema::schema_text()
    );
    assert_eq!(listing(dir.path()), ["s.json"]);
}

#[test]
fn compile_valid_exits_0() {
    let r = sbx(&["compile", VALID, "--target", "ir"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ir: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(ir["sbx"], 1);
}

#[test]
fn check_valid_exits_0() {
    let r = sbx(&["check", VALID, "--format", "json"]);
    let doc = r.diagnostics();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(doc["errors"], 0);
}

#[test]
fn invalid_policy_exits_1() {
    let r = sbx(&["check", INVALID]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let r = sbx(&["compile", INVALID, "--target", "ir"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    // One bad layer fails the merge even when the others are fine.
    let r = sbx(&["compile", VALID, INVALID, "--target", "ir"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
}

#[test]
fn unreadable_inputs_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let missing = missing.to_str().unwrap();
    // A directory is not readable as a file.
    let a_dir = dir.path().to_str().unwrap();
    for file in [missing, a_dir] {
        for args in [
            vec!["check", file, "--format", "json"],
            vec![
                "compile",
                file,
                "--target",
                "ir",
                "--message-format",
                "json",
            ],
            vec![
                "compile",
                VALID,
                file,
                "--target",
                "ir",
                "--message-format",
                "json",
            ],
        ] {
            let r = sbx(&args);
            assert_eq!(r.code, 2, "{args:?}\n{}", r.stderr);
            assert_eq!(r.diagnostics()["diagnostics"][0]["code"], "SBX017");
            assert!(r.stdout.is_empty());
        }
    }
    // An unreadable input wins over an invalid one: I/O errors are exit 2.
    let r = sbx(&["check", INVALID, missing]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn unreadable_approvals_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let r = sbx(&[
        "compile",
        VALID,
        "--target",
        "ir",
        "--approvals",
        dir.path().to_str().unwrap(),
        "--message-format",
        "json",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.diagnostics()["diagnostics"][0]["code"], "SBX017");
    assert!(r.stdout.is_empty());
}

#[test]
fn corrupt_approvals_warn_and_compile() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("approvals.json");
    std::fs::write(&store, "{not json").unwrap();
    let r = sbx(&[
        "compile",
        VALID,
        "--target",
        "ir",
        "--approvals",
        store.to_str().unwrap(),
        "--message-format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.diagnostics();
    assert_eq!(doc["warnings"], 1, "{}", r.stderr);
    assert!(doc["diagnostics"][0]["message"]
        .as_str()
        .unwrap()
        .contains("corrupt"));
}

#[test]
fn output_into_missing_directory_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("no/such/dir/ir.json");
    let r = sbx(&[
        "compile",
        VALID,
        "--target",
        "ir",
        "-o",
        out.to_str().unwrap(),
        "--message-format",
        "json",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.diagnostics()["diagnostics"][0]["code"], "SBX017");
    assert!(!dir.path().join("no").exists());
    assert!(listing(dir.path()).is_empty());
    let r = sbx(&["schema", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn output_onto_a_directory_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let r = sbx(&[
        "compile",
        VALID,
        "--target",
        "ir",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

#[test]
fn failed_compile_leaves_existing_output_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ir.json");
    std::fs::write(&out, "previous artifact\n").unwrap();
    let policy = root().join(INVALID);
    let r = sbx_in(
        dir.path(),
        &[
            "compile",
            policy.to_str().unwrap(),
            "--target",
            "ir",
            "-o",
            "ir.json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "previous artifact\n"
    );
    assert_eq!(listing(dir.path()), ["ir.json"]);
}

#[test]
fn successful_compile_replaces_output_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ir.json");
    std::fs::write(&out, "previous artifact\n").unwrap();
    let r = sbx(&[
        "compile",
        VALID,
        "--target",
        "ir",
        "--portable",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    let stdout = sbx(&["compile", VALID, "--target", "ir", "--portable"]).stdout;
    assert_eq!(std::fs::read_to_string(&out).unwrap(), stdout);
    // No temp file left beside it.
    assert_eq!(listing(dir.path()), ["ir.json"]);
}

/// `-o` onto a device node (a private copy of /dev/null's) writes into it
/// and leaves the node a device: renaming a temp file over it, as an
/// ordinary output is replaced, would turn the real /dev/null into a
/// regular file when run as root.
#[cfg(unix)]
#[test]
fn output_onto_a_device_keeps_the_device() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null");
    let c = std::ffi::CString::new(null.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; /dev/null's device numbers.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } != 0 {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "mknod failed in CI"
        );
        eprintln!("skipped: mknod needs root");
        return;
    }
    let link = dir.path().join("stdout");
    std::os::unix::fs::symlink(&null, &link).unwrap();
    for out in [&null, &link] {
        let r = sbx(&[
            "compile",
            VALID,
            "--target",
            "ir",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let m = std::fs::symlink_metadata(&null).unwrap();
        assert!(m.file_type().is_char_device(), "{m:?}");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
    assert_eq!(listing(dir.path()), ["null", "stdout"]);
}

/// `sbx compile POLICY --target all --portable EXTRA… -o DIR`.
fn compile_all(policy: &str, extra: &[&str], dir: &Path) -> common::Run {
    let mut args = vec!["compile", policy, "--target", "all", "--portable"];
    args.extend(extra);
    args.extend(["-o", dir.to_str().unwrap()]);
    sbx(&args)
}

#[test]
fn target_all_writes_every_artifact_or_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let r = compile_all(VALID, &[], &out);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut want: Vec<&str> = sbx::Target::ALL.iter().map(|t| t.file_name()).collect();
    want.sort();
    assert_eq!(listing(&out), want);
    // One OS at a time (`--jobs 1`) gives the same bytes as one per core.
    let one = dir.path().join("one");
    let r = compile_all(VALID, &["--jobs", "1"], &one);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for t in sbx::Target::ALL {
        let a = std::fs::read(out.join(t.file_name())).unwrap();
        let b = std::fs::read(one.join(t.file_name())).unwrap();
        assert!(a == b, "{}: --jobs 1 differs", t.name());
    }
    std::fs::remove_dir_all(&one).unwrap();
    // Written while emitted, each is what stdout (kept whole) gets.
    for t in sbx::Target::ALL {
        let stdout = sbx(&["compile", VALID, "--target", t.name(), "--portable"]).stdout;
        let file = std::fs::read_to_string(out.join(t.file_name())).unwrap();
        assert!(file == stdout, "{}: -o DIR and stdout differ", t.name());
    }

    // The macOS profile is written before the Linux artifacts are found
    // inexact: nothing stays behind, not even the directory.
    let policy = dir.path().join("required.toml");
    std::fs::write(
        &policy,
        "version = 1\nenforcement = \"required\"\n\n[[net]]\nhost = \"localhost\"\nport = 8080\n",
    )
    .unwrap();
    let p = policy.to_str().unwrap();
    let r = sbx(&["compile", p, "--target", "macos", "--portable"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = compile_all(p, &[], &dir.path().join("failed"));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("SBX013"), "{}", r.stderr);
    assert_eq!(listing(dir.path()), ["out", "required.toml"]);
}

#[test]
fn portable_compile_needs_no_home() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(["compile", VALID, "--target", "ir", "--portable"])
        .current_dir(root())
        .env_remove("HOME")
        .env("XDG_STATE_HOME", "/nonexistent/sbx-test-state")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn deny_warnings_fails_on_warnings() {
    // env-commands names a command that is not installed: SBX014.
    let r = sbx(&["check", "fixtures/env-commands.toml", "--format", "json"]);
    let doc = r.diagnostics();
    let warned = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "SBX014");
    assert!(warned, "{}", r.stderr);
    let denied = sbx(&[
        "check",
        "fixtures/env-commands.toml",
        "--format",
        "json",
        "--deny-warnings",
    ]);
    assert_eq!(denied.code, 1, "{}", denied.stderr);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// On Linux the `sbx` executable is linked at a fixed address (build.rs;
/// `.cargo/config.toml` for musl), so it applies no relocations at start
/// (docs/performance.md); `--features pie` makes it position-independent.
#[cfg(target_os = "linux")]
#[test]
fn sbx_is_linked_at_a_fixed_address() {
    use std::io::Read;
    let mut head = [0u8; 18];
    std::fs::File::open(env!("CARGO_BIN_EXE_sbx"))
        .and_then(|mut f| f.read_exact(&mut head))
        .unwrap();
    assert_eq!(&head[..4], b"\x7fELF");
    let e_type = u16::from_le_bytes([head[16], head[17]]);
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    let want = if cfg!(feature = "pie") {
        ET_DYN
    } else {
        ET_EXEC
    };
    assert_eq!(e_type, want, "ELF type of {}", env!("CARGO_BIN_EXE_sbx"));
}

/// On Linux the code `sbx run --artifact` does not execute is linked
/// after the rest (build.rs, `link/order.ld`): what only a policy run and
/// `compile` use, then what no run uses, so that a run's code lies in
/// fewer 64 KiB blocks and takes fewer page faults (docs/performance.md).
/// The patterns name modules and crates; this checks that they still
/// match what they are meant to, and nothing of the run's own code.
#[cfg(target_os = "linux")]
#[test]
fn sbx_links_the_code_a_run_skips_last() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_sbx")).unwrap();
    let sections = elf_sections(&elf);
    let index = |name: &str| sections.iter().position(|s| s.name == name);
    if option_env!("SBX_TEXT_ORDER").is_none() {
        // build.rs left the script out: another linker was named.
        assert_eq!(index(".text.sbx_cold"), None);
        return;
    }
    let [text, policy, cold] = [".text", ".text.sbx_policy", ".text.sbx_cold"]
        .map(|n| index(n).unwrap_or_else(|| panic!("no {n} section")));
    assert!(sections[text].addr < sections[policy].addr);
    assert!(sections[policy].addr < sections[cold].addr);
    assert!(sections[policy].size > 256 << 10, "{:?}", sections[policy]);
    assert!(sections[cold].size > 1 << 20, "{:?}", sections[cold]);
    // Where a few functions land, by a part of their mangled names.
    let symbols = elf_functions(&elf, &sections);
    let section_of = |part: &str| {
        let found: Vec<usize> = symbols
            .iter()
            .filter(|(name, _)| name.contains(part))
            .map(|&(_, shndx)| shndx)
            .collect();
        assert!(!found.is_empty(), "no function named like {part}");
        found
    };
    for run in [
        "3sbx7runtime5linux5start5start",
        "3sbx3cli3run3run",
        "10serde_json",
    ] {
        assert!(section_of(run).contains(&text), "{run} is not in .text");
    }
    for only_policy in ["3sbx5lower14lower_unhashed", "3sbx6policy6source"] {
        assert!(
            section_of(only_policy).iter().all(|&i| i == policy),
            "{only_policy} outside .text.sbx_policy"
        );
    }
    for unused in ["10jsonschema", "9minijinja", "3sbx4back4sbpl"] {
        assert!(
            section_of(unused).iter().all(|&i| i == cold),
            "{unused} outside .text.sbx_cold"
        );
    }
}

#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Section {
    name: String,
    kind: u32,
    addr: u64,
    offset: usize,
    size: u64,
    link: usize,
}

/// The section headers of a little-endian ELF64 file.
#[cfg(target_os = "linux")]
fn elf_sections(elf: &[u8]) -> Vec<Section> {
    assert_eq!(&elf[..5], b"\x7fELF\x02", "not ELF64");
    let u16_at = |o: usize| usize::from(u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()));
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(0x28) as usize,
        u16_at(0x3a),
        u16_at(0x3c),
        u16_at(0x3e),
    );
    let header = |i: usize| shoff + i * shentsize;
    let names = u64_at(header(shstrndx) + 0x18) as usize;
    (0..shnum)
        .map(|i| {
            let h = header(i);
            let name = &elf[names + u32_at(h) as usize..];
            let end = name.iter().position(|&b| b == 0).unwrap();
            Section {
                name: String::from_utf8_lossy(&name[..end]).into_owned(),
                kind: u32_at(h + 4),
                addr: u64_at(h + 0x10),
                offset: u64_at(h + 0x18) as usize,
                size: u64_at(h + 0x20),
                link: u32_at(h + 0x28) as usize,
            }
        })
        .collect()
}

/// Every function symbol's name and section index (`SHT_SYMTAB`).
#[cfg(target_os = "linux")]
fn elf_functions(elf: &[u8], sections: &[Section]) -> Vec<(String, usize)> {
    const SHT_SYMTAB: u32 = 2;
    const STT_FUNC: u8 = 2;
    let table = sections
        .iter()
        .find(|s| s.kind == SHT_SYMTAB)
        .expect("sbx keeps its symbols");
    let strings = sections[table.link].offset;
    let mut out = Vec::new();
    for sym in elf[table.offset..table.offset + table.size as usize].chunks_exact(24) {
        if sym[4] & 0xf != STT_FUNC {
            continue;
        }
        let name = strings + u32::from_le_bytes(sym[..4].try_into().unwrap()) as usize;
        let end = elf[name..].iter().position(|&b| b == 0).unwrap();
        let shndx = usize::from(u16::from_le_bytes([sym[6], sym[7]]));
        out.push((
            String::from_utf8_lossy(&elf[name..name + end]).into_owned(),
            shndx,
        ));
    }
    out
}

/// A person sees at most ten located warnings of a code from `compile`,
/// then one line with the rest; JSON output and the exit code keep all.
#[test]
fn compile_shows_ten_warnings_of_a_code_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let mut policy = String::from("version = 1\n");
    for k in 0..13 {
        policy.push_str(&format!(
            "\n[[fs]]\npath = \"gone{k:02}\"\nread = true\nexternal = true\n"
        ));
    }
    let file = dir.path().join("p.toml");
    std::fs::write(&file, policy).unwrap();
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "compile".to_string(),
            file.to_str().unwrap().to_string(),
            "--target".into(),
            "linux".into(),
            "--workspace".into(),
            ws.to_str().unwrap().into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |a: Vec<String>| sbx(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let r = run(args(&[]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let dropped = |s: &str| s.matches("does not exist in the workspace").count();
    assert_eq!(dropped(&r.stderr), 10, "{}", r.stderr);
    assert!(
        r.stderr.contains("3 more SBX016 warnings, not listed here"),
        "{}",
        r.stderr
    );
    // The first ten, in rule order.
    assert!(r.stderr.contains("\"gone09\"") && !r.stderr.contains("\"gone10\""));
    let j = run(args(&["--message-format", "json"]));
    assert_eq!(j.code, 0, "{}", j.stderr);
    assert_eq!(dropped(&j.stderr), 13, "{}", j.stderr);
    assert!(!j.stderr.contains("more SBX016"), "{}", j.stderr);
}
