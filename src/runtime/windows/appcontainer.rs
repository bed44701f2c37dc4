//! AppContainer profile, capabilities and ACL grants.
//!
//! The userenv functions are resolved with `GetProcAddress`: Wine 8 lacks
//! some of them, and an import of a missing export aborts the process when
//! called, where a failed lookup is an ordinary error.

use super::plan::{deny_rights, file_rights};
use super::token::Sid;
use super::win::wide;
use crate::back::windows::{AclGrant, Capability};
use crate::ir::PathKind;
use std::io;
use std::path::Path;
use std::ptr::{null, null_mut};
use windows_sys::core::{HRESULT, PCWSTR};
use windows_sys::Win32::Foundation::LocalFree;
use windows_sys::Win32::Security::Authorization::{
    GetNamedSecurityInfoW, SetEntriesInAclW, SetNamedSecurityInfoW, DENY_ACCESS, EXPLICIT_ACCESS_W,
    GRANT_ACCESS, NO_MULTIPLE_TRUSTEE, REVOKE_ACCESS, SE_FILE_OBJECT, TRUSTEE_IS_SID,
    TRUSTEE_IS_UNKNOWN, TRUSTEE_W,
};
use windows_sys::Win32::Security::{
    FreeSid, WinCapabilityInternetClientSid, ACE_FLAGS, ACL, DACL_SECURITY_INFORMATION,
    NO_INHERITANCE, PSID, SECURITY_CAPABILITIES, SID_AND_ATTRIBUTES,
    SUB_CONTAINERS_AND_OBJECTS_INHERIT,
};
use windows_sys::Win32::System::LibraryLoader::{
    GetProcAddress, LoadLibraryExW, LOAD_LIBRARY_SEARCH_SYSTEM32,
};

type CreateProfile = unsafe extern "system" fn(
    PCWSTR,
    PCWSTR,
    PCWSTR,
    *const SID_AND_ATTRIBUTES,
    u32,
    *mut PSID,
) -> HRESULT;
type DeriveSid = unsafe extern "system" fn(PCWSTR, *mut PSID) -> HRESULT;

/// HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS).
const ALREADY_EXISTS: HRESULT = 0x8007_00B7_u32 as i32;
const SE_GROUP_ENABLED: u32 = 0x4;

fn unavailable(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, msg)
}

fn resolve(lib: &str, name: &str) -> io::Result<unsafe extern "system" fn() -> isize> {
    let w = wide(lib);
    // SAFETY: `w` is NUL-terminated; system32 only, no search-path DLLs.
    let m = unsafe { LoadLibraryExW(w.as_ptr(), null_mut(), LOAD_LIBRARY_SEARCH_SYSTEM32) };
    if m.is_null() {
        return Err(unavailable(format!("{lib} cannot be loaded")));
    }
    let cname = format!("{name}\0");
    // SAFETY: `cname` is NUL-terminated ASCII.
    unsafe { GetProcAddress(m, cname.as_ptr()) }
        .ok_or_else(|| unavailable(format!("{lib} does not export {name}")))
}

/// A live AppContainer: its SID, capabilities, and the ACEs added for it
/// (removed again on drop).
pub struct Container {
    sid: PSID,
    _caps: Vec<Sid>,
    cap_attrs: Vec<SID_AND_ATTRIBUTES>,
    granted: Vec<Vec<u16>>,
    sc: SECURITY_CAPABILITIES,
}

impl Container {
    pub fn open(name: &str, caps: &[Capability]) -> io::Result<Container> {
        let create = resolve("userenv.dll", "CreateAppContainerProfile")?;
        let derive = resolve("userenv.dll", "DeriveAppContainerSidFromAppContainerName")?;
        // SAFETY: the exports have these documented signatures.
        type Farproc = unsafe extern "system" fn() -> isize;
        let (create, derive) = unsafe {
            (
                std::mem::transmute::<Farproc, CreateProfile>(create),
                std::mem::transmute::<Farproc, DeriveSid>(derive),
            )
        };
        let wname = wide(name);
        let desc = wide("sbx sandbox");
        let mut sid: PSID = null_mut();
        // SAFETY: strings are NUL-terminated; `sid` is written on success.
        let mut hr = unsafe {
            create(
                wname.as_ptr(),
                wname.as_ptr(),
                desc.as_ptr(),
                null(),
                0,
                &mut sid,
            )
        };
        if hr == ALREADY_EXISTS {
            // SAFETY: as above.
            hr = unsafe { derive(wname.as_ptr(), &mut sid) };
        }
        if hr < 0 || sid.is_null() {
            return Err(unavailable(format!(
                "AppContainer profile {name:?} could not be created (HRESULT 0x{:08x})",
                hr as u32
            )));
        }
        let caps: Vec<Sid> = caps
            .iter()
            .map(|c| match c {
                Capability::InternetClient => Sid::well_known(WinCapabilityInternetClientSid),
            })
            .collect::<Result<_, _>>()?;
        let cap_attrs: Vec<_> = caps
            .iter()
            .map(|s| SID_AND_ATTRIBUTES {
                Sid: s.ptr(),
                Attributes: SE_GROUP_ENABLED,
            })
            .collect();
        let mut c = Container {
            sid,
            _caps: caps,
            cap_attrs,
            granted: Vec::new(),
            sc: SECURITY_CAPABILITIES {
                AppContainerSid: sid,
                Capabilities: null_mut(),
                CapabilityCount: 0,
                Reserved: 0,
            },
        };
        c.sc.CapabilityCount = c.cap_attrs.len() as u32;
        if !c.cap_attrs.is_empty() {
            c.sc.Capabilities = c.cap_attrs.as_mut_ptr();
        }
        Ok(c)
    }

