//! The quad indexes in segments and a delta, checked against a plain model:
//! random writes, deletes, aborted transactions, loads (through the delta
//! and as segment files), merges, snapshots held across all of them and
//! reopened stores; after each step every pattern of every snapshot is
//! compared with the model as it was when the snapshot was taken. The
//! same runs on a store whose indexes are keys in a key-value backend
//! (`Store::over_kv`), the path of a backend without local files.

use oxrdf::{GraphName, NamedNode, Quad};
use rhizome_rdf::segmented::MergeSettings;
use rhizome_rdf::{DatasetMode, LoadInput, LoadOptions, QuadBatch, QuadPattern, QuadScan, Store, StoreSnapshot, TermId};
use std::collections::BTreeSet;
use std::io::Write;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Quads as (s, p, o, g) numbers: IRIs `http://t/s{n}` etc.; g 0 is the
/// subject's own graph (a triple of its document), others named graphs.
type ModelQuad = (u64, u64, u64, u64);

const SUBJECTS: u64 = 9;
const PREDICATES: u64 = 4;
const OBJECTS: u64 = 7;
const GRAPHS: u64 = 3;

fn random_quad(rng: &mut Rng) -> ModelQuad {
    (rng.below(SUBJECTS), rng.below(PREDICATES), rng.below(OBJECTS), rng.below(GRAPHS + 1))
}

fn iri(kind: &str, n: u64) -> NamedNode {
    NamedNode::new(format!("http://t/{kind}{n}")).unwrap()
}

fn as_quad(q: ModelQuad) -> Quad {
    let graph = if q.3 == 0 { GraphName::NamedNode(iri("s", q.0)) } else { GraphName::NamedNode(iri("g", q.3)) };
    // Objects: IRIs and literals, inlined and not.
    let object: oxrdf::Term = match q.2 % 3 {
        0 => iri("o", q.2).into(),
        1 => oxrdf::Literal::new_simple_literal(format!("literal number {} with some length", q.2)).into(),
        _ => oxrdf::Literal::new_typed_literal(q.2.to_string(), oxrdf::vocab::xsd::INTEGER).into(),
    };
    Quad::new(iri("s", q.0), iri("p", q.1), object, graph)
}

/// A scan's quads taken in batches of id columns of varying sizes, mixed
/// with single quads (`next_quad`), as `rng` picks: they must be the
/// quads one at a time gives, in its order.
fn batched(mut scan: QuadScan<'_>, rng: &mut Rng) -> Vec<[TermId; 4]> {
    let mut out = Vec::new();
    let mut batch = QuadBatch::default();
    loop {
        let max = match rng.below(4) {
            0 => match scan.next_quad().unwrap() {
                Some(q) => {
                    out.push(q);
                    continue;
                }
                None => break,
            },
            1 => 1,
            2 => 7,
            _ => 1024,
        };
        // Batches append: what a batch held before stays.
        batch.clear();
        batch.push([TermId(1); 4]);
        let n = scan.next_batch(&mut batch, max).unwrap();
        assert!(n <= max, "a batch of {n} quads, at most {max} asked for");
        assert_eq!(batch.len(), n + 1, "a batch appends its quads");
        if n == 0 {
            break;
        }
        out.extend((1..=n).map(|i| batch.quad(i)));
    }
    assert_eq!(scan.next_batch(&mut batch, 9).unwrap(), 0, "a scan at its end stays there");
    out
}

/// Every pattern with positions taken from the model's quads (and from
/// ids no quad has) gives exactly the model's quads, sorted and once each.
fn compare(snapshot: &StoreSnapshot, model: &BTreeSet<ModelQuad>, context: &str) {
    let model_ids: BTreeSet<[TermId; 4]> = model.iter().map(|q| quad_ids(snapshot, *q)).collect();
    let all: Vec<[TermId; 4]> = snapshot.scan(QuadPattern::default()).map(|q| q.unwrap()).collect();
    assert_eq!(all.iter().copied().collect::<BTreeSet<_>>(), model_ids, "{context}: the whole store");
    assert_eq!(all.len(), model_ids.len(), "{context}: a quad twice");
    let absent = TermId(u64::MAX >> 9);
    let probes: Vec<[TermId; 4]> = model_ids.iter().copied().chain([[absent; 4]]).collect();
    for probe in &probes {
        for mask in 1..16u8 {
            let pick = |i: usize| (mask & (1 << i) != 0).then_some(probe[i]);
            let pattern = QuadPattern { s: pick(0), p: pick(1), o: pick(2), g: pick(3) };
            let got: Vec<[TermId; 4]> = snapshot.scan(pattern).map(|q| q.unwrap()).collect();
            let mut rng = Rng(0x5eed ^ (probe[0].0 << 4) ^ u64::from(mask));
            assert_eq!(batched(snapshot.scan(pattern), &mut rng), got, "{context}: pattern {pattern:?} in batches");
            let want: BTreeSet<[TermId; 4]> = model_ids.iter().filter(|c| (0..4).all(|i| mask & (1 << i) == 0 || c[i] == probe[i])).copied().collect();
            assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), want, "{context}: pattern {pattern:?}");
            assert_eq!(got.len(), want.len(), "{context}: a quad twice for {pattern:?}");
            // A reusable scan's count from the blocks, where it gives one.
            let scan = rhizome_rdf::QuadScan::reusable(snapshot.kv(), pattern, snapshot.families());
            if let Some(n) = scan.count_pattern(pattern).unwrap() {
                assert_eq!(n as usize, want.len(), "{context}: count of {pattern:?}");
            }
        }
        assert_eq!(snapshot.contains(probe).unwrap(), model_ids.contains(probe), "{context}: contains {probe:?}");
    }
    compare_statistics(snapshot, model, context);
}

