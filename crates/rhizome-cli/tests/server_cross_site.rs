//! No web page on another site can write through a signed-in browser
//! (issue 44, point 6), on a real `rhizome serve`: CouchDB's JSON endpoints
//! answer 415 to the bodies a page may send without the server's leave
//! (`text/plain`, forms, none), as CouchDB 3.5 does; the writes that take
//! such bodies (a SPARQL update as a form, a Graph Store upload, an LDP
//! file, a login) refuse them from another origin; session cookies carry
//! `SameSite`.
//!
//! The statuses are CouchDB 3.5.0's own (probed on `../shared/peers/couchdb`):
//! `POST /{db}`, `_bulk_docs`, `_replicate`, `_find`, `_index`, `_all_docs`,
//! `_changes`, `_compact`, `_revs_diff`, `_bulk_get`, `_purge` answer 415
//! `bad_content_type` "Content-Type must be application/json" to
//! `text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`
//! and no type at all; `POST /_session` takes JSON or a form (415 with its
//! own reason otherwise); `PUT` takes any type.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::{encode, request, Reply};
use serde_json::Value;

const FORM_TYPES: &[&str] = &["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"];

fn call(s: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(s.port, method, target, Some(ADMIN), headers, body.map(str::as_bytes)).expect("the server answers")
}

fn doc_count(s: &ServerProcess) -> u64 {
    let info: Value = serde_json::from_slice(&call(s, "GET", "/db", &[], None).body).unwrap();
    info["doc_count"].as_u64().unwrap()
}

fn server() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let s = ServerProcess::start(dir.path());
    assert_eq!(call(&s, "PUT", "/db", &[], None).status, 201);
    (dir, s)
}

