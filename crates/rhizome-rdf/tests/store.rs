//! Black-box tests of the store: loads, scans, dumps, counters, bad input.

use oxrdf::{Dataset, GraphName, Quad, Term};
use oxrdfio::{RdfFormat, RdfParser};
use rhizome_rdf::{dump, DatasetMode, DumpOptions, LoadInput, LoadOptions, QuadPattern, Store, TermId};
use std::collections::BTreeSet;
use std::io::Write;

const TRIG: &str = r#"
@prefix : <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:alice :knows :bob ; :age 42 ; :name "Alice"@en, "Alice" ; :height "1.70"^^xsd:decimal .
:bob :knows :alice, :carol ; :age "042"^^xsd:integer ; :born "1990-02-03"^^xsd:date .
:carol :knows [ :name "anonymous friend with a long name" ; :knows [ :name "a friend's friend" ] ] ; :lists ( 1 [ :name "in a list" ] ) .
:g1 { :alice :likes :bob . :dave :knows :alice . :g1 :about :alice }
:g2 { :bob :likes :carol ; :score 3.5 ; :ok true . }
"#;

fn write_file(dir: &std::path::Path, name: &str, content: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().write_all(content).unwrap();
    path
}

fn load_str(store: &Store, dir: &std::path::Path, name: &str, content: &str, options: &LoadOptions) -> rhizome_rdf::Result<rhizome_rdf::LoadSummary> {
    let path = write_file(dir, name, content.as_bytes());
    store.load(&[LoadInput { path }], options)
}

fn all_quads(store: &Store) -> Vec<Quad> {
    let snapshot = store.snapshot().unwrap();
    let mut cache = rhizome_rdf::DecodeCache::new(&snapshot);
    snapshot.scan(QuadPattern::default()).map(|q| cache.quad(&q.unwrap()).unwrap()).collect()
}

/// The expected quads: triples without a graph go to their subject's graph
/// in union mode, a blank node's to the graph of the IRI that references it.
fn expected(mode: DatasetMode) -> Vec<Quad> {
    let quads: Vec<Quad> = RdfParser::from_format(RdfFormat::TriG).for_slice(TRIG.as_bytes()).map(|q| q.unwrap()).collect();
    let referrer = |b: &oxrdf::BlankNode| {
        quads
            .iter()
            .find(|r| r.graph_name.is_default_graph() && r.object == Term::BlankNode(b.clone()))
            .map(|r| r.subject.clone())
            .expect("every blank node of TRIG is referenced")
    };
    quads
        .iter()
        .cloned()
        .map(|mut q| {
            if q.graph_name.is_default_graph() && mode == DatasetMode::Union {
                let mut owner = q.subject.clone();
                while let oxrdf::NamedOrBlankNode::BlankNode(b) = &owner {
                    owner = referrer(b);
                }
                q.graph_name = match owner {
                    oxrdf::NamedOrBlankNode::NamedNode(n) => GraphName::NamedNode(n),
                    oxrdf::NamedOrBlankNode::BlankNode(_) => unreachable!(),
                };
            }
            q
        })
        .collect()
}

fn canonical(quads: impl IntoIterator<Item = Quad>) -> Dataset {
    let mut d: Dataset = quads.into_iter().collect();
    d.canonicalize(oxrdf::dataset::CanonicalizationAlgorithm::Unstable);
    d
}

fn stores() -> Vec<(Store, tempfile::TempDir)> {
    let mut out = Vec::new();
    for mode in [DatasetMode::Union, DatasetMode::Plain] {
        out.push((Store::memory(mode), tempfile::tempdir().unwrap()));
        #[cfg(feature = "rocksdb")]
        {
            let dir = tempfile::tempdir().unwrap();
            out.push((Store::open_or_create(&dir.path().join("db"), Some(mode)).unwrap(), dir));
        }
    }
    out
}

#[test]
fn load_then_scan_everything_gives_back_the_dataset() {
    for (store, dir) in stores() {
        let summary = load_str(&store, dir.path(), "data.trig", TRIG, &LoadOptions::default()).unwrap();
        let expected = expected(store.mode());
        assert_eq!(summary.quads_added as usize, expected.len());
        assert_eq!(canonical(all_quads(&store)), canonical(expected));
        let stats = store.stats().unwrap();
        assert_eq!(stats.quads as usize, summary.quads_added as usize);
    }
}

#[test]
fn every_pattern_answers_exactly_like_filtering_all_quads() {
    for (store, dir) in stores() {
        load_str(&store, dir.path(), "data.trig", TRIG, &LoadOptions::default()).unwrap();
        let snapshot = store.snapshot().unwrap();
        let ids: Vec<[TermId; 4]> = snapshot.scan(QuadPattern::default()).map(|q| q.unwrap()).collect();
        // Every combination of bound positions, with values taken from
        // real quads, plus a value that matches nothing.
        for q in ids.iter().chain([&[TermId(12345), TermId(12345), TermId(12345), TermId(12345)]]) {
            for mask in 0..16u8 {
                let pick = |i: usize| (mask & (1 << i) != 0).then_some(q[i]);
                let pattern = QuadPattern { s: pick(0), p: pick(1), o: pick(2), g: pick(3) };
                let got: Vec<[TermId; 4]> = snapshot.scan(pattern).map(|r| r.unwrap()).collect();
                let want: BTreeSet<[TermId; 4]> = ids
                    .iter()
                    .filter(|c| (0..4).all(|i| mask & (1 << i) == 0 || c[i] == q[i]))
                    .copied()
                    .collect();
                assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), want, "pattern {pattern:?}");
                assert_eq!(got.len(), want.len(), "no duplicates for {pattern:?}");
            }
        }
    }
}

#[test]
fn non_canonical_literals_round_trip_exactly() {
    let nt = "<http://e/s> <http://e/p> \"01\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n\
              <http://e/s> <http://e/p> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n\
              <http://e/s> <http://e/p> \"1.50\"^^<http://www.w3.org/2001/XMLSchema#decimal> .\n\
              <http://e/s> <http://e/p> \"2005-09-19+00:00\"^^<http://www.w3.org/2001/XMLSchema#date> .\n\
              <http://e/s> <http://e/p> \"2005-09-19Z\"^^<http://www.w3.org/2001/XMLSchema#date> .\n\
              <http://e/s> <http://e/p> \"a longer plain string\" .\n\
              <http://e/s> <http://e/p> \"short\" .\n\
              <http://e/s> <http://e/p> \"1e3\"^^<http://www.w3.org/2001/XMLSchema#double> .\n";
    let store = Store::memory(DatasetMode::Plain);
    let dir = tempfile::tempdir().unwrap();
    let summary = load_str(&store, dir.path(), "x.nt", nt, &LoadOptions::default()).unwrap();
    assert_eq!(summary.quads_added, 8);
    let mut out = Vec::new();
    dump(&store.snapshot().unwrap(), &DumpOptions { format: RdfFormat::NTriples, graph: None }, &mut out).unwrap();
    let got: BTreeSet<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
    let want: BTreeSet<&str> = nt.lines().collect();
    assert_eq!(got, want);
}

#[test]
fn a_syntax_error_names_file_line_and_column_and_loads_nothing() {
    for (store, dir) in stores() {
        load_str(&store, dir.path(), "ok.nt", "<http://e/a> <http://e/p> <http://e/b> .\n", &LoadOptions::default()).unwrap();
        let before = store.stats().unwrap().quads;
        let bad = "<http://e/c> <http://e/p> <http://e/d> .\n<http://e/c> <http://e/p> \"unterminated .\n<http://e/x> <http://e/p> <http://e/y> .\n";
        let err = load_str(&store, dir.path(), "bad.nt", bad, &LoadOptions::default()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("bad.nt:2:"), "{msg}");
        assert_eq!(store.stats().unwrap().quads, before);
        assert_eq!(all_quads(&store).len() as u64, before);
    }
}

