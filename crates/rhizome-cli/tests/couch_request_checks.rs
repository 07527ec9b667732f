//! What CouchDB's and PouchDB's own suites (tests/couch-suites) found
//! Rhizome accepting or answering differently from CouchDB 3.5, at the HTTP
//! level, each with CouchDB's status, error and reason (issue 43).

mod common;

use common::server::{ServerProcess, ADMIN};
use serde_json::{json, Value};

fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn server_with_db(data: &std::path::Path) -> ServerProcess {
    let server = ServerProcess::start(data);
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    server
}

fn post(server: &ServerProcess, path: &str, body: Value) -> (u16, Value) {
    let (status, text) = server.request("POST", path, Some(ADMIN), Some(&body.to_string()));
    (status, j(&text))
}

fn put(server: &ServerProcess, path: &str, body: Value) -> (u16, Value) {
    let (status, text) = server.request("PUT", path, Some(ADMIN), Some(&body.to_string()));
    (status, j(&text))
}

fn error(kind: &str, reason: &str) -> Value {
    json!({ "error": kind, "reason": reason })
}

#[test]
fn a_bulk_docs_with_an_unknown_special_member_is_refused_whole() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let (status, body) = post(&server, "/db/_bulk_docs", json!({ "docs": [{ "_id": "good", "a": 1 }, { "_id": "bad", "_zing": 4 }] }));
    assert_eq!((status, body), (400, error("doc_validation", "Bad special document member: _zing")));
    // Nothing of the request was written, the good document included.
    assert_eq!(server.request("GET", "/db/good", Some(ADMIN), None).0, 404);
    let (status, body) = put(&server, "/db/doc", json!({ "_fan": "x" }));
    assert_eq!((status, body), (400, error("doc_validation", "Bad special document member: _fan")));
}

#[test]
fn new_edits_false_without_a_revision_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let (status, body) = post(&server, "/db/_bulk_docs", json!({ "new_edits": false, "docs": [{ "_id": "a", "_rev": "1-abc" }, { "_id": "b" }] }));
    assert_eq!((status, body), (400, error("bad_request", "When `new_edits: false`, the document needs `_rev` or `_revisions` specified")));
    assert_eq!(server.request("GET", "/db/a", Some(ADMIN), None).0, 404);
}

#[test]
fn invalid_base64_attachment_data_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let doc = json!({ "_id": "d", "_attachments": { "a.txt": { "content_type": "text/plain", "data": "not base64!" } } });
    let (status, body) = post(&server, "/db/_bulk_docs", json!({ "docs": [doc] }));
    assert_eq!((status, body), (400, error("bad_request", "Invalid attachment data for a.txt")));
    let (status, body) = put(&server, "/db/d", doc);
    assert_eq!((status, body), (400, error("bad_request", "Invalid attachment data for a.txt")));
    assert_eq!(server.request("GET", "/db/d", Some(ADMIN), None).0, 404);
}

#[test]
fn an_id_that_is_not_a_string_is_refused_not_replaced() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let (status, body) = post(&server, "/db", json!({ "_id": 123, "test": "somestuff" }));
    assert_eq!((status, body), (400, error("illegal_docid", "Document id must be a string")));
    let (status, body) = post(&server, "/db/_bulk_docs", json!({ "docs": [{ "_id": "a" }, { "_id": "" }] }));
    assert_eq!((status, body), (400, error("illegal_docid", "Document id must not be empty")));
    // A document without `_id` still gets a fresh one.
    let (status, body) = post(&server, "/db", json!({ "test": "somestuff" }));
    assert_eq!(status, 201, "{body}");
    assert!(body["id"].as_str().is_some_and(|id| id.len() == 32), "{body}");
}

