#!/usr/bin/env python3
"""The API reference: Doxygen over the public headers (docs/Doxyfile), with no warning, and every
public declaration documented.

    api_reference.py SOURCE_DIR BUILD_DOXYFILE [--doxygen PATH]
    api_reference.py SOURCE_DIR BUILD_DOXYFILE --doxygen PATH --catches

BUILD_DOXYFILE is the build folder's Doxyfile (tests/structure/docs.cmake writes it: the
committed docs/Doxyfile with its output moved into the build folder). Doxygen runs from
SOURCE_DIR, so the committed file's relative paths hold. The test fails on:
- any Doxygen warning (docs/Doxyfile: WARN_IF_UNDOCUMENTED, WARN_AS_ERROR = FAIL_ON_WARNINGS): an
  undocumented function, type, macro or struct field, a comment Doxygen cannot read;
- an enum value without a comment (Doxygen does not warn about those), read from the XML output;
- a header of include/halox/ that is missing from the reference or has no file comment (a wrong
  INPUT would otherwise pass with nothing checked).

Exit 77 (skipped) when doxygen is not installed. --catches checks the test itself: a header with
an undocumented function, struct field and enum value must fail, naming each (exit 0 when it
does)."""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SKIP = 77


def described(elem):
    """Whether a Doxygen XML element carries a brief or a detailed description."""
    for tag in ("briefdescription", "detaileddescription"):
        d = elem.find(tag)
        if d is not None and "".join(d.itertext()).strip():
            return True
    return False


def run_doxygen(doxygen, doxyfile, source):
    """Doxygen's warnings (one a line) and exit status."""
    r = subprocess.run([doxygen, str(doxyfile)], cwd=source, capture_output=True, text=True,
                       timeout=240)
    lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    return lines, r.returncode


def xml_problems(xml_dir, headers):
    """Enum values without a comment; headers missing from the reference or undocumented."""
    problems = []
    index = xml_dir / "index.xml"
    if not index.is_file():
        return [f"{index}: no XML output (GENERATE_XML = YES in docs/Doxyfile)"]
    files = {}
    for comp in ET.parse(index).getroot().findall("compound"):
        if comp.get("kind") == "file":
            files[comp.findtext("name")] = xml_dir / (comp.get("refid") + ".xml")
    for path in sorted(files.values()):
        root = ET.parse(path).getroot()
        for cdef in root.findall("compounddef"):
            loc = cdef.find("location")
            where = loc.get("file") if loc is not None else path.name
            if not described(cdef):
                problems.append(f"{where}: no file comment (/** @file ... */)")
            for enum in cdef.iter("memberdef"):
                if enum.get("kind") != "enum":
                    continue
                for value in enum.findall("enumvalue"):
                    if not described(value):
                        line = enum.find("location").get("line")
                        problems.append(f"{where}:{line}: enum value {value.findtext('name')} of "
                                        f"{enum.findtext('name') or 'an anonymous enum'} is not "
                                        "documented")
    for h in headers:
        if h.name not in files:
            problems.append(f"{h}: not in the reference (INPUT, FILE_PATTERNS of docs/Doxyfile)")
    return problems


def check(doxygen, doxyfile, source, xml_dir, headers):
    """Print every problem; the count."""
    warnings, rc = run_doxygen(doxygen, doxyfile, source)
    problems = list(warnings)
    if rc != 0 and not warnings:
        problems.append(f"doxygen exited {rc}")
    problems += xml_problems(xml_dir, headers)
    for p in problems:
        print(p)
    return problems


def output_dir(doxyfile):
    """The OUTPUT_DIRECTORY the last line of the build Doxyfile sets."""
    out = None
    for line in pathlib.Path(doxyfile).read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "OUTPUT_DIRECTORY":
            out = value.strip().strip('"')
    return pathlib.Path(out)


FIXTURE = """/** @file
 * A header with holes. */
/** Documented. */
typedef struct fixture_pair {
    int documented; /**< documented */
    int bare_field;
} fixture_pair_t;
/** Documented enum. */
enum fixture_kind { FIXTURE_DOCUMENTED = 0, /**< documented */ FIXTURE_BARE_VALUE = 1 };
int fixture_bare_function(int a);
"""


def catches(doxygen, doxyfile, source):
    """The checks on a fixture header: each hole named, a failure in all."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "inc").mkdir()
        (tmp / "inc" / "fixture.h").write_text(FIXTURE)
        fixture_file = tmp / "Doxyfile"
        fixture_file.write_text(f'@INCLUDE = "{pathlib.Path(doxyfile).resolve()}"\n'
                                f'INPUT = "{tmp / "inc"}"\nSTRIP_FROM_PATH = "{tmp}"\n'
                                f'OUTPUT_DIRECTORY = "{tmp / "out"}"\n')
        problems = check(doxygen, fixture_file, source, tmp / "out" / "xml",
                         [tmp / "inc" / "fixture.h"])
    wanted = ["bare_field", "FIXTURE_BARE_VALUE", "fixture_bare_function"]
    missed = [w for w in wanted if not any(w in p for p in problems)]
    for w in missed:
        print(f"api_reference.py: the undocumented {w} of the fixture was not reported")
    flagged = [p for p in problems if "FIXTURE_DOCUMENTED" in p or "Member documented " in p]
    for p in flagged:
        print(f"api_reference.py: a documented declaration was reported: {p}")
    print(f"catches: {len(wanted) - len(missed)} of {len(wanted)} holes reported")
    return 1 if missed or flagged else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("doxyfile")
    ap.add_argument("--doxygen", default="")
    ap.add_argument("--catches", action="store_true")
    a = ap.parse_args()
    doxygen = a.doxygen or shutil.which("doxygen")
    if not doxygen or not os.access(doxygen, os.X_OK):
        print("doxygen not installed (Debian: apt-get install doxygen): skipped")
        return SKIP
    if a.catches:
        return catches(doxygen, a.doxyfile, a.source)
    source = pathlib.Path(a.source)
    headers = sorted(p for p in (source / "include" / "halox").rglob("*")
                     if p.suffix in (".h", ".cuh"))
    out = output_dir(a.doxyfile)
    for sub in ("xml", "html"):  # no page of an earlier run stands in for a missing one
        shutil.rmtree(out / sub, ignore_errors=True)
    problems = check(doxygen, a.doxyfile, source, out / "xml", headers)
    print(f"api_reference: {len(headers)} headers, {len(problems)} problem(s); the reference: "
          f"{out / 'html' / 'index.html'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
