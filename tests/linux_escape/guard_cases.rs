//! Issue #35, a killed sbx: the after-run work happens whether or not
//! sbx survives the run. The command plants an `.envrc` and a nested
//! repository whose config has a `core.fsmonitor`, ignores SIGTERM, and
//! keeps running; the harness then kills sbx the way a caller's timeout
//! does (SIGKILL to sbx, or to its whole process group). The guardian
//! finishes the work; with the guardian killed too, `sbx sweep` or the
//! next `sbx run` does. Real git outside is the oracle, and each case
//! first shows that the plant was made (and, where nothing finishes the
//! work, that it would run).

use crate::fixture::{check, sbx_bin, Fx};
use crate::protect_cases::{fsmonitor, git, git_repo};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How the harness ends the run.
#[derive(Clone, Copy)]
enum Kill {
    /// SIGKILL to sbx alone (`timeout -k`, Python's `subprocess.run`).
    Sbx,
    /// SIGKILL to sbx's process group (a harness's group kill).
    Group,
    /// The guardian first, then sbx: the journal is all that is left.
    Both,
    /// SIGKILL to sbx in a run without a journal (its directory cannot
    /// be made): the guardian has no entry to hand over, and is a fork
    /// of sbx that does the work itself.
    SbxNoJournal,
}

/// A command that plants, says so by creating `ready`, and keeps
/// running through SIGTERM.
fn plant(mark: &str) -> String {
    format!(
        "trap '' TERM HUP INT; echo 'touch {mark}' > .envrc && git init -q sub && {} >> \
         sub/.git/config && : > ready && exec sleep 47",
        fsmonitor(mark)
    )
}

fn start(fx: &Fx, script: &str, journal: bool) -> Child {
    let err = std::fs::File::create(fx.root.join("sbx.err")).unwrap();
    if !journal {
        // A file where the journal's directory would be: no entry can
        // be written (the rest of sbx's state directory is usable).
        use std::os::unix::fs::DirBuilderExt;
        let state = fx.root.join("home/.local/state/sbx");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&state)
            .unwrap();
        std::fs::write(state.join("runs"), "").unwrap();
    }
    sbx_sh(fx, &fx.default_policy(), script)
        .stdout(Stdio::null())
        .stderr(err)
        .process_group(0)
        .spawn()
        .unwrap()
}

/// `sbx run POLICY -- /bin/sh -c SCRIPT` in the workspace, with a clean
/// environment (home in the fixture) and no standard input.
fn sbx_sh(fx: &Fx, policy: &Path, script: &str) -> Command {
    sbx_sh_in(fx, &fx.ws, policy, script)
}

/// [`sbx_sh`] in the workspace `ws`.
fn sbx_sh_in(fx: &Fx, ws: &Path, policy: &Path, script: &str) -> Command {
    let mut c = Command::new(sbx_bin());
    c.arg("run")
        .arg(policy)
        .arg("--workspace")
        .arg(ws)
        .args(["--", "/bin/sh", "-c", script])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", fx.root.join("home"))
        .env("LANG", "C.UTF-8")
        .current_dir(ws)
        .stdin(Stdio::null());
    c
}

/// Wait (at most `secs`) until `done` holds.
fn until(secs: u64, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// sbx's child that leads a session of its own: the guardian.
fn guardian_of(pid: u32) -> Option<i32> {
    let mut kids = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        kids.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    kids.into_iter().find(|k| {
        let stat = std::fs::read_to_string(format!("/proc/{k}/stat")).unwrap_or_default();
        // Fields after the command's name: state, ppid, pgrp, session.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        rest.split_whitespace().nth(3) == Some(&k.to_string())
    })
}

/// A process of the run is still alive (the `sleep 47` it ends in).
fn run_alive() -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == b"sleep\x0047\x00"))
}

/// No entry is left: every slot free (its first byte not the `{` of an
/// entry) and no file of an earlier version's form.
fn journal_empty(fx: &Fx) -> bool {
    let runs = fx.root.join("home/.local/state/sbx/runs");
    std::fs::read_dir(runs).map_or(true, |d| {
        d.flatten().all(|e| {
            let p = e.path();
            match p.extension().and_then(|x| x.to_str()) {
                Some("json") => false,
                Some("slot") => std::fs::read(&p).is_ok_and(|t| t.first() != Some(&b'{')),
                _ => true,
            }
        })
    })
}

