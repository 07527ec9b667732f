//! The delta of one ordering: the keys written since its segment, each
//! with its versions, a version being the sequence number of the commit
//! that made it and whether the key is there after it. A snapshot with
//! sequence number `at` sees, for each key, its newest version numbered
//! `at` or less (none: the segment decides), so a reader sees exactly the
//! commits before it, deletions included, however many writes follow.
//!
//! A writer adds its versions before its commit reaches the engine,
//! numbered as the commit will be (readers older than the commit skip
//! them), and takes them out again if the commit fails: no reader waits
//! for a commit's sync. Versions are never changed or removed while
//! readers may see them; a merge makes a new delta instead.
//!
//! **Sorted runs.** The versions live in sorted runs, not one ordered
//! map: a commit's entries are sorted once (about 200 a slot for an LDP
//! PUT) and appended as a run of their own, and the runs are merged
//! leveled, two neighbours at a time whenever the older is at most twice
//! the newer, so a run is at least twice the size of the next newer one
//! and an entry is copied about log2(delta / commit) times (a dozen at
//! the merge trigger), tens of instructions each, where a `BTreeMap`
//! insert took about 870 (0.52M instructions a 200-triple PUT). Runs hold
//! consecutive ranges of sequence numbers, oldest first, and an entry is
//! its key and version, ordered by key then sequence: a key's visible
//! version is the newest numbered `at` or less in the newest run that
//! has one. Readers take the list of runs (an `Arc`) and release the lock
//! at once; a writer builds new runs beside the old ones (which it never
//! changes) and swaps the list, so a reader never waits for a merge of
//! runs. The leveling happens before a commit's run is added, so a failed
//! commit's run is the newest, taken out alone.

use super::Key;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// A version: the sequence number shifted left by one, the low bit set
/// when the key is there.
type Version = u64;

fn version(seq: u64, present: bool) -> Version {
    seq << 1 | present as u64
}

fn seq_of(v: Version) -> u64 {
    v >> 1
}

fn present(v: Version) -> bool {
    v & 1 == 1
}

/// One version of one key.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: Key,
    version: Version,
}

/// Entries in key order, a key's versions in sequence order.
type Run = Arc<Vec<Entry>>;

/// The runs, oldest first.
type Runs = Arc<Vec<Run>>;

/// The visible state of the key at `run[start]`, and the position after
/// its entries: its newest version numbered `at` or less.
fn key_at(run: &[Entry], start: usize, at: u64) -> (Option<bool>, usize) {
    let key = run[start].key;
    let mut seen = None;
    let mut p = start;
    while p < run.len() && run[p].key == key {
        if seq_of(run[p].version) <= at {
            seen = Some(present(run[p].version));
        }
        p += 1;
    }
    (seen, p)
}

/// The first position at or after `from`.
fn start_of(run: &[Entry], from: &Bound<Key>) -> usize {
    match from {
        Bound::Included(k) => run.partition_point(|e| e.key < *k),
        Bound::Excluded(k) => run.partition_point(|e| e.key <= *k),
        Bound::Unbounded => 0,
    }
}

