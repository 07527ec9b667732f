//! The W3C SPARQL 1.1 Protocol and Graph Store Protocol suites, run against
//! a real `rhizome serve` over HTTP.
//!
//! Each test gets a fresh database; its `ut:graphData` is loaded with Graph
//! Store PUTs; then its requests run in order on the live server, with the
//! manifests' endpoint paths (`/sparql/`, `/gsp`) replaced by
//! `/{db}/_sparql` and `/{db}/_graph`, and template variables (`$LOCATION$`
//! from `mf:expectedLocation`, and `$HOST$`, `$GRAPHSTORE$`) substituted.
//! A response must have an expected status and, where the manifest says,
//! the expected kind of result, boolean, headers (media types compared
//! without parameters) and a body isomorphic to the expected graph.
//!
//! The manifests are read from `$RHIZOME_CONFORMANCE` or
//! `shared/conformance` beside the repository (never copied in).
//!
//! Known failures: `tests/w3c_protocol/known-failures-<suite>.txt`, one
//! test IRI per line followed by ` # reason`. A failure not listed fails
//! the run, and so does a listed test that passes.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use oxrdf::graph::CanonicalizationAlgorithm;
use oxrdf::Graph;
use oxrdfio::{RdfFormat, RdfParser};
use rdf_support::client::{self, Reply};
use rdf_support::manifest::{read_manifest, status_matches, HttpRequest, HttpTest};
use std::collections::HashMap;
use std::cell::Cell;

thread_local! {
    /// What the runner compared (responses, booleans, graphs), printed with
    /// the counts so that a run that checks nothing shows it. Per thread:
    /// each suite runs on its own test thread.
    static CHECKED: Cell<[usize; 3]> = const { Cell::new([0; 3]) };
}

fn checked(i: usize) {
    CHECKED.with(|c| {
        let mut v = c.get();
        v[i] += 1;
        c.set(v);
    });
}
use std::path::Path;

struct Suite {
    name: &'static str,
    manifest: &'static str,
    expected_tests: usize,
    /// The endpoint path the manifest uses, and ours.
    manifest_path: &'static str,
    endpoint: &'static str,
}

const PROTOCOL: Suite =
    Suite { name: "protocol", manifest: "sparql/sparql11/protocol/manifest.ttl", expected_tests: 34, manifest_path: "/sparql", endpoint: "_sparql" };

const GRAPH_STORE: Suite = Suite {
    name: "graph-store",
    manifest: "sparql/sparql11/graph-store-protocol/manifest.ttl",
    expected_tests: 13,
    manifest_path: "/gsp",
    endpoint: "_graph",
};

#[test]
fn w3c_sparql_protocol_suite() {
    run(&PROTOCOL);
}

#[test]
fn w3c_graph_store_protocol_suite() {
    run(&GRAPH_STORE);
}

