//! `/{db}/_sparql` and `/{db}/_graph` on a real `rhizome serve`: content
//! negotiation, error statuses with their reasons, and access (members
//! query and write; others get 401/403 and change nothing).

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use oxrdf::graph::CanonicalizationAlgorithm;
use oxrdf::Graph;
use oxrdfio::{RdfFormat, RdfParser};
use rdf_support::client::{encode, request, Reply};
use serde_json::Value;

const DATA: &str = r#"@prefix ex: <http://example.org/> .
ex:alice ex:name "Alice" ; ex:knows ex:bob, [ ex:name "Anonymous" ] .
ex:bob ex:name "Bob" ; ex:age 42 .
"#;

fn call(server: &ServerProcess, auth: Option<&str>, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(server.port, method, target, auth, headers, body.map(str::as_bytes)).expect("the server answers")
}

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    call(server, Some(ADMIN), method, target, headers, body)
}

/// A server with database `db` holding [`DATA`] in graph `http://example.org/g`.
fn server_with_data() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let r = admin(&server, "PUT", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fg", &[("Content-Type", "text/turtle")], Some(DATA));
    assert_eq!(r.status, 201, "{}", r.text());
    (dir, server)
}

fn select(server: &ServerProcess, query: &str, accept: Option<&str>) -> Reply {
    let target = format!("/db/_sparql?query={}", encode(query));
    let headers: Vec<(&str, &str)> = accept.map(|a| vec![("Accept", a)]).unwrap_or_default();
    admin(server, "GET", &target, &headers, None)
}

fn json(r: &Reply) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.text()))
}

fn graph(bytes: &[u8], format: RdfFormat) -> Graph {
    let mut g = Graph::new();
    for q in RdfParser::from_format(format).with_base_iri("http://example.org/").unwrap().for_slice(bytes) {
        g.insert(&oxrdf::Triple::from(q.unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))));
    }
    g.canonicalize(CanonicalizationAlgorithm::Unstable);
    g
}

#[test]
fn select_and_ask_results_follow_accept_with_q_values() {
    let (_dir, server) = server_with_data();
    let q = "PREFIX ex: <http://example.org/> SELECT ?name WHERE { ex:bob ex:name ?name }";
    let r = select(&server, q, None);
    assert_eq!((r.status, r.media_type().as_str()), (200, "application/sparql-results+json"), "{}", r.text());
    assert_eq!(json(&r)["results"]["bindings"][0]["name"]["value"], "Bob");
    for (accept, media, needle) in [
        ("application/sparql-results+xml", "application/sparql-results+xml", "<literal>Bob</literal>"),
        ("text/csv", "text/csv", "name\r\nBob"),
        ("text/tab-separated-values", "text/tab-separated-values", "?name\n\"Bob\""),
        ("text/csv;q=0.2, application/sparql-results+xml;q=0.8", "application/sparql-results+xml", "Bob"),
        ("application/sparql-results+json;q=0.1, text/*", "text/csv", "Bob"),
        ("*/*", "application/sparql-results+json", "Bob"),
    ] {
        let r = select(&server, q, Some(accept));
        assert_eq!((r.status, r.media_type().as_str()), (200, media), "Accept: {accept}: {}", r.text());
        assert!(r.text().contains(needle), "Accept: {accept}: {}", r.text());
        assert_eq!(r.header("vary"), Some("Accept"));
    }
    let r = select(&server, q, Some("image/png"));
    assert_eq!(r.status, 406, "{}", r.text());
    assert_eq!(json(&r)["error"], "not_acceptable");
    let ask = "ASK { ?s ?p 42 }";
    assert_eq!(json(&select(&server, ask, None))["boolean"], true);
    assert!(select(&server, ask, Some("application/sparql-results+xml")).text().contains("<boolean>true</boolean>"));
    let r = select(&server, ask, Some("text/csv"));
    assert_eq!((r.status, r.text().as_str()), (200, "true"));
    assert_eq!(select(&server, ask, Some("text/turtle")).status, 406);
}

