//! Transactions across documents and graphs (issue 45), in process: the
//! Rust API's `DocTransaction` (snapshot reads, optimistic commit), the
//! all-or-nothing write and the server-side operations, under concurrent
//! transfers between accounts.

use oxrdf::{GraphName, Literal, NamedNode, Quad, Term};
use rhizome_docs::{parse_ops, Database, DocError, Writer};
use serde_json::{json, Map, Value};
use std::sync::Arc;

const ACCOUNTS: usize = 12;
const START: i64 = 1000;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn bank() -> Arc<Database> {
    let db = Arc::new(Database::memory());
    let docs = (0..ACCOUNTS).map(|i| obj(json!({"_id": format!("acct:{i}"), "balance": START}))).collect();
    for (_, o) in db.update_docs(docs, true).unwrap() {
        o.unwrap();
    }
    db
}

fn balance(db: &Database, i: usize) -> i64 {
    db.get_doc(&format!("acct:{i}"), &Default::default()).unwrap()["balance"].as_i64().unwrap()
}

/// Every balance equals its start plus its history, the money is all
/// there, and there is one history document per transfer answered.
fn check_books(db: &Database, transfers: usize) {
    let all = db.all_docs(&rhizome_docs::AllDocsOptions { include_docs: true, start_key: Some("hist:".into()), end_key: Some("hist;".into()), ..Default::default() }).unwrap();
    assert_eq!(all.rows.len(), transfers, "one history document per committed transfer");
    let mut expected = vec![START; ACCOUNTS];
    for row in &all.rows {
        let h = &row["doc"];
        let amount = h["amount"].as_i64().unwrap();
        expected[h["from"].as_u64().unwrap() as usize] -= amount;
        expected[h["to"].as_u64().unwrap() as usize] += amount;
    }
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(balance(db, i), *want, "acct:{i} disagrees with its history");
    }
    assert_eq!((0..ACCOUNTS).map(|i| balance(db, i)).sum::<i64>(), START * ACCOUNTS as i64);
}

fn pick(t: usize, n: usize) -> (usize, usize, i64) {
    let from = (t * 7 + n * 3) % ACCOUNTS;
    let to = (from + 1 + (n + t) % (ACCOUNTS - 1)) % ACCOUNTS;
    (from, to, 1 + ((t + n) % 9) as i64)
}

