"""LDP resources of a database as rdflib graphs, in process:
``rhizome.Ldp(db).get("/pomegranate")``.

The same resources as the server's ``/{db}/_ldp/`` (and the same ETags),
without HTTP: a resource is the document whose id is its IRI, its graph
of that IRI, so what LDP writes ``Database.get`` and SPARQL read.
"""

import gc

from ._rdflib import _rdflib, from_rdflib, to_rdflib
from ._rhizome import Triple


class Ldp:
    """The LDP resources of ``db`` (a ``rhizome.Database``).

    Paths are ``/a/b`` (names as they are: encoded here) or the
    resources' IRIs. ``if_match`` takes an ETag from ``etag()`` or
    ``read()``; a stale one raises ``rhizome.Conflict`` (HTTP's 412).
    Server-managed triples (``ldp:contains``, another model's type) raise
    ``ValueError`` (HTTP's 409). Not here yet: non-RDF sources, direct and
    indirect containers, PATCH (use the server's ``/{db}/_ldp/``).
    """

    def __init__(self, db):
        self._native = db._ldp()

    @property
    def root(self):
        """The root container's IRI."""
        return self._native.root

    def iri(self, path):
        """The IRI of the resource at ``path``."""
        return self._native.iri(path)

    def etag(self, path):
        """The resource's ETag, or None when it does not exist."""
        return self._native.etag(path)

    def read(self, path):
        """``(graph, etag, model_iri)``: the resource as an rdflib
        ``Graph`` (identified by its IRI) with its ETag and interaction
        model.

        :raises NotFound: no resource there."""
        etag, model, subjects, predicates, objects = self._native.read_columns(path)
        return _graph(self.iri(path), subjects, predicates, objects), etag, model

    def get(self, path):
        """The resource as an rdflib ``Graph``: its triples, its LDP types
        and, for a container, ``ldp:contains`` of each child.

        :raises NotFound: no resource there."""
        return self.read(path)[0]

    def put(self, path, graph, *, if_match=None, container=False):
        """Creates or replaces the resource at ``path`` with ``graph`` (an
        rdflib ``Graph`` or iterable of rdflib triples); returns its new
        ETag. ``container=True`` makes a new resource a basic container.

        :raises Conflict: ``if_match`` is not the current ETag."""
        return self._native.put(path, _triples(graph), if_match=if_match, container=container)

    def post(self, path, graph, *, slug=None, container=False):
        """Creates a child of the container at ``path`` (named after
        ``slug`` when that name is free); returns ``(child_path, etag)``."""
        return self._native.post(path, _triples(graph), slug=slug, container=container)

    def delete(self, path, *, if_match=None):
        """Deletes the resource (a container with its descendants)."""
        self._native.delete(path, if_match=if_match)

    def __repr__(self):
        return f"<rhizome.Ldp {self.root}>"


def _triples(graph):
    if graph is None:
        return []
    return [Triple(from_rdflib(s), from_rdflib(p), from_rdflib(o)) for s, p, o in graph]


def _graph(iri, subjects, predicates, objects):
    """An rdflib Graph of the columns (IRIs come as ``str``). A run of
    equal terms (the native side hands out one object for it: a
    container's subject and predicate) is converted once, and the triples
    go in through ``Graph.addN``, rdflib's cheapest way in."""
    URIRef, _, _, _, Graph = _rdflib()
    g = Graph(identifier=URIRef(iri))

    def conv(column):
        out = []
        append = out.append
        last = last_conv = None
        for t in column:
            if t is last:
                append(last_conv)
                continue
            last, last_conv = t, (URIRef(t) if type(t) is str else to_rdflib(t))
            append(last_conv)
        return out

    # rdflib's terms and indexes make no reference cycles: the cyclic
    # collector would only walk the growing graph again and again (a
    # 100k-child container: a third of the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        g.addN(zip(conv(subjects), conv(predicates), conv(objects), _repeat(g)))
    finally:
        if collecting:
            gc.enable()
    return g


def _repeat(x):
    while True:
        yield x
