//! Linked Data Platform under `/{db}/_ldp/` on a real `rhizome serve`,
//! from the outside: every verb, `Prefer`, ETags and `If-Match`,
//! server-managed triples, the three kinds of containers, non-RDF
//! sources, access by `_security`, and the one-thing rule (an LDP
//! resource is a document and a named graph: what other doors write is
//! kept, and the other way round). Round trips with curl and with
//! Python's rdflib (`tests/python/.venv`, made by `scripts/setup`).

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::{encode, request, Reply};
use serde_json::Value;

const TURTLE: (&str, &str) = ("Content-Type", "text/turtle");
const LDP: &str = "http://www.w3.org/ns/ldp#";

fn call(server: &ServerProcess, auth: Option<&str>, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request(server.port, method, target, auth, headers, body.map(str::as_bytes)).expect("the server answers")
}

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    call(server, Some(ADMIN), method, target, headers, body)
}

fn links(r: &Reply) -> Vec<String> {
    r.headers.iter().filter(|(k, _)| k == "link").flat_map(|(_, v)| v.split(", <").map(str::to_owned).collect::<Vec<_>>()).collect()
}

fn has_link(r: &Reply, target: &str, rel: &str) -> bool {
    links(r).iter().any(|l| l.contains(target) && l.contains(&format!("rel=\"{rel}\"")))
}

/// A server whose base IRI is its own address, with database `db`.
fn server() -> (tempfile::TempDir, ServerProcess, String) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_at_own_address(dir.path());
    assert_eq!(admin(&server, "PUT", "/db", &[], None).status, 201);
    let root = format!("http://127.0.0.1:{}/db/_ldp/", server.port);
    (dir, server, root)
}

/// The sorted N-Triples lines of a GET.
fn n_triples(server: &ServerProcess, target: &str, headers: &[(&str, &str)]) -> Vec<String> {
    let mut h = vec![("Accept", "application/n-triples")];
    h.extend_from_slice(headers);
    let r = admin(server, "GET", target, &h, None);
    assert_eq!(r.status, 200, "{target}: {}", r.text());
    let mut lines: Vec<String> = r.text().lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    lines.sort();
    lines
}

