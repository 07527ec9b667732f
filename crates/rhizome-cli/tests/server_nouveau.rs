//! CouchDB's Nouveau full-text search on a real `rhizome serve`,
//! curl-level: `_nouveau` GET and POST with CouchDB 3.5's options and
//! answers (sort, limit, bookmarks, include_docs, counts, ranges,
//! update=false), its errors, `_nouveau_info`, `_nouveau_cleanup`,
//! `_compact`, the index files in the database's folder, the index kept
//! by writes from every door (documents, `_bulk_docs`, SPARQL Update, the
//! Graph Store, replication), and a build killed mid-way that resumes.

mod common;

use common::server::{exchange, ServerProcess, ADMIN};
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

fn ids(answer: &Value) -> Vec<String> {
    let mut v: Vec<String> = answer["hits"].as_array().unwrap_or_else(|| panic!("no hits: {answer}")).iter().map(|h| h["id"].as_str().unwrap().to_owned()).collect();
    v.sort();
    v
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

const BOOKS: &str = r#"function (doc) {
  if (doc.title) { index("text", "title", doc.title, {store: true}); index("text", "default", doc.title); }
  if (doc.kind) index("string", "kind", doc.kind);
  if (typeof doc.price === "number") index("double", "price", doc.price);
}"#;

fn books_server() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    ok(&server, "PUT", "/db", None);
    ok(&server, "PUT", "/db/_design/s", Some(json!({"nouveau": {"books": {"index": BOOKS, "field_analyzers": {"title": "english"}}}})));
    let docs: Vec<Value> = (0..30)
        .map(|i| {
            let (title, kind) = (["Quick fox", "Lazy dogs", "Brown foxes"][i % 3], ["novel", "essay"][i % 2]);
            json!({"_id": format!("b{i:02}"), "title": format!("{title} book number {i}"), "kind": kind, "price": i})
        })
        .collect();
    bulk(&server, "db", docs);
    (dir, server)
}

