//! The restricted primary token for the child, and its read-back.

use super::plan::Shortfall;
use super::win::{last_error, wide, Handle};
use crate::back::windows::{Integrity, Token, TokenFlag};
use std::io;
use std::mem::size_of;
use std::ptr::{null, null_mut};
use windows_sys::Win32::Foundation::{HANDLE, LUID};
use windows_sys::Win32::Security::{
    CreateRestrictedToken, CreateWellKnownSid, EqualSid, GetLengthSid, GetSidSubAuthority,
    GetSidSubAuthorityCount, GetTokenInformation, IsTokenRestricted, LookupPrivilegeNameW,
    LookupPrivilegeValueW, SetTokenInformation, TokenGroups, TokenIntegrityLevel, TokenPrivileges,
    WinAuthenticatedUserSid, WinBuiltinAdministratorsSid, WinBuiltinUsersSid, WinInteractiveSid,
    WinLowLabelSid, WinRestrictedCodeSid, WinUntrustedLabelSid, WinWorldSid, DISABLE_MAX_PRIVILEGE,
    LUA_TOKEN, LUID_AND_ATTRIBUTES, SID_AND_ATTRIBUTES, TOKEN_ADJUST_DEFAULT, TOKEN_ASSIGN_PRIMARY,
    TOKEN_DUPLICATE, TOKEN_GROUPS, TOKEN_INFORMATION_CLASS, TOKEN_MANDATORY_LABEL,
    TOKEN_PRIVILEGES, TOKEN_QUERY, WELL_KNOWN_SID_TYPE, WRITE_RESTRICTED,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

const SE_GROUP_USE_FOR_DENY_ONLY: u32 = 0x10;
const SE_GROUP_INTEGRITY: u32 = 0x20;
const LOW_RID: u32 = 0x1000;
const UNTRUSTED_RID: u32 = 0;

/// A SID in its own buffer (`SECURITY_MAX_SID_SIZE` is 68 bytes).
pub struct Sid(Vec<u64>);

impl Sid {
    pub fn well_known(kind: WELL_KNOWN_SID_TYPE) -> io::Result<Sid> {
        let mut buf = vec![0u64; 9];
        let mut size = (buf.len() * 8) as u32;
        // SAFETY: `buf` holds `size` bytes.
        let ok =
            unsafe { CreateWellKnownSid(kind, null_mut(), buf.as_mut_ptr().cast(), &mut size) };
        if ok == 0 {
            return Err(last_error("CreateWellKnownSid"));
        }
        Ok(Sid(buf))
    }

    pub fn by_name(name: &str) -> io::Result<Sid> {
        let kind = match name {
            "administrators" => WinBuiltinAdministratorsSid,
            "authenticated_users" => WinAuthenticatedUserSid,
            "everyone" => WinWorldSid,
            "interactive" => WinInteractiveSid,
            "restricted" => WinRestrictedCodeSid,
            "users" => WinBuiltinUsersSid,
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("unknown SID name {other:?}"),
                ))
            }
        };
        Sid::well_known(kind)
    }

    pub fn ptr(&self) -> *mut core::ffi::c_void {
        self.0.as_ptr() as *mut _
    }
}

fn own_token() -> io::Result<Handle> {
    let mut h: HANDLE = null_mut();
    let access = TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT;
    // SAFETY: the pseudo handle is always valid; `h` is written.
    if unsafe { OpenProcessToken(GetCurrentProcess(), access, &mut h) } == 0 {
        return Err(last_error("OpenProcessToken"));
    }
    Ok(Handle(h))
}

fn privilege(name: &str) -> Option<LUID> {
    let mut luid = LUID {
        LowPart: 0,
        HighPart: 0,
    };
    let w = wide(name);
    // SAFETY: `w` is NUL-terminated; `luid` is written.
    (unsafe { LookupPrivilegeValueW(null(), w.as_ptr(), &mut luid) } != 0).then_some(luid)
}