#[test]
fn lenient_skips_bad_statements_and_reports_them() {
    let store = Store::memory(DatasetMode::Union);
    let dir = tempfile::tempdir().unwrap();
    let bad = "<http://e/c> <http://e/p> <http://e/d> .\nthis is not rdf\n<http://e/x> <http://e/p> <http://e/y> .\n<http://e/x> <http://e/p> .\n";
    let options = LoadOptions { lenient: true, ..Default::default() };
    let summary = load_str(&store, dir.path(), "bad.nt", bad, &options).unwrap();
    assert_eq!(summary.quads_added, 2);
    assert_eq!(summary.skipped, 2);
    assert_eq!(summary.skipped_examples[0].line, 2);
    assert_eq!(summary.skipped_examples[1].line, 4);
}

#[test]
fn a_second_load_counts_only_new_quads_and_terms() {
    for (store, dir) in stores() {
        let a = "<http://e/a> <http://e/p> <http://e/b> .\n<http://e/a> <http://e/q> \"v\" .\n";
        let b = "<http://e/a> <http://e/p> <http://e/b> .\n<http://e/b> <http://e/p> <http://e/c> .\n";
        let s1 = load_str(&store, dir.path(), "a.nt", a, &LoadOptions::default()).unwrap();
        assert_eq!((s1.quads_added, s1.terms_added), (2, 4));
        let s2 = load_str(&store, dir.path(), "b.nt", b, &LoadOptions::default()).unwrap();
        assert_eq!((s2.quads_added, s2.terms_added), (1, 1));
        let stats = store.stats().unwrap();
        assert_eq!((stats.quads, stats.terms), (3, 5));
        store.compact().unwrap();
        let stats = store.stats().unwrap();
        assert_eq!((stats.quads, stats.terms), (3, 5));
        let graphs = if store.mode() == DatasetMode::Union { 2 } else { 1 };
        assert_eq!(stats.graphs, graphs);
    }
}

#[test]
fn spilled_runs_give_the_same_store_as_one_run() {
    let mut nt = String::new();
    for i in 0..3000 {
        nt.push_str(&format!("<http://e/s{}> <http://e/p{}> \"{}\" .\n", i % 97, i % 7, i % 1013));
    }
    let dir = tempfile::tempdir().unwrap();
    let one = Store::open_or_create(&dir.path().join("one"), None).unwrap();
    let many = Store::open_or_create(&dir.path().join("many"), None).unwrap();
    let s1 = load_str(&one, dir.path(), "x.nt", &nt, &LoadOptions::default()).unwrap();
    let s2 = load_str(&many, dir.path(), "x.nt", &nt, &LoadOptions { run_buffer_bytes: 4096, ..Default::default() }).unwrap();
    assert_eq!(s1.quads_added, s2.quads_added);
    assert_eq!(canonical(all_quads(&one)), canonical(all_quads(&many)));
    // By term: the one run numbers its subjects first, the spilled load
    // keeps the order met (`load/renumber.rs`), so the ids differ.
    let by_term = |store: &Store| {
        let mut stats: Vec<(Term, u64, u64, u64)> = store
            .stats()
            .unwrap()
            .predicates
            .into_iter()
            .map(|p| (store.snapshot().unwrap().decode(p.predicate).unwrap().unwrap(), p.quads, p.distinct_subjects, p.distinct_objects))
            .collect();
        stats.sort_by_key(|s| s.0.to_string());
        stats
    };
    assert_eq!(by_term(&one), by_term(&many));
}

#[test]
fn gzip_and_several_files_load_together() {
    let dir = tempfile::tempdir().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"<http://e/a> <http://e/p> <http://e/b> .\n").unwrap();
    let a = write_file(dir.path(), "a.nt.gz", &gz.finish().unwrap());
    let b = write_file(dir.path(), "b.ttl", b"@prefix e: <http://e/> . e:b e:p e:c .");
    let store = Store::memory(DatasetMode::Union);
    let s = store.load(&[LoadInput { path: a }, LoadInput { path: b }], &LoadOptions::default()).unwrap();
    assert_eq!(s.quads_added, 2);
}

#[test]
fn missing_file_and_unknown_extension_are_clear_errors() {
    let store = Store::memory(DatasetMode::Union);
    let err = store.load(&[LoadInput { path: "/nonexistent/file.nt".into() }], &LoadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/file.nt"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "data.weird", b"");
    let err = store.load(&[LoadInput { path: p }], &LoadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("--format"), "{err}");
}

#[test]
fn transactions_insert_and_remove_with_true_counters() {
    for (store, _dir) in stores() {
        let q = |s: &str, o: &str, g: Option<&str>| {
            let term = |x: &str| oxrdf::NamedNode::new(format!("http://e/{x}")).unwrap();
            Quad::new(term(s), term("p"), Term::from(term(o)), g.map_or(GraphName::DefaultGraph, |g| term(g).into()))
        };
        let quads = [q("a", "b", None), q("a", "c", Some("g")), q("b", "c", Some("b"))];
        let mut txn = store.transaction().unwrap();
        for quad in &quads {
            let ids = txn.encode_quad(quad.as_ref()).unwrap();
            assert!(txn.insert(&ids).unwrap());
            assert!(!txn.insert(&ids).unwrap());
        }
        drop(txn); // not committed: nothing happened
        assert_eq!(store.stats().unwrap().quads, 0);
        assert!(all_quads(&store).is_empty());
        let mut txn = store.transaction().unwrap();
        let mut ids = Vec::new();
        for quad in &quads {
            let i = txn.encode_quad(quad.as_ref()).unwrap();
            txn.insert(&i).unwrap();
            ids.push(i);
        }
        txn.commit().unwrap();
        assert_eq!(store.stats().unwrap().quads, 3);
        let mut txn = store.transaction().unwrap();
        assert!(txn.remove(&ids[0]).unwrap());
        assert!(!txn.remove(&ids[0]).unwrap());
        txn.commit().unwrap();
        let stats = store.stats().unwrap();
        store.compact().unwrap();
        let exact = store.stats().unwrap();
        assert_eq!((stats.quads, stats.graphs, stats.terms), (exact.quads, exact.graphs, exact.terms));
        assert_eq!(stats.quads, 2);
    }
}

/// A graph named by a term new in its transaction is counted once however
/// the transaction comes to it: filled at once, created empty and then
/// filled, created, dropped and filled, and so on.
#[test]
fn graphs_of_new_terms_are_counted_once() {
    for (store, _dir) in stores() {
        let term = |x: &str| oxrdf::NamedNode::new(format!("http://e/{x}")).unwrap();
        let plans: [&[&str]; 4] = [&[], &["create"], &["create", "drop"], &["create", "drop", "create"]];
        let mut txn = store.transaction().unwrap();
        for (k, plan) in plans.iter().enumerate() {
            let g = term(&format!("g{k}"));
            let id = txn.encode(oxrdf::TermRef::NamedNode(g.as_ref())).unwrap();
            for step in *plan {
                if *step == "create" {
                    assert!(txn.create_graph(id).unwrap());
                } else {
                    txn.drop_graph(id).unwrap();
                }
            }
            let ids = txn.encode_quad(Quad::new(term("s"), term("p"), Term::from(term("o")), g).as_ref()).unwrap();
            assert!(txn.insert(&ids).unwrap());
        }
        txn.commit().unwrap();
        let kept = store.stats().unwrap();
        store.compact().unwrap();
        let exact = store.stats().unwrap();
        assert_eq!((kept.quads, kept.graphs), (exact.quads, exact.graphs), "{:?}", store.mode());
        assert_eq!(exact.quads, 4);
    }
}

#[test]
fn a_store_reopens_with_its_data_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let store = Store::open_or_create(&path, Some(DatasetMode::Plain)).unwrap();
        load_str(&store, dir.path(), "d.trig", TRIG, &LoadOptions::default()).unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.mode(), DatasetMode::Plain);
    assert_eq!(canonical(all_quads(&store)), canonical(expected(DatasetMode::Plain)));
    assert!(Store::open_or_create(&path, Some(DatasetMode::Union)).is_err());
    assert!(Store::open(&dir.path().join("nothing-here")).is_err());
}

