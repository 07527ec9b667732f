//! `POST /{db}/_traverse` and `POST /{db}/_path` on `rhizome serve`:
//! walks over the links between JSON-LD documents (one document's property
//! naming another document), their options and limits, clean 400s for bad
//! bodies, and the database's read security.

mod common;

use common::server::{try_request, ServerProcess, ADMIN};
use serde_json::{json, Value};

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

const CONTEXT: &str = r#"{"knows":{"@id":"http://example.org/knows","@type":"@id"},"likes":{"@id":"http://example.org/likes","@type":"@id"},"name":"http://example.org/name","cost":"http://example.org/cost"}"#;

fn person(id: &str, name: &str, knows: &[&str], likes: &[&str], cost: u32) -> Value {
    json!({"_id": id, "@context": json_of(CONTEXT), "@id": "", "name": name, "knows": knows, "likes": likes, "cost": cost})
}

fn post(server: &ServerProcess, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = server.request("POST", path, Some(ADMIN), Some(&body.to_string()));
    (status, json_of(&text))
}

/// alice -knows-> bob -knows-> carol -knows-> dave; alice -knows-> erin
/// -likes-> carol; zed links to nobody.
fn social(server: &ServerProcess) -> String {
    assert_eq!(server.request("PUT", "/social", Some(ADMIN), None).0, 201);
    let docs = json!({"docs": [
        person("alice", "Alice", &["bob", "erin"], &[], 1),
        person("bob", "Bob", &["carol"], &[], 10),
        person("carol", "Carol", &["dave"], &[], 1),
        person("dave", "Dave", &[], &[], 1),
        person("erin", "Erin", &[], &["carol"], 1),
        person("zed", "Zed", &[], &[], 1),
    ]});
    let (status, text) = server.request("POST", "/social/_bulk_docs", Some(ADMIN), Some(&docs.to_string()));
    assert_eq!(status, 201, "{text}");
    // The IRI of a document: a path from a node to itself is that node.
    let (_, p) = post(server, "/social/_path", &json!({"from": "alice", "to": "alice"}));
    let alice = p["path"][0].as_str().unwrap().to_owned();
    alice.strip_suffix("alice").unwrap().to_owned()
}

fn ids(prefix: &str, nodes: &Value) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = nodes.as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap().strip_prefix(prefix).unwrap().to_owned(), n["depth"].as_u64().unwrap())).collect();
    v.sort();
    v
}

fn path(prefix: &str, p: &Value) -> Option<Vec<String>> {
    p.as_array().map(|a| a.iter().map(|n| n.as_str().unwrap().strip_prefix(prefix).unwrap().to_owned()).collect())
}

fn pairs(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = v.iter().map(|(s, d)| (s.to_string(), *d)).collect();
    v.sort();
    v
}

#[test]
fn traversals_follow_links_between_documents() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let pre = social(&server);
    let t = |body: Value| {
        let (status, r) = post(&server, "/social/_traverse", &body);
        assert_eq!(status, 200, "{r}");
        r
    };
    let r = t(json!({"start": "alice", "depth": 1}));
    assert_eq!(ids(&pre, &r["nodes"]), pairs(&[("bob", 1), ("erin", 1)]));
    assert_eq!(r["truncated"], false);
    let r = t(json!({"start": format!("{pre}alice"), "depth": 2, "direction": "out"}));
    assert_eq!(ids(&pre, &r["nodes"]), pairs(&[("bob", 1), ("erin", 1), ("carol", 2)]));
    let r = t(json!({"start": "alice", "depth": 5}));
    assert_eq!(ids(&pre, &r["nodes"]), pairs(&[("bob", 1), ("erin", 1), ("carol", 2), ("dave", 3)]));
    // Inbound, with and without a predicate filter.
    let r = t(json!({"start": "carol", "depth": 1, "direction": "in"}));
    assert_eq!(ids(&pre, &r["nodes"]), pairs(&[("bob", 1), ("erin", 1)]));
    let r = t(json!({"start": "carol", "depth": 1, "direction": "in", "predicates": ["http://example.org/knows"]}));
    assert_eq!(ids(&pre, &r["nodes"]), pairs(&[("bob", 1)]));
    let r = t(json!({"start": "carol", "depth": 2, "direction": "any"}));
    assert_eq!(ids(&pre, &r["nodes"]), pairs(&[("bob", 1), ("erin", 1), ("dave", 1), ("alice", 2)]));
    // A predicate nobody uses links nothing; an unknown start reaches nothing.
    assert_eq!(t(json!({"start": "alice", "predicates": ["http://example.org/nobody"]}))["nodes"], json!([]));
    assert_eq!(t(json!({"start": "nobody-at-all", "depth": 3}))["nodes"], json!([]));
    assert_eq!(t(json!({"start": "zed", "depth": 3, "direction": "any"}))["nodes"], json!([]));
    // The documents, on request.
    let r = t(json!({"start": "alice", "depth": 1, "include_docs": true}));
    let names: Vec<&str> = r["nodes"].as_array().unwrap().iter().map(|n| n["doc"]["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Bob") && names.contains(&"Erin"), "{r}");
    assert!(r["nodes"][0]["doc"]["_rev"].as_str().unwrap().starts_with("1-"));
    // The node limit keeps the nearest nodes and says it cut.
    let r = t(json!({"start": "alice", "depth": 3, "limit": 2}));
    assert_eq!(ids(&pre, &r["nodes"]), pairs(&[("bob", 1), ("erin", 1)]));
    assert_eq!(r["truncated"], true);
    let r = t(json!({"start": "alice", "depth": 3, "limit": 4}));
    assert_eq!(r["nodes"].as_array().unwrap().len(), 4);
    assert_eq!(r["truncated"], false);
}

