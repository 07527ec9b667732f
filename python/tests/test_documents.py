"""The document side: rhizome.open(data_dir).database(name), CouchDB's
semantics."""

import subprocess
import sys

import pytest

import rhizome


def test_put_get_update_with_revision_checks(folder):
    db = folder.database("people")
    rev1 = db.put({"_id": "alice", "name": "Alice"})
    assert rev1.startswith("1-")
    assert db.get("alice") == {"_id": "alice", "_rev": rev1, "name": "Alice"}
    with pytest.raises(rhizome.Conflict):
        db.put({"_id": "alice", "name": "no rev"})
    with pytest.raises(rhizome.Conflict):
        db.put({"_id": "alice", "_rev": "1-00000000000000000000000000000000", "name": "stale"})
    rev2 = db.put({"_id": "alice", "_rev": rev1, "name": "Alice B"})
    assert rev2.startswith("2-")
    assert db.get("alice", rev=rev1)["name"] == "Alice"
    assert db.get("alice", revs=True)["_revisions"]["start"] == 2
    assert db.put({"name": "Bob"}, doc_id="bob").startswith("1-")
    assert "bob" in db and "carol" not in db


def test_delete_and_missing_documents(folder):
    db = folder.database("people")
    rev = db.put({"_id": "a"})
    with pytest.raises(rhizome.Conflict):
        db.delete("a", "1-00000000000000000000000000000000")
    db.delete("a", rev)
    with pytest.raises(rhizome.NotFound):
        db.get("a")
    with pytest.raises(KeyError):
        db.get("never")


def test_bad_documents_are_refused(folder):
    db = folder.database("people")
    with pytest.raises(ValueError):
        db.put({"name": "no id"})
    with pytest.raises(ValueError):
        db.put({"_id": "_bad"})
    with pytest.raises(TypeError):
        db.put({"_id": "x", "v": object()})
    with pytest.raises(TypeError):
        db.put(["not", "a", "dict"])
    with pytest.raises(ValueError):
        db.delete("a", "not-a-rev")
    with pytest.raises(ValueError):
        folder.database("Bad Name")


def test_bulk_docs_all_docs_and_changes(folder):
    db = folder.database("people")
    rev = db.put({"_id": "a", "v": 1})
    out = db.bulk_docs([{"_id": "b", "v": 2}, {"_id": "a", "v": 3}, {"v": 4}])
    assert out[0]["ok"] and out[0]["id"] == "b"
    assert out[1]["error"] == "conflict"
    assert out[2]["ok"] and len(out[2]["id"]) == 32
    db.bulk_docs([{"_id": "a", "_rev": rev, "v": 5}])
    rows = db.all_docs(include_docs=True)["rows"]
    assert [r["id"] for r in rows if len(r["id"]) == 1] == ["a", "b"]
    assert [r["doc"]["v"] for r in rows if r["id"] == "a"] == [5]
    assert db.all_docs(start_key="b", limit=1)["rows"][0]["id"] == "b"
    assert [r["id"] for r in db.all_docs(keys=["b", "a"])["rows"]] == ["b", "a"]
    ch = db.changes()
    assert ch["last_seq"] == 4
    assert [c["id"] for c in ch["results"]][-1] == "a"
    assert [c["id"] for c in db.changes(since=ch["last_seq"] - 1)["results"]] == ["a"]
    assert [c["id"] for c in db.changes(doc_ids=["b"])["results"]] == ["b"]
    assert [c["id"] for c in db.changes(selector={"v": {"$gt": 4}})["results"]] == ["a"]
    with pytest.raises(ValueError):
        db.changes(style="sideways")


def test_new_edits_false_stores_given_revisions(folder):
    db = folder.database("replica")
    out = db.bulk_docs([{"_id": "x", "_rev": "3-abc", "_revisions": {"start": 3, "ids": ["abc", "def", "ghi"]}, "v": 1}], new_edits=False)
    assert db.get("x")["_rev"] == "3-abc"
    assert out == [] or out[0].get("error") is None


