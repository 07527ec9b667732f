"""Conversions between Rhizome's terms and rdflib's (rdflib is imported
only when one is called)."""

from ._rhizome import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Triple

_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def to_rdflib(term):
    """A Rhizome term (or Triple, Quad) as rdflib's: URIRef, BNode,
    Literal; a Triple or Quad as a tuple; DefaultGraph as rdflib's
    ``DATASET_DEFAULT_GRAPH_ID``."""
    import rdflib
    from rdflib.graph import DATASET_DEFAULT_GRAPH_ID

    if isinstance(term, NamedNode):
        return rdflib.URIRef(term.value)
    if isinstance(term, BlankNode):
        return rdflib.BNode(term.value)
    if isinstance(term, Literal):
        if term.language is not None:
            return rdflib.Literal(term.value, lang=term.language)
        if term.datatype.value == _XSD_STRING:
            return rdflib.Literal(term.value)
        return rdflib.Literal(term.value, datatype=rdflib.URIRef(term.datatype.value))
    if isinstance(term, DefaultGraph):
        return DATASET_DEFAULT_GRAPH_ID
    if isinstance(term, Triple):
        return (to_rdflib(term.subject), to_rdflib(term.predicate), to_rdflib(term.object))
    if isinstance(term, Quad):
        return (to_rdflib(term.subject), to_rdflib(term.predicate), to_rdflib(term.object), to_rdflib(term.graph_name))
    if term is None:
        return None
    raise TypeError(f"not a Rhizome term: {type(term).__name__}")


def from_rdflib(term):
    """An rdflib term (URIRef, BNode, Literal, Graph for its identifier,
    or a 3- or 4-tuple) as Rhizome's. rdflib's default graph id is
    ``DefaultGraph()``."""
    import rdflib
    from rdflib.graph import DATASET_DEFAULT_GRAPH_ID

    if isinstance(term, rdflib.Graph):
        term = term.identifier
    if term is None:
        return None
    if isinstance(term, rdflib.URIRef):
        if term == DATASET_DEFAULT_GRAPH_ID:
            return DefaultGraph()
        return NamedNode(str(term))
    if isinstance(term, rdflib.BNode):
        return BlankNode(str(term))
    if isinstance(term, rdflib.Literal):
        if term.language:
            return Literal(str(term), language=term.language)
        if term.datatype is not None and str(term.datatype) not in (_XSD_STRING,):
            return Literal(str(term), datatype=NamedNode(str(term.datatype)))
        return Literal(str(term))
    if isinstance(term, tuple) and len(term) == 3:
        return Triple(*(from_rdflib(t) for t in term))
    if isinstance(term, tuple) and len(term) == 4:
        s, p, o, g = term
        return Quad(from_rdflib(s), from_rdflib(p), from_rdflib(o), from_rdflib(g) if g is not None else DefaultGraph())
    raise TypeError(f"not an rdflib term: {type(term).__name__}")
