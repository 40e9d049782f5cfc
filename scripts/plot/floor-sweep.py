#!/usr/bin/env python3
"""The strong-scaling sweep of scripts/device/floor-sweep.sh as a table and a plot.

    python3 scripts/plot/floor-sweep.py sweep.txt [--table sweep.md] [--png sweep.png]

sweep.txt holds lines of ../shared/peer/lj-fluid.sh, each prefixed by its part (np1, np1-graph,
np2):
    np1 gromacs atoms 4096 run 1 ms/step 0.0381 ...
    np1 halox   atoms 4096 run 1 0.0491 ms/step ...
Series: GROMACS without and with CUDA graphs (1 rank), halox-md 1 rank (the runs of np1 and
np1-graph pooled: the same command), GROMACS 2 ranks and halox-md 2 ranks on the one GPU (np2).
Each cell is the median ms/step of its runs (failed runs left out) with their count when it is
not the same for every cell; the last column compares halox-md on 1 rank with the faster GROMACS
setting on 1 rank. The plot is ms/step against atoms per GPU, both axes logarithmic.
"""
import argparse
import re
import statistics
import sys
from collections import defaultdict

SERIES = [  # (key, column title)
    ("gmx", "GROMACS"),
    ("gmx-graph", "GROMACS, CUDA graphs"),
    ("halox", "halox-md"),
    ("gmx-np2", "GROMACS 2 ranks"),
    ("halox-np2", "halox-md 2 ranks"),
]

LINE = re.compile(r"^(\S+)\s+(gromacs|halox)\s+atoms\s+(\d+)\s+run\s+\d+\s+(.*)$")


def parse(lines):
    """{series: {atoms: [ms/step, ...]}} from sweep.txt's lines."""
    runs = defaultdict(lambda: defaultdict(list))
    for line in lines:
        m = LINE.match(line.strip())
        if not m:
            continue
        part, code, atoms, rest = m.group(1), m.group(2), int(m.group(3)), m.group(4)
        v = re.match(r"ms/step\s+([0-9.]+)", rest) if code == "gromacs" else \
            re.match(r"([0-9.]+)\s+ms/step", rest)
        if code == "gromacs":
            key = {"np1": "gmx", "np1-graph": "gmx-graph", "np2": "gmx-np2"}.get(part)
        else:
            key = "halox-np2" if part == "np2" else "halox"
        if key:
            have = runs[key][atoms]  # a failed run still gives its series a column
            if v:
                have.append(float(v.group(1)))
    return runs


def medians(runs):
    return {k: {n: statistics.median(v) for n, v in d.items() if v} for k, d in runs.items()}


def table(runs):
    med = medians(runs)
    sizes = sorted({n for d in runs.values() for n in d})
    counts = {len(v) for d in runs.values() for v in d.values() if v}
    cols = [(k, t) for k, t in SERIES if k in runs]
    out = ["| atoms per GPU | " + " | ".join(t for _, t in cols) +
           " | halox-md 1 rank against the faster GROMACS |",
           "|---" * (len(cols) + 2) + "|"]
    for n in sizes:
        cells = []
        for k, _ in cols:
            if n in med.get(k, {}):  # else no run, or none that finished
                c = f"{med[k][n]:.4f}"
                if len(counts) > 1:
                    c += f" ({len(runs[k][n])})"
            else:
                c = "-"
            cells.append(c)
        best = [med[k][n] for k in ("gmx", "gmx-graph") if n in med.get(k, {})]
        h = med.get("halox", {}).get(n)
        if best and h:
            r = min(best) / h
            vs = f"**{r:.2f}x faster**" if r >= 1 else f"{1 / r:.2f}x slower"
        else:
            vs = "-"
        out.append(f"| {n:,} | " + " | ".join(cells) + f" | {vs} |")
    return "\n".join(out) + "\n"


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    med = medians(runs)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, title in SERIES:
        if k not in med or not med[k]:
            continue
        xs = sorted(med[k])
        ax.plot(xs, [med[k][x] for x in xs], marker="o",
                linestyle="--" if k.startswith("gmx") else "-", label=title)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("atoms per GPU")
    ax.set_ylabel("ms/step (median)")
    ax.set_title("Lennard-Jones fluid, identical physics, one GPU")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sweep")
    ap.add_argument("--table")
    ap.add_argument("--png")
    a = ap.parse_args()
    with open(a.sweep) as f:
        runs = parse(f)
    if not runs:
        print(f"{a.sweep}: no runs", file=sys.stderr)
        return 1
    t = table(runs)
    if a.table:
        with open(a.table, "w") as f:
            f.write(t)
    else:
        sys.stdout.write(t)
    if a.png:
        plot(runs, a.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
