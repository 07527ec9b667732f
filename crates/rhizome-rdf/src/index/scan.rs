//! Pattern scans: a quad pattern becomes one prefix scan in each index
//! family (subject-graph triples, other quads), merged into one stream in a
//! single key order, so callers get sorted output whatever the layout.

use super::layout::*;
use crate::term::TermId;
use crate::Result;
use rhizome_kv::{prefix_upper_bound, Cursor, CursorSeek, KvRead};

/// A quad pattern; `None` is a wildcard. `g: None` means any graph (the
/// union); the default graph of a plain dataset is `Some(TermId::DEFAULT_GRAPH)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuadPattern {
    pub s: Option<TermId>,
    pub p: Option<TermId>,
    pub o: Option<TermId>,
    pub g: Option<TermId>,
}

/// Which index families hold any quad: a scan skips a family known to be
/// empty (in union mode the quad indexes stay empty while every quad sits
/// in its subject's graph; in plain mode the triple indexes do), saving a
/// seek per lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Families {
    pub triples: bool,
    pub quads: bool,
}

impl Default for Families {
    /// Both, as when nothing is known.
    fn default() -> Self {
        Families { triples: true, quads: true }
    }
}

/// Which families a store has ever held quads in since it was opened,
/// kept in memory so that a query need not seek for it (two new RocksDB
/// iterators cost a third of a one-quad lookup query). Writers mark a
/// family before they commit quads into it, so a snapshot that sees those
/// quads sees the mark; a family emptied later stays marked (costing a
/// seek per lookup, never a wrong answer) until the store is reopened.
#[derive(Debug, Default)]
pub struct FamilyMarks {
    triples: std::sync::atomic::AtomicBool,
    quads: std::sync::atomic::AtomicBool,
}

impl FamilyMarks {
    /// The marks of what `snapshot` holds (when the store opens).
    pub fn of(snapshot: &dyn KvRead) -> Result<Self> {
        let present = families_present(snapshot)?;
        let marks = FamilyMarks::default();
        marks.mark(present);
        Ok(marks)
    }

    /// Marks the families set in `f`; call before committing quads to them.
    pub fn mark(&self, f: Families) {
        use std::sync::atomic::Ordering::SeqCst;
        if f.triples && !self.triples.load(SeqCst) {
            self.triples.store(true, SeqCst);
        }
        if f.quads && !self.quads.load(SeqCst) {
            self.quads.store(true, SeqCst);
        }
    }

    /// The families marked so far; read after taking the snapshot it is
    /// used with.
    pub fn get(&self) -> Families {
        use std::sync::atomic::Ordering::SeqCst;
        Families { triples: self.triples.load(SeqCst), quads: self.quads.load(SeqCst) }
    }
}

/// Which families `snapshot` has quads in (one seek each, sought together:
/// one wait on a cluster's store).
pub fn families_present(snapshot: &dyn KvRead) -> Result<Families> {
    let seeks = [TRIPLE_SPO.ks, QUAD_SPOG.ks].map(|ks| CursorSeek { ks, lower: &[], upper: None, at: &[] });
    let cursors = snapshot.cursors_sought(&seeks);
    let mut found = [false; 2];
    for (found, cursor) in found.iter_mut().zip(&cursors) {
        *found = cursor.valid();
        cursor.status()?;
    }
    Ok(Families { triples: found[0], quads: found[1] })
}

/// The ordering whose key starts with the bound components of the pattern.
fn choose(s: bool, p: bool, o: bool, graph: bool, triple: bool) -> Ordering {
    let by = match (s, p, o) {
        (_, true, false) if !s => 1,  // p
        (false, true, true) => 1,     // po
        (false, false, true) => 2,    // o
        (true, false, true) => 2,     // so
        _ => 0,                       // none, s, sp, spo
    };
    match (triple, graph, by) {
        (true, _, 0) => TRIPLE_SPO,
        (true, _, 1) => TRIPLE_POS,
        (true, _, _) => TRIPLE_OSP,
        (false, true, 0) => QUAD_GSPO,
        (false, true, 1) => QUAD_GPOS,
        (false, true, _) => QUAD_GOSP,
        (false, false, 0) => QUAD_SPOG,
        (false, false, 1) => QUAD_POSG,
        (false, false, _) => QUAD_OSPG,
    }
}

/// The orderings a pattern scans, each with the pattern's components as
/// that family stores them, and the order results come out in.
struct StreamPlan {
    streams: Vec<(Ordering, [Option<TermId>; 4])>,
    order: &'static [usize],
}

