#!/usr/bin/env python3
"""Hostile input files for the readers: LAMMPS dumps for halox-md --read, checkpoints for
halox-md --restart, JSON lines for halox-bench scaling. Valid files are written first (by
halox-md itself, and a scaling input of md records), then each case changes one of them, chosen
with a fixed seed: truncations, byte flips, forged fields (re-sealed with the checkpoint's own
checksums, so that the checks behind them are reached), long lines and values, CRLF line ends,
devices and files too large to read.

A case FAILS when the tool
  - dies by a signal or prints a sanitizer report;
  - hangs: still running after the time limit and 10 s after SIGTERM;
  - exits otherwise than the case allows: a malformed or forged field must be refused (exit 2),
    a state that blows up must fail (exit 1 or 2), what is only written differently (CRLF, a
    number with leading zeros, a value line longer than its item) must be read (exit 0), the
    rest may go either way (0, 1 or 2);
  - exits non-zero without a message on stderr.

    fuzz_readers.py BUILD_TOOLS_DIR [--cases N] [--seed S] [--limit SECONDS]

Exit 0 when every case passed, 1 otherwise; the failures are listed with the command and the
file (kept) to reproduce them.
"""
import os
import random
import re
import shutil
import signal
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_tools import SANITIZER, fnv1a64, options, run  # noqa: E402

ACCEPT, REFUSE, FAIL, ANY = (0,), (2,), (1, 2), (0, 1, 2)

# ---- LAMMPS dumps ---------------------------------------------------------------------------

# hostile values of the items, all malformed: each must be refused
BAD_TIMESTEP = ["-5", "abc", "1e3", "99999999999999999999", "", "12 13", "0x10", "nan"]
BAD_NATOMS = ["-1", "2147483648", "1e3", "abc", "", "107", "109", "0", "99999999999999999999"]
BAD_BOX_LINE = ["0 -5", "0 nan", "nan 5", "5 5", "0", "", "0 inf", "abc def", "-1e308 1e308"]
BAD_BOX_HEAD = ["ITEM: BOX BOUNDS ff pp pp", "ITEM: BOX BOUNDS pp sm pp",
                "ITEM: BOX BOUNDS pp pp fs", "ITEM: BOX BOUNDS pp pp",
                "ITEM: BOX BOUNDS pp pp pp pp", "ITEM: BOX BOUNDS abc",
                "ITEM: BOX BOUNDS xy xz yz pp pp pp"]
BAD_ATOMS_HEAD = ["ITEM: ATOMS id type mass x y vx vy vz", "ITEM: ATOMS id type mass x y z vx vy",
                  "ITEM: ATOMS id type mass x y z vx vz", "ITEM: ATOMS id type mass x x y z vx vy vz",
                  "ITEM: ATOMS id id mass x y z vx vy vz", "ITEM: ATOMS id type mass xs ys z vx vy vz",
                  "ITEM: ATOMS id type mass", "ITEM: ATOMS"]
BAD_COORD = ["nan", "inf", "-inf", "1e300", "abc", "", "1e999"]


def dump_frames(text):
    """[(start, end)] line ranges of each frame (its ITEM: TIMESTEP to the next)."""
    lines = text.split("\n")
    starts = [i for i, l in enumerate(lines) if l == "ITEM: TIMESTEP"]
    return lines, [(s, (starts + [len(lines)])[k + 1]) for k, s in enumerate(starts)]