def test_attachments(folder):
    db = folder.database("files")
    rev = db.put_attachment("doc", "hello.txt", b"hello", "text/plain")
    assert db.get_attachment("doc", "hello.txt") == (b"hello", "text/plain")
    assert db.get("doc")["_attachments"]["hello.txt"]["stub"] is True
    with pytest.raises(rhizome.Conflict):
        db.put_attachment("doc", "other.bin", b"\x00\x01", rev="1-00000000000000000000000000000000")
    rev = db.put_attachment("doc", "other.bin", b"\x00\x01", rev=rev)
    assert db.get_attachment("doc", "other.bin")[0] == b"\x00\x01"
    rev = db.delete_attachment("doc", "hello.txt", rev)
    with pytest.raises(rhizome.NotFound):
        db.get_attachment("doc", "hello.txt")
    with pytest.raises(rhizome.NotFound):
        db.delete_attachment("doc", "hello.txt", rev)


def test_find_and_views(folder):
    db = folder.database("people")
    db.bulk_docs([{"_id": f"p{i}", "age": i, "kind": "person"} for i in range(10)])
    found = db.find({"selector": {"age": {"$gte": 7}}, "fields": ["_id"]})
    assert sorted(d["_id"] for d in found["docs"]) == ["p7", "p8", "p9"]
    with pytest.raises(ValueError):
        db.find({"selector": "not an object"})
    db.put({"_id": "_design/stats", "views": {"by_age": {"map": "function (doc) { if (doc.kind) emit(doc.age, 1); }", "reduce": "_sum"}}})
    assert db.view("stats", "by_age")["rows"] == [{"key": None, "value": 10}]
    rows = db.view("stats", "by_age", reduce=False, start_key=8)["rows"]
    assert [r["id"] for r in rows] == ["p8", "p9"]
    with pytest.raises(rhizome.NotFound):
        db.view("stats", "nope")
    with pytest.raises(ValueError):
        db.put({"_id": "_design/bad", "views": {"v": {"map": "function ( {"}}})


def test_validate_doc_update_binds_python_writes(folder):
    """A design document's validation function refuses Python's writes as
    it refuses the server's, each door of the document API included; the
    writer is CouchDB's admin (the process owns the files)."""
    db = folder.database("checked")
    db.put({"_id": "before", "v": 1})
    db.put({"_id": "_design/rules", "validate_doc_update": """function (newDoc, oldDoc, userCtx, secObj) {
        if (userCtx.roles.indexOf('_admin') === -1) throw({unauthorized: 'admins only'});
        if (newDoc._deleted) { if (oldDoc.locked) throw({forbidden: 'locked'}); return; }
        if (typeof newDoc.v !== 'number') throw({forbidden: 'v must be a number'});
        if (oldDoc && newDoc.v < oldDoc.v) throw({forbidden: 'v only grows'});
    }"""})
    with pytest.raises(rhizome.Forbidden, match="v must be a number"):
        db.put({"_id": "a", "v": "one"})
    assert "a" not in db
    rev = db.put({"_id": "a", "v": 2})
    with pytest.raises(rhizome.Forbidden, match="v only grows"):
        db.put({"_id": "a", "_rev": rev, "v": 1})
    assert db.get("a")["v"] == 2
    # One refused document does not stop the others; each gets its outcome in order.
    out = db.bulk_docs([{"_id": "b", "v": 1}, {"_id": "c"}, {"_id": "_design/broken", "views": {"v": {"map": "function ( {"}}}, {"_id": "d", "v": 4}])
    assert out[0]["ok"] and out[0]["id"] == "b"
    assert (out[1]["id"], out[1]["error"], out[1]["reason"]) == ("c", "forbidden", "v must be a number")
    assert out[2]["id"] == "_design/broken" and out[2]["error"] == "compilation_error"
    assert out[3]["ok"] and out[3]["id"] == "d"
    assert "c" not in db and "_design/broken" not in db and "d" in db
    # Attachments and deletions are writes too.
    with pytest.raises(rhizome.Forbidden):
        db.put_attachment("e", "x.txt", b"x", "text/plain")
    locked = db.put({"_id": "locked", "v": 1, "locked": True})
    with pytest.raises(rhizome.Forbidden, match="locked"):
        db.delete("locked", locked)
    db.delete("a", db.get("a")["_rev"])
    # Replicated revisions are validated too, as CouchDB does.
    out = db.bulk_docs([{"_id": "r", "_rev": "1-abc", "v": "x"}], new_edits=False)
    assert out and out[0]["error"] == "forbidden"
    assert "r" not in db
    # A document written before the rule stays readable.
    assert db.get("before")["v"] == 1
    # SPARQL updates are document writes too: the whole update is refused.
    with pytest.raises(rhizome.Forbidden, match="v must be a number"):
        db.update("INSERT DATA { GRAPH <http://localhost:5984/checked/g> { <http://localhost:5984/checked/g> <http://ex/p> 1 } }")
    assert "g" not in db
    assert not db.store.query("ASK { GRAPH ?g { ?s <http://ex/p> ?o } }")


