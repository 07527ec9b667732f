//! CouchDB's own rules on `rhizome serve`, at the HTTP level: what a
//! document may carry (`couch_doc.erl`), `_local` documents, `open_revs`,
//! attachments in `_all_docs` and `_changes`, ids that are JavaScript
//! Object members; and the HTTP behaviour real clients rely on (gzip
//! bodies, the `normal` feed's lines, `COPY`, `_dbs_info`, database info,
//! multipart answers, reserved paths).

mod common;

use common::server::{dechunk, ServerProcess, ADMIN};
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
    // In _bulk_docs, CouchDB refuses the whole request as it reads it
    // (couch_doc:from_json_obj throws): nothing is written.
    let docs = json!({ "docs": [{ "_id": "ok1" }, { "_id": "bad1", "_x": 1 }] });
    let (status, out) = call(&s, "POST", "/db/_bulk_docs", Some(docs));
    assert_eq!((status, out["error"].as_str()), (400, Some("doc_validation")), "{out}");
    assert_eq!(call(&s, "GET", "/db/ok1", None).0, 404);
    // The replicator's state members of _replicator documents are kept.
    let (status, _) = call(&s, "PUT", "/db/rep", Some(json!({ "_replication_state": "completed", "source": "a" })));
    assert_eq!(status, 201);
    assert_eq!(call(&s, "GET", "/db/rep", None).1["_replication_state"], "completed");
}

