#!/usr/bin/env python3
"""Hostile arguments and environment values for the tools: halox-md, halox-check and
halox-bench are started a few hundred times, each time from a small valid command with one option
(sometimes two) or one environment variable replaced by a hostile value, chosen with a fixed seed.

A run FAILS when it
  - dies by a signal (a crash: SIGSEGV, SIGFPE, SIGABRT, ...) or prints a sanitizer report;
  - hangs: still running after the time limit AND still running 10 s after SIGTERM (a long but
    legitimate run stops on SIGTERM; a hang that spins ignores it);
  - exits 0 on a malformed value (not a number, NaN, inf, overflow, trailing characters, an
    unknown name, a path that is not a regular file to write), or exits with anything but 2 on
    a malformed number or name (a usage error), or gives no message on stderr when it refuses.

    fuzz_tools.py BUILD_TOOLS_DIR [--cases N] [--seed S] [--limit SECONDS]

The options of each tool come from its --help, so a new option is fuzzed as soon as it is
documented (its kind from the placeholder: N, S, FILE, NXxNYxNZ, ...). Exit 0 when every case
passed, 1 otherwise; the failures are listed with the command to reproduce them.
"""
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

SANITIZER = re.compile(r"AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|"
                       r"ThreadSanitizer|runtime error:")

# values by kind: (malformed, hostile). Malformed values must be refused (exit 2, a message);
# hostile ones are legal to parse but extreme: the tool may run, refuse or fail, never crash
# or hang.
REAL_BAD = ["", "abc", "nan", "-nan", "inf", "-inf", "1e999", "-1e999", "5x", "1,5", " ", "1e"]
REAL_HOSTILE = ["-1", "0", "-0", "1e308", "-1e308", "1e-320", "4.9e-324", "1e20", "1e39",
                "1e-39", "2147483648"]
INT_BAD = ["", "abc", "1.5", "99999999999999999999", "-99999999999999999999", "1e3", "5x",
           "nan", "0x", " 1 2"]
INT_HOSTILE = ["-1", "0", "2147483648", "-2147483648", "9223372036854775807", "4294967297"]
TRIPLE_INT_BAD = ["", "a,b,c", "1,2", "1,2,3,4", "1.5,2,3", "99999999999,1,1", "nan,1,1",
                  "1,,2", "2x2", "1x1x1x1"]
TRIPLE_INT_HOSTILE = ["0,1,1", "-1,1,1", "100000,100000,100000", "1,1,2147483647",
                      "65536,65536,1", "1000000x1000000x1", "3x0x1"]
TRIPLE_REAL_BAD = ["", "1,2", "a,1,1", "nan,1,1", "inf,1,1", "1e999,1,1", "1,2,3,4"]
TRIPLE_REAL_HOSTILE = ["-1,1,1", "0,1,1", "1e39,1e39,1e39", "1e300,1e300,1e300",
                       "1e-300,1,1", "1e20,1e20,1e20"]
WORD_BAD = ["", "bogus", "THREADS", "threads ", "a\x01b", "-", "--help-env=1"]
# paths: {tmp} is the run's own folder
OUT_BAD = ["", "/", "/dev/full", "/dev/null", "{tmp}", "{tmp}/no/such/folder/f", "{tmp}/fifo"]
IN_BAD = ["", "/", "/dev/null", "/dev/zero", "{tmp}", "{tmp}/missing", "{tmp}/fifo",
          "{tmp}/garbage.xyz", "{tmp}/empty", "{tmp}/huge.xyz", "{tmp}/short.xyz"]