fn run(suite: &Suite) {
    let root = rhizome_w3c::conformance_root(PROTOCOL.manifest);
    let tests = read_manifest(&root, suite.manifest).unwrap_or_else(|e| panic!("{}: cannot read the manifest: {e}", suite.name));
    let lists = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/w3c_protocol");
    let known = rhizome_w3c::read_known_failures(&lists.join(format!("known-failures-{}.txt", suite.name)));
    let mut problems = Vec::new();
    if tests.len() != suite.expected_tests {
        problems.push(format!("the manifests list {} tests, expected {}", tests.len(), suite.expected_tests));
    }
    for iri in known.keys() {
        if !tests.iter().any(|t| &t.iri == iri) {
            problems.push(format!("{iri} is on the known-failure list but is not a test of the suite"));
        }
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = ServerProcess::start(dir.path());
    let (mut passed, mut failed, mut skipped, mut known_failed) = (0, 0, 0, 0);
    for (i, test) in tests.iter().enumerate() {
        if test.skip {
            skipped += 1;
            println!("  SKIP {} ({}): not approved", test.iri, test.name);
            continue;
        }
        let db = format!("{}-{i}", suite.name);
        let outcome = run_test(&server, suite, &db, test);
        match (outcome, known.get(&test.iri)) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(reason)) => {
                passed += 1;
                problems.push(format!("{} passes but is on the known-failure list ({reason})", test.iri));
            }
            (Err(why), listed) => {
                failed += 1;
                println!("  FAIL {} ({}): {}{}", test.iri, test.name, why, if listed.is_some() { " [known]" } else { "" });
                if listed.is_some() {
                    known_failed += 1;
                } else {
                    problems.push(format!("{} ({}) fails: {why}", test.iri, test.name));
                }
            }
        }
    }
    println!("{}: {passed} passed, {failed} failed, {skipped} skipped ({known_failed} known failures)", suite.name);
    let [responses, booleans, graphs] = CHECKED.with(Cell::get);
    println!("{}: checked {responses} responses, {booleans} booleans, {graphs} graphs", suite.name);
    if !problems.is_empty() {
        panic!("{}: {} unexpected results:\n  {}", suite.name, problems.len(), problems.join("\n  "));
    }
}

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Result<Reply, String> {
    client::request(server.port, method, target, Some(ADMIN), headers, body).map_err(|e| format!("{method} {target}: {e}"))
}

fn run_test(server: &ServerProcess, suite: &Suite, db: &str, test: &HttpTest) -> Result<(), String> {
    let created = admin(server, "PUT", &format!("/{db}"), &[], None)?;
    if created.status != 201 {
        return Err(format!("creating database {db}: {} {}", created.status, created.text()));
    }
    for (file, graph) in &test.graph_data {
        let data = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let media = match file.extension().and_then(|e| e.to_str()) {
            Some("nt") => "application/n-triples",
            Some("ttl") => "text/turtle",
            Some("rdf") => "application/rdf+xml",
            other => return Err(format!("graph data in an unknown format: {other:?}")),
        };
        let r = admin(server, "PUT", &format!("/{db}/_graph?graph={}", client::encode(graph)), &[("Content-Type", media)], Some(&data))?;
        if !(200..300).contains(&r.status) {
            return Err(format!("loading {} into {graph}: {} {}", file.display(), r.status, r.text()));
        }
    }
    let mut vars: HashMap<String, String> = HashMap::new();
    vars.insert("$HOST$".into(), format!("http://127.0.0.1:{}", server.port));
    vars.insert("$GRAPHSTORE$".into(), format!("/{db}/{}", suite.endpoint));
    for (n, req) in test.requests.iter().enumerate() {
        let fill = |s: &str| vars.iter().fold(s.to_owned(), |acc, (k, v)| acc.replace(k.as_str(), v));
        let path = fill(&req.path);
        let target = match path.strip_prefix(suite.manifest_path) {
            // `/sparql/?query=...` and `/sparql?query=...` are the endpoint.
            Some(rest) => format!("/{db}/{}{}", suite.endpoint, if suite.endpoint == "_sparql" { rest.trim_start_matches('/') } else { rest }),
            None => path.clone(),
        };
        let body = req.body.as_deref().map(|b| encode_body(&fill(b), &req.encoding));
        let headers: Vec<(&str, &str)> = req.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let reply = admin(server, &req.method, &target, &headers, body.as_deref())?;
        let url = format!("http://127.0.0.1:{}{target}", server.port);
        check(req, &reply, &url).map_err(|e| format!("request {} ({} {target}): {e}", n + 1, req.method))?;
        if let Some(var) = &req.expect.location_var {
            let location = reply.header("location").ok_or("no Location header")?;
            vars.insert(var.clone(), location.to_owned());
        }
    }
    Ok(())
}

