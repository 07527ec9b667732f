//! Keys a snapshot is known not to hold, found for a whole batch at once.
//!
//! A `_bulk_docs` of 10,000 new documents reads, for each, keys that are
//! almost never there: its record (to find a revision tree), its graph IRI
//! as another document's id, its graph IRI in the term dictionary. One
//! RocksDB point read costs a memtable probe and a filter or block per
//! level, and those misses were a fifth of the server's time. The same
//! keys, sorted, are answered by one cursor walk: new keys sit between
//! (or after) the stored ones, so the walk mostly steps or stays put.

use crate::backend::KvRead;
use crate::{Keyspace, Result};
use std::collections::{HashMap, HashSet};

/// Steps taken with `next` before a walk seeks instead: a key far ahead
/// (random ids) costs one seek, a key close by (ids in sequence) a step.
const STEPS_BEFORE_SEEK: usize = 4;

#[derive(Default)]
pub(crate) struct AbsentKeys {
    by_keyspace: HashMap<Keyspace, HashSet<Box<[u8]>>>,
}

impl AbsentKeys {
    pub(crate) fn contains(&self, ks: Keyspace, key: &[u8]) -> bool {
        self.by_keyspace.get(&ks).is_some_and(|keys| keys.contains(key))
    }

    /// Walks `snapshot`'s `ks` once over `keys` (any order, repeats
    /// allowed) and remembers those it does not hold.
    pub(crate) fn find(&mut self, snapshot: &dyn KvRead, ks: Keyspace, mut keys: Vec<Vec<u8>>) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        keys.sort_unstable();
        keys.dedup();
        let absent = self.by_keyspace.entry(ks).or_default();
        if snapshot.reads_are_round_trips() {
            // A cluster's store: a cursor's seeks are round trips one after
            // another; the reads sent together cost about one.
            for (key, value) in keys.iter().zip(snapshot.get_many(ks, &keys)?) {
                if value.is_none() {
                    absent.insert(key.clone().into_boxed_slice());
                }
            }
            return Ok(());
        }
        let mut cursor = snapshot.cursor(ks, &[], None);
        let mut positioned = false;
        for key in keys {
            if !positioned {
                cursor.seek(&key);
                positioned = true;
            } else {
                let mut steps = 0;
                while cursor.valid() && cursor.key() < key.as_slice() {
                    if steps == STEPS_BEFORE_SEEK {
                        cursor.seek(&key);
                        break;
                    }
                    cursor.next();
                    steps += 1;
                }
            }
            if !cursor.valid() {
                // Past the last key, or an error: only a clean end says
                // the key is not there.
                cursor.status()?;
            }
            if !cursor.valid() || cursor.key() != key.as_slice() {
                absent.insert(key.into_boxed_slice());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, MemoryBackend, WriteBatch, WriteOp};

    #[test]
    fn finds_exactly_the_keys_the_snapshot_lacks() {
        let backend = MemoryBackend::new();
        let ks = Keyspace(3);
        let stored: Vec<Vec<u8>> = (0..1000).filter(|i| i % 3 == 0).map(|i: u32| format!("b-{i}").into_bytes()).collect();
        let mut ops: Vec<WriteOp> = stored.iter().map(|k| WriteOp::Put(ks, k.clone(), b"v".to_vec())).collect();
        ops.push(WriteOp::Put(Keyspace(4), b"b-1".to_vec(), b"other keyspace".to_vec()));
        backend.commit(WriteBatch { ops, ..WriteBatch::default() }).unwrap();
        let snapshot = backend.snapshot().unwrap();
        let mut asked: Vec<Vec<u8>> = (0..1200u32).rev().map(|i| format!("b-{i}").into_bytes()).collect();
        asked.push(b"a".to_vec());
        asked.push(b"b-3".to_vec());
        asked.push(b"zz".to_vec());
        let mut absent = AbsentKeys::default();
        absent.find(snapshot.as_ref(), ks, asked.clone()).unwrap();
        for key in &asked {
            let there = snapshot.get(ks, key).unwrap().is_some();
            assert_eq!(absent.contains(ks, key), !there, "{}", String::from_utf8_lossy(key));
        }
        assert!(!absent.contains(Keyspace(4), b"b-2"), "only the keyspace walked");
    }
}
