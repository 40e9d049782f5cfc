#!/usr/bin/env python3
"""PNG plots of halox-bench JSON lines (and of the device suite's bench.jsonl).

    python3 scripts/plot/bench-plot.py FILE.jsonl [MORE.jsonl ...] [--out DIR] [--machine NAME]

Writes into DIR (default: the first file's folder), one plot per kind that has data:
  latency.png    latency vs message size, per transport                 ("bench": "latency")
  bandwidth.png  bandwidth vs message size, per transport, with the measured link peak; the
                 signal-only floor is left out (it moves no bytes)     ("bench": "bandwidth")
  halo.png       halo exchange time vs atoms, one panel per rank count  ("bench": "halo", and
                 the lines of the former bench/halo_gpu_bench)
  md.png         ms/step vs atoms (log-log) and ms/step per atom (linear, where the transports
                 differ visibly), per transport and rank count, with GROMACS measured on the
                 same machine where the records come from it          ("bench": "md"/"halox-md")
  speedup.png    speedup over mpi-staged and over nccl, halo and md, vs atoms (4 panels; runs
                 with 2+ ranks)
  scaling.png    strong-scaling efficiency vs atoms over the fewest ranks measured (md records)
One colour per transport, the same in every figure; marker and line style per rank count; series
that lie on each other are drawn wide under narrow; legends beside the axes; bars show the spread
the records hold (min-max of a run's repeats, or of several runs of one case) and the figure
says when there is none; every figure names system, machine (--machine NAME adds a name to the
hardware the records give), commit and date. Exits 0 with a message when matplotlib is missing
or no file has usable lines; 2 on bad usage.
"""
import os
import statistics
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_plot_lib as L  # noqa: E402  (beside this file)


# --- drawing shared by the figures ---------------------------------------------------------
def draw(ax, data):
    """Draws data = {(label, ranks): [(x, y, lo, hi, how, n)]}: colour per label, marker and
    line style per rank count, hollow markers for CUDA graphs, error bars where lo/hi exist, in
    the style table's order (finish() then layers the series that lie on each other)."""
    keys = L.ordered(data)
    for k in keys:
        lab, ranks = k
        pts = data[k]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        marker, ls = L.rank_style(ranks)
        c = L.colour(lab)
        lw, ms = L.NORMAL
        kw = dict(color=c, marker=marker, linestyle=ls, linewidth=lw, markersize=ms, zorder=2,
                  markeredgecolor=c, markerfacecolor="white" if "--graph" in lab else c,
                  markeredgewidth=1.3)
        gid = f"series|{lab}|{ranks}"
        ax.plot(xs, ys, **kw)[0].set_gid(gid)
        spread = [p for p in pts if p[2] is not None]  # bars only where there is a spread
        if spread:
            cont = ax.errorbar([p[0] for p in spread], [p[1] for p in spread],
                               yerr=[[p[1] - p[2] for p in spread], [p[3] - p[1] for p in spread]],
                               fmt="none", ecolor=c, elinewidth=0.9, capsize=2.5, alpha=0.75,
                               zorder=2)
            cont.set_label(f"_spread {gid}")
    return keys


def reference_line(ax, y, label, gid, style=":"):
    return ax.axhline(y, color=L.REFERENCE_COLOUR, linestyle=style, linewidth=1.3, zorder=1.5,
                      label=label, gid=gid)


def legend(ax, keys, refs=(), notes=None):
    """One legend beside ax (off the data): colour = transport, marker + line = ranks, the
    references drawn. notes: {label: text} added to a transport's entry."""
    from matplotlib.lines import Line2D
    notes = notes or {}
    heads, handles = [], []

    def head(text):
        heads.append(text)
        handles.append(Line2D([], [], linestyle="none", label=text))

    labels = sorted({k[0] for k in keys}, key=L.label_order)
    head("colour: transport")
    for lab in labels:
        handles.append(Line2D([], [], color=L.colour(lab), linewidth=3,
                              label=lab + (f" ({notes[lab]})" if lab in notes else "")))
    head("marker + line: ranks")
    for p in sorted({k[1] for k in keys}):
        m, ls = L.rank_style(p)
        handles.append(Line2D([], [], color="black", marker=m, linestyle=ls, linewidth=1.4,
                              markersize=6, label=L.ranks_text(p)))
    if any("--graph" in lab for lab in labels):
        handles.append(Line2D([], [], color="black", marker="o", markerfacecolor="white",
                              linestyle="none", markersize=6, label="hollow: CUDA graphs"))
    if refs:
        head("reference (measured)")
        handles.extend(refs)
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                    borderaxespad=0.0, fontsize=8, handlelength=4.2, frameon=False)
    for t in leg.get_texts():
        if t.get_text() in heads:
            t.set_fontweight("bold")
    return leg


