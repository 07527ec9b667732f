//! Transactions over HTTP (issue 45), against a real `rhizome serve`:
//! concurrent transfers between accounts by many clients through each
//! door (`_bulk_docs` with `all_or_nothing` after `_bulk_get`, the
//! server-side `_transaction`, SPARQL Update), with readers checking that
//! `_bulk_get`, `_all_docs` with `keys` and `_find` each see one snapshot
//! (the money is all there at every moment); a failed transaction over a
//! JSON document and an LDP resource leaves nothing anywhere; and a
//! SIGKILL in the middle of transfers loses no answered one and leaves
//! none half-applied.

mod common;

use common::server::{base64, exchange, try_request, ServerProcess, ADMIN};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ACCOUNTS: usize = 10;
const START: i64 = 1000;
const DB: &str = "bank";

fn req(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string());
    let (status, text) = try_request(port, method, path, Some(ADMIN), body.as_deref(), &[]).expect("the server answers");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn sparql(port: u16, kind: &str, text: &str) -> (u16, String) {
    let auth = format!("Basic {}", base64(ADMIN.as_bytes()));
    let (content_type, accept) = match kind {
        "update" => ("application/sparql-update", "*/*"),
        _ => ("application/sparql-query", "application/sparql-results+json"),
    };
    let (status, _, body) = exchange(port, "POST", &format!("/{DB}/_sparql"), &[("Authorization", &auth), ("Content-Type", content_type), ("Accept", accept)], text);
    (status, body)
}

fn setup(server: &ServerProcess) {
    let port = server.port;
    assert_eq!(req(port, "PUT", &format!("/{DB}"), None).0, 201);
    let docs: Vec<Value> = (0..ACCOUNTS).map(|i| json!({"_id": format!("acct:{i}"), "balance": START})).collect();
    assert_eq!(req(port, "POST", &format!("/{DB}/_bulk_docs"), Some(&json!({ "docs": docs }))).0, 201);
    let index = json!({"index": {"fields": ["balance"]}, "name": "by-balance"});
    assert_eq!(req(port, "POST", &format!("/{DB}/_index"), Some(&index)).0, 200);
}

fn pick(t: usize, n: usize) -> (usize, usize, i64) {
    let from = (t * 7 + n * 3) % ACCOUNTS;
    let to = (from + 1 + (n + t) % (ACCOUNTS - 1)) % ACCOUNTS;
    (from, to, 1 + ((t + n) % 9) as i64)
}

/// Every balance equals its start plus its history and the total is
/// whole; returns the number of history documents.
fn check_books(port: u16) -> usize {
    let (status, all) = req(port, "GET", &format!("/{DB}/_all_docs?include_docs=true"), None);
    assert_eq!(status, 200);
    let mut expected = [START; ACCOUNTS];
    let mut balances = [0; ACCOUNTS];
    let mut history = 0;
    for row in all["rows"].as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        let doc = &row["doc"];
        if let Some(i) = id.strip_prefix("acct:") {
            balances[i.parse::<usize>().unwrap()] = doc["balance"].as_i64().unwrap();
        } else if id.starts_with("hist:") {
            history += 1;
            let amount = doc["amount"].as_i64().unwrap();
            expected[doc["from"].as_u64().unwrap() as usize] -= amount;
            expected[doc["to"].as_u64().unwrap() as usize] += amount;
        }
    }
    assert_eq!(balances, expected, "a balance disagrees with its history (a lost update or half a transaction)");
    assert_eq!(balances.iter().sum::<i64>(), START * ACCOUNTS as i64);
    history
}

