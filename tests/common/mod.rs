//! A machine-independent host for CLI tests: a workspace, a home and a
//! PATH of fake programs in one temp dir, redacted to `[TMP]` in output.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Host {
    _dir: tempfile::TempDir,
    /// Canonical temp root.
    pub root: PathBuf,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub bin: PathBuf,
}

fn exe(path: &Path) {
    std::fs::write(path, "#!/bin/sh\nexit 0\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

impl Host {
    /// Not under /tmp, so the `user_temp` preset does not contain it.
    pub fn new() -> Host {
        let dir = tempfile::Builder::new()
            .prefix("sbx-lint-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        let home = root.join("home");
        let bin = root.join("bin");
        for d in [&ws, &home, &bin, &ws.join(".git"), &ws.join("src")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(ws.join(".env"), "TOKEN=x\n").unwrap();
        for p in ["git", "cargo", "sh", "make"] {
            exe(&bin.join(p));
        }
        Host {
            _dir: dir,
            root,
            ws,
            home,
            bin,
        }
    }

    /// `sbx ARGS` with this host's workspace, home, PATH and approvals.
    pub fn sbx(&self, args: &[&str]) -> (i32, String, String) {
        // Host options right after the subcommand: anything after `--` is argv.
        let out = Command::new(env!("CARGO_BIN_EXE_sbx"))
            .arg(args[0])
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--home")
            .arg(&self.home)
            .arg("--approvals")
            .arg(self.root.join("approvals.json"))
            .args(&args[1..])
            .env("PATH", &self.bin)
            .env_remove("XDG_STATE_HOME")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            self.redact(&String::from_utf8_lossy(&out.stdout)),
            self.redact(&String::from_utf8_lossy(&out.stderr)),
        )
    }

    pub fn redact(&self, s: &str) -> String {
        s.replace(self.root.to_str().unwrap(), "[TMP]")
    }

    pub fn compile_options(&self) -> sbx::Options {
        sbx::Options {
            workspace: Some(self.ws.to_str().unwrap().into()),
            home: Some(self.home.to_str().unwrap().into()),
            ..Default::default()
        }
    }
}

/// Snapshots live in `snapshots/` at the crate root.
#[macro_export]
macro_rules! snap {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}
