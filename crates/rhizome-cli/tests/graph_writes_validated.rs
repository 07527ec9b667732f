//! A database's `validate_doc_update` functions bind every door that writes
//! its documents, on a real `rhizome serve`: SPARQL Update, the Graph Store
//! Protocol and LDP, as well as CouchDB's API (`server_views.rs`). Each
//! document revision a graph write makes is shown to the functions as a
//! read will give it (a graph-bodied document as its `@graph`); one refusal
//! refuses the whole write, and nothing of it is committed.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::{encode, request, Reply};
use serde_json::Value;

const GRAPHS: &str = "http://localhost:5984/db/";
const TURTLE: (&str, &str) = ("Content-Type", "text/turtle");
const UPDATE: (&str, &str) = ("Content-Type", "application/sparql-update");

fn call(server: &ServerProcess, auth: &str, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(server.port, method, target, Some(auth), headers, body.map(str::as_bytes)).expect("the server answers")
}

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    call(server, ADMIN, method, target, headers, body)
}

fn ask(server: &ServerProcess, query: &str) -> bool {
    let r = admin(server, "GET", &format!("/db/_sparql?query={}", encode(query)), &[("Accept", "application/sparql-results+json")], None);
    assert_eq!(r.status, 200, "{}", r.text());
    serde_json::from_slice::<Value>(&r.body).unwrap()["boolean"].as_bool().unwrap()
}

/// Database `db` whose design document refuses any document mentioning
/// `http://ex/secret`, and writes by anyone but admins and `writer`s.
fn guarded_server() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let ddoc = r#"{"validate_doc_update": "function (newDoc, oldDoc, userCtx) { if (newDoc._deleted) return; if (JSON.stringify(newDoc).indexOf('http://ex/secret') >= 0) throw({forbidden: 'no secrets'}); if (userCtx.roles.indexOf('_admin') < 0 && userCtx.roles.indexOf('writer') < 0) throw({unauthorized: 'writers only'}); }"}"#;
    let r = admin(&server, "PUT", "/db/_design/guard", &[("Content-Type", "application/json")], Some(ddoc));
    assert_eq!(r.status, 201, "{}", r.text());
    (dir, server)
}

#[test]
fn sparql_updates_are_validated_as_a_whole() {
    let (_dir, server) = guarded_server();
    let ok = format!(r#"INSERT DATA {{ GRAPH <{GRAPHS}g1> {{ <{GRAPHS}g1> <http://ex/p> "fine" }} }}"#);
    let r = admin(&server, "POST", "/db/_sparql", &[UPDATE], Some(&ok));
    assert_eq!(r.status, 200, "{}", r.text());
    // The function saw the document as a read gives it: its graph.
    let r = admin(&server, "GET", "/db/g1", &[], None);
    assert_eq!(r.status, 200);
    assert!(r.text().contains("http://ex/p"), "{}", r.text());

    // Two graphs in one update, one refused: neither is written.
    let bad = format!(r#"INSERT DATA {{ GRAPH <{GRAPHS}g1> {{ <{GRAPHS}g1> <http://ex/p> "more" }} GRAPH <{GRAPHS}g2> {{ <{GRAPHS}g2> <http://ex/secret> "x" }} }}"#);
    let r = admin(&server, "POST", "/db/_sparql", &[UPDATE], Some(&bad));
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("no secrets"), "{}", r.text());
    assert!(!ask(&server, r#"ASK { GRAPH ?g { ?s ?p "more" } }"#));
    assert!(!ask(&server, "ASK { GRAPH ?g { ?s <http://ex/secret> ?o } }"));
    assert_eq!(admin(&server, "GET", "/db/g2", &[], None).status, 404);

    // A change to a document written through CouchDB's API: the function
    // sees its JSON body with the change.
    let doc = r#"{"@context": {"name": "http://schema.org/name"}, "name": "P"}"#;
    assert_eq!(admin(&server, "PUT", "/db/p", &[("Content-Type", "application/json")], Some(doc)).status, 201);
    let bad = format!(r#"INSERT DATA {{ GRAPH <{GRAPHS}p> {{ <{GRAPHS}p> <http://ex/secret> "x" }} }}"#);
    assert_eq!(admin(&server, "POST", "/db/_sparql", &[UPDATE], Some(&bad)).status, 403);
    assert!(!admin(&server, "GET", "/db/p", &[], None).text().contains("secret"));

    // userCtx is the request's user.
    let user = r#"{"name": "bob", "password": "pw", "roles": [], "type": "user"}"#;
    assert_eq!(admin(&server, "PUT", "/_users/org.couchdb.user:bob", &[("Content-Type", "application/json")], Some(user)).status, 201);
    let members = r#"{"members": {"names": ["bob"]}}"#;
    assert_eq!(admin(&server, "PUT", "/db/_security", &[("Content-Type", "application/json")], Some(members)).status, 200);
    let r = call(&server, "bob:pw", "POST", "/db/_sparql", &[UPDATE], Some(&ok.replace("g1", "g3")));
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.text().contains("writers only"), "{}", r.text());
    assert_eq!(admin(&server, "GET", "/db/g3", &[], None).status, 404);
    // Bob may still read.
    assert_eq!(call(&server, "bob:pw", "GET", "/db/g1", &[], None).status, 200);
}

#[test]
fn graph_store_and_ldp_writes_are_validated() {
    let (_dir, server) = guarded_server();
    let target = format!("/db/_graph?graph={}", encode(&format!("{GRAPHS}g4")));
    let r = admin(&server, "PUT", &target, &[TURTLE], Some(&format!(r#"<{GRAPHS}g4> <http://ex/secret> "x" ."#)));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(admin(&server, "GET", "/db/g4", &[], None).status, 404);
    let r = admin(&server, "PUT", &target, &[TURTLE], Some(&format!(r#"<{GRAPHS}g4> <http://ex/p> "fine" ."#)));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin(&server, "POST", &target, &[TURTLE], Some(&format!(r#"<{GRAPHS}g4> <http://ex/secret> "y" ."#)));
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(!ask(&server, "ASK { GRAPH ?g { ?s <http://ex/secret> ?o } }"));

    let r = admin(&server, "PUT", "/db/_ldp/r1", &[TURTLE], Some(r#"<> <http://ex/secret> "x" ."#));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(admin(&server, "GET", "/db/_ldp/r1", &[], None).status, 404);
    let r = admin(&server, "PUT", "/db/_ldp/r1", &[TURTLE], Some(r#"<> <http://ex/p> "fine" ."#));
    assert_eq!(r.status, 201, "{}", r.text());
    let etag = admin(&server, "GET", "/db/_ldp/r1", &[], None);
    assert_eq!(etag.status, 200);
    let r = admin(&server, "PUT", "/db/_ldp/r1", &[TURTLE], Some(r#"<> <http://ex/secret> "again" ."#));
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(!admin(&server, "GET", "/db/_ldp/r1", &[("Accept", "text/turtle")], None).text().contains("secret"));
}