fn sparql_count(server: &ServerProcess, query: &str) -> u64 {
    let r = admin(server, "GET", &format!("/db/_sparql?query={}", encode(query)), &[("Accept", "application/sparql-results+json")], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    v["results"]["bindings"][0]["c"]["value"].as_str().unwrap().parse().unwrap()
}

#[test]
fn every_verb_on_a_basic_container_and_its_rdf_sources() {
    let (_dir, s, root) = server();
    // The root exists from the start, a basic container.
    let r = admin(&s, "GET", "/db/_ldp/", &[("Accept", "text/turtle")], None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/turtle"), "exactly text/turtle, no charset");
    assert!(has_link(&r, &format!("{LDP}BasicContainer"), "type") && has_link(&r, &format!("{LDP}Resource"), "type"));
    // POST with Slug makes a container.
    let r = admin(&s, "POST", "/db/_ldp/", &[TURTLE, ("Slug", "books"), ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"")], Some("<> <http://purl.org/dc/terms/title> \"Books\" ."));
    assert_eq!(r.status, 201, "{}", r.text());
    let books = format!("{root}books");
    assert_eq!(r.header("location"), Some(books.as_str()));
    // PUT creates, then replaces.
    let r = admin(&s, "PUT", "/db/_ldp/books/b1", &[TURTLE], Some("<> <http://purl.org/dc/terms/title> \"One\" ."));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin(&s, "PUT", "/db/_ldp/books/b1", &[TURTLE], Some("<> <http://purl.org/dc/terms/title> \"One, again\" ."));
    assert_eq!(r.status, 204, "{}", r.text());
    let b1 = n_triples(&s, "/db/_ldp/books/b1", &[]);
    assert!(b1.contains(&format!("<{books}/b1> <http://purl.org/dc/terms/title> \"One, again\" .")), "{b1:?}");
    assert!(!b1.iter().any(|l| l.contains("\"One\" .")), "the PUT replaced the graph: {b1:?}");
    // The container lists it (relative IRIs resolved against the resource).
    let c = n_triples(&s, "/db/_ldp/books/", &[]);
    assert!(c.contains(&format!("<{books}> <{LDP}contains> <{books}/b1> .")), "{c:?}");
    assert!(c.contains(&format!("<{books}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{LDP}BasicContainer> .")), "{c:?}");
    // HEAD: GET's headers, no body; the ETag is the same for every Accept.
    let get = admin(&s, "GET", "/db/_ldp/books", &[("Accept", "text/turtle")], None);
    let head = admin(&s, "HEAD", "/db/_ldp/books", &[("Accept", "text/turtle")], None);
    let json_ld = admin(&s, "GET", "/db/_ldp/books", &[("Accept", "application/ld+json")], None);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(json_ld.header("content-type"), Some("application/ld+json"));
    let etag = get.header("etag").expect("an ETag").to_owned();
    assert!(etag.starts_with('"'), "a strong ETag: {etag}");
    assert_eq!(head.header("etag"), Some(etag.as_str()));
    assert_eq!(json_ld.header("etag"), Some(etag.as_str()));
    let v: Value = serde_json::from_slice(&json_ld.body).expect("JSON-LD");
    assert!(v.to_string().contains(&format!("{books}/b1")), "{v}");
    // If-None-Match with the ETag: 304.
    assert_eq!(admin(&s, "GET", "/db/_ldp/books", &[("If-None-Match", &etag)], None).status, 304);
    // OPTIONS.
    let r = admin(&s, "OPTIONS", "/db/_ldp/books", &[], None);
    assert!(r.status == 200 || r.status == 204, "{}", r.status);
    assert!(r.header("allow").unwrap().contains("POST"));
    assert!(r.header("accept-post").unwrap().contains("text/turtle"));
    let r = admin(&s, "OPTIONS", "/db/_ldp/books/b1", &[], None);
    assert!(!r.header("allow").unwrap().contains("POST"));
    assert_eq!(r.header("accept-patch"), Some("application/sparql-update"));
    // POST to an RDF source is not allowed.
    assert_eq!(admin(&s, "POST", "/db/_ldp/books/b1", &[TURTLE], Some("")).status, 405);
    // PATCH with SPARQL Update.
    let r = admin(&s, "PATCH", "/db/_ldp/books/b1", &[("Content-Type", "application/sparql-update")], Some("INSERT DATA { <> <http://e/p> \"patched\" }"));
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(n_triples(&s, "/db/_ldp/books/b1", &[]).contains(&format!("<{books}/b1> <http://e/p> \"patched\" .")));
    // A PUT under a resource that is not a container, or a missing one: 409.
    assert_eq!(admin(&s, "PUT", "/db/_ldp/books/b1/x", &[TURTLE], Some("")).status, 409);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/nowhere/x", &[TURTLE], Some("")).status, 409);
    // DELETE of a container deletes its children.
    assert_eq!(admin(&s, "DELETE", "/db/_ldp/books", &[], None).status, 204);
    assert_eq!(admin(&s, "GET", "/db/_ldp/books", &[], None).status, 404);
    assert_eq!(admin(&s, "GET", "/db/_ldp/books/b1", &[], None).status, 404);
    assert!(!n_triples(&s, "/db/_ldp/", &[]).iter().any(|l| l.contains("contains")));
    // Slugs that would name reserved or taken paths get other names.
    let a = admin(&s, "POST", "/db/_ldp/", &[TURTLE, ("Slug", "x")], Some(""));
    let b = admin(&s, "POST", "/db/_ldp/", &[TURTLE, ("Slug", "x")], Some(""));
    let c = admin(&s, "POST", "/db/_ldp/", &[TURTLE, ("Slug", "_reserved")], Some(""));
    assert_eq!((a.status, b.status, c.status), (201, 201, 201));
    assert_ne!(a.header("location"), b.header("location"));
    assert_eq!(c.header("location"), Some(format!("{root}reserved").as_str()));
    // Bad bodies are 400 with the reason, unknown types 415.
    let r = admin(&s, "PUT", "/db/_ldp/bad", &[TURTLE], Some("<> <p"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(admin(&s, "PATCH", "/db/_ldp/x", &[("Content-Type", "text/n3")], Some("")).status, 415);
}

#[test]
fn prefer_includes_and_omits_containment_and_membership() {
    let (_dir, s, root) = server();
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"")], Some("<> <http://www.w3.org/ns/ldp#hasMemberRelation> <http://e/has> .")).status, 201);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c/m", &[TURTLE], Some("")).status, 201);
    let c = format!("{root}c");
    let contains = format!("<{c}> <{LDP}contains> <{c}/m> .");
    let member = format!("<{c}> <http://e/has> <{c}/m> .");
    let all = n_triples(&s, "/db/_ldp/c", &[]);
    assert!(all.contains(&contains) && all.contains(&member), "{all:?}");
    let minimal = admin(&s, "GET", "/db/_ldp/c", &[("Accept", "application/n-triples"), ("Prefer", "return=representation; include=\"http://www.w3.org/ns/ldp#PreferMinimalContainer\"")], None);
    assert_eq!(minimal.header("preference-applied"), Some("return=representation"));
    assert!(!minimal.text().contains(&contains) && !minimal.text().contains(&member), "{}", minimal.text());
    assert!(minimal.text().contains("http://e/has"), "the container's own triples stay: {}", minimal.text());
    let omit = n_triples(&s, "/db/_ldp/c", &[("Prefer", "return=representation; omit=\"http://www.w3.org/ns/ldp#PreferContainment\"")]);
    assert!(!omit.contains(&contains) && omit.contains(&member), "{omit:?}");
    let only = n_triples(&s, "/db/_ldp/c", &[("Prefer", "return=representation; include=\"http://www.w3.org/ns/ldp#PreferMinimalContainer http://www.w3.org/ns/ldp#PreferContainment\"")]);
    assert!(only.contains(&contains) && !only.contains(&member), "{only:?}");
}

