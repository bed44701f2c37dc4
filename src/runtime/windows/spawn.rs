//! Start the child suspended, inside the job, with only stdio inherited.

use super::appcontainer::Container;
use super::job::Job;
use super::win::{last_error, Handle};
use std::io;
use std::mem::{size_of, size_of_val, zeroed};
use std::ptr::{null, null_mut};
use windows_sys::Win32::Foundation::{
    DuplicateHandle, GetLastError, DUPLICATE_SAME_ACCESS, HANDLE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::System::Console::{
    GetStdHandle, STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
};
use windows_sys::Win32::System::Threading::{
    CreateProcessAsUserW, CreateProcessW, DeleteProcThreadAttributeList, GetCurrentProcess,
    InitializeProcThreadAttributeList, ResumeThread, TerminateProcess, UpdateProcThreadAttribute,
    CREATE_SUSPENDED, CREATE_UNICODE_ENVIRONMENT, EXTENDED_STARTUPINFO_PRESENT,
    LPPROC_THREAD_ATTRIBUTE_LIST, PROCESS_INFORMATION, PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
    PROC_THREAD_ATTRIBUTE_JOB_LIST, PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES,
    STARTF_USESTDHANDLES, STARTUPINFOEXW,
};

pub struct Launch<'a> {
    /// NUL-terminated absolute path of the executable.
    pub program: Vec<u16>,
    /// NUL-terminated; CreateProcess may write to it.
    pub command_line: Vec<u16>,
    pub env_block: Vec<u16>,
    /// NUL-terminated.
    pub cwd: Vec<u16>,
    pub job: &'a Job,
    pub token: Option<&'a Handle>,
    pub container: Option<&'a Container>,
}

pub struct Child {
    pub process: Handle,
    /// Whether `PROC_THREAD_ATTRIBUTE_JOB_LIST` put it in the job (else
    /// it was assigned while suspended).
    pub job_list: bool,
}

/// A CreateProcess failure, with the Win32 error for exit-code mapping.
pub struct SpawnError {
    pub os_error: u32,
    pub error: io::Error,
}

struct AttrList(Vec<u64>);

impl AttrList {
    fn new(count: u32) -> io::Result<AttrList> {
        let mut size = 0usize;
        // SAFETY: a size query with a null list.
        unsafe { InitializeProcThreadAttributeList(null_mut(), count, 0, &mut size) };
        let mut buf = vec![0u64; size.div_ceil(8)];
        // SAFETY: `buf` holds `size` bytes.
        if unsafe {
            InitializeProcThreadAttributeList(buf.as_mut_ptr().cast(), count, 0, &mut size)
        } == 0
        {
            return Err(last_error("InitializeProcThreadAttributeList"));
        }
        Ok(AttrList(buf))
    }

    fn ptr(&mut self) -> LPPROC_THREAD_ATTRIBUTE_LIST {
        self.0.as_mut_ptr().cast()
    }

    /// `value` must stay alive until CreateProcess returns.
    fn set<T: ?Sized>(&mut self, attr: u32, value: &T) -> io::Result<()> {
        // SAFETY: `value` outlives the list's use (the caller keeps it).
        let ok = unsafe {
            UpdateProcThreadAttribute(
                self.ptr(),
                0,
                attr as usize,
                (value as *const T).cast(),
                size_of_val(value),
                null_mut(),
                null(),
            )
        };
        if ok == 0 {
            return Err(last_error("UpdateProcThreadAttribute"));
        }
        Ok(())
    }
}