#[test]
fn local_documents_in_a_bulk_docs_are_written_and_deleted_as_local_documents() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let (status, body) = post(&server, "/db/_bulk_docs", json!({ "docs": [{ "_id": "_local/bar" }, { "_id": "baz" }] }));
    assert_eq!(status, 201, "{body}");
    assert_eq!(body[0], json!({ "ok": true, "id": "_local/bar", "rev": "0-1" }));
    assert_eq!((body[1]["ok"].as_bool(), body[1]["id"].as_str()), (Some(true), Some("baz")), "{body}");
    assert_eq!(server.request("GET", "/db/_local/bar", Some(ADMIN), None).0, 200);
    // A local document is in no listing of the database's documents.
    let (_, all) = server.request("GET", "/db/_all_docs", Some(ADMIN), None);
    assert_eq!(j(&all)["total_rows"], 1, "{all}");
    // Deleted in a _bulk_docs; a wrong revision fails that document only.
    let (status, body) = post(&server, "/db/_bulk_docs", json!({ "docs": [{ "_id": "_local/bar", "_rev": "0-1", "_deleted": true }, { "_id": "_local/bar", "_rev": "1-fake", "_deleted": true }] }));
    assert_eq!(status, 201, "{body}");
    assert_eq!(body[0]["ok"], true, "{body}");
    assert!(body[1]["error"].is_string(), "{body}");
    assert_eq!(server.request("GET", "/db/_local/bar", Some(ADMIN), None).0, 404);
}

#[test]
fn inline_attachment_data_has_no_length_and_a_stub_has_one() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let doc = json!({ "_id": "d", "_attachments": { "a.txt": { "content_type": "text/plain", "data": "Zm9v" } } });
    assert_eq!(post(&server, "/db/_bulk_docs", json!({ "docs": [doc] })).0, 201);
    // couch_att:to_json: `data` without `length`, as PouchDB's suite compares.
    for path in ["/db/d?attachments=true", "/db/_all_docs?include_docs=true&attachments=true", "/db/_changes?include_docs=true&attachments=true"] {
        let (_, text) = server.request("GET", path, Some(ADMIN), None);
        let body = j(&text);
        let doc = if path.contains("_all_docs") { &body["rows"][0]["doc"] } else if path.contains("_changes") { &body["results"][0]["doc"] } else { &body };
        let att = &doc["_attachments"]["a.txt"];
        assert_eq!((att["data"].as_str(), att.get("length")), (Some("Zm9v"), None), "{path}: {text}");
    }
    let (_, text) = server.request("GET", "/db/d", Some(ADMIN), None);
    assert_eq!(j(&text)["_attachments"]["a.txt"]["length"], 3, "{text}");
}

#[test]
fn a_map_function_followed_by_a_semicolon_is_accepted_and_design_documents_filter_the_feed() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let ddoc = json!({ "_id": "_design/foo", "views": { "any": { "map": "function (doc) { emit(doc._id, null) };" } } });
    let (status, body) = post(&server, "/db/_bulk_docs", json!({ "docs": [{ "_id": "0" }, ddoc] }));
    assert_eq!((status, body[1]["ok"].as_bool()), (201, Some(true)), "{body}");
    let (_, text) = server.request("GET", "/db/_changes?filter=_design", Some(ADMIN), None);
    let results = j(&text)["results"].clone();
    assert_eq!((results.as_array().map(Vec::len), results[0]["id"].as_str()), (Some(1), Some("_design/foo")), "{text}");
    let (_, text) = server.request("GET", "/db/_design/foo/_view/any", Some(ADMIN), None);
    assert_eq!(j(&text)["total_rows"], 1, "{text}");
}

#[test]
fn a_filter_function_that_throws_fails_the_feed() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    assert_eq!(put(&server, "/db/_design/test", json!({ "filters": { "test": "function () { throw new Error(); }" } })).0, 201);
    assert_eq!(put(&server, "/db/a", json!({})).0, 201);
    // CouchDB 3.5 answers 500: its query server does not catch a filter's throw.
    let (status, text) = server.request("GET", "/db/_changes?filter=test/test", Some(ADMIN), None);
    assert_eq!(status, 500, "{text}");
}