def finish(fig, ax, keys, lines, refs=(), notes=None):
    """Lays the axes out, then puts the legend beside ax and the provenance and notes under the
    axes (both outside the laid-out area: the saved image grows to hold them, the axes keep
    their size)."""
    fig.tight_layout()
    for a in fig.axes:
        plain_log_labels(a)
        L.relayer(a)
    legend(ax, keys, refs, notes)
    text = "\n".join(textwrap.fill(s, 150, subsequent_indent="    ") for s in lines if s)
    fig.text(0.01, -0.01, text, ha="left", va="top", fontsize=7.5, gid="provenance")


def plain_log_labels(ax):
    """Tick labels of a log y axis as plain numbers (0.3, 100), not powers of ten; minor ticks
    labelled too when the axis spans about a decade or less (else it would show one label)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter
    if ax.get_yscale() != "log":
        return
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    lo, hi = ax.get_ylim()
    ax.yaxis.set_minor_formatter(plain if hi / lo < 15 else NullFormatter())


def atoms_axis(ax, xs):
    from matplotlib.ticker import NullFormatter, NullLocator
    ax.set_xscale("log")
    xs = sorted(set(xs))
    ax.set_xticks(xs)
    ax.set_xticklabels([L.atoms_text(x) for x in xs])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def bytes_axis(ax, xs):
    from matplotlib.ticker import NullFormatter, NullLocator
    ax.set_xscale("log")
    lo, hi = min(xs), max(xs)
    ticks = [16 ** k for k in range(0, 12) if lo <= 16 ** k <= hi] or sorted(set(xs))
    ax.set_xticks(ticks)
    ax.set_xticklabels([L.bytes_text(t) for t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def style_axes(ax, title, xlabel, ylabel):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)


def summaries(acc):
    return {k: L.summarise(v) for k, v in acc.items()}


def counts(recs, key, what):
    v = sorted({r.get(key) for r in recs if r.get(key)})
    return (f"{v[0]} {what}" if len(v) == 1 else f"{v[0]}-{v[-1]} {what}") if v else what


def gromacs(ax, recs, xs, efficiency=False, per_atom=False):
    """GROMACS measured on the same machine (L.GROMACS) where the records come from its GPU
    and their atom counts reach its own: ms/step per GPU count, or its 1 -> 2 GPU efficiency."""
    hw = [r.get("hardware") or {} for r in recs]
    if not xs or not any(L.GROMACS["gpu"] in (h.get("gpus") or "") for h in hw):
        return []
    gpus = max(h.get("gpu_count") or 0 for h in hw)
    t = L.GROMACS["ms_per_step"]
    if efficiency:
        series = {2: {n: t[1][n] / t[2][n] / 2 for n in t[1]}} if gpus >= 2 else {}
    else:
        series = {p: v for p, v in t.items() if p <= gpus}
    arts = []
    for p, pts in series.items():
        ns = sorted(n for n in pts if min(xs) / 2 <= n <= max(xs) * 2)
        if not ns:
            continue
        what = ("1 -> " + L.GROMACS["how"][2]) if efficiency else L.GROMACS["how"][p]
        m, ls = L.rank_style(p)
        ys = [pts[n] * (1e6 / n if per_atom else 1) for n in ns]
        arts.append(ax.plot(ns, ys, color=L.REFERENCE_COLOUR, marker="*",
                            markersize=12, linestyle=ls, linewidth=1.0, zorder=20,
                            gid=f"reference|GROMACS|{p}",
                            label=f"GROMACS {what} (" + " and ".join(f"{n:,}" for n in ns) +
                            f" atoms; {L.GROMACS['date']})")[0])
    return arts


GROMACS_NOTE = ("GROMACS: " + L.GROMACS["label"] + ", reaction-field, 1.0 nm cut-offs, 2 fs, "
                "GPU update, measured on this machine (../shared/design/gpu-machines.md), one run "
                "each")
FLOOR_NOTE = "signals only, no data"


def figure_of(plt, data, log_bytes=False):
    """A figure of the usual size with the series drawn: (fig, ax, keys); log_bytes: a log y
    axis over message sizes in bytes on x."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    keys = draw(ax, data)
    if log_bytes:
        ax.set_yscale("log")
        bytes_axis(ax, [p[0] for v in data.values() for p in v])
    return fig, ax, keys


