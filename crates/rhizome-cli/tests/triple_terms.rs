//! RDF 1.2 triple terms and base directions through the command line and
//! a real `rhizome serve`: loaded, written by SPARQL Update and the Graph
//! Store, matched by SPARQL 1.2 triple term patterns, and given back in
//! every results format (SPARQL 1.2's JSON `"type": "triple"`, XML
//! `<triple>`, TSV `<<( s p o )>>`) and every RDF syntax.

#![cfg(feature = "rocksdb")]

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use common::{output_ok, rhizome};
use oxrdf::graph::CanonicalizationAlgorithm;
use oxrdf::{Graph, Triple};
use oxrdfio::{RdfFormat, RdfParser};
use rdf_support::client::{encode, request, Reply};
use serde_json::Value;

const TURTLE: &str = r#"PREFIX : <http://example.org/>
VERSION "1.2"
:alice :says :bob {| :since 2020 ; :confidence 0.9 |} .
:carol :said <<( :bob :knows "Dana"@en--rtl )>> .
"#;

const SAID: &str = r#"PREFIX : <http://example.org/>
SELECT ?who ?s ?name WHERE { ?who :said <<( ?s :knows ?name )>> }"#;

/// The triples of RDF text, whatever their graphs (a store in the
/// document model puts each subject's triples in its own graph).
fn triples(bytes: &[u8], format: RdfFormat) -> Graph {
    let mut g: Graph = RdfParser::from_format(format)
        .for_slice(bytes)
        .map(|q| Triple::from(q.unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))))
        .collect();
    g.canonicalize(CanonicalizationAlgorithm::Unstable);
    g
}

#[test]
fn the_command_line_loads_queries_updates_and_dumps_triple_terms() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let file = dir.path().join("claims.ttl");
    std::fs::write(&file, TURTLE).unwrap();
    output_ok(rhizome(&data).arg("load").arg(&file));

    // The annotation's reifier, found through the triple term it reifies.
    let q = "PREFIX : <http://example.org/> SELECT ?since WHERE { ?r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( :alice :says :bob )>> ; :since ?since }";
    let csv = output_ok(rhizome(&data).args(["query", q, "--format", "csv"]));
    assert_eq!(csv.replace("\r\n", "\n"), "since\n2020\n");
    let tsv = output_ok(rhizome(&data).args(["query", SAID, "--format", "tsv"]));
    assert_eq!(tsv, "?who\t?s\t?name\n<http://example.org/carol>\t<http://example.org/bob>\t\"Dana\"@en--rtl\n");

    output_ok(rhizome(&data).args(["update", "PREFIX : <http://example.org/> INSERT DATA { :erin :said <<( :alice :knows <<( :bob :knows :carol )>> )>> }"]));
    let q = "PREFIX : <http://example.org/> SELECT ?t WHERE { :erin :said ?t FILTER(isTRIPLE(?t) && isTRIPLE(OBJECT(?t))) }";
    let tsv = output_ok(rhizome(&data).args(["query", q, "--format", "tsv"]));
    assert_eq!(
        tsv,
        "?t\n<<( <http://example.org/alice> <http://example.org/knows> <<( <http://example.org/bob> <http://example.org/knows> <http://example.org/carol> )>> )>>\n"
    );

    let dumped = output_ok(rhizome(&data).args(["dump", "--format", "nquads"]));
    let mut expected = TURTLE.to_owned();
    expected.push_str(":erin :said <<( :alice :knows <<( :bob :knows :carol )>> )>> .\n");
    assert_eq!(triples(dumped.as_bytes(), RdfFormat::NQuads), triples(expected.as_bytes(), RdfFormat::Turtle));

    // JSON-LD cannot hold a triple term: a clear refusal, said once.
    let out = common::run(rhizome(&data).args(["dump", "--format", "jsonld"]));
    assert!(!out.status.success());
    let err = common::stderr(&out);
    assert!(err.contains("cannot write JSON-LD: "), "{err}");
    assert_eq!(err.matches("RDF 1.2").count(), 1, "{err}");
}

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(server.port, method, target, Some(ADMIN), headers, body.map(str::as_bytes)).expect("the server answers")
}

