"""JAX's own production Pallas TPU kernels, imported from the Mosaic text JAX
0.11.2 produced for them (tests/frontends/corpus/production/), against the
NumPy references of import_references.py:

- each kernel imports with the signature of its `tpu_custom_call`, runs in
  the interpreter on generated inputs equal to its reference, and `prove`
  gives no FAILED claim (paged attention under the ranges its scalar-prefetch
  operands are valid in);
- tessera's own reverse mode of the imported flash attention forward kernel
  gives the dq, dk and dv of the reference, and of JAX's hand-written backward
  kernels (imported too) run on the same inputs; its kernels are proved, and
  run on two cores with the race detector in a shuffled grid order they give
  the same numbers.

Tolerances (float32 kernels against float64 references): the largest
absolute error at most REL_TOL times the largest magnitude of the reference,
per output. Each test prints the error it measured.

Until the Python module has `tessera.import_mosaic`, every test here skips
with that reason.
"""
import functools
import os
import pathlib
import sys
import time
import unittest

import numpy as np

import tessera
import import_references as ref
from unittest_main import ROOT, main

CORPUS = os.path.join(ROOT, "tests", "frontends", "corpus", "production")
HAVE_IMPORTER = hasattr(tessera, "import_mosaic")
NO_IMPORTER = "tessera.import_mosaic does not exist in this build of the Python module (AttributeError)"

REL_TOL = 1e-5

ATTN = "f32[2,4,512,128]"
# Each kernel's pallas_call signature: the operands and results of its
# tpu_custom_call in the StableHLO JAX exported, in order.
SHAPES = {
    "flash_attention_fwd_0": f"{ATTN}, {ATTN}, {ATTN} -> {ATTN}",  # q, k, v -> o
    "flash_attention_bwd_0": f"{ATTN}, {ATTN}, {ATTN} -> {ATTN}, {ATTN}, {ATTN}",  # q, k, v -> o, l, m
    "flash_attention_bwd_1": ", ".join([ATTN] * 7) + f" -> {ATTN}, {ATTN}",  # q, k, v, l, m, do, di -> dk, dv
    "flash_attention_bwd_2": ", ".join([ATTN] * 7) + f" -> {ATTN}",  # q, k, v, l, m, do, di -> dq
    "matmul_0": "f32[1024,1024], f32[1024,1024] -> f32[1024,1024]",  # x, y -> x @ y
    # lengths, page_indices, buffer_index, init_flag, q, k_pages, v_pages -> o, m, l
    "paged_attention_0": "i32[4], i32[64], i32[1], i32[1], f32[4,8,1,128], f32[8,64,16,128], f32[8,64,16,128]"
                         " -> f32[4,8,1,128], f32[4,8,1,1], f32[4,8,1,1]",
}

# What the prover must be told: the scalar-prefetch operands of paged
# attention are data. Lengths fit the 16 pages of 16 tokens of a sequence,
# and page indices name one of the 64 pages.
ASSUME = {
    "paged_attention_0": ["scalar_prefetch[0] in [0, 256]", "scalar_prefetch[1] in [0, 64)"],
}

# Kernels the importer refuses, with a fragment of its error: their tests are
# expected failures (printing the error), and a test pins the refusal. None
# today: paged attention, which keeps the state of its double-buffered page
# DMAs (buffer index, init flag) in scalar-prefetch operands it writes, now
# imports with that state carried in SMEM scratch.
IMPORT_REFUSAL = {}

# When tessera's vjp refuses the imported flash attention forward kernel: a
# fragment of the error it gives. The demonstration below is then an expected
# failure (printing the error), and test_vjp_refusal_is_the_known_one pins the
# refusal, so that a change either way shows up. None: vjp must work.
VJP_REFUSAL = None


def corpus_path(name):
    return pathlib.Path(CORPUS, name + ".mlir")


@functools.lru_cache(maxsize=None)
def imported(name):
    try:
        return tessera.import_mosaic(corpus_path(name), shapes=SHAPES[name])
    except tessera.Error as e:
        print(f"  import of {name} refused: {e}")
        raise


def signature(shapes):
    operands, results = shapes.split(" -> ")

    def types(text):  # split at the commas between types, not those inside brackets
        out, depth, start = [], 0, 0
        for i, ch in enumerate(text + ","):
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                out.append(text[start:i].strip())
                start = i + 1
        return out

    return types(operands), types(results)


