use super::*;
use crate::index::refresh;
use serde_json::json;

pub(super) fn put(db: &Database, docs: Vec<Value>) {
    let docs: Vec<Map<String, Value>> = docs.into_iter().map(|d| d.as_object().unwrap().clone()).collect();
    for (id, r) in db.update_docs(docs, true).unwrap() {
        r.unwrap_or_else(|e| panic!("{id}: {e}"));
    }
}

pub(super) fn ddoc(views: Value) -> DesignDoc {
    DesignDoc::parse("_design/t", json!({ "views": views }).as_object().unwrap()).unwrap().unwrap()
}

pub(super) fn query(db: &Database, d: &DesignDoc, view: &str, params: &[(&str, &str)]) -> Value {
    let q = ViewQuery::from_params(params.iter().copied()).unwrap();
    serde_json::from_str(&run_query(db, "db", d, view, &q, Limits::default()).unwrap()).unwrap()
}

fn keys(v: &Value) -> Vec<Value> {
    v["rows"].as_array().unwrap().iter().map(|r| r["key"].clone()).collect()
}

fn people() -> Database {
    let db = Database::memory();
    put(
        &db,
        vec![
            json!({"_id": "a", "age": 30, "name": "Ann", "tags": ["x", "y"]}),
            json!({"_id": "b", "age": 25, "name": "bob"}),
            json!({"_id": "c", "age": 30, "name": "Cy"}),
            json!({"_id": "d", "age": null, "name": "Dee"}),
            json!({"_id": "e", "name": "Eve"}),
        ],
    );
    db
}

fn by_age() -> DesignDoc {
    ddoc(json!({
        "by_age": {"map": "function (doc) { if (doc.age !== undefined) emit(doc.age, doc.name); }", "reduce": "_count"},
        "by_name": {"map": "function (doc) { emit(doc.name, 1); }"},
        "pairs": {"map": "function (doc) { if (doc.age) emit([doc.age, doc.name], doc.age); }", "reduce": "_sum"},
    }))
}

#[test]
fn rows_in_collation_order_with_ranges_skip_limit_and_descending() {
    let db = people();
    let d = by_age();
    let all = query(&db, &d, "by_age", &[("reduce", "false")]);
    assert_eq!(keys(&all), vec![json!(null), json!(25), json!(30), json!(30)]);
    assert_eq!(all["total_rows"], 4);
    assert_eq!(all["rows"][2], json!({"id": "a", "key": 30, "value": "Ann"}));
    // Strings in Unicode collation: case-insensitive first.
    assert_eq!(keys(&query(&db, &d, "by_name", &[])), ["Ann", "bob", "Cy", "Dee", "Eve"].map(|s| json!(s)).to_vec());
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("startkey", "26"), ("endkey", "30")]);
    assert_eq!(keys(&r), vec![json!(30), json!(30)]);
    assert_eq!(r["offset"], 2);
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("key", "30"), ("startkey_docid", "b")]);
    assert_eq!(r["rows"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), vec![json!("c")], "key is startkey and endkey");
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("startkey", "30"), ("startkey_docid", "b")]);
    assert_eq!(r["rows"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), vec![json!("c")]);
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("endkey", "30"), ("inclusive_end", "false")]);
    assert_eq!(keys(&r), vec![json!(null), json!(25)]);
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("descending", "true"), ("skip", "1"), ("limit", "2")]);
    assert_eq!(keys(&r), vec![json!(30), json!(25)]);
    assert_eq!(r["offset"], 1);
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("descending", "true"), ("startkey", "30"), ("endkey", "25"), ("inclusive_end", "false")]);
    assert_eq!(keys(&r), vec![json!(30), json!(30)]);
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("keys", "[30, 99, null]")]);
    assert_eq!(keys(&r), vec![json!(30), json!(30), json!(null)]);
    // Keys out of order and twice: rows in the order given, each time.
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("keys", "[30, 25, 30, null, 25]")]);
    assert_eq!(keys(&r), [30, 30, 25, 30, 30].iter().map(|k| json!(k)).chain([json!(null), json!(25)]).collect::<Vec<_>>());
    assert_eq!(r["rows"][2]["id"], "b");
    let r = query(&db, &d, "by_age", &[("reduce", "false"), ("keys", "[30, 25]"), ("limit", "3")]);
    assert_eq!(keys(&r), vec![json!(30), json!(30), json!(25)]);
}

