"""Draws the curves of `npm run bench analytics -- --scaling`: argv[1] its JSON (docs/images/analytics-scaling.json),
argv[2] the PNG to write. One log-log panel per query: Vigil, PostgreSQL and DuckDB time against events,
with the fitted exponent b of t ~ N^b in the legend. Needs `pip install matplotlib`."""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

data = json.load(open(sys.argv[1]))
series = data["series"]
cols = 3
rows = math.ceil(len(series) / cols)
fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
engines = [("vigil", "Vigil (REST)", "tab:blue"), ("pg", "PostgreSQL", "tab:red"), ("duck", "DuckDB", "tab:green")]
for ax, s in zip(axes.flat, series):
    for key, name, color in engines:
        pts = [(n, t) for n, t in s[key] if t > 0]
        if not pts:
            continue
        b = s["b"][key]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=color,
                label=f"{name}, b={b:.2f}" if b is not None else name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(s["label"], fontsize=8.5)
    ax.set_xlabel("events in the project", fontsize=8)
    ax.set_ylabel("ms (median)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
for ax in list(axes.flat)[len(series):]:
    ax.axis("off")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