def dump_case(rng, base):
    """(what, file bytes, allowed exit codes) of one changed dump."""
    lines, frames = dump_frames(base)
    fs, fe = rng.choice(frames)
    ls, le = frames[-1]  # the frame read: the last
    kind = rng.choice(["truncate", "flip", "crlf", "zeros", "long_value", "long_line", "timestep",
                       "natoms", "box_line", "box_head", "atoms_head", "coord", "overlap",
                       "dup_id", "fast"])
    if kind == "truncate":
        n = rng.randrange(len(base))
        return f"truncated at byte {n}", base[:n].encode(), ANY
    if kind == "flip":
        data = bytearray(base.encode())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return "bytes flipped", bytes(data), ANY
    if kind == "crlf":
        return "CRLF line ends", base.replace("\n", "\r\n").encode(), ACCEPT
    if kind in ("zeros", "long_value"):
        # a value line as long as its item line or far longer: the same number, leading zeros
        item = rng.choice(["ITEM: TIMESTEP", "ITEM: NUMBER OF ATOMS"])
        at = [i for i in range(len(lines) - 1) if lines[i] == item]
        i = rng.choice(at) + 1
        width = rng.choice([7, 16, 64]) if kind == "zeros" else rng.choice([5000, 200000])
        lines[i] = lines[i].rjust(width, "0")
        return f"line {i + 1} zero-padded to {width}", "\n".join(lines).encode(), ACCEPT
    if kind == "long_line":
        i = rng.randrange(ls + 9, le - 1)  # an atom line of the frame read: extra columns
        lines[i] += " 1" * rng.choice([1000, 100000])
        return f"line {i + 1} with extra columns", "\n".join(lines).encode(), ANY
    if kind == "timestep":
        v = rng.choice(BAD_TIMESTEP)
        lines[fs + 1] = v
        return f"TIMESTEP {v!r} on line {fs + 2}", "\n".join(lines).encode(), REFUSE
    if kind == "natoms":
        v = rng.choice(BAD_NATOMS)
        lines[fs + 3] = v
        return f"NUMBER OF ATOMS {v!r} on line {fs + 4}", "\n".join(lines).encode(), REFUSE
    if kind == "box_line":
        v = rng.choice(BAD_BOX_LINE)
        i = fs + 5 + rng.randrange(3)
        lines[i] = v
        return f"box bounds {v!r} on line {i + 1}", "\n".join(lines).encode(), REFUSE
    if kind == "box_head":
        v = rng.choice(BAD_BOX_HEAD)
        lines[fs + 4] = v
        return f"{v!r} on line {fs + 5}", "\n".join(lines).encode(), REFUSE
    if kind == "atoms_head":
        v = rng.choice(BAD_ATOMS_HEAD)
        lines[ls + 8] = v  # the columns are read from the frame read
        return f"{v!r} on line {ls + 9}", "\n".join(lines).encode(), REFUSE
    atom = rng.randrange(ls + 9, le - 1)
    cols = lines[atom].split()
    if kind == "coord":
        v = rng.choice(BAD_COORD)
        cols[3 + rng.randrange(3)] = v
        lines[atom] = " ".join(cols)
        return f"coordinate {v!r} on line {atom + 1}", "\n".join(lines).encode(), REFUSE
    other = rng.choice([i for i in range(ls + 9, le - 1) if i != atom])
    ocols = lines[other].split()
    if kind == "overlap":  # on top of another atom (or 0.1 away)
        cols[3:6] = ocols[3:5] + [str(float(ocols[5]) + rng.choice([0.0, 0.1]))]
        lines[atom] = " ".join(cols)
        return f"line {atom + 1} on top of line {other + 1}", "\n".join(lines).encode(), REFUSE
    if kind == "dup_id":
        cols[0] = ocols[0]
        lines[atom] = " ".join(cols)
        return f"line {atom + 1} with the id of line {other + 1}", "\n".join(lines).encode(), REFUSE
    cols[6 + rng.randrange(3)] = rng.choice(["1e30", "-1e20", "1e5"])  # "fast": blows up
    lines[atom] = " ".join(cols)
    return f"a velocity of {cols[6:9]} on line {atom + 1}", "\n".join(lines).encode(), FAIL


# ---- checkpoints ----------------------------------------------------------------------------

HEADER = 40  # magic, version, byte order, payload size, payload FNV, header FNV
SETTINGS = 232
# md_ckpt_settings_t (md/output/checkpoint.h): name, offset, format
FIELDS = [("natoms", 0, "q"), ("step", 8, "q"), ("last_rebuild", 16, "q"), ("nranks", 24, "q"),
          ("grid0", 32, "q"), ("grid1", 40, "q"), ("grid2", 48, "q"), ("real_size", 56, "q"),
          ("ensemble", 64, "q"), ("shift", 72, "q"), ("tail", 80, "q"),
          ("rebuild_every", 88, "q"), ("rebuild_check", 96, "q"), ("source", 104, "q"),
          ("seed", 112, "Q"), ("box0", 120, "d"), ("box1", 128, "d"), ("box2", 136, "d"),
          ("fs_per_step", 144, "d"), ("cutoff", 152, "d"), ("skin", 160, "d"), ("dt", 168, "d"),
          ("tau", 176, "d"), ("temp", 184, "d"), ("density", 192, "d")]
HOSTILE_INT = [0, -1, 1, 2, 3, 7, 2**31, 2**31 - 1, 2**53 + 1, 2**62, -2**63, 2**63 - 1, 20, 40]
HOSTILE_REAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-320, 1e308, -1.0,
                1e30, 1e6, 2e6, 0.5, 1e-9, 1e9]