/// The statistics a snapshot reads (kept by each write, carried in the
/// quad log on segments) against the model of its time: the quad
/// counter, each predicate's quads and its quads per object.
fn compare_statistics(snapshot: &StoreSnapshot, model: &BTreeSet<ModelQuad>, context: &str) {
    let kv = snapshot.kv();
    assert_eq!(rhizome_rdf::quads_counted(kv, None).unwrap(), model.len() as u64, "{context}: the quad counter");
    for p in 0..PREDICATES {
        let Some(pid) = snapshot.lookup(iri("p", p).as_ref().into()).unwrap() else { continue };
        let quads = model.iter().filter(|q| q.1 == p).count() as u64;
        assert_eq!(rhizome_rdf::quads_counted(kv, Some(pid)).unwrap(), quads, "{context}: quads of predicate {p}");
        let mut want: Vec<(TermId, u64)> = Vec::new();
        for q in model.iter().filter(|q| q.1 == p) {
            let o = snapshot.lookup(as_quad(*q).object.as_ref()).unwrap().expect("a model object has an id");
            match want.iter_mut().find(|(id, _)| *id == o) {
                Some((_, n)) => *n += 1,
                None => want.push((o, 1)),
            }
        }
        want.sort();
        assert_eq!(rhizome_rdf::value_counts(kv, pid).unwrap(), Some(want), "{context}: quads per object of predicate {p}");
    }
}

/// The dictionary's filter (`segmented/term_filter.rs`) answers "maybe"
/// for every term of every quad ever written (`stored`: committed, loaded,
/// merged, reopened; removed quads' terms stay in the dictionary), and
/// once it holds the engine's terms, "absent" for most terms never written.
fn check_term_filter(store: &Store, stored: &BTreeSet<ModelQuad>, background: bool, context: &str) {
    let Some(segments) = store.segments() else { return };
    let key = |term: oxrdf::TermRef<'_>| match rhizome_rdf::term::term_key(term) {
        rhizome_rdf::term::TermKey::Dictionary { tag, bytes } => Some(rhizome_rdf::term::term2id_key(tag, &bytes).0),
        _ => None,
    };
    for q in stored {
        let quad = as_quad(*q);
        let graph = match &quad.graph_name {
            GraphName::NamedNode(n) => n.clone(),
            _ => unreachable!("every model quad is in a named graph"),
        };
        for term in [quad.subject.as_ref().into(), quad.predicate.as_ref().into(), quad.object.as_ref(), graph.as_ref().into()] {
            if let Some(k) = key(term) {
                assert!(segments.term_may_be_stored(&k), "{context}: the filter misses the stored term {term}");
            }
        }
    }
    let (complete, _) = segments.term_filter_state();
    assert!(complete || background, "{context}: a store without background work fills its filter at open");
    if complete {
        let never = (0..20).filter(|n| segments.term_may_be_stored(&key(iri("never", *n).as_ref().into()).unwrap())).count();
        assert!(never < 20, "{context}: the filter answers \"maybe\" for every term never written");
    }
}

fn load(store: &Store, dir: &std::path::Path, quads: &[ModelQuad], as_files: bool) {
    let path = dir.join("load.nq");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for q in quads {
        writeln!(w, "{} .", as_quad(*q)).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    // A tiny run buffer makes the loader spill and write its orderings
    // as files (segment runs) however few quads it has.
    let options = LoadOptions { run_buffer_bytes: if as_files { 64 } else { 1 << 20 }, ..LoadOptions::default() };
    store.load(&[LoadInput { path }], &options).unwrap();
}

enum Kind {
    /// Segments in memory, merged in the commit that passes a small delta.
    Memory,
    /// Segment files, merged in the background past a small delta, and
    /// reopened now and then.
    Disk,
    /// Quad indexes as keys (`Store::over_kv`).
    Keys,
}

/// These tests are of segments: a run of the whole suite on the
/// key-value path (`RHIZOME_INDEXES=keys`) leaves them on segments.
fn on_segments() {
    std::env::remove_var("RHIZOME_INDEXES");
}

fn open(kind: &Kind, dir: &std::path::Path) -> Store {
    on_segments();
    match kind {
        Kind::Memory => Store::memory_with(DatasetMode::Union, MergeSettings { delta_quads: 40, background: false, ..MergeSettings::default() }),
        Kind::Disk => Store::open_or_create_with(&dir.join("db"), Some(DatasetMode::Union), MergeSettings { delta_quads: 60, ..MergeSettings::default() }).unwrap(),
        Kind::Keys => Store::over_kv(rhizome_kv::Kv::memory(), Some(DatasetMode::Union)).unwrap(),
    }
}

fn run(kind: Kind, seed: u64, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&kind, dir.path());
    let mut rng = Rng(seed);
    let mut model: BTreeSet<ModelQuad> = BTreeSet::new();
    let mut held: Vec<(StoreSnapshot, BTreeSet<ModelQuad>, String)> = Vec::new();
    let mut merged = 0;
    let mut file_loads = 0;
    let mut stored: BTreeSet<ModelQuad> = BTreeSet::new();
    for step in 0..steps {
        let context = format!("seed {seed}, step {step}");
        match rng.below(100) {
            0..=49 => {
                // A transaction of inserts and removals, committed or not.
                let commit = rng.below(8) != 0;
                let mut txn = store.transaction().unwrap();
                let mut next = model.clone();
                for _ in 0..1 + rng.below(12) {
                    let q = if rng.below(2) == 0 && !next.is_empty() {
                        *next.iter().nth(rng.below(next.len() as u64) as usize).unwrap()
                    } else {
                        random_quad(&mut rng)
                    };
                    let ids = txn.encode_quad(as_quad(q).as_ref()).unwrap();
                    if rng.below(3) == 0 {
                        assert_eq!(txn.remove(&ids).unwrap(), next.remove(&q), "{context}: remove");
                    } else {
                        assert_eq!(txn.insert(&ids).unwrap(), next.insert(q), "{context}: insert");
                    }
                }
                if commit {
                    txn.commit().unwrap();
                    stored.extend(next.difference(&model).copied());
                    model = next;
                }
            }
            50..=59 => {
                let n = 1 + rng.below(30) as usize;
                let quads: Vec<ModelQuad> = (0..n).map(|_| random_quad(&mut rng)).collect();
                let as_files = rng.below(2) == 0;
                file_loads += as_files as usize;
                load(&store, dir.path(), &quads, as_files);
                stored.extend(quads.iter().copied());
                model.extend(quads);
            }
            60..=69 => {
                merged += store.merge().unwrap() as usize;
            }
            70..=79 => {
                held.push((store.snapshot().unwrap(), model.clone(), context.clone()));
                if held.len() > 4 {
                    held.remove(rng.below(held.len() as u64) as usize);
                }
            }
            80..=84 if matches!(kind, Kind::Disk) => {
                held.clear();
                drop(store);
                store = open(&kind, dir.path());
            }
            _ => {
                // Drop a whole graph (many removals in one commit).
                let mut txn = store.transaction().unwrap();
                let g = rng.below(GRAPHS) + 1;
                if let Some(id) = txn.lookup(iri("g", g).as_ref().into()).unwrap() {
                    txn.drop_graph(id).unwrap();
                    txn.commit().unwrap();
                    model.retain(|q| q.3 != g);
                }
            }
        }
        compare(&store.snapshot().unwrap(), &model, &context);
        for (snapshot, then, when) in &held {
            compare(snapshot, then, &format!("{context}: a snapshot taken at {when}"));
        }
        let stats = store.stats().unwrap();
        assert_eq!(stats.quads, model.len() as u64, "{context}: the quad counter");
        check_term_filter(&store, &stored, matches!(kind, Kind::Disk), &context);
    }
    if let Some(segments) = store.segments() {
        // The run went through what it is meant to test.
        assert!(merged > 0 && file_loads > 0, "seed {seed}: {merged} merges, {file_loads} loads as files");
        assert!(!segments.segment_files().is_empty(), "seed {seed}: no segment at the end");
    }
}

