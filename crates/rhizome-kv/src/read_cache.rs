//! A read-through cache of point reads at one snapshot.
//!
//! A document write reads the same keys more than once within one
//! transaction: the document's record (for its winner, then for its
//! revision tree), the body the write edits (to answer, then to see
//! whether it was a graph's), the default JSON-LD context (once per
//! document). A point read of RocksDB costs 5-15k instructions (memtable,
//! then each level's block); a snapshot never changes, so its answers can
//! be kept. Measured on TPC-B's `_transaction` (callgrind, `rhizome
//! bench-tpcb --door inproc-ops`): 7 of 38 reads per transaction were
//! repeats.

use crate::backend::KvRead;
use crate::{Keyspace, Result};
use rustc_hash::FxSeededState;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, OnceLock};

/// Entries kept at most, and their bytes: a transaction that reads much
/// (a bulk load's dictionary) stops caching rather than grow without bound.
const MAX_ENTRIES: usize = 4096;
const MAX_BYTES: usize = 4 << 20;

/// One keyspace's keys. Fx, seeded per process ([`seeded`]), rather than
/// SipHash: the cache lives for one transaction and holds at most
/// [`MAX_ENTRIES`], and SipHash was a third of its cost (callgrind on
/// TPC-B's `_transaction`: 3 SipHash runs per read, about 18k
/// instructions a transaction, with the keyspace map's).
type Keys = HashMap<Box<[u8]>, Option<Vec<u8>>, FxSeededState>;

/// Fx seeded once per process from the standard library's random keys, so
/// that keys crafted to collide cannot be chosen ahead of time: for maps
/// keyed by what a client sends, where SipHash costs more than the map.
pub fn seeded() -> FxSeededState {
    static SEED: OnceLock<usize> = OnceLock::new();
    FxSeededState::with_seed(*SEED.get_or_init(|| RandomState::new().build_hasher().finish() as usize))
}

#[derive(Default)]
struct Entries {
    /// A few keyspaces per transaction: a list, searched in order.
    by_keyspace: Vec<(Keyspace, Keys)>,
    count: usize,
    bytes: usize,
}

impl Entries {
    fn keys(&self, ks: Keyspace) -> Option<&Keys> {
        self.by_keyspace.iter().find(|(k, _)| *k == ks).map(|(_, m)| m)
    }

    fn keys_mut(&mut self, ks: Keyspace) -> &mut Keys {
        let at = match self.by_keyspace.iter().position(|(k, _)| *k == ks) {
            Some(at) => at,
            None => {
                self.by_keyspace.push((ks, Keys::with_hasher(seeded())));
                self.by_keyspace.len() - 1
            }
        };
        &mut self.by_keyspace[at].1
    }
}

/// Point reads of one unchanging snapshot, remembered. A `Mutex` rather
/// than a `RefCell`: readers are shared across threads (`Snapshot: Sync`).
#[derive(Default)]
pub struct ReadCache {
    entries: Mutex<Entries>,
}

impl ReadCache {
    /// `snapshot`'s value of `key`, read once. The caller passes the same
    /// snapshot every time (the cache does not know it).
    pub fn get(&self, snapshot: &dyn KvRead, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_keeping(snapshot, ks, key, true)
    }

    /// [`get`](Self::get), keeping the answer only if the key is there or
    /// `keep_miss`.
    pub fn get_keeping(&self, snapshot: &dyn KvRead, ks: Keyspace, key: &[u8], keep_miss: bool) -> Result<Option<Vec<u8>>> {
        if let Some(hit) = self.lock().keys(ks).and_then(|m| m.get(key)) {
            return Ok(hit.clone());
        }
        let value = snapshot.get(ks, key)?;
        if value.is_none() && !keep_miss {
            return Ok(None);
        }
        let mut e = self.lock();
        let size = key.len() + value.as_ref().map_or(0, Vec::len);
        if e.count < MAX_ENTRIES && e.bytes + size <= MAX_BYTES {
            e.count += 1;
            e.bytes += size;
            e.keys_mut(ks).insert(key.into(), value.clone());
        }
        Ok(value)
    }

