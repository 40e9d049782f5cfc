#!/usr/bin/env python3
"""Markdown tables of the GPU MD benchmark lines ("bench": "halox-md") of the JSONL files of
scripts/device/suite.sh.

    python3 scripts/plot/md-table.py bench.jsonl [more.jsonl ...]

One row per atom count, one column per configuration (GPUs, transport, --graph); each cell is
the median ms/step over the repeats with (min-max), ns/day, and the halo exchange time per step
with its share of the step (not measured for graph runs: their steps are not timed by part).
A second table gives the median time split (pair forces, halo, neighbour search, migration +
plan) in ms/step.
"""
import json
import statistics
import sys
from collections import defaultdict


def load(paths):
    runs = defaultdict(list)
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("bench") != "halox-md":
                    continue
                key = (r["atoms"], r["ranks"], r["transport"], bool(r.get("graph")))
                runs[key].append(r)
    return runs


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    runs = load(sys.argv[1:])
    if not runs:
        print("no halox-md lines found", file=sys.stderr)
        return 1
    configs = sorted({k[1:] for k in runs}, key=lambda c: (c[0], c[1] != "mpi-staged", c[2]))
    sizes = sorted({k[0] for k in runs})

    def name(c):
        gpus = "1 GPU" if c[0] == 1 else f"{c[0]} GPUs"
        return f"{gpus} `{c[1]}`" + (" `--graph`" if c[2] else "")

    def table(cell_of):
        print("| atoms | " + " | ".join(name(c) for c in configs) + " |")
        print("|---|" + "---|" * len(configs))
        for n in sizes:
            cells = [cell_of(runs[(n,) + c]) if runs.get((n,) + c) else "-" for c in configs]
            print(f"| {n:,} | " + " | ".join(cells) + " |")

    def speed(rs):
        ms = [r["ms_per_step"] for r in rs]
        m = med(ms)
        cell = f"{m:.3f} ({min(ms):.3f}-{max(ms):.3f}), {med([r['ns_per_day'] for r in rs]):.0f} ns/day"
        halo = med([r.get("halo_ms_per_step") for r in rs])
        if halo is not None:
            cell += f"; halo {halo:.3f} ({100 * halo / m:.0f} %)"
        return cell + f" [{len(rs)}]"

    def split(rs):
        parts = []
        for k in ("pair_ms_per_step", "halo_ms_per_step", "neighbour_ms_per_step",
                  "migration_plan_ms_per_step"):
            v = med([r.get(k) for r in rs])
            parts.append("-" if v is None else f"{v:.3f}")
        return " / ".join(parts)

    table(speed)
    print()
    print("Time split, median ms/step (pair forces / halo / neighbour search / migration + plan):")
    print()
    table(split)
    return 0


if __name__ == "__main__":
    sys.exit(main())
