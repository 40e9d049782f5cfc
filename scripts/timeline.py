#!/usr/bin/env python3
"""A step's latency budget from the kernel timeline of halox-md (HALOX_MD_TIMELINE=PREFIX).

Reads PREFIX.rank*.tsv (one file per rank; times on the GPU's global clock, which every process
on a GPU shares) and lines the ranks' steps up: step n of a rank is its n-th home gather and the
launches of the other kinds that start before its next one. For every rank and kernel kind it
prints the median (over the steps where the rank ran every kind once) of the start, the
in-kernel wait's end and the end, in microseconds from the step's first home gather on any rank,
and the median step period. Usage: timeline.py PREFIX [--steps N] (the last N steps, default all).
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
    """Per step (home gather n): {kind: (start, end, wait)} of the launches before the next one."""
    hg = rows.get("home_gather", [])
    out = []
    for i in range(len(hg) - 1):
        t0, t1 = hg[i][1], hg[i + 1][1]
        step = {}
        for kind in KINDS:
            hits = [r for r in rows.get(kind, []) if t0 <= r[1] < t1]
            if len(hits) == 1:
                step[kind] = hits[0][1:]
        out.append(step)
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
    nsteps = min(len(s) for s in ranks)
    idx = list(range(nsteps))
    if last:
        idx = idx[-last:]
    t0 = {}
    for n in idx:
        starts = [r[n]["home_gather"][0] for r in ranks if "home_gather" in r[n]]
        if starts:
            t0[n] = min(starts)
    periods = [t0[n + 1] - t0[n] for n in idx if n in t0 and n + 1 in t0]
    print("%d rank(s), %d steps lined up; step period median %.1f us (min %.1f, max %.1f)"
          % (len(ranks), len(t0), statistics.median(periods) / 1e3 if periods else 0,
             min(periods) / 1e3 if periods else 0, max(periods) / 1e3 if periods else 0))
    print("us from the step's first home gather (medians over the steps):")
    print("%-5s %-12s %8s %8s %8s %8s" % ("rank", "kind", "start", "waited", "end", "length"))
    for r, steps in enumerate(ranks):
        full = [n for n in idx if n in t0 and all(k in steps[n] for k in KINDS
                                                   if any(k in s for s in steps))]
        for kind in KINDS:
            rows = [(steps[n][kind], t0[n]) for n in full if kind in steps[n]]
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
