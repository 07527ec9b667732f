//! One authorisation rule per kind of document, whatever door a write comes
//! through (issue 44, point 1), on a real `rhizome serve`: each test replays
//! an attack a member's account made on an earlier version, through CouchDB's
//! API, SPARQL Update, the Graph Store Protocol, LDP and replication, and
//! checks that it is refused as a whole with nothing written.
//!
//! `bob` is a member of `db`, `ada` one of its admins.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::{encode, request, Reply};
use serde_json::{json, Value};

/// The base of the graph IRIs of database `db` (the server's default base).
const G: &str = "http://localhost:5984/db/";
const ROOT: &str = "http://localhost:5984/db/_ldp/";
const LDP: &str = "http://www.w3.org/ns/ldp#";
const BOB: &str = "bob:b0b";
const ADA: &str = "ada:4da";
const JSON: (&str, &str) = ("Content-Type", "application/json");
const TURTLE: (&str, &str) = ("Content-Type", "text/turtle");
const UPDATE: (&str, &str) = ("Content-Type", "application/sparql-update");

fn call(s: &ServerProcess, auth: &str, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(s.port, method, target, Some(auth), headers, body.map(str::as_bytes)).expect("the server answers")
}

fn admin(s: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    call(s, ADMIN, method, target, headers, body)
}

fn json_of(r: &Reply) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.text()))
}

fn ask(s: &ServerProcess, query: &str) -> bool {
    let r = admin(s, "GET", &format!("/db/_sparql?query={}", encode(query)), &[("Accept", "application/sparql-results+json")], None);
    assert_eq!(r.status, 200, "{}", r.text());
    json_of(&r)["boolean"].as_bool().unwrap()
}

fn update(s: &ServerProcess, auth: &str, text: &str) -> Reply {
    call(s, auth, "POST", "/db/_sparql", &[UPDATE], Some(text))
}

/// A server with database `db`, its member `bob` and its admin `ada`.
fn server() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let s = ServerProcess::start(dir.path());
    assert_eq!(admin(&s, "PUT", "/db", &[], None).status, 201);
    for (name, pw) in [("bob", "b0b"), ("ada", "4da")] {
        let user = json!({"name": name, "password": pw, "roles": [], "type": "user"}).to_string();
        assert_eq!(admin(&s, "PUT", &format!("/_users/org.couchdb.user:{name}"), &[JSON], Some(&user)).status, 201);
    }
    let security = r#"{"members":{"names":["bob"]},"admins":{"names":["ada"]}}"#;
    assert_eq!(admin(&s, "PUT", "/db/_security", &[JSON], Some(security)).status, 200);
    (dir, s)
}

fn rev(s: &ServerProcess, path: &str) -> String {
    let r = admin(s, "GET", path, &[], None);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    json_of(&r)["_rev"].as_str().unwrap().to_owned()
}

