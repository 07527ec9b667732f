//! Graph writes never lose document data, on a real `rhizome serve`:
//! - a SPARQL Update or Graph Store write to a document's graph gives a
//!   revision that keeps the document's `@context`, names, members that are
//!   not RDF and attachments;
//! - in a union database, writes to the default graph (`?default`,
//!   `INSERT`/`DELETE` without `GRAPH`, `CLEAR`/`DROP DEFAULT`) go to the
//!   stored default graph (document `default-graph`) and never delete a
//!   document; `DROP ALL` does, explicitly;
//! - the same through rdflib's `SPARQLUpdateStore` (a real client), when
//!   `scripts/setup` made `tests/python/.venv`.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::{encode, request, Reply};
use serde_json::{json, Value};

const DOC_GRAPH: &str = "http://localhost:5984/db/p";

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(server.port, method, target, Some(ADMIN), headers, body.map(str::as_bytes)).expect("the server answers")
}

fn json_of(r: &Reply) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.text()))
}

fn update(server: &ServerProcess, text: &str) {
    let r = admin(server, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], Some(text));
    assert_eq!(r.status, 200, "{text}: {}", r.text());
}

/// `GET /db/{id}` without `_id`, `_rev` and `_attachments`, and the attachment stubs.
fn document(server: &ServerProcess, id: &str) -> (u16, Value, Value) {
    let r = admin(server, "GET", &format!("/db/{id}"), &[], None);
    if r.status != 200 {
        return (r.status, Value::Null, Value::Null);
    }
    let mut doc = json_of(&r);
    let o = doc.as_object_mut().unwrap();
    o.remove("_id");
    o.remove("_rev");
    let atts = o.remove("_attachments").unwrap_or(Value::Null);
    (200, doc, atts)
}

fn attachment(server: &ServerProcess) -> (u16, String) {
    let r = admin(server, "GET", "/db/p/f.txt", &[], None);
    (r.status, r.text())
}

/// Database `db` with the issue's document `p` and its attachment `f.txt`.
fn server_with_document() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let doc = r#"{"@context":{"name":"http://schema.org/name"},"@id":"http://e/p","name":"P","app_flag":true}"#;
    let r = admin(&server, "PUT", "/db/p", &[("Content-Type", "application/json")], Some(doc));
    assert_eq!(r.status, 201, "{}", r.text());
    let rev = json_of(&r)["rev"].as_str().unwrap().to_owned();
    let r = admin(&server, "PUT", &format!("/db/p/f.txt?rev={rev}"), &[("Content-Type", "text/plain")], Some("hello"));
    assert_eq!(r.status, 201, "{}", r.text());
    (dir, server)
}

