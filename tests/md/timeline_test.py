#!/usr/bin/env python3
"""scripts/plot/timeline.py on stamps made up here with known times (HALOX_MD_TIMELINE's files: one
per rank, tab-separated kind, launch, start, end, wait in ns): the steps of two ranks lined up by
their home gathers, every kind's median start, wait and end from the step's first home gather on
any rank, the median step period; a rank-0 step without a home gather (a rebuild step) does not
count, a launch after a rank's last home gather neither; no files is an error. Exit 0 when all
is well, 1 with the reasons."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "plot", "timeline.py")

# per kind: (start, end, wait or None) in us from the rank's step start
STEP = [("home_gather", 0, 4, None), ("halo_gather", 5, 9, 7), ("local", 5, 60, None),
        ("nonlocal", 10, 30, None), ("halo_forces", 31, 33, None), ("kick", 61, 64, 62)]
PERIOD = 100  # us; every 5th step 150 (a prune), so the median stays 100
RANK_LAG = [0, 2]  # rank 1 starts each step 2 us after rank 0


def write(d):
    for r, lag in enumerate(RANK_LAG):
        t = 1_000_000_000 + lag * 1000
        with open(os.path.join(d, "tl.rank%d.tsv" % r), "w") as f:
            f.write("# made up\n# kind\tlaunch\tstart\tend\twait\n")
            for n in range(12):
                length = 150 if n % 5 == 4 else PERIOD
                for kind, s, e, w in STEP:
                    if kind == "home_gather" and n == 0 and r == 0:
                        continue  # a rebuild step: the list build gathered
                    f.write("%s\t%d\t%d\t%d\t%s\n" % (kind, n, t + s * 1000, t + e * 1000,
                                                      "-" if w is None else t + w * 1000))
                t += length * 1000
            # a launch after the last home gather: belongs to no full step
            f.write("kick\t12\t%d\t%d\t-\n" % (t + 1000, t + 2000))


def main():
    bad = []
    with tempfile.TemporaryDirectory() as d:
        write(d)
        out = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "tl")],
                             capture_output=True, text=True)
        if out.returncode != 0:
            bad.append("exit %d: %s" % (out.returncode, out.stderr.strip()))
        text = out.stdout
        m = re.search(r"2 rank\(s\), (\d+) steps lined up; step period median ([\d.]+) us", text)
        # rank 0 has home gathers in steps 1-11: 10 full steps between them, 9 periods
        if not m or m.group(1) != "10" or float(m.group(2)) != PERIOD:
            bad.append("header: %r" % (m.group(0) if m else text[:200]))
        rows = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) == 6 and f[0].isdigit():
                rows[(int(f[0]), f[1])] = f[2:]
        for r, lag in enumerate(RANK_LAG):
            for kind, s, e, w in STEP:
                want = ["%.1f" % (s + lag), "-" if w is None else "%.1f" % (w + lag),
                        "%.1f" % (e + lag), "%.1f" % (e - s)]
                got = rows.get((r, kind))
                if got != want:
                    bad.append("rank %d %s: %s, expected %s" % (r, kind, got, want))
        none = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "absent")],
                              capture_output=True, text=True)
        if none.returncode != 1 or "no " not in none.stderr:
            bad.append("no files: exit %d, %r" % (none.returncode, none.stderr))
    for b in bad:
        print("timeline_test:", b)
    print("timeline_test: %s" % ("FAIL" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
