//! A temporary directory tree for lowering tests, addressed by paths
//! relative to its canonical root (lowering compares canonical paths).

use std::fs;
use std::path::Path;

pub struct Tree {
    _dir: tempfile::TempDir,
    root: String,
}

impl Tree {
    /// A new tree holding the directories `dirs`.
    pub fn new(dirs: &[&str]) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::canonical::canonicalize(dir.path())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let t = Tree { _dir: dir, root };
        for d in dirs {
            t.mkdir(d);
        }
        t
    }

    pub fn p(&self, rel: &str) -> String {
        format!("{}/{rel}", self.root)
    }

    pub fn mkdir(&self, rel: &str) {
        fs::create_dir_all(self.p(rel)).unwrap();
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.p(rel);
        fs::create_dir_all(Path::new(&p).parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
}
