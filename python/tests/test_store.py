"""The RDF side: rhizome.Store, shaped like pyoxigraph's Store."""

import io
import subprocess
import sys

import pytest

import rhizome
from rhizome import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Triple, Variable

from conftest import EX, ex

XSD_INTEGER = NamedNode("http://www.w3.org/2001/XMLSchema#integer")
NT = f"<{EX}alice> <{EX}knows> <{EX}bob> .\n<{EX}alice> <{EX}age> \"30\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n<{EX}bob> <{EX}name> \"Bob\"@en .\n"


def test_terms_compare_hash_and_print_as_ntriples():
    assert NamedNode(EX + "a") == ex("a")
    assert len({ex("a"), ex("a"), ex("b")}) == 2
    assert str(ex("a")) == f"<{EX}a>"
    assert str(Literal("chat", language="fr")) == '"chat"@fr'
    assert Literal("5", datatype=XSD_INTEGER).datatype == XSD_INTEGER
    assert Literal("x").language is None
    assert str(BlankNode("b1")) == "_:b1"
    assert BlankNode() != BlankNode()
    q = Quad(ex("s"), ex("p"), Literal("o"))
    assert q.graph_name == DefaultGraph()
    s, p, o, g = q
    assert (s, p, o) == (ex("s"), ex("p"), Literal("o"))
    assert q.triple == Triple(ex("s"), ex("p"), Literal("o"))


def test_bad_terms_are_value_and_type_errors():
    with pytest.raises(ValueError):
        NamedNode("not an iri")
    with pytest.raises(ValueError):
        Literal("x", language="not a tag!")
    with pytest.raises(ValueError):
        Literal("x", language="en", datatype=XSD_INTEGER)
    with pytest.raises(TypeError):
        Quad(Literal("s"), ex("p"), ex("o"))
    with pytest.raises(TypeError):
        Quad(ex("s"), BlankNode(), ex("o"))


def test_load_bytes_then_lookup_every_pattern(store):
    summary = store.load(NT.encode(), format="ntriples")
    assert summary["quads_added"] == 3
    assert len(store) == 3
    assert [q.object for q in store.quads_for_pattern(ex("alice"), ex("knows"), None)] == [ex("bob")]
    assert {q.subject for q in store.quads_for_pattern(None, None, ex("bob"))} == {ex("alice")}
    assert len(list(store.quads_for_pattern(ex("alice"), None, None))) == 2
    assert [q.object for q in store.quads_for_pattern(None, ex("name"), None)] == [Literal("Bob", language="en")]
    assert list(store.quads_for_pattern(ex("nobody"), None, None)) == []
    assert len(list(store)) == 3


def test_load_a_path_a_file_and_into_a_graph(store, tmp_path):
    path = tmp_path / "data.nt"
    path.write_text(NT)
    store.load(path)  # format from the extension
    store.load(str(path), format="ntriples", to_graph=ex("g"))
    with open(path, "rb") as f:
        store.load(f, format="application/n-triples", to_graph=ex("h"))
    store.load(io.BytesIO(b"@prefix e: <http://example.com/> . e:x e:y e:z ."), format="turtle")
    assert len(list(store.quads_for_pattern(None, None, None, ex("g")))) == 3
    assert len(list(store.quads_for_pattern(None, None, None, DefaultGraph()))) == 4
    assert Quad(ex("alice"), ex("knows"), ex("bob"), ex("h")) in store


def test_bad_rdf_is_a_syntax_error_with_its_position_and_loads_nothing(store):
    with pytest.raises(SyntaxError) as e:
        store.load(b"<http://e/a> <http://e/b> <http://e/c> .\n<http://e/a> <http://e/b> .\n", format="ntriples")
    assert e.value.lineno == 2
    assert len(store) == 0
    assert store.load(b"<http://e/a> <http://e/b> <http://e/c> .\nbad\n", format="ntriples", lenient=True)["skipped"] == 1


def test_load_refuses_unknown_formats_and_missing_ones(store, tmp_path):
    with pytest.raises(ValueError):
        store.load(b"x", format="nonsense")
    with pytest.raises(ValueError):
        store.load(b"<a> <b> <c> .")
    with pytest.raises(OSError):
        store.load(tmp_path / "missing.nt")
    with pytest.raises(TypeError):
        store.load(42, format="turtle")


