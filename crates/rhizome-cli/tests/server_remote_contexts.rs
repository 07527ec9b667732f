//! Remote JSON-LD contexts (issue 14, point 4), on a real `rhizome serve`:
//! - shipped contexts (schema.org, Activity Streams, ...) project offline;
//! - a context an admin adds through `/_contexts` is used, kept across a
//!   restart, and removable; only server admins reach `/_contexts`;
//! - a context served by a local HTTP server is fetched when its host is
//!   allowed (`--context-hosts`), and refused with its URL when it is not,
//!   when it is too large or when its server does not answer in time;
//! - fetched contexts are cached: a restart with the context's server gone
//!   still writes documents that use them;
//! - a SPARQL INSERT into the graph of a document with a remote context
//!   keeps the document's `"@context"` string and its compact names.

mod common;
mod rdf_support;

use common::server::{try_request, ServerProcess, ADMIN};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const FOAF: &str = "http://xmlns.com/foaf/0.1/";

fn req(server: &ServerProcess, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    try_request(server.port, method, path, Some(ADMIN), body, &[]).expect("the server answers")
}

fn put_doc(server: &ServerProcess, id: &str, doc: &Value) -> (u16, String) {
    req(server, "PUT", &format!("/db/{id}"), Some(&doc.to_string()))
}

fn encode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

fn ask(server: &ServerProcess, query: &str) -> bool {
    let (status, body) = try_request(
        server.port,
        "GET",
        &format!("/db/_sparql?query={}", encode(query)),
        Some(ADMIN),
        None,
        &[("Accept", "application/sparql-results+json")],
    )
    .expect("the server answers");
    assert_eq!(status, 200, "{query}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["boolean"].as_bool().unwrap_or_else(|| panic!("not an ASK answer: {body}"))
}

fn new_server(env: &[(&str, &str)]) -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = ServerProcess::start_with_env(dir.path(), env);
    assert_eq!(req(&server, "PUT", "/db", None).0, 201);
    (dir, server)
}

/// A tiny HTTP server for contexts, on its own thread: `/person.jsonld`,
/// `/nested.jsonld` (names `person.jsonld` relatively), `/big.jsonld`
/// (5,000 bytes), `/silent.jsonld` (never answers); counts the requests.
struct ContextHost {
    port: u16,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ContextHost {
    fn start() -> ContextHost {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hits.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let h = h.clone();
                std::thread::spawn(move || serve_context(conn, &h));
            }
        });
        ContextHost { port, hits, stop, thread: Some(thread) }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Closes the listener: fetches from it now fail.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            t.join().expect("the context host stops");
        }
    }
}

fn serve_context(mut conn: TcpStream, hits: &AtomicUsize) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let text = String::from_utf8_lossy(&head);
    // The query is not part of the route (a new URL for the same file).
    let path = text.split_whitespace().nth(1).unwrap_or("/").split('?').next().unwrap_or("/").to_owned();
    let body = match path.as_str() {
        "/person.jsonld" => json!({"@context": {"nick": format!("{FOAF}nick"), "Person": format!("{FOAF}Person")}}).to_string(),
        "/nested.jsonld" => {
            json!({"@context": ["person.jsonld", {"age": {"@id": format!("{FOAF}age"), "@type": "http://www.w3.org/2001/XMLSchema#integer"}}]}).to_string()
        }
        "/big.jsonld" => json!({"@context": {"pad": {"@id": format!("{FOAF}{}", "x".repeat(5000))}}}).to_string(),
        "/silent.jsonld" => {
            // Holds the connection without answering until the client
            // gives up (bounded by the read timeout above).
            let _ = conn.read(&mut buf);
            return;
        }
        _ => {
            let _ = conn.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            return;
        }
    };
    let _ = conn.write_all(
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/ld+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).as_bytes(),
    );
}

