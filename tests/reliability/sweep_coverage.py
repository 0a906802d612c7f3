#!/usr/bin/env python3
"""Every UFORM_API function of uform.h is either called by a row of the allocation-failure sweep
(a tests/reliability/rows_*.c file: everything a row's run function calls is swept) or named in
no_row.txt with a reason. Fails, naming them, for functions with neither, reasons without text,
names that are not functions of the header, and functions listed although a row calls them.

With LIBRARY, the header's list is checked against the functions the shared library exports
(`nm -D`), so a declaration the parser misses cannot go unnoticed.

Usage: sweep_coverage.py HEADER RELIABILITY_DIR [LIBRARY]
"""
import re
import subprocess
import sys
from pathlib import Path


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    header = Path(sys.argv[1]).read_text()
    folder = Path(sys.argv[2])
    # A declaration: UFORM_API, a return type, the name, "(" (over several lines for long ones).
    declared = set(re.findall(r"UFORM_API[^;{(]*?\b(uform_[a-z0-9_]+)\s*\(", header))
    problems = []
    if len(sys.argv) == 4:
        symbols = subprocess.run(["nm", "-D", "--defined-only", sys.argv[3]], capture_output=True, text=True, check=True)
        exported = {fields[2] for fields in (line.split() for line in symbols.stdout.splitlines())
                    if len(fields) == 3 and fields[1] == "T" and fields[2].startswith("uform_")}
        for name in sorted(exported - declared):
            problems.append(f"{name}: exported by the library, but the header parser did not find it")
        for name in sorted(declared - exported):
            problems.append(f"{name}: declared UFORM_API, but the library does not export it")
    rows = sorted(folder.glob("rows_*.c"))
    called = set()
    for path in rows:
        text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)  # calls in comments do not count
        called |= set(re.findall(r"\b(uform_[a-z0-9_]+)\s*\(", text))
    reasons = {}
    for number, line in enumerate((folder / "no_row.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, _, reason = line.partition(":")
        name, reason = name.strip(), reason.strip()
        if not reason:
            problems.append(f"no_row.txt:{number}: {name} has no reason")
        if name not in declared:
            problems.append(f"no_row.txt:{number}: {name} is not a UFORM_API function of the header")
        reasons[name] = reason
    for name in sorted(declared):
        if name in called and name in reasons:
            problems.append(f"{name}: a row calls it, yet no_row.txt gives a reason for having none")
        elif name not in called and name not in reasons:
            problems.append(f"{name}: no row of the sweep calls it and no_row.txt gives no reason")
    covered = len(declared & called)
    print(f"{len(declared)} UFORM_API functions: {covered} called by rows ({len(rows)} files), "
          f"{len(set(reasons) & declared)} with a reason for no row")
    if len(declared) < 50 or not rows:
        problems.append(f"found only {len(declared)} functions and {len(rows)} row files: the parser is broken")
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"{1 if not problems else 0} passed, {1 if problems else 0} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
