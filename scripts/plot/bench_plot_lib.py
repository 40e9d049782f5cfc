"""Helpers of scripts/plot/bench-plot.py: records, the style table, spreads, provenance, layering.

Nothing here draws a figure; bench-plot.py has one function per figure. matplotlib is imported
only by pyplot(), so that this module (and bench-plot.py) can be imported without it.
"""
import json
import statistics
import zlib
from collections import defaultdict

# --- the style table: the same in every figure ---------------------------------------------
# One colour per transport label (a CUDA-graph run is its own label, a lighter shade of its
# transport's colour, drawn with hollow markers); the order is the drawing order.
TRANSPORT_COLOURS = {
    "mpi-staged": "#7f7f7f",
    "nccl": "#1f77b4",
    "nccl --graph": "#6baed6",
    "nvshmem-stream": "#2ca02c",
    "nvshmem-pulse": "#ff7f0e",
    "nvshmem-fused": "#d62728",
    "nvshmem-fused --graph": "#f08080",
    "hybrid": "#9467bd",
    "nvshmem-pulse+put": "#bcbd22",
    "nvshmem-fused+put": "#8c564b",
    "nvshmem-fused+tma": "#e377c2",
    "nvshmem-fused+floor": "#000000",
    "mpi-cuda": "#637939",
    "mpi": "#393b79",
    "threads": "#17becf",
}
# labels not in the table: a colour chosen by the name's CRC, so still one colour in every figure
SPARE_COLOURS = ["#843c39", "#7b4173", "#3182bd", "#31a354", "#756bb1", "#e6550d", "#969696",
                 "#8c6d31", "#ad494a", "#5254a3"]
# marker and line style per rank count (legend samples are long enough to show the dashes)
RANK_STYLES = {1: ("o", "-"), 2: ("s", (0, (6, 2.5))), 4: ("^", (0, (5, 1.5, 1.5, 1.5))),
               8: ("D", (0, (1.5, 1.5)))}
RANK_FALLBACK = ("v", (0, (8, 2, 1, 2, 1, 2)))
REFERENCE_COLOUR = "#000000"

# GROMACS on the same machine (../shared/design/gpu-machines.md, "The peer to beat", one run
# each): SPC/E water, reaction-field, 1.0 nm cut-offs, 2 fs steps, GPU update, DD 2x1x1 on the
# two H200s; the 2-GPU figure is its NVSHMEM (fused) path, its fastest. scripts/plot/set-tables.py
# prints the same numbers in the README's tables.
GROMACS = {
    "label": "GROMACS 2027.0-dev, SPC/E water",
    "date": "2026-11-29",
    "gpu": "H200",
    "ms_per_step": {1: {42888: 0.139, 176301: 0.468}, 2: {42888: 0.135, 176301: 0.344}},
    "how": {1: "1 GPU", 2: "2 GPUs, NVSHMEM"},
}


def colour(label):
    if label in TRANSPORT_COLOURS:
        return TRANSPORT_COLOURS[label]
    return SPARE_COLOURS[zlib.crc32(label.encode()) % len(SPARE_COLOURS)]


def rank_style(ranks):
    return RANK_STYLES.get(ranks, RANK_FALLBACK)


def label_order(label):
    names = list(TRANSPORT_COLOURS)
    return (names.index(label) if label in names else len(names), label)


def ranks_text(p):
    return f"{p} rank{'' if p == 1 else 's'}"


# --- records -------------------------------------------------------------------------------
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
        return "halo"  # lines of the former bench/halo_gpu_bench
    return "md" if b == "halox-md" else b


def by_kind(recs):
    out = defaultdict(list)
    for r in recs:
        out[kind(r)].append(r)
    return out


def is_floor(r):
    return bool(r.get("floor")) or str(r.get("transport", "")).endswith("+floor")


def label(r):
    return r.get("transport", "?") + (" --graph" if r.get("graph") else "")


