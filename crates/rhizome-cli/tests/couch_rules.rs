//! CouchDB's own rules on `rhizome serve`, at the HTTP level: what a
//! document may carry (`couch_doc.erl`), `_local` documents, `open_revs`,
//! attachments in `_all_docs` and `_changes`, ids that are JavaScript
//! Object members.

mod common;

use common::server::{ServerProcess, ADMIN};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A response: status, headers (names lower-cased) and body bytes.
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    fn json(&self) -> Value {
        j(&self.text())
    }
}

/// One request with any headers and body bytes, on a fresh connection.
fn raw(server: &ServerProcess, method: &str, path: &str, auth: bool, headers: &[(&str, &str)], body: &[u8]) -> Raw {
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if auth {
        let (user, pass) = ADMIN.split_once(':').unwrap();
        head.push_str(&format!("Authorization: Basic {}\r\n", basic(user, pass)));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let split = bytes.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let rest = bytes[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned())).collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    Raw { status, headers, body: if chunked { dechunk(&rest) } else { rest } }
}

fn dechunk(mut s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(pos) = s.windows(2).position(|w| w == b"\r\n") {
        let n = usize::from_str_radix(String::from_utf8_lossy(&s[..pos]).trim(), 16).unwrap_or(0);
        let rest = &s[pos + 2..];
        if n == 0 || rest.len() < n {
            break;
        }
        out.extend_from_slice(&rest[..n]);
        s = rest[n..].strip_prefix(b"\r\n").unwrap_or(&rest[n..]);
    }
    out
}

fn basic(user: &str, pass: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
}

fn call(server: &ServerProcess, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let r = raw(server, method, path, true, &[("Content-Type", "application/json")], body.as_bytes());
    let v = if r.body.is_empty() { Value::Null } else { r.json() };
    (r.status, v)
}

fn start() -> (tempfile::TempDir, ServerProcess) {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    assert_eq!(call(&server, "PUT", "/db", None).0, 201);
    (data, server)
}

#[test]
fn revisions_win_over_a_disagreeing_rev_as_in_couchdb() {
    let (_d, s) = start();
    // Replicated: the path is _revisions', whatever _rev says.
    let doc = json!({ "_id": "r", "_rev": "2-bbb", "_revisions": { "start": 3, "ids": ["ccc", "bbb", "aaa"] }, "v": 3 });
    let (status, out) = call(&s, "POST", "/db/_bulk_docs", Some(json!({ "docs": [doc], "new_edits": false })));
    assert_eq!((status, out), (201, json!([])));
    let (_, got) = call(&s, "GET", "/db/r?revs=true", None);
    assert_eq!(got["_rev"], "3-ccc");
    assert_eq!(got["_revisions"], json!({ "start": 3, "ids": ["ccc", "bbb", "aaa"] }));
    // Interactive: _revisions names the revision edited.
    let (status, out) = call(&s, "PUT", "/db/r", Some(json!({ "_rev": "1-zzz", "_revisions": { "start": 3, "ids": ["ccc", "bbb"] }, "v": 4 })));
    assert_eq!(status, 201, "{out}");
    assert!(out["rev"].as_str().unwrap().starts_with("4-"), "{out}");
    // A bad _revisions is a doc_validation error.
    let (status, out) = call(&s, "PUT", "/db/bad", Some(json!({ "_revisions": { "start": "x", "ids": [] } })));
    assert_eq!((status, out["error"].as_str()), (400, Some("doc_validation")));
}

#[test]
fn unknown_special_members_and_underscore_attachment_names_are_refused() {
    let (_d, s) = start();
    let (status, out) = call(&s, "PUT", "/db/u", Some(json!({ "_foo": 1 })));
    assert_eq!((status, out["error"].as_str()), (400, Some("doc_validation")), "{out}");
    assert_eq!(out["reason"], "Bad special document member: _foo");
    let att = json!({ "_attachments": { "_a": { "content_type": "text/plain", "data": "eA==" } } });
    let (status, out) = call(&s, "PUT", "/db/u", Some(att));
    assert_eq!((status, out["error"].as_str()), (400, Some("bad_request")), "{out}");
    let r = raw(&s, "PUT", "/db/u2/_a", true, &[("Content-Type", "text/plain")], b"x");
    assert_eq!((r.status, r.json()["error"].as_str()), (400, Some("bad_request")), "{}", r.text());
    assert_eq!(call(&s, "GET", "/db/u", None).0, 404);
    assert_eq!(call(&s, "GET", "/db/u2", None).0, 404);
    // In _bulk_docs, only the offending document fails.
    let docs = json!({ "docs": [{ "_id": "ok1" }, { "_id": "bad1", "_x": 1 }] });
    let (_, out) = call(&s, "POST", "/db/_bulk_docs", Some(docs));
    assert_eq!(out[0]["ok"], true);
    assert_eq!(out[1]["error"], "doc_validation");
    // The replicator's state members of _replicator documents are kept.
    let (status, _) = call(&s, "PUT", "/db/rep", Some(json!({ "_replication_state": "completed", "source": "a" })));
    assert_eq!(status, 201);
    assert_eq!(call(&s, "GET", "/db/rep", None).1["_replication_state"], "completed");
}

