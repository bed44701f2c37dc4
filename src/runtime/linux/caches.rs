//! Package caches of their own (issue #36, docs/presets.md): under the
//! new root, npm, pip, uv, cargo, Go, Maven, Gradle, yarn and pnpm find
//! a writable cache at their usual path that is never the host's. A
//! package the command writes there cannot run in the user's next build
//! outside the sandbox, yet what the host's cache already holds stays
//! readable (an overlay whose lower layer is the host's cache), so that
//! offline builds keep working.
//!
//! One private directory per workspace *and* policy (`key`), under
//! sbx's state directory, which every run keeps read-only to the
//! command: a run cannot fill another key's cache for a later run under
//! a wider policy. Binary directories (`~/.cargo/bin`, toolchains) are
//! never among them, for the same reason.
//!
//! The overlay needs an upper layer on a local filesystem, and in a user
//! namespace it cannot copy up a file whose owner is not mapped (root's
//! files in a cache `sudo npm` once wrote fail with EOVERFLOW): then the
//! cache is a plain private directory, empty of the host's entries, and
//! `--report` says why.

use crate::back::landlock::rights::FsSet;
use crate::ir::path_within;
use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

/// The caches' home under sbx's state directory.
const DIR: &str = "caches";
/// Each key's record of its workspace and policy; its time is the last use.
const ABOUT: &str = "about.json";

/// A tool's cache: its name among the key's directories, and where the
/// tool keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub name: &'static str,
    pub path: String,
    /// Programs whose presence on PATH asks for the cache.
    pub tools: &'static [&'static str],
}

/// Why `path` cannot be a cache: home or a directory above it, or a
/// sensitive place of POLICY.md §7 under home, or one holding such a
/// place (a variable such as `npm_config_cache=~/.ssh` would show the
/// host's directory to the command, beneath the private layer).
pub fn sensitive(path: &str, home: &str) -> Option<String> {
    // Compared as written: a path spelled another way (`//`, `.`, `..`)
    // would pass the comparisons below and still lead there.
    if path
        .split('/')
        .skip(1)
        .any(|c| matches!(c, "" | "." | ".."))
    {
        return Some("it is not written plainly (an empty, `.` or `..` component)".into());
    }
    if path_within(home, path) {
        return Some("it is home or a directory above it".into());
    }
    crate::lower::SENSITIVE_PATHS
        .iter()
        .filter_map(|p| p.strip_prefix("~/"))
        .map(|rel| {
            format!(
                "{}/{}",
                home.trim_end_matches('/'),
                rel.trim_end_matches('/')
            )
        })
        .find(|s| path_within(path, s) || path_within(s, path))
        .map(|s| format!("it is, lies in or holds the sensitive path {s}"))
}

/// Where each tool keeps its cache, following the variables that move
/// them (`var`: the command's environment). Never a directory of
/// programs: only downloads and build outputs the tools read as data.
pub fn known(var: &dyn Fn(&str) -> Option<String>, home: &str) -> Vec<Known> {
    // Only absolute values: a relative one names a different place for
    // every directory the tool runs in.
    let abs = |k: &str| var(k).filter(|v| v.starts_with('/'));
    let under = |base: &str, rel: &str| format!("{}/{rel}", base.trim_end_matches('/'));
    let xdg_cache = abs("XDG_CACHE_HOME").unwrap_or_else(|| under(home, ".cache"));
    let xdg_data = abs("XDG_DATA_HOME").unwrap_or_else(|| under(home, ".local/share"));
    let cargo = abs("CARGO_HOME").unwrap_or_else(|| under(home, ".cargo"));
    let gopath = var("GOPATH")
        .and_then(|p| p.split(':').next().map(String::from))
        .filter(|p| p.starts_with('/'))
        .unwrap_or_else(|| under(home, "go"));
    let gradle = abs("GRADLE_USER_HOME").unwrap_or_else(|| under(home, ".gradle"));
    let k = |name, path, tools| Known { name, path, tools };
    vec![
        k(
            "npm",
            abs("npm_config_cache")
                .or_else(|| abs("NPM_CONFIG_CACHE"))
                .unwrap_or_else(|| under(home, ".npm")),
            &["npm", "npx"],
        ),
        k(
            "pip",
            abs("PIP_CACHE_DIR").unwrap_or_else(|| under(&xdg_cache, "pip")),
            &["pip", "pip3"],
        ),
        k(
            "uv",
            abs("UV_CACHE_DIR").unwrap_or_else(|| under(&xdg_cache, "uv")),
            &["uv"],
        ),
        k("cargo-registry", under(&cargo, "registry"), &["cargo"]),
        k("cargo-git", under(&cargo, "git"), &["cargo"]),
        k(
            "go-mod",
            abs("GOMODCACHE").unwrap_or_else(|| under(&gopath, "pkg/mod")),
            &["go"],
        ),
        k(
            "go-build",
            abs("GOCACHE").unwrap_or_else(|| under(&xdg_cache, "go-build")),
            &["go"],
        ),
        k("maven", under(home, ".m2/repository"), &["mvn"]),
        k("gradle", under(&gradle, "caches"), &["gradle"]),
        k(
            "yarn",
            abs("YARN_CACHE_FOLDER").unwrap_or_else(|| under(&xdg_cache, "yarn")),
            &["yarn"],
        ),
        k("yarn-berry", under(home, ".yarn/berry/cache"), &["yarn"]),
        k("pnpm-store", under(&xdg_data, "pnpm/store"), &["pnpm"]),
        k("pnpm-cache", under(&xdg_cache, "pnpm"), &["pnpm"]),
    ]
}

/// How a cache is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The host's cache, read through an overlay; writes go to the
    /// private directory.
    Overlay { lower: String },
    /// The private directory alone: the host has no such cache.
    Plain,
    /// The private directory alone although the host has a cache: the
    /// overlay cannot be used (why).
    Fallback(String),
}