ENV = {
    "HALOX_TIMEOUT_S": (REAL_BAD[1:] + ["0", "-5", "1e7"], ["0.5", "1e6"]),
    "HALOX_LOG_LEVEL": (INT_BAD[1:] + ["-1", "4"], ["0", "1"]),
    "HALOX_DEVICE": (WORD_BAD[1:], ["cpu"]),
    "HALOX_TRANSPORT": (WORD_BAD[1:], []),
    "HALOX_HYBRID_UNREACHABLE": (["node:0", "node:-1", "x", "0-", "5-99", "node:99999999999",
                                  "1-1-1"], ["all", "0-1"]),
    "HALOX_CPU_AFFINITY": (["bogus"], ["off"]),
    "HALOX_SYSTEM_CACHE": ([], ["/", "/dev/full", "{tmp}/no/such", "{tmp}/fifo"]),
    "HALOX_AUTOTUNE_CACHE": ([], ["/", "/dev/full", "{tmp}/fifo"]),
}

TOOLS = {
    "halox-md": {
        "base": ["--cells", "3,3,3", "--steps", "4", "--grid", "2x1x1", "--device", "cpu",
                 "--thermo-every", "2", "--no-progress", "--quiet"],
        "skip": set(),
        "env": list(ENV),
    },
    "halox-check": {
        "base": ["--grid", "2x1x1", "--box", "10", "--atoms", "200", "--cutoff", "2",
                 "--steps", "2"],
        "skip": set(),
        "env": ["HALOX_TIMEOUT_S", "HALOX_TRANSPORT", "HALOX_HYBRID_UNREACHABLE"],
    },
    "halox-bench": {
        "base": ["halo", "--atoms", "2000", "--transport", "threads", "-r", "3", "-w", "1"],
        "skip": set(),
        "env": ["HALOX_TIMEOUT_S", "HALOX_HYBRID_UNREACHABLE"],
    },
}


# the kind of an option's value from its --help placeholder, with the exceptions by name
META_KIND = {"N": "int", "K": "int", "R": "int", "W": "int", "S": "int", "N[,N...]": "int",
             "3|4": "int", "P": "word", "NAME": "word", "T[,T...]": "word", "NXxNYxNZ": "triple_int",
             "NX,NY,NZ": "triple_int", "AxBxC": "triple_int", "LX,LY,LZ": "triple_real",
             "L": "triple_real", "FILE": "out", "FILE.xyz": "in"}
OPT_KIND = {"--skin": "real", "--timeout": "real", "--restart": "in", "--read": "in",
            "--threads": "int",
            "--double": None, "--stride": "int", "--minbytes": "real", "--maxbytes": "real",
            "--stepfactor": "real"}
# halox-bench: options of other subcommands than halo start from their own valid command
BENCH_BASES = {
    "latency": ["latency", "--transport", "threads", "-n", "3", "-w", "1", "-b", "8", "-e", "64"],
    "md": ["md", "--atoms", "2000", "--transport", "threads", "--steps", "10", "--device", "cpu"],
}
BENCH_BASE_OF = {"--minbytes": "latency", "--maxbytes": "latency", "--stepfactor": "latency",
                 "--iters": "latency", "--steps": "md", "--device": "md", "--graph": "md"}


def kind_of(opt, meta):
    """The kind of an option's value (None: a flag, or not fuzzed)."""
    if opt in OPT_KIND:
        return OPT_KIND[opt]
    if meta is None:
        return None
    if meta in META_KIND:
        return META_KIND[meta]
    if re.search(r"[a-z]", meta):
        return "word"  # gpu|cpu|auto, nve|nvt, lammps-lj, fcc
    return "real"


def options_from_help(tool_path):
    out = subprocess.run([tool_path, "--help"], capture_output=True, text=True, timeout=20).stdout
    if "halox-bench" in tool_path:  # its per-subcommand help is the same text
        pass
    opts = {}
    for line in out.splitlines():
        m = re.match(r"\s+(?:-[a-z], )?(--[a-z0-9-]+)(?:,? ?(?:--[a-z0-9-]+))?(?: ([^ ].*?))?"
                     r"(?:\s{2,}|$)", line)
        if not m:
            continue
        opt, meta = m.group(1), m.group(2)
        if meta and meta.startswith("|"):
            meta = None  # "--shift | --no-shift": two flags
        if opt in ("--help", "--version", "--help-env"):
            continue
        opts.setdefault(opt, meta.split()[0] if meta else None)
        m2 = re.match(r"\s+--[a-z0-9-]+, (--[a-z0-9-]+) ([^ ]+)", line)
        if m2:  # "--double, --stride 3|4": a flag, then an option with a value
            opts.setdefault(m2.group(1), m2.group(2))
    return opts


