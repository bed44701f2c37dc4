//! Positions: byte offsets to lines and character columns.

/// Byte offset to 1-based line and character column, in O(1)-ish time even on
/// one huge line: character counts are kept at every [`BLOCK`] bytes.
pub(super) struct LineIndex<'a> {
    src: &'a [u8],
    starts: Vec<usize>,
    /// `chars_at[k]` = characters that start before byte `k * BLOCK`.
    chars_at: Vec<usize>,
}

const BLOCK: usize = 64;

/// UTF-8 continuation bytes do not start a character.
fn starts_char(b: &u8) -> bool {
    b & 0xC0 != 0x80
}

impl<'a> LineIndex<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        let src = src.as_bytes();
        let mut chars_at = vec![0];
        for chunk in src.chunks(BLOCK) {
            let before = chars_at.last().copied().unwrap_or(0);
            chars_at.push(before + chunk.iter().filter(|b| starts_char(b)).count());
        }
        Self {
            src,
            starts,
            chars_at,
        }
    }

    fn chars_before(&self, offset: usize) -> usize {
        let block = offset / BLOCK;
        let from = block * BLOCK;
        self.chars_at[block]
            + self.src[from..offset]
                .iter()
                .filter(|b| starts_char(b))
                .count()
    }

    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.src.len());
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (
            line,
            self.chars_before(offset) - self.chars_before(start) + 1,
        )
    }
}
