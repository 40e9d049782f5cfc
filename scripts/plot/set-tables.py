#!/usr/bin/env python3
"""Markdown tables of a benchmark set (scripts/device/bench-set.sh output folder).

    python3 scripts/plot/set-tables.py bench/results/h200x2/2026-11-30-set > tables.md

Reads halo.jsonl, md.jsonl, md-auto.jsonl, overlap.jsonl, latency.jsonl, bandwidth.jsonl of the
folder (those present) and prints: halo time per transport and size (1 and 2 ranks) with the
floor and the ratios the GPU-initiated issue names; MD ms/step (medians over runs), ns/day, halo
share; the transport "auto" took and the fastest measured per case; overlap; bandwidth use;
latency at a few sizes. Medians over repeated records; one decimal for microseconds.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

GROMACS = {  # ../shared/design/gpu-machines.md: ms/step, same machine, NVSHMEM fused, 1 and 2 GPUs
    45000: ("42,888", 0.139, 0.135),
    180000: ("176,301", 0.468, 0.344),
}


def load(folder, name):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def med(v):
    return statistics.median(v) if v else None


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def halo_tables(recs):
    """One table per rank count and mode: host-launched exchanges (records without a mode are
    from before --mode existed: host) and, where recorded, in-step (captured in one graph)."""
    t = defaultdict(list)
    for r in recs:
        if r.get("available") is False:
            continue
        mode = r.get("mode", "host")
        t[(r["ranks"], mode, r["atoms"], r["transport"])].append(r["time_us"]["median"])
    names = ["mpi-staged", "nccl", "nvshmem-stream", "nvshmem-pulse", "nvshmem-fused", "hybrid",
             "nvshmem-fused+put", "nvshmem-fused+tma", "nvshmem-fused+floor"]
    how = {"host": "each exchange launched by the host",
           "in-step": "captured in one CUDA graph, 20 back to back, as the MD step enqueues them"}
    for ranks, mode in sorted({k[:2] for k in t}, key=lambda k: (k[0], k[1] != "host")):
        cols = [x for x in names if mode == "host" or any(
            k[0] == ranks and k[1] == mode and k[3] == x for k in t)]
        print(f"\n#### Halo exchange alone, {ranks} rank{'s' if ranks > 1 else ''} "
              f"({'one per GPU' if ranks > 1 else 'local copies on one GPU'}), microseconds per "
              f"step (coordinates + forces, slowest rank, median of 50){'' if mode == 'host' else ', ' + mode + ': ' + how[mode]}\n")
        print("| atoms | " + " | ".join(cols) + " | fused/floor | nccl/fused | mpi-staged/fused |")
        print("|---" * (len(cols) + 4) + "|")
        for n in sorted({k[2] for k in t if k[:2] == (ranks, mode)}):
            v = {x: med(t.get((ranks, mode, n, x))) for x in names}
            f, fl = v["nvshmem-fused"], v["nvshmem-fused+floor"]
            ratio = lambda a, b: f"{a / b:.2f}" if a and b else "-"
            print(f"| {n:,} | " + " | ".join(fmt(v[x]) for x in cols) +
                  f" | {ratio(f, fl)} | {ratio(v['nccl'], f)} | {ratio(v['mpi-staged'], f)} |")


def md_tables(recs, auto):
    t = defaultdict(list)
    share = defaultdict(list)
    for r in recs:
        if r.get("bench") != "md" or not r.get("ms_per_step"):
            continue
        name = r["transport"] + (" --graph" if r.get("graph") else "")
        t[(r["ranks"], r["atoms"], name)].append(r["ms_per_step"])
        if r.get("halo_share") is not None:
            share[(r["ranks"], r["atoms"], name)].append(r["halo_share"])
    autos = defaultdict(list)
    for r in auto:
        autos[(r["ranks"], r["atoms"])].append((r["transport"], r["ms_per_step"]))
    names = ["mpi-staged", "nccl", "nccl --graph", "nvshmem-stream", "nvshmem-pulse",
             "nvshmem-fused", "nvshmem-fused --graph", "hybrid"]
    for ranks in sorted({k[0] for k in t}):
        print(f"\n#### MD, {ranks} GPU{'s' if ranks > 1 else ''}: ms/step (median of the runs; "
              "halo share of the step in brackets where timed)\n")
        print("| atoms | runs | " + " | ".join(names) +
              " | fastest | auto took | ns/day (fastest) | GROMACS ms/step |")
        print("|---" * (len(names) + 6) + "|")
        for n in sorted({k[1] for k in t if k[0] == ranks}):
            cells = []
            best, best_ms = None, None
            runs = max(len(t.get((ranks, n, x), [])) for x in names)
            for x in names:
                m = med(t.get((ranks, n, x)))
                s = med(share.get((ranks, n, x)))
                cells.append("-" if m is None else
                             (f"{m:.3f}" + (f" ({100 * s:.0f} %)" if s is not None else "")))
                if m is not None and (best_ms is None or m < best_ms):
                    best, best_ms = x, m
            a = autos.get((ranks, n), [])
            took = ", ".join(sorted({x for x, _ in a})) or "-"
            g = GROMACS.get(n)
            gro = f"{g[2 if ranks > 1 else 1]} ({g[0]} atoms)" if g else "-"
            print(f"| {n:,} | {runs} | " + " | ".join(cells) +
                  f" | {best} | {took} | {172.8 / best_ms:.1f} | {gro} |")


def overlap_table(recs):
    if not recs:
        return
    print("\n#### Overlap (2 GPUs): local forces alone, halo alone, both as a step runs them "
          "(microseconds, median of 30, slowest rank); overlap % = (t_halo + t_local - t_both) / "
          "t_halo\n")
    print("| atoms | transport | t_local | t_halo | t_both | overlap % |")
    print("|---|---|---|---|---|---|")
    for r in sorted(recs, key=lambda r: (r["atoms"], r["transport"])):
        print(f"| {r['atoms']:,} | {r['transport']} | {r['t_local_us']:.1f} | "
              f"{r['t_halo_us']:.1f} | {r['t_both_us']:.1f} | {r['overlap_percent']:.1f} |")


def bandwidth_tables(halo, bw):
    if halo:
        print("\n#### Bandwidth use of the halo exchange (2 GPUs): bytes per step / time, "
              "against the link peak measured in the same run\n")
        print("| atoms | KB per step | transport | GB/s | link peak GB/s | use |")
        print("|---|---|---|---|---|---|")
        for r in sorted(halo, key=lambda r: (r["atoms"], r["transport"])):
            if r.get("ranks") == 2 and r["transport"] in ("nvshmem-fused", "nvshmem-stream",
                                                          "nccl", "mpi-staged") \
                    and r["atoms"] in (45000, 3000000, 23000000):
                print(f"| {r['atoms']:,} | {r['bytes_per_step'] / 1024:.0f} | {r['transport']} | "
                      f"{r['bandwidth_GBps']:.1f} | {r['link_peak_GBps']:.0f} | "
                      f"{100 * r['link_use']:.1f} % |")
    if bw:
        print("\n#### One pulse between 2 GPUs, exchanges back to back: GB/s at the largest "
              "message\n")
        top = max(r["bytes"] for r in bw)
        print("| transport | bytes | GB/s | link use |")
        print("|---|---|---|---|")
        for r in bw:
            if r["bytes"] == top and not r["transport"].endswith("+floor"):  # floor: no bytes
                print(f"| {r['transport']} | {r['bytes']:,} | {r['bandwidth_GBps']:.1f} | "
                      f"{100 * r.get('link_use', 0):.1f} % |")


def latency_table(recs):
    if not recs:
        return
    sizes = sorted({r["bytes"] for r in recs})
    pick = sorted({sizes[round(i * (len(sizes) - 1) / 4)] for i in range(5)})
    names = []
    for r in recs:
        if r["transport"] not in names:
            names.append(r["transport"])
    lat = {(r["transport"], r["bytes"]): r["latency_us"]["median"] for r in recs}
    print("\n#### Latency, 2 GPUs, one pulse: half round trip (coordinates out, forces back), "
          "microseconds, median\n")
    print("| transport | " + " | ".join(f"{s:,} B" for s in pick) + " |")
    print("|---" * (len(pick) + 1) + "|")
    for t in names:
        print(f"| {t} | " + " | ".join(fmt(lat.get((t, s))) for s in pick) + " |")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    d = sys.argv[1]
    halo = load(d, "halo.jsonl")
    halo_tables(halo)
    md_tables(load(d, "md.jsonl"), load(d, "md-auto.jsonl"))
    overlap_table(load(d, "overlap.jsonl"))
    bandwidth_tables(halo, load(d, "bandwidth.jsonl"))
    latency_table(load(d, "latency.jsonl"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
