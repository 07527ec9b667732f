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

use super::dictionary::{decode_term, Dictionary};
use super::{tag, TermId};
use crate::index::layout::{meta, ID2TERM};
use crate::Result;
use oxrdf::Term;
use rhizome_kv::KvRead;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

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
    dense: DenseTable,
    /// On a cluster's store, the highest next id read so far (0: none):
    /// ids below it are committed for good, so a chunk below it is loaded
    /// without a round trip for the next id.
    known_next_id: AtomicU64,
}

impl Default for TermCache {
    fn default() -> Self {
        TermCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            dense: DenseTable::new(dense_budget()),
            known_next_id: AtomicU64::new(0),
        }
    }
}

/// Dictionary ids per chunk of [`DenseTable`].
const CHUNK_IDS: u64 = 1024;
/// Chunks per leaf of the table's two-level index.
const LEAF_CHUNKS: usize = 1 << 14;
/// Leaves: the table covers sequence numbers below 2^36 (64G terms);
/// terms above are cached by the shards alone.
const LEAVES: usize = 1 << 12;
/// Ids of a chunk missed (over every batch since the store opened) before
/// the chunk is loaded whole. Loading one costs a scan of its 1,024
/// entries, the price of some 50-100 point lookups: a query whose few
/// result terms are scattered over the dictionary (a cold `rhizome query`
/// naming 3,000 students loaded 3,000 chunks, 0.11 s and 46 MB against
/// 0.04 s for its COUNT) pays a lookup per term instead, and a chunk met
/// again and again (a server's working set) is loaded once it is hot.
const LOAD_AFTER_MISSES: u8 = 32;

/// The bytes the dense table may hold: a quarter of `RHIZOME_CACHE_BYTES`
/// (the block cache's setting, 256 MiB when unset), so 64 MiB by default
/// (some 600k terms) and 1 GiB at 4 GiB (the 6.2M terms of Pokec).
fn dense_budget() -> usize {
    static BYTES: OnceLock<usize> = OnceLock::new();
    *BYTES.get_or_init(|| {
        let bytes = std::env::var("RHIZOME_CACHE_BYTES").ok().and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(0);
        bytes.max(256 << 20) / 4
    })
}

/// Whole chunks of the dictionary, indexed by sequence number: a term
/// found here costs two pointer loads and the term itself, without a lock
/// or a hash probe (in a profile of document reads at full Pokec scale,
/// the shards' locks and probes, each a cache miss in tables of hundreds
/// of MB, and the dictionary reads of their misses were 29% of the time).
/// A chunk is loaded whole, by one scan of `id2term` per tag, the first
/// time one of its ids is missed, once every id in it is committed (so it
/// never changes: committed ids keep their term for good and are never
/// reused); it stays until the store is closed. Chunks stop being loaded
/// when the budget is spent; their ids are then cached by the shards, as
/// are language-tagged strings (whose ids carry their language above the
/// sequence number, so they are not one range of `id2term`).
struct DenseTable {
    leaves: Box<[OnceLock<Leaf>]>,
    bytes: AtomicUsize,
    budget: usize,
}

/// [`LEAF_CHUNKS`] chunks, and how many ids of each not loaded were missed.
struct Leaf {
    chunks: Box<[OnceLock<Box<Chunk>>]>,
    misses: Box<[AtomicU8]>,
}

impl Leaf {
    fn new() -> Leaf {
        Leaf { chunks: (0..LEAF_CHUNKS).map(|_| OnceLock::new()).collect(), misses: (0..LEAF_CHUNKS).map(|_| AtomicU8::new(0)).collect() }
    }
}

/// A chunk's terms by sequence number within it (`None`: a blank node's
/// number, a language-tagged string, or a term not visible when loaded).
struct Chunk {
    terms: Box<[Option<(u8, Term)>]>,
}

/// The tags whose ids are their sequence number, one range of `id2term`.
const DENSE_TAGS: [u8; 3] = [tag::IRI, tag::STRING, tag::TYPED];