fn select(server: &ServerProcess, query: &str, accept: &str) -> Reply {
    let r = admin(server, "GET", &format!("/db/_sparql?query={}", encode(query)), &[("Accept", accept)], None);
    assert_eq!(r.status, 200, "{accept}: {}", r.text());
    r
}

#[test]
fn the_server_writes_matches_and_answers_triple_terms_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let graph = "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fclaims";
    let r = admin(&server, "PUT", graph, &[("Content-Type", "text/turtle")], Some(TURTLE));
    assert_eq!(r.status, 201, "{}", r.text());

    let json: Value = serde_json::from_slice(&select(&server, SAID, "application/sparql-results+json").body).unwrap();
    let row = &json["results"]["bindings"][0];
    assert_eq!(row["who"]["value"], "http://example.org/carol");
    assert_eq!(row["name"], serde_json::json!({"type": "literal", "value": "Dana", "xml:lang": "en", "its:dir": "rtl"}));
    let q = "PREFIX : <http://example.org/> SELECT ?t WHERE { :carol :said ?t }";
    let json: Value = serde_json::from_slice(&select(&server, q, "application/sparql-results+json").body).unwrap();
    let t = &json["results"]["bindings"][0]["t"];
    assert_eq!(t["type"], "triple", "{json}");
    assert_eq!(t["value"]["subject"], serde_json::json!({"type": "uri", "value": "http://example.org/bob"}));
    assert_eq!(t["value"]["object"]["value"], "Dana");
    let xml = select(&server, q, "application/sparql-results+xml").text();
    assert!(xml.contains("<triple><subject><uri>http://example.org/bob</uri></subject>"), "{xml}");
    let tsv = select(&server, q, "text/tab-separated-values").text();
    assert_eq!(tsv, "?t\n<<( <http://example.org/bob> <http://example.org/knows> \"Dana\"@en--rtl )>>\n");
    let csv = select(&server, q, "text/csv").text();
    assert!(csv.starts_with("t\r\nhttp://example.org/bob http://example.org/knows Dana"), "{csv}");

    // SPARQL Update over the same graph, then the Graph Store gives it all back.
    let update = "PREFIX : <http://example.org/> INSERT { GRAPH :claims { ?r :checked true } } WHERE { GRAPH :claims { ?r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( :alice :says ?whom )>> } }";
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], Some(update));
    assert!(r.status == 200 || r.status == 204, "{}", r.text());
    for accept in ["text/turtle", "application/n-triples"] {
        let r = admin(&server, "GET", graph, &[("Accept", accept)], None);
        assert_eq!(r.status, 200, "{}", r.text());
        let format = RdfFormat::from_media_type(accept).unwrap();
        let got = triples(&r.body, format);
        // The reifier the annotation made is one blank node: checked, with its date.
        let checked = got.iter().filter(|t| t.predicate.as_str() == "http://example.org/checked").count();
        assert_eq!(checked, 1, "{}", r.text());
        assert!(r.text().contains("<<("), "{accept}: {}", r.text());
    }
}

/// The graph IRI of document `id` of database `db` (the tests' base IRI).
fn doc_graph(db: &str, id: &str) -> String {
    format!("/{db}/_graph?graph={}", encode(&format!("http://localhost:5984/{db}/{id}")))
}

fn graph_triples(server: &ServerProcess, target: &str) -> Graph {
    let r = admin(server, "GET", target, &[("Accept", "application/n-triples")], None);
    assert_eq!(r.status, 200, "{target}: {}", r.text());
    triples(&r.body, RdfFormat::NTriples)
}

