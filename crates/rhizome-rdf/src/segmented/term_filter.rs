//! A filter of every dictionary term the store holds (the `TERM2ID` keys,
//! carried and in the engine), in memory: a lookup of a term the filter
//! has never seen is answered "absent" without the engine's read.
//!
//! Why: a write's new terms are misses, and a miss in RocksDB cost about
//! 7,000 instructions (its memtable, then each level's filter and index):
//! 101 of them a 200-triple LDP PUT, 0.7M of its 6.06M (issue 46).
//!
//! Exactness: the filter may say "maybe" for a term the store lacks (a
//! false positive costs the read it saves otherwise, about 1% of absent
//! terms), never "absent" for one it holds. Every way a key reaches the
//! store inserts it first: a commit's carried terms before the commit
//! (a commit that fails leaves them in, harmless), a load's runs as they
//! are written, the log replayed at open. A merge only moves carried keys
//! to the engine. The keys already in the engine are read once, from a
//! snapshot taken after the filter starts taking inserts (at open, or on
//! a thread of its own for a store opened with background merges); until
//! that read is done the filter answers "maybe" to everything.
//!
//! Shape: split-block Bloom filters (Parquet's: a key sets one bit in each
//! of the eight words of one 64-byte block, so a probe touches one cache
//! line), as a chain: the first sized for twice the terms the store held
//! when opened, and when the newest is full a new one twice the size of
//! all before it takes the inserts, so a probe checks a few filters
//! (about log2 of the growth since the open) and none is ever rebuilt.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;
use xxhash_rust::xxh3::xxh3_64;

/// Bits per key at a filter's capacity: about 1% false positives.
const BITS_PER_KEY: usize = 12;
/// The smallest first filter's capacity (keys): 6 KiB, as a server
/// keeps one per database.
const FIRST_CAPACITY: usize = 1 << 12;
/// The block's words' salts (Parquet's split-block Bloom filter).
const SALT: [u64; 8] = [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31];

struct Bloom {
    blocks: Box<[[AtomicU64; 8]]>,
    capacity: usize,
    keys: AtomicUsize,
}

impl Bloom {
    fn new(capacity: usize) -> Bloom {
        let blocks = (capacity * BITS_PER_KEY).div_ceil(512).max(1);
        Bloom { blocks: (0..blocks).map(|_| Default::default()).collect(), capacity, keys: AtomicUsize::new(0) }
    }

    /// The block of a hash and the bit it sets in each word.
    fn probe(&self, hash: u64) -> (&[AtomicU64; 8], [u64; 8]) {
        let block = (((hash >> 32) * self.blocks.len() as u64) >> 32) as usize;
        let low = hash & 0xffff_ffff;
        (&self.blocks[block], SALT.map(|salt| 1u64 << ((low.wrapping_mul(salt) & 0xffff_ffff) >> 26)))
    }

    fn insert(&self, hash: u64) -> bool {
        let (block, bits) = self.probe(hash);
        for (word, bit) in block.iter().zip(bits) {
            // Relaxed: a reader that must see the key sees it through
            // the engine's commit (or the builder's flag), which orders.
            word.fetch_or(bit, Ordering::Relaxed);
        }
        self.keys.fetch_add(1, Ordering::Relaxed) + 1 > self.capacity
    }

    fn may_hold(&self, hash: u64) -> bool {
        let (block, bits) = self.probe(hash);
        block.iter().zip(bits).all(|(word, bit)| word.load(Ordering::Relaxed) & bit != 0)
    }

    fn bytes(&self) -> usize {
        self.blocks.len() * 64
    }
}

pub(crate) struct TermFilter {
    /// The engine's keys are all in: "absent" can be trusted.
    complete: AtomicBool,
    /// The store is closing: a fill under way gives up.
    stopped: AtomicBool,
    /// Oldest first; inserts go to the last.
    blooms: RwLock<Vec<Bloom>>,
}

impl Default for TermFilter {
    fn default() -> Self {
        TermFilter::with_capacity(0)
    }
}