#[test]
fn paths_are_shortest_all_shortest_or_cheapest() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let pre = social(&server);
    let p = |body: Value| {
        let (status, r) = post(&server, "/social/_path", &body);
        assert_eq!(status, 200, "{r}");
        r
    };
    assert_eq!(path(&pre, &p(json!({"from": "alice", "to": "dave"}))["path"]).unwrap(), ["alice", "bob", "carol", "dave"].map(String::from));
    // Links are followed one way unless asked.
    assert_eq!(p(json!({"from": "dave", "to": "alice"}))["path"], Value::Null);
    assert_eq!(path(&pre, &p(json!({"from": "dave", "to": "alice", "direction": "in"}))["path"]).unwrap(), ["dave", "carol", "bob", "alice"].map(String::from));
    assert_eq!(p(json!({"from": "alice", "to": "zed", "direction": "any"}))["path"], Value::Null);
    assert_eq!(p(json!({"from": "alice", "to": "nobody-at-all"}))["path"], Value::Null);
    // Two shortest paths to carol; one with knows alone.
    let all = p(json!({"from": "alice", "to": "carol", "all": true}));
    let mut paths: Vec<Vec<String>> = all["paths"].as_array().unwrap().iter().map(|x| path(&pre, x).unwrap()).collect();
    paths.sort();
    assert_eq!(paths, vec![["alice", "bob", "carol"].map(String::from).to_vec(), ["alice", "erin", "carol"].map(String::from).to_vec()]);
    let knows = p(json!({"from": "alice", "to": "carol", "all": true, "predicates": ["http://example.org/knows"]}));
    assert_eq!(knows["paths"].as_array().unwrap().len(), 1);
    assert_eq!(p(json!({"from": "alice", "to": "carol", "all": true, "max_paths": 1}))["truncated"], true);
    assert_eq!(p(json!({"from": "alice", "to": "dave", "max_depth": 2}))["path"], Value::Null);
    // Cheapest: entering bob costs 10, erin 1.
    let c = p(json!({"from": "alice", "to": "carol", "weight": "http://example.org/cost"}));
    assert_eq!(path(&pre, &c["path"]).unwrap(), ["alice", "erin", "carol"].map(String::from));
    assert_eq!(c["cost"], 2.0);
    let c = p(json!({"from": "alice", "to": "dave", "weight": "http://example.org/cost", "predicates": ["http://example.org/knows"]}));
    assert_eq!(c["cost"], 12.0);
}

