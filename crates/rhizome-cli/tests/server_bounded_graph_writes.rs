//! Graph writes within a documented size (issue 44, point 4): a write
//! holds every triple it makes until its commit, so each door refuses a
//! write past `MAX_DOCUMENT_TRIPLES` (100,000 triples) before it holds
//! them, and a JSON-LD document past `MAX_DOCUMENT_JSON_VALUES` (200,000
//! values) before it is expanded. Before, a 1.2 MB JSON-LD document with a
//! 600,000-item list grew the server by 0.8-2.6 GB, and every door took
//! any number of triples.
//!
//! The server's resident memory is sampled (/proc) and the server killed
//! the moment it passes its cap.

mod common;

use common::attacks::{list_document, ntriples};
use common::process::{peak_rss_while, rss_bytes};
use common::server::{try_request, ServerProcess, ADMIN};

const MIB: u64 = 1 << 20;
/// Memory the server may grow by while it takes or refuses a write.
const GROWTH_CAP: u64 = 384 * MIB;

fn send(server: &ServerProcess, method: &str, path: &str, content_type: &str, body: &str) -> (u16, String) {
    try_request(server.port, method, path, Some(ADMIN), Some(body), &[("Content-Type", content_type)]).expect("the server answers")
}

#[test]
fn a_json_ld_document_with_a_list_of_600000_items_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    let base = rss_bytes(server.child.id());
    let ((status, body), peak) = peak_rss_while(server.child.id(), base + GROWTH_CAP, || send(&server, "PUT", "/db/big", "application/json", &list_document(600_000)));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("200000 JSON values"), "{body}");
    eprintln!("600,000 items refused: peak {} MiB over {} MiB", peak / MIB, base / MIB);
    // Within the bound, a document's list is taken.
    let base = rss_bytes(server.child.id());
    let ((status, body), peak) = peak_rss_while(server.child.id(), base + GROWTH_CAP, || send(&server, "PUT", "/db/fits", "application/json", &list_document(45_000)));
    assert_eq!(status, 201, "{body}");
    eprintln!("45,000 items (90,001 triples) written: peak {} MiB over {} MiB", peak / MIB, base / MIB);
    let (status, body) = send(&server, "POST", "/db/_sparql", "application/sparql-query", "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> ?o } }");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"45000\""), "{body}");
}

#[test]
fn graph_store_sparql_update_and_ldp_refuse_writes_past_100000_triples() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    let many = ntriples(100_001);
    let base = rss_bytes(server.child.id());
    let ((), peak) = peak_rss_while(server.child.id(), base + GROWTH_CAP, || {
        let (status, body) = send(&server, "PUT", "/db/_graph?graph=http://e/g", "application/n-triples", &many);
        assert_eq!(status, 413, "Graph Store: {body}");
        let (status, body) = send(&server, "POST", "/db/_sparql", "application/sparql-update", &format!("INSERT DATA {{ GRAPH <http://e/g> {{ {many} }} }}"));
        assert_eq!(status, 400, "SPARQL Update: {body}");
        assert!(body.contains("100000 quads"), "{body}");
        let (status, body) = send(&server, "PUT", "/db/_ldp/r", "text/turtle", &many);
        assert_eq!(status, 413, "LDP: {body}");
    });
    eprintln!("100,001 triples refused by three doors: peak {} MiB over {} MiB", peak / MIB, base / MIB);
    // Nothing was written, and a write within the bound is taken.
    let (status, body) = send(&server, "POST", "/db/_sparql", "application/sparql-query", "ASK { GRAPH ?g { ?s ?p ?o } }");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("false"), "{body}");
    let (status, body) = send(&server, "PUT", "/db/_graph?graph=http://e/g", "application/n-triples", &ntriples(1_000));
    assert!(status == 201 || status == 204, "{status} {body}");
}
