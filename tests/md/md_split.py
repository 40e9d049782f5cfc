#!/usr/bin/env python3
"""The summary's time split adds up to the step time it reports.

    md_split.py HALOX_MD [ARGS...]

Runs halox-md with ARGS and --json, then checks that
  - JSON: sum of the timers' ms_per_step - concurrent_ms_per_step == ms_per_step (0.5 %);
  - the printed table's "total" row equals the printed ms/step (to its 4 decimals);
  - under CUDA graphs (the GPU engine's default) the step's parts are a sample: the summary
    says how many steps were timed and they are those outside the graphs, and the split adds up
    all the same;
  - the JSON names the build (type, flags, optimised);
  - the rebuilds' parts (rebuild_ms_per_rebuild) are all there and, drain and graph aside, add up to the
    rebuild timers (migration + plan, neighbour search), and the summary prints them;
  - the rebuilds' budget (rebuild_budget_per_rebuild: collectives, host waits for the GPU) fits in
    their time, several ranks agree a few times per rebuild (the CPU engine: 3 + one per pulse
    with a peer, no more), the CPU engine never waits for a GPU.
Exit 77 (skipped) when the tool says no GPU is visible.
"""
import json
import re
import subprocess
import sys
import tempfile


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/run.json"
        p = subprocess.run([tool, *args, "--json", path, "--no-progress"], capture_output=True,
                           text=True, timeout=240)
        out = p.stdout + p.stderr
        if p.returncode != 0:
            if re.search(r"no (CUDA )?GPU|no CUDA device|not available", out):
                print("skipped: no GPU\n" + out)
                return 77
            print(out)
            print(f"halox-md exited {p.returncode}")
            return 1
        doc = json.load(open(path))
        s = doc["summary"]
    bad = []
    # the build the timings come from is in the record (type, flags, optimised)
    b = doc.get("build", {})
    if not (isinstance(b.get("type"), str) and b["type"] and "c_flags" in b
            and isinstance(b.get("optimised"), bool)):
        bad.append(f"JSON has no build record: {b!r}")
    head = re.search(r"in [0-9.]+ s: ([0-9.]+) ms/step", p.stdout)
    if not head:
        bad.append("no ms/step in the summary")
    graphs = s.get("graph_steps", 0)
    if s.get("timed_steps") != s["steps"] - graphs:
        bad.append(f"timed_steps {s.get('timed_steps')!r}: {s['steps']} steps, {graphs} as graphs")
    if graphs > 0 and not re.search(rf"parts timed on the {s['steps'] - graphs} of {s['steps']} "
                                    r"steps run outside the\s+CUDA graph", p.stdout):
        bad.append("a run with graphs does not say its split is a sample of the other steps")
    if graphs == 0 and re.search(r"outside the\s+CUDA graph", p.stdout):
        bad.append("a run without graphs calls its split a sample")
    parts = sum(t["ms_per_step"] for t in s["timers"].values())
    total = parts - s["concurrent_ms_per_step"]
    if abs(total - s["ms_per_step"]) > 5e-3 * s["ms_per_step"] + 1e-9:
        bad.append(f"JSON: parts {parts:.6f} - concurrent {s['concurrent_ms_per_step']:.6f}"
                   f" = {total:.6f} ms/step, the step is {s['ms_per_step']:.6f}")
    row = re.search(r"^\s+total\s+([0-9.]+)", p.stdout, re.M)
    if not row:
        bad.append("no total row")
    elif head and abs(float(row.group(1)) - float(head.group(1))) > 1.5e-3:
        bad.append(f"total row {row.group(1)} ms/step, headline {head.group(1)} ms/step")
    # the rebuilds' parts: every part there, and, drain aside, they add up to
    # the two rebuild timers (the small rest: the host force array, the agreements)
    rp = s.get("rebuild_ms_per_rebuild", {})
    keys = ["drain", "to_host", "migration", "plan", "bind", "lists", "graph"]
    if sorted(rp) != sorted(keys) or any(not (rp[k] >= 0) for k in keys):
        bad.append(f"JSON rebuild parts {rp!r}: want {keys}, each >= 0")
    elif s["rebuilds"] > 0:
        # drain and graph lie outside the rebuild timers (include/halox/md.h)
        parts = s["rebuilds"] * sum(rp[k] for k in keys if k not in ("drain", "graph"))
        timers = 1e3 * (s["timers"]["migration_plan"]["seconds"]
                        + s["timers"]["neighbour_search"]["seconds"])
        if not (0.8 * timers - 0.05 <= parts <= 1.02 * timers + 0.05):
            bad.append(f"rebuild parts add up to {parts:.4f} ms, the rebuild timers to "
                       f"{timers:.4f} ms")
        if not re.search(r"rebuilds, ms each \(mean of ranks\): drain [0-9.]+, to host", p.stdout):
            bad.append("the summary does not print the rebuilds' parts")
    # the rebuilds' budget: collectives and host waits for the GPU, inside the rebuilds' time
    bud = s.get("rebuild_budget_per_rebuild", {})
    bkeys = ["collectives", "collective_ms", "gpu_waits", "gpu_wait_ms"]
    if sorted(bud) != sorted(bkeys) or any(not (bud[k] >= 0) for k in bkeys):
        bad.append(f"JSON rebuild budget {bud!r}: want {bkeys}, each >= 0")
    elif s["rebuilds"] > 0:
        inside = sum(rp.get(k, 0) for k in ("drain", "to_host", "migration", "plan", "bind",
                                             "lists"))
        if bud["collective_ms"] + bud["gpu_wait_ms"] > 1.02 * inside + 0.05:
            bad.append(f"rebuild budget {bud!r} exceeds the rebuild's {inside:.4f} ms")
        # a migration and a plan build agree at least once each, the bind once more
        if s["ranks"] > 1 and bud["collectives"] < 3:
            bad.append(f"{bud['collectives']} collectives per rebuild on {s['ranks']} ranks")
        cpu = "--device" in args and args[args.index("--device") + 1] == "cpu"
        if cpu and bud["gpu_waits"]:
            bad.append(f"{bud['gpu_waits']} GPU waits per rebuild on the CPU")
        # and no more: the migration's, one per pulse with a peer (the plan build's first is
        # its first pulse's), the bind's, the lists'; the local steps between them defer their
        # failures into those (one pulse per decomposed dimension in this test's runs)
        most = 3 + sum(1 for n in doc.get("settings", {}).get("grid", [1, 1, 1]) if n > 1)
        if cpu and s["ranks"] > 1 and bud["collectives"] > most + 1e-9:
            bad.append(f"{bud['collectives']} collectives per rebuild on the CPU engine, at most "
                       f"{most} expected")
        if not re.search(r"of each rebuild, across its parts: [0-9.]+ collectives in [0-9.]+ ms",
                         p.stdout):
            bad.append("the summary does not print the rebuilds' budget")
    print(p.stdout)
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
