#!/usr/bin/env python3
"""Runs a bundle made by scripts/gpu_bundle.py on an NVIDIA GPU with CuPy (no
tessera build needed there): every kernel's PTX launched as tessera would
launch it (`tessera run --backend=cuda`), its outputs compared with the
interpreter's (largest relative error per output; f32 fails above 1e-5, or
above the kernel's `tolerance` where the bundle gives one: tensor-core
matmuls sum in another order) and
its check record (backends/llvm/run_checks.h, a global the kernel writes)
read after the launch: clear where the interpreter ran, holding the kind its
error implies where it failed (an out-of-bounds block or SMEM index); then
the bandwidth of the 1 GiB add and copy (kernel time alone, CUDA events over
20 launches after a warm-up), as GB/s and as the fraction of the card's peak
(2 x memory clock x bus width, from the device's attributes).

  python3 scripts/gpu_run.py BUNDLE_DIR

Last line: "gpu_run: N failed".
"""

import functools
import json
import os
import sys

import cupy as cp
import numpy as np


CHECK_WORDS = 18  # the check record: kind, operand or op, 8 grid indices, 8 index values


def uninitialized(shape, dtype):
    """What the runner starts an output with: NaN, the integer's largest value."""
    dtype = np.dtype(dtype)
    fill = np.nan if dtype.kind == 'f' else np.iinfo(dtype).max
    return cp.full(shape, fill, dtype=dtype)


def launch(bundle, entry, ptx_file, inputs, out_types):
    """out_types: (shape, dtype) per output. An aliased output starts as its input."""
    module = cp.RawModule(path=os.path.join(bundle, ptx_file))
    fn = module.get_function(entry['symbol'])
    # The kernel's dynamic shared memory (`// tessera:` launch line); above 48 KiB it must opt in.
    shared = entry.get('shared_bytes', 0)
    if shared > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = shared
    fn = functools.partial(fn, shared_mem=shared)
    outs = [uninitialized(s, d) for s, d in out_types]
    for i, o in entry.get('aliases', []):
        outs[o] = inputs[i].copy()
    ctas = entry['grid'][0] * entry['grid'][1] * entry['grid'][2]
    work = cp.zeros(max(1, entry['arena_bytes'] * ctas), dtype=cp.uint8)
    args = tuple(inputs) + tuple(outs) + (work,)
    record = None
    if 'check_record' in entry:
        record = cp.ndarray((CHECK_WORDS,), cp.int64, memptr=module.get_global(entry['check_record']))
        record[:] = 0
    return fn, args, outs, record


def device_input(a, dtype):
    """A bf16 parameter travels as float32 holding bf16 values: the kernel reads its top 16 bits."""
    if dtype == 'bf16':
        return cp.asarray((a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16))
    return cp.asarray(a)


def rel_err(got, want):
    want = want.astype(np.float64)
    got = got.astype(np.float64)
    scale = np.maximum(np.abs(want), 1.0)
    return float(np.max(np.abs(got - want) / scale)) if want.size else 0.0


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    bundle = argv[1]
    manifest = json.load(open(os.path.join(bundle, 'manifest.json')))
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    print(f"gpu: {props['name'].decode()}, compute capability {dev.compute_capability}")
    failed = 0
    for k in manifest['kernels']:
        inputs = [device_input(np.load(os.path.join(bundle, p)), dt)
                  for p, dt in zip(k['inputs'], k.get('input_dtypes', ['f32'] * len(k['inputs'])))]
        want = [np.load(os.path.join(bundle, p)) for p in k['outputs']]
        types = [(w.shape, w.dtype) for w in want] if 'error' not in k else \
            [(tuple(shape), {'f32': np.float32, 'i32': np.int32, 'i16': np.int16}[dt]) for dt, shape in k['out_types']]
        fn, args, outs, record = launch(bundle, k, k['name'] + '.ptx', inputs, types)
        fn(tuple(k['grid']), (k['threads'], 1, 1), args)
        cp.cuda.Device().synchronize()
        rec = [int(w) for w in (cp.asnumpy(record) if record is not None else np.zeros(CHECK_WORDS, np.int64))]
        where = f"check record: kind {rec[0]}, operand / op {rec[1]}, grid point {tuple(rec[2:10])}, values {tuple(rec[10:18])}"
        if 'error' in k:
            ok = rec[0] == k['error_kind']
            failed += not ok
            print(f"{k['name']}: launch {tuple(k['grid'])} x {k['threads']}, {where} {'ok' if ok else 'FAILED'} "
                  f"(the interpreter: {k['error'].splitlines()[-1]})")
            continue
        errs = [rel_err(cp.asnumpy(o), w) for o, w in zip(outs, want)]
        ok = all(e <= k.get('tolerance', 1e-5) for e in errs) and rec[0] == 0
        failed += not ok
        print(f"{k['name']}: launch {tuple(k['grid'])} x {k['threads']}, largest relative error "
              f"{', '.join(f'{e:.3g}' for e in errs)}{'' if rec[0] == 0 else ', ' + where} {'ok' if ok else 'FAILED'}")
    clock_khz = cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrMemoryClockRate, dev.id)
    bus_bits = cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrGlobalMemoryBusWidth, dev.id)
    peak = 2.0 * clock_khz * 1e3 * bus_bits / 8
    print(f'peak from the attributes: {peak / 1e9:.0f} GB/s (memory clock {clock_khz / 1e3:.0f} MHz, {bus_bits}-bit bus)')
    for s in manifest['stream']:
        n = s['n']
        inputs = [cp.random.standard_normal((n, n), dtype=cp.float32) for _ in range(s['inputs'])]
        fn, args, outs, _ = launch(bundle, s, f"stream_{s['name']}.ptx", inputs, [((n, n), np.float32)])
        grid, block = tuple(s['grid']), (s['threads'], 1, 1)
        fn(grid, block, args)
        want = sum(inputs[1:], inputs[0])
        err = float(cp.max(cp.abs(outs[0] - want)))
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        reps = 20
        start.record()
        for _ in range(reps):
            fn(grid, block, args)
        stop.record()
        stop.synchronize()
        ms = cp.cuda.get_elapsed_time(start, stop) / reps
        moved = 4.0 * n * n * (s['inputs'] + 1)
        gbs = moved / (ms * 1e-3) / 1e9
        print(f"bandwidth {s['name']}: {ms:.3f} ms per launch, {gbs:.0f} GB/s, {100 * gbs * 1e9 / peak:.1f}% of peak "
              f"({100 * gbs / 3350:.1f}% of 3.35 TB/s); largest error {err:g}")
        failed += err != 0.0
    print(f'gpu_run: {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
