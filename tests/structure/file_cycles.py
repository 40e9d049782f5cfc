#!/usr/bin/env python3
"""Circles of files: source files that call each other, directly or around a loop, found from
the object files of a build (what each defines and what it calls, by `nm`). The layering rule of
the project is that every folder reads top-down: a file calls only files "below" it, so the
graph of calls between files has no cycle.

    file_cycles.py BUILD_DIR [--list]

Exit status 0 when there is no cycle, 1 with the cycles printed (each once, as a loop of source
files and one symbol per edge), 2 on bad usage. --list prints every edge as well. Objects of
tests/ and bench/ are left out: they call the library, which never calls them."""
import os
import subprocess
import sys


def source_root(build):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def objects(build):
    src_root = source_root(build)
    for root, _dirs, files in os.walk(build):
        for f in files:
            obj = os.path.join(root, f)
            if not f.endswith(".o") or "cmake_device_link" in f:
                continue
            src = source_name(obj)
            if src.startswith(("tests/", "bench/", "_deps")):
                continue
            # an object left behind by a file since removed or renamed is not part of the tree
            if src_root and not os.path.exists(os.path.join(src_root, src)):
                continue
            yield obj


def source_name(obj):
    # build/src/CMakeFiles/halox.dir/transports/mpi.c.o -> src/transports/host/mpi.c
    parts = obj.split(os.sep)
    for i, p in enumerate(parts):
        if p.endswith(".dir"):
            top = parts[i - 2] if i >= 2 else ""
            return os.path.join(top, *parts[i + 1:])[: -len(".o")]
    return obj


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRV" or kind in "W":  # global definitions (upper case)
            defined.add(name)
    return defined, used


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print(__doc__, file=sys.stderr)
        return 2
    owner, uses = {}, {}
    for obj in objects(args[0]):
        src = source_name(obj)
        d, u = symbols(obj)
        for s in d:
            owner.setdefault(s, src)
        uses[src] = uses.get(src, set()) | u
    edges = {}
    for src, used in uses.items():
        for s in used:
            dst = owner.get(s)
            if dst and dst != src:
                edges.setdefault(src, {}).setdefault(dst, s)
    if "--list" in sys.argv:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b} ({edges[a][b]})")
    # strongly connected components (Tarjan, iterative)
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    nodes = sorted(set(uses) | {b for a in edges for b in edges[a]})

    def strong(v0):
        work = [(v0, iter(sorted(edges.get(v0, {}))))]
        index[v0] = low[v0] = counter[0]
        counter[0] += 1
        stack.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))

    for v in nodes:
        if v not in index:
            strong(v)
    for comp in comps:
        print("circle of files:")
        for a in comp:
            for b in sorted(edges.get(a, {})):
                if b in comp:
                    print(f"  {a} -> {b} ({edges[a][b]})")
    print(f"{len(nodes)} files, {sum(len(v) for v in edges.values())} calls between files, "
          f"{len(comps)} circle(s)")
    return 1 if comps else 0


if __name__ == "__main__":
    sys.exit(main())
