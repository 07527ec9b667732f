#!/usr/bin/env python3
"""Loads DOCS documents of bench/views' shape (bench.js's `doc`, with its
default context) into a Rhizome server on 127.0.0.1:PORT (user
bench:bench, database `views`), puts bench.js's design document, then
runs the shell command ON, builds the index (a `limit=1` query of each
view, as bench.js times it) and runs OFF (bench/views/instructions:
callgrind's instrumentation). Prints the build's wall-clock seconds.

Usage: build_sequence.py PORT DOCS ON OFF"""
import base64
import http.client
import json
import subprocess
import sys
import time

port, docs = int(sys.argv[1]), int(sys.argv[2])
hook_on, hook_off = sys.argv[3], sys.argv[4]
auth = {"Authorization": "Basic " + base64.b64encode(b"bench:bench").decode(), "Content-Type": "application/json"}
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
CITIES = ["Fribourg", "Bern", "Basel", "Zurich"]


def call(method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=auth)
    r = conn.getresponse()
    data = r.read()
    assert 200 <= r.status < 300, (method, path, r.status, data[:300])
    return data


def doc(i):
    return {"_id": f"p{i:08d}", "num": i, "age": 18 + ((i * 7919) % 60), "score": (i * 31) % 1000, "city": CITIES[i % 4], "name": f"user {i}"}


call("PUT", "/views")
call("PUT", "/views/_local/rhizome-context", {"@context": {"@vocab": "http://example.org/p#"}})
for s in range(0, docs, 10000):
    call("POST", "/views/_bulk_docs", {"docs": [doc(i) for i in range(s, min(docs, s + 10000))]})
views = {
    "num_count": {"map": "function (doc) { if (doc.num !== undefined) emit(doc.num, doc.score); }", "reduce": "_count"},
    "num_sum": {"map": "function (doc) { if (doc.num !== undefined) emit(doc.num, doc.score); }", "reduce": "_sum"},
    "age": {"map": "function (doc) { if (doc.age !== undefined) emit(doc.age, null); }", "reduce": "_count"},
}
call("PUT", "/views/_design/bench", {"views": views})
subprocess.run(hook_on, shell=True, check=True)
t = time.monotonic()
for v in views:
    call("GET", f"/views/_design/bench/_view/{v}?limit=1")
elapsed = time.monotonic() - t
subprocess.run(hook_off, shell=True, check=True)
print(f"build: {elapsed:.3f} s")
