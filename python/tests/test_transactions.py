"""db.transaction(): documents and quads at one snapshot, committed all
or nothing (issue 45)."""

import threading

import pytest

import rhizome

EX = "http://example.com/"
ACCOUNTS = 8
START = 1000


def bank(folder):
    db = folder.database("bank")
    db.bulk_docs([{"_id": f"acct:{i}", "balance": START} for i in range(ACCOUNTS)])
    return db


def test_a_transaction_commits_documents_and_quads_together(folder):
    db = bank(folder)
    g = rhizome.NamedNode(EX + "ledger")
    p = rhizome.NamedNode(EX + "total")
    with db.transaction() as t:
        a = t.get("acct:0")
        a["balance"] -= 5
        t.put(a)
        t.put({"_id": "hist:1", "from": 0, "amount": 5})
        t.add(rhizome.Quad(g, p, rhizome.Literal("5", datatype=rhizome.NamedNode("http://www.w3.org/2001/XMLSchema#integer")), g))
        assert t.get("acct:0")["balance"] == START - 5, "a transaction reads its own writes"
    assert db.get("acct:0")["balance"] == START - 5
    assert db.get("hist:1")["amount"] == 5
    assert [str(q.object.value) for q in db.store.quads_for_pattern(None, p, None)] == ["5"]
    # The graph is a document of its own, in _changes.
    assert EX + "ledger" in [c["id"] for c in db.changes()["results"]]


def test_a_conflict_raises_and_writes_nothing(folder):
    db = bank(folder)
    t = db.transaction()
    a = t.get("acct:1")
    db.put({"_id": "acct:1", "_rev": db.get("acct:1")["_rev"], "balance": 1})
    assert t.get("acct:1")["balance"] == START, "reads stay at the snapshot"
    a["balance"] = 0
    t.put(a)
    t.put({"_id": "acct:2", "balance": 0})
    with pytest.raises(rhizome.Conflict, match="acct:1"):
        t.commit()
    assert db.get("acct:1")["balance"] == 1
    assert db.get("acct:2")["balance"] == START
    with pytest.raises(rhizome.RhizomeError):
        t.commit()


def test_an_exception_in_the_block_writes_nothing(folder):
    db = bank(folder)
    with pytest.raises(ZeroDivisionError):
        with db.transaction() as t:
            t.put({"_id": "acct:3", "_rev": t.get("acct:3")["_rev"], "balance": 0})
            1 / 0
    assert db.get("acct:3")["balance"] == START


def test_validation_functions_see_a_transactions_documents(folder):
    db = bank(folder)
    db.put({"_id": "_design/rules", "validate_doc_update": "function(n) { if (n.balance < 0) throw({forbidden: 'no overdraft'}); }"})
    with pytest.raises(rhizome.Forbidden):
        with db.transaction() as t:
            t.put({"_id": "acct:4", "balance": START + 1})
            t.put({"_id": "acct:5", "balance": -1})
    assert db.get("acct:4")["balance"] == START


def test_concurrent_transfers_from_threads_keep_every_balance_equal_to_its_history(folder):
    db = bank(folder)
    conflicts = []

    def client(n):
        for k in range(25):
            src, dst, amount = (n + k) % ACCOUNTS, (n + 2 * k + 1) % ACCOUNTS, 1 + k % 7
            if src == dst:
                dst = (dst + 1) % ACCOUNTS
            while True:
                try:
                    with db.transaction() as t:
                        a, b = t.get(f"acct:{src}"), t.get(f"acct:{dst}")
                        a["balance"] -= amount
                        b["balance"] += amount
                        t.put(a)
                        t.put(b)
                        t.put({"_id": f"hist:{n}:{k}", "from": src, "to": dst, "amount": amount})
                    break
                except rhizome.Conflict:
                    conflicts.append(1)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    expected = [START] * ACCOUNTS
    history = [r["doc"] for r in db.all_docs(include_docs=True)["rows"] if r["id"].startswith("hist:")]
    assert len(history) == 6 * 25
    for h in history:
        expected[h["from"]] -= h["amount"]
        expected[h["to"]] += h["amount"]
    assert [db.get(f"acct:{i}")["balance"] for i in range(ACCOUNTS)] == expected
