//! The grants' texts (each grant's path and aliases) by text, for the
//! SBPL back end's most-specific-wins lookups: which grant a text is
//! the path or alias of.
//!
//! A hash map keyed by the texts (`&str`, 16 bytes, and an index) was
//! 50 MiB of the SBPL lane at 100,000 rules, where on macOS most grants
//! have an alias besides their path (#38). This table keeps 8 bytes a
//! slot, the grant and which of its texts, and reads the text from the
//! grant; a few bits of each text's hash in the slot spare reading the
//! texts of other slots on the way.

use crate::hashed::Map;
use std::hash::BuildHasher;

/// Slots of `(grant + 1) << 32 | text << 16 | tag`; 0 is empty.
pub(super) struct Texts<'a> {
    hasher: foldhash::fast::RandomState,
    slots: Vec<u64>,
    /// Texts past a grant's first [`IN_SLOT`] (never, in practice).
    more: Map<&'a str, usize>,
}

/// How many of a grant's texts a slot can name.
const IN_SLOT: usize = 1 << 16;

impl<'a> Texts<'a> {
    /// Room for `n` texts: a quarter of the slots or more stay empty, so
    /// a probe ends soon.
    pub fn with_capacity(n: usize) -> Texts<'a> {
        let slots = (n + n / 3 + 1).next_power_of_two().max(8);
        Texts {
            hasher: Default::default(),
            slots: vec![0; slots],
            more: Map::default(),
        }
    }

    fn tag(h: u64) -> u64 {
        h >> 48
    }

    /// The slot `text` (whose hash is `h`) is in (`Ok`), or the empty one
    /// where it would go (`Err`); `text_of(grant, k)` is the grant's `k`th text (0: its
    /// path).
    fn find<'t>(
        &self,
        h: u64,
        text: &str,
        text_of: impl Fn(usize, usize) -> &'t str,
    ) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut at = h as usize & mask;
        loop {
            let s = self.slots[at];
            if s == 0 {
                return Err(at);
            }
            if s & 0xffff == Self::tag(h)
                && text_of((s >> 32) as usize - 1, (s >> 16 & 0xffff) as usize) == text
            {
                return Ok(at);
            }
            at = (at + 1) & mask;
        }
    }

    /// The grant `text` is a text of, if any ([`Texts::find`]'s `text_of`).
    pub fn get<'t>(&self, text: &str, text_of: impl Fn(usize, usize) -> &'t str) -> Option<usize> {
        match self.find(self.hasher.hash_one(text), text, text_of) {
            Ok(at) => Some((self.slots[at] >> 32) as usize - 1),
            Err(_) => self.more.get(text).copied(),
        }
    }

    /// Record `text`, grant `grant`'s `k`th, unless some grant has it
    /// already: returns that grant, or `grant`. The table must have room
    /// ([`Texts::with_capacity`]).
    pub fn insert<'t>(
        &mut self,
        text: &'a str,
        grant: usize,
        k: usize,
        text_of: impl Fn(usize, usize) -> &'t str,
    ) -> usize {
        let h = self.hasher.hash_one(text);
        let empty = match self.find(h, text, &text_of) {
            Ok(at) => return (self.slots[at] >> 32) as usize - 1,
            Err(at) => at,
        };
        if let Some(&other) = self.more.get(text) {
            return other;
        }
        if k >= IN_SLOT {
            self.more.insert(text, grant);
            return grant;
        }
        let g = u32::try_from(grant + 1).expect("fewer than 2^32 grants");
        self.slots[empty] = u64::from(g) << 32 | (k as u64) << 16 | Self::tag(h);
        grant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_grant_of_a_text_keeps_it() {
        let grants: Vec<Vec<String>> = (0..1000)
            .map(|i| vec![format!("/a/{i}"), format!("/b/{}", i % 10)])
            .collect();
        let text_of = |g: usize, k: usize| grants[g][k].as_str();
        let mut t = Texts::with_capacity(2000);
        for (g, texts) in grants.iter().enumerate() {
            for (k, s) in texts.iter().enumerate() {
                let first = t.insert(s, g, k, text_of);
                assert_eq!(first, if k == 1 { g % 10 } else { g });
            }
        }
        assert_eq!(t.get("/a/7", text_of), Some(7));
        assert_eq!(t.get("/b/7", text_of), Some(7));
        assert_eq!(t.get("/b/17", text_of), None);
        assert_eq!(t.get("/a", text_of), None);
    }
}
