//! `sbx sbpl check`: exit codes and file:line:column reports.

use std::process::Command;

fn sbx(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sbx"))
        .args(args)
        .output()
        .expect("sbx runs");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn reports_location_of_syntax_errors() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.sb");
    std::fs::write(
        &bad,
        "(version 1)\n(deny default)\n(allow file-read* (subpath \"/x)\n",
    )
    .unwrap();
    let (code, err) = sbx(&["sbpl", "check", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&format!("{}:3:", bad.display())), "{err}");
    assert!(err.contains("error"), "{err}");
}

#[test]
fn clean_profile_passes_and_missing_file_is_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good.sb");
    std::fs::write(
        &good,
        "(version 1)\n(deny default)\n(allow file-read* (subpath \"/usr\"))\n",
    )
    .unwrap();
    let (code, err) = sbx(&["sbpl", "check", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = sbx(&["sbpl", "check", d.path().join("nope.sb").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}
