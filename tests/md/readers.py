#!/usr/bin/env python3
"""halox-md's trajectories opened by the readers MD users use: ASE and MDAnalysis
(and OVITO where its wheel is installed), checked against what halox-md itself reports.

A short double-precision run of 864 fcc atoms (6x6x6 cells), frames every 5 steps up to step
20, written once as extended XYZ and once as a LAMMPS text dump (under both of its names). Each
reader must give:
  - the 5 frames, their steps and times (step x dt);
  - 864 atoms; frame 0 exactly at the fcc sites (lattice constant (4 / 0.8442)^(1/3), the
    basis and the id order of md/systems/system_fcc.c), every frame equal to the numbers in the file;
  - the box of the run's JSON and periodicity in x, y and z;
  - velocities equal to the file's, whose kinetic energy (m = 1) is the JSON's temperature and
    KE per atom at that step;
  - ASE: species X of mass 1; OVITO: its Velocity property (not a plain column).
Then the files go back into halox-md: --read of the dump (its last frame, velocities from the
file, said so in the banner) and of an extended-XYZ file that ASE writes (momenta) start from
the run's last state: the step-0 energies equal the run's step 20.

Usage: readers.py HALOX_MD. Exit 77 (skipped) when ase or MDAnalysis cannot be imported
(python3 -m pip install ase==3.29.0 MDAnalysis==2.11.0); OVITO's checks are skipped, with a
line saying so, when `import ovito` fails (python3 -m pip install ovito==3.17.2).
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

SKIP = 77
CELLS, DENSITY, STEPS, EVERY, DT = 6, 0.8442, 20, 5, 0.005
N = 4 * CELLS**3
FRAMES = STEPS // EVERY + 1

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(b))


def run(halox, args):
    p = subprocess.run([halox] + args, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HALOX_DEVICE="cpu"))
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"halox-md {' '.join(args)}: exit {p.returncode}")
    return p.stdout


def own_xyz(path):
    """The frames of halox-md's extended XYZ as the text says: (comment keys, positions,
    velocities)."""
    frames = []
    with open(path) as f:
        lines = f.read().splitlines()
    k = 0
    while k < len(lines):
        n = int(lines[k])
        head = lines[k + 1]
        keys = dict(w.split("=", 1) for w in head.replace('"T T T"', "TTT").split()
                    if "=" in w and not w.startswith("Lattice"))
        rows = [ln.split() for ln in lines[k + 2:k + 2 + n]]
        frames.append((keys, [[float(c) for c in r[1:4]] for r in rows],
                       [[float(c) for c in r[4:7]] for r in rows],
                       [[float(c) for c in r[7:10]] for r in rows], [r[0] for r in rows]))
        k += 2 + n
    return frames


def own_dump(path):
    """The frames of halox-md's LAMMPS dump: (step, box, ids, positions, velocities)."""
    frames = []
    with open(path) as f:
        lines = f.read().splitlines()
    k = 0
    while k < len(lines):
        assert lines[k] == "ITEM: TIMESTEP"
        step = int(lines[k + 1])
        n = int(lines[k + 3])
        box = [float(lines[k + 5 + d].split()[1]) for d in range(3)]
        assert lines[k + 8] == "ITEM: ATOMS id type mass x y z vx vy vz", lines[k + 8]
        rows = [ln.split() for ln in lines[k + 9:k + 9 + n]]
        frames.append((step, box, [int(r[0]) for r in rows],
                       [[float(c) for c in r[3:6]] for r in rows],
                       [[float(c) for c in r[6:9]] for r in rows]))
        k += 9 + n
    return frames


def fcc_sites():
    """Positions of the fcc lattice in halox-md's id order (md/systems/system_fcc.c, md__fcc)."""
    a = (4.0 / DENSITY) ** (1.0 / 3.0)
    basis = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    return [[(ix + b[0]) * a, (iy + b[1]) * a, (iz + b[2]) * a]
            for iz in range(CELLS) for iy in range(CELLS) for ix in range(CELLS) for b in basis]