fn killed(fx: &Fx, how: Kill, then: Option<&[&str]>) -> Result<(), String> {
    let mark = fx.path("fsmonitor-ran");
    let journal = !matches!(how, Kill::SbxNoJournal);
    // Temp directories changed last before the run are another run's whose
    // sbx had the same pid (pids are reused; killed runs without a journal
    // leave theirs). By ctime: a parked directory renamed into use keeps
    // its old mtime.
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 1;
    let mut sbx = start(fx, &plant(&mark), journal);
    let ready = fx.ws.join("ready");
    let err = || std::fs::read_to_string(fx.root.join("sbx.err")).unwrap_or_default();
    if !until(30, || ready.exists()) {
        let _ = sbx.kill();
        let _ = sbx.wait();
        return Err(format!("the command never got ready: {}", err()));
    }
    // The control: the plant is in place, and would run.
    let config = fx.ws.join("sub/.git/config");
    let pid = sbx.id();
    let guardian = guardian_of(pid);
    let planted = config.exists() && fx.ws.join(".envrc").exists();
    if !planted || (guardian.is_none() && matches!(how, Kill::Both)) {
        let _ = sbx.kill();
        let _ = sbx.wait();
        return Err(format!(
            "control: planted {planted}, guardian {guardian:?}: {}",
            err()
        ));
    }
    // SAFETY: signals to processes this case started.
    unsafe {
        match how {
            Kill::Sbx | Kill::SbxNoJournal => libc::kill(pid as i32, libc::SIGKILL),
            Kill::Group => libc::kill(-(pid as i32), libc::SIGKILL),
            Kill::Both => {
                libc::kill(guardian.unwrap_or(0), libc::SIGKILL);
                libc::kill(pid as i32, libc::SIGKILL)
            }
        };
    }
    let _ = sbx.wait();
    // The control of the case without a journal: sbx said it had none.
    check(journal || err().contains("after-run journal"), || {
        format!("control: the run had its journal: {}", err())
    })?;
    check(until(10, || !run_alive()), || {
        "the run's processes outlived the killed sbx".into()
    })?;
    if let Some(args) = then {
        // Nothing finished the work: the plant is still there.
        std::thread::sleep(Duration::from_millis(300));
        check(config.exists() && fx.ws.join(".envrc").exists(), || {
            format!("control: the plant went without a sweep: {}", err())
        })?;
        let out = fx.sbx(
            &args
                .iter()
                .map(|a| a.replace("POLICY", fx.default_policy().to_str().unwrap()))
                .map(Into::into)
                .collect::<Vec<std::ffi::OsString>>(),
            None,
        );
        check(out.code == 0, || format!("{args:?}: {out:?}"))?;
        check(
            out.stderr.contains("ended without its after-run work")
                && out.stderr.contains(".envrc.sbx-blocked"),
            || format!("{args:?} did not say what it finished: {}", out.stderr),
        )?;
    }
    plant_finished(fx, "kill", err)?;
    check(
        fx.ws.join(".envrc.sbx-blocked").exists()
            && fx.ws.join("sub/.git/config.sbx-blocked").exists(),
        || "moved, but not aside".into(),
    )?;
    // The run's private temp directory went too. The work parks it
    // after moving the plants aside, so it may still be there when they
    // are gone; without a journal nothing else says the work is done.
    let prefix = format!("sbx-run-{pid}-");
    let leaked = || -> Vec<String> {
        ["/var/tmp", "/tmp"]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
            .filter(|e| {
                use std::os::unix::fs::MetadataExt;
                e.metadata().is_ok_and(|m| m.ctime() >= started)
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect()
    };
    check(until(10, || leaked().is_empty()), || {
        format!("the run's temp directory is left: {:?}", leaked())
    })?;
    git_runs_nothing(fx, &mark)
}

/// Within ten seconds the planted `sub/.git/config` and `.envrc` are
/// gone and the journal holds no entry: the after-run work was done.
/// `after` names what befell sbx; `err`, what it printed.
fn plant_finished(fx: &Fx, after: &str, err: impl Fn() -> String) -> Result<(), String> {
    let config = fx.ws.join("sub/.git/config");
    let envrc = fx.ws.join(".envrc");
    check(
        until(10, || {
            !config.exists() && !envrc.exists() && journal_empty(fx)
        }),
        || {
            format!(
                "after the {after}: config {}, .envrc {}, journal empty {}: {}",
                config.exists(),
                envrc.exists(),
                journal_empty(fx),
                err()
            )
        },
    )
}

/// The oracle: git outside, in the workspace and the repository planted
/// below it, runs nothing planted (no `mark`).
fn git_runs_nothing(fx: &Fx, mark: &str) -> Result<(), String> {
    for dir in ["", "sub"] {
        let _ = git(fx, dir, &["status", "--short"]).map_err(|e| e.to_string())?;
        check(!Path::new(mark).exists(), || {
            format!("git status in {dir:?} ran the planted core.fsmonitor")
        })?;
    }
    Ok(())
}

/// The case `name` (it needs git): a run killed `how`, then `then`.
fn kill_case(fx: &Fx, name: &str, how: Kill, then: Option<&[&str]>) -> Result<(), String> {
    if !git_repo(fx, name)? {
        return Ok(());
    }
    killed(fx, how, then)
}

pub fn sbx_killed(fx: &Fx) -> Result<(), String> {
    kill_case(fx, "killed_sbx_guardian_finishes", Kill::Sbx, None)
}

pub fn killed_without_journal(fx: &Fx) -> Result<(), String> {
    kill_case(
        fx,
        "killed_sbx_without_journal_guardian_finishes",
        Kill::SbxNoJournal,
        None,
    )
}

/// sbx panics once the command has planted and ended, before its
/// after-run work (a bug, as `SBX_TEST_PANIC` stages it in test builds):
/// unwinding must leave the work to the guardian, not mark it done.
/// Control: sbx did panic (exit 101, its message on stderr).
pub fn panicked(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "panicked_sbx_guardian_finishes")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let script = format!(
        "echo 'touch {mark}' > .envrc && git init -q sub && {} >> sub/.git/config",
        fsmonitor(&mark)
    );
    let out = sbx_sh(fx, &fx.default_policy(), &script)
        .env("SBX_TEST_PANIC", "before-after-run")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    check(
        out.status.code() == Some(101) && err.contains("SBX_TEST_PANIC"),
        || format!("control: sbx did not panic: {out:?}"),
    )?;
    plant_finished(fx, "panic", || err.clone())?;
    git_runs_nothing(fx, &mark)
}

pub fn group_killed(fx: &Fx) -> Result<(), String> {
    kill_case(fx, "killed_group_guardian_finishes", Kill::Group, None)
}

pub fn both_killed_sweep(fx: &Fx) -> Result<(), String> {
    kill_case(
        fx,
        "killed_guardian_sbx_sweep_finishes",
        Kill::Both,
        Some(&["sweep"]),
    )
}

pub fn both_killed_next_run(fx: &Fx) -> Result<(), String> {
    kill_case(
        fx,
        "killed_guardian_next_run_finishes",
        Kill::Both,
        Some(&["run", "POLICY", "--", "/bin/true"]),
    )
}

/// Issue #35 under `[linux] namespaces = "never"`: nothing is mounted,
/// but the after-run check still knows what sbx protects. The command
/// creates `.envrc` and swaps `.vscode` (present at launch, so Landlock
/// keeps it read-only) for a new directory by renames: both move aside.
/// Control: the command did it (exit 0, the old `.vscode` renamed), and
/// an ordinary new file stays.
pub fn never_checks_after_the_run(fx: &Fx) -> Result<(), String> {
    std::fs::create_dir_all(fx.ws.join(".vscode")).unwrap();
    std::fs::write(fx.ws.join(".vscode/settings.json"), "{}").unwrap();
    let p = fx.policy("best_effort", "\n[linux]\nnamespaces = \"never\"\n");
    let out = crate::protect_cases::sh_under(
        fx,
        &p,
        "echo 'touch x' > .envrc && mv .vscode .vscode.old && mkdir .vscode && \
         echo '{}' > .vscode/tasks.json && echo kept > keep.txt && echo planted",
    );
    check(out.code == 0 && out.answer() == "planted", || {
        format!("the run: {out:?}")
    })?;
    check(
        fx.ws.join(".vscode.old/settings.json").exists() && fx.ws.join("keep.txt").exists(),
        || "control: the run's own changes are gone".into(),
    )?;
    check(
        !fx.ws.join(".envrc").exists() && fx.ws.join(".envrc.sbx-blocked").exists(),
        || format!(".envrc not moved aside: {}", out.stderr),
    )?;
    check(
        !fx.ws.join(".vscode").exists() && fx.ws.join(".vscode.sbx-blocked/tasks.json").exists(),
        || format!("the swapped .vscode not moved aside: {}", out.stderr),
    )
}

/// Issue #35, two runs at once in one workspace: the shorter run does not
/// sweep the tree of the one still going (whose fresh clone it would
/// break), and leaves nothing unswept either: the run still going sweeps
/// it when it ends, from its earlier start. Run B plants a nested
/// repository with a `core.fsmonitor` while run A waits; B says the
/// search is left to A (the control: without A the same run moves it at
/// once, `git_repository_made_in_the_run_is_swept`), and once A ends the
/// config is moved aside and git outside runs nothing.
pub fn concurrent_runs(fx: &Fx) -> Result<(), String> {
    if !git_repo(fx, "concurrent_runs_sweep_once")? {
        return Ok(());
    }
    let mark = fx.path("fsmonitor-ran");
    let mut a = start(
        fx,
        ": > a-ready; while [ ! -e go ]; do sleep 0.05; done",
        true,
    );
    let ready = fx.ws.join("a-ready");
    if !until(30, || ready.exists()) {
        let _ = a.kill();
        let _ = a.wait();
        return Err("run A never got ready".into());
    }
    let b = crate::protect_cases::sh_under(
        fx,
        &fx.default_policy(),
        &format!(
            "git init -q sub && {} >> sub/.git/config && echo planted",
            fsmonitor(&mark)
        ),
    );
    let config = fx.ws.join("sub/.git/config");
    let deferred = b.code == 0
        && b.answer() == "planted"
        && config.exists()
        && b.stderr.contains("left to another sbx run");
    std::fs::write(fx.ws.join("go"), "").unwrap();
    let status = a.wait().map_err(|e| e.to_string())?;
    check(deferred, || format!("run B: {b:?}"))?;
    let err = std::fs::read_to_string(fx.root.join("sbx.err")).unwrap_or_default();
    check(status.success(), || format!("run A: {status:?}: {err}"))?;
    check(
        !config.exists() && fx.ws.join("sub/.git/config.sbx-blocked").exists(),
        || format!("run A did not sweep what B planted: {err}"),
    )?;
    let _ = git(fx, "sub", &["status", "--short"]).map_err(|e| e.to_string())?;
    check(!Path::new(&mark).exists(), || {
        "git status ran the planted core.fsmonitor".into()
    })
}

/// A command that may read sbx's state directory holds the launch walks'
/// lock as it can (`flock -x` on `walks.lock`: exclusive on a descriptor
/// open only for reading) while another run starts, in a repository of
/// its own (which it sweeps itself). That run still has its launch
/// record (old: its walk could not have the lock within 2 s, and it went
/// on without a record, saying so). Control: the holder had the lock
/// (its mark is written while holding it), and the other run ran.
pub fn state_reader_cannot_stop_launch_records(fx: &Fx) -> Result<(), String> {
    let case = "state_reader_cannot_stop_launch_records";
    if !git_repo(fx, case)? {
        return Ok(());
    }
    if !Path::new("/usr/bin/flock").exists() {
        if std::env::var_os("CI").is_some() {
            return Err(format!("{case}: /usr/bin/flock (util-linux) is missing"));
        }
        eprintln!("{case}: /usr/bin/flock is not installed, skipped");
        return Ok(());
    }
    // A run in the repository makes the journal's directory and the lock.
    let first = crate::protect_cases::sh_under(fx, &fx.default_policy(), "echo first");
    check(first.code == 0 && first.answer() == "first", || {
        format!("the first run: {first:?}")
    })?;
    let state = fx.root.join("home/.local/state/sbx");
    let lock = state.join("runs/walks.lock");
    check(lock.exists(), || format!("no {}", lock.display()))?;
    // Only where nothing hides the state directory: without the layer,
    // under a rule naming it (the system's files alone, so that no temp
    // rule makes it writable, which would refuse the run).
    let reader = fx.write_policy(&format!(
        "version = 1\n\n[process]\npresets = [\"system_runtime\"]\n\n\
         [[fs]]\npath = \".\"\nread = true\nwrite = true\n\n\
         [[fs]]\npath = \"{}\"\nread = true\n\n[linux]\nnamespaces = \"never\"\n",
        state.display()
    ));
    let err = std::fs::File::create(fx.root.join("sbx.err")).unwrap();
    let elsewhere = fx.root.join("ws2");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut a = sbx_sh_in(
        fx,
        &elsewhere,
        &reader,
        &format!(
            "exec /usr/bin/flock -x {} /bin/sh -c ': > a-locked; \
             while [ ! -e go ]; do sleep 0.05; done'",
            lock.display()
        ),
    )
    .stdout(Stdio::null())
    .stderr(err)
    .process_group(0)
    .spawn()
    .map_err(|e| e.to_string())?;
    let locked = elsewhere.join("a-locked");
    if !until(30, || locked.exists()) {
        let _ = a.kill();
        let _ = a.wait();
        let err = std::fs::read_to_string(fx.root.join("sbx.err")).unwrap_or_default();
        return Err(format!("control: run A never held the lock: {err}"));
    }
    let b = crate::protect_cases::sh_under(fx, &fx.default_policy(), "echo ran");
    std::fs::write(elsewhere.join("go"), "").unwrap();
    let status = a.wait().map_err(|e| e.to_string())?;
    let err = std::fs::read_to_string(fx.root.join("sbx.err")).unwrap_or_default();
    check(status.success(), || format!("run A: {status:?}: {err}"))?;
    check(b.code == 0 && b.answer() == "ran", || {
        format!("control: run B: {b:?}")
    })?;
    check(
        !b.stderr
            .contains("the search at launch for git repositories"),
        || format!("run B went without its launch record: {}", b.stderr),
    )
}

/// sbx's state directory is hidden from a command whose rule on home
/// would show it: the journal (other runs' entries, the launch walks'
/// lock) and the private caches of other keys cannot be read, listed or
/// locked (old: readable, as any file under the rule). Control: a file
/// beside it in home is read under the same policy, and the journal is
/// there on the host.
pub fn state_directory_is_hidden(fx: &Fx) -> Result<(), String> {
    let home = fx.root.join("home");
    let first = crate::protect_cases::sh_under(fx, &fx.default_policy(), "echo first");
    check(first.code == 0, || format!("the first run: {first:?}"))?;
    let runs = home.join(".local/state/sbx/runs");
    check(runs.is_dir(), || format!("control: no {}", runs.display()))?;
    std::fs::write(home.join(".local/visible"), "shown\n").unwrap();
    // Home read, and home writable (where sbx's own read-only rule for
    // its state names the directory: hidden all the same).
    let policy = |rights: &str| {
        fx.write_policy(&format!(
            "version = 1\n\n[[fs]]\npath = \".\"\nread = true\nwrite = true\n\n\
             [[fs]]\npath = \"{}\"\n{rights}\n",
            home.display()
        ))
    };
    let p = policy("read = true");
    for p in [p.clone(), policy("read = true\nwrite = true")] {
        let out = crate::protect_cases::sh_under(
            fx,
            &p,
            &format!(
                "cat {home}/.local/visible; ls {runs} >/dev/null 2>&1 && echo listed; \
                 cat {runs}/*.slot >/dev/null 2>&1 && echo read; \
                 /usr/bin/flock -n {runs}/walks.lock true 2>/dev/null && echo locked; true",
                home = home.display(),
                runs = runs.display()
            ),
        );
        check(out.code == 0 && out.stdout.starts_with("shown"), || {
            format!("control: home's file not read: {out:?}")
        })?;
        check(out.answer() == "shown", || {
            format!("sbx's state directory was reached ({p:?}): {out:?}")
        })?;
    }
    // Without the layer nothing hides it: the report says so (with the
    // system's files alone, so that no temp rule makes home writable).
    let never = fx.write_policy(&format!(
        "{}\n[process]\npresets = [\"system_runtime\"]\n\n[linux]\nnamespaces = \"never\"\n",
        std::fs::read_to_string(&p).unwrap()
    ));
    let report = Command::new(sbx_bin())
        .args(["run", "--report"])
        .arg(&never)
        .arg("--workspace")
        .arg(&fx.ws)
        .args(["--", "/bin/true"])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &home)
        .current_dir(&fx.ws)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let said = String::from_utf8_lossy(&report.stderr);
    check(
        report.status.success()
            && said.contains("wider linux.state")
            && said.contains("stays readable"),
        || {
            format!(
                "namespaces = \"never\" did not say the state stays readable ({:?}): {said}",
                report.status
            )
        },
    )
}