/// The attack of issue 44: a member writes the database's default context
/// so that `validate_doc_update` maps to an IRI, then a SPARQL `INSERT
/// DATA` into the admin's design document's graph becomes a new revision of
/// it with the member's JavaScript. Neither step is allowed any more, and a
/// Graph Store `PUT` cannot create a design document either.
#[test]
fn a_member_never_writes_a_design_document_through_any_door() {
    let (_dir, s) = server();
    let ddoc = r#"{"views":{"all":{"map":"function (doc) { emit(doc._id, null); }"}}}"#;
    assert_eq!(admin(&s, "PUT", "/db/_design/app", &[JSON], Some(ddoc)).status, 201);
    let app_rev = rev(&s, "/db/_design/app");
    let context = r#"{"@context":{"@vocab":"http://e/","validate_doc_update":"http://e/vdu","views":"http://e/views"}}"#;

    // The database's default context is a database setting: its admins'.
    let r = call(&s, BOB, "PUT", "/db/_local/rhizome-context", &[JSON], Some(context));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(admin(&s, "GET", "/db/_local/rhizome-context", &[], None).status, 404, "nothing stored");
    // ...so that the next steps would work if graph writes could reach a
    // design document, an admin sets it.
    assert_eq!(call(&s, ADA, "PUT", "/db/_local/rhizome-context", &[JSON], Some(context)).status, 201);

    let evil = r#"function (newDoc) { throw({forbidden: 'pwned'}); }"#;
    let insert = format!(r#"INSERT DATA {{ GRAPH <{G}_design/app> {{ <{G}_design/app> <http://e/vdu> "{}" }} }}"#, evil.replace('\'', "\\'"));
    let r = update(&s, BOB, &insert);
    assert_eq!(r.status, 403, "{}", r.text());
    // Design documents are code, not data: no graph write reaches one,
    // whoever writes it.
    let r = update(&s, ADA, &insert);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(rev(&s, "/db/_design/app"), app_rev, "the design document is unchanged");
    assert!(!ask(&s, &format!("ASK {{ GRAPH <{G}_design/app> {{ ?s ?p ?o }} }}")), "nothing written");

    // A Graph Store PUT does not create one.
    let r = call(&s, BOB, "PUT", &format!("/db/_graph?graph={}", encode(&format!("{G}_design/evil"))), &[TURTLE], Some("<http://e/s> <http://e/vdu> \"x\" ."));
    assert_eq!(r.status, 403, "{}", r.text());
    let r = call(&s, BOB, "POST", &format!("/db/_graph?graph={}", encode(&format!("{G}_design/evil"))), &[TURTLE], Some("<http://e/s> <http://e/vdu> \"x\" ."));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(admin(&s, "GET", "/db/_design/evil", &[], None).status, 404);

    // Every later write still works, the admin's and the member's.
    assert_eq!(call(&s, BOB, "PUT", "/db/plain", &[JSON], Some(r#"{"x":1}"#)).status, 201);
    assert_eq!(admin(&s, "PUT", "/db/plain2", &[JSON], Some(r#"{"x":1}"#)).status, 201);
    let view = admin(&s, "GET", "/db/_design/app/_view/all", &[], None);
    assert_eq!(view.status, 200, "the admin's view is still there: {}", view.text());

    // CouchDB's API: `_bulk_docs` answers per document, as CouchDB 3.5 does.
    let r = call(&s, BOB, "POST", "/db/_bulk_docs", &[JSON], Some(r#"{"docs":[{"_id":"fine"},{"_id":"_design/evil","views":{}}]}"#));
    assert_eq!(r.status, 201, "{}", r.text());
    let out = json_of(&r);
    assert_eq!(out[0]["ok"], true, "{out}");
    assert_eq!((out[1]["id"].as_str(), out[1]["error"].as_str()), (Some("_design/evil"), Some("forbidden")), "{out}");
    let r = call(&s, BOB, "POST", "/db/_bulk_docs", &[JSON], Some(r#"{"new_edits":false,"docs":[{"_id":"_design/evil","_rev":"1-abc","views":{}}]}"#));
    assert_eq!(json_of(&r)[0]["error"], "forbidden", "{}", r.text());
    assert_eq!(call(&s, BOB, "POST", "/db", &[JSON], Some(r#"{"_id":"_design/evil"}"#)).status, 403);
    assert_eq!(call(&s, BOB, "COPY", "/db/plain", &[("Destination", "_design/evil")], None).status, 403);
    assert_eq!(admin(&s, "GET", "/db/_design/evil", &[], None).status, 404);
    // `_local/` ids in `_bulk_docs` are written as `PUT /{db}/_local/{id}`
    // writes them: the default context stays the admins'.
    let context_rev = rev(&s, "/db/_local/rhizome-context");
    let bulk = json!({"docs": [{"_id": "_local/rhizome-context", "_rev": context_rev, "@context": {"views": "http://e/member-views"}}, {"_id": "_local/checkpoint"}]});
    let r = call(&s, BOB, "POST", "/db/_bulk_docs", &[JSON], Some(&bulk.to_string()));
    let out = json_of(&r);
    assert_eq!((out[0]["error"].as_str(), out[1]["ok"].as_bool()), (Some("forbidden"), Some(true)), "{out}");
    assert!(!admin(&s, "GET", "/db/_local/rhizome-context", &[], None).text().contains("member-views"), "the admin's context is kept");
    // An update function a member runs writes as the member: never a
    // design document, whatever the function returns.
    let updates = r#"{"updates":{"make":"function (doc, req) { return [{_id: req.query.id, views: {}}, 'done']; }"}}"#;
    assert_eq!(call(&s, ADA, "PUT", "/db/_design/up", &[JSON], Some(updates)).status, 201);
    let r = call(&s, BOB, "POST", "/db/_design/up/_update/make?id=_design/evil", &[JSON], Some("{}"));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(call(&s, BOB, "POST", "/db/_design/up/_update/make?id=made", &[JSON], Some("{}")).status, 201);
    assert_eq!(admin(&s, "GET", "/db/_design/evil", &[], None).status, 404);
    // An admin of the database may.
    assert_eq!(call(&s, ADA, "PUT", "/db/_design/other", &[JSON], Some(r#"{"views":{}}"#)).status, 201);
}

/// Graphs that are not a document's of this database: `_local` documents,
/// `_security`, names under `<base>/<db>/_`, another database's documents.
/// A graph write into one is refused whole; a document whose id is another
/// database's graph IRI is refused too.
#[test]
fn graph_writes_reach_only_this_databases_documents() {
    let (_dir, s) = server();
    for graph in [format!("{G}_local/rhizome-context"), format!("{G}_security"), format!("{G}_changes"), "http://localhost:5984/other/doc".to_owned()] {
        let r = update(&s, BOB, &format!(r#"INSERT DATA {{ GRAPH <{G}fine> {{ <http://e/s> <http://e/p> 1 }} GRAPH <{graph}> {{ <http://e/s> <http://e/p> 1 }} }}"#));
        assert_eq!(r.status, 403, "{graph}: {}", r.text());
        let r = call(&s, BOB, "PUT", &format!("/db/_graph?graph={}", encode(&graph)), &[TURTLE], Some("<http://e/s> <http://e/p> 1 ."));
        assert_eq!(r.status, 403, "{graph}: {}", r.text());
        assert!(!ask(&s, "ASK { GRAPH ?g { <http://e/s> <http://e/p> 1 } }"), "{graph}: nothing written, not even the allowed graph");
    }
    let r = call(&s, BOB, "PUT", &format!("/db/{}", encode("http://localhost:5984/other/doc")), &[JSON], Some(r#"{"@id":"http://e/s","http://e/p":1}"#));
    assert_eq!(r.status, 403, "{}", r.text());
    // A system database's documents have no graphs: `_users` takes no
    // graph write, not even its admin's (it would make user documents
    // that skip the checks on names, roles and passwords).
    let r = admin(&s, "POST", "/_users/_sparql", &[UPDATE], Some(r#"INSERT DATA { GRAPH <http://e/u> { <http://e/u> <http://e/roles> "_admin" } }"#));
    assert_eq!(r.status, 403, "{}", r.text());
    // Graphs of this database's documents and IRIs elsewhere are fine.
    assert_eq!(update(&s, BOB, &format!(r#"INSERT DATA {{ GRAPH <{G}fine> {{ <http://e/s> <http://e/p> 1 }} GRAPH <http://example.org/g> {{ <http://e/s> <http://e/p> 2 }} }}"#)).status, 200);
    assert_eq!(admin(&s, "GET", "/db/fine", &[], None).status, 200);
}

/// `ldp:contains` is the server's, an interaction model is fixed at
/// creation, membership settings are the database admins', and every LDP
/// resource has a container for a parent: through SPARQL Update, the
/// Graph Store Protocol and CouchDB's API as through LDP itself.
#[test]
fn ldp_rules_hold_through_every_door() {
    let (_dir, s) = server();
    let container = [TURTLE, ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"")];
    let direct = [TURTLE, ("Link", "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"")];
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c", &container, Some("")).status, 201);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c/kid", &[TURTLE], Some("<> <http://e/p> 1 .")).status, 201);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/r", &[TURTLE], Some("<> <http://e/p> 1 .")).status, 201);
    let settings = format!("<> <{LDP}membershipResource> <{ROOT}r> ; <{LDP}hasMemberRelation> <http://e/member> .");
    assert_eq!(admin(&s, "PUT", "/db/_ldp/d", &direct, Some(&settings)).status, 201);
    let (c, r, d) = (format!("{ROOT}c"), format!("{ROOT}r"), format!("{ROOT}d"));

    // Membership settings: LDP refuses them to a member, and so do SPARQL
    // Update, the Graph Store Protocol and CouchDB's API.
    let change = format!("DELETE DATA {{ GRAPH <{d}> {{ <{d}> <{LDP}hasMemberRelation> <http://e/member> }} }} ; INSERT DATA {{ GRAPH <{d}> {{ <{d}> <{LDP}hasMemberRelation> <http://e/other> }} }}");
    let r1 = update(&s, BOB, &change);
    assert_eq!(r1.status, 403, "{}", r1.text());
    let r1 = call(&s, BOB, "POST", &format!("/db/_graph?graph={}", encode(&d)), &[TURTLE], Some(&format!("<{d}> <{LDP}membershipResource> <{c}> .")));
    assert_eq!(r1.status, 403, "{}", r1.text());
    let mut doc = json_of(&admin(&s, "GET", &format!("/db/{}", encode(&d)), &[], None));
    let as_text = doc.to_string().replace("http://e/member", "http://e/other");
    doc = serde_json::from_str(&as_text).unwrap();
    let r1 = call(&s, BOB, "PUT", &format!("/db/{}", encode(&d)), &[JSON], Some(&doc.to_string()));
    assert_eq!(r1.status, 403, "{}", r1.text());
    assert!(ask(&s, &format!("ASK {{ GRAPH <{d}> {{ <{d}> <{LDP}hasMemberRelation> <http://e/member> }} }}")));
    assert!(!ask(&s, "ASK { GRAPH ?g { ?s ?p <http://e/other> } }"));
    // Its admins may, through any door.
    assert_eq!(update(&s, ADA, &change).status, 200);
    assert!(ask(&s, &format!("ASK {{ GRAPH <{d}> {{ <{d}> <{LDP}hasMemberRelation> <http://e/other> }} }}")));
    // A member creates no direct container through CouchDB's API either.
    let body = json!({"@id": format!("{ROOT}d2"), "@type": format!("{LDP}DirectContainer"), format!("{LDP}membershipResource"): {"@id": r}, format!("{LDP}hasMemberRelation"): {"@id": "http://e/m"}});
    let r1 = call(&s, BOB, "PUT", &format!("/db/{}", encode(&format!("{ROOT}d2"))), &[JSON], Some(&body.to_string()));
    assert_eq!(r1.status, 403, "{}", r1.text());

    // ldp:contains is derived from the children; nobody states it.
    for auth in [BOB, ADMIN] {
        let r1 = update(&s, auth, &format!("INSERT DATA {{ GRAPH <{c}> {{ <{c}> <{LDP}contains> <{ROOT}forged> }} }}"));
        assert_eq!(r1.status, 409, "{}", r1.text());
    }
    let r1 = call(&s, BOB, "POST", &format!("/db/_graph?graph={}", encode(&c)), &[TURTLE], Some(&format!("<{c}> <{LDP}contains> <{ROOT}forged> .")));
    assert_eq!(r1.status, 409, "{}", r1.text());
    let mut doc = json_of(&admin(&s, "GET", &format!("/db/{}", encode(&c)), &[], None));
    doc["@graph"][0][format!("{LDP}contains")] = json!([{"@id": format!("{ROOT}forged")}]);
    let r1 = call(&s, BOB, "PUT", &format!("/db/{}", encode(&c)), &[JSON], Some(&doc.to_string()));
    assert_eq!(r1.status, 409, "{}", r1.text());
    let listing = admin(&s, "GET", "/db/_ldp/c", &[("Accept", "application/n-triples")], None).text();
    assert!(!listing.contains("forged") && listing.contains(&format!("<{ROOT}c/kid>")), "{listing}");

    // An RDF source is not turned into a container.
    let r1 = update(&s, BOB, &format!("INSERT DATA {{ GRAPH <{r}> {{ <{r}> a <{LDP}BasicContainer> }} }}"));
    assert_eq!(r1.status, 409, "{}", r1.text());
    let mut doc = json_of(&admin(&s, "GET", &format!("/db/{}", encode(&r)), &[], None));
    doc["@graph"][0]["@type"] = json!([format!("{LDP}Resource"), format!("{LDP}RDFSource"), format!("{LDP}Container"), format!("{LDP}BasicContainer")]);
    let r1 = call(&s, BOB, "PUT", &format!("/db/{}", encode(&r)), &[JSON], Some(&doc.to_string()));
    assert_eq!(r1.status, 409, "{}", r1.text());
    let got = admin(&s, "GET", "/db/_ldp/r", &[], None);
    assert!(!got.headers.iter().any(|(k, v)| k == "link" && v.contains("Container")), "{:?}", got.headers);
    assert_eq!(admin(&s, "POST", "/db/_ldp/r", &[TURTLE], Some("")).status, 405, "still no container");

    // No resource under a parent that does not exist, or is no container.
    for (path, via_sparql) in [("nope/child", false), ("nope/child2", true), ("r/child", false), ("r/child2", true)] {
        let iri = format!("{ROOT}{path}");
        let r1 = if via_sparql {
            update(&s, BOB, &format!("INSERT DATA {{ GRAPH <{iri}> {{ <{iri}> <http://e/p> 1 }} }}"))
        } else {
            call(&s, BOB, "PUT", &format!("/db/{}", encode(&iri)), &[JSON], Some(&json!({"@id": iri, "http://e/p": 1}).to_string()))
        };
        assert_eq!(r1.status, 409, "{path}: {}", r1.text());
        assert_eq!(admin(&s, "GET", &format!("/db/_ldp/{path}"), &[], None).status, 404, "{path}");
        assert_eq!(admin(&s, "GET", &format!("/db/{}", encode(&iri)), &[], None).status, 404, "{path}");
    }
    // A container keeps its children: it is not deleted from under them
    // through CouchDB's API (LDP's DELETE takes them along).
    let r1 = call(&s, BOB, "DELETE", &format!("/db/{}?rev={}", encode(&c), rev(&s, &format!("/db/{}", encode(&c)))), &[], None);
    assert_eq!(r1.status, 409, "{}", r1.text());
    assert_eq!(admin(&s, "GET", "/db/_ldp/c/kid", &[], None).status, 200);

    // An LDP PATCH changes its own resource's graph and no other.
    let r1 = call(&s, BOB, "PATCH", "/db/_ldp/r", &[UPDATE], Some(&format!("INSERT DATA {{ <> <http://e/q> 2 . GRAPH <{G}elsewhere> {{ <http://e/s> <http://e/p> 3 }} }}")));
    assert_eq!(r1.status, 400, "{}", r1.text());
    assert!(!ask(&s, "ASK { GRAPH ?g { ?s ?p 3 } }") && !ask(&s, "ASK { GRAPH ?g { ?s <http://e/q> 2 } }"), "nothing written");
    assert_eq!(call(&s, BOB, "PATCH", "/db/_ldp/r", &[UPDATE], Some("INSERT DATA { <> <http://e/q> 2 }")).status, 204);
}

/// Replication is one more door: a member pushing (here Rhizome's own
/// replicator, with the member's credentials in the target's URL) gets
/// CouchDB's per-document `forbidden` for a design document and the LDP
/// rules for LDP resources; the rest arrives.
#[test]
fn replicated_writes_follow_the_same_rules() {
    let (_dir, target) = server();
    // A source whose own base IRI differs: there, ids under the target's
    // `<base>/db/_ldp/` are just documents named by IRIs.
    let source_dir = tempfile::tempdir().unwrap();
    let source = ServerProcess::start_with_env(source_dir.path(), &[("RHIZOME_BASE_IRI", "http://source.example")]);
    assert_eq!(admin(&source, "PUT", "/src", &[], None).status, 201);
    let forged = format!("{ROOT}forged");
    let orphan = format!("{ROOT}nope/child");
    let docs = json!({"docs": [
        {"_id": "plain", "x": 1},
        {"_id": "_design/app", "views": {}},
        {"_id": forged, "@id": forged, "@type": format!("{LDP}BasicContainer"), format!("{LDP}contains"): {"@id": format!("{ROOT}x")}},
        {"_id": orphan, "@id": orphan, "http://e/p": 1},
    ]});
    let r = admin(&source, "POST", "/src/_bulk_docs", &[JSON], Some(&docs.to_string()));
    assert!(json_of(&r).as_array().unwrap().iter().all(|o| o["ok"] == true), "{}", r.text());

    let body = json!({
        "source": format!("http://{ADMIN}@127.0.0.1:{}/src", source.port),
        "target": format!("http://{BOB}@127.0.0.1:{}/db", target.port),
    });
    let r = admin(&target, "POST", "/_replicate", &[JSON], Some(&body.to_string()));
    assert_eq!(r.status, 200, "{}", r.text());
    let report = json_of(&r);
    assert_eq!(report["history"][0]["docs_written"], 1, "{report}");
    assert_eq!(report["history"][0]["doc_write_failures"], 3, "{report}");
    assert_eq!(admin(&target, "GET", "/db/plain", &[], None).status, 200);
    assert_eq!(admin(&target, "GET", "/db/_design/app", &[], None).status, 404);
    for id in [forged.as_str(), orphan.as_str()] {
        assert_eq!(admin(&target, "GET", &format!("/db/{}", encode(id)), &[], None).status, 404, "{id}");
    }
    // Run by the server's admin, the design document arrives; a stated
    // ldp:contains is still nobody's to write.
    let body = json!({ "source": format!("http://{ADMIN}@127.0.0.1:{}/src", source.port), "target": "db" });
    let r = admin(&target, "POST", "/_replicate", &[JSON], Some(&body.to_string()));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(admin(&target, "GET", "/db/_design/app", &[], None).status, 200);
    assert_eq!(admin(&target, "GET", &format!("/db/{}", encode(&forged)), &[], None).status, 404);
    assert!(!admin(&target, "GET", "/db/_ldp/", &[("Accept", "application/n-triples")], None).text().contains("forged"));
}

/// The `_replicator` door: a replication runs with its document's writer's
/// rights (CouchDB's `owner`), not a server admin's. Opened to a member, a
/// `_replicator` document must not read a database its writer cannot,
/// create databases, or write what its writer could not write themselves.
#[test]
fn a_replicator_document_runs_with_its_owners_rights() {
    let (_dir, s) = server();
    assert_eq!(admin(&s, "PUT", "/_replicator/_security", &[JSON], Some(r#"{"members":{"names":["bob"]}}"#)).status, 200);
    assert_eq!(admin(&s, "PUT", "/secret", &[], None).status, 201);
    assert_eq!(admin(&s, "PUT", "/secret/s1", &[JSON], Some(r#"{"x":"secret"}"#)).status, 201);
    assert_eq!(admin(&s, "PUT", "/src", &[], None).status, 201);
    assert_eq!(admin(&s, "PUT", "/src/_security", &[JSON], Some(r#"{"members":{"names":["bob"]}}"#)).status, 200);
    assert_eq!(admin(&s, "PUT", "/src/plain", &[JSON], Some(r#"{"x":1}"#)).status, 201);
    assert_eq!(admin(&s, "PUT", "/src/_design/app", &[JSON], Some(r#"{"views":{}}"#)).status, 201);
    let scheduled = |id: &str| -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let docs = json_of(&admin(&s, "GET", "/_scheduler/docs", &[], None));
            let entry = docs["docs"].as_array().unwrap().iter().find(|d| d["doc_id"] == id).cloned();
            if let Some(e) = entry.filter(|e| e["state"] == "failed" || e["state"] == "completed") {
                return e;
            }
            assert!(std::time::Instant::now() < deadline, "{id} never finished: {docs}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    // Reading a database its writer may not read, into a new one.
    let r = call(&s, BOB, "PUT", "/_replicator/steal", &[JSON], Some(r#"{"source":"secret","target":"stolen","create_target":true}"#));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(json_of(&admin(&s, "GET", "/_replicator/steal", &[], None))["owner"], "bob", "stamped with its writer");
    assert_eq!(scheduled("steal")["state"], "failed");
    assert_eq!(admin(&s, "GET", "/stolen", &[], None).status, 404);
    // Between databases it may use: the member's rights there.
    let r = call(&s, BOB, "PUT", "/_replicator/copy", &[JSON], Some(r#"{"source":"src","target":"db"}"#));
    assert_eq!(r.status, 201, "{}", r.text());
    let done = scheduled("copy");
    assert_eq!((done["state"].as_str(), done["info"]["docs_written"].as_u64(), done["info"]["doc_write_failures"].as_u64()), (Some("completed"), Some(1), Some(1)), "{done}");
    assert_eq!(admin(&s, "GET", "/db/plain", &[], None).status, 200);
    assert_eq!(admin(&s, "GET", "/db/_design/app", &[], None).status, 404, "no design document by a member's replication");
    // Nobody else's document, nor another owner.
    assert_eq!(admin(&s, "PUT", "/_replicator/admins", &[JSON], Some(r#"{"source":"src","target":"secret"}"#)).status, 201);
    let rev = rev(&s, "/_replicator/admins");
    let r = call(&s, BOB, "PUT", "/_replicator/admins", &[JSON], Some(&format!(r#"{{"_rev":"{rev}","source":"secret","target":"src"}}"#)));
    assert_eq!(r.status, 403, "{}", r.text());
    let r = call(&s, BOB, "PUT", "/_replicator/forged", &[JSON], Some(r#"{"source":"src","target":"db","owner":"admin"}"#));
    assert_eq!(r.status, 403, "{}", r.text());
}

/// The LDP rules do not stand in the way of a graph write meant for
/// everything: `DROP ALL` removes a container with its children (children
/// first, as LDP's own DELETE does), and an update making a container and
/// its child at once finds the parent in place.
#[test]
fn whole_trees_are_made_and_dropped_in_one_graph_write() {
    let (_dir, s) = server();
    let (c, kid) = (format!("{ROOT}c"), format!("{ROOT}c/kid"));
    let make = format!("INSERT DATA {{ GRAPH <{kid}> {{ <{kid}> <http://e/p> 1 }} GRAPH <{c}> {{ <{c}> a <{LDP}BasicContainer> }} }}");
    let r = update(&s, BOB, &make);
    assert_eq!(r.status, 200, "{}", r.text());
    let listing = admin(&s, "GET", "/db/_ldp/c", &[("Accept", "application/n-triples")], None).text();
    assert!(listing.contains(&format!("<{c}> <{LDP}contains> <{kid}>")), "{listing}");
    let r = update(&s, BOB, "DROP ALL");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(admin(&s, "GET", "/db/_ldp/c", &[], None).status, 404);
    assert_eq!(admin(&s, "GET", "/db/_ldp/c/kid", &[], None).status, 404);
}
