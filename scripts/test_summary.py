#!/usr/bin/env python3
"""The end of `make test`: one summary of what CTest ran, read from its JUnit file.

Prints the counts, every skipped test with its reason, and one line naming the CPU classes this
machine could not exercise ("not exercised on this CPU: ...", which tests print through
tests/common/skip.h and skip.sh). Under CI=true a test skipped for any other reason (a missing
dependency the install script installs) fails the run.

Usage: test_summary.py JUNIT_XML
"""
import os
import sys
import xml.etree.ElementTree as ElementTree

CLASS_NOTE = "not exercised on this CPU: "


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        suite = ElementTree.parse(sys.argv[1]).getroot()
    except (OSError, ElementTree.ParseError) as error:
        print(f"test summary: cannot read {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    classes, class_skips, other_skips = set(), [], []
    for case in suite.iter("testcase"):
        name = case.get("name", "?")
        output = "".join(case.find("system-out").itertext()) if case.find("system-out") is not None else ""
        lines = output.splitlines()
        for line in lines:
            if line.startswith(CLASS_NOTE):
                classes.update(part.strip() for part in line[len(CLASS_NOTE):].split(","))
        status = case.get("status", "")
        if case.find("skipped") is not None or status in ("notrun", "disabled"):
            counts["skipped"] += 1
            reasons = [line for line in lines if line.startswith(("skipped:", CLASS_NOTE))]
            reason = reasons[0] if reasons else "no reason printed"
            (class_skips if reason.startswith(CLASS_NOTE) else other_skips).append((name, reason))
        elif case.find("failure") is not None or case.find("error") is not None or status == "fail":
            counts["failed"] += 1
        else:
            counts["passed"] += 1
    total = sum(counts.values())
    print(f"test summary: {total} tests, {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    for name, reason in other_skips:
        print(f"  skipped {name}: {reason}")
    if classes:
        tests = ", ".join(name for name, _ in class_skips)
        print(f"not exercised on this CPU: {', '.join(sorted(classes))}"
              + (f" (skipped entries: {tests})" if tests else ""))
    else:
        print("not exercised on this CPU: none (every class with kernels of its own ran)")
    under_ci = os.environ.get("CI") in ("true", "1")
    if under_ci and other_skips:
        print(f"test summary: CI=true and {len(other_skips)} tests skipped for a missing dependency: "
              "scripts/install-deps.sh must install it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
