#!/usr/bin/env python3
"""Where a `make test` run's time went (scripts/ci.sh prints it at the end of every run).

    ci-report.py PHASES_TSV JUNIT_DIR TOTAL_SECONDS

PHASES_TSV holds one line per phase: name, seconds, exit status. JUNIT_DIR holds ctest's JUnit files,
<preset>-junit.xml. Prints the phase table, then each preset's test counts and its 15 slowest tests,
and writes the same text to JUNIT_DIR/report.txt.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

BUDGET_S = 2100
SLOWEST = 15


def phase_rows(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                rows.append((parts[0], int(parts[1]), int(parts[2])))
    return rows


def test_cases(path):
    """(name, seconds, outcome) of every test in a ctest JUnit file."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "run")
        if case.find("failure") is not None or status == "fail":
            outcome = "failed"
        elif status in ("notrun", "disabled") or case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        # A parameterized test's name carries gtest's "# GetParam() = ..." comment: not part of the name.
        name = re.sub(r"\s+# GetParam\(\).*$", "", case.get("name", "?"))
        cases.append((name, float(case.get("time", "0") or 0), outcome))
    return cases


def main():
    phases_path, junit_dir, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lines = []
    rows = phase_rows(phases_path)
    width = max([len(name) for name, _, _ in rows] + [len("total")])
    lines.append("ci: where the time went")
    lines.append(f"  {'phase':<{width}}  {'seconds':>7}  status")
    for name, seconds, status in rows:
        lines.append(f"  {name:<{width}}  {seconds:>7}  {'ok' if status == 0 else f'FAILED ({status})'}")
    verdict = "within" if total <= BUDGET_S else "OVER"
    lines.append(f"  {'total':<{width}}  {total:>7}  ({verdict} the {BUDGET_S} s budget of a cold run)")

    for file in sorted(os.listdir(junit_dir)):
        if not file.endswith("-junit.xml"):
            continue
        preset = file[: -len("-junit.xml")]
        try:
            cases = test_cases(os.path.join(junit_dir, file))
        except ET.ParseError as error:
            lines.append(f"\n{preset}: unreadable JUnit file ({error})")
            continue
        counts = {o: sum(1 for c in cases if c[2] == o) for o in ("passed", "failed", "skipped")}
        busy = sum(c[1] for c in cases)
        lines.append(f"\n{preset}: {len(cases)} tests: {counts['passed']} passed, {counts['failed']} failed, "
                     f"{counts['skipped']} skipped; {busy:.0f} s of test time; the {SLOWEST} slowest:")
        for name, seconds, outcome in sorted(cases, key=lambda c: -c[1])[:SLOWEST]:
            mark = "" if outcome == "passed" else f"  ({outcome})"
            lines.append(f"  {seconds:8.2f} s  {name}{mark}")
        failed = [c[0] for c in cases if c[2] == "failed"]
        if failed:
            lines.append(f"  failed: {', '.join(failed[:20])}" + (" ..." if len(failed) > 20 else ""))

    text = "\n".join(lines)
    print(text)
    with open(os.path.join(junit_dir, "report.txt"), "w", encoding="utf-8") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
