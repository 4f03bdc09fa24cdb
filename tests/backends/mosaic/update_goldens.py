#!/usr/bin/python3
"""Rewrites the rule goldens tests/backends/mosaic/NAME.test from what
`tessera emit mosaic tests/backends/mosaic/NAME.tsr` prints now (every line
pinned with CHECK-NEXT). Review the diff before committing: a golden is only
as good as the reading that accepted it.

    update_goldens.py TESSERA [NAME...]
"""
import os
import subprocess
import sys

# NAME: what the kernel exercises (the golden's first line).
GOLDENS = {
    "memory": "VMEM loads and stores (integer, dynamic, strided, squeezed indices, masks, addupdate) and SMEM scalars",
    "dma_sem_ops": "DMAs (local, remote, whole Refs), semaphores, device ids of a 2x2 device mesh, delay, debug_print",
    "control": "cond (bool, clamped i32 with nested scf.if and results), for, fori scan, while, run_scoped, a dynamic grid",
    "windows": "window_params: Element dims, Buffered(1|2), trivial windows, SMEM and ANY operands, a grid-free call; "
               "index-map arithmetic",
    "bool_refs": "bool Refs stored as i32 in VMEM and SMEM, a mask read from memory",
    "regions": "a function called twice, a custom_jvp_call and a one-branch cond, each in a tpu.region",
    "core_map": "a core_map over a 2 x 2 TensorCore mesh: mesh indices as leading arguments, whole Refs",
    "sparse_core": "the SparseCore rules on a grid-free call (grid (1,)): tpu.vector_load / tpu.vector_store (add for "
                   "addupdate, masks), scalar memref access, tpu.iota, rev, tpu.sort, tpu.dynamic_gather, tpu.log, an "
                   "unpaired dense wait",
    "sc_pallas_call": "a SparseCore pallas_call in the grid form (the older `lower_jaxpr_to_module`), its whole-kernel run_scoped hoisted into scratch operands",
    "sc_mesh": "a core_map over a 2 x 16 SparseCore mesh (core_parallel, subcore_parallel), HBM windows as affine maps, "
               "hoisted scratch, dense waits naming their DMA's source and target",
}


def main():
    tessera = os.path.abspath(sys.argv[1])
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
    for name in sys.argv[2:] or GOLDENS:
        tsr = f"tests/backends/mosaic/{name}.tsr"
        out = subprocess.run([tessera, "emit", "mosaic", tsr], cwd=root, capture_output=True, text=True, check=True).stdout
        lines = [l.strip() for l in out.splitlines() if l.strip()]
        text = [f"# The exact text of {tsr}: {GOLDENS[name]}.",
                "# Reviewed by hand against the forms docs/backends.md describes; check_examples.sh verifies it with mlir-opt-19.",
                f"# RUN: tessera emit mosaic {tsr}",
                f"# CHECK: {lines[0]}"]
        text += [f"# CHECK-NEXT: {l}" for l in lines[1:]]
        text.append("# CHECK-EMPTY:")
        with open(os.path.join(root, "tests", "backends", "mosaic", f"{name}.test"), "w") as f:
            f.write("\n".join(text) + "\n")
        print(f"wrote tests/backends/mosaic/{name}.test ({len(lines)} lines)")


if __name__ == "__main__":
    main()
