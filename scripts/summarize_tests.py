"""Sums meson's test log into one line: "N passed, N failed".

A doctest binary counts its test cases (from its "[doctest] test cases:" line);
any other test (FileCheck, CLI scripts) counts as one. A skipped test (exit
status 77: FileCheck missing) counts as passed, and a warning line before the
summary says how many were skipped.
"""
import json
import re
import sys

passed = failed = skipped = 0
pattern = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed")
try:
    log = open(sys.argv[1])
except OSError:
    print("no test log: meson ran no tests", file=sys.stderr)
    print("0 passed, 1 failed")
    sys.exit(1)
with log:
    for line in log:
        entry = json.loads(line)
        ok = entry.get("result") in ("OK", "EXPECTEDFAIL", "SKIP")
        if entry.get("result") == "SKIP":
            skipped += 1
        match = pattern.search(entry.get("stdout") or "")
        if match:
            passed += int(match.group(2))
            failed += int(match.group(3))
            if not ok and int(match.group(3)) == 0:
                failed += 1  # crashed or timed out after its cases
        elif ok:
            passed += 1
        else:
            failed += 1
if skipped:
    print(f"warning: {skipped} tests skipped (see SKIP above; e.g. FileCheck not found)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
