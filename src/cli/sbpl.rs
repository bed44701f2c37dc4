//! `sbx sbpl check FILE…`: read SBPL with the project's grammar and report
//! each problem as `file:line:column: severity: message`.

use camino::Utf8PathBuf;

pub fn check(files: &[Utf8PathBuf]) -> i32 {
    let mut code = 0;
    for f in files {
        let text = match std::fs::read(f).map(String::from_utf8) {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                eprintln!(
                    "{f}: error: not UTF-8 (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                );
                code = 2;
                continue;
            }
            Err(e) => {
                eprintln!("{f}: error: cannot read: {e}");
                code = 2;
                continue;
            }
        };
        let findings = sbx::sbpl::check_source(&text);
        for finding in &findings {
            eprintln!("{}", finding.render(f.as_str()));
        }
        if sbx::sbpl::has_errors(&findings) && code == 0 {
            code = 1;
        }
    }
    code
}
