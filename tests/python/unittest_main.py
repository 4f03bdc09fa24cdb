"""Runs the unittest cases of a test script and prints their count the way a
doctest binary does ("[doctest] test cases: N | N passed | N failed"), the
line scripts/summarize_tests.py sums into "N passed, N failed".

The scripts run from the repository root (meson's workdir), so that paths and
error locations read "examples/add.tsr".
"""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    os.chdir(ROOT)
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules["__main__"])
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print(f"[doctest] test cases: {result.testsRun} | {passed} passed | {failed} failed | {skipped} skipped")
    return 1 if failed else 0