HOSTILE_FLOAT = [v for v in HOSTILE_REAL if not abs(v) < float("inf") or abs(v) < 3e38] + [1e-45]


def seal(payload, header):
    """The file of a payload with the header's magic, version and byte order, checksums made."""
    head = header[:16] + struct.pack("=QQ", len(payload), fnv1a64(payload))
    return head + struct.pack("=Q", fnv1a64(head)) + payload


def checkpoint_case(rng, base):
    """(what, file bytes, allowed exit codes) of one changed checkpoint (restarted to step 40)."""
    header, payload = base[:HEADER], bytearray(base[HEADER:])
    kind = rng.choice(["truncate", "flip", "field", "field", "atom", "atom"])
    if kind == "truncate":
        n = rng.randrange(len(base))
        return f"truncated at byte {n}", base[:n], REFUSE
    if kind == "flip":  # checksums no longer match
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= rng.randrange(1, 256)
        return "bytes flipped", bytes(data), REFUSE
    if kind == "field":
        name, off, fmt = rng.choice(FIELDS)
        v = rng.choice(HOSTILE_REAL if fmt == "d" else HOSTILE_INT)
        if fmt == "Q":
            v &= 0xFFFFFFFFFFFFFFFF
        payload[off:off + 8] = struct.pack("=" + fmt, v)
        return f"re-sealed with {name} = {v}", seal(bytes(payload), header), ANY
    # a real of an atom record of the first rank's block (rank, n, n ids, then 9 n reals: the
    # positions, velocities and forces)
    real_size = struct.unpack_from("=q", payload, 56)[0]
    n = struct.unpack_from("=q", payload, SETTINGS + 8)[0]
    at = SETTINGS + 16 + 4 * n + real_size * rng.randrange(9 * n)
    v = rng.choice(HOSTILE_FLOAT if real_size == 4 else HOSTILE_REAL)
    payload[at:at + real_size] = struct.pack("=f" if real_size == 4 else "=d", v)
    return f"re-sealed with {v} at byte {HEADER + at}", seal(bytes(payload), header), ANY


# ---- halox-bench scaling inputs -------------------------------------------------------------

def scaling_base():
    recs = ['{"bench":"halo","transport":"threads","ranks":2,"atoms":2000,"ms_per_step":1}']
    for tr in ("mpi", "threads"):
        for ranks, ms in ((1, 4.0), (2, 2.2), (4, 1.3), (2, 2.4)):
            recs.append(f'{{"bench":"md","transport":"{tr}","device":"cpu","graph":false,'
                        f'"atoms":1500,"ranks":{ranks},"ms_per_step":{ms}}}')
    return "\n".join(recs) + "\n"


HOSTILE_JSON = ["1e300", "-1", "0", "nan", "NaN", "inf", "-inf", "2147483648", "1e-320", "1.5",
                '"x"', "", "-0", "9e18", "4294967296", "1e19", "-2147483649", "null"]


def scaling_case(rng, base, tmp):
    """(what, file bytes or a path, allowed exit codes) of one scaling input."""
    kind = rng.choice(["field", "field", "field", "truncate", "flip", "long", "many", "special"])
    if kind == "field":
        lines = base.split("\n")
        i = rng.randrange(1, len(lines) - 1)
        key = rng.choice(["atoms", "ranks", "ms_per_step"])
        v = rng.choice(HOSTILE_JSON)
        lines[i] = re.sub(rf'"{key}":[^,}}]*', f'"{key}":{v}', lines[i])
        return f"line {i + 1} with {key} {v!r}", "\n".join(lines).encode(), ANY
    if kind == "truncate":
        n = rng.randrange(len(base))
        return f"truncated at byte {n}", base[:n].encode(), ANY
    if kind == "flip":
        data = bytearray(base.encode())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return "bytes flipped", bytes(data), ANY
    if kind == "long":  # a record with a field of megabytes, no end of line
        junk = "x" * rng.choice([100000, 3000000])
        return "a line of megabytes", (base + '{"bench":"md","transport":"' + junk).encode(), ANY
    if kind == "many":  # more records than the tool keeps: refused, not cut short
        rec = base.split("\n")[1] + "\n"
        return "4097 md records", (rec * 4097).encode(), REFUSE
    path = rng.choice(["/dev/zero", "/dev/urandom", "{tmp}/fifo", "{tmp}", "{tmp}/sparse"])
    return path, path.replace("{tmp}", tmp), REFUSE


