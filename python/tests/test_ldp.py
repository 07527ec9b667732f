"""LDP from Python (rhizome.Ldp): resources as rdflib graphs, in process,
over the same index and ETags as the server's /{db}/_ldp/."""

import pytest

import rhizome

rdflib = pytest.importorskip("rdflib")
from rdflib import Graph, Literal, URIRef  # noqa: E402

LDP = "http://www.w3.org/ns/ldp#"
RDF_TYPE = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
EX = "http://example.com/"


@pytest.fixture
def db(folder):
    return folder.database("fruit")


@pytest.fixture
def ldp(db):
    return rhizome.Ldp(db)


def fruit(iri, name):
    g = Graph()
    g.add((URIRef(iri), URIRef(EX + "name"), Literal(name)))
    g.add((URIRef(iri), RDF_TYPE, URIRef(EX + "Fruit")))
    return g


def test_put_then_get_gives_the_graph_with_its_ldp_types(ldp):
    iri = ldp.iri("/pomegranate")
    assert iri == ldp.root + "pomegranate"
    etag = ldp.put("/pomegranate", fruit(iri, "Pomegranate"))
    assert etag.startswith('"1-')
    g = ldp.get("/pomegranate")
    assert isinstance(g, Graph)
    assert g.identifier == URIRef(iri)
    assert (URIRef(iri), URIRef(EX + "name"), Literal("Pomegranate")) in g
    assert (URIRef(iri), RDF_TYPE, URIRef(EX + "Fruit")) in g
    assert (URIRef(iri), RDF_TYPE, URIRef(LDP + "RDFSource")) in g
    assert ldp.etag("/pomegranate") == etag
    assert ldp.etag(iri) == etag
    assert ldp.etag("/nothing") is None
    with pytest.raises(rhizome.NotFound):
        ldp.get("/nothing")


def test_put_replaces_and_stale_etag_is_a_conflict(ldp):
    iri = ldp.iri("/fig")
    etag1 = ldp.put("/fig", fruit(iri, "Fig"))
    etag2 = ldp.put("/fig", fruit(iri, "Common fig"), if_match=etag1)
    assert etag2 != etag1 and etag2.startswith('"2-')
    names = set(ldp.get("/fig").objects(URIRef(iri), URIRef(EX + "name")))
    assert names == {Literal("Common fig")}
    with pytest.raises(rhizome.Conflict):
        ldp.put("/fig", fruit(iri, "stale"), if_match=etag1)
    with pytest.raises(rhizome.Conflict):
        ldp.delete("/fig", if_match=etag1)
    with pytest.raises(rhizome.Conflict):
        ldp.put("/never", fruit(ldp.iri("/never"), "x"), if_match=etag1)
    assert set(ldp.get("/fig").objects(URIRef(iri), URIRef(EX + "name"))) == {Literal("Common fig")}


def test_post_with_slug_makes_a_child_the_container_lists(ldp):
    ldp.put("/basket", Graph(), container=True)
    assert (URIRef(ldp.iri("/basket")), RDF_TYPE, URIRef(LDP + "BasicContainer")) in ldp.get("/basket")
    before = ldp.etag("/basket")
    path, etag = ldp.post("/basket", fruit("http://example.com/x", "Apple"), slug="apple pie")
    assert path == "/basket/apple-pie"
    assert ldp.etag(path) == etag
    # The container's ETag follows its children.
    assert ldp.etag("/basket") != before
    again, _ = ldp.post("/basket", Graph(), slug="apple pie")
    assert again != path and again.startswith("/basket/")
    anon, _ = ldp.post("/basket", Graph())
    g = ldp.get("/basket")
    children = set(g.objects(URIRef(ldp.iri("/basket")), URIRef(LDP + "contains")))
    assert children == {URIRef(ldp.iri(p)) for p in (path, again, anon)}
    # The root container lists the basket.
    assert (URIRef(ldp.root), URIRef(LDP + "contains"), URIRef(ldp.iri("/basket"))) in ldp.get("/")