/// A lease on a file makes every other process that opens it wait up
/// to 45 s: a command could stall sbx's journal (another run's slot, the
/// launch walks' lock) and the user's own programs. seccomp refuses
/// `fcntl(F_SETLEASE)` (EPERM). Control: the same program takes the
/// lease outside the sandbox, and asks for one inside (`F_GETLEASE`).
pub fn leases_are_refused(fx: &Fx) -> Result<(), String> {
    std::fs::write(fx.ws.join("leased"), "x").unwrap();
    // F_SETLEASE 1024, F_GETLEASE 1025, F_RDLCK 0.
    let script = "import fcntl, os\n\
        fd = os.open('leased', os.O_RDONLY)\n\
        print('get', fcntl.fcntl(fd, 1025))\n\
        try:\n    fcntl.fcntl(fd, 1024, 0); print('leased')\n\
        except OSError as e:\n    print('refused', e.errno)\n";
    let bare = Command::new("python3")
        .args(["-c", script])
        .current_dir(&fx.ws)
        .output()
        .map_err(|e| e.to_string())?;
    let bare = String::from_utf8_lossy(&bare.stdout).to_string();
    if bare.is_empty() && std::env::var_os("CI").is_none() {
        eprintln!("leases_are_refused: python3 is not installed, skipped");
        return Ok(());
    }
    check(bare.contains("leased"), || {
        format!("control: no lease outside the sandbox: {bare}")
    })?;
    let out = crate::protect_cases::sh_under(
        fx,
        &fx.default_policy(),
        &format!("python3 -c \"{}\"", script.replace('"', "\\\"")),
    );
    check(out.stdout.contains("get 2"), || {
        format!("control: F_GETLEASE inside: {out:?}")
    })?;
    check(
        out.stdout.contains(&format!("refused {}", libc::EPERM)),
        || format!("a lease was taken inside the sandbox: {out:?}"),
    )
}

