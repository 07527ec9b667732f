//! SPARQL's text search on a real `rhizome serve`: the property function
//! `rt:search` and Jena's `text:query` forms, binding subject, score and
//! literal, joined with graph patterns in one query; the literals indexed
//! set per database (`_design/rdf_text`: predicates, languages); and the
//! index kept by every door's writes: a JSON-LD document, SPARQL Update,
//! the Graph Store, and LDP.

mod common;

use common::server::{base64, exchange, ServerProcess, ADMIN};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:5984/db/";

fn send(server: &ServerProcess, method: &str, path: &str, ctype: &str, body: &str) -> (u16, String) {
    let auth = format!("Basic {}", base64(ADMIN.as_bytes()));
    let (status, _, out) = exchange(server.port, method, path, &[("Authorization", &auth), ("Content-Type", ctype), ("Accept", "application/sparql-results+json")], body);
    (status, out)
}

fn ok(server: &ServerProcess, method: &str, path: &str, ctype: &str, body: &str) -> String {
    let (status, out) = send(server, method, path, ctype, body);
    assert!((200..300).contains(&status), "{method} {path}: {status} {out}");
    out
}

/// The rows of a SELECT, each as (var, value) pairs.
fn select(server: &ServerProcess, query: &str) -> Vec<Value> {
    let out = ok(server, "POST", "/db/_sparql", "application/sparql-query", query);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
    v["results"]["bindings"].as_array().cloned().unwrap_or_else(|| panic!("{v}"))
}

fn column(rows: &[Value], var: &str) -> Vec<String> {
    let mut out: Vec<String> = rows.iter().map(|r| r[var]["value"].as_str().unwrap_or("").to_owned()).collect();
    out.sort();
    out
}

const RT: &str = "PREFIX rt: <urn:rhizome:text#> PREFIX text: <http://jena.apache.org/text#> PREFIX ex: <http://ex.org/> ";

