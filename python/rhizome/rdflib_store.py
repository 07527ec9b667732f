"""An rdflib store over Rhizome: ``rdflib.Graph(store="Rhizome")``, as
``oxrdflib`` is for pyoxigraph.

Triples, quads and pattern lookups go to Rhizome's indexes; SPARQL given as
text goes to Rhizome's engine instead of rdflib's (rdflib's own engine
takes over for what this store declines: prepared ``Query`` objects and
queries over the union of all graphs).

``rdflib.Graph(store="Rhizome")`` keeps its triples in memory;
``graph.open("folder", create=True)`` (or
``rdflib.Graph(store=RhizomeStore(store=rhizome.Store("folder")))``) on
disk. Graphs named by IRIs are named graphs of the store; rdflib's default
graph and graphs with a blank-node identifier (an rdflib ``Graph()``'s) are
the store's default graph.
"""

from typing import Any, Dict, Iterable, Iterator, Optional, Tuple

import rdflib
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID, Graph
from rdflib.plugins.sparql.sparql import Query, Update
from rdflib.query import Result
from rdflib.store import VALID_STORE, Store as _RdflibStore
from rdflib.term import BNode, Node, URIRef, Variable

from . import _rhizome as rz
from ._rdflib import from_rdflib, to_rdflib

__all__ = ["RhizomeStore"]


def _graph_name(context) -> Any:
    """The store's graph for an rdflib context (None: every graph)."""
    if context is None:
        return None
    ident = context.identifier if isinstance(context, Graph) else context
    if ident == DATASET_DEFAULT_GRAPH_ID or isinstance(ident, BNode):
        return rz.DefaultGraph()
    if isinstance(ident, URIRef):
        return rz.NamedNode(str(ident))
    raise ValueError(f"a graph is named by an IRI, not {ident!r}")


def _node(term):
    return None if term is None else from_rdflib(term)


