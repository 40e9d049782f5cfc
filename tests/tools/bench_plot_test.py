#!/usr/bin/env python3
"""scripts/plot/bench-plot.py renders the figures of a small record set cut from the published one
(tests/data/bench-plot: latency, bandwidth, halo and md lines of bench/results/h200x2/2026-11-30-set,
plus two runs of md-auto.jsonl so that one md case has several runs), and its figures carry what
a reader needs, checked on matplotlib's objects:

  every axes has a title and axis labels; the legend names every transport and rank count drawn
  (a rank count's sample has the marker and line style of its curves) and lies off every axes;
  a transport has one colour in every figure and two series of one axes never share colour,
  marker, line style and fill; a series that lies on another (within 3 pixels) is narrower,
  smaller and above it; bandwidth has no floor series and no floor value, and its measured link
  peak as a line inside the frame; each figure names system, machine, commit and date; error
  bars exist where the records have a spread (latency, halo: min-max of the repeats; md: of the
  runs of a case) and equal it, and nowhere else (the text says so); GROMACS references in md
  and scaling; the PNG files are written; bad usage exits 2.

Exit 77 (skipped) when matplotlib cannot be imported.
"""
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "bench-plot")
FILES = [os.path.join(DATA, f"{k}.jsonl") for k in ("latency", "bandwidth", "halo", "md")]
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print(f"FAIL: {what}")


