//! Document semantics over a memory store: writes, conflicts, replication
//! writes, changes, all_docs, attachments, local documents.

use rhizome_docs::*;
use serde_json::{json, Map, Value};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn put(db: &Database, v: Value) -> Result<Rev, DocError> {
    let mut out = db.update_docs(vec![obj(v)], true).expect("store ok");
    out.remove(0).1
}

#[test]
fn edits_conflict_on_stale_revisions_and_deletes_count() {
    let db = Database::memory();
    let r1 = put(&db, json!({"_id": "a", "x": 1})).unwrap();
    assert_eq!(r1.pos, 1);
    assert!(matches!(put(&db, json!({"_id": "a", "x": 2})), Err(DocError::Conflict)));
    let r2 = put(&db, json!({"_id": "a", "_rev": r1.to_string(), "x": 2})).unwrap();
    assert!(matches!(put(&db, json!({"_id": "a", "_rev": r1.to_string(), "x": 3})), Err(DocError::Conflict)));
    // The same edit made twice gives the same revision id (deterministic).
    let db2 = Database::memory();
    assert_eq!(put(&db2, json!({"_id": "a", "x": 1})).unwrap(), r1);
    let doc = db.get_doc("a", &ReadOptions { revs: true, ..Default::default() }).unwrap();
    assert_eq!(doc["x"], 2);
    assert_eq!(doc["_revisions"]["ids"].as_array().unwrap().len(), 2);
    put(&db, json!({"_id": "a", "_rev": r2.to_string(), "_deleted": true})).unwrap();
    assert!(matches!(db.get_doc("a", &ReadOptions::default()), Err(DocError::NotFound("deleted"))));
    let info = db.info().unwrap();
    assert_eq!((info.doc_count, info.doc_del_count, info.update_seq), (0, 1, 3));
    assert!(matches!(put(&db, json!({"_id": "_bad"})), Err(DocError::BadRequest(_))));
    assert!(matches!(put(&db, json!({"_id": "b", "_foo": 1})), Err(DocError::Validation(_))));
}

#[test]
fn replicated_branches_make_conflicts_with_the_couchdb_winner() {
    let db = Database::memory();
    let w = |rev: &str, ids: Value| obj(json!({"_id": "d", "_rev": rev, "_revisions": {"start": rev[..1].parse::<u64>().unwrap(), "ids": ids}, "v": rev}));
    let out = db.update_docs(vec![w("2-aaa", json!(["aaa", "root"])), w("2-bbb", json!(["bbb", "root"]))], false).unwrap();
    assert!(out.iter().all(|(_, r)| r.is_ok()));
    let doc = db.get_doc("d", &ReadOptions { conflicts: true, ..Default::default() }).unwrap();
    assert_eq!(doc["_rev"], "2-bbb");
    assert_eq!(doc["_conflicts"], json!(["2-aaa"]));
    let all = db.open_revs("d", &OpenRevs::All, &ReadOptions::default()).unwrap();
    assert_eq!(all.len(), 2);
    let diff = db.revs_diff(&obj(json!({"d": ["2-aaa", "3-ccc"], "e": ["1-x"]}))).unwrap();
    assert_eq!(diff["d"]["missing"], json!(["3-ccc"]));
    assert_eq!(diff["e"]["missing"], json!(["1-x"]));
    // Stemming at revs_limit keeps the last revisions of each branch.
    db.set_revs_limit(2).unwrap();
    let ids: Vec<String> = (1..=5).rev().map(|i| format!("h{i}")).collect();
    db.update_docs(vec![obj(json!({"_id": "s", "_rev": "5-h5", "_revisions": {"start": 5, "ids": ids}}))], false).unwrap();
    let doc = db.get_doc("s", &ReadOptions { revs: true, ..Default::default() }).unwrap();
    assert_eq!(doc["_revisions"], json!({"start": 5, "ids": ["h5", "h4"]}));
}

