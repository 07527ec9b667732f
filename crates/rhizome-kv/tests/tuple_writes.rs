//! A transaction's tuple writes (`Transaction::put_tuple`) read back
//! exactly as the keys they stand for would: every get, cursor (both
//! directions, any bounds and seeks) and grouped read of a transaction
//! writing tuples is compared with one writing the same changes as keys,
//! over the same committed state; and the commit hands the tuples to the
//! backend.

use rhizome_kv::{Backend, Keyspace, Kv, KvRead, MemoryBackend, Snapshot, SortedRun, SortedRunWriter, TupleLayout, WriteBatch, WriteOp};
use std::sync::Arc;

mod common;
use common::{walk, Rng};

/// Two slots: pairs `(a, b)` in keyspace 5 as `a b`, and in keyspace 6 as
/// `b a`; a third, keyspace 7, holds `a b c` of the tuples whose `c` is
/// not zero (a family of its own, as a quad's orderings are).
struct Layout;

const SLOT_KS: [Keyspace; 3] = [Keyspace(5), Keyspace(6), Keyspace(7)];

impl TupleLayout for Layout {
    fn slot_of(&self, ks: Keyspace) -> Option<usize> {
        SLOT_KS.iter().position(|k| *k == ks)
    }
    fn holds(&self, slot: usize, tuple: &[u64; 4]) -> bool {
        (slot == 2) == (tuple[2] != 0)
    }
    fn key_of(&self, slot: usize, t: &[u64; 4]) -> [u64; 4] {
        match slot {
            0 => [t[0], t[1], 0, 0],
            1 => [t[1], t[0], 0, 0],
            _ => [t[0], t[1], t[2], 0],
        }
    }
    fn tuple_of(&self, slot: usize, k: &[u64; 4]) -> [u64; 4] {
        match slot {
            0 => [k[0], k[1], 0, 0],
            1 => [k[1], k[0], 0, 0],
            _ => [k[0], k[1], k[2], 0],
        }
    }
    fn words(&self, slot: usize) -> usize {
        if slot == 2 { 3 } else { 2 }
    }
}

fn key_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// The keys a tuple stands for.
fn keys_of(t: &[u64; 4]) -> Vec<(Keyspace, Vec<u8>)> {
    (0..3).filter(|s| Layout.holds(*s, t)).map(|s| (SLOT_KS[s], key_bytes(&Layout.key_of(s, t)[..Layout.words(s)]))).collect()
}

/// The memory backend with the layout: tuples committed become their keys.
struct TupleBackend {
    inner: MemoryBackend,
    tuples_committed: std::sync::atomic::AtomicUsize,
}

impl Backend for TupleBackend {
    fn snapshot(&self) -> rhizome_kv::Result<Arc<dyn Snapshot>> {
        self.inner.snapshot()
    }
    fn commit(&self, mut batch: WriteBatch) -> rhizome_kv::Result<()> {
        self.tuples_committed.fetch_add(batch.tuples.len(), std::sync::atomic::Ordering::SeqCst);
        for (t, there) in std::mem::take(&mut batch.tuples) {
            for (ks, key) in keys_of(&t) {
                batch.ops.push(if there { WriteOp::Put(ks, key, Vec::new()) } else { WriteOp::Delete(ks, key) });
            }
        }
        self.inner.commit(batch)
    }
    fn sorted_run_writer(&self, ks: Keyspace) -> rhizome_kv::Result<Box<dyn SortedRunWriter>> {
        self.inner.sorted_run_writer(ks)
    }
    fn ingest(&self, runs: Vec<SortedRun>) -> rhizome_kv::Result<()> {
        self.inner.ingest(runs)
    }
    fn compact(&self) -> rhizome_kv::Result<()> {
        Ok(())
    }
    fn size_on_disk(&self) -> rhizome_kv::Result<u64> {
        Ok(0)
    }
    fn tuple_layout(&self) -> Option<&'static dyn TupleLayout> {
        Some(&Layout)
    }
}

fn tuple(rng: &mut Rng) -> [u64; 4] {
    // Few distinct ids, so that writes meet committed keys; ids with high
    // bytes set, so that byte order and word order are both exercised.
    let id = |rng: &mut Rng| [1, 2, 3, 0x0100_0000_0000_0001, u64::MAX - 1][rng.below(5) as usize];
    let c = if rng.below(2) == 0 { 0 } else { id(rng) };
    [id(rng), id(rng), c, 0]
}

/// A bound for a cursor: a random prefix of a random key (any length,
/// odd ones too), or a key one byte longer than the slot's.
fn bound(rng: &mut Rng) -> Vec<u8> {
    let mut k = key_bytes(&Layout.key_of(0, &tuple(rng))[..3]);
    k.truncate(rng.below(26) as usize);
    if rng.below(4) == 0 {
        if let Some(last) = k.last_mut() {
            *last = last.wrapping_add(1);
        }
    }
    k
}