#[test]
fn numbers_come_back_as_the_same_doubles_they_were_sent_as() {
    // Each is the shortest text of its double; a parser one ulp off (as
    // serde_json's default is for some) answers a neighbour, and PouchDB's
    // sync then sees two replicas of one revision with different bodies.
    let numbers = ["0.9407448417188811", "0.9719849863085777", "2.2250738585072014e-308", "1.7976931348623157e308", "5e-324", "0.30000000000000004", "123456789.12345679"];
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let members: Vec<String> = numbers.iter().enumerate().map(|(i, n)| format!("\"n{i}\":{n}")).collect();
    let body = format!("{{{}}}", members.join(","));
    assert_eq!(server.request("PUT", "/db/doc", Some(ADMIN), Some(&body)).0, 201);
    let replicated = format!("{{\"new_edits\":false,\"docs\":[{{\"_id\":\"rep\",\"_rev\":\"1-abc\",{}}}]}}", members.join(","));
    assert_eq!(server.request("POST", "/db/_bulk_docs", Some(ADMIN), Some(&replicated)).0, 201);
    for path in ["/db/doc", "/db/rep"] {
        let (status, text) = server.request("GET", path, Some(ADMIN), None);
        assert_eq!(status, 200);
        for (i, n) in numbers.iter().enumerate() {
            let sent: f64 = n.parse().unwrap();
            let at = text.find(&format!("\"n{i}\":")).unwrap_or_else(|| panic!("n{i} missing in {text}"));
            let rest = &text[at + format!("\"n{i}\":").len()..];
            let got = &rest[..rest.find([',', '}']).unwrap()];
            assert_eq!(got.parse::<f64>().unwrap().to_bits(), sent.to_bits(), "{path} n{i}: sent {n}, got {got}");
        }
    }
}

