//! `Database::rdf_write`, the one path of RDF writes into a database: what
//! the closure writes is committed when it succeeds and dropped when it
//! fails.

use oxrdf::{NamedNodeRef, QuadRef};
use rhizome_docs::{Database, DocError};
use rhizome_rdf::QuadPattern;

fn quad() -> QuadRef<'static> {
    let n = |s| NamedNodeRef::new_unchecked(s);
    QuadRef::new(n("http://example.org/s"), n("http://example.org/p"), n("http://example.org/o"), n("http://example.org/g"))
}

fn quads(db: &Database) -> usize {
    db.store().snapshot().unwrap().scan(QuadPattern::default()).count()
}

#[test]
fn a_successful_rdf_write_is_committed() {
    let db = Database::memory();
    let inserted = db
        .rdf_write(|txn| {
            let q = txn.encode_quad(quad())?;
            Ok::<_, DocError>(txn.insert(&q)?)
        })
        .unwrap();
    assert!(inserted);
    assert_eq!(quads(&db), 1);
}

#[test]
fn a_failed_rdf_write_leaves_nothing() {
    let db = Database::memory();
    let outcome: Result<(), DocError> = db.rdf_write(|txn| {
        let q = txn.encode_quad(quad())?;
        txn.insert(&q)?;
        Err(DocError::BadRequest("refused after writing".into()))
    });
    assert!(matches!(outcome, Err(DocError::BadRequest(_))));
    assert_eq!(quads(&db), 0);
}

#[test]
fn a_graph_bodied_revision_drops_its_older_body_at_once() {
    // Its body is the graph as it is now, so an older revision cannot be
    // read back as it was; it reads as missing rather than as new content.
    let db = Database::memory();
    let n = |s| NamedNodeRef::new_unchecked(s);
    let mut revs = Vec::new();
    for o in ["http://example.org/o1", "http://example.org/o2"] {
        db.rdf_write(|txn| {
            let q = txn.encode_quad(QuadRef::new(n("http://example.org/s"), n("http://example.org/p"), n(o), n("http://example.org/g")))?;
            Ok::<_, DocError>(txn.insert(&q)?)
        })
        .unwrap();
        let doc = db.get_doc("http://example.org/g", &rhizome_docs::ReadOptions::default()).unwrap();
        revs.push(rhizome_docs::Rev::parse(doc["_rev"].as_str().unwrap()).unwrap());
    }
    let read = |rev: &rhizome_docs::Rev| db.get_doc("http://example.org/g", &rhizome_docs::ReadOptions { rev: Some(rev.clone()), ..Default::default() });
    assert!(matches!(read(&revs[0]), Err(DocError::NotFound("missing"))));
    assert!(format!("{:?}", read(&revs[1]).unwrap()).contains("http://example.org/o1"), "the winner renders the whole graph");
}
