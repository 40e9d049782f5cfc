#!/usr/bin/env python3
"""Check the JSON lines halox-bench wrote: every line one object of the expected kind, with the
fields every record carries and those of its kind, and results that say the case passed.

    bench_check.py FILE KIND [--count N] [--csv FILE] [--overlap-range LO HI] [--field K V]...

KIND: halo, latency, bandwidth, md, overlap or scaling. --count: exactly N records. --csv: the
CSV file of the same run has a header and N rows with the same columns. --overlap-range: overlap
records must have LO <= overlap_percent <= HI (for quiet machines: on shared cores the CPU
engine's percentage is noise over a small t_halo). --field: every record's field K is V (as
text; repeatable). Exit 0 when all is well, 1 with the reasons
otherwise.
"""
import csv
import json
import math
import sys

COMMON = ["bench", "transport", "ranks", "hardware", "commit", "build", "options", "env", "date"]
HARDWARE = ["cpu", "cores", "gpu_count", "gpus", "cuda_driver", "cuda_runtime"]
BUILD = ["type", "c_flags", "cuda_flags", "optimised"]
KIND = {
    "halo": ["grid", "atoms", "mode", "available", "real", "stride", "pulses", "max_halo_atoms",
             "max_send_bytes", "bytes_per_step", "verified", "floor", "repeats", "back_to_back",
             "time_us",
             "host_us", "bandwidth_GBps", "timing"],
    "latency": ["grid", "bytes", "atoms", "iters", "verified", "floor", "latency_us"],
    "bandwidth": ["grid", "bytes", "atoms", "iters", "verified", "time_us", "bandwidth_GBps"],
    "md": ["grid", "atoms", "device", "graph", "steps", "ms_per_step", "steps_per_second",
           "ns_per_day", "halo_ms_per_step", "halo_share", "rebuild_ms", "checked"],
    "overlap": ["grid", "atoms", "device", "steps", "repeats", "t_local_us", "t_halo_us",
                "t_both_us", "overlap_percent", "timing", "checked"],
    "scaling": ["atoms", "device", "graph", "ms_per_step", "base_ranks", "speedup",
                "efficiency"],
}


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def check_overlap(r, overlap_range):
    bad = []
    loc, halo, both, pct = r["t_local_us"], r["t_halo_us"], r["t_both_us"], r["overlap_percent"]
    if not (r["checked"] and positive(loc) and positive(halo) and positive(both)
            and positive(r["repeats"])):
        return ["overlap: not checked, no repetitions or times not positive and finite"]
    # "both" runs the same force work as "local" and the same exchanges as "halo"
    if both < 0.5 * max(loc, halo):
        bad.append(f"overlap: t_both {both} below half of max(t_local {loc}, t_halo {halo})")
    if not (isinstance(pct, (int, float)) and math.isfinite(pct)):
        return bad + [f"overlap: overlap_percent {pct!r} is not a finite number"]
    want = 100 * (halo + loc - both) / halo
    # the times are written with about 9 significant digits and the difference cancels them
    # (on the CPU it is near 0): the tolerance follows the terms, not the result
    if abs(pct - want) > 1e-6 * 100 * (halo + loc + both) / halo + 1e-9:
        bad.append(f"overlap: overlap_percent {pct} does not follow from the times ({want})")
    if overlap_range and not overlap_range[0] <= pct <= overlap_range[1]:
        bad.append(f"overlap: overlap_percent {pct} outside [{overlap_range[0]}, "
                   f"{overlap_range[1]}]")
    return bad


