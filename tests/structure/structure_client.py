#!/usr/bin/env python3
"""The engine and the tools are clients of libhalox's public headers (include/halox/), like any
particle code:
- no source under md/ or tools/ includes a header of src/ (core/, transports/, kernels/);
- no folder of src/ is on the include path of the targets given (--include-dirs, CMake's lists);
- the libraries given (--lib, libhalox_md) name no symbol with libhalox's internal prefix
  halox__, neither one they call (nm -u) nor one of their own (the engine's are md__).

    structure_client.py SOURCE_DIR [--nm NM] [--lib LIB]... [--include-dirs DIR;DIR...]...

Exit 0 when every rule holds; 1 with each breach on a line."""
import os
import re
import subprocess
import sys

INTERNAL = re.compile(r'^\s*#\s*include\s*"((?:core|transports|kernels)/[^"]+)"')


def main():
    args = sys.argv[1:]
    root, nm, libs, dirs = args[0], "nm", [], []
    i = 1
    while i < len(args):
        opt, val = args[i], args[i + 1] if i + 1 < len(args) else ""
        if opt == "--nm":
            nm = val
        elif opt == "--lib":
            libs.append(val)
        elif opt == "--include-dirs":
            dirs += [d for d in val.split(";") if d]
        else:
            print(f"structure_client.py: unknown argument {opt}")
            return 2
        i += 2
    problems = []
    for top in ("md", "tools"):
        for base, _dirs, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".cu", ".cuh")):
                    continue
                path = os.path.join(base, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INTERNAL.match(line)
                        if m:
                            problems.append(f"{os.path.relpath(path, root)}:{n}: includes "
                                            f"libhalox's internal {m.group(1)}: use "
                                            "include/halox/ (make what is needed public) or a "
                                            "header of its own")
    src = os.path.realpath(os.path.join(root, "src"))
    for d in dirs:
        real = os.path.realpath(d)
        if real == src or real.startswith(src + os.sep):
            problems.append(f"include path {d}: a folder of src/ (libhalox's internals)")
    for lib in libs:
        out = subprocess.run([nm, "-A", lib], capture_output=True, text=True, check=True).stdout
        names = sorted({line.split()[-1] for line in out.splitlines() if "halox__" in line})
        for name in names:
            problems.append(f"{os.path.basename(lib)}: symbol {name}: libhalox's internal "
                            "prefix (call the public API; the engine's own names are md__)")
    print(f"{len(libs)} libraries, {len(dirs)} include folders checked")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
