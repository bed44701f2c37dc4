//! `[process] presets`: the per-OS roots that let ordinary programs start.
//! This table is the documentation's source of truth (docs/presets.md is
//! checked against it by a test).

use crate::ir::{Access, Os};
use crate::policy::model::Preset;

/// Where a preset root is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    Absolute,
    Home,
    Temp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Root {
    pub base: Base,
    /// Absolute path, or the part below home/temp (`""` = the root itself).
    pub path: &'static str,
    pub access: Access,
}

const R: Access = Access::READ;
const RX: Access = Access::READ_EXEC;
/// Devices such as /dev/null: read and write existing files only.
const DEV: Access = Access {
    read: true,
    update: true,
    ..Access::NONE
};
const RW: Access = Access::READ_WRITE;
/// Temp dirs run what tools build there (doctests, `go test`, build
/// scripts), as the default workspace does; `[commands]` withdraws it.
const RWX: Access = Access {
    execute: true,
    ..Access::READ_WRITE
};

const fn abs(path: &'static str, access: Access) -> Root {
    Root {
        base: Base::Absolute,
        path,
        access,
    }
}
const fn home(path: &'static str, access: Access) -> Root {
    Root {
        base: Base::Home,
        path,
        access,
    }
}

const LINUX_SYSTEM: &[Root] = &[
    abs("/bin", RX),
    abs("/sbin", RX),
    abs("/usr", RX),
    abs("/lib", RX),
    abs("/lib32", RX),
    abs("/lib64", RX),
    abs("/libx32", RX),
    abs("/etc", R),
    // Landlock's ptrace rules still keep /proc/<other>/environ and mem out.
    abs("/proc", R),
    abs("/sys/devices/system/cpu", R),
    abs("/dev/null", DEV),
    abs("/dev/zero", DEV),
    abs("/dev/full", DEV),
    abs("/dev/random", R),
    abs("/dev/urandom", R),
    abs("/dev/tty", DEV),
    // No /dev/stdin, /dev/fd...: they are per-process links, and
    // resolving them at compile time would grant whatever sbx's own
    // stdio happened to be.
];

const MACOS_SYSTEM: &[Root] = &[
    abs("/bin", RX),
    abs("/sbin", RX),
    abs("/usr", RX),
    abs("/System", RX),
    abs("/Library/Apple", R),
    abs("/Library/Preferences", R),
    abs("/private/etc", R),
    abs("/private/var/db/timezone", R),
    abs("/dev/null", DEV),
    abs("/dev/zero", DEV),
    abs("/dev/random", R),
    abs("/dev/urandom", R),
    abs("/dev/tty", DEV),
    abs("/dev/dtracehelper", DEV),
];

const WINDOWS_SYSTEM: &[Root] = &[
    abs("C:/Windows", RX),
    abs("C:/Program Files", RX),
    abs("C:/Program Files (x86)", RX),
    abs("C:/ProgramData", R),
];

/// git's own settings, read-only: git stops ("unknown error occurred
/// while reading the configuration files") when one it finds is
/// unreadable. Not `~/.git-credentials` nor `~/.config/git/credentials`.
const GIT_CONFIG: &[Root] = &[
    home(".gitconfig", R),
    home(".config/git/config", R),
    home(".config/git/ignore", R),
    home(".config/git/attributes", R),
];

/// Cargo's home without its credentials (`~/.cargo/credentials.toml`
/// holds registry tokens): the installed binaries, the downloaded
/// sources, and the configuration.
const CARGO_HOME: &[Root] = &[
    home(".cargo/bin", RX),
    home(".cargo/registry", R),
    home(".cargo/git", R),
    home(".cargo/config.toml", R),
    home(".cargo/config", R),
    home(".cargo/env", R),
];

const UNIX_TOOLCHAINS_HOME: &[Root] = &[
    home(".rustup", RX),
    home(".local/bin", RX),
    home(".local/lib", RX),
    home(".pyenv", RX),
    home(".nvm", RX),
    home("go", RX),
];

const LINUX_TOOLCHAINS: &[Root] = &[abs("/opt", RX), abs("/nix", RX), abs("/snap", RX)];

const MACOS_TOOLCHAINS: &[Root] = &[
    abs("/Applications/Xcode.app", RX),
    abs("/Library/Developer", RX),
    abs("/opt/homebrew", RX),
    abs("/usr/local", RX),
    abs("/nix", RX),
];

const WINDOWS_TOOLCHAINS: &[Root] = &[home(".rustup", RX), home("AppData/Local/Programs", RX)];

const UNIX_TEMP: &[Root] = &[
    Root {
        base: Base::Temp,
        path: "",
        access: RWX,
    },
    abs("/tmp", RWX),
    abs("/var/tmp", RWX),
    // POSIX shared memory and semaphores (Python multiprocessing).
    abs("/dev/shm", RW),
];

const MACOS_TEMP: &[Root] = &[
    Root {
        base: Base::Temp,
        path: "",
        access: RWX,
    },
    abs("/private/tmp", RWX),
    abs("/private/var/tmp", RWX),
];

const WINDOWS_TEMP: &[Root] = &[Root {
    base: Base::Temp,
    path: "",
    access: RWX,
}];

/// Read-only, opt-in: these files can hold registry tokens.
const PM_CONFIG: &[Root] = &[
    home(".npmrc", R),
    home(".yarnrc", R),
    home(".gitconfig", R),
    home(".config/git", R),
    home(".cargo/config.toml", R),
    home(".cargo/config", R),
    home(".config/pip", R),
    home(".pypirc", R),
    home(".m2/settings.xml", R),
];

/// The roots of one preset on one OS, in a fixed order.
pub fn roots(preset: Preset, os: Os) -> Vec<Root> {
    let parts: &[&[Root]] = match (preset, os) {
        (Preset::SystemRuntime, Os::Linux) => &[LINUX_SYSTEM],
        (Preset::SystemRuntime, Os::Macos) => &[MACOS_SYSTEM],
        (Preset::SystemRuntime, Os::Windows) => &[WINDOWS_SYSTEM],
        (Preset::DeveloperToolchains, Os::Linux) => &[
            LINUX_TOOLCHAINS,
            CARGO_HOME,
            UNIX_TOOLCHAINS_HOME,
            GIT_CONFIG,
        ],
        (Preset::DeveloperToolchains, Os::Macos) => &[
            MACOS_TOOLCHAINS,
            CARGO_HOME,
            UNIX_TOOLCHAINS_HOME,
            GIT_CONFIG,
        ],
        (Preset::DeveloperToolchains, Os::Windows) => &[CARGO_HOME, WINDOWS_TOOLCHAINS, GIT_CONFIG],
        (Preset::UserTemp, Os::Linux) => &[UNIX_TEMP],
        (Preset::UserTemp, Os::Macos) => &[MACOS_TEMP],
        (Preset::UserTemp, Os::Windows) => &[WINDOWS_TEMP],
        (Preset::PackageManagerConfig, _) => &[PM_CONFIG],
    };
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}
