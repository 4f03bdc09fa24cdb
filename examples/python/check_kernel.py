"""Check a kernel from Python: parse, verify, prove, run, compare with NumPy.

From the repository root, with the module built (docs/python.md):
    PYTHONPATH=build/python /usr/bin/python3 examples/python/check_kernel.py
"""
import pathlib
import sys

import numpy as np

import tessera

kernel = pathlib.Path(__file__).resolve().parents[1] / "matmul.tsr"
module = tessera.parse(kernel)
module.verify()  # raises tessera.Error listing every problem

# Formal checks of the pallas_call, for every grid point (Z3).
claims = tessera.prove(module)
for claim in claims:
    print(claim)

# Run it on two simulated cores with the race detector, against NumPy.
rng = np.random.default_rng(0)
x = rng.standard_normal((512, 256), dtype=np.float32)
y = rng.standard_normal((256, 384), dtype=np.float32)
(out,) = tessera.run(module, {"x": x, "y": y}, cores=2, detect_races=True)
expected = x.astype(np.float64) @ y.astype(np.float64)
close = np.allclose(out, expected, rtol=1e-4, atol=1e-4)
print(f"out: {out.dtype} {out.shape}, matches NumPy: {close}")
sys.exit(0 if close and all(c.proved for c in claims) else 1)