/// Readers that, until `stop`, read every account in one request through
/// `_bulk_get`, `_all_docs` with `keys` and `_find`, and check that the
/// money is all there in each answer (one snapshot each).
fn snapshot_readers(port: u16, stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<usize>> {
    let ids: Vec<String> = (0..ACCOUNTS).map(|i| format!("acct:{i}")).collect();
    (0..3)
        .map(|kind| {
            let (stop, ids) = (stop.clone(), ids.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    let balances: Vec<i64> = match kind {
                        0 => {
                            let docs: Vec<Value> = ids.iter().map(|id| json!({ "id": id })).collect();
                            let (s, v) = req(port, "POST", &format!("/{DB}/_bulk_get"), Some(&json!({ "docs": docs })));
                            assert_eq!(s, 200, "{v}");
                            v["results"].as_array().unwrap().iter().map(|r| r["docs"][0]["ok"]["balance"].as_i64().unwrap()).collect()
                        }
                        1 => {
                            let (s, v) = req(port, "POST", &format!("/{DB}/_all_docs?include_docs=true"), Some(&json!({ "keys": ids })));
                            assert_eq!(s, 200, "{v}");
                            v["rows"].as_array().unwrap().iter().map(|r| r["doc"]["balance"].as_i64().unwrap()).collect()
                        }
                        _ => {
                            let q = json!({"selector": {"balance": {"$gt": -1000000}}, "use_index": "by-balance", "limit": 1000});
                            let (s, v) = req(port, "POST", &format!("/{DB}/_find"), Some(&q));
                            assert_eq!(s, 200, "{v}");
                            v["docs"].as_array().unwrap().iter().filter(|d| d["_id"].as_str().unwrap().starts_with("acct:")).map(|d| d["balance"].as_i64().unwrap()).collect()
                        }
                    };
                    assert_eq!(balances.len(), ACCOUNTS, "reader {kind}: {balances:?}");
                    assert_eq!(balances.iter().sum::<i64>(), START * ACCOUNTS as i64, "reader {kind} saw money appear or vanish: {balances:?}");
                    reads += 1;
                }
                reads
            })
        })
        .collect()
}

/// One transfer through `door`; true when it was committed.
fn transfer(port: u16, door: &str, t: usize, n: usize) -> bool {
    let (from, to, amount) = pick(t, n);
    let (a, b, h) = (format!("acct:{from}"), format!("acct:{to}"), format!("hist:{t}:{n}"));
    match door {
        "all_or_nothing" => loop {
            // Read with revisions (one snapshot), write all or nothing, retry on 409.
            let (s, v) = req(port, "POST", &format!("/{DB}/_bulk_get"), Some(&json!({"docs": [{"id": a}, {"id": b}]})));
            assert_eq!(s, 200);
            let mut da = v["results"][0]["docs"][0]["ok"].clone();
            let mut db = v["results"][1]["docs"][0]["ok"].clone();
            da["balance"] = json!(da["balance"].as_i64().unwrap() - amount);
            db["balance"] = json!(db["balance"].as_i64().unwrap() + amount);
            let hist = json!({"_id": h, "from": from, "to": to, "amount": amount});
            let (s, v) = req(port, "POST", &format!("/{DB}/_bulk_docs"), Some(&json!({"all_or_nothing": true, "docs": [da, db, hist]})));
            match s {
                201 => return true,
                409 => assert!(v.as_array().unwrap().iter().all(|e| e["error"] == "conflict"), "{v}"),
                _ => panic!("{s} {v}"),
            }
        },
        "transaction" => {
            let ops = json!({"ops": [
                {"id": a, "inc": {"balance": -amount}},
                {"id": b, "inc": {"balance": amount}},
                {"id": h, "put": {"from": from, "to": to, "amount": amount}},
            ]});
            let (s, v) = req(port, "POST", &format!("/{DB}/_transaction"), Some(&ops));
            assert_eq!(s, 200, "{v}");
            assert_eq!(v["results"][0]["doc"]["_id"], a.as_str());
            true
        }
        _ => unreachable!(),
    }
}

fn run_door(door: &str) {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    setup(&server);
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));
    let readers = snapshot_readers(port, stop.clone());
    let (clients, each) = (8, 25);
    let door = door.to_owned();
    let writers: Vec<_> = (0..clients)
        .map(|t| {
            let door = door.clone();
            std::thread::spawn(move || (0..each).filter(|n| transfer(port, &door, t, *n)).count())
        })
        .collect();
    let committed: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    let reads: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 0);
    assert_eq!(committed, clients * each);
    assert_eq!(check_books(port), committed);
}

#[test]
fn concurrent_transfers_through_all_or_nothing_bulk_docs_keep_the_books() {
    run_door("all_or_nothing");
}

#[test]
fn concurrent_transfers_through_the_server_side_transaction_keep_the_books() {
    run_door("transaction");
}