# --- one function per figure: each returns a matplotlib Figure, or None without data --------
def fig_latency(by, machine=None):
    plt = L.pyplot()
    rs = [r for r in by.get("latency", []) if (r.get("latency_us") or {}).get("median")]
    data = summaries(L.collect(rs, "bytes", lambda r: r["latency_us"]["median"], "latency_us"))
    if not data:
        return None
    fig, ax, keys = figure_of(plt, data, log_bytes=True)
    style_axes(ax, "Latency: half round trip (coordinates out, forces back), one pulse",
               "message bytes (one way)", "microseconds")
    finish(fig, ax, keys,
           L.provenance(rs, f"one pulse between {counts(rs, 'ranks', 'ranks')} (grid 2x1x1), "
                            f"a synthetic plan of N atoms ({L.real_stride(rs)})", machine) +
           [L.spread_text(data.values(), counts(rs, "iters", "iterations")) +
            ". Slowest rank per iteration."],
           notes={k[0]: FLOOR_NOTE for k in keys if k[0].endswith("+floor")})
    return fig


def fig_bandwidth(by, machine=None):
    plt = L.pyplot()
    every = by.get("bandwidth", [])
    rs = [r for r in every if not L.is_floor(r)]
    left_out = sorted({r.get("transport") for r in every if L.is_floor(r)})
    data = summaries(L.collect(rs, "bytes", lambda r: r.get("bandwidth_GBps")))
    if not data:
        return None
    fig, ax, keys = figure_of(plt, data, log_bytes=True)
    style_axes(ax, "Bandwidth: one pulse, exchanges back to back",
               "message bytes (one way)", "GB/s  (2 x message bytes / time per exchange)")
    refs = []
    peaks = [r["link_peak_GBps"] for r in every if r.get("link_peak_GBps")]
    two_gpus = any(((r.get("hardware") or {}).get("gpu_count") or 0) >= 2 for r in every)
    how = "256 MiB GPU 0 -> GPU 1 peer copy" if two_gpus else "256 MiB host memcpy"
    if peaks:
        peak = statistics.median(peaks)
        refs.append(reference_line(ax, peak, f"link peak {peak:.0f} GB/s ({how})",
                                   "reference|link-peak"))
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, max(hi, peak * 2.0))  # the peak line inside the frame, not on it
        ax.annotate(f"link peak {peak:.0f} GB/s", (0.01, peak), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", fontsize=8)
    notes = [L.spread_text(data.values(), "") + f" (each point: {counts(rs, 'iters', 'exchanges')}"
             " timed together, their mean)."]
    if left_out:
        notes.append(f"Left out: {', '.join(left_out)} (the same signals without data: it moves "
                     "no bytes, so bytes / time is no bandwidth; its time is in latency.png).")
    if peaks:
        notes.append(f"Link peak: one direction, measured by the tool at the start of the run "
                     f"({how}, median of 5).")
    finish(fig, ax, keys,
           L.provenance(every, f"one pulse between {counts(rs, 'ranks', 'ranks')} (grid 2x1x1), "
                               f"a synthetic plan of N atoms ({L.real_stride(rs)})", machine) +
           notes, refs)
    return fig


def fig_halo(by, machine=None):
    plt = L.pyplot()
    rs = [r for r in by.get("halo", []) if (r.get("time_us") or {}).get("median")]
    data = summaries(L.collect(rs, "atoms", lambda r: r["time_us"]["median"], "time_us"))
    if not data:
        return None
    ranks = sorted({k[1] for k in data})
    fig, axes = plt.subplots(1, len(ranks), figsize=(4.6 * len(ranks) + 1.5, 4.8), sharey=True,
                             squeeze=False)
    xs = [p[0] for v in data.values() for p in v]
    for ax, p in zip(axes[0], ranks):
        draw(ax, {k: v for k, v in data.items() if k[1] == p})
        ax.set_yscale("log")
        atoms_axis(ax, xs)
        style_axes(ax, f"Halo exchange alone, {L.ranks_text(p)}"
                   + (" (copies to itself)" if p == 1 else ""), "atoms",
                   "microseconds per step (coordinates + forces)")
    keys = list(data)
    grids = sorted({"x".join(map(str, r["grid"])) for r in rs if r.get("grid")})
    finish(fig, axes[0][-1], keys,
           L.provenance(rs, "water-density-like random atoms (reduced density 0.8, cut-off 5.0 "
                            f"+ buffer 0.5), {L.real_stride(rs)}, grids "
                            f"{', '.join(grids) or '?'}", machine) +
           [L.spread_text(data.values(), counts(rs, "repeats", "repeats")) +
            ". Slowest rank per repeat."],
           notes={k[0]: FLOOR_NOTE for k in keys if k[0].endswith("+floor")})
    return fig


def fig_md(by, machine=None):
    """Two panels of the same runs: ms/step (log-log, the absolute cost, GROMACS beside it) and
    ms/step per atom (linear: the transports' 5-20 % differences, invisible on three decades of
    ms/step, show there)."""
    plt = L.pyplot()
    rs = [r for r in by.get("md", []) if r.get("ms_per_step")]
    data = summaries(L.collect(rs, "atoms", lambda r: r["ms_per_step"]))
    if not data:
        return None
    per_atom = {k: [(x, y * 1e6 / x, lo and lo * 1e6 / x, hi and hi * 1e6 / x, how, n)
                    for x, y, lo, hi, how, n in v] for k, v in data.items()}
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 5.0))
    xs = [p[0] for v in data.values() for p in v]
    keys = draw(axes[0], data)
    refs = gromacs(axes[0], rs, xs)
    axes[0].set_yscale("log")
    draw(axes[1], per_atom)
    gromacs(axes[1], rs, xs, per_atom=True)
    axes[1].set_ylim(bottom=0)
    for ax in axes:
        atoms_axis(ax, xs)
    style_axes(axes[0], "MD step", "atoms", "ms/step")
    style_axes(axes[1], "MD step per atom", "atoms", "ns per atom and step (ms/step / atoms)")
    presets = ", ".join(sorted({r.get("preset") for r in rs if r.get("preset")})) or "?"
    devices = ", ".join(sorted({r.get("device") for r in rs if r.get("device")})) or "?"
    finish(fig, axes[1], keys,
           L.provenance(rs, f"preset {presets} (LJ, reduced density 0.8, cut-off 5.0 + 0.5), "
                            f"{L.real_stride(rs)}, {counts(rs, 'steps', 'steps')} per run, "
                            f"device {devices}", machine) +
           [L.spread_text(data.values(), "steps") + ".", GROMACS_NOTE if refs else ""], refs)
    return fig


