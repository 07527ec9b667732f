//! Map/reduce views on a real `rhizome serve`, curl-level: CouchDB's
//! endpoints and answers (`_view` GET/POST and `/queries`, `_design_docs`,
//! `_info`, `_view_cleanup`, `_compact/{ddoc}`), design documents checked
//! on write, a runaway function stopped, an index build shown in
//! `_active_tasks`, an update resumed after a kill without starting over,
//! a build from nothing (ingested at once) started over.
//! PouchDB's `db.query` is tested in `server_pouchdb.rs` (`views.js`).

mod common;

use common::server::{ServerProcess, ADMIN};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn call(server: &ServerProcess, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let text = body.map(|b| b.to_string());
    let (status, out) = server.request(method, path, Some(ADMIN), text.as_deref());
    (status, serde_json::from_str(&out).unwrap_or_else(|_| Value::String(out)))
}

fn ok(server: &ServerProcess, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, out) = call(server, method, path, body);
    assert!((200..300).contains(&status), "{method} {path}: {status} {out}");
    out
}

fn bulk(server: &ServerProcess, db: &str, docs: Vec<Value>) {
    let out = ok(server, "POST", &format!("/{db}/_bulk_docs"), Some(json!({ "docs": docs })));
    assert!(out.as_array().unwrap().iter().all(|r| r["ok"] == true), "{out}");
}

fn server_with(docs: usize, env: &[(&str, &str)]) -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(dir.path(), env);
    ok(&server, "PUT", "/db", None);
    let docs: Vec<Value> = (0..docs).map(|i| json!({"_id": format!("d{i:05}"), "n": i, "even": i % 2 == 0})).collect();
    if !docs.is_empty() {
        bulk(&server, "db", docs);
    }
    (dir, server)
}

