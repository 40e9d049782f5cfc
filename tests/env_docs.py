#!/usr/bin/env python3
"""The environment table cannot drift: every HALOX_ variable the sources read is in the table
that the tools print (halox-md --help-env), and every variable of the table is in README.md.

    env_docs.py HALOX_MD SOURCE_DIR
"""
import pathlib
import re
import subprocess
import sys


def main():
    tool, src = sys.argv[1], pathlib.Path(sys.argv[2])
    out = subprocess.run([tool, "--help-env"], capture_output=True, text=True, check=True).stdout
    table = {m.group(1) for m in re.finditer(r"^([A-Z][A-Z0-9_]+)\s", out, re.M)}
    read = set()
    pat = re.compile(r'(?:getenv|halox__env_(?:string|number|int|flag))\("((?:HALOX|NVSHMEM)_[A-Z0-9_]+)"[,)]')
    for sub in ("src", "tools"):
        for f in (src / sub).rglob("*.[ch]"):
            read |= set(pat.findall(f.read_text(errors="replace")))
    for f in (src / "src").rglob("*.cu"):
        read |= set(pat.findall(f.read_text(errors="replace")))
    readme = (src / "README.md").read_text()
    bad = [f"{v}: read by the sources but not in the table (src/core/env.c)"
           for v in sorted(read - table)]
    bad += [f"{v}: in the table but not in README.md" for v in sorted(table) if v not in readme]
    print(f"{len(table)} variables in the table, {len(read)} read by the sources")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
