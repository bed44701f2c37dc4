//! strace's output for a traced `sbx run` (`strace -f` into one
//! descriptor: each line starts with the pid), read line by line as it
//! arrives. strace traces sbx itself as well as the command; only the
//! command's calls count, not sbx's own set-up (its probes, its mounts,
//! the new root's directories).
//!
//! A process is the command's when it executed a program (its calls from
//! then on) or when a process of the command made it (all its calls: a
//! shell's subshell opens a redirection before it executes anything).
//! sbx's processes never execute a program but the command: a failed
//! exec outside the first process is the command's too (what it names may
//! be outside the policy). The first process, sbx's own start, is never
//! the command's. The trace must show `%process` calls
//! and translate pids of the sandbox's PID namespace
//! (`--pidns-translation`), so that a `clone` names the pid its child's
//! lines carry.

use super::{line, new_cwd, Denied, Keep};
use std::collections::{BTreeMap, BTreeSet};

/// Parent chains longer than this are cut (they cannot loop, as pids
/// are read from the trace; the bound only keeps a garbled trace cheap).
const MAX_DEPTH: usize = 4096;

pub struct Trace {
    keep: Keep,
    start_cwd: String,
    /// The first pid seen: sbx, started by strace.
    root: Option<u32>,
    procs: BTreeMap<u32, Proc>,
}

#[derive(Default)]
struct Proc {
    parent: Option<u32>,
    cwd: Option<String>,
    /// A call strace split (`<unfinished ...>`), waiting for its end.
    pending: Option<String>,
    exec: bool,
    /// What it did before it first executed a program, and after.
    before: BTreeSet<Denied>,
    after: BTreeSet<Denied>,
}

impl Trace {
    /// `start_cwd` anchors relative paths until a call shows the
    /// directory (`AT_FDCWD</dir>`).
    pub fn new(keep: Keep, start_cwd: &str) -> Trace {
        Trace {
            keep,
            start_cwd: start_cwd.to_string(),
            root: None,
            procs: BTreeMap::new(),
        }
    }

    /// One line of strace's output.
    pub fn feed(&mut self, l: &str) {
        let Some((pid, rest)) = split_pid(l) else {
            return;
        };
        let root = *self.root.get_or_insert(pid);
        let p = self.procs.entry(pid).or_default();
        let whole = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            p.pending = Some(head.to_string());
            return;
        } else if rest.starts_with("<... ") {
            let Some((_, tail)) = rest.split_once(" resumed>") else {
                return;
            };
            match p.pending.take() {
                Some(head) => format!("{head}{tail}"),
                None => return,
            }
        } else {
            rest.to_string()
        };
        let result = whole.rsplit_once(" = ").map(|(_, r)| r.trim());
        let call = whole.split('(').next().unwrap_or("");
        match (call, result) {
            ("execve" | "execveat", Some("0")) => {
                // sbx's own start is the first process's first exec.
                if pid != root {
                    p.exec = true;
                }
                return;
            }
            ("clone" | "clone3" | "fork" | "vfork", Some(r)) => {
                if let Some(child) = child_pid(r) {
                    let cwd = p.cwd.clone();
                    let c = self.procs.entry(child).or_default();
                    c.parent = Some(pid);
                    if c.cwd.is_none() {
                        c.cwd = cwd;
                    }
                }
                return;
            }
            _ => {}
        }
        let p = self.procs.get_mut(&pid).expect("inserted above");
        let cwd = p.cwd.clone().unwrap_or_else(|| self.start_cwd.clone());
        if let Some(dir) = new_cwd(&whole, &cwd) {
            p.cwd = Some(dir);
        }
        let cwd = p.cwd.as_deref().unwrap_or(&self.start_cwd);
        let exec = matches!(call, "execve" | "execveat") && pid != root;
        if let Some(d) = line(&whole, cwd, self.keep) {
            if p.exec || exec {
                p.after.insert(d);
            } else {
                p.before.insert(d);
            }
        }
    }

    /// The command's calls, each once.
    pub fn finish(self) -> Vec<Denied> {
        let mut out = BTreeSet::new();
        for (pid, p) in &self.procs {
            let made_by_command = p.parent.is_some_and(|q| self.is_command(q));
            if made_by_command {
                out.extend(p.before.iter().cloned());
            }
            if made_by_command || (p.exec && Some(*pid) != self.root) {
                out.extend(p.after.iter().cloned());
            }
        }
        out.into_iter().collect()
    }

    fn is_command(&self, mut pid: u32) -> bool {
        for _ in 0..MAX_DEPTH {
            if Some(pid) == self.root {
                return false;
            }
            let Some(p) = self.procs.get(&pid) else {
                return false;
            };
            if p.exec {
                return true;
            }
            match p.parent {
                Some(q) => pid = q,
                None => return false,
            }
        }
        false
    }
}

