//! `ssh_agent = true`: the caller's ssh agent, forwarded. The agent's
//! own socket sits in the host's temp directory, which the new root
//! replaces with the run's; sbx (outside the sandbox) listens on a
//! socket in the run's private `/tmp` and relays each connection to the
//! caller's agent, so the command can ask for signatures but never
//! reads a key, and reaches no other socket of the host.
//!
//! The relay reads each request and passes on only what using a key
//! needs: listing the keys, a signature, and OpenSSH's `session-bind`
//! (which only narrows what the connection may sign). Everything else a
//! local client may ask (add or remove keys, lock the agent with a
//! password of the command's choosing, load a PKCS#11 provider) changes
//! the caller's agent beyond the run, so the command gets the agent's
//! plain failure answer instead and the agent never sees the request.

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
            // Each connection holds a thread of sbx: the command cannot
            // make sbx spawn without bound.
            if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                continue;
            }
            open.fetch_add(1, Ordering::Relaxed);
            let (agent, open) = (agent.clone(), open.clone());
            std::thread::spawn(move || {
                if let Ok(outside) = UnixStream::connect(&agent) {
                    relay(inside, outside);
                }
                open.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
}

/// Agent connections relayed at once (ssh opens one, `git` one per ssh).
const MAX_CONNECTIONS: usize = 32;

/// The longest message either side may send: OpenSSH's own limit
/// (`AGENT_MAX_LEN`, 256 KiB).
const MAX_MESSAGE: usize = 256 * 1024;

/// Request and answer types (draft-miller-ssh-agent).
const REQUEST_IDENTITIES: u8 = 11;
const SIGN_REQUEST: u8 = 13;
const EXTENSION: u8 = 27;
const FAILURE: u8 = 5;
/// The one extension passed on: it binds the connection to an ssh
/// session, which can only narrow what the agent signs on it.
const SESSION_BIND: &[u8] = b"session-bind@openssh.com";

/// Whether a request (its type byte and the rest) is passed on.
fn allowed(body: &[u8]) -> bool {
    match body.first() {
        Some(&REQUEST_IDENTITIES) | Some(&SIGN_REQUEST) => true,
        Some(&EXTENSION) => {
            // string name: uint32 length, then the name.
            let name = body
                .get(1..5)
                .map(|l| u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize)
                .and_then(|n| body.get(5..5usize.checked_add(n)?));
            name == Some(SESSION_BIND)
        }
        _ => false,
    }
}

/// One message: `None` at the end of the stream or on a message longer
/// than [`MAX_MESSAGE`] (the connection is then dropped).
fn read_message(from: &mut impl io::Read) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len).ok()?;
    let n = u32::from_be_bytes(len) as usize;
    if n == 0 || n > MAX_MESSAGE {
        return None;
    }
    let mut body = vec![0u8; n];
    from.read_exact(&mut body).ok()?;
    Some(body)
}

fn write_message(to: &mut impl io::Write, body: &[u8]) -> io::Result<()> {
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    to.write_all(&out)
}

/// Relay requests one at a time (the protocol answers each before the
/// next), each checked by [`allowed`], until either side closes.
fn relay(mut inside: impl io::Read + io::Write, mut agent: impl io::Read + io::Write) {
    while let Some(request) = read_message(&mut inside) {
        let answer = if allowed(&request) {
            if write_message(&mut agent, &request).is_err() {
                return;
            }
            match read_message(&mut agent) {
                Some(a) => a,
                None => return,
            }
        } else {
            vec![FAILURE]
        };
        if write_message(&mut inside, &answer).is_err() {
            return;
        }
    }
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

    /// A stand-in agent: answers every request with its type + 100 and
    /// records the types it saw.
    fn fake_agent(path: &Path) -> std::sync::mpsc::Receiver<u8> {
        let real = UnixListener::bind(path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut c, _) = real.accept().unwrap();
            while let Some(m) = read_message(&mut c) {
                tx.send(m[0]).unwrap();
                write_message(&mut c, &[m[0] + 100]).unwrap();
            }
        });
        rx
    }

    /// A relay in a temp directory to a [`fake_agent`]: the directory,
    /// what the agent saw, a client's connection.
    fn relayed() -> (tempfile::TempDir, std::sync::mpsc::Receiver<u8>, UnixStream) {
        let d = tempfile::tempdir().unwrap();
        let agent = d.path().join("agent");
        let seen = fake_agent(&agent);
        serve(listen(d.path()).unwrap(), agent);
        let c = UnixStream::connect(d.path().join("sbx-ssh-agent/agent.sock")).unwrap();
        (d, seen, c)
    }

    fn ask(c: &mut UnixStream, body: &[u8]) -> Vec<u8> {
        write_message(c, body).unwrap();
        read_message(c).unwrap()
    }

    /// Listing, signing and `session-bind` reach the agent; adding and
    /// removing keys, locking, unlocking, smartcards and other extensions
    /// get the failure answer and never reach it.
    #[test]
    fn only_using_keys_reaches_the_agent() {
        let (_d, seen, mut c) = relayed();
        let ext = |name: &[u8]| {
            let mut b = vec![EXTENSION];
            b.extend_from_slice(&(name.len() as u32).to_be_bytes());
            b.extend_from_slice(name);
            b.extend_from_slice(b"payload");
            b
        };
        assert_eq!(ask(&mut c, &[REQUEST_IDENTITIES]), [111]);
        assert_eq!(ask(&mut c, &[SIGN_REQUEST, 0, 0, 0, 1, 7]), [113]);
        assert_eq!(ask(&mut c, &ext(SESSION_BIND)), [127]);
        // add identity (17, 25), remove (18), remove all (19), smartcard
        // (20, 21, 26), lock (22), unlock (23), another extension, an
        // extension whose name runs past the message, protocol 1's.
        for body in [
            vec![17, 1],
            vec![25, 1],
            vec![18, 1],
            vec![19],
            vec![20, 1],
            vec![21, 1],
            vec![26, 1],
            vec![22, 0, 0, 0, 1, b'x'],
            vec![23, 0, 0, 0, 1, b'x'],
            ext(b"query"),
            vec![EXTENSION, 0, 0, 1, 0, b's'],
            vec![1],
            vec![9],
        ] {
            assert_eq!(ask(&mut c, &body), [FAILURE], "{body:?}");
        }
        assert_eq!(ask(&mut c, &[REQUEST_IDENTITIES]), [111]);
        drop(c);
        let got: Vec<u8> = seen.iter().collect();
        assert_eq!(got, [11, 13, 27, 11]);
    }

    /// A message past OpenSSH's limit ends the connection; the agent
    /// sees nothing of it.
    #[test]
    fn an_oversized_message_ends_the_connection() {
        use std::io::{Read, Write};
        let (_d, seen, mut c) = relayed();
        c.write_all(&((MAX_MESSAGE as u32) + 1).to_be_bytes())
            .unwrap();
        c.write_all(&[SIGN_REQUEST]).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(c.read(&mut b).unwrap_or(0), 0);
        drop(c);
        assert_eq!(seen.iter().count(), 0);
    }
}