#[test]
fn segments_in_memory_answer_every_pattern_as_the_model_does() {
    for seed in 1..=6 {
        run(Kind::Memory, seed * 7919, 160);
    }
}

#[cfg(feature = "rocksdb")]
#[test]
fn segment_files_answer_every_pattern_as_the_model_does_across_merges_and_reopens() {
    for seed in 1..=3 {
        run(Kind::Disk, seed * 104_729, 160);
    }
}

#[test]
fn indexes_as_keys_answer_every_pattern_as_the_model_does() {
    run(Kind::Keys, 4242, 160);
}

/// Readers taking snapshots while a writer commits and merges run (in
/// the background and called): every snapshot sees whole commits only,
/// and its quads agree with the counter committed beside them (the
/// engine's keys and the delta's versions are one state).
fn readers_see_whole_commits_while_writes_and_merges_go_on(store: Store) {
    let p = |n: u64| NamedNode::new(format!("http://t/p{n}")).unwrap();
    let subject = |r: u64| NamedNode::new(format!("http://t/round{r}")).unwrap();
    const ROUNDS: u64 = 300;
    const PER_ROUND: u64 = 5;
    const KEPT: u64 = 3;
    let done = std::sync::atomic::AtomicBool::new(false);
    let checks = [std::sync::atomic::AtomicUsize::new(0), std::sync::atomic::AtomicUsize::new(0)];
    std::thread::scope(|scope| {
        let store = &store;
        let done = &done;
        let checks = &checks;
        let writer = scope.spawn(move || {
            for r in 0..ROUNDS {
                if r == ROUNDS / 2 {
                    // Halfway, wait (not a timing assertion: a rendezvous)
                    // until a merge has emptied the delta and every reader
                    // has checked a snapshot since: merges and reads then
                    // surely ran while writes were still to come, however
                    // the threads were scheduled on a loaded machine.
                    let seen: Vec<usize> = checks.iter().map(|c| c.load(std::sync::atomic::Ordering::SeqCst)).collect();
                    let since = std::time::Instant::now();
                    while store.segments().unwrap().delta_quads() > 0 || checks.iter().zip(&seen).any(|(c, s)| c.load(std::sync::atomic::Ordering::SeqCst) <= *s) {
                        assert!(since.elapsed() < std::time::Duration::from_secs(120), "no merge emptied the delta, or a reader stopped");
                        std::thread::yield_now();
                    }
                }
                let mut txn = store.transaction().unwrap();
                for i in 0..PER_ROUND {
                    let q = txn.encode_quad(Quad::new(subject(r), p(i), iri("o", r), GraphName::DefaultGraph).as_ref()).unwrap();
                    txn.insert(&q).unwrap();
                    if r >= KEPT {
                        let old = txn.encode_quad(Quad::new(subject(r - KEPT), p(i), iri("o", r - KEPT), GraphName::DefaultGraph).as_ref()).unwrap();
                        assert!(txn.remove(&old).unwrap());
                    }
                }
                txn.commit().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let merger = scope.spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                store.merge().unwrap();
            }
        });
        let mut readers = Vec::new();
        for checked in checks.iter() {
            readers.push(scope.spawn(move || {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    let snapshot = store.snapshot().unwrap();
                    let counted = rhizome_rdf::quads_counted(snapshot.kv(), None).unwrap();
                    let mut per_subject: std::collections::BTreeMap<TermId, u64> = Default::default();
                    for q in snapshot.scan(QuadPattern::default()) {
                        *per_subject.entry(q.unwrap()[0]).or_default() += 1;
                    }
                    let scanned: u64 = per_subject.values().sum();
                    assert_eq!(scanned, counted, "the scan and the counter of one snapshot");
                    assert!(per_subject.values().all(|n| *n == PER_ROUND), "a round seen in part: {per_subject:?}");
                    assert!(per_subject.len() as u64 <= KEPT);
                    checked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }));
        }
        writer.join().unwrap();
        merger.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
    });
    assert_eq!(store.stats().unwrap().quads, KEPT * PER_ROUND);
}

#[cfg(feature = "rocksdb")]
#[test]
fn segment_files_readers_see_whole_commits_while_writes_and_merges_go_on() {
    on_segments();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create_with(&dir.path().join("db"), Some(DatasetMode::Union), MergeSettings { delta_quads: 50, ..MergeSettings::default() }).unwrap();
    readers_see_whole_commits_while_writes_and_merges_go_on(store);
}

#[test]
fn segments_in_memory_readers_see_whole_commits_while_writes_and_merges_go_on() {
    let store = Store::memory_with(DatasetMode::Union, MergeSettings { delta_quads: 50, background: true, ..MergeSettings::default() });
    readers_see_whole_commits_while_writes_and_merges_go_on(store);
}

