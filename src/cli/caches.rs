//! `sbx caches`: the private package caches `sbx run` gives each
//! workspace and policy on Linux (docs/presets.md), listed and cleared.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct CachesArgs {
    #[command(subcommand)]
    cmd: Option<CachesCmd>,
}

#[derive(Subcommand)]
enum CachesCmd {
    /// Remove the private caches of a workspace (the current directory
    /// by default), of workspaces that no longer exist, or all of them.
    #[command(
        after_help = "Example:\n  sbx caches clear\n  sbx caches clear --workspace ~/code/app\n  sbx caches clear --gone\n  sbx caches clear --all"
    )]
    Clear {
        /// The workspace whose caches go (every policy's).
        #[arg(long, value_name = "DIR", conflicts_with_all = ["all", "gone"])]
        workspace: Option<PathBuf>,
        /// The caches of every workspace that no longer exists (a
        /// temporary checkout removed since; also one on a disk that is
        /// not mounted now).
        #[arg(long, conflicts_with = "all")]
        gone: bool,
        /// Every workspace's caches.
        #[arg(long)]
        all: bool,
    },
}

pub fn run(a: CachesArgs) -> i32 {
    imp::run(a)
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{CachesArgs, CachesCmd};
    use sbx::runtime::linux::{clear_caches, clear_gone_caches, list_caches, CacheEntry};

    pub fn run(a: CachesArgs) -> i32 {
        let done = match a.cmd {
            None => list_caches().map(|l| {
                if l.is_empty() {
                    println!("sbx: no private caches");
                }
                for e in &l {
                    println!("{}", line(e));
                }
            }),
            Some(CachesCmd::Clear {
                workspace,
                gone,
                all,
            }) => {
                // Only where the current directory is the workspace: --gone
                // works from a directory removed since, too.
                let cleared = if gone {
                    clear_gone_caches()
                } else {
                    let dir = match (workspace, all) {
                        (_, true) => None,
                        (Some(w), false) => Some(w),
                        (None, false) => match std::env::current_dir() {
                            Ok(d) => Some(d),
                            Err(e) => {
                                eprintln!("sbx: current directory: {e}");
                                return 2;
                            }
                        },
                    };
                    clear_caches(dir.as_deref().map(|d| d.as_os_str()))
                };
                cleared.map(|gone| {
                    if gone.is_empty() {
                        println!("sbx: no private caches to clear");
                    }
                    for e in &gone {
                        println!("removed {}", line(e));
                    }
                })
            }
        };
        match done {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("sbx: {e}");
                1
            }
        }
    }

    /// `KEY  SIZE  LAST-USE  WORKSPACE  POLICY`.
    fn line(e: &CacheEntry) -> String {
        format!(
            "{}  {:>9}  {}  {}  {}",
            e.key,
            size(e.bytes),
            date(e.last_use),
            e.workspace,
            e.policy
        )
    }

    fn size(b: u64) -> String {
        const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
        let mut v = b as f64;
        let mut u = 0;
        while v >= 1024.0 && u + 1 < UNITS.len() {
            v /= 1024.0;
            u += 1;
        }
        if u == 0 {
            format!("{b} B")
        } else {
            format!("{v:.1} {}", UNITS[u])
        }
    }

    /// `YYYY-MM-DD HH:MMZ` (UTC) of seconds since the epoch: the
    /// approvals' timestamp, to the minute.
    fn date(secs: u64) -> String {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let s = sbx::approvals::rfc3339(t);
        format!("{} {}Z", &s[..10], &s[11..16])
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn dates_and_sizes() {
            assert_eq!(super::date(0), "1970-01-01 00:00Z");
            assert_eq!(super::date(1_709_210_096), "2024-02-29 12:34Z");
            assert_eq!(super::size(512), "512 B");
            assert_eq!(super::size(3 * 1024 * 1024), "3.0 MiB");
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{CachesArgs, CachesCmd};

    pub fn run(a: CachesArgs) -> i32 {
        // Nothing to list or clear: the options are accepted as on Linux.
        if let Some(CachesCmd::Clear {
            workspace,
            gone,
            all,
        }) = a.cmd
        {
            let _ = (workspace, gone, all);
        }
        println!("sbx: no private caches (sbx run makes them on Linux only)");
        0
    }
}