#[test]
fn json_endpoints_answer_415_to_what_a_page_may_send() {
    let (_dir, s) = server();
    let doc = r#"{"_id":"x","docs":[{"_id":"y"}],"source":"db","target":"stolen","create_target":true,"selector":{},"index":{"fields":["a"]},"keys":[]}"#;
    let endpoints = ["/db", "/db/_bulk_docs", "/_replicate", "/db/_find", "/db/_index", "/db/_all_docs", "/db/_changes", "/db/_compact", "/db/_revs_diff", "/db/_bulk_get", "/db/_explain", "/_dbs_info", "/db/_purge"];
    for path in endpoints {
        for ct in FORM_TYPES {
            let r = call(&s, "POST", path, &[("Content-Type", ct)], Some(doc));
            assert_eq!(r.status, 415, "{path} {ct}: {}", r.text());
            let e: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!((e["error"].as_str(), e["reason"].as_str()), (Some("bad_content_type"), Some("Content-Type must be application/json")), "{path} {ct}");
        }
        let r = call(&s, "POST", path, &[], Some(doc));
        assert_eq!(r.status, 415, "{path} without a type: {}", r.text());
    }
    assert_eq!(doc_count(&s), 0, "nothing was written");
    assert_eq!(call(&s, "GET", "/stolen", &[], None).status, 404, "no replication ran");
    // JSON (with a charset, or as JSON-LD) is taken.
    assert_eq!(call(&s, "POST", "/db", &[("Content-Type", "application/json; charset=utf-8")], Some(r#"{"_id":"a"}"#)).status, 201);
    assert_eq!(call(&s, "POST", "/db", &[("Content-Type", "application/ld+json")], Some(r#"{"_id":"b","@id":"http://e/b"}"#)).status, 201);
    let r = call(&s, "POST", "/db/_bulk_docs", &[("Content-Type", "application/json")], Some(r#"{"docs":[{"_id":"c"}]}"#));
    assert_eq!(r.status, 201, "{}", r.text());
    // PUT takes any type, as CouchDB's (no page sends one without asking).
    assert_eq!(call(&s, "PUT", "/db/d", &[("Content-Type", "text/plain")], Some(r#"{"x":1}"#)).status, 201);
    // A login takes JSON or a form.
    let r = request(s.port, "POST", "/_session", None, &[("Content-Type", "text/plain")], Some(br#"{"name":"admin","password":"s3cret"}"#)).unwrap();
    assert_eq!(r.status, 415, "{}", r.text());
    let r = request(s.port, "POST", "/_session", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(b"name=admin&password=s3cret")).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn form_like_writes_from_another_origin_are_refused() {
    let (_dir, s) = server();
    let evil = ("Origin", "http://evil.example");
    let own_origin = format!("http://127.0.0.1:{}", s.port);
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    let insert = format!("update={}", encode("INSERT DATA { GRAPH <http://localhost:5984/db/g> { <http://e/s> <http://e/p> 1 } }"));
    // A SPARQL update posted as a form by a page of another site.
    let r = call(&s, "POST", "/db/_sparql", &[form, evil], Some(&insert));
    assert_eq!(r.status, 403, "{}", r.text());
    let r = call(&s, "POST", "/db/_sparql", &[form, ("Sec-Fetch-Site", "cross-site")], Some(&insert));
    assert_eq!(r.status, 403, "{}", r.text());
    // A Graph Store upload as text/plain (N-Triples) or a multipart form.
    let r = call(&s, "POST", "/db/_graph?graph=http%3A%2F%2Flocalhost%3A5984%2Fdb%2Fh", &[("Content-Type", "text/plain"), evil], Some("<http://e/s> <http://e/p> 2 ."));
    assert_eq!(r.status, 403, "{}", r.text());
    // An LDP file; an LDP form at all.
    let r = call(&s, "POST", "/db/_ldp/", &[("Content-Type", "text/plain"), evil], Some("bytes"));
    assert_eq!(r.status, 403, "{}", r.text());
    let r = call(&s, "POST", "/db/_ldp/", &[form], Some("a=b"));
    assert_eq!(r.status, 415, "{}", r.text());
    assert_eq!(doc_count(&s), 0, "nothing was written");
    // The same requests from the server's own pages, or from clients that
    // are not browsers (no Origin), are taken.
    assert_eq!(call(&s, "POST", "/db/_sparql", &[form, ("Origin", &own_origin)], Some(&insert)).status, 200);
    let r = call(&s, "POST", "/db/_ldp/", &[("Content-Type", "text/plain"), ("Slug", "note")], Some("bytes"));
    assert_eq!(r.status, 201, "{}", r.text());
    // A type a page needs the server's leave for passes whatever the origin
    // (the browser asked first; CORS decides).
    let r = call(&s, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update"), evil], Some("INSERT DATA { GRAPH <http://localhost:5984/db/k> { <http://e/s> <http://e/p> 3 } }"));
    assert_eq!(r.status, 200, "{}", r.text());
    // A query sent as a form only reads: an HTML query form on another
    // site works. An update in the URL's query string is still a write.
    let query = format!("query={}", encode("ASK { ?s ?p ?o }"));
    let r = call(&s, "POST", "/db/_sparql", &[form, evil, ("Accept", "application/sparql-results+json")], Some(&query));
    assert_eq!(r.status, 200, "{}", r.text());
    let drop_all = format!("/db/_sparql?update={}", encode("DROP ALL"));
    let r = call(&s, "POST", &drop_all, &[form, evil], Some("x=1"));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(doc_count(&s), 3, "the DROP ALL did not run");
}

#[test]
fn origins_cors_accepts_may_send_form_like_writes() {
    let dir = tempfile::tempdir().unwrap();
    let s = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_ENABLE_CORS", "true"), ("RHIZOME_CORS_ORIGINS", "https://app.example")]);
    assert_eq!(call(&s, "PUT", "/db", &[], None).status, 201);
    let upload = |origin: &str| call(&s, "POST", "/db/_graph?graph=http%3A%2F%2Flocalhost%3A5984%2Fdb%2Fh", &[("Content-Type", "text/plain"), ("Origin", origin), ("Sec-Fetch-Site", "cross-site")], Some("<http://e/s> <http://e/p> \"2\" ."));
    // The admin's trusted page (it may send any type after a preflight
    // anyway); any other origin is still refused.
    let r = upload("https://app.example");
    assert!(r.status == 201 || r.status == 200, "{}", r.text());
    assert_eq!(upload("https://evil.example").status, 403);
    assert_eq!(doc_count(&s), 1);
}

#[test]
fn session_cookies_say_same_site() {
    let login = |s: &ServerProcess| {
        let r = request(s.port, "POST", "/_session", None, &[("Content-Type", "application/json")], Some(br#"{"name":"admin","password":"s3cret"}"#)).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        r.header("set-cookie").unwrap().to_owned()
    };
    let (_dir, s) = server();
    let cookie = login(&s);
    assert!(cookie.starts_with("AuthSession=") && cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Lax"), "{cookie}");
    let r = request(s.port, "DELETE", "/_session", None, &[("Cookie", cookie.split(';').next().unwrap())], None).unwrap();
    assert!(r.header("set-cookie").unwrap().contains("; SameSite=Lax"), "the logout's cookie too");
    drop(s);
    let dir = tempfile::tempdir().unwrap();
    let strict = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_SESSION_SAME_SITE", "strict")]);
    assert!(login(&strict).contains("; SameSite=Strict"));
    // Shown where CouchDB keeps the setting.
    let r = request(strict.port, "GET", "/_node/_local/_config/couch_httpd_auth/same_site", Some(ADMIN), &[], None).unwrap();
    assert_eq!(r.text().trim(), "\"strict\"", "{}", r.text());
    drop(strict);
    let dir = tempfile::tempdir().unwrap();
    let none = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_SESSION_SAME_SITE", "none")]);
    let cookie = login(&none);
    assert!(cookie.contains("; SameSite=None; Secure"), "{cookie}");
}