/// A store of the previous format (quad indexes as keys in the engine,
/// format 2) is refused by a read-only open with what to do, and moved to
/// segments by the first open for writing: the same quads, counters and
/// statistics, every ordering agreeing, and it takes writes after.
#[cfg(feature = "rocksdb")]
#[test]
fn a_store_of_format_2_is_migrated_to_segments_when_opened_for_writing() {
    on_segments();
    use rhizome_rdf::index::layout;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = Rng(99);
    let quads: Vec<ModelQuad> = (0..300).map(|_| random_quad(&mut rng)).collect();
    let before = {
        let store = Store::over_kv(rhizome_kv::Kv::open(&path).unwrap(), Some(DatasetMode::Union)).unwrap();
        load(&store, dir.path(), &quads[..200], true);
        let mut txn = store.transaction().unwrap();
        for q in &quads[200..] {
            let ids = txn.encode_quad(as_quad(*q).as_ref()).unwrap();
            txn.insert(&ids).unwrap();
        }
        txn.commit().unwrap();
        let stats = store.stats().unwrap();
        (stats.quads, stats.terms, stats.graphs, stats.predicates.len())
    };
    let model: BTreeSet<ModelQuad> = quads.iter().copied().collect();
    match Store::open_read_only(&path) {
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains("format 2") && message.contains("compact"), "{message}");
        }
        Ok(_) => panic!("a read-only open read a store of format 2"),
    }
    let store = Store::open(&path).unwrap();
    let stats = store.stats().unwrap();
    assert_eq!((stats.quads, stats.terms, stats.graphs, stats.predicates.len()), before);
    compare(&store.snapshot().unwrap(), &model, "migrated");
    let report = store.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(store.segments().unwrap().segment_files().len(), 9, "a file per ordering of both families");
    let snapshot = store.snapshot().unwrap();
    let version = snapshot.kv().get(layout::META, layout::meta::FORMAT_VERSION).unwrap().unwrap();
    assert_eq!(u64::from_be_bytes(version.try_into().unwrap()), layout::FORMAT_VERSION);
    drop(snapshot);
    // It takes writes, and opens again (nothing left to migrate).
    let mut txn = store.transaction().unwrap();
    let extra = (100, 1, 1, 0);
    let ids = txn.encode_quad(as_quad(extra).as_ref()).unwrap();
    txn.insert(&ids).unwrap();
    txn.commit().unwrap();
    drop(store);
    let store = Store::open_read_only(&path).unwrap();
    let mut model = model;
    model.insert(extra);
    compare(&store.snapshot().unwrap(), &model, "reopened");
}

/// `Store::check` finds orderings that disagree: a segment file of one
/// ordering replaced by another's keys with one quad less.
#[cfg(feature = "rocksdb")]
#[test]
fn check_finds_a_segment_that_disagrees_with_its_family() {
    on_segments();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut rng = Rng(7);
    let quads: Vec<ModelQuad> = (0..200).map(|_| (rng.below(50), rng.below(5), rng.below(40), 0)).collect();
    {
        let store = Store::open_or_create(&path, Some(DatasetMode::Union)).unwrap();
        load(&store, dir.path(), &quads, true);
        assert!(store.check().unwrap().is_sound());
    }
    // Rewrite the POS file with its first key left out (same name, so the
    // segment set still names it, but fewer rows than it says).
    let segments = path.join("segments");
    let pos = std::fs::read_dir(&segments).unwrap().map(|e| e.unwrap().path()).find(|p| p.file_name().unwrap().to_string_lossy().starts_with("POS-")).unwrap();
    let keys: Vec<[u64; 4]> = {
        let segment = rhizome_rdf::segment::Segment::open(&pos).unwrap();
        let mut c = segment.cursor();
        c.seek_first().unwrap();
        let mut keys = Vec::new();
        while c.valid() {
            keys.push(c.key());
            c.next().unwrap();
        }
        keys
    };
    let mut w = rhizome_rdf::segment::SegmentWriter::create(&pos, 3).unwrap();
    for k in &keys[1..] {
        w.push(&k[..3]).unwrap();
    }
    w.finish().unwrap();
    // The set's row count catches it at open.
    let opened = Store::open(&path);
    assert!(matches!(opened, Err(rhizome_rdf::Error::Corrupt(_))), "opened a store whose segment lost a row");
    // Same rows, one key changed: open passes, the check does not.
    let mut w = rhizome_rdf::segment::SegmentWriter::create(&pos, 3).unwrap();
    let mut changed = keys.clone();
    let last = changed.len() - 1;
    changed[last][2] += 1;
    for k in &changed {
        w.push(&k[..3]).unwrap();
    }
    w.finish().unwrap();
    let store = Store::open(&path).unwrap();
    let report = store.check().unwrap();
    assert!(report.problems.iter().any(|p| p.contains("POS") && p.contains("different quads")), "{:?}", report.problems);
}

/// The blocks of each segment file of `store`, by ordering.
fn blocks_by_ordering(store: &Store) -> std::collections::BTreeMap<String, Vec<Vec<u8>>> {
    let files = store.segments().expect("a store on segments").segment_files();
    files
        .into_iter()
        .map(|(ordering, path, _, _)| {
            let segment = rhizome_rdf::segment::Segment::open(&path.expect("a segment file")).unwrap();
            (ordering, (0..segment.blocks()).map(|b| segment.block_bytes(b).to_vec()).collect())
        })
        .collect()
}