def test_add_remove_extend_and_contains(store):
    q = Quad(ex("s"), ex("p"), Literal("1", datatype=XSD_INTEGER), ex("g"))
    store.add(q)
    assert q in store and len(store) == 1
    store.add(q)
    assert len(store) == 1
    store.remove(q)
    assert q not in store and len(store) == 0
    store.remove(q)  # absent: nothing happens
    assert store.extend([Quad(ex("a"), ex("p"), ex(str(i))) for i in range(10)]) == 10
    assert len(store) == 10
    store.add(Triple(ex("t"), ex("p"), ex("o")))
    assert Quad(ex("t"), ex("p"), ex("o"), DefaultGraph()) in store


def test_one_blank_node_label_is_one_node_across_writes(store):
    b = BlankNode("x")
    store.add(Quad(b, ex("p"), Literal("1")))
    store.add(Quad(b, ex("q"), Literal("2")))
    subjects = {q.subject for q in store}
    assert len(subjects) == 1
    (read,) = subjects
    assert len(list(store.quads_for_pattern(read, None, None))) == 2
    store.remove(Quad(read, ex("p"), Literal("1")))
    assert len(store) == 1


def test_select_ask_construct_and_update(store):
    store.load(NT.encode(), format="ntriples")
    rows = store.query(f"SELECT ?who ?age WHERE {{ ?who <{EX}knows> ?x OPTIONAL {{ ?x <{EX}age> ?age }} }}")
    assert [v.value for v in rows.variables] == ["who", "age"]
    rows = list(rows)
    assert len(rows) == 1
    row = rows[0]
    assert row["who"] == ex("alice") and row[Variable("who")] == ex("alice") and row[0] == ex("alice")
    assert row["age"] is None
    who, age = row
    assert who == ex("alice")
    with pytest.raises(KeyError):
        row["nope"]
    assert store.query("ASK { ?s ?p ?o }") is True
    assert store.query(f"ASK {{ <{EX}bob> <{EX}knows> ?o }}") is False
    triples = list(store.query(f"CONSTRUCT {{ ?o <{EX}knownBy> ?s }} WHERE {{ ?s <{EX}knows> ?o }}"))
    assert triples == [Triple(ex("bob"), ex("knownBy"), ex("alice"))]
    assert store.update(f"INSERT DATA {{ <{EX}carol> <{EX}knows> <{EX}alice> }}")["quads_inserted"] == 1
    assert store.update(f"DELETE WHERE {{ <{EX}carol> ?p ?o }}")["quads_deleted"] == 1
    count = next(store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"))["n"]
    assert count == Literal("3", datatype=XSD_INTEGER)


def test_query_default_graph_option(store):
    store.add(Quad(ex("a"), ex("p"), ex("b"), ex("g1")))
    store.add(Quad(ex("c"), ex("p"), ex("d"), ex("g2")))
    assert list(store.query("SELECT ?s WHERE { ?s ?p ?o }")) == []
    rows = store.query("SELECT ?s WHERE { ?s ?p ?o }", default_graph=ex("g1"))
    assert [r["s"] for r in rows] == [ex("a")]
    rows = store.query("SELECT ?s WHERE { ?s ?p ?o }", default_graph=[ex("g1"), ex("g2")])
    assert {r["s"] for r in rows} == {ex("a"), ex("c")}


def test_bad_sparql_is_a_syntax_error_with_its_position(store):
    with pytest.raises(SyntaxError) as e:
        store.query("SELECT ?x WHERE {\n  ?x ?y \n}")
    assert e.value.lineno == 3
    with pytest.raises(SyntaxError):
        store.update("INSERT NOTHING")
    with pytest.raises(TypeError):
        store.query("SELECT * WHERE { ?s ?p ?o }", default_graph="not a node")


def test_dump_formats_and_outputs(store, tmp_path):
    store.load(NT.encode(), format="ntriples")
    data = store.dump()
    assert data.count(b"\n") == 3
    other = rhizome.Store()
    other.load(data, format="nquads")
    assert len(other) == 3
    store.dump(tmp_path / "out.nq")
    assert (tmp_path / "out.nq").read_bytes() == data
    buf = io.BytesIO()
    store.dump(buf, format="trig")
    assert b"alice" in buf.getvalue()
    turtle = store.dump(format="turtle", from_graph=DefaultGraph())
    assert b"knows" in turtle
    with pytest.raises(ValueError):
        store.dump(format="turtle")


def test_a_store_on_disk_reopens_with_its_quads(tmp_path):
    path = tmp_path / "store"
    s = rhizome.Store(path)
    s.add(Quad(ex("s"), ex("p"), ex("o")))
    assert s.mode == "plain"
    del s
    again = rhizome.Store(path)
    assert len(again) == 1
    del again
    ro = rhizome.Store.read_only(path)
    assert len(ro) == 1
    with pytest.raises(PermissionError):
        ro.add(Quad(ex("s"), ex("p"), ex("x")))
    with pytest.raises(PermissionError):
        ro.update("INSERT DATA { <http://e/a> <http://e/b> <http://e/c> }")


def test_a_store_open_in_another_process_is_locked(tmp_path):
    path = tmp_path / "store"
    s = rhizome.Store(path)
    s.add(Quad(ex("s"), ex("p"), ex("o")))
    code = (
        "import rhizome, sys\n"
        "try:\n    rhizome.Store(sys.argv[1])\nexcept rhizome.StoreLocked as e:\n    print('locked', e)\n"
        "try:\n    rhizome.Store.read_only(sys.argv[1])\nexcept rhizome.StoreLocked:\n    print('locked')\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.count("locked") == 2, out
    with pytest.raises(rhizome.StoreLocked):
        rhizome.Store(path)
    assert len(s) == 1


def test_mode_union_puts_triples_in_their_subjects_graphs(tmp_path):
    s = rhizome.Store(mode="union")
    s.add(Quad(ex("s"), ex("p"), ex("o")))
    (q,) = list(s)
    assert q.graph_name == ex("s")
    assert Quad(ex("s"), ex("p"), ex("o")) in s
    with pytest.raises(ValueError):
        rhizome.Store(mode="other")


def test_snapshot_iterators_do_not_see_later_writes(store):
    store.extend([Quad(ex("s"), ex("p"), ex(str(i))) for i in range(100)])
    it = store.quads_for_pattern(ex("s"), None, None)
    first = next(it)
    store.extend([Quad(ex("s"), ex("p"), ex(f"new{i}")) for i in range(100)])
    for q in list(store.quads_for_pattern(ex("s"), None, None))[:50]:
        store.remove(q)
    assert 1 + sum(1 for _ in it) == 100
    assert first.subject == ex("s")
    assert len(store) == 150


def test_a_long_lookup_gives_every_quad_once_as_values_equal_to_their_own():
    # Longer than the iterator reads ahead at a time, in both graphs, with
    # every kind of term; quads read back equal, hash and print as the
    # quads written (a blank node as one node, under the store's label).
    store = rhizome.Store()
    b = BlankNode("shared")
    written = set()
    for i in range(5000):
        g = DefaultGraph() if i % 3 else ex(f"g{i % 7}")
        o = [ex(f"o{i}"), Literal(f"v{i}", language="en"), Literal(str(i), datatype=XSD_INTEGER), b][i % 4]
        written.add(Quad(ex(f"s{i % 50}"), ex(f"p{i % 5}"), o, g))
    store.extend(list(written))
    read = list(store.quads_for_pattern(None, None, None, None))
    assert len(read) == len(written)
    blanks = {q.object for q in read if isinstance(q.object, BlankNode)}
    assert len(blanks) == 1
    (label,) = blanks
    named = {q for q in written if q.object != b} | {Quad(q.subject, q.predicate, label, q.graph_name) for q in written if q.object == b}
    assert set(read) == named
    assert {str(q) for q in read} == {str(q) for q in named}
    by_p = list(store.quads_for_pattern(None, ex("p1"), None, None))
    assert set(by_p) == {q for q in named if q.predicate == ex("p1")}
    # A term met again is the same immutable object, not a new one.
    assert all(q.predicate is by_p[0].predicate for q in by_p)
    s, p, o, g = by_p[0]
    assert Quad(s, p, o, g) == by_p[0] and hash(Quad(s, p, o, g)) == hash(by_p[0])
    assert by_p[0].triple == Triple(s, p, o)
    assert repr(by_p[0]).startswith("<Quad <")