def values_for(kind):
    table = {
        "real": (REAL_BAD, REAL_HOSTILE),
        "int": (INT_BAD, INT_HOSTILE),
        "triple_int": (TRIPLE_INT_BAD, TRIPLE_INT_HOSTILE),
        "triple_real": (TRIPLE_REAL_BAD, TRIPLE_REAL_HOSTILE),
        "word": (WORD_BAD, []),
        "out": (OUT_BAD, []),
        "in": (IN_BAD, []),
    }
    return table[kind]


def replace(base, opt, value):
    """base with opt set to value (replaced where base has it, else appended)."""
    args = list(base)
    if opt in args:
        i = args.index(opt)
        if i + 1 < len(args) and not args[i + 1].startswith("-"):
            args[i + 1] = value
            return args
    return args + [opt, value]


def make_files(tmp):
    os.mkfifo(os.path.join(tmp, "fifo"))
    with open(os.path.join(tmp, "garbage.xyz"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    open(os.path.join(tmp, "empty"), "w").close()
    with open(os.path.join(tmp, "huge.xyz"), "w") as f:
        f.write("99999999999999\ncomment\nLJ 0 0 0\n")
    with open(os.path.join(tmp, "short.xyz"), "w") as f:
        f.write('5\nLattice="1e39 0 0 0 1e39 0 0 0 1e39"\nLJ 0 0 0\nLJ 1 1 1\n')


def options(argv, n_cases, limit):
    """(cases, seed, limit, the arguments after '--') from [--cases N] [--seed S] [--limit SECONDS]
    [-- ...]: the command line every fuzzer of the faults label takes (seed 2026 by default)."""
    seed, rest = 2026, []
    a = list(argv)
    while a:
        if a[0] == "--":
            rest = a[1:]
            break
        if a[0] == "--cases":
            n_cases = int(a[1])
        elif a[0] == "--seed":
            seed = int(a[1])
        elif a[0] == "--limit":
            limit = float(a[1])
        a = a[2:]
    return n_cases, seed, limit, rest


def fnv1a64(data):
    """FNV-1a, 64 bits: the checksum of halox-md's checkpoints and system cache."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def run(cmd, env, limit):
    """(returncode or 'hang', seconds, stdout+stderr, stderr)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, start_new_session=True, text=True,
                         errors="replace")
    try:
        out, err = p.communicate(timeout=limit)
        return p.returncode, time.monotonic() - t0, out + err, err
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=10)
            return ("stopped", p.returncode), time.monotonic() - t0, out + err, err
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            return "hang", time.monotonic() - t0, out + err, err