fn stream_plan(pattern: QuadPattern, families: Families) -> StreamPlan {
    let (s, p, o, g) = (pattern.s.is_some(), pattern.p.is_some(), pattern.o.is_some(), pattern.g.is_some());
    let quad_ordering = choose(s, p, o, g, false);
    // Other quads: the graph (if bound) is part of the key.
    let mut streams = Vec::with_capacity(2);
    if families.quads {
        streams.push((quad_ordering, [pattern.s, pattern.p, pattern.o, pattern.g]));
    }
    // Subject-graph triples: a bound graph binds the subject.
    let triple_subject = match (pattern.g, pattern.s) {
        (Some(g), Some(s)) if g != s => None,
        (Some(g), _) => Some(Some(g)),
        (None, s) => Some(s),
    };
    if let Some(subject) = triple_subject {
        if pattern.g != Some(TermId::DEFAULT_GRAPH) && families.triples {
            let ordering = choose(subject.is_some(), p, o, false, true);
            streams.push((ordering, [subject, pattern.p, pattern.o, None]));
        }
    }
    StreamPlan { streams, order: quad_ordering.components }
}

fn key_prefix(ordering: &Ordering, bound: &[Option<TermId>; 4]) -> Vec<u8> {
    let mut prefix = Vec::with_capacity(32);
    for c in ordering.components {
        match bound[*c] {
            Some(id) => prefix.extend_from_slice(&id.to_be_bytes()),
            None => break,
        }
    }
    prefix
}

/// About how many bytes on disk the quads matching `pattern` take, with
/// the object within `objects` (inclusive) when given: a planner compares
/// this with the whole pattern's to estimate how much of it a filter keeps.
/// `None` where the backend cannot tell (see `KvRead::approximate_bytes`).
pub fn approximate_bytes(snapshot: &dyn KvRead, pattern: QuadPattern, objects: Option<(TermId, TermId)>) -> Option<u64> {
    let mut total = 0;
    for (ordering, bound) in stream_plan(pattern, Families::default()).streams {
        let prefix = key_prefix(&ordering, &bound);
        let next_is_object = ordering.components.get(prefix.len() / 8) == Some(&O);
        let (lower, upper) = match objects {
            Some((low, high)) if next_is_object => {
                let mut lower = prefix.clone();
                lower.extend_from_slice(&low.to_be_bytes());
                let mut last = prefix;
                last.extend_from_slice(&high.to_be_bytes());
                (lower, prefix_upper_bound(&last))
            }
            _ => {
                let upper = prefix_upper_bound(&prefix);
                (prefix, upper)
            }
        };
        total += snapshot.approximate_bytes(ordering.ks, &lower, upper.as_deref())?;
    }
    Some(total)
}

