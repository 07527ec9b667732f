//! A reader's view of the store: an engine snapshot for every keyspace but
//! the quad orderings, and for those the view's segments and the delta
//! versions at or before the engine snapshot's sequence number.

use super::carried::{carries, is_carried, CarriedCursor};
use super::cursor::IndexCursor;
use super::term_filter::TermFilter;
use super::view::View;
use super::{columns, slot_of};
use crate::index::layout::TERM2ID;
use rhizome_kv::{Cursor, Keyspace, KvRead, Snapshot};
use std::sync::Arc;

pub(crate) struct SegmentedSnapshot {
    pub inner: Arc<dyn Snapshot>,
    pub view: Arc<View>,
    /// The engine snapshot's sequence number.
    pub at: u64,
    /// The dictionary's term filter (shared by every snapshot).
    pub terms: Arc<TermFilter>,
}

impl SegmentedSnapshot {
    /// A cursor over an ordering (by slot) as this snapshot sees it.
    pub fn index_cursor(&self, slot: usize, lower: &[u8], upper: Option<&[u8]>) -> IndexCursor<'_> {
        IndexCursor::new(self.view.segment(slot), &self.view.deltas[slot], self.at, columns(slot), lower, upper)
    }
}

fn words(key: &[u8]) -> [u64; 4] {
    let mut k = [0u64; 4];
    for (i, chunk) in key.chunks_exact(8).enumerate() {
        k[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
    }
    k
}

impl KvRead for SegmentedSnapshot {
    fn get(&self, ks: Keyspace, key: &[u8]) -> rhizome_kv::Result<Option<Vec<u8>>> {
        let Some(slot) = slot_of(ks) else {
            if ks == TERM2ID && !self.terms.may_hold(key) {
                // A term the store never held (most often a write's new
                // one): no read of the carried map or the engine.
                return Ok(None);
            }
            if carries(ks, key) {
                if let Some(value) = self.view.carried.get(ks, key, self.at) {
                    return Ok(value);
                }
            }
            return self.inner.get(ks, key);
        };
        let columns = columns(slot);
        if key.len() != columns * 8 {
            return Ok(None);
        }
        let k = words(key);
        if let Some(there) = self.view.deltas[slot].get(&k, self.at) {
            return Ok(there.then(Vec::new));
        }
        match self.view.segment(slot) {
            Some(segment) => match segment.contains(&k[..columns]) {
                Ok(true) => Ok(Some(Vec::new())),
                Ok(false) => Ok(None),
                Err(e) => Err(rhizome_kv::Error::Engine(e.to_string())),
            },
            None => Ok(None),
        }
    }

    /// The keys the carried map or the term filter answer are answered
    /// so, as [`get`](KvRead::get) does; the others go to the engine
    /// together (a local engine's batched read, a cluster's one wait).
    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> rhizome_kv::Result<Vec<Option<Vec<u8>>>> {
        if slot_of(ks).is_some() {
            return keys.iter().map(|key| self.get(ks, key)).collect();
        }
        let mut values: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        let mut engine_keys = Vec::new();
        let mut engine_at = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if ks == TERM2ID && !self.terms.may_hold(key) {
                continue;
            }
            if carries(ks, key) {
                if let Some(value) = self.view.carried.get(ks, key, self.at) {
                    values[i] = value;
                    continue;
                }
            }
            engine_keys.push(key.clone());
            engine_at.push(i);
        }
        if !engine_keys.is_empty() {
            for (i, value) in engine_at.into_iter().zip(self.inner.get_many(ks, &engine_keys)?) {
                values[i] = value;
            }
        }
        Ok(values)
    }

    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        match slot_of(ks) {
            Some(slot) => Box::new(self.index_cursor(slot, lower, upper)),
            None if is_carried(ks) && self.view.carried.holds(ks) => {
                let base = self.inner.cursor(ks, lower, upper);
                Box::new(CarriedCursor::new(base, &self.view.carried, ks, self.at, lower, upper))
            }
            None => self.inner.cursor(ks, lower, upper),
        }
    }

    /// For an ordering: the segment's bytes in proportion to its keys in
    /// the range (two seeks), as the engine's estimate leaves out recent
    /// writes still in memory.
    fn approximate_bytes(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Option<u64> {
        let Some(slot) = slot_of(ks) else { return self.inner.approximate_bytes(ks, lower, upper) };
        let Some(segment) = self.view.segment(slot) else { return Some(0) };
        let no_delta = super::delta::Delta::default();
        let rank = |bytes: Option<&[u8]>| -> Option<u64> {
            let Some(bytes) = bytes else { return Some(segment.rows()) };
            let mut cursor = IndexCursor::new(Some(segment), &no_delta, 0, columns(slot), &[], None);
            cursor.seek(bytes);
            cursor.status().ok()?;
            Some(cursor.segment_rank())
        };
        let (low, high) = (rank(Some(lower))?, rank(upper)?);
        let rows = high.saturating_sub(low);
        Some((rows as u128 * segment.bytes() as u128 / segment.rows().max(1) as u128) as u64)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl Snapshot for SegmentedSnapshot {
    fn sequence(&self) -> Option<u64> {
        Some(self.at)
    }
}