    /// [`get`](Self::get) for many keys: the ones not yet read are read
    /// together (`snapshot.get_many`: one wait on a cluster).
    pub fn get_many(&self, snapshot: &dyn KvRead, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut out: Vec<Option<Option<Vec<u8>>>> = {
            let e = self.lock();
            let cached = e.keys(ks);
            keys.iter().map(|k| cached.and_then(|m| m.get(k.as_slice())).cloned()).collect()
        };
        let missed: Vec<usize> = (0..keys.len()).filter(|&i| out[i].is_none()).collect();
        if !missed.is_empty() {
            let asked: Vec<Vec<u8>> = missed.iter().map(|&i| keys[i].clone()).collect();
            let values = snapshot.get_many(ks, &asked)?;
            let mut e = self.lock();
            for (i, value) in missed.into_iter().zip(values) {
                let size = keys[i].len() + value.as_ref().map_or(0, Vec::len);
                if e.count < MAX_ENTRIES && e.bytes + size <= MAX_BYTES {
                    e.count += 1;
                    e.bytes += size;
                    e.keys_mut(ks).insert(keys[i].as_slice().into(), value.clone());
                }
                out[i] = Some(value);
            }
        }
        Ok(out.into_iter().map(|v| v.expect("every key answered")).collect())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A reader whose point reads go through a [`ReadCache`]; cursors and
/// sizes go to the reader itself.
pub struct CachedRead<'a> {
    inner: &'a dyn KvRead,
    cache: ReadCache,
}

impl<'a> CachedRead<'a> {
    pub fn new(inner: &'a dyn KvRead) -> Self {
        CachedRead { inner, cache: ReadCache::default() }
    }
}

impl KvRead for CachedRead<'_> {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.cache.get(self.inner, ks, key)
    }
    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn crate::Cursor + '_> {
        self.inner.cursor(ks, lower, upper)
    }
    fn approximate_bytes(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Option<u64> {
        self.inner.approximate_bytes(ks, lower, upper)
    }
    // A cluster's reads sent together stay together through the cache.
    fn reads_are_round_trips(&self) -> bool {
        self.inner.reads_are_round_trips()
    }
    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.cache.get_many(self.inner, ks, keys)
    }
    fn scan_ranges(&self, ks: Keyspace, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Vec<(Vec<u8>, Vec<u8>)>>> {
        self.inner.scan_ranges(ks, ranges)
    }
    fn cursors_sought(&self, seeks: &[crate::CursorSeek<'_>]) -> Vec<Box<dyn crate::Cursor + '_>> {
        self.inner.cursors_sought(seeks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, Cursor, MemoryBackend, WriteBatch, WriteOp};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A reader that counts its point reads.
    struct Counting<'a>(&'a dyn KvRead, AtomicUsize);

    impl KvRead for Counting<'_> {
        fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.get(ks, key)
        }
        fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
            self.0.cursor(ks, lower, upper)
        }
        fn approximate_bytes(&self, _: Keyspace, _: &[u8], _: Option<&[u8]>) -> Option<u64> {
            None
        }
    }

    #[test]
    fn reads_each_key_of_the_snapshot_once_misses_included() {
        let backend = MemoryBackend::new();
        let ks = Keyspace(1);
        backend.commit(WriteBatch { ops: vec![WriteOp::Put(ks, b"a".to_vec(), b"1".to_vec())], ..WriteBatch::default() }).unwrap();
        let snapshot = backend.snapshot().unwrap();
        let counting = Counting(snapshot.as_ref(), AtomicUsize::new(0));
        let cached = CachedRead::new(&counting);
        for _ in 0..3 {
            assert_eq!(cached.get(ks, b"a").unwrap(), Some(b"1".to_vec()));
            assert_eq!(cached.get(ks, b"b").unwrap(), None);
            assert_eq!(cached.get(Keyspace(2), b"a").unwrap(), None, "keyspaces apart");
        }
        assert_eq!(counting.1.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn stops_caching_past_its_bound() {
        let backend = MemoryBackend::new();
        let snapshot = backend.snapshot().unwrap();
        let counting = Counting(snapshot.as_ref(), AtomicUsize::new(0));
        let cache = ReadCache::default();
        let n = (MAX_ENTRIES + 10) as u32;
        for _ in 0..2 {
            for i in 0..n {
                cache.get(&counting, Keyspace(1), &i.to_be_bytes()).unwrap();
            }
        }
        assert_eq!(cache.lock().count, MAX_ENTRIES);
        assert_eq!(counting.1.load(Ordering::Relaxed), n as usize + 10, "the keys past the bound are read each time");
    }

    /// A read for a key about to be written if absent (a new dictionary
    /// term) keeps a hit but not a miss.
    #[test]
    fn a_read_not_keeping_misses_keeps_hits_only() {
        let backend = MemoryBackend::new();
        let ks = Keyspace(1);
        backend.commit(WriteBatch { ops: vec![WriteOp::Put(ks, b"a".to_vec(), b"1".to_vec())], ..WriteBatch::default() }).unwrap();
        let snapshot = backend.snapshot().unwrap();
        let counting = Counting(snapshot.as_ref(), AtomicUsize::new(0));
        let cache = ReadCache::default();
        for _ in 0..2 {
            assert_eq!(cache.get_keeping(&counting, ks, b"a", false).unwrap(), Some(b"1".to_vec()));
            assert_eq!(cache.get_keeping(&counting, ks, b"b", false).unwrap(), None);
        }
        assert_eq!(cache.lock().count, 1);
        assert_eq!(counting.1.load(Ordering::Relaxed), 3, "a once, b each time");
    }
}