/// A merge copies the blocks of a segment that no change falls in, as
/// they are: after a commit that removes one quad and adds another, every
/// ordering's new file holds all but a few of its old blocks byte for
/// byte (written again, every block after the removal would start one
/// key later and differ), and the store answers as before.
#[cfg(feature = "rocksdb")]
#[test]
fn a_merge_copies_the_blocks_no_change_falls_in() {
    on_segments();
    let dir = tempfile::tempdir().unwrap();
    let settings = MergeSettings { background: false, ..MergeSettings::default() };
    let store = Store::open_or_create_with(&dir.path().join("db"), Some(DatasetMode::Union), settings).unwrap();
    let mut rng = Rng(46);
    // Document triples (graph 0) and quads of a named graph: both families
    // of orderings, each many blocks long.
    let mut model: BTreeSet<ModelQuad> = BTreeSet::new();
    while model.len() < 40_000 {
        model.insert((rng.below(8_000), rng.below(6), rng.below(6_000), rng.below(2)));
    }
    load(&store, dir.path(), &model.iter().copied().collect::<Vec<_>>(), true);
    for round in 0..3 {
        let before = blocks_by_ordering(&store);
        let mut txn = store.transaction().unwrap();
        let gone = *model.iter().nth(rng.below(model.len() as u64) as usize).unwrap();
        let ids = txn.encode_quad(as_quad(gone).as_ref()).unwrap();
        assert!(txn.remove(&ids).unwrap());
        model.remove(&gone);
        let new = (8_000 + round, 1, 7, round % 2);
        let ids = txn.encode_quad(as_quad(new).as_ref()).unwrap();
        assert!(txn.insert(&ids).unwrap());
        model.insert(new);
        txn.commit().unwrap();
        assert!(store.merge().unwrap(), "round {round}: nothing merged");
        let after = blocks_by_ordering(&store);
        assert_eq!(after.len(), 9, "round {round}: every ordering has a file");
        for (ordering, blocks) in &after {
            let old: std::collections::HashSet<&Vec<u8>> = before[ordering].iter().collect();
            let kept = blocks.iter().filter(|b| old.contains(b)).count();
            assert!(blocks.len() >= 19, "round {round}, {ordering}: {} blocks", blocks.len());
            // The removal's block and the addition's are written anew,
            // each possibly with a short block of the keys before a copy.
            assert!(kept + 4 >= blocks.len(), "round {round}, {ordering}: {kept} of {} blocks copied", blocks.len());
        }
        let snapshot = store.snapshot().unwrap();
        let all: BTreeSet<[TermId; 4]> = snapshot.scan(QuadPattern::default()).map(|q| q.unwrap()).collect();
        assert_eq!(all.len(), model.len(), "round {round}: quads after the merge");
        for q in [gone, new] {
            let quad = as_quad(q);
            let s = snapshot.lookup(quad.subject.as_ref().into()).unwrap().unwrap();
            let by_subject = snapshot.scan(QuadPattern { s: Some(s), ..QuadPattern::default() }).count();
            let want = model.iter().filter(|m| m.0 == q.0).count();
            assert_eq!(by_subject, want, "round {round}: quads of subject {}", q.0);
        }
        assert!(store.check().unwrap().is_sound(), "round {round}: check after the merge");
    }
}

/// Commits `changes` removals of the model's quads and additions of
/// `new_quad`'s (about half each), in one transaction left in the delta
/// (the store's merges wait for a delta of `u64::MAX` quads).
fn commit_scattered_changes(store: &Store, model: &mut BTreeSet<ModelQuad>, rng: &mut Rng, changes: usize, new_quad: impl Fn(&mut Rng) -> ModelQuad) {
    let mut txn = store.transaction().unwrap();
    for _ in 0..changes {
        let q = if rng.below(2) == 0 { *model.iter().nth(rng.below(model.len() as u64) as usize).unwrap() } else { new_quad(rng) };
        let ids = txn.encode_quad(as_quad(q).as_ref()).unwrap();
        if model.contains(&q) {
            assert!(txn.remove(&ids).unwrap());
            model.remove(&q);
        } else {
            assert!(txn.insert(&ids).unwrap());
            model.insert(q);
        }
    }
    txn.commit().unwrap();
    assert!(store.segments().unwrap().delta_quads() > 0, "the changes stay in the delta");
}

/// Scans that read segment blocks ahead (once a scan steps through a
/// block) stop at every delta entry, at the prefix of a re-pointed scan
/// and at the block's end: full scans, a reusable scan re-pointed at every
/// subject up and down, and skips by object over subjects with hundreds of
/// quads each, with a delta of scattered additions and removals not merged.
#[cfg(feature = "rocksdb")]
#[test]
fn scans_reading_blocks_ahead_see_the_delta_and_their_prefix() {
    on_segments();
    let dir = tempfile::tempdir().unwrap();
    let settings = MergeSettings { background: false, delta_quads: u64::MAX, ..MergeSettings::default() };
    let store = Store::open_or_create_with(&dir.path().join("db"), Some(DatasetMode::Union), settings).unwrap();
    let mut rng = Rng(4646);
    let mut model: BTreeSet<ModelQuad> = BTreeSet::new();
    while model.len() < 9_000 {
        model.insert((rng.below(30), rng.below(4), rng.below(4_000), rng.below(2)));
    }
    load(&store, dir.path(), &model.iter().copied().collect::<Vec<_>>(), true);
    commit_scattered_changes(&store, &mut model, &mut rng, 400, |rng| (rng.below(32), rng.below(4), rng.below(4_100), rng.below(2)));
    let snapshot = store.snapshot().unwrap();
    let id = |t: oxrdf::TermRef| snapshot.lookup(t).unwrap().unwrap();
    let ids: BTreeSet<[TermId; 4]> = model
        .iter()
        .map(|q| {
            let quad = as_quad(*q);
            let g = match &quad.graph_name {
                GraphName::NamedNode(n) => id(n.as_ref().into()),
                _ => unreachable!(),
            };
            [id(quad.subject.as_ref().into()), id(quad.predicate.as_ref().into()), id(quad.object.as_ref()), g]
        })
        .collect();
    let all: Vec<[TermId; 4]> = snapshot.scan(QuadPattern::default()).map(|q| q.unwrap()).collect();
    assert_eq!(all.len(), ids.len(), "the whole store, once each");
    assert_eq!(all.iter().copied().collect::<BTreeSet<_>>(), ids, "the whole store");
    // In batches: whole blocks' columns at once, the delta merged between.
    assert_eq!(batched(snapshot.scan(QuadPattern::default()), &mut rng), all, "the whole store in batches");
    let mut subjects: Vec<TermId> = ids.iter().map(|q| q[0]).collect::<BTreeSet<_>>().into_iter().collect();
    let want = |f: &dyn Fn(&[TermId; 4]) -> bool| ids.iter().filter(|q| f(q)).copied().collect::<BTreeSet<_>>();
    for round in 0..2 {
        let mut scan = rhizome_rdf::QuadScan::reusable(snapshot.kv(), QuadPattern { s: Some(subjects[0]), ..QuadPattern::default() }, snapshot.families());
        for (n, s) in subjects.iter().enumerate() {
            // Half of the subjects read only in part, so the next
            // re-pointing starts with quads read ahead and not handed out.
            assert!(scan.rebind(QuadPattern { s: Some(*s), ..QuadPattern::default() }));
            let got: Vec<[TermId; 4]> = match n % 4 {
                0 => scan.by_ref().map(|q| q.unwrap()).collect(),
                2 => {
                    // In batches, from a lookup's window of rows on.
                    let mut batch = QuadBatch::default();
                    while scan.next_batch(&mut batch, 1 + rng.below(300) as usize).unwrap() > 0 {}
                    (0..batch.len()).map(|i| batch.quad(i)).collect()
                }
                3 => {
                    // A batch of a lookup read in part.
                    let mut batch = QuadBatch::default();
                    scan.next_batch(&mut batch, 40).unwrap();
                    (0..batch.len()).map(|i| batch.quad(i)).collect()
                }
                _ => scan.by_ref().take(40).map(|q| q.unwrap()).collect(),
            };
            let expected = want(&|q| q[0] == *s);
            if n % 2 == 0 {
                assert_eq!(got.len(), expected.len(), "round {round}: subject {s:?} once each");
                assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), expected, "round {round}: subject {s:?}");
            } else {
                assert!(got.iter().all(|q| expected.contains(q)), "round {round}: subject {s:?}, in part");
            }
        }
        subjects.reverse();
    }
    // Skips by object within a predicate (both families: two streams).
    let p = ids.iter().next().unwrap()[1];
    let mut scan = snapshot.scan(QuadPattern { p: Some(p), ..QuadPattern::default() });
    assert!(scan.sorted_by(2));
    let objects: Vec<TermId> = want(&|q| q[1] == p).iter().map(|q| q[2]).collect::<BTreeSet<_>>().into_iter().collect();
    for target in objects.iter().step_by(7) {
        scan.seek_component(2, *target).unwrap();
        let got = scan.next_quad().unwrap().expect("a quad at the object sought");
        assert_eq!(got[2], *target, "the first quad at or after object {target:?}");
    }
}