#[test]
fn if_match_must_name_the_current_etag() {
    let (_dir, s, _root) = server();
    let r = admin(&s, "PUT", "/db/_ldp/r", &[TURTLE], Some("<> <http://e/p> 1 ."));
    let etag = r.header("etag").unwrap().to_owned();
    let stale = admin(&s, "PUT", "/db/_ldp/r", &[TURTLE, ("If-Match", "\"1-0000\"")], Some("<> <http://e/p> 2 ."));
    assert_eq!(stale.status, 412, "{}", stale.text());
    assert_eq!(admin(&s, "PATCH", "/db/_ldp/r", &[("Content-Type", "application/sparql-update"), ("If-Match", "\"1-0000\"")], Some("INSERT DATA { <> <http://e/p> 3 }")).status, 412);
    assert_eq!(admin(&s, "DELETE", "/db/_ldp/r", &[("If-Match", "\"1-0000\"")], None).status, 412);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/r", &[TURTLE, ("If-None-Match", "*")], Some("")).status, 412);
    let ok = admin(&s, "PUT", "/db/_ldp/r", &[TURTLE, ("If-Match", &etag)], Some("<> <http://e/p> 2 ."));
    assert_eq!(ok.status, 204, "{}", ok.text());
    assert_ne!(ok.header("etag"), Some(etag.as_str()), "a new revision, a new ETag");
    // The old ETag no longer matches.
    assert_eq!(admin(&s, "PUT", "/db/_ldp/r", &[TURTLE, ("If-Match", &etag)], Some("")).status, 412);
    // A container's ETag changes when a child comes.
    let before = admin(&s, "GET", "/db/_ldp/", &[], None).header("etag").unwrap().to_owned();
    assert_eq!(admin(&s, "POST", "/db/_ldp/", &[TURTLE], Some("")).status, 201);
    assert_ne!(admin(&s, "GET", "/db/_ldp/", &[], None).header("etag").unwrap(), before);
}

