#!/usr/bin/python3
"""Compares tessera's Mosaic text with the hand-validated reference modules
(expected/*.mlir, copies of ../shared/reference/validated/mosaic/), up to SSA
names and attribute order.

    normalize.py TESSERA MLIR_OPT ROOT

Both texts go through the same normal form: the two-rule rewrite of
to_checkable.sh (memory spaces as strings, semaphores as i32), empty `else`
regions dropped (the references write `pl.when` both with and without one),
then `mlir-opt-19 --allow-unregistered-dialect`, which reprints with its own
SSA names, sorted attribute dictionaries and no comments. Exit 77 (skip)
without mlir-opt.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys

# (the .tsr whose main calls the kernel, the reference module)
CASES = [
    ("examples/add.tsr", "add.mlir"),
    ("tests/backends/mosaic/matmul_acc.tsr", "matmul.mlir"),
    ("tests/backends/mosaic/dma_sem.tsr", "dma.mlir"),
    ("examples/gather_rows.tsr", "gather.mlir"),
]


def normal_form(text, mlir_opt):
    text = re.sub(r"#tpu\.memory_space<([a-z_]+)>", r'"\1"', text)
    text = re.sub(r"!tpu\.(dma_)?semaphore", "i32", text)
    text = re.sub(r"\}\s*else\s*\{\s*\}", "}", text)
    run = subprocess.run([mlir_opt, "--allow-unregistered-dialect"], input=text, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit("mlir-opt rejected the text:\n" + run.stderr)
    return run.stdout


def main():
    tessera, mlir_opt, root = sys.argv[1:4]
    if not shutil.which(mlir_opt):
        print(f"skipped: {mlir_opt} not found (install mlir-19-tools)", file=sys.stderr)
        return 77
    here = os.path.join(root, "tests", "backends", "mosaic")
    failed = 0
    for tsr, ref in CASES:
        emit = subprocess.run([tessera, "emit", "mosaic", os.path.join(root, tsr)], capture_output=True, text=True)
        if emit.returncode != 0:
            print(f"FAIL {tsr}: tessera emit mosaic exited {emit.returncode}:\n{emit.stderr}")
            failed += 1
            continue
        with open(os.path.join(here, "expected", ref)) as f:
            want = normal_form(f.read(), mlir_opt)
        got = normal_form(emit.stdout, mlir_opt)
        if got == want:
            print(f"ok   {tsr} matches expected/{ref}")
            continue
        failed += 1
        print(f"FAIL {tsr} differs from expected/{ref}:")
        sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True), f"expected/{ref}", tsr))
    print(f"{len(CASES) - failed} matched, {failed} differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
