//! A first build as sorted runs ingested at once (`bulk_build.rs`) and a
//! build through transactions, batch by batch, of the same documents
//! give the same index: the same rows, rows by document and counts, and
//! the same answer to every reduce, offset, range and page; each rank
//! bucket's summary is its rows'. The buckets' fences differ (a
//! transaction build's depend on its batches), so they are compared by
//! what they answer. Updates after either build keep them equal.

use super::tests::{put, query};
use super::*;
use crate::index::{refresh_with, BuildPath, VIEW_DOC_ROWS};
use crate::rank::VIEW_RANKS;

fn design() -> DesignDoc {
    super::tests::ddoc(json!({
        "c": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, doc.v); }", "reduce": "_count"},
        "s": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, doc.v); }", "reduce": "_sum"},
        "st": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, doc.v); }", "reduce": "_stats"},
        // Several rows per document, array keys, no reduce.
        "multi": {"map": "function (doc) { if (doc.tags) { for (var i = 0; i < doc.tags.length; i++) emit([doc.tags[i], doc.n], null); } }"},
        // Run by QuickJS (no native form): emits for some documents only.
        "js": {"map": "function (doc) { var x = doc.n; if (x % 3 === 0) { emit(String.fromCharCode(97 + x % 26) + x, x); } }", "reduce": "_sum"},
    }))
}

fn seeded() -> impl FnMut(u64) -> u64 {
    let mut seed = 11u64;
    move |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    }
}

/// Every entry of keyspace `ks` under the index.
fn entries(db: &Database, d: &DesignDoc, ks: rhizome_kv::Keyspace) -> Vec<(Vec<u8>, Vec<u8>)> {
    let id = index_id(d);
    let snapshot = db.store().snapshot().unwrap();
    let upper = rhizome_kv::prefix_upper_bound(&id);
    let mut cursor = snapshot.kv().cursor(ks, &id, upper.as_deref());
    cursor.seek_first();
    let mut out = Vec::new();
    while cursor.valid() {
        out.push((cursor.key().to_vec(), cursor.value().to_vec()));
        cursor.next();
    }
    cursor.status().unwrap();
    out
}

/// Each view's buckets as stored, checked against their rows; returns
/// their row counts.
fn checked_buckets(db: &Database, d: &DesignDoc, what: &str) -> Vec<Vec<u64>> {
    let id = index_id(d);
    let snapshot = db.store().snapshot().unwrap();
    let kv = snapshot.kv();
    let state = IndexState::read(kv, &id).unwrap().unwrap();
    let mut out = Vec::new();
    for (n, view) in d.views.iter().enumerate() {
        let reducer = view.reduce.as_deref().and_then(crate::reduce::builtin);
        let prefix = view_prefix(&id, n);
        let upper = rhizome_kv::prefix_upper_bound(&prefix).unwrap();
        let mut buckets = Vec::new();
        let mut cursor = kv.cursor(VIEW_RANKS, &prefix, Some(&upper));
        cursor.seek_first();
        while cursor.valid() {
            buckets.push((cursor.key().to_vec(), crate::bucket_summary::BucketValue::decode(cursor.value()).unwrap()));
            cursor.next();
        }
        drop(cursor);
        assert_eq!(buckets.first().map(|b| b.0.clone()), Some(prefix.clone()), "{what}: {} has its first bucket", view.name);
        for (i, (fence, stored)) in buckets.iter().enumerate() {
            let next = buckets.get(i + 1).map_or(upper.as_slice(), |(f, _)| f.as_slice());
            assert_eq!(stored, &crate::bucket_summary::summarize(kv, reducer, fence, next).unwrap(), "{what}: {} bucket {i}", view.name);
            assert!(stored.rows <= 128, "{what}: {} bucket {i} has {} rows", view.name, stored.rows);
        }
        let counts: Vec<u64> = buckets.iter().map(|(_, b)| b.rows).collect();
        assert_eq!(counts.iter().sum::<u64>(), state.rows[n], "{what}: {} buckets count its rows", view.name);
        out.push(counts);
    }
    out
}

