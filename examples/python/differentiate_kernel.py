"""Differentiate a kernel with tessera's jvp and compare with central finite
differences, in float64.

The zoo's layernorm (examples/layernorm.tsr) is in f32; its text with every
f32 replaced by f64 is the same kernel in double precision, where finite
differences are accurate to about 1e-9.

From the repository root, with the module built (docs/python.md):
    PYTHONPATH=build/python /usr/bin/python3 examples/python/differentiate_kernel.py
"""
import pathlib
import sys

import numpy as np

import tessera

path = pathlib.Path(__file__).resolve().parents[1] / "layernorm.tsr"
module = tessera.parse(path.read_text().replace("f32", "f64"), "layernorm_f64.tsr")
jvp = tessera.opt(module, "jvp")  # main(x, gamma, beta, x_dot, gamma_dot, beta_dot) -> (out, out_dot)
print("jvp parameters:", ", ".join(name for name, _ in jvp.parameters()))

rng = np.random.default_rng(0)
primals = {"x": rng.standard_normal((256, 512)), "gamma": rng.standard_normal(512), "beta": rng.standard_normal(512)}
tangents = {name: rng.standard_normal(value.shape) for name, value in primals.items()}
out, out_dot = tessera.run(jvp, {**primals, **{name + "_dot": t for name, t in tangents.items()}})


def layernorm_at(step):
    """The kernel at primals + step * tangents."""
    (value,) = tessera.run(module, {name: primals[name] + step * tangents[name] for name in primals})
    return value


h = 1e-6
finite_differences = (layernorm_at(h) - layernorm_at(-h)) / (2 * h)
error = np.abs(out_dot - finite_differences).max() / np.abs(finite_differences).max()
print(f"out_dot: {out_dot.dtype} {out_dot.shape}, relative error against finite differences below 1e-7: {error < 1e-7}")
sys.exit(0 if error < 1e-7 else 1)
