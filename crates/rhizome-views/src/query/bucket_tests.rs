//! Reductions read from the rank buckets' summaries (`bucket_reduce.rs`)
//! are the ones reduced from the rows: through inserts, updates, deletes,
//! cuts and joins of buckets, conflicts, and an index whose buckets have
//! no summary (written before them).

use super::tests::{ddoc, put, query};
use super::*;
use crate::index::refresh;
use std::collections::BTreeMap;

fn views() -> DesignDoc {
    ddoc(json!({
        "c": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, doc.v); }", "reduce": "_count"},
        "s": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, doc.v); }", "reduce": "_sum"},
        "st": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, doc.v); }", "reduce": "_stats"},
        "k": {"map": "function (doc) { if (doc.n !== undefined) emit([doc.n % 7, doc.n], doc.v); }", "reduce": "_sum"},
    }))
}

/// What a reduce of `view` answers, from its map rows reduced here: per
/// group (`level`: None for no grouping, Some(usize::MAX) for
/// group=true), (key, [count, sum, min, max, sumsqr]).
fn expected(db: &Database, d: &DesignDoc, view: &str, level: Option<usize>, range: Option<(i64, i64)>) -> Vec<(Value, [i64; 5])> {
    let rows = query(db, d, view, &[("reduce", "false")]);
    let mut groups: Vec<(Value, [i64; 5])> = Vec::new();
    for r in rows["rows"].as_array().unwrap() {
        let n = if view == "k" { r["key"][1].as_i64().unwrap() } else { r["key"].as_i64().unwrap() };
        if let Some((lo, hi)) = range {
            if n < lo || n > hi {
                continue;
            }
        }
        let g = match level {
            None => Value::Null,
            Some(usize::MAX) => r["key"].clone(),
            Some(l) => Value::Array(r["key"].as_array().unwrap().iter().take(l).cloned().collect()),
        };
        let v = r["value"].as_i64().unwrap();
        match groups.last_mut() {
            Some((k, acc)) if *k == g => {
                *acc = [acc[0] + 1, acc[1] + v, acc[2].min(v), acc[3].max(v), acc[4] + v * v];
            }
            _ => groups.push((g, [1, v, v, v, v * v])),
        }
    }
    groups
}

fn check(db: &Database, d: &DesignDoc, what: &str) {
    let answers = |view: &str, params: &[(&str, &str)]| query(db, d, view, params)["rows"].as_array().unwrap().clone();
    for (params, level, range) in [
        (vec![], None, None),
        (vec![("group", "true")], Some(usize::MAX), None),
        (vec![("startkey", "100"), ("endkey", "2900")], None, Some((100, 2900))),
        (vec![("startkey", "1234"), ("endkey", "1240"), ("group", "true")], Some(usize::MAX), Some((1234, 1240))),
    ] {
        let want = expected(db, d, "c", level, range);
        let got = answers("c", &params);
        assert_eq!(got.len(), want.len(), "{what}: groups of c {params:?}");
        for (row, (key, acc)) in got.iter().zip(&want) {
            assert_eq!((&row["key"], &row["value"]), (key, &json!(acc[0])), "{what}: _count {params:?}");
        }
        for (row, (key, acc)) in answers("s", &params).iter().zip(&want) {
            assert_eq!((&row["key"], &row["value"]), (key, &json!(acc[1])), "{what}: _sum {params:?}");
        }
        for (row, (key, acc)) in answers("st", &params).iter().zip(&want) {
            let stats = json!({"sum": acc[1], "count": acc[0], "min": acc[2], "max": acc[3], "sumsqr": acc[4]});
            assert_eq!((&row["key"], &row["value"]), (key, &stats), "{what}: _stats {params:?}");
        }
    }
    // group_level over array keys; skip and limit over groups.
    let want = expected(db, d, "k", Some(1), None);
    let got = answers("k", &[("group_level", "1")]);
    assert_eq!(got.iter().map(|r| (r["key"].clone(), r["value"].clone())).collect::<Vec<_>>(), want.iter().map(|(k, a)| (k.clone(), json!(a[1]))).collect::<Vec<_>>(), "{what}: group_level=1");
    let paged = answers("k", &[("group_level", "1"), ("skip", "2"), ("limit", "3")]);
    assert_eq!(paged, got.iter().skip(2).take(3).cloned().collect::<Vec<_>>(), "{what}: skip and limit");
    // The row-by-row path (descending) agrees.
    let desc = answers("s", &[("group", "true"), ("descending", "true")]);
    let mut asc = answers("s", &[("group", "true")]);
    asc.reverse();
    assert_eq!(desc, asc, "{what}: descending");
}

