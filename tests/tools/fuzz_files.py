#!/usr/bin/env python3
"""The files of a run, fuzzed (label faults; fuzz_tools.py fuzzes one path at a time, this the
paths together and the files behind them): halox-md and halox-bench are started with

  - two outputs spelled as one file (the same path, ./x, sub/../x, a link, a hard link);
  - an output spelled as an input (the --restart checkpoint, the --read file);
  - a system cache file forged from a good one (a flipped byte, truncated, extended, a
    coordinate set to a hostile value with or without its checksum fixed, a header field);
  - a FIFO, a link or a folder at the cache's name, or given as an input;

chosen with a fixed seed. A run FAILS when it crashes, prints a sanitizer report or hangs (as in
fuzz_tools.py), when it does not refuse (exit 2, a message) what must be refused, or when a
refused run created or changed a file.

    fuzz_files.py BUILD_TOOLS_DIR [--cases N] [--seed S] [--limit SECONDS]
"""
import os
import random
import shutil
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_tools import SANITIZER, fnv1a64, options, run  # noqa: E402

MD_OUT = ["--csv", "--json", "--xyz", "--checkpoint"]
BENCH_OUT = ["--json", "--csv"]
SMALL = ["--cells", "3,3,3", "--steps", "2", "--device", "cpu", "--quiet", "--no-progress"]
RANDOM = ["--atoms", "200", "--density", "0.5", "--steps", "2", "--device", "cpu", "--quiet",
          "--no-progress"]
LATENCY = ["latency", "--transport", "threads", "-b", "8", "-e", "64", "-n", "3"]
HEAD = struct.Struct("=8sqdddQQ")  # the cache's header: magic, n, density, dmin, L, seed, FNV
HOSTILE = [1e300, -1e300, float("nan"), float("inf"), -1.0, 1e-320, 3.0e8]


def snapshot(folder):
    """Every file under folder (not through links) with its bytes, or its kind."""
    seen = {}
    for root, dirs, files in os.walk(folder):
        for n in dirs + files:
            p = os.path.join(root, n)
            if os.path.islink(p):
                seen[p] = "link:" + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    seen[p] = f.read()
            else:
                seen[p] = "special"
    return seen