#[test]
fn purge_removes_revisions_from_documents_changes_views_and_graphs() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let context = json!({ "x": "http://example.org/x" });
    let (_, a) = put(&server, "/db/a", json!({ "@context": context, "x": 1 }));
    let a1 = a["rev"].as_str().unwrap().to_owned();
    let (_, a2) = put(&server, "/db/a", json!({ "@context": context, "_rev": a1, "x": 2 }));
    let a2 = a2["rev"].as_str().unwrap().to_owned();
    put(&server, "/db/keep", json!({ "@context": context, "x": 3 }));
    // c has two branches: 2-bbb wins over 2-aaa.
    let branch = |rev: &str, v: i64| json!({ "_id": "c", "_rev": format!("2-{rev}"), "_revisions": { "start": 2, "ids": [rev, "root"] }, "x": v });
    let (status, _) = post(&server, "/db/_bulk_docs", json!({ "new_edits": false, "docs": [branch("aaa", 10), branch("bbb", 20)] }));
    assert_eq!(status, 201);
    put(&server, "/db/_design/v", json!({ "views": { "x": { "map": "function (doc) { emit(doc._id, doc.x); }" } } }));
    let view = |server: &ServerProcess| j(&server.request("GET", "/db/_design/v/_view/x", Some(ADMIN), None).1)["rows"].clone();
    assert_eq!(view(&server), json!([{ "id": "a", "key": "a", "value": 2 }, { "id": "c", "key": "c", "value": 20 }, { "id": "keep", "key": "keep", "value": 3 }]));
    let graph_count = |server: &ServerProcess, graph: &str| {
        let q = format!("SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <http://localhost:5984/db/{graph}> {{ ?s ?p ?o }} }}");
        let q: String = q.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect();
        let (status, text) = server.request("GET", &format!("/db/_sparql?query={q}"), Some(ADMIN), None);
        assert_eq!(status, 200, "{text}");
        j(&text)["results"]["bindings"][0]["n"]["value"].as_str().unwrap().parse::<u64>().unwrap()
    };
    assert!(graph_count(&server, "a") > 0);
    let seq_before = j(&server.request("GET", "/db", Some(ADMIN), None).1)["update_seq"].as_u64().unwrap();

    // Only leaves are purged; an unknown document gets an empty list.
    let (status, body) = post(&server, "/db/_purge", json!({ "a": [a1, a2], "c": ["2-bbb"], "nothing": ["1-x"] }));
    assert_eq!((status, body), (201, json!({ "purge_seq": null, "purged": { "a": [a2], "c": ["2-bbb"], "nothing": [] } })));

    // a is gone entirely, as if never written; c falls back to its other branch.
    assert_eq!(server.request("GET", "/db/a", Some(ADMIN), None).0, 404);
    let (_, c) = server.request("GET", "/db/c?conflicts=true", Some(ADMIN), None);
    let c = j(&c);
    assert_eq!((c["_rev"].clone(), c["x"].clone(), c.get("_conflicts").cloned()), (json!("2-aaa"), json!(10), None));
    let info = j(&server.request("GET", "/db", Some(ADMIN), None).1);
    assert_eq!((info["doc_count"].clone(), info["doc_del_count"].clone(), info["purge_seq"].clone()), (json!(3), json!(0), json!(3)), "keep, c and the design document; every document named counts, as CouchDB");
    // The requests are kept for `_purged_infos`, as they were asked.
    let infos = |server: &ServerProcess| {
        let (status, text) = server.request("GET", "/db/_purged_infos", Some(ADMIN), None);
        assert_eq!(status, 200, "{text}");
        j(&text)["purged_infos"].clone()
    };
    assert_eq!(infos(&server), json!([{ "id": "a", "revs": [a1, a2] }, { "id": "c", "revs": ["2-bbb"] }, { "id": "nothing", "revs": ["1-x"] }]));
    assert!(info["update_seq"].as_u64().unwrap() > seq_before);
    let changes = j(&server.request("GET", "/db/_changes", Some(ADMIN), None).1);
    let ids: Vec<&str> = changes["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["keep", "_design/v", "c"], "a appears nowhere; c changed last");
    assert_eq!(j(&server.request("GET", "/db/_all_docs", Some(ADMIN), None).1)["total_rows"], 3);
    assert_eq!(view(&server), json!([{ "id": "c", "key": "c", "value": 10 }, { "id": "keep", "key": "keep", "value": 3 }]));
    assert_eq!(graph_count(&server, "a"), 0, "the purged document's graph went with it");
    assert!(graph_count(&server, "keep") > 0);

    // The id can be written again from scratch.
    let (status, again) = put(&server, "/db/a", json!({ "x": 9 }));
    assert_eq!((status, again["rev"].as_str().unwrap().starts_with("1-")), (201, true));
    let changes = j(&server.request("GET", "/db/_changes", Some(ADMIN), None).1);
    assert_eq!(changes["results"].as_array().unwrap().iter().filter(|r| r["id"] == "a").count(), 1);

    // As CouchDB: server admins alone; a JSON object of revision lists.
    assert_eq!(server.request("POST", "/db/_purge", None, Some("{}")).0, 401);
    assert_eq!(post(&server, "/db/_purge", json!({ "a": "1-x" })), (400, error("bad_request", "Invalid list of revisions")));
    assert_eq!(post(&server, "/db/_purge", json!({ "a": ["bad"] })), (400, error("bad_request", "Invalid rev format")));
    let (status, limit) = server.request("GET", "/db/_purged_infos_limit", Some(ADMIN), None);
    assert_eq!((status, j(&limit)), (200, json!(1000)));
    // Only the last `_purged_infos_limit` requests are kept.
    assert_eq!(put(&server, "/db/_purged_infos_limit", json!(2)), (200, json!({ "ok": true })));
    assert_eq!(post(&server, "/db/_purge", json!({ "zz": ["3-z"] })).0, 201);
    assert_eq!(infos(&server), json!([{ "id": "nothing", "revs": ["1-x"] }, { "id": "zz", "revs": ["3-z"] }]));
    assert_eq!(j(&server.request("GET", "/db", Some(ADMIN), None).1)["purge_seq"], 4);
}

#[test]
fn missing_revs_and_shards_answer_as_couchdb() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let (_, d) = put(&server, "/db/d", json!({ "x": 1 }));
    let rev = d["rev"].as_str().unwrap().to_owned();
    // `_missing_revs`: what `_revs_diff` finds missing; a document lacking nothing is left out.
    let (status, body) = post(&server, "/db/_missing_revs", json!({ "d": [rev, "9-abc"], "gone": ["1-x"], "has": [] }));
    assert_eq!((status, body), (200, json!({ "missing_revs": { "d": ["9-abc"], "gone": ["1-x"] } })));
    let (status, body) = post(&server, "/db/_missing_revs", json!({ "d": [rev] }));
    assert_eq!((status, body), (200, json!({ "missing_revs": {} })));
    assert_eq!(server.request("GET", "/db/_missing_revs", Some(ADMIN), None).0, 405);
    // One shard, the whole range, on the one node `_membership` names.
    let node = j(&server.request("GET", "/_membership", Some(ADMIN), None).1)["all_nodes"][0].clone();
    let (status, shards) = server.request("GET", "/db/_shards", Some(ADMIN), None);
    assert_eq!((status, j(&shards)), (200, json!({ "shards": { "00000000-ffffffff": [node] } })));
    let (status, shard) = server.request("GET", "/db/_shards/d", Some(ADMIN), None);
    assert_eq!((status, j(&shard)), (200, json!({ "range": "00000000-ffffffff", "nodes": [node] })));
    assert_eq!(post(&server, "/db/_sync_shards", json!({})), (202, json!({ "ok": true })));
    // A database that does not exist is a 404 for each, as any of its endpoints.
    assert_eq!(server.request("GET", "/nodb/_shards", Some(ADMIN), None).0, 404);
    assert_eq!(server.request("POST", "/nodb/_missing_revs", Some(ADMIN), Some("{}")).0, 404);
}