/// A stream's cursor: the key-value layer's, or, on a store whose
/// indexes are segments, the segments' own (no dynamic calls, and quads
/// read from its ids rather than decoded from key bytes).
enum KeyCursor<'a> {
    Kv(Box<dyn Cursor + 'a>),
    Index(Box<crate::segmented::IndexCursor<'a>>),
}

impl<'a> KeyCursor<'a> {
    fn open(snapshot: &'a dyn KvRead, ordering: &Ordering, lower: &[u8], upper: Option<&[u8]>) -> KeyCursor<'a> {
        if let Some(segmented) = snapshot.as_any().and_then(|a| a.downcast_ref::<crate::segmented::SegmentedSnapshot>()) {
            if let Some(slot) = crate::segmented::slot_of(ordering.ks) {
                return KeyCursor::Index(Box::new(segmented.index_cursor(slot, lower, upper)));
            }
        }
        KeyCursor::Kv(snapshot.cursor(ordering.ks, lower, upper))
    }

    #[inline]
    fn valid(&self) -> bool {
        match self {
            KeyCursor::Kv(c) => c.valid(),
            KeyCursor::Index(c) => c.valid(),
        }
    }

    #[inline]
    fn key(&self) -> &[u8] {
        match self {
            KeyCursor::Kv(c) => c.key(),
            KeyCursor::Index(c) => c.key(),
        }
    }

    #[inline]
    fn next(&mut self) {
        match self {
            KeyCursor::Kv(c) => c.next(),
            KeyCursor::Index(c) => c.next(),
        }
    }

    fn seek(&mut self, key: &[u8]) {
        match self {
            KeyCursor::Kv(c) => c.seek(key),
            KeyCursor::Index(c) => c.seek(key),
        }
    }

    fn seek_first(&mut self) {
        match self {
            KeyCursor::Kv(c) => c.seek_first(),
            KeyCursor::Index(c) => c.seek_first(),
        }
    }

    /// Whether the current key starts with `prefix` (whole ids): on
    /// segments compared as ids, without the key's bytes.
    #[inline]
    fn has_prefix(&self, prefix: &[u8]) -> bool {
        match self {
            KeyCursor::Kv(c) => c.key().starts_with(prefix),
            KeyCursor::Index(c) => {
                debug_assert!(prefix.len() % 8 == 0, "prefixes are whole ids");
                let key = c.current_key().expect("the cursor is valid");
                prefix.chunks_exact(8).zip(key).all(|(p, id)| u64::from_be_bytes(p.try_into().expect("8 bytes")) == id)
            }
        }
    }

    /// Steps a re-pointed scan takes forward before it seeks instead: a
    /// RocksDB seek costs a dozen steps; a segment's is a search over the
    /// fences and one block, cheaper than a step through the delta merge.
    fn steps_before_seek(&self) -> usize {
        match self {
            KeyCursor::Kv(_) => STEPS_BEFORE_SEEK,
            KeyCursor::Index(_) => 0,
        }
    }

    fn status(&self) -> rhizome_kv::Result<()> {
        match self {
            KeyCursor::Kv(c) => c.status(),
            KeyCursor::Index(c) => c.status(),
        }
    }

    /// The current key as a quad in `[s, p, o, g]` order.
    #[inline]
    fn quad(&self, ordering: &Ordering) -> [TermId; 4] {
        match self {
            KeyCursor::Kv(c) => ordering.decode(c.key()),
            KeyCursor::Index(c) => quad_of_ids(ordering, &c.current_key().expect("the cursor is valid")),
        }
    }
}

/// Whether `streams` streams' cursors are sought together
/// ([`KvRead::cursors_sought`]): on a store whose reads are round trips (a
/// cluster's) a pattern's two index families (the store is shared, so both
/// are read) then cost one wait instead of two. A local store opens them
/// one by one (a segmented store's cursors are its own).
fn together(snapshot: &dyn KvRead, streams: usize) -> bool {
    streams > 1 && snapshot.reads_are_round_trips()
}

/// A key of `ordering` given as ids, as a quad in `[s, p, o, g]` order.
#[inline]
fn quad_of_ids(ordering: &Ordering, key: &[u64; 4]) -> [TermId; 4] {
    let mut quad = [TermId(0); 4];
    for (i, component) in ordering.components.iter().enumerate() {
        quad[*component] = TermId(key[i]);
    }
    if ordering.is_triple() {
        quad[G] = quad[S];
    }
    quad
}

/// A key's bytes without an allocation: the bytes and their length.
struct KeyBytes([u8; 32], usize);

impl KeyBytes {
    fn as_slice(&self) -> &[u8] {
        &self.0[..self.1]
    }
}

/// Rows a stream reads ahead at most from a segment block at once.
const AHEAD_ROWS: usize = 256;

/// Rows a stream hands out one at a time after a seek before it reads
/// ahead.
const READ_AHEAD_AFTER: usize = 16;

struct Stream<'a> {
    cursor: KeyCursor<'a>,
    ordering: Ordering,
    /// The key prefix the pattern's bound components make.
    prefix: Vec<u8>,
    /// The cursor spans its whole keyspace (a reusable scan): stop at the
    /// end of the prefix here rather than by the cursor's bounds.
    check_prefix: bool,
    current: Option<[TermId; 4]>,
    /// Where the cursor was last sought (reusable scans), and the last key
    /// it stepped past since (as a quad): every key from the one to the
    /// cursor's was read, so a later target above both is at the cursor
    /// or ahead of it.
    sought: Vec<u8>,
    passed: Option<[TermId; 4]>,
    /// Quads read ahead from a segment block in one go, handed out from
    /// `ahead_at` on (the cursor stands after the last of them): a scan
    /// row then costs a copy, not a step through the delta merge.
    ahead: Vec<[TermId; 4]>,
    ahead_at: usize,
    /// Quads handed out since the cursor was last sought: a stream reads
    /// ahead only once it has read [`READ_AHEAD_AFTER`] and then at most as
    /// many again, so lookups and merge joins that seek every few rows
    /// never copy rows they skip.
    since_seek: usize,
}

/// Keys a reusable scan steps over before it seeks instead: a step costs
/// a small part of a seek, and lookups driven by a sorted scan on the left
/// often want the next key or one a few keys on.
const STEPS_BEFORE_SEEK: usize = 4;

impl Stream<'_> {
    /// Puts the cursor on the first key at or after `target`: without a
    /// seek when the keys read since the last one show it is the current
    /// key or a few steps on.
    fn reposition(&mut self, target: &[u8]) {
        self.since_seek = 0;
        if self.ahead_at < self.ahead.len() {
            // The next key is the first read ahead: it is the target's
            // when the keys before it were passed and it is not below.
            let behind = match &self.passed {
                Some(q) => self.key_bytes(q).as_slice() < target,
                None => self.sought.as_slice() <= target,
            };
            let next = self.ahead[self.ahead_at];
            if behind && self.key_bytes(&next).as_slice() >= target {
                self.sought.clear();
                self.sought.extend_from_slice(target);
                self.passed = None;
                return;
            }
            self.seek(target);
            self.sought.clear();
            self.sought.extend_from_slice(target);
            self.passed = None;
            return;
        }
        let behind = match &self.passed {
            Some(q) => {
                let mut last = [0u8; 32];
                for (i, c) in self.ordering.components.iter().enumerate() {
                    last[i * 8..i * 8 + 8].copy_from_slice(&q[*c].to_be_bytes());
                }
                &last[..self.ordering.key_len()] < target
            }
            None => self.sought.as_slice() <= target,
        };
        if behind {
            let mut steps = 0;
            while self.cursor.valid() {
                if self.cursor.key() >= target {
                    self.sought.clear();
                    self.sought.extend_from_slice(target);
                    self.passed = None;
                    return;
                }
                if steps == self.cursor.steps_before_seek() {
                    break;
                }
                self.cursor.next();
                steps += 1;
            }
        }
        self.cursor.seek(target);
        self.sought.clear();
        self.sought.extend_from_slice(target);
        self.passed = None;
    }

    /// A quad as this stream's key bytes.
    fn key_bytes(&self, q: &[TermId; 4]) -> KeyBytes {
        let mut key = KeyBytes([0; 32], self.ordering.key_len());
        for (i, c) in self.ordering.components.iter().enumerate() {
            key.0[i * 8..i * 8 + 8].copy_from_slice(&q[*c].to_be_bytes());
        }
        key
    }

    /// Seeks the cursor, dropping what was read ahead.
    fn seek(&mut self, target: &[u8]) {
        self.since_seek = 0;
        self.ahead.clear();
        self.ahead_at = 0;
        self.cursor.seek(target);
    }

    /// Reads ahead the rest of the cursor's segment block (within the
    /// prefix when the cursor spans its keyspace); `false` when it could
    /// not (not stepping through a block, or at a delta entry).
    #[inline(never)]
    fn read_ahead(&mut self) -> bool {
        if !matches!(&self.cursor, KeyCursor::Index(c) if c.may_take_run()) {
            return false;
        }
        self.ahead.clear();
        self.ahead_at = 0;
        let (prefix, prefix_ids) = self.run_prefix();
        let from = self.key_columns();
        let KeyCursor::Index(cursor) = &mut self.cursor else { return false };
        let ahead = &mut self.ahead;
        cursor.take_run(&prefix[..prefix_ids], self.since_seek.min(AHEAD_ROWS), |columns| {
            let [s, p, o, g] = from.map(|c| columns[c]);
            ahead.extend(s.iter().zip(p).zip(o).zip(g).map(|(((s, p), o), g)| [TermId(*s), TermId(*p), TermId(*o), TermId(*g)]));
        }) > 0
    }

    /// Which key column each quad position comes from (a triple's graph
    /// is its subject).
    fn key_columns(&self) -> [usize; 4] {
        let mut from = [0usize; 4];
        for (i, component) in self.ordering.components.iter().enumerate() {
            from[*component] = i;
        }
        if self.ordering.is_triple() {
            from[G] = from[S];
        }
        from
    }

    /// The prefix a run must keep to, as ids (none when the cursor's
    /// bounds keep the scan in it).
    fn run_prefix(&self) -> ([u64; 4], usize) {
        let mut prefix = [0u64; 4];
        let prefix_ids = if self.check_prefix { self.prefix.len() / 8 } else { 0 };
        for (i, chunk) in self.prefix.chunks_exact(8).take(prefix_ids).enumerate() {
            prefix[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
        }
        (prefix, prefix_ids)
    }

    /// Appends up to `max` of the stream's next quads to `out` (at least
    /// one unless the stream is at its end), leaving `current` on the quad
    /// after them as [`Stream::advance`] does. `started`: `current` holds
    /// the stream's next quad already (else the cursor stands on it).
    /// Rows the segment has decoded are copied as columns, many at once.
    fn read_batch(&mut self, started: bool, out: &mut QuadBatch, max: usize) -> Result<usize> {
        let mut n = 0;
        if max == 0 {
            return Ok(0);
        }
        if started {
            match self.current.take() {
                Some(q) => {
                    out.push(q);
                    n += 1;
                }
                None => return Ok(0),
            }
        }
        while n < max {
            if self.ahead_at < self.ahead.len() {
                let k = (self.ahead.len() - self.ahead_at).min(max - n);
                for q in &self.ahead[self.ahead_at..self.ahead_at + k] {
                    out.push(*q);
                }
                self.ahead_at += k;
                self.since_seek += k;
                self.passed = Some(self.ahead[self.ahead_at - 1]);
                n += k;
                continue;
            }
            if matches!(&self.cursor, KeyCursor::Index(c) if c.may_take_run()) {
                let (prefix, prefix_ids) = self.run_prefix();
                let from = self.key_columns();
                if let KeyCursor::Index(cursor) = &mut self.cursor {
                    let taken = cursor.take_run(&prefix[..prefix_ids], max - n, |columns| out.extend_columns(from.map(|c| columns[c])));
                    if taken > 0 {
                        self.since_seek += taken;
                        self.passed = Some(out.quad(out.len() - 1));
                        n += taken;
                        if !self.cursor.valid() || (self.check_prefix && !self.cursor.has_prefix(&self.prefix)) {
                            // The run ended the stream (a lookup's rows
                            // taken from their window).
                            self.cursor.status()?;
                            self.current = None;
                            return Ok(n);
                        }
                        continue;
                    }
                }
            }
            self.step()?;
            match self.current.take() {
                Some(q) => {
                    out.push(q);
                    n += 1;
                }
                None => return Ok(n),
            }
        }
        // The next quad, for `current`: from what was read ahead, else a
        // step, not a read-ahead (the next batch takes rows as columns).
        if self.ahead_at < self.ahead.len() {
            self.advance()?;
        } else {
            self.step()?;
        }
        Ok(n)
    }

    #[inline]
    fn advance(&mut self) -> Result<()> {
        if self.ahead_at < self.ahead.len() || (self.since_seek >= READ_AHEAD_AFTER && self.read_ahead()) {
            let quad = self.ahead[self.ahead_at];
            self.ahead_at += 1;
            self.since_seek += 1;
            self.current = Some(quad);
            self.passed = Some(quad);
            return Ok(());
        }
        self.step()
    }

    /// [`Stream::advance`] by one step of the cursor (nothing read ahead).
    #[inline]
    fn step(&mut self) -> Result<()> {
        if self.cursor.valid() && (!self.check_prefix || self.cursor.has_prefix(&self.prefix)) {
            self.since_seek += 1;
            let quad = self.cursor.quad(&self.ordering);
            self.current = Some(quad);
            self.passed = Some(quad);
            self.cursor.next();
        } else {
            self.cursor.status()?;
            self.current = None;
        }
        Ok(())
    }
}

/// The quads matching a pattern, in the key order of `order()`.
pub struct QuadScan<'a> {
    streams: Vec<Stream<'a>>,
    order: &'static [usize],
    started: bool,
    families: Families,
}

