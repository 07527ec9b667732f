#!/usr/bin/env python3
"""The bench/ldp table (Markdown) from results-*.json, with seed 002's figures."""
import json
import os
import sys

print("| system | children | PUT ms/request (first 1k / last 1k / mean) | POST ms/request (first 1k / last 1k / mean) | container GET | store | SPARQL count |")
print("|---|---:|---|---|---:|---:|---:|")
for path in sys.argv[1:]:
    r = json.load(open(path))
    size_file = os.path.join(os.path.dirname(path), f"size-{r['name']}.txt")
    size = int(open(size_file).read()) / 1e9 if os.path.exists(size_file) else None
    cells = []
    for run in r["runs"]:
        cells.append(f"{run['first_1000_ms']:.2f} / {run['last_1000_ms']:.2f} / {run['mean_ms']:.2f}")
    get = max(run["get_s"] for run in r["runs"])
    sparql = f"{r['sparql_s']:.3f} s ({r['sparql_count']})" if "sparql_s" in r else "n/a"
    print(f"| {r['name']} | {r['children']:,} | {cells[0]} | {cells[1]} | {get:.2f} s | {size:.2f} GB | {sparql} |" if size is not None else
          f"| {r['name']} | {r['children']:,} | {cells[0]} | {cells[1]} | {get:.2f} s | ? | {sparql} |")
print("| seed 002: Fedora 5.0.2 | 100,000 | >500 ms (PUT stopped at 30k) | 65 ms (4.7.5, pairtree) | 3m41s | 12 GB | n/a |")
print("| seed 002: Lakesuperior REST | 100,000 | 104 ms | 123 ms | 30 s | 8.7 GB | 19.3 s |")
