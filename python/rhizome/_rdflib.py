"""Conversions between Rhizome's terms and rdflib's (rdflib is imported
only when one is called)."""

from ._rhizome import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Triple

_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"

# rdflib's classes, looked up once (the conversions run per term).
_rd = None
# IRIs converted lately: subjects, predicates and classes repeat, and
# making a URIRef (it validates) costs several dict lookups.
_iris = {}
_IRIS_KEPT = 1 << 16


def _rdflib():
    global _rd
    if _rd is None:
        import rdflib
        from rdflib.graph import DATASET_DEFAULT_GRAPH_ID

        _rd = (rdflib.URIRef, rdflib.BNode, rdflib.Literal, DATASET_DEFAULT_GRAPH_ID, rdflib.Graph)
    return _rd


def to_rdflib(term):
    """A Rhizome term (or Triple, Quad) as rdflib's: URIRef, BNode,
    Literal; a Triple or Quad as a tuple; DefaultGraph as rdflib's
    ``DATASET_DEFAULT_GRAPH_ID``."""
    URIRef, BNode, RLiteral, default_graph, _ = _rd or _rdflib()
    t = type(term)
    if t is NamedNode:
        value = term.value
        iri = _iris.get(value)
        if iri is None:
            if len(_iris) >= _IRIS_KEPT:
                _iris.clear()
            iri = _iris[value] = URIRef(value)
        return iri
    if t is Literal:
        language = term.language
        if language is not None:
            return RLiteral(term.value, lang=language)
        datatype = term.datatype.value
        if datatype == _XSD_STRING:
            return RLiteral(term.value)
        return RLiteral(term.value, datatype=URIRef(datatype))
    if t is BlankNode:
        return BNode(term.value)
    if t is DefaultGraph:
        return default_graph
    if t is Triple:
        return (to_rdflib(term.subject), to_rdflib(term.predicate), to_rdflib(term.object))
    if t is Quad:
        return (to_rdflib(term.subject), to_rdflib(term.predicate), to_rdflib(term.object), to_rdflib(term.graph_name))
    if term is None:
        return None
    raise TypeError(f"not a Rhizome term: {t.__name__}")


def from_rdflib(term):
    """An rdflib term (URIRef, BNode, Literal, Graph for its identifier,
    or a 3- or 4-tuple) as Rhizome's. rdflib's default graph id is
    ``DefaultGraph()``."""
    URIRef, BNode, RLiteral, default_graph, Graph = _rd or _rdflib()
    if isinstance(term, Graph):
        term = term.identifier
    if term is None:
        return None
    if isinstance(term, URIRef):
        if term == default_graph:
            return DefaultGraph()
        return NamedNode(str(term))
    if isinstance(term, BNode):
        return BlankNode(str(term))
    if isinstance(term, RLiteral):
        if term.language:
            return Literal(str(term), language=term.language)
        if term.datatype is not None and str(term.datatype) != _XSD_STRING:
            return Literal(str(term), datatype=NamedNode(str(term.datatype)))
        return Literal(str(term))
    if isinstance(term, tuple) and len(term) == 3:
        return Triple(*(from_rdflib(t) for t in term))
    if isinstance(term, tuple) and len(term) == 4:
        s, p, o, g = term
        return Quad(from_rdflib(s), from_rdflib(p), from_rdflib(o), from_rdflib(g) if g is not None else DefaultGraph())
    raise TypeError(f"not an rdflib term: {type(term).__name__}")
