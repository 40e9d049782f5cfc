#!/usr/bin/env python3
"""Every command block of README.md and docs/*.md runs as written, or says why it cannot.

    doc_commands.py SOURCE_DIR BUILD_DIR [--no-mpi] [--timeout S] [--only FILE[:LINE]]
                    [--files PAGE.md ...]
    doc_commands.py SOURCE_DIR --list       the blocks and how each is treated, nothing run

A fenced block is a command block when its language is sh, bash, shell, console (only the lines
after a "$ " prompt) or none at all; fences of other languages (text, json, c, cmake, ...) are
not run. A command block runs here unless the line just before its fence (blank lines between
are allowed) is a marker saying why it cannot:

    <!-- doc-test: gpu -->

Kinds (several may be given, separated by commas):
    gpu       needs a visible GPU (and a CUDA build)
    nvshmem   needs NVSHMEM (a CUDA build with NVSHMEM, GPUs that reach each other)
    nodes     needs several nodes (a cluster's launcher)
    peer      needs a peer program (GROMACS)
    device    runs on, or unpacks the results of, the device machine (scripts/device/*.sh)
    ci        builds, tests or installs the tree: what CI itself runs (scripts/test.sh, the
              install test), not run again inside a test
    synopsis  a usage line with placeholders ([options], FILE, <date>), not a command as typed

Runnable blocks run in a scratch folder (one per file, blocks in order, each block from a fresh
shell: its commands share exports and the working folder) where build/ is BUILD_DIR and the
source tree's other entries are links, with the environment scripts/common.sh's halox_mpi_env
sets (what Open MPI needs as root or with more ranks than cores). Each command has its own time
limit. To keep the test short, the runs are shortened without changing what is checked:
--steps, --atoms, repeats and sizes are capped (or added where a default is long; SHORTEN below).
A command fails the test when it exits non-zero, is not found or times out; the report names
file:line, the command as written and as run, and the end of its output. In a build without
MPI, commands that start mpirun are listed as skipped.
"""
import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