/// One reusable scan re-pointed at every predicate and object (a lookup of
/// two leading ids in POS: the segment cursor finds the rows of both ids
/// and decodes just those), in key order (the next lookup in the block the
/// last one read, or the next block) and back again (before it), over a
/// delta of removals and additions not merged, on a snapshot taken before
/// a merge that then runs: every lookup gives the snapshot's quads.
#[cfg(feature = "rocksdb")]
#[test]
fn a_reused_scan_looks_up_leading_ids_through_the_delta_and_a_merge() {
    on_segments();
    let dir = tempfile::tempdir().unwrap();
    let settings = MergeSettings { background: false, delta_quads: u64::MAX, ..MergeSettings::default() };
    let store = Store::open_or_create_with(&dir.path().join("db"), Some(DatasetMode::Union), settings).unwrap();
    let mut rng = Rng(4647);
    let mut model: BTreeSet<ModelQuad> = BTreeSet::new();
    while model.len() < 12_000 {
        model.insert((rng.below(3_000), rng.below(3), rng.below(2_000), rng.below(2)));
    }
    load(&store, dir.path(), &model.iter().copied().collect::<Vec<_>>(), true);
    commit_scattered_changes(&store, &mut model, &mut rng, 600, |rng| (rng.below(3_000), rng.below(3), rng.below(2_050), rng.below(2)));
    let snapshot = store.snapshot().unwrap();
    let ids: BTreeSet<[TermId; 4]> = model.iter().map(|q| quad_ids(&snapshot, *q)).collect();
    let mut keys: Vec<(TermId, TermId)> = ids.iter().map(|q| (q[1], q[2])).collect::<BTreeSet<_>>().into_iter().collect();
    // Absent objects between them too.
    keys.extend(keys.clone().iter().step_by(5).map(|(p, o)| (*p, TermId(o.0 + 1))));
    keys.sort();
    keys.dedup();
    for round in 0..3 {
        if round == 1 {
            // The snapshot stays on the files it was taken on.
            assert!(store.merge().unwrap(), "the delta merged");
        }
        let pattern = |(p, o): (TermId, TermId)| QuadPattern { p: Some(p), o: Some(o), ..QuadPattern::default() };
        let mut scan = rhizome_rdf::QuadScan::reusable(snapshot.kv(), pattern(keys[0]), snapshot.families());
        let (mut counted, mut read) = (0, 0);
        for (n, key) in keys.iter().enumerate() {
            // Counted from the blocks before the rebind, the scan unmoved:
            // keys no delta entry falls among; the others are read.
            let count = scan.count_pattern(pattern(*key)).unwrap();
            if count.is_some() {
                counted += 1
            } else {
                read += 1
            }
            assert!(scan.rebind(pattern(*key)));
            let got: Vec<[TermId; 4]> = if n % 3 == 0 {
                let mut batch = QuadBatch::default();
                while scan.next_batch(&mut batch, 1 + rng.below(20) as usize).unwrap() > 0 {}
                (0..batch.len()).map(|i| batch.quad(i)).collect()
            } else {
                scan.by_ref().map(|q| q.unwrap()).collect()
            };
            let want: BTreeSet<[TermId; 4]> = ids.iter().filter(|q| (q[1], q[2]) == *key).copied().collect();
            assert_eq!(got.len(), want.len(), "round {round}: {key:?} once each");
            assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want, "round {round}: {key:?}");
            if let Some(c) = count {
                assert_eq!(c as usize, want.len(), "round {round}: {key:?} counted");
            }
        }
        assert!(counted > 0 && read > 0, "round {round}: {counted} keys counted, {read} read");
        keys.reverse();
    }
    let after = store.snapshot().unwrap();
    compare_sampled(&after, &model, &mut rng, "after the merge");
}