/// Index nested loops re-point one reusable scan from lookup to lookup,
/// stepping forward instead of seeking when the next key is close. In any
/// order of lookups (ascending, descending, repeated, missing), read whole
/// or abandoned part way, each must give what a fresh scan gives.
#[test]
fn a_reusable_scan_re_pointed_in_any_order_gives_what_a_fresh_scan_gives() {
    let mut data = String::new();
    let mut x: u64 = 7;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for s in 0..300 {
        for _ in 0..next(6) {
            let (p, o) = (next(4), next(40));
            let graph = if next(5) == 0 { format!(" <http://ex/g{}>", next(3)) } else { String::new() };
            data.push_str(&format!("<http://ex/s{s}> <http://ex/p{p}> <http://ex/s{o}>{graph} .\n"));
        }
    }
    for (store, dir) in stores() {
        load_str(&store, dir.path(), "data.nq", &data, &LoadOptions::default()).unwrap();
        let snapshot = store.snapshot().unwrap();
        let kv: &dyn rhizome_kv::KvRead = snapshot.kv();
        let families = rhizome_rdf::index::families_present(kv).unwrap();
        let all: Vec<[TermId; 4]> = snapshot.scan(QuadPattern::default()).map(|q| q.unwrap()).collect();
        let mut subjects: Vec<TermId> = all.iter().map(|q| q[0]).collect();
        subjects.dedup();
        let objects: BTreeSet<TermId> = all.iter().map(|q| q[2]).collect();
        let objects: Vec<TermId> = objects.into_iter().collect();
        let predicate = all[0][1];
        let mut scan: Option<rhizome_rdf::QuadScan<'_>> = None;
        for round in 0..3000u64 {
            let pick = |list: &[TermId], n: u64| list[(n as usize) % list.len()];
            // Mostly ascending neighbours (what a sorted left side gives),
            // sometimes a jump back, a repeat or an id no quad has.
            let i = match next(10) {
                0 => next(1000),
                1 => round.saturating_sub(1),
                _ => round,
            };
            let pattern = match next(4) {
                0 => QuadPattern { s: Some(pick(&subjects, i)), ..Default::default() },
                1 => QuadPattern { p: Some(predicate), o: Some(pick(&objects, i)), ..Default::default() },
                2 => QuadPattern { o: Some(pick(&objects, i)), ..Default::default() },
                _ => QuadPattern { s: Some(TermId(u64::from(u32::MAX) + i)), ..Default::default() },
            };
            let fresh: Vec<[TermId; 4]> = snapshot.scan(pattern).map(|q| q.unwrap()).collect();
            if !scan.as_mut().is_some_and(|s| s.rebind(pattern)) {
                scan = Some(rhizome_rdf::QuadScan::reusable(kv, pattern, families));
            }
            let reused = scan.as_mut().expect("a scan");
            // Read whole, or only the first few quads.
            let take = if next(3) == 0 { next(3) as usize } else { usize::MAX };
            let got: Vec<[TermId; 4]> = reused.by_ref().take(take).map(|q| q.unwrap()).collect();
            assert_eq!(got, fresh.iter().copied().take(take).collect::<Vec<_>>(), "round {round}: {pattern:?} in {:?}", store.mode());
        }
    }
}

/// A snapshot's index families (which a query trusts instead of seeking
/// for them) cover every quad it holds: whichever family the first quads
/// went to, later writes and loads into the other family are marked
/// before they are visible, and a reopened store starts from what it holds.
#[test]
fn a_snapshot_knows_every_family_its_quads_are_in_after_writes_loads_and_reopening() {
    let subject_graph = "<http://ex/a> <http://ex/p> <http://ex/b> <http://ex/a> .\n";
    let named_graph = "<http://ex/c> <http://ex/p> <http://ex/d> <http://ex/g> .\n";
    for (first, second) in [(subject_graph, named_graph), (named_graph, subject_graph)] {
        for (store, dir) in stores() {
            let families = |store: &Store| store.snapshot().unwrap().families();
            let present = |store: &Store| rhizome_rdf::index::families_present(store.snapshot().unwrap().kv()).unwrap();
            assert_eq!(families(&store), present(&store), "empty store");
            load_str(&store, dir.path(), "first.nq", first, &LoadOptions::default()).unwrap();
            let after_load = families(&store);
            assert!(after_load.triples >= present(&store).triples && after_load.quads >= present(&store).quads);
            // A write through a transaction into the other family.
            let mut txn = store.transaction().unwrap();
            for q in RdfParser::from_format(RdfFormat::NQuads).for_slice(second.as_bytes()) {
                let quad = txn.encode_quad(q.unwrap().as_ref()).unwrap();
                txn.insert(&quad).unwrap();
            }
            txn.commit().unwrap();
            let (marked, held) = (families(&store), present(&store));
            assert!(held.triples && held.quads, "both families hold quads now");
            assert!(marked.triples && marked.quads, "a snapshot after the write must know both: {marked:?}");
            // Every quad is found through the snapshot's own scans, which
            // read only the families it knows of.
            assert_eq!(all_quads(&store).len(), 2);
            let snapshot = store.snapshot().unwrap();
            let ids: Vec<TermId> = ["http://ex/a", "http://ex/c"]
                .iter()
                .map(|s| snapshot.lookup(oxrdf::NamedNodeRef::new_unchecked(s).into()).unwrap().unwrap())
                .collect();
            for id in &ids {
                assert_eq!(snapshot.scan(QuadPattern { s: Some(*id), ..Default::default() }).count(), 1);
            }
            let first_subject = *ids.iter().min().unwrap();
            assert_eq!(snapshot.scan_from_subject(first_subject).count(), 2);
            drop(snapshot);
            if let Some(path) = store.path().map(|p| p.to_owned()) {
                drop(store);
                let reopened = Store::open(&path).unwrap();
                assert_eq!(families(&reopened), present(&reopened), "reopened");
            }
        }
    }
}