    /// The value for `PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES`; valid
    /// while `self` is.
    pub fn capabilities(&self) -> &SECURITY_CAPABILITIES {
        &self.sc
    }

    /// Add the grant's ACEs for the container SID. `path` is the expanded
    /// path; a path that does not exist grants nothing and is skipped.
    pub fn grant(&mut self, g: &AclGrant, path: &Path) -> io::Result<()> {
        let dir = match g.kind {
            PathKind::Dir => true,
            PathKind::File => false,
            PathKind::Missing | PathKind::Unknown => match std::fs::metadata(path) {
                Ok(m) => m.is_dir(),
                Err(_) => return Ok(()),
            },
        };
        let inherit = if dir {
            SUB_CONTAINERS_AND_OBJECTS_INHERIT
        } else {
            NO_INHERITANCE
        };
        let mut entries = Vec::new();
        let deny = deny_rights(g.allow, g.deny);
        if deny != 0 {
            entries.push(self.entry(deny, DENY_ACCESS, inherit));
        }
        let allow = file_rights(g.allow);
        if allow != 0 {
            entries.push(self.entry(allow, GRANT_ACCESS, inherit));
        }
        let w = wide(path);
        set_entries(&w, &entries)?;
        self.granted.push(w);
        Ok(())
    }

    fn entry(&self, mask: u32, mode: i32, inherit: ACE_FLAGS) -> EXPLICIT_ACCESS_W {
        EXPLICIT_ACCESS_W {
            grfAccessPermissions: mask,
            grfAccessMode: mode,
            grfInheritance: inherit,
            Trustee: TRUSTEE_W {
                pMultipleTrustee: null_mut(),
                MultipleTrusteeOperation: NO_MULTIPLE_TRUSTEE,
                TrusteeForm: TRUSTEE_IS_SID,
                TrusteeType: TRUSTEE_IS_UNKNOWN,
                ptstrName: self.sid.cast(),
            },
        }
    }
}

fn set_entries(path: &[u16], entries: &[EXPLICIT_ACCESS_W]) -> io::Result<()> {
    let mut old: *mut ACL = null_mut();
    let mut sd = null_mut();
    // SAFETY: `path` is NUL-terminated; outputs are written on success.
    let e = unsafe {
        GetNamedSecurityInfoW(
            path.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            null_mut(),
            null_mut(),
            &mut old,
            null_mut(),
            &mut sd,
        )
    };
    if e != 0 {
        return Err(io::Error::from_raw_os_error(e as i32));
    }
    let mut new: *mut ACL = null_mut();
    // SAFETY: `entries` and `old` (inside `sd`) are valid for the call.
    let e = unsafe { SetEntriesInAclW(entries.len() as u32, entries.as_ptr(), old, &mut new) };
    let r = if e != 0 {
        Err(io::Error::from_raw_os_error(e as i32))
    } else {
        // SAFETY: `new` is a valid ACL from SetEntriesInAclW.
        let e = unsafe {
            SetNamedSecurityInfoW(
                path.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                null_mut(),
                null_mut(),
                new,
                null(),
            )
        };
        if e != 0 {
            Err(io::Error::from_raw_os_error(e as i32))
        } else {
            Ok(())
        }
    };
    // SAFETY: both were allocated by the system with LocalAlloc.
    unsafe {
        LocalFree(new.cast());
        LocalFree(sd);
    }
    r
}

impl Drop for Container {
    fn drop(&mut self) {
        let revoke = [self.entry(0, REVOKE_ACCESS, NO_INHERITANCE)];
        for p in self.granted.iter().rev() {
            if let Err(e) = set_entries(p, &revoke) {
                let path = String::from_utf16_lossy(&p[..p.len() - 1]);
                eprintln!("sbx: warning: could not remove the AppContainer ACEs from {path}: {e}");
            }
        }
        // SAFETY: the SID came from CreateAppContainerProfile / Derive...,
        // which document FreeSid.
        unsafe { FreeSid(self.sid) };
    }
}
