//! Most-specific-wins lookups in time proportional to the path's depth,
//! not to the number of grants: `check` runs them for every rule, and
//! policies with thousands of rules must stay fast.

use crate::hashed::Map;
use crate::ir::{Access, Grant, Ir};
use std::cell::OnceCell;

pub struct Index<'a> {
    ir: &'a Ir,
    /// Path or alias → the last grant naming it (as [`Ir::decide`] picks).
    /// Made at the first [`Index::decide`]: the warnings of a compile ask
    /// only for parents.
    any: OnceCell<Map<&'a str, usize>>,
    /// Path → grant, aliases left out (the rule structure the lints see).
    own: Map<&'a str, usize>,
}

/// `path`, then each ancestor up to `/` (or the `${ROOT}` / drive component).
fn prefixes(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let cur = next?;
        next = match crate::ir::last_slash(cur) {
            Some(0) if cur != "/" => Some("/"),
            Some(0) | None => None,
            Some(i) => Some(&cur[..i]),
        };
        Some(cur)
    })
}

impl<'a> Index<'a> {
    pub fn new(ir: &'a Ir) -> Index<'a> {
        // Sized up front: growing rehashes every path key again.
        let mut own = Map::with_capacity_and_hasher(ir.fs.len(), Default::default());
        for (i, g) in ir.fs.iter().enumerate() {
            own.insert(g.path.as_str(), i);
        }
        Index {
            ir,
            any: OnceCell::new(),
            own,
        }
    }

    /// Same answer as [`Ir::decide`].
    pub fn decide(&self, path: &str) -> Option<&'a Grant> {
        let any = self.any.get_or_init(|| {
            let fs = &self.ir.fs;
            let mut any = Map::with_capacity_and_hasher(fs.len(), Default::default());
            for (i, g) in fs.iter().enumerate() {
                any.insert(g.path.as_str(), i);
                for a in &g.aliases {
                    any.insert(a.as_str(), i);
                }
            }
            any
        });
        prefixes(path)
            .find_map(|p| any.get(p))
            .map(|&i| &self.ir.fs[i])
    }

    pub fn access_at(&self, path: &str) -> Access {
        self.decide(path).map(|g| g.access).unwrap_or_default()
    }

    /// The grant that decides grant `i`'s path when `i` is left out,
    /// looking at grant paths only.
    pub fn parent(&self, i: usize) -> Option<usize> {
        prefixes(&self.ir.fs[i].path)
            .skip(1)
            .find_map(|p| self.own.get(p).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_walk() {
        let v: Vec<&str> = prefixes("/a/b").collect();
        assert_eq!(v, ["/a/b", "/a", "/"]);
        let v: Vec<&str> = prefixes("${WORKSPACE}/x").collect();
        assert_eq!(v, ["${WORKSPACE}/x", "${WORKSPACE}"]);
        assert_eq!(prefixes("/").collect::<Vec<_>>(), ["/"]);
        assert_eq!(prefixes("C:/w").collect::<Vec<_>>(), ["C:/w", "C:"]);
    }
}