# ---- running --------------------------------------------------------------------------------

def main():
    tools = sys.argv[1]
    n_cases, seed, limit, _ = options(sys.argv[2:], 100, 20.0)
    md, bench = os.path.join(tools, "halox-md"), os.path.join(tools, "halox-bench")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOX_")}
    env["HALOX_DEVICE"] = "cpu"
    tmp = tempfile.mkdtemp(prefix="halox-fuzz-readers-")
    os.mkfifo(os.path.join(tmp, "fifo"))
    with open(os.path.join(tmp, "sparse"), "wb") as f:  # a hole: no disk used
        f.truncate(65 << 20)
    # the valid files: a dump of 3 frames and a checkpoint at step 20, by halox-md itself
    dump, chk = os.path.join(tmp, "base.lammpstrj"), os.path.join(tmp, "base.chk")
    quiet = ["--cells", "3,3,3", "--steps", "20", "--no-progress"]
    for args in (["--traj", dump, "--traj-every", "10"], ["--checkpoint", chk]):
        rc, _, text, _ = run([md] + quiet + args, env, 60)
        if rc != 0:
            print(f"cannot write the base files: exit {rc}\n{text}")
            return 1
    with open(dump) as f:
        base_dump = f.read()
    with open(chk, "rb") as f:
        base_chk = f.read()
    base_scaling = scaling_base()

    rng = random.Random(seed)
    failures, counts, seconds, t_start = [], {}, {}, time.monotonic()
    # the valid ones first: read as they are (a zero-step restart included)
    plan = [("dump", "as written", base_dump.encode(), ACCEPT),
            ("checkpoint", "as written", base_chk, ACCEPT),
            ("restart0", "as written, no step left", base_chk, ACCEPT),
            ("scaling", "as written", base_scaling.encode(), ACCEPT)]
    for _ in range(n_cases):
        surface = rng.choice(["dump", "dump", "checkpoint", "scaling"])
        if surface == "dump":
            plan.append(("dump",) + dump_case(rng, base_dump))
        elif surface == "checkpoint":
            plan.append(("checkpoint",) + checkpoint_case(rng, base_chk))
        else:
            plan.append(("scaling",) + scaling_case(rng, base_scaling, tmp))
    for k, (surface, what, data, allowed) in enumerate(plan):
        if isinstance(data, bytes):
            path = os.path.join(tmp, f"case{k}")
            with open(path, "wb") as f:
                f.write(data)
        else:
            path = data
        if surface == "dump":
            cmd = [md, "--read", path, "--steps", "0", "--no-progress"]
        elif surface in ("checkpoint", "restart0"):
            steps = "20" if surface == "restart0" else "40"
            cmd = [md, "--restart", path, "--steps", steps, "--no-progress"]
        else:
            cmd = [bench, "scaling", path]
        rc, secs, text, err = run(cmd, env, limit)
        why = None
        if rc == "hang" or isinstance(rc, tuple):
            why = f"hang: still running {limit:.0f} s after start"
        elif rc < 0:
            why = f"crashed: signal {-rc} ({signal.Signals(-rc).name})"
        elif SANITIZER.search(text):
            why = "sanitizer report"
        elif rc not in allowed:
            why = f"exit {rc}, want {' or '.join(map(str, allowed))}"
        elif rc != 0 and not err.strip():
            why = f"exit {rc} without a message on stderr"
        counts[(surface, rc if not why else "FAIL")] = \
            counts.get((surface, rc if not why else "FAIL"), 0) + 1
        seconds[surface] = seconds.get(surface, 0.0) + secs
        if why:
            tail = "\n      ".join(text.strip().splitlines()[-4:])
            failures.append(f"{why}: {surface}, {what}\n    {' '.join(cmd)}\n      {tail}")
        elif isinstance(data, bytes):
            os.remove(path)
    summary = ", ".join(f"{s} exit {r}: {n}" for (s, r), n in sorted(counts.items(), key=str))
    spent = ", ".join(f"{s} {t:.1f} s" for s, t in sorted(seconds.items()))
    print(f"fuzz_readers: {len(plan)} cases (seed {seed}) in {time.monotonic() - t_start:.0f} s "
          f"({spent}): {summary}")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(plan) - len(failures)} passed, {len(failures)} failed"
          + (f" (files kept in {tmp})" if failures else ""))
    if not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