#[test]
fn reduce_group_and_group_level() {
    let db = people();
    let d = by_age();
    assert_eq!(query(&db, &d, "by_age", &[]), json!({"rows": [{"key": null, "value": 4}]}));
    assert_eq!(
        query(&db, &d, "by_age", &[("group", "true")])["rows"],
        json!([{"key": null, "value": 1}, {"key": 25, "value": 1}, {"key": 30, "value": 2}])
    );
    assert_eq!(query(&db, &d, "pairs", &[("group_level", "1")])["rows"], json!([{"key": [25], "value": 25}, {"key": [30], "value": 60}]));
    assert_eq!(query(&db, &d, "pairs", &[("group_level", "0")])["rows"], json!([{"key": null, "value": 85}]));
    assert_eq!(query(&db, &d, "pairs", &[("group", "true"), ("limit", "1"), ("skip", "1")])["rows"], json!([{"key": [30, "Ann"], "value": 30}]));
    assert_eq!(query(&db, &d, "by_age", &[("keys", "[30, 25]"), ("group", "true")])["rows"], json!([{"key": 30, "value": 2}, {"key": 25, "value": 1}]));
}

#[test]
fn javascript_reduce_with_rereduce_over_many_rows() {
    let db = Database::memory();
    let docs: Vec<Value> = (0..2500).map(|i| json!({"_id": format!("d{i:05}"), "n": i, "k": i % 3})).collect();
    put(&db, docs);
    let d = ddoc(json!({"v": {"map": "function (doc) { emit(doc.k, doc.n); }", "reduce": "function (keys, values, rereduce) { var s = 0; for (var i = 0; i < values.length; i++) s += values[i]; return s; }"}}));
    let total: i64 = (0..2500).sum();
    assert_eq!(query(&db, &d, "v", &[])["rows"][0]["value"], json!(total));
    let by_k = query(&db, &d, "v", &[("group", "true")]);
    let want: Vec<i64> = (0..3).map(|k| (0..2500).filter(|i| i % 3 == k).sum()).collect();
    assert_eq!(by_k["rows"], json!([{"key": 0, "value": want[0]}, {"key": 1, "value": want[1]}, {"key": 2, "value": want[2]}]));
}

#[test]
fn the_index_follows_updates_and_deletes_incrementally() {
    let db = people();
    let d = by_age();
    assert_eq!(query(&db, &d, "by_age", &[("group", "true"), ("key", "30")])["rows"][0]["value"], 2);
    let c = db.get_doc("c", &ReadOptions::default()).unwrap();
    let mut changed = c.clone();
    changed.insert("age".into(), json!(25));
    put(&db, vec![Value::Object(changed)]);
    let mut gone = db.get_doc("a", &ReadOptions::default()).unwrap();
    gone.insert("_deleted".into(), json!(true));
    put(&db, vec![Value::Object(gone)]);
    put(&db, vec![json!({"_id": "f", "age": 99, "name": "Fay"})]);
    let r = query(&db, &d, "by_age", &[("reduce", "false")]);
    assert_eq!(keys(&r), vec![json!(null), json!(25), json!(25), json!(99)]);
    assert_eq!(r["total_rows"], 4);
    // update=false answers from the index as it is.
    put(&db, vec![json!({"_id": "g", "age": 1, "name": "Gil"})]);
    assert_eq!(query(&db, &d, "by_age", &[("reduce", "false"), ("update", "false")])["total_rows"], 4);
    assert_eq!(query(&db, &d, "by_age", &[("reduce", "false"), ("stale", "ok"), ("update_seq", "true")])["update_seq"], json!(8));
    assert_eq!(query(&db, &d, "by_age", &[("reduce", "false")])["total_rows"], 5);
}