/// The pid that leads a line, and the rest.
fn split_pid(l: &str) -> Option<(u32, &str)> {
    let end = l.find(|c: char| !c.is_ascii_digit())?;
    let pid = l[..end].parse().ok()?;
    Some((pid, l[end..].trim_start()))
}

/// The child's pid in a `clone` result as strace sees it: `5` or, from
/// inside a PID namespace, `3 /* 21377 in strace's PID NS */`.
fn child_pid(result: &str) -> Option<u32> {
    let n = match result.split_once("/* ") {
        Some((_, c)) => c.split(' ').next()?,
        None => result.split(' ').next()?,
    };
    n.parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::*;

    /// A traced `sbx run -- sh -c '(cat /srv/s > /srv/x); true'`, cut
    /// down: 100 is sbx, 101 and 102 its set-up, 103 the shell, 104 the
    /// subshell (which never executes anything).
    const RUN: &str = r#"100 execve("/usr/bin/sbx", ["sbx", "run"], 0x7ffe /* 35 vars */) = 0
100 openat(AT_FDCWD</w>, "/root/.config/sbx.toml", O_RDONLY) = -1 ENOENT (No such file or directory)
100 clone(child_stack=0x7f66, flags=CLONE_VM|CLONE_VFORK|CLONE_NEWNS|SIGCHLD <unfinished ...>
101 mkdirat(50</>, "proc", 0755)      = -1 EACCES (Permission denied)
101 clone(child_stack=0x7f66, flags=CLONE_VM|CLONE_PARENT|SIGCHLD) = 102
101 clone(child_stack=0x7f66, flags=CLONE_VM|CLONE_VFORK|CLONE_PARENT|SIGCHLD <unfinished ...>
103 execve("/opt/nope", ["sh"], 0x2000 /* 3 vars */) = -1 EACCES (Permission denied)
103 execve("/usr/bin/sh", ["sh", "-c", "..."], 0x2000 /* 3 vars */ <unfinished ...>
101 <... clone resumed>)              = 103
103 <... execve resumed>)             = 0
100 <... clone resumed>)              = 101
103 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f97) = 3 /* 104 in strace's PID NS */
104 openat(AT_FDCWD</w>, "/srv/x", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 ENOENT (No such file or directory)
103 openat(AT_FDCWD</w>, "/srv/s", O_RDONLY <unfinished ...>
102 openat(AT_FDCWD</w>, "/srv/init", O_RDONLY) = -1 EACCES (Permission denied)
103 <... openat resumed>) = -1 EACCES (Permission denied)
103 chdir("/srv") = -1 ENOENT (No such file or directory)
103 mkdir("d", 0777) = -1 EROFS (Read-only file system)
103 openat(AT_FDCWD</w>, "/etc/hosts", O_RDONLY) = 3
100 openat(AT_FDCWD</w>, "/w/.git/index", O_RDONLY) = -1 EACCES (Permission denied)
"#;

    fn run(keep: Keep) -> Vec<Denied> {
        let mut t = Trace::new(keep, "/w");
        for l in RUN.lines() {
            t.feed(l);
        }
        t.finish()
    }

    fn path(op: Op, p: &str) -> Denied {
        Denied::Path {
            op,
            path: p.to_string(),
        }
    }

    #[test]
    fn only_the_commands_calls_count() {
        let missing = Denied::Missing {
            op: Op::Write,
            path: "/srv/x".into(),
        };
        assert_eq!(
            run(Keep::Refusals),
            [
                path(Op::Read, "/srv/s"),
                path(Op::Write, "/w/d"),
                path(Op::Execute, "/opt/nope"),
                missing.clone()
            ]
        );
        let mut uses = run(Keep::Uses);
        uses.sort();
        let mut want = vec![
            path(Op::Read, "/srv/s"),
            path(Op::Read, "/etc/hosts"),
            path(Op::Write, "/w/d"),
            path(Op::Execute, "/opt/nope"),
            missing,
        ];
        want.sort();
        assert_eq!(uses, want);
    }

    #[test]
    fn lines_without_a_pid_or_a_start_are_skipped() {
        let mut t = Trace::new(Keep::Refusals, "/");
        for l in [
            "openat(AT_FDCWD, \"/x\", O_RDONLY) = -1 EACCES (Permission denied)",
            "7 <... openat resumed>) = -1 EACCES (Permission denied)",
            "",
            "8",
        ] {
            t.feed(l);
        }
        assert_eq!(t.finish(), []);
        assert_eq!(child_pid("3 /* 104 in strace's PID NS */"), Some(104));
        assert_eq!(child_pid("12"), Some(12));
        assert_eq!(child_pid("? ERESTARTNOINTR"), None);
    }
}
