#!/usr/bin/env python3
"""scripts/plot/floor-sweep.py on a hand-made sweep (tests/data/floor-sweep/sweep.txt) whose
medians are worked out here: 4,096 atoms, GROMACS without graphs 0.0381/0.0401/0.0390 -> 0.0390,
with graphs 0.0301/0.0320 -> 0.03105 (printed 0.0310 or 0.0311), halox-md 1 rank pooled over the
np1 and np1-graph parts 0.0491/0.0481/0.0471/0.0461 (one failed run left out) -> 0.0476,
against the faster GROMACS 0.03105 / 0.0476 -> 1.53x slower; 2 ranks: GROMACS failed (no cell),
halox-md 0.0601; 46,656 atoms: 0.1290 / 0.0890 -> 1.45x faster. Lines that are not runs are
ignored; the PNG is written when matplotlib is there.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    tool = os.path.join(ROOT, "scripts", "plot", "floor-sweep.py")
    data = os.path.join(ROOT, "tests", "data", "floor-sweep", "sweep.txt")
    bad = []
    with tempfile.TemporaryDirectory() as d:
        md, png = os.path.join(d, "sweep.md"), os.path.join(d, "sweep.png")
        try:
            import matplotlib  # noqa: F401
            args = ["--png", png]
        except ImportError:
            args = []
        p = subprocess.run([sys.executable, tool, data, "--table", md, *args],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            print(p.stdout + p.stderr)
            return 1
        t = open(md).read()
        if args and not os.path.getsize(png) > 0:
            bad.append("no PNG written")
    print(t)
    rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]]
            for r in t.splitlines()[2:]}
    head = [c.strip() for c in t.splitlines()[0].split("|")[2:-1]]
    want_head = ["GROMACS", "GROMACS, CUDA graphs", "halox-md", "GROMACS 2 ranks",
                 "halox-md 2 ranks", "halox-md 1 rank against the faster GROMACS"]
    if head != want_head:
        bad.append(f"columns {head}, want {want_head}")
    r = rows.get("4,096")
    if not r:
        bad.append("no 4,096 row")
    else:
        num = lambda c: float(re.match(r"[0-9.]+", c).group(0)) if re.match(r"[0-9.]", c) else None
        checks = [(0, 0.0390), (1, 0.03105), (2, 0.0476), (4, 0.0601)]
        for i, v in checks:
            if num(r[i]) is None or abs(num(r[i]) - v) > 6e-5:
                bad.append(f"4,096 {head[i]}: {r[i]}, want {v}")
        if r[3] != "-":
            bad.append(f"4,096 GROMACS 2 ranks (failed runs only): {r[3]}, want -")
        if r[5] != "1.53x slower":
            bad.append(f"4,096 ratio {r[5]}, want 1.53x slower")
    r = rows.get("46,656")
    if not r or r[5] != "**1.45x faster**":
        bad.append(f"46,656 row {r}: want **1.45x faster**")
    if len(rows) != 2:
        bad.append(f"{len(rows)} rows, want 2")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
