//! `run`: the loader's steps in order (see the module docs).

use super::appcontainer::Container;
use super::cmdline::{command_line, env_block};
use super::job::Job;
use super::plan::{job_limits, not_kept, ui_flags, Shortfall};
use super::spawn::{spawn, Launch};
use super::win::{wide, Handle};
use super::{token, RunOptions, EXIT_WALL_TIME};
use crate::back::windows::{Requirement, Spec};
use crate::ir::{self, Enforcement};
use crate::runtime::env::EnvFilter;
use crate::runtime::expand::{expand, Values};
use crate::runtime::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SBX_FAILED};
use std::ffi::{OsStr, OsString};
use std::os::windows::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_BAD_EXE_FORMAT, ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND,
    WAIT_OBJECT_0, WAIT_TIMEOUT,
};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
use windows_sys::Win32::System::SystemInformation::{GetSystemInfo, SYSTEM_INFO};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, WaitForSingleObject};

/// Why nothing was run: the message and `sbx run`'s exit code.
struct Refused(i32, String);

fn refuse(msg: impl Into<String>) -> Refused {
    Refused(EXIT_SBX_FAILED, msg.into())
}

/// Apply `spec` to `argv` (or to the spec's own argv when empty) and run it.
/// Returns the child's exit code, or 125/126/127/137 as in CLI.md.
pub fn run(spec: &Spec, argv: &[OsString], opts: &RunOptions) -> i32 {
    match Loader::new(spec, opts).and_then(|l| l.run(argv)) {
        Ok(code) => code,
        Err(Refused(code, msg)) => {
            eprintln!("sbx: {msg}");
            code
        }
    }
}

struct Loader<'a> {
    spec: &'a Spec,
    opts: &'a RunOptions,
    values: Values,
    shortfalls: Vec<Shortfall>,
}

