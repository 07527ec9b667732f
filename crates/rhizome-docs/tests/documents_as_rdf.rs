//! Documents are named graphs: JSON-LD projection of winners, graph-bodied
//! documents rendered as JSON-LD, RDF writes as document revisions, and
//! loaded graphs adopted as documents.

use oxrdf::{GraphNameRef, NamedNodeRef, QuadRef, TermRef};
use rhizome_docs::{ChangesOptions, Database, DocError, DocumentIris, JsonLdProjector, ReadOptions};
use rhizome_rdf::{QuadPattern, TermId};
use serde_json::{json, Map, Value};
use std::sync::Arc;

const FOAF_NAME: &str = "http://xmlns.com/foaf/0.1/name";
const BASE: &str = "http://localhost:5984";

fn database() -> Database {
    Database::memory_with(Arc::new(JsonLdProjector::new(DocumentIris::new(BASE, "people"))))
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().expect("an object").clone()
}

fn put(db: &Database, doc: Value) -> Result<String, DocError> {
    let mut out = db.update_docs(vec![obj(doc)], true)?;
    out.remove(0).1.map(|rev| rev.to_string())
}

/// The (subject, lexical form) of every foaf:name in the graph of `doc_id`.
fn names_in_graph(db: &Database, doc_id: &str) -> Vec<(String, String)> {
    let snapshot = db.store().snapshot().unwrap();
    let iri = format!("{BASE}/people/{doc_id}");
    let Some(g) = snapshot.lookup(TermRef::NamedNode(NamedNodeRef::new(&iri).unwrap())).unwrap() else {
        return Vec::new();
    };
    let Some(p) = snapshot.lookup(TermRef::NamedNode(NamedNodeRef::new(FOAF_NAME).unwrap())).unwrap() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for q in snapshot.scan(QuadPattern { p: Some(p), g: Some(g), ..Default::default() }) {
        let q: [TermId; 4] = q.unwrap();
        let s = snapshot.decode(q[0]).unwrap().unwrap().to_string();
        let o = match snapshot.decode(q[2]).unwrap().unwrap() {
            oxrdf::Term::Literal(l) => l.value().to_owned(),
            other => other.to_string(),
        };
        out.push((s, o));
    }
    out
}

#[test]
fn json_ld_winners_are_projected_replaced_and_emptied() {
    let db = database();
    let context = json!({"name": FOAF_NAME});
    let rev1 = put(&db, json!({"_id": "alice", "@context": context, "@id": "", "name": "Alice"})).unwrap();
    let me = format!("<{BASE}/people/alice>");
    assert_eq!(names_in_graph(&db, "alice"), vec![(me.clone(), "Alice".to_owned())]);

    let rev2 = put(&db, json!({"_id": "alice", "_rev": rev1, "@context": context, "@id": "", "name": "Alice L."})).unwrap();
    assert_eq!(names_in_graph(&db, "alice"), vec![(me, "Alice L.".to_owned())], "an update replaces the graph");

    put(&db, json!({"_id": "alice", "_rev": rev2, "_deleted": true})).unwrap();
    assert!(names_in_graph(&db, "alice").is_empty(), "a deletion empties the graph");
}

#[test]
fn plain_json_has_no_graph_unless_the_database_has_a_default_context() {
    let db = database();
    put(&db, json!({"_id": "plain", "name": "Nobody"})).unwrap();
    assert!(names_in_graph(&db, "plain").is_empty());

    db.put_local("_local/rhizome-context", obj(json!({"@context": {"name": FOAF_NAME, "@base": "http://example.org/"}}))).unwrap();
    put(&db, json!({"_id": "carol", "@id": "http://example.org/carol", "name": "Carol"})).unwrap();
    assert_eq!(names_in_graph(&db, "carol"), vec![("<http://example.org/carol>".to_owned(), "Carol".to_owned())]);
}

#[test]
fn malformed_json_ld_is_refused_and_nothing_is_written() {
    let db = database();
    let seq = db.update_seq().unwrap();
    let err = put(&db, json!({"_id": "bad", "@context": {"@vocab": 5}, "name": "x"})).unwrap_err();
    assert!(matches!(&err, DocError::Validation(reason) if reason.contains("@vocab")), "{err:?}");
    assert_eq!(db.update_seq().unwrap(), seq);
    assert!(matches!(db.get_doc("bad", &ReadOptions::default()), Err(DocError::NotFound(_))));
}

fn insert_name(db: &Database, graph: &str, subject: &str, name: &str) {
    db.rdf_write(|txn| -> Result<(), DocError> {
        let q = QuadRef::new(
            NamedNodeRef::new(subject).unwrap(),
            NamedNodeRef::new(FOAF_NAME).unwrap(),
            TermRef::Literal(oxrdf::LiteralRef::new_simple_literal(name)),
            GraphNameRef::NamedNode(NamedNodeRef::new(graph).unwrap()),
        );
        let ids = txn.encode_quad(q)?;
        txn.insert(&ids)?;
        Ok(())
    })
    .unwrap();
}