/// The summaries of a view's buckets as stored: (rows, has a summary).
fn buckets(db: &Database, d: &DesignDoc, view: &str) -> Vec<(u64, bool)> {
    let prefix = index::view_prefix(&index_id(d), d.view(view).unwrap().0);
    let snapshot = db.store().snapshot().unwrap();
    let upper = rhizome_kv::prefix_upper_bound(&prefix);
    let mut cursor = snapshot.kv().cursor(crate::rank::VIEW_RANKS, &prefix, upper.as_deref());
    cursor.seek_first();
    let mut out = Vec::new();
    while cursor.valid() {
        let b = crate::bucket_summary::BucketValue::decode(cursor.value()).unwrap();
        out.push((b.rows, b.summary.is_some()));
        cursor.next();
    }
    out
}

#[test]
fn stored_reductions_stay_the_rows_reductions_through_updates_deletes_cuts_and_joins() {
    let db = Database::memory();
    let d = views();
    let mut seed = 7u64;
    let mut next = |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut revs: BTreeMap<String, String> = BTreeMap::new();
    for round in 0..6 {
        let mut docs: Vec<Value> = Vec::new();
        for _ in 0..if round >= 3 { 3000 } else { 1200 } {
            let id = format!("d{}", next(3000));
            if docs.iter().any(|d| d["_id"] == json!(id)) {
                continue;
            }
            // Few keys, so that groups span buckets.
            let mut doc = json!({"_id": id, "n": next(3000) / 40 * 40 + next(3), "v": next(1000) as i64 - 300});
            if let Some(rev) = revs.get(&id) {
                doc["_rev"] = json!(rev);
                if next(10) < if round >= 3 { 8 } else { 2 } {
                    doc["_deleted"] = json!(true);
                }
            }
            docs.push(doc);
        }
        let docs: Vec<Map<String, Value>> = docs.into_iter().map(|d| d.as_object().unwrap().clone()).collect();
        for (id, r) in db.update_docs(docs, true).unwrap() {
            revs.insert(id, r.unwrap().to_string());
        }
        check(&db, &d, &format!("round {round}"));
        let b = buckets(&db, &d, "s");
        assert!(b.iter().all(|(_, summarized)| *summarized), "round {round}: every bucket summarized");
        if round == 2 {
            assert!(b.len() > 4, "round {round}: the view is cut into buckets ({b:?})");
        }
    }
    // A conflict whose revision wins changes the rows of its document.
    let id = revs.keys().next().unwrap().clone();
    let conflict = json!({"_id": id, "_rev": "9-ffff", "n": 5, "v": 77, "_revisions": {"start": 9, "ids": ["ffff"]}});
    db.update_docs(vec![conflict.as_object().unwrap().clone()], false).unwrap();
    check(&db, &d, "after a winning conflict");
}

#[test]
fn sum_and_stats_errors_are_the_rows_errors() {
    let db = Database::memory();
    let d = views();
    put(&db, (0..2000).map(|i| json!({"_id": format!("d{i:05}"), "n": i, "v": i})).collect());
    put(&db, vec![json!({"_id": "bad", "n": 1500, "v": "x"})]);
    let sum = query(&db, &d, "s", &[]);
    assert_eq!(sum["rows"][0]["value"], json!({"error": "builtin_reduce_error", "reason": crate::reduce::SUM_ERROR, "caused_by": "x"}));
    let q = ViewQuery::from_params([]).unwrap();
    let stats = run_query(&db, "db", &d, "st", &q, Limits::default());
    assert!(matches!(stats, Err(ViewError::InvalidValue(m)) if m.contains("'\"x\"'")), "_stats of a string fails the query");
    // Outside the bad row's bucket, the stored reductions answer.
    assert_eq!(query(&db, &d, "s", &[("endkey", "999")])["rows"][0]["value"], json!(999 * 1000 / 2));
    let rev = db.get_doc("bad", &ReadOptions::default()).unwrap()["_rev"].clone();
    put(&db, vec![json!({"_id": "bad", "_deleted": true, "_rev": rev})]);
    assert_eq!(query(&db, &d, "s", &[])["rows"][0]["value"], json!(1999 * 2000 / 2));
    check(&db, &d, "after the bad row is gone");
}

