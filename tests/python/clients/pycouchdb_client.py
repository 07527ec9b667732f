"""pycouchdb (PyPI) against a live Rhizome server, driven by
crates/rhizome-cli/tests/clients.rs.

Usage: pycouchdb_client.py CHECK, with RHIZOME_URL and RHIZOME_CREDENTIALS
(`user:password`) set. Exits non-zero on the first failed check.
"""
import os
import sys
from urllib.parse import urlsplit

import pycouchdb

URL = os.environ["RHIZOME_URL"]
USER, PASSWORD = os.environ["RHIZOME_CREDENTIALS"].split(":", 1)
parts = urlsplit(URL)
SERVER = pycouchdb.Server(f"{parts.scheme}://{USER}:{PASSWORD}@{parts.netloc}/")


def fresh_db(name):
    try:
        SERVER.delete(name)
    except Exception:
        pass
    return SERVER.create(name)


def query_booleans():
    """pycouchdb passes Python booleans as query parameters, which
    `requests` writes `True` and `False`; CouchDB's view options take any
    case."""
    db = fresh_db("booleans")
    db.save_bulk([{"_id": f"d{n}", "kind": "odd" if n % 2 else "even", "n": n} for n in range(10)])
    db.save({"_id": "_design/k", "views": {"by_kind": {"map": "function (doc) { if (doc.kind) emit(doc.kind, doc.n); }", "reduce": "_sum"}}})
    grouped = db.query("k/by_kind", group=True, as_list=True)
    assert grouped == [{"key": "even", "value": 20}, {"key": "odd", "value": 25}], grouped
    rows = db.query("k/by_kind", reduce=False, descending=True, limit=2, as_list=True)
    assert [r["key"] for r in rows] == ["odd", "odd"], rows
    rows = db.all(descending=True, limit=3, as_list=True)
    assert [r["id"] for r in rows] == ["d9", "d8", "d7"], rows


if __name__ == "__main__":
    globals()[sys.argv[1]]()
    print("ok", sys.argv[1])