#[test]
fn server_managed_triples_are_refused_with_409_and_constrained_by() {
    let (_dir, s, root) = server();
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"")], Some("")).status, 201);
    let constraints = format!("{root}_constraints");
    let cases: [(&str, &str, (&str, &str), &str); 4] = [
        ("PUT", "/db/_ldp/c", TURTLE, "<> <http://www.w3.org/ns/ldp#contains> <http://e/x> ."),
        ("PUT", "/db/_ldp/c", TURTLE, "<> a <http://www.w3.org/ns/ldp#DirectContainer> ."),
        ("POST", "/db/_ldp/c", TURTLE, "<http://e/a> <http://www.w3.org/ns/ldp#contains> <http://e/x> ."),
        ("PATCH", "/db/_ldp/c", ("Content-Type", "application/sparql-update"), "INSERT DATA { <> <http://www.w3.org/ns/ldp#contains> <http://e/x> }"),
    ];
    for (method, target, ct, body) in cases {
        let r = admin(&s, method, target, &[ct], Some(body));
        assert_eq!(r.status, 409, "{method} {body}: {}", r.text());
        assert!(has_link(&r, &constraints, &format!("{LDP}constrainedBy")), "{:?}", r.headers);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert!(v["reason"].as_str().is_some(), "{v}");
    }
    // Nothing of them was written.
    assert!(!n_triples(&s, "/db/_ldp/c", &[]).iter().any(|l| l.contains("http://e/x")));
    // The constraints page answers.
    assert_eq!(admin(&s, "GET", "/db/_ldp/_constraints", &[], None).status, 200);
    // A PUT asking for another interaction model: 409.
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#NonRDFSource>; rel=\"type\"")], Some("")).status, 409);
}

