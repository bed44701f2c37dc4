//! `ssh_agent = true`: the caller's ssh agent, forwarded. The agent's
//! own socket sits in the host's temp directory, which the new root
//! replaces with the run's; sbx (outside the sandbox) listens on a
//! socket in the run's private `/tmp` and relays each connection to the
//! caller's agent, so the command can ask for signatures but never
//! reads a key, and reaches no other socket of the host.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Where the command finds the agent: `SSH_AUTH_SOCK` inside.
pub const INSIDE_DIR: &str = "/tmp/sbx-ssh-agent";
pub const INSIDE: &str = "/tmp/sbx-ssh-agent/agent.sock";

/// The caller's agent socket, if `SSH_AUTH_SOCK` names a UNIX socket
/// the caller owns; otherwise why not, for the warning.
pub fn caller_agent(value: Option<std::ffi::OsString>) -> Result<PathBuf, String> {
    let Some(v) = value.filter(|v| !v.is_empty()) else {
        return Err("SSH_AUTH_SOCK is not set (no agent is running)".into());
    };
    let path = PathBuf::from(v);
    let m =
        std::fs::metadata(&path).map_err(|e| format!("SSH_AUTH_SOCK={}: {e}", path.display()))?;
    if !m.file_type().is_socket() {
        return Err(format!("SSH_AUTH_SOCK={} is not a socket", path.display()));
    }
    // SAFETY: geteuid has no failure mode.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(format!(
            "SSH_AUTH_SOCK={} belongs to uid {}, not to the caller",
            path.display(),
            m.uid()
        ));
    }
    Ok(path)
}

/// Listen at [`INSIDE`] as the host sees it: `private_tmp` is the run's
/// directory shown at `/tmp`. The directory is the caller's alone (0700).
pub fn listen(private_tmp: &Path) -> io::Result<UnixListener> {
    let dir = private_tmp.join(
        Path::new(INSIDE_DIR)
            .strip_prefix("/tmp")
            .unwrap_or(Path::new("")),
    );
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    UnixListener::bind(dir.join("agent.sock"))
}

/// Relay every connection to `agent` until the process ends (the
/// listener goes with sbx; the socket file with the run's temp).
pub fn serve(listener: UnixListener, agent: PathBuf) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(inside) = conn else { continue };
            // Each connection holds two threads of sbx: the command
            // cannot make sbx spawn without bound.
            if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                continue;
            }
            open.fetch_add(1, Ordering::Relaxed);
            let (agent, open) = (agent.clone(), open.clone());
            std::thread::spawn(move || {
                if let Ok(outside) = UnixStream::connect(&agent) {
                    splice(inside, outside);
                }
                open.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
}

/// Agent connections relayed at once (ssh opens one, `git` one per ssh).
const MAX_CONNECTIONS: usize = 32;

/// Copy both ways until either side closes.
fn splice(a: UnixStream, b: UnixStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || copy_then_close(a, b2));
    copy_then_close(b, a2);
    let _ = up.join();
}

fn copy_then_close(mut from: UnixStream, mut to: UnixStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(std::net::Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_owned_socket_is_forwarded() {
        assert!(caller_agent(None).unwrap_err().contains("not set"));
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("file");
        std::fs::write(&f, "").unwrap();
        assert!(caller_agent(Some(f.into()))
            .unwrap_err()
            .contains("not a socket"));
        let s = d.path().join("sock");
        let _l = UnixListener::bind(&s).unwrap();
        assert_eq!(caller_agent(Some(s.clone().into())).unwrap(), s);
    }

    #[test]
    fn connections_reach_the_agent() {
        use std::io::{Read, Write};
        let d = tempfile::tempdir().unwrap();
        let agent = d.path().join("agent");
        let real = UnixListener::bind(&agent).unwrap();
        std::thread::spawn(move || {
            let (mut c, _) = real.accept().unwrap();
            let mut b = [0u8; 4];
            c.read_exact(&mut b).unwrap();
            c.write_all(&b).unwrap();
        });
        let l = listen(d.path()).unwrap();
        serve(l, agent);
        let mut c = UnixStream::connect(d.path().join("sbx-ssh-agent/agent.sock")).unwrap();
        c.write_all(b"ping").unwrap();
        let mut back = [0u8; 4];
        c.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"ping");
    }
}