/// The body's bytes in its `cnt:characterEncoding` (UTF-16 as Java and
/// the suite's authors write it: big-endian with a byte order mark).
fn encode_body(text: &str, encoding: &str) -> Vec<u8> {
    if encoding.eq_ignore_ascii_case("UTF-16") {
        let mut out = vec![0xFE, 0xFF];
        for u in text.encode_utf16() {
            out.extend_from_slice(&u.to_be_bytes());
        }
        out
    } else {
        text.as_bytes().to_vec()
    }
}

const RESULT_TYPES: &[&str] = &["application/sparql-results+json", "application/sparql-results+xml"];
const TABLE_TYPES: &[&str] = &["text/csv", "text/tab-separated-values"];

fn essence(media: &str) -> String {
    media.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

fn check(req: &HttpRequest, reply: &Reply, url: &str) -> Result<(), String> {
    let e = &req.expect;
    checked(0);
    if !e.statuses.is_empty() && !status_matches(&e.statuses, reply.status) {
        return Err(format!("status {} (expected {}): {}", reply.status, e.statuses.join(" or "), reply.text().trim()));
    }
    let media = reply.media_type();
    match e.format.as_deref() {
        None => {}
        Some("boolean") if RESULT_TYPES.contains(&media.as_str()) => {}
        Some("tabular") if RESULT_TYPES.contains(&media.as_str()) || TABLE_TYPES.contains(&media.as_str()) => {}
        Some("RDF") => {
            let format = RdfFormat::from_media_type(&media).ok_or_else(|| format!("{media} is not an RDF format"))?;
            parse_graph(&reply.body, format, url).map_err(|e| format!("the RDF result does not parse: {e}"))?;
        }
        Some(kind) => return Err(format!("expected a {kind} result, got {media}")),
    }
    if let Some(expected) = e.boolean {
        let got = if media == "application/sparql-results+json" {
            serde_json::from_slice::<serde_json::Value>(&reply.body).ok().and_then(|v| v.get("boolean").and_then(serde_json::Value::as_bool))
        } else {
            let t = reply.text();
            if t.contains("<boolean>true</boolean>") {
                Some(true)
            } else if t.contains("<boolean>false</boolean>") {
                Some(false)
            } else {
                None
            }
        };
        if got != Some(expected) {
            return Err(format!("expected boolean {expected}, got {}", reply.text().trim()));
        }
        checked(1);
    }
    for (name, value) in &e.headers {
        let got = reply.header(name).ok_or_else(|| format!("no {name} header"))?;
        let same = if name == "content-type" { essence(got) == essence(value) } else { got == value };
        if !same {
            return Err(format!("{name}: {got}, expected {value}"));
        }
    }
    if let Some(expected) = &e.body {
        let expected_type = e.headers.iter().find(|(k, _)| k == "content-type").map_or("text/turtle", |(_, v)| v.as_str());
        let expected_format = RdfFormat::from_media_type(expected_type).ok_or_else(|| format!("expected body in {expected_type}"))?;
        let format = RdfFormat::from_media_type(&media).ok_or_else(|| format!("the body is {media}, not RDF"))?;
        let mut want = parse_graph(expected.as_bytes(), expected_format, url).map_err(|e| format!("the expected body does not parse: {e}"))?;
        let mut got = parse_graph(&reply.body, format, url).map_err(|e| format!("the body does not parse: {e}"))?;
        want.canonicalize(CanonicalizationAlgorithm::Unstable);
        got.canonicalize(CanonicalizationAlgorithm::Unstable);
        if want != got {
            return Err(format!("the graph differs from the expected one:\n--- got\n{}\n--- expected\n{expected}", reply.text()));
        }
        checked(2);
    }
    Ok(())
}

fn parse_graph(bytes: &[u8], format: RdfFormat, base: &str) -> Result<Graph, String> {
    let parser = RdfParser::from_format(format).with_base_iri(base).map_err(|e| e.to_string())?;
    let mut g = Graph::new();
    for q in parser.for_slice(bytes) {
        g.insert(&oxrdf::Triple::from(q.map_err(|e| e.to_string())?));
    }
    Ok(g)
}
