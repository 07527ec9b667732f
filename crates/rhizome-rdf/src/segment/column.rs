//! One id column of a block, encoded on its own.
//!
//! Every column is a sequence of little-endian u64 words: a descriptor
//! word, then what its kind needs:
//!
//! - `CONST`: one base word; every row holds it.
//! - `FOR` (frame of reference, patched): the base, then 1,024 values of
//!   `width` bits packed in FastLanes' layout (`16 * width` words, the
//!   `fastlanes` crate; a block of fewer rows packs zeros after them),
//!   then `count` exceptions: positions (four u16 a word) and full values.
//!   A row's id is `base + packed` unless it is an exception. Exceptions
//!   keep one far value (an inlined literal among dictionary ids, whose
//!   top byte differs) from widening every row.
//! - `RUNS`: `count` runs, the base, their values as `width`-bit offsets
//!   from it and their exclusive end rows as `end_width`-bit numbers
//!   (plain bit streams, see [`BitStream`]): sorted leading columns
//!   repeat (a subject's quads, a predicate's objects).
//! - `CLUSTERED`: ids in `count` clusters, each within `2^width` of its
//!   base: the base word unused, then the bases in increasing order, each
//!   row's cluster as an `end_width`-bit index (a bit stream) and each
//!   row's offset from its cluster's base packed in `width` bits as in
//!   `FOR`. With `width` 0 it is a dictionary (a block's few predicates,
//!   whose ids are far apart); with wider clusters it keeps apart the
//!   kinds of ids an object column mixes (IRIs, strings, inlined numbers,
//!   dates and short strings, whose top bytes differ and whose payloads
//!   are unrelated), each narrow on its own.
//!
//! - `DELTA` (segment format 2): the base, then `count` exceptions'
//!   positions (four u16 a word, the first row always one), their ids as
//!   `end_width`-bit offsets from the base (a bit stream), then the other
//!   rows' steps from the row before as `width`-bit numbers (a bit
//!   stream). A row's id is its last exception's plus the steps after it;
//!   exceptions are the rows whose step falls or is too wide (a new
//!   predicate and object, in POS's subject column) and, as checkpoints,
//!   a row at least every [`DELTA_CHECKPOINT_ROWS`], so a row costs at
//!   most that many steps to read. Subjects sorted within one predicate
//!   and object (POS) or one object (OSP) step by a few ids where their
//!   frame spans 2^16 or more.
//!
//! Descriptor word, low byte first: kind (8 bits), width (8), count (16),
//! end width (8), 24 bits zero.
//!
//! Any row can be read without decoding the others (a lookup reads a few
//! rows of a block); a whole column decodes into 1,024 ids at once (a scan).

use super::{corrupt, BLOCK_ROWS};
use crate::Result;
use fastlanes::{BitPacking, FoR};

pub(super) const CONST: u8 = 0;
pub(super) const FOR: u8 = 1;
pub(super) const RUNS: u8 = 2;
pub(super) const CLUSTERED: u8 = 3;
pub(super) const DELTA: u8 = 4;

/// Rows at most from one exception of a `DELTA` column to the next (or to
/// the block's end): a row's id sums fewer steps than this. 32 keeps a
/// lookup's extra reading to about 16 steps; 16 would cost 0.6 MB more
/// at 4.8M, 64 save 0.3 MB (a model of the Faculty 4.8M subjects).
pub(super) const DELTA_CHECKPOINT_ROWS: usize = 32;

/// Words of 1,024 values packed `width` bits each.
fn packed_words(width: usize) -> usize {
    16 * width
}

fn bits(range: u64) -> usize {
    64 - range.leading_zeros() as usize
}

/// A plain little-endian bit stream of `width`-bit values (value `i` at
/// bit `i * width`): for the short arrays of a `RUNS` column, where
/// FastLanes' 1,024-value frames would waste space.
pub(super) struct BitStream<'a> {
    words: &'a [u64],
    width: usize,
}

impl<'a> BitStream<'a> {
    pub fn words_for(count: usize, width: usize) -> usize {
        (count * width).div_ceil(64)
    }

    pub fn pack(values: impl Iterator<Item = u64>, width: usize, out: &mut Vec<u64>) {
        let start = out.len();
        let mut bit = 0usize;
        for v in values {
            if width == 0 {
                continue;
            }
            let (word, shift) = (bit / 64, bit % 64);
            if start + word >= out.len() {
                out.push(0);
            }
            out[start + word] |= v << shift;
            if shift + width > 64 {
                out.push(v >> (64 - shift));
            }
            bit += width;
        }
    }

    pub fn get(&self, i: usize) -> u64 {
        if self.width == 0 {
            return 0;
        }
        let bit = i * self.width;
        let (word, shift) = (bit / 64, bit % 64);
        let mut v = self.words[word] >> shift;
        if shift + self.width > 64 {
            v |= self.words[word + 1] << (64 - shift);
        }
        if self.width == 64 {
            v
        } else {
            v & ((1u64 << self.width) - 1)
        }
    }

    /// Calls `f(i, value)` for values `0..count` in order, for widths 1 to
    /// 63: one sliding word instead of `get`'s position arithmetic per
    /// value (a whole column's decode reads every row's value this way).
    #[inline]
    pub fn for_each(&self, count: usize, mut f: impl FnMut(usize, u64)) {
        let width = self.width;
        debug_assert!((1..64).contains(&width));
        let mask = (1u64 << width) - 1;
        let (mut next_word, mut window, mut left) = (1, self.words.first().copied().unwrap_or(0), 64);
        for i in 0..count {
            let v = if left >= width {
                let v = window & mask;
                window >>= width;
                left -= width;
                v
            } else {
                // The value straddles two words: its low bits are what is
                // left of this one.
                let word = self.words[next_word];
                next_word += 1;
                let v = (window | word << left) & mask;
                window = word >> (width - left);
                left = 64 - (width - left);
                v
            };
            f(i, v);
        }
    }
}

impl BitStream<'_> {
    /// As [`Self::for_each`], for values `start..start + count` (`f` gets
    /// `0..count`).
    #[inline]
    pub fn for_each_from(&self, start: usize, count: usize, mut f: impl FnMut(usize, u64)) {
        let width = self.width;
        debug_assert!((1..64).contains(&width));
        if count == 0 {
            return;
        }
        let mask = (1u64 << width) - 1;
        let bit = start * width;
        let (mut next_word, mut window, mut left) = (bit / 64 + 1, self.words[bit / 64] >> (bit % 64), 64 - bit % 64);
        for i in 0..count {
            let v = if left >= width {
                let v = window & mask;
                window = if width < 64 { window >> width } else { 0 };
                left -= width;
                v
            } else {
                let word = self.words[next_word];
                next_word += 1;
                let v = (window | word << left) & mask;
                window = word >> (width - left);
                left = 64 - (width - left);
                v
            };
            f(i, v);
        }
    }
}

