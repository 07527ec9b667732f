//! RDF 1.2 in the store: triple terms (nested ones, ones holding blank
//! nodes) and language strings with a base direction are terms like any
//! other: one id each whether they come from a load, a second load into a
//! store that has them, or a transaction, and every door gives them back.

use oxrdf::dataset::CanonicalizationAlgorithm;
use oxrdf::{BaseDirection, Dataset, Literal, NamedNode, Quad, Term, Triple};
use oxrdfio::{RdfFormat, RdfParser};
use rhizome_rdf::term::tag;
use rhizome_rdf::{dump, DatasetMode, DumpOptions, LoadInput, LoadOptions, QuadPattern, Store};
use std::io::Write;

const TURTLE: &str = r#"
PREFIX : <http://example.org/>
VERSION "1.2"
:alice :knows :bob {| :since 2020 ; :source << :carol :said :it ~ :r1 >> |} .
:x :claims <<( :a :b <<( _:someone :c "deep"@en--rtl )>> )>> .
_:someone :name "Someone"@en--ltr, "Someone"@en, "Someone" .
"#;

fn parse(text: &[u8], format: RdfFormat) -> Dataset {
    RdfParser::from_format(format).for_slice(text).map(|q| q.unwrap()).collect()
}

fn load(store: &Store, dir: &std::path::Path, name: &str, content: &str) -> rhizome_rdf::LoadSummary {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().write_all(content.as_bytes()).unwrap();
    store.load(&[LoadInput { path }], &LoadOptions { format: Some(RdfFormat::Turtle), ..Default::default() }).unwrap()
}

fn dumped(store: &Store, format: RdfFormat) -> Vec<u8> {
    let snapshot = store.snapshot().unwrap();
    let mut out = Vec::new();
    dump(&snapshot, &DumpOptions { format, graph: None }, &mut out).unwrap();
    out
}

fn isomorphic(mut a: Dataset, mut b: Dataset) -> bool {
    a.canonicalize(CanonicalizationAlgorithm::Unstable);
    b.canonicalize(CanonicalizationAlgorithm::Unstable);
    a == b
}

fn ex(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("http://example.org/{local}"))
}

#[test]
fn triple_terms_and_directional_strings_load_and_dump_back_in_every_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db"), Some(DatasetMode::Plain)).unwrap();
    load(&store, dir.path(), "a.ttl", TURTLE);
    let expected = parse(TURTLE.as_bytes(), RdfFormat::Turtle);
    for format in [RdfFormat::NQuads, RdfFormat::TriG, RdfFormat::NTriples, RdfFormat::Turtle] {
        let text = dumped(&store, format);
        assert!(isomorphic(parse(&text, format), expected.clone()), "{format} dump:\n{}", String::from_utf8_lossy(&text));
    }
}

#[test]
fn a_triple_term_loaded_again_or_written_in_a_transaction_keeps_its_one_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db"), Some(DatasetMode::Plain)).unwrap();
    let first = load(&store, dir.path(), "a.ttl", "PREFIX : <http://example.org/>\n:x :claims <<( :a :b <<( :c :d \"o\"@en--ltr )>> )>> .\n");
    // s, p, claims, a, b, c, d, literal, inner and outer triple terms.
    assert_eq!(first.terms_added, 9);
    // The same triple term from a second load into a store that has it.
    let second = load(&store, dir.path(), "b.ttl", "PREFIX : <http://example.org/>\n:y :claims <<( :a :b <<( :c :d \"o\"@en--ltr )>> )>> .\n");
    assert_eq!((second.quads_added, second.terms_added), (1, 1), "only :y is new");

    let inner = Triple::new(ex("c"), ex("d"), Literal::new_directional_language_tagged_literal_unchecked("o", "en", BaseDirection::Ltr));
    let outer: Term = Triple::new(ex("a"), ex("b"), inner.clone()).into();
    let snapshot = store.snapshot().unwrap();
    let id = snapshot.lookup(outer.as_ref()).unwrap().expect("the loaded triple term is found");
    assert_eq!(id.tag(), tag::TRIPLE);
    assert_eq!(snapshot.decode(id).unwrap(), Some(outer.clone()));
    let objects: Vec<_> = snapshot.scan(QuadPattern { o: Some(id), ..Default::default() }).map(|q| q.unwrap()).collect();
    assert_eq!(objects.len(), 2, "both subjects claim the same term");
    // A directional string is not the same term as the plain language one.
    let plain = Literal::new_language_tagged_literal_unchecked("o", "en");
    assert_eq!(snapshot.lookup(plain.as_ref().into()).unwrap(), None);
    drop(snapshot);

    let mut txn = store.transaction().unwrap();
    assert_eq!(txn.encode(outer.as_ref()).unwrap(), id, "a transaction finds the loaded id");
    let fresh: Term = Triple::new(ex("z"), ex("b"), outer.clone()).into();
    let fresh_id = txn.encode(fresh.as_ref()).unwrap();
    let (s, p) = (txn.encode(ex("w").as_ref().into()).unwrap(), txn.encode(ex("claims").as_ref().into()).unwrap());
    txn.insert(&[s, p, fresh_id, rhizome_rdf::TermId::DEFAULT_GRAPH]).unwrap();
    txn.commit().unwrap();
    let snapshot = store.snapshot().unwrap();
    assert_eq!(snapshot.lookup(fresh.as_ref()).unwrap(), Some(fresh_id));
    assert_eq!(snapshot.decode(fresh_id).unwrap(), Some(fresh.clone()));
    // Decoding many at once (result rows) gives the same terms.
    let mut ids = vec![fresh_id, id, s];
    let mut got = Vec::new();
    snapshot.decode_many(&mut ids, |i, t| got.push((i, t))).unwrap();
    got.sort_by_key(|(i, _)| *i);
    assert!(got.contains(&(fresh_id, fresh)) && got.contains(&(id, outer)) && got.len() == 3);
    drop(snapshot);
    assert!(store.check().unwrap().problems.is_empty());
}

#[test]
fn blank_nodes_inside_triple_terms_stay_the_blank_nodes_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db"), Some(DatasetMode::Plain)).unwrap();
    // The blank node appears inside a triple term and as a subject.
    let text = "PREFIX : <http://example.org/>\n_:b :p <<( _:b :q :o )>> .\n_:b :name \"b\" .\n";
    load(&store, dir.path(), "a.ttl", text);
    let out = parse(&dumped(&store, RdfFormat::NQuads), RdfFormat::NQuads);
    assert!(isomorphic(out.clone(), parse(text.as_bytes(), RdfFormat::Turtle)));
    let quads: Vec<Quad> = out.iter().map(|q| q.into_owned()).collect();
    let subject = |p: &str| quads.iter().find(|q| q.predicate == ex(p)).unwrap().subject.clone();
    let Term::Triple(t) = &quads.iter().find(|q| q.predicate == ex("p")).unwrap().object else { panic!("not a triple term") };
    assert_eq!(t.subject, subject("p"));
    assert_eq!(subject("p"), subject("name"));
}