#[test]
fn views_answer_couchdbs_endpoints() {
    let (_dir, server) = server_with(10, &[]);
    let ddoc = json!({"views": {
        "by_n": {"map": "function (doc) { if ('n' in doc) emit(doc.n, doc.n); }", "reduce": "_sum"},
        "parity": {"map": "function (doc) { if ('n' in doc) emit(doc.even, 1); }", "reduce": "_count"}
    }});
    ok(&server, "PUT", "/db/_design/a", Some(ddoc.clone()));
    let out = ok(&server, "GET", "/db/_design/a/_view/by_n?reduce=false&startkey=2&endkey=4", None);
    assert_eq!(out, json!({"total_rows": 10, "offset": 2, "rows": [
        {"id": "d00002", "key": 2, "value": 2}, {"id": "d00003", "key": 3, "value": 3}, {"id": "d00004", "key": 4, "value": 4}]}));
    assert_eq!(ok(&server, "GET", "/db/_design/a/_view/by_n", None), json!({"rows": [{"key": null, "value": 45}]}));
    assert_eq!(
        ok(&server, "GET", "/db/_design/a/_view/parity?group=true", None),
        json!({"rows": [{"key": false, "value": 5}, {"key": true, "value": 5}]})
    );
    // POST with keys, and several queries at once.
    let out = ok(&server, "POST", "/db/_design/a/_view/by_n?reduce=false", Some(json!({"keys": [7, 1]})));
    assert_eq!(out["rows"].as_array().unwrap().iter().map(|r| r["key"].clone()).collect::<Vec<_>>(), vec![json!(7), json!(1)]);
    let out = ok(&server, "POST", "/db/_design/a/_view/by_n/queries", Some(json!({"queries": [{"reduce": false, "limit": 1}, {"keys": [3], "group": true}]})));
    assert_eq!(out["results"][0]["rows"][0]["key"], 0);
    assert_eq!(out["results"][1]["rows"], json!([{"key": 3, "value": 3}]));
    // include_docs, update_seq, stale.
    let out = ok(&server, "GET", "/db/_design/a/_view/by_n?reduce=false&key=5&include_docs=true&update_seq=true", None);
    assert_eq!(out["rows"][0]["doc"]["n"], 5);
    assert_eq!(out["update_seq"], 11);
    bulk(&server, "db", vec![json!({"_id": "z", "n": 100, "even": true})]);
    assert_eq!(ok(&server, "GET", "/db/_design/a/_view/by_n?reduce=false&stale=ok", None)["total_rows"], 10);
    assert_eq!(ok(&server, "GET", "/db/_design/a/_view/by_n?reduce=false", None)["total_rows"], 11);

    // CouchDB's errors.
    assert_eq!(call(&server, "GET", "/db/_design/a/_view/nope", None), (404, json!({"error": "not_found", "reason": "missing_named_view"})));
    assert_eq!(call(&server, "GET", "/db/_design/none/_view/x", None).0, 404);
    let (status, out) = call(&server, "GET", "/db/_design/a/_view/by_n?include_docs=true", None);
    assert_eq!((status, out["error"].clone()), (400, json!("query_parse_error")), "{out}");
    let (status, out) = call(&server, "GET", "/db/_design/a/_view/by_n?startkey=5&endkey=1", None);
    assert_eq!((status, out["error"].clone()), (400, json!("query_parse_error")), "{out}");
    assert_eq!(call(&server, "GET", "/db/_design/a/_view/by_n?limit=x", None).0, 400);
    assert_eq!(call(&server, "GET", "/db/_design/a/_view/by_n?key=%7Bbad", None).0, 400);

    // _design_docs lists design documents only; _info describes the index.
    ok(&server, "PUT", "/db/_design/b", Some(json!({"language": "javascript"})));
    let out = ok(&server, "GET", "/db/_design_docs", None);
    assert_eq!(out["rows"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), vec![json!("_design/a"), json!("_design/b")]);
    let info = ok(&server, "GET", "/db/_design/a/_info", None);
    assert_eq!(info["name"], "a");
    assert_eq!(info["view_index"]["update_seq"], 12);
    assert_eq!(info["view_index"]["signature"].as_str().unwrap().len(), 32);
    assert!(info["view_index"]["sizes"]["active"].as_u64().unwrap() > 0);
    assert_eq!(call(&server, "POST", "/db/_compact/a", Some(json!({}))).0, 202);
    assert_eq!(call(&server, "POST", "/db/_compact/none", Some(json!({}))).0, 404);

    // A changed view is a new index; cleanup drops the old one.
    let old_signature = info["view_index"]["signature"].clone();
    let rev = ok(&server, "GET", "/db/_design/a", None)["_rev"].clone();
    let mut changed = ddoc.clone();
    changed["_rev"] = rev;
    changed["views"]["by_n"]["map"] = json!("function (doc) { if ('n' in doc) emit(-doc.n, null); }");
    ok(&server, "PUT", "/db/_design/a", Some(changed));
    let info = ok(&server, "GET", "/db/_design/a/_info", None);
    assert_ne!(info["view_index"]["signature"], old_signature);
    assert_eq!(info["view_index"]["update_seq"], 0);
    assert_eq!(ok(&server, "GET", "/db/_design/a/_view/by_n?reduce=false&limit=1", None)["rows"][0]["key"], -100);
    assert_eq!(call(&server, "POST", "/db/_view_cleanup", Some(json!({}))).0, 202);
    assert_eq!(ok(&server, "GET", "/db/_design/a/_view/by_n?reduce=false&limit=1", None)["rows"][0]["key"], -100);
}

