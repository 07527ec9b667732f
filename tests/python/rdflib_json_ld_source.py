"""rdflib reads a Rhizome document URL as a JSON-LD source (driven by
crates/rhizome-cli/tests/documents_as_json_ld.rs).

Arguments: the document's URL and the URL of its graph as N-Triples
(`/{db}/_graph?graph=...`); RHIZOME_CREDENTIALS is `user:password`, sent
with every request (CouchDB endpoints do not challenge with 401 + Basic).
Checks that the graph rdflib reads, by content negotiation alone and with
format="json-ld", is exactly the document's graph. Exits non-zero on a
failed check.
"""
import base64
import os
import sys
import urllib.request

from rdflib import Graph
from rdflib.compare import isomorphic, to_isomorphic, graph_diff

doc_url, graph_url = sys.argv[1], sys.argv[2]
token = base64.b64encode(os.environ["RHIZOME_CREDENTIALS"].encode()).decode()
opener = urllib.request.build_opener()
opener.addheaders = [("Authorization", "Basic " + token)]
urllib.request.install_opener(opener)

with urllib.request.urlopen(urllib.request.Request(graph_url, headers={"Accept": "application/n-triples"})) as r:
    expected = Graph().parse(data=r.read().decode(), format="nt")
assert len(expected) > 0, "the document has a graph"

for how, kwargs in [("content negotiation", {}), ('format="json-ld"', {"format": "json-ld"})]:
    got = Graph().parse(doc_url, **kwargs)
    if not isomorphic(got, expected):
        _, only_got, only_expected = graph_diff(to_isomorphic(got), to_isomorphic(expected))
        print(f"{how}: rdflib read a different graph", file=sys.stderr)
        print("only in rdflib's:\n" + only_got.serialize(format="nt"), file=sys.stderr)
        print("only in the document's graph:\n" + only_expected.serialize(format="nt"), file=sys.stderr)
        sys.exit(1)
    for _, p, _ in got:
        assert "/_" not in str(p), f"{how}: CouchDB member became a triple: {p}"
print("ok")