impl<'a> QuadScan<'a> {
    pub fn new(snapshot: &'a dyn KvRead, pattern: QuadPattern) -> QuadScan<'a> {
        Self::open(snapshot, pattern, false, Families::default())
    }

    /// A scan that reads only the families `families` says hold quads
    /// (from [`families_present`] on the same reader).
    pub fn new_in(snapshot: &'a dyn KvRead, pattern: QuadPattern, families: Families) -> QuadScan<'a> {
        Self::open(snapshot, pattern, false, families)
    }

    /// A scan whose cursors span their whole keyspaces, so that
    /// [`QuadScan::rebind`] can point it at another pattern with a seek
    /// instead of opening new cursors (index nested loops do one lookup per
    /// row on the left; opening a RocksDB iterator costs more than a seek).
    pub fn reusable(snapshot: &'a dyn KvRead, pattern: QuadPattern, families: Families) -> QuadScan<'a> {
        Self::open(snapshot, pattern, true, families)
    }

    fn open(snapshot: &'a dyn KvRead, pattern: QuadPattern, whole: bool, families: Families) -> QuadScan<'a> {
        let plan = stream_plan(pattern, families);
        let prefixes: Vec<Vec<u8>> = plan.streams.iter().map(|(ordering, bound)| key_prefix(ordering, bound)).collect();
        let mut together = together(snapshot, plan.streams.len()).then(|| {
            let uppers: Vec<Option<Vec<u8>>> = prefixes.iter().map(|p| if whole { None } else { prefix_upper_bound(p) }).collect();
            let seeks: Vec<CursorSeek<'_>> = plan
                .streams
                .iter()
                .zip(prefixes.iter().zip(&uppers))
                .map(|((ordering, _), (prefix, upper))| CursorSeek { ks: ordering.ks, lower: if whole { &[] } else { prefix }, upper: upper.as_deref(), at: prefix })
                .collect();
            snapshot.cursors_sought(&seeks).into_iter().map(KeyCursor::Kv)
        });
        let mut streams = Vec::with_capacity(2);
        for ((ordering, _), prefix) in plan.streams.iter().zip(prefixes) {
            let cursor = match together.as_mut() {
                Some(cursors) => cursors.next().expect("a cursor per stream"),
                None if whole => {
                    let mut cursor = KeyCursor::open(snapshot, ordering, &[], None);
                    cursor.seek(&prefix);
                    cursor
                }
                None => {
                    let upper = prefix_upper_bound(&prefix);
                    let mut cursor = KeyCursor::open(snapshot, ordering, &prefix, upper.as_deref());
                    cursor.seek_first();
                    cursor
                }
            };
            let sought = if whole { prefix.clone() } else { Vec::new() };
            streams.push(Stream { cursor, ordering: *ordering, prefix, check_prefix: whole, current: None, sought, passed: None, ahead: Vec::new(), ahead_at: 0, since_seek: 0 });
        }
        QuadScan { streams, order: plan.order, started: false, families }
    }

    /// Points a reusable scan at another pattern; `false` (and the scan
    /// left as it was) when the pattern needs other orderings than this
    /// scan has.
    pub fn rebind(&mut self, pattern: QuadPattern) -> bool {
        let plan = stream_plan(pattern, self.families);
        if plan.streams.len() != self.streams.len()
            || self.streams.iter().zip(&plan.streams).any(|(s, (o, _))| !s.check_prefix || s.ordering.ks != o.ks)
        {
            return false;
        }
        for (s, (ordering, bound)) in self.streams.iter_mut().zip(&plan.streams) {
            s.prefix = key_prefix(ordering, bound);
            let prefix = std::mem::take(&mut s.prefix);
            s.reposition(&prefix);
            s.prefix = prefix;
            s.current = None;
        }
        self.order = plan.order;
        self.started = false;
        true
    }

    /// How many quads match `pattern`, counted from the segments' blocks
    /// without reading them (a COUNT's last pattern, whose quads are
    /// only counted), when this reusable scan's streams would read it on
    /// segments with no delta entry among its keys; `None` otherwise (the
    /// caller rebinds and reads). The scan does not move.
    pub fn count_pattern(&self, pattern: QuadPattern) -> Result<Option<u64>> {
        let plan = stream_plan(pattern, self.families);
        if plan.streams.len() != self.streams.len() {
            return Ok(None);
        }
        let mut n = 0;
        for (s, (ordering, bound)) in self.streams.iter().zip(&plan.streams) {
            let KeyCursor::Index(cursor) = &s.cursor else { return Ok(None) };
            if !s.check_prefix || s.ordering.ks != ordering.ks {
                return Ok(None);
            }
            let prefix = key_prefix(ordering, bound);
            // Every bound component in the prefix: the keys are then
            // exactly the pattern's quads (no filter after the index).
            if prefix.len() / 8 != bound.iter().filter(|b| b.is_some()).count() {
                return Ok(None);
            }
            match cursor.count_prefix(&prefix)? {
                Some(k) => n += k,
                None => return Ok(None),
            }
        }
        Ok(Some(n))
    }

    /// Every quad whose subject is `start` or after it in id order, in
    /// subject order (range scans over documents), reading only the
    /// families `families` says hold quads.
    pub fn subjects_from(snapshot: &'a dyn KvRead, start: TermId, families: Families) -> QuadScan<'a> {
        let mut streams = Vec::with_capacity(2);
        let wanted = [(QUAD_SPOG, families.quads), (TRIPLE_SPO, families.triples)];
        let orderings: Vec<Ordering> = wanted.into_iter().filter_map(|(o, present)| present.then_some(o)).collect();
        let start = start.to_be_bytes();
        let mut together = together(snapshot, orderings.len()).then(|| {
            let seeks: Vec<CursorSeek<'_>> = orderings.iter().map(|o| CursorSeek { ks: o.ks, lower: &start, upper: None, at: &start }).collect();
            snapshot.cursors_sought(&seeks).into_iter().map(KeyCursor::Kv)
        });
        for ordering in orderings {
            let cursor = match together.as_mut() {
                Some(cursors) => cursors.next().expect("a cursor per stream"),
                None => {
                    let mut cursor = KeyCursor::open(snapshot, &ordering, &start, None);
                    cursor.seek_first();
                    cursor
                }
            };
            streams.push(Stream { cursor, ordering, prefix: Vec::new(), check_prefix: false, current: None, sought: Vec::new(), passed: None, ahead: Vec::new(), ahead_at: 0, since_seek: 0 });
        }
        QuadScan { streams, order: QUAD_SPOG.components, started: false, families }
    }

    /// Quad positions in the order results come out.
    pub fn order(&self) -> &'static [usize] {
        self.order
    }

    fn less(&self, a: &[TermId; 4], b: &[TermId; 4]) -> bool {
        for c in self.order {
            if a[*c] != b[*c] {
                return a[*c] < b[*c];
            }
        }
        false
    }

    /// Whether the quads come out sorted by quad position `component`
    /// (it is the first unbound component of every stream's key), so that
    /// [`QuadScan::seek_component`] works: merge joins use it.
    pub fn sorted_by(&self, component: usize) -> bool {
        self.streams.iter().all(|s| s.ordering.components.get(s.prefix.len() / 8) == Some(&component))
    }

    /// Skips forward to the first quad whose `component` is at least
    /// `value` (one seek per stream whose current quad is before it).
    /// Needs `sorted_by(component)`.
    pub fn seek_component(&mut self, component: usize, value: TermId) -> Result<()> {
        debug_assert!(self.sorted_by(component), "seek_component on a scan not sorted by {component}");
        self.started = true;
        let mut key = Vec::with_capacity(40);
        for s in &mut self.streams {
            if s.current.is_some_and(|q| q[component] >= value) {
                continue;
            }
            key.clear();
            key.extend_from_slice(&s.prefix);
            key.extend_from_slice(&value.to_be_bytes());
            if s.check_prefix {
                s.reposition(&key);
            } else {
                s.seek(&key);
            }
            s.advance()?;
        }
        Ok(())
    }

    /// [`QuadScan::seek_component`] that may also move back: every stream
    /// is put on the first quad whose `component` is at least `value`,
    /// wherever it stands (a scan that serves lookups in mostly rising
    /// order, now and then an earlier one). Needs `sorted_by(component)`.
    pub fn seek_component_anywhere(&mut self, component: usize, value: TermId) -> Result<()> {
        for s in &mut self.streams {
            s.current = None;
        }
        self.seek_component(component, value)
    }

    pub fn next_quad(&mut self) -> Result<Option<[TermId; 4]>> {
        if let [only] = self.streams.as_mut_slice() {
            // One stream (most scans: a store of one family): no merge.
            if !self.started {
                self.started = true;
                only.advance()?;
            }
            let quad = only.current.take();
            if quad.is_some() {
                only.advance()?;
            }
            return Ok(quad);
        }
        if !self.started {
            self.started = true;
            for s in &mut self.streams {
                s.advance()?;
            }
        }
        let mut best: Option<usize> = None;
        for (i, s) in self.streams.iter().enumerate() {
            if let Some(q) = &s.current {
                best = match best {
                    Some(b) if !self.less(q, self.streams[b].current.as_ref().expect("best is current")) => Some(b),
                    _ => Some(i),
                };
            }
        }
        let Some(i) = best else { return Ok(None) };
        let quad = self.streams[i].current.take();
        self.streams[i].advance()?;
        Ok(quad)
    }
}

impl QuadScan<'_> {
    /// Appends up to `max` of the next quads to `out` as id columns;
    /// returns how many (0 at the end). A scan of one stream on segments
    /// copies the rows its cursor has decoded (a lookup's window, the rest
    /// of a block) in one go, the delta merged between runs, instead of a
    /// step per quad; it may be mixed with [`QuadScan::next_quad`].
    pub fn next_batch(&mut self, out: &mut QuadBatch, max: usize) -> Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        if let [only] = self.streams.as_mut_slice() {
            let started = std::mem::replace(&mut self.started, true);
            return only.read_batch(started, out, max);
        }
        let mut n = 0;
        while n < max {
            match self.next_quad()? {
                Some(q) => out.push(q),
                None => break,
            }
            n += 1;
        }
        Ok(n)
    }
}

/// Quads as id columns: position `c` (s, p, o, g) of quad `i` is
/// `column(c)[i]`. Scans hand them out in batches (`QuadScan::next_batch`).
#[derive(Debug, Default, Clone)]
pub struct QuadBatch {
    columns: [Vec<TermId>; 4],
}

impl QuadBatch {
    pub fn len(&self) -> usize {
        self.columns[0].len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns[0].is_empty()
    }

    pub fn clear(&mut self) {
        for c in &mut self.columns {
            c.clear();
        }
    }

    /// The ids at quad position `c` (0 subject, 1 predicate, 2 object,
    /// 3 graph).
    pub fn column(&self, c: usize) -> &[TermId] {
        &self.columns[c]
    }

    /// Quad `i` in `[s, p, o, g]` order.
    #[inline]
    pub fn quad(&self, i: usize) -> [TermId; 4] {
        [self.columns[0][i], self.columns[1][i], self.columns[2][i], self.columns[3][i]]
    }

    pub fn push(&mut self, q: [TermId; 4]) {
        for (c, id) in self.columns.iter_mut().zip(q) {
            c.push(id);
        }
    }

    /// Appends the rows of four id columns of one length (s, p, o, g).
    fn extend_columns(&mut self, from: [&[u64]; 4]) {
        debug_assert!(from.iter().all(|c| c.len() == from[0].len()), "columns of one length");
        for (c, ids) in self.columns.iter_mut().zip(from) {
            // SAFETY: `TermId` is `repr(transparent)` over `u64`, so a
            // slice of one is a slice of the other (a copy, not a loop).
            let ids: &[TermId] = unsafe { std::slice::from_raw_parts(ids.as_ptr().cast::<TermId>(), ids.len()) };
            c.extend_from_slice(ids);
        }
    }
}

impl Iterator for QuadScan<'_> {
    type Item = Result<[TermId; 4]>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_quad().transpose()
    }
}

