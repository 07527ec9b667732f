#!/usr/bin/env python3
"""bench/ldp: seed 002's LDP protocol (Lakesuperior's benchmark script) against
an LDP server: CHILDREN PUTs, then CHILDREN POSTs, of 200-triple Turtle
resources under one parent container each, timing only the requests (the
data is generated beforehand); per-request times as the container grows,
the GET of the full container, and (Rhizome) seed 002's SPARQL count.

Each resource, as seed 002's: 50 triples whose objects are external IRIs
(50 predicates, 5 objects), 50 whose objects are repository resources (50
predicates, 5 objects) and 100 with a random 64-character string (50
predicates, 100 objects).

Usage: bench.py OUT.json NAME ROOT_URL CHILDREN [--sparql URL] [--budget S]
                [--slash-containers]
ROOT_URL is the LDP root container (user:pass@ for Basic auth). --budget
gives the whole run S seconds of requests, half for the PUTs and half for
the POSTs: a phase that reaches its half stops there and the result says so
(a peer far too slow ends with a note rather than hanging the run).
--slash-containers names containers with a trailing slash (Solid servers:
a PUT to a path ending in '/' creates a container). The load averages
(/proc/loadavg) at the start and end are recorded: the machine may be
shared. Standard library only.
"""
import argparse
import base64
import http.client
import json
import random
import string
import sys
import time
import urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("out_path")
ap.add_argument("name")
ap.add_argument("root")
ap.add_argument("children", type=int)
ap.add_argument("--sparql")
ap.add_argument("--budget", type=float)
ap.add_argument("--slash-containers", action="store_true")
ap.add_argument("--label", help="the system's name and version in the table")
args = ap.parse_args()
out_path, name, root, children, sparql = args.out_path, args.name, args.root.rstrip("/") + "/", args.children, args.sparql
url = urllib.parse.urlsplit(root)
auth = {}
if url.username:
    auth = {"Authorization": "Basic " + base64.b64encode(f"{urllib.parse.unquote(url.username)}:{urllib.parse.unquote(url.password or '')}".encode()).decode()}
host = url.hostname
port = url.port
base_path = url.path
conn = http.client.HTTPConnection(host, port, timeout=600)
rng = random.Random(2)
LDP = "http://www.w3.org/ns/ldp#"


def call(method, path, body=None, headers=None):
    global conn
    h = dict(auth)
    h.update(headers or {})
    for attempt in range(2):
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=600)
            if attempt:
                raise


def abs_path(p):
    return p if p.startswith("/") else base_path + p


def repo_iri(p):
    return f"{url.scheme}://{host}:{port}{abs_path(p)}"


def resource_body(repo_objects):
    lines = []
    for i in range(50):
        lines.append(f"<> <urn:bench:ext{i}> <http://example.org/ext/{rng.randrange(5)}> .")
    for i in range(50):
        lines.append(f"<> <urn:bench:int{i}> <{repo_objects[rng.randrange(5)]}> .")
    for i in range(100):
        text = "".join(rng.choice(string.ascii_letters + string.digits + "éüçøß") for _ in range(64))
        lines.append(f"<> <urn:bench:str{i % 50}> \"{text}\" .")
    return "\n".join(lines).encode()


def make_container(slug):
    status, _, body = call("PUT", abs_path(slug), b"", {"Content-Type": "text/turtle", "Link": f"<{LDP}BasicContainer>; rel=\"type\""})
    assert status in (201, 204), (status, body[:300])


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(kind, parent):
    container = parent + "/" if args.slash_containers else parent
    make_container(container)
    repo_objects = [repo_iri(container)] + [repo_iri(f"{parent}/r{i}") for i in range(4)]
    bodies = [resource_body(repo_objects) for _ in range(min(children, 2000))]
    times = []
    stopped = failed = None
    every = 10000 if children > 20000 else 1000
    started = time.perf_counter()
    for i in range(children):
        body = bodies[i % len(bodies)]
        headers = {"Content-Type": "text/turtle"}
        t = time.perf_counter()
        try:
            if kind == "PUT":
                status, _, data = call("PUT", abs_path(f"{parent}/c{i}"), body, headers)
            else:
                status, _, data = call("POST", abs_path(container), body, headers)
        except (OSError, http.client.HTTPException) as e:
            failed = f"failed at {i + 1:,} of {children:,} {kind}s: {type(e).__name__}: {e}"
        else:
            if status not in (201, 204):
                failed = f"failed at {i + 1:,} of {children:,} {kind}s: HTTP {status} {data[:200]!r}"
        if failed:
            # Keep what was measured (a server lost after 40 minutes of
            # requests still leaves its curve); the run exits 1.
            print(f"[bench/ldp] {name} {kind} {failed}", file=sys.stderr, flush=True)
            break
        times.append(time.perf_counter() - t)
        if (i + 1) % every == 0:
            print(f"[bench/ldp] {name} {kind} {i + 1}: last 1000 {sum(times[-1000:]):.2f} s ({loadavg()})", file=sys.stderr, flush=True)
        if args.budget and i + 1 < children and time.perf_counter() - started > args.budget / 2:
            stopped = f"stopped at {i + 1:,} of {children:,} {kind}s: over its {args.budget / 2:.0f} s budget"
            print(f"[bench/ldp] {name} {kind} {stopped}", file=sys.stderr, flush=True)
            break
    per_k = [sum(times[k:k + 1000]) / len(times[k:k + 1000]) for k in range(0, len(times), 1000)]
    out = {"kind": kind, "children": len(times), "mean_ms": 1000 * sum(times) / len(times) if times else None,
           "per_1000_ms": [1000 * x for x in per_k], "first_1000_ms": 1000 * per_k[0] if times else None,
           "last_1000_ms": 1000 * per_k[-1] if times else None, "get_s": None, "get_bytes": None, "stopped": failed or stopped,
           "failed": bool(failed)}
    if not failed:
        t = time.perf_counter()
        status, headers, data = call("GET", abs_path(container), None, {"Accept": "text/turtle"})
        out["get_s"] = time.perf_counter() - t
        out["get_bytes"] = len(data)
        assert status == 200, status
    return out


result = {"name": name, "label": args.label or name, "children": children, "runs": [], "load_start": loadavg()}
for kind, parent in (("PUT", "pomegranate"), ("POST", "pomegranate-post")):
    result["runs"].append(run(kind, parent))
    if result["runs"][-1]["failed"]:
        break
failed = result["runs"][-1]["failed"]
if sparql and not failed:
    q = "PREFIX ldp: <http://www.w3.org/ns/ldp#> SELECT (COUNT(?s) AS ?c) WHERE { ?s a ldp:Resource . ?s a ldp:Container . }"
    su = urllib.parse.urlsplit(sparql)
    t = time.perf_counter()
    status, _, data = call("POST", su.path, urllib.parse.urlencode({"query": q}).encode(),
                           {"Content-Type": "application/x-www-form-urlencoded; charset=UTF-8", "Accept": "application/sparql-results+json"})
    result["sparql_s"] = time.perf_counter() - t
    assert status == 200, (status, data[:300])
    result["sparql_count"] = json.loads(data)["results"]["bindings"][0]["c"]["value"]
result["load_end"] = loadavg()
json.dump(result, open(out_path, "w"), indent=1)
sys.exit(1 if failed else 0)