def load_script():
    spec = importlib.util.spec_from_file_location(
        "bench_plot", os.path.join(ROOT, "scripts", "plot", "bench-plot.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def series(ax):
    """{(label, ranks): Line2D} of the data series of an axes (gid "series|label|ranks")."""
    out = {}
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if gid.startswith("series|"):
            _, lab, p = gid.split("|")
            out[(lab, int(p))] = line
    return out


def legend_entries(fig):
    out = {}
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg:
            for h, t in zip(leg.legend_handles if hasattr(leg, "legend_handles")
                            else leg.legendHandles, leg.get_texts()):
                out[t.get_text()] = h
    for leg in fig.legends:
        for h, t in zip(leg.legend_handles if hasattr(leg, "legend_handles")
                        else leg.legendHandles, leg.get_texts()):
            out[t.get_text()] = h
    return out


def expected(recs, kind, floor_out=False):
    """(labels, rank counts) the records of a kind hold."""
    labs, ranks = set(), set()
    for r in recs:
        if r.get("bench") != kind or (floor_out and (r.get("floor") or
                                                     r["transport"].endswith("+floor"))):
            continue
        labs.add(r["transport"] + (" --graph" if r.get("graph") else ""))
        ranks.add(r.get("ranks") or 1)
    return labs, ranks


def main():
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib.colors import to_hex
        from matplotlib.container import ErrorbarContainer
    except ImportError:
        print("matplotlib is not importable: skipped")
        return 77
    bp = load_script()
    recs = []
    for f in FILES:
        recs += [json.loads(line) for line in open(f) if line.startswith("{")]
    figs = bp.figures(recs, machine="test-machine")
    check(sorted(figs) == ["bandwidth", "halo", "latency", "md", "scaling", "speedup"],
          f"figures made: {sorted(figs)}")

    want = {"latency": expected(recs, "latency"), "bandwidth": expected(recs, "bandwidth", True),
            "halo": expected(recs, "halo"), "md": expected(recs, "md")}
    colours = {}
    stacked_pairs = 0
    for name, fig in figs.items():
        fig.canvas.draw()
        rend = fig.canvas.get_renderer()
        entries = legend_entries(fig)
        check(entries, f"{name}: has a legend")
        drawn = {}
        for ax in fig.axes:
            check(ax.get_title() and ax.get_xlabel() and ax.get_ylabel(),
                  f"{name}: axes '{ax.get_title()}' has title and both axis labels")
            s = series(ax)
            drawn.update(s)
            # legends off the data: no legend box overlaps any axes
            for other in fig.axes:
                for leg in [a.get_legend() for a in fig.axes if a.get_legend()] + fig.legends:
                    check(not leg.get_window_extent(rend).overlaps(other.get_window_extent(rend)),
                          f"{name}: a legend overlaps axes '{other.get_title()}'")
            # distinguishable: no two series of one axes look alike
            looks = [(to_hex(l.get_color()), l.get_marker(), l.get_linestyle(),
                      to_hex(l.get_markerfacecolor())) for l in s.values()]
            check(len(set(looks)) == len(looks), f"{name}: two series look alike: {looks}")
            # a series on another: narrower, smaller, above
            items = list(s.items())
            for i in range(len(items)):
                for j in range(i):
                    (ka, a), (kb, b) = items[i], items[j]
                    if list(a.get_xdata()) != list(b.get_xdata()):
                        continue
                    pa = ax.transData.transform(list(zip(a.get_xdata(), a.get_ydata())))
                    pb = ax.transData.transform(list(zip(b.get_xdata(), b.get_ydata())))
                    near = sum(abs(p[1] - q[1]) <= 3.0 for p, q in zip(pa, pb))
                    if 2 * near < len(pa):
                        continue
                    stacked_pairs += 1
                    top, bottom = (a, b) if a.get_zorder() > b.get_zorder() else (b, a)
                    check(top.get_zorder() != bottom.get_zorder() and
                          top.get_linewidth() <= bottom.get_linewidth() - 1.0 and
                          top.get_markersize() <= bottom.get_markersize() - 2.0,
                          f"{name}: {ka} and {kb} lie on each other and one hides the other "
                          f"(lw {a.get_linewidth()}/{b.get_linewidth()}, ms "
                          f"{a.get_markersize()}/{b.get_markersize()}, z "
                          f"{a.get_zorder()}/{b.get_zorder()})")
        labs = {k[0] for k in drawn}
        ranks = {k[1] for k in drawn}
        if name in want:
            check(labs == want[name][0], f"{name}: transports drawn {sorted(labs)}, records "
                                         f"{sorted(want[name][0])}")
            check(ranks == want[name][1], f"{name}: ranks drawn {ranks}, records {want[name][1]}")
        for lab in labs:
            check(any(t == lab or t.startswith(lab + " (") for t in entries),
                  f"{name}: legend names transport {lab}")
        for p in ranks:
            t = f"{p} rank{'' if p == 1 else 's'}"
            h = entries.get(t)
            check(h is not None, f"{name}: legend names '{t}'")
            lines = [l for k, l in drawn.items() if k[1] == p]
            if h is not None:
                check(all(h.get_marker() == l.get_marker() and
                          h.get_linestyle() == l.get_linestyle() for l in lines),
                      f"{name}: legend sample of '{t}' has its curves' marker and line style")
        by_rank = {}
        for (_, p), l in drawn.items():
            by_rank.setdefault(p, set()).add((l.get_marker(), l.get_linestyle()))
        check(all(len(v) == 1 for v in by_rank.values()) and
              len(set.union(set(), *by_rank.values())) == len(by_rank),
              f"{name}: one marker and line style per rank count, each its own: {by_rank}")
        for (lab, _), l in drawn.items():
            c = to_hex(l.get_color())
            check(colours.setdefault(lab, c) == c,
                  f"{name}: {lab} is {c} here but {colours[lab]} in another figure")
        per_fig = {}
        for (lab, _), l in drawn.items():
            per_fig.setdefault(to_hex(l.get_color()), set()).add(lab)
        check(all(len(v) == 1 for v in per_fig.values()),
              f"{name}: transports share a colour: {per_fig}")
        # provenance
        text = "\n".join(t.get_text() for t in fig.texts)
        for part in ("system:", "machine: test-machine", "NVIDIA H200", "commit 41de76b",
                     "2026-11-30"):
            check(part in text, f"{name}: figure text names '{part}'")
    check(stacked_pairs > 0, "the record set has series that lie on each other (pulse/fused)")

    # error bars where the records hold a spread, equal to it, and nowhere else
    def bars(fig):
        out = {}
        for ax in fig.axes:
            for c in ax.containers:
                if isinstance(c, ErrorbarContainer):
                    gid = c.get_label().replace("_spread ", "", 1)
                    segs = c.lines[2][0].get_segments()
                    out.setdefault(gid, {round(float(s[0][0])): (float(s[0][1]), float(s[1][1]))
                                for s in segs})  # md: the first axes, ms/step
        return out

    lat, halo, md, bw = (bars(figs[k]) for k in ("latency", "halo", "md", "bandwidth"))
    for kind, got in (("latency", lat), ("halo", halo)):
        for r in recs:
            if r.get("bench") != kind:
                continue
            key = "latency_us" if kind == "latency" else "time_us"
            x = r["bytes"] if kind == "latency" else r["atoms"]
            gid = f"series|{r['transport']}|{r['ranks']}"
            lo, hi = got.get(gid, {}).get(x, (None, None))
            check(lo is not None and abs(lo - r[key]["min"]) < 1e-6 * r[key]["min"] and
                  abs(hi - r[key]["max"]) < 1e-6 * r[key]["max"],
                  f"{kind}: bar of {gid} at {x} is min-max of the repeats "
                  f"({r[key]['min']}, {r[key]['max']}), drawn {lo, hi}")
    runs = [r["ms_per_step"] for r in recs if r.get("bench") == "md" and r["atoms"] == 45000
            and r["transport"] == "nccl" and r["ranks"] == 1 and not r["graph"]]
    check(len(runs) == 3, "md data: three runs of nccl, 1 rank, 45k")
    got = md.get("series|nccl|1", {}).get(45000, (0, 0))
    check(abs(got[0] - min(runs)) < 1e-9 and abs(got[1] - max(runs)) < 1e-9,
          f"md: bar of nccl 1 rank at 45k is min-max of its runs {runs}")
    check(set(md) == {"series|nccl|1"}, f"md: bars only where a case ran more than once: {md}")
    # the repeated runs (md-auto lines: no -t) of 180k left out: a bar at 45k only, none (not a
    # zero-length one) at 180k
    fewer = [r for r in recs if not (r.get("bench") == "md" and r["atoms"] == 180000
                                     and " -t " not in r["options"])]
    md2 = bars(bp.figures(fewer)["md"])
    check(sorted(md2.get("series|nccl|1", {})) == [45000],
          f"md: a bar only at the point with several runs: {md2}")
    check("points without bars: one run" in "".join(t.get_text() for t in figs["md"].texts),
          "md: text says which points have no spread")
    check(not bw, "bandwidth: no bars (the records hold no spread)")
    check("no spread recorded" in "".join(t.get_text() for t in figs["bandwidth"].texts),
          "bandwidth: text says there is no spread")

    # bandwidth: no floor, the link peak as a line inside the frame
    ax = figs["bandwidth"].axes[0]
    floor = [r["bandwidth_GBps"] for r in recs if r.get("bench") == "bandwidth"
             and r["transport"].endswith("+floor")]
    check(floor, "bandwidth data holds floor records")
    ys = [y for l in ax.get_lines() for y in l.get_ydata()]
    check(not any(abs(y - f) < 1e-9 * f for y in ys for f in floor),
          "bandwidth: no floor value is plotted")
    check(all("floor" not in (l.get_gid() or "") for l in ax.get_lines()),
          "bandwidth: no floor series")
    peak = statistics.median(r["link_peak_GBps"] for r in recs if r.get("bench") == "bandwidth")
    link = [l for l in ax.get_lines() if l.get_gid() == "reference|link-peak"]
    check(len(link) == 1 and abs(link[0].get_ydata()[0] - peak) < 1e-6,
          f"bandwidth: a link-peak line at {peak:.1f} GB/s")
    check(ax.get_ylim()[1] > 1.2 * peak, "bandwidth: the link peak lies inside the frame")
    check(any("link peak 391 GB/s" in t for t in legend_entries(figs["bandwidth"])),
          "bandwidth: the legend names the link peak")

    # GROMACS references where the axes match
    def ref(fig, gid):
        return [list(l.get_ydata()) for a in fig.axes for l in a.get_lines()
                if l.get_gid() == gid]
    check(ref(figs["md"], "reference|GROMACS|1")[:1] == [[0.139, 0.468]],
          "md: GROMACS 1 GPU at 42,888 and 176,301 atoms")
    check(ref(figs["md"], "reference|GROMACS|2")[:1] == [[0.135, 0.344]],
          "md: GROMACS 2 GPUs")
    eff = ref(figs["scaling"], "reference|GROMACS|2")
    check(eff and abs(eff[0][0] - 0.139 / 0.135 / 2) < 1e-9, "scaling: GROMACS efficiency")
    check(not ref(figs["latency"], "reference|GROMACS|1"), "latency: no GROMACS")

    # files, and the command line
    with tempfile.TemporaryDirectory() as tmp:
        paths = bp.save(figs, tmp)
        for p in paths:
            with open(p, "rb") as f:
                check(f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(p) > 20000,
                      f"{p} is a PNG")
        rc = bp.main(FILES + ["--out", os.path.join(tmp, "cli"), "--machine", "x"])
        check(rc == 0 and len(os.listdir(os.path.join(tmp, "cli"))) == 6,
              "bench-plot.py FILES --out DIR writes six figures")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "plot", "bench-plot.py"),
                            FILES[0], "--bogus"], capture_output=True, text=True)
        check(r.returncode == 2 and "unknown option '--bogus'" in r.stdout,
              f"bad usage exits 2 with a message (rc {r.returncode})")
    print(f"bench_plot_test: {len(figs)} figures, {stacked_pairs} stacked pairs checked, "
          f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