/// A restricted copy of sbx's own token, as the spec describes.
pub fn restricted(t: &Token) -> io::Result<Handle> {
    let base = own_token()?;
    let flags = t.flags.iter().fold(0, |f, x| {
        f | match x {
            TokenFlag::DisableMaxPrivilege => DISABLE_MAX_PRIVILEGE,
            TokenFlag::LuaToken => LUA_TOKEN,
            TokenFlag::WriteRestricted => WRITE_RESTRICTED,
        }
    });
    let deny: Vec<Sid> = t
        .deny_only_sids
        .iter()
        .map(|n| Sid::by_name(n))
        .collect::<Result<_, _>>()?;
    let restrict: Vec<Sid> = t
        .restricting_sids
        .iter()
        .map(|n| Sid::by_name(n))
        .collect::<Result<_, _>>()?;
    let attrs = |s: &Vec<Sid>| -> Vec<SID_AND_ATTRIBUTES> {
        s.iter()
            .map(|s| SID_AND_ATTRIBUTES {
                Sid: s.ptr(),
                Attributes: 0,
            })
            .collect()
    };
    let (deny_a, restrict_a) = (attrs(&deny), attrs(&restrict));
    // A privilege this system does not know cannot be held: nothing to delete.
    let privs: Vec<LUID_AND_ATTRIBUTES> = t
        .delete_privileges
        .iter()
        .filter_map(|n| privilege(n))
        .map(|l| LUID_AND_ATTRIBUTES {
            Luid: l,
            Attributes: 0,
        })
        .collect();
    let mut new: HANDLE = null_mut();
    // SAFETY: every array outlives the call and its count matches.
    let ok = unsafe {
        CreateRestrictedToken(
            base.0,
            flags,
            deny_a.len() as u32,
            ptr_or_null(&deny_a),
            privs.len() as u32,
            ptr_or_null(&privs),
            restrict_a.len() as u32,
            ptr_or_null(&restrict_a),
            &mut new,
        )
    };
    if ok == 0 {
        return Err(last_error("CreateRestrictedToken"));
    }
    let new = Handle(new);
    if let Some(level) = t.integrity {
        let sid = Sid::well_known(match level {
            Integrity::Low => WinLowLabelSid,
            Integrity::Untrusted => WinUntrustedLabelSid,
        })?;
        let label = TOKEN_MANDATORY_LABEL {
            Label: SID_AND_ATTRIBUTES {
                Sid: sid.ptr(),
                Attributes: SE_GROUP_INTEGRITY,
            },
        };
        // SAFETY: `label` and the SID it points to outlive the call.
        let ok = unsafe {
            SetTokenInformation(
                new.0,
                TokenIntegrityLevel,
                (&raw const label).cast(),
                size_of::<TOKEN_MANDATORY_LABEL>() as u32 + GetLengthSid(sid.ptr()),
            )
        };
        if ok == 0 {
            return Err(last_error("SetTokenInformation(TokenIntegrityLevel)"));
        }
    }
    Ok(new)
}

fn ptr_or_null<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        null()
    } else {
        v.as_ptr()
    }
}

/// `GetTokenInformation` into an 8-byte aligned buffer.
fn info(token: HANDLE, class: TOKEN_INFORMATION_CLASS) -> io::Result<Vec<u64>> {
    let mut len = 0u32;
    // SAFETY: a size query with an empty buffer.
    unsafe { GetTokenInformation(token, class, null_mut(), 0, &mut len) };
    if len == 0 {
        return Err(last_error("GetTokenInformation"));
    }
    let mut buf = vec![0u64; (len as usize).div_ceil(8)];
    // SAFETY: `buf` holds at least `len` bytes.
    if unsafe { GetTokenInformation(token, class, buf.as_mut_ptr().cast(), len, &mut len) } == 0 {
        return Err(last_error("GetTokenInformation"));
    }
    Ok(buf)
}

fn privilege_names(token: HANDLE) -> io::Result<Vec<String>> {
    let buf = info(token, TokenPrivileges)?;
    let tp = buf.as_ptr() as *const TOKEN_PRIVILEGES;
    // SAFETY: the system wrote a TOKEN_PRIVILEGES with `PrivilegeCount` entries.
    let list = unsafe {
        std::slice::from_raw_parts(
            (&raw const (*tp).Privileges).cast::<LUID_AND_ATTRIBUTES>(),
            (*tp).PrivilegeCount as usize,
        )
    };
    let mut names = Vec::new();
    for p in list {
        let mut name = [0u16; 128];
        let mut n = name.len() as u32;
        // SAFETY: `name` holds `n` units.
        if unsafe { LookupPrivilegeNameW(null(), &p.Luid, name.as_mut_ptr(), &mut n) } != 0 {
            names.push(String::from_utf16_lossy(&name[..n as usize]));
        }
    }
    Ok(names)
}

