//! Requests that once brought the server down or broke a document's graph,
//! on a real `rhizome serve`: JSON-LD contexts with long chains of term
//! definitions (in a document, a Graph Store body and the database's
//! default context), deeply nested RDF/XML, Turtle and TriG bodies, and
//! document ids that are another document's graph IRI. Each gets a clean
//! 4xx with its reason (or succeeds harmlessly), and the server answers
//! afterwards.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::{encode, request, Reply};
use serde_json::{json, Map, Value};

fn call(server: &ServerProcess, method: &str, target: &str, content_type: &str, body: &[u8]) -> Reply {
    let headers = [("Content-Type", content_type)];
    request(server.port, method, target, Some(ADMIN), if body.is_empty() { &[] } else { &headers }, Some(body)).expect("the server answers")
}

fn json_call(server: &ServerProcess, method: &str, target: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string).unwrap_or_default();
    let r = call(server, method, target, "application/json", text.as_bytes());
    (r.status, serde_json::from_slice(&r.body).unwrap_or(Value::Null))
}

/// The server is up and still writes documents.
fn assert_alive(server: &ServerProcess, db: &str) {
    let (status, body) = json_call(server, "GET", "/", None);
    assert_eq!(status, 200, "GET / after the request: {body}");
    let (status, body) = json_call(server, "POST", &format!("/{db}"), Some(&json!({ "plain": true })));
    assert_eq!(status, 201, "a write after the request: {body}");
}

fn start() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(json_call(&server, "PUT", "/db", None).0, 201);
    (dir, server)
}

/// `"t0": "http://example.org/", "t1": "t0:a", ..., "tn": "t(n-1):a"`: each
/// term's IRI is a compact IRI on the one before.
fn chained_context(n: usize) -> Value {
    let mut context = Map::new();
    context.insert("t0".into(), json!("http://example.org/"));
    for i in 1..=n {
        context.insert(format!("t{i}"), json!(format!("t{}:a", i - 1)));
    }
    Value::Object(context)
}

fn chained_document(n: usize) -> Value {
    json!({ "@context": chained_context(n), "@id": "http://example.org/x", format!("t{n}"): "v" })
}