#[test]
fn new_edits_false_without_a_rev_fails_that_document_only() {
    let (_d, s) = start();
    let docs = json!({ "docs": [{ "_id": "norev" }, { "_id": "withrev", "_rev": "1-abc" }], "new_edits": false });
    let (status, out) = call(&s, "POST", "/db/_bulk_docs", Some(docs));
    assert_eq!(status, 201);
    let errors = out.as_array().unwrap();
    assert_eq!(errors.len(), 1, "{out}");
    assert_eq!(errors[0]["id"], "norev");
    assert_eq!(errors[0]["error"], "bad_request");
    assert_eq!(call(&s, "GET", "/db/withrev", None).1["_rev"], "1-abc");
    assert_eq!(call(&s, "GET", "/db/norev", None).0, 404);
    let (status, _) = call(&s, "PUT", "/db/single?new_edits=false", Some(json!({ "v": 1 })));
    assert_eq!(status, 400);
}

#[test]
fn local_documents_are_kept_as_couchdb_keeps_them() {
    let (_d, s) = start();
    let (status, out) = call(&s, "PUT", "/db/_local/cp", Some(json!({ "n": 1, "_attachments": { "a": { "data": "eA==" } } })));
    assert_eq!((status, out["rev"].as_str()), (201, Some("0-1")), "{out}");
    let (_, doc) = call(&s, "GET", "/db/_local/cp?revs=true", None);
    assert_eq!(doc, json!({ "_id": "_local/cp", "_rev": "0-1", "n": 1 }));
    let (_, out) = call(&s, "PUT", "/db/_local/cp", Some(json!({ "_rev": "0-1", "n": 2 })));
    assert_eq!(out["rev"], "0-2");
    assert_eq!(call(&s, "PUT", "/db/_local/cp", Some(json!({ "_rev": "0-1", "n": 3 }))).0, 409);
    assert_eq!(call(&s, "PUT", "/db/_local/cp", Some(json!({ "_rev": "bogus", "n": 3 }))).0, 400);
    assert_eq!(call(&s, "PUT", "/db/_local/cp", Some(json!({ "_bad": 1 }))).1["error"], "doc_validation");
    // Attachments: refused on every method.
    for m in ["GET", "PUT", "DELETE"] {
        let (status, out) = call(&s, m, "/db/_local/cp/a.txt?rev=0-2", None);
        assert_eq!((status, out["reason"].as_str()), (400, Some("_local documents do not accept attachments.")), "{m}");
    }
    // Remove with a rev, re-put without one; remove without a rev, re-put with the old one.
    assert_eq!(call(&s, "DELETE", "/db/_local/cp?rev=0-2", None).1, json!({ "ok": true, "id": "_local/cp", "rev": "0-0" }));
    assert_eq!(call(&s, "GET", "/db/_local/cp", None).0, 404);
    assert_eq!(call(&s, "DELETE", "/db/_local/cp", None).0, 404);
    assert_eq!(call(&s, "PUT", "/db/_local/cp", Some(json!({ "n": 4 }))).1["rev"], "0-1");
    assert_eq!(call(&s, "DELETE", "/db/_local/cp", None).0, 200);
    let (status, out) = call(&s, "PUT", "/db/_local/cp", Some(json!({ "_rev": "0-1", "n": 5 })));
    assert_eq!((status, out["rev"].as_str()), (201, Some("0-2")), "{out}");
    assert_eq!(call(&s, "GET", "/db/_local/cp", None).1["n"], 5);
    // Not a document of _all_docs or _changes.
    assert_eq!(call(&s, "GET", "/db/_all_docs", None).1["total_rows"], 0);
    assert_eq!(call(&s, "GET", "/db/_changes", None).1["results"], json!([]));
}

#[test]
fn open_revs_with_latest_returns_each_leaf_once() {
    let (_d, s) = start();
    let r1 = call(&s, "PUT", "/db/d", Some(json!({ "v": 1 }))).1["rev"].as_str().unwrap().to_owned();
    let r2 = call(&s, "PUT", &format!("/db/d?rev={r1}"), Some(json!({ "v": 2 }))).1["rev"].as_str().unwrap().to_owned();
    let r3 = call(&s, "PUT", &format!("/db/d?rev={r2}"), Some(json!({ "v": 3 }))).1["rev"].as_str().unwrap().to_owned();
    let q = format!("/db/d?latest=true&open_revs=[\"{r1}\",\"{r2}\",\"{r3}\"]").replace('"', "%22");
    let r = raw(&s, "GET", &q, true, &[("Accept", "application/json")], b"");
    let revs = r.json();
    assert_eq!(revs.as_array().unwrap().len(), 1, "{revs}");
    assert_eq!(revs[0]["ok"]["_rev"], r3.as_str());
    // Without latest, each revision asked for.
    let q = format!("/db/d?open_revs=[\"{r1}\",\"{r3}\"]").replace('"', "%22");
    let revs = raw(&s, "GET", &q, true, &[("Accept", "application/json")], b"").json();
    assert_eq!(revs.as_array().unwrap().len(), 2, "{revs}");
}