class Fuzz:
    def __init__(self, tools, tmp, rng, limit):
        self.md = os.path.join(tools, "halox-md")
        self.bench = os.path.join(tools, "halox-bench")
        self.tmp, self.rng, self.limit = tmp, rng, limit
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HALOX_")}
        self.n = 0

    def fresh(self):
        """A folder of its own for one case, with sub/ in it."""
        self.n += 1
        d = os.path.join(self.tmp, f"case{self.n}")
        os.makedirs(os.path.join(d, "sub"))
        return d

    def spell(self, d, name, exists):
        """Another spelling of d/name, making the link or hard link it needs."""
        ways = ["same", "dot", "updir", "link"] + (["hard"] if exists else [])
        way = self.rng.choice(ways)
        if way == "same":
            return os.path.join(d, name)
        if way == "dot":
            return os.path.join(d, ".", name)
        if way == "updir":
            return os.path.join(d, "sub", "..", name)
        alias = os.path.join(d, f"alias{self.rng.randrange(10**6)}-{name}")
        if way == "link":
            if not exists:  # a link to nothing is refused for another reason: make the target
                open(os.path.join(d, name), "w").close()
            os.symlink(name, alias)
        else:
            os.link(os.path.join(d, name), alias)
        return alias

    def setup(self):
        """A checkpoint, a trajectory and a good cache file to start from."""
        base = os.path.join(self.tmp, "base")
        os.makedirs(os.path.join(base, "cache"))
        self.ck, self.xyz = os.path.join(base, "in.chk"), os.path.join(base, "in.xyz")
        rc, _, text, _ = run([self.md, "--cells", "3,3,3", "--steps", "10", "--rebuild-every",
                              "10", "--device", "cpu", "--quiet", "--checkpoint", self.ck,
                              "--traj", self.xyz], self.env, 60)
        env = dict(self.env, HALOX_SYSTEM_CACHE=os.path.join(base, "cache"))
        rc2, _, text2, _ = run([self.md] + RANDOM, env, 60)
        if rc != 0 or rc2 != 0:
            sys.exit(f"fuzz_files: set-up runs failed:\n{text}\n{text2}")
        self.cache_name = os.listdir(os.path.join(base, "cache"))[0]
        with open(os.path.join(base, "cache", self.cache_name), "rb") as f:
            self.cache = f.read()

    # ---- the kinds of cases: each returns (command, env, folder, must_refuse) ----

    def same_outputs(self):
        d = self.fresh()
        tool = self.rng.choice(["md", "bench"])
        a, b = self.rng.sample(MD_OUT if tool == "md" else BENCH_OUT, 2)
        exists = self.rng.random() < 0.5
        name = "out.dat"
        if exists:
            with open(os.path.join(d, name), "w") as f:
                f.write("kept\n")
        p1, p2 = os.path.join(d, name), self.spell(d, name, exists)
        if self.rng.random() < 0.5:
            p1, p2 = p2, p1
        cmd = [self.md] + SMALL if tool == "md" else [self.bench] + LATENCY
        return cmd + [a, p1, b, p2], self.env, d, True

    def over_input(self):
        d = self.fresh()
        use_restart = self.rng.random() < 0.5
        src = self.ck if use_restart else self.xyz
        name = os.path.basename(src)
        shutil.copy(src, os.path.join(d, name))
        outs = ["--csv", "--json", "--xyz"] + ([] if use_restart else ["--checkpoint"])
        out = self.rng.choice(outs)
        spelled = self.spell(d, name, True)
        if use_restart:
            cmd = [self.md, "--restart", os.path.join(d, name), "--steps", "20", "--quiet"]
        else:
            cmd = [self.md, "--read", os.path.join(d, name), "--steps", "2", "--quiet"]
        return cmd + [out, spelled], self.env, d, True

    def forged_cache(self):
        d = self.fresh()
        os.mkdir(os.path.join(d, "cache"))
        data = bytearray(self.cache)
        kind = self.rng.choice(["flip", "truncate", "extend", "value", "value-fixed", "header"])
        refuse = True
        if kind == "flip":
            at = self.rng.randrange(len(data))
            data[at] ^= 1 << self.rng.randrange(8)
            refuse = at >= 8  # a flip in the magic makes another format: replaced
        elif kind == "truncate":
            data = data[:self.rng.randrange(len(data))]
        elif kind == "extend":
            data += bytes(self.rng.randrange(1, 64))
        elif kind in ("value", "value-fixed"):
            at = HEAD.size + 8 * self.rng.randrange((len(data) - HEAD.size) // 8)
            struct.pack_into("=d", data, at, self.rng.choice(HOSTILE))
            if kind == "value-fixed":
                head = list(HEAD.unpack_from(data))
                head[6] = fnv1a64(bytes(data[HEAD.size:]))
                HEAD.pack_into(data, 0, *head)
                L = head[4]
                v = struct.unpack_from("=d", data, at)[0]
                refuse = not (0 <= v <= L)
        else:
            field = self.rng.randrange(1, 6)
            head = list(HEAD.unpack_from(data))
            head[field] = head[field] + 1 if field in (1, 5) else head[field] * 1.5
            HEAD.pack_into(data, 0, *head)
        with open(os.path.join(d, "cache", self.cache_name), "wb") as f:
            f.write(data)
        env = dict(self.env, HALOX_SYSTEM_CACHE=os.path.join(d, "cache"))
        return [self.md] + RANDOM, env, d if refuse else None, refuse

    def special(self):
        d = self.fresh()
        os.mkdir(os.path.join(d, "cache"))
        at = self.rng.choice(["cache", "read", "restart"])
        p = os.path.join(d, "cache", self.cache_name) if at == "cache" else os.path.join(d, "x")
        what = self.rng.choice(["fifo", "link", "folder"] if at == "cache" else ["fifo", "folder"])
        if what == "fifo":
            os.mkfifo(p)
        elif what == "folder":
            os.mkdir(p)
        else:
            with open(os.path.join(d, "target"), "w") as f:
                f.write("kept\n")
            os.symlink(os.path.join(d, "target"), p)
        env = dict(self.env, HALOX_SYSTEM_CACHE=os.path.join(d, "cache"))
        if at == "cache":
            cmd = [self.md] + RANDOM
        elif at == "read":
            cmd = [self.md, "--read", p, "--steps", "2", "--quiet"]
        else:
            cmd = [self.md, "--restart", p, "--steps", "2", "--quiet"]
        return cmd, env, d, True

    def one(self, kind):
        cmd, env, folder, must_refuse = getattr(self, kind)()
        before = snapshot(folder) if folder else None
        rc, secs, text, err = run(cmd, env, self.limit)
        why = None
        if rc == "hang" or isinstance(rc, tuple):
            why = f"hang: still running after {secs:.0f} s"
        elif rc < 0:
            why = f"crashed: signal {-rc}"
        elif SANITIZER.search(text):
            why = "sanitizer report"
        elif must_refuse and (rc != 2 or not err.strip()):
            why = f"exit {rc} where a refusal (exit 2 and a message) was due"
        elif before is not None and rc == 2 and snapshot(folder) != before:
            why = "a refused run created or changed files"
        shown = " ".join(f"{k}={v}" for k, v in env.items() if k.startswith("HALOX_"))
        shown = (shown + " " if shown else "") + " ".join(cmd)
        return None if why is None else f"{kind}: {why}\n    {shown}\n      " + "\n      ".join(
            text.strip().splitlines()[-3:])


def main():
    tools = os.path.abspath(sys.argv[1])
    n_cases, seed, limit, _ = options(sys.argv[2:], 80, 10.0)
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="halox-fuzz-files-")
    fz = Fuzz(tools, tmp, rng, limit)
    fz.setup()
    t0, failures = time.monotonic(), []
    kinds = ["same_outputs", "over_input", "forged_cache", "special"]
    for _ in range(n_cases):
        f = fz.one(rng.choice(kinds))
        if f:
            failures.append(f)
    print(f"fuzz_files: {n_cases} runs (seed {seed}) in {time.monotonic() - t0:.0f} s, "
          f"{len(failures)} failed")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        shutil.rmtree(tmp)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
