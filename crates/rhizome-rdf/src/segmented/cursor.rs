//! A cursor over one ordering as a snapshot sees it: its segment's keys
//! merged with its delta's entries visible at the snapshot's sequence (an
//! entry that is there adds its key or keeps it; a deleted one hides it),
//! behind the key-value layer's `Cursor`, so every scan of the quad
//! indexes reads segments without knowing it.
//!
//! Keys are the ordering's ids as big-endian bytes, as in the key-value
//! layout; inside, keys are words (`Key`), whose order is the bytes'.
//! Forward steps merge two sorted streams (the segment cursor and a small
//! buffer of the delta's entries, refilled under its lock); backward
//! moves, which no scan of the indexes makes today, find each previous
//! key with a search.

use super::delta::Delta;
use super::Key;
use crate::segment::{Segment, SegmentCursor, MAX_COLUMNS};
use rhizome_kv::{prefix_upper_bound, Cursor};
use std::ops::Bound;

/// Delta entries a cursor takes per visit to the delta.
const DELTA_BATCH: usize = 64;

/// A byte string as a position among keys of `key_bytes` bytes: the key
/// it pads to (zeros after it) and whether it is longer than a key (then
/// the padded key is the last key at or before it, rather than the first
/// at or after it).
fn words_of(bytes: &[u8], key_bytes: usize) -> (Key, bool) {
    let longer = bytes.len() > key_bytes;
    let bytes = &bytes[..bytes.len().min(key_bytes)];
    let mut key = [0u64; 4];
    for (i, chunk) in bytes.chunks(8).enumerate() {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        key[i] = u64::from_be_bytes(word);
    }
    (key, longer)
}

/// The bound at or after which keys are at or after `bytes`.
fn from_bytes(bytes: &[u8], key_bytes: usize) -> Bound<Key> {
    match words_of(bytes, key_bytes) {
        (k, false) => Bound::Included(k),
        (k, true) => Bound::Excluded(k),
    }
}

/// The bound below which keys are below `bytes`.
fn until_bytes(bytes: &[u8], key_bytes: usize) -> Bound<Key> {
    match words_of(bytes, key_bytes) {
        (k, false) => Bound::Excluded(k),
        (k, true) => Bound::Included(k),
    }
}

fn at_or_after(key: &Key, from: &Bound<Key>) -> bool {
    match from {
        Bound::Included(f) => key >= f,
        Bound::Excluded(f) => key > f,
        Bound::Unbounded => true,
    }
}

fn before(key: &Key, until: &Bound<Key>) -> bool {
    match until {
        Bound::Included(u) => key <= u,
        Bound::Excluded(u) => key < u,
        Bound::Unbounded => true,
    }
}

fn later(a: Bound<Key>, b: Bound<Key>) -> Bound<Key> {
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (Bound::Included(x), Bound::Included(y)) => Bound::Included(x.max(y)),
        (Bound::Excluded(x), Bound::Excluded(y)) => Bound::Excluded(x.max(y)),
        (Bound::Included(i), Bound::Excluded(e)) | (Bound::Excluded(e), Bound::Included(i)) => {
            if i > e {
                Bound::Included(i)
            } else {
                Bound::Excluded(e)
            }
        }
    }
}

fn earlier(a: Bound<Key>, b: Bound<Key>) -> Bound<Key> {
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (Bound::Included(x), Bound::Included(y)) => Bound::Included(x.min(y)),
        (Bound::Excluded(x), Bound::Excluded(y)) => Bound::Excluded(x.min(y)),
        (Bound::Included(i), Bound::Excluded(e)) | (Bound::Excluded(e), Bound::Included(i)) => {
            if i < e {
                Bound::Included(i)
            } else {
                Bound::Excluded(e)
            }
        }
    }
}

pub(crate) struct IndexCursor<'a> {
    segment: Option<SegmentCursor<'a>>,
    delta: &'a Delta,
    at: u64,
    /// Ids per key, and bytes.
    columns: usize,
    lower: Bound<Key>,
    upper: Bound<Key>,
    current: Option<Key>,
    /// Where the current key came from: stepping past it steps these.
    on_segment: bool,
    on_delta: bool,
    /// Delta entries from the current position on, and whether the delta
    /// has none after them.
    buffer: Vec<(Key, bool)>,
    next_entry: usize,
    delta_done: bool,
    /// The merge state above is for going forward from `current`; after a
    /// backward move it is rebuilt by the next forward step.
    forward: bool,
    /// The current key as bytes, written by `key()` only when asked for
    /// (scans of the quad indexes read `current_key()` instead): `stale`
    /// says it must be written again. Written only while stale, and made
    /// stale only by `&mut self` moves, so no reference `key()` handed
    /// out is alive when it is written.
    bytes: std::cell::UnsafeCell<[u8; 32]>,
    stale: std::cell::Cell<bool>,
    error: Option<rhizome_kv::Error>,
}