def collect(recs, xkey, yfun, spreadkey=None):
    """{(label, ranks): {x: [(y, lo, hi), ...]}}, one tuple per record; lo/hi: the record's own
    min/max of its repeats (r[spreadkey]), None where it has none."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in recs:
        y = yfun(r)
        if r.get(xkey) is None or y is None or r.get("available") is False:
            continue
        sp = r.get(spreadkey) if spreadkey else None
        lo = sp.get("min") if isinstance(sp, dict) else None
        hi = sp.get("max") if isinstance(sp, dict) else None
        acc[(label(r), r.get("ranks") or 1)][r[xkey]].append((y, lo, hi))
    return acc


def summarise(points):
    """[(x, y, lo, hi, how, n)] sorted by x. Several records of one point (n runs): their median
    and min-max (how = "runs"); one record: its value, and its repeats' min-max where it has
    them (how = "repeats"), else no spread (lo = hi = None, how = None)."""
    out = []
    for x in sorted(points):
        v = points[x]
        if len(v) > 1:
            ys = [y for y, _, _ in v]
            out.append((x, statistics.median(ys), min(ys), max(ys), "runs", len(v)))
        else:
            y, lo, hi = v[0]
            how = "repeats" if lo is not None and hi is not None else None
            out.append((x, y, lo if how else None, hi if how else None, how, 1))
    return out


def ordered(series):
    """Keys (label, ranks) in drawing order: the style table's transport order, then ranks."""
    return sorted(series, key=lambda k: (label_order(k[0]), k[1]))


# --- provenance ----------------------------------------------------------------------------
def _version(v):
    return f"{v // 1000}.{(v % 1000) // 10}" if isinstance(v, int) and v > 0 else None


def machine_text(recs, machine=None):
    seen = []
    for r in recs:
        h = r.get("hardware") or {}
        if not h:
            continue
        gpus = h.get("gpus") or ""
        names = sorted({g.strip() for g in gpus.split(",") if g.strip()})
        part = (f"{h.get('gpu_count', 0)} x {', '.join(names)}" if h.get("gpu_count") else
                "no GPU")
        part += f", {h.get('cpu', '?')} ({h.get('cores', '?')} cores)"
        cuda = _version(h.get("cuda_runtime"))
        if cuda:
            part += f", CUDA {cuda} (driver {_version(h.get('cuda_driver')) or '?'})"
        if part not in seen:
            seen.append(part)
    text = "; ".join(seen) if seen else "hardware not recorded"
    return f"{machine}: {text}" if machine else text


def provenance(recs, system, machine=None):
    """The lines every figure carries: system, machine, commit, date."""
    commits = sorted({r["commit"] for r in recs if r.get("commit") not in (None, "", "unknown")})
    days = sorted({r["date"][:10] for r in recs if r.get("date")})
    commit = ("commit " + ", ".join(commits)) if commits else "commit not recorded"
    builds = sorted({(r.get("build") or {}).get("type") for r in recs} - {None, ""})
    if builds:  # records of tools that state their build (CMAKE_BUILD_TYPE)
        commit += ", build " + "/".join(builds)
    date = ("measured " + (days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}")
            if days else "date not recorded")
    return [f"system: {system}", f"machine: {machine_text(recs, machine)}", f"{commit}, {date}"]


def real_stride(recs):
    reals = sorted({r.get("real") for r in recs if r.get("real")})
    strides = sorted({r.get("stride") for r in recs if r.get("stride")})
    out = "/".join(reals) or "float"
    return out + (f", stride {'/'.join(map(str, strides))}" if strides else "")