/// The quads a transaction sees (its snapshot with its own inserts and
/// removals) in every pattern, against the model: on segments a
/// transaction keeps its quads as tuples of ids and reads them back as
/// the orderings' keys (`rhizome_kv::TupleLayout`), on keys as overlay
/// keys.
fn compare_in_transaction(txn: &rhizome_rdf::StoreTransaction<'_>, model: &BTreeSet<ModelQuad>, rng: &mut Rng, context: &str) {
    let ids = |q: ModelQuad| {
        let quad = as_quad(q);
        let GraphName::NamedNode(g) = &quad.graph_name else { unreachable!() };
        Some([txn.lookup(quad.subject.as_ref().into()).unwrap()?, txn.lookup(quad.predicate.as_ref().into()).unwrap()?, txn.lookup(quad.object.as_ref()).unwrap()?, txn.lookup(g.as_ref().into()).unwrap()?])
    };
    let model_ids: BTreeSet<[TermId; 4]> = model.iter().map(|q| ids(*q).expect("a quad of the model has ids")).collect();
    let all: BTreeSet<[TermId; 4]> = txn.scan(QuadPattern::default()).map(|q| q.unwrap()).collect();
    assert_eq!(all, model_ids, "{context}: the whole store in the transaction");
    // Probes: some of the model's quads and some random ones (absent or not).
    let mut probes: Vec<[TermId; 4]> = model_ids.iter().copied().filter(|_| rng.below(4) == 0).take(12).collect();
    probes.extend((0..4).filter_map(|_| ids(random_quad(rng))));
    for probe in &probes {
        for mask in 1..16u8 {
            let pick = |i: usize| (mask & (1 << i) != 0).then_some(probe[i]);
            let pattern = QuadPattern { s: pick(0), p: pick(1), o: pick(2), g: pick(3) };
            let got: Vec<[TermId; 4]> = txn.scan(pattern).map(|q| q.unwrap()).collect();
            let want: BTreeSet<[TermId; 4]> = model_ids.iter().filter(|c| (0..4).all(|i| mask & (1 << i) == 0 || c[i] == probe[i])).copied().collect();
            assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), want, "{context}: pattern {pattern:?} in the transaction");
            assert_eq!(got.len(), want.len(), "{context}: a quad twice for {pattern:?} in the transaction");
        }
    }
}

/// Each predicate's quads, distinct subjects and distinct objects, and
/// the graph counter, exact after transactions alone (no loads).
fn compare_distinct_counts(store: &Store, model: &BTreeSet<ModelQuad>, context: &str) {
    let stats = store.stats().unwrap();
    let graphs: BTreeSet<NamedNode> = model.iter().map(|q| if q.3 == 0 { iri("s", q.0) } else { iri("g", q.3) }).collect();
    assert_eq!(stats.graphs, graphs.len() as u64, "{context}: the graph counter");
    let snapshot = store.snapshot().unwrap();
    for p in 0..PREDICATES {
        let of_p: Vec<&ModelQuad> = model.iter().filter(|q| q.1 == p).collect();
        let subjects: BTreeSet<u64> = of_p.iter().map(|q| q.0).collect();
        let objects: BTreeSet<u64> = of_p.iter().map(|q| q.2).collect();
        let got = snapshot.lookup(iri("p", p).as_ref().into()).unwrap().and_then(|pid| stats.predicates.iter().find(|s| s.predicate == pid));
        let got = got.map_or((0, 0, 0), |s| (s.quads, s.distinct_subjects, s.distinct_objects));
        assert_eq!(got, (of_p.len() as u64, subjects.len() as u64, objects.len() as u64), "{context}: predicate {p}'s quads, distinct subjects and objects");
    }
}

fn run_transactions(kind: Kind, seed: u64, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&kind, dir.path());
    let mut rng = Rng(seed);
    let mut model: BTreeSet<ModelQuad> = BTreeSet::new();
    for step in 0..steps {
        let context = format!("seed {seed}, step {step}");
        let commit = rng.below(6) != 0;
        let mut txn = store.transaction().unwrap();
        let mut next = model.clone();
        for op in 0..1 + rng.below(16) {
            match rng.below(12) {
                0 => {
                    // A whole graph dropped within the transaction, with
                    // writes before and after it.
                    let g = rng.below(GRAPHS) + 1;
                    if let Some(id) = txn.lookup(iri("g", g).as_ref().into()).unwrap() {
                        txn.drop_graph(id).unwrap();
                        next.retain(|q| q.3 != g);
                    }
                }
                n => {
                    let q = if n < 5 && !next.is_empty() { *next.iter().nth(rng.below(next.len() as u64) as usize).unwrap() } else { random_quad(&mut rng) };
                    let ids = txn.encode_quad(as_quad(q).as_ref()).unwrap();
                    if n < 5 {
                        assert_eq!(txn.remove(&ids).unwrap(), next.remove(&q), "{context}: remove");
                    } else {
                        assert_eq!(txn.insert(&ids).unwrap(), next.insert(q), "{context}: insert");
                    }
                }
            }
            if rng.below(4) == 0 {
                compare_in_transaction(&txn, &next, &mut rng, &format!("{context}, op {op}"));
            }
        }
        if commit {
            txn.commit().unwrap();
            model = next;
        } else {
            drop(txn);
        }
        if step % 7 == 0 {
            merged_or_not(&store);
        }
        compare(&store.snapshot().unwrap(), &model, &context);
        compare_distinct_counts(&store, &model, &context);
    }
}

fn merged_or_not(store: &Store) {
    if store.segments().is_some() {
        store.merge().unwrap();
    }
}

#[test]
fn a_transaction_sees_its_own_writes_in_every_pattern_on_segments() {
    for seed in [3, 0x1234_5678, 77] {
        run_transactions(Kind::Memory, seed, 120);
    }
}

#[test]
fn a_transaction_sees_its_own_writes_in_every_pattern_on_keys() {
    for seed in [3, 0x1234_5678] {
        run_transactions(Kind::Keys, seed, 80);
    }
}