#[test]
fn direct_and_indirect_containers_derive_membership_triples() {
    let (_dir, s, root) = server();
    assert_eq!(admin(&s, "PUT", "/db/_ldp/shelf", &[TURTLE], Some("")).status, 201);
    let shelf = format!("{root}shelf");
    // Direct, with another resource as membership resource.
    let body = format!("<> <{LDP}membershipResource> <{shelf}> ; <{LDP}hasMemberRelation> <http://e/holds> .");
    assert_eq!(admin(&s, "PUT", "/db/_ldp/d", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"")], Some(&body)).status, 201);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/d/x", &[TURTLE], Some("")).status, 201);
    assert!(n_triples(&s, "/db/_ldp/shelf", &[]).contains(&format!("<{shelf}> <http://e/holds> <{root}d/x> .")));
    // isMemberOfRelation: the triple is the member's.
    let body = format!("<> <{LDP}membershipResource> <{shelf}> ; <{LDP}isMemberOfRelation> <http://e/on> .");
    assert_eq!(admin(&s, "PUT", "/db/_ldp/o", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"")], Some(&body)).status, 201);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/o/y", &[TURTLE], Some("")).status, 201);
    assert!(n_triples(&s, "/db/_ldp/o/y", &[]).contains(&format!("<{root}o/y> <http://e/on> <{shelf}> .")));
    // Indirect: the member is the child's insertedContentRelation object.
    let body = format!("<> <{LDP}membershipResource> <> ; <{LDP}hasMemberRelation> <http://e/topic> ; <{LDP}insertedContentRelation> <http://xmlns.com/foaf/0.1/primaryTopic> .");
    assert_eq!(admin(&s, "PUT", "/db/_ldp/i", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#IndirectContainer>; rel=\"type\"")], Some(&body)).status, 201);
    let r = admin(&s, "POST", "/db/_ldp/i", &[TURTLE], Some("<> <http://xmlns.com/foaf/0.1/primaryTopic> <#it> ."));
    let child = r.header("location").unwrap().to_owned();
    let i = n_triples(&s, "/db/_ldp/i", &[]);
    assert!(i.contains(&format!("<{root}i> <http://e/topic> <{child}#it> .")), "{i:?}");
    assert!(i.contains(&format!("<{root}i> <{LDP}contains> <{child}> .")), "{i:?}");
    // Removing a member removes its membership triple.
    assert_eq!(admin(&s, "DELETE", "/db/_ldp/d/x", &[], None).status, 204);
    assert!(!n_triples(&s, "/db/_ldp/shelf", &[]).iter().any(|l| l.contains("http://e/holds")));
}

#[test]
fn non_rdf_sources_are_attachments_described_by_an_rdf_source() {
    let (_dir, s, root) = server();
    let r = admin(&s, "POST", "/db/_ldp/", &[("Content-Type", "image/png"), ("Slug", "pic")], Some("PNG bytes"));
    assert_eq!(r.status, 201, "{}", r.text());
    let pic = format!("{root}pic");
    let description = format!("{pic}/_description");
    assert!(has_link(&r, &description, "describedby"), "{:?}", r.headers);
    let r = admin(&s, "GET", "/db/_ldp/pic", &[], None);
    assert_eq!((r.status, r.header("content-type"), r.text().as_str()), (200, Some("image/png"), "PNG bytes"));
    assert!(has_link(&r, &format!("{LDP}NonRDFSource"), "type"));
    let r = admin(&s, "PUT", "/db/_ldp/pic/_description", &[TURTLE], Some("<> <http://purl.org/dc/terms/title> \"A picture\" ."));
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(n_triples(&s, "/db/_ldp/pic/_description", &[]).contains(&format!("<{pic}> <http://purl.org/dc/terms/title> \"A picture\" .")));
    // Replacing the bytes keeps the description; the document has both.
    assert_eq!(admin(&s, "PUT", "/db/_ldp/pic", &[("Content-Type", "image/png")], Some("new bytes")).status, 204);
    assert_eq!(admin(&s, "GET", "/db/_ldp/pic", &[], None).text(), "new bytes");
    assert!(n_triples(&s, "/db/_ldp/pic/_description", &[]).iter().any(|l| l.contains("A picture")));
    let doc = admin(&s, "GET", &format!("/db/{}", encode(&pic)), &[], None);
    let v: Value = serde_json::from_slice(&doc.body).unwrap();
    assert_eq!(v["_attachments"]["content"]["content_type"], "image/png", "{v}");
    assert_eq!(admin(&s, "GET", &format!("/db/{}/content", encode(&pic)), &[], None).text(), "new bytes");
}

#[test]
fn an_ldp_resource_is_a_document_and_a_named_graph() {
    let (_dir, s, root) = server();
    let r = admin(&s, "PUT", "/db/_ldp/r", &[TURTLE], Some("<> <http://e/p> \"ldp\" ."));
    assert_eq!(r.status, 201);
    let iri = format!("{root}r");
    let id = encode(&iri);
    // In _changes, with the revision the ETag names.
    let changes: Value = serde_json::from_slice(&admin(&s, "GET", "/db/_changes", &[], None).body).unwrap();
    let row = changes["results"].as_array().unwrap().iter().find(|c| c["id"] == iri.as_str()).expect("in _changes").clone();
    assert_eq!(r.header("etag").unwrap(), format!("\"{}\"", row["changes"][0]["rev"].as_str().unwrap()));
    // SPARQL sees its graph, and the seed's count works.
    assert_eq!(sparql_count(&s, &format!("SELECT (COUNT(*) AS ?c) WHERE {{ GRAPH <{iri}> {{ <{iri}> <http://e/p> \"ldp\" }} }}")), 1);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"")], Some("")).status, 201);
    assert_eq!(sparql_count(&s, "PREFIX ldp: <http://www.w3.org/ns/ldp#> SELECT (COUNT(?s) AS ?c) WHERE { ?s a ldp:Resource . ?s a ldp:Container }"), 1);
    // Another door writes: a CouchDB client adds a member that is not RDF
    // and an attachment; SPARQL Update adds a triple.
    let doc: Value = serde_json::from_slice(&admin(&s, "GET", &format!("/db/{id}"), &[], None).body).unwrap();
    let mut doc = doc.as_object().unwrap().clone();
    doc.insert("app_flag".into(), Value::Bool(true));
    let r = admin(&s, "PUT", &format!("/db/{id}"), &[("Content-Type", "application/json")], Some(&Value::Object(doc).to_string()));
    assert_eq!(r.status, 201, "{}", r.text());
    let rev = serde_json::from_slice::<Value>(&r.body).unwrap()["rev"].as_str().unwrap().to_owned();
    let r = admin(&s, "PUT", &format!("/db/{id}/note.txt?rev={rev}"), &[("Content-Type", "text/plain")], Some("hello"));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin(&s, "POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], Some(&format!("INSERT DATA {{ GRAPH <{iri}> {{ <{iri}> <http://e/q> \"sparql\" }} }}")));
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = n_triples(&s, "/db/_ldp/r", &[]);
    assert!(seen.contains(&format!("<{iri}> <http://e/q> \"sparql\" .")) && seen.contains(&format!("<{iri}> <http://e/p> \"ldp\" .")), "{seen:?}");
    // An LDP write keeps what the CouchDB client wrote.
    let etag = admin(&s, "GET", "/db/_ldp/r", &[], None).header("etag").unwrap().to_owned();
    let r = admin(&s, "PUT", "/db/_ldp/r", &[TURTLE, ("If-Match", &etag)], Some("<> <http://e/p> \"ldp again\" ."));
    assert_eq!(r.status, 204, "{}", r.text());
    let doc: Value = serde_json::from_slice(&admin(&s, "GET", &format!("/db/{id}"), &[], None).body).unwrap();
    assert_eq!(doc["app_flag"], true, "{doc}");
    assert_eq!(doc["_attachments"]["note.txt"]["stub"], true, "{doc}");
    assert_eq!(admin(&s, "GET", &format!("/db/{id}/note.txt"), &[], None).text(), "hello");
    let seen = n_triples(&s, "/db/_ldp/r", &[]);
    assert!(seen.contains(&format!("<{iri}> <http://e/p> \"ldp again\" .")) && !seen.iter().any(|l| l.contains("sparql")), "{seen:?}");
    // A document written through the CouchDB API under _ldp/ is listed.
    let body = format!(r#"{{"@id":"{root}fromcouch","http://e/p":"couch"}}"#);
    assert_eq!(admin(&s, "PUT", &format!("/db/{}", encode(&format!("{root}fromcouch"))), &[("Content-Type", "application/json")], Some(&body)).status, 201);
    assert!(n_triples(&s, "/db/_ldp/", &[]).contains(&format!("<{root}> <{LDP}contains> <{root}fromcouch> .")));
    // Deleted through the CouchDB API: gone from LDP too.
    let doc: Value = serde_json::from_slice(&admin(&s, "GET", &format!("/db/{id}"), &[], None).body).unwrap();
    let r = admin(&s, "DELETE", &format!("/db/{id}?rev={}", doc["_rev"].as_str().unwrap()), &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(admin(&s, "GET", "/db/_ldp/r", &[], None).status, 404);
    assert!(!n_triples(&s, "/db/_ldp/", &[]).iter().any(|l| l.ends_with(&format!("<{iri}> ."))));
}

#[test]
fn access_follows_the_database_security_object() {
    let (_dir, s, _root) = server();
    for (name, pw) in [("bob", "b0b"), ("eve", "3ve")] {
        let body = format!(r#"{{"name":"{name}","type":"user","roles":[],"password":"{pw}"}}"#);
        assert_eq!(admin(&s, "PUT", &format!("/_users/org.couchdb.user:{name}"), &[("Content-Type", "application/json")], Some(&body)).status, 201);
    }
    let bob = Some("bob:b0b");
    let eve = Some("eve:3ve");
    // A new database is for admins only.
    assert_eq!(call(&s, bob, "GET", "/db/_ldp/", &[], None).status, 403);
    let anon = call(&s, None, "GET", "/db/_ldp/", &[], None);
    assert_eq!(anon.status, 401);
    assert!(anon.header("www-authenticate").is_some_and(|h| h.starts_with("Basic")), "LDP clients are challenged");
    assert_eq!(admin(&s, "PUT", "/db/_security", &[("Content-Type", "application/json")], Some(r#"{"members":{"names":["bob"]}}"#)).status, 200);
    // Members read and write resources...
    assert_eq!(call(&s, bob, "GET", "/db/_ldp/", &[], None).status, 200);
    assert_eq!(call(&s, bob, "PUT", "/db/_ldp/c", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"")], Some("")).status, 201);
    assert_eq!(call(&s, bob, "POST", "/db/_ldp/c", &[TURTLE], Some("<> <http://e/p> 1 .")).status, 201);
    // ...but only admins set membership settings.
    let direct = [TURTLE, ("Link", "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"")];
    assert_eq!(call(&s, bob, "PUT", "/db/_ldp/d", &direct, Some("")).status, 403);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/d", &direct, Some("")).status, 201);
    let etag = call(&s, bob, "GET", "/db/_ldp/d", &[], None).header("etag").unwrap().to_owned();
    let r = call(&s, bob, "PUT", "/db/_ldp/d", &[TURTLE, ("If-Match", &etag)], Some("<> <http://www.w3.org/ns/ldp#hasMemberRelation> <http://e/other> ."));
    assert_eq!(r.status, 403, "{}", r.text());
    let r = call(&s, bob, "PATCH", "/db/_ldp/d", &[("Content-Type", "application/sparql-update")], Some("INSERT DATA { <> <http://e/title> \"ok\" }"));
    assert_eq!(r.status, 204, "a member may write a container's other triples: {}", r.text());
    assert_eq!(call(&s, bob, "POST", "/db/_ldp/d", &[TURTLE], Some("")).status, 201, "members add children");
    // Others get nothing.
    for (method, target) in [("GET", "/db/_ldp/c"), ("PUT", "/db/_ldp/e"), ("DELETE", "/db/_ldp/c"), ("OPTIONS", "/db/_ldp/c")] {
        assert_eq!(call(&s, eve, method, target, &[TURTLE], Some("")).status, 403, "{method} {target}");
        assert_eq!(call(&s, None, method, target, &[TURTLE], Some("")).status, 401, "{method} {target}");
    }
    assert_eq!(call(&s, bob, "DELETE", "/db/_ldp/c", &[], None).status, 204);
}

/// The curl command line, as an LDP client would use it.
#[test]
fn curl_round_trip() {
    let (_dir, s, root) = server();
    let base = format!("http://127.0.0.1:{}/db/_ldp/", s.port);
    let curl = |args: &[&str]| -> String {
        let out = std::process::Command::new("curl").args(["-s", "-S", "-u", ADMIN]).args(args).output().expect("curl runs (scripts/setup installs it)");
        assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let head = curl(&["-i", "-X", "POST", "-H", "Content-Type: text/turtle", "-H", "Slug: note", "--data-binary", "<> <http://purl.org/dc/terms/title> \"curl\" .", &base]);
    assert!(head.starts_with("HTTP/1.1 201"), "{head}");
    let get = curl(&["-i", &format!("{base}note")]);
    let etag = get.lines().find_map(|l| l.strip_prefix("etag: ")).expect("an ETag").trim().to_owned();
    let body = get.split("\r\n\r\n").nth(1).unwrap().replace("\"curl\"", "\"curl, edited\"");
    let file = _dir.path().join("note.ttl");
    std::fs::write(&file, body).unwrap();
    let body = format!("@{}", file.display());
    let put = curl(&["-i", "-X", "PUT", "-H", "Content-Type: text/turtle", "-H", &format!("If-Match: {etag}"), "--data-binary", &body, &format!("{base}note")]);
    assert!(put.starts_with("HTTP/1.1 204"), "{put}");
    let again = curl(&["-i", "-X", "PUT", "-H", "Content-Type: text/turtle", "-H", &format!("If-Match: {etag}"), "--data-binary", &body, &format!("{base}note")]);
    assert!(again.starts_with("HTTP/1.1 412"), "{again}");
    assert!(curl(&[&format!("{base}note")]).contains("curl, edited"));
    assert!(n_triples(&s, "/db/_ldp/", &[]).contains(&format!("<{root}> <{LDP}contains> <{root}note> .")));
}

/// rdflib: GET a resource, parse it, change it, PUT it back with If-Match.
#[test]
fn rdflib_round_trip() {
    let root_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root_dir.join("tests/python/.venv/bin/python3");
    assert!(python.exists(), "run scripts/setup first: {} is missing", python.display());
    let (_dir, s, root) = server();
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c", &[TURTLE, ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"")], Some("<> <http://purl.org/dc/terms/title> \"C\" .")).status, 201);
    assert_eq!(admin(&s, "PUT", "/db/_ldp/c/r", &[TURTLE], Some("<> <http://purl.org/dc/terms/title> \"R\" .")).status, 201);
    let out = std::process::Command::new(&python)
        .arg(root_dir.join("tests/python/rdflib_ldp_round_trip.py"))
        .arg(format!("{root}c/r"))
        .arg(format!("{root}c"))
        .env("RHIZOME_CREDENTIALS", ADMIN)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "rdflib script failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let r = n_triples(&s, "/db/_ldp/c/r", &[]);
    assert!(r.contains(&format!("<{root}c/r> <http://purl.org/dc/terms/creator> \"rdflib\" .")), "{r:?}");
    assert!(r.contains(&format!("<{root}c/r> <http://purl.org/dc/terms/title> \"R\" .")), "{r:?}");
}
