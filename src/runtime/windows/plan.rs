//! What the loader asks of Windows, as plain numbers, and the comparison
//! with what Windows reports back. Pure, so it is tested on every host.

use crate::back::windows::{Breakaway, Job, Requirement, UiRestriction};
use crate::ir::Access;

// Values from winnt.h; checked against windows-sys at compile time below.
pub const LIMIT_ACTIVE_PROCESS: u32 = 0x8;
pub const LIMIT_PROCESS_TIME: u32 = 0x2;
pub const LIMIT_PROCESS_MEMORY: u32 = 0x100;
pub const LIMIT_JOB_MEMORY: u32 = 0x200;
pub const LIMIT_DIE_ON_UNHANDLED_EXCEPTION: u32 = 0x400;
pub const LIMIT_BREAKAWAY_OK: u32 = 0x800;
pub const LIMIT_SILENT_BREAKAWAY_OK: u32 = 0x1000;
pub const LIMIT_KILL_ON_JOB_CLOSE: u32 = 0x2000;

pub const UI_HANDLES: u32 = 0x1;
pub const UI_READCLIPBOARD: u32 = 0x2;
pub const UI_WRITECLIPBOARD: u32 = 0x4;
pub const UI_SYSTEMPARAMETERS: u32 = 0x8;
pub const UI_DISPLAYSETTINGS: u32 = 0x10;
pub const UI_GLOBALATOMS: u32 = 0x20;
pub const UI_DESKTOP: u32 = 0x40;
pub const UI_EXITWINDOWS: u32 = 0x80;

// File rights for AppContainer ACL grants (winnt.h).
const FILE_GENERIC_READ: u32 = 0x0012_0089;
const FILE_GENERIC_EXECUTE: u32 = 0x0012_00A0;
/// FILE_ADD_FILE | FILE_ADD_SUBDIRECTORY (same bits as write/append data).
const FILE_CREATE: u32 = 0x2 | 0x4;
/// FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA | FILE_WRITE_ATTRIBUTES.
const FILE_UPDATE: u32 = 0x2 | 0x4 | 0x10 | 0x100;
/// DELETE | FILE_DELETE_CHILD.
const FILE_DELETE: u32 = 0x0001_0000 | 0x40;

#[cfg(windows)]
const _: () = {
    use windows_sys::Win32::Storage::FileSystem as fs;
    use windows_sys::Win32::System::JobObjects as j;
    assert!(LIMIT_ACTIVE_PROCESS == j::JOB_OBJECT_LIMIT_ACTIVE_PROCESS);
    assert!(LIMIT_PROCESS_TIME == j::JOB_OBJECT_LIMIT_PROCESS_TIME);
    assert!(LIMIT_PROCESS_MEMORY == j::JOB_OBJECT_LIMIT_PROCESS_MEMORY);
    assert!(LIMIT_JOB_MEMORY == j::JOB_OBJECT_LIMIT_JOB_MEMORY);
    assert!(LIMIT_DIE_ON_UNHANDLED_EXCEPTION == j::JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION);
    assert!(LIMIT_BREAKAWAY_OK == j::JOB_OBJECT_LIMIT_BREAKAWAY_OK);
    assert!(LIMIT_SILENT_BREAKAWAY_OK == j::JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK);
    assert!(LIMIT_KILL_ON_JOB_CLOSE == j::JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE);
    assert!(UI_HANDLES == j::JOB_OBJECT_UILIMIT_HANDLES);
    assert!(UI_READCLIPBOARD == j::JOB_OBJECT_UILIMIT_READCLIPBOARD);
    assert!(UI_WRITECLIPBOARD == j::JOB_OBJECT_UILIMIT_WRITECLIPBOARD);
    assert!(UI_SYSTEMPARAMETERS == j::JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS);
    assert!(UI_DISPLAYSETTINGS == j::JOB_OBJECT_UILIMIT_DISPLAYSETTINGS);
    assert!(UI_GLOBALATOMS == j::JOB_OBJECT_UILIMIT_GLOBALATOMS);
    assert!(UI_DESKTOP == j::JOB_OBJECT_UILIMIT_DESKTOP);
    assert!(UI_EXITWINDOWS == j::JOB_OBJECT_UILIMIT_EXITWINDOWS);
    assert!(FILE_GENERIC_READ == fs::FILE_GENERIC_READ);
    assert!(FILE_GENERIC_EXECUTE == fs::FILE_GENERIC_EXECUTE);
    assert!(FILE_CREATE == fs::FILE_ADD_FILE | fs::FILE_ADD_SUBDIRECTORY);
    assert!(
        FILE_UPDATE
            == fs::FILE_WRITE_DATA
                | fs::FILE_APPEND_DATA
                | fs::FILE_WRITE_EA
                | fs::FILE_WRITE_ATTRIBUTES
    );
    assert!(FILE_DELETE == fs::DELETE | fs::FILE_DELETE_CHILD);
};