/// Not a check but a measurement: what reading a store's terms into the
/// dictionary's filter costs at open, and the filter's memory. Run with
/// `RHIZOME_FILTER_STORE=PATH` (a loaded store) and `--ignored --nocapture`.
#[test]
#[ignore]
fn term_filter_fill_cost() {
    let Ok(path) = std::env::var("RHIZOME_FILTER_STORE") else { return };
    on_segments();
    let path = std::path::Path::new(&path);
    let quiet = MergeSettings { background: false, ..MergeSettings::default() };
    for round in 0..2 {
        let started = std::time::Instant::now();
        let store = Store::open_read_only(path).unwrap();
        let read_only = started.elapsed();
        drop(store);
        let started = std::time::Instant::now();
        let store = Store::open_or_create_with(path, None, quiet.clone()).unwrap();
        let filled = started.elapsed();
        let (complete, bytes) = store.segments().unwrap().term_filter_state();
        assert!(complete);
        println!("round {round}: open read-only (no filter) {read_only:?}; open filling the filter {filled:?}; filter {bytes} bytes");
    }
}

/// Quads whose POS and OSP subject columns rise by small steps within each
/// (predicate, object) run, the shape the `DELTA` column kind is chosen
/// for: many subjects, two predicates, three objects, one graph.
fn rising_quad(rng: &mut Rng) -> ModelQuad {
    (rng.below(6_000), rng.below(2), rng.below(3) * 3, 1)
}

/// The ids of a model quad as `snapshot` knows them.
fn quad_ids(snapshot: &StoreSnapshot, q: ModelQuad) -> [TermId; 4] {
    let quad = as_quad(q);
    let GraphName::NamedNode(g) = &quad.graph_name else { unreachable!() };
    let id = |t: oxrdf::TermRef<'_>| snapshot.lookup(t).unwrap().expect("a model term has an id");
    [id(quad.subject.as_ref().into()), id(quad.predicate.as_ref().into()), id(quad.object.as_ref()), id(g.as_ref().into())]
}

/// The whole store, and every pattern of a sample of probes, against the
/// model (the full `compare` is too slow for thousands of quads).
fn compare_sampled(snapshot: &StoreSnapshot, model: &BTreeSet<ModelQuad>, rng: &mut Rng, context: &str) {
    let model_ids: BTreeSet<[TermId; 4]> = model.iter().map(|q| quad_ids(snapshot, *q)).collect();
    let all: Vec<[TermId; 4]> = snapshot.scan(QuadPattern::default()).map(|q| q.unwrap()).collect();
    assert_eq!(all.len(), model_ids.len(), "{context}: a quad twice or missing");
    assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), model_ids, "{context}: the whole store");
    let listed: Vec<[TermId; 4]> = model_ids.iter().copied().collect();
    for _ in 0..24 {
        // Probes from the model, and from subjects that may be absent.
        let mut probe = listed[rng.below(listed.len() as u64) as usize];
        if rng.below(3) == 0 {
            probe[0] = listed[rng.below(listed.len() as u64) as usize][0];
        }
        for mask in 1..16u8 {
            let pick = |i: usize| (mask & (1 << i) != 0).then_some(probe[i]);
            let pattern = QuadPattern { s: pick(0), p: pick(1), o: pick(2), g: pick(3) };
            let got: Vec<[TermId; 4]> = snapshot.scan(pattern).map(|q| q.unwrap()).collect();
            let mut batch_rng = Rng(0x5eed ^ (probe[0].0 << 4) ^ u64::from(mask));
            assert_eq!(batched(snapshot.scan(pattern), &mut batch_rng), got, "{context}: pattern {pattern:?} in batches");
            let want: Vec<[TermId; 4]> = model_ids.iter().filter(|c| (0..4).all(|i| mask & (1 << i) == 0 || c[i] == probe[i])).copied().collect();
            assert_eq!(got.len(), want.len(), "{context}: pattern {pattern:?}");
            assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want.into_iter().collect::<BTreeSet<_>>(), "{context}: pattern {pattern:?}");
        }
    }
}

fn delta_columns(store: &Store) -> usize {
    let report = store.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    report.segment_columns.iter().filter(|c| c.2 == "delta").map(|c| c.3).sum()
}

/// Segments whose subject columns are `DELTA` (steps from checkpoints),
/// written by a load and by merges, read through the delta's additions
/// and removals, as the model says, in memory and on disk across reopens.
fn run_rising(kind: Kind, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&kind, dir.path());
    let mut rng = Rng(seed);
    let first: Vec<ModelQuad> = (0..4_000).map(|_| rising_quad(&mut rng)).collect();
    load(&store, dir.path(), &first, true);
    store.merge().unwrap();
    let mut model: BTreeSet<ModelQuad> = first.into_iter().collect();
    assert!(delta_columns(&store) > 0, "seed {seed}: the load wrote no DELTA column");
    for step in 0..24 {
        let context = format!("seed {seed}, step {step}");
        let mut txn = store.transaction().unwrap();
        for _ in 0..1 + rng.below(60) {
            let q = if rng.below(2) == 0 { *model.iter().nth(rng.below(model.len() as u64) as usize).unwrap() } else { rising_quad(&mut rng) };
            let ids = txn.encode_quad(as_quad(q).as_ref()).unwrap();
            if rng.below(2) == 0 {
                assert_eq!(txn.remove(&ids).unwrap(), model.remove(&q), "{context}: remove");
            } else {
                assert_eq!(txn.insert(&ids).unwrap(), model.insert(q), "{context}: insert");
            }
        }
        txn.commit().unwrap();
        if step % 4 == 3 {
            store.merge().unwrap();
        }
        if step % 8 == 7 && matches!(kind, Kind::Disk) {
            drop(store);
            store = open(&kind, dir.path());
        }
        compare_sampled(&store.snapshot().unwrap(), &model, &mut rng, &context);
    }
    store.merge().unwrap();
    compare_sampled(&store.snapshot().unwrap(), &model, &mut rng, &format!("seed {seed}, merged"));
    assert!(delta_columns(&store) > 0, "seed {seed}: no DELTA column after the merges");
}

#[test]
fn delta_columns_answer_every_pattern_as_the_model_does_across_writes_and_merges() {
    for seed in 1..=2 {
        run_rising(Kind::Memory, seed * 6_151);
    }
}

#[cfg(feature = "rocksdb")]
#[test]
fn delta_columns_on_disk_answer_as_the_model_does_across_merges_and_reopens() {
    run_rising(Kind::Disk, 92_821);
}
