#!/usr/bin/env python3
"""bench/ldp's chart: mean ms per request for each 1,000 children, PUT and
POST, every system on one chart (log-log: Rhizome runs to 100k, the peers to
10k). Usage: chart.py OUT.png results-*.json (matplotlib, bench/work/venv)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

out = sys.argv[1]
colors = {"rhizome": "tab:green", "fedora": "tab:red", "css": "tab:blue"}
fig, ax = plt.subplots(figsize=(10, 6))
results = sorted((json.load(open(p)) for p in sys.argv[2:]), key=lambda r: r["name"] != "rhizome")
for r in results:
    for run in r["runs"]:
        per_k = run["per_1000_ms"]
        # "at": the children count of each point when the points are not
        # every 1,000 (a run known only from its progress lines).
        xs = run.get("at") or [min(1000 * (k + 1), run["children"]) for k in range(len(per_k))]
        ax.plot(xs, per_k, marker="o" if len(xs) < 20 or run.get("at") else None, markersize=3,
                linestyle="-" if run["kind"] == "PUT" else "--", color=colors.get(r["name"]),
                label=f"{r.get('label', r['name'])} {run['kind']}" + (" (stopped: budget)" if run.get("stopped") else ""))
ax.set_xscale("log")
ax.set_yscale("log")
ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))
ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(v)[0] in "25" else ""))
ax.set_xlabel("children in the container (each point: the mean of 1,000 requests ending there)")
ax.set_ylabel("ms per request")
ax.set_title("bench/ldp: PUT and POST of 200-triple Turtle resources under one container")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out, dpi=110)