@functools.lru_cache(maxsize=None)
def flash_inputs():
    q, k, v = ref.flash_attention_inputs()
    do = ref.flash_attention_backward_inputs()[5]
    return q, k, v, do


@functools.lru_cache(maxsize=None)
def backward_inputs():
    return ref.flash_attention_backward_inputs()


def inputs_and_reference(name):
    """The kernel's operands in call order and its reference results."""
    if name == "flash_attention_fwd_0":
        q, k, v, _ = flash_inputs()
        return [q, k, v], [ref.flash_attention_forward(q, k, v)]
    if name == "flash_attention_bwd_0":
        q, k, v, _ = flash_inputs()
        return [q, k, v], list(ref.flash_attention_forward_residuals(q, k, v))
    if name == "flash_attention_bwd_1":
        operands = list(backward_inputs())
        return operands, list(ref.flash_attention_dkv(*operands))
    if name == "flash_attention_bwd_2":
        operands = list(backward_inputs())
        return operands, [ref.flash_attention_dq(*operands)]
    if name == "matmul_0":
        x, y = ref.matmul_inputs()
        return [x, y], [ref.blocked_matmul(x, y)]
    if name == "paged_attention_0":
        inputs = ref.paged_attention_inputs()
        return list(inputs.values()), list(ref.paged_attention_reference(inputs))
    raise KeyError(name)


def run_timed(module, operands, label):
    start = time.perf_counter()
    outs = tessera.run(module, operands)
    print(f"  {label}: tessera.run {time.perf_counter() - start:.2f} s")
    return outs


def error_of_max(got, want):
    """max |got - want| / max |want| over the finite entries; inf where the non-finite entries differ."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(want)
    if not np.array_equal(np.isfinite(got), finite) or not np.array_equal(got[~finite], want[~finite]):
        return np.inf
    scale = np.abs(want[finite]).max(initial=0.0)
    diff = np.abs(got[finite] - want[finite]).max(initial=0.0)
    return diff / scale if scale else diff


class Checks(unittest.TestCase):
    def assert_close(self, got, want, label, tol=REL_TOL):
        self.assertEqual((got.dtype, got.shape), (np.float32, want.shape), label)
        err = error_of_max(got, want)
        print(f"  {label}: max error {err:.2e} of the largest magnitude (tolerance {tol:.0e})")
        self.assertLessEqual(err, tol, label)

    def assert_no_failed_claim(self, module, label, assume=None):
        start = time.perf_counter()
        claims = tessera.prove(module, assume=assume)
        print(f"  {label}: {len(claims)} claims in {time.perf_counter() - start:.1f} s, "
              f"{sum(c.verdict == 'proved' for c in claims)} proved")
        self.assertTrue(claims, label)
        for c in claims:
            if c.verdict != "proved":
                print(f"    {c}")
        failed = [c for c in claims if c.verdict == "failed"]
        self.assertEqual(failed, [], f"{label}: FAILED claims:\n" + "\n".join(str(c) for c in claims))


@unittest.skipUnless(HAVE_IMPORTER, NO_IMPORTER)
class ProductionKernels(Checks):
    pass


def check_signature(self, name):
    module = imported(name)
    module.verify()
    operands, results = signature(SHAPES[name])
    self.assertEqual([t for _, t in module.parameters()], operands)
    self.assertEqual(module.results(), results)


def check_run(self, name):
    operands, want = inputs_and_reference(name)
    got = run_timed(imported(name), operands, name)
    self.assertEqual(len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        self.assert_close(g, w, f"{name} result {i}")


def check_prove(self, name):
    self.assert_no_failed_claim(imported(name), name, ASSUME.get(name))


def check_refusal(self, name):
    with self.assertRaises(tessera.Error) as caught:
        tessera.import_mosaic(corpus_path(name), shapes=SHAPES[name])
    print(f"  {caught.exception}")
    self.assertIn(IMPORT_REFUSAL[name], str(caught.exception))


def expected_failure_if(condition):
    return unittest.expectedFailure if condition else (lambda test: test)


for kernel in SHAPES:
    for step, check in {"signature": check_signature, "run": check_run, "prove": check_prove}.items():
        test = expected_failure_if(kernel in IMPORT_REFUSAL)(lambda self, k=kernel, c=check: c(self, k))
        setattr(ProductionKernels, f"test_{kernel}_{step}", test)
    if kernel in IMPORT_REFUSAL:
        setattr(ProductionKernels, f"test_{kernel}_refusal_is_the_known_one", lambda self, k=kernel: check_refusal(self, k))


@functools.lru_cache(maxsize=None)
def vjp_of_forward():
    """tessera's vjp of the imported forward kernel: main(q, k, v, ct0) -> (o, dq, dk, dv)."""
    try:
        return tessera.opt(imported("flash_attention_fwd_0"), "vjp")
    except tessera.Error as e:
        print(f"  tessera's vjp refuses the imported flash attention forward kernel: {e}")
        raise