/// Buckets written before summaries (their value is the count alone)
/// are reduced from their rows, and summarized at the next update.
#[test]
fn buckets_without_summaries_are_reduced_from_rows_until_the_next_update() {
    let db = Database::memory();
    let d = views();
    put(&db, (0..3000).map(|i| json!({"_id": format!("d{i:05}"), "n": i / 10, "v": i % 17})).collect());
    check(&db, &d, "built");
    let id = index_id(&d);
    {
        let mut txn = db.store().transaction().unwrap();
        let mut old = Vec::new();
        let mut cursor = txn.kv().cursor(crate::rank::VIEW_RANKS, &id, None);
        cursor.seek_first();
        while cursor.valid() {
            old.push((cursor.key().to_vec(), cursor.value()[..8].to_vec()));
            cursor.next();
        }
        drop(cursor);
        for (k, v) in old {
            txn.kv_mut().put(crate::rank::VIEW_RANKS, &k, &v);
        }
        txn.commit().unwrap();
    }
    assert!(buckets(&db, &d, "s").iter().all(|(_, s)| !s));
    assert!(buckets(&db, &d, "s").len() > 4);
    check(&db, &d, "first format");
    put(&db, vec![json!({"_id": "x", "n": 5, "v": 3})]);
    refresh(&db, "db", &d, Limits::default()).unwrap();
    for view in ["c", "s", "st", "k"] {
        assert!(buckets(&db, &d, view).iter().all(|(_, s)| *s), "{view}: summarized at the update");
    }
    check(&db, &d, "upgraded");
}

/// Buckets cut from a batch's added rows (`rank.rs`, `Cut`) are the ones
/// cut from the rows read back: each bucket's count, first and last keys
/// and reduction are its rows', through builds that append to a view's
/// last bucket batch after batch, add among stored rows, and update.
#[test]
fn buckets_cut_from_added_rows_are_their_rows_buckets() {
    let db = Database::memory();
    let d = views();
    let id = index_id(&d);
    let check_buckets = |what: &str| {
        let snapshot = db.store().snapshot().unwrap();
        let kv = snapshot.kv();
        for (n, view) in d.views.iter().enumerate() {
            let reducer = view.reduce.as_deref().and_then(crate::reduce::builtin);
            let prefix = index::view_prefix(&id, n);
            let upper = rhizome_kv::prefix_upper_bound(&prefix).unwrap();
            let mut fences = Vec::new();
            let mut cursor = kv.cursor(crate::rank::VIEW_RANKS, &prefix, Some(&upper));
            cursor.seek_first();
            while cursor.valid() {
                fences.push((cursor.key().to_vec(), crate::bucket_summary::BucketValue::decode(cursor.value()).unwrap()));
                cursor.next();
            }
            drop(cursor);
            assert!(fences.len() > 4, "{what}: {} is cut", view.name);
            for (i, (fence, stored)) in fences.iter().enumerate() {
                let next = fences.get(i + 1).map_or(upper.as_slice(), |(f, _)| f.as_slice());
                let want = crate::bucket_summary::summarize(kv, reducer, fence, next).unwrap();
                assert_eq!(stored, &want, "{what}: {} bucket {i}", view.name);
                assert!(stored.rows <= 128 || i + 1 == fences.len(), "{what}: {} bucket {i} has {} rows", view.name, stored.rows);
            }
        }
    };
    // Increasing keys, more documents than a batch: each batch appends to
    // the last bucket, which has stored rows.
    for round in 0..3 {
        put(&db, (0..1500).map(|i| i + round * 1500).map(|i| json!({"_id": format!("d{i:05}"), "n": i, "v": i % 17})).collect());
        refresh(&db, "db", &d, Limits::default()).unwrap();
        check_buckets(&format!("appended, round {round}"));
    }
    // Keys among the stored ones, and updates of stored documents.
    put(&db, (0..700).map(|i| json!({"_id": format!("e{i:05}"), "n": i * 6 + 1, "v": i % 5})).collect());
    refresh(&db, "db", &d, Limits::default()).unwrap();
    check_buckets("added among");
    let snapshot = db.read_snapshot().unwrap();
    let updates: Vec<Value> = (0..400)
        .map(|i| {
            let id = format!("d{:05}", i * 11);
            let (rev, _) = db.get_doc_bytes_at(&snapshot, &id, &Default::default()).unwrap();
            json!({"_id": id, "_rev": rev.to_string(), "n": 5000 + i, "v": 1})
        })
        .collect();
    put(&db, updates);
    refresh(&db, "db", &d, Limits::default()).unwrap();
    check_buckets("updated");
    check(&db, &d, "at the end");
}
