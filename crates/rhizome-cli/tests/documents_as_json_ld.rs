//! A document and its graph read as one thing, on a real `rhizome serve`:
//! - `GET /{db}/{doc}` with `Accept: application/ld+json` answers
//!   `application/ld+json` whose JSON-LD is exactly the document's graph
//!   (CouchDB's members mapped to null, relative IRIs against the graph
//!   IRI, the database's default context carried), checked with rdflib;
//!   CouchDB clients still get `application/json` as stored;
//! - RDF loaded in bulk with blank nodes: the blank nodes' triples are in
//!   the document of the subject that references them, so its GET and its
//!   replication carry them; blank nodes nothing references are in the
//!   stored default graph (document `default-graph`);
//! - a bulk load into a database with `validate_doc_update` functions is
//!   refused (it cannot run them) unless the user says `--skip-validation`.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use common::{output_ok, rhizome};
use rdf_support::client::{encode, request, Reply};
use serde_json::{json, Value};

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(server.port, method, target, Some(ADMIN), headers, body.map(str::as_bytes)).expect("the server answers")
}

fn json_of(r: &Reply) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.text()))
}

fn n_triples(server: &ServerProcess, db: &str, graph: &str) -> Vec<String> {
    let r = admin(server, "GET", &format!("/{db}/_graph?graph={}", encode(graph)), &[("Accept", "application/n-triples")], None);
    assert_eq!(r.status, 200, "{graph}: {}", r.text());
    let mut lines: Vec<String> = r.text().lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    lines.sort();
    lines
}

/// Blank node labels replaced by `_:b`, so graphs compare by shape.
fn without_labels(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .map(|l| l.split(' ').map(|w| if w.starts_with("_:") { "_:b" } else { w }).collect::<Vec<_>>().join(" "))
        .collect();
    out.sort();
    out
}

const DOC: &str = r#"{"@context":{"@vocab":"http://schema.org/","knows":{"@type":"@id"}},"@id":"people/p","name":"P","knows":"q","app_flag":true}"#;

#[test]
fn json_ld_is_asked_for_and_couchdb_members_are_no_triples() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let r = admin(&server, "PUT", "/db/p", &[("Content-Type", "application/json")], Some(DOC));
    assert_eq!(r.status, 201, "{}", r.text());
    let rev = json_of(&r)["rev"].as_str().unwrap().to_owned();
    let r = admin(&server, "PUT", &format!("/db/p/f.txt?rev={rev}"), &[("Content-Type", "text/plain")], Some("hello"));
    assert_eq!(r.status, 201, "{}", r.text());

    // CouchDB clients: the document as stored.
    for accept in [None, Some("application/json"), Some("*/*"), Some("application/ld+json;q=0.5, application/json")] {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let r = admin(&server, "GET", "/db/p", &headers, None);
        assert_eq!(r.media_type(), "application/json", "{accept:?}");
        let doc = json_of(&r);
        assert_eq!(doc["@context"], json!({"@vocab": "http://schema.org/", "knows": {"@type": "@id"}}));
        assert_eq!(doc["_attachments"]["f.txt"]["stub"], true);
    }
    // JSON-LD processors: the same members, a context that makes them read
    // the document's graph and nothing else.
    // (An RDF syntax ranked first gets the document's graph in it:
    // clients.rs checks Turtle; a type that cannot be made is passed over.)
    for accept in ["application/ld+json", "application/ld+json, application/json;q=0.9", "image/png, application/ld+json;q=0.9, application/json;q=0.4", "application/ld+json, application/json"] {
        let r = admin(&server, "GET", "/db/p", &[("Accept", accept)], None);
        assert_eq!(r.status, 200);
        assert_eq!(r.media_type(), "application/ld+json", "{accept}");
        assert_eq!(r.header("vary"), Some("Accept"));
        let doc = json_of(&r);
        assert_eq!(doc["name"], "P");
        assert_eq!(doc["_id"], "p");
        let context = doc["@context"].as_array().unwrap_or_else(|| panic!("{doc}"));
        assert_eq!(context[0], json!({"@base": "http://localhost:5984/db/p"}));
        assert_eq!(context[1], json!({"@vocab": "http://schema.org/", "knows": {"@type": "@id"}}));
        assert_eq!(context[2], json!({"_id": null, "_rev": null, "_attachments": null}));
    }
}

