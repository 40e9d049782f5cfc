#!/usr/bin/env python3
"""The environment tables cannot drift: every HALOX_ variable the sources read is in the tables
that halox-md --help-env prints (the library's, src/core/env.c, and the engine's,
md/engine/env.c), and every variable of them is in docs/ENVIRONMENT.md.

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
    pat = re.compile(r'(?:getenv|(?:halox|md)__env_(?:string|number|int|flag))\("((?:HALOX|NVSHMEM)_[A-Z0-9_]+)"[,)]')
    for sub in ("src", "md", "tools"):
        for f in (src / sub).rglob("*.[ch]"):
            read |= set(pat.findall(f.read_text(errors="replace")))
    for sub in ("src", "md"):
        for f in (src / sub).rglob("*.cu"):
            read |= set(pat.findall(f.read_text(errors="replace")))
    readme = (src / "docs" / "ENVIRONMENT.md").read_text()
    bad = [f"{v}: read by the sources but in neither table (src/core/env.c, md/engine/env.c)"
           for v in sorted(read - table)]
    bad += [f"{v}: in the table but not in docs/ENVIRONMENT.md" for v in sorted(table) if v not in readme]
    print(f"{len(table)} variables in the table, {len(read)} read by the sources")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