def speedup_series(recs, over, yfun):
    """{(label, ranks): [(atoms, speedup, None, None, None, n)]}: median time of `over` / median
    time of each other label, same atoms and ranks."""
    acc = L.collect(recs, "atoms", yfun)
    base = {(p, x): statistics.median(y for y, _, _ in v)
            for (lab, p), pts in acc.items() if lab == over for x, v in pts.items()}
    out = {}
    for (lab, p), pts in acc.items():
        s = [(x, base[(p, x)] / statistics.median(y for y, _, _ in v), None, None, None, len(v))
             for x, v in sorted(pts.items()) if (p, x) in base and lab != over]
        if s:
            out[(lab, p)] = s
    return out


def fig_speedup(by, machine=None):
    """2 x 2 panels (halo, md) x (over mpi-staged, over nccl), runs with 2+ ranks only (with
    one rank every transport copies on one GPU: nothing to compare)."""
    plt = L.pyplot()
    halo_t = lambda r: None if L.is_floor(r) else (r.get("time_us") or {}).get("median")
    md_t = lambda r: r.get("ms_per_step")
    multi = {w: [r for r in by.get(w, []) if (r.get("ranks") or 1) > 1] for w in ("halo", "md")}
    panels = {(w, o): speedup_series(multi[w], o, halo_t if w == "halo" else md_t)
              for w in ("halo", "md") for o in ("mpi-staged", "nccl")}
    if not any(panels.values()):
        return None
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
    xs = [p[0] for d in panels.values() for v in d.values() for p in v]
    keys, refs = set(), []
    for i, what in enumerate(("halo", "md")):
        for j, over in enumerate(("mpi-staged", "nccl")):
            ax = axes[i][j]
            keys |= set(draw(ax, panels[(what, over)]))
            line = reference_line(ax, 1.0, "1: as fast as the transport compared with",
                                  "reference|equal", "-")
            refs = refs or [line]
            atoms_axis(ax, xs)
            style_axes(ax, f"{'halo exchange' if what == 'halo' else 'MD step'}: speedup over "
                       f"{over}", "atoms", f"speedup (time of {over} / time)")
    rs = multi["halo"] + multi["md"]
    finish(fig, axes[0][1], keys,
           L.provenance(rs, "halo: water-density-like random atoms; md: preset water-density; "
                            "same atoms and ranks compared", machine) +
           ["Speedup = median time of the transport compared with / median time, 2+ ranks (one "
            "rank only copies on one GPU); no bars: a ratio of medians (halo.png shows the halo's "
            "spread). The signal-only floor is left out."], refs)
    return fig