/// Checks the choice of orderings: every pattern's bound components form a
/// key prefix, in both families.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_is_a_prefix_scan() {
        for mask in 0..16u8 {
            let bound = [mask & 1 != 0, mask & 2 != 0, mask & 4 != 0, mask & 8 != 0];
            for triple in [false, true] {
                let ordering = choose(bound[0], bound[1], bound[2], bound[3] && !triple, triple);
                let n = bound.iter().take(if triple { 3 } else { 4 }).filter(|b| **b).count();
                let n = if triple { bound[..3].iter().filter(|b| **b).count() } else { n };
                for c in &ordering.components[..n] {
                    assert!(bound[*c], "mask {mask:04b} triple={triple}: {} does not start with bound components", ordering.name());
                }
            }
        }
    }

    /// On a cluster's store both index families are read (the store is
    /// shared): a pattern's two cursors are sought in one wait, not one
    /// each, and the scan gives what it gives on a local store.
    #[test]
    fn both_families_are_sought_in_one_wait_on_a_cluster() {
        let kv = rhizome_kv::Kv::memory();
        let mut txn = kv.transaction().unwrap();
        let id = TermId;
        let mut key = Vec::new();
        // Subject 5 in its own graph (a triple) and in graph 9 (a quad);
        // subject 6's quads, which no lookup of 5 may return.
        for quad in [[5, 1, 7, 5], [5, 2, 8, 5], [6, 1, 7, 6]] {
            key.clear();
            TRIPLE_SPO.encode(&quad.map(id), &mut key);
            txn.put(TRIPLE_SPO.ks, &key, b"");
        }
        for quad in [[5, 1, 7, 9], [6, 2, 8, 9]] {
            key.clear();
            QUAD_SPOG.encode(&quad.map(id), &mut key);
            txn.put(QUAD_SPOG.ks, &key, b"");
        }
        txn.commit().unwrap();
        let snapshot = kv.snapshot().unwrap();
        let store = crate::round_trips::RoundTrips::new(snapshot.as_ref());
        let collect = |scan: QuadScan<'_>| -> Vec<[TermId; 4]> {
            let mut scan = scan;
            let mut out = Vec::new();
            while let Some(q) = scan.next_quad().unwrap() {
                out.push(q);
            }
            out
        };
        let pattern = QuadPattern { s: Some(id(5)), ..Default::default() };
        let local = collect(QuadScan::new(snapshot.as_ref(), pattern));
        assert_eq!(local, [[5, 1, 7, 5], [5, 1, 7, 9], [5, 2, 8, 5]].map(|q| q.map(id)));
        let scan = QuadScan::new(&store, pattern);
        assert_eq!(store.waits.get(), 1, "both families' cursors sought in one wait");
        assert_eq!(collect(scan), local);
        // The same for a reusable scan, and for a scan of subjects onward.
        store.waits.set(0);
        let mut scan = QuadScan::reusable(&store, pattern, Families::default());
        assert_eq!(store.waits.get(), 1);
        let mut got = Vec::new();
        while let Some(q) = scan.next_quad().unwrap() {
            if q[S] != id(5) {
                break;
            }
            got.push(q);
        }
        assert_eq!(got, local);
        store.waits.set(0);
        let scan = QuadScan::subjects_from(&store, id(6), Families::default());
        assert_eq!(store.waits.get(), 1);
        assert_eq!(collect(scan), [[6, 1, 7, 6], [6, 2, 8, 9]].map(|q| q.map(id)));
        // Which families hold quads: one wait for both.
        store.waits.set(0);
        assert_eq!(families_present(&store).unwrap(), Families { triples: true, quads: true });
        assert_eq!(store.waits.get(), 1);
    }
}
