//! GitHub Actions workflow commands: `::error file=…,line=…,col=…,title=…::msg`,
//! which the runner turns into annotations on the pull request.

use super::{Diagnostic, Severity};

/// Message data: `%`, CR and LF are escaped so one diagnostic stays one
/// command.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Property values additionally escape `:` and `,`, which delimit properties.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `fallback`: the file location-less diagnostics are attached to.
pub fn render(diags: &[Diagnostic], fallback: Option<&str>) -> String {
    let mut out = String::new();
    for d in diags {
        let cmd = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let mut props = Vec::new();
        match (&d.location, fallback) {
            (Some(l), _) => {
                props.push(format!("file={}", escape_property(&l.file)));
                props.push(format!("line={}", l.line.max(1)));
                props.push(format!("col={}", l.column.max(1)));
            }
            (None, Some(f)) => props.push(format!("file={}", escape_property(f))),
            (None, None) => {}
        }
        props.push(format!("title={}", escape_property(d.code)));
        let mut msg = d.message.clone();
        if let Some(h) = &d.help {
            msg.push_str("\nhelp: ");
            msg.push_str(h);
        }
        out.push_str(&format!(
            "::{cmd} {}::{}\n",
            props.join(","),
            escape_data(&msg)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{codes, Location};

    #[test]
    fn escapes_per_workflow_command_rules() {
        assert_eq!(escape_data("50%\r\nx"), "50%25%0D%0Ax");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }

    #[test]
    fn one_line_per_diagnostic() {
        let d = Diagnostic::new(codes::SENSITIVE, "reaches ~/.ssh/\nand more")
            .at(Some(Location {
                file: "dir,x/p:1.toml".into(),
                line: 3,
                column: 1,
                span: 0..1,
            }))
            .help("narrow it");
        let n = Diagnostic::new(codes::COOPERATIVE, "host is cooperative");
        let s = render(&[d, n], Some("p.toml"));
        assert_eq!(
            s,
            "::warning file=dir%2Cx/p%3A1.toml,line=3,col=1,title=SBX020::reaches ~/.ssh/%0Aand more%0Ahelp: narrow it\n\
             ::notice file=p.toml,title=SBX022::host is cooperative\n"
        );
    }
}
