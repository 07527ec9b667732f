"""An LDP client's round trip with rdflib against a live Rhizome (driven by
crates/rhizome-cli/tests/ldp.rs): GET a resource as Turtle, parse it with
rdflib, add a triple, PUT it back with If-Match; a stale If-Match is 412;
the container lists the resource.

Arguments: the resource's URL and its container's URL; RHIZOME_CREDENTIALS
is `user:password`. Exits non-zero on a failed check.
"""
import base64
import os
import sys
import urllib.error
import urllib.request

from rdflib import Graph, Literal, Namespace, URIRef

resource, container = sys.argv[1], sys.argv[2]
auth = "Basic " + base64.b64encode(os.environ["RHIZOME_CREDENTIALS"].encode()).decode()
DCT = Namespace("http://purl.org/dc/terms/")
LDP = Namespace("http://www.w3.org/ns/ldp#")


def call(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers={"Authorization": auth, **(headers or {})})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


status, headers, body = call("GET", resource, headers={"Accept": "text/turtle"})
assert status == 200, (status, body)
assert headers.get("Content-Type") == "text/turtle", headers
etag = headers.get("ETag")
g = Graph()
g.parse(data=body.decode(), format="turtle", publicID=resource)
me = URIRef(resource)
assert (me, DCT.title, Literal("R")) in g, body
g.add((me, DCT.creator, Literal("rdflib")))
turtle = g.serialize(format="turtle").encode()
status, headers, body = call("PUT", resource, turtle, {"Content-Type": "text/turtle", "If-Match": etag})
assert status == 204, (status, body)
status, _, body = call("PUT", resource, turtle, {"Content-Type": "text/turtle", "If-Match": etag})
assert status == 412, (status, body)

again = Graph()
status, headers, body = call("GET", resource, headers={"Accept": "application/ld+json"})
assert status == 200, (status, body)
again.parse(data=body.decode(), format="json-ld", publicID=resource)
assert (me, DCT.creator, Literal("rdflib")) in again, body
assert (me, DCT.title, Literal("R")) in again, body

listing = Graph()
status, headers, body = call("GET", container, headers={"Accept": "text/turtle"})
listing.parse(data=body.decode(), format="turtle", publicID=container)
assert (URIRef(container), LDP.contains, me) in listing, body
print("ok")
