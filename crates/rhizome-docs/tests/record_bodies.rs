//! A document's record keeps its winner's body (format 3, `DocInfo::body`):
//! one read for a winner, no `BODIES` key for it. Other leaves (conflicts)
//! and older revisions keep theirs in `BODIES`; a store written before
//! (records without bodies, every body in `BODIES`) opens and reads as it
//! did, and each record takes the new form when its document is next
//! written.

use rhizome_docs::keys::{self, body_key, DocInfo, BODIES, DB_META, DOCS};
use rhizome_docs::*;
use serde_json::{json, Map, Value};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn put(db: &Database, v: Value) -> Rev {
    let mut out = db.update_docs(vec![obj(v)], true).expect("store ok");
    out.remove(0).1.expect("written")
}

fn replicate(db: &Database, v: Value) {
    let out = db.update_docs(vec![obj(v)], false).expect("store ok");
    assert!(out[0].1.is_ok(), "{:?}", out[0].1);
}

fn records(db: &Database) -> Vec<(String, Vec<u8>)> {
    let s = db.store().snapshot().unwrap();
    let mut cursor = s.kv().cursor(DOCS, &[], None);
    cursor.seek_first();
    let mut out = Vec::new();
    while cursor.valid() {
        out.push((String::from_utf8(cursor.key().to_vec()).unwrap(), cursor.value().to_vec()));
        cursor.next();
    }
    out
}

fn kept_body(db: &Database, id: &str) -> Option<Vec<u8>> {
    let s = db.store().snapshot().unwrap();
    let bytes = s.kv().get(DOCS, id.as_bytes()).unwrap().expect("a record");
    DocInfo::from_bytes(id, &bytes).unwrap().body
}

fn format_version(db: &Database) -> u64 {
    let s = db.store().snapshot().unwrap();
    keys::u64_value(s.kv().get(DB_META, keys::meta::FORMAT_VERSION).unwrap(), "format").unwrap()
}

/// A body kept in a record is never also in `BODIES`, and every leaf has
/// its body somewhere.
fn check_bodies_are_where_they_belong(db: &Database) {
    let s = db.store().snapshot().unwrap();
    for (id, bytes) in records(db) {
        let info = DocInfo::from_bytes(&id, &bytes).unwrap();
        let in_bodies = |r: &Rev| s.kv().get(BODIES, &body_key(&id, r)).unwrap().is_some();
        if info.body.is_some() {
            assert!(!in_bodies(&info.winner), "{id}: the winner's body both in its record and in BODIES");
        }
        for leaf in info.tree.leaves() {
            let kept = info.body.is_some() && leaf.rev == info.winner;
            assert!(kept || in_bodies(&leaf.rev), "{id} {}: a leaf without its body", leaf.rev);
        }
    }
}

/// The revisions of `id` this test reads one by one.
fn revs_of(db: &Database, id: &str) -> Vec<Rev> {
    let s = db.store().snapshot().unwrap();
    let bytes = s.kv().get(DOCS, id.as_bytes()).unwrap().expect("a record");
    DocInfo::from_bytes(id, &bytes).unwrap().tree.revs().cloned().collect()
}

/// What every door that reads bodies gives, as text.
fn everything(db: &Database, ids: &[&str], revs: &[(String, Rev)]) -> Vec<String> {
    let mut out = Vec::new();
    let full = ReadOptions { revs: true, revs_info: true, conflicts: true, deleted_conflicts: true, local_seq: true, attachments: true, ..Default::default() };
    for id in ids {
        out.push(format!("{id} plain {:?}", db.get_doc(id, &ReadOptions::default()).map_err(|e| e.to_string())));
        out.push(format!("{id} full {:?}", db.get_doc(id, &full).map_err(|e| e.to_string())));
        out.push(format!("{id} bytes {:?}", db.get_doc_bytes(id, &ReadOptions { conflicts: true, ..Default::default() }).map(|(r, b)| (r, String::from_utf8(b).unwrap())).map_err(|e| e.to_string())));
        out.push(format!("{id} json {:?}", db.get_doc_json(id).map(|(r, b)| (r, String::from_utf8(b).unwrap())).map_err(|e| e.to_string())));
        out.push(format!("{id} open_revs {:?}", db.open_revs(id, &OpenRevs::All, &ReadOptions { revs: true, ..Default::default() }).map_err(|e| e.to_string())));
        out.push(format!("{id} open_revs bytes {:?}", db.open_revs_bytes(id, &OpenRevs::All, &ReadOptions { revs: true, ..Default::default() }).map(|v| v.into_iter().map(|r| format!("{:?}", r.map_ok())).collect::<Vec<_>>()).map_err(|e| e.to_string())));
    }
    for (id, rev) in revs {
        out.push(format!("{id} ?rev={rev} {:?}", db.get_doc(id, &ReadOptions { rev: Some(rev.clone()), ..Default::default() }).map_err(|e| e.to_string())));
    }
    out.push(format!("all_docs {:?}", db.all_docs(&AllDocsOptions { include_docs: true, conflicts: true, ..Default::default() }).map(|a| a.rows).map_err(|e| e.to_string())));
    out.push(format!("changes {:?}", db.changes(&ChangesOptions { include_docs: true, conflicts: true, all_leaves: true, ..Default::default() }).map(|c| c.rows).map_err(|e| e.to_string())));
    out.push(format!("find {:?}", db.find(&obj(json!({"selector": {"n": {"$gt": 0}}}))).map_err(|e| e.to_string())));
    out.push(format!("attachment {:?}", db.attachment("att", "f.txt", None).map(|a| a.data).map_err(|e| e.to_string())));
    let snapshot = db.read_snapshot().unwrap();
    let mut reader = DocReader::new(&snapshot);
    for id in ids {
        out.push(format!("{id} in order {:?}", reader.winner_bytes(id, &ReadOptions::default()).map(|(r, b)| (r, String::from_utf8(b).unwrap())).map_err(|e| e.to_string())));
    }
    out
}