impl Drop for AttrList {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`.
        unsafe { DeleteProcThreadAttributeList(self.ptr()) };
    }
}

/// Inheritable duplicates of sbx's standard handles (absent ones stay null).
fn stdio() -> [Option<Handle>; 3] {
    [STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE].map(|which| {
        // SAFETY: no preconditions.
        let h = unsafe { GetStdHandle(which) };
        if h.is_null() || h == INVALID_HANDLE_VALUE {
            return None;
        }
        let mut dup: HANDLE = null_mut();
        // SAFETY: duplicating within our own process.
        let ok = unsafe {
            let me = GetCurrentProcess();
            DuplicateHandle(me, h, me, &mut dup, 0, 1, DUPLICATE_SAME_ACCESS)
        };
        (ok != 0).then_some(Handle(dup))
    })
}

fn fail(what: &str) -> SpawnError {
    // SAFETY: no preconditions.
    let os_error = unsafe { GetLastError() };
    SpawnError {
        os_error,
        error: last_error(what),
    }
}

pub fn spawn(mut l: Launch) -> Result<Child, SpawnError> {
    let other = |error| SpawnError { os_error: 0, error };
    let std = stdio();
    let inherit: Vec<HANDLE> = std.iter().flatten().map(|h| h.0).collect();
    let jobs = [l.job.raw()];
    let count = 2 + u32::from(l.container.is_some());
    let mut attrs = AttrList::new(count).map_err(other)?;
    if !inherit.is_empty() {
        attrs
            .set(PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit.as_slice())
            .map_err(other)?;
    }
    // Windows 10 and later: the child is in the job from its first
    // instruction. Older systems fall back to assign-while-suspended.
    let job_list = attrs.set(PROC_THREAD_ATTRIBUTE_JOB_LIST, &jobs).is_ok();
    if let Some(c) = l.container {
        attrs
            .set(
                PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES,
                c.capabilities(),
            )
            .map_err(other)?;
    }

    // SAFETY: plain-data structs, all-zero is valid.
    let mut si: STARTUPINFOEXW = unsafe { zeroed() };
    si.StartupInfo.cb = size_of::<STARTUPINFOEXW>() as u32;
    si.lpAttributeList = attrs.ptr();
    if !inherit.is_empty() {
        si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
        let h = |i: usize| std[i].as_ref().map_or(null_mut(), |h| h.0);
        si.StartupInfo.hStdInput = h(0);
        si.StartupInfo.hStdOutput = h(1);
        si.StartupInfo.hStdError = h(2);
    }
    // SAFETY: as above.
    let mut pi: PROCESS_INFORMATION = unsafe { zeroed() };
    let flags = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT;
    let inherit_handles = i32::from(!inherit.is_empty());
    // SAFETY: every pointer is valid and NUL-terminated where required; the
    // attribute values (inherit, jobs, container) outlive the call.
    let ok = unsafe {
        match l.token {
            Some(t) => CreateProcessAsUserW(
                t.0,
                l.program.as_ptr(),
                l.command_line.as_mut_ptr(),
                null(),
                null(),
                inherit_handles,
                flags,
                l.env_block.as_ptr().cast(),
                l.cwd.as_ptr(),
                &si.StartupInfo,
                &mut pi,
            ),
            None => CreateProcessW(
                l.program.as_ptr(),
                l.command_line.as_mut_ptr(),
                null(),
                null(),
                inherit_handles,
                flags,
                l.env_block.as_ptr().cast(),
                l.cwd.as_ptr(),
                &si.StartupInfo,
                &mut pi,
            ),
        }
    };
    if ok == 0 {
        return Err(fail("CreateProcess"));
    }
    let process = Handle(pi.hProcess);
    let thread = Handle(pi.hThread);
    let kill = |error: io::Error| {
        // SAFETY: we own the suspended process.
        unsafe { TerminateProcess(process.0, 1) };
        other(error)
    };
    let in_job = l.job.contains(process.0).map_err(kill)?;
    if !in_job {
        l.job.assign(process.0).map_err(kill)?;
        if !l.job.contains(process.0).map_err(kill)? {
            return Err(kill(io::Error::other(
                "the child is not in the job after assignment",
            )));
        }
    }
    // SAFETY: the thread handle is valid.
    if unsafe { ResumeThread(thread.0) } == u32::MAX {
        return Err(kill(last_error("ResumeThread")));
    }
    Ok(Child {
        process,
        job_list: in_job && job_list,
    })
}