/// The extended-limit fields sbx sets (and reads back).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobLimits {
    pub flags: u32,
    pub active_processes: u32,
    pub process_memory: u64,
    pub job_memory: u64,
    /// 100 ns units.
    pub process_time: u64,
}

pub fn job_limits(job: &Job) -> JobLimits {
    let mut l = JobLimits::default();
    if job.kill_on_job_close {
        l.flags |= LIMIT_KILL_ON_JOB_CLOSE;
    }
    if job.die_on_unhandled_exception {
        l.flags |= LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    }
    l.flags |= match job.breakaway {
        Breakaway::Deny => 0,
        Breakaway::Allow => LIMIT_BREAKAWAY_OK,
        Breakaway::Silent => LIMIT_SILENT_BREAKAWAY_OK,
    };
    if let Some(a) = &job.active_process_limit {
        l.flags |= LIMIT_ACTIVE_PROCESS;
        l.active_processes = a.value;
    }
    if let Some(m) = &job.process_memory_limit_bytes {
        l.flags |= LIMIT_PROCESS_MEMORY;
        l.process_memory = m.value;
    }
    if let Some(m) = &job.job_memory_limit_bytes {
        l.flags |= LIMIT_JOB_MEMORY;
        l.job_memory = m.value;
    }
    if let Some(t) = &job.per_process_user_time_100ns {
        l.flags |= LIMIT_PROCESS_TIME;
        l.process_time = t.value;
    }
    l
}

pub fn ui_flags(list: &[UiRestriction]) -> u32 {
    list.iter()
        .map(|u| match u {
            UiRestriction::Handles => UI_HANDLES,
            UiRestriction::ReadClipboard => UI_READCLIPBOARD,
            UiRestriction::WriteClipboard => UI_WRITECLIPBOARD,
            UiRestriction::SystemParameters => UI_SYSTEMPARAMETERS,
            UiRestriction::DisplaySettings => UI_DISPLAYSETTINGS,
            UiRestriction::GlobalAtoms => UI_GLOBALATOMS,
            UiRestriction::Desktop => UI_DESKTOP,
            UiRestriction::ExitWindows => UI_EXITWINDOWS,
        })
        .fold(0, |a, b| a | b)
}

/// Something asked for that the system did not keep (or could not confirm).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortfall {
    /// The spec member, e.g. `job.active_process_limit`.
    pub feature: String,
    pub requirement: Requirement,
    pub detail: String,
}

/// Compare the limits set with the limits read back. Memory limits are kept
/// in pages, so they are compared after rounding down to `page` bytes.
pub fn not_kept(job: &Job, asked: &JobLimits, got: &JobLimits, page: u64) -> Vec<Shortfall> {
    let mut out = Vec::new();
    let mut miss = |feature: &str, requirement, detail: String| {
        out.push(Shortfall {
            feature: feature.into(),
            requirement,
            detail,
        })
    };
    let flag_lost = |f: u32| asked.flags & f != 0 && got.flags & f == 0;
    let flag_detail = |f: u32| {
        format!(
            "LimitFlags bit 0x{f:x} missing (set 0x{:x}, read back 0x{:x})",
            asked.flags, got.flags
        )
    };
    for (f, name) in [
        (LIMIT_KILL_ON_JOB_CLOSE, "job.kill_on_job_close"),
        (
            LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
            "job.die_on_unhandled_exception",
        ),
        (LIMIT_BREAKAWAY_OK, "job.breakaway"),
        (LIMIT_SILENT_BREAKAWAY_OK, "job.breakaway"),
    ] {
        if flag_lost(f) {
            miss(name, job.requirement, flag_detail(f));
        }
    }
    // Breakaway bits that appear without being asked for widen the job.
    let extra = got.flags & !asked.flags & (LIMIT_BREAKAWAY_OK | LIMIT_SILENT_BREAKAWAY_OK);
    if extra != 0 {
        miss(
            "job.breakaway",
            job.requirement,
            format!("unrequested breakaway bits 0x{extra:x} are set"),
        );
    }
    let round = |b: u64| b / page * page;
    if let Some(a) = &job.active_process_limit {
        if flag_lost(LIMIT_ACTIVE_PROCESS) || got.active_processes != asked.active_processes {
            miss(
                "job.active_process_limit",
                a.requirement,
                format!(
                    "set {}, read back {} (flags 0x{:x})",
                    asked.active_processes, got.active_processes, got.flags
                ),
            );
        }
    }
    if let Some(m) = &job.process_memory_limit_bytes {
        if flag_lost(LIMIT_PROCESS_MEMORY)
            || round(got.process_memory) != round(asked.process_memory)
        {
            miss(
                "job.process_memory_limit_bytes",
                m.requirement,
                format!(
                    "set {} bytes, read back {} (flags 0x{:x})",
                    asked.process_memory, got.process_memory, got.flags
                ),
            );
        }
    }
    if let Some(m) = &job.job_memory_limit_bytes {
        if flag_lost(LIMIT_JOB_MEMORY) || round(got.job_memory) != round(asked.job_memory) {
            miss(
                "job.job_memory_limit_bytes",
                m.requirement,
                format!(
                    "set {} bytes, read back {} (flags 0x{:x})",
                    asked.job_memory, got.job_memory, got.flags
                ),
            );
        }
    }
    if let Some(t) = &job.per_process_user_time_100ns {
        if flag_lost(LIMIT_PROCESS_TIME) || got.process_time != asked.process_time {
            miss(
                "job.per_process_user_time_100ns",
                t.requirement,
                format!(
                    "set {}, read back {} (flags 0x{:x})",
                    asked.process_time, got.process_time, got.flags
                ),
            );
        }
    }
    out
}