#[test]
fn changes_and_all_docs_follow_the_last_write_of_each_document() {
    let db = Database::memory();
    for id in ["c", "a", "b"] {
        put(&db, json!({"_id": id, "kind": id})).unwrap();
    }
    let a = db.get_doc("a", &ReadOptions::default()).unwrap();
    put(&db, json!({"_id": "a", "_rev": a["_rev"], "kind": "z"})).unwrap();
    let ch = db.changes(&ChangesOptions::default()).unwrap();
    let ids: Vec<&str> = ch.rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["c", "b", "a"]);
    assert_eq!(ch.last_seq, 4);
    let since = db.changes(&ChangesOptions { since: 2, ..Default::default() }).unwrap();
    assert_eq!(since.rows.len(), 2);
    let sel = db.changes(&ChangesOptions { filter: ChangesFilter::Selector(json!({"kind": {"$gt": "b"}})), ..Default::default() }).unwrap();
    assert_eq!(sel.rows.len(), 2);
    let all = db.all_docs(&AllDocsOptions::default()).unwrap();
    let ids: Vec<&str> = all.rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    let desc = db.all_docs(&AllDocsOptions { descending: true, start_key: Some("b".into()), limit: Some(5), ..Default::default() }).unwrap();
    assert_eq!(desc.rows.len(), 2);
    let range = db.all_docs(&AllDocsOptions { start_key: Some("a".into()), end_key: Some("c".into()), inclusive_end: false, ..Default::default() }).unwrap();
    assert_eq!(range.rows.len(), 2);
}

