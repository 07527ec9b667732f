"""RDF 1.2 from Python: a triple term is a ``Triple`` used as a term (as in
pyoxigraph), a base direction is a ``Literal``'s ``direction``."""

import pytest

import rhizome
from rhizome import Literal, Quad, Triple

from conftest import EX, ex

CLAIM = Triple(ex("bob"), ex("knows"), Literal("Dana", language="en", direction="rtl"))


def test_a_triple_term_added_is_found_queried_and_dumped():
    store = rhizome.Store()
    store.add(Quad(ex("carol"), ex("said"), CLAIM))
    # Found by the triple term itself, and given back as a Triple.
    [q] = list(store.quads_for_pattern(None, None, CLAIM, None))
    assert q.subject == ex("carol")
    assert isinstance(q.object, Triple) and q.object == CLAIM
    assert q.object.object.direction == "rtl" and q.object.object.language == "en"
    # SPARQL 1.2 takes it apart.
    [row] = list(store.query(f"SELECT ?s ?name {{ ?w <{EX}said> <<( ?s <{EX}knows> ?name )>> }}"))
    assert row["s"] == ex("bob")
    assert row["name"] == Literal("Dana", language="en", direction="rtl")
    [row] = list(store.query(f"SELECT (LANGDIR(OBJECT(?t)) AS ?d) {{ ?w <{EX}said> ?t }}"))
    assert row["d"] == Literal("rtl")
    assert "<<(" in store.dump(format="nq").decode()


def test_a_nested_triple_term_loads_and_a_bad_direction_is_refused():
    store = rhizome.Store()
    store.load(f'<{EX}x> <{EX}claims> <<( <{EX}a> <{EX}b> <<( <{EX}c> <{EX}d> "o" )>> )>> .\n'.encode(), format="nt")
    [q] = list(store)
    assert q.object.object == Triple(ex("c"), ex("d"), Literal("o"))
    with pytest.raises(ValueError):
        Literal("x", language="en", direction="up")
    with pytest.raises(ValueError):
        Literal("x", direction="ltr")