class RhizomeStore(_RdflibStore):
    """rdflib's ``Store`` interface over a ``rhizome.Store``."""

    context_aware = True
    formula_aware = False
    transaction_aware = False
    graph_aware = True

    def __init__(self, configuration: Optional[str] = None, identifier: Optional[Node] = None, *, store: Optional[rz.Store] = None):
        self._store = store
        self._namespace_for: Dict[str, URIRef] = {}
        self._prefix_for: Dict[URIRef, str] = {}
        self._graphs: Dict[Any, Graph] = {}
        super().__init__(configuration, identifier)

    @property
    def inner(self) -> rz.Store:
        """The ``rhizome.Store`` underneath (made in memory on first use)."""
        if self._store is None:
            self._store = rz.Store()
        return self._store

    def open(self, configuration: str, create: bool = False) -> Optional[int]:
        if self._store is not None:
            raise ValueError("this store is open already")
        self._store = rz.Store(configuration)
        return VALID_STORE

    def close(self, commit_pending_transaction: bool = False) -> None:
        self._store = None

    def gc(self) -> None:
        pass

    # Writes.

    def add(self, triple, context, quoted: bool = False) -> None:
        if quoted:
            raise ValueError("Rhizome stores hold no formulas (quoted graphs)")
        s, p, o = triple
        self.inner.add(rz.Quad(from_rdflib(s), from_rdflib(p), from_rdflib(o), _graph_name(context) or rz.DefaultGraph()))
        super().add(triple, context, quoted)

    def addN(self, quads: Iterable[Tuple[Node, Node, Node, Any]]) -> None:
        batch = []
        for s, p, o, c in quads:
            if isinstance(c, Graph) and c.identifier is not None and getattr(c, "formula_aware", False):
                raise ValueError("Rhizome stores hold no formulas (quoted graphs)")
            batch.append(rz.Quad(from_rdflib(s), from_rdflib(p), from_rdflib(o), _graph_name(c) or rz.DefaultGraph()))
        self.inner.extend(batch)

    def remove(self, triple, context=None) -> None:
        s, p, o = triple
        matches = list(self.inner.quads_for_pattern(_node(s), _node(p), _node(o), _graph_name(context)))
        for q in matches:
            self.inner.remove(q)
        super().remove(triple, context)

    # Reads.

    def _context(self, graph_name) -> Graph:
        ident = to_rdflib(graph_name)
        g = self._graphs.get(ident)
        if g is None:
            g = self._graphs[ident] = Graph(store=self, identifier=ident)
        return g

    def triples(self, triple_pattern, context=None) -> Iterator[Tuple[Tuple[Node, Node, Node], Iterator[Graph]]]:
        s, p, o = triple_pattern
        try:
            quads = self.inner.quads_for_pattern(_node(s), _node(p), _node(o), _graph_name(context))
        except (TypeError, ValueError):
            return  # a term that cannot be in the store (a literal subject): no match
        for q in quads:
            yield (to_rdflib(q.subject), to_rdflib(q.predicate), to_rdflib(q.object)), iter((self._context(q.graph_name),))

    def __len__(self, context=None) -> int:
        g = _graph_name(context)
        if g is None:
            return len(self.inner)
        return sum(1 for _ in self.inner.quads_for_pattern(None, None, None, g))

    def contexts(self, triple=None) -> Iterator[Graph]:
        if triple is None:
            names = [row[0] for row in self.inner.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")]
            for n in names:
                yield self._context(n)
            if next(iter(self.inner.quads_for_pattern(None, None, None, rz.DefaultGraph())), None) is not None:
                yield self._context(rz.DefaultGraph())
            return
        s, p, o = triple
        seen = set()
        for q in self.inner.quads_for_pattern(_node(s), _node(p), _node(o)):
            if q.graph_name not in seen:
                seen.add(q.graph_name)
                yield self._context(q.graph_name)

    def add_graph(self, graph: Graph) -> None:
        # A graph exists in Rhizome once it has quads.
        pass

    def remove_graph(self, graph: Graph) -> None:
        g = _graph_name(graph)
        if isinstance(g, rz.DefaultGraph):
            self.inner.update("DROP SILENT DEFAULT")
        else:
            self.inner.update(f"DROP SILENT GRAPH {g}")

    # SPARQL, passed down to Rhizome's engine.

    def _prologue(self, init_ns) -> str:
        ns = dict(self._namespace_for)
        ns.update(init_ns or {})
        return "".join(f"PREFIX {prefix}: <{uri}>\n" for prefix, uri in ns.items())

    def query(self, query, initNs, initBindings, queryGraph, **kwargs) -> Result:
        if isinstance(query, Query) or kwargs:
            raise NotImplementedError  # rdflib's own engine takes it
        if queryGraph == "__UNION__":
            raise NotImplementedError  # the union of all graphs and the default graph
        text = self._prologue(initNs) + query
        if initBindings:
            names = list(initBindings)
            text += "\nVALUES ( {} ) {{ ( {} ) }}".format(
                " ".join(f"?{v}" for v in names), " ".join(from_rdflib(initBindings[v]).__str__() for v in names)
            )
        default_graph = None
        if isinstance(queryGraph, URIRef) and queryGraph != DATASET_DEFAULT_GRAPH_ID:
            default_graph = rz.NamedNode(str(queryGraph))
        elif isinstance(queryGraph, Graph) and isinstance(queryGraph.identifier, URIRef) and queryGraph.identifier != DATASET_DEFAULT_GRAPH_ID:
            default_graph = rz.NamedNode(str(queryGraph.identifier))
        answer = self.inner.query(text, default_graph=default_graph)
        if isinstance(answer, bool):
            out = Result("ASK")
            out.askAnswer = answer
        elif isinstance(answer, rz.QuerySolutions):
            out = Result("SELECT")
            out.vars = [Variable(v.value) for v in answer.variables]
            vars_ = out.vars
            out.bindings = [{v: to_rdflib(t) for v, t in zip(vars_, row) if t is not None} for row in answer]
        else:
            out = Result("CONSTRUCT")
            g = Graph()
            for t in answer:
                g.add(to_rdflib(t))
            out.graph = g
        return out

    def update(self, update, initNs, initBindings, queryGraph, **kwargs) -> None:
        if isinstance(update, Update) or kwargs or initBindings:
            raise NotImplementedError
        if isinstance(queryGraph, URIRef) and queryGraph != DATASET_DEFAULT_GRAPH_ID:
            raise NotImplementedError  # an update WITH a graph: rdflib's engine
        self.inner.update(self._prologue(initNs) + update)

    def commit(self) -> None:
        pass  # every write is committed when it returns

    def rollback(self) -> None:
        pass

    # Namespaces (kept in memory, as rdflib's Memory store does).

    def bind(self, prefix: str, namespace: URIRef, override: bool = True) -> None:
        if not override and (prefix in self._namespace_for or namespace in self._prefix_for):
            return
        old = self._namespace_for.get(prefix)
        if old is not None:
            self._prefix_for.pop(old, None)
        old_prefix = self._prefix_for.get(namespace)
        if old_prefix is not None:
            self._namespace_for.pop(old_prefix, None)
        self._namespace_for[prefix] = namespace
        self._prefix_for[namespace] = prefix

    def namespace(self, prefix: str) -> Optional[URIRef]:
        return self._namespace_for.get(prefix)

    def prefix(self, namespace: URIRef) -> Optional[str]:
        return self._prefix_for.get(namespace)

    def namespaces(self) -> Iterator[Tuple[str, URIRef]]:
        yield from self._namespace_for.items()
