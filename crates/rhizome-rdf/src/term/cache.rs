//! Decoded terms shared by every snapshot of one open store, so that the
//! terms every query and lookup meets again (predicates, classes, popular
//! objects) are read from the dictionary once per process, not once per
//! query (Jena's node table cache plays the same part).
//!
//! Safe across snapshots and writes because a committed id never changes
//! meaning: the next id is committed with the terms it numbers, ids are
//! never reused, and only snapshots (which see committed data alone) fill
//! the cache. A write transaction's own new ids are not committed yet and
//! an aborted one would hand them out again, so transactions do not use it.

use super::TermId;
use oxrdf::Term;
use rustc_hash::FxHashMap;
use std::sync::Mutex;

const SHARDS: usize = 16;
/// Entries per shard and generation: up to 2 x 16 x 8192 = 262,144 terms
/// (some tens of MB).
const GENERATION_ENTRIES: usize = 8192;

/// Two generations per shard: lookups promote entries of the older one;
/// when the newer one is full it becomes the older and the older is
/// dropped, an approximate LRU without per-entry bookkeeping.
#[derive(Default)]
struct Shard {
    current: FxHashMap<TermId, Term>,
    previous: FxHashMap<TermId, Term>,
}

impl Shard {
    fn insert(&mut self, id: TermId, term: Term) {
        if self.current.len() >= GENERATION_ENTRIES {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(id, term);
    }
}

pub struct TermCache {
    shards: Vec<Mutex<Shard>>,
}

impl Default for TermCache {
    fn default() -> Self {
        TermCache { shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect() }
    }
}

impl TermCache {
    fn shard(&self, id: TermId) -> std::sync::MutexGuard<'_, Shard> {
        // Ids are sequential: the low bits spread them over the shards.
        let shard = &self.shards[(id.0 as usize) % SHARDS];
        shard.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn get(&self, id: TermId) -> Option<Term> {
        let mut shard = self.shard(id);
        if let Some(t) = shard.current.get(&id) {
            return Some(t.clone());
        }
        let t = shard.previous.remove(&id)?;
        shard.insert(id, t.clone());
        Some(t)
    }

    /// Whether the term is cached (kept as recently used, as `get` does),
    /// without cloning it.
    pub fn touch(&self, id: TermId) -> bool {
        let mut shard = self.shard(id);
        if shard.current.contains_key(&id) {
            return true;
        }
        match shard.previous.remove(&id) {
            Some(t) => {
                shard.insert(id, t);
                true
            }
            None => false,
        }
    }

    pub fn insert(&self, id: TermId, term: Term) {
        self.shard(id).insert(id, term);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::NamedNode;

    fn iri(i: u64) -> Term {
        NamedNode::new_unchecked(format!("http://ex/{i}")).into()
    }

    #[test]
    fn a_term_used_again_outlives_the_terms_not_used_since() {
        let cache = TermCache::default();
        let n = (SHARDS * GENERATION_ENTRIES) as u64;
        for i in 0..2 * n {
            cache.insert(TermId(i), iri(i));
        }
        // 3 is in the older generation: reading it moves it to the newer.
        assert_eq!(cache.get(TermId(3)), Some(iri(3)));
        assert_eq!(cache.get(TermId(2 * n - 1)), Some(iri(2 * n - 1)));
        for i in 2 * n..3 * n {
            cache.insert(TermId(i), iri(i));
        }
        assert_eq!(cache.get(TermId(3)), Some(iri(3)), "used again, so kept");
        assert_eq!(cache.get(TermId(3 + SHARDS as u64)), None, "not used since two generations");
        assert_eq!(cache.get(TermId(3 * n - 1)), Some(iri(3 * n - 1)));
    }

    #[test]
    fn touch_tells_whether_a_term_is_cached_and_keeps_it_as_get_does() {
        let cache = TermCache::default();
        let n = (SHARDS * GENERATION_ENTRIES) as u64;
        assert!(!cache.touch(TermId(5)));
        for i in 0..2 * n {
            cache.insert(TermId(i), iri(i));
        }
        assert!(cache.touch(TermId(5)), "in the older generation");
        for i in 2 * n..3 * n {
            cache.insert(TermId(i), iri(i));
        }
        assert!(cache.touch(TermId(5)), "touched, so kept");
        assert_eq!(cache.get(TermId(5)), Some(iri(5)));
        assert!(!cache.touch(TermId(5 + SHARDS as u64)), "not used since two generations");
    }
}