/// Two neighbouring runs as one: every `newer` version is numbered after
/// every `older` one, so a key's older versions go first.
fn merge(older: &[Entry], newer: &[Entry]) -> Vec<Entry> {
    let mut out = Vec::with_capacity(older.len() + newer.len());
    let (mut i, mut j) = (0, 0);
    while i < older.len() && j < newer.len() {
        if newer[j].key < older[i].key {
            out.push(newer[j]);
            j += 1;
        } else {
            out.push(older[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&older[i..]);
    out.extend_from_slice(&newer[j..]);
    out
}

#[derive(Default)]
pub(crate) struct Delta {
    runs: RwLock<Runs>,
    /// Held by a writer while it builds the next list of runs (commits
    /// come one at a time under the backend's commit lock; this makes the
    /// delta safe without it).
    writer: Mutex<()>,
    /// Entries in `runs`: a reader skips an empty delta without its lock.
    entries: AtomicUsize,
    /// Changes made to it (every version counts), for the merge's trigger.
    changes: AtomicU64,
}

impl Delta {
    fn runs(&self) -> Runs {
        // The list is replaced whole: a writer that panicked left it as
        // it was.
        self.runs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn publish(&self, runs: Vec<Run>) {
        let entries = runs.iter().map(|r| r.len()).sum();
        *self.runs.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(runs);
        self.entries.store(entries, Ordering::Release);
    }

    pub fn is_empty(&self) -> bool {
        self.entries.load(Ordering::Acquire) == 0
    }

    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Adds the versions of one commit, numbered `seq` (above every
    /// version already there); of a key given twice, the last state.
    pub fn apply(&self, entries: impl IntoIterator<Item = (Key, bool)>, seq: u64) {
        let mut run: Vec<Entry> = entries.into_iter().map(|(key, there)| Entry { key, version: version(seq, there) }).collect();
        if run.is_empty() {
            return;
        }
        // Stable: of equal keys the later given stays last, and keeps the
        // last state. (An unstable sort on the key and the order given
        // cost as much: about 45k instructions for 200 keys either way,
        // most of it comparing keys of four words.)
        run.sort_by(|a, b| a.key.cmp(&b.key));
        run.dedup_by(|later, kept| {
            let same = later.key == kept.key;
            if same {
                kept.version = later.version;
            }
            same
        });
        let n = run.len() as u64;
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let mut runs: Vec<Run> = self.runs().as_ref().clone();
        debug_assert!(runs.last().and_then(|r| r.iter().map(|e| seq_of(e.version)).max()).is_none_or(|s| s < seq), "versions are added in commit order");
        while runs.len() >= 2 && runs[runs.len() - 2].len() <= 2 * runs[runs.len() - 1].len() {
            let newer = runs.pop().expect("two runs");
            let older = runs.pop().expect("two runs");
            runs.push(Arc::new(merge(&older, &newer)));
        }
        runs.push(Arc::new(run));
        self.publish(runs);
        self.changes.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes out the versions numbered `seq` (a commit that failed: the
    /// newest, its run the newest unless the caller broke that order).
    pub fn undo(&self, seq: u64) {
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let runs: Vec<Run> = self
            .runs()
            .iter()
            .map(|r| if r.iter().any(|e| seq_of(e.version) == seq) { Arc::new(r.iter().filter(|e| seq_of(e.version) != seq).copied().collect()) } else { r.clone() })
            .filter(|r| !r.is_empty())
            .collect();
        self.publish(runs);
    }

    /// Whether `key` is there for a reader at `at`, if the delta says.
    pub fn get(&self, key: &Key, at: u64) -> Option<bool> {
        if self.is_empty() {
            return None;
        }
        Self::get_in(&self.runs(), key, at)
    }

    fn get_in(runs: &[Run], key: &Key, at: u64) -> Option<bool> {
        runs.iter().rev().find_map(|run| {
            let p = run.partition_point(|e| e.key < *key);
            if p < run.len() && run[p].key == *key {
                key_at(run, p, at).0
            } else {
                None
            }
        })
    }

    /// Appends to `out` up to `max` entries a reader at `at` sees, from
    /// `from` on in key order (state `true`: there, `false`: deleted);
    /// `true` when none is left after them.
    pub fn fill(&self, from: Bound<Key>, at: u64, out: &mut Vec<(Key, bool)>, max: usize) -> bool {
        if self.is_empty() {
            return true;
        }
        let runs = self.runs();
        let mut pos: Vec<usize> = runs.iter().map(|r| start_of(r, &from)).collect();
        let mut taken = 0;
        loop {
            let mut min: Option<Key> = None;
            for (run, &p) in runs.iter().zip(&pos) {
                if let Some(e) = run.get(p) {
                    if min.is_none_or(|m| e.key < m) {
                        min = Some(e.key);
                    }
                }
            }
            let Some(key) = min else { return true };
            let mut state = None;
            for (run, p) in runs.iter().zip(pos.iter_mut()).rev() {
                if run.get(*p).is_some_and(|e| e.key == key) {
                    let (seen, next) = key_at(run, *p, at);
                    *p = next;
                    state = state.or(seen);
                }
            }
            if let Some(there) = state {
                if taken == max {
                    return false;
                }
                out.push((key, there));
                taken += 1;
            }
        }
    }

    /// The last entry a reader at `at` sees before `until` (inclusive or
    /// not), in key order.
    pub fn last_before(&self, until: Bound<Key>, at: u64) -> Option<(Key, bool)> {
        if self.is_empty() {
            return None;
        }
        let runs = self.runs();
        // Each run's last key with a version the reader sees; the greatest
        // of them is the answer, its state from the newest run that says.
        let last = runs
            .iter()
            .filter_map(|run| {
                let end = match until {
                    Bound::Included(k) => run.partition_point(|e| e.key <= k),
                    Bound::Excluded(k) => run.partition_point(|e| e.key < k),
                    Bound::Unbounded => run.len(),
                };
                run[..end].iter().rev().find(|e| seq_of(e.version) <= at).map(|e| e.key)
            })
            .max()?;
        Self::get_in(&runs, &last, at).map(|there| (last, there))
    }

    /// Whether any run holds an entry (of any version, seen by a reader
    /// or not) from `from` on and below `until`: when none does, the
    /// segment alone answers for those keys (a count from its blocks).
    pub fn any_between(&self, from: &Bound<Key>, until: &Bound<Key>) -> bool {
        !self.is_empty()
            && self.runs().iter().any(|run| {
                run.get(start_of(run, from)).is_some_and(|e| match until {
                    Bound::Included(u) => e.key <= *u,
                    Bound::Excluded(u) => e.key < *u,
                    Bound::Unbounded => true,
                })
            })
    }

    /// Whether a reader at `at` sees any entry.
    pub fn any_at(&self, at: u64) -> bool {
        !self.is_empty() && self.runs().iter().any(|r| r.iter().any(|e| seq_of(e.version) <= at))
    }

    /// A delta of the versions numbered after `cut` (what a merge up to
    /// `cut` leaves).
    pub fn after(&self, cut: u64) -> Delta {
        let kept: Vec<Run> = self
            .runs()
            .iter()
            .map(|r| if r.iter().all(|e| seq_of(e.version) > cut) { r.clone() } else { Arc::new(r.iter().filter(|e| seq_of(e.version) > cut).copied().collect()) })
            .filter(|r| !r.is_empty())
            .collect();
        let entries: usize = kept.iter().map(|r| r.len()).sum();
        Delta { runs: RwLock::new(Arc::new(kept)), writer: Mutex::new(()), entries: AtomicUsize::new(entries), changes: AtomicU64::new(entries as u64) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u64) -> Key {
        [n, 0, 0, 0]
    }

    fn seen(d: &Delta, at: u64) -> Vec<(u64, bool)> {
        let mut out = Vec::new();
        assert!(d.fill(Bound::Unbounded, at, &mut out, usize::MAX));
        out.into_iter().map(|(k, t)| (k[0], t)).collect()
    }

    #[test]
    fn each_reader_sees_the_versions_numbered_at_or_before_its_sequence() {
        let d = Delta::default();
        d.apply([(k(1), true), (k(2), true)], 10);
        d.apply([(k(1), false), (k(3), true)], 20);
        d.apply([(k(1), true)], 30);
        assert_eq!(seen(&d, 9), vec![]);
        assert_eq!(seen(&d, 10), vec![(1, true), (2, true)]);
        assert_eq!(seen(&d, 25), vec![(1, false), (2, true), (3, true)]);
        assert_eq!(seen(&d, 30), vec![(1, true), (2, true), (3, true)]);
        assert_eq!(d.get(&k(1), 29), Some(false));
        assert_eq!(d.get(&k(3), 19), None);
        assert_eq!(d.last_before(Bound::Excluded(k(3)), 15), Some((k(2), true)));
        assert_eq!(d.last_before(Bound::Excluded(k(2)), 25), Some((k(1), false)));
        // A failed commit's versions go; older ones stay.
        d.undo(30);
        assert_eq!(d.get(&k(1), 40), Some(false));
        assert_eq!(seen(&d, 40), vec![(1, false), (2, true), (3, true)]);
        // What a merge up to 15 leaves: the versions after it.
        let after = d.after(15);
        assert_eq!(seen(&after, 40), vec![(1, false), (3, true)]);
        assert_eq!(after.get(&k(2), 40), None);
    }

    #[test]
    fn fill_stops_at_its_limit_and_says_whether_more_is_left() {
        let d = Delta::default();
        d.apply((0..10).map(|i| (k(i), i % 2 == 0)), 5);
        d.apply([(k(100), true)], 50);
        let mut out = Vec::new();
        assert!(!d.fill(Bound::Included(k(3)), 5, &mut out, 4));
        assert_eq!(out.iter().map(|e| e.0[0]).collect::<Vec<_>>(), vec![3, 4, 5, 6]);
        out.clear();
        // Entries numbered after the reader's sequence do not count.
        assert!(d.fill(Bound::Excluded(k(6)), 5, &mut out, 3));
        assert_eq!(out.iter().map(|e| e.0[0]).collect::<Vec<_>>(), vec![7, 8, 9]);
    }

    /// The model: every key's versions in a map, as the delta kept them
    /// before it had runs.
    #[derive(Default)]
    struct Model(std::collections::BTreeMap<u64, Vec<(u64, bool)>>);

    impl Model {
        fn get(&self, key: u64, at: u64) -> Option<bool> {
            self.0.get(&key)?.iter().rev().find(|(s, _)| *s <= at).map(|(_, t)| *t)
        }

        fn seen(&self, at: u64) -> Vec<(u64, bool)> {
            self.0.keys().filter_map(|k| self.get(*k, at).map(|t| (*k, t))).collect()
        }
    }

    #[test]
    fn runs_merged_leveled_read_as_one_map_of_versions_at_every_sequence() {
        // Commits of 1 to 40 keys out of 300 (repeated keys, a key given
        // twice in one commit, deletes), some failing, then merges' cuts:
        // every reader's view against the model after each step.
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut d = Delta::default();
        let mut model = Model::default();
        let mut seq = 0;
        let mut most_runs = 0;
        for step in 0..400 {
            seq += 1 + next(3);
            let n = 1 + next(40);
            let writes: Vec<(u64, bool)> = (0..n).map(|_| (next(300), next(3) != 0)).collect();
            d.apply(writes.iter().map(|(key, t)| (k(*key), *t)), seq);
            if next(10) == 0 {
                d.undo(seq);
            } else {
                for (key, t) in &writes {
                    let versions = model.0.entry(*key).or_default();
                    if versions.last().is_some_and(|(s, _)| *s == seq) {
                        versions.pop();
                    }
                    versions.push((seq, *t));
                }
            }
            if step % 97 == 96 {
                let cut = seq - next(20).min(seq);
                d = d.after(cut);
                for versions in model.0.values_mut() {
                    versions.retain(|(s, _)| *s > cut);
                }
                model.0.retain(|_, v| !v.is_empty());
            }
            most_runs = most_runs.max(d.runs().len());
            let at = seq - next(30).min(seq);
            assert_eq!(seen(&d, at), model.seen(at), "step {step} at {at}");
            assert_eq!(d.any_at(at), !model.seen(at).is_empty());
            let probe = next(310);
            assert_eq!(d.get(&k(probe), at), model.get(probe, at));
            let expected_last = model.seen(at).into_iter().rev().find(|(key, _)| *key < probe);
            assert_eq!(d.last_before(Bound::Excluded(k(probe)), at).map(|(key, t)| (key[0], t)), expected_last);
            let expected_included = model.seen(at).into_iter().rev().find(|(key, _)| *key <= probe);
            assert_eq!(d.last_before(Bound::Included(k(probe)), at).map(|(key, t)| (key[0], t)), expected_included);
            let mut out = Vec::new();
            let done = d.fill(Bound::Excluded(k(probe)), at, &mut out, 7);
            let after: Vec<(u64, bool)> = model.seen(at).into_iter().filter(|(key, _)| *key > probe).collect();
            assert_eq!(out.iter().map(|(key, t)| (key[0], *t)).collect::<Vec<_>>(), after.iter().take(7).copied().collect::<Vec<_>>());
            assert_eq!(done, after.len() <= 7);
        }
        assert!(most_runs >= 4, "the test reads several runs at once ({most_runs} at most)");
    }
}