impl<'a> IndexCursor<'a> {
    pub fn new(segment: Option<&'a Segment>, delta: &'a Delta, at: u64, columns: usize, lower: &[u8], upper: Option<&[u8]>) -> Self {
        let key_bytes = columns * 8;
        IndexCursor {
            segment: segment.map(|s| s.cursor()),
            delta,
            at,
            columns,
            lower: if lower.is_empty() { Bound::Unbounded } else { from_bytes(lower, key_bytes) },
            upper: upper.map_or(Bound::Unbounded, |u| until_bytes(u, key_bytes)),
            current: None,
            on_segment: false,
            on_delta: false,
            buffer: Vec::new(),
            next_entry: 0,
            delta_done: true,
            forward: true,
            bytes: std::cell::UnsafeCell::new([0; 32]),
            stale: std::cell::Cell::new(true),
            error: None,
        }
    }

    /// How many keys a reader at the cursor's sequence sees that start
    /// with `prefix` (whole ids), counted from the segment's blocks
    /// without reading the keys, when the segment alone holds them: `None`
    /// when a delta entry falls among them (the caller reads them), or the
    /// cursor is bounded (it answers for its bounds, not a prefix). The
    /// cursor does not move.
    pub fn count_prefix(&self, prefix: &[u8]) -> crate::Result<Option<u64>> {
        if prefix.len() % 8 != 0 || prefix.len() > self.columns * 8 || self.lower != Bound::Unbounded || self.upper != Bound::Unbounded {
            return Ok(None);
        }
        if !self.delta.is_empty() {
            let key_bytes = self.columns * 8;
            let until = prefix_upper_bound(prefix).map_or(Bound::Unbounded, |u| until_bytes(&u, key_bytes));
            if self.delta.any_between(&from_bytes(prefix, key_bytes), &until) {
                return Ok(None);
            }
        }
        let (ids, _) = words_of(prefix, self.columns * 8);
        match &self.segment {
            Some(seg) => Ok(Some(seg.segment().count_prefix(&ids[..prefix.len() / 8])?)),
            None => Ok(Some(0)),
        }
    }

    /// The current key as ids (for merges, which write them as ids).
    pub fn current_key(&self) -> Option<Key> {
        self.current
    }

    /// The segment's block the cursor stands at the start of, when no
    /// delta entry a reader sees falls in that block's keys and the cursor
    /// has no bounds: a merge copies such a block as it is. The current
    /// key is then the block's first, from the segment alone. With the
    /// block: the first key after it (`None` after the last block).
    pub fn untouched_block(&mut self) -> Option<(usize, Option<Key>)> {
        if !self.forward || self.on_delta || !self.on_segment || self.upper != Bound::Unbounded {
            return None;
        }
        let seg = self.segment.as_ref()?;
        let block = seg.at_block_start()?;
        let next_fence = seg.next_fence();
        match (self.delta_head(), next_fence) {
            (None, _) => Some((block, next_fence)),
            (Some((d, _)), Some(fence)) if d >= fence => Some((block, next_fence)),
            _ => None,
        }
    }

    /// Steps past the whole block [`Self::untouched_block`] named.
    pub fn skip_block(&mut self) {
        debug_assert!(self.on_segment && !self.on_delta, "skipping a block the delta does not touch");
        if let Err(e) = self.segment.as_mut().expect("on the segment").skip_block() {
            return self.fail(e);
        }
        self.settle();
    }

    /// Whether [`Self::take_run`] may take rows now (a cheap check).
    #[inline]
    pub fn may_take_run(&self) -> bool {
        self.on_segment && !self.on_delta && self.forward && self.segment.as_ref().is_some_and(|s| s.may_step_through())
    }

