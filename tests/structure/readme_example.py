#!/usr/bin/env python3
"""The library example of README.md compiles against the public headers of a build.

    readme_example.py SOURCE_DIR BUILD_DIR CC [--page FILE]

Takes the README's C block that includes <halox/halox.h> (there must be exactly one) and compiles
it with CC as C11, warnings as errors, against SOURCE_DIR/include and BUILD_DIR/include (the
generated halox/features.h): the headers a user of the installed package sees. -fsyntax-only:
the block is an excerpt (a function, no main), and a name the library does not declare, a wrong
argument or a field that does not exist is already an error there. Exit status 0 when it
compiles, 1 when not (the compiler's messages name the page's lines), 2 on bad usage. --page
checks another page instead of README.md (the test of this test: a stale example)."""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```\s*(\S*)\s*$")


def c_blocks(text):
    """(first line number, body) of each ```c block."""
    out, body, start, lines = [], None, 0, text.splitlines()
    for i, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if body is None and m and m.group(1).lower() == "c":
            body, start = [], i + 1
        elif body is not None and m and not m.group(1):
            out.append((start, body))
            body = None
        elif body is not None:
            body.append(line)
    return out


def main(argv):
    args = argv[1:]
    page = None
    if len(args) == 5 and args[3] == "--page":
        page, args = args[4], args[:3]
    if len(args) != 3:
        print("usage: " + __doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, build, cc = args
    page = page or os.path.join(src, "README.md")
    name = os.path.relpath(page, src)
    with open(page, encoding="utf-8") as f:
        blocks = [b for b in c_blocks(f.read())
                  if any("#include <halox/halox.h>" in line for line in b[1])]
    if len(blocks) != 1:
        print(f"FAIL: {name} has {len(blocks)} C blocks including <halox/halox.h>, not one")
        return 1
    start, body = blocks[0]
    features = os.path.join(build, "include", "halox", "features.h")
    if not os.path.isfile(features):
        print(f"FAIL: {features} is missing (configure the build first)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "readme_example.c")
        with open(path, "w", encoding="utf-8") as f:
            # compiler messages then name the page and its line numbers
            f.write(f'#line {start} "{name}"\n' + "\n".join(body) + "\n")
        cmd = [cc, "-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only",
               "-I", os.path.join(src, "include"), "-I", os.path.join(build, "include"), path]
        r = subprocess.run(cmd, capture_output=True, text=True)
    print(" ".join(cmd[:-1]) + f" {name}:{start}")
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        print(f"FAIL: the example of {name} (line {start}, {len(body)} lines) does not compile")
        return 1
    print(f"ok: the example of {name} (line {start}, {len(body)} lines) compiles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
