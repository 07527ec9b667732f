//! Untrusted documents through the write path (both `new_edits` modes),
//! then reads, `_changes` with a selector taken from the input, and the
//! revision tree's byte form: nothing may panic, and every tree written
//! must read back. A read's bytes (`get_doc_json`, `get_doc_bytes`,
//! `open_revs_bytes` and `all_docs_bytes`, which copy a stored JSON body's
//! bytes) must be those of `get_doc`'s, `open_revs`'s and `all_docs`'s.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rhizome_docs::{AllDocsOptions, ChangesFilter, ChangesOptions, Database, OpenRev, OpenRevs, ReadOptions, RevTree};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let _ = RevTree::from_bytes(data);
    plain_read_is_get_doc(data);
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(data) else { return };
    let db = Database::memory();
    let docs: Vec<_> = items.iter().filter_map(|d| d.as_object().cloned()).collect();
    let ids: Vec<String> = docs.iter().filter_map(|d| d.get("_id").and_then(Value::as_str).map(str::to_owned)).collect();
    let _ = db.update_docs(docs.clone(), true);
    let _ = db.update_docs(docs, false);
    for id in &ids {
        same_bytes(&db, id);
        let _ = db.get_doc(id, &ReadOptions { revs: true, revs_info: true, conflicts: true, attachments: true, ..Default::default() });
        let replication = ReadOptions { revs: true, conflicts: true, deleted_conflicts: true, ..Default::default() };
        if let (Ok((_, bytes)), Ok(doc)) = (db.get_doc_bytes(id, &replication), db.get_doc(id, &replication)) {
            assert_eq!(String::from_utf8_lossy(&bytes), String::from_utf8_lossy(&serde_json::to_vec(&doc).unwrap()), "{id}");
        }
        if let (Ok(got), Ok(want)) = (db.open_revs_bytes(id, &OpenRevs::All, &replication), db.open_revs(id, &OpenRevs::All, &replication)) {
            assert_eq!(got.len(), want.len());
            for (got, want) in got.iter().zip(&want) {
                if let (OpenRev::Ok(bytes), OpenRev::Ok(doc)) = (got, want) {
                    assert_eq!(String::from_utf8_lossy(bytes), String::from_utf8_lossy(&serde_json::to_vec(doc).unwrap()), "{id}");
                }
            }
        }
    }
    let all = AllDocsOptions { include_docs: true, conflicts: true, keys: Some(ids.clone()), ..Default::default() };
    if let (Ok(got), Ok(want)) = (db.all_docs_bytes(&all), db.all_docs(&all)) {
        let got: Vec<String> = got.rows.iter().map(|row| String::from_utf8_lossy(row).into_owned()).collect();
        assert_eq!(got, want.rows.iter().map(Value::to_string).collect::<Vec<_>>());
    }
    let selector = items.first().cloned().unwrap_or(Value::Null);
    let _ = db.changes(&ChangesOptions { include_docs: true, all_leaves: true, filter: ChangesFilter::Selector(selector), ..Default::default() });
});

/// The input as one document of string members (keys and values
/// alternating, NUL-separated), so that every input reaches a plain read:
/// keys on both sides of `_id` and `_rev`, and every escape.
fn plain_read_is_get_doc(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parts: Vec<&str> = text.split('\0').collect();
    let mut body = serde_json::Map::new();
    for pair in parts.chunks(2) {
        body.insert(pair[0].to_owned(), pair.get(1).map_or(Value::Null, |v| Value::String((*v).to_owned())));
    }
    body.insert("_id".into(), Value::String("plain".into()));
    let db = Database::memory();
    if db.update_docs(vec![body], true).is_ok() {
        same_bytes(&db, "plain");
        let revs = ReadOptions { revs: true, local_seq: true, ..Default::default() };
        if let (Ok((_, bytes)), Ok(doc)) = (db.get_doc_bytes("plain", &revs), db.get_doc("plain", &revs)) {
            assert_eq!(String::from_utf8_lossy(&bytes), String::from_utf8_lossy(&serde_json::to_vec(&doc).unwrap()));
        }
    }
}

/// `get_doc_json` gives the bytes and revision of `get_doc`'s document.
fn same_bytes(db: &Database, id: &str) {
    if let (Ok((rev, bytes)), Ok(doc)) = (db.get_doc_json(id), db.get_doc(id, &ReadOptions::default())) {
        assert_eq!(Some(rev.to_string().as_str()), doc.get("_rev").and_then(Value::as_str));
        assert_eq!(String::from_utf8_lossy(&bytes), String::from_utf8_lossy(&serde_json::to_vec(&doc).unwrap()), "{id}");
    }
}