/// The NTFS rights an ACL grant stands for.
pub fn file_rights(a: Access) -> u32 {
    let mut m = 0;
    if a.read {
        m |= FILE_GENERIC_READ;
    }
    if a.execute {
        m |= FILE_GENERIC_EXECUTE;
    }
    if a.create {
        m |= FILE_CREATE;
    }
    if a.update {
        m |= FILE_UPDATE;
    }
    if a.delete {
        m |= FILE_DELETE;
    }
    m
}

/// The deny mask of a grant: never a bit its own allow mask needs (rights
/// share bits, e.g. SYNCHRONIZE in both read and execute).
pub fn deny_rights(allow: Access, deny: Access) -> u32 {
    file_rights(deny) & !file_rights(allow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::windows::Limit;
    use crate::ir::Enforcement;

    fn job() -> Job {
        let lim = |value| Limit {
            value,
            requirement: Enforcement::Required,
        };
        Job {
            requirement: Enforcement::BestEffort,
            kill_on_job_close: true,
            die_on_unhandled_exception: true,
            breakaway: Breakaway::Deny,
            active_process_limit: Some(Limit {
                value: 3,
                requirement: Enforcement::BestEffort,
            }),
            process_memory_limit_bytes: Some(lim(64 << 20)),
            job_memory_limit_bytes: None,
            per_process_user_time_100ns: Some(lim(10_000_000)),
            wall_time_ms: None,
            ui_restrictions: None,
        }
    }

    #[test]
    fn flags_and_values() {
        let l = job_limits(&job());
        assert_eq!(
            l.flags,
            LIMIT_KILL_ON_JOB_CLOSE
                | LIMIT_DIE_ON_UNHANDLED_EXCEPTION
                | LIMIT_ACTIVE_PROCESS
                | LIMIT_PROCESS_MEMORY
                | LIMIT_PROCESS_TIME
        );
        assert_eq!(l.active_processes, 3);
        assert_eq!(l.process_memory, 64 << 20);
        assert_eq!(
            ui_flags(&[UiRestriction::Handles, UiRestriction::Desktop]),
            0x41
        );
    }

    #[test]
    fn all_kept_reports_nothing() {
        let j = job();
        let l = job_limits(&j);
        // Windows keeps memory in pages: a rounded read-back is still kept.
        let mut got = l;
        got.process_memory = l.process_memory + 100;
        assert!(not_kept(&j, &l, &got, 4096).is_empty());
    }

    #[test]
    fn zeroed_read_back_names_every_feature_with_its_requirement() {
        // What Wine 8 returns: success and all zeros.
        let j = job();
        let l = job_limits(&j);
        let s = not_kept(&j, &l, &JobLimits::default(), 4096);
        let names: Vec<_> = s.iter().map(|s| s.feature.as_str()).collect();
        assert_eq!(
            names,
            [
                "job.kill_on_job_close",
                "job.die_on_unhandled_exception",
                "job.active_process_limit",
                "job.process_memory_limit_bytes",
                "job.per_process_user_time_100ns"
            ]
        );
        assert_eq!(s[2].requirement, Enforcement::BestEffort);
        assert_eq!(s[3].requirement, Enforcement::Required);
    }

    #[test]
    fn changed_value_and_unrequested_breakaway_are_reported() {
        let j = job();
        let l = job_limits(&j);
        let mut got = l;
        got.active_processes = 4;
        got.flags |= LIMIT_SILENT_BREAKAWAY_OK;
        let names: Vec<_> = not_kept(&j, &l, &got, 4096)
            .into_iter()
            .map(|s| s.feature)
            .collect();
        assert_eq!(names, ["job.breakaway", "job.active_process_limit"]);
    }

    #[test]
    fn deny_never_removes_an_allowed_bit() {
        let d = deny_rights(Access::READ, Access::READ_WRITE.minus(Access::READ));
        assert_eq!(d & file_rights(Access::READ), 0);
        assert_ne!(d & FILE_DELETE, 0);
        // create and update share the data bits: denying create to a rule
        // that may update denies nothing of update.
        let upd = Access {
            update: true,
            ..Access::NONE
        };
        let cre = Access {
            create: true,
            ..Access::NONE
        };
        assert_eq!(deny_rights(upd, cre), 0);
    }
}
