"""A linked-data client reading Rhizome documents as RDF, driven by
crates/rhizome-cli/tests/clients.rs: Python's urllib with a Basic auth
handler (which sends credentials only when challenged, as Jena's and
Java's do) and rdflib parsing what it gets.

Usage: linked_data.py CHECK, with RHIZOME_URL and RHIZOME_CREDENTIALS set.
"""
import base64
import json
import os
import sys
import urllib.error
import urllib.request

from rdflib import Graph, Literal, URIRef

URL = os.environ["RHIZOME_URL"]
USER, PASSWORD = os.environ["RHIZOME_CREDENTIALS"].split(":", 1)
NAME = URIRef("http://schema.org/name")


def admin(method, path, body=None):
    req = urllib.request.Request(URL + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def challenged_opener():
    """urllib's way: credentials for the server, sent after a 401 that
    carries a challenge (no challenge: the 401 is final)."""
    passwords = urllib.request.HTTPPasswordMgrWithDefaultRealm()
    passwords.add_password(None, URL, USER, PASSWORD)
    return urllib.request.build_opener(urllib.request.HTTPBasicAuthHandler(passwords))


def documents_as_rdf():
    try:
        admin("DELETE", "/people")
    except urllib.error.HTTPError:
        pass
    admin("PUT", "/people")
    admin("PUT", "/people/alice", {"@context": {"@vocab": "http://schema.org/"}, "@id": "http://example.org/alice", "name": "Alice"})
    opener = challenged_opener()

    req = urllib.request.Request(URL + "/people/alice", headers={"Accept": "text/turtle"})
    with opener.open(req) as r:
        assert r.headers.get_content_type() == "text/turtle", r.headers
        g = Graph().parse(data=r.read().decode(), format="turtle")
    assert (URIRef("http://example.org/alice"), NAME, Literal("Alice")) in g, g.serialize(format="nt")

    req = urllib.request.Request(URL + "/people/alice", headers={"Accept": "application/ld+json, application/json"})
    with opener.open(req) as r:
        assert r.headers.get_content_type() == "application/ld+json", r.headers
        g = Graph().parse(data=r.read().decode(), format="json-ld")
    assert (URIRef("http://example.org/alice"), NAME, Literal("Alice")) in g, g.serialize(format="nt")

    # A plain JSON client still gets CouchDB's answer, and no challenge.
    try:
        urllib.request.urlopen(urllib.request.Request(URL + "/people/alice", headers={"Accept": "application/json"}))
        raise AssertionError("an anonymous read was answered")
    except urllib.error.HTTPError as e:
        assert e.code == 401 and e.headers.get("WWW-Authenticate") is None, (e.code, dict(e.headers))
    req = urllib.request.Request(URL + "/people/alice", headers={"Accept": "application/json"})
    req.add_header("Authorization", "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())
    with urllib.request.urlopen(req) as r:
        assert r.headers.get_content_type() == "application/json"
        assert json.load(r)["name"] == "Alice"


if __name__ == "__main__":
    globals()[sys.argv[1]]()
    print("ok", sys.argv[1])