/// A parsed column: slices of the block's words, checked to be as long as
/// the descriptor says.
#[derive(Clone, Copy)]
pub(super) enum Column<'a> {
    Const(u64),
    For { base: u64, width: usize, packed: &'a [u64], positions: &'a [u64], exceptions: &'a [u64] },
    Runs { base: u64, values: (&'a [u64], usize), ends: (&'a [u64], usize), count: usize },
    Clustered { bases: &'a [u64], clusters: (&'a [u64], usize), width: usize, packed: &'a [u64] },
    /// Its widths and count are read from its `descriptor` word: a field
    /// narrower than a word would sit in the bytes after the enum's tag,
    /// which every copy of a parsed column (several, each time a cursor
    /// enters a block) then moves too (+100 instructions a block).
    Delta { base: u64, descriptor: u64, positions: &'a [u64], values: &'a [u64], deltas: &'a [u64] },
}

impl<'a> Column<'a> {
    /// Parses the column at the start of `words` for a block of `rows`
    /// (`DELTA` only when `delta`: a file of format 2 or later); returns
    /// it and the words it took.
    pub fn parse(words: &'a [u64], rows: usize, delta: bool) -> Result<(Column<'a>, usize)> {
        let (&descriptor, rest) = words.split_first().ok_or_else(|| corrupt("a column is cut short"))?;
        let kind = descriptor as u8;
        let width = (descriptor >> 8) as u8 as usize;
        let count = (descriptor >> 16) as u16 as usize;
        let end_width = (descriptor >> 32) as u8 as usize;
        if descriptor >> 40 != 0 {
            return Err(corrupt("a column descriptor has unknown bits set"));
        }
        let &base = rest.first().ok_or_else(|| corrupt("a column has no base"))?;
        let rest = &rest[1..];
        let take = |n: usize| rest.get(..n).ok_or_else(|| corrupt("a column is longer than its block"));
        match kind {
            CONST if width == 0 && count == 0 && end_width == 0 => Ok((Column::Const(base), 2)),
            FOR if width <= 64 && count <= rows && end_width == 0 => {
                let position_words = count.div_ceil(4);
                let n = packed_words(width) + position_words + count;
                let all = take(n)?;
                let (packed, rest) = all.split_at(packed_words(width));
                let (positions, exceptions) = rest.split_at(position_words);
                Ok((Column::For { base, width, packed, positions, exceptions }, 2 + n))
            }
            RUNS if width <= 64 && (1..=rows).contains(&count) && (1..=16).contains(&end_width) => {
                let (vw, ew) = (BitStream::words_for(count, width), BitStream::words_for(count, end_width));
                let all = take(vw + ew)?;
                let (values, ends) = all.split_at(vw);
                Ok((Column::Runs { base, values: (values, width), ends: (ends, end_width), count }, 2 + vw + ew))
            }
            CLUSTERED if width <= 64 && (2..=rows).contains(&count) && (1..=16).contains(&end_width) && base == 0 => {
                let cw = BitStream::words_for(rows, end_width);
                let all = take(count + cw + packed_words(width))?;
                let (bases, rest) = all.split_at(count);
                let (clusters, packed) = rest.split_at(cw);
                Ok((Column::Clustered { bases, clusters: (clusters, end_width), width, packed }, 2 + count + cw + packed_words(width)))
            }
            DELTA if delta && width < 64 && (1..=rows).contains(&count) && end_width <= 64 => {
                let (pw, vw, dw) = (count.div_ceil(4), BitStream::words_for(count, end_width), BitStream::words_for(rows - count, width));
                let all = take(pw + vw + dw)?;
                let (positions, rest) = all.split_at(pw);
                let (values, deltas) = rest.split_at(vw);
                Ok((Column::Delta { base, descriptor, positions, values, deltas }, 2 + pw + vw + dw))
            }
            _ => Err(corrupt(&format!("unknown column encoding {kind} (width {width}, count {count})"))),
        }
    }

    /// What `parse` does not check, once per block (`get` and `decode`
    /// rely on it): exception positions are rows in increasing order, runs
    /// end in increasing order at the block's end, tag indexes are tags.
    pub fn validate(&self, rows: usize) -> Result<()> {
        match *self {
            Column::Const(_) => {}
            Column::For { positions, exceptions, .. } => {
                let mut last = None;
                for i in 0..exceptions.len() {
                    let p = position(positions, i);
                    if p >= rows || last.is_some_and(|l| p <= l) {
                        return Err(corrupt("a column's exceptions are out of order"));
                    }
                    last = Some(p);
                }
            }
            Column::Runs { ends, count, .. } => {
                let ends = BitStream { words: ends.0, width: ends.1 };
                let mut last = 0;
                for i in 0..count {
                    let e = ends.get(i) as usize;
                    if e <= last || e > rows {
                        return Err(corrupt("a column's runs are out of order"));
                    }
                    last = e;
                }
                if last != rows {
                    return Err(corrupt("a column's runs do not cover its block"));
                }
            }
            Column::Clustered { bases, clusters, .. } => {
                let clusters = BitStream { words: clusters.0, width: clusters.1 };
                if (0..rows).any(|r| clusters.get(r) as usize >= bases.len()) {
                    return Err(corrupt("a column names a cluster it does not have"));
                }
            }
            Column::Delta { positions, descriptor, .. } => {
                let count = delta_shape(descriptor).2;
                // The first row an exception, each later one past the one
                // before and within a checkpoint's reach, as the last row.
                let mut last = 0;
                for i in 0..count {
                    let p = position(positions, i);
                    if (i == 0 && p != 0) || (i > 0 && (p <= last || p - last > DELTA_CHECKPOINT_ROWS)) || p >= rows {
                        return Err(corrupt("a column's checkpoints are out of order"));
                    }
                    last = p;
                }
                if rows - last > DELTA_CHECKPOINT_ROWS {
                    return Err(corrupt("a column's checkpoints do not cover its block"));
                }
            }
        }
        Ok(())
    }

    /// The rows of `lo..hi` whose id is `target`, as `start..end`, for a
    /// column sorted over those rows (a block's rows whose earlier columns
    /// equal a seek's earlier ids): `start` is the first row at or above
    /// `target`, `end` the first above it. A seek narrows its rows column
    /// by column this way; a constant column answers at once and a
    /// run-length one searches its runs between `lo` and `hi`, not its
    /// rows (a binary search over rows with `get` reads a run's end list
    /// for every probe: a third of q20's instructions).
    pub fn equal_range(&self, lo: usize, hi: usize, target: u64) -> (usize, usize) {
        if lo >= hi {
            return (lo, lo);
        }
        match *self {
            Column::Const(v) => match v.cmp(&target) {
                std::cmp::Ordering::Less => (hi, hi),
                std::cmp::Ordering::Equal => (lo, hi),
                std::cmp::Ordering::Greater => (lo, lo),
            },
            Column::Runs { base, values, ends, count } => {
                let (values, bounds) = (BitStream { words: values.0, width: values.1 }, BitStream { words: ends.0, width: ends.1 });
                let first = if lo == 0 { 0 } else { run_of(ends, count, lo) };
                let last = run_of(ends, count, hi - 1);
                // The first run from `first` to `last` whose value is at
                // or above (`strict`: above) the target; its first row
                // within `lo..hi`.
                let search = |strict: bool| {
                    let (mut a, mut b) = (first, last + 1);
                    while a < b {
                        let mid = (a + b) / 2;
                        let v = base.wrapping_add(values.get(mid));
                        if v < target || (strict && v == target) {
                            a = mid + 1;
                        } else {
                            b = mid;
                        }
                    }
                    match a {
                        a if a == first => lo,
                        a if a > last => hi,
                        a => bounds.get(a - 1) as usize,
                    }
                };
                let start = search(false);
                (start, if start == hi { hi } else { search(true) })
            }
            Column::Delta { base, descriptor, positions, values, .. } => {
                // A row costs up to 31 steps to read alone: the search is
                // over the checkpoints (full ids) between `lo` and `hi`,
                // then over the at most 32 rows decoded before the first
                // checkpoint at or above the target.
                let (_, value_width, count) = delta_shape(descriptor);
                let checkpoint = |i: usize| base.wrapping_add(BitStream { words: values, width: value_width }.get(i));
                // The checkpoints strictly inside `lo..hi`.
                let first = search_positions(positions, count, lo).map_or_else(|i| i, |i| i + 1);
                let last = search_positions(positions, count, hi).unwrap_or_else(|i| i);
                let mut rows = [0u64; DELTA_CHECKPOINT_ROWS];
                let mut search = |strict: bool| {
                    let below = |v: u64| v < target || (strict && v == target);
                    let (mut a, mut b) = (first, last.max(first));
                    while a < b {
                        let mid = (a + b) / 2;
                        if below(checkpoint(mid)) {
                            a = mid + 1;
                        } else {
                            b = mid;
                        }
                    }
                    // The rows from the checkpoint before (or `lo`) to it
                    // (or `hi`): fewer than a checkpoint's reach.
                    let from = if a == first { lo } else { position(positions, a - 1) };
                    let to = if a >= last { hi } else { position(positions, a) };
                    let rows = &mut rows[..to - from];
                    self.decode_range(from, rows);
                    from + rows.partition_point(|v| below(*v))
                };
                let start = search(false);
                (start, if start == hi { hi } else { search(true) })
            }
            _ => {
                let below = |row: usize, strict: bool| {
                    let v = self.get(row);
                    v < target || (strict && v == target)
                };
                let search = |mut a: usize, mut b: usize, strict: bool| {
                    while a < b {
                        let mid = (a + b) / 2;
                        if below(mid, strict) {
                            a = mid + 1;
                        } else {
                            b = mid;
                        }
                    }
                    a
                };
                let start = search(lo, hi, false);
                if start == hi || !below(start, true) {
                    return (start, start);
                }
                // The rows equal to the target are few (a lookup's): found
                // by galloping from the first, not by halving to `hi`.
                let mut step = 1;
                while start + step < hi && below(start + step, true) {
                    step *= 2;
                }
                (start, search(start + step / 2 + 1, (start + step).min(hi), true))
            }
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Column::Const(_) => "const",
            Column::For { .. } => "for",
            Column::Runs { .. } => "runs",
            Column::Clustered { .. } => "clustered",
            Column::Delta { .. } => "delta",
        }
    }

    /// The id at `row`.
    #[inline]
    pub fn get(&self, row: usize) -> u64 {
        match *self {
            Column::Const(v) => v,
            Column::For { base, width, packed, positions, exceptions } => {
                if !exceptions.is_empty() {
                    if let Ok(i) = search_positions(positions, exceptions.len(), row) {
                        return exceptions[i];
                    }
                }
                // SAFETY: `parse` checked that `packed` is 16 * width words
                // and width <= 64; rows are below BLOCK_ROWS.
                let packed_value = unsafe { u64::unchecked_unpack_single(width, packed, row) };
                base.wrapping_add(packed_value)
            }
            Column::Runs { base, values, ends, count } => {
                let run = run_of(ends, count, row);
                base.wrapping_add(BitStream { words: values.0, width: values.1 }.get(run))
            }
            Column::Clustered { bases, clusters, width, packed } => {
                let cluster = BitStream { words: clusters.0, width: clusters.1 }.get(row) as usize;
                // SAFETY: as in `get` for FOR.
                bases[cluster].wrapping_add(unsafe { u64::unchecked_unpack_single(width, packed, row) })
            }
            Column::Delta { base, descriptor, positions, values, deltas } => {
                let (width, value_width, count) = delta_shape(descriptor);
                let i = match search_positions(positions, count, row) {
                    Ok(i) => return base.wrapping_add(BitStream { words: values, width: value_width }.get(i)),
                    // Row 0 is an exception, so one is before `row`.
                    Err(after) => after - 1,
                };
                let from = position(positions, i);
                let mut id = base.wrapping_add(BitStream { words: values, width: value_width }.get(i));
                if width > 0 {
                    // The steps of rows from + 1..=row: after the i + 1
                    // exceptions up to row `from`.
                    BitStream { words: deltas, width }.for_each_from(from - i, row - from, |_, step| id = id.wrapping_add(step));
                }
                id
            }
        }
    }

    /// The id at `row` and the rows around it that hold the same id for
    /// certain (`start..end`): a run, the whole block for a constant, just
    /// `row` otherwise. A cursor reading rows one by one reads a run once.
    #[inline]
    pub fn get_span(&self, row: usize) -> (u64, usize, usize) {
        match *self {
            Column::Const(v) => (v, 0, BLOCK_ROWS),
            Column::Runs { base, values, ends, count } => {
                let run = run_of(ends, count, row);
                let bounds = BitStream { words: ends.0, width: ends.1 };
                let start = if run == 0 { 0 } else { bounds.get(run - 1) as usize };
                (base.wrapping_add(BitStream { words: values.0, width: values.1 }.get(run)), start, bounds.get(run) as usize)
            }
            _ => (self.get(row), row, row + 1),
        }
    }

    /// The ids of rows `from..from + out.len()` into `out`: a lookup's
    /// few rows without decoding the whole block.
    pub fn decode_range(&self, from: usize, out: &mut [u64]) {
        let to = from + out.len();
        match *self {
            Column::Const(v) => out.fill(v),
            Column::For { base, width, packed, positions, exceptions } => {
                for (row, v) in out.iter_mut().enumerate() {
                    // SAFETY: as in `get`.
                    *v = base.wrapping_add(unsafe { u64::unchecked_unpack_single(width, packed, from + row) });
                }
                if !exceptions.is_empty() {
                    let mut i = search_positions(positions, exceptions.len(), from).unwrap_or_else(|i| i);
                    while i < exceptions.len() && position(positions, i) < to {
                        out[position(positions, i) - from] = exceptions[i];
                        i += 1;
                    }
                }
            }
            Column::Runs { base, values, ends, count } => {
                let (run, values, bounds) = (run_of(ends, count, from), BitStream { words: values.0, width: values.1 }, BitStream { words: ends.0, width: ends.1 });
                let mut start = from;
                for run in run..count {
                    let end = (bounds.get(run) as usize).min(to);
                    out[start - from..end - from].fill(base.wrapping_add(values.get(run)));
                    if end == to {
                        break;
                    }
                    start = end;
                }
            }
            Column::Clustered { bases, clusters, width, packed } => {
                let clusters = BitStream { words: clusters.0, width: clusters.1 };
                for (row, v) in out.iter_mut().enumerate() {
                    // SAFETY: as in `get` for FOR.
                    *v = bases[clusters.get(from + row) as usize].wrapping_add(unsafe { u64::unchecked_unpack_single(width, packed, from + row) });
                }
            }
            Column::Delta { base, descriptor, positions, values, deltas } => {
                let (width, value_width, count) = delta_shape(descriptor);
                if out.is_empty() {
                    return;
                }
                let (values, deltas) = (BitStream { words: values, width: value_width }, BitStream { words: deltas, width });
                // From the last exception at or before `from`: its steps up
                // to `from` summed, then each stretch between exceptions
                // read as one run of the step stream (a step of row r after
                // exception i is the stream's value r - i - 1), not a bit
                // lookup per row.
                let mut i = search_positions(positions, count, from).unwrap_or_else(|after| after - 1);
                let mut row = position(positions, i);
                let mut id = base.wrapping_add(values.get(i));
                if row == from {
                    out[0] = id;
                }
                loop {
                    let next = if i + 1 < count { position(positions, i + 1) } else { usize::MAX };
                    let stretch_end = next.min(to);
                    if stretch_end > row + 1 {
                        if width > 0 {
                            // Rows before `from` (in the first stretch only)
                            // are summed, not written.
                            let first = row + 1;
                            deltas.for_each_from(row - i, stretch_end - first, |k, step| {
                                id = id.wrapping_add(step);
                                if first + k >= from {
                                    out[first + k - from] = id;
                                }
                            });
                        } else {
                            let at = (row + 1).max(from) - from;
                            out[at..stretch_end - from].fill(id);
                        }
                    }
                    if next >= to {
                        break;
                    }
                    i += 1;
                    id = base.wrapping_add(values.get(i));
                    out[next - from] = id;
                    row = next;
                }
            }
        }
    }

    /// Every id of the block into `out` (`out.len()` = BLOCK_ROWS).
    pub fn decode(&self, rows: usize, out: &mut [u64; BLOCK_ROWS]) {
        match *self {
            Column::Const(v) => out[..rows].fill(v),
            Column::For { base, width, packed, positions, exceptions } => {
                // SAFETY: as in `get`.
                unsafe { u64::unchecked_unfor_pack(width, packed, base, out) };
                for (i, v) in exceptions.iter().enumerate() {
                    out[position(positions, i)] = *v;
                }
            }
            Column::Runs { base, values, ends, count } => {
                let (values, ends) = (BitStream { words: values.0, width: values.1 }, BitStream { words: ends.0, width: ends.1 });
                let mut start = 0;
                for run in 0..count {
                    let end = ends.get(run) as usize;
                    out[start..end].fill(base.wrapping_add(values.get(run)));
                    start = end;
                }
            }
            Column::Clustered { bases, clusters, width, packed } => {
                let clusters = BitStream { words: clusters.0, width: clusters.1 };
                if width == 0 {
                    // A dictionary: each row is its cluster's base.
                    let out = &mut out[..rows];
                    clusters.for_each(rows, |row, cluster| out[row] = bases[cluster as usize]);
                } else {
                    // SAFETY: as in `get` for FOR.
                    unsafe { u64::unchecked_unpack(width, packed, out) };
                    let out = &mut out[..rows];
                    clusters.for_each(rows, |row, cluster| out[row] = bases[cluster as usize].wrapping_add(out[row]));
                }
            }
            Column::Delta { base, descriptor, positions, values, deltas } => {
                let (width, value_width, count) = delta_shape(descriptor);
                let mut steps = [0u64; BLOCK_ROWS];
                if width > 0 {
                    BitStream { words: deltas, width }.for_each(rows - count, |k, step| steps[k] = step);
                }
                let values = BitStream { words: values, width: value_width };
                let mut k = 0;
                for i in 0..count {
                    let (start, end) = (position(positions, i), if i + 1 < count { position(positions, i + 1) } else { rows });
                    let mut id = base.wrapping_add(values.get(i));
                    out[start] = id;
                    for v in &mut out[start + 1..end] {
                        id = id.wrapping_add(steps[k]);
                        k += 1;
                        *v = id;
                    }
                }
            }
        }
    }
}

/// A `DELTA` descriptor's step width, exception width and exceptions.
#[inline]
fn delta_shape(descriptor: u64) -> (usize, usize, usize) {
    ((descriptor >> 8) as u8 as usize, (descriptor >> 32) as u8 as usize, (descriptor >> 16) as u16 as usize)
}

fn position(positions: &[u64], i: usize) -> usize {
    (positions[i / 4] >> (16 * (i % 4))) as u16 as usize
}

fn search_positions(positions: &[u64], count: usize, row: usize) -> std::result::Result<usize, usize> {
    let (mut lo, mut hi) = (0, count);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match position(positions, mid).cmp(&row) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// The run holding `row`: the first whose end is past it.
fn run_of(ends: (&[u64], usize), count: usize, row: usize) -> usize {
    let ends = BitStream { words: ends.0, width: ends.1 };
    let (mut lo, mut hi) = (0, count - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if ends.get(mid) as usize > row {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Encodes `values` (1 to BLOCK_ROWS ids) as the smallest of the kinds
/// (`DELTA` among them only when `delta`: a file of format 2 or later).
pub(super) fn encode(values: &[u64], delta: bool, out: &mut Vec<u64>) {
    debug_assert!(!values.is_empty() && values.len() <= BLOCK_ROWS);
    let first = values[0];
    if values.iter().all(|v| *v == first) {
        out.push(CONST as u64);
        out.push(first);
        return;
    }
    let mut sorted = [0u64; BLOCK_ROWS];
    let sorted = &mut sorted[..values.len()];
    sorted.copy_from_slice(values);
    sorted.sort_unstable();
    let runs = plan_runs(values).map_or(usize::MAX, |(words, _)| words);
    let delta = plan_delta(values).filter(|_| delta);
    // A frame of reference larger than runs or deltas is never chosen; its
    // exact size then changes no choice below (a larger one is reported).
    let (for_words, for_plan) = plan_for(sorted, runs.min(delta.map_or(usize::MAX, |(words, _)| words)));
    // Clusters no smaller than these are never chosen.
    let (clustered, cluster_width) = plan_clusters(sorted, for_words.min(runs));
    if let Some((words, width)) = delta {
        if words < for_words.min(runs).min(clustered) {
            return encode_delta(values, width, out);
        }
    }
    if runs < for_words && runs <= clustered {
        encode_runs(values, out)
    } else if clustered < for_words {
        encode_clustered(values, sorted, cluster_width, out)
    } else {
        encode_for(values, for_plan, out)
    }
}

/// The bases of clusters `2^width` wide covering the sorted `values`,
/// each starting at the least value not yet covered.
fn clusters(sorted: &[u64], width: usize) -> Vec<u64> {
    let mut bases: Vec<u64> = Vec::new();
    for v in sorted {
        if bases.last().is_none_or(|b| width < 64 && (v - b) >> width != 0) {
            bases.push(*v);
        }
    }
    bases
}

/// The width of clusters that makes the column smallest: (words, width),
/// from the block's values `sorted`, if smaller than `words_to_beat`
/// (otherwise `(words_to_beat, 0)`). The same choice as counting the
/// clusters of every width (`tests::plan_clusters_every_width`), but a
/// width is counted only when a lower bound of its size could win: each
/// step between sorted values of `2^width` or more starts a cluster, so
/// one pass's histogram of the steps' bit lengths bounds every width's
/// count from below.
fn plan_clusters(sorted: &[u64], words_to_beat: usize) -> (usize, usize) {
    let rows = sorted.len();
    // wider[w]: the steps of more than `w` bits, each of which starts a
    // cluster `2^w` wide.
    let mut wider = [0usize; 65];
    for pair in sorted.windows(2) {
        let b = bits(pair[1] - pair[0]);
        if b > 0 {
            wider[b - 1] += 1;
        }
    }
    for w in (0..64).rev() {
        wider[w] += wider[w + 1];
    }
    let words = |n: usize, width: usize| 2 + n + BitStream::words_for(rows, bits(n as u64 - 1)) + packed_words(width);
    let mut best = (words_to_beat, 0);
    for width in 0..=64 {
        if words(2, width) >= best.0 {
            break; // every wider cluster too: two clusters at least
        }
        let at_least = 1 + wider[width];
        if words(at_least.max(2), width) >= best.0 {
            continue;
        }
        // The fewest clusters that lose to the best so far (or every
        // row's own): counting need not go past them.
        let (mut lo, mut enough) = (at_least.max(2), rows);
        while lo < enough {
            let mid = (lo + enough) / 2;
            if words(mid, width) >= best.0 {
                enough = mid;
            } else {
                lo = mid + 1;
            }
        }
        let n = count_clusters(sorted, width, enough);
        if n <= 1 {
            break; // and so every wider width
        }
        let size = words(n, width);
        if size < best.0 {
            best = (size, width);
        }
    }
    best
}

/// How many clusters [`clusters`] makes, without making them, or some
/// number past `enough` once the count passes it. Each cluster's end is
/// found by galloping through the sorted values, so a width of few
/// clusters (the widths that can win) costs a few steps a cluster, not a
/// step a row.
fn count_clusters(sorted: &[u64], width: usize, enough: usize) -> usize {
    if width >= 64 {
        return 1;
    }
    let mut n = 1;
    let mut start = 0;
    while let Some(end) = sorted[start].checked_add(1 << width) {
        start = first_at_least(sorted, start + 1, end);
        if start == sorted.len() || n > enough {
            break;
        }
        n += 1;
    }
    n
}

/// The least index from `from` on whose value is at least `bound` in the
/// ascending `sorted` (its length if none): galloping, then a binary
/// search of the last stride.
fn first_at_least(sorted: &[u64], from: usize, bound: u64) -> usize {
    let mut lo = from;
    // Near ones first: a few steps before galloping.
    for _ in 0..4 {
        if lo == sorted.len() || sorted[lo] >= bound {
            return lo;
        }
        lo += 1;
    }
    let mut stride = 1;
    while lo + stride <= sorted.len() && sorted[lo + stride - 1] < bound {
        lo += stride;
        stride *= 2;
    }
    let hi = (lo + stride).min(sorted.len());
    lo + sorted[lo..hi].partition_point(|v| *v < bound)
}

/// `sorted`: the block's values sorted, as `encode` has them (a value
/// repeated starts no cluster of its own).
fn encode_clustered(values: &[u64], sorted: &[u64], width: usize, out: &mut Vec<u64>) {
    let bases = clusters(sorted, width);
    let index_width = bits(bases.len() as u64 - 1);
    out.push(CLUSTERED as u64 | (width as u64) << 8 | (bases.len() as u64) << 16 | (index_width as u64) << 32);
    out.push(0);
    out.extend_from_slice(&bases);
    // Each row's cluster (the last base not above it), searched for once
    // and only when the row before's does not hold it.
    let mut cluster = [0usize; BLOCK_ROWS];
    let mut c = 0;
    for (i, v) in values.iter().enumerate() {
        if bases[c] > *v || bases.get(c + 1).is_some_and(|next| next <= v) {
            c = bases.partition_point(|b| b <= v) - 1;
        }
        cluster[i] = c;
    }
    let cluster = &cluster[..values.len()];
    BitStream::pack(cluster.iter().map(|c| *c as u64), index_width, out);
    let mut input = [0u64; BLOCK_ROWS];
    for (i, v) in values.iter().enumerate() {
        input[i] = v - bases[cluster[i]];
    }
    let start = out.len();
    out.resize(start + packed_words(width), 0);
    // SAFETY: `input` is 1,024 values and the output 16 * width words.
    unsafe { u64::unchecked_pack(width, &input, &mut out[start..]) };
}

/// The patched frame of reference of least size, from the block's values
/// `sorted`: for each width, the window of values that most values fall
/// in (the first such); the others are exceptions at two words and a
/// quarter each. Returns (words, (base, width)).
///
/// The same choice as sweeping every window of every width
/// (`tests::plan_for_every_window`), at a fraction of its cost: a width
/// is looked at only while its packed words alone are fewer than the best
/// so far, and then only for windows that keep enough values to win, so
/// at most `allowed` exceptions: such a window starts at one of the first
/// `allowed + 1` values and reaches `rows - allowed` values on, which
/// one comparison tells before any counting.
///
/// Only sizes up to `limit` are looked for: when no plan is that small,
/// the size returned is larger than `limit` (and the plan one of no use).
fn plan_for(sorted: &[u64], limit: usize) -> (usize, (u64, usize)) {
    let rows = sorted.len();
    let (min, max) = (sorted[0], sorted[rows - 1]);
    let whole = 2 + packed_words(bits(max - min));
    let mut best = (whole.min(limit.saturating_add(1)), (min, bits(max - min)));
    let longest = longest_runs_of_steps(sorted);
    for width in 0..bits(max - min) {
        // Words left for exceptions if this width is to win.
        let Some(room) = best.0.checked_sub(2 + packed_words(width) + 1) else { break };
        let mut allowed = room * 4 / 5 + 1;
        while allowed > 0 && allowed + allowed.div_ceil(4) > room {
            allowed -= 1;
        }
        let allowed = allowed.min(rows - 1).min(u16::MAX as usize);
        let span = 1u64 << width;
        // At least `least` values kept: starts 0..=allowed.
        let least = rows - allowed;
        // A window's values are neighbours whose steps are all narrower
        // than it: none holds more than the longest such run.
        if longest[width] + 1 < least {
            continue;
        }
        let (mut j, mut kept, mut base) = (0, 0, min);
        for i in 0..=allowed {
            if i + least > rows {
                break;
            }
            if sorted[i + least - 1] - sorted[i] >= span {
                continue;
            }
            j = match sorted[i].checked_add(span) {
                Some(end) => first_at_least(sorted, j.max(i + least), end),
                None => rows,
            };
            if j - i > kept {
                kept = j - i;
                base = sorted[i];
            }
        }
        if kept == 0 {
            continue;
        }
        let exceptions = rows - kept;
        let words = 2 + packed_words(width) + exceptions.div_ceil(4) + exceptions;
        if words < best.0 {
            best = (words, (base, width));
        }
    }
    best
}

/// For each width `w`, the most consecutive steps between the `sorted`
/// values that are all below `2^w` (of at most `w` bits): the steps are
/// taken from the narrowest up, each joining the runs on either side of
/// it.
fn longest_runs_of_steps(sorted: &[u64]) -> [usize; 65] {
    let steps = sorted.len() - 1;
    // The steps ordered by their bit lengths (a counting sort).
    let mut step_bits = [0u8; BLOCK_ROWS];
    let mut starts = [0usize; 66];
    for (k, pair) in sorted.windows(2).enumerate() {
        step_bits[k] = bits(pair[1] - pair[0]) as u8;
        starts[step_bits[k] as usize + 1] += 1;
    }
    for b in 0..65 {
        starts[b + 1] += starts[b];
    }
    let mut order = [0u16; BLOCK_ROWS];
    let mut next = starts;
    for (k, b) in step_bits[..steps].iter().enumerate() {
        order[next[*b as usize]] = k as u16;
        next[*b as usize] += 1;
    }
    // For a run of taken steps from `a` to `b`: start_of[b] = a and
    // end_of[a] = b (exact at the runs' ends only).
    let mut taken = [false; BLOCK_ROWS];
    let mut start_of = [0u16; BLOCK_ROWS];
    let mut end_of = [0u16; BLOCK_ROWS];
    let mut longest = [0usize; 65];
    let mut most = 0;
    for b in 0..65 {
        for &k in &order[starts[b]..starts[b + 1]] {
            let k = k as usize;
            taken[k] = true;
            let a = if k > 0 && taken[k - 1] { start_of[k - 1] as usize } else { k };
            let e = if k + 1 < steps && taken[k + 1] { end_of[k + 1] as usize } else { k };
            start_of[e] = a as u16;
            end_of[a] = e as u16;
            most = most.max(e - a + 1);
        }
        // Width `b` holds the steps of at most `b` bits.
        longest[b] = most;
    }
    longest
}

fn encode_for(values: &[u64], (base, width): (u64, usize), out: &mut Vec<u64>) {
    let exceptions: Vec<usize> = (0..values.len()).filter(|i| width < 64 && values[*i].wrapping_sub(base) >> width != 0).collect();
    out.push(FOR as u64 | (width as u64) << 8 | (exceptions.len() as u64) << 16);
    out.push(base);
    let mut input = [0u64; BLOCK_ROWS];
    for (i, v) in values.iter().enumerate() {
        input[i] = v.wrapping_sub(base);
    }
    for i in &exceptions {
        input[*i] = 0;
    }
    let start = out.len();
    out.resize(start + packed_words(width), 0);
    // SAFETY: `input` is 1,024 values and the output 16 * width words.
    unsafe { u64::unchecked_pack(width, &input, &mut out[start..]) };
    let mut word = 0u64;
    for (k, i) in exceptions.iter().enumerate() {
        word |= (*i as u64) << (16 * (k % 4));
        if k % 4 == 3 {
            out.push(word);
            word = 0;
        }
    }
    if exceptions.len() % 4 != 0 {
        out.push(word);
    }
    out.extend(exceptions.iter().map(|i| values[*i]));
}

/// Calls `f` with each row a `DELTA` column of `width`-bit steps keeps
/// whole: the first, each whose step from the row before falls or is too
/// wide, and one at least every [`DELTA_CHECKPOINT_ROWS`].
fn delta_exceptions(values: &[u64], width: usize, mut f: impl FnMut(usize)) {
    let mut last = 0;
    f(0);
    for r in 1..values.len() {
        let step = values[r].wrapping_sub(values[r - 1]);
        if values[r] < values[r - 1] || (width < 64 && step >> width != 0) || r - last >= DELTA_CHECKPOINT_ROWS {
            f(r);
            last = r;
        }
    }
}

fn delta_words(rows: usize, exceptions: usize, width: usize, value_width: usize) -> usize {
    2 + exceptions.div_ceil(4) + BitStream::words_for(exceptions, value_width) + BitStream::words_for(rows - exceptions, width)
}

/// The `DELTA` column of least size, (words, width), when the ids mostly
/// rise: a width from one pass's histogram of the steps' bit lengths (the
/// checkpoints left out), then its exceptions counted exactly.
fn plan_delta(values: &[u64]) -> Option<(usize, usize)> {
    let n = values.len();
    let (mut histogram, mut falls) = ([0usize; 65], 0);
    let (mut min, mut max) = (values[0], values[0]);
    for w in values.windows(2) {
        if w[1] < w[0] {
            falls += 1;
        } else {
            histogram[bits(w[1] - w[0])] += 1;
        }
        min = min.min(w[1]);
        max = max.max(w[1]);
    }
    if n < 2 || falls * 2 > n {
        return None;
    }
    let value_width = bits(max - min);
    let (mut fitting, mut best) = (0, None::<(usize, usize)>);
    for width in 0..value_width.min(64) {
        fitting += histogram[width];
        let words = delta_words(n, n - fitting, width, value_width);
        if best.is_none_or(|(w, _)| words < w) {
            best = Some((words, width));
        }
    }
    let (_, width) = best?;
    let mut exceptions = 0;
    delta_exceptions(values, width, |_| exceptions += 1);
    Some((delta_words(n, exceptions, width, value_width), width))
}

fn encode_delta(values: &[u64], width: usize, out: &mut Vec<u64>) {
    let min = *values.iter().min().expect("a block has rows");
    let value_width = bits(values.iter().max().expect("a block has rows") - min);
    let mut exceptions = Vec::new();
    delta_exceptions(values, width, |r| exceptions.push(r));
    out.push(DELTA as u64 | (width as u64) << 8 | (exceptions.len() as u64) << 16 | (value_width as u64) << 32);
    out.push(min);
    let mut word = 0u64;
    for (k, r) in exceptions.iter().enumerate() {
        word |= (*r as u64) << (16 * (k % 4));
        if k % 4 == 3 {
            out.push(word);
            word = 0;
        }
    }
    if exceptions.len() % 4 != 0 {
        out.push(word);
    }
    BitStream::pack(exceptions.iter().map(|r| values[*r] - min), value_width, out);
    let mut next = exceptions.iter().peekable();
    let steps = (0..values.len()).filter(|r| {
        let exception = next.peek().is_some_and(|e| **e == *r);
        if exception {
            next.next();
        }
        !exception
    });
    BitStream::pack(steps.map(|r| values[r] - values[r - 1]), width, out);
}

/// Runs of equal ids: (words, runs) when they repeat at all.
fn plan_runs(values: &[u64]) -> Option<(usize, usize)> {
    let runs = 1 + values.windows(2).filter(|w| w[0] != w[1]).count();
    if runs * 2 > values.len() {
        return None;
    }
    let (min, max) = run_values(values).fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let end_width = bits(values.len() as u64);
    Some((2 + BitStream::words_for(runs, bits(max - min)) + BitStream::words_for(runs, end_width), runs))
}

fn run_values(values: &[u64]) -> impl Iterator<Item = u64> + '_ {
    values.iter().enumerate().filter(|(i, v)| *i == 0 || values[i - 1] != **v).map(|(_, v)| *v)
}

fn encode_runs(values: &[u64], out: &mut Vec<u64>) {
    let runs: Vec<u64> = run_values(values).collect();
    let min = *runs.iter().min().expect("a block has rows");
    let width = bits(runs.iter().max().expect("a block has rows") - min);
    let end_width = bits(values.len() as u64);
    out.push(RUNS as u64 | (width as u64) << 8 | (runs.len() as u64) << 16 | (end_width as u64) << 32);
    out.push(min);
    BitStream::pack(runs.iter().map(|v| v - min), width, out);
    let ends = (1..=values.len()).filter(|e| *e == values.len() || values[*e] != values[e - 1]).map(|e| e as u64);
    BitStream::pack(ends, end_width, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[u64]) -> usize {
        let mut words = Vec::new();
        encode(values, true, &mut words);
        let (column, used) = Column::parse(&words, values.len(), true).unwrap();
        column.validate(values.len()).unwrap();
        assert_eq!(used, words.len());
        for (i, v) in values.iter().enumerate() {
            assert_eq!(column.get(i), *v, "row {i}");
        }
        let mut out = [0u64; BLOCK_ROWS];
        column.decode(values.len(), &mut out);
        assert_eq!(&out[..values.len()], values);
        let n = values.len();
        for (from, to) in [(0, n), (0, 1), (n - 1, n), (n / 3, n / 2 + 1), (n / 2, n), (n / 5, (n / 5 + 200).min(n))] {
            let mut out = vec![0u64; to - from];
            column.decode_range(from, &mut out);
            assert_eq!(out, &values[from..to], "rows {from}..{to}");
        }
        // Lookup-sized windows (1 to 40 rows) from rows on and between
        // a DELTA column's full ids.
        for from in (0..n).step_by(7) {
            for len in [1, 2, 3, 17, 33, 40] {
                let to = (from + len).min(n);
                let mut out = vec![0u64; to - from];
                column.decode_range(from, &mut out);
                assert_eq!(out, &values[from..to], "rows {from}..{to}");
            }
        }
        equal_ranges_match(&column, values);
        words.len()
    }

    /// `equal_range` over the column's sorted stretches (split where an id
    /// falls) and parts of them, for ids in them, next to them and past
    /// both ends, against a linear search.
    fn equal_ranges_match(column: &Column<'_>, values: &[u64]) {
        let mut stretches = Vec::new();
        let mut start = 0;
        for r in 1..=values.len() {
            if r == values.len() || values[r] < values[r - 1] {
                stretches.push((start, r));
                start = r;
            }
        }
        let mut x = values.len() as u64 + 3;
        for (lo, hi) in stretches.into_iter().take(40) {
            let len = hi - lo;
            for (lo, hi) in [(lo, hi), (lo + len / 3, hi - len / 4), (lo + len / 2, hi)] {
                if lo >= hi {
                    assert_eq!(column.equal_range(lo, lo, 0), (lo, lo));
                    continue;
                }
                let mut targets = vec![0, u64::MAX, values[lo], values[hi - 1], values[lo].wrapping_sub(1), values[hi - 1].wrapping_add(1)];
                for _ in 0..12 {
                    let v = values[lo + xorshift(&mut x) as usize % (hi - lo)];
                    targets.extend([v, v.wrapping_sub(1), v.wrapping_add(1)]);
                }
                for t in targets {
                    let start = lo + values[lo..hi].partition_point(|v| *v < t);
                    let end = lo + values[lo..hi].partition_point(|v| *v <= t);
                    assert_eq!(column.equal_range(lo, hi, t), (start, end), "rows {lo}..{hi}, target {t}");
                }
            }
        }
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn every_kind_reads_back_every_row_alone_and_whole() {
        assert_eq!(round_trip(&[7; 1024]), 2, "constant");
        assert_eq!(round_trip(&[u64::MAX; 3]), 2);
        // Sorted with repeats (a subject's quads): runs.
        let runs: Vec<u64> = (0..1024).map(|i| 0x0200_0000_0001_0000 + i / 6).collect();
        assert!(round_trip(&runs) < 100);
        // Dense small ids: a narrow frame.
        let mut x = 1;
        let small: Vec<u64> = (0..1024).map(|_| 0x0200_0000_0000_0000 + xorshift(&mut x) % 40).collect();
        assert_eq!(round_trip(&small), 2 + 16 * 6);
        // Dictionary ids with a few inlined literals (another top byte):
        // the literals are exceptions, the rest stay narrow.
        let mixed: Vec<u64> = (0..1024).map(|i| if i % 100 == 0 { 0x0700_0000_0000_0000 | i } else { 0x0200_0000_0010_0000 + xorshift(&mut x) % 100_000 }).collect();
        assert!(round_trip(&mixed) < 2 + 16 * 17 + 3 * 11, "mixed {}", round_trip(&mixed));
        // Several tags, each with ids near each other (an object column
        // of links, strings, numbers and dates): a base per tag.
        let tags: Vec<u64> = (0..1024).map(|_| {
            let t = xorshift(&mut x) % 5;
            (t + 1) << 56 | (t * 1_000_000_000 + xorshift(&mut x) % 500_000)
        }).collect();
        let words = round_trip(&tags);
        assert_eq!(words, 2 + 5 + 48 + 16 * 19, "clustered: a base per tag, 3-bit indexes, 19-bit offsets");
        // A few ids far apart (a block's predicates): a dictionary.
        let few: Vec<u64> = (0..1024).map(|_| 0x0200_0000_0000_0000 + (xorshift(&mut x) % 9) * 100_000).collect();
        assert_eq!(round_trip(&few), 2 + 9 + 64, "a dictionary of 9 ids, 4-bit indexes");
        // Anything at all, every width, short blocks.
        for n in [1, 2, 5, 63, 64, 65, 1000, 1024] {
            for shift in [0, 1, 7, 20, 40, 63] {
                let v: Vec<u64> = (0..n).map(|_| xorshift(&mut x) >> shift).collect();
                round_trip(&v);
                let mut sorted = v.clone();
                sorted.sort_unstable();
                round_trip(&sorted);
            }
        }
    }

    /// Ids sorted within runs of a leading column (POS's subjects within
    /// a predicate and object): `DELTA` where it is smaller, every row
    /// read alone, in windows and whole; refused in a format 1 file.
    #[test]
    fn rising_ids_within_runs_are_steps_from_checkpoints() {
        let mut x = 5;
        for run in [1000, 300, 40, 7] {
            let mut values = Vec::new();
            while values.len() < 1024 {
                let mut id = 0x0200_0000_0000_0000 + xorshift(&mut x) % 800_000;
                for _ in 0..run.min(1024 - values.len()) {
                    id += 1 + xorshift(&mut x) % 9;
                    values.push(id);
                }
            }
            let mut words = Vec::new();
            encode(&values, true, &mut words);
            assert_eq!(words[0] as u8, DELTA, "runs of {run}");
            let mut old = Vec::new();
            encode(&values, false, &mut old);
            assert!(words.len() < old.len() * 3 / 4, "runs of {run}: {} words against {}", words.len(), old.len());
            round_trip(&values);
            for n in [1, 2, 31, 32, 33, 64, 65, 500] {
                round_trip(&values[..n]);
            }
            assert!(Column::parse(&words, values.len(), false).is_err(), "a format 1 file has no DELTA");
        }
        // Equal neighbours (steps of 0), falls and wide jumps.
        let mut v: Vec<u64> = (0..1024).map(|i| 1000 + i / 3).collect();
        v[100] = 5;
        v[500] = 1 << 40;
        round_trip(&v);
        // A checkpoint past its reach is corrupt.
        let mut words = Vec::new();
        encode_delta(&(0..100).collect::<Vec<u64>>(), 1, &mut words);
        let (column, _) = Column::parse(&words, 100, true).unwrap();
        column.validate(100).unwrap();
        assert!(Column::parse(&words, 100, true).unwrap().0.validate(140).is_err());
    }

    /// The frame-of-reference planner as first written: every window of
    /// every width swept (the reference `plan_for` must agree with).
    fn plan_for_every_window(values: &[u64]) -> (usize, (u64, usize)) {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
        let mut best = (2 + packed_words(bits(max - min)), (min, bits(max - min)));
        for width in 0..bits(max - min) {
            let span = 1u64 << width;
            let (mut j, mut kept, mut base) = (0, 0, min);
            for i in 0..sorted.len() {
                j = j.max(i);
                while j < sorted.len() && sorted[j] - sorted[i] < span {
                    j += 1;
                }
                if j - i > kept {
                    kept = j - i;
                    base = sorted[i];
                }
            }
            let exceptions = values.len() - kept;
            let words = 2 + packed_words(width) + exceptions.div_ceil(4) + exceptions;
            if words < best.0 {
                best = (words, (base, width));
            }
        }
        best
    }

    /// The cluster planner as first written: the clusters of every width
    /// made and counted.
    fn plan_clusters_every_width(values: &[u64]) -> (usize, usize) {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut best = (usize::MAX, 0);
        for width in 0..=64 {
            let n = clusters(&sorted, width).len();
            if n > 1 && n <= values.len() {
                let words = 2 + n + BitStream::words_for(values.len(), bits(n as u64 - 1)) + packed_words(width);
                if words < best.0 {
                    best = (words, width);
                }
            }
        }
        best
    }

    /// The planners skip widths and windows that cannot win; what they
    /// choose (size, width and base) must be what trying every one chose,
    /// so that a load writes the same bytes as before.
    #[test]
    fn the_planners_choose_what_trying_every_width_chooses() {
        let mut x = 11;
        let mut cases: Vec<Vec<u64>> = Vec::new();
        for n in [2, 3, 5, 31, 64, 100, 513, 1000, 1024] {
            for shift in [0, 1, 7, 20, 40, 50, 58, 63] {
                cases.push((0..n).map(|_| xorshift(&mut x) >> shift).collect());
            }
            for tags in 1..6 {
                for spread in [3, 1_000, 100_000, 1 << 30] {
                    cases.push(
                        (0..n)
                            .map(|_| {
                                let t = xorshift(&mut x) % tags;
                                (t + 1) << 56 | (t * 1_000_000_000 + xorshift(&mut x) % spread)
                            })
                            .collect(),
                    );
                }
            }
            for far in [1, 3, 10, 50, 200] {
                cases.push((0..n).map(|i| if (i as u64) % far == 0 { 0x0700_0000_0000_0000 | xorshift(&mut x) >> 20 } else { 0x0200_0000_0010_0000 + xorshift(&mut x) % 100_000 }).collect());
            }
            cases.push((0..n).map(|i| 0x0200_0000_0001_0000 + i as u64 / 6).collect());
            cases.push((0..n).map(|_| 0x0200_0000_0000_0000 + (xorshift(&mut x) % 9) * 100_000).collect());
            cases.push((0..n).map(|i| if i % 2 == 0 { 5 } else { 5 + (1 << (i % 64)) }).collect());
        }
        for values in &cases {
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let every_for = plan_for_every_window(values);
            let longest = longest_runs_of_steps(&sorted);
            for width in [0, 1, 5, 17, 40, 64] {
                let mut run = 0;
                let mut most = 0;
                for pair in sorted.windows(2) {
                    run = if bits(pair[1] - pair[0]) <= width { run + 1 } else { 0 };
                    most = most.max(run);
                }
                assert_eq!(longest[width], most, "{values:?}");
            }
            assert_eq!(plan_for(&sorted, usize::MAX), every_for, "{values:?}");
            // Up to a limit: the same plan when it is that small, else a
            // size past the limit.
            for limit in [every_for.0, every_for.0 - 1, every_for.0 / 2, 40, 0] {
                let plan = plan_for(&sorted, limit);
                if every_for.0 <= limit {
                    assert_eq!(plan, every_for, "{values:?}");
                } else {
                    assert!(plan.0 > limit, "{values:?}");
                }
            }
            let every = plan_clusters_every_width(values);
            assert_eq!(plan_clusters(&sorted, usize::MAX), every, "{values:?}");
            // With a size to beat, as `encode` asks: the same plan when
            // it wins, else none smaller than the size.
            for to_beat in [every.0, every.0 + 1, every_for.0, 40] {
                let plan = plan_clusters(&sorted, to_beat);
                if every.0 < to_beat {
                    assert_eq!(plan, every, "{values:?}");
                } else {
                    assert!(plan.0 >= to_beat, "{values:?}");
                }
            }
        }
    }

    #[test]
    fn a_bit_stream_read_in_order_gives_what_each_read_alone_gives() {
        let mut x = 3;
        for width in 1..64 {
            for count in [1, 2, 63, 64, 65, 1000, 1024] {
                let values: Vec<u64> = (0..count).map(|_| xorshift(&mut x) & ((1u64 << width) - 1)).collect();
                let mut words = Vec::new();
                BitStream::pack(values.iter().copied(), width, &mut words);
                let stream = BitStream { words: &words, width };
                let mut read = Vec::new();
                stream.for_each(count, |i, v| {
                    assert_eq!(i, read.len());
                    read.push(v);
                });
                assert_eq!(read, values, "width {width}, {count} values");
                assert!((0..count).all(|i| stream.get(i) == values[i]));
                for start in [0, 1, count / 2, count - 1] {
                    stream.for_each_from(start, count - start, |i, v| assert_eq!(v, values[start + i], "width {width}, from {start}"));
                }
            }
        }
    }

    #[test]
    fn malformed_descriptors_are_errors() {
        let rows = 10;
        for words in [
            vec![],
            vec![CONST as u64],
            vec![9, 0],
            vec![FOR as u64 | 65 << 8, 0],
            vec![FOR as u64 | 3 << 8, 0, 1, 2],
            vec![RUNS as u64 | 1 << 16 | 4 << 32, 0, 0, 5],
            vec![RUNS as u64 | 2 << 16 | 4 << 32, 0, 0, 10 | 3 << 4],
            vec![CONST as u64 | 1 << 45, 0],
            // DELTA: the first exception not at row 0; two exceptions more
            // than a checkpoint apart; the last one too far from the end.
            vec![DELTA as u64 | 2 << 16, 0, 1 | 5 << 16, 0],
            vec![DELTA as u64 | 2 << 16 | 1 << 8, 0, 40 << 16, 0, 0],
        ] {
            assert!(Column::parse(&words, rows, true).and_then(|(c, _)| c.validate(rows)).is_err(), "{words:?}");
        }
    }
}
