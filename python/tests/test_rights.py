"""The rules every door keeps (issue 44, point 1), from Python: in process,
writes run with a database admin's rights (the data folder is the caller's),
and still keep the rules nobody may break: design documents have no graph,
graph writes reach only this database's documents, and LDP resources keep
their server-managed triples, interaction models and parents, whichever of
db.update, db.put or db.bulk_docs writes them."""

import pytest

import rhizome

LDP = "http://www.w3.org/ns/ldp#"
G = "http://localhost:5984/db/"


@pytest.fixture
def db(folder):
    return folder.database("db")


@pytest.fixture
def ldp(db):
    return rhizome.Ldp(db)


def graph_holds(db, graph, pattern="?s ?p ?o"):
    return bool(db.store.query(f"ASK {{ GRAPH <{graph}> {{ {pattern} }} }}"))


def test_graph_writes_never_reach_a_design_document(db):
    db.put({"_id": "_design/app", "views": {"all": {"map": "function (doc) { emit(doc._id, null); }"}}})
    rev = db.get("_design/app")["_rev"]
    with pytest.raises(rhizome.Forbidden, match="design document"):
        db.update(f'INSERT DATA {{ GRAPH <{G}_design/app> {{ <{G}_design/app> <http://e/vdu> "function () {{ throw({{forbidden: 1}}); }}" }} }}')
    assert db.get("_design/app")["_rev"] == rev
    assert "validate_doc_update" not in db.get("_design/app")
    assert not graph_holds(db, f"{G}_design/app")


@pytest.mark.parametrize("graph", [f"{G}_local/rhizome-context", f"{G}_security", "http://localhost:5984/other/doc"])
def test_graph_writes_reach_only_this_databases_documents(db, graph):
    with pytest.raises(rhizome.Forbidden):
        db.update(f"INSERT DATA {{ GRAPH <{G}fine> {{ <http://e/s> <http://e/p> 1 }} GRAPH <{graph}> {{ <http://e/s> <http://e/p> 1 }} }}")
    assert not graph_holds(db, f"{G}fine") and not graph_holds(db, graph), "nothing written"
    with pytest.raises(rhizome.Forbidden):
        db.put({"_id": "http://localhost:5984/other/doc", "@id": "http://e/s", "http://e/p": 1})


def test_ldp_rules_hold_for_sparql_updates_and_documents(db, ldp):
    from rdflib import Graph

    ldp.put("/c", Graph(), container=True)
    ldp.put("/r", Graph())
    c, r = ldp.iri("/c"), ldp.iri("/r")
    # ldp:contains is nobody's to state.
    with pytest.raises(rhizome.Conflict, match="contains"):
        db.update(f"INSERT DATA {{ GRAPH <{c}> {{ <{c}> <{LDP}contains> <{ldp.root}forged> }} }}")
    doc = db.get(c)
    doc["@graph"][0][f"{LDP}contains"] = [{"@id": f"{ldp.root}forged"}]
    with pytest.raises(rhizome.Conflict, match="contains"):
        db.put(doc)
    # An RDF source stays one.
    with pytest.raises(rhizome.Conflict, match="interaction model"):
        db.update(f"INSERT DATA {{ GRAPH <{r}> {{ <{r}> a <{LDP}BasicContainer> }} }}")
    # No resource under a parent that does not exist, or is no container.
    for path in ["nope/child", "r/child"]:
        iri = ldp.root + path
        with pytest.raises(rhizome.Conflict):
            db.put({"_id": iri, "@id": iri, "http://e/p": 1})
        with pytest.raises(rhizome.Conflict):
            db.update(f"INSERT DATA {{ GRAPH <{iri}> {{ <{iri}> <http://e/p> 1 }} }}")
        assert ldp.etag("/" + path) is None
    assert ldp.etag("/c") is not None and ldp.etag("/r") is not None
    # A container's own triples are fine, through any door.
    db.update(f'INSERT DATA {{ GRAPH <{c}> {{ <{c}> <http://e/title> "C" }} }}')
    assert graph_holds(db, c, f'<{c}> <http://e/title> "C"')
