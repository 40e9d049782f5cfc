#!/usr/bin/env python3
"""The layout rules of the project, checked on the source tree:
- no transport name is compared outside src/transports/ (callers ask halox_transport_caps());
- no source file of the library, the tools or the benchmarks is longer than 700 lines, and
  tools/halox-md.c stays under 500 (policy belongs in the library);
- no source folder (src/, include/, md/, tools/, bench/, tests/, examples/, scripts/, cmake/ and
  every folder below them, headers included) holds more than 30 files: a larger one is split by
  what its files are about; bench/results/ (records) and tests/data/ (inputs) are not sources;
- the engine's platform table (md/engine/backend.h) has at most 10 entries, each filled by every
  platform;
- every file the README's layout table names exists (the table follows the tree), and every
  folder of src/ and of tests/ is in it;
- no file of src/, include/, md/, tools/, bench/, tests/ or docs/ names a call or an issue by
  its number ("call" or "issue" followed by a number, as words, any case): comments say why in
  the present tense, history lives in git and CHANGELOG.md, and the measured figures with their
  provenance in docs/PERFORMANCE.md (the one file of docs/ exempt); bench/results/ and
  tests/data/ are records and inputs, not prose;
- bench/results/ holds at most 40 files and 1 MB, and a table of docs/PERFORMANCE.md or
  README.md cites each of its records (by its path or its folder's; bench/results/README.md);

    structure.py SOURCE_DIR

Exit 0 when every rule holds; 1 with each breach on a line (file:line: what)."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
TRANSPORTS = ("threads", "mpi", "mpi-staged", "mpi-cuda", "nccl", "nvshmem-stream",
              "nvshmem-pulse", "nvshmem-fused", "hybrid")
NAME = "|".join(re.escape(t) for t in TRANSPORTS)
# strcmp(x, "nccl") or strcmp("nccl", x), with or without '!' and '== 0'
COMPARE = re.compile(r'strn?cmp\s*\([^;]*"(%s)"' % NAME)
LIMIT, TOOL_LIMIT = 700, 500
FOLDER_LIMIT = 30
SOURCE_TOPS = ("src", "include", "md", "tools", "bench", "tests", "examples", "scripts", "cmake")
NOT_SOURCES = (os.path.join("bench", "results"), os.path.join("tests", "data"))
problems = []


def sources(*tops):
    for top in tops:
        for root, _dirs, files in os.walk(os.path.join(ROOT, top)):
            if "/results" in root:
                continue
            for f in sorted(files):
                if f.endswith((".c", ".cu", ".h", ".cuh")):
                    yield os.path.join(root, f)


for path in sources("src", "tools", "bench", "include"):
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    limit = TOOL_LIMIT if rel == os.path.join("tools", "halox-md.c") else LIMIT
    if len(lines) > limit:
        problems.append(f"{rel}: {len(lines)} lines (at most {limit}): split it by concept")
    if rel.startswith(os.path.join("src", "transports") + os.sep):
        continue
    for n, line in enumerate(lines, 1):
        m = COMPARE.search(line)
        if m:
            problems.append(f"{rel}:{n}: compares the transport name \"{m.group(1)}\": ask "
                            "halox_transport_caps() instead")

# no source folder over FOLDER_LIMIT files
for top in SOURCE_TOPS:
    for root, dirs, files in os.walk(os.path.join(ROOT, top)):
        rel = os.path.relpath(root, ROOT)
        if rel.startswith(NOT_SOURCES) or "__pycache__" in rel.split(os.sep):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if len(files) > FOLDER_LIMIT:
            problems.append(f"{rel}/: {len(files)} files (at most {FOLDER_LIMIT}): split it into "
                            "folders by what the files are about")

# the engine's platform table: at most 10 entries, every platform fills every one (no entry that
# only one platform uses, no NULL the engine must test for)
with open(os.path.join(ROOT, "md", "engine", "backend.h"), encoding="utf-8") as fh:
    backend_h = fh.read()
m = re.search(r"struct md_backend \{(.*?)\n\};", backend_h, re.S)
entries = re.findall(r"\(\*(\w+)\)", m.group(1)) if m else []
if not entries:
    problems.append("md/engine/backend.h: no struct md_backend with entries")
elif len(entries) > 10:
    problems.append(f"md/engine/backend.h: the platform table has {len(entries)} entries (at most 10)")
tables = 0
for path in sources("md"):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    for t in re.finditer(r"md_backend_t (\w+) = \{(.*?)\n\};", text, re.S):
        tables += 1
        filled = set(re.findall(r"\.(\w+)\s*=", t.group(2)))
        for e in entries:
            if e not in filled:
                problems.append(f"{os.path.relpath(path, ROOT)}: {t.group(1)} leaves the entry {e} empty")
if entries and tables < 2:
    problems.append(f"md/: {tables} platform table(s) found (the CPU's and the GPU's expected)")

# the README's layout table names only files that exist, and names every folder of src/ and tests/
GENERATED = {"features.h"}  # written by the build
with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
    readme = fh.read()
start = readme.find("## Layout")
table = readme[start:readme.find("\n## ", start + 5)] if start >= 0 else ""
if not table:
    problems.append("README.md: no '## Layout' section")
names = set(re.findall(r"`([A-Za-z0-9_./-]+\.(?:c|h|cu|cuh|py|sh|cmake))`", table))
present = set()
for root, _dirs, files in os.walk(ROOT):
    if "/.git" in root or "/build" in root or "/.devtree" in root:
        continue
    present.update(files)
    present.update(os.path.relpath(os.path.join(root, f), ROOT) for f in files)
for name in sorted(names - GENERATED):
    if name not in present:
        problems.append(f"README.md: the layout table names {name}, which is not in the tree")
for d in sorted(os.listdir(os.path.join(ROOT, "src"))):
    if os.path.isdir(os.path.join(ROOT, "src", d)) and f"`src/{d}/`" not in table:
        problems.append(f"README.md: the layout table has no row for src/{d}/")
for d in sorted(os.listdir(os.path.join(ROOT, "tests"))):
    if os.path.isdir(os.path.join(ROOT, "tests", d)) and d != "__pycache__" \
            and f"`tests/{d}/`" not in table:
        problems.append(f"README.md: the layout table does not name tests/{d}/")

# no call or issue numbers in the sources and docs: the history is in git and CHANGELOG.md
HISTORY_TOPS = ("src", "include", "md", "tools", "bench", "tests", "docs")
HISTORY_EXEMPT = (os.path.join("docs", "PERFORMANCE.md"),)
HISTORY_REF = re.compile(r"\b(call|issue) [0-9]+\b", re.I)
for top in HISTORY_TOPS:
    for root, dirs, files in os.walk(os.path.join(ROOT, top)):
        rel_root = os.path.relpath(root, ROOT)
        if rel_root.startswith(NOT_SOURCES):
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            rel = os.path.join(rel_root, f)
            if rel in HISTORY_EXEMPT or f.endswith((".pyc", ".png", ".gz")):
                continue
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = HISTORY_REF.search(line)
                    if m:
                        problems.append(f"{rel}:{n}: \"{m.group(0)}\" names a call or an issue: say "
                                        "why in the present tense (the history is in git and "
                                        "CHANGELOG.md, figures in docs/PERFORMANCE.md)")

# bench/results/: only the records a published table cites
RESULTS, RESULTS_FILES, RESULTS_BYTES = os.path.join("bench", "results"), 40, 1 << 20
cited = readme
with open(os.path.join(ROOT, "docs", "PERFORMANCE.md"), encoding="utf-8") as fh:
    cited += fh.read()
kept = []
for root, _dirs, files in os.walk(os.path.join(ROOT, RESULTS)):
    kept += [os.path.relpath(os.path.join(root, f), ROOT).replace(os.sep, "/") for f in files]
if len(kept) > RESULTS_FILES:
    problems.append(f"{RESULTS}: {len(kept)} files (at most {RESULTS_FILES})")
size = sum(os.path.getsize(os.path.join(ROOT, f)) for f in kept)
if size > RESULTS_BYTES:
    problems.append(f"{RESULTS}: {size} bytes (at most {RESULTS_BYTES})")
for f in sorted(kept):
    folder = re.compile(re.escape(os.path.dirname(f)) + r"/?(?=[\s)`\]]|$)", re.M)
    if f != f"{RESULTS}/README.md" and f not in cited and not folder.search(cited):
        problems.append(f"{f}: no table of README.md or docs/PERFORMANCE.md cites it")

for p in problems:
    print(p)
print(f"structure: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