#[test]
fn concurrent_transfers_through_doc_transactions_keep_every_balance_equal_to_its_history() {
    let db = bank();
    let (threads, each) = (8, 40);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut conflicts = 0;
                for n in 0..each {
                    let (from, to, amount) = pick(t, n);
                    loop {
                        let mut txn = db.begin().unwrap();
                        let mut a = txn.get(&format!("acct:{from}")).unwrap().unwrap();
                        let mut b = txn.get(&format!("acct:{to}")).unwrap().unwrap();
                        a["balance"] = json!(a["balance"].as_i64().unwrap() - amount);
                        b["balance"] = json!(b["balance"].as_i64().unwrap() + amount);
                        txn.put(a).unwrap();
                        txn.put(b).unwrap();
                        txn.put(obj(json!({"_id": format!("hist:{t}:{n}"), "from": from, "to": to, "amount": amount}))).unwrap();
                        match txn.commit(None) {
                            Ok(written) => {
                                assert_eq!(written.len(), 3);
                                break;
                            }
                            Err(DocError::Coded { status: 409, .. }) => conflicts += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let conflicts: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    eprintln!("{conflicts} conflicts retried");
    check_books(&db, threads * each);
}

#[test]
fn a_transaction_reads_its_snapshot_and_loses_to_a_write_after_it() {
    let db = bank();
    let mut txn = db.begin().unwrap();
    let a = txn.get("acct:0").unwrap().unwrap();
    // Another writer changes acct:0 after the snapshot.
    let other = db.apply_ops(&parse_ops(&obj(json!({"ops": [{"id": "acct:0", "inc": {"balance": 5}}]}))).unwrap(), None, Writer::Admin).unwrap().unwrap();
    assert_eq!(other[0].doc.as_ref().unwrap()["balance"], json!(START + 5));
    // The transaction still reads its snapshot.
    assert_eq!(txn.get("acct:0").unwrap().unwrap()["balance"], json!(START));
    let mut a = a;
    a["balance"] = json!(0);
    txn.put(a).unwrap();
    txn.put(obj(json!({"_id": "acct:1", "balance": 2 * START}))).unwrap();
    match txn.commit(None) {
        Err(DocError::Coded { status: 409, reason, .. }) => assert!(reason.contains("acct:0"), "{reason}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    // Nothing of it was written: not even the document that did not conflict.
    assert_eq!(balance(&db, 0), START + 5);
    assert_eq!(balance(&db, 1), START);
}

#[test]
fn documents_and_quads_commit_together_or_not_at_all() {
    let db = bank();
    let g = NamedNode::new("http://example.com/ledger").unwrap();
    let p = NamedNode::new("http://example.com/total").unwrap();
    let quad = |v: i64| Quad::new(g.clone(), p.clone(), Literal::from(v), GraphName::NamedNode(g.clone()));
    let mut txn = db.begin().unwrap();
    txn.insert_quad(quad(7).as_ref());
    txn.put(obj(json!({"_id": "acct:0", "balance": 1}))).unwrap();
    let written = txn.commit(None).unwrap();
    assert!(written.iter().any(|(id, _)| id == "acct:0"));
    let mut txn = db.begin().unwrap();
    assert_eq!(txn.quads(None, Some(&Term::NamedNode(p.clone())), None, Some(&Term::NamedNode(g.clone()))).unwrap(), vec![quad(7)]);
    // The graph is a document: its change is in `_changes`, after acct:0's.
    let changes = db.changes(&Default::default()).unwrap();
    let ids: Vec<&str> = changes.rows.iter().filter_map(|r| r["id"].as_str()).collect();
    assert!(ids.contains(&"http://example.com/ledger"), "{ids:?}");
    // A transaction that read the ledger graph and loses on it writes neither.
    txn.remove_quad(quad(7).as_ref());
    txn.insert_quad(quad(8).as_ref());
    txn.put(obj(json!({"_id": "acct:2", "balance": 0}))).unwrap();
    let mut other = db.begin().unwrap();
    other.insert_quad(quad(9).as_ref());
    other.commit(None).unwrap();
    assert!(matches!(txn.commit(None), Err(DocError::Coded { status: 409, .. })));
    assert_eq!(balance(&db, 2), START);
    let snapshot = db.begin().unwrap().quads(None, Some(&Term::NamedNode(p.clone())), None, None).unwrap();
    assert_eq!(snapshot.len(), 2, "7 and 9, not 8: {snapshot:?}");
}

#[test]
fn a_validation_refusal_after_the_quads_leaves_nothing() {
    let db = bank();
    let g = NamedNode::new("http://example.com/side").unwrap();
    let mut txn = db.begin().unwrap();
    txn.insert_quad(Quad::new(g.clone(), g.clone(), Literal::from(1), GraphName::NamedNode(g.clone())).as_ref());
    txn.put(obj(json!({"_id": "acct:3", "balance": -5}))).unwrap();
    let mut check = |new: &Map<String, Value>, _: Option<&Map<String, Value>>| -> Result<(), DocError> {
        match new.get("balance").and_then(Value::as_i64) {
            Some(b) if b < 0 => Err(DocError::Coded { status: 403, error: "forbidden", reason: "no overdraft".into() }),
            _ => Ok(()),
        }
    };
    assert!(matches!(txn.commit(Some(&mut check)), Err(DocError::Coded { status: 403, .. })));
    assert_eq!(balance(&db, 3), START);
    assert!(db.begin().unwrap().quads(None, None, None, Some(&Term::NamedNode(g))).unwrap().is_empty(), "the quads went with the refusal");
    assert_eq!(db.info().unwrap().update_seq, ACCOUNTS as u64);
}

#[test]
fn concurrent_server_side_operations_and_atomic_writes_lose_no_update() {
    let db = bank();
    let (threads, each) = (8, 40);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for n in 0..each {
                    let (from, to, amount) = pick(t, n);
                    if n % 2 == 0 {
                        let ops = parse_ops(&obj(json!({"ops": [
                            {"id": format!("acct:{from}"), "inc": {"balance": -amount}},
                            {"id": format!("acct:{to}"), "inc": {"balance": amount}},
                            {"id": format!("hist:{t}:{n}"), "put": {"from": from, "to": to, "amount": amount}},
                        ]})))
                        .unwrap();
                        db.apply_ops(&ops, None, Writer::Admin).unwrap().unwrap();
                    } else {
                        // Read with revisions, write all or nothing, retry.
                        loop {
                            let a = db.get_doc(&format!("acct:{from}"), &Default::default()).unwrap();
                            let b = db.get_doc(&format!("acct:{to}"), &Default::default()).unwrap();
                            let mut a2 = a.clone();
                            let mut b2 = b.clone();
                            a2["balance"] = json!(a["balance"].as_i64().unwrap() - amount);
                            b2["balance"] = json!(b["balance"].as_i64().unwrap() + amount);
                            let h = obj(json!({"_id": format!("hist:{t}:{n}"), "from": from, "to": to, "amount": amount}));
                            match db.write_atomic(vec![a2, b2, h], Writer::Admin).unwrap() {
                                Ok(_) => break,
                                Err(refused) => assert!(refused.iter().all(|(_, e)| matches!(e, DocError::Conflict)), "{refused:?}"),
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    check_books(&db, threads * each);
}

/// The rights rules (`rights.rs`) hold through every transaction door: a
/// member's design document or `_local/rhizome-context` is refused, with
/// nothing of the transaction written; an admin's design document is not.
#[test]
fn a_members_transactions_keep_the_rights_rules() {
    let db = bank();
    let seq = db.info().unwrap().update_seq;
    let design = obj(json!({"_id": "_design/app", "views": {}}));
    let plain = obj(json!({"_id": "plain", "n": 1}));
    for docs in [vec![plain.clone(), design.clone()], vec![plain.clone(), obj(json!({"_id": "_local/rhizome-context", "@context": {}}))]] {
        let refused = db.write_atomic(docs, Writer::Member).unwrap().unwrap_err();
        assert!(!refused.is_empty());
    }
    let ops = parse_ops(&obj(json!({"ops": [{"id": "acct:0", "inc": {"balance": 1}}, {"id": "_design/app", "put": {"views": {}}}]}))).unwrap();
    let (i, e) = db.apply_ops(&ops, None, Writer::Member).unwrap().unwrap_err();
    assert_eq!(i, 1);
    assert!(matches!(e, DocError::Coded { status: 403, .. }), "{e:?}");
    let mut txn = rhizome_docs::DocTransaction::new_as(&*db, Writer::Member).unwrap();
    txn.put(plain.clone()).unwrap();
    txn.put(design.clone()).unwrap();
    assert!(txn.commit(None).is_err());
    assert_eq!(db.info().unwrap().update_seq, seq, "nothing of the refused transactions was written");
    assert_eq!(balance(&db, 0), START);
    assert!(db.get_doc("plain", &Default::default()).is_err());
    // An admin's transaction writes the design document.
    let mut txn = db.begin_as(Writer::Admin).unwrap();
    txn.put(design).unwrap();
    txn.commit(None).unwrap();
}