#[test]
fn include_docs_and_linked_documents() {
    let db = people();
    put(&db, vec![json!({"_id": "link", "to": "b"})]);
    let d = ddoc(json!({"links": {"map": "function (doc) { if (doc.to) { emit(1, null); emit(2, {_id: doc.to}); emit(3, {_id: 'nobody'}); } }"}}));
    let r = query(&db, &d, "links", &[("include_docs", "true")]);
    assert_eq!(r["rows"][0]["doc"]["_id"], "link");
    assert_eq!(r["rows"][1]["doc"]["name"], "bob");
    assert_eq!(r["rows"][2]["doc"], Value::Null);
}

#[test]
fn a_reduce_takes_keys_of_one_key_and_refuses_grouping_rows_it_does_not_reduce() {
    let db = people();
    let d = by_age();
    // One key in `keys` is that key, as CouchDB 3.5 answers it.
    let r = query(&db, &d, "by_age", &[("keys", "[30]")]);
    assert_eq!(r, query(&db, &d, "by_age", &[("key", "30")]));
    assert_eq!(r["rows"], json!([{"key": null, "value": 2}]));
    let err = |params: &[(&str, &str)]| match ViewQuery::from_params(params.iter().copied()).and_then(|q| run_query(&db, "db", &d, "by_age", &q, Limits::default())) {
        Err(ViewError::Query(m)) => m,
        other => panic!("{params:?}: {other:?}"),
    };
    assert_eq!(err(&[("keys", "[25,30]")]), "Multi-key fetches for reduce views must use `group=true`");
    assert_eq!(err(&[("keys", "[]")]), "Multi-key fetches for reduce views must use `group=true`");
    assert_eq!(query(&db, &d, "by_age", &[("keys", "[25,30]"), ("group", "true")])["rows"], json!([{"key": 25, "value": 1}, {"key": 30, "value": 2}]));
    // Grouping rows that are not reduced.
    assert_eq!(err(&[("reduce", "false"), ("group", "true")]), "Invalid use of grouping on a map view.");
    assert_eq!(err(&[("reduce", "false"), ("group_level", "1")]), "Invalid use of grouping on a map view.");
    assert_eq!(keys(&query(&db, &d, "by_age", &[("reduce", "false"), ("group", "false")])).len(), 4);
}

#[test]
fn a_throwing_map_function_skips_the_document_and_errors_are_couchdbs() {
    let db = people();
    let d = ddoc(json!({"v": {"map": "function (doc) { emit(doc.name.toLowerCase(), doc.age.toFixed(0)); }"}, "m": {"map": "function (doc) { emit(1, 1); }"}}));
    // d has age null, e has no age: both throw and are left out.
    assert_eq!(keys(&query(&db, &d, "v", &[])), vec![json!("ann"), json!("bob"), json!("cy")]);
    let err = |params: &[(&str, &str)]| match ViewQuery::from_params(params.iter().copied()).and_then(|q| run_query(&db, "db", &d, "m", &q, Limits::default())) {
        Err(ViewError::Query(m)) => m,
        other => panic!("{params:?}: {other:?}"),
    };
    assert_eq!(err(&[("reduce", "true")]), "Reduce is invalid for map-only views.");
    assert_eq!(err(&[("group", "true")]), "Invalid use of grouping on a map view.");
    assert_eq!(err(&[("limit", "-1")]), "Invalid value for positive integer: \"-1\"");
    assert_eq!(err(&[("keys", "[1]"), ("key", "1")]), "`keys` is incompatible with `key`, `start_key` and `end_key`");
    assert!(err(&[("startkey", "2"), ("endkey", "1")]).starts_with("No rows can match your key range"));
    assert!(err(&[("key", "{bad")]).starts_with("Invalid JSON"));
    assert!(matches!(run_query(&db, "db", &d, "nope", &ViewQuery::default(), Limits::default()), Err(ViewError::NotFound(_))));
}