trait MapOk {
    fn map_ok(self) -> Option<String>;
}

impl MapOk for OpenRev<Vec<u8>> {
    fn map_ok(self) -> Option<String> {
        match self {
            OpenRev::Ok(b) => Some(String::from_utf8(b).unwrap()),
            OpenRev::Missing(r) => Some(format!("missing {r}")),
        }
    }
}

/// Documents of every kind: updated, conflicted, deleted, with an
/// attachment, replicated. Returns their ids.
fn write_every_kind(db: &Database) -> Vec<&'static str> {
    let r1 = put(db, json!({"_id": "a", "n": 1}));
    let r2 = put(db, json!({"_id": "a", "_rev": r1.to_string(), "n": 2}));
    put(db, json!({"_id": "a", "_rev": r2.to_string(), "n": 3, "s": "three"}));
    put(db, json!({"_id": "c", "n": 10}));
    replicate(db, json!({"_id": "c", "_rev": "1-ffffffffffffffffffffffffffffffff", "n": 11, "_revisions": {"start": 1, "ids": ["ffffffffffffffffffffffffffffffff"]}}));
    replicate(db, json!({"_id": "c", "_rev": "1-00000000000000000000000000000000", "n": 12, "_revisions": {"start": 1, "ids": ["00000000000000000000000000000000"]}}));
    let d = put(db, json!({"_id": "d", "n": 4}));
    put(db, json!({"_id": "d", "_rev": d.to_string(), "_deleted": true, "why": "tombstone"}));
    let t = put(db, json!({"_id": "att", "n": 5, "_attachments": {"f.txt": {"content_type": "text/plain", "data": "aGVsbG8="}}}));
    put(db, json!({"_id": "att", "_rev": t.to_string(), "n": 6, "_attachments": {"f.txt": {"stub": true}}}));
    replicate(db, json!({"_id": "r", "_rev": "3-cccccccccccccccccccccccccccccccc", "n": 7, "_revisions": {"start": 3, "ids": ["cccccccccccccccccccccccccccccccc", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]}}));
    vec!["a", "c", "d", "att", "r", "nope"]
}

/// Rewrites every record as a build before format 3 wrote it: the
/// winner's body in `BODIES`, the record without it, format 1.
fn to_the_old_form(db: &Database) {
    let mut txn = db.store().transaction().unwrap();
    for (id, bytes) in records(db) {
        let mut info = DocInfo::from_bytes(&id, &bytes).unwrap();
        if let Some(body) = info.body.take() {
            txn.kv_mut().put(BODIES, &body_key(&id, &info.winner), &body);
            txn.kv_mut().put(DOCS, id.as_bytes(), &info.to_bytes(&id));
        }
    }
    txn.kv_mut().put(DB_META, keys::meta::FORMAT_VERSION, &1u64.to_be_bytes());
    txn.commit().unwrap();
}

