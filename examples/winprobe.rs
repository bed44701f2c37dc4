//! Test helper for the Windows loader (run under Wine or on Windows): it
//! reports what the sandbox did to it. Not part of sbx itself.
//!
//! winprobe injob                  print in_job=1|0
//! winprobe env                    print the environment, one NAME=VALUE a line
//! winprobe exit N                 exit with code N
//! winprobe tree DIR DEPTH         write DIR/<pid>.injob (1|0), start a child with DEPTH-1, wait
//! winprobe sleep DIR SECS         write DIR/<pid>.started, sleep, write DIR/<pid>.done
//! winprobe hold DIR SECS N        start N `sleep` children, then `sleep` itself
//! winprobe linger DIR SECS        start one `sleep` child, exit 0 once it has started
//! winprobe alloc MIB              commit MIB MiB; print alloc=ok|failed
//! winprobe spawn N                start N children that sleep 3 s; print spawned=K
//! winprobe privs                  print each privilege the token holds

#[cfg(not(windows))]
fn main() {
    eprintln!("winprobe runs on Windows (or Wine) only");
    std::process::exit(2);
}

#[cfg(windows)]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let code = match a.as_slice() {
        ["injob"] => {
            println!("in_job={}", u8::from(win::in_job()));
            0
        }
        ["env"] => {
            let mut v: Vec<_> = std::env::vars_os().collect();
            v.sort();
            for (k, val) in v {
                println!("{}={}", k.to_string_lossy(), val.to_string_lossy());
            }
            0
        }
        ["exit", n] => n.parse().expect("exit code"),
        ["tree", dir, depth] => {
            mark(dir, "injob", if win::in_job() { "1" } else { "0" });
            let d: u32 = depth.parse().expect("depth");
            if d > 0 {
                let status = me().args(["tree", dir, &(d - 1).to_string()]).status();
                status.expect("start child").code().unwrap_or(1)
            } else {
                0
            }
        }
        ["sleep", dir, secs] => {
            sleep_marked(dir, secs);
            0
        }
        ["hold", dir, secs, n] => {
            let kids: Vec<_> = (0..n.parse::<u32>().expect("count"))
                .map(|_| {
                    me().args(["sleep", dir, secs])
                        .spawn()
                        .expect("start child")
                })
                .collect();
            sleep_marked(dir, secs);
            for mut k in kids {
                let _ = k.wait();
            }
            0
        }
        ["linger", dir, secs] => {
            // Left running on purpose: the sandbox must kill it. Exit only
            // once it is really running.
            #[allow(clippy::zombie_processes)]
            let child = me()
                .args(["sleep", dir, secs])
                .spawn()
                .expect("start child");
            let marker = std::path::Path::new(dir).join(format!("{}.started", child.id()));
            for _ in 0..200 {
                if marker.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            0
        }
        ["alloc", mib] => {
            let ok = win::commit(mib.parse::<usize>().expect("MiB") << 20);
            println!("alloc={}", if ok { "ok" } else { "failed" });
            0
        }
        ["spawn", n] => {
            let mut kids = Vec::new();
            for _ in 0..n.parse::<u32>().expect("count") {
                if let Ok(c) = me().args(["sleep", "-", "3"]).spawn() {
                    kids.push(c);
                }
            }
            println!("spawned={}", kids.len());
            for mut k in kids {
                let _ = k.wait();
            }
            0
        }
        ["privs"] => {
            for p in win::privileges() {
                println!("{p}");
            }
            0
        }
        _ => {
            eprintln!("winprobe: unknown command {a:?}");
            2
        }
    };
    std::process::exit(code);
}

#[cfg(windows)]
fn me() -> std::process::Command {
    std::process::Command::new(std::env::current_exe().expect("own path"))
}

/// `dir` "-" means no marker files.
#[cfg(windows)]
fn mark(dir: &str, what: &str, content: &str) {
    if dir != "-" {
        let f = std::path::Path::new(dir).join(format!("{}.{what}", std::process::id()));
        std::fs::write(f, content).expect("write marker");
    }
}

#[cfg(windows)]
fn sleep_marked(dir: &str, secs: &str) {
    mark(dir, "started", "");
    std::thread::sleep(std::time::Duration::from_secs(
        secs.parse().expect("seconds"),
    ));
    mark(dir, "done", "");
}

#[cfg(windows)]
mod win {
    use std::ptr::{null, null_mut};
    use windows_sys::Win32::Security::{
        GetTokenInformation, LookupPrivilegeNameW, TokenPrivileges, LUID_AND_ATTRIBUTES,
        TOKEN_PRIVILEGES, TOKEN_QUERY,
    };
    use windows_sys::Win32::System::JobObjects::IsProcessInJob;
    use windows_sys::Win32::System::Memory::{
        VirtualAlloc, MEM_COMMIT, MEM_RESERVE, PAGE_READWRITE,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    pub fn in_job() -> bool {
        let mut r = 0;
        // SAFETY: a null job handle asks about any job; `r` is written.
        let ok = unsafe { IsProcessInJob(GetCurrentProcess(), null_mut(), &mut r) };
        ok != 0 && r != 0
    }

    /// Commit (and touch) `bytes`; false when the system refuses.
    pub fn commit(bytes: usize) -> bool {
        // SAFETY: a fresh private allocation.
        let p = unsafe { VirtualAlloc(null(), bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE) };
        if p.is_null() {
            return false;
        }
        // SAFETY: `p` holds `bytes` committed bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 1, bytes) };
        true
    }

    pub fn privileges() -> Vec<String> {
        let mut tok = null_mut();
        // SAFETY: our own process token, query only.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut tok) } == 0 {
            return vec!["<cannot open token>".into()];
        }
        let mut len = 0u32;
        // SAFETY: a size query, then a read into a large-enough aligned buffer.
        unsafe { GetTokenInformation(tok, TokenPrivileges, null_mut(), 0, &mut len) };
        let mut buf = vec![0u64; (len as usize).div_ceil(8)];
        let ok = unsafe {
            GetTokenInformation(tok, TokenPrivileges, buf.as_mut_ptr().cast(), len, &mut len)
        };
        if ok == 0 {
            return vec!["<cannot read privileges>".into()];
        }
        let tp = buf.as_ptr() as *const TOKEN_PRIVILEGES;
        // SAFETY: the system wrote `PrivilegeCount` entries.
        let list = unsafe {
            std::slice::from_raw_parts(
                (&raw const (*tp).Privileges).cast::<LUID_AND_ATTRIBUTES>(),
                (*tp).PrivilegeCount as usize,
            )
        };
        list.iter()
            .map(|p| {
                let mut name = [0u16; 128];
                let mut n = name.len() as u32;
                // SAFETY: `name` holds `n` units.
                let ok =
                    unsafe { LookupPrivilegeNameW(null(), &p.Luid, name.as_mut_ptr(), &mut n) };
                if ok == 0 {
                    "<unknown>".into()
                } else {
                    String::from_utf16_lossy(&name[..n as usize])
                }
            })
            .collect()
    }
}
