#!/usr/bin/env python3
"""halox-md --help states the values a run takes: each preset's (thermo interval included: the
help once said 50 where lammps-lj uses 100) and the defaults without a preset, checked against
the "settings" of the JSON file of real runs.

    md_help.py HALOX-MD
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]
HELP = subprocess.run([TOOL, "--help"], capture_output=True, text=True, check=True,
                      timeout=30).stdout
ENV = dict(os.environ, HALOX_DEVICE="cpu")
problems = []


def settings(*args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.json")
        subprocess.run([TOOL, *args, "--quiet", "--json", path], check=True, env=ENV,
                       timeout=120)
        with open(path) as f:
            return json.load(f)["settings"]


def one(pattern, text, what):
    m = re.search(pattern, text, re.S)
    if not m:
        problems.append(f"{what}: no match for {pattern!r} in {text!r}")
        return None
    return m.groups() if len(m.groups()) > 1 else m.group(1)


def same(what, stated, actual):
    if stated is None:
        return
    ok = (abs(float(stated) - float(actual)) <= 1e-12 * max(1.0, abs(float(actual)))
          if isinstance(actual, (int, float)) and not isinstance(actual, bool)
          else stated == actual)
    print(f"{what}: help {stated!r}, run {actual!r}: {'ok' if ok else 'DIFFERENT'}")
    if not ok:
        problems.append(f"{what}: the help says {stated!r}, the run takes {actual!r}")


def preset_text(name):
    """The paragraph after '--preset NAME', joined into one line."""
    m = re.search(r"^  --preset %s +(.*?)(?=^  --preset |^\S)" % re.escape(name), HELP,
                  re.S | re.M)
    if not m:
        problems.append(f"--help has no paragraph for --preset {name}")
        return ""
    return " ".join(m.group(1).split())


def check_preset(name, s, text, skip=()):
    checks = {
        "density": (r"density ([0-9.e+-]+)", s["density"]),
        "temp": (r"\bT ([0-9.e+-]+)", s["temp"]),
        "seed": (r"seed (\d+)", s["seed"]),
        "cutoff": (r"cut-off ([0-9.e+-]+) ", s["cutoff"]),
        "shift": (r"cut-off [0-9.e+-]+ (shifted|unshifted)", "shifted" if s["shift"] else
                  "unshifted"),
        "tail": (r"(no tail|tail) corrections", "tail" if s["tail"] else "no tail"),
        "skin": (r"skin ([0-9.e+-]+)", s["skin"]),
        "rebuild_every": (r"rebuild every (\d+) steps", s["rebuild_every"]),
        "dt": (r"\bdt ([0-9.e+-]+)", s["dt"]),
        "ensemble": (r"\b(NVE|NVT)\b", s["ensemble"].upper()),
        "steps": (r", (\d+) steps, thermo every", s["steps"]),
        "thermo_every": (r"thermo every (\d+) steps", s["thermo_every"]),
        "natoms": (r"\((\d+) atoms\)|(\d+) atoms at random", s["natoms"]),
    }
    if s["system"] == "fcc":
        checks["cells"] = (r"(\d+x\d+x\d+) cells", "x".join(map(str, s["cells"])))
    # the steps of equilibration before step 0: stated when the preset has them
    if s["equilibrate"]:
        checks["equilibrate"] = (r"after (\d+) steps of equilibration", s["equilibrate"])
    elif "equilibrate" not in skip and "equilibrat" in text:
        problems.append(f"--preset {name}: the help speaks of an equilibration the run does "
                        f"not have: {text!r}")
    for key, (pattern, actual) in checks.items():
        if key in skip:
            continue
        got = one(pattern, text, f"--preset {name}: {key}")
        if isinstance(got, tuple):
            got = next((g for g in got if g is not None), None)
        same(f"--preset {name}: {key}", got, actual)


# lammps-lj as it is (32000 atoms, 100 steps: a second); water-density's 45000 atoms without
# steps (and without its equilibration steps, seconds at 45000 atoms), and its steps and
# equilibration on fewer atoms
lj = preset_text("lammps-lj")
check_preset("lammps-lj", settings("--preset", "lammps-lj"), lj)
wd = preset_text("water-density")
check_preset("water-density", settings("--preset", "water-density", "--steps", "0",
                                       "--equilibrate", "0"), wd, skip=("steps", "equilibrate"))
check_preset("water-density", settings("--preset", "water-density", "--atoms", "2000"), wd,
             skip=("natoms",))
if "2 fs per step" not in wd:
    problems.append("--preset water-density: no '2 fs per step' (its ns/day convention)")

# the defaults without a preset, as the option lines state them
d = settings()
nvt = settings("--ensemble", "nvt", "--steps", "0")
defaults = {
    "density": (r"--density RHO .*?\(default ([0-9.]+)\)", d["density"]),
    "cells": (r"--cells NX,NY,NZ .*?\(default (\d+,\d+,\d+)\)", ",".join(map(str, d["cells"]))),
    "temp": (r"--temp T .*?\(default ([0-9.]+)\)", d["temp"]),
    "seed": (r"--seed S .*?\(default (\d+)\)", d["seed"]),
    "cutoff": (r"--cutoff RC .*?\(default ([0-9.]+)\)", d["cutoff"]),
    "shift": (r"--shift \| --no-shift .*?\(default: (no|yes)\)", "yes" if d["shift"] else "no"),
    "tail": (r"--tail \| --no-tail .*?\((no|yes)\)", "yes" if d["tail"] else "no"),
    "skin": (r"--skin S .*?\(default ([0-9.]+)\)", d["skin"]),
    "rebuild_every": (r"--rebuild-every K .*?\(default (\d+)\)", d["rebuild_every"]),
    "dt": (r"--dt DT .*?\(default ([0-9.]+)\)", d["dt"]),
    "steps": (r"--steps N .*?\(default (\d+)", d["steps"]),
    "tau": (r"--tau TAU .*?\(default ([0-9.]+)\)", nvt["tau"]),
    "thermo_every": (r"--thermo-every N .*?\(default (\d+)", d["thermo_every"]),
    "equilibrate": (r"--equilibrate N .*?\(default (\d+)", d["equilibrate"]),
}
for key, (pattern, actual) in defaults.items():
    same(f"default {key}", one(pattern, HELP, f"default {key}"), actual)

for p in problems:
    print(f"md_help: {p}")
print(f"md_help: {'FAIL' if problems else 'PASS'}")
sys.exit(1 if problems else 0)