#[test]
fn an_old_store_reads_as_before_and_each_record_takes_the_new_form_when_written() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Database::open(dir.path(), std::sync::Arc::new(NoProjection)).unwrap();
    let (ids, revs, before) = {
        let db = open();
        let ids = write_every_kind(&db);
        assert_eq!(format_version(&db), 3);
        for id in ["a", "c", "d", "att", "r"] {
            assert!(kept_body(&db, id).is_some(), "{id}: written since format 3, its record keeps its winner's body");
        }
        check_bodies_are_where_they_belong(&db);
        let revs: Vec<(String, Rev)> = ["a", "c", "d", "att", "r"].iter().flat_map(|id| revs_of(&db, id).into_iter().map(|r| (id.to_string(), r))).collect();
        let before = everything(&db, &ids, &revs);
        to_the_old_form(&db);
        assert!(records(&db).iter().all(|(_, b)| b[0] != 3), "no record of the old form holds a body");
        (ids, revs, before)
    };
    // Reopened as an older build left it: every read as before, the
    // database's format number raised at open (an older build refuses it
    // from then on).
    let db = open();
    assert_eq!(format_version(&db), 3);
    assert_eq!(everything(&db, &ids, &revs), before);
    check_bodies_are_where_they_belong(&db);

    // Written: the record takes the new form, the replaced winner's body
    // stays readable by `?rev=` (it was in `BODIES` already).
    let (a_rev, _) = db.get_doc_bytes("a", &ReadOptions::default()).unwrap();
    let a4 = put(&db, json!({"_id": "a", "_rev": a_rev.to_string(), "n": 4}));
    assert_eq!(kept_body(&db, "a").as_deref(), Some(&br#"{"n":4}"#[..]));
    assert_eq!(format_version(&db), 3);
    assert_eq!(db.get_doc("a", &ReadOptions { rev: Some(a_rev.clone()), ..Default::default() }).unwrap()["s"], "three");
    assert_eq!(db.get_doc("a", &ReadOptions::default()).unwrap()["_rev"], a4.to_string());
    // A losing revision added to an old record: the record stays without
    // a body (it has none in hand), every leaf reads.
    replicate(&db, json!({"_id": "r", "_rev": "3-00000000000000000000000000000000", "n": 8, "_revisions": {"start": 3, "ids": ["00000000000000000000000000000000", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]}}));
    assert!(kept_body(&db, "r").is_none());
    assert_eq!(db.get_doc("r", &ReadOptions::default()).unwrap()["n"], 7);
    assert_eq!(db.get_doc("r", &ReadOptions { rev: Some(Rev::parse("3-00000000000000000000000000000000").unwrap()), ..Default::default() }).unwrap()["n"], 8);
    check_bodies_are_where_they_belong(&db);

    // Compaction keeps the leaves' bodies and the attachment a winner's
    // body (in `BODIES` for an old record, in the record for a new one)
    // names.
    db.compact().unwrap();
    assert_eq!(db.attachment("att", "f.txt", None).unwrap().data, b"hello");
    let (att_rev, _) = db.get_doc_bytes("att", &ReadOptions::default()).unwrap();
    put(&db, json!({"_id": "att", "_rev": att_rev.to_string(), "n": 9, "_attachments": {"f.txt": {"stub": true}}}));
    assert!(kept_body(&db, "att").is_some());
    db.compact().unwrap();
    assert_eq!(db.attachment("att", "f.txt", None).unwrap().data, b"hello", "named by a body kept in its record");
    check_bodies_are_where_they_belong(&db);
}

/// Winners change in every way a revision tree lets them (a replicated
/// branch winning, the winner deleted so a conflict wins, an edit of that
/// conflict, a purge): every leaf keeps its body, old revisions stay
/// readable by `?rev=` until compaction.
#[test]
fn conflicts_keep_their_bodies_as_winners_change() {
    let db = Database::memory();
    let first = put(&db, json!({"_id": "x", "v": 1}));
    let low = put(&db, json!({"_id": "x", "_rev": first.to_string(), "v": 2}));
    // A replicated branch of three revisions wins over the local one.
    replicate(&db, json!({"_id": "x", "_rev": "3-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "v": 30, "_revisions": {"start": 3, "ids": ["eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "dddddddddddddddddddddddddddddddd", first.hash.clone()]}}));
    let high = Rev::parse("3-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee").unwrap();
    let read = |rev: &Rev| db.get_doc("x", &ReadOptions { rev: Some(rev.clone()), ..Default::default() }).map(|d| d.get("v").cloned().unwrap_or(Value::Null)).map_err(|e| e.to_string());
    assert_eq!(db.get_doc("x", &ReadOptions::default()).unwrap()["v"], 30);
    assert_eq!(kept_body(&db, "x").as_deref(), Some(&br#"{"v":30}"#[..]));
    assert_eq!((read(&first), read(&low), read(&high)), (Ok(json!(1)), Ok(json!(2)), Ok(json!(30))));
    check_bodies_are_where_they_belong(&db);

    // The winner deleted: the local leaf wins again, its body from BODIES.
    let tomb = put(&db, json!({"_id": "x", "_rev": high.to_string(), "_deleted": true}));
    assert_eq!(db.get_doc("x", &ReadOptions::default()).unwrap()["v"], 2);
    assert_eq!(read(&high), Ok(json!(30)), "a revision replaced keeps its body until compaction");
    let leaves = db.open_revs("x", &OpenRevs::All, &ReadOptions::default()).unwrap();
    let mut leaves: Vec<String> = leaves.into_iter().map(|l| format!("{l:?}")).collect();
    leaves.sort();
    assert_eq!(leaves.len(), 2);
    assert!(leaves.iter().any(|l| l.contains(&tomb.to_string()) && l.contains("_deleted")), "{leaves:?}");
    check_bodies_are_where_they_belong(&db);

    // The conflict edited: the record keeps the new winner.
    let edited = put(&db, json!({"_id": "x", "_rev": low.to_string(), "v": 3}));
    assert_eq!(kept_body(&db, "x").as_deref(), Some(&br#"{"v":3}"#[..]));
    assert_eq!((read(&low), read(&edited)), (Ok(json!(2)), Ok(json!(3))));
    check_bodies_are_where_they_belong(&db);

    // A conflict added and purged again; then compaction: leaves only.
    replicate(&db, json!({"_id": "x", "_rev": "4-ffffffffffffffffffffffffffffffff", "v": 40, "_revisions": {"start": 4, "ids": ["ffffffffffffffffffffffffffffffff", "cccccccccccccccccccccccccccccccc", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]}}));
    assert_eq!(db.get_doc("x", &ReadOptions::default()).unwrap()["v"], 40);
    assert_eq!(read(&edited), Ok(json!(3)), "the replaced winner, a leaf still, moved to BODIES");
    check_bodies_are_where_they_belong(&db);
    db.purge(&[("x".to_owned(), vec![Rev::parse("4-ffffffffffffffffffffffffffffffff").unwrap()])]).unwrap();
    assert_eq!(db.get_doc("x", &ReadOptions::default()).unwrap()["v"], 3);
    check_bodies_are_where_they_belong(&db);
    db.compact().unwrap();
    assert_eq!(read(&edited), Ok(json!(3)));
    assert_eq!(read(&low).map_err(|e| e.contains("missing")), Err(true), "compacted away");
    assert_eq!(read(&tomb).map(|_| ()), Ok(()), "a deleted leaf keeps its tombstone");
    check_bodies_are_where_they_belong(&db);

    // A deleted document's tombstone is kept in its record.
    let y = put(&db, json!({"_id": "y", "v": 1}));
    put(&db, json!({"_id": "y", "_rev": y.to_string(), "_deleted": true}));
    assert_eq!(kept_body(&db, "y").as_deref(), Some(&b"{}"[..]));
    assert_eq!(db.get_doc("y", &ReadOptions::default()).map_err(|e| e.to_string()).unwrap_err(), DocError::NotFound("deleted").to_string());
    check_bodies_are_where_they_belong(&db);
}

/// The `BODIES` keys of `id`'s revisions.
fn bodies_of(db: &Database, id: &str) -> usize {
    let s = db.store().snapshot().unwrap();
    let prefix = body_key(id, &Rev::new(1, "x"));
    let prefix = &prefix[..4 + id.len()];
    let mut cursor = s.kv().cursor(BODIES, prefix, None);
    cursor.seek(prefix);
    let mut n = 0;
    while cursor.valid() && cursor.key().starts_with(prefix) {
        n += 1;
        cursor.next();
    }
    n
}

#[test]
fn stemmed_revisions_read_as_missing_and_compaction_drops_their_bodies() {
    let db = Database::memory();
    db.set_revs_limit(3).unwrap();
    let mut revs = vec![put(&db, json!({"_id": "d", "n": 0}))];
    for n in 1..6 {
        let rev = put(&db, json!({"_id": "d", "_rev": revs.last().unwrap().to_string(), "n": n}));
        revs.push(rev);
    }
    let at = |r: &Rev| db.get_doc("d", &ReadOptions { rev: Some(r.clone()), ..Default::default() });
    // Stemmed (the tree keeps the last three): missing, whatever waits in
    // `BODIES` for compaction.
    for r in &revs[..3] {
        assert!(matches!(at(r), Err(DocError::NotFound(_))), "{r}: {:?}", at(r));
        let open = db.open_revs("d", &OpenRevs::List(vec![r.clone()]), &ReadOptions::default()).unwrap();
        assert!(matches!(&open[..], [OpenRev::Missing(m)] if m == r), "{r}");
    }
    for (n, r) in revs.iter().enumerate().skip(3) {
        assert_eq!(at(r).unwrap()["n"], json!(n), "{r} is kept until compaction");
    }
    check_bodies_are_where_they_belong(&db);
    // Compaction drops every body but the winner's (in its record): the
    // kept non-leaves and the stemmed ones.
    assert_eq!(db.compact().unwrap().bodies, 5);
    assert_eq!(bodies_of(&db, "d"), 0);
    assert_eq!(db.get_doc("d", &ReadOptions::default()).unwrap()["n"], json!(5));
    assert!(matches!(at(&revs[4]), Err(DocError::NotFound(_))));
}
