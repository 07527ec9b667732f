//! Large attachments are stored in chunks and read a chunk at a time
//! (issue 44: 70 slow readers of a 50 MB attachment held 3.5 GB); small
//! ones, and every attachment of a store written before chunks (document
//! format 1), are single values and read as before.

use base64::Engine;
use rhizome_docs::keys::{self, ATTACHMENTS, ATTACHMENT_CHUNKS, DB_META};
use rhizome_docs::*;
use serde_json::{json, Map, Value};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn put(db: &Database, v: Value) -> Rev {
    let mut out = db.update_docs(vec![obj(v)], true).expect("store ok");
    out.remove(0).1.expect("written")
}

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn format_version(db: &Database) -> u64 {
    let s = db.store().snapshot().unwrap();
    u64::from_be_bytes(s.kv().get(DB_META, keys::meta::FORMAT_VERSION).unwrap().unwrap()[..].try_into().unwrap())
}

fn stored_keys(db: &Database, ks: rhizome_kv::Keyspace) -> usize {
    let s = db.store().snapshot().unwrap();
    let mut cursor = s.kv().cursor(ks, &[], None);
    cursor.seek_first();
    let mut n = 0;
    while cursor.valid() {
        n += 1;
        cursor.next();
    }
    n
}

#[test]
fn a_large_attachment_is_stored_and_read_in_chunks() {
    let db = Database::memory();
    assert_eq!(format_version(&db), 3, "a new database is made in the current format");
    let small = bytes(1000);
    let r1 = put(&db, json!({"_id": "s", "_attachments": {"f": {"content_type": "text/plain", "data": b64(&small)}}}));
    assert_eq!((stored_keys(&db, ATTACHMENTS), stored_keys(&db, ATTACHMENT_CHUNKS)), (1, 0));
    assert_eq!(format_version(&db), 3);

    let large = bytes(3 * (256 << 10) + 17);
    let r2 = put(&db, json!({"_id": "s", "_rev": r1.to_string(), "_attachments": {"f": {"stub": true}, "big": {"content_type": "application/octet-stream", "data": b64(&large)}}}));
    assert_eq!(stored_keys(&db, ATTACHMENT_CHUNKS), 4);
    assert_eq!(format_version(&db), 3, "chunks do not lower the format");

    // Read whole, inline, and a chunk at a time.
    assert_eq!(db.attachment("s", "big", None).unwrap().data, large);
    let doc = db.get_doc("s", &ReadOptions { attachments: true, ..Default::default() }).unwrap();
    assert_eq!(doc["_attachments"]["big"]["data"], b64(&large));
    let reader = db.attachment_reader("s", "big", None).unwrap();
    assert_eq!(reader.length, large.len() as u64);
    let mut pieces = Vec::new();
    reader
        .read_each::<DocError>(&mut |piece| {
            pieces.push(piece.to_vec());
            Ok(())
        })
        .unwrap();
    assert!(pieces.iter().all(|p| p.len() <= 256 << 10), "pieces of {:?} bytes", pieces.iter().map(Vec::len).collect::<Vec<_>>());
    assert_eq!(pieces.concat(), large);

    // A stub keeps the chunks; another document names them by digest.
    let r3 = put(&db, json!({"_id": "s", "_rev": r2.to_string(), "x": 1, "_attachments": {"big": {"stub": true}}}));
    let digest = attachment_digest(&large);
    put(&db, json!({"_id": "t", "_attachments": {"same": {"stub": true, "digest": digest}}}));
    assert_eq!(db.attachment("t", "same", None).unwrap().data, large);

    // Compaction keeps what a leaf names and drops the rest, chunks too.
    db.compact().unwrap();
    assert_eq!(db.attachment("s", "big", None).unwrap().data, large);
    assert_eq!(stored_keys(&db, ATTACHMENTS), 0, "the small attachment is named by no leaf");
    put(&db, json!({"_id": "s", "_rev": r3.to_string(), "x": 2}));
    db.update_docs(vec![obj(json!({"_id": "t", "_rev": db.get_doc("t", &ReadOptions::default()).unwrap()["_rev"].clone(), "_deleted": true}))], true).unwrap();
    db.compact().unwrap();
    assert_eq!(stored_keys(&db, ATTACHMENT_CHUNKS), 0, "no leaf names the large attachment");
}

/// A database written before chunks (format 1) holds large attachments
/// as single values: they read whole and a piece at a time, a stub keeps
/// them, and compaction drops them when unused.
#[test]
fn a_format_1_database_reads_its_whole_attachments() {
    let db = Database::memory();
    let large = bytes(600 << 10);
    let digest = attachment_digest(&large);
    {
        // As format 1 wrote it: the whole value under its digest.
        let mut txn = db.store().transaction().unwrap();
        txn.kv_mut().put(ATTACHMENTS, digest.as_bytes(), &large);
        txn.commit().unwrap();
    }
    let r1 = put(&db, json!({"_id": "old", "_attachments": {"big": {"stub": true, "digest": digest}}}));
    assert_eq!(stored_keys(&db, ATTACHMENT_CHUNKS), 0, "a stub writes no chunk");
    assert_eq!(db.attachment("old", "big", None).unwrap().data, large);
    let mut read = Vec::new();
    db.attachment_reader("old", "big", None)
        .unwrap()
        .read_each::<DocError>(&mut |piece| {
            read.extend_from_slice(piece);
            Ok(())
        })
        .unwrap();
    assert_eq!(read, large);
    put(&db, json!({"_id": "old", "_rev": r1.to_string()}));
    db.compact().unwrap();
    assert_eq!(stored_keys(&db, ATTACHMENTS), 0);
}