/// sbx SIGKILLed during the set-up (the test build's
/// `SBX_TEST_SETUP_PAUSE_MS` holds it there), under the default policy
/// and with `namespaces = "never"`: the command never runs on,
/// unsupervised, to write after the killed run's after-run work. With
/// namespaces the setup process goes on, but the init it makes sees
/// that sbx is gone and ends, the command with it (old: the init asked
/// in vain to die with sbx); without them the command, which waited
/// before asking to die with sbx, sees that sbx is no longer its parent
/// (old: it never asked). Control: the same runs, not killed, run the
/// command.
pub fn killed_in_setup(fx: &Fx) -> Result<(), String> {
    killed_in_setup_under(fx, &fx.default_policy())?;
    killed_in_setup_under(
        fx,
        &fx.policy("best_effort", "\n[linux]\nnamespaces = \"never\"\n"),
    )
}

fn killed_in_setup_under(fx: &Fx, policy: &Path) -> Result<(), String> {
    let mark = fx.ws.join("late-write");
    let script = format!("sleep 1; echo late > {}", mark.display());
    let run = |kill: bool| -> Result<(), String> {
        let mut sbx = sbx_sh(fx, policy, &script)
            .env("SBX_TEST_SETUP_PAUSE_MS", "500")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut err = std::io::BufReader::new(sbx.stderr.take().unwrap());
        let mut said = String::new();
        let mut line = String::new();
        use std::io::BufRead;
        while !said.contains("the set-up waits") {
            line.clear();
            if err.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                let _ = sbx.wait();
                return Err(format!("control: the set-up did not wait: {said}"));
            }
            said.push_str(&line);
        }
        if kill {
            // SAFETY: a signal to the process this case started.
            unsafe { libc::kill(sbx.id() as i32, libc::SIGKILL) };
        }
        let _ = std::io::copy(&mut err, &mut std::io::sink());
        let _ = sbx.wait();
        Ok(())
    };
    run(false)?;
    check(mark.exists(), || "control: the command did not run".into())?;
    std::fs::remove_file(&mark).map_err(|e| e.to_string())?;
    run(true)?;
    std::thread::sleep(Duration::from_millis(2000));
    check(!mark.exists(), || {
        format!("the command outlived sbx, killed during the set-up, and wrote ({policy:?})")
    })
}