/// A cache this run mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    pub name: &'static str,
    pub path: String,
    pub mode: Mode,
}

/// What a run decided: its key, the caches it mounts, and the ones it
/// leaves alone with why.
#[derive(Debug, Clone, Default)]
pub struct Decided {
    /// `state/caches/KEY`.
    pub dir: PathBuf,
    pub workspace: String,
    pub policy: String,
    pub caches: Vec<Cache>,
    pub left: Vec<String>,
}

/// What the run grants, as far as the caches care.
pub struct Grants<'a> {
    /// (path, the rule writes) of every Landlock rule.
    pub rules: &'a [(&'a str, bool)],
    /// Paths the namespace layer mounts over (hidden, protected).
    pub mounts: &'a [&'a str],
}

/// The directory holding every key's caches.
pub fn home(state: &Path) -> PathBuf {
    state.join(DIR)
}

/// The key of a workspace and policy: 16 hex digits of their hash.
pub fn key(workspace: &str, policy: &str) -> String {
    let h = crate::policy::hash::sha256(format!("{workspace}\0{policy}").as_bytes());
    h.trim_start_matches("sha256:").chars().take(16).collect()
}

/// Which caches to mount. `present`: whether a tool is on the caller's
/// PATH. `user_ns`: the run maps only the caller's ids. `user_home`:
/// the run's home, for [`sensitive`].
#[allow(clippy::too_many_arguments)]
pub fn decide(
    state: &Path,
    user_home: &str,
    workspace: &str,
    policy: &str,
    known: Vec<Known>,
    present: &dyn Fn(&str) -> bool,
    grants: &Grants,
    user_ns: bool,
) -> Decided {
    let mut out = Decided {
        dir: home(state).join(key(workspace, policy)),
        workspace: workspace.to_string(),
        policy: policy.to_string(),
        ..Decided::default()
    };
    let state_s = state.to_string_lossy();
    if let Some(why) = unusable_state(state, grants) {
        out.left.push(format!("all: {why}"));
        return out;
    }
    let upper_fs = unsupported_fs(&home(state));
    for k in known {
        let host = std::fs::symlink_metadata(&k.path);
        let exists = host.as_ref().is_ok_and(|m| m.is_dir());
        if !exists && !k.tools.iter().any(|t| present(t)) {
            continue;
        }
        if out.caches.iter().any(|c| c.path == k.path) {
            continue;
        }
        let mut left = |why: String| out.left.push(format!("{} ({}): {why}", k.name, k.path));
        if let Some(why) = decided_by_rule(&k.path, grants) {
            left(why);
            continue;
        }
        if path_within(&k.path, &state_s) || path_within(&state_s, &k.path) {
            left("it holds sbx's state directory, or lies in it".into());
            continue;
        }
        if let Some(why) = sensitive(&k.path, user_home) {
            left(why);
            continue;
        }
        if through_symlink(&k.path) {
            left("a symlink leads to it: the tool's path and the host's differ".into());
            continue;
        }
        if host.is_ok() && !exists {
            left("it is not a directory on the host".into());
            continue;
        }
        let visible_above = grants.rules.iter().any(|(p, _)| path_within(&k.path, p));
        if visible_above && !exists {
            left(
                "a read-only rule above it shows the host's directory, where it does not \
                 exist: there is nothing to mount on"
                    .into(),
            );
            continue;
        }
        let mode = if !exists {
            Mode::Plain
        } else if let Some(fs) = &upper_fs {
            Mode::Fallback(format!(
                "the private cache's directory is on {fs}, which cannot hold an overlay's \
                 upper layer"
            ))
        } else if k.path.contains([':', ',', '\\']) {
            Mode::Fallback("its path holds a character overlay options cannot".into())
        } else if let Some(owner) = user_ns.then(|| foreign_owner(Path::new(&k.path))).flatten() {
            Mode::Fallback(format!(
                "the host's cache holds {owner}, not this user's: a user namespace cannot \
                 copy it up (EOVERFLOW)"
            ))
        } else {
            Mode::Overlay {
                lower: k.path.clone(),
            }
        };
        out.caches.push(Cache {
            name: k.name,
            path: k.path,
            mode,
        });
    }
    out
}

