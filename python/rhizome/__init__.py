"""Rhizome in process: the store that ``rhizome serve`` serves, from Python.

RDF, shaped like pyoxigraph::

    import rhizome
    store = rhizome.Store()                      # in memory; Store("folder") on disk
    store.load(b"<http://e/s> <http://e/p> 1 .", format="ntriples")
    for q in store.quads_for_pattern(None, rhizome.NamedNode("http://e/p"), None):
        print(q.subject, q.object)
    for row in store.query("SELECT ?s WHERE { ?s ?p ?o }"):
        print(row["s"])

Documents, like a CouchDB client, in a server's data folder::

    db = rhizome.open("rhizome-data").database("people")
    rev = db.put({"_id": "alice", "name": "Alice"})
    db.put({"_id": "alice", "_rev": rev, "name": "Alice B."})

Transactions over documents and quads, at one snapshot, all or nothing::

    with db.transaction() as t:          # commits at the end of the block
        a, b = t.get("acct:1"), t.get("acct:2")
        a["balance"] -= 5; b["balance"] += 5
        t.put(a); t.put(b)               # raises rhizome.Conflict if either changed

LDP resources as rdflib graphs: ``rhizome.Ldp(db).get("/pomegranate")``.

rdflib: ``rdflib.Graph(store="Rhizome")`` (see ``rhizome.rdflib_store``)
and ``rhizome.to_rdflib`` / ``rhizome.from_rdflib`` for terms.

One process opens a store folder (or a database) at a time: a second one
gets ``StoreLocked``. Calls release the GIL while they read or write.
"""

from ._rhizome import (
    __version__,
    BlankNode,
    Conflict,
    DataFolder,
    Database,
    DefaultGraph,
    Forbidden,
    Literal,
    NamedNode,
    NotFound,
    Quad,
    QuadIterator,
    QuerySolution,
    QuerySolutions,
    QueryTriples,
    RhizomeError,
    Store,
    StoreLocked,
    Transaction,
    Triple,
    Variable,
    open,
)
from ._rdflib import from_rdflib, to_rdflib
from ._ldp import Ldp

__all__ = [
    "__version__",
    "BlankNode",
    "Conflict",
    "DataFolder",
    "Database",
    "DefaultGraph",
    "Forbidden",
    "Ldp",
    "Literal",
    "NamedNode",
    "NotFound",
    "Quad",
    "QuadIterator",
    "QuerySolution",
    "QuerySolutions",
    "QueryTriples",
    "RhizomeError",
    "Store",
    "StoreLocked",
    "Transaction",
    "Triple",
    "Variable",
    "from_rdflib",
    "open",
    "to_rdflib",
]
