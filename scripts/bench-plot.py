#!/usr/bin/env python3
"""PNG plots of halox-bench JSON lines (and of the device suite's bench.jsonl).

    python3 scripts/bench-plot.py FILE.jsonl [MORE.jsonl ...] [--out DIR]

Writes into DIR (default: the first file's folder), one plot per kind that has data:
  latency.png          latency vs message size, per transport          ("bench": "latency")
  bandwidth.png        bandwidth vs message size, per transport        ("bench": "bandwidth")
  halo.png             halo exchange time vs atoms, per transport      ("bench": "halo", and the
                       lines of the former bench/halo_gpu_bench, which have "time_us" and no
                       "bench")
  md.png               ms/step vs atoms, per transport                 ("bench": "md" or "halox-md")
  speedup.png          speedup over mpi-staged and over nccl, halo and md, vs atoms (4 panels;
                       runs with 2+ ranks)
  scaling.png          strong-scaling efficiency vs atoms, per transport and rank count, over
                       the fewest ranks measured (md records)
Exits 0 with a message when matplotlib is missing or a file has no usable lines.
"""
import json
import os
import statistics
import sys
from collections import defaultdict


def load(paths):
    recs = []
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        recs.append(json.loads(line))
                    except ValueError:
                        pass
    return recs


def kind(r):
    b = r.get("bench")
    if b is None and "time_us" in r and "max_halo_atoms" in r:
        return "halo"  # halo_gpu_bench lines
    return "md" if b == "halox-md" else b


def series_name(r):
    name = r.get("transport", "?")
    if r.get("graph"):
        name += " --graph"
    ranks = r.get("ranks")
    return f"{name} ({ranks} rank{'s' if ranks != 1 else ''})" if ranks else name


def median_by(recs, xkey, ykey):
    """{series: [(x, median y)]} over the records with both values."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in recs:
        y = ykey(r)
        if r.get(xkey) is None or y is None or r.get("available") is False:
            continue
        acc[series_name(r)][r[xkey]].append(y)
    return {s: sorted((x, statistics.median(v)) for x, v in pts.items())
            for s, pts in acc.items()}


def save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    print(f"bench-plot: wrote {path}")
    return True


def plot_lines(plt, data, title, xlabel, ylabel, path, logx=True, logy=True):
    if not data:
        return False
    # many series: the legend goes beside the axes, not over the lines
    wide = len(data) > 8
    fig, ax = plt.subplots(figsize=(11 if wide else 7, 4.5 + 0.12 * max(0, len(data) - 30)))
    # one colour per transport (the name before " (N ranks)"), one line style per rank count:
    # with more than 10 series the default colour cycle repeats and two lines would look alike
    names = sorted({s.split(" (")[0] for s in data})
    cmap = plt.get_cmap("tab20" if len(names) > 10 else "tab10")
    styles = {}
    for s in sorted(data):
        xs, ys = zip(*data[s])
        base, _, tail = s.partition(" (")
        style = styles.setdefault(tail, ["-", "--", ":", "-."][len(styles) % 4])
        ax.plot(xs, ys, marker="o", markersize=4, linestyle=style,
                color=cmap(names.index(base) % cmap.N), label=s)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if wide:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.legend(fontsize=7)
    return save(plt, fig, path)


def speedups(recs, over, ykey):
    """Median time of `over` / median time of each other transport, same atoms and ranks."""
    times = defaultdict(list)
    for r in recs:
        if ykey(r):
            times[(series_name(r), r.get("transport"), r["atoms"], r.get("ranks"))].append(ykey(r))
    base = {(n, p): statistics.median(v) for (s, t, n, p), v in times.items()
            if t == over and "--graph" not in s}
    out = defaultdict(list)
    for (s, t, n, p), v in times.items():
        if (n, p) in base and t != over:
            out[s].append((n, base[(n, p)] / statistics.median(v)))
    return {s: sorted(v) for s, v in out.items()}


def scaling(recs):
    """Strong-scaling efficiency vs atoms, per transport and rank count above the fewest:
    t(fewest ranks) / t(P ranks) * fewest / P, medians; the fewest-rank time of the same
    transport, else of nccl (runs with one rank exchange nothing between GPUs)."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in recs:
        if r.get("ms_per_step"):
            key = (r["transport"] + (" --graph" if r.get("graph") else ""), r["atoms"])
            acc[key][r["ranks"]].append(r["ms_per_step"])
    out = defaultdict(list)
    for (t, n), by in acc.items():
        ranks = sorted(by)
        ref = acc.get((t, n), {})
        p0 = min(ranks)
        if p0 > 1 or len(ranks) < 2:
            ref = acc.get(("nccl", n), {})
            if not ref:
                continue
            p0 = min(ref)
        t0 = statistics.median(ref[p0])
        for p in ranks:
            if p > p0:
                out[f"{t} ({p} ranks)"].append((n, t0 / statistics.median(by[p]) * p0 / p))
    return {s: sorted(v) for s, v in out.items()}


