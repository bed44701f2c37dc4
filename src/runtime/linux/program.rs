//! Finding the program to run and the files `execve` will open for it.
//!
//! Landlock checks `execute` (and `read_file`) on every file the kernel
//! opens to start a program: the program, its `#!` interpreter, and the
//! ELF interpreter (`PT_INTERP`, the dynamic loader). Shared libraries are
//! mapped by the loader with plain reads, so they need only `read_file`.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The directories looked in when the environment has no `PATH`.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `execvp`-style lookup: a name with a `/` is taken as is (made absolute
/// against the current directory), otherwise the first executable regular
/// file in `path_var`. `None` if there is none.
pub fn resolve(name: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    if name.as_bytes().contains(&b'/') {
        let p = Path::new(name);
        return Some(if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().ok()?.join(p)
        });
    }
    let dirs = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    std::env::split_paths(dirs)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|c| is_executable_file(c))
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether names are on `PATH` as [`resolve`] finds them, for many
/// names: each directory is opened once, at the first question, and
/// each name is then looked up in it alone, rather than every
/// directory's whole path once per name (the package caches ask for a
/// dozen tools, most of them absent, over a PATH of ten directories).
pub struct OnPath {
    path_var: Option<OsString>,
    dirs: Option<Vec<std::os::fd::OwnedFd>>,
}

impl OnPath {
    pub fn new(path_var: Option<&OsStr>) -> OnPath {
        OnPath {
            path_var: path_var.map(OsStr::to_os_string),
            dirs: None,
        }
    }

    /// `resolve(name, path_var).is_some()`.
    pub fn has(&mut self, name: &str) -> bool {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        if name.is_empty() || name.contains('/') {
            return resolve(OsStr::new(name), self.path_var.as_deref()).is_some();
        }
        let Ok(c) = std::ffi::CString::new(name) else {
            return false;
        };
        let var = self.path_var.as_deref();
        let dirs = self.dirs.get_or_insert_with(|| {
            let mut seen: Vec<PathBuf> = Vec::new();
            let mut out = Vec::new();
            let all = var.unwrap_or(OsStr::new(DEFAULT_PATH));
            for d in std::env::split_paths(all).filter(|d| d.is_absolute()) {
                if seen.contains(&d) {
                    continue;
                }
                let Ok(cd) = std::ffi::CString::new(d.as_os_str().as_bytes()) else {
                    continue;
                };
                seen.push(d);
                // SAFETY: a valid C string; the descriptor is owned below.
                let fd = unsafe {
                    libc::open(
                        cd.as_ptr(),
                        libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    )
                };
                if fd >= 0 {
                    // SAFETY: just opened, owned here alone.
                    out.push(unsafe { OwnedFd::from_raw_fd(fd) });
                }
            }
            out
        });
        dirs.iter().any(|d| {
            // SAFETY: an all-zero stat is a valid out-parameter.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: a directory descriptor of ours, a valid name and
            // buffer; symlinks are followed, as `resolve`'s stat does.
            let found = unsafe { libc::fstatat(d.as_raw_fd(), c.as_ptr(), &mut st, 0) == 0 };
            found && st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_mode & 0o111 != 0
        })
    }
}

/// The program and every interpreter the kernel opens to start it
/// (`#!` chains, then `PT_INTERP`), up to the kernel's nesting limit.
pub fn exec_chain(program: &Path) -> Vec<PathBuf> {
    let mut out = vec![program.to_path_buf()];
    let mut cur = program.to_path_buf();
    for _ in 0..5 {
        match interpreter(&cur) {
            Some(next) if !out.contains(&next) => {
                out.push(next.clone());
                cur = next;
            }
            _ => break,
        }
    }
    out
}

/// The file the kernel opens next to run `p`: the `#!` interpreter of a
/// script or the `PT_INTERP` of a dynamically linked ELF.
pub fn interpreter(p: &Path) -> Option<PathBuf> {
    let f = File::open(p).ok()?;
    // One read for the `#!` line and, in most ELF files, the header, the
    // program headers and the interpreter's name.
    let head = read_at(&f, 0, 1024)?;
    // The kernel reads a `#!` line from the first 256 bytes.
    if let Some(rest) = head[..head.len().min(256)].strip_prefix(b"#!") {
        let line = rest.split(|b| *b == b'\n').next()?;
        let word = line
            .split(|b| *b == b' ' || *b == b'\t')
            .find(|w| !w.is_empty())?;
        let path = PathBuf::from(OsString::from(OsStr::from_bytes(word)));
        return path.is_absolute().then_some(path);
    }
    if head.starts_with(b"\x7fELF") {
        return elf_interp(&f, &head);
    }
    None
}

