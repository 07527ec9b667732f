//! The in-memory backend, for tests: a sorted map behind a copy-on-write Arc,
//! so a snapshot is an Arc clone and a commit copies the map only while some
//! snapshot still holds the old version.

use super::{Backend, Cursor, KvRead, Snapshot, SortedRun, SortedRunWriter, WriteBatch, WriteOp};
use crate::{Error, Keyspace, Result};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Default)]
pub struct MemoryBackend {
    /// The map and the number of commits and ingestions made so far (the
    /// sequence number, as engines with sequences give it).
    map: RwLock<(Arc<Map>, u64)>,
}

impl MemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }
}

fn prefixed(ks: Keyspace, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(ks.0);
    k.extend_from_slice(key);
    k
}

impl Backend for MemoryBackend {
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        let (map, sequence) = self.map.read().map_err(|_| Error::Engine("memory store lock poisoned".into()))?.clone();
        Ok(Arc::new(MemorySnapshot { map, sequence }))
    }

    fn commit(&self, batch: WriteBatch) -> Result<()> {
        let mut guard = self.map.write().map_err(|_| Error::Engine("memory store lock poisoned".into()))?;
        guard.1 += 1;
        let map = Arc::make_mut(&mut guard.0);
        for op in batch.ops {
            match op {
                WriteOp::Put(ks, k, v) => {
                    map.insert(prefixed(ks, &k), v);
                }
                WriteOp::Delete(ks, k) => {
                    map.remove(&prefixed(ks, &k));
                }
            }
        }
        Ok(())
    }

    fn sorted_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        Ok(Box::new(MemoryRunWriter { ks, entries: Vec::new() }))
    }

    fn ingest(&self, runs: Vec<SortedRun>) -> Result<()> {
        let mut guard = self.map.write().map_err(|_| Error::Engine("memory store lock poisoned".into()))?;
        guard.1 += 1;
        let map = Arc::make_mut(&mut guard.0);
        for run in runs {
            match run {
                SortedRun::Memory { ks, entries } => {
                    for (k, v) in entries {
                        map.insert(prefixed(ks, &k), v);
                    }
                }
                SortedRun::Empty => {}
                SortedRun::File { path } => {
                    return Err(Error::Engine(format!("the memory store cannot ingest the file {}", path.display())))
                }
            }
        }
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        Ok(())
    }

    fn size_on_disk(&self) -> Result<u64> {
        Ok(0)
    }

    fn latest_sequence(&self) -> Option<u64> {
        Some(self.map.read().map_or(0, |guard| guard.1))
    }
}

struct MemorySnapshot {
    map: Arc<Map>,
    sequence: u64,
}

impl Snapshot for MemorySnapshot {
    fn sequence(&self) -> Option<u64> {
        Some(self.sequence)
    }
}

impl KvRead for MemorySnapshot {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.map.get(&prefixed(ks, key)).cloned())
    }

    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        let lower = prefixed(ks, lower);
        let upper = match upper {
            Some(u) => prefixed(ks, u),
            None => vec![ks.0 + 1],
        };
        Box::new(MemoryCursor { map: &self.map, lower, upper, current: None })
    }
}

struct MemoryCursor<'a> {
    map: &'a Map,
    lower: Vec<u8>,
    upper: Vec<u8>,
    current: Option<(&'a [u8], &'a [u8])>,
}

impl MemoryCursor<'_> {
    fn first_from(&mut self, from: Bound<&[u8]>) {
        let from = match from {
            Bound::Included(k) if k < self.lower.as_slice() => Bound::Included(self.lower.as_slice()),
            Bound::Excluded(k) if k < self.lower.as_slice() => Bound::Included(self.lower.as_slice()),
            b => b,
        };
        // A start at or past the upper bound (a seek beyond it, or a cursor
        // opened with lower > upper) is an empty range: `BTreeMap::range`
        // would panic on it.
        if let Bound::Included(k) | Bound::Excluded(k) = from {
            if k >= self.upper.as_slice() {
                self.current = None;
                return;
            }
        }
        self.current = self
            .map
            .range::<[u8], _>((from, Bound::Excluded(self.upper.as_slice())))
            .next()
            .map(|(k, v)| (k.as_slice(), v.as_slice()));
    }
    fn last_until(&mut self, until: Bound<&[u8]>) {
        let until = match until {
            Bound::Included(k) if k >= self.upper.as_slice() => Bound::Excluded(self.upper.as_slice()),
            Bound::Excluded(k) if k > self.upper.as_slice() => Bound::Excluded(self.upper.as_slice()),
            b => b,
        };
        if let Bound::Included(k) | Bound::Excluded(k) = until {
            if k < self.lower.as_slice() {
                self.current = None;
                return;
            }
        }
        self.current = self
            .map
            .range::<[u8], _>((Bound::Included(self.lower.as_slice()), until))
            .next_back()
            .map(|(k, v)| (k.as_slice(), v.as_slice()));
    }
}

impl Cursor for MemoryCursor<'_> {
    fn seek(&mut self, key: &[u8]) {
        let k = [&self.lower[..1], key].concat();
        self.first_from(Bound::Included(&k));
    }
    fn seek_for_prev(&mut self, key: &[u8]) {
        let k = [&self.lower[..1], key].concat();
        self.last_until(Bound::Included(&k));
    }
    fn seek_first(&mut self) {
        let k = self.lower.clone();
        self.first_from(Bound::Included(&k));
    }
    fn seek_last(&mut self) {
        let k = self.upper.clone();
        self.last_until(Bound::Excluded(&k));
    }
    fn valid(&self) -> bool {
        self.current.is_some()
    }
    fn key(&self) -> &[u8] {
        &self.current.expect("cursor is valid").0[1..]
    }
    fn value(&self) -> &[u8] {
        self.current.expect("cursor is valid").1
    }
    fn next(&mut self) {
        if let Some((k, _)) = self.current {
            self.first_from(Bound::Excluded(k));
        }
    }
    fn prev(&mut self) {
        if let Some((k, _)) = self.current {
            self.last_until(Bound::Excluded(k));
        }
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// A run kept in memory, for any backend (small bulk writes).
pub fn memory_run_writer(ks: Keyspace) -> Box<dyn SortedRunWriter> {
    Box::new(MemoryRunWriter { ks, entries: Vec::new() })
}

struct MemoryRunWriter {
    ks: Keyspace,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl SortedRunWriter for MemoryRunWriter {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if let Some((last, _)) = self.entries.last() {
            assert!(last.as_slice() < key, "sorted run keys must be strictly increasing");
        }
        self.entries.push((key.to_vec(), value.to_vec()));
        Ok(())
    }
    fn len(&self) -> u64 {
        self.entries.len() as u64
    }
    fn finish(self: Box<Self>) -> Result<SortedRun> {
        if self.entries.is_empty() {
            return Ok(SortedRun::Empty);
        }
        Ok(SortedRun::Memory { ks: self.ks, entries: self.entries })
    }
}