KINDS = {"gpu", "nvshmem", "nodes", "peer", "device", "ci", "synopsis"}
COMMAND_LANGS = {"", "sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
MARK = re.compile(r"^\s*<!--\s*doc-test:\s*([a-z, -]+?)\s*-->\s*$")
TOOL = re.compile(r"(?:^|(?<=[\s;&|(]))(\S*?\bhalox-(md|check|bench))(?=\s|$)")

# Commands never run inside a test, whatever the docs say: they build, test or install the tree
# (a doc test that ran them would rebuild the build it tests, or run CI inside CI).
NEVER = re.compile(r"(^|[\s;&|(])((\./)?scripts/test\.sh|(\./)?\.ci/run|ctest|apt-get|"
                   r"cmake\s+(-S|-B|--build|--install)|pip3?\s+install)(\s|$)")

# Per tool: option -> cap (a number, or for lists each element); ADD: options added right after
# the tool's name when absent (and when the condition holds), because the default is long.
SHORTEN = {
    "md": {"--steps": 20, "--atoms": 4000},
    "check": {"--atoms": 2000, "--steps": 2},
    "bench": {"--steps": 10, "--atoms": 4000, "-r": 5, "--repeats": 5, "-w": 2, "--warmup": 2,
              "-n": 10, "--iters": 10},
}
ADD = {
    "md": [("--steps", "20", lambda c: "--restart" not in c),
           ("--atoms", "4000", lambda c: "water-density" in c and "--read" not in c)],
    "check": [("--atoms", "2000", lambda c: True)],
    "bench": [],
}


class Block:
    def __init__(self, path, line, lang, kinds, lines):
        self.path, self.line, self.lang, self.kinds, self.lines = path, line, lang, kinds, lines

    def where(self, offset=0):
        return f"{self.path}:{self.line + offset}"


def parse(path, text, problems):
    """The fenced blocks of a Markdown file (markers checked)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if MARK.match(lines[i]):
                j = i + 1
                while j < len(lines) and not lines[j].strip():
                    j += 1
                if j >= len(lines) or not FENCE.match(lines[j]):
                    problems.append(f"{path}:{i + 1}: a doc-test marker not followed by a fence")
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        kinds = set()
        mk = MARK.match(lines[j]) if j >= 0 else None
        if mk:
            kinds = {k.strip() for k in mk.group(1).split(",") if k.strip()}
            for k in sorted(kinds - KINDS):
                problems.append(f"{path}:{j + 1}: unknown doc-test kind '{k}' "
                                f"(kinds: {', '.join(sorted(KINDS))})")
        body, k = [], i + 1
        while k < len(lines) and not lines[k].strip().startswith(fence[0] * len(fence)):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
            k += 1
        blocks.append(Block(path, i + 2, lang, kinds, body))
        if mk and lang not in COMMAND_LANGS:
            problems.append(f"{path}:{i + 1}: a doc-test marker before a '{lang}' fence, which "
                            "is never run: remove the marker")
        i = k + 1
    return blocks


def commands(block):
    """(line offset in the block, command) for each command: continuation lines joined,
    comment lines and blank lines left out, console output left out."""
    out, cur, start = [], "", 0
    for n, raw in enumerate(block.lines):
        line = raw
        if block.lang == "console" and not cur:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not cur:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = n
        cur += line.strip() if cur else line
        if line.rstrip().endswith("\\"):
            cur = cur.rstrip()[:-1].rstrip() + " "
            continue
        out.append((start, cur.strip()))
        cur = ""
    if cur:
        out.append((start, cur.strip()))
    return out


def strip_comment(cmd):
    """The command without a trailing '# comment' (outside quotes)."""
    quote = None
    for i, ch in enumerate(cmd):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or cmd[i - 1].isspace()):
            return cmd[:i].rstrip()
    return cmd


def cap(value, limit):
    """VALUE (a count or a comma list of counts) with each count at most LIMIT."""
    parts = value.split(",")
    if not all(p.isdigit() for p in parts):
        return value
    return ",".join(str(min(int(p), limit)) for p in parts)


def shorten(cmd):
    """The command as the test runs it (see SHORTEN)."""
    cmd = strip_comment(cmd)
    m = TOOL.search(cmd)
    if not m:
        return cmd
    tool = m.group(2)
    for opt, limit in SHORTEN[tool].items():
        cmd = re.sub(rf"(?<=\s){re.escape(opt)}(\s+)(\S+)",
                     lambda g: f"{opt}{g.group(1)}{cap(g.group(2), limit)}", cmd)
    extra = [f"{opt} {val}" for opt, val, when in ADD[tool]
             if not re.search(rf"(?<=\s){re.escape(opt)}\s", cmd + " ") and when(cmd)]
    if extra:
        cmd = cmd[:m.end()] + " " + " ".join(extra) + cmd[m.end():]
    return cmd


def scratch(src, build, root, name):
    d = pathlib.Path(root) / re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "build").symlink_to(pathlib.Path(build).resolve())
    for e in pathlib.Path(src).iterdir():
        if not e.name.startswith("build") and e.name != ".git":
            (d / e.name).symlink_to(e.resolve())
    return d


def run_command(script, cwd, env, limit):
    """(exit status or "timeout", stdout + stderr) of bash running SCRIPT; on a timeout the
    whole process group goes (mpirun and its processes too)."""
    p = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
        return p.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return "timeout", out.decode(errors="replace")


def run_block(block, src, work, limit, mpi, results):
    """Run the block's commands in order (stopping at the first failure); each starts from the
    environment and folder the one before left."""
    cwd, env = str(work), dict(os.environ)
    env_file, pwd_file = pathlib.Path(work) / ".doc-test-env", pathlib.Path(work) / ".doc-test-pwd"
    common = shell_quote(str(pathlib.Path(src) / "scripts" / "common.sh"))
    for off, written in commands(block):
        cmd = shorten(written)
        where = block.where(off)
        if NEVER.search(cmd):
            results.append(("fail", where, written, "builds, tests or installs the tree (what "
                            "CI runs by itself): not run inside a test; mark its block "
                            "'<!-- doc-test: ci -->'"))
            return
        if not mpi and re.search(r"(^|\s)(mpirun|mpiexec|srun)\s", cmd):
            results.append(("skip", where, written, "this build has no MPI"))
            continue
        script = (f"source {common} && halox_mpi_env\n{cmd}\nrc=$?\n"
                  f"env -0 > {shell_quote(str(env_file))}\npwd > {shell_quote(str(pwd_file))}\n"
                  "exit $rc\n")
        t0 = time.monotonic()
        rc, out = run_command(script, cwd, env, limit)
        if rc != 0:
            why = f"timed out after {limit:g} s" if rc == "timeout" else f"exit {rc}"
            if rc == 127 or "command not found" in out:
                why += " (not found)"
            results.append(("fail", where, written, f"{why}\n    run as: {cmd}\n" +
                            "\n".join("    | " + ln for ln in out.strip().splitlines()[-15:])))
            return
        results.append(("ok", where, written, f"{time.monotonic() - t0:.1f} s"))
        env = dict(kv.split("=", 1) for kv in env_file.read_text().split("\0") if "=" in kv)
        cwd = pwd_file.read_text().strip() or cwd


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("build", nargs="?")
    ap.add_argument("--no-mpi", action="store_true", help="the build has no MPI")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per command")
    ap.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    ap.add_argument("--only", help="FILE, or FILE:LINE of a block's fence: run only those")
    ap.add_argument("--files", nargs="*", help="Markdown files instead of README.md, docs/*.md")
    a = ap.parse_args(argv)
    src = pathlib.Path(a.src).resolve()
    files = [pathlib.Path(f) for f in a.files] if a.files is not None else \
        [src / "README.md"] + sorted((src / "docs").glob("*.md"))
    problems, blocks = [], []
    for f in files:
        rel = os.path.relpath(f, src)
        blocks += parse(rel, f.read_text(), problems)
    runnable = [b for b in blocks if b.lang in COMMAND_LANGS and not b.kinds]
    if a.only:
        runnable = [b for b in runnable if a.only in (b.path, b.where(-1))]
    if a.list:
        for b in blocks:
            if b.lang not in COMMAND_LANGS:
                continue
            how = "marked " + ",".join(sorted(b.kinds)) if b.kinds else "runs"
            for off, c in commands(b):
                print(f"{b.where(off)}: [{how}] {c}")
                if not b.kinds and shorten(c) != strip_comment(c):
                    print(f"{'':>{len(b.where(off))}}   as run: {shorten(c)}")
        return 1 if problems else 0
    if not a.build:
        ap.error("BUILD_DIR is needed unless --list")
    root = pathlib.Path(a.build).resolve() / "doc-test"
    results = []
    t0 = time.monotonic()
    for f in dict.fromkeys(b.path for b in runnable):
        work = scratch(src, a.build, root, f)
        for b in (b for b in runnable if b.path == f):
            run_block(b, src, work, a.timeout, not a.no_mpi, results)
    marked = [b for b in blocks if b.lang in COMMAND_LANGS and b.kinds]
    for kind, where, cmd, note in results:
        print(f"{kind:4} {where}: {cmd}" + (f"  [{note}]" if kind != "fail" else ""))
    for b in marked:
        print(f"mark {b.where(-1)}: not run here ({', '.join(sorted(b.kinds))})")
    fails = [r for r in results if r[0] == "fail"]
    for _, where, cmd, note in fails:
        print(f"\nFAILED {where}: {cmd}\n    {note}")
    for p in problems:
        print(f"\nFAILED {p}")
    n_ok = sum(r[0] == "ok" for r in results)
    print(f"\ndoc commands: {n_ok} ran, {len(fails)} failed, "
          f"{sum(r[0] == 'skip' for r in results)} skipped, {len(marked)} blocks marked as not "
          f"runnable here, in {time.monotonic() - t0:.0f} s")
    if fails or problems:
        print("A documented command must run as written: fix the command (or the code), or mark "
              "its block with a line '<!-- doc-test: KIND -->' just before the fence (kinds: "
              f"{', '.join(sorted(KINDS))}; tests/structure/doc_commands.py says what each means)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