#[test]
fn construct_results_come_in_every_rdf_format() {
    let (_dir, server) = server_with_data();
    let q = "CONSTRUCT WHERE { ?s ?p ?o }";
    let want = graph(DATA.as_bytes(), RdfFormat::Turtle);
    let r = select(&server, q, None);
    assert_eq!((r.status, r.media_type().as_str()), (200, "text/turtle"));
    assert_eq!(graph(&r.body, RdfFormat::Turtle), want);
    for (accept, format) in [
        ("application/n-triples", RdfFormat::NTriples),
        ("application/rdf+xml", RdfFormat::RdfXml),
        ("application/ld+json", RdfFormat::JsonLd { profile: Default::default() }),
        ("application/n-quads", RdfFormat::NQuads),
        ("text/turtle;q=0.1, application/rdf+xml;q=0.9", RdfFormat::RdfXml),
    ] {
        let r = select(&server, q, Some(accept));
        assert_eq!(r.status, 200, "Accept: {accept}: {}", r.text());
        assert_eq!(r.media_type(), format.media_type(), "Accept: {accept}");
        assert_eq!(graph(&r.body, format), want, "Accept: {accept}: {}", r.text());
    }
    assert_eq!(select(&server, q, Some("application/sparql-results+json")).status, 406);
    // The Graph Store gives the same graph the same ways.
    for (accept, format) in [("text/turtle", RdfFormat::Turtle), ("application/ld+json", RdfFormat::JsonLd { profile: Default::default() }), ("application/rdf+xml", RdfFormat::RdfXml)] {
        let r = admin(&server, "GET", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fg", &[("Accept", accept)], None);
        assert_eq!((r.status, r.media_type()), (200, format.media_type().to_owned()), "{}", r.text());
        assert_eq!(graph(&r.body, format), want, "Accept: {accept}: {}", r.text());
    }
}

#[test]
fn requests_in_every_form_of_the_protocol_are_answered() {
    let (_dir, server) = server_with_data();
    let ask = "ASK { <http://example.org/bob> <http://example.org/age> 42 }";
    let form = format!("query={}", encode(ask));
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/x-www-form-urlencoded")], Some(&form));
    assert_eq!(json(&r)["boolean"], true, "{}", r.text());
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-query")], Some(ask));
    assert_eq!(json(&r)["boolean"], true, "{}", r.text());
    // Updates by form and directly; then the data is there.
    let form = format!("update={}", encode("INSERT DATA { GRAPH <http://example.org/h> { <http://example.org/x> <http://example.org/y> 1 } }"));
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/x-www-form-urlencoded")], Some(&form));
    assert_eq!((r.status, json(&r)["inserted"].as_u64()), (200, Some(1)), "{}", r.text());
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], Some("DELETE WHERE { GRAPH <http://example.org/h> { ?s ?p 1 } }"));
    assert_eq!((r.status, json(&r)["deleted"].as_u64()), (200, Some(1)), "{}", r.text());
    // The protocol's dataset replaces the query's.
    let r = select(&server, "SELECT (COUNT(*) AS ?n) FROM <http://example.org/nothing> WHERE { ?s ?p ?o }", None);
    assert_eq!(json(&r)["results"]["bindings"][0]["n"]["value"], "0");
    let target = format!("/db/_sparql?query={}&default-graph-uri={}", encode("SELECT (COUNT(*) AS ?n) FROM <http://example.org/nothing> WHERE { ?s ?p ?o }"), encode("http://example.org/g"));
    assert_eq!(json(&admin(&server, "GET", &target, &[], None))["results"]["bindings"][0]["n"]["value"], "6");
}

