#!/usr/bin/env python3
"""Ranks of one MPI job that disagree: halox-md, halox-check and halox-bench are started under
mpiexec with 2 processes, rank 1 given an option (or a halox variable, or a --read file) that
differs from rank 0's, each case drawn with a fixed seed from valid values, so that both ranks
parse their command line and meet at the start-up agreement (tools/tool_agree.h).

A case FAILS when the job
  - exits 0 (the ranks ran with different inputs), or with anything but 2;
  - takes longer than the limit (a hang, or a timeout in a collective instead of the refusal);
  - does not name the option in rank 0's line "rank 1 was given ... but rank 0 ..." (or
    "rank 1 has VAR=... but rank 0 ...");
  - prints one of Open MPI's abort banners or a sanitizer report.

    fuzz_ranks.py BUILD_TOOLS_DIR [--cases N] [--seed S] [--limit SECONDS] -- MPIEXEC... RANK_ARGS

MPIEXEC... RANK_ARGS: the command that starts tests/tools/rank_args.sh on 2 processes (the
commands of rank 0 and, after --rank1, of rank 1 are appended). Exit 0 when every case passed, 1
otherwise, 77 when the build has no MPI.
"""
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_tools import SANITIZER, options, run  # noqa: E402  (the same runner and reports)

BANNER = re.compile(r"MPI_ABORT|ORTE_ERROR_LOG|mpirun has exited")

# per tool: the base command line (valid and short on 2 ranks), and the options with values that
# each parse alone; an option given as an alias is named by its canonical name
TOOLS = {
    "halox-md": {
        "base": ["--cells", "4,4,4", "--steps", "5", "--grid", "2x1x1", "--transport", "mpi"],
        "opts": {
            "--dt": ["0.004", "0.005", "0.003"],
            "--seed": ["1", "2", "87287"],
            "--cutoff": ["2.0", "2.2", "2.5"],
            "--skin": ["0.2", "0.3", "0.4"],
            "--temp": ["1.0", "1.44", "2.0"],
            "--density": ["0.8", "0.8442"],
            "--rebuild-every": ["10", "20"],
            "--thermo-every": ["1", "5"],
            "--ensemble": ["nve", "nvt"],
            "--tau": ["0.1", "0.2"],
            "--steps": ["5", "6"],
            "--precision": ["float", "double"],
            "--timeout": ["30", "60"],
            "--equilibrate": ["0", "5"],
            "--cells": ["4,4,4", "5,4,4"],
            "--read": ["{tmp}/a.xyz", "{tmp}/b.xyz"],
            "--shift": None,
            "--tail": None,
            "--rebuild-check": None,
            "--no-progress": None,
        },
    },
    "halox-check": {
        "base": ["--grid", "2x1x1", "--atoms", "2000", "--box", "8", "--transport", "mpi",
                 "--steps", "2"],
        "opts": {
            "--cutoff": ["2.0", "2.5"],
            "--buffer": ["0.3", "0.5"],
            "--seed": ["1", "2"],
            "--atoms": ["2000", "2500"],
            "--dist": ["uniform", "clustered"],
            "--steps": ["2", "3"],
            "--precision": ["float", "double"],
            "--stride": ["3", "4"],
            "--box": ["8", "9"],
            "--verbose": None,
        },
    },
    "halox-bench": {
        "base": ["halo", "-t", "mpi", "--atoms", "2000", "-r", "2", "-w", "1"],
        "opts": {
            "--seed": ["1", "2"],
            "--atoms": ["2000", "3000"],
            "-r": ["2", "3"],
            "--stride": ["3", "4"],
            "--double": None,
            "--no-verify": None,
            "--shifts": None,
        },
        "alias": {"-r": "--repeats"},
    },
}
ENV = {"HALOX_TIMEOUT_S": ["30", "60"], "HALOX_NVSHMEM_HEADROOM": ["1.5", "2"]}


def xyz(path, shift):
    """32 atoms on a grid in a box of 8, the first moved by `shift`."""
    with open(path, "w") as f:
        f.write('32\nLattice="8 0 0 0 8 0 0 0 8" Properties=species:S:1:pos:R:3\n')
        for i in range(32):
            x = (i % 4) * 2 + 1 + (shift if i == 0 else 0)
            f.write(f"Ar {x} {((i // 4) % 4) * 2 + 1} {(i // 16) * 4 + 1}\n")


