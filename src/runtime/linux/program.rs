//! Finding the program to run and the files `execve` will open for it.
//!
//! Landlock checks `execute` (and `read_file`) on every file the kernel
//! opens to start a program: the program, its `#!` interpreter, and the
//! ELF interpreter (`PT_INTERP`, the dynamic loader). Shared libraries are
//! mapped by the loader with plain reads, so they need only `read_file`.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

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
    let dirs = path_var.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(dirs)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|c| is_executable_file(c))
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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
    let mut head = Vec::new();
    File::open(p).ok()?.take(256).read_to_end(&mut head).ok()?;
    if let Some(rest) = head.strip_prefix(b"#!") {
        let line = rest.split(|b| *b == b'\n').next()?;
        let word = line
            .split(|b| *b == b' ' || *b == b'\t')
            .find(|w| !w.is_empty())?;
        let path = PathBuf::from(OsString::from(OsStr::from_bytes(word)));
        return path.is_absolute().then_some(path);
    }
    if head.starts_with(b"\x7fELF") {
        return elf_interp(p);
    }
    None
}

/// Read `PT_INTERP` from an ELF file (32/64-bit, either byte order).
fn elf_interp(p: &Path) -> Option<PathBuf> {
    let data = std::fs::read(p).ok()?;
    let class64 = match data.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let le = match data.get(5)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let rd = |off: usize, len: usize| -> Option<u64> {
        let b = data.get(off..off + len)?;
        let mut v: u64 = 0;
        for i in 0..len {
            let byte = if le { b[len - 1 - i] } else { b[i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    };
    let (phoff, phentsize, phnum) = if class64 {
        (rd(0x20, 8)?, rd(0x36, 2)?, rd(0x38, 2)?)
    } else {
        (rd(0x1c, 4)?, rd(0x2a, 2)?, rd(0x2c, 2)?)
    };
    for i in 0..phnum {
        let ph = usize::try_from(phoff + i * phentsize).ok()?;
        if rd(ph, 4)? != 3 {
            continue; // not PT_INTERP
        }
        let (off, size) = if class64 {
            (rd(ph + 8, 8)?, rd(ph + 32, 8)?)
        } else {
            (rd(ph + 4, 4)?, rd(ph + 16, 4)?)
        };
        let start = usize::try_from(off).ok()?;
        let bytes = data.get(start..start + usize::try_from(size).ok()?)?;
        let bytes = bytes.split(|b| *b == 0).next()?;
        return Some(PathBuf::from(OsStr::from_bytes(bytes)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