#[test]
fn malformed_requests_get_4xx_with_the_reason() {
    let (_dir, server) = server_with_data();
    let r = select(&server, "SELECT * WHERE {\n  ?s ?p }", None);
    assert_eq!(r.status, 400);
    let reason = json(&r)["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("2:"), "a syntax error names its line and column: {reason}");
    let r = admin(&server, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], Some("INSERT DATA { <a> }"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(json(&r)["reason"].as_str().unwrap().contains("1:"), "{}", r.text());
    assert_eq!(admin(&server, "GET", &format!("/db/_sparql?update={}", encode("CLEAR ALL")), &[], None).status, 400);
    assert_eq!(admin(&server, "POST", "/db/_sparql", &[("Content-Type", "text/plain")], Some("ASK {}")).status, 415);
    assert_eq!(admin(&server, "PUT", "/db/_sparql", &[("Content-Type", "application/sparql-query")], Some("ASK {}")).status, 405);
    // Graph Store: bad RDF (with the parser's position), unknown syntax, missing graphs.
    let r = admin(&server, "PUT", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fbad", &[("Content-Type", "text/turtle")], Some("<http://example.org/s> <http://example.org/p> .\n"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(json(&r)["reason"].as_str().unwrap().contains("line 1"), "{}", r.text());
    let r = admin(&server, "PUT", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fbad", &[("Content-Type", "image/png")], Some("x"));
    assert_eq!(r.status, 415, "{}", r.text());
    assert_eq!(admin(&server, "GET", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fbad", &[], None).status, 404, "a refused write creates nothing");
    assert_eq!(admin(&server, "DELETE", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fnone", &[], None).status, 404);
    assert_eq!(admin(&server, "GET", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fg", &[("Accept", "image/png")], None).status, 406);
    assert_eq!(admin(&server, "GET", "/db/_graph?graph=x&default", &[], None).status, 400);
    assert_eq!(admin(&server, "GET", "/nodb/_sparql?query=ASK%7B%7D", &[], None).status, 404);
}

#[test]
fn graph_store_writes_answer_created_or_no_content_and_new_graphs_get_a_location() {
    let (_dir, server) = server_with_data();
    let nt = [("Content-Type", "text/turtle")];
    let g = "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fnew";
    assert_eq!(admin(&server, "PUT", g, &nt, Some("<http://example.org/a> <http://example.org/b> 1 .")).status, 201);
    assert_eq!(admin(&server, "PUT", g, &nt, Some("<http://example.org/a> <http://example.org/b> 2 .")).status, 204);
    assert_eq!(admin(&server, "POST", g, &nt, Some("<http://example.org/a> <http://example.org/b> 3 .")).status, 204);
    let r = admin(&server, "GET", g, &[("Accept", "application/n-triples")], None);
    assert_eq!(graph(&r.body, RdfFormat::NTriples), graph(b"<http://example.org/a> <http://example.org/b> 2, 3 .", RdfFormat::Turtle), "PUT replaced, POST merged");
    assert_eq!(admin(&server, "HEAD", g, &[], None).status, 200);
    assert_eq!(admin(&server, "DELETE", g, &[], None).status, 204);
    assert_eq!(admin(&server, "HEAD", g, &[], None).status, 404);
    // A POST to the store makes a graph named by the Location it answers.
    let r = admin(&server, "POST", "/db/_graph", &[("Content-Type", "text/turtle")], Some("<http://example.org/c> <http://example.org/d> \"e\" ."));
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").expect("a Location").to_owned();
    let path = location.split_once("//").and_then(|(_, rest)| rest.split_once('/')).map(|(_, p)| format!("/{p}")).unwrap();
    assert!(path.starts_with("/db/_graph/"), "{location}");
    let direct = admin(&server, "GET", &path, &[("Accept", "application/n-triples")], None);
    let indirect = admin(&server, "GET", &format!("/db/_graph?graph={}", encode(&location)), &[("Accept", "application/n-triples")], None);
    assert_eq!((direct.status, indirect.status), (200, 200));
    assert_eq!(direct.text(), "<http://example.org/c> <http://example.org/d> \"e\" .\n");
    assert_eq!(direct.body, indirect.body);
    // The default graph of a database is the union of its graphs.
    let r = select(&server, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", None);
    assert_eq!(json(&r)["results"]["bindings"][0]["n"]["value"], "7");
}

/// What a database holds, as its admin sees it.
fn state(server: &ServerProcess) -> (String, String) {
    let all = admin(server, "GET", "/secret/_graph?default", &[("Accept", "application/n-triples")], None);
    let graphs = select_in(server, "secret", "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g");
    (all.text(), graphs)
}

fn select_in(server: &ServerProcess, db: &str, q: &str) -> String {
    admin(server, "GET", &format!("/{db}/_sparql?query={}", encode(q)), &[("Accept", "text/csv")], None).text()
}

#[test]
fn members_query_and_write_others_get_401_or_403_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // bob logs in after a dozen wrong passwords on purpose: no throttling here.
    let server = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_LOGIN_ATTEMPTS", "1000")]);
    assert_eq!(admin(&server, "PUT", "/secret", &[], None).status, 201);
    let r = admin(&server, "PUT", "/secret/_graph?graph=http%3A%2F%2Fexample.org%2Fg", &[("Content-Type", "text/turtle")], Some(DATA));
    assert_eq!(r.status, 201);
    assert_eq!(admin(&server, "PUT", "/secret/_security", &[("Content-Type", "application/json")], Some(r#"{"members":{"names":["bob"]}}"#)).status, 200);
    for name in ["bob", "eve"] {
        let user = format!(r#"{{"name":"{name}","type":"user","roles":[],"password":"pw-{name}"}}"#);
        let r = admin(&server, "PUT", &format!("/_users/org.couchdb.user:{name}"), &[("Content-Type", "application/json")], Some(&user));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let before = state(&server);
    let attempts: &[(&str, String, &[(&str, &str)], Option<&str>)] = &[
        ("GET", format!("/secret/_sparql?query={}", encode("SELECT * WHERE { ?s ?p ?o }")), &[], None),
        ("POST", "/secret/_sparql".into(), &[("Content-Type", "application/sparql-query")], Some("ASK {}")),
        ("POST", "/secret/_sparql".into(), &[("Content-Type", "application/sparql-update")], Some("CLEAR ALL")),
        ("POST", "/secret/_sparql".into(), &[("Content-Type", "application/x-www-form-urlencoded")], Some("update=DROP%20ALL")),
        ("GET", "/secret/_graph?default".into(), &[], None),
        ("HEAD", "/secret/_graph?graph=http%3A%2F%2Fexample.org%2Fg".into(), &[], None),
        ("PUT", "/secret/_graph?graph=http%3A%2F%2Fexample.org%2Fg".into(), &[("Content-Type", "text/turtle")], Some("<http://e/x> <http://e/y> 1 .")),
        ("POST", "/secret/_graph".into(), &[("Content-Type", "text/turtle")], Some("<http://e/x> <http://e/y> 1 .")),
        ("DELETE", "/secret/_graph?graph=http%3A%2F%2Fexample.org%2Fg".into(), &[], None),
        ("DELETE", "/secret/_graph?default".into(), &[], None),
        ("GET", "/secret/_graph/direct".into(), &[], None),
    ];
    for (who, auth, want) in [("anonymous", None, 401), ("wrong password", Some("bob:nope"), 401), ("eve, not a member", Some("eve:pw-eve"), 403)] {
        for (method, target, headers, body) in attempts {
            let r = call(&server, auth, method, target, headers, *body);
            assert_eq!(r.status, want, "{who}: {method} {target}: {}", r.text());
        }
    }
    assert_eq!(state(&server), before, "refused requests changed something");
    // A member queries and writes.
    let bob = Some("bob:pw-bob");
    let r = call(&server, bob, "GET", &format!("/secret/_sparql?query={}", encode("ASK { ?s ?p 42 }")), &[], None);
    assert_eq!((r.status, json(&r)["boolean"].as_bool()), (200, Some(true)), "{}", r.text());
    let r = call(&server, bob, "POST", "/secret/_sparql", &[("Content-Type", "application/sparql-update")], Some("INSERT DATA { GRAPH <http://example.org/bobs> { <http://example.org/bob> <http://example.org/likes> \"tea\" } }"));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = call(&server, bob, "PUT", "/secret/_graph?graph=http%3A%2F%2Fexample.org%2Fmore", &[("Content-Type", "text/turtle")], Some("<http://e/x> <http://e/y> 1 ."));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_ne!(state(&server), before);
}

#[test]
fn graph_bodies_are_read_in_every_rdf_syntax() {
    let (_dir, server) = server_with_data();
    let want = graph(b"<http://example.org/s> <http://example.org/p> \"v\" .", RdfFormat::NTriples);
    for (content_type, body) in [
        ("text/turtle", "@prefix ex: <http://example.org/> . ex:s ex:p \"v\" ."),
        ("application/n-triples", "<http://example.org/s> <http://example.org/p> \"v\" ."),
        ("application/n-quads", "<http://example.org/s> <http://example.org/p> \"v\" ."),
        ("application/trig", "{ <http://example.org/s> <http://example.org/p> \"v\" }"),
        ("application/rdf+xml", r#"<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/"><rdf:Description rdf:about="http://example.org/s"><ex:p>v</ex:p></rdf:Description></rdf:RDF>"#),
        ("application/ld+json", r#"{"@id": "http://example.org/s", "http://example.org/p": "v"}"#),
    ] {
        let target = format!("/db/_graph?graph={}", encode(&format!("http://example.org/{content_type}")));
        let r = admin(&server, "PUT", &target, &[("Content-Type", content_type)], Some(body));
        assert_eq!(r.status, 201, "{content_type}: {}", r.text());
        let r = admin(&server, "GET", &target, &[("Accept", "application/n-triples")], None);
        assert_eq!(graph(&r.body, RdfFormat::NTriples), want, "{content_type}: {}", r.text());
    }
    // A graph holds triples: a dataset naming other graphs is refused.
    let r = admin(&server, "PUT", "/db/_graph?graph=http%3A%2F%2Fexample.org%2Fq", &[("Content-Type", "application/n-quads")], Some("<http://e/s> <http://e/p> <http://e/o> <http://e/g> ."));
    assert_eq!(r.status, 400, "{}", r.text());
}

/// The graphs of database `db`, as their IRIs, sorted.
fn graph_names(server: &ServerProcess) -> Vec<String> {
    let r = select(server, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", Some("application/sparql-results+json"));
    assert_eq!(r.status, 200, "{}", r.text());
    let mut names: Vec<String> = json(&r)["results"]["bindings"].as_array().unwrap().iter().map(|b| b["g"]["value"].as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

#[test]
fn the_base_of_document_graph_iris_is_kept_by_the_data_folder() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |server: &ServerProcess, id: &str| {
        let body = format!(r#"{{"@context": {{"name": "http://xmlns.com/foaf/0.1/name"}}, "@id": "", "name": "{id}"}}"#);
        let r = admin(server, "PUT", &format!("/db/{id}"), &[], Some(&body));
        assert_eq!(r.status, 201, "{}", r.text());
    };
    {
        let server = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_BASE_IRI", "http://a.example/rhizome")]);
        assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
        doc(&server, "alice");
        assert_eq!(graph_names(&server), vec!["http://a.example/rhizome/db/alice"]);
    }
    // Another base later would rename every graph: the server keeps the
    // folder's base, says so and how to move it (`rhizome rebase`).
    {
        let log = dir.path().join("other-base.log");
        let server = ServerProcess::start_logged_with_env(dir.path(), &log, &[("RHIZOME_BASE_IRI", "http://b.example")]);
        let said = std::fs::read_to_string(&log).unwrap();
        assert!(said.contains("http://a.example/rhizome") && said.contains("RHIZOME_BASE_IRI) is http://b.example") && said.contains("rebase http://b.example"), "{said}");
        assert_eq!(graph_names(&server), vec!["http://a.example/rhizome/db/alice"]);
    }
    // Without the variable (or with the same value), the kept base.
    for (n, env) in [("RHIZOME_BASE_IRI", ""), ("RHIZOME_BASE_IRI", "http://a.example/rhizome")].into_iter().enumerate() {
        let server = ServerProcess::start_with_env(dir.path(), &[env]);
        doc(&server, &format!("bob{n}"));
    }
    let server = ServerProcess::start_naming_itself(dir.path());
    assert_eq!(graph_names(&server), vec!["http://a.example/rhizome/db/alice", "http://a.example/rhizome/db/bob0", "http://a.example/rhizome/db/bob1"]);
}