def plot_speedups(plt, panels, path):
    """2 x 2 panels (halo, md) x (over mpi-staged, over nccl), runs with 2+ ranks only (with
    one rank every transport copies on one GPU: nothing to compare)."""
    if not any(panels.values()):
        return False
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    names = sorted({s.split(" (")[0] for d in panels.values() for s in d})
    cmap = plt.get_cmap("tab20" if len(names) > 10 else "tab10")
    for (i, what), (j, over) in ((a, b) for a in enumerate(("halo", "md"))
                                 for b in enumerate(("mpi-staged", "nccl"))):
        ax = axes[i][j]
        data = panels.get((what, over), {})
        for s in sorted(data):
            xs, ys = zip(*data[s])
            base = s.split(" (")[0]
            ax.plot(xs, ys, marker="o", markersize=4, color=cmap(names.index(base) % cmap.N),
                    linestyle="--" if "--graph" in s else "-", label=s)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_title(f"{what}: speedup over {over}")
        ax.set_xlabel("atoms")
        ax.set_ylabel("speedup")
        ax.grid(True, which="both", alpha=0.3)
        if data:
            ax.legend(fontsize=7)
    return save(plt, fig, path)


def main():
    args = sys.argv[1:]
    out = None
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1] if i + 1 < len(args) else None
        del args[i:i + 2]
    if not args or any(a.startswith("-") for a in args) or (out is None and "--out" in sys.argv):
        print(__doc__)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench-plot: matplotlib is not installed (pip install matplotlib): no plots")
        return 0
    recs = load(args)
    out = out or os.path.dirname(os.path.abspath(args[0]))
    os.makedirs(out, exist_ok=True)
    by = defaultdict(list)
    for r in recs:
        by[kind(r)].append(r)
    halo_t = lambda r: (r.get("time_us") or {}).get("median") if not r.get("floor") else None
    md_t = lambda r: r.get("ms_per_step")
    made = 0
    made += plot_lines(plt, median_by(by["latency"], "bytes",
                                      lambda r: r["latency_us"]["median"]),
                       "Latency (half round trip)", "message bytes", "microseconds",
                       os.path.join(out, "latency.png"))
    made += plot_lines(plt, median_by(by["bandwidth"], "bytes", lambda r: r["bandwidth_GBps"]),
                       "Bandwidth (coordinates out + forces back)", "message bytes", "GB/s",
                       os.path.join(out, "bandwidth.png"))
    made += plot_lines(plt, median_by(by["halo"], "atoms",
                                      lambda r: (r.get("time_us") or {}).get("median")),
                       "Halo exchange (coordinates + forces)", "atoms", "microseconds",
                       os.path.join(out, "halo.png"))
    made += plot_lines(plt, median_by(by["md"], "atoms", md_t), "MD step", "atoms", "ms/step",
                       os.path.join(out, "md.png"))
    panels = {}
    for over in ("mpi-staged", "nccl"):
        for what, rs, y in (("halo", by["halo"], halo_t), ("md", by["md"], md_t)):
            multi = [r for r in rs if (r.get("ranks") or 1) > 1]
            panels[(what, over)] = speedups(multi, over, y)
    made += plot_speedups(plt, panels, os.path.join(out, "speedup.png"))
    made += plot_lines(plt, scaling(by["md"]), "Strong scaling (efficiency over the fewest ranks)",
                       "atoms", "efficiency", os.path.join(out, "scaling.png"), logy=False)
    if not made:
        print("bench-plot: no latency, bandwidth, halo or md records: no plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
