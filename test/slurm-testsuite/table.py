"""table.py KNOWN WORKDIR FILE...: the table and the gate of run.sh.

Reads the junit reports results-{off,on}-*.xml that pytest wrote in
WORKDIR, one result per test file: failed when any of its cases failed or
erred, skipped when all were skipped, passed otherwise, "not run" when the
report lacks it. Prints test, result without spank-otel, result with it,
and the time with it. Exits 1 when a test passes without the plugin and
not with it, or when a test that is not in KNOWN (test<TAB>reason) does
not pass in both modes, or when a known one differs between the modes.
"""

import glob
import os
import sys
import xml.etree.ElementTree as ET


def results(workdir, mode):
    """Maps each test file (expect/test_7_11.py) to (result, seconds)."""
    cases = {}
    for report in sorted(glob.glob(os.path.join(workdir, f"results-{mode}-*.xml"))):
        for case in ET.parse(report).getroot().iter("testcase"):
            # classname is the file's module path: expect.test_7_11
            path = case.get("classname", "").replace(".", "/") + ".py"
            kinds = {child.tag for child in case}
            if kinds & {"failure", "error"}:
                outcome = "failed"
            elif "skipped" in kinds:
                outcome = "skipped"
            else:
                outcome = "passed"
            cases.setdefault(path, []).append((outcome, float(case.get("time", 0))))
    out = {}
    for path, items in cases.items():
        outcomes = {o for o, _ in items}
        if "failed" in outcomes:
            result = "failed"
        elif outcomes == {"skipped"}:
            result = "skipped"
        else:
            result = "passed"
        out[path] = (result, sum(t for _, t in items))
    return out


def main():
    known_file, workdir, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    known = {}
    if os.path.exists(known_file):
        with open(known_file) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    name, _, reason = line.rstrip("\n").partition("\t")
                    known[name] = reason
    off, on = results(workdir, "off"), results(workdir, "on")
    problems = []
    print(f"{'test':<28} {'without':<9} {'with':<9} {'time':>7}")
    for f in files:
        name = os.path.basename(f)[: -len(".py")]
        r_off, _ = off.get(f, ("not run", 0))
        r_on, t_on = on.get(f, ("not run", 0))
        print(f"{name:<28} {r_off:<9} {r_on:<9} {t_on:>6.1f}s")
        if r_off == "passed" and r_on != "passed":
            problems.append(f"{name} passes without spank-otel and is {r_on} with it")
        elif name in known:
            if r_off != r_on:
                problems.append(f"{name} (known: {known[name]}) is {r_off} without and {r_on} with spank-otel")
        elif (r_off, r_on) != ("passed", "passed"):
            problems.append(f"{name} is {r_off} without and {r_on} with spank-otel, and not in known.tsv")
    for name, reason in sorted(known.items()):
        if any(os.path.basename(f) == name + ".py" for f in files):
            print(f"  known: {name}: {reason}")
    for p in problems:
        print(f"FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
