//! The Landlock ruleset, built in the parent (before fork) with the
//! `landlock` crate; the child only calls `landlock_restrict_self` on the
//! resulting descriptor, which allocates nothing.

use super::plan::{Opened, Plan};
use landlock::{
    AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// The running kernel's Landlock ABI; 0 when Landlock is not built in or
/// not enabled at boot.
pub fn kernel_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: NULL attr, size 0.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).unwrap_or(0)
}

/// Open a rule's path the way Landlock wants it: `O_PATH`, following
/// symlinks (the rule applies to the target), close-on-exec.
///
/// Not through `OpenOptions`: musl's `O_ACCMODE` includes `O_PATH` (as
/// `O_SEARCH`), so std masks it out of the custom flags there, and the path
/// would be opened for reading: a FIFO would block, `/dev/tty` without a
/// terminal would fail, a device's open would run.
pub fn open_path(path: &str) -> io::Result<Opened<File>> {
    let c = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a NUL-terminated path; the descriptor is owned from here on.
    let fd = unsafe { libc::openat(libc::AT_FDCWD, c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let f = unsafe { File::from_raw_fd(fd) };
    let is_dir = f.metadata()?.is_dir();
    Ok(Opened { handle: f, is_dir })
}

/// Create the ruleset and add every rule. Rights were already trimmed to
/// the ABI in use, so a hard requirement catches any mismatch instead of
/// silently dropping rights.
pub fn create(plan: &Plan<File>) -> Result<Option<OwnedFd>, String> {
    if plan.abi == 0 {
        return Ok(None);
    }
    let err = |what: &str, e: &dyn std::fmt::Display| format!("landlock: {what}: {e}");
    let fs = BitFlags::<AccessFs>::from_bits(plan.handled_fs.0)
        .map_err(|_| "landlock: unknown filesystem right".to_string())?;
    let net = BitFlags::<AccessNet>::from_bits(plan.handled_net)
        .map_err(|_| "landlock: unknown network right".to_string())?;
    let scopes = BitFlags::<Scope>::from_bits(plan.scoped)
        .map_err(|_| "landlock: unknown scope".to_string())?;

    let mut rs = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    if !fs.is_empty() {
        rs = rs.handle_access(fs).map_err(|e| err("handle fs", &e))?;
    }
    if !net.is_empty() {
        rs = rs.handle_access(net).map_err(|e| err("handle net", &e))?;
    }
    if !scopes.is_empty() {
        rs = rs.scope(scopes).map_err(|e| err("scope", &e))?;
    }
    let mut created = rs.create().map_err(|e| err("create ruleset", &e))?;
    for r in &plan.rules {
        let access = BitFlags::<AccessFs>::from_bits(r.rights.0)
            .map_err(|_| "landlock: unknown filesystem right".to_string())?;
        created = created
            .add_rule(PathBeneath::new(&r.handle, access))
            .map_err(|e| err(&r.path, &e))?;
    }
    for (port, bits) in &plan.ports {
        let access = BitFlags::<AccessNet>::from_bits(*bits)
            .map_err(|_| "landlock: unknown network right".to_string())?;
        if !access.is_empty() {
            created = created
                .add_rule(NetPort::new(*port, access))
                .map_err(|e| err(&format!("port {port}"), &e))?;
        }
    }
    Ok(created.into())
}