def with_option(args, opt, value):
    """args with opt set to value (None: a flag), replacing a value the base gives."""
    if opt in args and value is not None:
        i = args.index(opt)
        return args[:i + 1] + [value] + args[i + 2:]
    return args + [opt] + ([] if value is None else [value])


def draw(rng, tmp):
    """One case: (rank 0's command words, rank 1's, the name the message must give)."""
    tool = rng.choice(sorted(TOOLS))
    spec = TOOLS[tool]
    if tool == "halox-md" and rng.random() < 0.15:
        var = rng.choice(sorted(ENV))
        v0, v1 = rng.sample(ENV[var], 2)
        how = rng.choice(["both", "rank0", "rank1"])
        e0 = ["env", f"{var}={v0}"] if how != "rank1" else ["env", "-u", var]
        e1 = ["env", f"{var}={v1}"] if how != "rank0" else ["env", "-u", var]
        return tool, e0, e1, spec["base"], spec["base"], var
    opt = rng.choice(sorted(spec["opts"]))
    values = spec["opts"][opt]
    base = spec["base"]
    if opt == "--read":  # the file is the system: no lattice
        base = [x for x in base if x not in ("--cells", "4,4,4")]
    if values is None:  # a flag: given to one rank only
        a0, a1 = (with_option(base, opt, None), base)
        if rng.random() < 0.5:
            a0, a1 = a1, a0
    else:
        v0, v1 = (x.replace("{tmp}", tmp) for x in rng.sample(values, 2))
        how = rng.choice(["both", "both", "rank1"] if opt not in base else ["both"])
        a0 = with_option(base, opt, v0) if how == "both" else base
        a1 = with_option(base, opt, v1)
    return tool, [], [], a0, a1, spec.get("alias", {}).get(opt, opt)


def main():
    tools_dir = sys.argv[1]
    n_cases, seed, limit, launch = options(sys.argv[2:], 20, 20.0)
    md = os.path.join(tools_dir, "halox-md")
    features = subprocess.run([md, "--version"], capture_output=True, text=True).stdout
    if "mpi yes" not in features or not launch:
        print("fuzz_ranks: this build has no MPI (or no launcher was given): skipped")
        return 77
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="halox-fuzz-ranks-")
    xyz(os.path.join(tmp, "a.xyz"), 0)
    xyz(os.path.join(tmp, "b.xyz"), 0.5)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOX_")}
    env["HALOX_DEVICE"] = "cpu"
    failures, slowest, t_start, drawn = [], 0.0, time.monotonic(), []
    for _ in range(n_cases):
        tool, e0, e1, a0, a1, name = draw(rng, tmp)
        drawn.append(f"{tool} {name}")
        path = os.path.join(tools_dir, tool)
        cmd = launch + e0 + [path] + a0 + ["--rank1"] + e1 + [path] + a1
        rc, secs, text, _ = run(cmd, env, limit)
        slowest = max(slowest, secs)
        said = re.search(r"^%s: rank 1 (was given|has) .*%s.* but rank 0 " % (tool, re.escape(name)),
                         text, re.M)
        why = None
        if rc == "hang" or isinstance(rc, tuple):
            why = f"still running after {limit:g} s"
        elif SANITIZER.search(text):
            why = "sanitizer report"
        elif BANNER.search(text):
            why = "an Open MPI abort banner"
        elif rc != 2:
            why = f"exit {rc} (want 2)"
        elif not said:
            why = f"no line naming {name} (rank 1 was given ... but rank 0 ...)"
        if why:
            shown = " ".join(cmd[len(launch):])
            tail = "\n      ".join(text.strip().splitlines()[-4:])
            failures.append(f"{why}\n    {shown}\n      {tail}")
    print(f"fuzz_ranks: {n_cases} jobs of 2 ranks (seed {seed}) in "
          f"{time.monotonic() - t_start:.0f} s, the slowest {slowest:.1f} s: "
          f"{len(failures)} failed\n  cases: {', '.join(drawn)}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