#[test]
fn a_document_holding_triple_terms_keeps_them_through_the_couchdb_door_couchdb_and_replication() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let r = admin(&server, "PUT", &doc_graph("db", "claims"), &[("Content-Type", "text/turtle")], Some(TURTLE));
    assert_eq!(r.status, 201, "{}", r.text());
    let written = graph_triples(&server, &doc_graph("db", "claims"));
    assert_eq!(written, triples(TURTLE.as_bytes(), RdfFormat::Turtle));

    // The body shows the triple term as an embedded node, the direction as @direction.
    let r = admin(&server, "GET", "/db/claims", &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    let carol = body["@graph"].as_array().unwrap().iter().find(|n| n["@id"] == "http://example.org/carol").expect("carol's node").clone();
    assert_eq!(
        carol["http://example.org/said"],
        serde_json::json!([{"@id": {"@id": "http://example.org/bob", "http://example.org/knows": [{"@language": "en", "@direction": "rtl", "@value": "Dana"}]}}])
    );

    // Written back unchanged through the CouchDB API: the same graph.
    let r = admin(&server, "PUT", "/db/claims", &[("Content-Type", "application/json")], Some(&body.to_string()));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(graph_triples(&server, &doc_graph("db", "claims")), written);

    // To real CouchDB (which keeps the body as JSON) and back to a new database.
    let couch_dir = tempfile::tempdir().unwrap();
    let couch = common::couchdb::CouchDbPeer::start(couch_dir.path());
    let here = format!("{}/db", server.url(ADMIN));
    let there = format!("http://{}@127.0.0.1:{}/claims", common::couchdb::COUCH_ADMIN, couch.port);
    let back = format!("{}/back", server.url(ADMIN));
    output_ok(rhizome(dir.path().join("cli").as_path()).args(["replicate", &here, &there, "--create-target"]));
    output_ok(rhizome(dir.path().join("cli").as_path()).args(["replicate", &there, &back, "--create-target"]));
    assert_eq!(graph_triples(&server, &doc_graph("back", "claims")), written, "after a round trip through CouchDB");

    // A body whose embedded node is not one triple is refused, nothing stored.
    let bad = r#"{"@id": "http://example.org/x", "http://example.org/said": [{"@id": {"@id": "http://example.org/a", "http://example.org/p": [{"@value": "1"}, {"@value": "2"}]}}]}"#;
    let r = admin(&server, "PUT", "/db/bad", &[("Content-Type", "application/json")], Some(bad));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(admin(&server, "GET", "/db/bad", &[], None).status, 404);
}

#[test]
fn a_json_document_takes_a_base_direction_from_a_graph_write() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let doc = r#"{"@context": {"@vocab": "http://schema.org/"}, "@id": "alice", "name": "Alice"}"#;
    assert_eq!(admin(&server, "PUT", "/db/alice", &[("Content-Type", "application/json")], Some(doc)).status, 201);
    let graph = "<http://localhost:5984/db/alice>";
    let text = format!(r#"INSERT DATA {{ GRAPH {graph} {{ {graph} <http://schema.org/motto> "salam"@ar--rtl }} }}"#);
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], Some(&text));
    assert!(r.status == 200 || r.status == 204, "{}", r.text());
    // A direction: JSON-LD 1.1's @direction, in the document's own shape.
    let body: Value = serde_json::from_slice(&admin(&server, "GET", "/db/alice", &[], None).body).unwrap();
    assert_eq!(body["name"], "Alice");
    assert_eq!(body["motto"], serde_json::json!({"@value": "salam", "@language": "ar", "@direction": "rtl"}), "{body}");
}

/// The triples of graph `iri` as SPARQL's CONSTRUCT gives them.
fn constructed(server: &ServerProcess, iri: &str) -> Graph {
    let q = format!("CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{iri}> {{ ?s ?p ?o }} }}");
    let r = admin(server, "GET", &format!("/db/_sparql?query={}", encode(&q)), &[("Accept", "application/n-triples")], None);
    assert_eq!(r.status, 200, "{}", r.text());
    triples(&r.body, RdfFormat::NTriples)
}