def max_diff(a, b):
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def twoke(v):
    return sum(c * c for r in v for c in r)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    halox = sys.argv[1]
    try:
        import numpy as np
        import ase
        import ase.io
        import MDAnalysis as mda
    except ImportError as e:
        print(f"skipped: {e} (python3 -m pip install ase==3.29.0 MDAnalysis==2.11.0)")
        return SKIP
    try:
        import ovito
        from ovito.io import import_file
    except Exception as e:  # not installed, or a library it needs is missing
        ovito = None
        print(f"OVITO checks skipped: import ovito failed: {e}")
    print(f"readers: ase {ase.__version__}, MDAnalysis {mda.__version__}, "
          f"ovito {ovito.version_string if ovito else '(not importable)'}")

    tmp = tempfile.mkdtemp(prefix="halox-readers-")
    common = ["--cells", f"{CELLS},{CELLS},{CELLS}", "--density", str(DENSITY), "--steps",
              str(STEPS), "--thermo-every", str(EVERY), "--traj-every", str(EVERY), "--dt",
              str(DT), "--precision", "double", "--quiet",
              # lists rebuilt often enough that no pair is missed: a run from the last frame
              # then has the same energies as the run had there
              "--rebuild-every", "5"]
    xyz = os.path.join(tmp, "run.xyz")
    dump = os.path.join(tmp, "run.lammpsdump")  # the name MDAnalysis recognises by itself
    trj = os.path.join(tmp, "run.lammpstrj")  # VMD's name
    js = os.path.join(tmp, "run.json")
    run(halox, common + ["--traj", xyz, "--json", js])
    run(halox, common + ["--traj", dump])
    run(halox, common + ["--traj", trj])
    with open(js) as f:
        report = json.load(f)
    box = report["settings"]["box"]
    thermo = {r["step"]: r for r in report["thermo"]}
    steps = [EVERY * k for k in range(FRAMES)]
    check(sorted(thermo) == steps, f"JSON thermo steps {sorted(thermo)}")
    L = (4.0 / DENSITY) ** (1.0 / 3.0) * CELLS
    check(all(close(b, L, 1e-13) for b in box), f"JSON box {box} vs {L}")

    # what halox-md wrote, read by this script: the reference for the readers
    mine = own_xyz(xyz)
    dmine = own_dump(dump)
    check(len(mine) == FRAMES and len(dmine) == FRAMES, "own parse: frame counts")
    check(open(dump).read() == open(trj).read(), ".lammpsdump and .lammpstrj: the same dump")
    sites = fcc_sites()
    check(max_diff(mine[0][1], sites) < 1e-12, "frame 0: the fcc sites")
    for k in range(FRAMES):
        keys, x, v, p, species = mine[k]
        step, dbox, ids, dx, dv = dmine[k]
        check(int(keys["Step"]) == steps[k] and step == steps[k], f"frame {k}: step")
        check(close(float(keys["Time"]), steps[k] * DT, 1e-12), f"frame {k}: Time")
        check(dx == x and dv == v and p == v, f"frame {k}: dump, XYZ velo and momenta agree")
        check(ids == list(range(1, N + 1)) and set(species) == {"X"}, f"frame {k}: ids, X")
        check(all(0 <= c < L for r in x for c in r), f"frame {k}: positions wrapped")
        t = thermo[steps[k]]
        check(close(twoke(v) / (3 * N - 3), t["temp"], 1e-12),
              f"frame {k}: sum v^2 / (3N-3) = {twoke(v) / (3 * N - 3)} vs JSON temp {t['temp']}")
        check(close(0.5 * twoke(v) / N, t["ke"], 1e-12), f"frame {k}: KE vs JSON ke")

    # ASE, extended XYZ: species X (mass 1), cell, pbc, Time, velocities from momenta
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a reader's complaint is a failure here
        frames = ase.io.read(xyz, index=":")
    check(len(frames) == FRAMES, f"ASE: {len(frames)} frames")
    for k, at in enumerate(frames):
        check(len(at) == N, f"ASE frame {k}: {len(at)} atoms")
        check(set(at.get_chemical_symbols()) == {"X"} and np.all(at.get_masses() == 1.0),
              f"ASE frame {k}: species X of mass 1")
        check(np.allclose(at.cell.array, np.diag(box), rtol=0, atol=1e-12) and all(at.pbc),
              f"ASE frame {k}: cell {at.cell.array.diagonal()}, pbc {at.pbc}")
        check(close(at.info["Time"], steps[k] * DT, 1e-12) and at.info["Step"] == steps[k],
              f"ASE frame {k}: info {at.info}")
        check(np.array_equal(at.get_positions(), np.array(mine[k][1])), f"ASE frame {k}: x")
        vel = at.get_velocities()
        check(vel is not None and np.array_equal(vel, np.array(mine[k][2])),
              f"ASE frame {k}: velocities")
        check(close(2 * at.get_kinetic_energy() / (3 * N - 3), thermo[steps[k]]["temp"], 1e-12),
              f"ASE frame {k}: kinetic energy vs JSON temp")
    check(np.max(np.abs(frames[0].get_positions() - np.array(sites))) < 1e-12,
          "ASE frame 0: the fcc sites")

    # MDAnalysis, LAMMPS dump: by its extension (.lammpsdump), and .lammpstrj named
    for path, kw in ((dump, {}), (trj, {"format": "LAMMPSDUMP"})):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            u = mda.Universe(path, dt=DT, **kw)
        name = os.path.basename(path)
        check(len(u.atoms) == N and u.trajectory.n_frames == FRAMES,
              f"MDAnalysis {name}: {len(u.atoms)} atoms, {u.trajectory.n_frames} frames")
        check(np.all(u.atoms.masses == 1.0), f"MDAnalysis {name}: masses")
        for k, ts in enumerate(u.trajectory):
            check(ts.dimensions is not None and
                  np.allclose(ts.dimensions, box + [90, 90, 90], rtol=1e-6, atol=0),
                  f"MDAnalysis {name} frame {k}: dimensions {ts.dimensions}")
            check(ts.data["step"] == steps[k] and close(ts.time, steps[k] * DT, 1e-9),
                  f"MDAnalysis {name} frame {k}: step {ts.data['step']}, time {ts.time}")
            # MDAnalysis keeps coordinates in single precision
            check(np.max(np.abs(ts.positions - np.array(mine[k][1]))) < 1e-5 * L,
                  f"MDAnalysis {name} frame {k}: positions")
            check(ts.has_velocities and
                  np.max(np.abs(ts.velocities - np.array(mine[k][2]))) < 1e-6 * 5,
                  f"MDAnalysis {name} frame {k}: velocities")
            t = float(np.sum(ts.velocities.astype(np.float64) ** 2)) / (3 * N - 3)
            check(close(t, thermo[steps[k]]["temp"], 1e-6),
                  f"MDAnalysis {name} frame {k}: temperature {t}")
        u.trajectory[0]
        check(np.max(np.abs(u.atoms.positions - np.array(sites))) < 1e-5 * L,
              f"MDAnalysis {name} frame 0: the fcc sites")

    # OVITO: both formats, with Velocity as its own property
    if ovito:
        for path in (xyz, dump):
            name = os.path.basename(path)
            pipe = import_file(path)
            check(pipe.num_frames == FRAMES, f"OVITO {name}: {pipe.num_frames} frames")
            for k in range(FRAMES):
                d = pipe.compute(k)
                check(d.particles.count == N, f"OVITO {name} frame {k}: atoms")
                check(np.allclose(np.array(d.cell[...])[:, :3], np.diag(box), atol=1e-12) and
                      all(d.cell.pbc), f"OVITO {name} frame {k}: cell, pbc")
                # OVITO's number parser is off by an ulp or so: 1e-12, not equality
                check("Velocity" in d.particles.keys() and
                      max_diff(np.array(d.particles["Velocity"]), mine[k][2]) < 1e-12,
                      f"OVITO {name} frame {k}: Velocity {list(d.particles.keys())}")
                check(max_diff(np.array(d.particles.positions), mine[k][1]) < 1e-12,
                      f"OVITO {name} frame {k}: positions")
                a = d.attributes
                got = a.get("Step", a.get("Timestep"))
                check(got == steps[k], f"OVITO {name} frame {k}: step {got}")
                if path == xyz:
                    check(close(a["Time"], steps[k] * DT, 1e-12), f"OVITO {name}: Time")

    # back into halox-md: the dump's last frame (the default), its velocities
    out = run(halox, ["--read", dump, "--steps", "0", "--precision", "double", "--json",
                      os.path.join(tmp, "back.json")])
    check("frame 4 = the last of 5" in out and "step 20" in out, "banner: the frame read")
    check("velocities: the file's" in out, "banner: velocities from the file")
    with open(os.path.join(tmp, "back.json")) as f:
        back = json.load(f)["thermo"][0]
    last = thermo[STEPS]
    for key in ("temp", "pe", "ke", "etotal", "press"):
        check(close(back[key], last[key], 1e-10),
              f"--read dump: step-0 {key} {back[key]} vs the run's step {STEPS} {last[key]}")
    # ... and an extended-XYZ file ASE writes (velocities as momenta, m = 1), frame 2
    at = frames[2]
    fresh = ase.Atoms("X%d" % N, positions=at.get_positions(), cell=at.cell, pbc=True)
    fresh.set_velocities(at.get_velocities())
    axyz = os.path.join(tmp, "ase.extxyz")
    ase.io.write(axyz, fresh, format="extxyz")
    out = run(halox, ["--read", axyz, "--steps", "0", "--precision", "double", "--json",
                      os.path.join(tmp, "ase.json")])
    check("velocities: the file's" in out, "ASE's file: velocities from momenta")
    with open(os.path.join(tmp, "ase.json")) as f:
        back = json.load(f)["thermo"][0]
    for key in ("temp", "pe", "press"):  # ASE writes 8 decimals
        check(close(back[key], thermo[2 * EVERY][key], 1e-6),
              f"--read ASE's file: {key} {back[key]} vs the run's step 10 {thermo[10][key]}")

    for name in os.listdir(tmp):
        os.remove(os.path.join(tmp, name))
    os.rmdir(tmp)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print(f"all checks passed: ASE, MDAnalysis{', OVITO' if ovito else ''} read {FRAMES} frames "
          f"of {N} atoms with box and velocities")
    return 0


if __name__ == "__main__":
    sys.exit(main())