#[test]
fn design_documents_are_checked_on_write_and_functions_are_sandboxed() {
    // A runaway function stops at this limit instead of CouchDB's 5 s.
    let (_dir, server) = server_with(3, &[("RHIZOME_JS_TIMEOUT_MS", "500")]);
    let (status, out) = call(&server, "PUT", "/db/_design/bad", Some(json!({"views": {"v": {"map": "function (doc) { emit(doc"}}})));
    assert_eq!(status, 400, "{out}");
    assert_eq!(out["error"], "compilation_error");
    assert!(out["reason"].as_str().unwrap().starts_with("Compilation of the map function in the 'v' view failed"), "{out}");
    let (status, out) = call(&server, "PUT", "/db/_design/bad", Some(json!({"views": {"v": {"map": "function (doc) {}", "reduce": "_median"}}})));
    assert_eq!((status, out["error"].clone()), (400, json!("invalid_design_doc")), "{out}");
    assert_eq!(call(&server, "GET", "/db/_design/bad", None).0, 404);

    // Runaway and escaping functions: an error for the query, the server goes on.
    ok(&server, "PUT", "/db/_design/loop", Some(json!({"views": {"v": {"map": "function (doc) { while (true) {} }"}}})));
    let (status, out) = call(&server, "GET", "/db/_design/loop/_view/v", None);
    assert_eq!((status, out["error"].clone()), (500, json!("os_process_error")), "{out}");
    ok(&server, "PUT", "/db/_design/escape", Some(json!({"views": {"v": {"map":
        "function (doc) { emit([typeof require, typeof std, typeof os, typeof fetch, typeof process], null); var r; try { r = require('../../../../etc/passwd'); } catch (e) { r = String(e[2] || e); } emit('require', r); }"}}})));
    let out = ok(&server, "GET", "/db/_design/escape/_view/v?startkey=%5B%5D&limit=1", None);
    assert_eq!(out["rows"][0]["key"], json!(["function", "undefined", "undefined", "undefined", "undefined"]));
    let out = ok(&server, "GET", "/db/_design/escape/_view/v?key=%22require%22&limit=1", None);
    assert!(out["rows"][0]["value"].as_str().unwrap().contains("parent"), "{out}");
    ok(&server, "PUT", "/db/_design/throw", Some(json!({"views": {"v": {"map": "function (doc) { if (doc.n == 1) throw new Error('no'); emit(doc.n, null); }"}}})));
    let out = ok(&server, "GET", "/db/_design/throw/_view/v", None);
    assert_eq!(out["rows"].as_array().unwrap().iter().map(|r| r["key"].clone()).collect::<Vec<_>>(), vec![json!(0), json!(2)]);
    assert_eq!(ok(&server, "GET", "/_up", None)["status"], "ok");
}

/// Views of one map function with each stored reduction: `_count`,
/// `_sum` and `_stats` (kept per rank bucket, written with its rows).
/// Each document marked slow takes half a second to map, so a build stays
/// on the batch that holds them for most of a minute, whatever the
/// machine's load.
fn slow_views() -> Value {
    let map = "function (doc) { if (doc.slow) { var t = Date.now(); while (Date.now() - t < 500) {} } emit(doc.n, doc.n); }";
    json!({"views": {"v": {"map": map, "reduce": "_count"}, "s": {"map": map, "reduce": "_sum"}, "st": {"map": map, "reduce": "_stats"}}})
}

/// Starts a query of `_design/slow` (which builds its index) and waits
/// until the build shows `done` of `total` changes in `_active_tasks`;
/// then the index's sequence (`_info`) must be `written`. Kills the
/// server and starts it again.
fn kill_during_the_build(server: &mut ServerProcess, done: u64, total: u64, written: u64) {
    let port = server.port;
    let query = std::thread::spawn(move || common::server::try_request(port, "GET", "/db/_design/slow/_view/v", Some(ADMIN), None, &[]));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < deadline, "the build never showed its first batch");
        let tasks = ok(server, "GET", "/_active_tasks", None);
        let task = tasks.as_array().unwrap().iter().find(|t| t["type"] == "indexer").cloned();
        if let Some(t) = task.filter(|t| t["changes_done"] == done) {
            assert_eq!(t["database"], "db");
            assert_eq!(t["design_document"], "_design/slow");
            assert_eq!(t["total_changes"], total);
            assert_eq!(t["progress"], done * 100 / total);
            assert_eq!(ok(server, "GET", "/db/_design/slow/_info", None)["view_index"]["update_seq"], written);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();
    let _ = query.join();
    server.restart();
    assert_eq!(ok(server, "GET", "/db/_design/slow/_info", None)["view_index"]["update_seq"], written);
}

