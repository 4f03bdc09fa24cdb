"""Every kernel of the zoo (examples/*.tsr) from Python: parsed, verified,
printed, proved, run against a NumPy reference, transformed (vmap, jvp,
discharge, dce where they apply) and run again.

One test case per kernel and step, generated from the table KERNELS.
"""
import sys
import unittest

import numpy as np

import tessera
from unittest_main import main

RNG = np.random.default_rng(17)


def normal(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def attention(q, k, v):
    return softmax(q @ k.transpose(0, 2, 1) / 8) @ v


def mlp_loss(x, w1, b1, w2, b2, target):
    h = np.maximum(x @ w1 + b1, 0)
    return np.array([0.5 * ((h @ w2 + b2 - target) ** 2).sum()])


def stencil_rows(x):
    """Each row the mean of itself and its neighbours, over the devices' rows stacked, wrapping round."""
    g = x.reshape(-1, x.shape[-1])
    return ((np.roll(g, 1, axis=0) + g + np.roll(g, -1, axis=0)) / 3).reshape(x.shape)


def embedding_bag(ids, bag, table, init):
    out = init.copy()
    np.add.at(out, bag, table[ids])
    return out


# name: (inputs by parameter name, the NumPy reference on float64 copies,
#        passes that are errors: {pipeline: "line:column" of the error}, and
#        "prove": "unknown" where some claim is unknown for a stated reason).
KERNELS = {
    "add": (lambda: {"x": normal(1024, 512), "y": normal(1024, 512)}, lambda x, y: x + y, {}),
    "cumsum": (lambda: {"x": normal(8, 1024)}, lambda x: np.cumsum(x, axis=1), {}),
    "dma_pipeline": (lambda: {"x": normal(2048, 128)}, lambda x: 2 * x, {}),
    "flash_attention": (lambda: {"q": normal(4, 256, 64), "k": normal(4, 256, 64), "v": normal(4, 256, 64)},
                        attention, {}),
    "gather_rows": (lambda: {"idx": RNG.integers(0, 1024, 16, dtype=np.int32), "table": normal(1024, 128)},
                    lambda idx, table: table[idx], {}),
    "layernorm": (lambda: {"x": normal(256, 512), "gamma": normal(512), "beta": normal(512)}, layernorm, {}),
    "matmul": (lambda: {"x": normal(512, 256), "y": normal(256, 384)}, lambda x, y: x @ y, {}),
    "ring_allreduce": (lambda: {"x": normal(4, 8, 128)}, lambda x: np.broadcast_to(x.sum(axis=0), x.shape),
                       {"discharge,dce": "44:3"}),
    "row_sum": (lambda: {"x": normal(512, 1024)}, lambda x: x.sum(axis=1), {}),
    "halo_exchange": (lambda: {"x": normal(4, 8, 128)}, stencil_rows, {"discharge,dce": "44:3"}),
    # The indexed rows are data: their bounds are `unknown` to the prover, and
    # discharge has no rule for an indirect DMA (its explicit error).
    "sc_gather_scatter": (lambda: {"ids": RNG.integers(0, 256, 64, dtype=np.int32),
                                   "bag": RNG.integers(0, 16, 64, dtype=np.int32),
                                   "table": normal(256, 128), "init": normal(16, 128)},
                          embedding_bag, {"discharge,dce": "31:5", "prove": "unknown"}),
    "sc_sort": (lambda: {"keys": normal(32, 16), "vals": normal(32, 16)},
                lambda keys, vals: np.take_along_axis(vals, np.argsort(keys, axis=1, kind="stable"), axis=1), {}),
    "softmax": (lambda: {"x": normal(256, 1000)}, softmax, {}),
    "train_step": (lambda: {"x": normal(16, 32), "w1": normal(32, 64) / 4, "b1": normal(64), "w2": normal(64, 8) / 8,
                            "b2": normal(8), "target": normal(16, 8)}, mlp_loss, {}),
}


def reference(name, inputs):
    as_f64 = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in inputs.items()}
    return KERNELS[name][1](**as_f64)


def path(name):
    return f"examples/{name}.tsr"


def in_f64(name):
    """The kernel with every f32 turned into f64, for finite differences.

    A SparseCore kernel has no 64-bit vectors, so its f64 copy runs as a
    TensorCore kernel (the same semantics; the param is only dropped)."""
    with open(path(name)) as f:
        text = f.read().replace("f32", "f64").replace(" kernel_type=sc_vector_subcore,", "")
        return tessera.parse(text, path(name))


class Zoo(unittest.TestCase):
    def assert_close(self, got, want, tol=2e-4):
        self.assertEqual(got.shape, np.shape(want))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)

    def expect_pass_error(self, name, passes):
        """Checks that `passes` on kernel `name` is an error where KERNELS says; True if so."""
        where = KERNELS[name][2].get(passes)
        if where is None:
            return False
        with self.assertRaises(tessera.Error) as caught:
            tessera.opt(tessera.parse(path(name)), passes)
        e = caught.exception
        self.assertEqual((e.file, f"{e.line}:{e.column}"), (path(name), where))
        return True