    /// Hands `take` the segment's decoded ids (one slice per column) of
    /// the rows, from the current key on, that the segment alone gives
    /// (before the next delta entry and the upper bound), that start with
    /// `prefix` (leading ids) and are at most `max` many; the cursor moves
    /// past them. Only when the segment cursor has those rows decoded (it
    /// steps through a block, or stands in a lookup's window: see
    /// `SegmentCursor::decoded_rows`); else, or when the current key is
    /// the delta's, takes none. Returns how many rows it took.
    pub fn take_run(&mut self, prefix: &[u64], max: usize, take: impl FnOnce([&[u64]; MAX_COLUMNS])) -> usize {
        if !self.on_segment || self.on_delta || !self.forward || self.current.is_none() || max == 0 {
            return 0;
        }
        if !self.segment.as_ref().is_some_and(|s| s.may_step_through()) {
            return 0;
        }
        // The first key the delta decides, and the bound: the run stops
        // before them.
        let limit = self.delta_head().map(|(k, _)| k);
        let (columns, upper) = (self.columns, self.upper);
        let Some(seg) = &mut self.segment else { return 0 };
        let Some(decoded) = seg.decoded_rows() else { return 0 };
        let key = |r: usize| {
            let mut key = [0u64; 4];
            for (c, id) in key.iter_mut().enumerate().take(columns) {
                *id = decoded[c][r];
            }
            key
        };
        // Rows are sorted: each stop is the first row past a bound.
        let mut end = decoded[0].len().min(max);
        let first_not = |end: usize, stop: &dyn Fn(&Key) -> bool| {
            let (mut lo, mut hi) = (0, end);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if stop(&key(mid)) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            lo
        };
        if let Some(l) = limit {
            if key(end - 1) >= l {
                end = first_not(end, &|k| *k >= l);
            }
        }
        if upper != Bound::Unbounded && !before(&key(end - 1), &upper) {
            end = first_not(end, &|k| !before(k, &upper));
        }
        // Compared id by id (a slice compare is a call to memcmp).
        let outside = |k: &Key| prefix.iter().zip(k).any(|(p, id)| p != id);
        if !prefix.is_empty() && end > 0 && outside(&key(end - 1)) {
            end = first_not(end, &outside);
        }
        if end == 0 {
            return 0;
        }
        take(decoded.map(|c| &c[..end.min(c.len())]));
        if let Err(e) = seg.step(end) {
            self.fail(e);
            return end;
        }
        self.settle();
        end
    }

    /// The segment cursor's rank: its keys before its position.
    pub fn segment_rank(&self) -> u64 {
        self.segment.as_ref().map_or(0, |s| s.rank())
    }

    fn fail(&mut self, e: crate::Error) {
        self.error = Some(match e {
            crate::Error::Storage(e) => e,
            other => rhizome_kv::Error::Engine(other.to_string()),
        });
        self.current = None;
    }

    fn set_current(&mut self, key: Option<Key>) {
        self.current = key.filter(|k| before(k, &self.upper));
        self.stale.set(true);
    }

    /// Positions the segment cursor at the first key at or after `from`.
    fn seek_segment(&mut self, from: &Bound<Key>) -> crate::Result<()> {
        let columns = self.columns;
        let Some(seg) = &mut self.segment else { return Ok(()) };
        match from {
            Bound::Unbounded => seg.seek_first()?,
            // A prefix padded with zeros: sought as the prefix (the same
            // first key, as no id is below 0), so that the segment cursor
            // knows which rows the lookup wants and decodes only those.
            Bound::Included(k) => seg.seek(&k[..columns - k[1..columns].iter().rev().take_while(|id| **id == 0).count()])?,
            Bound::Excluded(k) => {
                seg.seek(&k[..columns])?;
                if seg.valid() && seg.key() == *k {
                    seg.next()?;
                }
            }
        }
        Ok(())
    }

    /// The next delta entry, refilling the buffer when it is used up.
    fn delta_head(&mut self) -> Option<(Key, bool)> {
        if self.next_entry == self.buffer.len() {
            if self.delta_done {
                return None;
            }
            let from = match self.buffer.last() {
                Some((k, _)) => Bound::Excluded(*k),
                None => return None,
            };
            self.buffer.clear();
            self.next_entry = 0;
            self.delta_done = self.delta.fill(from, self.at, &mut self.buffer, DELTA_BATCH);
            if self.buffer.is_empty() {
                return None;
            }
        }
        Some(self.buffer[self.next_entry])
    }

    /// Puts the merged stream on its first key at or after `from`.
    fn start_forward(&mut self, from: Bound<Key>) {
        let from = later(from, self.lower);
        self.forward = true;
        if let Err(e) = self.seek_segment(&from) {
            return self.fail(e);
        }
        self.buffer.clear();
        self.next_entry = 0;
        self.delta_done = self.delta.fill(from, self.at, &mut self.buffer, DELTA_BATCH);
        self.settle();
    }

    /// Chooses the current key from the two streams: the smaller; on a
    /// tie the delta's entry decides; a deleted entry hides its key.
    fn settle(&mut self) {
        loop {
            let seg = match &mut self.segment {
                Some(s) if s.valid() => Some(s.key()),
                _ => None,
            };
            let delta = self.delta_head();
            let (key, on_segment, on_delta) = match (seg, delta) {
                (None, None) => {
                    self.on_segment = false;
                    self.on_delta = false;
                    return self.set_current(None);
                }
                (Some(s), None) => (s, true, false),
                (None, Some((d, _))) => (d, false, true),
                (Some(s), Some((d, _))) => match d.cmp(&s) {
                    std::cmp::Ordering::Less => (d, false, true),
                    std::cmp::Ordering::Equal => (s, true, true),
                    std::cmp::Ordering::Greater => (s, true, false),
                },
            };
            if on_delta && !delta.expect("on the delta").1 {
                // Deleted: skip it and the segment's key it hides.
                self.next_entry += 1;
                if on_segment {
                    if let Err(e) = self.segment.as_mut().expect("on the segment").next() {
                        return self.fail(e);
                    }
                }
                continue;
            }
            self.on_segment = on_segment;
            self.on_delta = on_delta;
            return self.set_current(Some(key));
        }
    }