/// Makes the slow documents quick (new revisions, so new sequence
/// numbers after the index's), then checks the index's answers: the
/// reductions of the rows written before the kill and after it, whole
/// and by range.
fn finish_the_build_and_check(server: &ServerProcess, update_seq: u64) {
    let quick: Vec<Value> = (1000..1100)
        .map(|i| {
            let id = format!("d{i:05}");
            let rev = ok(server, "GET", &format!("/db/{id}"), None)["_rev"].clone();
            json!({"_id": id, "_rev": rev, "n": i, "slow": false})
        })
        .collect();
    bulk(server, "db", quick);
    let out = ok(server, "GET", "/db/_design/slow/_view/v", None);
    assert_eq!(out["rows"][0]["value"], 1100);
    assert_eq!(ok(server, "GET", "/db/_design/slow/_info", None)["view_index"]["update_seq"], update_seq);
    let sum = |r: std::ops::Range<i64>| r.sum::<i64>();
    assert_eq!(ok(server, "GET", "/db/_design/slow/_view/s", None)["rows"][0]["value"], sum(0..1100));
    assert_eq!(ok(server, "GET", "/db/_design/slow/_view/s?startkey=100&endkey=1049", None)["rows"][0]["value"], sum(100..1050));
    let sumsqr: i64 = (0..1100i64).map(|n| n * n).sum();
    assert_eq!(ok(server, "GET", "/db/_design/slow/_view/st", None)["rows"][0]["value"], json!({"sum": sum(0..1100), "count": 1100, "min": 0, "max": 1099, "sumsqr": sumsqr}));
    assert_eq!(ok(server, "GET", "/db/_design/slow/_view/v?startkey=990&endkey=1010", None)["rows"][0]["value"], 21);
    let rows = ok(server, "GET", "/db/_design/slow/_view/v?reduce=false&startkey=995&limit=3", None);
    assert_eq!((rows["total_rows"].clone(), rows["offset"].clone(), rows["rows"][2]["key"].clone()), (json!(1100), json!(995), json!(997)));
}

fn slow_documents() -> Vec<Value> {
    (0..1100).map(|i| json!({"_id": format!("d{i:05}"), "n": i, "slow": i >= 1000})).collect()
}

/// An index that exists is brought up to date through transactions, a
/// batch each: a kill leaves it at the last batch written, and the
/// build goes on from there.
#[test]
fn an_index_update_shows_in_active_tasks_and_resumes_after_a_kill() {
    let (_dir, mut server) = server_with(0, &[]);
    ok(&server, "PUT", "/db/_design/slow", Some(slow_views()));
    assert_eq!(ok(&server, "GET", "/db/_design/slow/_view/v", None)["rows"], json!([]));
    bulk(&server, "db", slow_documents());
    // From sequence 1 (the design document) to 1101: the first batch
    // (1000 documents) is quick and written.
    kill_during_the_build(&mut server, 1000, 1100, 1001);
    finish_the_build_and_check(&server, 1201);
}