/// What the two databases answer, query by query.
fn same_answers(a: &Database, b: &Database, d: &DesignDoc, what: &str) {
    let mut params: Vec<(&str, Vec<(&str, String)>)> = Vec::new();
    for view in ["c", "s", "st", "js"] {
        params.push((view, vec![]));
        params.push((view, vec![("group", "true".into())]));
        params.push((view, vec![("reduce", "false".into())]));
        params.push((view, vec![("reduce", "false".into()), ("descending", "true".into()), ("skip", "37".into()), ("limit", "150".into())]));
    }
    for (lo, hi) in [(0, 40), (130, 1170), (2000, 2999), (3000, 9000)] {
        for view in ["c", "s", "st"] {
            params.push((view, vec![("startkey", lo.to_string()), ("endkey", hi.to_string())]));
            params.push((view, vec![("startkey", lo.to_string()), ("endkey", hi.to_string()), ("group", "true".into()), ("skip", "3".into()), ("limit", "20".into())]));
            params.push((view, vec![("reduce", "false".into()), ("startkey", lo.to_string()), ("endkey", hi.to_string()), ("limit", "5".into())]));
        }
    }
    // The offset of every key (`rows_before`), one in three.
    for n in (0..3000).step_by(3) {
        params.push(("c", vec![("reduce", "false".into()), ("key", n.to_string())]));
    }
    params.push(("multi", vec![]));
    params.push(("multi", vec![("startkey", r#"["t2"]"#.into()), ("endkey", r#"["t2",{}]"#.into()), ("skip", "5".into()), ("limit", "40".into())]));
    params.push(("js", vec![("reduce", "false".into()), ("startkey", r#""m""#.into()), ("limit", "30".into())]));
    for (view, p) in &params {
        let p: Vec<(&str, &str)> = p.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(query(a, d, view, &p), query(b, d, view, &p), "{what}: {view} {p:?}");
    }
}

fn same_index(bulk: &Database, txn: &Database, d: &DesignDoc, what: &str) {
    for ks in [VIEW_ROWS, VIEW_DOC_ROWS] {
        let (x, y) = (entries(bulk, d, ks), entries(txn, d, ks));
        assert_eq!(x.len(), y.len(), "{what}: entries of keyspace {ks:?}");
        assert!(x == y, "{what}: the entries of keyspace {ks:?} differ");
    }
    let state = |db: &Database| IndexState::read(db.store().snapshot().unwrap().kv(), &index_id(d)).unwrap().unwrap();
    let (x, y) = (state(bulk), state(txn));
    assert_eq!((x.seq, &x.rows, x.ranked, &x.ddoc), (y.seq, &y.rows, y.ranked, &y.ddoc), "{what}: the states");
    checked_buckets(bulk, d, what);
    checked_buckets(txn, d, what);
    same_answers(bulk, txn, d, what);
}

#[test]
fn a_bulk_build_is_a_build_through_transactions() {
    let d = design();
    let mut next = seeded();
    let docs: Vec<Value> = (0..3500)
        .map(|i| {
            let mut doc = json!({"_id": format!("d{:05}", next(100_000)), "n": next(3000), "v": next(1000) as i64 - 300});
            if i % 5 == 0 {
                doc["tags"] = json!((0..next(4)).map(|t| format!("t{}", (t + i) % 6)).collect::<Vec<_>>());
            }
            if i % 97 == 0 {
                doc.as_object_mut().unwrap().remove("n");
            }
            doc
        })
        .collect();
    // One write per document id.
    let mut seen = std::collections::HashSet::new();
    let docs: Vec<Value> = docs.into_iter().filter(|doc| seen.insert(doc["_id"].as_str().unwrap().to_owned())).collect();
    let (bulk, txn) = (Database::memory(), Database::memory());
    for db in [&bulk, &txn] {
        // In several writes, with updates and deletions among them, so
        // that sequences and document ids are in different orders.
        for chunk in docs.chunks(700) {
            put(db, chunk.to_vec());
        }
        let snapshot = db.read_snapshot().unwrap();
        let changed: Vec<Value> = docs
            .iter()
            .step_by(9)
            .map(|doc| {
                let id = doc["_id"].as_str().unwrap();
                let (rev, _) = db.get_doc_bytes_at(&snapshot, id, &Default::default()).unwrap();
                let mut doc = doc.clone();
                doc["_rev"] = json!(rev.to_string());
                if doc["v"].as_i64().unwrap() % 4 == 0 {
                    doc["_deleted"] = json!(true);
                } else {
                    doc["n"] = json!(doc["v"].as_i64().unwrap().rem_euclid(3000));
                }
                doc
            })
            .collect();
        put(db, changed);
    }
    refresh_with(&bulk, "db", &d, Limits::default(), BuildPath::Bulk).unwrap();
    refresh_with(&txn, "db", &d, Limits::default(), BuildPath::Transactions).unwrap();
    // The bulk build was taken: its buckets are cut every 64 rows from
    // the sorted rows (a transaction build's grow and split batch after
    // batch).
    for (view, counts) in checked_buckets(&bulk, &d, "bulk").iter().enumerate() {
        assert!(counts.len() > 4, "view {view} is cut: {counts:?}");
        assert!(counts[..counts.len() - 1].iter().all(|&n| n == 64), "view {view}: {counts:?}");
    }
    assert!(checked_buckets(&txn, &d, "transactions").iter().any(|counts| counts[..counts.len() - 1].iter().any(|&n| n != 64)));
    same_index(&bulk, &txn, &d, "built");

    // Later updates, through transactions on both: new documents,
    // changed and deleted ones.
    for db in [&bulk, &txn] {
        let snapshot = db.read_snapshot().unwrap();
        let mut changes: Vec<Value> = (0..300).map(|i| json!({"_id": format!("new{i:04}"), "n": (i * 37) % 3000, "v": i, "tags": ["t1"]})).collect();
        for doc in docs.iter().skip(4).step_by(13) {
            let id = doc["_id"].as_str().unwrap();
            let Ok((rev, _)) = db.get_doc_bytes_at(&snapshot, id, &Default::default()) else { continue };
            let mut doc = doc.clone();
            doc["_rev"] = json!(rev.to_string());
            if doc["v"].as_i64().unwrap() % 3 == 0 {
                doc["_deleted"] = json!(true);
            } else {
                doc["n"] = json!(2999 - doc["n"].as_i64().unwrap_or(5));
            }
            changes.push(doc);
        }
        put(db, changes);
    }
    same_index(&bulk, &txn, &d, "updated");
}