/// `tests/python/.venv` with rdflib (made by `scripts/setup`).
#[test]
fn rdflib_reads_a_document_url_as_exactly_its_graph() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("tests/python/.venv/bin/python3");
    assert!(python.exists(), "run scripts/setup first: {} is missing", python.display());
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let r = admin(&server, "PUT", "/db/p", &[("Content-Type", "application/json")], Some(DOC));
    assert_eq!(r.status, 201, "{}", r.text());
    // A document without a context of its own uses the database's default
    // context; nested nodes become blank nodes.
    let r = admin(&server, "PUT", "/db/_local/rhizome-context", &[], Some(r#"{"@context":{"@vocab":"http://example.org/v#","tags":{"@container":"@list"}}}"#));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin(&server, "PUT", "/db/d", &[], Some(r##"{"@id":"#me","label":"D","address":{"street":"Main","n":3},"tags":["x","y"],"flag":false}"##));
    assert_eq!(r.status, 201, "{}", r.text());
    // A document loaded as RDF renders from its quads.
    let r = admin(&server, "PUT", &format!("/db/_graph?graph={}", encode("http://e/r")), &[("Content-Type", "text/turtle")], Some(r#"<http://e/r> <http://e/p> [ <http://e/q> "1"@en ] ."#));
    assert_eq!(r.status, 201, "{}", r.text());
    for (id, graph) in [("p", "http://localhost:5984/db/p"), ("d", "http://localhost:5984/db/d"), ("http:%2F%2Fe%2Fr", "http://e/r")] {
        assert!(!n_triples(&server, "db", graph).is_empty(), "{graph} has triples");
        let out = std::process::Command::new(&python)
            .arg(root.join("tests/python/rdflib_json_ld_source.py"))
            .arg(format!("http://127.0.0.1:{}/db/{id}", server.port))
            .arg(format!("http://127.0.0.1:{}/db/_graph?graph={}", server.port, encode(graph)))
            .env("RHIZOME_CREDENTIALS", ADMIN)
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "{id}: rdflib script failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn bulk_loaded_blank_nodes_belong_to_the_document_that_references_them() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = dir.path().join("people.ttl");
    std::fs::write(
        &ttl,
        r#"@prefix s: <http://schema.org/> .
<http://e/alice> s:name "Alice" ;
    s:address [ s:street "Main" ; s:geo [ s:latitude 1.5 ] ] ;
    s:award ( "first" [ s:name "second" ] ) .
_:lonely s:name "nobody's" .
"#,
    )
    .unwrap();
    let data = dir.path().join("server");
    let out = output_ok(rhizome(&data).args(["load", "--quiet", "--db", "people"]).arg(&ttl));
    assert!(out.contains("2 new documents"), "alice and default-graph: {out}");
    let server = ServerProcess::start(&data);

    let alice = n_triples(&server, "people", "http://e/alice");
    assert_eq!(alice.len(), 11, "name, address (3), geo (2), list (4 + the reference), award's name: {alice:#?}");
    assert!(alice.iter().any(|t| t.contains("\"Main\"")) && alice.iter().any(|t| t.contains("\"second\"")), "{alice:#?}");
    let default = n_triples(&server, "people", "http://localhost:5984/people/default-graph");
    assert_eq!(without_labels(&default), vec!["_:b <http://schema.org/name> \"nobody's\" ."]);
    // No graph outside every document.
    let r = admin(&server, "POST", "/people/_sparql", &[("Content-Type", "application/sparql-query"), ("Accept", "application/sparql-results+json")], Some("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"));
    let graphs: Vec<String> = json_of(&r)["results"]["bindings"].as_array().unwrap().iter().map(|b| b["g"]["value"].as_str().unwrap().to_owned()).collect();
    assert_eq!(graphs, vec!["http://e/alice", "http://localhost:5984/people/default-graph"]);

    // The document carries them: its body, and a replica made from it.
    let r = admin(&server, "GET", "/people/http:%2F%2Fe%2Falice", &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("Main") && r.text().contains("second"), "{}", r.text());
    let r = admin(&server, "POST", "/_replicate", &[("Content-Type", "application/json")], Some(r#"{"source":"people","target":"copy","create_target":true}"#));
    assert_eq!(r.status, 200, "{}", r.text());
    let copied = n_triples(&server, "copy", "http://e/alice");
    assert_eq!(without_labels(&copied), without_labels(&alice));
}

#[test]
fn bulk_load_refuses_a_database_with_validation_functions_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = dir.path().join("people.ttl");
    std::fs::write(&ttl, "<http://e/bob> <http://schema.org/name> \"Bob\" .\n").unwrap();
    let data = dir.path().join("server");
    {
        let server = ServerProcess::start(&data);
        assert_eq!(admin(&server, "PUT", "/people", &[], None).status, 201);
        let vdu = r#"{"validate_doc_update":"function(newDoc) { if (!newDoc.kind) throw({forbidden: 'a kind is needed'}); }"}"#;
        let r = admin(&server, "PUT", "/people/_design/rules", &[], Some(vdu));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let refused = common::run(rhizome(&data).args(["load", "--quiet", "--db", "people"]).arg(&ttl));
    assert!(!refused.status.success(), "a load past the database's rules succeeded");
    let err = common::stderr(&refused);
    assert!(err.contains("_design/rules") && err.contains("--skip-validation"), "names the design document and the way out: {err}");
    let server = ServerProcess::start(&data);
    assert_eq!(admin(&server, "GET", "/people/http:%2F%2Fe%2Fbob", &[], None).status, 404, "nothing was loaded");
    drop(server);

    let out = output_ok(rhizome(&data).args(["load", "--quiet", "--skip-validation", "--db", "people"]).arg(&ttl));
    assert!(out.contains("1 new documents"), "{out}");
    let server = ServerProcess::start(&data);
    assert_eq!(admin(&server, "GET", "/people/http:%2F%2Fe%2Fbob", &[], None).status, 200);
}
