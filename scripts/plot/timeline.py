#!/usr/bin/env python3
"""A step's latency budget from the kernel timeline of halox-md (HALOX_MD_TIMELINE=PREFIX).

Reads PREFIX.rank*.tsv (one file per rank; times on the GPU's global clock, which every process
on a GPU shares) and lines the ranks' steps up: a rank's step is its home gather and the
launches that start before its next one, matched to rank 0's step whose home gather started
nearest. For every rank and kernel kind it prints the median (over the lined-up steps where the
rank ran that kind once) of the start, the in-kernel wait's end and the end, in microseconds
from the step's first home gather on any rank, and the median step period. Usage: timeline.py PREFIX [--steps N] (the last N steps, default all).
"""
import glob
import statistics
import sys

KINDS = ["home_gather", "halo_gather", "local", "nonlocal", "halo_forces", "kick"]


def read(path):
    rows = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            kind, n, start, end, wait = line.split("\t")
            rows.setdefault(kind, []).append(
                (int(n), int(start), int(end), None if wait.strip() == "-" else int(wait)))
    for v in rows.values():
        v.sort()
    return rows


def steps_of(rows):
    """Per step: (its home gather's start, {kind: (start, end, wait)} of the launches that start
    from it up to the rank's next home gather)."""
    hg = rows.get("home_gather", [])
    out = []
    for i in range(len(hg) - 1):
        t0, t1 = hg[i][1], hg[i + 1][1]
        step = {}
        for kind in KINDS:
            hits = [r for r in rows.get(kind, []) if t0 <= r[1] < t1]
            if len(hits) == 1:
                step[kind] = hits[0][1:]
        out.append((t0, step))
    return out


def line_up(ranks):
    """Rank 0's steps, each with every rank's step whose home gather started nearest to rank
    0's (within half of rank 0's median period; a rank without one there leaves the step out):
    [(t0, [step of rank 0, step of rank 1, ...])], t0 the earliest of those starts."""
    ref = ranks[0]
    periods = [b[0] - a[0] for a, b in zip(ref, ref[1:])]
    half = statistics.median(periods) / 2 if periods else 0
    out = []
    for t, _ in ref:
        mine = []
        for steps in ranks:
            near = min(steps, key=lambda st: abs(st[0] - t), default=None)
            if near is None or abs(near[0] - t) > half:
                break
            mine.append(near)
        if len(mine) == len(ranks):
            out.append((min(st[0] for st in mine), [st[1] for st in mine]))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip())
        return 2
    prefix, last = argv[1], None
    if "--steps" in argv:
        last = int(argv[argv.index("--steps") + 1])
    files = sorted(glob.glob(prefix + ".rank*.tsv"),
                   key=lambda p: int(p.rsplit(".rank", 1)[1].split(".")[0]))
    if not files:
        print("timeline.py: no %s.rank*.tsv" % prefix, file=sys.stderr)
        return 1
    ranks = [steps_of(read(p)) for p in files]
    steps = line_up(ranks)
    if last:
        steps = steps[-last:]
    periods = [b[0] - a[0] for a, b in zip(steps, steps[1:])]
    print("%d rank(s), %d steps lined up; step period median %.1f us (min %.1f, max %.1f)"
          % (len(ranks), len(steps), statistics.median(periods) / 1e3 if periods else 0,
             min(periods) / 1e3 if periods else 0, max(periods) / 1e3 if periods else 0))
    if periods:
        # the mean is what ms/step sees: a few long steps (prunes, a late rank) pull it above
        # the median
        q = sorted(periods)
        pct = lambda f: q[min(len(q) - 1, int(f * len(q)))] / 1e3
        print("step period mean %.1f us; p10 %.1f, p50 %.1f, p90 %.1f" %
              (statistics.mean(periods) / 1e3, pct(0.1), pct(0.5), pct(0.9)))
        # the longest steps: which kernels made them long (lengths in us, rank 0)
        worst = sorted(range(len(periods)), key=lambda i: -periods[i])[:5]
        for i in sorted(worst):
            st = steps[i][1][0]
            lens = " ".join("%s %.1f" % (k, (st[k][1] - st[k][0]) / 1e3) for k in KINDS if k in st)
            print("  step %d: period %.1f us; rank 0: %s" % (i, periods[i] / 1e3, lens))
    print("us from the step's first home gather (medians over the steps):")
    print("%-5s %-12s %8s %8s %8s %8s" % ("rank", "kind", "start", "waited", "end", "length"))
    for r in range(len(ranks)):
        for kind in KINDS:
            rows = [(st[r][kind], t0) for t0, st in steps if kind in st[r]]
            if not rows:
                continue
            s = statistics.median((a[0] - b) / 1e3 for a, b in rows)
            e = statistics.median((a[1] - b) / 1e3 for a, b in rows)
            w = [(a[2] - b) / 1e3 for a, b in rows if a[2] is not None]
            ln = statistics.median((a[1] - a[0]) / 1e3 for a, b in rows)
            print("%-5d %-12s %8.1f %8s %8.1f %8.1f" % (r, kind, s, "%.1f" % statistics.median(w)
                                                       if w else "-", e, ln))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