/// An index built from nothing is ingested at once (sorted runs): a kill
/// before the ingestion leaves no index at all (never rows without their
/// sequence), and the next query builds it again. On a shared store it is
/// built through transactions and resumes from its last batch.
#[test]
fn an_index_build_from_nothing_shows_in_active_tasks_and_starts_over_after_a_kill() {
    let (_dir, mut server) = server_with(0, &[]);
    bulk(&server, "db", slow_documents());
    ok(&server, "PUT", "/db/_design/slow", Some(slow_views()));
    // A store shared with other servers (a Cassandra cluster, the test
    // command's second run of this binary) ingests no files: there the
    // build goes through transactions, and the first batch is written.
    if std::env::var_os("RHIZOME_STORE").is_some() {
        kill_during_the_build(&mut server, 1000, 1101, 1000);
        finish_the_build_and_check(&server, 1201);
        return;
    }
    // The first batch is mapped, nothing is written yet.
    kill_during_the_build(&mut server, 1000, 1101, 0);
    let snapshot_rows = ok(&server, "GET", "/db/_design/slow/_view/v?stale=ok&reduce=false&limit=1", None);
    assert_eq!(snapshot_rows["rows"], json!([]), "{snapshot_rows}");
    finish_the_build_and_check(&server, 1201);
}