impl DenseTable {
    fn new(budget: usize) -> DenseTable {
        DenseTable { leaves: (0..LEAVES).map(|_| OnceLock::new()).collect(), bytes: AtomicUsize::new(0), budget }
    }

    /// The chunk number of an id the table can hold.
    fn chunk_of(id: TermId) -> Option<u64> {
        let chunk = DENSE_TAGS.contains(&id.tag()).then(|| id.payload() / CHUNK_IDS)?;
        ((chunk as usize) < LEAVES * LEAF_CHUNKS).then_some(chunk)
    }

    fn chunk(&self, chunk: u64) -> Option<&Chunk> {
        let leaf = self.leaves[chunk as usize / LEAF_CHUNKS].get()?;
        leaf.chunks[chunk as usize % LEAF_CHUNKS].get().map(|c| &**c)
    }

    fn leaf(&self, chunk: u64) -> &Leaf {
        self.leaves[chunk as usize / LEAF_CHUNKS].get_or_init(Leaf::new)
    }

    /// Counts `ids` more missed ids of `chunk`; whether it is now hot
    /// enough to load whole.
    fn missed(&self, chunk: u64, ids: usize) -> bool {
        let counter = &self.leaf(chunk).misses[chunk as usize % LEAF_CHUNKS];
        let add = ids.min(u8::MAX as usize) as u8;
        let before = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| Some(m.saturating_add(add))).unwrap_or(u8::MAX);
        before.saturating_add(add) >= LOAD_AFTER_MISSES
    }

    fn get(&self, id: TermId) -> Option<&Term> {
        let chunk = self.chunk(Self::chunk_of(id)?)?;
        match &chunk.terms[(id.payload() % CHUNK_IDS) as usize] {
            Some((t, term)) if *t == id.tag() => Some(term),
            _ => None,
        }
    }

    fn full(&self) -> bool {
        self.bytes.load(Ordering::Relaxed) >= self.budget
    }

    /// The `id2term` ranges of chunk `chunk`, one per tag of [`DENSE_TAGS`].
    fn ranges(chunk: u64) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
        let first = chunk * CHUNK_IDS;
        DENSE_TAGS.into_iter().map(move |tag| (TermId::new(tag, first).to_be_bytes().to_vec(), TermId::new(tag, first + CHUNK_IDS).to_be_bytes().to_vec()))
    }

    /// Keeps chunk `chunk` from the entries of its [`ranges`](Self::ranges),
    /// read together (a cluster's store: partitions read at once rather than
    /// a cursor's pages one after another).
    fn keep_entries(&self, chunk: u64, ranges: impl Iterator<Item = Vec<(Vec<u8>, Vec<u8>)>>) -> Result<()> {
        let first = chunk * CHUNK_IDS;
        let mut terms: Vec<Option<(u8, Term)>> = vec![None; CHUNK_IDS as usize];
        let mut bytes = std::mem::size_of_val(terms.as_slice());
        for (entries, tag) in ranges.zip(DENSE_TAGS) {
            for (key, value) in entries {
                let id = TermId::from_be_slice(&key);
                bytes += value.len() + 32;
                terms[(id.payload() - first) as usize] = Some((tag, decode_term(tag, &value)?));
            }
        }
        self.keep(chunk, terms, bytes)
    }

    /// Loads chunk `chunk` from `kv` (a snapshot whose next id is past it).
    fn load(&self, kv: &dyn KvRead, chunk: u64) -> Result<()> {
        if kv.reads_are_round_trips() {
            let ranges: Vec<(Vec<u8>, Vec<u8>)> = Self::ranges(chunk).collect();
            return self.keep_entries(chunk, kv.scan_ranges(ID2TERM, &ranges)?.into_iter());
        }
        let first = chunk * CHUNK_IDS;
        let mut terms: Vec<Option<(u8, Term)>> = vec![None; CHUNK_IDS as usize];
        let mut bytes = std::mem::size_of_val(terms.as_slice());
        for tag in DENSE_TAGS {
            let (lower, upper) = (TermId::new(tag, first).to_be_bytes(), TermId::new(tag, first + CHUNK_IDS).to_be_bytes());
            let mut cursor = kv.cursor(ID2TERM, &lower, Some(&upper));
            cursor.seek_first();
            while cursor.valid() {
                let id = TermId::from_be_slice(cursor.key());
                // The heap bytes of the term's strings, roughly.
                bytes += cursor.value().len() + 32;
                terms[(id.payload() - first) as usize] = Some((tag, decode_term(tag, cursor.value())?));
                cursor.next();
            }
            cursor.status()?;
        }
        self.keep(chunk, terms, bytes)
    }

    /// Keeps a loaded chunk if the budget allows.
    fn keep(&self, chunk: u64, terms: Vec<Option<(u8, Term)>>, bytes: usize) -> Result<()> {
        if self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes > self.budget {
            // The first chunk that does not fit fills the table: else every
            // later miss in that chunk would load it again only to drop it
            // (7% of an ORDER BY over 1.2M keys at 4.8M triples).
            self.bytes.fetch_sub(bytes, Ordering::Relaxed);
            self.bytes.fetch_max(self.budget, Ordering::Relaxed);
            return Ok(());
        }
        if self.leaf(chunk).chunks[chunk as usize % LEAF_CHUNKS].set(Box::new(Chunk { terms: terms.into_boxed_slice() })).is_err() {
            // Loaded meanwhile by another reader.
            self.bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
        Ok(())
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
        if let Some(t) = self.dense.get(id) {
            return Some(t.clone());
        }
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
        if let Some(t) = self.dense.get(id) {
            return Some(f(t));
        }
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
        if self.dense.get(id).is_some() {
            return true;
        }
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

    /// Decodes the dictionary ids among `ids` (sorted and deduplicated
    /// here) that callers did not find in the cache, through `kv` (a
    /// snapshot): whole chunks of the dense table where a chunk is hot
    /// (its missed ids, these included, reach [`LOAD_AFTER_MISSES`]) and
    /// can be loaded, else one walk of the dictionary
    /// ([`Dictionary::decode_many`]) whose terms go to the shards. `out`
    /// gets each term once.
    pub fn decode_missing(&self, kv: &dyn KvRead, ids: &mut Vec<TermId>, mut out: impl FnMut(TermId, &Term)) -> Result<()> {
        ids.retain(|id| id.is_in_dictionary());
        ids.sort_unstable();
        ids.dedup();
        let together = kv.reads_are_round_trips();
        // Chunks to load, read together with the other ids on a cluster.
        let mut loads = Vec::new();
        let mut next_read = false;
        let mut snapshot_next_id = None;
        let mut rest = Vec::new();
        let mut i = 0;
        while i < ids.len() {
            // The ids of one chunk (sorted ids of one tag are contiguous).
            let chunk = DenseTable::chunk_of(ids[i]);
            let end = match chunk {
                Some(c) => i + ids[i..].iter().take_while(|id| DenseTable::chunk_of(**id) == Some(c) && id.tag() == ids[i].tag()).count(),
                None => i + 1,
            };
            if let Some(chunk) = chunk {
                if self.dense.chunk(chunk).is_none() && !self.dense.full() && self.dense.missed(chunk, end - i) {
                    // Every id of the chunk committed. On a cluster the next
                    // id is read once per batch at most, and not at all
                    // below one read before (a reader whose snapshot is older
                    // than that read may then keep a chunk without the last
                    // ids committed after its snapshot: they are decoded one
                    // by one later, never wrong). A local store reads it from
                    // the reader's own snapshot (a local read is cheap), so
                    // its chunks are always whole.
                    let next_id = if together {
                        if (chunk + 1) * CHUNK_IDS > self.known_next_id.load(Ordering::Relaxed) && !next_read {
                            next_read = true;
                            self.known_next_id.fetch_max(crate::store::read_u64(kv, meta::NEXT_ID)?, Ordering::Relaxed);
                        }
                        self.known_next_id.load(Ordering::Relaxed)
                    } else {
                        match snapshot_next_id {
                            Some(n) => n,
                            None => *snapshot_next_id.insert(crate::store::read_u64(kv, meta::NEXT_ID)?),
                        }
                    };
                    if (chunk + 1) * CHUNK_IDS <= next_id {
                        if together {
                            // A chunk's ids of three tags come apart: once.
                            if !loads.contains(&chunk) {
                                loads.push(chunk);
                            }
                            rest.extend_from_slice(&ids[i..end]);
                            i = end;
                            continue;
                        }
                        self.dense.load(kv, chunk)?;
                    }
                }
            }
            for &id in &ids[i..end] {
                match self.dense.get(id) {
                    Some(t) => out(id, t),
                    None => rest.push(id),
                }
            }
            i = end;
        }
        if together && !rest.is_empty() {
            rest = self.read_together(kv, &loads, rest, &mut out)?;
        }
        Dictionary::decode_many(kv, &mut rest, |id, term| {
            out(id, &term);
            self.insert(id, term);
        })
    }

    /// On a cluster's store: the chunks `loads` and the terms of `ids` in
    /// one wait (every partition read at once), rather than the next id,
    /// each chunk and the other ids one wait after another. The other ids
    /// are read as ranges, one per run of ids less than 256 apart (on a
    /// cluster one or two partitions of `id2term`: the terms a subject
    /// brought are numbered together, and a slice of a partition costs the
    /// cluster about what a point read does). Returns the ids left to
    /// [`Dictionary::decode_many`]: triple terms (their parts are read
    /// after them), ids not found, and ids of a loaded chunk that it did
    /// not keep.
    fn read_together(&self, kv: &dyn KvRead, loads: &[u64], ids: Vec<TermId>, out: &mut impl FnMut(TermId, &Term)) -> Result<Vec<TermId>> {
        let in_loads = |id: TermId| DenseTable::chunk_of(id).is_some_and(|c| loads.contains(&c));
        let (singles, mut rest): (Vec<TermId>, Vec<TermId>) = ids.into_iter().partition(|id| !id.is_triple() && !in_loads(*id) && id.0 < u64::MAX);
        // Sorted ids, cut where one is 256 or more past its run's first.
        let mut runs: Vec<&[TermId]> = Vec::new();
        let mut start = 0;
        for i in 1..=singles.len() {
            if i == singles.len() || singles[i].0 - singles[start].0 >= 256 {
                runs.push(&singles[start..i]);
                start = i;
            }
        }
        let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = loads.iter().flat_map(|&chunk| DenseTable::ranges(chunk)).collect();
        ranges.extend(runs.iter().map(|run| (run[0].to_be_bytes().to_vec(), TermId(run[run.len() - 1].0 + 1).to_be_bytes().to_vec())));
        let mut read = kv.scan_ranges(ID2TERM, &ranges)?.into_iter();
        for &chunk in loads {
            self.dense.keep_entries(chunk, read.by_ref().take(DENSE_TAGS.len()))?;
        }
        for (run, entries) in runs.into_iter().zip(read) {
            let mut entries = entries.into_iter().peekable();
            for &id in run {
                let key = id.to_be_bytes();
                while entries.next_if(|(k, _)| k.as_slice() < key.as_slice()).is_some() {}
                match entries.next_if(|(k, _)| k.as_slice() == key.as_slice()) {
                    Some((_, value)) => {
                        let term = decode_term(id.tag(), &value)?;
                        out(id, &term);
                        self.insert(id, term);
                    }
                    // Not there: the dictionary's own read says so.
                    None => rest.push(id),
                }
            }
        }
        let loaded: Vec<TermId> = rest.iter().copied().filter(|id| in_loads(*id)).collect();
        rest.retain(|id| !in_loads(*id));
        for id in loaded {
            match self.dense.get(id) {
                Some(t) => out(id, t),
                None => rest.push(id),
            }
        }
        Ok(rest)
    }

    /// The terms of `ids` that the dense table holds (`None` for the
    /// others), read ahead for a caller about to use them all: first every
    /// slot, then the first byte of every term's text, each pass loads
    /// that do not wait on one another, so that their cache misses overlap
    /// instead of coming one after the other between uses (a document read
    /// names some 25 terms, each two misses in a table of hundreds of MB).
    pub fn dense_terms_of(&self, ids: &[TermId]) -> Vec<Option<&Term>> {
        let terms: Vec<Option<&Term>> = ids.iter().map(|id| self.dense.get(*id)).collect();
        for t in terms.iter().flatten() {
            let text = match t {
                Term::NamedNode(n) => n.as_str(),
                Term::Literal(l) => l.value(),
                _ => "",
            };
            std::hint::black_box(text.as_bytes().first().copied());
        }
        terms
    }

    /// Terms held by the dense table (for tests and statistics).
    pub fn dense_terms(&self) -> usize {
        let leaves = self.dense.leaves.iter().filter_map(|l| l.get());
        leaves.flat_map(|l| l.chunks.iter().filter_map(|c| c.get())).map(|c| c.terms.iter().filter(|t| t.is_some()).count()).sum()
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

    /// A chunk past the budget is not kept, and the table is then full:
    /// no later miss loads a chunk again.
    #[test]
    fn a_chunk_past_the_budget_fills_the_dense_table() {
        let table = DenseTable::new(1_000);
        table.keep(0, vec![None; 4], 600).unwrap();
        assert!(table.chunk(0).is_some() && !table.full());
        table.keep(1, vec![None; 4], 600).unwrap();
        assert!(table.chunk(1).is_none(), "past the budget: not kept");
        assert!(table.full(), "and the table stops loading");
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

    /// On a cluster's store the terms a batch misses come in one wait: the
    /// chunk it makes hot and its other ids together (before: the next id,
    /// the chunk, then the other ids, a wait each), and a later chunk below
    /// a next id already read without reading it again.
    #[test]
    fn a_batch_of_missed_terms_is_read_in_one_wait_on_a_cluster() {
        let kv = rhizome_kv::Kv::memory();
        let mut txn = kv.transaction().unwrap();
        let id = |seq: u64| TermId::new(tag::IRI, seq);
        let text = |seq: u64| format!("http://ex/{seq}");
        for seq in 0..3 * CHUNK_IDS {
            txn.put(ID2TERM, &id(seq).to_be_bytes(), text(seq).as_bytes());
        }
        txn.put(crate::index::layout::META, meta::NEXT_ID, &(3 * CHUNK_IDS).to_be_bytes());
        txn.commit().unwrap();
        let snapshot = kv.snapshot().unwrap();
        let store = crate::round_trips::RoundTrips::new(snapshot.as_ref());
        let cache = TermCache::default();
        let decode = |ids: Vec<u64>| {
            let mut ids: Vec<TermId> = ids.into_iter().map(id).collect();
            let mut got = Vec::new();
            store.waits.set(0);
            cache.decode_missing(&store, &mut ids, |i, t| got.push((i, t.clone()))).unwrap();
            got.sort_by_key(|(i, _)| *i);
            let expected: Vec<(TermId, Term)> = ids.iter().map(|&i| (i, NamedNode::new_unchecked(text(i.payload())).into())).collect();
            assert_eq!(got, expected);
            store.waits.get()
        };
        // Chunk 0 made hot (40 ids), three ids of chunk 1 (not hot): the
        // next id once, then the chunk and the three together.
        let first: Vec<u64> = (0..40).map(|i| i * 7).chain([CHUNK_IDS + 5, CHUNK_IDS + 9, CHUNK_IDS + 700]).collect();
        assert_eq!(decode(first), 2);
        assert_eq!(cache.dense_terms(), CHUNK_IDS as usize, "chunk 0 loaded whole");
        // Chunk 2 made hot: below the next id read before, so one wait.
        assert_eq!(decode((0..40).map(|i| 2 * CHUNK_IDS + i * 3).collect()), 1);
        assert_eq!(cache.dense_terms(), 2 * CHUNK_IDS as usize);
        // Cached now: no wait.
        assert_eq!(decode(vec![14, 2 * CHUNK_IDS + 3]), 0);
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