fn n_triples(server: &ServerProcess, target: &str) -> Vec<String> {
    let r = admin(server, "GET", target, &[("Accept", "application/n-triples")], None);
    assert_eq!(r.status, 200, "{target}: {}", r.text());
    let mut lines: Vec<String> = r.text().lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn sparql_insert_into_a_document_graph_keeps_context_members_and_attachment() {
    let (_dir, server) = server_with_document();
    update(&server, &format!(r#"INSERT DATA {{ GRAPH <{DOC_GRAPH}> {{ <http://e/p> <http://schema.org/email> "e" }} }}"#));
    let (status, doc, atts) = document(&server, "p");
    assert_eq!(status, 200);
    assert_eq!(
        doc,
        json!({"@context": {"name": "http://schema.org/name"}, "@id": "http://e/p", "name": "P", "http://schema.org/email": "e", "app_flag": true})
    );
    assert_eq!(atts["f.txt"]["stub"], true, "{atts}");
    assert_eq!(attachment(&server), (200, "hello".to_owned()));
    assert_eq!(
        n_triples(&server, &format!("/db/_graph?graph={}", encode(DOC_GRAPH))),
        vec!["<http://e/p> <http://schema.org/email> \"e\" .".to_owned(), "<http://e/p> <http://schema.org/name> \"P\" .".to_owned()]
    );
}

#[test]
fn graph_store_put_post_and_delete_of_a_document_graph_keep_its_attachment() {
    let (_dir, server) = server_with_document();
    let target = format!("/db/_graph?graph={}", encode(DOC_GRAPH));
    let turtle = [("Content-Type", "text/turtle")];
    let r = admin(&server, "PUT", &target, &turtle, Some(r#"<http://e/p> <http://schema.org/name> "Q" ."#));
    assert_eq!(r.status, 204, "{}", r.text());
    let (_, doc, _) = document(&server, "p");
    assert_eq!(doc, json!({"@context": {"name": "http://schema.org/name"}, "@id": "http://e/p", "name": "Q", "app_flag": true}));
    assert_eq!(attachment(&server), (200, "hello".to_owned()));

    let r = admin(&server, "POST", &target, &turtle, Some(r#"<http://e/p> <http://schema.org/name> "R" ."#));
    assert_eq!(r.status, 204, "{}", r.text());
    let (_, doc, _) = document(&server, "p");
    assert_eq!(doc, json!({"@context": {"name": "http://schema.org/name"}, "@id": "http://e/p", "name": ["Q", "R"], "app_flag": true}));
    assert_eq!(attachment(&server), (200, "hello".to_owned()));

    // Deleting the graph removes the RDF; the member that is not RDF and
    // the attachment stay, so the document does.
    assert_eq!(admin(&server, "DELETE", &target, &[], None).status, 204);
    let (status, doc, atts) = document(&server, "p");
    assert_eq!(status, 200);
    assert_eq!(doc, json!({"@context": {"name": "http://schema.org/name"}, "app_flag": true}));
    assert_eq!(atts["f.txt"]["stub"], true);
    assert_eq!(attachment(&server), (200, "hello".to_owned()));
    assert_eq!(admin(&server, "GET", &target, &[], None).status, 404);
}

#[test]
fn default_graph_writes_in_a_union_database_never_delete_documents() {
    let (_dir, server) = server_with_document();
    let p_triples = vec!["<http://e/p> <http://schema.org/name> \"P\" .".to_owned()];
    let p_is_whole = |server: &ServerProcess| {
        let (status, doc, _) = document(server, "p");
        assert_eq!(status, 200, "document p is gone");
        assert_eq!(doc, json!({"@context": {"name": "http://schema.org/name"}, "@id": "http://e/p", "name": "P", "app_flag": true}));
        assert_eq!(attachment(server), (200, "hello".to_owned()));
        assert_eq!(n_triples(server, &format!("/db/_graph?graph={}", encode(DOC_GRAPH))), p_triples);
    };
    let turtle = [("Content-Type", "text/turtle")];

    // Graph Store: PUT ?default (what Jena's RDFConnection.put(model) sends).
    let r = admin(&server, "PUT", "/db/_graph?default", &turtle, Some("<http://e/x> <http://e/y> 1 ."));
    assert_eq!(r.status, 204, "{}", r.text());
    p_is_whole(&server);
    // The stored default graph is a document of its own; reads of the
    // default graph are the union.
    let (status, stored, _) = document(&server, "default-graph");
    assert_eq!(status, 200);
    assert!(stored.to_string().contains("http://e/x"), "{stored}");
    let union = n_triples(&server, "/db/_graph?default");
    assert_eq!(union, vec!["<http://e/p> <http://schema.org/name> \"P\" .".to_owned(), "<http://e/x> <http://e/y> \"1\"^^<http://www.w3.org/2001/XMLSchema#integer> .".to_owned()]);
    // PUT replaces the stored default graph only.
    let r = admin(&server, "PUT", "/db/_graph?default", &turtle, Some("<http://e/x> <http://e/y> 2 ."));
    assert_eq!(r.status, 204);
    assert_eq!(n_triples(&server, "/db/_graph?default").len(), 2);
    p_is_whole(&server);
    // POST adds to it.
    assert_eq!(admin(&server, "POST", "/db/_graph?default", &turtle, Some("<http://e/x> <http://e/y> 3 .")).status, 204);
    assert_eq!(n_triples(&server, "/db/_graph?default").len(), 3);
    // DELETE ?default clears it and nothing else.
    assert_eq!(admin(&server, "DELETE", "/db/_graph?default", &[], None).status, 204);
    p_is_whole(&server);
    assert_eq!(n_triples(&server, "/db/_graph?default"), p_triples);
    assert_eq!(document(&server, "default-graph").0, 404);

    // SPARQL: INSERT DATA without GRAPH goes to the stored default graph.
    update(&server, "INSERT DATA { <http://e/x> <http://e/y> 4 }");
    assert_eq!(document(&server, "default-graph").0, 200);
    assert_eq!(document(&server, "http://e/x").0, 404, "not a document of the subject");
    // DELETE DATA without GRAPH removes only from the stored default graph:
    // p's triple, shown in the union, stays.
    update(&server, r#"DELETE DATA { <http://e/p> <http://schema.org/name> "P" }"#);
    p_is_whole(&server);
    // DELETE WHERE over the union removes from the stored default graph.
    update(&server, "DELETE WHERE { ?s ?p ?o }");
    p_is_whole(&server);
    assert_eq!(n_triples(&server, "/db/_graph?default"), p_triples);
    for op in ["CLEAR DEFAULT", "DROP DEFAULT"] {
        update(&server, "INSERT DATA { <http://e/x> <http://e/y> 5 }");
        update(&server, op);
        p_is_whole(&server);
        assert_eq!(n_triples(&server, "/db/_graph?default"), p_triples, "{op}");
    }
    // NAMED is every document's graph (not the stored default graph), and
    // ALL is everything: they delete the documents, as asked.
    update(&server, "INSERT DATA { <http://e/x> <http://e/y> 6 }");
    update(&server, "CLEAR NAMED");
    assert_eq!(document(&server, "p").0, 404);
    assert_eq!(document(&server, "default-graph").0, 200);
    update(&server, "DROP ALL");
    assert_eq!(document(&server, "default-graph").0, 404);
    assert_eq!(n_triples(&server, "/db/_graph?default"), Vec::<String>::new());
}

#[test]
fn drop_all_deletes_documents_written_through_the_couchdb_api() {
    let (_dir, server) = server_with_document();
    update(&server, "DROP ALL");
    assert_eq!(document(&server, "p").0, 404);
    assert_eq!(attachment(&server).0, 404);
}

/// rdflib's `SPARQLUpdateStore` against the live server: a real client's
/// update to a document's graph keeps the document, and its `clear` of the
/// default graph (`CLEAR DEFAULT`) deletes no document. Needs
/// `tests/python/.venv` with rdflib (made by `scripts/setup`).
#[test]
fn rdflib_writes_keep_documents() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("tests/python/.venv/bin/python3");
    assert!(python.exists(), "run scripts/setup first: {} is missing", python.display());
    let (_dir, server) = server_with_document();
    let script = root.join("tests/python/rdflib_graph_writes.py");
    let out = std::process::Command::new(&python)
        .arg(&script)
        .arg(format!("http://127.0.0.1:{}/db/_sparql", server.port))
        .arg(DOC_GRAPH)
        .env("RHIZOME_CREDENTIALS", ADMIN)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "rdflib script failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let (status, doc, atts) = document(&server, "p");
    assert_eq!(status, 200);
    assert_eq!(
        doc,
        json!({"@context": {"name": "http://schema.org/name"}, "@id": "http://e/p", "name": "P", "http://schema.org/email": "e@rdflib", "app_flag": true})
    );
    assert_eq!(atts["f.txt"]["stub"], true);
    assert_eq!(attachment(&server), (200, "hello".to_owned()));
}
