#!/usr/bin/env python3
"""The files of a run (label faults): outputs that are one file, outputs over inputs, the system
cache's files, FIFOs in the way. Each group runs the tools in a folder of its own and checks what
they print, their exit status and every file around them.

    test_files.py BUILD_TOOLS_DIR GROUP    (GROUP: md_same, md_input, md_folder, cache, bench)

  md_same    two outputs of halox-md naming one file (the same path, ./x, a link, a hard link,
             dir/../x) are refused by name before any output is created or emptied
  md_input   an output over the --read file or the --restart checkpoint is refused, the input
             left as it was; --checkpoint over the --restart checkpoint runs
  md_folder  an output in a missing folder is refused before the others are emptied
  cache      HALOX_SYSTEM_CACHE: a link planted where the writer once put its temporary file is
             not followed; a FIFO or a link at the cache's name neither hangs nor is followed; a
             forged file (a coordinate of 1e300 with its checksum right, a bad checksum, a wrong
             size) is refused naming it; a file of the older format is replaced
  bench      halox-bench --json and --csv naming one file, or a scaling input, refused before
             anything is written
Exit 0 when every check holds, 1 otherwise (each failure on a line)."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

TOOLS, GROUP = os.path.abspath(sys.argv[1]), sys.argv[2]
MD = os.path.join(TOOLS, "halox-md")
BENCH = os.path.join(TOOLS, "halox-bench")
SMALL = ["--cells", "3,3,3", "--steps", "2", "--device", "cpu", "--quiet", "--no-progress"]
RANDOM = ["--atoms", "200", "--density", "0.5", "--steps", "2", "--device", "cpu", "--quiet",
          "--no-progress"]
failures = []
ENV = {k: v for k, v in os.environ.items() if not k.startswith("HALOX_")}


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd, env=None, preexec=None, timeout=30):
    """(exit status, stderr); 'hang' when still running after timeout seconds."""
    e = dict(ENV)
    e.update(env or {})
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout,
                           preexec_fn=preexec, stdin=subprocess.DEVNULL)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return "hang", ""


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def refused(cmd, says, untouched, absent, env=None):
    """cmd exits 2 saying `says`; every file of untouched keeps its bytes, none of absent exists."""
    before = {p: read(p) for p in untouched}
    rc, err = run(cmd, env)
    name = " ".join(os.path.basename(c) if c.startswith("/") else c for c in cmd)
    check(rc == 2 and says in err, f"{name}: exit {rc}, says {says!r}: {err.strip()[:300]!r}")
    for p in untouched:
        check(os.path.exists(p) and read(p) == before[p], f"{name}: {p} left as it was")
    for p in absent:
        check(not os.path.lexists(p), f"{name}: {p} not created")


def md_same():
    write("keep.csv", "kept\n")
    os.mkdir("sub")
    write("old.xyz", "old\n")
    os.symlink("old.xyz", "link.xyz")
    os.link("old.xyz", "hard.json")
    cases = [
        (["--xyz", "x.xyz", "--json", "x.xyz"], "the XYZ file 'x.xyz' and the JSON file 'x.xyz'",
         ["x.xyz"]),
        (["--traj", "t.xyz", "--csv", "./t.xyz"], "the CSV file './t.xyz'", ["t.xyz"]),
        (["--json", "j.json", "--xyz", "sub/../j.json"],
         "are the same file", ["j.json"]),
        (["--traj", "link.xyz", "--json", "old.xyz"], "the JSON file 'old.xyz'", []),
        (["--traj", "old.xyz", "--json", "hard.json"], "the JSON file 'hard.json'", []),
        (["--checkpoint", "c.chk", "--json", "./c.chk"], "the checkpoint 'c.chk'", ["c.chk"]),
        (["--traj", "old.xyz", "--checkpoint", "link.xyz"], "are the same file", []),
    ]
    for args, says, absent in cases:
        refused([MD] + SMALL + ["--csv", "keep.csv"] + args, says, ["keep.csv", "old.xyz"],
                absent)


def md_input():
    rc, err = run([MD, "--cells", "3,3,3", "--steps", "10", "--rebuild-every", "10", "--device",
                   "cpu", "--quiet", "--checkpoint", "in.chk", "--traj", "in.xyz"])
    check(rc == 0, f"a checkpoint and a trajectory written: exit {rc} {err.strip()[:200]!r}")
    write("keep.csv", "kept\n")
    os.symlink("in.chk", "link.chk")
    os.link("in.chk", "hard.dump")
    restart = [MD, "--restart", "in.chk", "--steps", "20", "--quiet", "--csv", "keep.csv"]
    says = "is the same file as the --restart checkpoint 'in.chk': writing it would overwrite"
    refused(restart + ["--json", "in.chk"], says, ["in.chk", "keep.csv"], [])
    refused(restart + ["--json", "./link.chk"], says, ["in.chk", "keep.csv"], [])
    refused(restart + ["--traj", "hard.dump"], says, ["in.chk", "keep.csv"], [])
    read_args = [MD, "--read", "in.xyz", "--steps", "2", "--quiet", "--csv", "keep.csv"]
    says = "is the same file as the --read file 'in.xyz'"
    refused(read_args + ["--traj", "./in.xyz"], says, ["in.xyz", "keep.csv"], [])
    refused(read_args + ["--checkpoint", "in.xyz"], says, ["in.xyz", "keep.csv"], [])
    # the one pair allowed: the checkpoint read whole, then replaced atomically
    at10 = read("in.chk")
    rc, err = run([MD, "--restart", "in.chk", "--steps", "20", "--quiet", "--checkpoint",
                   "link.chk"])
    check(rc == 0, f"--restart in.chk --checkpoint link.chk: exit {rc} {err.strip()[:200]!r}")
    check(os.path.islink("link.chk") and read("in.chk") != at10,
          "the checkpoint replaced through the link, the link kept")
    # a FIFO to read is refused at once, never waited on
    os.mkfifo("fifo.xyz")
    rc, err = run([MD, "--read", "fifo.xyz", "--steps", "2", "--quiet"], timeout=20)
    check(rc == 2 and "is a FIFO" in err, f"--read fifo.xyz: exit {rc} {err.strip()[:200]!r}")


def md_folder():
    write("keep.csv", "kept\n")
    write("keep.xyz", "kept\n")
    for opt, name in (("--checkpoint", "no/c.chk"), ("--json", "no/r.json"),
                      ("--checkpoint", "keep.xyz/c.chk")):
        refused([MD] + SMALL + ["--csv", "keep.csv", "--traj", "keep.xyz", opt, name],
                f"cannot write the {'checkpoint' if opt == '--checkpoint' else 'JSON file'} "
                f"'{name}'", ["keep.csv", "keep.xyz"], [name])


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


HEAD = struct.Struct("=8sqdddQQ")  # magic, n, density, dmin, L, seed, FNV-1a 64 of the positions


def cache():
    os.mkdir("cache")
    env = {"HALOX_SYSTEM_CACHE": os.path.abspath("cache")}
    write("target", "untouched\n")
    target = os.path.abspath("target")
    name = None

    def plant():  # in the child, before exec: the pid is the tool's
        os.symlink(target, os.path.join("cache", f"{name}.{os.getpid()}.tmp"))

    rc, err = run([MD] + RANDOM, env)
    files = os.listdir("cache")
    check(rc == 0 and len(files) == 1, f"the cache written: exit {rc}, files {files}")
    name = files[0]
    path = os.path.join("cache", name)
    good = read(path)
    os.remove(path)
    rc, err = run([MD] + RANDOM, env, preexec=plant)
    check(rc == 0, f"a link planted at the old temporary name: exit {rc} {err.strip()[:200]!r}")
    check(read("target") == b"untouched\n", "the link's target left untouched")
    check(os.path.isfile(path) and not os.path.islink(path) and read(path) == good,
          "the cache written as a file of its own, the same bits")
    for f in os.listdir("cache"):
        if f != name:
            os.remove(os.path.join("cache", f))
    # what is at the cache's name is read as strictly as any input
    head = HEAD.unpack_from(good)
    pos = bytearray(good[HEAD.size:])
    struct.pack_into("=d", pos, 8, 1e300)
    forged = HEAD.pack(*head[:6], fnv1a64(pos)) + bytes(pos)
    flipped = bytearray(good)
    flipped[-1] ^= 1
    older = b"HXRAND2\0" + good[8:HEAD.size - 8] + good[HEAD.size:]
    for what, data, says in (("a coordinate of 1e300, its checksum right", forged,
                              "outside the box"),
                             ("a flipped bit", bytes(flipped), "its checksum does not match"),
                             ("a truncated file", good[:-8], "expected for 200 atoms")):
        with open(path, "wb") as f:
            f.write(data)
        rc, err = run([MD] + RANDOM, env)
        check(rc == 2 and says in err and path in err,
              f"cache with {what}: exit {rc}, says {says!r}: {err.strip()[:300]!r}")
        check(read(path) == data, f"cache with {what}: left as it was")
    with open(path, "wb") as f:
        f.write(older)
    rc, err = run([MD] + RANDOM, env)
    check(rc == 0 and read(path) == good, f"a cache of the older format replaced: exit {rc}")
    os.remove(path)
    os.mkfifo(path)
    rc, err = run([MD] + RANDOM, env, timeout=20)
    check(rc == 2 and "is a FIFO" in err, f"a FIFO at the cache's name: exit {rc} "
                                          f"{err.strip()[:200]!r}")
    os.remove(path)
    os.symlink(target, path)
    rc, err = run([MD] + RANDOM, env)
    check(rc == 2 and "is a symbolic link" in err and read("target") == b"untouched\n",
          f"a link at the cache's name, not followed: exit {rc} {err.strip()[:200]!r}")
    os.remove(path)
    refused([MD] + RANDOM + ["--json", "keep.csv", "--csv", path], "the system cache file",
            [], ["keep.csv", path], env)


def bench():
    base = [BENCH, "latency", "--transport", "threads", "-b", "8", "-e", "64", "-n", "3"]
    write("keep.csv", "kept\n")
    os.symlink("keep.csv", "link.csv")
    refused(base + ["--json", "r.json", "--csv", "./r.json"],
            "the --json file 'r.json' and the --csv file './r.json' are the same file", [],
            ["r.json"])
    refused(base + ["--json", "link.csv", "--csv", "keep.csv"], "are the same file",
            ["keep.csv"], [])
    refused(base + ["--json", "r.json", "--csv", "no/r.csv"], "its folder 'no' does not exist",
            [], ["r.json"])
    write("runs.json", "".join('{"bench": "md", "transport": "mpi", "atoms": 1000, '
                               f'"ranks": {r}, "ms_per_step": {2.0 / r}}}\n' for r in (1, 2)))
    refused([BENCH, "scaling", "runs.json", "--json", "./runs.json"],
            "is the same file as the scaling input 'runs.json'", ["runs.json"], [])


def main():
    groups = {"md_same": md_same, "md_input": md_input, "md_folder": md_folder, "cache": cache,
              "bench": bench}
    top = os.getcwd()
    tmp = tempfile.mkdtemp(prefix=f"files-{GROUP}-", dir=top)
    os.chdir(tmp)
    groups[GROUP]()
    os.chdir(top)
    print(f"{GROUP}: {len(failures)} failed")
    if not failures:
        shutil.rmtree(tmp)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