impl TermFilter {
    /// A filter whose first Bloom filter takes `keys` keys (at least
    /// [`FIRST_CAPACITY`]) before the next is made.
    pub fn with_capacity(keys: usize) -> TermFilter {
        let first = Bloom::new(keys.clamp(FIRST_CAPACITY, 1 << 34));
        TermFilter { complete: AtomicBool::new(false), stopped: AtomicBool::new(false), blooms: RwLock::new(vec![first]) }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Bloom>> {
        // Changed only by pushing a whole filter.
        self.blooms.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a `TERM2ID` key (before it can be read from the store).
    pub fn insert(&self, key: &[u8]) {
        let hash = xxh3_64(key);
        let full = self.read().last().expect("a filter at least").insert(hash);
        if full {
            let mut blooms = self.blooms.write().unwrap_or_else(|p| p.into_inner());
            let last = blooms.last().expect("a filter at least");
            if last.keys.load(Ordering::Relaxed) > last.capacity {
                let total: usize = blooms.iter().map(|b| b.capacity).sum();
                blooms.push(Bloom::new(total * 2));
            }
        }
    }

    /// Whether the store may hold `key`: `false` only once the engine's
    /// keys are all in and no insert set its bits.
    pub fn may_hold(&self, key: &[u8]) -> bool {
        if !self.complete.load(Ordering::Acquire) {
            return true;
        }
        let hash = xxh3_64(key);
        self.read().iter().any(|b| b.may_hold(hash))
    }

    /// Whether "absent" answers are given (the engine's keys are in).
    pub fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// Adds the keys of the engine's `TERM2ID` from `snapshot` (taken
    /// after this filter began taking inserts), then answers "absent";
    /// gives up, leaving it answering "maybe", once [`Self::stop`] is
    /// called.
    pub fn fill_from(&self, snapshot: &dyn rhizome_kv::KvRead) -> rhizome_kv::Result<()> {
        let mut cursor = snapshot.cursor(crate::index::layout::TERM2ID, &[], None);
        cursor.seek_first();
        let mut n = 0u64;
        while cursor.valid() {
            self.insert(cursor.key());
            n += 1;
            if n % 4096 == 0 && self.stopped.load(Ordering::Relaxed) {
                return Ok(());
            }
            cursor.next();
        }
        cursor.status()?;
        self.complete.store(true, Ordering::Release);
        Ok(())
    }

    /// Makes a fill under way give up (the store is closing).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// The filters' bytes in memory.
    pub fn bytes(&self) -> usize {
        self.read().iter().map(Bloom::bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every inserted key is held, through the chain's growth (three
    /// filters here), and few others are: about 1% of keys never inserted.
    #[test]
    fn a_filter_holds_every_key_inserted_and_few_others() {
        let filter = TermFilter::with_capacity(1 << 16);
        filter.fill_from(rhizome_kv::Kv::memory().snapshot().unwrap().as_ref()).unwrap();
        let key = |i: u64| format!("\x02http://example.org/term/{i}").into_bytes();
        let n = 5 << 16;
        for i in 0..n {
            filter.insert(&key(i));
        }
        assert_eq!(filter.read().len(), 3, "64k, then 128k, then 384k keys");
        let sized = TermFilter::with_capacity(n as usize);
        for i in 0..n {
            sized.insert(&key(i));
        }
        assert_eq!(sized.read().len(), 1, "a filter sized for its keys is one");
        assert!((0..n).all(|i| filter.may_hold(&key(i))), "no false negatives");
        let others = 100_000;
        let false_positives = (n..n + others).filter(|i| filter.may_hold(&key(*i))).count();
        assert!(false_positives < others as usize * 3 / 100, "{false_positives} false positives of {others}");
    }

    /// Until the engine's keys are read, every key may be held.
    #[test]
    fn an_incomplete_filter_answers_maybe() {
        let filter = TermFilter::default();
        assert!(filter.may_hold(b"\x02never inserted"));
        let kv = rhizome_kv::Kv::memory();
        let mut t = kv.transaction().unwrap();
        t.put(crate::index::layout::TERM2ID, b"\x02in the engine", &1u64.to_be_bytes());
        t.commit().unwrap();
        filter.fill_from(kv.snapshot().unwrap().as_ref()).unwrap();
        assert!(filter.is_complete());
        assert!(filter.may_hold(b"\x02in the engine"));
        assert!(!filter.may_hold(b"\x02never inserted"));
    }
}
