//! `realpath` done one component at a time, each canonical prefix looked at
//! once per lowering. glibc's `realpath` calls `readlink` on every
//! component of every path, and lowering then `stat`s each result for its
//! kind: for a typical policy ~85 `readlink`s and ~30 `stat`s over ~45
//! distinct directories (docs/performance.md). Here one `lstat` per
//! distinct prefix answers both, plus a `readlink` per symlink.
//!
//! The rules are the kernel's path walk: `..` of a canonical directory is
//! its lexical parent (`/..` is `/`), a symlink's target is walked in
//! place (absolute targets from `/`), at most 40 symlinks per path
//! (ELOOP), and a component after a non-directory fails (ENOTDIR), as does
//! a trailing `/` or `.` after one. Any error on a component (missing,
//! denied) fails the whole path, as `realpath` does.

use crate::hashed::Map;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// Linux's MAXSYMLINKS.
const MAX_LINKS: usize = 40;

#[derive(Debug, Clone)]
enum Node {
    Dir,
    File,
    Link(Vec<u8>),
    Fail,
}

/// What one lowering has learned about canonical paths.
#[derive(Debug, Default)]
pub struct Walker {
    nodes: Map<Vec<u8>, Node>,
}

impl Walker {
    /// The canonical form of an absolute `path` and whether it is a
    /// directory; `None` where `realpath` fails (or `path` is relative).
    pub fn realpath(&mut self, path: &[u8]) -> Option<(PathBuf, bool)> {
        if path.first() != Some(&b'/') {
            return None;
        }
        // Symlink targets met on the way; `todo` holds the components
        // still to walk, last first, as (text, start, end) with text 0 the
        // path and text i the i-th target.
        let mut targets: Vec<Vec<u8>> = Vec::new();
        let mut todo: Vec<(usize, usize, usize)> = Vec::new();
        push_components(&mut todo, 0, path);
        let mut cur: Vec<u8> = Vec::with_capacity(path.len() + 16); // "" is the root
        let mut is_dir = true;
        while let Some((text, a, b)) = todo.pop() {
            if !is_dir {
                return None;
            }
            let c = if text == 0 {
                &path[a..b]
            } else {
                &targets[text - 1][a..b]
            };
            match c {
                b"." | b"" => continue,
                b".." => {
                    let cut = cur.iter().rposition(|&b| b == b'/').unwrap_or(0);
                    cur.truncate(cut);
                    continue;
                }
                _ => {}
            }
            let len = cur.len();
            cur.push(b'/');
            cur.extend_from_slice(c);
            match self.node(&cur) {
                Node::Dir => {}
                Node::File => is_dir = false,
                Node::Link(target) => {
                    if targets.len() >= MAX_LINKS || target.is_empty() {
                        return None;
                    }
                    cur.truncate(if target[0] == b'/' { 0 } else { len });
                    push_components(&mut todo, targets.len() + 1, &target);
                    targets.push(target);
                }
                Node::Fail => return None,
            }
        }
        if cur.is_empty() {
            cur.push(b'/');
        }
        Some((PathBuf::from(OsString::from_vec(cur)), is_dir))
    }

    fn node(&mut self, path: &[u8]) -> Node {
        if let Some(n) = self.nodes.get(path) {
            return n.clone();
        }
        let p = std::path::Path::new(OsStr::from_bytes(path));
        let n = match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(p) {
                Ok(t) => Node::Link(t.into_os_string().into_vec()),
                Err(_) => Node::Fail,
            },
            Ok(m) if m.is_dir() => Node::Dir,
            Ok(_) => Node::File,
            Err(_) => Node::Fail,
        };
        self.nodes.insert(path.to_vec(), n.clone());
        n
    }
}