#[test]
fn shipped_contexts_project_offline_and_unknown_ones_are_refused_with_their_url() {
    let (_dir, server) = new_server(&[]);
    let alice = json!({
        "@context": "https://schema.org/",
        "@id": "http://example.org/alice",
        "@type": "Person",
        "name": "Alice",
        "knows": {"@id": "http://example.org/bob"},
    });
    let (status, body) = put_doc(&server, "alice", &alice);
    assert_eq!(status, 201, "{body}");
    assert!(ask(
        &server,
        "ASK { GRAPH <http://localhost:5984/db/alice> { <http://example.org/alice> a <http://schema.org/Person> ; \
         <http://schema.org/name> \"Alice\" ; <http://schema.org/knows> <http://example.org/bob> } }"
    ));
    // The other spellings of schema.org, and the other shipped contexts.
    let (status, body) = put_doc(&server, "carol", &json!({"@context": "http://schema.org", "@id": "http://example.org/carol", "name": "Carol"}));
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, "ASK { GRAPH <http://localhost:5984/db/carol> { <http://example.org/carol> <http://schema.org/name> \"Carol\" } }"));
    let note = json!({"@context": "https://www.w3.org/ns/activitystreams", "id": "http://example.org/n1", "type": "Note", "content": "hi"});
    let (status, body) = put_doc(&server, "n1", &note);
    assert_eq!(status, 201, "{body}");
    assert!(ask(
        &server,
        "ASK { GRAPH <http://localhost:5984/db/n1> { <http://example.org/n1> a <https://www.w3.org/ns/activitystreams#Note> ; \
         <https://www.w3.org/ns/activitystreams#content> \"hi\" } }"
    ));
    let anno = json!({"@context": "http://www.w3.org/ns/anno.jsonld", "id": "http://example.org/a1", "type": "Annotation", "target": "http://example.org/page"});
    let (status, body) = put_doc(&server, "a1", &anno);
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, "ASK { GRAPH <http://localhost:5984/db/a1> { <http://example.org/a1> <http://www.w3.org/ns/oa#hasTarget> <http://example.org/page> } }"));
    let vc = json!({
        "@context": ["https://www.w3.org/2018/credentials/v1"],
        "id": "http://example.org/vc1",
        "type": ["VerifiableCredential"],
        "issuer": "http://example.org/issuer",
        "issuanceDate": "2020-01-01T00:00:00Z",
        "credentialSubject": {"id": "http://example.org/alice"},
    });
    let (status, body) = put_doc(&server, "vc1", &vc);
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, "ASK { GRAPH <http://localhost:5984/db/vc1> { <http://example.org/vc1> <https://www.w3.org/2018/credentials#issuer> <http://example.org/issuer> } }"));
    // Offline by default: a context that is neither shipped nor cached is a
    // 400 naming it, and nothing is written.
    let unknown = "http://127.0.0.1:9/ctx.jsonld";
    let (status, body) = put_doc(&server, "dave", &json!({"@context": unknown, "name": "Dave"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(unknown) && body.contains("--context-hosts"), "{body}");
    assert_eq!(req(&server, "GET", "/db/dave", None).0, 404);
    // In _bulk_docs, only the document that cannot have its context fails.
    let (status, body) = req(&server, "POST", "/db/_bulk_docs", Some(&json!({"docs": [{"_id": "e1", "@context": unknown, "name": "E"}, {"_id": "e2", "@context": "https://schema.org/", "name": "E"}]}).to_string()));
    assert_eq!(status, 201, "{body}");
    let out: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(out[0]["error"], "doc_validation", "{body}");
    assert!(out[0]["reason"].as_str().unwrap_or_default().contains(unknown), "{body}");
    assert_eq!(out[1]["ok"], true, "{body}");
    // Graph Store Protocol bodies in JSON-LD resolve them the same way.
    let target = format!("/db/_graph?graph={}", encode("http://example.org/g1"));
    let (status, body) = req(&server, "PUT", &target, Some(&json!({"@context": "https://schema.org/", "@id": "http://example.org/x", "name": "X"}).to_string()));
    assert!(status == 201 || status == 204, "{status}: {body}");
    assert!(ask(&server, "ASK { GRAPH <http://example.org/g1> { <http://example.org/x> <http://schema.org/name> \"X\" } }"));
    let (status, body) = req(&server, "PUT", &target, Some(&json!({"@context": unknown, "@id": "http://example.org/x", "name": "Y"}).to_string()));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(unknown), "{body}");
    // The database's default context may be a remote one too.
    let (status, body) = req(&server, "PUT", "/db/_local/rhizome-context", Some(&json!({"@context": "https://schema.org/"}).to_string()));
    assert_eq!(status, 201, "{body}");
    let (status, body) = put_doc(&server, "plain", &json!({"@id": "http://example.org/plain", "name": "Plain"}));
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, "ASK { GRAPH <http://localhost:5984/db/plain> { <http://example.org/plain> <http://schema.org/name> \"Plain\" } }"));
    let (status, body) = req(&server, "PUT", "/db/_local/rhizome-context", Some(&json!({"@context": unknown}).to_string()));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(unknown), "{body}");
}