/// Attributes of `sid` among the token's groups, if present.
fn group_attributes(token: HANDLE, sid: &Sid) -> io::Result<Option<u32>> {
    let buf = info(token, TokenGroups)?;
    let tg = buf.as_ptr() as *const TOKEN_GROUPS;
    // SAFETY: the system wrote a TOKEN_GROUPS with `GroupCount` entries.
    let groups = unsafe {
        std::slice::from_raw_parts(
            (&raw const (*tg).Groups).cast::<SID_AND_ATTRIBUTES>(),
            (*tg).GroupCount as usize,
        )
    };
    // SAFETY: both SIDs are valid.
    Ok(groups
        .iter()
        .find(|g| unsafe { EqualSid(g.Sid, sid.ptr()) } != 0)
        .map(|g| g.Attributes))
}

fn integrity_rid(token: HANDLE) -> io::Result<u32> {
    let buf = info(token, TokenIntegrityLevel)?;
    let label = buf.as_ptr() as *const TOKEN_MANDATORY_LABEL;
    // SAFETY: the label SID points into `buf`, which is alive.
    unsafe {
        let sid = (*label).Label.Sid;
        let n = *GetSidSubAuthorityCount(sid);
        Ok(*GetSidSubAuthority(sid, u32::from(n.saturating_sub(1))))
    }
}

/// Read the new token back and list what it does not hold as asked.
pub fn not_kept(token: HANDLE, t: &Token) -> Vec<Shortfall> {
    let mut out = Vec::new();
    let mut miss = |feature: &str, detail: String| {
        out.push(Shortfall {
            feature: feature.into(),
            requirement: t.requirement,
            detail,
        })
    };
    match privilege_names(token) {
        Ok(held) => {
            let kept: Vec<_> = held
                .iter()
                .filter(|h| {
                    t.delete_privileges
                        .iter()
                        .any(|d| d.eq_ignore_ascii_case(h))
                })
                .cloned()
                .collect();
            if !kept.is_empty() {
                miss(
                    "token.delete_privileges",
                    format!("still held: {}", kept.join(", ")),
                );
            }
            if t.flags.contains(&TokenFlag::DisableMaxPrivilege) {
                let extra: Vec<_> = held
                    .iter()
                    .filter(|h| *h != "SeChangeNotifyPrivilege")
                    .cloned()
                    .collect();
                if !extra.is_empty() {
                    miss(
                        "token.flags.disable_max_privilege",
                        format!("privileges still held: {}", extra.join(", ")),
                    );
                }
            }
        }
        Err(e) => miss("token.delete_privileges", format!("cannot read back: {e}")),
    }
    for name in &t.deny_only_sids {
        let r = Sid::by_name(name).and_then(|s| group_attributes(token, &s));
        match r {
            Ok(Some(a)) if a & SE_GROUP_USE_FOR_DENY_ONLY == 0 => miss(
                "token.deny_only_sids",
                format!("{name} is still usable for allow (attributes 0x{a:x})"),
            ),
            Ok(_) => {}
            Err(e) => miss(
                "token.deny_only_sids",
                format!("cannot read back {name}: {e}"),
            ),
        }
    }
    // SAFETY: valid token handle.
    if !t.restricting_sids.is_empty() && unsafe { IsTokenRestricted(token) } == 0 {
        miss(
            "token.restricting_sids",
            "the token has no restricting SIDs".into(),
        );
    }
    if let Some(level) = t.integrity {
        let want = match level {
            Integrity::Low => LOW_RID,
            Integrity::Untrusted => UNTRUSTED_RID,
        };
        match integrity_rid(token) {
            Ok(rid) if rid == want => {}
            Ok(rid) => miss(
                "token.integrity",
                format!("asked for RID 0x{want:x}, the token reports 0x{rid:x}"),
            ),
            Err(e) => miss("token.integrity", format!("cannot read back: {e}")),
        }
    }
    out
}
