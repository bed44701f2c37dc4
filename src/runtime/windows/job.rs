//! The job object: created non-inheritable, limits set then read back.

use super::plan::JobLimits;
use super::win::{last_error, Handle};
use std::io;
use std::mem::{size_of, zeroed};
use std::ptr::null;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, IsProcessInJob, JobObjectBasicUIRestrictions,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_UI_RESTRICTIONS, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
};

pub struct Job(Handle);

impl Job {
    /// No security attributes: the handle is not inheritable, so no child
    /// can hold the job open and defeat kill-on-close.
    pub fn create() -> io::Result<Job> {
        // SAFETY: both pointers may be null.
        let h = unsafe { CreateJobObjectW(null(), null()) };
        if h.is_null() {
            return Err(last_error("CreateJobObjectW"));
        }
        Ok(Job(Handle(h)))
    }

    pub fn raw(&self) -> HANDLE {
        self.0 .0
    }

    pub fn set_limits(&self, l: &JobLimits) -> io::Result<()> {
        // SAFETY: plain-data struct, all-zero is valid.
        let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
        info.BasicLimitInformation.LimitFlags = l.flags;
        info.BasicLimitInformation.ActiveProcessLimit = l.active_processes;
        info.BasicLimitInformation.PerProcessUserTimeLimit = l.process_time as i64;
        info.ProcessMemoryLimit = l.process_memory as usize;
        info.JobMemoryLimit = l.job_memory as usize;
        // SAFETY: `info` lives across the call and the size matches the class.
        let ok = unsafe {
            SetInformationJobObject(
                self.raw(),
                JobObjectExtendedLimitInformation,
                (&raw const info).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(last_error(
                "SetInformationJobObject(ExtendedLimitInformation)",
            ));
        }
        Ok(())
    }

    pub fn query_limits(&self) -> io::Result<JobLimits> {
        // SAFETY: plain-data struct, all-zero is valid.
        let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
        // SAFETY: the buffer is as large as the size passed.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectExtendedLimitInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(last_error(
                "QueryInformationJobObject(ExtendedLimitInformation)",
            ));
        }
        let b = &info.BasicLimitInformation;
        Ok(JobLimits {
            flags: b.LimitFlags,
            active_processes: b.ActiveProcessLimit,
            process_memory: info.ProcessMemoryLimit as u64,
            job_memory: info.JobMemoryLimit as u64,
            process_time: b.PerProcessUserTimeLimit.max(0) as u64,
        })
    }

    pub fn set_ui(&self, flags: u32) -> io::Result<()> {
        let info = JOBOBJECT_BASIC_UI_RESTRICTIONS {
            UIRestrictionsClass: flags,
        };
        // SAFETY: as in set_limits.
        let ok = unsafe {
            SetInformationJobObject(
                self.raw(),
                JobObjectBasicUIRestrictions,
                (&raw const info).cast(),
                size_of::<JOBOBJECT_BASIC_UI_RESTRICTIONS>() as u32,
            )
        };
        if ok == 0 {
            return Err(last_error("SetInformationJobObject(BasicUIRestrictions)"));
        }
        Ok(())
    }

    pub fn query_ui(&self) -> io::Result<u32> {
        let mut info = JOBOBJECT_BASIC_UI_RESTRICTIONS {
            UIRestrictionsClass: 0,
        };
        // SAFETY: as in query_limits.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicUIRestrictions,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_UI_RESTRICTIONS>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(last_error("QueryInformationJobObject(BasicUIRestrictions)"));
        }
        Ok(info.UIRestrictionsClass)
    }

    pub fn assign(&self, process: HANDLE) -> io::Result<()> {
        // SAFETY: both handles are valid for the call.
        if unsafe { AssignProcessToJobObject(self.raw(), process) } == 0 {
            return Err(last_error("AssignProcessToJobObject"));
        }
        Ok(())
    }

    pub fn contains(&self, process: HANDLE) -> io::Result<bool> {
        let mut r = 0;
        // SAFETY: both handles are valid; `r` is written.
        if unsafe { IsProcessInJob(process, self.raw(), &mut r) } == 0 {
            return Err(last_error("IsProcessInJob"));
        }
        Ok(r != 0)
    }

    /// Kill every process in the job.
    pub fn terminate(&self, code: u32) -> io::Result<()> {
        // SAFETY: valid job handle.
        if unsafe { TerminateJobObject(self.raw(), code) } == 0 {
            return Err(last_error("TerminateJobObject"));
        }
        Ok(())
    }
}