def test_server_managed_triples_and_missing_parents_are_refused(ldp):
    iri = ldp.iri("/c")
    ldp.put("/c", Graph(), container=True)
    bad = Graph()
    bad.add((URIRef(iri), URIRef(LDP + "contains"), URIRef(EX + "x")))
    with pytest.raises(ValueError, match="contains"):
        ldp.put("/c", bad)
    with pytest.raises(ValueError, match="does not exist"):
        ldp.put("/nowhere/x", Graph())
    ldp.put("/leaf", Graph())
    with pytest.raises(ValueError, match="not a container"):
        ldp.post("/leaf", Graph())
    with pytest.raises(ValueError, match="reserved"):
        ldp.put("/_x", Graph())
    # A container's representation, with its ldp:contains, can be put back.
    ldp.post("/c", Graph(), slug="kid")
    g = ldp.get("/c")
    g.add((URIRef(iri), URIRef(EX + "label"), Literal("C")))
    ldp.put("/c", g, if_match=ldp.etag("/c"))
    assert (URIRef(iri), URIRef(EX + "label"), Literal("C")) in ldp.get("/c")


def test_delete_removes_a_container_and_its_children(ldp):
    ldp.put("/box", Graph(), container=True)
    kid, _ = ldp.post("/box", fruit("http://example.com/k", "Kiwi"), slug="kiwi")
    ldp.delete("/box", if_match=ldp.etag("/box"))
    assert ldp.etag("/box") is None and ldp.etag(kid) is None
    assert (URIRef(ldp.root), URIRef(LDP + "contains"), URIRef(ldp.iri("/box"))) not in ldp.get("/")
    with pytest.raises(rhizome.NotFound):
        ldp.delete("/box")
    # The URI of a deleted resource is not reused.
    with pytest.raises(ValueError, match="deleted"):
        ldp.put("/box", Graph())


def test_what_ldp_writes_documents_and_sparql_read(db, ldp):
    iri = ldp.iri("/plum")
    etag = ldp.put("/plum", fruit(iri, "Plum"))
    doc = db.get(iri)
    assert etag == f'"{doc["_rev"]}"'
    rows = list(db.store.query(f"SELECT ?n WHERE {{ GRAPH <{iri}> {{ <{iri}> <{EX}name> ?n }} }}"))
    assert [r["n"].value for r in rows] == ["Plum"]
    # A document write through the CouchDB door moves the ETag.
    ldp.put("/plum", fruit(iri, "Plum 2"), if_match=etag)
    assert db.get(iri)["_rev"].startswith("2-")
    assert [c["id"] for c in db.changes()["results"]].count(iri) == 1


def test_read_only_databases_refuse_ldp_writes(tmp_path):
    with rhizome.open(tmp_path / "d") as f:
        rhizome.Ldp(f.database("fruit")).put("/a", Graph())
    with rhizome.open(tmp_path / "d", read_only=True) as f:
        ldp = rhizome.Ldp(f.database("fruit"))
        assert len(ldp.get("/a")) == 2
        with pytest.raises(PermissionError):
            ldp.put("/b", Graph())


def test_validate_doc_update_binds_ldp_writes(db, ldp):
    """The database's validation functions see each LDP write's document
    (its graph), as they do over HTTP; a refusal raises Forbidden and
    writes nothing."""
    db.put({"_id": "_design/rules", "validate_doc_update": """function (newDoc) {
        if (newDoc._deleted) throw({forbidden: 'no deletions'});
        if (JSON.stringify(newDoc).indexOf('Durian') >= 0) throw({forbidden: 'no durians'});
    }"""})
    iri = ldp.iri("/durian")
    with pytest.raises(rhizome.Forbidden, match="no durians"):
        ldp.put("/durian", fruit(iri, "Durian"))
    with pytest.raises(KeyError):
        ldp.get("/durian")
    etag = ldp.put("/fig", fruit(ldp.iri("/fig"), "Fig"))
    with pytest.raises(rhizome.Forbidden, match="no durians"):
        ldp.put("/fig", fruit(ldp.iri("/fig"), "Durian"), if_match=etag)
    assert (URIRef(ldp.iri("/fig")), URIRef(EX + "name"), Literal("Fig")) in ldp.get("/fig")
    with pytest.raises(rhizome.Forbidden, match="no deletions"):
        ldp.delete("/fig")
    assert len(ldp.get("/fig")) > 0
