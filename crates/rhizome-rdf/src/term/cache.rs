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

/// The least entries per shard and generation of either cache: 2 x 16 x
/// 8192 = 262,144 terms or ids.
const GENERATION_ENTRIES: usize = 8192;

/// Entries per shard and generation of [`TermCache`] and [`IdCache`]: one
/// term (and one id) per KiB of `RHIZOME_CACHE_BYTES` (the block cache's
/// setting), at least [`GENERATION_ENTRIES`], so up to 262,144 (some tens
/// of MB) at the default 256 MiB, and 4.2M at 4 GiB: a store given the
/// memory to hold a large working set names it from memory too (a 2-hop
/// walk over Pokec names over a million profiles, and each read of one of
/// 1.6M documents looks its graph's IRI up).
fn generation_entries() -> usize {
    static ENTRIES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *ENTRIES.get_or_init(|| {
        let bytes = std::env::var("RHIZOME_CACHE_BYTES").ok().and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(0);
        (bytes / 1024 / (2 * SHARDS)).max(GENERATION_ENTRIES)
    })
}

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
        if self.current.len() >= generation_entries() {
            // The dropped generation's table is reused: a new one would be
            // grown by doubling, each step fresh pages the kernel zeroes
            // (3% of cold document reads at full Pokec scale).
            std::mem::swap(&mut self.previous, &mut self.current);
            self.current.clear();
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
        // Ids are sequential, but data with a regular shape gives one kind
        // of term every k-th id (each student brings the same number of new
        // terms): taken mod 16 those would crowd a few shards and evict
        // each other. Fibonacci hashing spreads any stride.
        let shard = &self.shards[(id.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % SHARDS];
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

    /// `f` of the cached term, without cloning it (`None`: not cached).
    pub fn with<R>(&self, id: TermId, f: impl FnOnce(&Term) -> R) -> Option<R> {
        let mut shard = self.shard(id);
        if let Some(t) = shard.current.get(&id) {
            return Some(f(t));
        }
        let t = shard.previous.remove(&id)?;
        let r = f(&t);
        shard.insert(id, t);
        Some(r)
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

/// The ids of dictionary terms (tag and serialized bytes -> id), shared by
/// every write transaction of one open store, so that the terms each write
/// meets again (predicates, classes, a container's IRI) cost a hash lookup
/// instead of a `term2id` read. Safe for the reason [`TermCache`] is: a
/// term, once committed, keeps its id for good (the dictionary has no
/// deletions and ids are never reused). Only committed ids go in: a
/// transaction adds the terms it created after its commit succeeded.
pub struct IdCache {
    shards: Vec<Mutex<IdShard>>,
}

/// Terms longer than this are not cached (long literals are rarely met
/// twice, and would hold memory).
const MAX_CACHED_TERM_BYTES: usize = 256;

type IdMap = FxHashMap<Box<[u8]>, TermId>;

/// Per dictionary tag (IRI, string, language-tagged, typed), the two
/// generations of `TermCache`'s shards.
#[derive(Default)]
struct IdShard {
    current: [IdMap; 4],
    previous: [IdMap; 4],
    len: usize,
}

fn tag_slot(tag: u8) -> Option<usize> {
    use super::tag;
    match tag {
        tag::IRI => Some(0),
        tag::STRING => Some(1),
        tag::LANG_STRING => Some(2),
        tag::TYPED => Some(3),
        _ => None,
    }
}

impl Default for IdCache {
    fn default() -> Self {
        IdCache { shards: (0..SHARDS).map(|_| Mutex::new(IdShard::default())).collect() }
    }
}

impl IdCache {
    fn shard(&self, bytes: &[u8]) -> std::sync::MutexGuard<'_, IdShard> {
        // The tail of a term tells terms of one namespace apart.
        let h = bytes.iter().rev().take(16).fold(bytes.len() as u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01B3));
        let shard = &self.shards[(h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % SHARDS];
        shard.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn get(&self, tag: u8, bytes: &[u8]) -> Option<TermId> {
        let slot = tag_slot(tag).filter(|_| bytes.len() <= MAX_CACHED_TERM_BYTES)?;
        let mut shard = self.shard(bytes);
        if let Some(id) = shard.current[slot].get(bytes) {
            return Some(*id);
        }
        let (key, id) = shard.previous[slot].remove_entry(bytes)?;
        shard.insert(slot, key, id);
        Some(id)
    }

    /// Adds a committed term's id.
    pub fn insert(&self, tag: u8, bytes: &[u8], id: TermId) {
        if let Some(slot) = tag_slot(tag).filter(|_| bytes.len() <= MAX_CACHED_TERM_BYTES) {
            self.shard(bytes).insert(slot, bytes.into(), id);
        }
    }
}

impl IdShard {
    fn insert(&mut self, slot: usize, key: Box<[u8]>, id: TermId) {
        if self.len >= generation_entries() {
            std::mem::swap(&mut self.previous, &mut self.current);
            self.current.iter_mut().for_each(|m| m.clear());
            self.len = 0;
        }
        if self.current[slot].insert(key, id).is_none() {
            self.len += 1;
        }
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
        let n = (SHARDS * generation_entries()) as u64;
        for i in 0..n {
            cache.insert(TermId(i), iri(i));
        }
        assert_eq!(cache.get(TermId(3)), Some(iri(3)));
        for i in n..4 * n {
            cache.insert(TermId(i), iri(i));
            if i % 1000 == 0 {
                assert_eq!(cache.get(TermId(3)), Some(iri(3)), "used again, so kept");
            }
        }
        assert_eq!(cache.get(TermId(3)), Some(iri(3)));
        assert_eq!(cache.get(TermId(4)), None, "not used since many generations");
        assert_eq!(cache.get(TermId(4 * n - 1)), Some(iri(4 * n - 1)));
    }

    #[test]
    fn touch_tells_whether_a_term_is_cached_and_keeps_it_as_get_does() {
        let cache = TermCache::default();
        let n = (SHARDS * generation_entries()) as u64;
        assert!(!cache.touch(TermId(5)));
        cache.insert(TermId(5), iri(5));
        for i in n..4 * n {
            cache.insert(TermId(i), iri(i));
            if i % 1000 == 0 {
                assert!(cache.touch(TermId(5)), "touched, so kept");
            }
        }
        assert_eq!(cache.get(TermId(5)), Some(iri(5)));
        cache.insert(TermId(6), iri(6));
        for i in 4 * n..8 * n {
            cache.insert(TermId(i), iri(i));
        }
        assert!(!cache.touch(TermId(6)), "not used since many generations");
    }

    #[test]
    fn terms_every_kth_id_fill_every_shard() {
        // Data of a regular shape: one kind of term every 16th id. Half the
        // cache's capacity of them must all stay.
        let cache = TermCache::default();
        let count = (SHARDS * generation_entries()) as u64 / 2;
        for i in 0..count {
            cache.insert(TermId(16 * i), iri(i));
        }
        assert!((0..count).all(|i| cache.touch(TermId(16 * i))), "a term of the set was evicted");
    }
}