#[test]
fn concurrent_transfers_through_sparql_update_keep_the_books() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let port = server.port;
    assert_eq!(req(port, "PUT", &format!("/{DB}"), None).0, 201);
    let b = "http://bank.example/";
    let mut init = format!("PREFIX b: <{b}> INSERT DATA {{");
    for i in 0..ACCOUNTS {
        init.push_str(&format!(" GRAPH b:acct{i} {{ b:acct{i} b:balance {START} }}"));
    }
    init.push('}');
    assert!((200..300).contains(&sparql(port, "update", &init).0));
    let (clients, each) = (8, 20);
    let writers: Vec<_> = (0..clients)
        .map(|t| {
            std::thread::spawn(move || {
                for n in 0..each {
                    let (from, to, amount) = pick(t, n);
                    let u = format!(
                        "PREFIX b: <{b}>
                         DELETE {{ GRAPH b:acct{from} {{ b:acct{from} b:balance ?x }} GRAPH b:acct{to} {{ b:acct{to} b:balance ?y }} }}
                         INSERT {{ GRAPH b:acct{from} {{ b:acct{from} b:balance ?x2 }} GRAPH b:acct{to} {{ b:acct{to} b:balance ?y2 }}
                                  GRAPH b:hist{t}_{n} {{ b:hist{t}_{n} b:from b:acct{from} ; b:to b:acct{to} ; b:amount {amount} }} }}
                         WHERE {{ GRAPH b:acct{from} {{ b:acct{from} b:balance ?x }} GRAPH b:acct{to} {{ b:acct{to} b:balance ?y }}
                                  BIND(?x - {amount} AS ?x2) BIND(?y + {amount} AS ?y2) }}"
                    );
                    let (s, body) = sparql(port, "update", &u);
                    assert!((200..300).contains(&s), "{s} {body}");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let q = format!(
        "PREFIX b: <{b}> SELECT ?acct ?balance (SUM(?in) - SUM(?out) AS ?moved) WHERE {{
           ?acct b:balance ?balance .
           {{ ?h b:to ?acct ; b:amount ?in . BIND(0 AS ?out) }} UNION {{ ?h b:from ?acct ; b:amount ?out . BIND(0 AS ?in) }} UNION {{ BIND(0 AS ?in) BIND(0 AS ?out) }}
         }} GROUP BY ?acct ?balance"
    );
    let (s, body) = sparql(port, "query", &q);
    assert_eq!(s, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let rows = v["results"]["bindings"].as_array().unwrap();
    assert_eq!(rows.len(), ACCOUNTS, "one balance per account: {body}");
    let mut total = 0;
    for r in rows {
        let balance: i64 = r["balance"]["value"].as_str().unwrap().parse().unwrap();
        let moved: i64 = r["moved"]["value"].as_str().unwrap().parse().unwrap();
        assert_eq!(balance, START + moved, "{} disagrees with its history", r["acct"]["value"]);
        total += balance;
    }
    assert_eq!(total, START * ACCOUNTS as i64);
    let (_, body) = sparql(port, "query", &format!("PREFIX b: <{b}> SELECT (COUNT(?h) AS ?n) WHERE {{ ?h b:amount ?a }}"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["results"]["bindings"][0]["n"]["value"], (clients * each).to_string());
    // Each graph written is a new revision of its document.
    let (_, info) = req(port, "GET", &format!("/{DB}"), None);
    assert_eq!(info["doc_count"], ACCOUNTS + clients * each);
}

#[test]
fn a_failed_transaction_over_a_json_document_and_an_ldp_resource_leaves_nothing_anywhere() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let port = server.port;
    assert_eq!(req(port, "PUT", &format!("/{DB}"), None).0, 201);
    // A view and a Mango index over `kind`, an LDP container.
    let ddoc = json!({"views": {"kinds": {"map": "function(doc) { if (doc.kind) emit(doc.kind, 1); }"}}});
    assert_eq!(req(port, "PUT", &format!("/{DB}/_design/v"), Some(&ddoc)).0, 201);
    assert_eq!(req(port, "POST", &format!("/{DB}/_index"), Some(&json!({"index": {"fields": ["kind"]}, "name": "by-kind"}))).0, 200);
    let (s, v) = req(port, "PUT", &format!("/{DB}/note"), Some(&json!({"kind": "note", "text": "v1"})));
    assert_eq!(s, 201, "{v}");
    let note_rev = v["rev"].as_str().unwrap().to_owned();
    let auth = format!("Basic {}", base64(ADMIN.as_bytes()));
    let (s, _, body) = exchange(
        port,
        "PUT",
        &format!("/{DB}/_ldp/box"),
        &[("Authorization", &auth), ("Content-Type", "text/turtle"), ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"")],
        "<> <http://purl.org/dc/terms/title> \"Box\" .",
    );
    assert!(s == 201 || s == 204, "{s} {body}");
    let (_, box_doc) = req(port, "GET", &format!("/{DB}/_all_docs?include_docs=true"), None);
    let box_row = box_doc["rows"].as_array().unwrap().iter().find(|r| r["id"].as_str().unwrap().ends_with("/_ldp/box")).cloned().expect("the container is a document");
    let box_id = box_row["id"].as_str().unwrap().to_owned();
    let child_id = format!("{box_id}/item");
    let seq_before = req(port, "GET", &format!("/{DB}"), None).1["update_seq"].clone();
    // A JSON document (stale revision) and a new LDP resource in the box, all or nothing.
    let child = json!({"_id": child_id, "@context": {"t": "http://purl.org/dc/terms/title"}, "@id": child_id, "t": "Item", "kind": "item"});
    let stale = json!({"_id": "note", "_rev": "1-00000000000000000000000000000000", "kind": "changed"});
    let (s, v) = req(port, "POST", &format!("/{DB}/_bulk_docs"), Some(&json!({"all_or_nothing": true, "docs": [child, stale]})));
    assert_eq!(s, 409, "{v}");
    assert_eq!(v.as_array().unwrap().len(), 1, "only the conflicting document is named: {v}");
    // Nothing of it anywhere: _changes, SPARQL, the view, the Mango index, LDP containment.
    assert_eq!(req(port, "GET", &format!("/{DB}"), None).1["update_seq"], seq_before);
    let (_, changes) = req(port, "GET", &format!("/{DB}/_changes"), None);
    assert!(!changes.to_string().contains("/_ldp/box/item"), "{changes}");
    let (_, body) = sparql(port, "query", &format!("SELECT * WHERE {{ GRAPH ?g {{ ?s ?p \"Item\" }} }}"));
    assert!(serde_json::from_str::<Value>(&body).unwrap()["results"]["bindings"].as_array().unwrap().is_empty(), "{body}");
    let (_, view) = req(port, "GET", &format!("/{DB}/_design/v/_view/kinds?key=%22item%22"), None);
    assert!(view["rows"].as_array().unwrap().is_empty(), "{view}");
    let (_, found) = req(port, "POST", &format!("/{DB}/_find"), Some(&json!({"selector": {"kind": {"$in": ["item", "changed"]}}})));
    assert!(found["docs"].as_array().unwrap().is_empty(), "{found}");
    let (s, _, body) = exchange(port, "GET", &format!("/{DB}/_ldp/box"), &[("Authorization", &auth), ("Accept", "text/turtle")], "");
    assert_eq!(s, 200);
    assert!(!body.contains("item"), "the box does not contain the refused item: {body}");
    // The same with the right revision: both, everywhere.
    let child = json!({"_id": child_id, "@context": {"t": "http://purl.org/dc/terms/title"}, "@id": child_id, "t": "Item", "kind": "item"});
    let fresh = json!({"_id": "note", "_rev": note_rev, "kind": "changed"});
    let (s, v) = req(port, "POST", &format!("/{DB}/_bulk_docs"), Some(&json!({"all_or_nothing": true, "docs": [child, fresh]})));
    assert_eq!(s, 201, "{v}");
    let (_, view) = req(port, "GET", &format!("/{DB}/_design/v/_view/kinds?key=%22item%22"), None);
    assert_eq!(view["rows"].as_array().unwrap().len(), 1, "{view}");
    let (_, found) = req(port, "POST", &format!("/{DB}/_find"), Some(&json!({"selector": {"kind": {"$in": ["item", "changed"]}}})));
    assert_eq!(found["docs"].as_array().unwrap().len(), 2, "{found}");
    let (_, _, body) = exchange(port, "GET", &format!("/{DB}/_ldp/box"), &[("Authorization", &auth), ("Accept", "text/turtle")], "");
    assert!(body.contains("item"), "the box contains the item: {body}");
}

#[test]
fn transaction_doors_refuse_what_a_member_may_not_write() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let port = server.port;
    assert_eq!(req(port, "PUT", &format!("/{DB}"), None).0, 201);
    assert_eq!(req(port, "PUT", "/_users/org.couchdb.user:bob", Some(&json!({"name": "bob", "password": "pw", "roles": [], "type": "user"}))).0, 201);
    let sec = json!({"admins": {"names": [], "roles": []}, "members": {"names": ["bob"], "roles": []}});
    assert_eq!(req(port, "PUT", &format!("/{DB}/_security"), Some(&sec)).0, 200);
    let ddoc = json!({"validate_doc_update": "function(n, o) { if (n.balance < 0) throw({forbidden: 'no overdraft'}); }"});
    assert_eq!(req(port, "PUT", &format!("/{DB}/_design/rules"), Some(&ddoc)).0, 201);
    let bob = |method: &str, path: &str, body: &Value| {
        let (s, t) = try_request(port, method, path, Some("bob:pw"), Some(&body.to_string()), &[]).unwrap();
        (s, serde_json::from_str::<Value>(&t).unwrap_or(Value::Null))
    };
    // A member writes no design document through either door.
    let (s, _) = bob("POST", &format!("/{DB}/_transaction"), &json!({"ops": [{"id": "_design/x", "put": {"views": {}}}]}));
    assert_eq!(s, 403);
    let (s, _) = bob("POST", &format!("/{DB}/_bulk_docs"), &json!({"all_or_nothing": true, "docs": [{"_id": "_design/x"}, {"_id": "a"}]}));
    assert_eq!(s, 403);
    // Validation sees every new revision; one refusal refuses all.
    let (s, v) = bob("POST", &format!("/{DB}/_bulk_docs"), &json!({"all_or_nothing": true, "docs": [{"_id": "a", "balance": 1}, {"_id": "b", "balance": -1}]}));
    assert_eq!(s, 403, "{v}");
    assert_eq!(bob("POST", &format!("/{DB}/_transaction"), &json!({"ops": [{"id": "c", "set": {"balance": 1}}]})).0, 200);
    let (s, v) = bob("POST", &format!("/{DB}/_transaction"), &json!({"ops": [{"id": "d", "set": {"balance": 5}}, {"id": "c", "inc": {"balance": -2}}]}));
    assert_eq!(s, 403, "{v}");
    assert_eq!(v["op"], 1);
    let (_, all) = req(port, "GET", &format!("/{DB}/_all_docs"), None);
    let ids: Vec<&str> = all["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["_design/rules", "c"]);
}

/// The rights rules (`rhizome_docs::Writer`) hold through the transaction
/// doors as through `_bulk_docs`, on the group-commit path (a database
/// without validation functions): a member's `_transaction` or
/// `all_or_nothing` `_bulk_docs` writing a design document or
/// `_local/rhizome-context` is refused, with nothing of it written.
#[test]
fn a_members_transactions_write_no_design_document_and_no_default_context() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let port = server.port;
    assert_eq!(req(port, "PUT", &format!("/{DB}"), None).0, 201);
    assert_eq!(req(port, "PUT", "/_users/org.couchdb.user:bob", Some(&json!({"name": "bob", "password": "pw", "roles": [], "type": "user"}))).0, 201);
    let sec = json!({"admins": {"names": [], "roles": []}, "members": {"names": ["bob"], "roles": []}});
    assert_eq!(req(port, "PUT", &format!("/{DB}/_security"), Some(&sec)).0, 200);
    let seq = |port| req(port, "GET", &format!("/{DB}"), None).1["update_seq"].clone();
    let before = seq(port);
    let bob = |method: &str, path: &str, body: &Value| {
        let (s, t) = try_request(port, method, path, Some("bob:pw"), Some(&body.to_string()), &[]).unwrap();
        (s, serde_json::from_str::<Value>(&t).unwrap_or(Value::Null))
    };
    let context = json!({"@context": {"@vocab": "http://example.org/"}});
    let (s, v) = bob("POST", &format!("/{DB}/_transaction"), &json!({"ops": [{"id": "a", "set": {"n": 1}}, {"id": "_design/x", "put": {"views": {}}}]}));
    assert_eq!((s, &v["error"], &v["op"]), (403, &json!("forbidden"), &json!(1)), "{v}");
    let (s, v) = bob("POST", &format!("/{DB}/_transaction"), &json!({"ops": [{"id": "a", "set": {"n": 1}}, {"id": "_local/rhizome-context", "put": context}]}));
    assert!(s == 400 || s == 403, "{s} {v}");
    let (s, v) = bob("POST", &format!("/{DB}/_bulk_docs"), &json!({"all_or_nothing": true, "docs": [{"_id": "a", "n": 1}, {"_id": "_design/x", "views": {}}]}));
    assert_eq!(s, 403, "{v}");
    assert!(v.as_array().unwrap().iter().any(|r| r["id"] == "_design/x" && r["error"] == "forbidden"), "{v}");
    let mut local = context.clone();
    local["_id"] = json!("_local/rhizome-context");
    let (s, v) = bob("POST", &format!("/{DB}/_bulk_docs"), &json!({"all_or_nothing": true, "docs": [{"_id": "a", "n": 1}, local]}));
    assert!(s == 400 || s == 403, "{s} {v}");
    // Nothing of any of them was written.
    assert_eq!(seq(port), before);
    let (_, all) = req(port, "GET", &format!("/{DB}/_all_docs"), None);
    assert_eq!(all["rows"], json!([]), "{all}");
    assert_eq!(req(port, "GET", &format!("/{DB}/_local/rhizome-context"), None).0, 404);
    // The member's plain documents go through; an admin's design document too.
    assert_eq!(bob("POST", &format!("/{DB}/_transaction"), &json!({"ops": [{"id": "a", "set": {"n": 1}}]})).0, 200);
    assert_eq!(req(port, "POST", &format!("/{DB}/_bulk_docs"), Some(&json!({"all_or_nothing": true, "docs": [{"_id": "_design/x", "views": {}}]}))).0, 201);
}

#[test]
fn a_sigkill_during_transfers_loses_no_answered_transaction_and_leaves_none_half_applied() {
    let data = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(data.path());
    setup(&server);
    let port = server.port;
    let answered: Arc<Mutex<Vec<String>>> = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (answered, count) = (answered.clone(), count.clone());
            std::thread::spawn(move || {
                for n in 0.. {
                    let (from, to, amount) = pick(t, n);
                    let h = format!("hist:{t}:{n}");
                    let ok = if n % 2 == 0 {
                        let ops = json!({"ops": [
                            {"id": format!("acct:{from}"), "inc": {"balance": -amount}},
                            {"id": format!("acct:{to}"), "inc": {"balance": amount}},
                            {"id": h, "put": {"from": from, "to": to, "amount": amount}},
                        ]});
                        matches!(try_request(port, "POST", &format!("/{DB}/_transaction"), Some(ADMIN), Some(&ops.to_string()), &[]), Ok((200, _)))
                    } else {
                        let Ok((200, text)) = try_request(port, "POST", &format!("/{DB}/_bulk_get"), Some(ADMIN), Some(&json!({"docs": [{"id": format!("acct:{from}")}, {"id": format!("acct:{to}")}]}).to_string()), &[]) else { return };
                        let v: Value = serde_json::from_str(&text).unwrap();
                        let mut da = v["results"][0]["docs"][0]["ok"].clone();
                        let mut db = v["results"][1]["docs"][0]["ok"].clone();
                        da["balance"] = json!(da["balance"].as_i64().unwrap() - amount);
                        db["balance"] = json!(db["balance"].as_i64().unwrap() + amount);
                        let body = json!({"all_or_nothing": true, "docs": [da, db, {"_id": h, "from": from, "to": to, "amount": amount}]});
                        match try_request(port, "POST", &format!("/{DB}/_bulk_docs"), Some(ADMIN), Some(&body.to_string()), &[]) {
                            Ok((201, _)) => true,
                            Ok((409, _)) => false,
                            _ => return,
                        }
                    };
                    if ok {
                        answered.lock().unwrap().push(h);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::Relaxed) < 200 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill(); // SIGKILL, writers mid-request
    for w in writers {
        w.join().unwrap();
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= 200, "only {} transfers before the deadline", answered.len());
    let server = ServerProcess::start(data.path());
    for h in &answered {
        assert_eq!(req(server.port, "GET", &format!("/{DB}/{h}"), None).0, 200, "{h} was answered before the kill but is gone");
    }
    // Every history present has its balances applied, and no more.
    let history = check_books(server.port);
    assert!(history >= answered.len());
}

/// Group commit under a kill: 32 clients run transactions that all
/// increment one hot document (as TPC-B's branch row), so the server runs
/// them many to a commit (one fsync per group, each answered after its
/// group's). A SIGKILL mid-run loses no answered transaction, and of the
/// groups cut short nothing is half there: the hot counter equals the
/// number of transactions kept, and every balance its history.
#[test]
fn a_sigkill_during_grouped_transactions_on_one_hot_document_loses_no_answered_one() {
    let data = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(data.path());
    setup(&server);
    let port = server.port;
    assert_eq!(req(port, "PUT", &format!("/{DB}/branch"), Some(&json!({"n": 0}))).0, 201);
    let answered: Arc<Mutex<Vec<String>>> = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..32)
        .map(|t| {
            let (answered, count) = (answered.clone(), count.clone());
            std::thread::spawn(move || {
                for n in 0.. {
                    let (from, to, amount) = pick(t, n);
                    let h = format!("hist:{t}:{n}");
                    let ops = json!({"ops": [
                        {"id": "branch", "inc": {"n": 1}},
                        {"id": format!("acct:{from}"), "inc": {"balance": -amount}},
                        {"id": format!("acct:{to}"), "inc": {"balance": amount}},
                        {"id": h, "put": {"from": from, "to": to, "amount": amount}},
                    ]});
                    match try_request(port, "POST", &format!("/{DB}/_transaction"), Some(ADMIN), Some(&ops.to_string()), &[]) {
                        Ok((200, _)) => {
                            answered.lock().unwrap().push(h);
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                        // No status line: the server is gone (killed).
                        Ok((0, _)) | Err(_) => return,
                        Ok((status, body)) => panic!("_transaction answered {status}: {body}"),
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while count.load(Ordering::Relaxed) < 600 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill(); // SIGKILL, groups mid-commit
    for w in writers {
        w.join().unwrap();
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= 600, "only {} transactions before the deadline", answered.len());
    let server = ServerProcess::start(data.path());
    for h in &answered {
        assert_eq!(req(server.port, "GET", &format!("/{DB}/{h}"), None).0, 200, "{h} was answered before the kill but is gone");
    }
    let history = check_books(server.port);
    assert!(history >= answered.len());
    let (status, branch) = req(server.port, "GET", &format!("/{DB}/branch"), None);
    assert_eq!(status, 200);
    assert_eq!(branch["n"].as_u64(), Some(history as u64), "the hot document counts every transaction kept, and only those");
}

/// In a partitioned database (CouchDB 3) every id is `partition:docid`:
/// both transaction doors refuse one without a partition as CouchDB's
/// `_bulk_docs` does (400 `illegal_docid`), with nothing written.
#[test]
fn a_partitioned_databases_transactions_refuse_ids_without_a_partition() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let port = server.port;
    assert_eq!(req(port, "PUT", "/p?partitioned=true", None).0, 201);
    let (s, v) = req(port, "POST", "/p/_transaction", Some(&json!({"ops": [{"id": "a:1", "set": {"n": 1}}, {"id": "plain", "set": {"n": 1}}]})));
    assert_eq!((s, v["error"].as_str(), v["op"].as_u64()), (400, Some("illegal_docid"), Some(1)), "{v}");
    let (s, v) = req(port, "POST", "/p/_bulk_docs", Some(&json!({"all_or_nothing": true, "docs": [{"_id": "a:2"}, {"_id": "plain"}]})));
    assert_eq!(s, 400, "{v}");
    let (_, all) = req(port, "GET", "/p/_all_docs", None);
    assert_eq!(all["rows"], json!([]), "{all}");
    // With partitions, both write.
    assert_eq!(req(port, "POST", "/p/_transaction", Some(&json!({"ops": [{"id": "a:1", "set": {"n": 1}}]}))).0, 200);
    assert_eq!(req(port, "POST", "/p/_bulk_docs", Some(&json!({"all_or_nothing": true, "docs": [{"_id": "a:2"}]}))).0, 201);
    let (_, info) = req(port, "GET", "/p/_partition/a", None);
    assert_eq!(info["doc_count"], 2, "{info}");
}

/// The writer keeps a hot document's decoded record between transactions
/// (`rhizome-docs`' `hot_docs.rs`); a write of it through any other door
/// must be what the next `_transaction` reads and edits.
#[test]
fn a_hot_document_written_through_each_other_door_is_read_as_committed_by_the_next_transaction() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let port = server.port;
    assert_eq!(req(port, "PUT", &format!("/{DB}"), None).0, 201);
    let txn = |ops: Value| {
        let (s, v) = req(port, "POST", &format!("/{DB}/_transaction"), Some(&json!({ "ops": ops })));
        assert_eq!(s, 200, "{v}");
        v["results"][0]["doc"].clone()
    };
    let inc = |by: i64| txn(json!([{"id": "b:1", "inc": {"balance": by}}]));
    // What a transaction reads is what a plain read gives.
    let read = || {
        let in_txn = txn(json!([{"id": "b:1", "get": true}]));
        let (s, plain) = req(port, "GET", &format!("/{DB}/b:1"), None);
        assert_eq!(s, 200, "{plain}");
        assert_eq!(in_txn, plain);
        plain
    };
    let hot = || {
        for _ in 0..3 {
            inc(1);
        }
        read()
    };
    assert_eq!(req(port, "PUT", &format!("/{DB}/b:1"), Some(&json!({"balance": 0}))).0, 201);
    assert_eq!(hot()["balance"], 3);

    // A PUT.
    let rev = read()["_rev"].clone();
    assert_eq!(req(port, "PUT", &format!("/{DB}/b:1"), Some(&json!({"_rev": rev, "balance": 100, "by": "put"}))).0, 201);
    assert_eq!((read()["balance"].clone(), read()["by"].clone()), (json!(100), json!("put")));
    assert_eq!(inc(1)["balance"], 101);
    assert_eq!(hot()["balance"], 104);

    // `_bulk_docs`.
    let rev = read()["_rev"].clone();
    let (s, v) = req(port, "POST", &format!("/{DB}/_bulk_docs"), Some(&json!({"docs": [{"_id": "b:1", "_rev": rev, "balance": 200}]})));
    assert_eq!(s, 201, "{v}");
    assert_eq!(read()["balance"], 200);
    assert_eq!(inc(1)["balance"], 201);
    assert_eq!(hot()["balance"], 204);

    // Replication (`new_edits=false`): a longer branch wins.
    let branch = json!({"_id": "b:1", "_rev": "90-ffff", "_revisions": {"start": 90, "ids": ["ffff", "eeee"]}, "balance": 500});
    let (s, v) = req(port, "POST", &format!("/{DB}/_bulk_docs"), Some(&json!({"new_edits": false, "docs": [branch]})));
    assert_eq!(s, 201, "{v}");
    assert_eq!((read()["_rev"].clone(), read()["balance"].clone()), (json!("90-ffff"), json!(500)));
    assert_eq!(inc(1)["balance"], 501);
    let winner = hot()["_rev"].clone();

    // A purge of the winning branch: the other one wins again.
    let (s, v) = req(port, "POST", &format!("/{DB}/_purge"), Some(&json!({ "b:1": [winner] })));
    assert_eq!(s, 201, "{v}");
    assert_eq!(read()["balance"], 204);
    assert_eq!(hot()["balance"], 207);

    // Compaction.
    let (s, v) = req(port, "POST", &format!("/{DB}/_compact"), Some(&json!({})));
    assert!((200..300).contains(&s), "{s} {v}");
    assert_eq!(read()["balance"], 207);
    assert_eq!(inc(1)["balance"], 208);
    hot();

    // A SPARQL Update of the document's graph (`b:1` is an absolute IRI:
    // its own graph's name) makes a revision the next transaction edits.
    let rev = read()["_rev"].clone();
    let (s, body) = sparql(port, "update", "INSERT DATA { GRAPH <b:1> { <b:1> <http://bank.example/audited> true } }");
    assert!((200..300).contains(&s), "{s} {body}");
    assert_ne!(read()["_rev"], rev, "the graph write made a revision");
    let after = inc(1);
    assert_eq!(after["balance"], 212);
    assert_eq!(read(), after);
}
