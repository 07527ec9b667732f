//! Mango on `rhizome serve`, as CouchDB 3 documents it
//! (https://docs.couchdb.org/en/stable/api/database/find.html): every
//! selector operator, indexes and the planner's choices, sort, paging,
//! projection, `_explain`, `_index` management, persistence of indexes
//! across restarts and CouchDB's collation of mixed types.

mod common;

use common::server::{try_request, ServerProcess, ADMIN};
use serde_json::{json, Value};

fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

struct Db<'a> {
    server: &'a ServerProcess,
    name: &'static str,
}

impl Db<'_> {
    fn new<'s>(server: &'s ServerProcess, name: &'static str) -> Db<'s> {
        assert_eq!(server.request("PUT", &format!("/{name}"), Some(ADMIN), None).0, 201);
        Db { server, name }
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        let body = if body.is_null() { None } else { Some(body.to_string()) };
        let (status, text) = self.server.request(method, &format!("/{}{path}", self.name), Some(ADMIN), body.as_deref());
        (status, j(&text))
    }

    fn ok(&self, method: &str, path: &str, body: Value) -> Value {
        let (status, answer) = self.call(method, path, &body);
        assert!((200..300).contains(&status), "{method} {path} {body}: {status} {answer}");
        answer
    }

    fn put_all(&self, docs: Value) {
        for row in self.ok("POST", "/_bulk_docs", json!({ "docs": docs })).as_array().unwrap() {
            assert_eq!(row["ok"], true, "{row}");
        }
    }

    fn find(&self, query: Value) -> Value {
        self.ok("POST", "/_find", query)
    }

    fn ids(&self, query: Value) -> Vec<String> {
        let answer = self.find(query);
        answer["docs"].as_array().unwrap_or_else(|| panic!("{answer}")).iter().map(|d| d["_id"].as_str().unwrap().to_owned()).collect()
    }

    fn error(&self, path: &str, body: Value) -> (u16, String) {
        let (status, answer) = self.call("POST", path, &body);
        (status, answer["error"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned())
    }

    fn index(&self, body: Value) -> Value {
        self.ok("POST", "/_index", body)
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn s(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_selector_operator_matches_as_couchdb_documents_it() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "ops");
    db.put_all(json!([
        { "_id": "ann", "name": "Ann", "age": 31, "tags": ["a", "b"], "addr": { "city": "Oslo", "zip": 100 }, "kv": { "k1": 1 }, "alive": true },
        { "_id": "bob", "name": "Bob", "age": 40, "tags": ["b"], "addr": { "city": "Rome" }, "kv": { "x": 1 }, "alive": false, "nick": null },
        { "_id": "cid", "name": "cid", "age": "40", "tags": [], "scores": [3, 5, 9] },
        { "_id": "dee", "name": "Dee", "age": 18.5, "tags": ["a", "c", "d"], "scores": [1, 2] },
    ]));
    let q = |sel: Value| sorted(db.ids(json!({ "selector": sel })));
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({ "name": "Ann" }), s(&["ann"])),
        (json!({ "age": { "$eq": 40 } }), s(&["bob"])),
        (json!({ "age": { "$ne": 40 } }), s(&["ann", "cid", "dee"])),
        (json!({ "age": { "$gt": 31 } }), s(&["bob", "cid"])),
        (json!({ "age": { "$gte": 31, "$lt": 100 } }), s(&["ann", "bob"])),
        (json!({ "age": { "$lt": 31 } }), s(&["dee"])),
        (json!({ "age": { "$lte": 31 } }), s(&["ann", "dee"])),
        (json!({ "name": { "$in": ["Bob", "cid", "x"] } }), s(&["bob", "cid"])),
        (json!({ "tags": { "$in": ["c"] } }), s(&["dee"])),
        (json!({ "name": { "$nin": ["Bob", "cid"] } }), s(&["ann", "dee"])),
        (json!({ "nick": { "$exists": true } }), s(&["bob"])),
        (json!({ "nick": { "$exists": false } }), s(&["ann", "cid", "dee"])),
        (json!({ "age": { "$type": "string" } }), s(&["cid"])),
        (json!({ "nick": { "$type": "null" } }), s(&["bob"])),
        (json!({ "tags": { "$size": 1 } }), s(&["bob"])),
        (json!({ "age": { "$mod": [10, 1] } }), s(&["ann"])),
        (json!({ "name": { "$regex": "^[A-Z]" } }), s(&["ann", "bob", "dee"])),
        (json!({ "$and": [{ "tags": { "$all": ["a"] } }, { "age": { "$gt": 20 } }] }), s(&["ann"])),
        (json!({ "$or": [{ "name": "Bob" }, { "addr.city": "Oslo" }] }), s(&["ann", "bob"])),
        (json!({ "$nor": [{ "name": "Bob" }, { "age": { "$type": "string" } }] }), s(&["ann", "dee"])),
        (json!({ "$not": { "name": "Bob" } }), s(&["ann", "cid", "dee"])),
        (json!({ "age": { "$not": { "$gt": 20 } } }), s(&["dee"])),
        (json!({ "tags": { "$all": ["a", "b"] } }), s(&["ann"])),
        (json!({ "scores": { "$elemMatch": { "$gt": 8 } } }), s(&["cid"])),
        (json!({ "scores": { "$allMatch": { "$lt": 5 } } }), s(&["dee"])),
        (json!({ "kv": { "$keyMapMatch": { "$eq": "k1" } } }), s(&["ann"])),
        (json!({ "name": { "$beginsWith": "D" } }), s(&["dee"])),
        (json!({ "addr": { "city": "Rome" } }), s(&["bob"])),
        (json!({ "addr.zip": { "$gte": 100 } }), s(&["ann"])),
        (json!({ "alive": false }), s(&["bob"])),
        (json!({ "_id": { "$gt": "bob" } }), s(&["cid", "dee"])),
    ];
    for (sel, want) in cases {
        assert_eq!(q(sel.clone()), want, "{sel}");
    }
    // Bad selectors: CouchDB's errors, and the server stays up.
    assert_eq!(db.error("/_find", json!({ "selector": { "a": { "$bogus": 1 } } })), (400, "invalid_operator".into()));
    assert_eq!(db.error("/_find", json!({ "selector": { "a": { "$in": 3 } } })), (400, "bad_arg".into()));
    assert_eq!(db.error("/_find", json!({ "selector": { "a": { "$regex": "(" } } })), (400, "bad_arg".into()));
    assert_eq!(db.error("/_find", json!({ "selector": [1] })), (400, "invalid_selector_json".into()));
    assert_eq!(db.error("/_find", json!({})), (400, "missing_required_key".into()));
    assert_eq!(db.error("/_find", json!({ "selector": {}, "bogus": 1 })), (400, "invalid_key".into()));
    assert_eq!(db.error("/_find", json!({ "selector": {}, "limit": -1 })), (400, "invalid_non_neg_integer".into()));
    assert_eq!(db.error("/_find", json!({ "selector": {}, "sort": [{ "a": "asc" }, { "b": "desc" }] })), (400, "unsupported_mixed_sort".into()));
    assert_eq!(db.call("GET", "/_find", &Value::Null).0, 405);
    let (status, _) = try_request(server.port, "POST", "/ops/_find", Some(ADMIN), Some("{}"), &[("Content-Type", "text/plain")]).unwrap();
    assert!(status == 415 || status == 400, "a non-JSON content type is refused: {status}");
    // conflicts=true shows a document's conflicting revisions.
    db.ok("POST", "/_bulk_docs", json!({ "new_edits": false, "docs": [{ "_id": "ann", "_rev": "1-ffff", "name": "Ann", "other": true }] }));
    let with = db.find(json!({ "selector": { "_id": "ann" }, "conflicts": true }));
    assert_eq!(with["docs"][0]["_conflicts"].as_array().map(Vec::len), Some(1), "{with}");
    assert!(db.find(json!({ "selector": { "_id": "ann" } }))["docs"][0].get("_conflicts").is_none());
    // `_changes?filter=_selector` runs the same engine, and refuses the same selectors.
    let (status, text) = server.request("POST", "/ops/_changes?filter=_selector", Some(ADMIN), Some(r#"{"selector":{"scores":{"$elemMatch":{"$gt":8}}}}"#));
    assert_eq!(status, 200, "{text}");
    let ids: Vec<String> = j(&text)["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids, s(&["cid"]));
    let (status, text) = server.request("POST", "/ops/_changes?filter=_selector", Some(ADMIN), Some(r#"{"selector":{"a":{"$bogus":1}}}"#));
    assert_eq!((status, j(&text)["error"].clone()), (400, json!("invalid_operator")));
    assert_eq!(server.request("GET", "/_up", None, None).0, 200);
}

#[test]
fn sort_limit_skip_bookmark_fields_and_the_planner() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "movies");
    let docs: Vec<Value> = (0..30).map(|i| json!({ "_id": format!("m{i:02}"), "year": 1990 + i, "genre": if i % 2 == 0 { "drama" } else { "comedy" }, "cast": { "lead": format!("L{i}"), "n": i } })).collect();
    db.put_all(Value::Array(docs));
    // Without an index: full scan, 25 by default, a warning; a sort on a
    // field no index has is CouchDB's error.
    let full = db.find(json!({ "selector": { "year": { "$gt": 0 } } }));
    assert_eq!(full["docs"].as_array().unwrap().len(), 25);
    assert!(full["warning"].as_str().unwrap().contains("No matching index found"), "{full}");
    assert_eq!(db.error("/_find", json!({ "selector": { "year": { "$gt": 0 } }, "sort": ["year"] })), (400, "no_usable_index".into()));
    // Sorting by _id needs no index when the selector ranges _id; without
    // that CouchDB 3.5 refuses it too (mango_idx_special:is_usable).
    assert_eq!(db.ids(json!({ "selector": { "genre": "drama", "_id": { "$gt": null } }, "sort": [{ "_id": "desc" }], "limit": 2 })), s(&["m28", "m26"]));
    assert_eq!(db.error("/_find", json!({ "selector": { "genre": "drama" }, "sort": [{ "_id": "desc" }] })), (400, "no_usable_index".into()));
    let created = db.index(json!({ "index": { "fields": ["year"] }, "ddoc": "by-year", "name": "year" }));
    assert_eq!(created, json!({ "result": "created", "id": "_design/by-year", "name": "year" }));
    assert_eq!(db.index(json!({ "index": { "fields": ["year"] }, "ddoc": "by-year", "name": "year" }))["result"], "exists");
    let answer = db.find(json!({ "selector": { "year": { "$gte": 2015 } }, "sort": [{ "year": "desc" }], "fields": ["_id", "cast.lead"], "execution_stats": true }));
    assert!(answer.get("warning").is_none(), "{answer}");
    let docs = answer["docs"].as_array().unwrap();
    assert_eq!(docs.len(), 5);
    assert_eq!(docs[0], json!({ "_id": "m29", "cast": { "lead": "L29" } }));
    assert_eq!(answer["execution_stats"]["total_keys_examined"], 5, "the index range is scanned, not the database: {answer}");
    assert_eq!(answer["execution_stats"]["results_returned"], 5);
    // An index scan that reads many documents per result says so.
    let poor = db.find(json!({ "selector": { "year": { "$gt": 0 }, "cast.lead": "nobody" } }));
    assert!(poor["warning"].as_str().unwrap().starts_with("The number of documents examined is high"), "{poor}");
    // limit, skip and bookmark paginate in index order.
    let page1 = db.find(json!({ "selector": { "year": { "$gte": 1990 } }, "sort": ["year"], "limit": 4, "skip": 2 }));
    let ids1: Vec<&str> = page1["docs"].as_array().unwrap().iter().map(|d| d["_id"].as_str().unwrap()).collect();
    assert_eq!(ids1, ["m02", "m03", "m04", "m05"]);
    let mut seen = Vec::new();
    let mut bookmark = Value::Null;
    for _ in 0..10 {
        let page = db.find(json!({ "selector": { "year": { "$gte": 1990 } }, "sort": ["year"], "limit": 7, "bookmark": bookmark }));
        let docs = page["docs"].as_array().unwrap();
        if docs.is_empty() {
            break;
        }
        seen.extend(docs.iter().map(|d| d["_id"].as_str().unwrap().to_owned()));
        bookmark = page["bookmark"].clone();
    }
    assert_eq!(seen, (0..30).map(|i| format!("m{i:02}")).collect::<Vec<_>>());
    assert_eq!(db.error("/_find", json!({ "selector": { "year": 1 }, "bookmark": "not!base64" })), (400, "invalid_bookmark".into()));
    // Bookmarks page `_all_docs` scans too.
    let p1 = db.find(json!({ "selector": { "genre": "comedy" }, "limit": 10 }));
    let p2 = db.find(json!({ "selector": { "genre": "comedy" }, "limit": 10, "bookmark": p1["bookmark"] }));
    assert_eq!(p1["docs"].as_array().unwrap().len() + p2["docs"].as_array().unwrap().len(), 15);
    assert_eq!(p2["docs"][0]["_id"], "m21");
    // The planner: the index whose leading columns the selector bounds.
    db.index(json!({ "index": { "fields": ["genre", "year"] }, "ddoc": "gy", "name": "genre-year" }));
    let explain = db.ok("POST", "/_explain", json!({ "selector": { "genre": "drama", "year": { "$gt": 2000 } } }));
    assert_eq!(explain["index"]["name"], "genre-year", "{explain}");
    assert_eq!(explain["dbname"], "movies");
    assert_eq!(explain["selector"], json!({ "$and": [{ "genre": { "$eq": "drama" } }, { "year": { "$gt": 2000 } }] }));
    assert_eq!(explain["mrargs"]["start_key"], json!(["drama", 2000]));
    assert_eq!(explain["mrargs"]["end_key"], json!(["drama", "<MAX>"]));
    assert_eq!(explain["limit"], 25);
    for key in ["opts", "skip", "fields", "partitioned", "covering"] {
        assert!(explain.get(key).is_some(), "_explain has {key}: {explain}");
    }
    assert_eq!(db.ids(json!({ "selector": { "genre": "drama", "year": { "$gt": 2010 } }, "sort": ["genre", "year"] })), s(&["m22", "m24", "m26", "m28"]));
    // $beginsWith bounds the index range, as CouchDB 3.4 does.
    db.index(json!({ "index": { "fields": ["cast.lead"] }, "ddoc": "lead", "name": "lead" }));
    let begins = db.find(json!({ "selector": { "cast.lead": { "$beginsWith": "L2" } }, "sort": ["cast.lead"], "execution_stats": true }));
    let ids: Vec<&str> = begins["docs"].as_array().unwrap().iter().map(|d| d["_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["m02", "m20", "m21", "m22", "m23", "m24", "m25", "m26", "m27", "m28", "m29"]);
    assert_eq!(begins["execution_stats"]["total_keys_examined"], 11, "{begins}");
    // A sort on `year` after a fixed `genre` can use genre-year.
    assert_eq!(db.ids(json!({ "selector": { "genre": "comedy", "year": { "$gt": 2012 } }, "sort": [{ "year": "desc" }] })), s(&["m29", "m27", "m25", "m23"]));
    // use_index: a named index that cannot serve the query falls back with
    // a warning, or is an error when allow_fallback is false.
    let fallback = db.find(json!({ "selector": { "cast.n": 3 }, "use_index": ["by-year", "year"] }));
    assert!(fallback["warning"].as_str().unwrap().contains("was not used because"), "{fallback}");
    assert_eq!(fallback["docs"][0]["_id"], "m03");
    assert_eq!(db.error("/_find", json!({ "selector": { "cast.n": 3 }, "use_index": "by-year", "allow_fallback": false })), (400, "invalid_index".into()));
    let used = db.ok("POST", "/_explain", json!({ "selector": { "year": { "$gt": 0 }, "genre": "drama" }, "use_index": ["_design/by-year", "year"] }));
    assert_eq!(used["index"]["name"], "year");
    // update=false answers from the index as it is; the default catches up.
    db.put_all(json!([{ "_id": "new", "year": 3000 }]));
    assert!(db.ids(json!({ "selector": { "year": 3000 }, "update": false, "use_index": ["by-year", "year"] })).is_empty());
    assert_eq!(db.ids(json!({ "selector": { "year": 3000 } })), s(&["new"]));
}

#[test]
fn indexes_are_design_documents_persist_across_restart_and_follow_writes() {
    let data = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(data.path());
    {
        let db = Db::new(&server, "people");
        db.put_all(json!([
            { "_id": "a", "type": "user", "age": 30 },
            { "_id": "b", "type": "user", "age": 20 },
            { "_id": "c", "type": "bot", "age": 10 },
        ]));
        db.index(json!({ "index": { "fields": ["age"] }, "ddoc": "ages", "name": "age" }));
        db.index(json!({ "index": { "fields": ["age"], "partial_filter_selector": { "type": "user" } }, "ddoc": "users", "name": "user-age" }));
        // The design documents are real documents.
        let ddoc = db.ok("GET", "/_design/ages", Value::Null);
        assert_eq!(ddoc["language"], "query");
        assert!(ddoc["views"]["age"]["map"]["fields"].is_object(), "{ddoc}");
        let all = db.ok("GET", "/_all_docs", Value::Null);
        assert!(all["rows"].as_array().unwrap().iter().any(|r| r["id"] == "_design/users"));
        let listed = db.ok("GET", "/_index", Value::Null);
        assert_eq!(listed["total_rows"], 3);
        assert_eq!(listed["indexes"][0]["name"], "_all_docs");
        assert_eq!(listed["indexes"][0]["type"], "special");
        // Kept in its normal form, as CouchDB keeps it.
        assert_eq!(listed["indexes"][2]["def"]["partial_filter_selector"], json!({ "type": { "$eq": "user" } }));
        assert_eq!(db.ok("GET", "/_index?limit=1&skip=1", Value::Null)["indexes"].as_array().unwrap().len(), 1);
        // A partial index is used only when named, and holds only its documents.
        let ex = db.ok("POST", "/_explain", json!({ "selector": { "age": { "$gt": 0 } } }));
        assert_eq!(ex["index"]["name"], "age");
        assert_eq!(db.ids(json!({ "selector": { "age": { "$gt": 0 } }, "use_index": ["users", "user-age"], "sort": ["age"] })), s(&["b", "a"]));
        assert_eq!(db.ids(json!({ "selector": { "age": { "$gt": 0 } }, "sort": ["age"] })), s(&["c", "b", "a"]));
        // Text indexes need a search service.
        let (status, answer) = db.call("POST", "/_index", &json!({ "index": { "fields": ["age"] }, "type": "text" }));
        assert_eq!(status, 503, "{answer}");
        assert_eq!(db.error("/_index", json!({ "index": { "fields": ["age"] }, "type": "bogus" })), (400, "invalid_index".into()));
        assert_eq!(db.error("/_index", json!({ "ddoc": "x" })), (400, "missing_required_key".into()));
    }
    server.restart();
    let db = Db { server: &server, name: "people" };
    assert_eq!(db.ids(json!({ "selector": { "age": { "$gt": 0 } }, "sort": ["age"] })), s(&["c", "b", "a"]));
    let rev = db.ok("GET", "/b", Value::Null)["_rev"].clone();
    db.put_all(json!([{ "_id": "b", "_rev": rev, "_deleted": true }, { "_id": "d", "type": "user", "age": 25 }]));
    let rev = db.ok("GET", "/a", Value::Null)["_rev"].clone();
    db.put_all(json!([{ "_id": "a", "_rev": rev, "type": "user", "age": 5 }]));
    assert_eq!(db.ids(json!({ "selector": { "age": { "$gt": 0 } }, "sort": ["age"] })), s(&["a", "c", "d"]));
    assert_eq!(db.ids(json!({ "selector": { "age": { "$gt": 0 } }, "use_index": "users", "sort": [{ "age": "desc" }] })), s(&["d", "a"]));
    let stats = db.find(json!({ "selector": { "age": { "$gt": 0 } }, "sort": ["age"], "execution_stats": true }))["execution_stats"].clone();
    assert_eq!(stats["total_keys_examined"], 3, "deleted and moved documents left no rows behind: {stats}");
    // DELETE and _bulk_delete.
    assert_eq!(db.call("DELETE", "/_index/_design/ages/json/age", &Value::Null), (200, json!({ "ok": true })));
    assert_eq!(db.call("DELETE", "/_index/ages/json/age", &Value::Null).0, 404);
    assert_eq!(db.call("GET", "/_design/ages", &Value::Null).0, 404, "an emptied index design document is deleted");
    let bulk = db.ok("POST", "/_index/_bulk_delete", json!({ "docids": ["_design/users", "nope"] }));
    assert_eq!(bulk, json!({ "success": [{ "id": "_design/users", "ok": true }], "fail": [{ "id": "_design/nope", "error": "not_found" }] }));
    assert_eq!(db.error("/_index/_bulk_delete", json!({ "docids": "x" })), (400, "invalid_bulk_docs".into()));
    assert_eq!(db.ok("GET", "/_index", Value::Null)["total_rows"], 1);
    assert_eq!(db.error("/_find", json!({ "selector": { "age": { "$gt": 0 } }, "sort": ["age"] })), (400, "no_usable_index".into()));
    // GET /{db} carries CouchDB's members.
    let info = db.ok("GET", "", Value::Null);
    for key in ["db_name", "update_seq", "doc_count", "doc_del_count", "sizes", "props", "purge_seq", "compact_running", "disk_format_version", "instance_start_time", "cluster"] {
        assert!(info.get(key).is_some(), "GET /db has {key}: {info}");
    }
}

#[test]
fn an_index_orders_mixed_types_by_couchdb_collation() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "mixed");
    let values = vec![
        json!(null),
        json!(false),
        json!(true),
        json!(-5),
        json!(1),
        json!(2.5),
        json!(10),
        json!(""),
        json!("0"),
        json!("a"),
        json!("A"),
        json!("aa"),
        json!("b"),
        json!("B"),
        json!("ba"),
        json!("e"),
        json!("É"),
        json!("éa"),
        json!([]),
        json!([1]),
        json!([1, 2]),
        json!(["a"]),
        json!({}),
        json!({ "a": 1 }),
        json!({ "b": 0 }),
    ];
    // Written in another order than the expected one.
    let docs: Vec<Value> = values.iter().enumerate().rev().map(|(i, v)| json!({ "_id": format!("d{:02}", (i * 7) % values.len() + 100 * i), "v": v, "i": i })).collect();
    db.put_all(Value::Array(docs));
    db.index(json!({ "index": { "fields": ["v"] }, "name": "v" }));
    let answer = db.find(json!({ "selector": { "v": { "$gte": null } }, "sort": ["v"], "limit": 100, "fields": ["i"] }));
    let order: Vec<u64> = answer["docs"].as_array().unwrap().iter().map(|d| d["i"].as_u64().unwrap()).collect();
    assert_eq!(order, (0..values.len() as u64).collect::<Vec<_>>(), "{answer}");
    let desc = db.find(json!({ "selector": { "v": { "$gte": null } }, "sort": [{ "v": "desc" }], "limit": 100, "fields": ["i"] }));
    let order: Vec<u64> = desc["docs"].as_array().unwrap().iter().map(|d| d["i"].as_u64().unwrap()).collect();
    assert_eq!(order, (0..values.len() as u64).rev().collect::<Vec<_>>());
    // Ranges cross types in collation order, with and without the index.
    let strings = db.ids(json!({ "selector": { "v": { "$gte": "", "$lt": [] } }, "use_index": "_all_docs" }));
    let indexed = db.ids(json!({ "selector": { "v": { "$gte": "", "$lt": [] } } }));
    assert_eq!(strings.len(), 11);
    assert_eq!(sorted(strings), sorted(indexed));
}

#[test]
fn large_limits_stream_the_whole_answer() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "big");
    let docs: Vec<Value> = (0..1500).map(|i| json!({ "_id": format!("d{i:04}"), "n": i, "pad": "x".repeat(100) })).collect();
    db.put_all(Value::Array(docs));
    // Past the collected limit the answer streams; it is the same JSON.
    let all = db.find(json!({ "selector": { "n": { "$gte": 100 } }, "limit": 100000, "execution_stats": true }));
    assert_eq!(all["docs"].as_array().unwrap().len(), 1400);
    assert_eq!(all["execution_stats"]["results_returned"], 1400);
    assert!(all["warning"].is_string());
    db.index(json!({ "index": { "fields": [{ "n": "desc" }] }, "name": "n" }));
    let sorted = db.find(json!({ "selector": { "n": { "$lt": 1200 } }, "sort": [{ "n": "desc" }], "limit": 1100, "fields": ["n"] }));
    let ns: Vec<u64> = sorted["docs"].as_array().unwrap().iter().map(|d| d["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, (100..1200).rev().collect::<Vec<_>>());
    let rest = db.find(json!({ "selector": { "n": { "$lt": 1200 } }, "sort": [{ "n": "desc" }], "limit": 1100, "fields": ["n"], "bookmark": sorted["bookmark"] }));
    assert_eq!(rest["docs"].as_array().unwrap().len(), 100);
}

#[test]
fn members_query_and_only_database_admins_manage_indexes() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let admin = |m: &str, p: &str, b: &str| {
        let (status, text) = server.request(m, p, Some(ADMIN), Some(b));
        assert!((200..300).contains(&status), "{m} {p}: {status} {text}");
    };
    admin("PUT", "/club", "");
    admin("PUT", "/club/_security", r#"{"admins":{"names":["dba"],"roles":[]},"members":{"names":["bob"],"roles":[]}}"#);
    for name in ["bob", "dba", "eve"] {
        admin("PUT", &format!("/_users/org.couchdb.user:{name}"), &format!(r#"{{"name":"{name}","type":"user","roles":[],"password":"pw-{name}"}}"#));
    }
    admin("PUT", "/club/x", r#"{"n":1}"#);
    let index = r#"{"index":{"fields":["n"]},"name":"n"}"#;
    let find = r#"{"selector":{"n":1}}"#;
    let as_user = |who: &str, m: &str, p: &str, b: &str| server.request(m, p, Some(&format!("{who}:pw-{who}")), Some(b)).0;
    assert_eq!(as_user("bob", "POST", "/club/_find", find), 200);
    assert_eq!(as_user("bob", "GET", "/club/_index", ""), 200);
    assert!([401, 403].contains(&as_user("bob", "POST", "/club/_index", index)), "a member cannot write the index's design document");
    assert!([401, 403].contains(&as_user("eve", "POST", "/club/_find", find)), "a stranger cannot query");
    assert_eq!(as_user("dba", "POST", "/club/_index", index), 200);
    assert_eq!(as_user("bob", "POST", "/club/_explain", find), 200);
    assert!([401, 403].contains(&as_user("bob", "DELETE", "/club/_index/_design/n/json/n", "")));
}