impl<'a> Loader<'a> {
    fn new(spec: &'a Spec, opts: &'a RunOptions) -> Result<Loader<'a>, Refused> {
        if spec.enforcement == Enforcement::Required {
            let inexact: Vec<_> = spec
                .precision
                .iter()
                // The lines `compile` refuses under `required`; lowering
                // notes (target "ir") are judged there, not here.
                .filter(|p| {
                    p.target == crate::back::windows::TARGET && p.status.is_inexact() && !p.advisory
                })
                .map(|p| format!("  {}: {:?}: {}", p.rule, p.status, p.reason))
                .collect();
            if !inexact.is_empty() {
                return Err(refuse(format!(
                    "enforcement = \"required\" but this artifact cannot be enforced exactly \
                     on Windows:\n{}",
                    inexact.join("\n")
                )));
            }
        }
        let utf8 = |p: PathBuf, what: &str| {
            p.into_os_string()
                .into_string()
                .map_err(|p| refuse(format!("the {what} {p:?} is not valid Unicode")))
        };
        let workspace = match &opts.workspace {
            Some(w) => w.clone(),
            None => std::env::current_dir()
                .map_err(|e| refuse(format!("cannot read the current directory: {e}")))?,
        };
        let home = std::env::var_os("USERPROFILE")
            .or_else(|| std::env::var_os("HOME"))
            .map(PathBuf::from)
            .unwrap_or_default();
        let values = Values {
            workspace: utf8(workspace, "workspace")?,
            home: utf8(home, "home directory")?,
            temp: utf8(std::env::temp_dir(), "temp directory")?,
        };
        Ok(Loader {
            spec,
            opts,
            values,
            shortfalls: Vec::new(),
        })
    }

    fn expand(&self, s: &str) -> Result<String, Refused> {
        let e = expand(s, &self.values).map_err(|e| refuse(e.to_string()))?;
        Ok(e.replace('/', "\\"))
    }

    /// A best-effort feature that could not be applied is a warning; a
    /// required one stops the run before anything starts.
    fn shortfall(&mut self, feature: &str, requirement: Requirement, detail: String) {
        self.shortfalls.push(Shortfall {
            feature: feature.into(),
            requirement,
            detail,
        });
    }

    fn run(mut self, argv: &[OsString]) -> Result<i32, Refused> {
        let spec = self.spec;
        let argv: Vec<OsString> = if argv.is_empty() {
            spec.program.argv.iter().map(OsString::from).collect()
        } else {
            argv.to_vec()
        };
        if argv.is_empty() {
            return Err(refuse("no command to run"));
        }

        let filter = EnvFilter::new(
            &ir::Env {
                minimal: spec.env.minimal.clone(),
                allow: spec.env.allow.clone(),
            },
            spec.env.case_insensitive,
        )
        .map_err(|e| refuse(format!("bad environment pattern: {e}")))?;
        let env: Vec<(OsString, OsString)> = filter.apply(std::env::vars_os());
        let program = match &spec.program.path {
            Some(p) => PathBuf::from(self.expand(p)?),
            None => resolve(&argv[0], &env).ok_or_else(|| {
                Refused(
                    EXIT_NOT_FOUND,
                    format!("{}: command not found", argv[0].to_string_lossy()),
                )
            })?,
        };
        let cwd = self.expand(&spec.program.cwd)?;

        let job = Job::create().map_err(|e| refuse(format!("cannot create the job: {e}")))?;
        self.apply_job(&job)?;
        let container = self.container()?;
        let token = match (&spec.token, &container) {
            (Some(t), None) => self.token(t)?,
            _ => None,
        };
        let under_wine = wine_version();
        self.check_shortfalls(under_wine.as_deref())?;
        if self.opts.report {
            self.report(
                &program,
                &env,
                token.is_some(),
                container.is_some(),
                under_wine.as_deref(),
            );
        }

        let wide_args: Vec<Vec<u16>> = argv.iter().map(|a| a.encode_wide().collect()).collect();
        let mut command_line = command_line(&wide_args).map_err(|e| refuse(e.to_string()))?;
        command_line.push(0);
        let block = env_block(
            env.iter()
                .map(|(k, v)| (k.encode_wide().collect(), v.encode_wide().collect()))
                .collect(),
        );
        let child = spawn(Launch {
            program: wide(&program),
            command_line,
            env_block: block,
            cwd: wide(&cwd),
            job: &job,
            token: token.as_ref(),
            container: container.as_ref(),
        })
        .map_err(|e| {
            let code = match e.os_error {
                ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND => EXIT_NOT_FOUND,
                ERROR_ACCESS_DENIED | ERROR_BAD_EXE_FORMAT => EXIT_NOT_EXECUTABLE,
                _ => EXIT_SBX_FAILED,
            };
            Refused(code, format!("{}: {}", program.display(), e.error))
        })?;
        if self.opts.report {
            let how = if child.job_list {
                "PROC_THREAD_ATTRIBUTE_JOB_LIST"
            } else {
                "assignment while suspended"
            };
            eprintln!("sbx: report: child placed in the job by {how}");
        }

        let wall = spec.job.wall_time_ms.as_ref().map(|l| l.value);
        let code = match wait(&child.process, wall) {
            Some(code) => code as i32,
            None => {
                let _ = job.terminate(EXIT_WALL_TIME as u32);
                eprintln!(
                    "sbx: wall time of {} ms exceeded: the process tree was killed",
                    wall.unwrap_or(0)
                );
                EXIT_WALL_TIME
            }
        };
        // Leftover grandchildren die with the run, whether or not the
        // kill-on-close flag was kept.
        let _ = job.terminate(1);
        drop(job);
        drop(container);
        Ok(code)
    }

    fn apply_job(&mut self, job: &Job) -> Result<(), Refused> {
        let spec = self.spec;
        let j = &spec.job;
        let asked = job_limits(j);
        job.set_limits(&asked)
            .map_err(|e| refuse(format!("cannot set the job limits: {e}")))?;
        match job.query_limits() {
            Ok(got) => {
                for s in not_kept(j, &asked, &got, page_size()) {
                    self.shortfalls.push(s);
                }
            }
            Err(e) => self.shortfall("job", j.requirement, format!("cannot read back: {e}")),
        }
        if let Some(ui) = &j.ui_restrictions {
            let flags = ui_flags(&ui.value);
            match job.set_ui(flags).and_then(|()| job.query_ui()) {
                Ok(got) if got & flags == flags => {}
                Ok(got) => self.shortfall(
                    "job.ui_restrictions",
                    ui.requirement,
                    format!("set 0x{flags:x}, read back 0x{got:x}"),
                ),
                Err(e) => self.shortfall("job.ui_restrictions", ui.requirement, e.to_string()),
            }
        }
        Ok(())
    }

    fn container(&mut self) -> Result<Option<Container>, Refused> {
        let spec = self.spec;
        let Some(ac) = &spec.appcontainer else {
            return Ok(None);
        };
        let mut c = match Container::open(&ac.name, &ac.capabilities) {
            Ok(c) => c,
            Err(e) => {
                let detail = format!("{e}; the network and the filesystem are not confined");
                self.shortfall("appcontainer", ac.requirement, detail);
                return Ok(None);
            }
        };
        for g in &ac.grants {
            let path = self.expand(&g.path)?;
            if let Err(e) = c.grant(g, Path::new(&path)) {
                self.shortfall(
                    "appcontainer.grants",
                    ac.requirement,
                    format!("{path} ({}): {e}", g.rule),
                );
            }
        }
        Ok(Some(c))
    }

    fn token(&mut self, t: &crate::back::windows::Token) -> Result<Option<Handle>, Refused> {
        match token::restricted(t) {
            Ok(h) => {
                for s in token::not_kept(h.0, t) {
                    self.shortfalls.push(s);
                }
                Ok(Some(h))
            }
            Err(e) => {
                self.shortfall("token", t.requirement, e.to_string());
                Ok(None)
            }
        }
    }

    fn check_shortfalls(&self, wine: Option<&str>) -> Result<(), Refused> {
        let mut required = Vec::new();
        for s in &self.shortfalls {
            let line = format!("{}: {}", s.feature, s.detail);
            match s.requirement {
                Enforcement::Required => required.push(line),
                Enforcement::BestEffort => eprintln!("sbx: warning: not kept: {line}"),
            }
        }
        if !self.shortfalls.is_empty() {
            if let Some(v) = wine {
                eprintln!(
                    "sbx: note: running under Wine {v}: it reads job limits back as zero and \
                     does not enforce process, memory or CPU limits, UI restrictions, token \
                     restrictions or AppContainer (see docs/windows.md)"
                );
            }
        }
        if required.is_empty() {
            return Ok(());
        }
        Err(refuse(format!(
            "required but not kept (nothing was run):\n  {}",
            required.join("\n  ")
        )))
    }

    fn report(
        &self,
        program: &Path,
        env: &[(OsString, OsString)],
        token: bool,
        container: bool,
        wine: Option<&str>,
    ) {
        let j = &self.spec.job;
        let names: Vec<_> = env.iter().map(|(k, _)| k.to_string_lossy()).collect();
        eprintln!("sbx: report: program {}", program.display());
        eprintln!("sbx: report: environment: {}", names.join(" "));
        eprintln!(
            "sbx: report: job LimitFlags 0x{:x}, kill on close, breakaway {:?}",
            job_limits(j).flags,
            j.breakaway
        );
        if let Some(w) = &j.wall_time_ms {
            eprintln!("sbx: report: wall time {} ms (loader)", w.value);
        }
        eprintln!(
            "sbx: report: token: {}",
            if container {
                "AppContainer"
            } else if token {
                "restricted"
            } else {
                "unchanged"
            }
        );
        for p in &self.spec.precision {
            eprintln!("sbx: report: {} {:?}: {}", p.rule, p.status, p.reason);
        }
        if let Some(v) = wine {
            eprintln!("sbx: report: Wine {v}: see docs/windows.md for what it does not enforce");
        }
    }
}