#[test]
fn a_two_hop_walk_from_a_hub_stops_at_its_limit() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    assert_eq!(server.request("PUT", "/hub", Some(ADMIN), None).0, 201);
    // hub -> f0..f999, each fi -> g_i.
    let fans: Vec<String> = (0..1000).map(|i| format!("f{i}")).collect();
    let fan_refs: Vec<&str> = fans.iter().map(String::as_str).collect();
    let mut docs = vec![person("hub", "Hub", &fan_refs, &[], 1)];
    for i in 0..1000 {
        docs.push(person(&format!("f{i}"), "fan", &[&format!("g{i}")], &[], 1));
    }
    let (status, text) = server.request("POST", "/hub/_bulk_docs", Some(ADMIN), Some(&json!({ "docs": docs }).to_string()));
    assert_eq!(status, 201, "{text}");
    let (status, r) = post(&server, "/hub/_traverse", &json!({"start": "hub", "depth": 2}));
    assert_eq!(status, 200);
    assert_eq!(r["nodes"].as_array().unwrap().len(), 2000);
    // Every node by its own name, again once the names come from whole
    // dictionary chunks (this store has thousands of terms).
    let (_, p) = post(&server, "/hub/_path", &json!({"from": "hub", "to": "hub"}));
    let prefix = p["path"][0].as_str().unwrap().strip_suffix("hub").unwrap().to_owned();
    let mut want: Vec<(String, u64)> = (0..1000).flat_map(|i| [(format!("f{i}"), 1), (format!("g{i}"), 2)]).collect();
    want.sort();
    for _ in 0..2 {
        let (_, r) = post(&server, "/hub/_traverse", &json!({"start": "hub", "depth": 2}));
        assert_eq!(ids(&prefix, &r["nodes"]), want);
    }
    let (status, r) = post(&server, "/hub/_traverse", &json!({"start": "hub", "depth": 2, "limit": 1500}));
    assert_eq!(status, 200);
    let nodes = r["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1500);
    assert_eq!(nodes.iter().filter(|n| n["depth"] == 1).count(), 1000);
    assert_eq!(r["truncated"], true);
    // A path search past its limit is a clean 400.
    let (status, r) = post(&server, "/hub/_path", &json!({"from": "hub", "to": "nobody", "direction": "any", "limit": 10}));
    assert_eq!((status, r["path"].clone()), (200, Value::Null), "an unknown end has no path, whatever the limit");
    let (status, r) = post(&server, "/hub/_path", &json!({"from": "g1", "to": "g2", "direction": "any", "limit": 100}));
    assert_eq!(status, 400, "{r}");
    assert_eq!(r["error"], "query_limit");
    let (status, r) = post(&server, "/hub/_path", &json!({"from": "g1", "to": "g2", "direction": "any"}));
    assert_eq!(status, 200);
    assert_eq!(r["path"].as_array().unwrap().len(), 5);
}