fn count(server: &ServerProcess, db: &str, query: &str) -> u64 {
    let r = call(server, "GET", &format!("/{db}/_sparql?query={}", encode(query)), "", b"");
    assert_eq!(r.status, 200, "{query}: {}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    v["results"]["bindings"][0]["n"]["value"].as_str().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("a count: {v}"))
}

fn graph_size(server: &ServerProcess, db: &str, graph: &str) -> u64 {
    count(server, db, &format!("SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}"))
}

#[test]
fn documents_with_long_chains_of_term_definitions_are_refused_and_the_server_stays_up() {
    let (_dir, server) = start();
    for n in [2_000, 1_000, 300] {
        let (status, body) = json_call(&server, "PUT", "/db/chain", Some(&chained_document(n)));
        assert_eq!(status, 400, "{n} chained terms: {body}");
        assert_eq!(body["error"], "doc_validation", "{body}");
        let reason = body["reason"].as_str().unwrap();
        assert!(reason.contains("256") && reason.contains("t0"), "the reason names the limit and the chain: {reason}");
        assert_alive(&server, "db");
    }
    // Within the limit the document is written and projected.
    let (status, body) = json_call(&server, "PUT", "/db/chain", Some(&chained_document(200)));
    assert_eq!(status, 201, "{body}");
    assert_eq!(graph_size(&server, "db", "http://localhost:5984/db/chain"), 1);
    // The same through _bulk_docs and new_edits=false (replication's
    // path): that document's error alone, as CouchDB's per-document
    // results; a replicated one refused as validate_doc_update refuses,
    // so that a replicator goes on past it.
    let (status, body) = json_call(&server, "POST", "/db/_bulk_docs", Some(&json!({ "docs": [ { "_id": "bulk", "@context": chained_context(2_000), "t2000": 1 }, { "_id": "fine" } ] })));
    assert_eq!((status, body[0]["error"].as_str(), body[1]["ok"].as_bool()), (201, Some("doc_validation"), Some(true)), "{body}");
    let doc = json!({ "_id": "repl", "_rev": "1-abc", "@context": chained_context(2_000), "t2000": 1 });
    let (status, body) = json_call(&server, "POST", "/db/_bulk_docs", Some(&json!({ "docs": [doc], "new_edits": false })));
    assert_eq!((status, body[0]["error"].as_str()), (201, Some("forbidden")), "{body}");
    assert_eq!(json_call(&server, "GET", "/db/repl", None).0, 404);
    assert_alive(&server, "db");
}

#[test]
fn nested_scoped_contexts_and_cyclic_terms_are_refused() {
    let (_dir, server) = start();
    // 60 scoped contexts inside each other, each with a chain of 5 terms:
    // 360 levels of context processing.
    let mut context = chained_context(5);
    for _ in 0..60 {
        let mut outer = chained_context(5).as_object().unwrap().clone();
        outer.insert("scoped".into(), json!({ "@id": "t5:s", "@context": context }));
        context = Value::Object(outer);
    }
    let (status, body) = json_call(&server, "PUT", "/db/scoped", Some(&json!({ "@context": context, "t1": "v" })));
    assert_eq!(status, 400, "{body}");
    assert!(body["reason"].as_str().unwrap().contains("256"), "{body}");
    // Terms defined by each other.
    let cyclic = json!({ "@context": { "a": "b:x", "b": "a:y" }, "a": 1 });
    let (status, body) = json_call(&server, "PUT", "/db/cyclic", Some(&cyclic));
    assert_eq!(status, 400, "{body}");
    assert_alive(&server, "db");
}

#[test]
fn graph_store_json_ld_bodies_with_long_chains_are_refused() {
    let (_dir, server) = start();
    let target = "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fg";
    for body in [chained_document(2_000), json!({ "@context": chained_context(2_000), "@graph": [ { "@id": "http://e/s", "t2000": 1 } ] })] {
        let r = call(&server, "PUT", target, "application/ld+json", body.to_string().as_bytes());
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("256"), "{}", r.text());
        assert_alive(&server, "db");
    }
    let r = call(&server, "PUT", target, "application/ld+json", chained_document(100).to_string().as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(graph_size(&server, "db", "http://example.org/g"), 1);
}

#[test]
fn the_default_context_is_checked_when_written_and_a_bad_one_never_stops_writes() {
    let (_dir, mut server) = start();
    let bad = json!({ "@context": chained_context(2_000) });
    let (status, body) = json_call(&server, "PUT", "/db/_local/rhizome-context", Some(&bad));
    assert_eq!(status, 400, "{body}");
    assert!(body["reason"].as_str().unwrap().contains("256"), "{body}");
    assert_eq!(json_call(&server, "GET", "/db/_local/rhizome-context", None).0, 404, "nothing was stored");
    // Every kind of write still works, after a restart too.
    assert_alive(&server, "db");
    server.restart();
    assert_alive(&server, "db");
    let (status, body) = json_call(&server, "PUT", "/db/doc", Some(&json!({ "@id": "http://e/s", "http://e/p": 1 })));
    assert_eq!(status, 201, "{body}");
    // Other malformed contexts are refused too; a good one is taken and used.
    for bad in [json!({ "@context": { "a": "b:x", "b": "a:y" } }), json!({ "@context": 42 })] {
        let (status, body) = json_call(&server, "PUT", "/db/_local/rhizome-context", Some(&bad));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, body) = json_call(&server, "PUT", "/db/_local/rhizome-context", Some(&json!({ "@context": chained_context(50) })));
    assert_eq!(status, 201, "{body}");
    let (status, body) = json_call(&server, "PUT", "/db/projected", Some(&json!({ "@id": "http://e/s", "t50": 1 })));
    assert_eq!(status, 201, "{body}");
    assert_eq!(graph_size(&server, "db", "http://localhost:5984/db/projected"), 1);
}

/// `levels` nested `rdf:Description`s, each the object of the one above.
fn nested_rdf_xml(levels: usize) -> String {
    let mut s = String::from(r#"<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:e="http://e/">"#);
    for _ in 0..levels {
        s.push_str("<rdf:Description><e:p>");
    }
    s.push_str("<rdf:Description/>");
    for _ in 0..levels {
        s.push_str("</e:p></rdf:Description>");
    }
    s.push_str("</rdf:RDF>");
    s
}

#[test]
fn deeply_nested_rdf_xml_is_refused_at_its_position_and_replacing_a_nested_graph_works() {
    let (_dir, server) = start();
    let target = "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fnested";
    let r = call(&server, "PUT", target, "application/rdf+xml", nested_rdf_xml(5_000).as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("nest") && r.text().contains("line 1"), "the reason says where: {}", r.text());
    assert_alive(&server, "db");
    // Within the limit: created, then replaced by the same graph.
    let body = nested_rdf_xml(100);
    assert_eq!(call(&server, "PUT", target, "application/rdf+xml", body.as_bytes()).status, 201);
    assert_eq!(call(&server, "PUT", target, "application/rdf+xml", body.as_bytes()).status, 204);
    assert_eq!(graph_size(&server, "db", "http://example.org/nested"), 100);
    // Entities that expand to gigabytes ("billion laughs") are refused
    // before the parser expands them.
    let mut laughs = String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE rdf:RDF [\n<!ENTITY a0 \"lol\">\n");
    for i in 1..12 {
        laughs.push_str(&format!("<!ENTITY a{i} \"{}\">\n", format!("&a{};", i - 1).repeat(10)));
    }
    laughs.push_str("]>\n<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns:e=\"http://e/\"><rdf:Description rdf:about=\"http://e/s\"><e:p>&a11;</e:p></rdf:Description></rdf:RDF>");
    let r = call(&server, "PUT", target, "application/rdf+xml", laughs.as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("entity"), "{}", r.text());
    assert_alive(&server, "db");
}

#[test]
fn deeply_nested_turtle_and_trig_are_refused_at_their_position() {
    let (_dir, server) = start();
    let target = "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fg";
    let collections = format!("<http://e/s> <http://e/p> {}1{} .\n", "(".repeat(200_000), ")".repeat(200_000));
    let blanks = format!("<http://e/s> <http://e/p> {}1{} .\n", "[ <http://e/p> ".repeat(100_000), " ]".repeat(100_000));
    for (content_type, body) in [
        ("text/turtle", collections.clone()),
        ("text/turtle", blanks.clone()),
        ("application/trig", format!("<http://e/g> {{ {collections} }}")),
        ("application/trig", format!("{{ {blanks} }}")),
    ] {
        let r = call(&server, "PUT", target, content_type, body.as_bytes());
        assert_eq!(r.status, 400, "{content_type}: {}", r.text());
        assert!(r.text().contains("nest") && r.text().contains("line 1"), "{content_type}: {}", r.text());
        assert_alive(&server, "db");
    }
    // Brackets inside IRIs, strings and comments are not nesting.
    let quoted = format!("# {}\n<http://e/s> <http://e/p> \"{}\", '''{}''' .\n", "(".repeat(1_000), "[".repeat(1_000), "(".repeat(1_000));
    let r = call(&server, "PUT", target, "text/turtle", quoted.as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    let nested = format!("<http://e/s> <http://e/p> {}1{} .\n", "( ".repeat(100), " )".repeat(100));
    let r = call(&server, "PUT", target, "text/turtle", nested.as_bytes());
    assert_eq!(r.status, 204, "{}", r.text());
}

#[test]
fn a_document_id_that_is_another_documents_graph_iri_is_refused() {
    let (_dir, server) = start();
    let doc1 = json!({ "@id": "http://e/s", "http://e/p": "doc1's value" });
    assert_eq!(json_call(&server, "PUT", "/db/doc1", Some(&doc1)).0, 201);
    let intruder = json!({ "@id": "http://e/s", "http://e/p": "other" , "http://e/q": 2 });
    let iri = "http://localhost:5984/db/doc1";
    let check_doc1_intact = || {
        assert_eq!(graph_size(&server, "db", iri), 1, "doc1's graph is its own");
        assert_eq!(count(&server, "db", &format!("SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{iri}> {{ ?s ?p \"doc1's value\" }} }}")), 1);
    };
    // PUT by id.
    let (status, body) = json_call(&server, "PUT", &format!("/db/{}", encode(iri)), Some(&intruder));
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "conflict");
    assert!(body["reason"].as_str().unwrap().contains("doc1"), "the reason names the other document: {body}");
    // POST, _bulk_docs, and new_edits=false (what a replicator sends).
    let mut with_id = intruder.as_object().unwrap().clone();
    with_id.insert("_id".into(), json!(iri));
    assert_eq!(json_call(&server, "POST", "/db", Some(&Value::Object(with_id.clone()))).0, 409);
    let (status, body) = json_call(&server, "POST", "/db/_bulk_docs", Some(&json!({ "docs": [with_id.clone(), { "_id": "fine" }] })));
    assert_eq!(status, 201, "{body}");
    assert_eq!(body[0]["error"], "conflict", "{body}");
    assert!(body[0]["reason"].as_str().unwrap().contains("doc1"), "{body}");
    assert_eq!(body[1]["ok"], true, "{body}");
    let mut replicated = with_id.clone();
    replicated.insert("_rev".into(), json!("1-0123456789abcdef0123456789abcdef"));
    let (status, body) = json_call(&server, "POST", "/db/_bulk_docs", Some(&json!({ "docs": [replicated], "new_edits": false })));
    assert_eq!(status, 201, "{body}");
    assert_eq!(body[0]["error"], "conflict", "{body}");
    // Other IRIs under the database's prefix too, whether or not their
    // document exists yet, and the database's prefix itself.
    for id in ["http://localhost:5984/db/later", "http://localhost:5984/db/a%2Fb", "http://localhost:5984/db/"] {
        let (status, body) = json_call(&server, "PUT", &format!("/db/{}", encode(id)), Some(&json!({})));
        assert_eq!(status, 409, "{id}: {body}");
    }
    // Another database of this server may not take the id either (it
    // would claim a graph of `db`'s)...
    assert_eq!(json_call(&server, "PUT", "/src", None).0, 201);
    assert_eq!(json_call(&server, "PUT", &format!("/src/{}", encode(iri)), Some(&intruder)).0, 403);
    // ...but on a server with another base IRI it is harmless; replicated
    // from there, it is refused.
    let source_dir = tempfile::tempdir().unwrap();
    let source = ServerProcess::start_with_env(source_dir.path(), &[("RHIZOME_BASE_IRI", "http://source.example")]);
    assert_eq!(json_call(&source, "PUT", "/src", None).0, 201);
    assert_eq!(json_call(&source, "PUT", &format!("/src/{}", encode(iri)), Some(&intruder)).0, 201);
    let url = format!("http://{ADMIN}@127.0.0.1:{}/src", source.port);
    let (status, body) = json_call(&server, "POST", "/_replicate", Some(&json!({ "source": url, "target": "db" })));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["history"][0]["doc_write_failures"], 1, "{body}");
    check_doc1_intact();
    // Absolute IRIs elsewhere are still their own graphs.
    let (status, body) = json_call(&server, "PUT", &format!("/db/{}", encode("http://example.org/thing")), Some(&json!({ "@id": "http://e/s", "http://e/p": 3 })));
    assert_eq!(status, 201, "{body}");
    assert_eq!(graph_size(&server, "db", "http://example.org/thing"), 1);
    assert_alive(&server, "db");
}