/// Push the components of `s` (text number `text`) onto `todo` so that the
/// first pops first.
fn push_components(todo: &mut Vec<(usize, usize, usize)>, text: usize, s: &[u8]) {
    // A trailing slash asks for a directory, as a trailing `.` does: an
    // empty range at the end stands for it (walked as ".").
    let at = todo.len();
    let mut start = 0;
    for i in 0..=s.len() {
        if i == s.len() || s[i] == b'/' {
            if i > start {
                todo.push((text, start, i));
            }
            start = i + 1;
        }
    }
    if s.len() > 1 && s.ends_with(b"/") && todo.len() > at {
        todo.push((text, s.len(), s.len()));
    }
    todo[at..].reverse();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Every path of a tree full of odd symlinks resolves as
    /// `std::fs::canonicalize` (the C library's `realpath`) resolves it,
    /// and so does every path a second time, from the walker's memory.
    #[test]
    fn resolves_like_realpath() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let r = root.to_str().unwrap();
        for dir in ["a/b/c", "a/x", "e"] {
            std::fs::create_dir_all(format!("{r}/{dir}")).unwrap();
        }
        std::fs::write(format!("{r}/a/f"), "").unwrap();
        let links: &[(&str, String)] = &[
            ("abs", format!("{r}/a")),
            ("rel", "a/b".into()),
            ("up", "../b".into()),         // a/up -> a/../b: missing b
            ("a/b/up2", "../../e".into()), // -> e
            ("a/b/c/deep", "../../../a/b/c/../../x".into()),
            ("a/tofile", "f".into()),
            ("a/tofile_slash", "f/".into()),
            ("a/todir_slash", "b/".into()),
            ("dangling", "/nonexistent-sbx-walk".into()),
            ("loop1", "loop2".into()),
            ("loop2", "loop1".into()),
            ("self", "self".into()),
            ("chain", "abs/b/up2".into()),
            ("root", "/".into()),
            ("dotdot_root", "../../../../../../../..".into()),
            ("empty_dots", "./././a".into()),
        ];
        for (l, t) in links {
            symlink(t, format!("{r}/{l}")).unwrap();
        }
        let tails = [
            "",
            "/",
            "/.",
            "/..",
            "/../..",
            "/b",
            "/b/",
            "/c",
            "/f",
            "/f/",
            "/f/.",
            "/f/..",
            "/m",
            "/m/n",
            "/x/..",
            "/b/c/deep",
            "/b/c/deep/..",
        ];
        let mut heads: Vec<String> = vec!["a".into(), "a/b".into(), "a/f".into(), "e".into()];
        heads.extend(links.iter().map(|(l, _)| l.to_string()));
        heads.extend(["a/./b", "a//b", "a/b/../x", "a/f/../b", "missing/.."].map(String::from));
        let mut w = Walker::default();
        for round in 0..2 {
            for h in &heads {
                for t in tails {
                    let p = format!("{r}/{h}{t}");
                    let want = std::fs::canonicalize(&p).ok().map(|c| {
                        let dir = c.is_dir();
                        (c, dir)
                    });
                    assert_eq!(w.realpath(p.as_bytes()), want, "{p} (round {round})");
                }
            }
        }
        for p in ["/", "//", "/..", "/./.", "/usr/../etc/."] {
            let want = std::fs::canonicalize(p).ok().map(|c| (c, true));
            assert_eq!(Walker::default().realpath(p.as_bytes()), want, "{p}");
        }
        // The symlink limit: a chain of n links resolves up to n = 40, the
        // kernel's limit (glibc's `realpath` agrees, musl's stops at 39),
        // so the kernel is the oracle here: `stat` follows the chain.
        let n = 44;
        for i in 0..n {
            let next = if i + 1 == n {
                "a".to_string()
            } else {
                format!("c{}", i + 1)
            };
            symlink(next, format!("{r}/c{i}")).unwrap();
        }
        for i in 0..n {
            let p = format!("{r}/c{i}");
            // The kernel answers ELOOP now and then for a chain within its
            // limit when the machine is busy (about once in 60,000 `stat`s
            // of 29-34 links on the 2-core guest): a chain resolves if any
            // of a few tries does.
            let want = (0..5)
                .any(|_| std::fs::metadata(&p).is_ok())
                .then(|| (PathBuf::from(format!("{r}/a")), true));
            assert_eq!(Walker::default().realpath(p.as_bytes()), want, "{p}");
        }
        assert!(std::fs::metadata(format!("{r}/c3")).is_err());
        assert!(std::fs::metadata(format!("{r}/c4")).is_ok());
        assert_eq!(w.realpath(b"relative/path"), None);
        assert_eq!(w.realpath(b""), None);
    }
}