/// Short terms are found by their own bytes in the dictionary, long ones
/// by their hash; either way every term added by a load into an empty
/// store, a load into a store that has terms, or a transaction is found
/// again, decodes to itself, keeps one id, and nothing absent is found,
/// however long a prefix it shares with a stored term.
#[test]
fn every_term_is_found_again_whether_keyed_by_its_bytes_or_by_its_hash() {
    let limit = rhizome_rdf::term::KEYED_BY_BYTES;
    let iri = |len: usize| format!("http://ex/{}", "i".repeat(len - "http://ex/".len()));
    let text = |len: usize, tail: char| format!("{}{tail}", "t".repeat(len - 1));
    let terms: Vec<Term> = vec![
        oxrdf::NamedNode::new_unchecked(iri(limit - 1)).into(),
        oxrdf::NamedNode::new_unchecked(iri(limit)).into(),
        oxrdf::NamedNode::new_unchecked(iri(limit + 1)).into(),
        oxrdf::NamedNode::new_unchecked(iri(3 * limit)).into(),
        oxrdf::Literal::new_simple_literal(text(2 * limit, 'x')).into(),
        oxrdf::Literal::new_simple_literal(text(2 * limit, 'y')).into(),
        oxrdf::Literal::new_language_tagged_literal_unchecked(text(limit, 'z'), "en").into(),
        oxrdf::Literal::new_typed_literal(text(limit + 2, 'w'), oxrdf::NamedNode::new_unchecked("http://ex/type")).into(),
        oxrdf::Literal::new_simple_literal("short text, longer than seven bytes").into(),
    ];
    let line = |i: usize, o: &Term| format!("<http://ex/s{i}> <http://ex/p> {o} .\n");
    let (first, second) = terms.split_at(3);
    for (store, dir) in stores() {
        // Into an empty store, then into one that has terms (one term of
        // the first load again), then through a transaction.
        let text1: String = first.iter().enumerate().map(|(i, t)| line(i, t)).collect();
        load_str(&store, dir.path(), "first.nt", &text1, &LoadOptions::default()).unwrap();
        let mut text2: String = second[..3].iter().enumerate().map(|(i, t)| line(10 + i, t)).collect();
        text2 += &line(20, &first[0]);
        let summary = load_str(&store, dir.path(), "second.nt", &text2, &LoadOptions::default()).unwrap();
        assert_eq!(summary.terms_added, 3 + 4, "three objects and four subjects are new; the repeated term is not");
        let mut txn = store.transaction().unwrap();
        let s = txn.encode(oxrdf::NamedNode::new_unchecked("http://ex/s30").as_ref().into()).unwrap();
        let p = txn.encode(oxrdf::NamedNode::new_unchecked("http://ex/p").as_ref().into()).unwrap();
        for t in &second[3..] {
            let o = txn.encode(t.as_ref()).unwrap();
            assert_eq!(txn.encode(t.as_ref()).unwrap(), o, "a transaction finds its own new terms");
            txn.insert(&[s, p, o, s]).unwrap();
        }
        txn.commit().unwrap();
        let snapshot = store.snapshot().unwrap();
        let mut ids = BTreeSet::new();
        for t in &terms {
            let id = snapshot.lookup(t.as_ref()).unwrap().unwrap_or_else(|| panic!("{t} is not found"));
            assert_eq!(snapshot.decode(id).unwrap().as_ref(), Some(t));
            assert!(ids.insert(id), "{t} shares an id");
        }
        let absent: Vec<Term> = vec![
            oxrdf::NamedNode::new_unchecked(iri(limit + 2)).into(),
            oxrdf::NamedNode::new_unchecked(format!("{}j", iri(3 * limit))).into(),
            oxrdf::Literal::new_simple_literal(text(2 * limit, 'v')).into(),
            oxrdf::Literal::new_language_tagged_literal_unchecked(text(limit, 'z'), "fr").into(),
            oxrdf::NamedNode::new_unchecked("http://ex/p2").into(),
        ];
        for t in &absent {
            assert_eq!(snapshot.lookup(t.as_ref()).unwrap(), None, "{t} is not stored");
        }
    }
}

/// A store of another on-disk format (here a newer one) is refused with
/// the formats named, never read with the wrong layout.
#[cfg(feature = "rocksdb")]
#[test]
fn a_store_of_another_format_is_refused_with_both_formats_named() {
    use rhizome_rdf::index::layout::{meta, FORMAT_VERSION, KEYS_FORMAT_VERSION, META};
    // The format this build writes: segments, or indexes as keys when the
    // suite runs on the key-value path.
    let current = if std::env::var("RHIZOME_INDEXES").is_ok_and(|v| v == "keys") { KEYS_FORMAT_VERSION } else { FORMAT_VERSION };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let store = Store::open_or_create(&path, None).unwrap();
        let mut txn = store.transaction().unwrap();
        txn.kv_mut().put(META, meta::FORMAT_VERSION, &(FORMAT_VERSION + 1).to_be_bytes());
        txn.commit().unwrap();
    }
    for opened in [Store::open(&path), Store::open_read_only(&path)] {
        match opened {
            Err(rhizome_rdf::Error::FormatVersion { found, expected }) => assert_eq!((found, expected), (FORMAT_VERSION + 1, current)),
            Err(other) => panic!("another error: {other}"),
            Ok(_) => panic!("a store of format {} was opened", FORMAT_VERSION + 1),
        }
    }
}

#[test]
fn replacing_a_graph_keeps_the_counters_exact() {
    // Drop a graph and write it again in one transaction (a Graph Store
    // PUT): new blank nodes, IRIs written again, a quad removed after its
    // insert; the counters the writes keep must match a recount.
    for (store, _dir) in stores() {
        let iri = |x: &str| oxrdf::NamedNode::new(format!("http://e/{x}")).unwrap();
        let g = iri("g");
        for round in 0..3 {
            let mut txn = store.transaction().unwrap();
            if let Some(gid) = txn.lookup(g.as_ref().into()).unwrap() {
                txn.drop_graph(gid).unwrap();
            }
            let blanks: Vec<oxrdf::BlankNode> = (0..50).map(|_| oxrdf::BlankNode::default()).collect();
            let mut last = None;
            for i in 0..49 {
                let quads = [
                    Quad::new(blanks[i].clone(), iri("p"), Term::from(blanks[i + 1].clone()), g.clone()),
                    Quad::new(iri(&format!("s{}", i % 7)), iri("q"), Term::from(iri(&format!("o{}", (i + round) % 5))), g.clone()),
                    Quad::new(blanks[i].clone(), iri("q"), Term::from(iri("o1")), g.clone()),
                ];
                for q in &quads {
                    let ids = txn.encode_quad(q.as_ref()).unwrap();
                    txn.insert(&ids).unwrap();
                    last = Some(ids);
                }
            }
            let last = last.unwrap();
            txn.remove(&last).unwrap();
            txn.insert(&last).unwrap();
            txn.remove(&last).unwrap();
            txn.commit().unwrap();
            let kept = store.stats().unwrap();
            store.compact().unwrap();
            let exact = store.stats().unwrap();
            assert_eq!((kept.quads, kept.graphs), (exact.quads, exact.graphs), "round {round}");
            assert_eq!(format!("{:?}", kept.predicates), format!("{:?}", exact.predicates), "round {round}");
        }
    }
}

/// Blank nodes read before what references them, blank nodes nothing
/// references and cycles of blank nodes, in N-Triples (parsed in parallel
/// chunks) and Turtle.
#[test]
fn blank_node_triples_join_the_graph_of_the_iri_that_references_them() {
    let nt = "_:b2 <http://e/name> \"deep\" .\n\
              _:b1 <http://e/next> _:b2 .\n\
              <http://e/s> <http://e/has> _:b1 .\n\
              _:lone <http://e/name> \"nobody's\" .\n\
              _:c1 <http://e/next> _:c2 .\n\
              _:c2 <http://e/next> _:c1 .\n";
    let graph_of = |store: &Store, name: &str| -> Vec<String> {
        let mut graphs: Vec<String> = all_quads(store)
            .into_iter()
            .filter(|q| q.object == Term::Literal(oxrdf::Literal::new_simple_literal(name)) || (name.is_empty() && q.predicate.as_str() == "http://e/next"))
            .map(|q| q.graph_name.to_string())
            .collect();
        graphs.sort();
        graphs
    };
    for (store, dir) in stores() {
        if store.mode() == DatasetMode::Plain {
            continue;
        }
        load_str(&store, dir.path(), "b.nt", nt, &LoadOptions::default()).unwrap();
        assert_eq!(graph_of(&store, "deep"), vec!["<http://e/s>"]);
        // No IRI up the chain: each stays in its own blank node's graph.
        assert!(graph_of(&store, "nobody's")[0].starts_with("_:"));
        assert!(graph_of(&store, "").iter().filter(|g| g.starts_with("_:")).count() == 2);
        assert_eq!(graph_of(&store, "").iter().filter(|g| g.as_str() == "<http://e/s>").count(), 1);
    }
    // With an orphan graph, those join it.
    let store = Store::memory(DatasetMode::Union);
    let dir = tempfile::tempdir().unwrap();
    let options = LoadOptions { orphan_graph: Some(oxrdf::NamedNode::new("http://e/default").unwrap()), ..LoadOptions::default() };
    load_str(&store, dir.path(), "b.nt", nt, &options).unwrap();
    assert_eq!(graph_of(&store, "nobody's"), vec!["<http://e/default>"]);
    assert_eq!(graph_of(&store, "deep"), vec!["<http://e/s>"]);
    assert_eq!(graph_of(&store, ""), vec!["<http://e/default>", "<http://e/default>", "<http://e/s>"]);
}

