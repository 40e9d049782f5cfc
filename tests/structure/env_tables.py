#!/usr/bin/env python3
"""The environment tables as halox-md --help-env prints them, checked against the sources:

- the library's table has at most 12 rows;
- every row of every table has a name, a type, a default and a meaning;
- every read of a HALOX_ (or NVSHMEM_) variable by name in src/, md/, tools/ and bench/ names a
  variable of the table its reader may read: the library's readers (halox_env_string, _number,
  _int, _flag) and getenv in src/ the library's, in md/ and tools/ the library's or the engine's
  (the tools' own go through tool_env_string), in bench/ any; tool_env_string the tools';
- every row is read somewhere (a row nothing reads documents a variable that does nothing).

    env_tables.py HALOX_MD SOURCE_DIR [--plant DIR FILE]...

--plant scans FILE as if it were in DIR (src, md, tools or bench): the test of this test plants
reads it must refuse.
"""
import pathlib
import re
import subprocess
import sys

LIBRARY_MAX = 12
DIRS = ("src", "md", "tools", "bench")
EXTS = {".c", ".h", ".cu", ".cuh", ".cpp"}
NAME = r'"((?:HALOX|NVSHMEM)_[A-Z0-9_]+)"'
# reader -> the pattern of its reads and, per directory, the tables its names must come from
ANY_BUT_TOOLS = {"src": {"library"}, "md": {"engine", "library"}, "tools": {"engine", "library"},
                 "bench": {"engine", "library", "tools"}}
READERS = [
    ("halox_env_*", re.compile(r"\bhalox_env_(?:string|number|int|flag)\(\s*" + NAME),
     ANY_BUT_TOOLS),
    ("tool_env_string", re.compile(r"\btool_env_string\(\s*" + NAME),
     dict.fromkeys(DIRS, {"tools"})),
    ("getenv", re.compile(r"\bgetenv\(\s*" + NAME), ANY_BUT_TOOLS),
]


def whose(table):
    """The table's owner as a possessive: "library's", "tools'"."""
    return table + ("'" if table.endswith("s") else "'s")


def parse_tables(out):
    """{table: [(name, type, default, meaning)]} from --help-env: a header line, then per table a
    title ("the library's (libhalox):") and its rows in the header's columns."""
    lines = out.splitlines()
    head = lines[0]
    cols = [0, head.index("type"), head.index("default"), head.index("meaning")]
    tables, errors, current = {}, [], None
    for line in lines[1:]:
        if not line.strip():
            continue
        title = re.match(r"^the (\w+)'s? .*:$", line)
        if title:
            current = title.group(1)
            tables.setdefault(current, [])
            continue
        if current is None:
            errors.append(f"--help-env: a row before any table's title: {line!r}")
            continue
        cells = [line[a:b].strip() for a, b in zip(cols, cols[1:] + [len(line)])]
        tables[current].append(tuple(cells))
    return tables, errors


def check_tables(tables):
    errors = []
    for want in ("library", "tools"):
        if want not in tables:
            errors.append(f"--help-env prints no {whose(want)} table")
    lib = tables.get("library", [])
    if len(lib) > LIBRARY_MAX:
        errors.append(f"the library's table has {len(lib)} rows, at most {LIBRARY_MAX} allowed: "
                      f"{', '.join(r[0] for r in lib)}")
    seen = {}
    for table, rows in tables.items():
        for name, typ, default, meaning in rows:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]+", name):
                errors.append(f"the {whose(table)} table: a row without a variable's name: "
                              f"{name!r}")
            for what, cell in (("type", typ), ("default", default), ("meaning", meaning)):
                if not cell:
                    errors.append(f"the {whose(table)} table: {name} has no {what}")
            if name in seen:
                errors.append(f"{name} is in the {whose(seen[name])} table and the {whose(table)}")
            seen[name] = table
    return errors


def sources(root, plants):
    for d in DIRS:
        for f in sorted((root / d).rglob("*")):
            rel = f.relative_to(root)
            if f.suffix in EXTS and f.is_file() and "results" not in rel.parts:
                yield d, rel, f.read_text(errors="replace")
    for d, f in plants:
        f = pathlib.Path(f)
        rel = f.relative_to(root) if f.is_relative_to(root) else f
        yield d, rel, f.read_text(errors="replace")


def check_reads(tables, files):
    where = {name: table for table, rows in tables.items() for name, *_ in rows}
    errors, read = [], set()
    for d, path, text in files:
        for reader, pat, allowed in READERS:
            for m in pat.finditer(text):
                name, line = m.group(1), text.count("\n", 0, m.start()) + 1
                read.add(name)
                ok = allowed[d]
                if where.get(name) not in ok:
                    has = f"the {whose(where[name])}" if name in where else "no"
                    may = " or the ".join(whose(t) for t in sorted(ok))
                    errors.append(f"{path}:{line}: {name} read by {reader}, which in {d}/ may read "
                                  f"only the {may} table; it is in {has} table")
    for name, table in sorted(where.items()):
        if name not in read:
            errors.append(f"{name}: in the {whose(table)} table but read nowhere in "
                          f"{', '.join(d + '/' for d in DIRS)}")
    return errors


def main():
    args = sys.argv[1:]
    plants = []
    while "--plant" in args:
        k = args.index("--plant")
        plants.append((args[k + 1], args[k + 2]))
        del args[k:k + 3]
    tool, root = args[0], pathlib.Path(args[1])
    out = subprocess.run([tool, "--help-env"], capture_output=True, text=True, check=True).stdout
    tables, errors = parse_tables(out)
    errors += check_tables(tables)
    errors += check_reads(tables, sources(root, plants))
    print("; ".join(f"{t}: {len(r)} rows" for t, r in tables.items()))
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