#[test]
fn validate_doc_update_guards_every_write_as_couchdb_does() {
    let (_dir, server) = server_with(0, &[]);
    ok(&server, "PUT", "/db/_design/guard", Some(json!({"validate_doc_update":
        "function (newDoc, oldDoc, userCtx, secObj) { if (newDoc._deleted) return; if (!newDoc.type) throw({forbidden: 'type is required'}); if (newDoc.type === 'admin' && userCtx.roles.indexOf('_admin') < 0) throw({unauthorized: 'admins only'}); if (oldDoc && oldDoc.frozen) throw({forbidden: 'frozen by ' + oldDoc.owner}); }"})));
    let (status, out) = call(&server, "PUT", "/db/a", Some(json!({"x": 1})));
    assert_eq!((status, out), (403, json!({"error": "forbidden", "reason": "type is required"})));
    ok(&server, "PUT", "/db/a", Some(json!({"type": "t", "frozen": true, "owner": "ann"})));
    let rev = ok(&server, "GET", "/db/a", None)["_rev"].clone();
    let (status, out) = call(&server, "PUT", "/db/a", Some(json!({"_rev": rev, "type": "t"})));
    assert_eq!((status, out["reason"].clone()), (403, json!("frozen by ann")));
    // _bulk_docs: each document gets its own answer.
    let out = ok(&server, "POST", "/db/_bulk_docs", Some(json!({"docs": [{"_id": "b", "type": "t"}, {"_id": "c"}, {"_id": "d", "type": "t"}]})));
    assert_eq!(out[0]["ok"], true);
    assert_eq!(out[1], json!({"id": "c", "error": "forbidden", "reason": "type is required"}));
    assert_eq!(out[2]["ok"], true);
    // Replicated writes (new_edits=false) too; deletions pass this function.
    let out = ok(&server, "POST", "/db/_bulk_docs", Some(json!({"new_edits": false, "docs": [{"_id": "r", "_rev": "1-abc", "x": 1}]})));
    assert_eq!(out, json!([{"id": "r", "error": "forbidden", "reason": "type is required"}]));
    assert_eq!(call(&server, "GET", "/db/r", None).0, 404);
    // A user who is not an admin meets `unauthorized`.
    ok(&server, "PUT", "/_users/org.couchdb.user:bob", Some(json!({"name": "bob", "password": "pw", "roles": [], "type": "user"})));
    ok(&server, "PUT", "/db/_security", Some(json!({"members": {"names": ["bob"]}})));
    let (status, body) = server.request("PUT", "/db/e", Some("bob:pw"), Some(r#"{"type": "admin"}"#));
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("admins only"), "{body}");
    let (status, _) = server.request("PUT", "/db/e", Some("bob:pw"), Some(r#"{"type": "user"}"#));
    assert_eq!(status, 201);
    // Design documents themselves are not validated by it.
    ok(&server, "PUT", "/db/_design/other", Some(json!({"views": {}})));
}

#[test]
fn changes_and_replication_filter_with_design_document_functions() {
    let (_dir, server) = server_with(0, &[]);
    ok(&server, "PUT", "/db/_design/f", Some(json!({
        "filters": {"by_type": "function (doc, req) { return doc.type === req.query.type; }"},
        "views": {"big": {"map": "function (doc) { if (doc.n > 2) emit(doc.n, null); }"}}
    })));
    let docs: Vec<Value> = (0..6).map(|i| json!({"_id": format!("d{i}"), "n": i, "type": if i % 2 == 0 { "even" } else { "odd" }})).collect();
    bulk(&server, "db", docs);
    let ids = |v: &Value| -> Vec<String> { v["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect() };
    assert_eq!(ids(&ok(&server, "GET", "/db/_changes?filter=f/by_type&type=odd", None)), ["d1", "d3", "d5"]);
    assert_eq!(ids(&ok(&server, "GET", "/db/_changes?filter=_view&view=f/big", None)), ["d3", "d4", "d5"]);
    assert_eq!(call(&server, "GET", "/db/_changes?filter=f/nope", None).0, 404);
    assert_eq!(call(&server, "GET", "/db/_changes?filter=none/x", None).0, 404);
    assert_eq!(call(&server, "GET", "/db/_changes?filter=nofilter", None).0, 400);
    // A style the server does not know is refused, not read as main_only.
    assert_eq!(ids(&ok(&server, "GET", "/db/_changes?style=main_only&limit=1", None)), ["_design/f"]);
    assert_eq!(call(&server, "GET", "/db/_changes?style=bogus", None).0, 400);
    // Replication through a filter: a local source, and the same server over HTTP.
    ok(&server, "POST", "/_replicate", Some(json!({"source": "db", "target": "odd", "create_target": true, "filter": "f/by_type", "query_params": {"type": "odd"}})));
    let all = ok(&server, "GET", "/odd/_all_docs", None);
    assert_eq!(all["rows"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), vec![json!("d1"), json!("d3"), json!("d5")]);
    let source = format!("{}/db", server.url(ADMIN));
    ok(&server, "POST", "/_replicate", Some(json!({"source": source, "target": "big", "create_target": true, "filter": "_view", "query_params": {"view": "f/big"}})));
    let all = ok(&server, "GET", "/big/_all_docs", None);
    assert_eq!(all["rows"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), vec![json!("d3"), json!("d4"), json!("d5")]);
}

/// View queries keep design documents parsed between requests: an edit of
/// the design document, and a database deleted and made again up to the
/// same sequence with another design document of the same id, are seen by
/// the next query.
#[test]
fn a_view_query_sees_the_design_document_as_it_is_now() {
    let (_dir, server) = server_with(4, &[]);
    let by = |field: &str| json!({"views": {"v": {"map": format!("function (doc) {{ emit(doc.{field}, null); }}")}}});
    let first_key = |server: &ServerProcess| ok(server, "GET", "/db/_design/d/_view/v?limit=1", None)["rows"][0]["key"].clone();
    let put = ok(&server, "PUT", "/db/_design/d", Some(by("n")));
    assert_eq!(first_key(&server), json!(0));
    assert_eq!(first_key(&server), json!(0));
    ok(&server, "PUT", "/db/_design/d", Some(json!({"_rev": put["rev"], "views": by("even")["views"]})));
    assert_eq!(first_key(&server), json!(false));
    // The same writes again in a new database of the same name: the same
    // update_seq, another map function.
    ok(&server, "DELETE", "/db", None);
    ok(&server, "PUT", "/db", None);
    bulk(&server, "db", (0..4).map(|i| json!({"_id": format!("d{i:05}"), "n": i, "even": i % 2 == 0})).collect());
    ok(&server, "PUT", "/db/_design/d", Some(json!({"views": {"v": {"map": "function (doc) { emit(-doc.n, null); }"}}})));
    ok(&server, "PUT", "/db/_design/x", Some(json!({})));
    assert_eq!(first_key(&server), json!(-3));
}