def check_parse(self, name):
    module = tessera.parse(path(name))
    module.verify()
    self.assertIn("main", module.functions)
    text = str(module)
    again = tessera.parse(text, "printed.tsr")
    again.verify()
    self.assertEqual(str(again), text)  # printing is a fixed point


def check_prove(self, name):
    claims = tessera.prove(tessera.parse(path(name)))
    self.assertTrue(claims)
    unknown = KERNELS[name][2].get("prove") == "unknown"
    for c in claims:
        if unknown and c.verdict == "unknown":
            continue
        self.assertEqual(c.verdict, "proved", str(c))
        self.assertIsNone(c.counterexample)
    if unknown:  # the expected unknown, for the stated reason, and never a proof of it
        self.assertTrue(any(c.verdict == "unknown" and "offsets" in str(c) for c in claims), [str(c) for c in claims])


def check_run(self, name):
    module = tessera.parse(path(name))
    inputs = KERNELS[name][0]()
    (out,) = tessera.run(module, inputs, cores=2, detect_races=True)
    self.assertEqual(out.dtype, np.float32)
    self.assert_close(out, reference(name, inputs))
    # The same through a list in parameter order, one core and a random grid order.
    order = [p for p, _ in module.parameters()]
    (again,) = tessera.run(module, [inputs[p] for p in order], grid_seed=5)
    np.testing.assert_array_equal(again, out)


def check_vmap(self, name):
    module = tessera.parse(path(name))
    batched = tessera.opt(module, "vmap{axis_size=2}")
    a, b = KERNELS[name][0](), KERNELS[name][0]()
    stacked = {k: np.stack([a[k], b[k]]) for k in a}
    (out,) = tessera.run(batched, stacked)
    self.assert_close(out[0], reference(name, a))
    self.assert_close(out[1], reference(name, b))


def check_discharge(self, name):
    if self.expect_pass_error(name, "discharge,dce"):
        return
    module = tessera.parse(path(name))
    inputs = KERNELS[name][0]()
    (want,) = tessera.run(module, inputs)
    (got,) = tessera.run(tessera.opt(module, "discharge,dce"), inputs)
    np.testing.assert_array_equal(got, want)


def check_jvp(self, name):
    """The tangent output against central finite differences, all in f64."""
    if self.expect_pass_error(name, "jvp"):
        return
    module = in_f64(name)
    jvp = tessera.opt(module, "jvp")
    primals = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in KERNELS[name][0]().items()}
    tangents = {k + "_dot": normal(*v.shape, dtype=np.float64) for k, v in primals.items() if v.dtype.kind == "f"}
    self.assertEqual([p for p, _ in jvp.parameters()], list(primals) + list(tangents))
    out, out_dot = tessera.run(jvp, {**primals, **tangents})
    (plain,) = tessera.run(module, primals)
    np.testing.assert_allclose(out, plain, rtol=1e-12, atol=1e-12)  # the primal output is unchanged
    h = 1e-6

    def shifted(sign):
        return {k: v + sign * h * tangents[k + "_dot"] if k + "_dot" in tangents else v for k, v in primals.items()}

    (plus,), (minus,) = tessera.run(module, shifted(1)), tessera.run(module, shifted(-1))
    np.testing.assert_allclose(out_dot, (plus - minus) / (2 * h), rtol=1e-5, atol=1e-6)


def check_pipeline(self, name):
    """jvp, vmap, discharge and dce composed: the batched tangents of matmul-like kernels."""
    passes = "jvp,vmap{axis_size=2},discharge,dce"
    if self.expect_pass_error(name, "jvp") or self.expect_pass_error(name, "discharge,dce"):
        return
    module = tessera.parse(path(name))
    jvp = tessera.opt(module, "jvp")
    both = tessera.opt(module, passes)
    inputs = KERNELS[name][0]()
    tangents = {k + "_dot": normal(*v.shape) for k, v in inputs.items() if v.dtype.kind == "f"}
    one = {**inputs, **tangents}
    other = {k: v[::-1].copy() if v.ndim else v for k, v in one.items()}
    if name == "gather_rows":
        other["idx"] = RNG.integers(0, 1024, 16, dtype=np.int32)
    want = [tessera.run(jvp, one), tessera.run(jvp, other)]
    got = tessera.run(both, {k: np.stack([one[k], other[k]]) for k in one})
    for r, g in enumerate(got):
        for b in range(2):
            self.assert_close(g[b], want[b][r], tol=1e-4)


STEPS = {"parse": check_parse, "prove": check_prove, "run": check_run, "vmap": check_vmap,
         "discharge": check_discharge, "jvp": check_jvp, "pipeline": check_pipeline}
for kernel in KERNELS:
    for step, check in STEPS.items():
        setattr(Zoo, f"test_{kernel}_{step}", lambda self, k=kernel, c=check: c(self, k))


if __name__ == "__main__":
    sys.exit(main())
