//! `sbx run`'s one-off grants (`--allow-read`, `--allow-write`,
//! `--allow-net`): one more policy layer, written as TOML so that it is
//! checked, merged and reported like any file's.

use sbx::policy::source::SourceFile;

/// The layer's name in diagnostics and `--report`.
pub const NAME: &str = "(command line --allow-*)";

/// The flags of one run.
#[derive(Debug, Clone, Default)]
pub struct Allow {
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub net: Vec<String>,
}

impl Allow {
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.write.is_empty() && self.net.is_empty()
    }

    /// The layer's text. Paths are made absolute against `cwd` (a
    /// policy's relative paths are the workspace's). `default_fs`: the
    /// policy below has no `[[fs]]`, so its default (the workspace, read,
    /// write and execute) is written out too: the layer adds to it
    /// rather than replacing it.
    pub fn layer(&self, cwd: &std::path::Path, default_fs: bool) -> Result<SourceFile, String> {
        let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
        let mut text = String::from("version = 1\n");
        if default_fs && (!self.read.is_empty() || !self.write.is_empty()) {
            text.push_str("\n[[fs]]\npath = \".\"\nread = true\nwrite = true\nexecute = true\n");
        }
        for (paths, write) in [(&self.read, false), (&self.write, true)] {
            for p in paths {
                let abs = cwd.join(p);
                let abs = abs
                    .to_str()
                    .ok_or_else(|| format!("{p}: the path is not UTF-8"))?;
                text.push_str(&format!("\n[[fs]]\npath = {}\nread = true\n", quote(abs)));
                if write {
                    text.push_str("write = true\n");
                }
            }
        }
        for n in &self.net {
            let (host, port) = host_port(n)?;
            text.push_str(&format!("\n[[net]]\nhost = {}\n", quote(host)));
            if let Some(port) = port {
                text.push_str(&format!("port = {port}\n"));
            }
        }
        Ok(SourceFile {
            name: NAME.into(),
            text: text.into(),
        })
    }
}

/// Clap's check of `--allow-net` (a usage error, exit 2, when it fails).
pub fn net_flag(s: &str) -> Result<String, String> {
    host_port(s).map(|_| s.to_string())
}

/// `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`.
fn host_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let bad = || format!("--allow-net {s}: expected HOST or HOST:PORT");
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad)?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':').ok_or_else(bad)?)),
        }
    } else {
        match s.rsplit_once(':') {
            // A bare IPv6 address has more than one colon: no port.
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            _ => (s, None),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    let port = port
        .map(|p| p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(bad))
        .transpose()?;
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports() {
        assert_eq!(host_port("example.com").unwrap(), ("example.com", None));
        assert_eq!(
            host_port("example.com:443").unwrap(),
            ("example.com", Some(443))
        );
        assert_eq!(host_port("[::1]:5432").unwrap(), ("::1", Some(5432)));
        assert_eq!(host_port("::1").unwrap(), ("::1", None));
        assert!(host_port("example.com:x").is_err());
        assert!(host_port(":80").is_err());
    }

    #[test]
    fn the_layer_keeps_the_default_workspace_rule() {
        let a = Allow {
            read: vec!["docs".into()],
            write: vec!["/out".into()],
            net: vec!["pypi.org:443".into()],
        };
        let l = a.layer(std::path::Path::new("/w"), true).unwrap();
        assert_eq!(
            &*l.text,
            "version = 1\n\n[[fs]]\npath = \".\"\nread = true\nwrite = true\nexecute = true\n\
             \n[[fs]]\npath = \"/w/docs\"\nread = true\n\
             \n[[fs]]\npath = \"/out\"\nread = true\nwrite = true\n\
             \n[[net]]\nhost = \"pypi.org\"\nport = 443\n"
        );
        let l = a.layer(std::path::Path::new("/w"), false).unwrap();
        assert!(!l.text.contains("path = \".\""));
    }
}