#[test]
fn tuple_writes_read_back_as_their_keys() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..40 {
        let with_tuples = Kv::new(Arc::new(TupleBackend { inner: MemoryBackend::new(), tuples_committed: Default::default() }));
        let with_keys = Kv::memory();
        // The same committed state in both, as keys.
        for kv in [&with_tuples, &with_keys] {
            let mut seed = Rng(round + 1);
            let mut t = kv.transaction().unwrap();
            for _ in 0..30 {
                for (ks, key) in keys_of(&tuple(&mut seed)) {
                    t.put(ks, &key, &[]);
                }
            }
            // Another keyspace's keys, which tuple writes do not touch.
            t.put(Keyspace(8), b"other", b"x");
            t.commit().unwrap();
        }
        let mut a = with_tuples.transaction().unwrap();
        let mut b = with_keys.transaction().unwrap();
        assert!(a.takes_tuples() && !b.takes_tuples());
        for step in 0..60 {
            let t = tuple(&mut rng);
            let there = rng.below(3) != 0;
            a.put_tuple(t, there);
            for (ks, key) in keys_of(&t) {
                if there {
                    b.put(ks, &key, &[]);
                } else {
                    b.delete(ks, &key);
                }
            }
            if step % 3 != 0 {
                continue;
            }
            for ks in SLOT_KS.into_iter().chain([Keyspace(8)]) {
                // Point reads of written and unwritten keys.
                for _ in 0..6 {
                    let probe = tuple(&mut rng);
                    let slot = rng.below(3) as usize;
                    let key = key_bytes(&Layout.key_of(slot, &probe)[..Layout.words(slot)]);
                    assert_eq!(a.get(ks, &key).unwrap(), b.get(ks, &key).unwrap(), "get {ks:?} {key:?}");
                    assert_eq!(a.own_write(ks, &key), b.own_write(ks, &key), "own_write {ks:?} {key:?}");
                    let keys = vec![key.clone(), bound(&mut rng)];
                    assert_eq!(KvRead::get_many(&a, ks, &keys).unwrap(), KvRead::get_many(&b, ks, &keys).unwrap());
                }
                // Cursors over random bounds, sought and walked both ways.
                for _ in 0..6 {
                    let (lower, upper) = (bound(&mut rng), bound(&mut rng));
                    // A cursor's bounds are in order (the memory backend
                    // refuses others).
                    let (lower, upper) = if lower <= upper { (lower, upper) } else { (upper, lower) };
                    let upper = (rng.below(3) != 0).then_some(upper);
                    let at = bound(&mut rng);
                    let at = if at < lower || upper.as_ref().is_some_and(|u| at >= *u) { lower.clone() } else { at };
                    let (mut ca, mut cb) = (a.cursor(ks, &lower, upper.as_deref()), b.cursor(ks, &lower, upper.as_deref()));
                    let what = format!("round {round} step {step} {ks:?} [{lower:?}, {upper:?}) at {at:?}");
                    ca.seek_first();
                    cb.seek_first();
                    assert_eq!(walk(ca.as_mut(), true, 100), walk(cb.as_mut(), true, 100), "forward {what}");
                    ca.seek_last();
                    cb.seek_last();
                    assert_eq!(walk(ca.as_mut(), false, 100), walk(cb.as_mut(), false, 100), "backward {what}");
                    ca.seek(&at);
                    cb.seek(&at);
                    assert_eq!(walk(ca.as_mut(), true, 3), walk(cb.as_mut(), true, 3), "seek {what}");
                    ca.seek_for_prev(&at);
                    cb.seek_for_prev(&at);
                    // Turning round: back two, then forward.
                    assert_eq!(walk(ca.as_mut(), false, 2), walk(cb.as_mut(), false, 2), "seek_for_prev {what}");
                    ca.seek(&at);
                    cb.seek(&at);
                    if ca.valid() {
                        ca.prev();
                        cb.prev();
                    }
                    assert_eq!(walk(ca.as_mut(), true, 4), walk(cb.as_mut(), true, 4), "turned {what}");
                    let ranges = vec![(lower.clone(), upper.clone().unwrap_or_else(|| vec![0xff; 30]))];
                    drop((ca, cb));
                    assert_eq!(KvRead::scan_ranges(&a, ks, &ranges).unwrap(), KvRead::scan_ranges(&b, ks, &ranges).unwrap(), "scan_ranges {what}");
                }
            }
        }
        a.commit().unwrap();
        b.commit().unwrap();
        let (sa, sb) = (with_tuples.snapshot().unwrap(), with_keys.snapshot().unwrap());
        for ks in SLOT_KS {
            let (mut ca, mut cb) = (sa.cursor(ks, &[], None), sb.cursor(ks, &[], None));
            ca.seek_first();
            cb.seek_first();
            assert_eq!(walk(ca.as_mut(), true, usize::MAX), walk(cb.as_mut(), true, usize::MAX), "committed {ks:?}, round {round}");
        }
    }
}

/// The commit hands the tuples to the backend once each (the last write
/// of a tuple wins), not as keys.
#[test]
fn a_commit_hands_each_tuple_over_once() {
    let backend = Arc::new(TupleBackend { inner: MemoryBackend::new(), tuples_committed: Default::default() });
    let kv = Kv::new(backend.clone());
    let mut t = kv.transaction().unwrap();
    t.put_tuple([1, 2, 0, 0], true);
    t.put_tuple([1, 2, 3, 0], true);
    t.put_tuple([1, 2, 0, 0], false);
    t.put_tuple([1, 2, 0, 0], true);
    assert_eq!(t.own_tuple(&[1, 2, 0, 0]), Some(true));
    assert_eq!(t.write_count(), 2);
    t.commit().unwrap();
    assert_eq!(backend.tuples_committed.load(std::sync::atomic::Ordering::SeqCst), 2);
    let s = kv.snapshot().unwrap();
    assert_eq!(s.get(Keyspace(6), &key_bytes(&[2, 1])).unwrap(), Some(Vec::new()));
    assert_eq!(s.get(Keyspace(7), &key_bytes(&[1, 2, 3])).unwrap(), Some(Vec::new()));
}