def main():
    tools_dir = sys.argv[1]
    n_cases, seed, limit, _ = options(sys.argv[2:], 300, 15.0)
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="halox-fuzz-")
    make_files(tmp)

    # every (tool, kind of change, target, value, must_refuse) case there is
    cases = []
    for tool, spec in TOOLS.items():
        path = os.path.join(tools_dir, tool)
        if not os.access(path, os.X_OK):
            continue
        for opt, meta in options_from_help(path).items():
            if opt in spec["skip"]:
                continue
            kind = kind_of(opt, meta)
            if kind is None:
                continue
            bad, hostile = values_for(kind)
            cases += [(tool, "opt", opt, v, True) for v in bad]
            cases += [(tool, "opt", opt, v, False) for v in hostile]
        for var in spec["env"]:
            bad, hostile = ENV[var]
            cases += [(tool, "env", var, v, True) for v in bad]
            cases += [(tool, "env", var, v, False) for v in hostile]
    rng.shuffle(cases)
    chosen = cases[:n_cases]
    # and a few with two changes at once (an option and a variable)
    pairs = []
    for _ in range(max(n_cases // 10, 1)):
        c1, c2 = rng.choice(cases), rng.choice(cases)
        if c1[0] == c2[0] and c1[2] != c2[2]:
            pairs.append((c1, c2))

    base_env = {k: v for k, v in os.environ.items() if not k.startswith("HALOX_")}
    base_env["HALOX_SYSTEM_CACHE"] = ""
    failures, t_start, counts = [], time.monotonic(), {"refused": 0, "ran": 0, "stopped": 0}

    def one(changes):
        tool = changes[0][0]
        args = list(TOOLS[tool]["base"])
        if tool == "halox-bench":
            for (_, how, target, _, _) in changes:
                if how == "opt" and target in BENCH_BASE_OF:
                    args = list(BENCH_BASES[BENCH_BASE_OF[target]])
        env = dict(base_env)
        env["HALOX_AUTOTUNE_CACHE"] = os.path.join(tmp, "autotune.tsv")
        must_refuse = False
        for (_, how, target, value, bad) in changes:
            value = value.replace("{tmp}", tmp)
            if how == "opt":
                if target == "--restart":
                    args = [a for a in args if a not in ("--cells", "3,3,3")]
                args = replace(args, target, value)
                if target in ("--json", "--csv", "--xyz", "--checkpoint") and value == "":
                    bad = True
            else:
                env[target] = value
                if value == "":
                    bad = False  # an empty variable counts as unset
            must_refuse |= bad
        cmd = [os.path.join(tools_dir, tool)] + args
        rc, secs, text, err = run(cmd, env, limit)
        shown = " ".join(f"{t}={v!r}" for (_, how, t, v, _) in changes if how == "env")
        shown = (shown + " " if shown else "") + " ".join(repr(x) if (" " in x or not x) else x
                                                          for x in cmd)
        why = None
        if rc == "hang":
            why = f"hang: still running {secs:.0f} s after start and 10 s after SIGTERM"
        elif isinstance(rc, tuple):
            counts["stopped"] += 1
            print(f"note: ran past {limit:g} s, stopped by SIGTERM: {shown}")
            if rc[1] is not None and rc[1] < 0 and rc[1] != -signal.SIGTERM:
                why = f"crashed after SIGTERM (signal {-rc[1]})"
        elif rc < 0:
            why = f"crashed: signal {-rc} ({signal.Signals(-rc).name})"
        elif SANITIZER.search(text):
            why = "sanitizer report"
        elif must_refuse and rc == 0:
            why = "exit 0 on a malformed value"
        elif must_refuse and rc not in (1, 2):
            why = f"exit {rc} on a malformed value (want 2, or 1 for a failed write)"
        elif rc != 0 and not err.strip():
            why = f"exit {rc} without a message on stderr"
        elif rc not in (0, 1, 2):
            why = f"exit {rc} (the tools exit 0, 1 or 2)"
        if why is None and not isinstance(rc, tuple):
            counts["refused" if rc != 0 else "ran"] += 1
        if why:
            tail = "\n      ".join(text.strip().splitlines()[-4:])
            failures.append(f"{why}\n    {shown}\n      {tail}")

    for c in chosen:
        one([c])
    for c1, c2 in pairs:
        one([c1, c2])
    total = len(chosen) + len(pairs)
    print(f"fuzz: {total} runs (seed {seed}, of {len(cases)} single-change cases) in "
          f"{time.monotonic() - t_start:.0f} s: {counts['refused']} refused, {counts['ran']} ran, "
          f"{counts['stopped']} stopped by SIGTERM after {limit:g} s, {len(failures)} failed")
    for f in failures:
        print("FAIL:", f)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