#[test]
fn attachments_are_stored_by_digest_and_kept_through_stubs() {
    let db = Database::memory();
    let r1 = put(&db, json!({"_id": "a", "_attachments": {"t.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}})).unwrap();
    let att = db.attachment("a", "t.txt", None).unwrap();
    assert_eq!(att.data, b"hello");
    assert_eq!(att.digest, attachment_digest(b"hello"));
    let r2 = put(&db, json!({"_id": "a", "_rev": r1.to_string(), "x": 1, "_attachments": {"t.txt": {"stub": true}}})).unwrap();
    let doc = db.get_doc("a", &ReadOptions { attachments: true, ..Default::default() }).unwrap();
    assert_eq!(doc["_attachments"]["t.txt"]["data"], "aGVsbG8=");
    assert_eq!(doc["_attachments"]["t.txt"]["revpos"], 1);
    assert!(matches!(
        put(&db, json!({"_id": "a", "_rev": r2.to_string(), "_attachments": {"n": {"stub": true}}})),
        Err(DocError::MissingStub(_))
    ));
    assert_eq!(db.put_local("_local/x", obj(json!({"a": 1}))).unwrap(), "0-1");
    assert!(matches!(db.put_local("_local/x", obj(json!({"a": 2}))), Err(DocError::Conflict)));
    assert_eq!(db.put_local("_local/x", obj(json!({"_rev": "0-1", "a": 2}))).unwrap(), "0-2");
}

/// Records what the hook sees, and inserts one quad per projected winner
/// through the same transaction; fails for ids starting with `fail`.
struct Recorder(std::sync::Mutex<Vec<(String, Option<String>)>>);

impl GraphProjector for Recorder {
    fn project(&self, txn: &mut rhizome_rdf::StoreTransaction<'_>, id: &str, winner: Option<&Map<String, Value>>) -> Result<(), String> {
        if id.starts_with("fail") {
            return Err("refused".into());
        }
        let rev = winner.and_then(|w| w.get("_rev")).and_then(Value::as_str).map(str::to_owned);
        self.0.lock().unwrap().push((id.to_owned(), rev));
        let s = oxrdf::NamedNode::new(format!("http://example.org/{id}")).map_err(|e| e.to_string())?;
        let q = oxrdf::Quad::new(s.clone(), s.clone(), oxrdf::Literal::new_simple_literal("x"), oxrdf::GraphName::DefaultGraph);
        let q = txn.encode_quad(q.as_ref()).map_err(|e| e.to_string())?;
        txn.insert(&q).map_err(|e| e.to_string())?;
        Ok(())
    }
}

#[test]
fn the_projection_hook_sees_each_new_winner_in_the_write_transaction_and_can_abort_it() {
    let recorder = std::sync::Arc::new(Recorder(Default::default()));
    let db = Database::memory_with(recorder.clone());
    let r1 = put(&db, json!({"_id": "a", "v": 1})).unwrap();
    // A losing replicated branch does not change the winner: no call.
    db.update_docs(vec![obj(json!({"_id": "a", "_rev": "1-0000", "v": 0}))], false).unwrap();
    let r2 = put(&db, json!({"_id": "a", "_rev": r1.to_string(), "_deleted": true})).unwrap();
    let calls = recorder.0.lock().unwrap().clone();
    // After the delete, the live conflict 1-0000 wins: the hook gets its body.
    assert_eq!(calls, vec![("a".to_owned(), Some(r1.to_string())), ("a".to_owned(), Some("1-0000".to_owned()))]);
    assert!(r2.pos == 2);
    assert_eq!(db.store().snapshot().unwrap().scan(Default::default()).count(), 1, "quads written in the document's transaction");
    // A refusing projection aborts the whole write.
    let before = db.info().unwrap();
    assert!(matches!(db.update_docs(vec![obj(json!({"_id": "b"})), obj(json!({"_id": "fail-1"}))], true), Err(DocError::Projection { .. })));
    assert_eq!(db.info().unwrap(), before);
    assert!(matches!(db.get_doc("b", &ReadOptions::default()), Err(DocError::NotFound(_))));
}

#[test]
fn old_revisions_keep_their_bodies_until_compaction() {
    let db = Database::memory();
    let r1 = put(&db, json!({"_id": "a", "v": 1})).unwrap();
    let r2 = put(&db, json!({"_id": "a", "_rev": r1.to_string(), "v": 2})).unwrap();
    let r3 = put(&db, json!({"_id": "a", "_rev": r2.to_string(), "_deleted": true})).unwrap();
    let at = |rev: &Rev| db.get_doc("a", &ReadOptions { rev: Some(rev.clone()), ..Default::default() });
    assert_eq!(at(&r1).unwrap()["v"], 1, "CouchDB reads an old revision until compaction");
    assert_eq!(at(&r2).unwrap()["v"], 2);
    let statuses = |db: &Database| -> Vec<Value> {
        let d = db.get_doc("a", &ReadOptions { rev: Some(r3.clone()), revs_info: true, ..Default::default() }).unwrap();
        d["_revs_info"].as_array().unwrap().iter().map(|i| i["status"].clone()).collect()
    };
    assert_eq!(statuses(&db), vec![json!("deleted"), json!("available"), json!("available")]);
    put(&db, json!({"_id": "b", "v": 1})).unwrap();
    assert_eq!(db.compact().unwrap(), Compacted { bodies: 2, attachments: 0 });
    assert!(matches!(at(&r1), Err(DocError::NotFound("missing"))));
    assert_eq!(statuses(&db), vec![json!("deleted"), json!("missing"), json!("missing")]);
    assert_eq!(db.get_doc("b", &ReadOptions::default()).unwrap()["v"], 1, "leaves are kept");
    assert_eq!(db.compact().unwrap(), Compacted::default(), "nothing left to drop");
}

#[test]
fn compaction_drops_attachment_data_no_revision_refers_to() {
    let db = Database::memory();
    let att = |data: &str| json!({ "f.txt": { "content_type": "text/plain", "data": data } });
    let r1 = put(&db, json!({"_id": "a", "_attachments": att("b2xk")})).unwrap(); // "old"
    put(&db, json!({"_id": "shared", "_attachments": att("c2hhcmVk")})).unwrap(); // "shared"
    put(&db, json!({"_id": "a", "_rev": r1.to_string(), "_attachments": att("c2hhcmVk")})).unwrap();
    // The old revision still reads its attachment before compaction.
    assert_eq!(db.attachment("a", "f.txt", Some(&r1)).unwrap().data, b"old");
    assert_eq!(db.compact().unwrap(), Compacted { bodies: 1, attachments: 1 });
    assert_eq!(db.attachment("a", "f.txt", None).unwrap().data, b"shared");
    assert_eq!(db.attachment("shared", "f.txt", None).unwrap().data, b"shared");
}

#[test]
fn stemmed_revisions_read_as_missing_at_once_and_lose_their_bodies_at_compaction() {
    let db = Database::memory();
    db.set_revs_limit(2).unwrap();
    let mut rev = put(&db, json!({"_id": "a", "v": 0})).unwrap();
    let first = rev.clone();
    for v in 1..5 {
        rev = put(&db, json!({"_id": "a", "_rev": rev.to_string(), "v": v})).unwrap();
    }
    // The tree keeps two revisions: the leaf and its parent. The three
    // stemmed ones read as missing at once; their bodies wait for
    // compaction with the parent's (no delete per write).
    assert!(matches!(db.get_doc("a", &ReadOptions { rev: Some(first), ..Default::default() }), Err(DocError::NotFound("missing"))));
    assert_eq!(db.compact().unwrap(), Compacted { bodies: 4, attachments: 0 });
}

#[test]
fn pending_counts_the_changes_a_limit_left_out() {
    let db = Database::memory();
    let docs: Vec<_> = (0..10_005).map(|i| obj(json!({ "_id": format!("d{i:05}") }))).collect();
    db.update_docs(docs, true).unwrap();
    let first = db.changes(&ChangesOptions { limit: Some(1), ..Default::default() }).unwrap();
    // Past the counted part, the span of sequence numbers left.
    assert_eq!((first.rows.len(), first.last_seq, first.pending), (1, 1, 10_004));
    let near_end = db.changes(&ChangesOptions { since: 10_000, limit: Some(2), ..Default::default() }).unwrap();
    assert_eq!(near_end.pending, 3);
    let all = db.changes(&ChangesOptions { since: 10_000, ..Default::default() }).unwrap();
    assert_eq!((all.rows.len(), all.pending), (5, 0));
    // A document changed again is one change left, not two.
    let rev = db.get_doc("d00000", &ReadOptions::default()).unwrap()["_rev"].clone();
    let rev2 = put(&db, json!({ "_id": "d00000", "_rev": rev, "v": 1 })).unwrap();
    put(&db, json!({ "_id": "d00000", "_rev": rev2.to_string(), "v": 2 })).unwrap();
    let tail = db.changes(&ChangesOptions { since: 10_004, limit: Some(1), ..Default::default() }).unwrap();
    assert_eq!((tail.rows[0]["id"].as_str(), tail.pending), (Some("d10004"), 1));
}

/// Writes skip looking for validation functions while a database has had
/// no design document: that must never hide one, whichever way it comes
/// (a write, a replicated revision, a store reopened with one).
#[test]
fn a_database_knows_it_may_have_design_documents_once_one_is_written_or_stored() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Database::open(dir.path(), std::sync::Arc::new(NoProjection)).unwrap();
    {
        let db = open();
        assert!(!db.may_have_design_docs());
        db.update_docs(vec![obj(json!({"_id": "plain"}))], true).unwrap();
        assert!(!db.may_have_design_docs(), "a plain document is no design document");
        let out = db.update_docs(vec![obj(json!({"_id": "_design/d", "_rev": "1-abc", "_revisions": {"start": 1, "ids": ["abc"]}}))], false).unwrap();
        assert!(out[0].1.is_ok());
        assert!(db.may_have_design_docs(), "a replicated design document counts");
    }
    // Reopened: found in the store.
    assert!(open().may_have_design_docs());
    let fresh = tempfile::tempdir().unwrap();
    let db = Database::open(fresh.path(), std::sync::Arc::new(NoProjection)).unwrap();
    db.update_docs(vec![obj(json!({"_id": "_design/v", "views": {}}))], true).unwrap();
    assert!(db.may_have_design_docs());
}