#[test]
fn admins_add_read_and_remove_cached_contexts_and_they_survive_a_restart() {
    let (_dir, mut server) = new_server(&[]);
    let url = "http://contexts.example/people/v1";
    let path = format!("/_contexts?url={}", encode(url));
    let context = json!({"@context": {"nick": format!("{FOAF}nick"), "Person": format!("{FOAF}Person")}});
    // Server admins only.
    assert_eq!(try_request(server.port, "GET", "/_contexts", None, None, &[]).unwrap().0, 401);
    assert_eq!(try_request(server.port, "PUT", &path, None, Some(&context.to_string()), &[]).unwrap().0, 401);
    let (status, body) = req(&server, "PUT", "/_users/org.couchdb.user:bob", Some(r#"{"name":"bob","type":"user","roles":[],"password":"pw-bob"}"#));
    assert_eq!(status, 201, "{body}");
    // A server admin's route: 401 for anyone else, as CouchDB answers.
    assert_eq!(try_request(server.port, "PUT", &path, Some("bob:pw-bob"), Some(&context.to_string()), &[]).unwrap().0, 401);
    // A context document is an object with @context.
    for bad in [json!({"nick": "x"}), json!([1]), json!({"@context": 3})] {
        let (status, body) = req(&server, "PUT", &path, Some(&bad.to_string()));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, body) = req(&server, "PUT", "/_contexts?url=ftp%3A%2F%2Fx.example%2Fc", Some(&context.to_string()));
    assert_eq!(status, 400, "{body}");
    assert_eq!(req(&server, "PUT", "/_contexts", Some(&context.to_string())).0, 400);
    let (status, body) = req(&server, "PUT", &path, Some(&context.to_string()));
    assert_eq!(status, 201, "{body}");
    let (status, body) = req(&server, "GET", &path, None);
    assert_eq!((status, serde_json::from_str::<Value>(&body).expect("JSON")), (200, context.clone()));
    let (_, list) = req(&server, "GET", "/_contexts", None);
    let list: Value = serde_json::from_str(&list).expect("JSON");
    assert!(list["contexts"].as_array().expect("a list").iter().any(|c| c["url"] == url && c["source"] == "admin"), "{list}");
    assert!(list["contexts"].as_array().expect("a list").iter().any(|c| c["url"] == "https://schema.org/" && c["source"] == "shipped"), "{list}");
    let (status, body) = put_doc(&server, "bob", &json!({"@context": url, "@id": "http://example.org/bob", "@type": "Person", "nick": "bobby"}));
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, &format!("ASK {{ GRAPH <http://localhost:5984/db/bob> {{ <http://example.org/bob> a <{FOAF}Person> ; <{FOAF}nick> \"bobby\" }} }}")));
    // Kept in the data folder.
    server.restart();
    assert_eq!(req(&server, "GET", &path, None).0, 200);
    let (status, body) = put_doc(&server, "bob2", &json!({"@context": url, "@id": "http://example.org/bob2", "nick": "b2"}));
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, &format!("ASK {{ GRAPH <http://localhost:5984/db/bob2> {{ <http://example.org/bob2> <{FOAF}nick> \"b2\" }} }}")));
    // Removed: documents using it are refused again; shipped ones stay.
    assert_eq!(req(&server, "DELETE", &path, None).0, 200);
    assert_eq!(req(&server, "GET", &path, None).0, 404);
    assert_eq!(req(&server, "DELETE", &path, None).0, 404);
    let (status, body) = put_doc(&server, "bob3", &json!({"@context": url, "nick": "b3"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(url), "{body}");
    assert_eq!(req(&server, "DELETE", "/_contexts?url=https%3A%2F%2Fschema.org%2F", None).0, 400);
    server.restart();
    assert_eq!(req(&server, "GET", &path, None).0, 404);
}

#[test]
fn contexts_are_fetched_from_allowed_hosts_within_limits_and_cached() {
    let mut host = ContextHost::start();
    let env = [("RHIZOME_CONTEXT_HOSTS", "other.example,127.0.0.1"), ("RHIZOME_CONTEXT_TIMEOUT_MS", "1500"), ("RHIZOME_CONTEXT_MAX_BYTES", "4096")];
    let (dir, mut server) = new_server(&env);
    // A context that names another (relatively): both fetched.
    let nested = host.url("/nested.jsonld");
    let doc = json!({"@context": nested, "@id": "http://example.org/eve", "@type": "Person", "nick": "evie", "age": 33});
    let (status, body) = put_doc(&server, "eve", &doc);
    assert_eq!(status, 201, "{body}");
    assert!(ask(
        &server,
        &format!(
            "ASK {{ GRAPH <http://localhost:5984/db/eve> {{ <http://example.org/eve> a <{FOAF}Person> ; <{FOAF}nick> \"evie\" ; <{FOAF}age> 33 }} }}"
        )
    ));
    assert_eq!(host.hits.load(Ordering::SeqCst), 2);
    // A context on a nested node is fetched as well.
    let person = host.url("/person.jsonld?nested");
    let doc = json!({"@id": "http://example.org/frank", "http://xmlns.com/foaf/0.1/knows": {"@context": person, "@id": "http://example.org/gus", "nick": "g"}});
    let (status, body) = put_doc(&server, "frank", &doc);
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, &format!("ASK {{ GRAPH <http://localhost:5984/db/frank> {{ <http://example.org/gus> <{FOAF}nick> \"g\" }} }}")));
    assert_eq!(host.hits.load(Ordering::SeqCst), 3);
    // Cached: a second document fetches nothing.
    let (status, body) = put_doc(&server, "eve2", &json!({"@context": nested, "nick": "e2"}));
    assert_eq!(status, 201, "{body}");
    assert_eq!(host.hits.load(Ordering::SeqCst), 3);
    // Too large, and no answer in time: 400s naming the URL and the limit.
    let big = host.url("/big.jsonld");
    let (status, body) = put_doc(&server, "big", &json!({"@context": big, "pad": "x"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(&big) && body.contains("larger than 4096 bytes"), "{body}");
    let silent = host.url("/silent.jsonld");
    let (status, body) = put_doc(&server, "silent", &json!({"@context": silent, "nick": "x"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(&silent) && body.contains("no answer within 1500 ms"), "{body}");
    let missing = host.url("/missing.jsonld");
    let (status, body) = put_doc(&server, "missing", &json!({"@context": missing, "nick": "x"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(&missing) && body.contains("HTTP 404"), "{body}");
    // https is not fetched (no TLS client): said so.
    let (status, body) = put_doc(&server, "tls", &json!({"@context": "https://contexts.example/v1", "nick": "x"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("https://contexts.example/v1") && body.contains("TLS"), "{body}");

    // A server that does not allow the host refuses it, naming the URL.
    let (_dir2, strict) = new_server(&[("RHIZOME_CONTEXT_HOSTS", "other.example")]);
    let person = host.url("/person.jsonld");
    let (status, body) = put_doc(&strict, "p", &json!({"@context": person, "nick": "x"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(&person) && body.contains("not one contexts may be fetched from"), "{body}");
    assert_eq!(host.hits.load(Ordering::SeqCst), 6, "the strict server fetched nothing (3 + big + silent + missing)");

    // The cache outlives the server that served it and a restart: the
    // context's host is gone, documents using it are still written.
    server.kill();
    host.stop();
    let server = ServerProcess::start_with_env(dir.path(), &env);
    let (status, body) = put_doc(&server, "eve3", &json!({"@context": nested, "@id": "http://example.org/eve3", "nick": "e3", "age": 3}));
    assert_eq!(status, 201, "{body}");
    assert!(ask(&server, &format!("ASK {{ GRAPH <http://localhost:5984/db/eve3> {{ <http://example.org/eve3> <{FOAF}nick> \"e3\" ; <{FOAF}age> 3 }} }}")));
    // ... while one that was never fetched now fails: the host is gone.
    let (status, body) = put_doc(&server, "gone", &json!({"@context": host.url("/person.jsonld?v=2"), "nick": "x"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("/person.jsonld?v=2"), "{body}");
}

#[test]
fn a_sparql_insert_keeps_a_remote_context_and_its_compact_names() {
    let (_dir, server) = new_server(&[]);
    let alice = json!({"@context": "https://schema.org/", "@id": "http://example.org/alice", "@type": "Person", "name": "Alice", "app_flag": true});
    assert_eq!(put_doc(&server, "alice", &alice).0, 201);
    let url = "http://contexts.example/people/v1";
    let context = json!({"@context": {"nick": format!("{FOAF}nick"), "Person": format!("{FOAF}Person")}});
    assert_eq!(req(&server, "PUT", &format!("/_contexts?url={}", encode(url)), Some(&context.to_string())).0, 201);
    assert_eq!(put_doc(&server, "bob", &json!({"@context": url, "@id": "http://example.org/bob", "@type": "Person", "nick": "bobby"})).0, 201);
    // Activity Streams writes `id` and `type` (aliases of `@id`, `@type`).
    let note = json!({"@context": "https://www.w3.org/ns/activitystreams", "id": "http://example.org/n1", "type": "Note", "content": "hi"});
    assert_eq!(put_doc(&server, "n1", &note).0, 201);
    let update = format!(
        "INSERT DATA {{ GRAPH <http://localhost:5984/db/alice> {{ <http://example.org/alice> <http://schema.org/jobTitle> \"Engineer\" }} \
         GRAPH <http://localhost:5984/db/bob> {{ <http://example.org/bob> <{FOAF}nick> \"bob\" }} \
         GRAPH <http://localhost:5984/db/n1> {{ <http://example.org/n1> <https://www.w3.org/ns/activitystreams#summary> \"short\" }} }}"
    );
    let r = rdf_support::client::request(server.port, "POST", "/db/_sparql", Some(ADMIN), &[("Content-Type", "application/sparql-update")], Some(update.as_bytes()))
        .expect("the server answers");
    assert!(r.status == 200 || r.status == 204, "{}: {}", r.status, r.text());
    let (status, body) = req(&server, "GET", "/db/alice", None);
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(doc["@context"], "https://schema.org/", "{doc}");
    assert_eq!(doc["name"], "Alice", "{doc}");
    assert_eq!(doc["jobTitle"], "Engineer", "{doc}");
    assert_eq!(doc["@type"], "Person", "{doc}");
    assert_eq!(doc["app_flag"], json!(true), "{doc}");
    assert!(doc["_rev"].as_str().unwrap_or_default().starts_with("2-"), "{doc}");
    let (status, body) = req(&server, "GET", "/db/bob", None);
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(doc["@context"], url, "{doc}");
    assert_eq!(doc["@type"], "Person", "{doc}");
    let mut nicks: Vec<String> = match &doc["nick"] {
        Value::Array(a) => a.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect(),
        other => panic!("nick should be the two nicknames: {other} in {doc}"),
    };
    nicks.sort();
    assert_eq!(nicks, ["bob", "bobby"], "{doc}");
    let (status, body) = req(&server, "GET", "/db/n1", None);
    assert_eq!(status, 200, "{body}");
    let mut doc: Value = serde_json::from_str(&body).expect("JSON");
    let members = doc.as_object_mut().expect("an object");
    members.retain(|k, _| !k.starts_with('_'));
    assert_eq!(
        doc,
        json!({"@context": "https://www.w3.org/ns/activitystreams", "id": "http://example.org/n1", "type": "Note", "content": "hi", "summary": "short"})
    );
    // The rewritten documents still project the same graph.
    assert!(ask(&server, "ASK { GRAPH <http://localhost:5984/db/alice> { <http://example.org/alice> a <http://schema.org/Person> ; <http://schema.org/jobTitle> \"Engineer\" ; <http://schema.org/name> \"Alice\" } }"));
}

#[test]
fn replicated_documents_fetch_their_contexts_before_they_are_written() {
    let host = ContextHost::start();
    let person = host.url("/person.jsonld");
    // The source knows the context because an admin added it.
    let (_a_dir, a) = new_server(&[]);
    let context = json!({"@context": {"nick": format!("{FOAF}nick"), "Person": format!("{FOAF}Person")}});
    assert_eq!(req(&a, "PUT", &format!("/_contexts?url={}", encode(&person)), Some(&context.to_string())).0, 201);
    let (status, body) = put_doc(&a, "zed", &json!({"@context": person, "@id": "http://example.org/zed", "@type": "Person", "nick": "z"}));
    assert_eq!(status, 201, "{body}");
    assert_eq!(host.hits.load(Ordering::SeqCst), 0);
    // The target fetches it when the replicated document arrives.
    let (_b_dir, b) = new_server(&[("RHIZOME_CONTEXT_HOSTS", "127.0.0.1")]);
    let source = format!("http://{ADMIN}@127.0.0.1:{}/db", a.port);
    let (status, body) = req(&b, "POST", "/_replicate", Some(&json!({"source": source, "target": "db"}).to_string()));
    assert_eq!(status, 200, "{body}");
    assert_eq!(host.hits.load(Ordering::SeqCst), 1);
    assert!(ask(&b, &format!("ASK {{ GRAPH <http://localhost:5984/db/zed> {{ <http://example.org/zed> a <{FOAF}Person> ; <{FOAF}nick> \"z\" }} }}")));
    // An offline target refuses that document alone, naming the context.
    let (_c_dir, c) = new_server(&[]);
    let (status, body) = req(&c, "POST", "/_replicate", Some(&json!({"source": source, "target": "db"}).to_string()));
    assert_eq!(status, 200, "{body}");
    let out: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(out["history"][0]["doc_write_failures"], 1, "{body}");
    assert_eq!(req(&c, "GET", "/db/zed", None).0, 404);
}

/// Issue 44, point 3: a fetched context is kept on disk only once a write
/// that uses it commits (contexts of refused documents were all kept, 1 MiB
/// each up to 10,000), and the cache is read as it is used, never whole at
/// start: a damaged file no longer stops the server from starting.
#[test]
fn a_refused_write_keeps_no_context_and_a_damaged_cache_never_stops_a_start() {
    let host = ContextHost::start();
    let env = [("RHIZOME_CONTEXT_HOSTS", "127.0.0.1")];
    let (dir, mut server) = new_server(&env);
    let cache = dir.path().join("_contexts");
    let files = || std::fs::read_dir(&cache).expect("the context cache").count();
    let ddoc = json!({"validate_doc_update": "function (doc) { if (doc.refuse) { throw({forbidden: 'refused'}); } }"});
    assert_eq!(put_doc(&server, "_design/v", &ddoc).0, 201);
    let before = files();
    let (status, body) = put_doc(&server, "no", &json!({"@context": host.url("/person.jsonld?refused"), "nick": "x", "refuse": true}));
    assert_eq!(status, 403, "{body}");
    assert_eq!(files(), before, "a refused write keeps no context on disk");
    // Refused in the write itself (a conflict), after its contexts were
    // fetched: none kept either.
    assert_eq!(put_doc(&server, "taken", &json!({"nick": "first"})).0, 201);
    let (status, body) = put_doc(&server, "taken", &json!({"@context": host.url("/person.jsonld?conflict"), "nick": "x"}));
    assert_eq!(status, 409, "{body}");
    assert_eq!(files(), before, "a write refused for a conflict keeps no context on disk");
    let kept = host.url("/person.jsonld?kept");
    let (status, body) = put_doc(&server, "yes", &json!({"@context": kept, "nick": "x"}));
    assert_eq!(status, 201, "{body}");
    assert_eq!(files(), before + 1, "a committed write keeps its context");
    // A damaged cache file: the server starts and serves, and the kept
    // context is read from its file when used (not fetched again).
    std::fs::write(cache.join("0123456789abcdef0123456789abcdef.json"), b"{ not json").expect("a file");
    server.restart();
    let hits = host.hits.load(Ordering::SeqCst);
    let (status, body) = put_doc(&server, "again", &json!({"@context": kept, "@id": "http://example.org/again", "nick": "y"}));
    assert_eq!(status, 201, "{body}");
    assert_eq!(host.hits.load(Ordering::SeqCst), hits, "read from the cache");
    assert!(ask(&server, &format!("ASK {{ GRAPH <http://localhost:5984/db/again> {{ <http://example.org/again> <{FOAF}nick> \"y\" }} }}")));
}