#[test]
fn a_runaway_map_function_fails_the_update_without_writing_a_partial_batch() {
    let db = people();
    let d = ddoc(json!({"v": {"map": "function (doc) { if (doc._id == 'c') while (true) {} emit(doc._id, null); }"}}));
    let limits = Limits { call_timeout: std::time::Duration::from_millis(200), ..Limits::default() };
    assert!(matches!(refresh(&db, "db", &d, limits), Err(ViewError::Process(_))));
    let s = db.store().snapshot().unwrap();
    assert_eq!(IndexState::read(s.kv(), &index_id(&d)).unwrap(), None);
}

/// Batches are written on a thread of their own while the next is
/// mapped: a map function that fails in the third batch leaves the index
/// where one thread writing each batch before mapping the next leaves it,
/// at the end of the second. A build from nothing, ingested at once
/// (`bulk_build.rs`), leaves no index at all.
#[test]
fn a_map_failure_leaves_every_batch_before_it_written() {
    let d = ddoc(json!({"v": {"map": "function (doc) { if (doc._id == 'd2100') while (true) {} emit(doc.n, null); }"}}));
    let limits = Limits { call_timeout: std::time::Duration::from_millis(200), ..Limits::default() };
    for path in [crate::index::BuildPath::Transactions, crate::index::BuildPath::Bulk] {
        let db = Database::memory();
        put(&db, (0..2500).map(|i| json!({"_id": format!("d{i:04}"), "n": i})).collect());
        assert!(matches!(crate::index::refresh_with(&db, "db", &d, limits, path), Err(ViewError::Process(_))));
        let s = db.store().snapshot().unwrap();
        let state = IndexState::read(s.kv(), &index_id(&d)).unwrap();
        if path == crate::index::BuildPath::Bulk {
            assert_eq!(state, None, "nothing ingested");
            continue;
        }
        let state = state.expect("two batches written");
        assert_eq!((state.seq, state.rows), (2 * crate::index::BATCH as u64, vec![2 * crate::index::BATCH as u64]));
    }
}

