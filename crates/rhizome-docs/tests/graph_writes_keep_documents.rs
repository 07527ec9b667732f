//! An RDF write to a document's graph (what SPARQL Update and the Graph
//! Store Protocol do through `Database::rdf_write`) gives the document a new
//! revision that keeps it: its `@context`, its names, its lists, language
//! maps and native values, its members that are not RDF and its
//! attachments; the JSON after the write is the JSON before plus the change,
//! and the graph is the graph before plus the change.

use oxrdf::graph::CanonicalizationAlgorithm;
use oxrdf::{Graph, GraphNameRef, Literal, NamedNode, QuadRef, Term, TermRef, Triple};
use rhizome_docs::{Database, DocError, DocumentIris, JsonLdProjector, ReadOptions};
use rhizome_rdf::QuadPattern;
use serde_json::{json, Map, Value};
use std::sync::Arc;

const BASE: &str = "http://localhost:5984";

fn database() -> Database {
    Database::memory_with(Arc::new(JsonLdProjector::new(DocumentIris::new(BASE, "db"))))
}

fn graph_iri(id: &str) -> String {
    format!("{BASE}/db/{id}")
}

fn put(db: &Database, doc: Value) -> String {
    let mut out = db.update_docs(vec![doc.as_object().expect("an object").clone()], true).unwrap();
    out.remove(0).1.unwrap().to_string()
}

fn get(db: &Database, id: &str) -> Map<String, Value> {
    db.get_doc(id, &ReadOptions::default()).unwrap()
}

/// The document without `_id` and `_rev`.
fn members(mut doc: Map<String, Value>) -> Value {
    doc.remove("_id");
    doc.remove("_rev");
    Value::Object(doc)
}

/// The canonical graph of a document.
fn graph_of(db: &Database, id: &str) -> Graph {
    let snapshot = db.store().snapshot().unwrap();
    let iri = graph_iri(id);
    let mut g = Graph::new();
    if let Some(gid) = snapshot.lookup(TermRef::NamedNode(NamedNode::new(&iri).unwrap().as_ref())).unwrap() {
        for q in snapshot.scan(QuadPattern { g: Some(gid), ..Default::default() }) {
            let q = q.unwrap();
            let s = match snapshot.decode(q[0]).unwrap().unwrap() {
                Term::NamedNode(n) => oxrdf::NamedOrBlankNode::from(n),
                Term::BlankNode(b) => b.into(),
                other => panic!("subject {other}"),
            };
            let Term::NamedNode(p) = snapshot.decode(q[1]).unwrap().unwrap() else { panic!("predicate") };
            g.insert(&Triple::new(s, p, snapshot.decode(q[2]).unwrap().unwrap()));
        }
    }
    g.canonicalize(CanonicalizationAlgorithm::Unstable);
    g
}

fn with(mut g: Graph, t: &Triple) -> Graph {
    g.insert(t);
    g.canonicalize(CanonicalizationAlgorithm::Unstable);
    g
}

fn triple(s: &str, p: &str, o: impl Into<Term>) -> Triple {
    Triple::new(NamedNode::new(s).unwrap(), NamedNode::new(p).unwrap(), o)
}