def scaling_series(recs):
    """Strong-scaling efficiency vs atoms, per label and rank count above the fewest:
    t(fewest ranks) / t(P ranks) * fewest / P, medians; the fewest-rank time of the same label,
    else of nccl (runs with one rank exchange nothing between GPUs)."""
    acc = L.collect(recs, "atoms", lambda r: r.get("ms_per_step"))
    by = {}
    for (lab, p), pts in acc.items():
        for n, v in pts.items():
            by.setdefault((lab, n), {})[p] = statistics.median(y for y, _, _ in v)
    out = {}
    for (lab, n), t in by.items():
        ref = t
        if min(t) > 1 or len(t) < 2:
            ref = by.get(("nccl", n), {})
            if not ref:
                continue
        p0 = min(ref)
        for p in t:
            if p > p0:
                out.setdefault((lab, p), []).append((n, ref[p0] / t[p] * p0 / p, None, None,
                                                     None, 1))
    return {k: sorted(v) for k, v in out.items()}


def fig_scaling(by, machine=None):
    plt = L.pyplot()
    rs = [r for r in by.get("md", []) if r.get("ms_per_step")]
    data = scaling_series(rs)
    if not data:
        return None
    fig, ax, keys = figure_of(plt, data)
    xs = [p[0] for v in data.values() for p in v]
    refs = [reference_line(ax, 1.0, "1: perfect scaling", "reference|ideal", "-")]
    refs += gromacs(ax, rs, xs, efficiency=True)
    atoms_axis(ax, xs)
    ax.set_ylim(0, 1.15)
    ps = sorted({k[1] for k in data})
    style_axes(ax, f"Strong scaling: efficiency on {', '.join(map(str, ps))} ranks over the "
               "fewest measured", "atoms",
               "efficiency  (t(fewest) / t(P) x fewest / P)")
    finish(fig, ax, keys, L.provenance(rs, "preset water-density, md records", machine) +
           ["Medians of the runs of each case; the fewest-rank time of the same transport and "
            "graph mode, else nccl's; no bars: a ratio of medians.",
            GROMACS_NOTE if len(refs) > 1 else ""], refs)
    return fig


FIGURES = (("latency", fig_latency), ("bandwidth", fig_bandwidth), ("halo", fig_halo),
           ("md", fig_md), ("speedup", fig_speedup), ("scaling", fig_scaling))


def figures(recs, machine=None):
    """{name: Figure} for every figure the records have data for."""
    by = L.by_kind(recs)
    out = {}
    for name, make in FIGURES:
        fig = make(by, machine)
        if fig is not None:
            out[name] = fig
    return out


def save(figs, out):
    plt = L.pyplot()
    paths = []
    for name, fig in figs.items():
        path = os.path.join(out, f"{name}.png")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        print(f"bench-plot: wrote {path}")
        paths.append(path)
    return paths


def main(argv):
    args, opts = [], {}
    it = iter(argv)
    for a in it:
        if a in ("--out", "--machine"):
            opts[a] = next(it, None)
            if opts[a] is None:
                print(f"bench-plot: {a} needs a value\n" + __doc__)
                return 2
        elif a.startswith("-"):
            print(f"bench-plot: unknown option '{a}'\n" + __doc__)
            return 2
        else:
            args.append(a)
    if not args:
        print(__doc__)
        return 2
    try:
        L.pyplot()
    except ImportError:
        print("bench-plot: matplotlib is not installed (pip install matplotlib): no plots")
        return 0
    out = opts.get("--out") or os.path.dirname(os.path.abspath(args[0]))
    os.makedirs(out, exist_ok=True)
    if not save(figures(L.load(args), opts.get("--machine")), out):
        print("bench-plot: no latency, bandwidth, halo or md records: no plots")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
