#!/usr/bin/env python3
"""Runs the NVPTX form of test_llvm_values's cases on a GPU and compares them
with the interpreter's outputs (a manual check for machines with a GPU; CI
has none).

  TESSERA_VALUES_GPU_DUMP=DIR build/tests/backends/llvm/test_llvm_values   # here
  python3 tests/backends/llvm/values_gpu_check.py DIR                      # on the GPU machine (CuPy)

Each case is one CTA of 256 threads running `test_entry(slots)`. Integers and
bools must match exactly; floats are reported as the largest distance in units
in the last place (of the stored dtype) and the number of inexact elements,
per output, since libdevice's math functions are not glibc's.
"""
import glob
import os
import sys

import numpy as np

STORAGE = {"f32": np.float32, "f64": np.float64, "bf16": np.uint16, "f16": np.float16, "bool": np.uint8, "i8": np.int8,
           "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32}


BITS = {"f32": (np.uint32, 32), "f64": (np.uint64, 64), "bf16": (np.uint16, 16), "f16": (np.uint16, 16)}


def ordered(bits, width):
    """A float's bit pattern as an integer in the order of the values."""
    sign = 1 << (width - 1)
    return -(bits & (sign - 1)) if bits & sign else bits


def ulps(dtype, got, want):
    """Largest ulp distance and the count of differing elements (NaN == NaN)."""
    utype, width = BITS[dtype]
    g, w = got.view(utype), want.view(utype)
    exp_mask = ((1 << {16: 8 if dtype == "bf16" else 5, 32: 8, 64: 11}[width]) - 1)
    mant = {"bf16": 7, "f16": 10, "f32": 23, "f64": 52}[dtype]

    def is_nan(bits):
        return (bits >> mant) & exp_mask == exp_mask and bits & ((1 << mant) - 1) != 0

    worst, count = 0, 0
    for i in np.nonzero(g != w)[0]:
        x, y = int(g[i]), int(w[i])
        if is_nan(x) and is_nan(y):
            continue
        count += 1
        worst = max(worst, abs(ordered(x, width) - ordered(y, width)))
    return worst, count


def main():
    import cupy as cp

    folder = sys.argv[1]
    failures = 0
    for meta_path in sorted(glob.glob(os.path.join(folder, "case*.meta")), key=lambda p: int(p.split("case")[-1][:-5])):
        stem = meta_path[:-5]
        lines = open(meta_path).read().splitlines()
        arena = int(lines[0].split()[1])
        ins, outs = [], []
        for line in lines[1:]:
            kind, dtype, size, file, *what = line.split(" ", 4)
            data = np.fromfile(os.path.join(folder, file), dtype=STORAGE[dtype], count=int(size))
            (ins if kind == "in" else outs).append((dtype, data, " ".join(what)))
        module = cp.RawModule(path=stem + ".ptx")
        kernel = module.get_function("test_entry")
        bufs = [cp.asarray(d) for _, d, _ in ins] + [cp.zeros(len(d), dtype=d.dtype) for _, d, _ in outs]
        bufs.append(cp.zeros(max(arena, 64), dtype=np.uint8))
        slots = cp.asarray(np.array([b.data.ptr for b in bufs], dtype=np.uint64))
        kernel((1,), (256,), (slots,))
        cp.cuda.runtime.deviceSynchronize()
        for k, (dtype, want, what) in enumerate(outs):
            got = cp.asnumpy(bufs[len(ins) + k])
            if dtype in ("f32", "f64", "bf16", "f16"):
                worst, count = ulps(dtype, got, want)
                status = "exact" if count == 0 else f"{count} inexact, at most {worst} ulp"
                if worst > 4:
                    failures += 1
                    status += "  <-- MORE THAN 4 ULP"
            else:
                bad = int((got != want).sum())
                status = "exact" if bad == 0 else f"{bad} DIFFER"
                failures += bad != 0
            print(f"{os.path.basename(stem)} out{k} {dtype:5} {status:40} {what}")
    print(f"gpu check: {failures} output(s) off")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
