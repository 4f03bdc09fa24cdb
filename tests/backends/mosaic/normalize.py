#!/usr/bin/python3
"""Compares tessera's Mosaic text with the hand-validated reference modules
(expected/*.mlir, modules written by hand and checked with mlir-opt-19), up to SSA
names and attribute order.

The SparseCore references were written for an 8-lane SparseCore (v5p, v6e);
tessera models 16 lanes (ir/sparse_core.h), so their .tsr kernels move 16
elements where the references move 8, and each case lists the textual
substitutions that widen its reference (and its kernel's symbol), applied to
the verbatim copy before the comparison. sc_mesh.mlir shares one index
constant among three accesses where tessera writes one per access: that case
is compared after `--cse` on both sides.

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

# The SparseCore references at 16 lanes: (pattern, replacement), in order.
SC_PALLAS_CALL_16_LANES = [
    (r"(?<![0-9])8xf32", "16xf32"),
    (r"array<i64: 8>", "array<i64: 16>"),
    (r"array<i64: 64, 8>", "array<i64: 64, 16>"),
    (r"@main\b", "@sc_kernel"),
]
SC_MESH_16_LANES = [
    (r"(?<![0-9])256xf32", "512xf32"),
    (r"(?<![0-9])8xf32", "16xf32"),
    (r"arith\.constant 8 : i32", "arith.constant 16 : i32"),
    (r"@double_sc\b", "@core_map"),
]

# (the .tsr whose main calls the kernel, the reference module, substitutions
# into the reference, extra mlir-opt passes for both sides)
CASES = [
    ("examples/add.tsr", "add.mlir", [], []),
    ("tests/backends/mosaic/matmul_acc.tsr", "matmul.mlir", [], []),
    ("tests/backends/mosaic/dma_sem.tsr", "dma.mlir", [], []),
    ("examples/gather_rows.tsr", "gather.mlir", [], []),
    ("tests/backends/mosaic/sc_pallas_call.tsr", "sc_pallas_call.mlir", SC_PALLAS_CALL_16_LANES, []),
    ("tests/backends/mosaic/sc_mesh.tsr", "sc_mesh.mlir", SC_MESH_16_LANES, ["--cse"]),
]


def normal_form(text, mlir_opt, passes):
    text = re.sub(r"#tpu\.memory_space<([a-z_]+)>", r'"\1"', text)
    text = re.sub(r"!tpu\.(dma_)?semaphore", "i32", text)
    text = re.sub(r"\}\s*else\s*\{\s*\}", "}", text)
    run = subprocess.run([mlir_opt, "--allow-unregistered-dialect", *passes], input=text, capture_output=True, text=True)
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
    for tsr, ref, substitutions, passes in CASES:
        emit = subprocess.run([tessera, "emit", "mosaic", os.path.join(root, tsr)], capture_output=True, text=True)
        if emit.returncode != 0:
            print(f"FAIL {tsr}: tessera emit mosaic exited {emit.returncode}:\n{emit.stderr}")
            failed += 1
            continue
        with open(os.path.join(here, "expected", ref)) as f:
            reference = f.read()
        for pattern, replacement in substitutions:
            reference, n = re.subn(pattern, replacement, reference)
            if n == 0:
                raise SystemExit(f"expected/{ref}: the substitution {pattern!r} matches nothing")
        want = normal_form(reference, mlir_opt, passes)
        got = normal_form(emit.stdout, mlir_opt, passes)
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