#[test]
fn class_counts_follow_loads_writes_and_removals_and_match_a_recount() {
    // Per-class counts (quads of rdf:type per object) are what the planner
    // estimates `?x a C` from: kept by bulk loads (on top of what the store
    // had) and by transactions, and equal to the recount `compact` makes.
    let mut nt = String::new();
    for i in 0..500 {
        let class = if i % 10 == 0 { "Rare" } else { "Common" };
        nt.push_str(&format!("<http://e/s{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://e/{class}> .\n"));
        nt.push_str(&format!("<http://e/s{i}> <http://e/p> \"{i}\" .\n"));
    }
    for (store, dir) in stores() {
        let count = |store: &Store, class: &str| -> u64 {
            let stats = store.stats().unwrap();
            let id = store.snapshot().unwrap().lookup(oxrdf::NamedNodeRef::new(class).unwrap().into()).unwrap();
            id.and_then(|id| stats.classes.iter().find(|(c, _)| *c == id).map(|(_, n)| *n)).unwrap_or(0)
        };
        load_str(&store, dir.path(), "x.nt", &nt, &LoadOptions::default()).unwrap();
        assert_eq!((count(&store, "http://e/Common"), count(&store, "http://e/Rare")), (450, 50));
        // A second load adds to the counts; quads it repeats are not counted twice.
        let more = "<http://e/t1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://e/Rare> .\n\
                    <http://e/s0> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://e/Rare> .\n";
        load_str(&store, dir.path(), "y.nt", more, &LoadOptions::default()).unwrap();
        assert_eq!(count(&store, "http://e/Rare"), 51);
        let mut txn = store.transaction().unwrap();
        let ty = oxrdf::NamedNode::new("http://www.w3.org/1999/02/22-rdf-syntax-ns#type").unwrap();
        let quad = |s: &str, c: &str| {
            let s = oxrdf::NamedNode::new(format!("http://e/{s}")).unwrap();
            Quad::new(s, ty.clone(), oxrdf::NamedNode::new(format!("http://e/{c}")).unwrap(), oxrdf::GraphName::DefaultGraph)
        };
        for i in 0..5 {
            let ids = txn.encode_quad(quad(&format!("s{i}"), "New").as_ref()).unwrap();
            txn.insert(&ids).unwrap();
        }
        let gone = txn.encode_quad(quad("s10", "Rare").as_ref()).unwrap();
        assert!(txn.remove(&gone).unwrap());
        txn.commit().unwrap();
        assert_eq!((count(&store, "http://e/New"), count(&store, "http://e/Rare")), (5, 50));
        let mut txn = store.transaction().unwrap();
        for i in 0..5 {
            let ids = txn.encode_quad(quad(&format!("s{i}"), "New").as_ref()).unwrap();
            txn.remove(&ids).unwrap();
        }
        txn.commit().unwrap();
        let kept = store.stats().unwrap().classes;
        assert!(count(&store, "http://e/New") == 0 && kept.len() == 2, "{kept:?}");
        store.compact().unwrap();
        assert_eq!(store.stats().unwrap().classes, kept, "the counts the writes kept are a recount's");
    }
}

#[test]
fn class_counts_start_with_the_transaction_that_first_writes_rdf_type() {
    // A writer remembers rdf:type's id, or that there is none, for the
    // next: the first writer of rdf:type (not an aborted one) ends that.
    let ty = oxrdf::NamedNode::new("http://www.w3.org/1999/02/22-rdf-syntax-ns#type").unwrap();
    let typed = |s: &str, c: &str| Quad::new(oxrdf::NamedNode::new(format!("http://e/{s}")).unwrap(), ty.clone(), oxrdf::NamedNode::new(format!("http://e/{c}")).unwrap(), oxrdf::GraphName::DefaultGraph);
    let plain = |s: &str| Quad::new(oxrdf::NamedNode::new(format!("http://e/{s}")).unwrap(), oxrdf::NamedNode::new("http://e/p").unwrap(), oxrdf::Literal::new_simple_literal("v"), oxrdf::GraphName::DefaultGraph);
    for (store, _dir) in stores() {
        let count = |store: &Store, class: &str| -> u64 {
            let stats = store.stats().unwrap();
            let id = store.snapshot().unwrap().lookup(oxrdf::NamedNodeRef::new(class).unwrap().into()).unwrap();
            id.and_then(|id| stats.classes.iter().find(|(c, _)| *c == id).map(|(_, n)| *n)).unwrap_or(0)
        };
        let write = |quads: &[Quad], commit: bool| {
            let mut txn = store.transaction().unwrap();
            for q in quads {
                let ids = txn.encode_quad(q.as_ref()).unwrap();
                txn.insert(&ids).unwrap();
            }
            if commit {
                txn.commit().unwrap();
            }
        };
        write(&[plain("a")], true); // no rdf:type yet
        write(&[typed("b", "C")], false); // aborted
        write(&[plain("c")], true);
        assert_eq!(count(&store, "http://e/C"), 0);
        write(&[typed("d", "C")], true);
        write(&[typed("e", "C"), plain("e")], true);
        assert_eq!(count(&store, "http://e/C"), 2);
        let kept = store.stats().unwrap().classes;
        store.compact().unwrap();
        assert_eq!(store.stats().unwrap().classes, kept, "the counts the writes kept are a recount's");
    }
}

/// `http://e/{x}`: IRIs of a small universe, so random writes share,
/// empty and refill the same pairs and predicates often.
fn small_iri(x: u64) -> oxrdf::NamedNode {
    oxrdf::NamedNode::new(format!("http://e/{x}")).unwrap()
}

