"""scripts/gpu_bench.py: the parts that need no GPU, torch, CuPy or JAX. The
benchmark's tessera programs, at small sizes (the same program text), run in
the interpreter and match NumPy; the bundle holds their PTX and launches
(a kernel tessera cannot emit is recorded, the others still are); the launch
header's dynamic shared-memory size is read; the tables print fake timings.

TESSERA names the CLI (meson passes the build's); without LLVM the bundle
test is skipped.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import gpu_bench  # noqa: E402
from unittest_main import main  # noqa: E402

TESSERA = os.environ.get("TESSERA", "build/tools/tessera")


def bf16_round(a):
    """a (f32) rounded to the nearest bf16, ties to even, as f32 (how tessera reads bf16 .npy files)."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def flash_reference(q, k, v, causal):
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("hqk,hkd->hqd", p / p.sum(axis=-1, keepdims=True), v.astype(np.float64))


def small_case(name, s, rng):
    """The inputs of the small program (by parameter) and NumPy's result."""
    def randn(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    if name.startswith("matmul"):
        x, y = randn(s["m"], s["k"]), randn(s["k"], s["n"])
        if name == "matmul_bf16":
            x, y = bf16_round(x), bf16_round(y)
        return {"x": x, "y": y}, x.astype(np.float64) @ y
    if name == "softmax":
        x = randn(s["r"], s["c"])
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return {"x": x}, e / e.sum(axis=1, keepdims=True)
    if name == "layernorm":
        x, g, b = randn(s["r"], s["c"]), randn(s["c"]), randn(s["c"])
        c = x.astype(np.float64) - x.mean(axis=1, keepdims=True)
        return {"x": x, "gamma": g, "beta": b}, c / np.sqrt((c * c).mean(axis=1, keepdims=True) + 1e-5) * g + b
    if name == "add":
        x, y = randn(s["n"], s["n"]), randn(s["n"], s["n"])
        return {"x": x, "y": y}, x + y
    q, k, v = (bf16_round(randn(s["batch"] * s["heads"], s["seq"], s["dim"])) for _ in range(3))
    return {"q": q, "k": k, "v": v}, flash_reference(q, k, v, name == "flash_causal")


def fake_row(title, unit, tessera, pallas, torch):
    row = {"title": title, "unit": unit, "tessera": tessera, "pallas": pallas, "torch": torch}
    row["ratio"] = gpu_bench.ratio_of(row)
    return row


class GpuBench(unittest.TestCase):
    def test_small_programs_match_numpy(self):
        rng = np.random.default_rng(0)
        self.assertEqual([k["name"] for k in gpu_bench.KERNELS],
                         ["matmul_bf16", "matmul_f32", "softmax", "layernorm", "add", "flash_full", "flash_causal"])
        with tempfile.TemporaryDirectory() as tmp:
            for k in gpu_bench.KERNELS:
                with self.subTest(kernel=k["name"]):
                    src = os.path.join(tmp, k["name"] + ".tsr")
                    pathlib.Path(src).write_text(k["program"](k["small"]))
                    inputs, want = small_case(k["name"], k["small"], rng)
                    args = []
                    for pname, a in inputs.items():
                        np.save(os.path.join(tmp, pname + ".npy"), a)
                        args += ["--input", f"{pname}={os.path.join(tmp, pname + '.npy')}"]
                    out = os.path.join(tmp, k["name"] + ".out")
                    run = subprocess.run([TESSERA, "run", src, "--out", out] + args, capture_output=True, text=True)
                    self.assertEqual(run.returncode, 0, run.stderr)
                    got = np.load(os.path.join(out, "out0.npy")).astype(np.float64)
                    err = np.abs(got - want).max() / np.abs(want).max()
                    # bf16 outputs (flash attention) carry bf16's rounding; f32 ones the summation order.
                    self.assertLess(err, 1e-2 if k["name"].startswith("flash") else 1e-5)

    def test_work_counts(self):
        self.assertEqual(gpu_bench.WORK["matmul_f32"](dict(m=2, n=3, k=4)), 48)
        self.assertEqual(gpu_bench.WORK["add"](dict(n=4)), 3 * 4 * 16)
        full = gpu_bench.WORK["flash_full"](dict(batch=2, heads=3, seq=8, dim=4))
        self.assertEqual(full, 4 * 6 * 8 * 8 * 4)
        self.assertEqual(gpu_bench.WORK["flash_causal"](dict(batch=2, heads=3, seq=8, dim=4)), full / 2)

    def test_bundle(self):
        # A kernel tessera has no PTX lowering for is recorded with its error; the others are emitted.
        refused = dict(gpu_bench.KERNELS[0], name="dma_only",
                       program=lambda s: pathlib.Path("examples/dma_pipeline.tsr").read_text())
        kernels = gpu_bench.KERNELS
        gpu_bench.KERNELS = [k for k in kernels if k["name"] in ("add", "flash_causal")] + [refused]
        try:
            with tempfile.TemporaryDirectory() as tmp:
                manifest = gpu_bench.make_bundle(tmp, os.path.dirname(os.path.dirname(TESSERA)))
                on_disk = json.loads(pathlib.Path(tmp, "manifest.json").read_text())
                files = sorted(os.listdir(tmp))
        finally:
            gpu_bench.KERNELS = kernels
        self.assertEqual(on_disk, manifest)
        add, flash, dma = manifest["kernels"]
        if "without LLVM" in add.get("error", ""):
            self.skipTest("tessera was built without LLVM 19: no PTX")
        self.assertNotIn("error", add)
        self.assertEqual(add["launch"]["90"], {"symbol": "add_block", "grid": [128, 128, 1], "threads": 256,
                                               "arena_bytes": 0, "check_record": "add_block_check",
                                               "shared_bytes": 0})
        self.assertEqual(flash["launch"]["80"]["grid"], [32, 16, 1])
        self.assertEqual(flash["work"], 4.0 * 32 * 2048 * 2048 * 128 / 2)
        self.assertIn("no lowering for `dma_start`", dma["error"])
        self.assertEqual(files, ["add.sm80.ptx", "add.sm90.ptx", "add.tsr", "dma_only.tsr", "flash_causal.sm80.ptx",
                                 "flash_causal.sm90.ptx", "flash_causal.tsr", "manifest.json"])

    def test_bundle_without_launch_header(self):
        # A PTX whose `// tessera:` header lacks the launch is recorded as an error, not packed.
        with tempfile.TemporaryDirectory() as tmp:
            fake = pathlib.Path(tmp, "build", "tools", "tessera")
            fake.parent.mkdir(parents=True)
            fake.write_text('#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\necho "// tessera: k: arena 0 bytes" > "$2"\n')
            fake.chmod(0o755)
            manifest = gpu_bench.make_bundle(os.path.join(tmp, "out"), os.path.join(tmp, "build"), names=["add"])
        self.assertEqual(manifest["kernels"][0]["error"], "add.sm80.ptx: no launch in its `// tessera:` header")

    def test_shared_bytes(self):
        header = ("// tessera: k: pointers (x, o, workspace); arena 64 bytes per grid point\n"
                  "// tessera: k: launch (4, 2, 1) x 128 threads{}; 8 parallel points\n"
                  "// tessera: k: check record k_check (18 x i64)\n")
        facts = gpu_bench.launch_facts(header.format(""))
        self.assertEqual(facts, {"symbol": "k", "grid": [4, 2, 1], "threads": 128, "arena_bytes": 64,
                                 "check_record": "k_check", "shared_bytes": 0})
        facts = gpu_bench.launch_facts(header.format(", 49152 bytes dynamic shared memory"))
        self.assertEqual(facts["shared_bytes"], 49152)

    def test_tables(self):
        rows = [
            fake_row("matmul bf16", "TFLOP/s", {"value": 3.21, "err": 3e-7, "wrong": False},
                     {"value": 605.4, "err": 2.5e-7, "wrong": False}, {"value": 767.0, "err": 0.0039, "wrong": False}),
            fake_row("softmax", "GB/s", {"value": 461.2, "err": 1e-8, "wrong": False},
                     {"status": "n/a", "reason": "JAX is not installed"}, {"value": 2513.0, "err": 0.0, "wrong": False}),
            fake_row("add", "GB/s", {"value": 3859.0, "err": 0.5, "wrong": True},
                     {"value": 3948.0, "err": 0.0, "wrong": False}, {"value": 4336.0, "err": 0.0, "wrong": False}),
            fake_row("flash", "TFLOP/s", {"status": "failed", "reason": "CUDADriverError: ..."},
                     {"status": "failed", "reason": "ValueError"}, {"value": 0.75, "err": 0.0, "wrong": False}),
        ]
        table, errors = gpu_bench.format_tables(rows)
        self.assertEqual(table, "\n".join([
            "| kernel | tessera PTX | Pallas on GPU | torch / cuBLAS | tessera ÷ best |",
            "| --- | --- | --- | --- | --- |",
            "| matmul bf16 | 3.2 TFLOP/s | 605 TFLOP/s | 767 TFLOP/s | 0.4 % |",
            "| softmax | 461 GB/s | n/a | 2513 GB/s | 18 % |",
            "| add | 3859 GB/s (wrong) | 3948 GB/s | 4336 GB/s | - |",
            "| flash | failed | failed | 0.75 TFLOP/s | - |"]))
        self.assertEqual(errors, "\n".join([
            "| kernel | tessera PTX | Pallas on GPU | torch / cuBLAS |",
            "| --- | --- | --- | --- |",
            "| matmul bf16 | 3e-07 | 2.5e-07 | 0.0039 |",
            "| softmax | 1e-08 | n/a | 0 |",
            "| add | 0.5 (above tolerance) | 0 | 0 |",
            "| flash | failed | failed | 0 |"]))

    def test_usage(self):
        self.assertEqual(gpu_bench.main(["gpu_bench.py"]), 2)
        self.assertEqual(gpu_bench.main(["gpu_bench.py", "--bundle"]), 2)


if __name__ == "__main__":
    sys.exit(main())