#[test]
fn prometheus_and_system_show_the_node_as_monitoring_reads_it() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let scrape = || {
        let (status, text) = server.request("GET", "/_node/_local/_prometheus", Some(ADMIN), None);
        assert_eq!(status, 200, "{text}");
        // Every line a comment or `name{labels} value` with a number.
        let mut samples = std::collections::HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
            samples.insert(name.to_owned(), value.parse::<u64>().unwrap_or_else(|e| panic!("{line}: {e}")));
        }
        samples
    };
    let before = scrape();
    for _ in 0..5 {
        assert_eq!(server.request("GET", "/db/missing", Some(ADMIN), None).0, 404);
    }
    let after = scrape();
    let grew = |name: &str| after[name] - before[name];
    // The five 404s and the first scrape itself (counted once answered).
    assert_eq!(grew("couchdb_httpd_status_codes{code=\"404\"}"), 5);
    assert_eq!(grew("couchdb_httpd_request_methods{method=\"GET\"}"), 6);
    assert_eq!(grew("couchdb_httpd_requests_total"), 6);
    // The same gauge as `_stats` (db, and the system databases once opened).
    let stats = j(&server.request("GET", "/_node/_local/_stats/couchdb/open_databases", Some(ADMIN), None).1);
    assert!(after["couchdb_open_databases"] >= 1 && json!(after["couchdb_open_databases"]) == stats["value"], "{stats}");
    let (status, system) = server.request("GET", "/_node/_local/_system", Some(ADMIN), None);
    let system = j(&system);
    assert_eq!(status, 200);
    assert!(system["uptime"].is_u64() && system["memory"]["resident"].as_u64().unwrap() > 1 << 20, "{system}");
    // Server admins alone, as every `_node` endpoint.
    assert_eq!(server.request("GET", "/_node/_local/_prometheus", None, None).0, 401);
}

#[test]
fn a_bulk_get_entry_it_cannot_read_gets_its_own_error_and_the_others_their_documents() {
    let data = tempfile::tempdir().unwrap();
    let server = server_with_db(data.path());
    let (_, d) = put(&server, "/db/d", json!({ "x": 1 }));
    let rev = d["rev"].clone();
    let entries = json!([{ "id": "d", "rev": "bad" }, {}, "x", { "id": "" }, { "id": "d", "atts_since": "x" }, { "id": "d" }]);
    let (status, body) = post(&server, "/db/_bulk_get", json!({ "docs": entries }));
    let refused = |id: Value, rev: Value, error: &str, reason: &str| json!({ "id": id, "docs": [{ "error": { "id": id, "rev": rev, "error": error, "reason": reason } }] });
    // CouchDB 3.5's answers, entry by entry.
    assert_eq!(
        (status, body),
        (
            200,
            json!({ "results": [
                refused(json!("d"), json!("bad"), "bad_request", "Invalid rev format"),
                refused(Value::Null, Value::Null, "bad_request", "document must be a JSON object"),
                refused(Value::Null, Value::Null, "bad_request", "document must be a JSON object"),
                refused(json!(""), Value::Null, "illegal_docid", "Document id must not be empty"),
                refused(json!("d"), json!("x"), "bad_request", "att_since value must be array of revs."),
                { "id": "d", "docs": [{ "ok": { "_id": "d", "_rev": rev, "x": 1 } }] },
            ] })
        )
    );
}