/// Adds (or removes) a triple in a document's graph, as an RDF write.
fn change(db: &Database, id: &str, t: &Triple, add: bool) {
    let g = NamedNode::new(graph_iri(id)).unwrap();
    db.rdf_write(|txn| -> Result<(), DocError> {
        let q = QuadRef::new(t.subject.as_ref(), t.predicate.as_ref(), t.object.as_ref(), GraphNameRef::NamedNode(g.as_ref()));
        let ids = txn.encode_quad(q)?;
        if add {
            txn.insert(&ids)?;
        } else {
            txn.remove(&ids)?;
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_graph_write_keeps_the_context_names_other_members_and_attachments() {
    let db = database();
    put(
        &db,
        json!({"_id": "p", "@context": {"name": "http://schema.org/name"}, "@id": "http://e/p", "name": "P", "app_flag": true,
               "_attachments": {"f.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}}),
    );
    let before = graph_of(&db, "p");
    let email = triple("http://e/p", "http://schema.org/email", Literal::new_simple_literal("e"));
    change(&db, "p", &email, true);
    let doc = get(&db, "p");
    assert!(doc["_rev"].as_str().unwrap().starts_with("2-"), "{doc:?}");
    let mut after = members(doc);
    let atts = after.as_object_mut().unwrap().remove("_attachments").expect("attachments kept");
    assert_eq!(atts["f.txt"]["stub"], true, "{atts}");
    assert_eq!(
        after,
        json!({"@context": {"name": "http://schema.org/name"}, "@id": "http://e/p", "name": "P", "http://schema.org/email": "e", "app_flag": true})
    );
    assert_eq!(db.attachment("p", "f.txt", None).unwrap().data, b"hello");
    assert_eq!(graph_of(&db, "p"), with(before, &email));
}

#[test]
fn nested_objects_lists_language_maps_type_arrays_numbers_and_booleans_round_trip() {
    let db = database();
    let original = json!({
        "@context": {
            "@vocab": "http://schema.org/",
            "xsd": "http://www.w3.org/2001/XMLSchema#",
            "knows": {"@type": "@id"},
            "tags": {"@container": "@list"},
            "label": {"@id": "http://www.w3.org/2000/01/rdf-schema#label", "@container": "@language"},
            "born": {"@type": "xsd:date"}
        },
        "@id": "http://e/a",
        "@type": ["Person", "Agent"],
        "name": "A",
        "age": 42,
        "height": 1.75,
        "active": true,
        "address": {"street": "Main St", "city": "X"},
        "tags": ["x", "y", "z"],
        "label": {"en": "Ann", "fr": "Anne"},
        "knows": "http://e/b",
        "born": "1990-01-01"
    });
    let mut doc = original.clone();
    doc["_id"] = json!("a");
    put(&db, doc);
    let before = graph_of(&db, "a");
    let email = triple("http://e/a", "http://schema.org/email", Literal::new_simple_literal("a@e"));
    change(&db, "a", &email, true);
    let mut expected = original.clone();
    expected["email"] = json!("a@e");
    assert_eq!(members(get(&db, "a")), expected);
    assert_eq!(graph_of(&db, "a"), with(before.clone(), &email));

    // And back: removing the triple gives the original document again.
    change(&db, "a", &email, false);
    assert_eq!(members(get(&db, "a")), original);
    assert_eq!(graph_of(&db, "a"), before);
}

#[test]
fn a_value_a_term_cannot_hold_falls_back_to_the_full_iri() {
    let db = database();
    put(&db, json!({"_id": "c", "@context": {"age": {"@id": "http://schema.org/age", "@type": "http://www.w3.org/2001/XMLSchema#integer"}}, "@id": "http://e/c", "age": "5"}));
    let before = graph_of(&db, "c");
    // A second age that is not an integer: `age` cannot hold both.
    let odd = triple("http://e/c", "http://schema.org/age", Literal::new_simple_literal("five"));
    change(&db, "c", &odd, true);
    let doc = members(get(&db, "c"));
    assert_eq!(graph_of(&db, "c"), with(before, &odd));
    assert_eq!(doc["@context"], json!({"age": {"@id": "http://schema.org/age", "@type": "http://www.w3.org/2001/XMLSchema#integer"}}));
    assert!(doc.get("http://schema.org/age").is_some(), "{doc}");
}

#[test]
fn emptying_the_graph_keeps_a_document_with_other_members_and_deletes_one_without() {
    let db = database();
    put(&db, json!({"_id": "k", "@context": {"name": "http://schema.org/name"}, "@id": "http://e/k", "name": "K", "app_flag": 1}));
    put(&db, json!({"_id": "d", "@context": {"name": "http://schema.org/name"}, "@id": "http://e/d", "name": "D"}));
    change(&db, "k", &triple("http://e/k", "http://schema.org/name", Literal::new_simple_literal("K")), false);
    change(&db, "d", &triple("http://e/d", "http://schema.org/name", Literal::new_simple_literal("D")), false);
    assert_eq!(members(get(&db, "k")), json!({"@context": {"name": "http://schema.org/name"}, "app_flag": 1}));
    assert!(matches!(db.get_doc("d", &ReadOptions::default()), Err(DocError::NotFound(_))));
}

#[test]
fn a_plain_json_document_keeps_its_members_when_its_graph_is_written() {
    let db = database();
    put(&db, json!({"_id": "j", "kind": "note", "n": 3}));
    let t = triple("http://e/j", "http://schema.org/name", Literal::new_simple_literal("J"));
    change(&db, "j", &t, true);
    assert_eq!(members(get(&db, "j")), json!({"kind": "note", "n": 3, "@id": "http://e/j", "http://schema.org/name": "J"}));
}

/// Puts `original` as `id`, adds `t` to its graph and checks the document
/// is `original` plus `key: value`, the graph the old one plus `t`; then
/// removes `t` and checks both are back to the original.
fn round_trip(db: &Database, id: &str, original: Value, t: Triple, key: &str, value: Value) {
    let mut doc = original.clone();
    doc["_id"] = json!(id);
    put(db, doc);
    let before = graph_of(db, id);
    change(db, id, &t, true);
    let mut expected = original.clone();
    expected[key] = value;
    assert_eq!(members(get(db, id)), expected);
    assert_eq!(graph_of(db, id), with(before.clone(), &t));
    change(db, id, &t, false);
    assert_eq!(members(get(db, id)), original);
    assert_eq!(graph_of(db, id), before);
}

#[test]
fn prefixes_default_language_sets_and_relative_ids_round_trip() {
    let db = database();
    let original = json!({
        "@context": {
            "s": "http://schema.org/",
            "@language": "en",
            "keywords": {"@id": "s:keywords", "@container": "@set"},
            "title": {"@id": "s:name"},
            "plain": {"@id": "s:alternateName", "@language": null}
        },
        "@id": "#me",
        "title": "Hello",
        "plain": "no language",
        "keywords": ["a", "b"],
        "s:knows": {"@id": "#you", "title": "You"}
    });
    let t = Triple::new(NamedNode::new(format!("{}#me", graph_iri("r"))).unwrap(), NamedNode::new("http://schema.org/email").unwrap(), Literal::new_language_tagged_literal("mail", "en").unwrap());
    round_trip(&db, "r", original, t, "s:email", json!("mail"));
}

#[test]
fn the_database_default_context_is_used_and_not_copied_into_the_document() {
    let db = database();
    let ctx = json!({"@context": {"name": "http://schema.org/name", "email": "http://schema.org/email"}});
    db.put_local("_local/rhizome-context", ctx.as_object().unwrap().clone()).unwrap();
    let original = json!({"@id": "http://e/d", "name": "D", "app": "kept"});
    let t = triple("http://e/d", "http://schema.org/email", Literal::new_simple_literal("d@e"));
    round_trip(&db, "dc", original, t, "email", json!("d@e"));
}

#[test]
fn blank_nodes_shared_or_in_cycles_keep_their_graph() {
    let db = database();
    put(&db, json!({"_id": "b", "@context": {"@vocab": "http://e/"}, "@graph": [
        {"@id": "_:x", "next": {"@id": "_:y"}},
        {"@id": "_:y", "next": {"@id": "_:x"}},
        {"@id": "http://e/a", "shared": {"@id": "_:z"}, "also": {"@id": "_:z"}},
        {"@id": "_:z", "v": 1}
    ]}));
    let before = graph_of(&db, "b");
    let t = triple("http://e/a", "http://e/w", Literal::new_simple_literal("w"));
    change(&db, "b", &t, true);
    assert_eq!(graph_of(&db, "b"), with(before, &t));
    let doc = members(get(&db, "b"));
    assert_eq!(doc["@context"], json!({"@vocab": "http://e/"}));
    assert!(doc["@graph"].is_array(), "{doc}");
}

#[test]
fn a_long_chain_of_nodes_written_through_rdf_stays_a_document() {
    let db = database();
    put(&db, json!({"_id": "chain", "@context": {"next": {"@id": "http://e/next", "@type": "@id"}}, "@id": "http://e/n0", "next": "http://e/n1", "flag": "kept"}));
    let n = 2000;
    let g = NamedNode::new(graph_iri("chain")).unwrap();
    let mut expected = Graph::new();
    expected.insert(&triple("http://e/n0", "http://e/next", NamedNode::new("http://e/n1").unwrap()));
    db.rdf_write(|txn| -> Result<(), DocError> {
        for i in 1..n {
            // A chain of blank nodes and of IRIs, each referenced once.
            let s = oxrdf::BlankNode::new(format!("b{i}")).unwrap();
            let o = oxrdf::BlankNode::new(format!("b{}", i + 1)).unwrap();
            let p = NamedNode::new("http://e/next").unwrap();
            let q = QuadRef::new(s.as_ref(), p.as_ref(), o.as_ref(), GraphNameRef::NamedNode(g.as_ref()));
            let ids = txn.encode_quad(q)?;
            txn.insert(&ids)?;
            let t = triple(&format!("http://e/n{i}"), "http://e/next", NamedNode::new(format!("http://e/n{}", i + 1)).unwrap());
            let ids = txn.encode_quad(QuadRef::new(t.subject.as_ref(), t.predicate.as_ref(), t.object.as_ref(), GraphNameRef::NamedNode(g.as_ref())))?;
            txn.insert(&ids)?;
            expected.insert(&t);
        }
        Ok(())
    })
    .unwrap();
    let doc = members(get(&db, "chain"));
    assert_eq!(doc["flag"], "kept");
    let snapshot = db.store().snapshot().unwrap();
    let gid = snapshot.lookup(TermRef::NamedNode(g.as_ref())).unwrap().unwrap();
    let quads = snapshot.scan(QuadPattern { g: Some(gid), ..Default::default() }).count();
    assert_eq!(quads, expected.len() + n - 1, "the blank chain is kept as well");
}

#[test]
fn triple_terms_a_graph_write_adds_under_the_default_context_are_embedded_nodes_that_read_back() {
    let db = database();
    let ctx = json!({"@context": {"@vocab": "http://e/"}});
    db.put_local("_local/rhizome-context", ctx.as_object().unwrap().clone()).unwrap();
    put(&db, json!({"_id": "tt", "@id": "http://e/a", "name": "A"}));
    let before = graph_of(&db, "tt");
    // Blank nodes inside triple terms (one also a node of its own, named
    // once elsewhere), a nested triple term, one in a list.
    let (x, r) = (oxrdf::BlankNode::new("x").unwrap(), oxrdf::BlankNode::new("r").unwrap());
    let e = |s: &str| NamedNode::new(format!("http://e/{s}")).unwrap();
    let age = triple("http://e/a", "http://e/age", Literal::from(3));
    let says = Triple::new(x.clone(), e("says"), age);
    let list = oxrdf::BlankNode::new("l").unwrap();
    let added = vec![
        Triple::new(r, oxrdf::vocab::rdf::REIFIES.into_owned(), says),
        Triple::new(x.clone(), e("name"), Literal::new_simple_literal("X")),
        Triple::new(e("a"), e("knows"), x),
        Triple::new(e("a"), e("claims"), list.clone()),
        Triple::new(list.clone(), oxrdf::vocab::rdf::FIRST.into_owned(), triple("http://e/b", "http://e/c", e("d"))),
        Triple::new(list, oxrdf::vocab::rdf::REST.into_owned(), oxrdf::vocab::rdf::NIL.into_owned()),
    ];
    let g = NamedNode::new(graph_iri("tt")).unwrap();
    db.rdf_write(|txn| -> Result<(), DocError> {
        for t in &added {
            let q = QuadRef::new(t.subject.as_ref(), t.predicate.as_ref(), t.object.as_ref(), GraphNameRef::NamedNode(g.as_ref()));
            let ids = txn.encode_quad(q)?;
            txn.insert(&ids)?;
        }
        Ok(())
    })
    .unwrap();
    let mut expected = before;
    added.iter().for_each(|t| {
        expected.insert(t);
    });
    expected.canonicalize(CanonicalizationAlgorithm::Unstable);
    assert_eq!(graph_of(&db, "tt"), expected);
    let doc = get(&db, "tt");
    assert!(doc["_rev"].as_str().unwrap().starts_with("2-"), "{doc:?}");
    assert!(!doc.contains_key("@context"), "the default context is not copied: {doc:?}");
    let text = Value::Object(doc.clone()).to_string();
    assert!(text.contains(r#"{"@id":{"@id":"http://e/b","http://e/c":[{"@id":"http://e/d"}]}}"#), "{text}");
    // The body as read, written back unchanged: the same graph.
    put(&db, Value::Object(doc));
    assert!(get(&db, "tt")["_rev"].as_str().unwrap().starts_with("3-"));
    assert_eq!(graph_of(&db, "tt"), expected);
}
