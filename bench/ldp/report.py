#!/usr/bin/env python3
"""The bench/ldp tables (Markdown) from results-*.json, with seed 002's figures:
one row per system, then each peer's time per request over Rhizome's for
the same number of children (Rhizome's means over its first N requests,
N the peer's count), and the load averages at each system's start and end."""
import json
import os
import sys


def size_of(path, name):
    f = os.path.join(os.path.dirname(path), f"size-{name}.txt")
    return int(open(f).read()) if os.path.exists(f) else None


def human(n):
    return "?" if n is None else f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def mean_first(run, n):
    """Mean ms per request over the first n requests, from the per-1,000 means."""
    per_k, total, count = run["per_1000_ms"], 0.0, 0
    for k, ms in enumerate(per_k):
        take = min(1000, n - count, run["children"] - 1000 * k)
        if take <= 0:
            break
        total += ms * take
        count += take
    return total / count


results = sorted(((p, json.load(open(p))) for p in sys.argv[1:]), key=lambda pr: pr[1]["name"] != "rhizome")
print("| system | children | PUT ms/request (first 1k / last 1k / mean) | POST ms/request (first 1k / last 1k / mean) | container GET | store (per resource) | SPARQL count |")
print("|---|---:|---|---|---:|---:|---:|")
notes = []
for path, r in results:
    size = size_of(path, r["name"])
    resources = sum(run["children"] for run in r["runs"])
    cells = []
    for run in r["runs"]:
        if not run["children"]:
            cell = "none"
        else:
            cell = f"{run['first_1000_ms']:.2f} / {run['last_1000_ms']:.2f} / {run['mean_ms']:.2f}"
        if run.get("stopped"):
            cell += f" ({'failed' if run.get('failed') else 'stopped'} at {run['children']:,})"
            notes.append(f"{r.get('label', r['name'])}: {run['stopped']}.")
        cells.append(cell)
    while len(cells) < 2:
        cells.append("not run")
    children = " / ".join(f"{run['children']:,}" for run in r["runs"]) if len({run["children"] for run in r["runs"]}) > 1 else f"{r['runs'][0]['children']:,}"
    gets = [run["get_s"] for run in r["runs"] if run.get("get_s") is not None]
    get = f"{max(gets):.3f} s" if gets else "?"
    store = f"{human(size)} ({size / resources / 1e3:.1f} kB)" if size is not None else "?"
    sparql = (f"{r['sparql_s']:.3f} s ({r['sparql_count']})" if "sparql_s" in r
              else "not run" if any(run.get("failed") for run in r["runs"]) else "n/a (no endpoint)")
    print(f"| {r.get('label', r['name'])} | {children} | {cells[0]} | {cells[1]} | {get} | {store} | {sparql} |")
print("| seed 002: Fedora 5.0.2 | 100,000 | >500 ms (PUT stopped at 30k) | 65 ms (4.7.5, pairtree) | 3m41s | 12 GB | n/a |")
print("| seed 002: Lakesuperior REST | 100,000 | 104 ms | 123 ms | 30 s | 8.7 GB | 19.3 s |")
for n in notes:
    print(f"\n{n}")

rhizome = next((r for _, r in results if r["name"] == "rhizome"), None)
peers = [r for _, r in results if r["name"] != "rhizome"]
if rhizome and peers:
    print("\nPer request, each peer over Rhizome at the same number of children (Rhizome's mean over its first N requests):\n")
    print("| system | children | PUT ms (peer / Rhizome) | PUT ratio | POST ms (peer / Rhizome) | POST ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in peers:
        cells = []
        for run, base in zip(r["runs"], rhizome["runs"]):
            if not run["children"] or not base["children"]:
                cells.append("? | ?")
                continue
            rz = mean_first(base, run["children"])
            cells.append(f"{run['mean_ms']:.2f} / {rz:.2f} | {run['mean_ms'] / rz:.1f}x")
        while len(cells) < 2:
            cells.append("? | ?")
        print(f"| {r.get('label', r['name'])} | {r['runs'][0]['children']:,} | {cells[0]} | {cells[1]} |")

print("\nLoad averages (1/5/15 min) at each system's start and end of requests (2 cores, shared with other work):\n")
print("| system | start | end |")
print("|---|---|---|")
for _, r in results:
    print(f"| {r.get('label', r['name'])} | {r.get('load_start', '?')} | {r.get('load_end', '?')} |")