@functools.lru_cache(maxsize=None)
def vjp_outputs():
    """(o, dq, dk, dv): the vjp run on the flash attention inputs, with do as the cotangent of o."""
    q, k, v, do = flash_inputs()
    return tuple(run_timed(vjp_of_forward(), [q, k, v, do], "vjp of flash_attention_fwd_0"))


@unittest.skipUnless(HAVE_IMPORTER, NO_IMPORTER)
class ReverseModeOfImportedFlashAttention(Checks):
    """The demonstration: reverse mode of JAX's forward kernel, by tessera, against JAX's backward kernels."""

    @expected_failure_if(VJP_REFUSAL)
    def test_vjp_of_forward_equals_reference_and_jax_backward_kernels(self):
        vjp = vjp_of_forward()
        self.assertEqual([t for _, t in vjp.parameters()], [ATTN] * 4)  # q, k, v and the cotangent of o
        self.assertEqual(vjp.results(), [ATTN] * 4)  # o, dq, dk, dv
        q, k, v, do = flash_inputs()
        o, dq, dk, dv = vjp_outputs()
        want = ref.flash_attention_vjp(q, k, v, do)
        self.assert_close(o, ref.flash_attention_forward(q, k, v), "vjp's o against the reference")
        for got, expected, label in zip((dq, dk, dv), want, ("dq", "dk", "dv")):
            self.assert_close(got, expected, f"vjp's {label} against the reference")

        # JAX's own backward: the forward keeping residuals, di = rowsum(o * do)
        # (computed outside the kernels, as JAX does), then the dK/dV and dQ kernels.
        o_jax, l, m = run_timed(imported("flash_attention_bwd_0"), [q, k, v], "flash_attention_bwd_0")
        di = ref.flash_attention_di(o_jax, do)
        dk_jax, dv_jax = run_timed(imported("flash_attention_bwd_1"), [q, k, v, l, m, do, di], "flash_attention_bwd_1")
        (dq_jax,) = run_timed(imported("flash_attention_bwd_2"), [q, k, v, l, m, do, di], "flash_attention_bwd_2")
        for got, jax_kernel, label in zip((dq, dk, dv), (dq_jax, dk_jax, dv_jax), ("dq", "dk", "dv")):
            self.assert_close(got, jax_kernel, f"vjp's {label} against JAX's backward kernels")

    @expected_failure_if(VJP_REFUSAL)
    def test_vjp_of_forward_is_proved(self):
        self.assert_no_failed_claim(vjp_of_forward(), "vjp of flash_attention_fwd_0")

    @expected_failure_if(VJP_REFUSAL)
    def test_vjp_of_forward_runs_race_free_in_any_grid_order(self):
        """Its kernels on two cores with the race detector and a shuffled grid order: the same numbers."""
        q, k, v, do = flash_inputs()
        start = time.perf_counter()
        again = tessera.run(vjp_of_forward(), [q, k, v, do], cores=2, detect_races=True, grid_seed=3)
        print(f"  vjp on 2 cores, race detector on, grid seed 3: {time.perf_counter() - start:.2f} s")
        for got, want in zip(again, vjp_outputs()):
            np.testing.assert_array_equal(got, want)

    @unittest.skipIf(VJP_REFUSAL is None, "tessera's vjp is expected to accept the kernel")
    def test_vjp_refusal_is_the_known_one(self):
        with self.assertRaises(tessera.Error) as caught:
            tessera.opt(imported("flash_attention_fwd_0"), "vjp")
        self.assertIn(VJP_REFUSAL, str(caught.exception))


if __name__ == "__main__":
    sys.exit(main())