#[test]
fn rdf_writes_are_document_revisions_whose_body_is_the_graph() {
    let db = database();
    let graph = format!("{BASE}/people/dave");
    insert_name(&db, &graph, "http://example.org/dave", "Dave");
    let doc = db.get_doc("dave", &ReadOptions::default()).unwrap();
    let rev1 = doc["_rev"].as_str().unwrap().to_owned();
    assert!(rev1.starts_with("1-"), "{doc:?}");
    let node = &doc["@graph"][0];
    assert_eq!(node["@id"], "http://example.org/dave");
    assert_eq!(node[FOAF_NAME], json!([{"@value": "Dave"}]));
    let changes = db.changes(&ChangesOptions::default()).unwrap();
    assert!(changes.rows.iter().any(|r| r["id"] == "dave"));

    // A graph named by an absolute IRI is the document with that id.
    insert_name(&db, "http://example.org/erin", "http://example.org/erin", "Erin");
    assert!(db.get_doc("http://example.org/erin", &ReadOptions::default()).is_ok());

    // The rendered document written back unchanged keeps the same graph.
    let mut again = doc.clone();
    again.insert("_rev".into(), Value::String(rev1));
    let rev2 = put(&db, Value::Object(again)).unwrap();
    assert!(rev2.starts_with("2-"));
    assert_eq!(names_in_graph(&db, "dave"), vec![("<http://example.org/dave>".to_owned(), "Dave".to_owned())]);

    // Emptying the graph through RDF deletes the document.
    db.rdf_write(|txn| -> Result<(), DocError> {
        let g = txn.lookup(TermRef::NamedNode(NamedNodeRef::new(&graph).unwrap()))?.unwrap();
        txn.drop_graph(g)?;
        Ok(())
    })
    .unwrap();
    assert!(matches!(db.get_doc("dave", &ReadOptions::default()), Err(DocError::NotFound(_))));
}

#[test]
fn loaded_graphs_become_documents_once() {
    let db = database();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.nt");
    std::fs::write(
        &file,
        "<http://example.org/s1> <http://xmlns.com/foaf/0.1/name> \"One\" .\n\
         <http://example.org/s2> <http://xmlns.com/foaf/0.1/name> \"Two\" .\n",
    )
    .unwrap();
    db.store().load(&[rhizome_rdf::LoadInput { path: file }], &rhizome_rdf::LoadOptions::default()).unwrap();
    assert_eq!(db.adopt_graphs(1, |_| {}).unwrap(), 2);
    assert_eq!(db.adopt_graphs(1, |_| {}).unwrap(), 0, "adoption is idempotent");
    let doc = db.get_doc("http://example.org/s2", &ReadOptions::default()).unwrap();
    assert_eq!(doc["@graph"][0][FOAF_NAME], json!([{"@value": "Two"}]));
    assert_eq!(db.info().unwrap().doc_count, 2);
}