def test_documents_with_a_context_are_rdf(folder):
    db = folder.database("people")
    db.put({"_id": "alice", "@context": {"@vocab": "http://schema.org/"}, "name": "Alice"})
    names = [r["n"].value for r in db.store.query("SELECT ?n WHERE { ?s <http://schema.org/name> ?n }")]
    assert names == ["Alice"]
    assert db.info()["doc_count"] == 1


def test_one_process_per_database_and_read_only_opens(tmp_path):
    data = tmp_path / "data"
    f = rhizome.open(data)
    db = f.database("people")
    db.put({"_id": "a"})
    db.put({"_id": "_design/d", "views": {"ids": {"map": "function (doc) { emit(doc._id, null); }"}}})
    assert len(db.view("d", "ids")["rows"]) == 1
    f.database("odd$name(1)+x")
    assert f.databases() == ["odd$name(1)+x", "people"]
    assert f.database("people").get("a")["_id"] == "a"  # the same handle, shared
    code = "import rhizome, sys\ntry:\n    rhizome.open(sys.argv[1]).database('people')\nexcept rhizome.StoreLocked as e:\n    print('locked:', e)\n"
    out = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True, text=True, check=True).stdout
    assert out.startswith("locked:") and "one process" in out
    del db
    f.close()
    ro = rhizome.open(data, read_only=True)
    rdb = ro.database("people")
    assert rdb.get("a")["_id"] == "a"
    with pytest.raises(PermissionError):
        rdb.put({"_id": "b"})
    assert [r["id"] for r in rdb.view("d", "ids")["rows"]] == ["a"]  # from the index as it was
    with pytest.raises(rhizome.NotFound):
        ro.database("missing")
    assert ro.databases() == ["odd$name(1)+x", "people"]


def test_sparql_updates_are_document_writes(folder):
    db = folder.database("people")
    before = db.changes()["last_seq"]
    out = db.update('INSERT DATA { GRAPH <http://example.com/alice> { <http://example.com/alice> <http://schema.org/name> "Alice" } }')
    assert out["quads_inserted"] == 1
    changes = db.changes(since=before)["results"]
    assert len(changes) == 1
    assert db.info()["doc_count"] == 1
    rows = list(db.store.query("SELECT ?n WHERE { ?s <http://schema.org/name> ?n }"))
    assert [r["n"].value for r in rows] == ["Alice"]
    with pytest.raises(SyntaxError):
        db.update("INSERT NOTHING")
    with pytest.raises(PermissionError):
        db.store.add(rhizome.Quad(rhizome.NamedNode("http://e/a"), rhizome.NamedNode("http://e/b"), rhizome.Literal("c")))


def test_a_folder_a_server_runs_on_is_refused_and_the_other_way_round(tmp_path):
    """A server opens and closes its databases on demand, so the folder as
    a whole is its while it runs: ``rhizome.open`` raises ``StoreLocked``,
    and a server does not start on a folder a ``DataFolder`` holds."""
    import os
    import pathlib
    import socket
    import time
    import urllib.request

    root = pathlib.Path(__file__).resolve().parents[2]
    binary = os.environ.get("RHIZOME_BIN") or str(root / os.environ.get("CARGO_TARGET_DIR", "target") / "release" / "rhizome")
    data = tmp_path / "data"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = [binary, "--data", str(data), "serve", "--bind", f"127.0.0.1:{port}", "--quiet", "--admin", "admin:pw"]

    f = rhizome.open(data)
    f.database("people").put({"_id": "a"})
    refused = subprocess.run(serve, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "in use" in refused.stderr, refused.stderr
    f.close()

    proc = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:  # polling readiness, with a deadline
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_up", timeout=2).status == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
            time.sleep(0.05)
        # Even a database the server has not opened yet is refused.
        with pytest.raises(rhizome.StoreLocked, match="running server"):
            rhizome.open(data).database("others")
        with pytest.raises(rhizome.StoreLocked):
            rhizome.open(data, read_only=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert rhizome.open(data, read_only=True).database("people").get("a")["_id"] == "a"