#[test]
fn mixed_type_keys_collate_as_couchdb_documents() {
    let db = Database::memory();
    let values = json!([null, false, true, -1.5, 1, 2, 3, 4, "a", "A", "aa", "b", "B", "ba", "bb", ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"], {"a": 1}, {"a": 2}, {"b": 1}, {"b": 2}, {"b": 2, "c": 2}]);
    let docs: Vec<Value> = values.as_array().unwrap().iter().enumerate().rev().map(|(i, v)| json!({"_id": format!("{i:02}"), "k": v})).collect();
    put(&db, docs);
    let d = ddoc(json!({"v": {"map": "function (doc) { emit(doc.k, null); }"}}));
    assert_eq!(Value::Array(keys(&query(&db, &d, "v", &[]))), values);
}

/// `offset` from the counts by key range (`rank.rs`) is the number of rows
/// before the first one given, in both directions, through buckets cut and
/// joined by many rounds of writes, deletes and updates (checked against
/// the rows themselves, counted one by one).
#[test]
fn offsets_from_the_rank_counts_are_the_rows_before_through_cuts_and_joins() {
    let db = Database::memory();
    let d = ddoc(json!({
        "n": {"map": "function (doc) { if (doc.n !== undefined) { emit(doc.n, null); if (doc.n % 3 == 0) emit(doc.n, 1); } }"},
        "s": {"map": "function (doc) { if (doc.n !== undefined) emit('k' + (doc.n % 97), null); }"},
    }));
    let mut x: u64 = 7;
    let mut next = move |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut revs: std::collections::HashMap<String, String> = Default::default();
    for round in 0..7 {
        let mut docs = Vec::new();
        for _ in 0..if round >= 4 { 4000 } else { 1500 } {
            let id = format!("d{}", next(4000));
            let mut doc = json!({"_id": id, "n": next(5000)});
            if let Some(rev) = revs.get(&id) {
                doc["_rev"] = json!(rev);
                // Late rounds delete most documents: buckets are joined.
                if next(10) < if round >= 4 { 9 } else { 2 } {
                    doc["_deleted"] = json!(true);
                }
            }
            if docs.iter().any(|d: &Value| d["_id"] == doc["_id"]) {
                continue;
            }
            docs.push(doc);
        }
        let docs: Vec<Map<String, Value>> = docs.into_iter().map(|d| d.as_object().unwrap().clone()).collect();
        for (id, r) in db.update_docs(docs, true).unwrap() {
            revs.insert(id, r.unwrap().to_string());
        }
        for view in ["n", "s"] {
            let all = query(&db, &d, view, &[("reduce", "false")]);
            let rows = all["rows"].as_array().unwrap().clone();
            assert_eq!(all["total_rows"].as_u64().unwrap() as usize, rows.len());
            // The buckets' counts sum to the view's rows.
            let view_no = d.view(view).unwrap().0;
            let prefix = index::view_prefix(&index_id(&d), view_no);
            let snapshot = db.store().snapshot().unwrap();
            let upper = rhizome_kv::prefix_upper_bound(&prefix);
            let mut cursor = snapshot.kv().cursor(crate::rank::VIEW_RANKS, &prefix, upper.as_deref());
            cursor.seek_first();
            let (mut buckets, mut sum) = (0, 0);
            while cursor.valid() {
                buckets += 1;
                sum += u64::from_be_bytes(cursor.value()[..8].try_into().unwrap()) as usize;
                cursor.next();
            }
            assert_eq!(sum, rows.len(), "round {round}, view {view}: {buckets} buckets");
            for _ in 0..40 {
                let probe = if view == "n" { json!(next(5200)) } else { json!(format!("k{}", next(100))) };
                let before = rows.iter().filter(|r| collate::compare(&r["key"], &probe).is_lt()).count();
                let after = rows.iter().filter(|r| collate::compare(&r["key"], &probe).is_gt()).count();
                let asc = query(&db, &d, view, &[("reduce", "false"), ("startkey", &probe.to_string()), ("limit", "1")]);
                assert_eq!(asc["offset"].as_u64().unwrap() as usize, before, "round {round}, view {view}, startkey {probe}");
                let desc = query(&db, &d, view, &[("reduce", "false"), ("startkey", &probe.to_string()), ("descending", "true"), ("limit", "1")]);
                assert_eq!(desc["offset"].as_u64().unwrap() as usize, after, "round {round}, view {view}, descending from {probe}");
            }
        }
    }
}

/// An index written before the counts by key range (its state without
/// `ranked`) answers offsets by counting rows, and gets the counts at its
/// next update.
#[test]
fn an_index_without_rank_counts_gets_them_at_its_next_update() {
    let db = Database::memory();
    let d = ddoc(json!({"n": {"map": "function (doc) { emit(doc.n, null); }"}}));
    put(&db, (0..3000).map(|i| json!({"_id": format!("d{i:05}"), "n": i})).collect());
    assert_eq!(query(&db, &d, "n", &[("startkey", "2500"), ("limit", "1")])["offset"], 2500);
    // Back to the older form: no buckets, a state without `ranked`.
    let id = index_id(&d);
    {
        let mut txn = db.store().transaction().unwrap();
        let mut doomed = Vec::new();
        let mut cursor = txn.kv().cursor(crate::rank::VIEW_RANKS, &id, None);
        cursor.seek_first();
        while cursor.valid() {
            doomed.push(cursor.key().to_vec());
            cursor.next();
        }
        drop(cursor);
        for k in doomed {
            txn.kv_mut().delete(crate::rank::VIEW_RANKS, &k);
        }
        let mut state: Value = serde_json::from_slice(&txn.kv().get(index::VIEW_STATE, &id).unwrap().unwrap()).unwrap();
        state.as_object_mut().unwrap().remove("ranked");
        txn.kv_mut().put(index::VIEW_STATE, &id, state.to_string().as_bytes());
        txn.commit().unwrap();
    }
    assert_eq!(query(&db, &d, "n", &[("startkey", "2500"), ("limit", "1")])["offset"], 2500, "counted row by row");
    put(&db, vec![json!({"_id": "x", "n": -1})]);
    assert_eq!(query(&db, &d, "n", &[("startkey", "2500"), ("limit", "1")])["offset"], 2501);
    let snapshot = db.store().snapshot().unwrap();
    assert!(IndexState::read(snapshot.kv(), &id).unwrap().unwrap().ranked);
    let mut cursor = snapshot.kv().cursor(crate::rank::VIEW_RANKS, &id, None);
    cursor.seek_first();
    let mut sum = 0;
    while cursor.valid() {
        sum += u64::from_be_bytes(cursor.value()[..8].try_into().unwrap());
        cursor.next();
    }
    assert_eq!(sum, 3001);
}

#[test]
fn one_documents_rows_with_one_key_come_in_the_order_of_their_values() {
    let db = Database::memory();
    put(&db, vec![json!({"_id": "doc1", "foo": "foo", "bar": "bar"}), json!({"_id": "doc2", "foo": "foo", "bar": "bar"})]);
    // PouchDB's "multiple emissions" test, as CouchDB answers it: a
    // document's rows are sorted by (key, value) in Erlang's term order.
    let d = ddoc(json!({ "v": { "map": "function (doc) { emit(doc.foo, 'fooValue'); emit(doc.foo); emit(doc.bar); emit(doc.bar, 'crayon!'); emit(doc.bar, 'multiple values!'); emit(doc.bar, 'crayon!'); }" } }));
    let all = query(&db, &d, "v", &[]);
    let values: Vec<Value> = all["rows"].as_array().unwrap().iter().map(|r| r["value"].clone()).collect();
    let ids: Vec<Value> = all["rows"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect();
    let crayon = || json!("crayon!");
    assert_eq!(values, vec![json!(null), crayon(), crayon(), json!("multiple values!"), json!(null), crayon(), crayon(), json!("multiple values!"), json!(null), json!("fooValue"), json!(null), json!("fooValue")]);
    assert_eq!(ids, ["doc1", "doc1", "doc1", "doc1", "doc2", "doc2", "doc2", "doc2", "doc1", "doc1", "doc2", "doc2"].map(|s| json!(s)).to_vec());
    let page = query(&db, &d, "v", &[("startkey", "\"foo\""), ("skip", "1"), ("limit", "2")]);
    assert_eq!(page["rows"], json!([{"id": "doc1", "key": "foo", "value": "fooValue"}, {"id": "doc2", "key": "foo", "value": null}]));
}

#[test]
fn a_throwing_javascript_reduce_gives_null_as_couchdbs_query_server_does() {
    let db = people();
    let d = ddoc(json!({
        "thrown": { "map": "function (doc) { emit(doc.name); }", "reduce": "function (keys) { return keys[0].foo.bar; }" },
        "fatal": { "map": "function (doc) { emit(doc.name); }", "reduce": "function () { throw 'fatal_error'; }" },
    }));
    let grouped = query(&db, &d, "thrown", &[("group", "true")]);
    assert_eq!(keys(&grouped).len(), 5, "{grouped}");
    assert!(grouped["rows"].as_array().unwrap().iter().all(|r| r["value"].is_null()), "{grouped}");
    assert_eq!(query(&db, &d, "thrown", &[])["rows"], json!([{"key": null, "value": null}]));
    let q = ViewQuery::from_params([("group", "true")]).unwrap();
    assert!(run_query(&db, "db", &d, "fatal", &q, Limits::default()).is_err());
}

/// Two databases with the same design document (one index signature) and
/// the same sequence, but different rows: the fences of one kept in memory
/// (`rank::Fences`) never answer the other's offsets, and a database made
/// again after its index was cached gets its own.
#[test]
fn offsets_of_two_databases_with_one_signature_and_sequence_stay_apart() {
    let d = ddoc(json!({"n": {"map": "function (doc) { emit(doc.n, null); }"}}));
    let fill = |shift: i64| {
        let db = Database::memory();
        put(&db, (0..3000).map(|i| json!({"_id": format!("d{i:05}"), "n": i * 2 + shift})).collect());
        db
    };
    let (low, high) = (fill(0), fill(4000));
    for _ in 0..2 {
        assert_eq!(query(&low, &d, "n", &[("startkey", "3000"), ("limit", "1")])["offset"], 1500);
        assert_eq!(query(&high, &d, "n", &[("startkey", "3000"), ("limit", "1")])["offset"], 0);
        assert_eq!(query(&high, &d, "n", &[("startkey", "7000"), ("limit", "1")])["offset"], 1500);
        assert_eq!(query(&low, &d, "n", &[("startkey", "7000"), ("limit", "1")])["offset"], 3000);
    }
    let again = fill(1000);
    assert_eq!(query(&again, &d, "n", &[("startkey", "3000"), ("limit", "1")])["offset"], 1000);
}

#[test]
fn views_with_one_map_function_share_its_rows_as_couchdbs() {
    // CouchDB runs a map function once per document for every view that
    // has it (couch_mrview groups views by map source): a function whose
    // rows depend on how often it ran gives each such view the same rows.
    let db = Database::memory();
    put(&db, (0..100).map(|i| json!({"_id": format!("d{i:03}")})).collect());
    let counting = "function (doc) { globalThis.runs = (globalThis.runs || 0) + 1; emit(doc._id, globalThis.runs); }";
    let d = ddoc(json!({ "a": {"map": counting}, "b": {"map": counting, "reduce": "_count"} }));
    let a = query(&db, &d, "a", &[]);
    let b = query(&db, &d, "b", &[("reduce", "false")]);
    assert_eq!(a["total_rows"], 100);
    assert_eq!(a["rows"], b["rows"]);
    assert_eq!(query(&db, &d, "b", &[])["rows"][0]["value"], 100);
}

#[test]
fn a_batch_mapped_on_two_cores_and_cut_by_its_bytes_resumes_where_it_stopped() {
    // 100 KB per row: the batch's first half (100 documents) passes its
    // half of the batch's row bytes before its end, so the batch is
    // written up to there and the rest is mapped again by the next one.
    let db = Database::memory();
    put(&db, (0..200).map(|i| json!({"_id": format!("d{i:03}"), "n": i})).collect());
    let d = ddoc(json!({
        "big": {"map": "function (doc) { emit(doc.n, new Array(100001).join('x')); }", "reduce": "_count"},
        "odd": {"map": "function (doc) { if (doc.n % 2) emit(doc.n, doc._id); else throw new Error('even'); }"},
    }));
    let state = refresh(&db, "db", &d, Limits::default()).unwrap();
    assert_eq!(state.rows, vec![200, 100]);
    let big = query(&db, &d, "big", &[("reduce", "false"), ("limit", "3"), ("skip", "98")]);
    assert_eq!(keys(&big), vec![json!(98), json!(99), json!(100)]);
    assert_eq!(big["rows"][0]["id"], "d098");
    assert_eq!(big["rows"][0]["value"].as_str().map(str::len), Some(100000));
    assert_eq!(query(&db, &d, "big", &[])["rows"][0]["value"], 200);
    let odd = query(&db, &d, "odd", &[]);
    assert_eq!(keys(&odd), (0..200).filter(|n| n % 2 == 1).map(|n| json!(n)).collect::<Vec<_>>());
}
