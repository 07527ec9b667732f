"""rdflib: term conversions and the store plugin against rdflib's own
expectations (the Memory store does the same calls beside it)."""

import pytest

rdflib = pytest.importorskip("rdflib")

import rhizome  # noqa: E402
from rhizome.rdflib_store import RhizomeStore  # noqa: E402

EX = rdflib.Namespace("http://example.com/")


def test_terms_round_trip_through_rdflib():
    terms = [
        rdflib.URIRef("http://example.com/a"),
        rdflib.BNode("b1"),
        rdflib.Literal("plain"),
        rdflib.Literal("chat", lang="fr"),
        rdflib.Literal("5", datatype=rdflib.XSD.integer),
    ]
    for t in terms:
        assert rhizome.to_rdflib(rhizome.from_rdflib(t)) == t
    assert rhizome.from_rdflib(rdflib.Literal("5", datatype=rdflib.XSD.integer)) == rhizome.Literal("5", datatype=rhizome.NamedNode(str(rdflib.XSD.integer)))
    q = rhizome.Quad(rhizome.NamedNode("http://e/s"), rhizome.NamedNode("http://e/p"), rhizome.Literal("o"))
    assert rhizome.to_rdflib(q)[3] == rdflib.graph.DATASET_DEFAULT_GRAPH_ID
    with pytest.raises(TypeError):
        rhizome.from_rdflib(42)


@pytest.fixture(params=["Memory", "Rhizome"])
def kind(request):
    return request.param


def test_the_plugin_is_found_by_name():
    g = rdflib.Graph(store="Rhizome")
    assert isinstance(g.store, RhizomeStore)


def _fill(g):
    g.add((EX.alice, EX.knows, EX.bob))
    g.add((EX.alice, EX.age, rdflib.Literal(30)))
    g.add((EX.bob, EX.name, rdflib.Literal("Bob", lang="en")))
    b = rdflib.BNode()
    g.add((EX.bob, EX.address, b))
    g.add((b, EX.city, rdflib.Literal("Paris")))


def test_add_triples_remove_like_memory(kind):
    g = rdflib.Graph(store=kind)
    _fill(g)
    assert len(g) == 5
    assert set(g.objects(EX.alice, None)) == {EX.bob, rdflib.Literal(30)}
    (addr,) = g.objects(EX.bob, EX.address)
    assert g.value(addr, EX.city) == rdflib.Literal("Paris")
    assert (EX.alice, EX.knows, EX.bob) in g
    g.remove((EX.alice, None, None))
    assert len(g) == 3
    assert (EX.alice, EX.knows, EX.bob) not in g
    assert list(g.triples((rdflib.Literal("x"), None, None))) == []


def test_sparql_select_ask_construct_like_memory(kind):
    g = rdflib.Graph(store=kind)
    _fill(g)
    rows = list(g.query("SELECT ?who WHERE { ?who ex:knows ?x }", initNs={"ex": EX}))
    assert [r.who for r in rows] == [EX.alice]
    rows = list(g.query("SELECT ?x WHERE { ?who ex:knows ?x }", initNs={"ex": EX}, initBindings={"who": EX.alice}))
    assert [r.x for r in rows] == [EX.bob]
    assert g.query("ASK { ?s ?p ?o }").askAnswer is True
    c = g.query("CONSTRUCT { ?o <http://example.com/knows> ?s } WHERE { ?s <http://example.com/knows> ?o }").graph
    assert set(c) == {(EX.bob, EX.knows, EX.alice)}
    g.update("INSERT DATA { <http://example.com/carol> <http://example.com/knows> <http://example.com/alice> }")
    assert (EX.carol, EX.knows, EX.alice) in g


def test_the_query_goes_to_rhizomes_engine(monkeypatch):
    g = rdflib.Graph(store="Rhizome")
    _fill(g)
    calls = []
    original = rhizome.Store.query
    inner = g.store.inner

    class Spy:
        def __getattr__(self, name):
            return getattr(inner, name)

        def query(self, *a, **k):
            calls.append(a[0])
            return original(inner, *a, **k)

    g.store._store = Spy()
    assert len(list(g.query("SELECT * WHERE { ?s ?p ?o }"))) == 5
    assert len(calls) == 1


def test_datasets_contexts_and_quads_like_memory(kind):
    d = rdflib.Dataset(store=kind)
    d.graph(EX.g1).add((EX.x, EX.p, EX.y))
    d.graph(EX.g2).add((EX.z, EX.p, EX.y))
    d.add((EX.d, EX.p, EX.y))
    quads = set(d.quads((None, None, None, None)))
    assert (EX.x, EX.p, EX.y, EX.g1) in quads and (EX.z, EX.p, EX.y, EX.g2) in quads
    names = {g.identifier for g in d.graphs()}
    assert {EX.g1, EX.g2} <= names
    assert len(d.graph(EX.g1)) == 1
    rows = list(d.query("SELECT ?g ?s WHERE { GRAPH ?g { ?s ?p ?o } }"))
    assert {(r.g, r.s) for r in rows} >= {(EX.g1, EX.x), (EX.g2, EX.z)}
    d.remove_graph(d.graph(EX.g1))
    assert len(d.graph(EX.g1)) == 0
    assert len(d.graph(EX.g2)) == 1


def test_parse_and_serialize_through_the_plugin(kind, tmp_path):
    g = rdflib.Graph(store=kind)
    g.parse(data="@prefix e: <http://example.com/> . e:a e:b e:c , e:d .", format="turtle")
    assert len(g) == 2
    out = rdflib.Graph().parse(data=g.serialize(format="nt"), format="nt")
    assert len(out) == 2


def test_a_graph_on_disk_through_open(tmp_path):
    g = rdflib.Graph(store="Rhizome")
    g.open(str(tmp_path / "store"), create=True)
    _fill(g)
    g.close()
    again = rdflib.Graph(store="Rhizome")
    again.open(str(tmp_path / "store"))
    assert len(again) == 5