/// Read `PT_INTERP` from an ELF file (32/64-bit, either byte order), whose
/// first bytes are `start`. Only the header, the program headers and the
/// name are read: reading the whole file (rustup's proxies are 20 MB) would
/// be most of `sbx run`'s start-up.
fn elf_interp(f: &File, start: &[u8]) -> Option<PathBuf> {
    // `len` bytes at `off` (fewer at the end of the file), from `start`
    // when it holds them.
    let read = |off: u64, len: usize| -> Option<std::borrow::Cow<'_, [u8]>> {
        match usize::try_from(off)
            .ok()
            .and_then(|o| start.get(o..o.checked_add(len)?))
        {
            Some(b) => Some(std::borrow::Cow::Borrowed(b)),
            None => read_at(f, off, len).map(std::borrow::Cow::Owned),
        }
    };
    let head = read(0, 64)?;
    let class64 = match head.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let le = match head.get(5)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let rd = |b: &[u8], off: usize, len: usize| -> Option<u64> {
        let b = b.get(off..off + len)?;
        let mut v: u64 = 0;
        for i in 0..len {
            let byte = if le { b[len - 1 - i] } else { b[i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    };
    let (phoff, phentsize, phnum) = if class64 {
        (
            rd(&head, 0x20, 8)?,
            rd(&head, 0x36, 2)?,
            rd(&head, 0x38, 2)?,
        )
    } else {
        (
            rd(&head, 0x1c, 4)?,
            rd(&head, 0x2a, 2)?,
            rd(&head, 0x2c, 2)?,
        )
    };
    // phnum and phentsize are 16-bit: at most 4 GiB in theory, so cap it.
    let table_len = usize::try_from(phnum * phentsize).ok()?.min(1 << 20);
    let table = read(phoff, table_len)?;
    for i in 0..phnum {
        let ph = usize::try_from(i * phentsize).ok()?;
        if rd(&table, ph, 4)? != 3 {
            continue; // not PT_INTERP
        }
        let (off, size) = if class64 {
            (rd(&table, ph + 8, 8)?, rd(&table, ph + 32, 8)?)
        } else {
            (rd(&table, ph + 4, 4)?, rd(&table, ph + 16, 4)?)
        };
        let size = usize::try_from(size).ok()?;
        if size > libc::PATH_MAX as usize {
            return None;
        }
        let bytes = read(off, size)?;
        if bytes.len() < size {
            return None;
        }
        let bytes = bytes.split(|b| *b == 0).next()?;
        return Some(PathBuf::from(OsStr::from_bytes(bytes)));
    }
    None
}

/// Up to `len` bytes at `off` (fewer at the end of the file).
fn read_at(f: &File, off: u64, len: usize) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0; len];
    let mut got = 0;
    while got < len {
        match f.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(got);
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `OnPath` answers as `resolve` does: executable regular files
    /// (through symlinks), not directories, plain files or dangling
    /// links, the first match over absolute entries only, duplicates
    /// and missing directories skipped, names with a slash as given.
    #[test]
    fn on_path_answers_as_resolve() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(b.join("dir-tool")).unwrap();
        let file = |p: &Path, mode: u32| {
            std::fs::write(p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        file(&a.join("tool"), 0o755);
        file(&b.join("plain"), 0o644);
        file(&b.join("late"), 0o700);
        symlink(a.join("tool"), b.join("linked")).unwrap();
        symlink(d.path().join("none"), b.join("dangling")).unwrap();
        let names = [
            "tool", "plain", "late", "linked", "dangling", "dir-tool", "absent", "", "a/tool",
        ];
        let paths = [
            format!("{}:{}", a.display(), b.display()),
            format!(
                "rel:{}:{}:{}",
                b.display(),
                b.display(),
                d.path().join("gone").display()
            ),
            String::new(),
        ];
        for path in &paths {
            let mut on = OnPath::new(Some(OsStr::new(path)));
            for n in names {
                let want = resolve(OsStr::new(n), Some(OsStr::new(path))).is_some();
                assert_eq!(on.has(n), want, "{n:?} on {path:?}");
            }
        }
        let mut default = OnPath::new(None);
        assert_eq!(default.has("sh"), resolve(OsStr::new("sh"), None).is_some());
    }

    #[test]
    fn finds_the_dynamic_loader_of_a_system_binary() {
        let sh = resolve(OsStr::new("sh"), None).expect("sh on PATH");
        let chain = exec_chain(&sh);
        assert_eq!(chain[0], sh);
        // Dynamically linked on every distro this runs on; the loader's
        // name varies by architecture.
        let ld = chain.last().unwrap().to_string_lossy().into_owned();
        assert!(ld.contains("ld-"), "{chain:?}");
    }

    #[test]
    fn follows_a_shebang() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/bin/sh -e\necho hi\n").unwrap();
        let chain = exec_chain(&script);
        assert_eq!(chain[1], PathBuf::from("/bin/sh"));
        assert!(chain.len() >= 3, "{chain:?}");
    }

    #[test]
    fn missing_programs_resolve_to_none() {
        assert_eq!(
            resolve(
                OsStr::new("sbx-no-such-program"),
                Some(OsStr::new("/usr/bin"))
            ),
            None
        );
        assert_eq!(
            resolve(OsStr::new("/x/y"), None),
            Some(PathBuf::from("/x/y"))
        );
    }

    #[test]
    fn reads_pt_interp_far_into_a_large_file() {
        // 64-bit little-endian ELF header whose program header table and
        // interpreter name sit 40 MB in (a sparse file).
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        let far: u64 = 40 << 20;
        let mut head = vec![0u8; 64];
        head[..6].copy_from_slice(b"\x7fELF\x02\x01");
        head[0x20..0x28].copy_from_slice(&far.to_le_bytes());
        head[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        head[0x38..0x3a].copy_from_slice(&2u16.to_le_bytes());
        let name = b"/lib/ld-test.so\0";
        let mut table = vec![0u8; 112];
        table[0..4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        table[56..60].copy_from_slice(&3u32.to_le_bytes()); // PT_INTERP
        table[64..72].copy_from_slice(&(far + 112).to_le_bytes());
        table[88..96].copy_from_slice(&(name.len() as u64).to_le_bytes());
        let f = File::create(&p).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(&head, 0).unwrap();
        f.write_all_at(&table, far).unwrap();
        f.write_all_at(name, far + 112).unwrap();
        assert_eq!(interpreter(&p), Some(PathBuf::from("/lib/ld-test.so")));
        // A truncated name is no interpreter, not a panic.
        f.set_len(far + 112 + 4).unwrap();
        assert_eq!(interpreter(&p), None);
    }
}