#[test]
fn nouveau_answers_couchdbs_search_api() {
    let (dir, server) = books_server();
    let q = |query: &str| ok(&server, "GET", &format!("/db/_design/s/_nouveau/books?q={}&limit=100", enc(query)), None);
    // Term (stemmed: foxes is fox), phrase, prefix, boolean, range.
    assert_eq!(q("title:fox")["total_hits"], 20);
    assert_eq!(q("title:\"lazy dogs\"")["total_hits"], 10);
    assert_eq!(q("title:numb*")["total_hits"], 30);
    assert_eq!(ids(&q("title:lazy AND kind:novel AND price:[0 TO 10}")), ["b04"]);
    assert_eq!(q("brown OR lazy")["total_hits"], 20);

    // The answer's shape, sorted by a double, with docs and stored fields.
    let a = ok(&server, "GET", "/db/_design/s/_nouveau/books?q=title:lazy&sort=%22-price%3Cdouble%3E%22&limit=2&include_docs=true", None);
    assert_eq!(a["total_hits"], 10);
    assert_eq!(a["total_hits_relation"], "EQUAL_TO");
    assert_eq!(a["counts"], Value::Null);
    assert_eq!(a["ranges"], Value::Null);
    let hits = a["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["id"], "b28");
    assert_eq!(hits[0]["order"], json!([{"@type": "double", "value": 28.0}, {"@type": "string", "value": "b28"}]));
    assert_eq!(hits[0]["fields"], json!({"title": "Lazy dogs book number 28"}));
    assert_eq!(hits[0]["doc"]["price"], 28);
    assert!(hits[0]["doc"]["_rev"].is_string());

    // POST takes the same options as JSON: counts and ranges.
    let a = ok(
        &server,
        "POST",
        "/db/_design/s/_nouveau/books",
        Some(json!({"q": "*:*", "limit": 1, "counts": ["kind"], "ranges": {"price": [{"label": "low", "min": 0, "max": 10, "max_inclusive": false}, {"label": "high", "min": 10}]}})),
    );
    assert_eq!(a["counts"], json!({"kind": {"essay": 15, "novel": 15}}));
    assert_eq!(a["ranges"], json!({"price": {"low": 10, "high": 20}}));

    // Paging with bookmarks visits every hit once.
    let mut seen = Vec::new();
    let mut bookmark: Option<String> = None;
    loop {
        let mut body = json!({"q": "title:book", "limit": 7, "sort": "price<double>"});
        if let Some(b) = &bookmark {
            body["bookmark"] = json!(b);
        }
        let a = ok(&server, "POST", "/db/_design/s/_nouveau/books", Some(body));
        let page: Vec<String> = a["hits"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_owned()).collect();
        if page.is_empty() {
            assert_eq!(a["bookmark"].as_str(), bookmark.as_deref());
            break;
        }
        seen.extend(page);
        bookmark = Some(a["bookmark"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen, (0..30).map(|i| format!("b{i:02}")).collect::<Vec<_>>());

    // _nouveau_info.
    let info = ok(&server, "GET", "/db/_design/s/_nouveau_info/books", None);
    assert_eq!(info["name"], "_design/s/books");
    assert_eq!(info["search_index"]["num_docs"], 30);
    assert_eq!(info["search_index"]["update_seq"], 31);
    assert!(info["search_index"]["disk_size"].as_u64().unwrap() > 0);
    let sig = info["search_index"]["signature"].as_str().unwrap().to_owned();

    // The index files are in the database's folder.
    let db_dir = std::fs::read_dir(dir.path().join("dbs")).unwrap().flatten().map(|e| e.path()).find(|p| p.join("search").join(&sig).is_dir());
    assert!(db_dir.is_some(), "no index folder {sig} under {}", dir.path().display());

    // Compacting the design document's indexes keeps their answers.
    ok(&server, "POST", "/db/_compact/s", Some(json!({})));
    assert_eq!(q("title:fox")["total_hits"], 20);

    // Errors, shaped as CouchDB's.
    let (status, e) = call(&server, "GET", "/db/_design/s/_nouveau/books", None);
    assert_eq!((status, e["error"].as_str()), (400, Some("query_parse_error")), "{e}");
    let (status, e) = call(&server, "GET", "/db/_design/s/_nouveau/books?q=x&limit=0", None);
    assert_eq!((status, e["error"].as_str()), (400, Some("query_parse_error")), "{e}");
    let (status, e) = call(&server, "GET", "/db/_design/s/_nouveau/books?q=x&limit=ten", None);
    assert_eq!((status, e["error"].as_str()), (400, Some("query_parse_error")), "{e}");
    let (status, e) = call(&server, "GET", "/db/_design/s/_nouveau/books?q=price:cheap", None);
    assert_eq!((status, e["error"].as_str()), (400, Some("query_parse_error")), "{e}");
    let (status, e) = call(&server, "GET", "/db/_design/s/_nouveau/books?q=x&counts=%22kind%22", None);
    assert_eq!((status, e["error"].as_str()), (400, Some("query_parse_error")), "{e}");
    let (status, e) = call(&server, "GET", "/db/_design/s/_nouveau/nope?q=x", None);
    assert_eq!((status, e["error"].as_str(), e["reason"].as_str()), (404, Some("not_found"), Some("nope not found.")), "{e}");
    let (status, e) = call(&server, "GET", "/db/_design/missing/_nouveau/books?q=x", None);
    assert_eq!((status, e["error"].as_str()), (404, Some("not_found")), "{e}");
    let (status, _) = call(&server, "PUT", "/db/_design/s/_nouveau/books?q=x", None);
    assert_eq!(status, 405);
    let (status, e) = call(&server, "GET", "/db/_design/s/_nouveau/books?q=x&bookmark=@@", None);
    assert_eq!((status, e["error"].as_str()), (400, Some("bad_request")), "{e}");

    // A changed definition is a new index; cleanup removes the old files,
    // and deleting the database removes the new ones with it.
    let rev = ok(&server, "GET", "/db/_design/s", None)["_rev"].clone();
    ok(&server, "PUT", "/db/_design/s", Some(json!({"_rev": rev, "nouveau": {"books": {"index": BOOKS}}})));
    assert_eq!(q("title:fox")["total_hits"], 10, "the standard analyzer does not stem foxes");
    let db_dir = db_dir.unwrap();
    assert!(db_dir.join("search").join(&sig).is_dir());
    let (status, _) = call(&server, "POST", "/db/_nouveau_cleanup", Some(json!({})));
    assert_eq!(status, 202);
    assert!(!db_dir.join("search").join(&sig).exists());
    assert_eq!(std::fs::read_dir(db_dir.join("search")).unwrap().count(), 1);
    ok(&server, "DELETE", "/db", None);
    assert!(!db_dir.join("search").exists());
}

#[test]
fn update_false_answers_from_the_index_as_it_is() {
    let (_dir, server) = books_server();
    assert_eq!(ok(&server, "GET", "/db/_design/s/_nouveau/books?q=title:zebra", None)["total_hits"], 0);
    ok(&server, "PUT", "/db/z1", Some(json!({"title": "A zebra"})));
    assert_eq!(ok(&server, "GET", "/db/_design/s/_nouveau/books?q=title:zebra&update=false", None)["total_hits"], 0);
    assert_eq!(ok(&server, "GET", "/db/_design/s/_nouveau/books?q=title:zebra", None)["total_hits"], 1);
}

/// Indexes every string anywhere in a document as default text, so that
/// graph-bodied documents (written through SPARQL or the Graph Store) are
/// found by their literals.
const ALL_STRINGS: &str = r#"function (doc) {
  function walk(v) {
    if (typeof v === "string") index("text", "default", v);
    else if (v && typeof v === "object") for (var k in v) if (k !== "_id" && k !== "_rev") walk(v[k]);
  }
  walk(doc);
}"#;

#[test]
fn writes_from_every_door_reach_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    ok(&server, "PUT", "/db", None);
    ok(&server, "PUT", "/db/_design/s", Some(json!({"nouveau": {"all": {"index": ALL_STRINGS}}})));
    let found = |word: &str| -> Vec<String> { ids(&ok(&server, "GET", &format!("/db/_design/s/_nouveau/all?q={word}"), None)) };
    // Documents: PUT and _bulk_docs.
    ok(&server, "PUT", "/db/doc1", Some(json!({"text": "aardvark"})));
    bulk(&server, "db", vec![json!({"_id": "doc2", "text": "badger"})]);
    assert_eq!(found("aardvark"), ["doc1"]);
    assert_eq!(found("badger"), ["doc2"]);
    // SPARQL Update: the graph's document is indexed by its literals.
    let (status, _, body) = exchange(
        server.port,
        "POST",
        "/db/_sparql",
        &[("Authorization", &format!("Basic {}", common::server::base64(ADMIN.as_bytes()))), ("Content-Type", "application/sparql-update")],
        "INSERT DATA { GRAPH <http://localhost:5984/db/sparqldoc> { <http://ex.org/c> <http://ex.org/name> \"capybara\" } }",
    );
    assert!((200..300).contains(&status), "{status} {body}");
    assert_eq!(found("capybara").len(), 1, "a SPARQL write is indexed");
    // The Graph Store.
    let (status, _, body) = exchange(
        server.port,
        "PUT",
        "/db/_graph?graph=http%3A%2F%2Flocalhost%3A5984%2Fdb%2Fgsp",
        &[("Authorization", &format!("Basic {}", common::server::base64(ADMIN.as_bytes()))), ("Content-Type", "text/turtle")],
        "<http://ex.org/d> <http://ex.org/name> \"dingo\" .",
    );
    assert!((200..300).contains(&status), "{status} {body}");
    assert_eq!(found("dingo").len(), 1, "a Graph Store write is indexed");
    // A SPARQL delete takes the literal out of the index again.
    let (status, _, body) = exchange(
        server.port,
        "POST",
        "/db/_sparql",
        &[("Authorization", &format!("Basic {}", common::server::base64(ADMIN.as_bytes()))), ("Content-Type", "application/sparql-update")],
        "DELETE DATA { GRAPH <http://localhost:5984/db/sparqldoc> { <http://ex.org/c> <http://ex.org/name> \"capybara\" } }",
    );
    assert!((200..300).contains(&status), "{status} {body}");
    assert!(found("capybara").is_empty(), "a SPARQL delete leaves the index");
    // Deletion and replication: the replica's index has what came over.
    let rev = ok(&server, "GET", "/db/doc1", None)["_rev"].as_str().unwrap().to_owned();
    ok(&server, "DELETE", &format!("/db/doc1?rev={rev}"), None);
    assert!(found("aardvark").is_empty());
    ok(&server, "POST", "/_replicate", Some(json!({"source": "db", "target": "copy", "create_target": true})));
    assert_eq!(ids(&ok(&server, "GET", "/copy/_design/s/_nouveau/all?q=badger", None)), ["doc2"]);
    // A compacted database keeps its index working.
    ok(&server, "POST", "/db/_compact", Some(json!({})));
    bulk(&server, "db", vec![json!({"_id": "doc3", "text": "echidna"})]);
    assert_eq!(found("echidna"), ["doc3"]);
    assert_eq!(found("badger"), ["doc2"]);
}

#[test]
fn an_index_build_shows_in_active_tasks_and_resumes_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path());
    ok(&server, "PUT", "/db", None);
    let docs: Vec<Value> = (0..2100).map(|i| json!({"_id": format!("d{i:05}"), "text": format!("word{}", i % 10), "slow": i >= 2000})).collect();
    for chunk in docs.chunks(700) {
        bulk(&server, "db", chunk.to_vec());
    }
    // The first batch (2000 documents) is quick; each slow document after
    // it takes half a second, so the build stays in its second batch for
    // most of a minute, whatever the machine's load.
    let slow = "function (doc) { if (doc.slow) { var t = Date.now(); while (Date.now() - t < 500) {} } index('text', 'default', doc.text); }";
    ok(&server, "PUT", "/db/_design/slow", Some(json!({"nouveau": {"i": {"index": slow}}})));
    let port = server.port;
    let query = std::thread::spawn(move || common::server::try_request(port, "GET", "/db/_design/slow/_nouveau/i?q=word1", Some(ADMIN), None, &[]));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < deadline, "the build never showed its first batch");
        let tasks = ok(&server, "GET", "/_active_tasks", None);
        let task = tasks.as_array().unwrap().iter().find(|t| t["type"] == "indexer").cloned();
        if let Some(t) = task.filter(|t| t["changes_done"] == 2000) {
            assert_eq!(t["database"], "db");
            assert_eq!(t["design_document"], "_design/slow");
            assert_eq!(t["total_changes"], 2101);
            assert_eq!(ok(&server, "GET", "/db/_design/slow/_nouveau_info/i", None)["search_index"]["update_seq"], 2000);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();
    let _ = query.join();
    server.restart();
    // The committed batch survived the kill: the build goes on from it.
    let info = ok(&server, "GET", "/db/_design/slow/_nouveau_info/i", None);
    assert_eq!(info["search_index"]["update_seq"], 2000);
    assert_eq!(info["search_index"]["num_docs"], 2000);
    let quick: Vec<Value> = (2000..2100)
        .map(|i| {
            let id = format!("d{i:05}");
            let rev = ok(&server, "GET", &format!("/db/{id}"), None)["_rev"].clone();
            json!({"_id": id, "_rev": rev, "text": format!("word{}", i % 10), "slow": false})
        })
        .collect();
    bulk(&server, "db", quick);
    let out = ok(&server, "GET", "/db/_design/slow/_nouveau/i?q=word1", None);
    assert_eq!(out["total_hits"], 210);
    assert_eq!(ok(&server, "GET", "/db/_design/slow/_nouveau_info/i", None)["search_index"]["update_seq"], 2201);
}