/// Wait for the child; `None` when the wall time ran out first.
fn wait(process: &Handle, wall_ms: Option<u64>) -> Option<u32> {
    let deadline = wall_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
    loop {
        let ms = match deadline {
            None => u32::MAX, // INFINITE
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now()).as_millis();
                left.min(u128::from(u32::MAX - 1)) as u32
            }
        };
        // SAFETY: valid process handle.
        match unsafe { WaitForSingleObject(process.0, ms) } {
            WAIT_OBJECT_0 => break,
            WAIT_TIMEOUT if deadline.is_some_and(|d| Instant::now() >= d) => return None,
            WAIT_TIMEOUT => continue,
            _ => break,
        }
    }
    let mut code = 0u32;
    // SAFETY: valid process handle; `code` is written.
    unsafe { GetExitCodeProcess(process.0, &mut code) };
    Some(code)
}

/// Find `name` the way a shell would, in the child's own PATH: a name with
/// a directory part is used as is; otherwise each PATH entry is tried with
/// the name and the name plus each PATHEXT extension. The current directory
/// is not searched.
fn resolve(name: &OsStr, env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.components().count() > 1 || p.is_absolute() {
        return Some(p.to_path_buf());
    }
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n.to_string_lossy().eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    let exts = get("PATHEXT").unwrap_or_else(|| ".COM;.EXE".into());
    let exts: Vec<String> = exts
        .to_string_lossy()
        .split(';')
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect();
    let has_ext = p.extension().is_some();
    for dir in std::env::split_paths(&get("PATH")?) {
        if has_ext && dir.join(p).is_file() {
            return Some(dir.join(p));
        }
        for e in &exts {
            let mut f = name.to_os_string();
            f.push(e);
            let c = dir.join(f);
            if c.is_file() {
                return Some(c);
            }
        }
    }
    None
}

fn page_size() -> u64 {
    // SAFETY: plain-data struct; GetSystemInfo fills it.
    let mut si: SYSTEM_INFO = unsafe { std::mem::zeroed() };
    unsafe { GetSystemInfo(&mut si) };
    u64::from(si.dwPageSize.max(1))
}

/// `Some(version)` when running under Wine (ntdll exports wine_get_version).
fn wine_version() -> Option<String> {
    let ntdll = wide("ntdll.dll");
    // SAFETY: ntdll is always loaded; the export, if present, returns a
    // static NUL-terminated string.
    unsafe {
        let m = GetModuleHandleW(ntdll.as_ptr());
        if m.is_null() {
            return None;
        }
        let f = GetProcAddress(m, c"wine_get_version".as_ptr().cast())?;
        type Farproc = unsafe extern "system" fn() -> isize;
        type GetVersion = unsafe extern "C" fn() -> *const std::ffi::c_char;
        let f = std::mem::transmute::<Farproc, GetVersion>(f);
        Some(std::ffi::CStr::from_ptr(f()).to_string_lossy().into_owned())
    }
}
