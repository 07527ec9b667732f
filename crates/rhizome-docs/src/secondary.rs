//! What Mango's JSON indexes and JavaScript views (rhizome-views) keep
//! alike: a state keyspace keyed by an index's id, and row keyspaces whose
//! keys start with that id. Finding the indexes nothing defines any more
//! and dropping them is the same for both.

use crate::{Database, Result};
use crate::keys::SEQS;
use crate::DocError;
use rhizome_kv::{Keyspace, KvRead};

/// The keyspaces of one kind of index.
#[derive(Clone, Copy, Debug)]
pub struct IndexSpaces {
    pub state: Keyspace,
    pub rows: &'static [Keyspace],
}

/// Keys deleted per transaction while an index is dropped: writers wait at
/// most one such batch.
const DROP_BATCH: usize = 4000;

impl IndexSpaces {
    /// The ids in `state` that are not in `live`.
    pub fn stale(&self, kv: &dyn KvRead, live: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        let mut cursor = kv.cursor(self.state, &[], None);
        cursor.seek_first();
        let mut out = Vec::new();
        while cursor.valid() {
            if !live.contains(&cursor.key()) {
                out.push(cursor.key().to_vec());
            }
            cursor.next();
        }
        cursor.status()?;
        Ok(out)
    }
}

impl Database {
    /// Deletes the rows and the state of indexes `ids`, in transactions of
    /// at most `DROP_BATCH` keys; the state goes last, so an index dropped
    /// halfway is found stale again.
    pub fn drop_indexes(&self, spaces: &IndexSpaces, ids: &[Vec<u8>]) -> Result<()> {
        for id in ids {
            loop {
                let mut txn = self.store.transaction()?;
                let mut doomed = Vec::new();
                for &ks in spaces.rows {
                    let upper = rhizome_kv::prefix_upper_bound(id);
                    let mut cursor = txn.kv().cursor(ks, id, upper.as_deref());
                    cursor.seek_first();
                    while cursor.valid() && doomed.len() < DROP_BATCH {
                        doomed.push((ks, cursor.key().to_vec()));
                        cursor.next();
                    }
                    cursor.status()?;
                }
                let finished = doomed.is_empty();
                for (ks, key) in doomed {
                    txn.kv_mut().delete(ks, &key);
                }
                if finished {
                    txn.kv_mut().delete(spaces.state, id);
                }
                txn.commit()?;
                if finished {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// The next documents an index must see: at most `limit` (sequence, id)
/// pairs after `seen`, in sequence order (one per document, its latest
/// change), and the sequence the index has reached once it has seen them:
/// `update_seq` if they are the last, else the last one's.
pub fn changed_since(kv: &dyn KvRead, seen: u64, update_seq: u64, limit: usize) -> Result<(Vec<(u64, String)>, u64)> {
    let mut batch = Vec::with_capacity(limit.min(4096));
    let mut cursor = kv.cursor(SEQS, &(seen + 1).to_be_bytes(), None);
    cursor.seek_first();
    while cursor.valid() && batch.len() < limit {
        let seq = u64::from_be_bytes(cursor.key().try_into().map_err(|_| DocError::Corrupt("a changes key is not a u64".into()))?);
        batch.push((seq, String::from_utf8_lossy(cursor.value()).into_owned()));
        cursor.next();
    }
    cursor.status()?;
    let reached = if batch.len() < limit { update_seq } else { batch.last().map_or(update_seq, |b| b.0) };
    Ok((batch, reached))
}
