//! Row counts of a view by key range, so that a query's `offset` (the
//! rows before its first row) is a short sum instead of a scan of every row
//! before it: a `key=` query in the middle of a 50,000-row view counted
//! 25,000 rows on average (1.7 ms of a 1.8 ms request); CouchDB reads the
//! same number from its B-tree's reductions.
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | `VIEW_RANKS` 43 | signature (8), view number (1), fence (a `VIEW_ROWS` key's rest, possibly empty) | rows `r` of the view with `fence <= r < next fence`, u64 BE, then their summary (`bucket_summary.rs`) |
//!
//! Invariants, kept in the transaction that changes the rows: a view with
//! buckets has the one whose fence is empty (it covers the smallest keys),
//! and the counts sum to the view's rows. A bucket past [`SPLIT_ROWS`] is
//! cut into buckets of [`BUCKET_ROWS`]; one under [`MERGE_ROWS`] joins its
//! predecessor when both fit in one. So `rows_before` finds its bucket in
//! the fences' running sums (read once per state of the index and kept in
//! memory, [`Fences`]) and scans at most [`SPLIT_ROWS`] rows.
//! An index built before the buckets existed has none (its state says
//! `ranked: false`) and counts by scanning until it is next brought up to
//! date, which adds them.

use crate::bucket_summary::{stores_reduction, summarize, with_added, BucketValue, Summary, SummaryBuilder};
use crate::index::{ViewError, VIEW_ROWS};
use crate::reduce::Reducer;
use rhizome_docs::DocError;
use rhizome_kv::{Keyspace, KvRead};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

pub const VIEW_RANKS: Keyspace = Keyspace(43);

/// Rows per bucket when one is cut: a query scans half a bucket on
/// average (1024 cost a 50,000-row view's `key=` query about a quarter
/// of its time), and a grouped reduce reads the rows of each bucket that
/// holds a group's edge (256 made a 60-group `_count` read a third of a
/// 50,000-row view); more buckets cost the in-memory fences and, when
/// rows are written, a bucket written per few rows.
pub(crate) const BUCKET_ROWS: u64 = 64;
/// A bucket with more rows is cut.
pub(crate) const SPLIT_ROWS: u64 = 2 * BUCKET_ROWS;
/// A bucket with fewer rows joins its predecessor if they fit in one.
pub(crate) const MERGE_ROWS: u64 = BUCKET_ROWS / 4;

/// The rows of the view at `prefix` (signature and view number) whose
/// keys sort before `key`. `cached`: the index's identity and sequence
/// (`IndexState::nonce`, `seq`) as `kv` has them, so that the buckets'
/// running sums are read once per state of the index ([`Fences`]) instead
/// of walked per query; `None` walks them.
pub fn rows_before(kv: &dyn KvRead, prefix: &[u8], key: &[u8], cached: Option<(u64, u64)>) -> Result<u64, ViewError> {
    let fences = match cached {
        Some((nonce, seq)) => Fences::cached(kv, prefix, nonce, seq)?,
        None => {
            let mut end = key.to_vec();
            end.push(0);
            Arc::new(Fences::read(kv, prefix, &end)?)
        }
    };
    // The last bucket whose fence is at or before `key`: the ones before
    // it are wholly before `key`; it is counted row by row up to `key`.
    let i = fences.fences.partition_point(|f| f.as_slice() <= key);
    let Some(last) = i.checked_sub(1) else { return Ok(0) };
    let mut before = fences.before[last];
    let fence = &fences.fences[last];
    if fence.as_slice() >= key {
        return Ok(before);
    }
    let mut rows = kv.cursor(VIEW_ROWS, fence, Some(key));
    rows.seek_first();
    while rows.valid() {
        before += 1;
        rows.next();
    }
    rows.status()?;
    Ok(before)
}

/// One view's bucket fences in order, each with the rows of the buckets
/// before it: `rows_before` is then a binary search and a scan of at most
/// one bucket. A view query's fixed cost was mostly the walk over about
/// half the buckets and half a bucket's rows (38% of a `key=` query's
/// server time at 50,000 rows).
pub(crate) struct Fences {
    pub fences: Vec<Vec<u8>>,
    pub before: Vec<u64>,
    /// Each bucket's rows and, when it has one, its summary
    /// (`bucket_summary.rs`: first and last rows, stored reduction).
    pub buckets: Vec<BucketValue>,
}

/// The buckets of the view at `prefix` as `kv` has them, read once per
/// state of the index when `cached` names it (see [`rows_before`]).
pub(crate) fn fences(kv: &dyn KvRead, prefix: &[u8], cached: Option<(u64, u64)>) -> Result<Arc<Fences>, ViewError> {
    match cached {
        Some((nonce, seq)) => Fences::cached(kv, prefix, nonce, seq),
        None => Ok(Arc::new(Fences::read(kv, prefix, &upper_of(prefix))?)),
    }
}

fn upper_of(prefix: &[u8]) -> Vec<u8> {
    rhizome_kv::prefix_upper_bound(prefix).unwrap_or_else(|| vec![0xff; prefix.len() + 1])
}

/// Fences by (index nonce, view number), each valid for one index sequence.
/// Process-wide: an index's nonce is drawn when it is created, so two
/// databases (or a database deleted and made again) never share an entry.
type FenceCache = HashMap<(u64, u8), (u64, Arc<Fences>)>;
static FENCE_CACHE: Mutex<Option<FenceCache>> = Mutex::new(None);
/// Views whose fences are kept (each about 40 bytes per bucket).
const FENCE_CACHE_VIEWS: usize = 64;

impl Fences {
    /// The buckets under `prefix` whose fences sort before `end`.
    fn read(kv: &dyn KvRead, prefix: &[u8], end: &[u8]) -> Result<Fences, ViewError> {
        let mut out = Fences { fences: Vec::new(), before: Vec::new(), buckets: Vec::new() };
        let mut sum = 0u64;
        let mut cursor = kv.cursor(VIEW_RANKS, prefix, Some(end));
        cursor.seek_first();
        while cursor.valid() {
            let bucket = BucketValue::decode(cursor.value())?;
            out.fences.push(cursor.key().to_vec());
            out.before.push(sum);
            sum += bucket.rows;
            out.buckets.push(bucket);
            cursor.next();
        }
        cursor.status()?;
        Ok(out)
    }

    fn cached(kv: &dyn KvRead, prefix: &[u8], nonce: u64, seq: u64) -> Result<Arc<Fences>, ViewError> {
        let view = *prefix.get(8).ok_or_else(|| DocError::Corrupt("view prefix without a view number".into()))?;
        let lock = || FENCE_CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((at, fences)) = lock().as_ref().and_then(|c| c.get(&(nonce, view))) {
            if *at == seq {
                return Ok(fences.clone());
            }
        }
        let fences = Arc::new(Fences::read(kv, prefix, &upper_of(prefix))?);
        let mut cache = lock();
        let cache = cache.get_or_insert_with(HashMap::new);
        if cache.len() >= FENCE_CACHE_VIEWS && !cache.contains_key(&(nonce, view)) {
            cache.clear();
        }
        // A later state read by another query meanwhile stays.
        match cache.get(&(nonce, view)) {
            Some((at, _)) if *at > seq => {}
            _ => {
                cache.insert((nonce, view), (seq, fences.clone()));
            }
        }
        Ok(fences)
    }
}

/// The buckets of one index that a transaction changes: loaded per view
/// on first use, counted in memory, written by [`RankUpdate::write`] with
/// their summaries (`bucket_summary.rs`).
pub(crate) struct RankUpdate {
    id: [u8; 8],
    /// Each view's reduce, in the design document's order: what its
    /// buckets' summaries keep.
    reducers: Vec<Option<Reducer>>,
    /// Per view number touched: fence key (with its prefix) -> the bucket.
    views: BTreeMap<u8, BTreeMap<Vec<u8>, BucketChange>>,
}

/// One bucket in a transaction.
struct BucketChange {
    rows: u64,
    /// As stored (`None`: a new bucket).
    stored: Option<BucketValue>,
    /// Rows added (whole `VIEW_ROWS` keys and values); values are kept
    /// only for views whose buckets keep their reduction.
    added: Vec<(Vec<u8>, Vec<u8>)>,
    /// Rows removed, or a bucket joined to it: its summary is made again
    /// from its rows.
    rebuild: bool,
}

impl RankUpdate {
    pub fn new(id: [u8; 8], reducers: Vec<Option<Reducer>>) -> RankUpdate {
        RankUpdate { id, reducers, views: BTreeMap::new() }
    }

    fn prefix(&self, view: u8) -> Vec<u8> {
        let mut p = self.id.to_vec();
        p.push(view);
        p
    }

    fn buckets(&mut self, kv: &dyn KvRead, view: u8) -> Result<&mut BTreeMap<Vec<u8>, BucketChange>, ViewError> {
        if !self.views.contains_key(&view) {
            let prefix = self.prefix(view);
            let mut buckets = BTreeMap::new();
            let upper = rhizome_kv::prefix_upper_bound(&prefix);
            let mut cursor = kv.cursor(VIEW_RANKS, &prefix, upper.as_deref());
            cursor.seek_first();
            while cursor.valid() {
                let stored = BucketValue::decode(cursor.value())?;
                buckets.insert(cursor.key().to_vec(), BucketChange { rows: stored.rows, stored: Some(stored), added: Vec::new(), rebuild: false });
                cursor.next();
            }
            cursor.status()?;
            // The bucket of the smallest keys is always there.
            buckets.entry(prefix).or_insert(BucketChange { rows: 0, stored: None, added: Vec::new(), rebuild: false });
            self.views.insert(view, buckets);
        }
        Ok(self.views.get_mut(&view).expect("inserted above"))
    }

    fn bucket_of(&mut self, kv: &dyn KvRead, row: &[u8]) -> Result<(bool, &mut BucketChange), ViewError> {
        let view = *row.get(8).ok_or_else(|| DocError::Corrupt("view row key without a view number".into()))?;
        let stores = stores_reduction(self.reducers.get(view as usize).copied().flatten());
        let buckets = self.buckets(kv, view)?;
        let (_, bucket) = buckets.range_mut(..=row.to_vec()).next_back().expect("the first bucket's fence is the view's prefix, at or before every row");
        Ok((stores, bucket))
    }

    /// A row `row` (a whole `VIEW_ROWS` key) with `value` was added.
    pub fn add(&mut self, kv: &dyn KvRead, row: &[u8], value: &[u8]) -> Result<(), ViewError> {
        let (stores, bucket) = self.bucket_of(kv, row)?;
        bucket.rows += 1;
        bucket.added.push((row.to_vec(), if stores { value.to_vec() } else { Vec::new() }));
        Ok(())
    }

    /// A row `row` was removed.
    pub fn remove(&mut self, kv: &dyn KvRead, row: &[u8]) -> Result<(), ViewError> {
        let (_, bucket) = self.bucket_of(kv, row)?;
        bucket.rows = bucket.rows.saturating_sub(1);
        bucket.rebuild = true;
        Ok(())
    }

    /// Cuts and joins the touched buckets, summarizes the changed ones
    /// (reading the rows as `kv`, the transaction, now has them where
    /// their added rows do not say enough) and puts what changed into
    /// `put` and `delete`.
    pub fn write(self, kv: &dyn KvRead, mut put: impl FnMut(&[u8], &[u8]), mut delete: impl FnMut(&[u8])) -> Result<(), ViewError> {
        for (view, buckets) in self.views {
            let reducer = self.reducers.get(view as usize).copied().flatten();
            let prefix = {
                let mut p = self.id.to_vec();
                p.push(view);
                p
            };
            let upper = upper_of(&prefix);
            // Joins: a small bucket (not the first) goes into the one before.
            let mut joined: Vec<(Vec<u8>, BucketChange)> = Vec::with_capacity(buckets.len());
            for (fence, bucket) in buckets {
                match joined.last_mut() {
                    Some((_, prev)) if bucket.rows < MERGE_ROWS && prev.rows + bucket.rows <= SPLIT_ROWS => {
                        prev.rows += bucket.rows;
                        prev.rebuild = true;
                        if bucket.stored.is_some() {
                            delete(&fence);
                        }
                    }
                    _ => joined.push((fence, bucket)),
                }
            }
            // Cuts: a bucket past SPLIT_ROWS is read and cut every
            // BUCKET_ROWS rows; the others are written if they changed.
            for i in 0..joined.len() {
                let next = joined.get(i + 1).map_or(upper.as_slice(), |(f, _)| f.as_slice());
                let (fence, bucket) = (&joined[i].0, &joined[i].1);
                if bucket.rows > SPLIT_ROWS {
                    let mut cut = Cut { reducer, current: fence.clone(), piece: SummaryBuilder::default() };
                    // Where the stored rows end, when the bucket was only
                    // added to and its summary says (or it had none): the
                    // rows past that are the added ones, cut from memory
                    // instead of read back (a build appending to a view's
                    // last bucket read every row it wrote again).
                    let stored_end = match &bucket.stored {
                        _ if bucket.rebuild => None,
                        None | Some(BucketValue { rows: 0, .. }) => Some(None),
                        Some(BucketValue { summary: Some(s), .. }) => Some(Some(s.last.iter().copied().chain([0]).collect::<Vec<u8>>())),
                        Some(BucketValue { summary: None, .. }) => None,
                    };
                    let read_to = match &stored_end {
                        None => Some(next),
                        Some(None) => None,
                        Some(Some(end)) => Some(end.as_slice().min(next)),
                    };
                    if let Some(to) = read_to {
                        let mut cursor = kv.cursor(VIEW_ROWS, fence, Some(to));
                        cursor.seek_first();
                        while cursor.valid() {
                            cut.push(cursor.key(), cursor.value(), &mut put)?;
                            cursor.next();
                        }
                        cursor.status()?;
                    }
                    if stored_end.is_some() {
                        let from = read_to.unwrap_or(fence.as_slice());
                        let mut rest: Vec<&(Vec<u8>, Vec<u8>)> = bucket.added.iter().filter(|(k, _)| k.as_slice() >= from).collect();
                        rest.sort_by(|a, b| a.0.cmp(&b.0));
                        for (k, v) in rest {
                            cut.push(k, v, &mut put)?;
                        }
                    }
                    put(&cut.current, &cut.piece.finish(reducer).encode());
                    continue;
                }
                let summarized = bucket.stored.as_ref().is_some_and(|s| s.summary.is_some());
                if !bucket.rebuild && bucket.added.is_empty() && summarized && bucket.stored.as_ref().map(|s| s.rows) == Some(bucket.rows) {
                    continue;
                }
                // From the added rows alone when nothing was removed and
                // the bucket had a summary (or is new); else from its rows.
                let mut added = None;
                if !bucket.rebuild {
                    let base = match &bucket.stored {
                        None => Some((Summary::default(), 0)),
                        Some(BucketValue { rows, summary: Some(s) }) => Some((s.clone(), *rows)),
                        Some(BucketValue { summary: None, .. }) => None,
                    };
                    if let Some((base, base_rows)) = base {
                        let mut rows = bucket.added.clone();
                        rows.sort_by(|a, b| a.0.cmp(&b.0));
                        added = with_added(&base, base_rows, reducer, &rows)?.map(|s| BucketValue { rows: bucket.rows, summary: Some(s) });
                    }
                }
                let value = match added {
                    Some(v) => v,
                    None => {
                        let v = summarize(kv, reducer, fence, next)?;
                        debug_assert_eq!(v.rows, bucket.rows, "a bucket's count is its rows");
                        v
                    }
                };
                put(fence, &value.encode());
            }
        }
        Ok(())
    }
}

/// A bucket's rows, given in key order, cut every [`BUCKET_ROWS`].
struct Cut {
    reducer: Option<Reducer>,
    /// The fence of the piece being filled.
    current: Vec<u8>,
    piece: SummaryBuilder,
}

impl Cut {
    fn push(&mut self, key: &[u8], value: &[u8], put: &mut impl FnMut(&[u8], &[u8])) -> Result<(), ViewError> {
        if self.piece.rows() == BUCKET_ROWS {
            put(&self.current, &std::mem::take(&mut self.piece).finish(self.reducer).encode());
            self.current = key.to_vec();
        }
        self.piece.push(self.reducer, key, value)
    }
}

/// Buckets for every view of an index that has rows but no buckets (an
/// index built before them), from one scan of its rows.
pub(crate) fn build(kv: &dyn KvRead, id: &[u8; 8], mut put: impl FnMut(&[u8], &[u8])) -> Result<(), ViewError> {
    let upper = rhizome_kv::prefix_upper_bound(id);
    let mut cursor = kv.cursor(VIEW_ROWS, id, upper.as_deref());
    cursor.seek_first();
    // The bucket being counted: its fence and rows.
    let mut current: Option<(Vec<u8>, u64)> = None;
    while cursor.valid() {
        let key = cursor.key();
        let view = key.get(8).copied().ok_or_else(|| DocError::Corrupt("view row key without a view number".into()))?;
        let same_view = matches!(&current, Some((f, _)) if f[8] == view);
        match &mut current {
            Some((_, n)) if same_view && *n < BUCKET_ROWS => *n += 1,
            _ => {
                if let Some((fence, n)) = current.take() {
                    put(&fence, &n.to_be_bytes());
                }
                // A view's first bucket has the empty fence: its prefix.
                let fence = if same_view { key.to_vec() } else { key[..9].to_vec() };
                current = Some((fence, 1));
            }
        }
        cursor.next();
    }
    cursor.status()?;
    if let Some((fence, n)) = current {
        put(&fence, &n.to_be_bytes());
    }
    Ok(())
}
