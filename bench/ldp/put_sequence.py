#!/usr/bin/env python3
"""PUT resources of seed 002's shape (bench.py's) to a Rhizome server on
127.0.0.1:PORT (user bench:bench, database `bench`): children FIRST..LAST-1
after 0..FIRST-1, running the shell command ON before child FIRST and OFF
after the last (bench/ldp/instructions: callgrind's instrumentation).

Usage: put_sequence.py PORT FIRST LAST ON OFF"""
import base64
import http.client
import random
import string
import subprocess
import sys

port, first, last = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hook_on, hook_off = sys.argv[4], sys.argv[5]
rng = random.Random(2)
auth = {"Authorization": "Basic " + base64.b64encode(b"bench:bench").decode()}
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
LDP = "http://www.w3.org/ns/ldp#"
base = "/bench/_ldp/"


def call(method, path, body=None, headers=None):
    h = dict(auth)
    h.update(headers or {})
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    return r.status, r.read()


status, data = call("PUT", base + "p", b"", {"Content-Type": "text/turtle", "Link": f"<{LDP}BasicContainer>; rel=\"type\""})
assert status in (201, 204), (status, data[:300])
repo = [f"http://127.0.0.1:{port}{base}p"] + [f"http://127.0.0.1:{port}{base}p/r{i}" for i in range(4)]


def body():
    lines = [f"<> <urn:bench:ext{i}> <http://example.org/ext/{rng.randrange(5)}> ." for i in range(50)]
    lines += [f"<> <urn:bench:int{i}> <{repo[rng.randrange(5)]}> ." for i in range(50)]
    for i in range(100):
        text = "".join(rng.choice(string.ascii_letters + string.digits + "éüçøß") for _ in range(64))
        lines.append(f"<> <urn:bench:str{i % 50}> \"{text}\" .")
    return "\n".join(lines).encode()


bodies = [body() for _ in range(last)]
for i in range(last):
    if i == first:
        subprocess.run(hook_on, shell=True, check=True)
    status, data = call("PUT", f"{base}p/c{i}", bodies[i], {"Content-Type": "text/turtle"})
    assert status in (201, 204), (i, status, data[:300])
subprocess.run(hook_off, shell=True, check=True)
