"""The Python module's API beyond the zoo: Module, NumPy conversions
(zero-copy inputs, dtypes, bf16 / f16), prove's assumptions and claims, and
every error path raising tessera.Error with its file, line and column.
"""
import os
import pathlib
import sys
import tempfile
import unittest

import numpy as np

import tessera
from unittest_main import main

ADD = "examples/add.tsr"
RNG = np.random.default_rng(3)


def bf16_round(x):
    """float32 -> the nearest bfloat16 (ties to even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


# One op per dtype, to see each come back as the right NumPy dtype.
DTYPES = """
func @main(%a: bf16[4], %b: f16[4], %c: f64[4], %i: i32[4], %j: i64[2], %u: u32[2], %k: i8[2], %s: f32[]) ->
    (bf16[4], f16[4], f64[4], i1[4], i64[2], u32[2], u8[2], f32[]) {
  %a2 = add %a, %a
  %b2 = add %b, %b
  %c2 = mul %c, %c
  %lt = lt %i, 2:i32
  %j2 = add %j, %j
  %u2 = add %u, 1:u32
  %k8 = convert_element_type[new_dtype=u8] %k
  %s2 = mul %s, 3.0:f32
  return %a2, %b2, %c2, %lt, %j2, %u2, %k8, %s2
}
"""

# An `any` input that the kernel writes by DMA (from tests/transforms/test_passes.cpp):
# the caller's array must not change.
DMA_WRITES_INPUT = """
kernel @k(%x: ref<f32[4,4], any>, %o: ref<f32[4], vmem>, %buf: ref<f32[4], vmem>, %sem: ref<dma_sem[1], semaphore>) {
  %i = program_id[axis=0]
  dma_start %x[%i, :], %buf[:], %sem[0]
  dma_wait %sem[0], %buf[:]
  %v = get %buf[:]
  swap %o[:], %v
  %w = add %v, 10.0
  swap %buf[:], %w
  %n = add %i, 1
  %m = rem %n, 4
  dma_start %buf[:], %x[%m, :], %sem[0]
  dma_wait %sem[0], %x[%m, :]
}
index_map @row(%i: i32) -> (i32, i32) { return %i, 0 }
func @main(%x: f32[4,4]) -> (f32[4,4], f32[4,4]) {
  %o = pallas_call[kernel=@k, grid=(4), in_specs=[spec(mem=any)], out_specs=[spec((squeezed, 4), @row)],
                   out_shapes=[f32[4,4]], scratch=[ref<f32[4], vmem>, ref<dma_sem[1], semaphore>]] %x
  return %o, %x
}
"""

# Two verifier errors (a kernel cannot `get` from HBM left in `any` memory).
GET_FROM_ANY_TWICE = """index_map @ij(%i: i32, %j: i32) -> (i32, i32) {
  return %i, %j
}
kernel @k(%x: ref<f32[16,128], any>, %o: ref<f32[8,128], vmem>) {
  %a = get %x[0:8, :]
  %b = get %x[8:16, :]
  %c = add %a, %b
  swap %o[:, :], %c
}
func @main(%x: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(2, 1), in_specs=[spec(mem=any)], out_specs=[spec((8, 128), @ij)],
                     out_shapes=[f32[16,128]]] %x
  return %out
}
"""

TWO_FUNCTIONS = """
func @square(%x: f32[8]) -> f32[8] {
  %y = mul %x, %x
  return %y
}
func @main(%x: f32[8]) -> f32[8] {
  %y = add %x, %x
  return %y
}
"""


class ModuleApi(unittest.TestCase):
    def test_parse_path_text_and_pathlike(self):
        by_path = tessera.parse(ADD)
        self.assertEqual(by_path.file, ADD)
        self.assertEqual(tessera.parse(pathlib.Path(ADD)).file, ADD)
        with open(ADD) as f:
            by_text = tessera.parse(f.read())
        self.assertEqual(by_text.file, "<string>")
        self.assertEqual(str(by_text), str(by_path))
        self.assertEqual(repr(by_path), "<tessera.Module from examples/add.tsr: @main>")

    def test_functions_parameters_results(self):
        m = tessera.parse(TWO_FUNCTIONS)
        self.assertEqual(m.functions, ["square", "main"])
        self.assertEqual(tessera.parse(ADD).parameters(), [("x", "f32[1024,512]"), ("y", "f32[1024,512]")])
        self.assertEqual(tessera.parse("examples/matmul.tsr").results(), ["f32[512,384]"])
        self.assertEqual(m.parameters("square"), [("x", "f32[8]")])

    def test_str_is_canonical(self):
        text = str(tessera.parse(ADD))
        self.assertIn("%a: f32[128,128] = get %x[:, :]", text)
        self.assertIn("// effects: read(%x), read(%y), read(%o), write(%o)", text)

    def test_opt_func_picks_the_function(self):
        m = tessera.parse(TWO_FUNCTIONS)
        jvp = tessera.opt(m, "jvp", func="square")
        self.assertEqual(jvp.parameters("square"), [("x", "f32[8]"), ("x_dot", "f32[8]")])
        self.assertEqual(jvp.parameters("main"), [("x", "f32[8]")])
        x, t = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
        y, y_dot = tessera.run(jvp, {"x": x, "x_dot": t}, func="square")
        np.testing.assert_array_equal(y, x * x)
        np.testing.assert_array_equal(y_dot, 2 * x)

    def test_opt_verify_each(self):
        out = tessera.opt(tessera.parse(ADD), "jvp,dce", verify_each=True)
        self.assertEqual([p for p, _ in out.parameters()], ["x", "y", "x_dot", "y_dot"])

    def test_targets(self):
        self.assertEqual(tessera.targets, ["mosaic", "ptx", "llvm"])


class Arrays(unittest.TestCase):
    def setUp(self):
        self.add = tessera.parse(ADD)
        self.x = RNG.standard_normal((1024, 512)).astype(np.float32)
        self.y = RNG.standard_normal((1024, 512)).astype(np.float32)

    def test_zero_copy_inputs_do_not_count_toward_max_memory(self):
        # The output (2 MiB) fits in 3 MiB; two more copied inputs (2 MiB each) do not.
        # Borrowed inputs are not allocated by tessera, so they do not count.
        limit = 3 << 20
        (out,) = tessera.run(self.add, {"x": self.x, "y": self.y}, max_memory=limit)
        np.testing.assert_array_equal(out, self.x + self.y)
        readonly = self.x.copy()
        readonly.setflags(write=False)
        tessera.run(self.add, {"x": readonly, "y": self.y}, max_memory=limit)
        for copied in (self.x.astype(np.float64), np.asfortranarray(self.x), self.x.astype(">f4")):
            with self.assertRaises(tessera.Error) as caught:
                tessera.run(self.add, {"x": copied, "y": self.y}, max_memory=limit)
            self.assertIn("would exceed the memory limit of 3 MiB", caught.exception.message)

    def test_copied_inputs_give_the_same_results(self):
        want = self.x + self.y
        for x in (self.x.astype(">f4"), np.asfortranarray(self.x), self.x.astype(np.float64)):
            (out,) = tessera.run(self.add, [x, self.y])
            np.testing.assert_array_equal(out, want)
        wide = np.zeros((1024, 1024), np.float32)
        wide[:, ::2] = self.x  # a strided view
        (out,) = tessera.run(self.add, [wide[:, ::2], self.y])
        np.testing.assert_array_equal(out, want)

    def test_a_borrowed_input_is_never_written(self):
        m = tessera.parse(DMA_WRITES_INPUT)
        x = np.arange(16, dtype=np.float32).reshape(4, 4)
        before = x.copy()
        out, x_after = tessera.run(m, {"x": x})
        np.testing.assert_array_equal(x, before)
        np.testing.assert_array_equal(x_after, before)
        copied_out, _ = tessera.run(m, {"x": x.astype(np.float64)})
        np.testing.assert_array_equal(out, copied_out)
        np.testing.assert_array_equal(out[1], before[0] + 10)  # step 1 read what step 0 wrote into its copy

    def test_outputs_own_their_memory(self):
        (a,) = tessera.run(self.add, [self.x, self.y])
        (b,) = tessera.run(self.add, [self.x, self.y])
        self.assertTrue(a.flags.owndata or a.base is not None)
        self.assertTrue(a.flags.writeable and a.flags.c_contiguous)
        self.assertFalse(np.shares_memory(a, b))
        self.assertFalse(np.shares_memory(a, self.x))

    def test_every_dtype(self):
        m = tessera.parse(DTYPES)
        a = np.array([1.00390625, 3.1, -2.5, 1e-3], np.float32)  # 1 + 2^-8 is halfway between two bf16
        b = np.array([1.5, 0.1, 60000, -3], np.float16)
        c = np.array([0.1, 2, 3, 4])
        i = np.arange(4, dtype=np.int32)
        outs = tessera.run(m, {"a": a, "b": b, "c": c, "i": i, "j": np.array([2**40, -1]), "u": np.array([7, 2**32 - 1], np.uint32),
                               "k": np.array([-1, 5], np.int8), "s": 2.5})
        dtypes = [o.dtype for o in outs]
        self.assertEqual(dtypes, [np.float32, np.float16, np.float64, np.bool_, np.int64, np.uint32, np.uint8, np.float32])
        np.testing.assert_array_equal(outs[0], bf16_round(2 * bf16_round(a)))
        self.assertEqual(outs[0][0], 2.0)  # the input was rounded to bf16 (ties to even) before the add
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(outs[1], (b.astype(np.float32) * 2).astype(np.float16))
        self.assertEqual(outs[1][2], np.inf)  # 120000 overflows f16
        np.testing.assert_array_equal(outs[2], c * c)
        np.testing.assert_array_equal(outs[3], [True, True, False, False])
        np.testing.assert_array_equal(outs[4], [2**41, -2])
        np.testing.assert_array_equal(outs[5], [8, 0])
        np.testing.assert_array_equal(outs[6], [255, 5])
        self.assertEqual(outs[7].shape, ())
        self.assertEqual(float(outs[7]), 7.5)

    def test_bf16_from_float64_rounds_once(self):
        m = tessera.parse("func @main(%x: bf16[1]) -> bf16[1] {\n  return %x\n}")
        # 1 + 2^-8 + 2^-30: above the halfway point, so bf16 rounds up; through float32
        # (1 + 2^-8 exactly, a tie to even) it would round down to 1.
        (out,) = tessera.run(m, [np.array([1 + 2**-8 + 2**-30])])
        self.assertEqual(out[0], 1 + 2**-7)

    def test_conversions_numpy_allows(self):
        (out,) = tessera.run(self.add, {"%x": self.x.astype(np.float64), "y": np.zeros((1024, 512), np.int64)})
        np.testing.assert_array_equal(out, self.x)
        (out,) = tessera.run(self.add, {"x": np.ones((1024, 512), bool), "y": self.y})
        np.testing.assert_array_equal(out, self.y + 1)
        m = tessera.parse("func @main(%x: i32[3]) -> i32[3] {\n  %y = add %x, %x\n  return %y\n}")
        np.testing.assert_array_equal(tessera.run(m, [[1, 2, 3]])[0], [2, 4, 6])


# From tests/interpreter: a reduction axis marked parallel (a race on two cores),
# a DMA destination read before its wait, and an HBM buffer in run_scoped.
RACE = """
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
index_map @all(%i: i32) -> i32 { return 0 }
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[128], vmem>) {
  %v = get %x[:, :]
  %s = reduce_sum[axes=(0)] %v
  addupdate %o[:], %s
}
func @main(%x: f32[32,128]) -> f32[128] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8, 128), @rows)], out_specs=[spec((128), @all)],
                     out_shapes=[f32[128]], dimension_semantics=(parallel)] %x
  return %out
}
"""
EARLY_READ = """
kernel @k(%x: ref<f32[8,128], any>, %o: ref<f32[8,128], vmem>, %buf: ref<f32[8,128], vmem>,
          %sem: ref<dma_sem, semaphore>) {
  dma_start %x[:, :], %buf[:, :], %sem
  %early = get %buf[:, :]
  dma_wait %sem, %buf[:, :]
  %v = get %buf[:, :]
  %s = add %v, %early
  swap %o[:, :], %s
}
func @main(%x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f32[8,128]], scratch=[ref<f32[8,128], vmem>, ref<dma_sem, semaphore>]] %x
  return %out
}
"""
HBM_SCOPED = """
func @main(%x: f32[4]) -> f32[4] {
  %a = run_scoped[body=fn(%xx: f32[4], %h: ref<f32[4], hbm>, %v: ref<f32[4], vmem>, %s: ref<dma_sem, semaphore>) -> f32[4] {
    swap %v[:], %xx
    dma_start %v[:], %h[:], %s
    dma_wait %s, %h[:]
    dma_start %h[:], %v[:], %s
    dma_wait %s, %v[:]
    %r = get %v[:]
    return %r
  }] %x
  return %a
}
"""


class RunOptions(unittest.TestCase):
    """Each keyword argument of run reaches the interpreter."""

    def test_cores_and_detect_races(self):
        m = tessera.parse(RACE, "race.tsr")
        x = RNG.standard_normal((32, 128)).astype(np.float32)
        with self.assertRaises(tessera.Error) as caught:
            tessera.run(m, [x], cores=2, detect_races=True)
        self.assertIn("RACE DETECTED", caught.exception.message)
        self.assertEqual(caught.exception.file, "race.tsr")
        tessera.run(m, [x], cores=1, detect_races=True)
        tessera.run(m, [x], cores=2)

    def test_dma_and_uninit(self):
        m = tessera.parse(EARLY_READ)
        x = RNG.standard_normal((8, 128)).astype(np.float32)
        np.testing.assert_array_equal(tessera.run(m, [x], dma="eager")[0], 2 * x)  # copied at dma_start
        np.testing.assert_array_equal(tessera.run(m, [x], uninit="zero")[0], x)  # copied at dma_wait
        self.assertTrue(np.isnan(tessera.run(m, [x])[0]).all())
        self.assertIn("RACE DETECTED", self.error_of(lambda: tessera.run(m, [x], detect_races=True)))

    def test_oob(self):
        m = tessera.parse("examples/gather_rows.tsr")
        idx = np.arange(16, dtype=np.int32)
        idx[3] = 2000
        table = RNG.standard_normal((1024, 128)).astype(np.float32)
        self.assertIn("Out-of-bounds", self.error_of(lambda: tessera.run(m, [idx, table])))
        (out,) = tessera.run(m, [idx, table], oob="uninitialized", uninit="zero")
        np.testing.assert_array_equal(out[3], 0)
        np.testing.assert_array_equal(out[4], table[4])

    def test_allow_hbm_scoped(self):
        m = tessera.parse(HBM_SCOPED)
        x = np.arange(4, dtype=np.float32)
        self.assertIn("Cannot allocate HBM in `run_scoped`", self.error_of(lambda: tessera.run(m, [x])))
        np.testing.assert_array_equal(tessera.run(m, [x], allow_hbm_scoped=True)[0], x)

    def test_debug_checks(self):
        m = tessera.parse("tests/cli/run_debug_check.tsr")
        x = np.arange(64, dtype=np.float32)
        self.assertIn("debug_check: check failed: block 3 is the last", self.error_of(lambda: tessera.run(m, [x])))
        np.testing.assert_array_equal(tessera.run(m, [x], debug_checks=False)[0], x)

    def test_trace_file_and_grid_seed(self):
        m = tessera.parse(ADD)
        x = np.zeros((1024, 512), np.float32)
        with tempfile.TemporaryDirectory() as d:
            def trace(**kw):
                path = os.path.join(d, "trace.txt")
                tessera.run(m, [x, x], trace_file=path, **kw)
                with open(path) as f:
                    return f.read().splitlines()

            in_order = trace()
            self.assertEqual(len(in_order), 32)
            self.assertEqual(in_order[:2], ["device 0 core 0 point (0, 0)", "device 0 core 0 point (0, 1)"])
            shuffled = trace(grid_seed=7)
            self.assertNotEqual(shuffled, in_order)
            self.assertEqual(sorted(shuffled), sorted(in_order))
            self.assertTrue(any(" core 1 " in line for line in trace(cores=2)))

    def error_of(self, f):
        with self.assertRaises(tessera.Error) as caught:
            f()
        return caught.exception.message


class Prove(unittest.TestCase):
    def test_a_failed_claim_has_a_counterexample(self):
        m = tessera.parse("tests/analysis/prove_inputs/matmul_k_parallel.tsr")
        claims = {c.name: c for c in tessera.prove(m)}
        race = claims["matmul out[0] parallel safety"]
        self.assertEqual(race.verdict, "failed")
        self.assertFalse(race.proved)
        self.assertEqual(race.counterexample["grid_points"], [(0, 0, 0), (0, 0, 1)])
        self.assertIn("differ on parallel axis 2", race.counterexample["message"])
        self.assertEqual(str(race), "matmul out[0] parallel safety: FAILED " + race.message)
        self.assertEqual((race.call, race.subject, race.kind), ("matmul", "out[0]", "parallel safety"))
        self.assertTrue(claims["matmul in[0] bounds"].proved)

    def test_assume_gives_scalar_prefetch_ranges(self):
        with open("examples/gather_rows.tsr") as f:
            text = f.read()
        self.assertIn("# prove: assume idx in [0, 1024)", text)
        bare = tessera.parse(text.replace("# prove: assume", "#"))

        def bounds(**kw):
            return {c.name: c for c in tessera.prove(bare, **kw)}["gather in[0] bounds"]

        self.assertEqual(bounds().verdict, "failed")
        self.assertTrue(bounds(assume={"idx": (0, 1024)}).proved)
        self.assertTrue(bounds(assume=["idx in [0, 1023]"]).proved)
        too_wide = bounds(assume={"idx": (0, 1025)})
        self.assertEqual(too_wide.counterexample["grid_points"], [(0,)])
        self.assertIn("block index (1024, 0)", too_wide.message)
        # The source's own `# prove: assume` line counts.
        self.assertTrue(all(c.proved for c in tessera.prove(tessera.parse("examples/gather_rows.tsr"))))

    def test_options(self):
        m = tessera.parse("examples/matmul.tsr")
        with tempfile.TemporaryDirectory() as d:
            claims = tessera.prove(m, func="main", intervals=False, rlimit=10**6, timeout_ms=5000, smt2_dir=d)
            self.assertTrue(all(c.proved for c in claims))
            self.assertTrue(any(c.method == "z3" and c.queries >= 1 for c in claims))
            self.assertTrue(os.listdir(d))


class Errors(unittest.TestCase):
    def error(self, f, *args, **kwargs):
        with self.assertRaises(tessera.Error) as caught:
            f(*args, **kwargs)
        return caught.exception

    def assert_at(self, e, file, line, column, message):
        self.assertEqual((e.file, e.line, e.column), (file, line, column), str(e))
        self.assertIn(message, e.message)
        where = f"{file}:{line}:{column}: " if file else ""
        self.assertEqual(str(e).splitlines()[0], f"{where}error: {e.message}")

    def test_error_class(self):
        self.assertTrue(issubclass(tessera.Error, Exception))
        e = tessera.Error("raised from Python")
        self.assertEqual((e.file, e.line, e.column, e.message), (None, 0, 0, ""))

    def test_parse_error(self):
        e = self.error(tessera.parse, "func @main(%x: f32[2]) -> f32[2] {\n  return %y\n}")
        self.assert_at(e, "<string>", 2, 10, "use of undefined value %y")
        e = self.error(tessera.parse, "func @main(%x: f32[2]) -> f32[2] {\n  return %y\n}", "mine.tsr")
        self.assertEqual(e.file, "mine.tsr")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "broken.tsr")
            with open(path, "w") as f:
                f.write("func @main(%x: f32[2]) -> f32[2] {\n  %y = frobnicate %x\n  return %y\n}\n")
            e = self.error(tessera.parse, path)
            self.assertEqual((e.file, e.line), (path, 2))
            self.assertIn("frobnicate", e.message)
        e = self.error(tessera.parse, "examples/no_such_kernel.tsr")
        self.assert_at(e, None, 0, 0, "cannot open file 'examples/no_such_kernel.tsr'")

    def test_verify_error_lists_every_diagnostic(self):
        m = tessera.parse(GET_FROM_ANY_TWICE, "any.tsr")
        e = self.error(m.verify)
        self.assert_at(e, "any.tsr", 5, 3, "cannot get from a Ref in memory space any (%x)")
        self.assertEqual([(d.file, d.line, d.column) for d in e.diagnostics], [("any.tsr", 5, 3), ("any.tsr", 6, 3)])
        self.assertEqual(str(e), "\n".join(str(d) for d in e.diagnostics))
        # Every other entry point verifies first.
        for f in (lambda: tessera.run(m, [np.zeros((16, 128))]), lambda: tessera.opt(m, "dce"), lambda: tessera.prove(m),
                  lambda: tessera.emit(m, "mosaic")):
            self.assertEqual(len(self.error(f).diagnostics), 2)

    def test_opt_errors(self):
        gather = tessera.parse("examples/gather_rows.tsr")
        e = self.error(tessera.opt, gather, "jvp{wrt=0}")
        self.assert_at(e, "examples/gather_rows.tsr", 39, 1, "jvp: input 0 (%idx: i32[16]) is not floating point")
        e = self.error(tessera.opt, gather, "vmap{axis_size=3},nope")
        self.assert_at(e, None, 0, 0, "unknown pass 'nope' in pipeline (known passes: dce,")
        e = self.error(tessera.opt, gather, "vmap{axis_size=x}")
        self.assert_at(e, None, 0, 0, "bad pipeline 'vmap{axis_size=x}' at column 16")
        e = self.error(tessera.opt, gather, "dce", func="nope")
        self.assert_at(e, None, 0, 0, "no function @nope")

    def test_prove_errors(self):
        m = tessera.parse("examples/gather_rows.tsr")
        self.assert_at(self.error(tessera.prove, m, assume=["idx in [3"]), None, 0, 0, "cannot parse assumption 'idx in [3'")
        self.assert_at(self.error(tessera.prove, m, assume={"idx": (5, 5)}), None, 0, 0, "assume[idx]: the range [lo, hi) is empty")
        self.assert_at(self.error(tessera.prove, m, assume={"idx": "0..4"}), None, 0, 0, "must be a pair (lo, hi)")
        self.assert_at(self.error(tessera.prove, m, func="nope"), None, 0, 0, "no function @nope in module (its functions: @main)")

    def test_run_time_errors(self):
        gather = tessera.parse("examples/gather_rows.tsr")
        e = self.error(tessera.run, gather, {"idx": np.full(16, 2000, np.int32), "table": np.zeros((1024, 128), np.float32)})
        self.assert_at(e, "examples/gather_rows.tsr", 40, 3, 'Out-of-bounds block index (2000, 0) for input "row"')
        add = tessera.parse(ADD)
        x = np.zeros((1024, 512), np.float32)
        e = self.error(tessera.run, add, [x, x], max_steps=10)
        self.assert_at(e, ADD, 15, 3, "stopped after 10 steps")
        self.assertIn("max_steps=N", str(e))
        # A step limit is on by default, the one `tessera run --max-steps` has.
        self.assertIn("max_steps: int = 100000000", tessera.run.__doc__)
        e = self.error(tessera.run, add, [x, x], max_memory=1 << 20)
        self.assert_at(e, ADD, 19, 3, "would exceed the memory limit of 1 MiB")

    def test_bad_inputs(self):
        add = tessera.parse(ADD)
        x = np.zeros((1024, 512), np.float32)
        self.assert_at(self.error(tessera.run, add, {"x": np.zeros((3, 3)), "y": x}), ADD, 18, 12,
                       "input %x of @main is f32[1024,512], got an array of shape (3, 3) (dtype float64)")
        self.assert_at(self.error(tessera.run, add, {"x": x, "y": x.astype(complex)}), ADD, 18, 31,
                       "input %y of @main is f32[1024,512]: cannot convert NumPy dtype complex128 to float32")
        self.assert_at(self.error(tessera.run, add, {"x": x, "y": [[1], [2, 3]]}), ADD, 18, 31,
                       "got something NumPy cannot make an array of")
        i32 = tessera.parse("func @main(%n: i32[2]) -> i32[2] {\n  return %n\n}")
        self.assert_at(self.error(tessera.run, i32, [np.array([1.5, 2])]), "<string>", 1, 12,
                       "cannot convert NumPy dtype float64 to int32")
        self.assert_at(self.error(tessera.run, add, {"x": x, "z": x}), ADD, 18, 1,
                       "@main has no parameter %z (its parameters: %x, %y)")
        self.assert_at(self.error(tessera.run, add, {"x": x}), ADD, 18, 1, "missing input %y of @main")
        self.assert_at(self.error(tessera.run, add, [x]), ADD, 18, 1, "@main takes 2 input(s) (%x, %y), got 1")
        with self.assertRaises(TypeError):
            tessera.run(add, x)

    def test_bad_run_options(self):
        add = tessera.parse(ADD)
        x = np.zeros((1024, 512), np.float32)
        self.assert_at(self.error(tessera.run, add, [x, x], dma="later"), None, 0, 0,
                       "dma must be one of eager|on_wait, got 'later'")
        self.assert_at(self.error(tessera.run, add, [x, x], cores=0), None, 0, 0, "cores must be between 1 and 1024")
        self.assert_at(self.error(tessera.run, add, [x, x], max_steps=-1), None, 0, 0, "max_steps must be at least 0")

    def test_unknown_function(self):
        add = tessera.parse(ADD)
        for f in (lambda: tessera.run(add, [], func="nope"), lambda: tessera.emit(add, "ptx", func="nope"),
                  lambda: add.parameters("add_kernel")):
            self.assertIn("no function @", self.error(f).message)
        self.assertIn("(its functions: @main)", self.error(tessera.run, add, [], func="block_ij").message)

    def test_emit(self):
        add = tessera.parse(ADD)
        # ptx: a TPU-only primitive is a located error; without LLVM 19 nothing is lowered.
        dma = "examples/dma_pipeline.tsr"
        e = self.error(tessera.emit, tessera.parse(dma), "ptx")
        if "built without LLVM" in e.message:
            self.assert_at(e, None, 0, 0, "tessera was built without LLVM 19 (meson option llvm)")
        else:
            self.assert_at(e, dma, 34, 3, "ptx: no lowering for `dma_start` (TPU-only)")
            self.assertIn(".visible .entry add_kernel(", tessera.emit(add, "ptx"))
        text = tessera.emit(tessera.parse("examples/gather_rows.tsr"), "mosaic")
        self.assertTrue(text.startswith("// examples/gather_rows.tsr:40:3: pallas_call of @gather_kernel\nmodule {\n"), text)
        self.assertIn('"tpu.vector_store"', text)
        self.assert_at(self.error(tessera.emit, add, "cuda"), None, 0, 0, "unknown target 'cuda' (targets: mosaic, ptx, llvm)")


if __name__ == "__main__":
    sys.exit(main())
