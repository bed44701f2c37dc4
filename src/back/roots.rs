//! Which of many rule paths cover one path, found by looking up the path's
//! prefixes instead of testing every rule: time proportional to the
//! path's length, so that per-rule checks stay linear in the rule count.

use crate::hashed::Map;

/// Every string `r` for which [`crate::ir::path_within`]`(path, r)` holds,
/// for `r` a Unix or portable (`${WORKSPACE}/…`) path: `path` itself, and
/// its prefixes ending just before or just after a `/`. May repeat one.
pub fn candidates(path: &str) -> impl Iterator<Item = &str> {
    let cuts = path
        .bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'/')
        .flat_map(|(i, _)| [i, i + 1]);
    std::iter::once(path).chain(cuts.map(move |i| &path[..i]))
}

/// A path other than `/` that ends with `/`. The [`candidates`] that
/// end so (but `/`) need no lookup among paths of which none is one.
pub fn slash_end(p: &str) -> bool {
    p.len() > 1 && p.ends_with('/')
}

/// The [`candidates`] of `path` worth looking up among paths of which
/// some [`slash_end`] only if `slash_ends`: all of them then, else those
/// that do not, and `path` itself.
pub fn lookups(path: &str, slash_ends: bool) -> impl Iterator<Item = &str> {
    candidates(path).filter(move |&c| slash_ends || !slash_end(c) || c == path)
}

/// Rule paths, for finding the rules that cover a path.
pub struct Index<'a> {
    by_path: Map<&'a str, Vec<usize>>,
    /// Whether a path other than `/` ends with `/`: if none does, the
    /// candidates ending just after a `/` (but `/`) need no lookup.
    slash_ends: bool,
}

impl<'a> Index<'a> {
    pub fn new(paths: impl IntoIterator<Item = &'a str>) -> Index<'a> {
        let paths = paths.into_iter();
        let mut by_path: Map<&str, Vec<usize>> =
            Map::with_capacity_and_hasher(paths.size_hint().0, Default::default());
        let mut slash_ends = false;
        for (i, p) in paths.enumerate() {
            slash_ends |= slash_end(p);
            by_path.entry(p).or_default().push(i);
        }
        Index {
            by_path,
            slash_ends,
        }
    }

    /// Indices of the paths `path` lies within, ascending.
    pub fn covering(&self, path: &str) -> Vec<usize> {
        self.add_found(Vec::new(), candidates(path), path)
    }

    /// [`Index::covering`] of `path`, given `above`: that of `path` up to
    /// its last `/` (not the first byte). Siblings share it, so a
    /// directory's entries are looked up once, not once per entry.
    pub fn covering_below(&self, above: &[usize], path: &str) -> Vec<usize> {
        let k = crate::ir::last_slash(path)
            .filter(|&k| k > 0)
            .expect("a path with a parent");
        // `path`'s candidates beyond its directory's (see `candidates`).
        self.add_found(above.to_vec(), [&path[..k + 1], path].into_iter(), path)
    }

    /// `out` and the indices of the candidates of `path` that are rule
    /// paths, ascending.
    fn add_found<'p>(
        &self,
        mut out: Vec<usize>,
        cands: impl Iterator<Item = &'p str>,
        path: &str,
    ) -> Vec<usize> {
        out.extend(
            cands
                .filter(|&c| self.slash_ends || !slash_end(c) || c == path)
                .filter_map(|c| self.by_path.get(c))
                .flatten()
                .copied(),
        );
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::path_within;

    /// The index answers as testing every path with `path_within` does,
    /// siblings sharing a prefix (`d/1`, `d/10`) included, with and
    /// without a rule path ending in `/`.
    #[test]
    fn same_as_path_within() {
        let all = [
            "/",
            "/w",
            "/w/d/1",
            "/w/d/10",
            "/w/d/1/x",
            "/w/d/100",
            "/w/d",
            "/w/d/",
            "/wx",
            "${WORKSPACE}",
            "${WORKSPACE}/d/1",
            "${WORKSPACE}/d/10",
            "/w//d",
            "/w/d/1",
        ];
        let plain: Vec<&str> = all.into_iter().filter(|r| *r != "/w/d/").collect();
        for rules in [&all[..], &plain[..]] {
            same_for(rules);
        }
    }

    fn same_for(rules: &[&str]) {
        let idx = Index::new(rules.iter().copied());
        for p in [
            "/",
            "/w",
            "/w/d/1",
            "/w/d/10",
            "/w/d/10/y",
            "/w/d/1/x/z",
            "/w/d/2",
            "/wx/a",
            "/w/d/100",
            "/w//d/1",
            "${WORKSPACE}/d/10/a",
            "${WORKSPACE}/d/1",
            "${WORKSPACE}",
            "/w/d/",
            "relative/x",
        ] {
            let want: Vec<usize> = (0..rules.len())
                .filter(|&i| path_within(p, rules[i]))
                .collect();
            assert_eq!(idx.covering(p), want, "{p}");
            if let Some(k) = p.rfind('/').filter(|&k| k > 0) {
                let above = idx.covering(&p[..k]);
                assert_eq!(idx.covering_below(&above, p), want, "{p} below");
            }
        }
    }
}