#[test]
fn text_search_joins_graph_patterns_and_follows_every_door() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    ok(&server, "PUT", "/db", "application/json", "");
    // A JSON-LD document.
    ok(&server, "PUT", "/db/fox", "application/json", r#"{"@context": {"@vocab": "http://ex.org/"}, "@id": "fox", "title": "The quick brown fox", "kind": "animal"}"#);
    // SPARQL Update.
    ok(
        &server,
        "POST",
        "/db/_sparql",
        "application/sparql-update",
        &format!("INSERT DATA {{ GRAPH <{BASE}sparqldoc> {{ <http://ex.org/dog> <http://ex.org/title> \"A lazy brown dog\" ; <http://ex.org/kind> \"animal\" . <http://ex.org/car> <http://ex.org/title> \"A brown car\"@en ; <http://ex.org/kind> \"machine\" . }} }}"),
    );
    // The Graph Store.
    ok(&server, "PUT", &format!("/db/_graph?graph={}", enc(&format!("{BASE}gsp"))), "text/turtle", "<http://ex.org/owl> <http://ex.org/note> \"a brown owl hunts\"@fr .");
    // LDP.
    ok(&server, "PUT", "/db/_ldp/bear", "text/turtle", "<> <http://ex.org/title> \"Brown bears fish\" .");

    // Every door's literal is found; score and literal are bound.
    let rows = select(&server, &format!("{RT} SELECT ?s ?score ?lit {{ (?s ?score ?lit) rt:search \"brown\" }}"));
    let subjects = column(&rows, "s");
    assert_eq!(subjects.len(), 5, "{rows:?}");
    for s in ["http://ex.org/dog", "http://ex.org/car", "http://ex.org/owl"] {
        assert!(subjects.contains(&s.to_owned()), "{s} in {subjects:?}");
    }
    assert!(subjects.iter().any(|s| s.ends_with("/fox")), "the JSON-LD document: {subjects:?}");
    assert!(subjects.iter().any(|s| s.ends_with("/bear")), "the LDP resource: {subjects:?}");
    let car = rows.iter().find(|r| r["s"]["value"] == "http://ex.org/car").unwrap();
    assert_eq!(car["lit"], json!({"type": "literal", "value": "A brown car", "xml:lang": "en"}));
    assert_eq!(car["score"]["datatype"], "http://www.w3.org/2001/XMLSchema#double");
    assert!(car["score"]["value"].as_str().unwrap().parse::<f64>().unwrap() > 0.0);

    // Joined with graph patterns in one query; a phrase; Jena's form with a
    // predicate and a limit; a prefix; a boolean.
    let rows = select(&server, &format!("{RT} SELECT ?s {{ ?s rt:search \"brown\" . ?s ex:kind \"animal\" }}"));
    assert_eq!(column(&rows, "s").len(), 2, "{rows:?}");
    assert!(column(&rows, "s").contains(&"http://ex.org/dog".to_owned()));
    let rows = select(&server, &format!("{RT} SELECT ?s {{ ?s text:query \"\\\"lazy brown\\\"\" }}"));
    assert_eq!(column(&rows, "s"), ["http://ex.org/dog"]);
    let rows = select(&server, &format!("{RT} SELECT ?s ?k {{ ?s text:query (ex:title \"brown\" 10) . OPTIONAL {{ ?s ex:kind ?k }} }}"));
    assert_eq!(rows.len(), 4, "ex:title only (not the owl's ex:note): {rows:?}");
    let rows = select(&server, &format!("{RT} SELECT ?s {{ ?s text:query (ex:title \"brown\" 1) }}"));
    assert_eq!(rows.len(), 1);
    let rows = select(&server, &format!("{RT} SELECT ?s {{ ?s rt:search \"hun*\" }}"));
    assert_eq!(column(&rows, "s"), ["http://ex.org/owl"]);
    let rows = select(&server, &format!("{RT} SELECT ?s {{ ?s rt:search \"car OR dog\" }}"));
    assert_eq!(column(&rows, "s"), ["http://ex.org/car", "http://ex.org/dog"]);
    // Lucene's `a AND NOT b` (tantivy's grammar nests the NOT, which found nothing).
    let rows = select(&server, &format!("{RT} SELECT ?s {{ ?s rt:search \"brown AND NOT dog AND NOT car\" }}"));
    let subjects = column(&rows, "s");
    assert_eq!(subjects.len(), 3, "fox, owl, bear: {rows:?}");
    assert!(!subjects.contains(&"http://ex.org/dog".to_owned()) && subjects.contains(&"http://ex.org/owl".to_owned()), "{subjects:?}");

    // A SPARQL delete takes the literal out.
    ok(&server, "POST", "/db/_sparql", "application/sparql-update", &format!("DELETE DATA {{ GRAPH <{BASE}sparqldoc> {{ <http://ex.org/car> <http://ex.org/title> \"A brown car\"@en }} }}"));
    assert!(select(&server, &format!("{RT} SELECT ?s {{ ?s rt:search \"car\" }}")).is_empty());

    // Settings: only ex:title, only English or untagged.
    ok(&server, "PUT", "/db/_design/rdf_text", "application/json", r#"{"rdf_text": {"predicates": ["http://ex.org/title"], "languages": ["", "en"]}}"#);
    let rows = select(&server, &format!("{RT} SELECT ?s {{ ?s rt:search \"brown\" }}"));
    assert_eq!(rows.len(), 3, "the owl's note is neither: {rows:?}");
    assert!(!column(&rows, "s").contains(&"http://ex.org/owl".to_owned()));

    // Cleanup keeps the literal index of the current settings, and only it.
    let literal_indexes = || -> Vec<String> {
        let mut out = Vec::new();
        for db in std::fs::read_dir(dir.path().join("dbs")).unwrap().flatten() {
            for e in std::fs::read_dir(db.path().join("search")).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("rdf_text-") {
                    out.push(name);
                }
            }
        }
        out
    };
    assert_eq!(literal_indexes().len(), 2, "one per settings: {:?}", literal_indexes());
    ok(&server, "POST", "/db/_nouveau_cleanup", "application/json", "{}");
    assert_eq!(literal_indexes().len(), 1, "{:?}", literal_indexes());
    assert_eq!(select(&server, &format!("{RT} SELECT ?s {{ ?s rt:search \"brown\" }}")).len(), 3);

    // A bad call is a clear 400.
    let (status, out) = send(&server, "POST", "/db/_sparql", "application/sparql-query", &format!("{RT} SELECT ?s {{ ?s rt:search ?q }}"));
    assert_eq!(status, 400, "{out}");
    assert!(out.contains("text search"), "{out}");
}

fn enc(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}