    fn step_forward(&mut self) {
        let Some(current) = self.current else { return };
        if !self.forward {
            return self.start_forward(Bound::Excluded(current));
        }
        if self.on_segment {
            if let Err(e) = self.segment.as_mut().expect("on the segment").next() {
                return self.fail(e);
            }
        }
        if self.on_delta {
            self.next_entry += 1;
        }
        self.settle();
    }

    /// The last key a reader sees before `until` (within the bounds).
    fn last_before(&mut self, until: Bound<Key>) -> crate::Result<Option<Key>> {
        let mut until = earlier(until, self.upper);
        let columns = self.columns;
        loop {
            // The segment's last key before `until`.
            let seg = match &mut self.segment {
                None => None,
                Some(seg) => {
                    match until {
                        Bound::Unbounded => seg.seek_last()?,
                        Bound::Included(k) | Bound::Excluded(k) => {
                            seg.seek(&k[..columns])?;
                            if !seg.valid() {
                                seg.seek_last()?;
                            }
                            while seg.valid() && !before(&seg.key(), &until) {
                                seg.prev()?;
                            }
                        }
                    }
                    if seg.valid() {
                        Some(seg.key())
                    } else {
                        None
                    }
                }
            };
            let delta = self.delta.last_before(until, self.at);
            let candidate = match (seg, delta) {
                (None, None) => None,
                (Some(s), None) => Some((s, None)),
                (None, Some((d, there))) => Some((d, Some(there))),
                (Some(s), Some((d, there))) => {
                    if d >= s {
                        Some((d, Some(there)))
                    } else {
                        Some((s, self.delta.get(&s, self.at)))
                    }
                }
            };
            let Some((key, state)) = candidate else { return Ok(None) };
            if !at_or_after(&key, &self.lower) {
                return Ok(None);
            }
            if state == Some(false) {
                until = Bound::Excluded(key);
                continue;
            }
            return Ok(Some(key));
        }
    }

    fn position_backward(&mut self, until: Bound<Key>) {
        self.forward = false;
        match self.last_before(until) {
            Ok(key) => self.set_current(key),
            Err(e) => self.fail(e),
        }
    }
}

impl Cursor for IndexCursor<'_> {
    fn seek(&mut self, key: &[u8]) {
        self.start_forward(from_bytes(key, self.columns * 8));
    }
    fn seek_for_prev(&mut self, key: &[u8]) {
        // The last key at or before `key`: below its padded words when it
        // is shorter than a key (a key it is a prefix of follows it), at
        // or before them otherwise.
        let key_bytes = self.columns * 8;
        let (k, _) = words_of(key, key_bytes);
        self.position_backward(if key.len() < key_bytes { Bound::Excluded(k) } else { Bound::Included(k) });
    }
    fn seek_first(&mut self) {
        self.start_forward(Bound::Unbounded);
    }
    fn seek_last(&mut self) {
        self.position_backward(Bound::Unbounded);
    }
    fn valid(&self) -> bool {
        self.current.is_some()
    }
    fn key(&self) -> &[u8] {
        debug_assert!(self.current.is_some(), "key() of an invalid cursor");
        if self.stale.get() {
            let k = self.current.unwrap_or_default();
            // SAFETY: stale only after a `&mut self` move, so no slice
            // from an earlier `key()` is alive (see the field).
            let bytes = unsafe { &mut *self.bytes.get() };
            for (i, id) in k[..self.columns].iter().enumerate() {
                bytes[i * 8..i * 8 + 8].copy_from_slice(&id.to_be_bytes());
            }
            self.stale.set(false);
        }
        // SAFETY: no writer while this borrow of `self` lives (see above).
        let bytes: &[u8; 32] = unsafe { &*self.bytes.get() };
        &bytes[..self.columns * 8]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn next(&mut self) {
        self.step_forward();
    }
    fn prev(&mut self) {
        if let Some(current) = self.current {
            self.position_backward(Bound::Excluded(current));
        }
    }
    fn status(&self) -> rhizome_kv::Result<()> {
        match &self.error {
            Some(e) => Err(rhizome_kv::Error::Engine(e.to_string())),
            None => Ok(()),
        }
    }
}
