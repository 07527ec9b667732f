"""rdflib's SPARQLUpdateStore against a live Rhizome database (driven by
crates/rhizome-cli/tests/graph_writes_keep_documents.rs).

Arguments: the SPARQL endpoint URL and the graph IRI of document `p`
(which has name "P", a member that is not RDF and an attachment);
RHIZOME_CREDENTIALS is `user:password`. Exits non-zero on a failed check.
"""
import os
import sys

from rdflib import Graph, Literal, URIRef
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

endpoint, doc_graph = sys.argv[1], sys.argv[2]
user, password = os.environ["RHIZOME_CREDENTIALS"].split(":", 1)
store = SPARQLUpdateStore(query_endpoint=endpoint, update_endpoint=endpoint, auth=(user, password))

p = URIRef("http://e/p")
name = URIRef("http://schema.org/name")
email = URIRef("http://schema.org/email")

# A write to the document's graph: INSERT DATA { GRAPH <doc> { ... } }.
doc = Graph(store, identifier=URIRef(doc_graph))
doc.add((p, email, Literal("e@rdflib")))
assert set(doc.objects(p, name)) == {Literal("P")}, list(doc.objects(p, name))
assert set(doc.objects(p, email)) == {Literal("e@rdflib")}, list(doc.objects(p, email))

# The default graph: rdflib writes it without GRAPH and clears it with a
# wildcard remove (DELETE WHERE over the default graph) and CLEAR DEFAULT.
default = Graph(store, identifier=DATASET_DEFAULT_GRAPH_ID)
x = URIRef("http://e/x")
default.add((x, URIRef("http://e/y"), Literal(1)))
assert (x, URIRef("http://e/y"), Literal(1)) in default
default.remove((None, None, None))
store.update("CLEAR DEFAULT")
assert (x, URIRef("http://e/y"), Literal(1)) not in default

# The document's triples are all still there.
assert set(doc.objects(p, name)) == {Literal("P")}, list(doc.objects(p, name))
assert set(doc.objects(p, email)) == {Literal("e@rdflib")}
print("rdflib: ok")