/// Reproducible numbers below `n` (xorshift64 from `seed`, never 0).
fn numbers(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

/// Statistics kept by writers (with what one writer leaves the next: term
/// ids, predicate counts, pairs seen) stay what a full recount finds,
/// through random inserts, removals, graph drops, aborted transactions and
/// bulk loads between them.
#[test]
fn counters_kept_by_writers_match_a_recount_after_random_writes() {
    fn predicate_counts(store: &Store) -> Vec<(TermId, u64, u64, u64)> {
        let stats = store.stats().unwrap();
        let mut v: Vec<_> = stats.predicates.iter().map(|p| (p.predicate, p.quads, p.distinct_subjects, p.distinct_objects)).collect();
        v.sort();
        v
    }
    for (store, dir) in stores() {
        // A small universe, so that pairs and predicates are shared, emptied
        // and filled again often.
        let term = small_iri;
        let mut next = numbers(0x2545_F491_4F6C_DD1Du64);
        for round in 0..60u64 {
          // Several writers between recounts (a recount resets what they
          // keep), with a bulk load between two of them now and then.
          for writer in 0..3 {
            let mut txn = store.transaction().unwrap();
            for _ in 0..1 + next(12) {
                let (s, p, o) = (term(next(6)), term(100 + next(3)), term(next(6) + 3 * next(2)));
                let g = match next(3) {
                    0 => GraphName::DefaultGraph,
                    1 => term(next(6)).into(),
                    _ => term(200 + next(2)).into(),
                };
                // A term new to the store now and then (a fresh id).
                let o: Term = if next(5) == 0 { term(1000 + round * 100 + next(100)).into() } else { o.into() };
                let ids = txn.encode_quad(Quad::new(s, p, o, g).as_ref()).unwrap();
                match next(4) {
                    0 => {
                        txn.remove(&ids).unwrap();
                    }
                    1 => {
                        txn.drop_graph(ids[3]).unwrap();
                    }
                    _ => {
                        txn.insert(&ids).unwrap();
                    }
                }
            }
            match next(6) {
                0 => drop(txn), // aborted
                _ => txn.commit().unwrap(),
            }
            if writer == 0 && round % 3 == 1 {
                // New subjects and objects under predicates the writers use:
                // the counts the load adds are exact (a load counts the
                // pairs it brings as new; a recount settles pairs it shares
                // with the store), and writers must not go on from counts
                // they kept before it.
                let nq = format!("<http://e/l{round}> <http://e/{}> <http://e/lo{round}> .\n", 100 + next(3));
                load_str(&store, dir.path(), &format!("r{round}.nt"), &nq, &LoadOptions::default()).unwrap();
            }
          }
            let kept = predicate_counts(&store);
            let kept_stats = store.stats().unwrap();
            store.compact().unwrap();
            let exact = store.stats().unwrap();
            assert_eq!(kept, predicate_counts(&store), "round {round}: predicate statistics drifted from a recount");
            assert_eq!((kept_stats.quads, kept_stats.graphs, kept_stats.terms), (exact.quads, exact.graphs, exact.terms), "round {round}");
        }
    }
}

/// Quads per object of `p` found by scanning every graph: what the value
/// counts must say.
fn scanned_value_counts(store: &Store, p: TermId) -> Vec<(TermId, u64)> {
    let snapshot = store.snapshot().unwrap();
    let mut out: Vec<(TermId, u64)> = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for q in snapshot.scan(QuadPattern { p: Some(p), ..Default::default() }) {
        *counts.entry(q.unwrap()[2]).or_insert(0u64) += 1;
    }
    out.extend(counts);
    out
}

/// Value counts (quads per object of a predicate with few distinct
/// objects, what "count by a field" reads instead of scanning) follow
/// random inserts, removals, graph drops, aborted transactions and bulk
/// loads repeating stored quads, and a recount leaves them as they were.
#[test]
fn value_counts_kept_by_writers_and_loads_match_a_scan() {
    for (store, dir) in stores() {
        let term = small_iri;
        let mut next = numbers(0x9E37_79B9_7F4A_7C15u64);
        let predicates: Vec<oxrdf::NamedNode> = (100..104).map(term).collect();
        for round in 0..40u64 {
            for _ in 0..3 {
                let mut txn = store.transaction().unwrap();
                for _ in 0..1 + next(15) {
                    let s = term(next(8));
                    let p = predicates[next(4) as usize].clone();
                    // Objects: a few IRIs, inlined numbers, a string now and then.
                    let o: Term = match next(3) {
                        0 => term(next(5)).into(),
                        1 => oxrdf::Literal::from(next(7) as i64).into(),
                        _ => oxrdf::Literal::new_simple_literal(format!("v{}", next(4))).into(),
                    };
                    let g: GraphName = match next(3) {
                        0 => GraphName::DefaultGraph,
                        1 => term(next(8)).into(),
                        _ => term(200 + next(2)).into(),
                    };
                    let ids = txn.encode_quad(Quad::new(s, p, o, g).as_ref()).unwrap();
                    match next(5) {
                        0 => drop(txn.remove(&ids).unwrap()),
                        1 => drop(txn.drop_graph(ids[3]).unwrap()),
                        _ => drop(txn.insert(&ids).unwrap()),
                    }
                }
                match next(6) {
                    0 => drop(txn),
                    _ => txn.commit().unwrap(),
                }
            }
            if round % 4 == 1 {
                // Quads the store has already and new ones, under the same
                // predicates: only the new ones count.
                let mut nq = String::new();
                for q in store.snapshot().unwrap().scan(QuadPattern::default()).take(5) {
                    let q = q.unwrap();
                    let t = |id: TermId| store.snapshot().unwrap().decode(id).unwrap().unwrap().to_string();
                    let g = if q[3] == TermId::DEFAULT_GRAPH { String::new() } else { t(q[3]) };
                    nq.push_str(&format!("{} {} {} {g} .\n", t(q[0]), t(q[1]), t(q[2])));
                }
                // A new quad whose object the store counts already.
                nq.push_str(&format!("<http://e/l{round}> <http://e/{}> \"{}\"^^<http://www.w3.org/2001/XMLSchema#integer> <http://e/201> .\n", 100 + next(4), next(7)));
                load_str(&store, dir.path(), &format!("r{round}.nq"), &nq, &LoadOptions::default()).unwrap();
            }
            let snapshot = store.snapshot().unwrap();
            let mut kept = Vec::new();
            for p in &predicates {
                let Some(id) = snapshot.lookup(p.as_ref().into()).unwrap() else { continue };
                let counts = rhizome_rdf::value_counts(snapshot.kv(), id).unwrap();
                // Never past the limit here: always counted.
                assert_eq!(counts.as_deref(), Some(&scanned_value_counts(&store, id)[..]), "round {round}, {p}");
                kept.push((id, counts));
            }
            drop(snapshot);
            if round % 8 == 7 {
                store.compact().unwrap();
                let snapshot = store.snapshot().unwrap();
                for (id, counts) in kept {
                    assert_eq!(rhizome_rdf::value_counts(snapshot.kv(), id).unwrap(), counts, "round {round}: a recount changed them");
                }
            }
        }
    }
}

/// A predicate stops being counted past the limit (a transaction or a load
/// taking it there), and a recount counts it again once it is back under.
#[test]
fn value_counts_stop_past_the_limit_and_a_recount_brings_them_back() {
    use rhizome_rdf::VALUE_COUNT_LIMIT;
    for (store, dir) in stores() {
        let counts = |store: &Store, p: &str| {
            let snapshot = store.snapshot().unwrap();
            let id = snapshot.lookup(oxrdf::NamedNodeRef::new(p).unwrap().into()).unwrap().unwrap();
            rhizome_rdf::value_counts(snapshot.kv(), id).unwrap()
        };
        // Through transactions: LIMIT distinct values are counted, one more is not.
        let mut txn = store.transaction().unwrap();
        let mut last = None;
        for i in 0..=VALUE_COUNT_LIMIT as i64 {
            let q = Quad::new(oxrdf::NamedNode::new(format!("http://e/s{}", i % 7)).unwrap(), oxrdf::NamedNode::new("http://e/p").unwrap(), oxrdf::Literal::from(i), GraphName::DefaultGraph);
            let ids = txn.encode_quad(q.as_ref()).unwrap();
            txn.insert(&ids).unwrap();
            last = Some(ids);
            if i == VALUE_COUNT_LIMIT as i64 - 1 {
                txn.commit().unwrap();
                assert_eq!(counts(&store, "http://e/p").map(|c| c.len()), Some(VALUE_COUNT_LIMIT));
                txn = store.transaction().unwrap();
            }
        }
        txn.commit().unwrap();
        assert_eq!(counts(&store, "http://e/p"), None, "past the limit");
        // Back under the limit: still uncounted until a recount.
        let mut txn = store.transaction().unwrap();
        txn.remove(&last.unwrap()).unwrap();
        txn.commit().unwrap();
        assert_eq!(counts(&store, "http://e/p"), None);
        store.compact().unwrap();
        assert_eq!(counts(&store, "http://e/p").map(|c| c.len()), Some(VALUE_COUNT_LIMIT));
        // Through a load adding to counted values: past the limit, uncounted.
        let nt: String = (0..10).map(|i| format!("<http://e/t{i}> <http://e/p> \"x{i}\" .\n")).collect();
        load_str(&store, dir.path(), "more.nt", &nt, &LoadOptions::default()).unwrap();
        assert_eq!(counts(&store, "http://e/p"), None);
        // Emptied by a transaction, then written again: counted from zero,
        // with nothing of the counts the load left behind.
        let p = store.snapshot().unwrap().lookup(oxrdf::NamedNodeRef::new("http://e/p").unwrap().into()).unwrap().unwrap();
        let all: Vec<[TermId; 4]> = store.snapshot().unwrap().scan(QuadPattern { p: Some(p), ..Default::default() }).map(Result::unwrap).collect();
        let mut txn = store.transaction().unwrap();
        for q in &all {
            assert!(txn.remove(q).unwrap());
        }
        txn.commit().unwrap();
        let mut txn = store.transaction().unwrap();
        for (k, i) in [5i64, 6, 6].into_iter().enumerate() {
            let q = Quad::new(oxrdf::NamedNode::new(format!("http://e/u{k}")).unwrap(), oxrdf::NamedNode::new("http://e/p").unwrap(), oxrdf::Literal::from(i), GraphName::DefaultGraph);
            let ids = txn.encode_quad(q.as_ref()).unwrap();
            txn.insert(&ids).unwrap();
        }
        txn.commit().unwrap();
        assert_eq!(counts(&store, "http://e/p").unwrap().iter().map(|c| c.1).collect::<Vec<_>>(), vec![1, 2]);
        // A load of a predicate with few values into the same store is counted.
        let nt: String = (0..50).map(|i| format!("<http://e/t{i}> <http://e/q> \"{}\" .\n", i % 3)).collect();
        load_str(&store, dir.path(), "q.nt", &nt, &LoadOptions::default()).unwrap();
        let mut q: Vec<u64> = counts(&store, "http://e/q").unwrap().iter().map(|c| c.1).collect();
        q.sort_unstable();
        assert_eq!(q, vec![16, 17, 17]);
    }
}

/// Readers share the ids they find (`StoreSnapshot::lookup`): a term
/// numbered by a transaction that never committed is found by no reader,
/// and a snapshot older than a term, asked after a newer reader found it,
/// finds none of its quads.
#[test]
fn term_ids_shared_by_readers_follow_commits_and_snapshots() {
    for (store, _dir) in stores() {
        let quad = |o: u64| Quad::new(small_iri(1), small_iri(2), Term::from(small_iri(o)), GraphName::DefaultGraph);
        let mut txn = store.transaction().unwrap();
        let ids = txn.encode_quad(quad(3).as_ref()).unwrap();
        txn.insert(&ids).unwrap();
        drop(txn);
        assert_eq!(store.snapshot().unwrap().lookup(small_iri(3).as_ref().into()).unwrap(), None);

        let old = store.snapshot().unwrap();
        let mut txn = store.transaction().unwrap();
        let ids = txn.encode_quad(quad(3).as_ref()).unwrap();
        txn.insert(&ids).unwrap();
        txn.commit().unwrap();
        let new = store.snapshot().unwrap();
        let id = new.lookup(small_iri(3).as_ref().into()).unwrap().expect("committed");
        assert_eq!(id, ids[2]);
        assert_eq!(new.scan(QuadPattern { o: Some(id), ..Default::default() }).count(), 1);
        // Asked again (now from the shared ids), in both snapshots.
        assert_eq!(new.lookup(small_iri(3).as_ref().into()).unwrap(), Some(id));
        if let Some(seen) = old.lookup(small_iri(3).as_ref().into()).unwrap() {
            assert_eq!(seen, id);
            assert_eq!(old.scan(QuadPattern { o: Some(seen), ..Default::default() }).count(), 0);
        }
    }
}

/// A term a transaction looked up and did not find is created once when it
/// then encodes it (the lookup's miss is remembered, not looked up again):
/// one id, one dictionary entry, found by later lookups and transactions.
#[test]
fn a_term_looked_up_absent_then_encoded_is_created_once() {
    for (store, _dir) in stores() {
        let iri = oxrdf::NamedNode::new("http://e/new-doc").unwrap();
        let other = oxrdf::NamedNode::new("http://e/other").unwrap();
        let before = store.stats().unwrap().terms;
        let mut txn = store.transaction().unwrap();
        assert_eq!(txn.lookup(iri.as_ref().into()).unwrap(), None);
        // Another term's miss replaces the remembered one; both still absent.
        assert_eq!(txn.lookup(other.as_ref().into()).unwrap(), None);
        let id = txn.encode(iri.as_ref().into()).unwrap();
        assert_eq!(txn.lookup(iri.as_ref().into()).unwrap(), Some(id));
        let o = txn.encode(other.as_ref().into()).unwrap();
        assert_ne!(id, o);
        assert_eq!(txn.encode(iri.as_ref().into()).unwrap(), id);
        let q = Quad::new(iri.clone(), other.clone(), iri.clone(), GraphName::NamedNode(iri.clone()));
        let ids = txn.encode_quad(q.as_ref()).unwrap();
        assert_eq!(ids, [id, o, id, id]);
        txn.insert(&ids).unwrap();
        txn.commit().unwrap();
        assert_eq!(store.stats().unwrap().terms, before + 2);
        let txn = store.transaction().unwrap();
        assert_eq!(txn.lookup(iri.as_ref().into()).unwrap(), Some(id));
        assert_eq!(txn.lookup(other.as_ref().into()).unwrap(), Some(o));
        assert_eq!(all_quads(&store).iter().filter(|x| **x == q).count(), 1);
    }
}

/// The shared term cache decodes whole chunks of the dictionary once every
/// id in them is committed (its dense table). Every term read back through
/// it, in batches and one at a time, from old and new snapshots, is the
/// term written: across chunk boundaries, with IRIs, strings and typed
/// literals (in the table) mixed with language-tagged strings and blank
/// nodes (not in it), and with terms committed after a chunk was read.
#[test]
fn terms_read_through_the_dense_table_are_the_terms_written() {
    use oxrdf::{BlankNode, Literal, NamedNode};
    let term = |i: u64| -> Term {
        match i % 5 {
            0 => NamedNode::new_unchecked(format!("http://e/n{i}")).into(),
            1 => Literal::new_simple_literal(format!("a string longer than seven bytes {i}")).into(),
            2 => Literal::new_language_tagged_literal_unchecked(format!("mot {i}"), "fr").into(),
            3 => Literal::new_typed_literal(format!("v{i}"), NamedNode::new_unchecked("http://e/type")).into(),
            _ => BlankNode::new_unchecked(format!("x{i}")).into(),
        }
    };
    let write = |store: &Store, range: std::ops::Range<u64>| -> Vec<(TermId, Term)> {
        let mut txn = store.transaction().unwrap();
        let mut written = Vec::new();
        for i in range {
            let quad = Quad::new(oxrdf::NamedNode::new_unchecked("http://e/s"), oxrdf::NamedNode::new_unchecked("http://e/p"), term(i), GraphName::DefaultGraph);
            let ids = txn.encode_quad(quad.as_ref()).unwrap();
            txn.insert(&ids).unwrap();
            if ids[2].is_in_dictionary() {
                written.push((ids[2], quad.object));
            }
        }
        txn.commit().unwrap();
        written
    };
    let check = |snapshot: &rhizome_rdf::StoreSnapshot, written: &[(TermId, Term)]| {
        let mut ids: Vec<TermId> = written.iter().map(|(id, _)| *id).collect();
        let mut read = std::collections::HashMap::new();
        snapshot.decode_many(&mut ids, |id, t| assert!(read.insert(id, t).is_none(), "{id:?} given twice")).unwrap();
        for (id, t) in written {
            assert_eq!(read.get(id), Some(t), "{id:?} in a batch");
            assert_eq!(snapshot.decode(*id).unwrap().as_ref(), Some(t), "{id:?} alone");
        }
    };
    for (store, _dir) in stores() {
        let mut written = write(&store, 0..2500);
        let old = store.snapshot().unwrap();
        check(&old, &written);
        let dense = old.term_cache().dense_terms();
        assert!(dense >= 1000, "the complete chunks are in the table: {dense} terms");
        assert!(dense < 2000, "the chunk still being numbered is not: {dense} terms");
        written.extend(write(&store, 2500..4000));
        check(&store.snapshot().unwrap(), &written);
        assert!(store.snapshot().unwrap().term_cache().dense_terms() > dense, "a chunk completed later is read then");
        // A snapshot from before the second write still reads its terms.
        check(&old, &written[..written.iter().position(|(_, t)| *t == term(2500)).unwrap_or(written.len())]);
    }
}

/// A few terms scattered over the dictionary are read one by one, not by
/// loading the whole chunk each falls in (a cold query naming a few
/// hundred scattered terms loaded a chunk of 1,024 terms per term); a
/// chunk whose ids are missed again and again is loaded whole.
#[test]
fn scattered_terms_are_read_alone_and_a_hot_chunk_is_loaded_whole() {
    use oxrdf::NamedNode;
    let iri = |i: u64| -> Term { NamedNode::new_unchecked(format!("http://e/n{i}")).into() };
    for (store, _dir) in stores() {
        let mut txn = store.transaction().unwrap();
        let mut written = Vec::new();
        for i in 0..20_000u64 {
            let quad = Quad::new(NamedNode::new_unchecked("http://e/s"), NamedNode::new_unchecked("http://e/p"), iri(i), GraphName::DefaultGraph);
            let ids = txn.encode_quad(quad.as_ref()).unwrap();
            txn.insert(&ids).unwrap();
            written.push((ids[2], quad.object));
        }
        txn.commit().unwrap();
        let snapshot = store.snapshot().unwrap();
        // One id every 1,500: no two in one chunk.
        let scattered: Vec<&(TermId, Term)> = written.iter().step_by(1500).collect();
        let mut ids: Vec<TermId> = scattered.iter().map(|(id, _)| *id).collect();
        let mut read = std::collections::HashMap::new();
        snapshot.decode_many(&mut ids, |id, t| assert!(read.insert(id, t).is_none())).unwrap();
        for (id, t) in &scattered {
            assert_eq!(read.get(id), Some(t));
        }
        assert_eq!(snapshot.term_cache().dense_terms(), 0, "no chunk loaded for {} scattered terms", scattered.len());
        // Batches of a few ids of one chunk, until it is hot.
        let chunk: Vec<&(TermId, Term)> = written[5000..7000].iter().collect();
        for batch in chunk.chunks(4).take(20) {
            let mut ids: Vec<TermId> = batch.iter().map(|(id, _)| *id).collect();
            let mut read = std::collections::HashMap::new();
            snapshot.decode_many(&mut ids, |id, t| assert!(read.insert(id, t).is_none())).unwrap();
            for (id, t) in batch {
                assert_eq!(read.get(id), Some(t));
            }
        }
        assert!(snapshot.term_cache().dense_terms() >= 1000, "a chunk missed 80 times is loaded whole");
    }
}

/// A bulk load writes its id-to-term file without an engine filter (every
/// id a read asks for comes from a quad), yet every term still decodes and
/// an id the store never gave out is answered "absent" (`None` from the
/// engine, an error naming the id from `decode`), never a wrong term.
#[test]
fn a_bulk_loaded_dictionary_without_a_filter_still_answers_misses() {
    use rhizome_rdf::index::layout::ID2TERM;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("s"), None).unwrap();
    // 40,000 triples: past the loader's write-batch size, so sorted files.
    let mut nt = String::new();
    for i in 0..40_000 {
        nt.push_str(&format!("<http://e/s{i}> <http://e/name> \"name number {i}\" .\n"));
    }
    load_str(&store, dir.path(), "x.nt", &nt, &LoadOptions::default()).unwrap();
    let tables: Vec<Vec<u8>> = std::fs::read_dir(dir.path().join("s"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let filtered = |t: &Vec<u8>| t.windows(b"ribbonfilter".len()).any(|w| w == b"ribbonfilter");
    assert_eq!(tables.iter().filter(|t| !filtered(t)).count(), 1, "the id-to-term file alone has no filter");
    let snapshot = store.snapshot().unwrap();
    let mut last = TermId(0);
    for i in (0..40_000).step_by(997) {
        let s = oxrdf::NamedNode::new(format!("http://e/s{i}")).unwrap();
        let id = snapshot.lookup(s.as_ref().into()).unwrap().expect("loaded");
        assert_eq!(snapshot.decode(id).unwrap(), Some(Term::NamedNode(s)));
        let name = oxrdf::Literal::new_simple_literal(format!("name number {i}"));
        let id = snapshot.lookup(name.as_ref().into()).unwrap().expect("loaded");
        assert_eq!(snapshot.decode(id).unwrap(), Some(Term::Literal(name)));
        last = last.max(id);
    }
    for absent in [TermId::new(rhizome_rdf::term::tag::IRI, 1 << 40), TermId::new(rhizome_rdf::term::tag::STRING, last.sequence() + 1_000_000), TermId::new(rhizome_rdf::term::tag::TYPED, 3)] {
        assert_eq!(snapshot.kv().get(ID2TERM, &absent.to_be_bytes()).unwrap(), None);
        assert!(snapshot.decode(absent).is_err(), "{absent:?}");
    }
}

/// A load numbers its new subjects first, densely, in the order it meets
/// them (their literals and objects after), and leaves the ids of terms
/// the store had before alone; every quad reads back as loaded.
#[test]
fn a_load_numbers_its_subjects_densely_and_keeps_older_ids() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("s"), None).unwrap();
    load_str(&store, dir.path(), "a.nt", "<http://e/old> <http://e/p> <http://e/s3> .\n", &LoadOptions::default()).unwrap();
    let before = |t: &str| store.snapshot().unwrap().lookup(oxrdf::NamedNode::new(t).unwrap().as_ref().into()).unwrap().unwrap();
    let (old, p, s3) = (before("http://e/old"), before("http://e/p"), before("http://e/s3"));
    let mut nt = String::new();
    for i in 0..10 {
        nt.push_str(&format!("<http://e/s{i}> <http://e/name> \"a name long enough {i}\" .\n"));
        nt.push_str(&format!("<http://e/s{i}> <http://e/p> <http://e/linked{i}> .\n"));
        nt.push_str(&format!("<http://e/s{i}> <http://e/p> _:b{i} .\n_:b{i} <http://e/p> <http://e/old> .\n"));
    }
    load_str(&store, dir.path(), "b.nt", &nt, &LoadOptions::default()).unwrap();
    let snapshot = store.snapshot().unwrap();
    let id = |t: &str| snapshot.lookup(oxrdf::NamedNode::new(t).unwrap().as_ref().into()).unwrap().unwrap();
    assert_eq!((id("http://e/old"), id("http://e/p"), id("http://e/s3")), (old, p, s3), "older terms keep their ids");
    let mut subjects: Vec<TermId> = (0..10).filter(|i| *i != 3).map(|i| id(&format!("http://e/s{i}"))).collect();
    let first = subjects[0].sequence();
    // The subjects met first, one after another (blank subjects too, met
    // between them), before every name and link.
    let blank_subjects: Vec<TermId> = snapshot
        .scan(QuadPattern { o: Some(old), ..Default::default() })
        .map(|q| q.unwrap()[0])
        .filter(|s| s.is_blank())
        .collect();
    assert_eq!(blank_subjects.len(), 10);
    subjects.extend(blank_subjects);
    let mut sequences: Vec<u64> = subjects.iter().map(|s| s.sequence()).collect();
    sequences.sort_unstable();
    assert_eq!(sequences, (first..first + 19).collect::<Vec<_>>());
    for i in 0..10 {
        let name = oxrdf::Literal::new_simple_literal(format!("a name long enough {i}"));
        assert!(snapshot.lookup(name.as_ref().into()).unwrap().unwrap().sequence() >= first + 19);
        assert!(id(&format!("http://e/linked{i}")).sequence() >= first + 19);
    }
    // Every triple reads back as loaded (graphs aside: each its subject's).
    let as_default = |q: Quad| Quad::new(q.subject, q.predicate, q.object, GraphName::DefaultGraph);
    let mut expected: Vec<Quad> = RdfParser::from_format(RdfFormat::NTriples).for_slice(nt.as_bytes()).map(|q| as_default(q.unwrap())).collect();
    expected.push(as_default(RdfParser::from_format(RdfFormat::NTriples).for_slice(b"<http://e/old> <http://e/p> <http://e/s3> .\n".as_slice()).next().unwrap().unwrap()));
    assert_eq!(canonical(all_quads(&store).into_iter().map(as_default)), canonical(expected));
}
