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