#[test]
fn attachments_in_all_docs_and_changes_with_include_docs() {
    let (_d, s) = start();
    let att = json!({ "_attachments": { "f.txt": { "content_type": "text/plain", "data": "aGVsbG8=" } } });
    assert_eq!(call(&s, "PUT", "/db/a", Some(att)).0, 201);
    let (_, all) = call(&s, "GET", "/db/_all_docs?include_docs=true&attachments=true", None);
    assert_eq!(all["rows"][0]["doc"]["_attachments"]["f.txt"]["data"], "aGVsbG8=");
    let (_, all) = call(&s, "POST", "/db/_all_docs?include_docs=true&attachments=true", Some(json!({ "keys": ["a"] })));
    assert_eq!(all["rows"][0]["doc"]["_attachments"]["f.txt"]["data"], "aGVsbG8=");
    let (_, ch) = call(&s, "GET", "/db/_changes?include_docs=true&attachments=true", None);
    assert_eq!(ch["results"][0]["doc"]["_attachments"]["f.txt"]["data"], "aGVsbG8=");
    let (_, ch) = call(&s, "GET", "/db/_changes?include_docs=true", None);
    let stub = &ch["results"][0]["doc"]["_attachments"]["f.txt"];
    assert_eq!(stub["stub"], true);
    assert_eq!(stub["length"], 5);
    assert_eq!(stub["revpos"], 1);
    assert_eq!(stub["content_type"], "text/plain");
    assert_eq!(stub["digest"], "md5-XUFAKrxLKna5cZ2REBfFkg==");
}

#[test]
fn ids_that_are_object_members_behave_as_any_id() {
    let (_d, s) = start();
    let ids = ["constructor", "toString", "hasOwnProperty", "valueOf", "prototype", "isPrototypeOf"];
    for id in ids {
        let (status, out) = call(&s, "PUT", &format!("/db/{id}"), Some(json!({ "name": id })));
        assert_eq!(status, 201, "{id}: {out}");
        assert_eq!(call(&s, "GET", &format!("/db/{id}"), None).1["name"], id);
    }
    let (_, all) = call(&s, "POST", "/db/_all_docs?include_docs=true", Some(json!({ "keys": ids })));
    let names: Vec<&str> = all["rows"].as_array().unwrap().iter().map(|r| r["doc"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ids);
    let diff: Value = ids.iter().map(|id| (id.to_string(), json!(["1-abc"]))).collect::<serde_json::Map<_, _>>().into();
    let (_, missing) = call(&s, "POST", "/db/_revs_diff", Some(diff));
    assert_eq!(missing.as_object().unwrap().len(), ids.len(), "{missing}");
    let docs: Vec<Value> = ids.iter().map(|id| json!({ "id": id })).collect();
    let (_, got) = call(&s, "POST", "/db/_bulk_get", Some(json!({ "docs": docs })));
    assert_eq!(got["results"][2]["docs"][0]["ok"]["_id"], "hasOwnProperty");
    assert_eq!(got["results"][2]["docs"][0]["ok"]["name"], "hasOwnProperty");
    // `__proto__` starts with `_`: refused as any such id is, in CouchDB too.
    let (status, out) = call(&s, "PUT", "/db/__proto__", Some(json!({ "name": "p" })));
    assert_eq!((status, out["reason"].as_str()), (400, Some("Only reserved document ids may start with underscore.")));
    let (status, out) = call(&s, "POST", "/db/_bulk_docs", Some(json!({ "docs": [{ "_id": "__proto__" }, { "_id": "ok" }] })));
    assert_eq!((status, out[0]["error"].as_str(), out[1]["ok"].as_bool()), (201, Some("bad_request"), Some(true)));
    // As a member: `constructor` is data, `__proto__` a bad special member.
    assert_eq!(call(&s, "PUT", "/db/m", Some(json!({ "constructor": { "x": 1 }, "toString": 2 }))).0, 201);
    assert_eq!(call(&s, "GET", "/db/m", None).1["constructor"]["x"], 1);
    assert_eq!(call(&s, "PUT", "/db/m2", Some(json!({ "__proto__": { "x": 1 } }))).1["error"], "doc_validation");
}