/// Why sbx's state directory cannot hold the caches, if it cannot: it
/// cannot be made (its nearest existing ancestor is not a directory this
/// user may write), or it does not exist yet beneath a writable rule
/// (only an existing one is mounted read-only for the command).
fn unusable_state(state: &Path, g: &Grants) -> Option<String> {
    let mut at = state;
    while std::fs::symlink_metadata(at).is_err() {
        at = at.parent()?;
    }
    let c = CString::new(at.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: `c` is a valid C string.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 && at != state {
        return Some(format!(
            "sbx's state directory {} cannot be made ({} is not writable)",
            state.display(),
            at.display()
        ));
    }
    let s = state.to_string_lossy();
    if at != state && g.rules.iter().any(|(p, w)| *w && path_within(&s, p)) {
        return Some(format!(
            "sbx's state directory {s} does not exist yet and lies beneath a writable rule \
             (it is kept read-only from the next run on)"
        ));
    }
    None
}

/// Why a rule of the policy decides `path` already (the private cache
/// is then not mounted), if one does.
fn decided_by_rule(path: &str, g: &Grants) -> Option<String> {
    for (p, writes) in g.rules {
        if *p != path && path_within(p, path) {
            return Some(format!("a rule names {p}, inside it"));
        }
        if *writes && path_within(path, p) {
            return Some(format!("a rule lets the command write {p} already"));
        }
    }
    g.mounts
        .iter()
        .find(|m| path_within(m, path) || path_within(path, m))
        .map(|m| format!("the policy hides or protects {m}"))
}

/// A symlink on the way to `path` (or `path` itself).
fn through_symlink(path: &str) -> bool {
    let mut at = PathBuf::from("/");
    for part in Path::new(path).components().skip(1) {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// The filesystem `dir` (or its nearest existing ancestor) lives on, if
/// an overlay cannot keep its upper layer there.
fn unsupported_fs(dir: &Path) -> Option<String> {
    let mut at = dir;
    loop {
        let c = CString::new(at.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: a zeroed statfs is a valid out-parameter.
        let mut s: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a valid C string and `s` a valid buffer.
        if unsafe { libc::statfs(c.as_ptr(), &mut s) } == 0 {
            return match s.f_type as u64 {
                0x6969 => Some("NFS".into()),
                0x794c_7630 => Some("overlayfs".into()),
                0x6573_5546 => Some("FUSE".into()),
                _ => None,
            };
        }
        at = at.parent()?;
    }
}

/// An entry of `dir`'s tree owned by a user or group other than the
/// caller's, in words (none unmapped in the run's user namespace).
fn foreign_owner(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let m = std::fs::symlink_metadata(&d).ok()?;
        if m.uid() != uid || m.gid() != gid {
            return Some(format!("{} (owner {}:{})", d.display(), m.uid(), m.gid()));
        }
        if !m.is_dir() {
            continue;
        }
        for e in crate::dirents::read_dir(&d).into_iter().flatten().flatten() {
            let m = match e.metadata() {
                Ok(m) => m,
                Err(_) => continue,
            };
            if m.uid() != uid || m.gid() != gid {
                return Some(format!(
                    "{} (owner {}:{})",
                    e.path().display(),
                    m.uid(),
                    m.gid()
                ));
            }
            if m.is_dir() {
                stack.push(e.into_path());
            }
        }
    }
    None
}

/// The rights the command gets beneath a cache: reading and writing,
/// never running what it finds there.
pub fn rights(handled: FsSet) -> u64 {
    [
        "read_file",
        "read_dir",
        "write_file",
        "remove_dir",
        "remove_file",
        "make_dir",
        "make_reg",
        "make_sym",
        "refer",
        "truncate",
    ]
    .iter()
    .filter_map(|n| FsSet::named(n))
    .fold(FsSet::EMPTY, FsSet::or)
    .and(handled)
    .0
}

/// The report's lines: each cache and how it is shown, then those left
/// alone.
pub fn report_lines(d: &Decided) -> Vec<String> {
    let mut out: Vec<String> = d
        .caches
        .iter()
        .map(|c| match &c.mode {
            Mode::Overlay { .. } => format!(
                "{} at {}: private, over the host's cache (read-only beneath)",
                c.name, c.path
            ),
            Mode::Plain => format!("{} at {}: private (the host has none)", c.name, c.path),
            Mode::Fallback(why) => format!(
                "{} at {}: private and empty of the host's entries: {why}",
                c.name, c.path
            ),
        })
        .collect();
    if !d.caches.is_empty() {
        out.push(format!("kept in {}", d.dir.display()));
    }
    out.extend(d.left.iter().map(|l| format!("not mounted: {l}")));
    out
}

/// One cache as the child mounts it.
pub struct Mount {
    /// The cache's path in the new root, without its leading `/`.
    pub rel: CString,
    /// The private directory (the overlay's upper layer).
    pub data: CString,
    /// The overlay's (lower, work), or none for a plain directory.
    pub overlay: Option<(CString, CString)>,
    /// The host's cache, opened before the fork through no symlink: the
    /// overlay reads what this is, or is not made.
    pub lower: Option<std::os::fd::OwnedFd>,
    /// The overlay of home this cache is a directory of, and its path
    /// beneath home (`.npm`): one overlay for every cache under home.
    pub shared: Option<(std::sync::Arc<Shared>, CString)>,
    /// The detached mount, made before the host's paths are covered.
    pub tree: AtomicI32,
    /// Its overlay may be `volatile` (a reboot can be told: [`make`]).
    pub volatile: bool,
}

/// One overlay whose lower layer is the caller's home and whose upper
/// layer mirrors it (`KEY/home/data/.npm`, `KEY/home/data/.cache/pip`):
/// each cache under home is a mount of its directory in it. An overlay
/// costs a new superblock at the start and a sync of the upper layer's
/// file system with RCU grace periods at the end (about 1.3 ms of wall
/// time each on the machine of docs/performance.md); one for all caches
/// under home pays that once. Nothing else of it is mounted: the
/// command sees home's other entries as the rules show them, never
/// through this overlay.
pub struct Shared {
    /// Home, as the child names it again.
    pub lower: CString,
    /// Home as the parent opened it before the fork, through no symlink.
    pub lower_fd: std::os::fd::OwnedFd,
    pub data: CString,
    pub work: CString,
    /// The overlay's root (-1: not made yet; -2: the kernel refused it,
    /// each cache then gets its own overlay).
    pub tree: AtomicI32,
    /// The overlay as the helper of `earlyoverlay.rs` made it beside the
    /// preparation, or -1.
    pub early: AtomicI32,
}

/// Write the key's record, or only touch it when it says the same as
/// `recorded`, what the file held (it does at every run of a boot but
/// the first: its time is the last use). No fsync
/// on the way to the command's start: a record lost in a crash costs a
/// line in `sbx caches`, not a guarantee, and an fsync of the file and
/// its directory cost milliseconds on a busy disk.
fn record_use(path: &Path, recorded: Option<&[u8]>, text: &[u8]) -> io::Result<()> {
    if recorded == Some(text) {
        let f = std::fs::File::options().append(true).open(path)?;
        return f.set_modified(std::time::SystemTime::now());
    }
    crate::atomic::replace_unsynced(path, text, 0o600)
}

/// The directory of the caches under home in a key's directory.
const HOME: &str = "home";

/// Make the key's directories and record its use; the child's mounts.
/// `home`: the caller's home, the lower layer of every cache beneath it.
/// Also this run's work directories for the overlays, beside which
/// those of ended runs are removed ([`dead_work`]).
pub fn make(d: &Decided, home: &str) -> io::Result<(Vec<Mount>, Vec<PathBuf>)> {
    use std::os::unix::fs::DirBuilderExt;
    if d.caches.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut works = Vec::new();
    let mkdir = |p: &Path| {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(p)
    };
    mkdir(&d.dir)?;
    // The key's directory as the kernel finds it: the setup process opens
    // what lies below it through no symlink (`no_symlinks`), whatever
    // links lead to the state directory (a home whose `.local` is one).
    let dir = std::fs::canonicalize(&d.dir)?;
    let boot = boot_id();
    // Without a boot id a reboot cannot be told: overlays that sync.
    let volatile = !boot.is_empty();
    {
        // One run at a time decides whether the key's private caches
        // survived a reboot (two after one would both set them aside).
        let key = std::fs::File::open(&dir)?;
        super::kernel::flock(&key, true)?;
        let path = dir.join(ABOUT);
        let recorded = std::fs::read(&path).ok();
        stale_after_reboot(&dir, recorded.as_deref(), &boot);
        let about =
            serde_json::json!({ "workspace": d.workspace, "policy": d.policy, "boot": boot });
        record_use(&path, recorded.as_deref(), about.to_string().as_bytes())?;
    }
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let home_data = dir.join(HOME).join("data");
    let home_overlay = d
        .caches
        .iter()
        .any(|k| matches!(k.mode, Mode::Overlay { .. }) && beneath_home(home, &k.path).is_some())
        .then(|| -> io::Result<std::sync::Arc<Shared>> {
            let work = own_work(&dir.join(HOME).join("work"), true)?;
            works.push(work.clone());
            Ok(std::sync::Arc::new(Shared {
                lower: c(Path::new(home))?,
                lower_fd: super::kernel::open_path(home)?.handle.into(),
                data: c(&home_data)?,
                work: c(&work)?,
                tree: AtomicI32::new(-1),
                early: AtomicI32::new(-1),
            }))
        })
        .transpose()?;
    let mut out = Vec::new();
    for cache in &d.caches {
        let work = dir.join(cache.name).join("work");
        // Under home the private directory is the cache's place in
        // home's mirror, whichever way it is shown (the shared overlay,
        // its own, or alone): a later run shows the same entries.
        let under_home = beneath_home(home, &cache.path);
        let data = match under_home {
            Some(rel) => home_data.join(rel),
            None => dir.join(cache.name).join("data"),
        };
        mkdir(&data)?;
        let (overlay, lower) = match &cache.mode {
            Mode::Overlay { lower } => {
                // Made by the setup process if this overlay is made
                // (not when the cache is a directory of home's).
                let work = own_work(&work, false)?;
                works.push(work.clone());
                let fd = super::kernel::open_path(lower)?.handle;
                (Some((c(Path::new(lower))?, c(&work)?)), Some(fd.into()))
            }
            _ => (None, None),
        };
        let shared = under_home
            .filter(|_| overlay.is_some())
            .zip(home_overlay.clone())
            .map(|(rel, s)| Ok::<_, io::Error>((s, c(Path::new(rel))?)))
            .transpose()?;
        out.push(Mount {
            rel: c(Path::new(cache.path.trim_start_matches('/')))?,
            data: c(&data)?,
            overlay,
            lower,
            shared,
            tree: AtomicI32::new(-1),
            volatile,
        });
    }
    Ok((out, works))
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`), or "" where it
/// cannot be read.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Private caches set aside for removal: `KEY/NAME/stale-…`.
pub const STALE: &str = "stale-";

/// The overlays are `volatile`: what a run writes to a private cache
/// reaches the disk when the kernel writes it back, not when the run
/// ends, and a crash may leave entries half written while the tool
/// believes them complete. So a key last used in another boot (the
/// recorded boot id differs: a crash or a reboot since) has its private
/// directories (`KEY/NAME/data`) set aside, to be removed beside a
/// command ([`clear_stale`]); the run starts from the host's cache
/// alone. A key of an earlier version (no boot recorded) synced its
/// overlays: kept. `about`: the key's record as it was.
fn stale_after_reboot(key: &Path, about: Option<&[u8]>, boot: &str) {
    let recorded = about
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        .and_then(|v| v.get("boot").and_then(|b| b.as_str()).map(str::to_string));
    if recorded.is_none_or(|r| r == boot) {
        return;
    }
    for entry in crate::dirents::read_dir(key)
        .into_iter()
        .flatten()
        .flatten()
    {
        let data = entry.path().join("data");
        if entry.is_dir() && data.is_dir() {
            let aside = entry.path().join(format!("{STALE}{}", super::run_tag()));
            let _ = std::fs::rename(&data, aside);
        }
    }
}

/// Work directories of runs: `run-PID-NANOS`.
const RUN: &str = "run-";

/// A work directory of this run's own in `parent` (made 0700 if
/// `make`; the parent is made in any case): the
/// overlay keeps its scratch directory in it. Shared by runs, one work
/// directory would have each mount remove the scratch directory the
/// last left, which may be a running overlay's (a concurrent run of the
/// same key), and on a disk mounted with `discard` freeing it is a
/// synchronous discard on the way to the command's start (0.4–3.8 ms
/// on the bench machine). The next run of the key removes it
/// ([`dead_work`]), beside its own preparation and command.
fn own_work(parent: &Path, make: bool) -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)?;
    let work = parent.join(format!("{RUN}{}", super::run_tag()));
    if make && !took_spare(parent, &work) {
        std::fs::DirBuilder::new().mode(0o700).create(&work)?;
    }
    Ok(work)
}

/// An empty work directory that an earlier run's clearing helper made
/// for the next run ([`spare_in`]), which takes it by renaming it: a
/// directory made on ext4 allocates a block, tens of µs on the way to
/// the command, where a rename allocates nothing.
pub const SPARE: &str = "spare";

/// Where the clearing helper leaves a [`SPARE`] beside the dead work
/// directories of `parent`: only for home's overlay, whose work
/// directory every run makes (the others are made by the setup process
/// where their overlay is needed).
pub fn spare_in(parent: &Path) -> Option<PathBuf> {
    let home_work = parent.file_name() == Some(OsStr::new("work"))
        && parent.parent()?.file_name() == Some(OsStr::new(HOME));
    home_work.then(|| parent.join(SPARE))
}

/// Whether `work` is now the spare of `parent`, renamed (never replacing
/// anything) and still a directory of sbx's making: a link or a file
/// there is put back where it was found and not used.
fn took_spare(parent: &Path, work: &Path) -> bool {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(spare) = spare_in(parent) else {
        return false;
    };
    if std::fs::rename(&spare, work).is_err() {
        return false;
    }
    let ours = std::fs::symlink_metadata(work)
        .is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o7777 == 0o700 && m.nlink() == 2);
    if !ours {
        let _ = std::fs::rename(work, &spare);
    }
    ours
}

/// Whether `name`, an entry beside this run's work directories, is
/// left by a run that has ended (its sbx is gone: a finished run leaves
/// its own, a killed one too) or by an earlier version (`work`,
/// `old-*`): then the clearing helper removes it while the command
/// runs (`clearing.rs`). A live run's is kept: its process still
/// exists. No allocation: the helper calls it.
pub fn dead_work(name: &[u8]) -> bool {
    if name == b"work" || name.starts_with(b"old-") {
        return true;
    }
    let Some(rest) = name.strip_prefix(RUN.as_bytes()) else {
        return false;
    };
    let digits = rest.split(|&b| b == b'-').next().unwrap_or_default();
    let mut pid: libc::pid_t = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return true;
        }
        pid = pid
            .saturating_mul(10)
            .saturating_add(libc::pid_t::from(d - b'0'));
    }
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0
        || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    !alive
}

/// The private caches of this run's key set aside after a reboot
/// (`stale_after_reboot`), beside `works`: a large one may outlast the
/// run, and sbx does not wait for it (the next run removes what is left).
pub fn clear_stale(works: &[PathBuf]) {
    for cache in work_parents(works).iter().filter_map(|p| p.parent()) {
        for entry in crate::dirents::read_dir(cache)
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(STALE))
            {
                let _ = super::temp::remove_tree(entry.path());
            }
        }
    }
}

/// The directories holding `works`, each once.
pub fn work_parents(works: &[PathBuf]) -> Vec<&Path> {
    let mut parents: Vec<&Path> = works.iter().filter_map(|w| w.parent()).collect();
    parents.sort_unstable();
    parents.dedup();
    parents
}

/// `path`'s place beneath `home` (`.npm`), if it lies strictly beneath
/// it; not for a home of `/`.
fn beneath_home<'a>(home: &str, path: &'a str) -> Option<&'a str> {
    let home = home.trim_end_matches('/');
    if home.is_empty() {
        return None;
    }
    path.strip_prefix(home)?
        .strip_prefix('/')
        .filter(|rel| !rel.is_empty())
}

/// In the setup process, before anything covers the host's paths: each
/// cache as a detached mount (a directory of home's overlay, its own
/// overlay, or the private directory when the kernel refuses both).
/// False when a private directory cannot be mounted at all. No
/// allocation.
///
/// # Safety
/// Only system calls, on data prepared by the parent.
pub unsafe fn detach_all(mounts: &[Mount]) -> bool {
    use super::nschild::{clone_tree, set_attr};
    let attrs = ATTRS;
    for m in mounts {
        let mut fd: RawFd = -1;
        if let Some((home, rel)) = &m.shared {
            // A clone keeps the overlay's mount attributes (`attrs`):
            // nothing to set again.
            fd = beneath(home_overlay(home, m.volatile), rel);
        }
        if fd < 0 {
            if let (Some((lower, work)), Some(opened)) = (&m.overlay, &m.lower) {
                // The parent left this run's work directory to be made
                // here, where it is needed (`own_work`).
                libc::mkdir(work.as_ptr(), 0o700);
                fd = overlay(lower, opened.as_raw_fd(), &m.data, work, attrs, m.volatile);
            }
        }
        if fd < 0 {
            // The private directory alone, reached through no symlink.
            let data = no_symlinks(&m.data);
            if data >= 0 {
                fd = clone_tree(data, c"", false);
                libc::close(data);
            }
            if fd < 0 || !set_attr(fd, attrs) {
                return false;
            }
        }
        m.tree.store(fd, Ordering::SeqCst);
    }
    true
}

/// In the setup process, once every path of the new root has been
/// cloned and before the new root is attached at `attach`: home's
/// overlay, of which only the caches' directories are shown, is never
/// reachable from the command. It is attached over home in the host's
/// tree, which the command detaches when it enters the new root (with
/// every mount in it, in one RCU grace period that it waits for
/// anyway); closed while detached, it would wait for a grace period of
/// its own (0.05–0.5 ms on the bench machine) on the way to the
/// command's start. Not later: once the new root is attached at
/// `/tmp`, a home such as `/tmp/usr` would name a place in it. Where it
/// cannot be attached (home is `attach` itself, or the kernel refuses),
/// it is closed. No allocation.
///
/// # Safety
/// Only system calls, on data prepared by the parent.
pub unsafe fn leave_home_overlays(mounts: &[Mount], attach: &CStr) {
    for m in mounts {
        if let Some((home, _)) = &m.shared {
            let fd = home.tree.swap(-2, Ordering::SeqCst);
            if fd < 0 {
                continue;
            }
            // Over `attach` the new root would be mounted on it.
            if home.lower.as_bytes() != attach.to_bytes() {
                libc::syscall(
                    libc::SYS_move_mount,
                    fd,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    home.lower.as_ptr(),
                    super::nschild::MOVE_MOUNT_F_EMPTY_PATH,
                );
            }
            libc::close(fd);
        }
    }
}

/// What a cache's mount may not do.
const ATTRS: u64 = super::nschild::MOUNT_ATTR_NOSUID
    | super::nschild::MOUNT_ATTR_NODEV
    | super::nschild::MOUNT_ATTR_NOEXEC;

impl Shared {
    /// A new detached overlay of home, or -1.
    ///
    /// # Safety
    /// Only system calls, on data prepared by the parent.
    unsafe fn make(&self, volatile: bool) -> RawFd {
        overlay(
            &self.lower,
            self.lower_fd.as_raw_fd(),
            &self.data,
            &self.work,
            ATTRS,
            volatile,
        )
    }
}

/// Home's overlay, made at the first call (-1 when the kernel refuses),
/// or taken from the helper that made it beside the preparation.
unsafe fn home_overlay(home: &Shared, volatile: bool) -> RawFd {
    let fd = home.tree.load(Ordering::SeqCst);
    if fd != -1 {
        return fd.max(-1);
    }
    let early = home.early.load(Ordering::SeqCst);
    let made = if early >= 0 {
        early
    } else {
        home.make(volatile)
    };
    home.tree
        .store(if made >= 0 { made } else { -2 }, Ordering::SeqCst);
    made
}

/// In the helper of `earlyoverlay.rs`: home's overlay, as the setup
/// process would make it, in `home.early` (left -1 when the kernel
/// refuses: the setup process tries again, and says what fails).
///
/// # Safety
/// Only system calls, on data prepared by the parent.
pub unsafe fn make_early(home: &Shared, volatile: bool) {
    home.early.store(home.make(volatile), Ordering::SeqCst);
}

/// A clone of the directory `rel` of the detached mount `root`, reached
/// through no symlink and never out of it (a link in home cannot send
/// the cache elsewhere), or -1. Cloning from a detached mount needs
/// Linux 6.15; before it the cache gets its own overlay.
unsafe fn beneath(root: RawFd, rel: &CStr) -> RawFd {
    if root < 0 {
        return -1;
    }
    use super::nschild::{RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS};
    let dir = super::nschild::open_resolving(
        root,
        rel,
        libc::O_PATH | libc::O_DIRECTORY,
        RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH,
    );
    if dir < 0 {
        return -1;
    }
    let fd = super::nschild::clone_tree(dir, c"", false);
    libc::close(dir);
    fd
}

/// A detached overlay of `lower` (the directory the parent opened as
/// `opened`, named through this process's descriptor) under `upper`,
/// or -1.
unsafe fn overlay(
    lower: &CStr,
    opened: RawFd,
    upper: &CStr,
    work: &CStr,
    attrs: u64,
    volatile: bool,
) -> RawFd {
    // The host's directory as the parent opened it (not a symlink put
    // there since).
    let same = super::nschild::open_same_as(lower, opened);
    if same < 0 {
        return -1;
    }
    // The upper and work directories in sbx's state directory, through
    // no symlink: one put there (by whoever else can write that
    // directory) would send the private cache's writes elsewhere.
    let upper_fd = no_symlinks(upper);
    let work_fd = no_symlinks(work);
    if upper_fd < 0 || work_fd < 0 {
        for fd in [same, upper_fd, work_fd] {
            if fd >= 0 {
                libc::close(fd);
            }
        }
        return -1;
    }
    let mut buf = [0u8; 32];
    let by_fd = super::nofollow::fd_path(same, &mut buf);
    let mut upper_buf = [0u8; 32];
    let upper = super::nofollow::fd_path(upper_fd, &mut upper_buf);
    let mut work_buf = [0u8; 32];
    let work = super::nofollow::fd_path(work_fd, &mut work_buf);
    // `volatile` (where a reboot can be told): no sync of the upper
    // layer's file system when the overlay goes (nor for the command's
    // fsync): a private cache from before a reboot is thrown away
    // instead ([`stale_after_reboot`]). Kernels before 5.10 refuse the
    // option: then without it.
    let opts: [(&CStr, Option<&CStr>); 5] = [
        (c"lowerdir", Some(by_fd)),
        (c"upperdir", Some(upper)),
        (c"workdir", Some(work)),
        (c"userxattr", None),
        (c"volatile", None),
    ];
    let mut fd = -1;
    if volatile {
        fd = super::nschild::new_fs(c"overlay", &opts, attrs);
    }
    if fd < 0 {
        fd = super::nschild::new_fs(c"overlay", &opts[..4], attrs);
    }
    for d in [same, upper_fd, work_fd] {
        libc::close(d);
    }
    fd
}

/// The directory `path` opened (`O_PATH`) through no symlink, or -1.
unsafe fn no_symlinks(path: &CStr) -> RawFd {
    super::nschild::open_resolving(
        libc::AT_FDCWD,
        path,
        libc::O_PATH | libc::O_DIRECTORY,
        super::nschild::RESOLVE_NO_SYMLINKS,
    )
}

/// A key's directory as `sbx caches` lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub key: String,
    pub dir: PathBuf,
    pub workspace: String,
    pub policy: String,
    pub bytes: u64,
    /// Seconds since the epoch.
    pub last_use: u64,
}

/// Every key's caches under `state`.
pub fn list(state: &Path) -> io::Result<Vec<Listed>> {
    let mut out = Vec::new();
    let entries = match crate::dirents::read_dir(home(state)) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for e in entries.flatten() {
        if !e.is_dir() {
            continue;
        }
        let dir = e.path().to_path_buf();
        let about = std::fs::read_to_string(dir.join(ABOUT))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        let field = |k: &str| {
            about
                .as_ref()
                .and_then(|a| a.get(k))
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .to_string()
        };
        let last_use = std::fs::metadata(dir.join(ABOUT))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        out.push(Listed {
            key: e.file_name().to_string_lossy().into_owned(),
            workspace: field("workspace"),
            policy: field("policy"),
            bytes: size(&dir),
            last_use,
            dir,
        });
    }
    out.sort_by(|a, b| a.workspace.cmp(&b.workspace).then(a.key.cmp(&b.key)));
    Ok(out)
}

/// Bytes used beneath `dir` (never through a symlink: each directory
/// is opened from the one above, so a run of the key that swaps one for
/// a symlink meanwhile cannot send the count, or the walk, outside).
fn size(dir: &Path) -> u64 {
    std::fs::File::open(dir).map_or(0, |d| size_at(&d.into(), 0))
}

/// Directories below a key deeper than this are not counted.
const SIZE_DEPTH: usize = 256;

fn size_at(dir: &std::os::fd::OwnedFd, depth: usize) -> u64 {
    use super::nofollow::{entries, is_dir, lstat_at, open_dir};
    let mut total = 0;
    for (name, _) in entries(dir).unwrap_or_default() {
        let Ok(st) = lstat_at(dir, &name) else {
            continue;
        };
        total += st.st_blocks as u64 * 512;
        if is_dir(&st) && depth < SIZE_DEPTH {
            if let Ok(sub) = open_dir(dir, &name) {
                total += size_at(&sub, depth + 1);
            }
        }
    }
    total
}

/// Remove one key's caches (a directory [`list`] gave).
pub fn remove(l: &Listed) -> io::Result<()> {
    match super::temp::remove_tree(&l.dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The workspace as keys record it.
pub fn workspace_name(dir: &OsStr) -> String {
    crate::canonical::canonicalize(dir)
        .unwrap_or_else(|_| PathBuf::from(dir))
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key's size counts what is below it, never what a directory
    /// swapped for a symlink meanwhile leads to (a run of the key writing
    /// its cache while `sbx caches` lists it).
    #[test]
    fn size_follows_no_symlink_swapped_in() {
        use std::sync::atomic::AtomicBool;
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("big"), vec![1u8; 4 << 20]).unwrap();
        let key = t.path().join("key");
        let d = key.join("d");
        std::fs::create_dir_all(d.join("e")).unwrap();
        std::fs::write(d.join("small"), "x").unwrap();
        let bound = 1 << 20;
        let stop = AtomicBool::new(false);
        let most = std::thread::scope(|s| {
            s.spawn(|| super::super::nofollow::tests::swap_for_symlink(&stop, &d, &victim));
            let most = (0..2000).map(|_| size(&key)).max();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            most.unwrap()
        });
        assert!(most < bound, "{most} bytes counted");
    }

    fn names(k: &[Known]) -> Vec<(&str, &str)> {
        k.iter().map(|k| (k.name, k.path.as_str())).collect()
    }

    #[test]
    fn variables_move_the_caches() {
        let none = |_: &str| None;
        let k = known(&none, "/h");
        let n = names(&k);
        assert!(n.contains(&("npm", "/h/.npm")));
        assert!(n.contains(&("pip", "/h/.cache/pip")));
        assert!(n.contains(&("cargo-registry", "/h/.cargo/registry")));
        assert!(n.contains(&("go-mod", "/h/go/pkg/mod")));
        assert!(n.contains(&("gradle", "/h/.gradle/caches")));
        // Never a directory of programs.
        assert!(!k.iter().any(|k| k.path.ends_with("/bin")));
        let set = |v: &str| -> Option<String> {
            match v {
                "CARGO_HOME" => Some("/c".into()),
                "XDG_CACHE_HOME" => Some("/x".into()),
                "GOPATH" => Some("/g1:/g2".into()),
                "npm_config_cache" => Some("relative".into()),
                "GOCACHE" => Some("/gc".into()),
                _ => None,
            }
        };
        let k = known(&set, "/h");
        let n = names(&k);
        assert!(n.contains(&("cargo-git", "/c/git")));
        assert!(n.contains(&("pip", "/x/pip")));
        assert!(n.contains(&("go-mod", "/g1/pkg/mod")));
        assert!(n.contains(&("go-build", "/gc")));
        assert!(n.contains(&("npm", "/h/.npm")));
        assert!(k.iter().all(|k| sensitive(&k.path, "/h").is_none()));
        // A variable naming a sensitive place, or home: never a cache.
        let set = |v: &str| -> Option<String> {
            match v {
                "npm_config_cache" => Some("/h/.ssh".into()),
                "PIP_CACHE_DIR" => Some("/h/.gnupg/x".into()),
                "XDG_CACHE_HOME" => Some("/h/.config".into()),
                "GOCACHE" => Some("/h".into()),
                "UV_CACHE_DIR" => Some("/h//.ssh".into()),
                "YARN_CACHE_FOLDER" => Some("/h/x/../.ssh".into()),
                _ => None,
            }
        };
        let k = known(&set, "/h");
        for name in ["npm", "pip", "go-build", "uv", "yarn"] {
            let c = k.iter().find(|k| k.name == name).unwrap();
            assert!(sensitive(&c.path, "/h").is_some(), "{name} at {}", c.path);
        }
        // `~/.config` holds `~/.config/gcloud`: its caches below are fine.
        let pnpm = k.iter().find(|k| k.name == "pnpm-cache").unwrap();
        assert_eq!(
            (pnpm.path.as_str(), sensitive(&pnpm.path, "/h")),
            ("/h/.config/pnpm", None)
        );
    }

    #[test]
    fn a_rule_that_decides_the_path_wins() {
        let g = |rules: &[(&str, bool)], mounts: &[&str]| {
            decided_by_rule("/h/.npm", &Grants { rules, mounts })
        };
        assert!(g(&[("/h/.npm", true)], &[]).is_some());
        assert!(g(&[("/h", true)], &[]).is_some());
        assert!(g(&[("/h/.npm/x", false)], &[]).is_some());
        assert!(g(&[], &["/h/.npm/_cacache"]).is_some());
        // A read-only rule above or on it: the overlay shows the same.
        assert!(g(&[("/h", false), ("/h/.npm", false)], &[]).is_none());
        assert!(g(&[("/h/.npmrc", true)], &[]).is_none());
    }

    #[test]
    fn a_state_directory_the_command_could_make_is_not_used() {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path().to_str().unwrap();
        let state = t.path().join("state/sbx");
        let writable = [(ws, true)];
        let g = Grants {
            rules: &writable,
            mounts: &[],
        };
        assert!(unusable_state(&state, &g).is_some());
        let read_only = [(ws, false)];
        let g = Grants {
            rules: &read_only,
            mounts: &[],
        };
        assert!(unusable_state(&state, &g).is_none());
        // Once it exists, the namespace layer mounts it read-only.
        std::fs::create_dir_all(&state).unwrap();
        let g = Grants {
            rules: &writable,
            mounts: &[],
        };
        assert!(unusable_state(&state, &g).is_none());
        let g = Grants {
            rules: &[],
            mounts: &[],
        };
        assert!(unusable_state(Path::new("/proc/1/nonexistent/sbx"), &g).is_some());
    }

    /// A key's private directories are set aside only when it records
    /// another boot than this one: not for an earlier version's key (no
    /// boot recorded), nor where neither boot is known.
    #[test]
    fn private_caches_of_another_boot_are_set_aside() {
        let t = tempfile::tempdir().unwrap();
        let key = t.path();
        let cases = [
            (None, "b1", true),
            (Some("b1"), "b1", true),
            (Some(""), "", true),
            (Some("b0"), "b1", false),
        ];
        for (recorded, boot, kept) in cases {
            for dir in ["home", "npm"] {
                std::fs::create_dir_all(key.join(dir).join("data")).unwrap();
            }
            let about = match recorded {
                Some(b) => serde_json::json!({ "workspace": "w", "policy": "p", "boot": b }),
                None => serde_json::json!({ "workspace": "w", "policy": "p" }),
            };
            stale_after_reboot(key, Some(about.to_string().as_bytes()), boot);
            for dir in ["home", "npm"] {
                let stale = std::fs::read_dir(key.join(dir))
                    .unwrap()
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(STALE))
                    .count();
                assert_eq!(
                    (key.join(dir).join("data").is_dir(), stale),
                    (kept, usize::from(!kept)),
                    "{recorded:?} {boot} {dir}"
                );
                std::fs::remove_dir_all(key.join(dir)).unwrap();
            }
        }
    }

    #[test]
    fn dead_work_directories() {
        let live = format!("run-{}-1f", std::process::id());
        assert!(!dead_work(live.as_bytes()), "this process's own");
        for dead in [
            "run-4194300-abc", // above any pid_max: no such process
            "run-99999999999999999999-a",
            "run-x1-a",
            "run-",
            "run--1",
            "work",
            "old-1-abc",
        ] {
            assert!(dead_work(dead.as_bytes()), "{dead}");
        }
        for other in ["data", "runner", "stale-1", "Work", SPARE] {
            assert!(!dead_work(other.as_bytes()), "{other}");
        }
    }

    /// A run takes the spare work directory an earlier run's helper
    /// left (the same directory, renamed), or makes its own where there
    /// is none or it is not an empty directory of sbx's; only home's
    /// overlay has one.
    #[test]
    fn a_run_takes_the_spare_work_directory() {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("KEY").join(HOME).join("work");
        assert_eq!(spare_in(&parent), Some(parent.join(SPARE)));
        for other in ["KEY/npm/work", "KEY/home/data", "KEY/home"] {
            assert_eq!(spare_in(&dir.path().join(other)), None, "{other}");
        }
        // None yet: made.
        let first = own_work(&parent, true).unwrap();
        assert!(first.is_dir() && !parent.join(SPARE).exists());
        // One there: taken, the same directory.
        let mkdir = |p: &Path| std::fs::DirBuilder::new().mode(0o700).create(p).unwrap();
        mkdir(&parent.join(SPARE));
        let ino = std::fs::metadata(parent.join(SPARE)).unwrap().ino();
        std::fs::rename(&first, parent.join("first")).unwrap();
        let second = own_work(&parent, true).unwrap();
        assert_eq!(std::fs::metadata(&second).unwrap().ino(), ino);
        assert!(!parent.join(SPARE).exists());
        // Not an empty directory of sbx's: left where it was, not used.
        std::fs::rename(&second, parent.join("second")).unwrap();
        mkdir(&parent.join(SPARE));
        mkdir(&parent.join(SPARE).join("incompat"));
        let ino = std::fs::metadata(parent.join(SPARE)).unwrap().ino();
        let third = own_work(&parent, true).unwrap();
        assert_ne!(std::fs::metadata(&third).unwrap().ino(), ino);
        assert_eq!(std::fs::metadata(parent.join(SPARE)).unwrap().ino(), ino);
        std::fs::rename(&third, parent.join("third")).unwrap();
        std::fs::remove_dir_all(parent.join(SPARE)).unwrap();
        std::os::unix::fs::symlink(dir.path(), parent.join(SPARE)).unwrap();
        let fourth = own_work(&parent, true).unwrap();
        assert!(!fourth.is_symlink() && fourth.is_dir());
        assert!(parent.join(SPARE).is_symlink());
    }

    #[test]
    fn keys_differ_by_workspace_and_policy() {
        assert_eq!(key("/w", "p").len(), 16);
        assert_ne!(key("/w", "p"), key("/v", "p"));
        assert_ne!(key("/w", "p"), key("/w", "q"));
    }

    #[test]
    fn descriptor_paths() {
        let mut buf = [0u8; 32];
        assert_eq!(
            super::super::nofollow::fd_path(7, &mut buf),
            c"/proc/self/fd/7"
        );
        assert_eq!(
            super::super::nofollow::fd_path(1234, &mut buf),
            c"/proc/self/fd/1234"
        );
    }

    #[test]
    fn rights_never_execute() {
        let r = FsSet(rights(FsSet::all()));
        assert!(!r.names().contains(&"execute"));
        assert!(r.names().contains(&"write_file"));
    }
}