#[test]
fn a_json_document_under_its_context_holds_triple_terms_a_graph_write_adds() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let doc = r#"{"@context": {"@vocab": "http://example.org/"}, "@id": "alice", "name": "Alice"}"#;
    assert_eq!(admin(&server, "PUT", "/db/alice", &[("Content-Type", "application/json")], Some(doc)).status, 201);
    let alice = "http://localhost:5984/db/alice";
    let added = format!(
        r#"PREFIX : <http://example.org/>
<{alice}> :knows :bob {{| :since 2020 |}} .
<{alice}> :said <<( :bob :knows "Dana"@en--rtl )>> .
"#
    );
    let update = format!("INSERT DATA {{ GRAPH <{alice}> {{ {} }} }}", added.split_once('\n').unwrap().1);
    let update = format!("PREFIX : <http://example.org/>\n{update}");
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], Some(&update));
    assert!(r.status == 200 || r.status == 204, "{}", r.text());
    let expected = triples(format!("{added}<{alice}> :name \"Alice\" .\n").as_bytes(), RdfFormat::Turtle);

    // The graph reads back as written, through the Graph Store and SPARQL.
    assert_eq!(graph_triples(&server, &doc_graph("db", "alice")), expected);
    assert_eq!(constructed(&server, alice), expected);
    let q = format!("PREFIX : <http://example.org/> SELECT ?who ?since WHERE {{ GRAPH <{alice}> {{ ?r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( <{alice}> :knows ?who )>> ; :since ?since }} }}");
    let json: Value = serde_json::from_slice(&select(&server, &q, "application/sparql-results+json").body).unwrap();
    assert_eq!(json["results"]["bindings"][0]["who"]["value"], "http://example.org/bob", "{json}");

    // The body keeps its context and its compacted members; the triple
    // terms are embedded nodes in expanded IRIs.
    let body: Value = serde_json::from_slice(&admin(&server, "GET", "/db/alice", &[], None).body).unwrap();
    assert_eq!(body["@context"], serde_json::json!({"@vocab": "http://example.org/"}), "{body}");
    let nodes = body["@graph"].as_array().unwrap_or_else(|| panic!("{body}"));
    let node = nodes.iter().find(|n| n["@id"] == "alice").unwrap_or_else(|| panic!("{body}"));
    assert_eq!(node["name"], "Alice", "{body}");
    assert_eq!(
        node["said"],
        serde_json::json!({"@id": {"@id": "http://example.org/bob", "http://example.org/knows": [{"@value": "Dana", "@language": "en", "@direction": "rtl"}]}}),
        "{body}"
    );
    let reifier = nodes.iter().find(|n| n["since"] == 2020).unwrap_or_else(|| panic!("{body}"));
    assert_eq!(
        reifier["http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies"],
        serde_json::json!({"@id": {"@id": alice, "http://example.org/knows": [{"@id": "http://example.org/bob"}]}}),
        "{body}"
    );

    // The body as read, written back with a changed member: the triple
    // terms stay.
    let mut changed = body.clone();
    for n in changed["@graph"].as_array_mut().unwrap() {
        if n["@id"] == "alice" {
            n["name"] = "Alice B.".into();
        }
    }
    let r = admin(&server, "PUT", "/db/alice", &[("Content-Type", "application/json")], Some(&changed.to_string()));
    assert_eq!(r.status, 201, "{}", r.text());
    let expected = triples(format!("{added}<{alice}> :name \"Alice B.\" .\n").as_bytes(), RdfFormat::Turtle);
    assert_eq!(graph_triples(&server, &doc_graph("db", "alice")), expected);
    assert_eq!(constructed(&server, alice), expected);
}