#[test]
fn new_edits_false_without_a_rev_fails_the_whole_request() {
    let (_d, s) = start();
    // CouchDB's chttpd_db:validate_revs throws while it reads the request.
    let docs = json!({ "docs": [{ "_id": "norev" }, { "_id": "withrev", "_rev": "1-abc" }], "new_edits": false });
    let (status, out) = call(&s, "POST", "/db/_bulk_docs", Some(docs));
    assert_eq!((status, out["error"].as_str()), (400, Some("bad_request")), "{out}");
    assert_eq!(call(&s, "GET", "/db/withrev", None).0, 404);
    assert_eq!(call(&s, "GET", "/db/norev", None).0, 404);
    let docs = json!({ "docs": [{ "_id": "withrev", "_rev": "1-abc" }], "new_edits": false });
    assert_eq!(call(&s, "POST", "/db/_bulk_docs", Some(docs)).0, 201);
    assert_eq!(call(&s, "GET", "/db/withrev", None).1["_rev"], "1-abc");
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
    // In a `_bulk_docs`, CouchDB refuses the whole request as it reads it.
    let (status, out) = call(&s, "POST", "/db/_bulk_docs", Some(json!({ "docs": [{ "_id": "__proto__" }, { "_id": "ok" }] })));
    assert_eq!((status, out["error"].as_str()), (400, Some("illegal_docid")));
    // As a member: `constructor` is data, `__proto__` a bad special member.
    assert_eq!(call(&s, "PUT", "/db/m", Some(json!({ "constructor": { "x": 1 }, "toString": 2 }))).0, 201);
    assert_eq!(call(&s, "GET", "/db/m", None).1["constructor"]["x"], 1);
    assert_eq!(call(&s, "PUT", "/db/m2", Some(json!({ "__proto__": { "x": 1 } }))).1["error"], "doc_validation");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

#[test]
fn gzip_request_bodies_are_decoded_and_bounded_and_other_encodings_refused() {
    let (_d, s) = start();
    let json_gz = [("Content-Type", "application/json"), ("Content-Encoding", "gzip")];
    let r = raw(&s, "PUT", "/db/g", true, &json_gz, &gzip(br#"{"packed":true}"#));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(call(&s, "GET", "/db/g", None).1["packed"], true);
    let docs = gzip(br#"{"docs":[{"_id":"b1"},{"_id":"b2"}]}"#);
    assert_eq!(raw(&s, "POST", "/db/_bulk_docs", true, &json_gz, &docs).status, 201);
    assert_eq!(call(&s, "GET", "/db/b2", None).0, 200);
    // An attachment uploaded gzipped is stored as what it decodes to.
    let rev = call(&s, "GET", "/db/g", None).1["_rev"].as_str().unwrap().to_owned();
    let r = raw(&s, "PUT", &format!("/db/g/f.txt?rev={rev}"), true, &[("Content-Type", "text/plain"), ("Content-Encoding", "gzip")], &gzip(b"plain text"));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(raw(&s, "GET", "/db/g/f.txt", true, &[], b"").body, b"plain text");
    // Not gzip at all; an encoding CouchDB does not take.
    let r = raw(&s, "PUT", "/db/h", true, &json_gz, b"{\"not\":\"gzip\"}");
    assert_eq!(r.status, 400, "{}", r.text());
    let r = raw(&s, "PUT", "/db/h", true, &[("Content-Type", "application/json"), ("Content-Encoding", "br")], b"{}");
    assert_eq!((r.status, r.json()["error"].as_str()), (415, Some("bad_content_type")));
    // A bomb: 65 MiB of zeros in well under a megabyte is refused at the
    // body limit (64 MiB by default), and the server stays up.
    let bomb = gzip(&vec![b' '; 65 << 20]);
    assert!(bomb.len() < 1 << 20);
    let r = raw(&s, "POST", "/db/_bulk_docs", true, &json_gz, &bomb);
    assert_eq!((r.status, r.json()["error"].as_str()), (413, Some("too_large")));
    assert_eq!(call(&s, "GET", "/db", None).0, 200);
    assert_eq!(call(&s, "GET", "/db/h", None).0, 404);
}

#[test]
fn the_normal_changes_feed_writes_one_change_per_line_and_counts_pending() {
    let (_d, s) = start();
    for id in ["a", "b", "c"] {
        call(&s, "PUT", &format!("/db/{id}"), Some(json!({})));
    }
    let r = raw(&s, "GET", "/db/_changes", true, &[], b"");
    let text = r.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert_eq!(lines[0], "{\"results\":[");
    for (line, id) in lines[1..4].iter().zip(["a", "b", "c"]) {
        let change = j(line.trim_end_matches(','));
        assert_eq!(change["id"], id, "{line}");
    }
    assert_eq!(lines[4], "],");
    assert_eq!(j(&text)["pending"], 0);
    let page = call(&s, "GET", "/db/_changes?limit=1", None).1;
    assert_eq!(page["results"].as_array().unwrap().len(), 1);
    assert_eq!(page["pending"], 2);
    let rest = call(&s, "GET", &format!("/db/_changes?since={}&limit=1", page["last_seq"]), None).1;
    assert_eq!((rest["results"][0]["id"].as_str(), rest["pending"].as_u64()), (Some("b"), Some(1)));
    let empty = call(&s, "GET", "/db/_changes?since=now", None).1;
    assert_eq!((empty["results"].clone(), empty["pending"].as_u64()), (json!([]), Some(0)));
}

#[test]
fn session_cookies_expire_and_only_rdf_endpoints_challenge() {
    let (_d, s) = start();
    let r = raw(&s, "POST", "/_session", false, &[("Content-Type", "application/json")], br#"{"name":"admin","password":"s3cret"}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    let cookie = r.header("set-cookie").unwrap();
    assert!(cookie.contains("Max-Age=600"), "{cookie}");
    let expires = cookie.split(';').map(str::trim).find_map(|p| p.strip_prefix("Expires=")).unwrap_or_else(|| panic!("no Expires: {cookie}"));
    assert!(expires.ends_with(" GMT") && expires.len() == 29, "{expires}");
    // A database with members: anonymous requests get 401.
    call(&s, "PUT", "/db/_security", Some(json!({ "members": { "names": ["bob"] } })));
    let r = raw(&s, "GET", "/db/_sparql?query=ASK%7B%7D", false, &[], b"");
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Basic realm=\"rhizome\""));
    let r = raw(&s, "GET", "/db/_graph?default", false, &[], b"");
    assert_eq!((r.status, r.header("www-authenticate")), (401, Some("Basic realm=\"rhizome\"")));
    for path in ["/db", "/db/doc", "/db/_all_docs"] {
        let r = raw(&s, "GET", path, false, &[], b"");
        assert_eq!((r.status, r.header("www-authenticate")), (401, None), "{path}");
    }
    // With the credentials the challenge asked for, the query runs.
    let r = raw(&s, "GET", "/db/_sparql?query=ASK%7B%7D", true, &[("Accept", "application/sparql-results+json")], b"");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn copy_makes_a_new_document_or_overwrites_with_a_rev() {
    let (_d, s) = start();
    let att = json!({ "v": 1, "_attachments": { "f.txt": { "content_type": "text/plain", "data": "aGVsbG8=" } } });
    call(&s, "PUT", "/db/src", Some(att));
    let r = raw(&s, "COPY", "/db/src", true, &[("Destination", "dst")], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["id"], "dst");
    let copy = call(&s, "GET", "/db/dst", None).1;
    assert_eq!(copy["v"], 1);
    assert_eq!(raw(&s, "GET", "/db/dst/f.txt", true, &[], b"").body, b"hello");
    // Onto an existing document: 409 without its rev, a new revision with it.
    assert_eq!(raw(&s, "COPY", "/db/src", true, &[("Destination", "dst")], b"").status, 409);
    let dest = format!("dst?rev={}", copy["_rev"].as_str().unwrap());
    let r = raw(&s, "COPY", "/db/src", true, &[("Destination", dest.as_str())], b"");
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.json()["rev"].as_str().unwrap().starts_with("2-"));
    assert_eq!(raw(&s, "COPY", "/db/src", true, &[], b"").status, 400);
    assert_eq!(raw(&s, "COPY", "/db/nothing", true, &[("Destination", "x")], b"").status, 404);
}

#[test]
fn database_info_has_every_couchdb_field_and_dbs_info_lists_several() {
    let (_d, s) = start();
    call(&s, "PUT", "/db/a", Some(json!({})));
    let rev = call(&s, "PUT", "/db/b", Some(json!({}))).1["rev"].as_str().unwrap().to_owned();
    call(&s, "DELETE", &format!("/db/b?rev={rev}"), None);
    let info = call(&s, "GET", "/db", None).1;
    for field in ["db_name", "update_seq", "doc_count", "doc_del_count", "purge_seq", "compact_running", "sizes", "props", "cluster", "instance_start_time", "disk_format_version"] {
        assert!(info.get(field).is_some(), "{field} missing in {info}");
    }
    for size in ["file", "external", "active"] {
        assert!(info["sizes"][size].is_u64(), "{info}");
    }
    assert_eq!((info["doc_count"].as_u64(), info["doc_del_count"].as_u64()), (Some(1), Some(1)));
    call(&s, "PUT", "/other", None);
    let (status, all) = call(&s, "POST", "/_dbs_info", Some(json!({ "keys": ["db", "nope", "other"] })));
    assert_eq!(status, 200);
    assert_eq!(all[0]["key"], "db");
    assert_eq!(all[0]["info"]["doc_count"], 1);
    assert_eq!(all[1], json!({ "key": "nope", "error": "not_found" }));
    assert_eq!(all[2]["info"]["db_name"], "other");
    let (_, listed) = call(&s, "GET", "/_dbs_info", None);
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|e| e["key"].as_str().unwrap()).collect();
    assert!(names.contains(&"db") && names.contains(&"other"), "{listed}");
    assert_eq!(raw(&s, "GET", "/_dbs_info", false, &[], b"").status, 401);
}

#[test]
fn all_docs_refuses_keys_with_a_key_range() {
    let (_d, s) = start();
    for q in ["key=%22a%22", "startkey=%22a%22", "endkey=%22b%22", "start_key=%22a%22"] {
        let (status, out) = call(&s, "POST", &format!("/db/_all_docs?{q}"), Some(json!({ "keys": ["a", "c"] })));
        assert_eq!((status, out["error"].as_str()), (400, Some("query_parse_error")), "{q}");
        let (status, _) = call(&s, "GET", &format!("/db/_all_docs?keys=%5B%22a%22,%22c%22%5D&{q}"), None);
        assert_eq!(status, 400, "{q}");
    }
    // CouchDB 3.5 reads `keys` of one key as that key's range, which the
    // same key or bound agrees with; another bound does not.
    assert_eq!(call(&s, "POST", "/db/_all_docs?key=%22a%22", Some(json!({ "keys": ["a"] }))).0, 200);
    assert_eq!(call(&s, "POST", "/db/_all_docs?endkey=%22b%22", Some(json!({ "keys": ["a"] }))).0, 400);
    assert_eq!(call(&s, "POST", "/db/_all_docs?limit=1", Some(json!({ "keys": ["a"] }))).0, 200);
}

#[test]
fn open_revs_and_attachments_answer_multipart_when_asked() {
    let (_d, s) = start();
    let att = json!({ "_attachments": { "f.txt": { "content_type": "text/plain", "data": "aGVsbG8=" } } });
    let r1 = call(&s, "PUT", "/db/m", Some(att)).1["rev"].as_str().unwrap().to_owned();
    call(&s, "PUT", "/db/plain", Some(json!({ "v": 1 })));
    let q = format!("/db/m?revs=true&attachments=true&open_revs=[\"{r1}\",\"9-zzz\"]").replace('"', "%22");
    let r = raw(&s, "GET", &q, true, &[("Accept", "multipart/mixed")], b"");
    assert_eq!(r.status, 200);
    let ct = r.header("content-type").unwrap().to_owned();
    assert!(ct.starts_with("multipart/mixed; boundary="), "{ct}");
    let text = r.text();
    let outer = ct.split("boundary=").nth(1).unwrap().trim_matches('"').to_owned();
    let parts: Vec<&str> = text.split(&format!("--{outer}")).filter(|p| !p.trim().is_empty() && p.trim() != "--").collect();
    assert_eq!(parts.len(), 2, "{text}");
    assert!(parts[0].contains("Content-Type: multipart/related; boundary="), "{}", parts[0]);
    assert!(parts[0].contains("\"follows\":true"), "{}", parts[0]);
    assert!(parts[0].contains("Content-Disposition: attachment; filename=\"f.txt\""), "{}", parts[0]);
    assert!(parts[0].contains("\r\n\r\nhello\r\n"), "{}", parts[0]);
    assert!(parts[1].contains("Content-Type: application/json; error=\"true\""), "{}", parts[1]);
    assert!(parts[1].contains("{\"missing\":\"9-zzz\"}"), "{}", parts[1]);
    // A document without attachments is a JSON part.
    let q = "/db/plain?open_revs=all".to_owned();
    let r = raw(&s, "GET", &q, true, &[("Accept", "multipart/mixed")], b"");
    assert!(r.text().contains("Content-Type: application/json\r\n\r\n{"), "{}", r.text());
    // JSON unless multipart is asked for (PouchDB, curl's */*).
    let r = raw(&s, "GET", "/db/plain?open_revs=all", true, &[("Accept", "*/*")], b"");
    assert_eq!(r.json()[0]["ok"]["v"], 1);
    // One document with its attachments as multipart/related.
    let r = raw(&s, "GET", "/db/m?attachments=true", true, &[("Accept", "multipart/related")], b"");
    let ct = r.header("content-type").unwrap().to_owned();
    assert!(ct.starts_with("multipart/related; boundary="), "{ct}");
    assert!(r.text().contains("\r\n\r\nhello\r\n--"), "{}", r.text());
    let r = raw(&s, "GET", "/db/m?attachments=true", true, &[("Accept", "application/json")], b"");
    assert_eq!(r.json()["_attachments"]["f.txt"]["data"], "aGVsbG8=");
}

#[test]
fn reserved_paths_answer_couchdb_errors() {
    let (_d, s) = start();
    let (status, out) = call(&s, "GET", "/db/_design/nope/_view/v", None);
    assert_eq!((status, out["error"].as_str(), out["reason"].as_str()), (404, Some("not_found"), Some("missing")));
    call(&s, "PUT", "/db/_design/d", Some(json!({ "language": "javascript" })));
    let (status, out) = call(&s, "GET", "/db/_design/d/_view/v?limit=1", None);
    assert_eq!((status, out), (404, json!({ "error": "not_found", "reason": "missing_named_view" })));
    assert_eq!(call(&s, "POST", "/db/_design/d/_view/v", Some(json!({ "keys": [] }))).0, 404);
    assert_eq!(call(&s, "PUT", "/db/_design/d/_view/v", Some(json!({}))).0, 405);
    let (status, out) = call(&s, "GET", "/db/_design/d/_show/s/doc", None);
    assert_eq!((status, out["error"].as_str()), (404, Some("not_found")));
    assert_ne!(out["reason"], "Document is missing attachment");
    // A design document's real attachments are still attachments.
    let rev = call(&s, "GET", "/db/_design/d", None).1["_rev"].as_str().unwrap().to_owned();
    let r = raw(&s, "PUT", &format!("/db/_design/d/page.html?rev={rev}"), true, &[("Content-Type", "text/html")], b"<p/>");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(raw(&s, "GET", "/db/_design/d/page.html", true, &[], b"").body, b"<p/>");
}
