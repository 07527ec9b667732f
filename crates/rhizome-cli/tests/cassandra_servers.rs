//! Many servers on one Cassandra cluster (issue 47, point 3): two
//! `rhizome serve` processes with their own data folders and the same
//! `--store` serve the same databases. Needs a node:
//! `scripts/test-cassandra` starts one and sets `RHIZOME_TEST_CASSANDRA`.
#![cfg(feature = "cassandra")]

mod common;

use common::server::{ServerProcess, ADMIN};
use serde_json::Value;
use std::collections::BTreeSet;

fn store() -> String {
    let hosts = std::env::var("RHIZOME_TEST_CASSANDRA").expect("RHIZOME_TEST_CASSANDRA names a Cassandra node (scripts/test-cassandra starts one)");
    format!("cassandra://{hosts}/rhizome_servers")
}

/// Two servers on one cluster, each with its own data folder.
fn two_servers() -> (tempfile::TempDir, ServerProcess, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let store = store();
    let a = ServerProcess::start_with_env(&dir.path().join("a"), &[("RHIZOME_STORE", &store)]);
    let b = ServerProcess::start_with_env(&dir.path().join("b"), &[("RHIZOME_STORE", &store)]);
    (dir, a, b)
}

/// A database name no earlier run used (the keyspace outlives runs).
fn fresh_db(what: &str) -> String {
    format!("{what}-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos())
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
#[ignore = "needs a Cassandra node: scripts/test-cassandra starts one and runs it"]
fn a_write_answered_by_one_server_is_read_by_the_other() {
    let (_dir, a, b) = two_servers();
    let db = fresh_db("shared");
    assert_eq!(a.request("PUT", &format!("/{db}"), Some(ADMIN), None).0, 201);
    assert_eq!(b.request("GET", &format!("/{db}"), Some(ADMIN), None).0, 200, "the database made on A exists on B");
    assert!(json(&b.request("GET", "/_all_dbs", Some(ADMIN), None).1).as_array().unwrap().iter().any(|n| n == &Value::String(db.clone())));
    let (status, body) = a.request("PUT", &format!("/{db}/alice"), Some(ADMIN), Some(r#"{"@id":"http://example.org/alice","http://xmlns.com/foaf/0.1/name":"Alice"}"#));
    assert_eq!(status, 201, "{body}");
    let rev1 = json(&body)["rev"].as_str().unwrap().to_owned();
    let (status, body) = b.request("GET", &format!("/{db}/alice"), Some(ADMIN), None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["_rev"], rev1.as_str());
    // Updated on B, read on A.
    let (status, body) = b.request("PUT", &format!("/{db}/alice?rev={rev1}"), Some(ADMIN), Some(r#"{"@id":"http://example.org/alice","http://xmlns.com/foaf/0.1/name":"Alicia"}"#));
    assert_eq!(status, 201, "{body}");
    let rev2 = json(&body)["rev"].as_str().unwrap().to_owned();
    assert_eq!(json(&a.request("GET", &format!("/{db}/alice"), Some(ADMIN), None).1)["_rev"], rev2.as_str());
    // The graph the write on B made, queried through A's SPARQL endpoint.
    let query = "SELECT ?n WHERE { <http://example.org/alice> <http://xmlns.com/foaf/0.1/name> ?n }";
    let path = format!("/{db}/_sparql?query={}", percent(query));
    let (status, _, body) = common::server::exchange(a.port, "GET", &path, &[("Authorization", &format!("Basic {}", common::server::base64(ADMIN.as_bytes()))), ("Accept", "application/sparql-results+json")], "");
    assert_eq!(status, 200, "{body}");
    let names: Vec<String> = json(&body)["results"]["bindings"].as_array().unwrap().iter().map(|b| b["n"]["value"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, vec!["Alicia".to_owned()]);
    assert_eq!(a.request("DELETE", &format!("/{db}"), Some(ADMIN), None).0, 200);
    assert_eq!(b.request("GET", &format!("/{db}"), Some(ADMIN), None).0, 404, "deleted through A, gone on B");
}

fn percent(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[test]
#[ignore = "needs a Cassandra node: scripts/test-cassandra starts one and runs it"]
fn concurrent_updates_of_one_document_through_two_servers_give_one_success_and_one_conflict() {
    let (_dir, a, b) = two_servers();
    let db = fresh_db("race");
    assert_eq!(a.request("PUT", &format!("/{db}"), Some(ADMIN), None).0, 201);
    let (status, body) = a.request("PUT", &format!("/{db}/doc"), Some(ADMIN), Some(r#"{"n":0}"#));
    assert_eq!(status, 201, "{body}");
    let mut rev = json(&body)["rev"].as_str().unwrap().to_owned();
    for round in 1..=8 {
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<(u16, String)> = std::thread::scope(|scope| {
            let handles: Vec<_> = [&a, &b]
                .into_iter()
                .enumerate()
                .map(|(i, server)| {
                    let (barrier, rev, db) = (&barrier, rev.clone(), db.clone());
                    scope.spawn(move || {
                        barrier.wait();
                        server.request("PUT", &format!("/{db}/doc?rev={rev}"), Some(ADMIN), Some(&format!(r#"{{"n":{round},"by":{i}}}"#)))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let statuses: BTreeSet<u16> = results.iter().map(|r| r.0).collect();
        assert_eq!(statuses, BTreeSet::from([201, 409]), "round {round}: {results:?}");
        let winner = results.iter().find(|r| r.0 == 201).unwrap();
        rev = json(&winner.1)["rev"].as_str().unwrap().to_owned();
        // Both servers agree on the one winner, and no conflict was made.
        for server in [&a, &b] {
            let doc = json(&server.request("GET", &format!("/{db}/doc?conflicts=true"), Some(ADMIN), None).1);
            assert_eq!(doc["_rev"], rev.as_str());
            assert!(doc.get("_conflicts").is_none(), "{doc}");
        }
    }
}

#[test]
#[ignore = "needs a Cassandra node: scripts/test-cassandra starts one and runs it"]
fn changes_resumed_from_one_servers_since_on_the_other_miss_nothing() {
    let (_dir, a, b) = two_servers();
    let db = fresh_db("changes");
    assert_eq!(a.request("PUT", &format!("/{db}"), Some(ADMIN), None).0, 201);
    let mut written = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut since = Value::from(0);
    for round in 0..6 {
        // Writes through both servers...
        for (i, server) in [&a, &b].into_iter().enumerate() {
            for k in 0..3 {
                let id = format!("d{round}-{i}-{k}");
                assert_eq!(server.request("PUT", &format!("/{db}/{id}"), Some(ADMIN), Some("{}")).0, 201);
                written.insert(id);
            }
        }
        // ...read from the other server each round, resuming where the
        // previous read (on the other server) stopped.
        let reader = if round % 2 == 0 { &a } else { &b };
        let since_text = match &since {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let body = json(&reader.request("GET", &format!("/{db}/_changes?since={}", percent(&since_text)), Some(ADMIN), None).1);
        for row in body["results"].as_array().unwrap() {
            seen.insert(row["id"].as_str().unwrap().to_owned());
        }
        since = body["last_seq"].clone();
    }
    assert_eq!(seen, written);
    // A longpoll feed on B wakes for a write through A.
    let since_text = match &since {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let (port_b, db2) = (b.port, db.clone());
    let feed = std::thread::spawn(move || {
        common::server::try_request(port_b, "GET", &format!("/{db2}/_changes?feed=longpoll&timeout=20000&since={}", percent(&since_text)), Some(ADMIN), None, &[]).unwrap()
    });
    // The feed is waiting once B has answered a request after it started:
    // either way the write below comes after the feed's since.
    assert_eq!(a.request("PUT", &format!("/{db}/late"), Some(ADMIN), Some("{}")).0, 201);
    let (status, body) = feed.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let ids: Vec<String> = json(&body)["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids, vec!["late".to_owned()]);
}