def spread_text(all_points, repeats_what):
    """One line saying what the bars are, from the summaries drawn ([[(x, y, lo, hi, how, n)]])."""
    pts = [p for ps in all_points for p in ps]
    if not pts:
        return ""
    parts = []
    runs = sorted({p[5] for p in pts if p[4] == "runs"})
    if runs:
        n = f"{runs[0]}" if len(runs) == 1 else f"{runs[0]}-{runs[-1]}"
        parts.append(f"bars where a case ran more than once ({n} runs): min-max over the runs "
                     "(point: their median)")
    if any(p[4] == "repeats" for p in pts):
        parts.append(f"bars: min-max of the {repeats_what} of one run (point: the median)")
    if any(p[4] is None for p in pts):
        parts.append("points without bars: one run, no spread recorded" if parts else
                     "one run per point: no spread recorded, so no bars")
    return "; ".join(parts)


# --- layering: series that lie on top of each other stay visible ---------------------------
LAYER_WIDTHS = (4.4, 2.4, 1.0, 0.6)  # linewidth (points) of levels 0, 1, 2, 3+ of a stack
LAYER_MARKERS = (9.5, 6.0, 3.2, 2.2)
NORMAL = (1.6, 5.0)  # a series that lies on no other
NEAR_PX = 5.0  # closer than this (pixels, vertically) at a third of the shared points


def close(a, b, near=NEAR_PX):
    """Do two series ({x: (px, py)} in display pixels) lie on each other: within `near` pixels
    vertically at a third or more of the x values they share? (then the later one would hide
    the earlier one's markers there)"""
    shared = [x for x in a if x in b]
    if not shared:
        return False
    hits = sum(abs(a[x][1] - b[x][1]) <= near for x in shared)
    return 3 * hits >= len(shared)


def levels(series):
    """[(level, stacked)] for series = [{x: (px, py)}] in drawing order: a series that lies on
    earlier ones goes one level above the highest of them."""
    level, stacked = [], [False] * len(series)
    for i, s in enumerate(series):
        below = [j for j in range(i) if close(s, series[j])]
        for j in below:
            stacked[j] = True
        stacked[i] = stacked[i] or bool(below)
        level.append(1 + max(level[j] for j in below) if below else 0)
    return list(zip(level, stacked))


def relayer(ax):
    """Once the axes' limits and size are final: every data series (gid "series|...") that lies
    on an earlier one is drawn narrower, with a smaller marker and above it, so that both show
    (a thin line inside a wide one, a small marker on a large one); the others get the normal
    width. Their error bars follow their zorder."""
    lines = [l for l in ax.get_lines() if (l.get_gid() or "").startswith("series|")]
    pts = []
    for l in lines:
        xy = [(x, y) for x, y in zip(l.get_xdata(), l.get_ydata())
              if y is not None and (y > 0 or ax.get_yscale() != "log")]
        px = ax.transData.transform(xy) if xy else []
        pts.append({float(x): tuple(p) for (x, _), p in zip(xy, px)})
    bars = {c.get_label()[len("_spread "):]: c for c in ax.containers
            if str(c.get_label()).startswith("_spread ")}  # draw()'s error bars, by series
    for l, (lv, stacked) in zip(lines, levels(pts)):
        k = min(lv, len(LAYER_WIDTHS) - 1)
        lw, ms = (LAYER_WIDTHS[k], LAYER_MARKERS[k]) if stacked else NORMAL
        z = 2.0 + lv
        l.set_linewidth(lw)
        l.set_markersize(ms)
        l.set_zorder(z)
        if l.get_gid() in bars:
            c = bars[l.get_gid()]
            for part in list(c.lines[1]) + list(c.lines[2]):
                part.set_zorder(z - 0.01)


# --- matplotlib ----------------------------------------------------------------------------
def pyplot():
    """matplotlib.pyplot on the Agg backend (files only), or ImportError."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # dashes in points whatever the line's width: a wide line under a narrow one keeps the
    # rhythm of its rank count's style instead of turning into blocks
    matplotlib.rcParams["lines.scale_dashes"] = False
    return plt


def atoms_text(n):
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if n >= div:
            v = n / div
            return f"{v:.0f}{suffix}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{suffix}"
    return str(int(n))


def bytes_text(b):
    for div, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= div:
            return f"{b / div:g} {suffix}"
    return f"{b:g} B"