/// A graph-bodied document renders as `oxjsonld`'s serializer writes its
/// quads in the store's order (the form reads had before they were built
/// directly), and reads back as the same triples: subjects that are IRIs
/// and blank nodes, objects of every kind, literals with languages,
/// datatypes (numbers the store inlines among them) and escapes.
#[test]
fn graph_bodies_render_as_the_json_ld_serializer_writes_their_quads() {
    use oxrdf::{BlankNode, Literal, NamedNode, NamedOrBlankNode, Quad, Term};
    let db = database();
    let graph = format!("{BASE}/people/mixed");
    let subjects: Vec<NamedOrBlankNode> = (0..5)
        .map(|i| NamedOrBlankNode::from(NamedNode::new(format!("http://example.org/s{i}")).unwrap()))
        .chain((0..2).map(|i| NamedOrBlankNode::from(BlankNode::new(format!("b{i}")).unwrap())))
        .collect();
    // `q!` sorts before `q` once quoted: a JSON object's members are in
    // the order of the unquoted keys.
    let predicates: Vec<NamedNode> = ["http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "http://example.org/p", "http://example.org/q!", "http://example.org/q", FOAF_NAME]
        .iter()
        .map(|p| NamedNode::new(*p).unwrap())
        .collect();
    let xsd = |t: &str| NamedNode::new(format!("http://www.w3.org/2001/XMLSchema#{t}")).unwrap();
    let objects: Vec<Term> = vec![
        NamedNode::new("http://example.org/s1").unwrap().into(),
        NamedNode::new("http://example.org/Class").unwrap().into(),
        BlankNode::new("b1").unwrap().into(),
        Literal::new_simple_literal("plain").into(),
        Literal::new_simple_literal("quote \" backslash \\ newline \n tab \t é 𝄞").into(),
        Literal::new_language_tagged_literal("chat", "fr-CA").unwrap().into(),
        Literal::new_language_tagged_literal("cat", "en").unwrap().into(),
        Literal::new_typed_literal("42", xsd("integer")).into(),
        Literal::new_typed_literal("-7", xsd("integer")).into(),
        Literal::new_typed_literal("123456789012345678901234567890", xsd("integer")).into(),
        Literal::new_typed_literal("2.5E0", xsd("double")).into(),
        Literal::new_typed_literal("true", xsd("boolean")).into(),
        Literal::new_typed_literal("2026-11-24", xsd("date")).into(),
        Literal::new_typed_literal("x", NamedNode::new("http://example.org/dt").unwrap()).into(),
    ];
    let g = NamedNode::new(&graph).unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let quads: Vec<Quad> = (0..80)
        .map(|_| Quad::new(subjects[next(subjects.len())].clone(), predicates[next(predicates.len())].clone(), objects[next(objects.len())].clone(), g.clone()))
        .collect();
    db.rdf_write(|txn| -> Result<(), DocError> {
        for q in &quads {
            let ids = txn.encode_quad(q.as_ref())?;
            txn.insert(&ids)?;
        }
        Ok(())
    })
    .unwrap();

    // The graph as the store holds it, in its index order.
    let snapshot = db.store().snapshot().unwrap();
    let gid = snapshot.lookup(TermRef::NamedNode(g.as_ref())).unwrap().unwrap();
    let mut stored = Vec::new();
    for q in snapshot.scan(QuadPattern { g: Some(gid), ..Default::default() }) {
        let q: [TermId; 4] = q.unwrap();
        let term = |id| snapshot.decode(id).unwrap().unwrap();
        let subject = match term(q[0]) {
            Term::NamedNode(n) => NamedOrBlankNode::from(n),
            Term::BlankNode(b) => NamedOrBlankNode::from(b),
            other => panic!("subject {other}"),
        };
        let Term::NamedNode(predicate) = term(q[1]) else { panic!("predicate") };
        stored.push(oxrdf::Triple::new(subject, predicate, term(q[2])));
    }
    assert!(stored.len() > 40, "repeats dropped, most quads kept: {}", stored.len());
    // bench/graph's storage-only read reads exactly the graph's quads.
    assert_eq!(db.read_storage_only("mixed").unwrap(), stored.len());
    assert!(matches!(db.read_storage_only("no such document"), Err(DocError::NotFound(_))));
    let mut serializer = oxjsonld::JsonLdSerializer::new().for_writer(Vec::new());
    for t in &stored {
        serializer.serialize_quad(t.as_ref().in_graph(GraphNameRef::DefaultGraph)).unwrap();
    }
    let expected: Value = serde_json::from_slice(&serializer.finish().unwrap()).unwrap();

    let doc = db.get_doc("mixed", &ReadOptions::default()).unwrap();
    assert_eq!(doc["@graph"], expected);

    // A plain read's bytes, written without building values, are what
    // serde_json writes of the document.
    let (rev, bytes) = db.get_doc_json("mixed").unwrap();
    assert_eq!(Value::String(rev.to_string()), doc["_rev"]);
    assert_eq!(String::from_utf8(bytes).unwrap(), serde_json::to_string(&doc).unwrap());

    let text = serde_json::to_vec(&json!({ "@graph": doc["@graph"] })).unwrap();
    let mut read_back: Vec<String> = oxjsonld::JsonLdParser::new().for_slice(&text).map(|q| oxrdf::Triple::from(q.unwrap()).to_string()).collect();
    let mut want: Vec<String> = stored.iter().map(|t| t.to_string()).collect();
    read_back.sort();
    want.sort();
    assert_eq!(read_back, want);
}

/// `get_doc_json`'s bytes and revision, held equal to `get_doc`'s document.
fn plain_read_as_get_doc(db: &Database, id: &str) -> Map<String, Value> {
    let doc = db.get_doc(id, &ReadOptions::default()).unwrap();
    let (rev, bytes) = db.get_doc_json(id).unwrap();
    assert_eq!(Value::String(rev.to_string()), doc["_rev"], "{id}");
    assert_eq!(String::from_utf8(bytes).unwrap(), serde_json::to_string(&doc).unwrap(), "{id}");
    doc
}

/// `get_doc_json` answers every kind of winner as `get_doc` does: a JSON
/// body with attachments, a graph-bodied revision, an emptied graph, and a
/// deleted or unknown document.
#[test]
fn plain_reads_write_the_bytes_of_the_document_get_doc_gives() {
    let db = database();
    let same = |id: &str| plain_read_as_get_doc(&db, id);
    let context = json!({"name": FOAF_NAME, "knows": {"@id": "http://xmlns.com/foaf/0.1/knows", "@type": "@id"}});
    put(&db, json!({"_id": "plain", "a": [1, "two", {"three": null}], "é": "\u{1d11e}\"\n"})).unwrap();
    let doc = same("plain");
    assert_eq!(doc["a"][1], "two");
    // A JSON body's stored bytes are copied with `_id` and `_rev` put
    // among them: keys sorting on each side of theirs, escapes in keys and
    // strings, brackets and commas inside strings, nesting, numbers.
    put(&db, json!({"_id": "tricky", "^caret": 1, "`tick": 2, "AGE": 29, "a": {"x": "}{][\",", "y": [1.5e300, -0.0, 12345678901234567890u64, -7, {"z": []}]},
                    "\"q\"": "k\u{1}\\", "é": {}, "ea": [], "t": true, "n": null})).unwrap();
    put(&db, json!({"_id": "tricky2", "^caret": 1, "`tick": [[{}], {"a": [{"b": "]"}]}], "\"q\"": "\u{7f}"})).unwrap();
    put(&db, json!({"_id": "bare"})).unwrap();
    assert_eq!(same("tricky")["a"]["x"], "}{][\",");
    assert_eq!(same("tricky2")["`tick"][1]["a"][0]["b"], "]");
    assert_eq!(same("bare").len(), 2);
    put(&db, json!({"_id": "att", "@context": context, "@id": "", "name": "Att", "knows": "plain",
                    "_attachments": {"t.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})).unwrap();
    let doc = same("att");
    assert_eq!(doc["_attachments"]["t.txt"]["stub"], true, "{doc:?}");
    // An RDF write to a new graph makes a graph-bodied document.
    let g = oxrdf::NamedNode::new(format!("{BASE}/people/made")).unwrap();
    db.rdf_write(|txn| -> Result<(), DocError> {
        for (p, o) in [(FOAF_NAME, oxrdf::Term::from(oxrdf::Literal::new_language_tagged_literal("Made", "en").unwrap())), ("http://xmlns.com/foaf/0.1/knows", oxrdf::NamedNode::new(format!("{BASE}/people/att")).unwrap().into())] {
            let q = oxrdf::Quad::new(g.clone(), oxrdf::NamedNode::new(p).unwrap(), o, g.clone());
            let ids = txn.encode_quad(q.as_ref())?;
            txn.insert(&ids)?;
        }
        Ok(())
    })
    .unwrap();
    let doc = same("made");
    assert_eq!(Value::Object(doc.clone())["@graph"][0][FOAF_NAME], json!([{"@language": "en", "@value": "Made"}]), "{doc:?}");
    // A graph-bodied document whose graph has no quads.
    put(&db, json!({"_id": "empty", "@context": context, "@id": "", "name": "E"})).unwrap();
    db.rdf_write_with(rhizome_docs::EmptiedGraphs::KeepDocumentData, |txn| -> Result<(), DocError> {
        let e = oxrdf::NamedNode::new(format!("{BASE}/people/empty")).unwrap();
        let q = oxrdf::Quad::new(e.clone(), oxrdf::NamedNode::new(FOAF_NAME).unwrap(), oxrdf::Literal::new_simple_literal("E"), e);
        let ids = txn.encode_quad(q.as_ref())?;
        txn.remove(&ids)?;
        Ok(())
    })
    .unwrap();
    if db.get_doc("empty", &ReadOptions::default()).is_ok() {
        same("empty");
    }
    let rev = db.get_doc("plain", &ReadOptions::default()).unwrap()["_rev"].as_str().unwrap().to_owned();
    put(&db, json!({"_id": "plain", "_rev": rev, "_deleted": true})).unwrap();
    for id in ["plain", "nobody"] {
        let got = db.get_doc_json(id).map(|(r, _)| r);
        let want = db.get_doc(id, &ReadOptions::default()).map(|_| ());
        assert!(matches!((&got, &want), (Err(DocError::NotFound(a)), Err(DocError::NotFound(b))) if a == b), "{id}: {got:?} / {want:?}");
    }
}

/// Reads with options (`get_doc_bytes`, `open_revs_bytes`: `GET` with
/// options, `open_revs`, `_bulk_get`) write the bytes of the documents
/// `get_doc` and `open_revs` give, and `_all_docs`' rows (`all_docs_bytes`)
/// those of `all_docs`: JSON bodies spliced with `_revisions`,
/// `_conflicts` and the rest, bodies with attachments, graph bodies,
/// deleted revisions, revisions asked for by number, and missing ones.
#[test]
fn reads_with_options_write_the_bytes_of_the_documents_they_give() {
    use rhizome_docs::{AllDocsOptions, OpenRev, OpenRevs, Rev};
    let db = database();
    let context = json!({"name": FOAF_NAME});
    let rev1 = put(&db, json!({"_id": "plain", "z": 1, "A": [true]})).unwrap();
    let rev2 = put(&db, json!({"_id": "plain", "_rev": rev1, "z": 2, "^": "é\"", "a": {}, "`": {"_x": null}})).unwrap();
    // Two conflicting branches (one deleted), as replication writes them.
    let branch = |hash: &str, deleted: bool| {
        let mut doc = obj(json!({"_id": "plain", "_rev": format!("2-{hash}"), "_revisions": {"start": 2, "ids": [hash, rev1.split_once('-').unwrap().1]}, "b": hash}));
        if deleted {
            doc.insert("_deleted".into(), json!(true));
        }
        db.update_docs(vec![doc], false).unwrap();
    };
    branch("00aa", false);
    branch("00bb", true);
    put(&db, json!({"_id": "att", "n": 1, "_attachments": {"t.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})).unwrap();
    put(&db, json!({"_id": "graph", "@context": context, "@id": "", "name": "G"})).unwrap();
    let gone = put(&db, json!({"_id": "gone", "k": "v"})).unwrap();
    let gone = put(&db, json!({"_id": "gone", "_rev": gone, "_deleted": true})).unwrap();
    // An RDF write to a new graph: a body that is the graph alone.
    insert_name(&db, &format!("{BASE}/people/rdf"), "http://example.org/r", "R");
    insert_name(&db, &format!("{BASE}/people/rdf"), "http://example.org/s", "S");
    let all = ReadOptions { revs: true, revs_info: true, conflicts: true, deleted_conflicts: true, local_seq: true, ..Default::default() };
    let rev = |r: &str| Some(Rev::parse(r).unwrap());
    let option_sets = [
        ReadOptions::default(),
        ReadOptions { revs: true, ..Default::default() },
        ReadOptions { conflicts: true, ..Default::default() },
        ReadOptions { revs: true, attachments: true, ..Default::default() },
        all.clone(),
        ReadOptions { rev: rev(&rev1), ..all.clone() },
        ReadOptions { rev: rev(&rev1), latest: true, revs: true, ..Default::default() },
        ReadOptions { rev: rev("2-00bb"), revs: true, ..Default::default() },
        ReadOptions { rev: rev(&gone), ..Default::default() },
        ReadOptions { rev: rev("9-99"), ..Default::default() },
    ];
    let mut spliced = 0;
    for id in ["plain", "att", "graph", "rdf", "gone", "nobody"] {
        for opts in &option_sets {
            let (got, want) = (db.get_doc_bytes(id, opts), db.get_doc(id, opts));
            match (got, want) {
                (Ok((rev, bytes)), Ok(doc)) => {
                    assert_eq!(String::from_utf8(bytes).unwrap(), serde_json::to_string(&doc).unwrap(), "{id} {opts:?}");
                    assert_eq!(Value::String(rev.to_string()), doc["_rev"]);
                    spliced += usize::from(id == "plain");
                }
                (Err(DocError::NotFound(a)), Err(DocError::NotFound(b))) => assert_eq!(a, b, "{id} {opts:?}"),
                (got, want) => panic!("{id} {opts:?}: {got:?} / {want:?}"),
            }
            let missing = Rev::parse("1-ffff").unwrap();
            for which in [OpenRevs::All, OpenRevs::List(vec![Rev::parse(&rev2).unwrap(), missing, Rev::parse("2-00bb").unwrap()])] {
                let (got, want) = (db.open_revs_bytes(id, &which, opts), db.open_revs(id, &which, opts));
                let (got, want) = match (got, want) {
                    (Ok(got), Ok(want)) => (got, want),
                    (Err(DocError::NotFound(a)), Err(DocError::NotFound(b))) if a == b => continue,
                    (got, want) => panic!("{id} {which:?} {opts:?}: {got:?} / {want:?}"),
                };
                assert_eq!(got.len(), want.len(), "{id} {which:?}");
                for (g, w) in got.into_iter().zip(want) {
                    match (g, w) {
                        (OpenRev::Ok(bytes), OpenRev::Ok(doc)) => assert_eq!(String::from_utf8(bytes).unwrap(), serde_json::to_string(&doc).unwrap(), "{id} {which:?} {opts:?}"),
                        (OpenRev::Missing(a), OpenRev::Missing(b)) => assert_eq!(a, b),
                        (g, w) => panic!("{id} {which:?} {opts:?}: {g:?} / {w:?}"),
                    }
                }
            }
        }
    }
    assert!(spliced >= 7, "the JSON document was read with most option sets: {spliced}");
    // `_all_docs`' rows, the same way (`all_docs_bytes`).
    let keys = ["plain", "gone", "nobody", "att", "graph", "rdf"].map(str::to_owned).to_vec();
    for opts in [
        AllDocsOptions::default(),
        AllDocsOptions { include_docs: true, ..Default::default() },
        AllDocsOptions { include_docs: true, conflicts: true, attachments: true, ..Default::default() },
        AllDocsOptions { include_docs: true, conflicts: true, keys: Some(keys), ..Default::default() },
        AllDocsOptions { include_docs: true, descending: true, skip: 1, limit: Some(2), ..Default::default() },
    ] {
        let (got, want) = (db.all_docs_bytes(&opts).unwrap(), db.all_docs(&opts).unwrap());
        assert_eq!((got.total_rows, got.offset, got.update_seq), (want.total_rows, want.offset, want.update_seq));
        let got: Vec<String> = got.rows.into_iter().map(|row| String::from_utf8(row).unwrap()).collect();
        let want: Vec<String> = want.rows.iter().map(Value::to_string).collect();
        assert_eq!(got, want, "{opts:?}");
    }
    // What the replication reads rely on, spelled out once.
    let (_, bytes) = db.get_doc_bytes("plain", &ReadOptions { revs: true, conflicts: true, ..Default::default() }).unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["_revisions"]["start"], 2);
    assert_eq!(doc["_conflicts"].as_array().map(Vec::len), Some(1), "{doc}");
    assert_eq!((&doc["^"], &doc["z"]), (&json!("é\""), &json!(2)), "{doc}");
}

/// A plain read of a winner whose body is its graph alone skips the body,
/// by what the document record says. The record follows the winner: a
/// replicated JSON revision that wins, the graph-bodied leaf winning again
/// when that one is deleted, a losing revision that leaves it the winner,
/// and a graph-bodied revision with attachments (its body is needed). Each
/// read gives the bytes of `get_doc`.
#[test]
fn the_document_record_says_when_the_winners_body_is_its_graph_alone() {
    let db = database();
    let graph_body = |id: &str| {
        let snapshot = db.store().snapshot().unwrap();
        let bytes = snapshot.kv().get(rhizome_docs::keys::DOCS, id.as_bytes()).unwrap().unwrap();
        rhizome_docs::keys::DocInfo::from_bytes(id, &bytes).unwrap().graph_body
    };
    let same = |id: &str| plain_read_as_get_doc(&db, id);
    let graph = format!("{BASE}/people/gina");
    insert_name(&db, &graph, "http://example.org/gina", "Gina");
    assert_eq!(graph_body("gina").as_deref(), Some(graph.as_str()));
    let first = same("gina")["_rev"].as_str().unwrap().to_owned();
    // A replicated JSON-LD revision on another branch, deeper: it wins.
    let json_rev = format!("2-{}", "f".repeat(32));
    let doc = json!({"_id": "gina", "_rev": json_rev, "_revisions": {"start": 2, "ids": ["f".repeat(32), "0".repeat(32)]},
                     "@context": {"name": FOAF_NAME}, "@id": "http://example.org/gina", "name": "Gina J."});
    assert!(db.update_docs(vec![obj(doc)], false).unwrap()[0].1.is_ok());
    assert_eq!(graph_body("gina"), None);
    assert_eq!(same("gina")["_rev"], json!(json_rev));
    // Deleting it makes the graph-bodied leaf the winner again.
    put(&db, json!({"_id": "gina", "_rev": json_rev, "_deleted": true})).unwrap();
    assert_eq!(graph_body("gina").as_deref(), Some(graph.as_str()));
    let doc = same("gina");
    assert_eq!(doc["_rev"], json!(first));
    assert_eq!(Value::Object(doc)["@graph"][0][FOAF_NAME], json!([{"@value": "Gina J."}]), "the graph the JSON-LD winner left");
    // A losing revision leaves the winner and what its record says.
    let loser = format!("1-{}", "0".repeat(31) + "1");
    let doc = json!({"_id": "gina", "_rev": loser, "_revisions": {"start": 1, "ids": ["0".repeat(31) + "1"]}, "name": "Loser"});
    assert!(db.update_docs(vec![obj(doc)], false).unwrap()[0].1.is_ok());
    assert_eq!(same("gina")["_rev"], json!(first), "the stored winner stays");
    assert_eq!(graph_body("gina").as_deref(), Some(graph.as_str()));
    // A document with attachments after an RDF write to its graph: its
    // body holds them, so the record does not say "graph alone".
    let context = json!({"name": FOAF_NAME});
    put(&db, json!({"_id": "hal", "@context": context, "@id": "", "name": "Hal",
                    "_attachments": {"t.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})).unwrap();
    insert_name(&db, &format!("{BASE}/people/hal"), "http://example.org/hal2", "Hal 2");
    let doc = same("hal");
    assert_eq!(doc["_attachments"]["t.txt"]["stub"], true, "{doc:?}");
    assert!(doc["_rev"].as_str().unwrap().starts_with("2-"), "{doc:?}");
    assert_eq!(graph_body("hal"), None);
    // A document whose id is its graph's IRI: the record does not repeat it.
    insert_name(&db, "http://example.org/ivy", "http://example.org/ivy", "Ivy");
    assert_eq!(graph_body("http://example.org/ivy").as_deref(), Some("http://example.org/ivy"));
    same("http://example.org/ivy");
}

/// A document's JSON-LD is parsed before its write's transaction (group
/// commit does it on each request's thread). If the database's default
/// context changes between that parse and the write, the write follows
/// the context it is committed under, as a write parsed in its
/// transaction does. A replicated revision that loses leaves the winner's
/// graph as it was.
#[test]
fn a_graph_parsed_ahead_follows_the_default_context_the_write_commits_under() {
    let db = database();
    let context = |name: &str| obj(json!({"@context": {"name": name, "@base": "http://example.org/"}}));
    let rev = db.put_local("_local/rhizome-context", context("http://example.org/old-name")).unwrap();
    let docs = vec![obj(json!({"_id": "dave", "@id": "http://example.org/dave", "name": "Dave"}))];
    let prepared = db.prepare_docs(&docs, true, rhizome_docs::Writer::Admin).unwrap();
    let mut new = context(FOAF_NAME);
    new.insert("_rev".into(), json!(rev));
    db.put_local("_local/rhizome-context", new).unwrap();
    let out = db.update_prepared(docs, prepared, true).unwrap();
    assert!(out[0].1.is_ok(), "{:?}", out[0].1);
    assert_eq!(names_in_graph(&db, "dave"), vec![("<http://example.org/dave>".to_owned(), "Dave".to_owned())]);
    // Unchanged context: the parse done ahead is the graph written.
    let docs = vec![obj(json!({"_id": "erin", "@id": "http://example.org/erin", "name": "Erin"}))];
    let prepared = db.prepare_docs(&docs, true, rhizome_docs::Writer::Admin).unwrap();
    db.update_prepared(docs, prepared, true).unwrap();
    assert_eq!(names_in_graph(&db, "erin"), vec![("<http://example.org/erin>".to_owned(), "Erin".to_owned())]);
    // A replicated revision that loses to the stored winner: the winner's
    // graph stays, whatever was parsed for the loser.
    let winner = db.update_docs(vec![obj(json!({"_id": "erin", "_rev": out_rev(&db, "erin"), "@id": "http://example.org/erin", "name": "Erin W."}))], true).unwrap();
    assert!(winner[0].1.is_ok());
    let loser = vec![obj(json!({"_id": "erin", "_rev": "1-0000", "_revisions": {"start": 1, "ids": ["0000"]}, "@id": "http://example.org/erin", "name": "Loser"}))];
    let prepared = db.prepare_docs(&loser, false, rhizome_docs::Writer::Admin).unwrap();
    let out = db.update_prepared(loser, prepared, false).unwrap();
    assert!(out[0].1.is_ok(), "{:?}", out[0].1);
    assert_eq!(names_in_graph(&db, "erin"), vec![("<http://example.org/erin>".to_owned(), "Erin W.".to_owned())]);
    // A body with its own context at its top is read with that one alone,
    // whatever the default context becomes meanwhile.
    let docs = vec![obj(json!({"_id": "fay", "@context": {"name": FOAF_NAME}, "@id": "http://example.org/fay", "name": "Fay"}))];
    let prepared = db.prepare_docs(&docs, true, rhizome_docs::Writer::Admin).unwrap();
    let mut newer = context("http://example.org/newer-name");
    newer.insert("_rev".into(), json!(db.get_local("_local/rhizome-context").unwrap()["_rev"]));
    db.put_local("_local/rhizome-context", newer).unwrap();
    let out = db.update_prepared(docs, prepared, true).unwrap();
    assert!(out[0].1.is_ok(), "{:?}", out[0].1);
    assert_eq!(names_in_graph(&db, "fay"), vec![("<http://example.org/fay>".to_owned(), "Fay".to_owned())]);
}

fn out_rev(db: &Database, id: &str) -> String {
    db.get_doc(id, &ReadOptions::default()).unwrap()["_rev"].as_str().unwrap().to_owned()
}

/// Documents whose terms the shared term cache holds in whole dictionary
/// chunks (past the first thousand terms) read back with their own terms:
/// each of 1,500 graph-bodied documents names itself, a string of its own
/// and the next document, and every plain read, the first (which loads the
/// chunks) and the second (which finds them), gives exactly those, in the
/// bytes `get_doc` gives.
#[test]
fn documents_read_through_whole_dictionary_chunks_name_their_own_terms() {
    let db = database();
    let n = 1500;
    let iri = |i: usize| format!("{BASE}/people/d{i}");
    db.rdf_write(|txn| -> Result<(), DocError> {
        for i in 0..n {
            let (me, next) = (oxrdf::NamedNode::new(iri(i)).unwrap(), oxrdf::NamedNode::new(iri((i + 1) % n)).unwrap());
            let name = oxrdf::Literal::new_simple_literal(format!("the name of document number {i}"));
            for (p, o) in [(FOAF_NAME, oxrdf::Term::from(name)), ("http://xmlns.com/foaf/0.1/knows", next.into())] {
                let ids = txn.encode_quad(oxrdf::Quad::new(me.clone(), oxrdf::NamedNode::new(p).unwrap(), o, me.clone()).as_ref())?;
                txn.insert(&ids)?;
            }
        }
        Ok(())
    })
    .unwrap();
    for pass in 0..2 {
        for i in 0..n {
            let doc = Value::Object(plain_read_as_get_doc(&db, &format!("d{i}")));
            let node = &doc["@graph"][0];
            assert_eq!(node["@id"], json!(iri(i)), "pass {pass}");
            assert_eq!(node[FOAF_NAME], json!([{"@value": format!("the name of document number {i}")}]), "pass {pass}");
            assert_eq!(node["http://xmlns.com/foaf/0.1/knows"], json!([{"@id": iri((i + 1) % n)}]), "pass {pass}");
        }
    }
    assert!(db.store().snapshot().unwrap().term_cache().dense_terms() > 2000, "the reads went through whole chunks");
}

/// A document's record says when its graph is known to hold no quad (a
/// plain JSON winner, a deletion), so its next write need not look for a
/// graph to drop; a JSON-LD winner's graph is not empty, and every write
/// to the graph other than the document's own (an RDF write, a bulk load
/// into the graph of a document that exists) makes it "not known" again,
/// so the next JSON write still leaves the graph exactly its projection.
#[test]
fn the_document_record_says_when_its_graph_is_empty_and_other_graph_writes_unsay_it() {
    let db = database();
    let graph_empty = |id: &str| {
        let snapshot = db.store().snapshot().unwrap();
        let bytes = snapshot.kv().get(rhizome_docs::keys::DOCS, id.as_bytes()).unwrap().unwrap();
        rhizome_docs::keys::DocInfo::from_bytes(id, &bytes).unwrap().graph_empty
    };
    let context = json!({"name": FOAF_NAME});
    let me = format!("<{BASE}/people/lee>");
    // Plain JSON, then JSON-LD, then plain again, then deleted.
    let rev = put(&db, json!({"_id": "lee", "name": "Lee"})).unwrap();
    assert!(graph_empty("lee"));
    let rev = put(&db, json!({"_id": "lee", "_rev": rev, "@context": context, "@id": "", "name": "Lee"})).unwrap();
    assert!(!graph_empty("lee"));
    assert_eq!(names_in_graph(&db, "lee"), vec![(me.clone(), "Lee".to_owned())]);
    let rev = put(&db, json!({"_id": "lee", "_rev": rev, "name": "Lee"})).unwrap();
    assert!(graph_empty("lee"));
    assert!(names_in_graph(&db, "lee").is_empty());
    let rev = put(&db, json!({"_id": "lee", "_rev": rev, "@context": context, "@id": "", "name": "Lee"})).unwrap();
    put(&db, json!({"_id": "lee", "_rev": rev, "_deleted": true})).unwrap();
    assert!(graph_empty("lee") && names_in_graph(&db, "lee").is_empty());

    // An RDF write into a plain document's graph: the document's body is
    // now the graph, and a JSON write over it replaces the graph.
    let rev = put(&db, json!({"_id": "max", "name": "Max"})).unwrap();
    assert!(graph_empty("max"));
    insert_name(&db, &format!("{BASE}/people/max"), "http://example.org/max", "Max");
    assert!(!graph_empty("max"));
    let rev2 = db.get_doc("max", &ReadOptions::default()).unwrap()["_rev"].as_str().unwrap().to_owned();
    assert_ne!(rev, rev2);
    put(&db, json!({"_id": "max", "_rev": rev2, "name": "Max"})).unwrap();
    assert!(graph_empty("max"));
    assert!(names_in_graph(&db, "max").is_empty());

    // A bulk load into the graph of a plain document that exists: the
    // document keeps its body (adoption makes documents of new graphs
    // only), its record no longer says "empty", and its next write
    // replaces what the load put there.
    let rev = put(&db, json!({"_id": "ned", "name": "Ned"})).unwrap();
    assert!(graph_empty("ned"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.nq");
    std::fs::write(&file, format!("<http://example.org/ned> <{FOAF_NAME}> \"Ned\" <{BASE}/people/ned> .\n")).unwrap();
    db.store().load(&[rhizome_rdf::LoadInput { path: file }], &rhizome_rdf::LoadOptions::default()).unwrap();
    assert_eq!(names_in_graph(&db, "ned").len(), 1);
    db.adopt_graphs(10, |_| {}).unwrap();
    assert!(!graph_empty("ned"));
    put(&db, json!({"_id": "ned", "_rev": rev, "name": "Ned"})).unwrap();
    assert!(names_in_graph(&db, "ned").is_empty(), "the write's projection replaced the loaded graph");
    assert!(graph_empty("ned"));
}
