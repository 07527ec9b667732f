"""The GIL is released while the store works: threads write and read at
once, and iterators stay on their snapshots."""

import threading

import rhizome
from rhizome import Literal, Quad

from conftest import ex


def test_threads_write_and_read_at_once(tmp_path):
    store = rhizome.Store(tmp_path / "s")
    errors = []

    def writer(n):
        try:
            for i in range(50):
                store.add(Quad(ex(f"w{n}"), ex("p"), Literal(str(i))))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def reader():
        try:
            for _ in range(50):
                for row in store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"):
                    assert int(row["n"].value) <= 200
                sum(1 for _ in store.quads_for_pattern(None, ex("p"), None))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store) == 200


def test_a_database_shared_by_threads_keeps_every_revision(folder):
    db = folder.database("counters")
    db.put({"_id": "c", "n": 0})
    conflicts = []

    def bump():
        for _ in range(20):
            while True:
                doc = db.get("c")
                doc["n"] += 1
                try:
                    db.put(doc)
                    break
                except rhizome.Conflict:
                    conflicts.append(1)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    doc = db.get("c")
    assert doc["n"] == 80
    assert doc["_rev"].startswith("81-")