def check_record(r, kind, overlap_range=None):
    bad = [f"missing field '{k}'" for k in COMMON + KIND[kind] if k not in r]
    if bad:
        return bad
    if r["bench"] != kind:
        bad.append(f"bench is {r['bench']!r}, not {kind!r}")
    bad += [f"hardware lacks '{k}'" for k in HARDWARE if k not in r["hardware"]]
    bad += [f"build lacks '{k}'" for k in BUILD if k not in r["build"]]
    if not bad and not (r["build"]["type"] and isinstance(r["build"]["c_flags"], str)
                        and isinstance(r["build"]["optimised"], bool)):
        bad.append(f"build {r['build']!r}: no type, C flags or optimised flag")
    if not r["commit"] or not r["date"].endswith("Z") or not positive(r["ranks"]):
        bad.append("empty commit, date not UTC or no ranks")
    if kind != "scaling" and (not isinstance(r["grid"], list) or len(r["grid"]) != 3):
        bad.append(f"grid {r['grid']!r} is not [a, b, c]")
    if kind in ("halo", "bandwidth") and not (positive(r.get("link_peak_GBps"))
                                            and positive(r.get("link_use"))):
        bad.append(f"{kind}: no link_peak_GBps/link_use (the peak measured in the same run)")
    if kind == "halo":
        t = r["time_us"]
        if not (r["available"] and r["verified"] and positive(t["median"])
                and t["min"] <= t["median"] <= t["max"] and positive(r["bytes_per_step"])):
            bad.append("halo: not available, not verified or bad times/bytes")
        if r["mode"] not in ("host", "in-step"):
            bad.append(f"halo: mode {r['mode']!r} is neither host nor in-step")
    elif kind == "latency":
        t = r["latency_us"]
        if not (r["verified"] and positive(t["median"]) and t["min"] <= t["median"] <= t["max"]):
            bad.append("latency: not verified or bad times")
    elif kind == "bandwidth":
        if not (r["verified"] and positive(r["time_us"]) and positive(r["bandwidth_GBps"])):
            bad.append("bandwidth: not verified or bad time")
    elif kind == "md":
        if not (r["checked"] and positive(r["ms_per_step"]) and positive(r["steps_per_second"])
                and positive(r["ns_per_day"])):
            bad.append("md: not checked or bad speed")
        ms = r["ms_per_step"]
        if abs(r["steps_per_second"] * ms / 1e3 - 1) > 1e-6:
            bad.append("md: steps/s is not 1000 / ms/step")
        if abs(r["ns_per_day"] - 86400e3 / ms * 2e-6) > 1e-6 * r["ns_per_day"]:
            bad.append("md: ns/day is not 2 fs/step at this ms/step")
        if r["halo_share"] is not None and not 0 <= r["halo_share"] <= 1:
            bad.append("md: halo share outside [0, 1]")
        parts = ["drain", "to_host", "migration", "plan", "bind", "lists", "graph"]
        if sorted(r["rebuild_ms"]) != sorted(parts) or any(
                not (isinstance(r["rebuild_ms"][k], (int, float)) and r["rebuild_ms"][k] >= 0)
                for k in parts):
            bad.append(f"md: rebuild_ms {r['rebuild_ms']!r}: want {parts}, each >= 0")
    elif kind == "overlap":
        bad += check_overlap(r, overlap_range)
    elif kind == "scaling":
        s = r["base_ms_per_step"] / r["ms_per_step"]
        e = s * r["base_ranks"] / r["ranks"]
        if abs(r["speedup"] - s) > 1e-6 * s or abs(r["efficiency"] - e) > 1e-6 * e:
            bad.append("scaling: speedup or efficiency does not follow from the times")
    return bad


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[1] not in KIND:
        print(__doc__)
        return 2
    path, kind = args[0], args[1]
    count = int(args[args.index("--count") + 1]) if "--count" in args else None
    csv_path = args[args.index("--csv") + 1] if "--csv" in args else None
    overlap_range = None
    if "--overlap-range" in args:
        k = args.index("--overlap-range")
        overlap_range = (float(args[k + 1]), float(args[k + 2]))
    fields = [(args[k + 1], args[k + 2]) for k, a in enumerate(args) if a == "--field"]
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    problems = []
    records = []
    for i, line in enumerate(lines, 1):
        try:
            r = json.loads(line)
        except ValueError as e:
            problems.append(f"line {i}: not JSON: {e}")
            continue
        records.append(r)
        problems += [f"line {i}: {p}" for p in check_record(r, kind, overlap_range)]
        problems += [f"line {i}: {k} is {r.get(k)!r}, expected {v!r}" for k, v in fields
                     if str(r.get(k)) != v and json.dumps(r.get(k)) != v]
    if not records:
        problems.append("no records")
    if count is not None and len(records) != count:
        problems.append(f"{len(records)} records, expected {count}")
    if csv_path:
        with open(csv_path, newline="") as f:
            rows = list(csv.reader(f))
        if len(rows) != len(records) + 1 or any(len(row) != len(rows[0]) for row in rows):
            problems.append(f"CSV: {len(rows)} lines for {len(records)} records, or ragged")
        elif "time_us.median" not in rows[0] and kind == "halo":
            problems.append("CSV: no time_us.median column")
        elif "build.type" not in rows[0]:
            problems.append("CSV: no build.type column")
    for p in problems:
        print(f"bench_check: {path}: {p}")
    print(f"bench_check: {path}: {len(records)} {kind} record(s), "
          f"{'FAIL' if problems else 'PASS'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