#[test]
fn bad_bodies_get_a_clean_400_and_the_server_stays_up() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    social(&server);
    let cases: &[(&str, &str)] = &[
        ("_traverse", ""),
        ("_traverse", "not json"),
        ("_traverse", "[1,2]"),
        ("_traverse", r#"{}"#),
        ("_traverse", r#"{"start": 5}"#),
        ("_traverse", r#"{"start": ""}"#),
        ("_traverse", r#"{"start": "alice", "depth": 0}"#),
        ("_traverse", r#"{"start": "alice", "depth": -1}"#),
        ("_traverse", r#"{"start": "alice", "depth": "2"}"#),
        ("_traverse", r#"{"start": "alice", "depth": 100000}"#),
        ("_traverse", r#"{"start": "alice", "direction": "up"}"#),
        ("_traverse", r#"{"start": "alice", "predicates": "http://example.org/knows"}"#),
        ("_traverse", r#"{"start": "alice", "predicates": ["not an iri"]}"#),
        ("_traverse", r#"{"start": "alice", "limit": 0}"#),
        ("_traverse", r#"{"start": "alice", "limit": 100000000000}"#),
        ("_traverse", r#"{"start": "alice", "include_docs": true, "limit": 20000}"#),
        ("_traverse", r#"{"start": "alice", "include_docs": "yes"}"#),
        ("_traverse", r#"{"start": "alice", "dept": 2}"#),
        ("_path", r#"{"from": "alice"}"#),
        ("_path", r#"{"to": "alice"}"#),
        ("_path", r#"{"from": "alice", "to": "bob", "all": 1}"#),
        ("_path", r#"{"from": "alice", "to": "bob", "max_paths": 0}"#),
        ("_path", r#"{"from": "alice", "to": "bob", "weight": "cost"}"#),
        ("_path", r#"{"from": "alice", "to": "bob", "weight": "http://example.org/cost", "all": true}"#),
        ("_path", r#"{"from": "alice", "to": "bob", "default_weight": -1}"#),
        ("_path", r#"{"from": "alice", "to": "bob", "depth": 2}"#),
    ];
    for (endpoint, body) in cases {
        let (status, text) = server.request("POST", &format!("/social/{endpoint}"), Some(ADMIN), Some(body));
        assert_eq!(status, 400, "{endpoint} {body}: {text}");
        let err = json_of(&text);
        assert_eq!(err["error"], "bad_request", "{text}");
        assert!(err["reason"].as_str().is_some_and(|r| !r.is_empty()));
    }
    // A negative weight is the data's fault, named in the 400.
    let doc = r#"{"@context":{"cost":"http://example.org/cost","knows":{"@id":"http://example.org/knows","@type":"@id"}},"@id":"","cost":-3}"#;
    assert_eq!(server.request("PUT", "/social/neg", Some(ADMIN), Some(doc)).0, 201);
    let doc = r#"{"@context":{"knows":{"@id":"http://example.org/knows","@type":"@id"}},"@id":"","knows":"neg"}"#;
    assert_eq!(server.request("PUT", "/social/toneg", Some(ADMIN), Some(doc)).0, 201);
    let (status, text) = server.request("POST", "/social/_path", Some(ADMIN), Some(r#"{"from": "toneg", "to": "neg", "weight": "http://example.org/cost"}"#));
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("-3"), "{text}");
    assert_eq!(server.request("GET", "/social/_traverse", Some(ADMIN), None).0, 405);
    assert_eq!(server.request("POST", "/nodb/_traverse", Some(ADMIN), Some(r#"{"start":"a"}"#)).0, 404);
    assert_eq!(server.request("GET", "/", None, None).0, 200);
}

#[test]
fn walks_need_the_databases_read_rights() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    social(&server);
    let ok = |method: &str, path: &str, body: &str| {
        let (status, text) = server.request(method, path, Some(ADMIN), Some(body));
        assert!(status < 300, "{method} {path}: {status} {text}");
    };
    ok("PUT", "/social/_security", r#"{"admins":{"names":[],"roles":[]},"members":{"names":["bob"],"roles":[]}}"#);
    for name in ["bob", "eve"] {
        ok("PUT", &format!("/_users/org.couchdb.user:{name}"), &format!(r#"{{"name":"{name}","type":"user","roles":[],"password":"pw-{name}"}}"#));
    }
    for (endpoint, body) in [("_traverse", r#"{"start":"alice","depth":2}"#), ("_path", r#"{"from":"alice","to":"dave"}"#)] {
        let path = format!("/social/{endpoint}");
        for (auth, want) in [(None, 401), (Some("admin:wrong"), 401), (Some("eve:pw-eve"), 403), (Some("bob:pw-bob"), 200)] {
            let (status, text) = try_request(server.port, "POST", &path, auth, Some(body), &[]).unwrap();
            assert_eq!(status, want, "{auth:?} {endpoint}: {text}");
            let v = json_of(&text);
            if want == 200 {
                assert!(v["nodes"].as_array().is_some_and(|n| n.len() == 3) || v["path"].as_array().is_some_and(|p| p.len() == 4), "{text}");
            } else {
                assert!(v["error"].is_string() && v["reason"].is_string(), "{text}");
                assert!(!text.contains("dave") && !text.contains("bob\""), "a refusal leaks nothing: {text}");
            }
        }
    }
}

#[test]
fn the_cli_walks_a_loaded_store() {
    use common::{output_ok, rhizome};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let nt = dir.path().join("g.nt");
    std::fs::write(
        &nt,
        "<http://ex/a> <http://ex/knows> <http://ex/b> .\n<http://ex/b> <http://ex/knows> <http://ex/c> .\n<http://ex/a> <http://ex/age> \"30\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n<http://ex/b> <http://ex/age> \"30\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n<http://ex/c> <http://ex/age> \"41\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n",
    )
    .unwrap();
    output_ok(rhizome(&data).args(["load", "-q"]).arg(&nt));
    let t = json_of(&output_ok(rhizome(&data).args(["graph", "traverse", "http://ex/a", "--depth", "2"])));
    assert_eq!(t, json!({"nodes": [{"id": "http://ex/b", "depth": 1}, {"id": "http://ex/c", "depth": 2}], "truncated": false}));
    let p = json_of(&output_ok(rhizome(&data).args(["graph", "path", "http://ex/c", "http://ex/a", "--direction", "in"])));
    assert_eq!(p, json!({"path": ["http://ex/c", "http://ex/b", "http://ex/a"]}));
    let c = json_of(&output_ok(rhizome(&data).args(["graph", "count-by", "http://ex/age"])));
    assert_eq!(c, json!({"counts": [{"value": 30, "count": 2}, {"value": 41, "count": 1}]}));
    let bad = common::run(rhizome(&data).args(["graph", "traverse", "http://ex/a", "--direction", "up"]));
    assert!(!bad.status.success());
    assert!(common::stderr(&bad).contains("out, in or any"));
}
