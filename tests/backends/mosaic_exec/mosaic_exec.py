#!/usr/bin/python3
"""Runs an emitted Mosaic TensorCore module on the CPU and compares it with `tessera run`.

  mosaic_exec.py --tessera BIN --tsr KERNEL.tsr --mosaic KERNEL.mlir [--func main]
                 [--seed N] [--rtol X] [--keep DIR] [--expect-mismatch]

1. The exact Mosaic text (`tessera emit mosaic`, not --checkable) is re-printed by
   `mlir-opt-19 --allow-unregistered-dialect` (after `#tpu.memory_space<X>` -> `"X"`,
   the only way upstream parses a memref in a Mosaic memory space), then rewritten
   into upstream MLIR by upstream_table.py, the one table this check trusts.
2. driver.py appends `@main`, which plays the Mosaic pipeline over the grid on
   deterministic inputs (the same arrays `tessera run` gets as .npy files).
3. The module is lowered with mlir-opt-19 (PIPELINE below) and run with
   mlir-cpu-runner-19; each output is compared with the interpreter's.

Exit status: 0 all outputs match; 1 a mismatch or any error (with a message);
77 (meson's skip) when mlir-opt-19, mlir-cpu-runner-19, their runner libraries
or numpy are missing. --expect-mismatch inverts the verdict for the negative
self-test: 0 only when the run completes and some output does NOT match.

Tolerance: an output matches when its NaNs are where the interpreter's are and
max|got - want| <= RTOL * max(1, max|want|) over the finite elements (f32;
integers must be equal). RTOL defaults to 1e-5, about 80 f32 ulps of the largest
value: both sides compute in f32, but summation order (matmul, reductions) and
libm versus LLVM's exp/rsqrt differ in the last bits; a wrong kernel (an op
replaced by another, a wrong window) is off by O(1) relative.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
LLVM = '/usr/lib/llvm-19'
RUNNER_LIBS = [f'{LLVM}/lib/libmlir_c_runner_utils.so.19.1', f'{LLVM}/lib/libmlir_runner_utils.so.19.1']

# mosaic-emit.md section 11's pipeline, plus: the transform library that lowers
# vector.multi_reduction (convert-vector-to-llvm does not), math-to-llvm/libm for
# math.* ops, and arith-expand for arith ops LLVM has no instruction for.
PIPELINE = [
    f'--transform-preload-library=transform-library-paths={HERE}/lower_vector.mlir',
    '--transform-interpreter',
    '--convert-linalg-to-loops', '--convert-vector-to-scf', '--lower-affine', '--arith-expand',
    '--convert-math-to-llvm', '--convert-math-to-libm',
    '--convert-scf-to-cf', '--convert-vector-to-llvm', '--expand-strided-metadata', '--lower-affine',
    '--finalize-memref-to-llvm', '--convert-func-to-llvm', '--convert-arith-to-llvm',
    '--convert-index-to-llvm', '--convert-cf-to-llvm', '--reconcile-unrealized-casts',
]


def skip(msg):
    print(f'SKIP: {msg}', file=sys.stderr)
    sys.exit(SKIP)


try:
    import numpy as np
except ImportError:
    skip('numpy is missing (run with /usr/bin/python3, or apt-get install python3-numpy)')

sys.path.insert(0, HERE)
import driver  # noqa: E402
import tsr_call  # noqa: E402
import upstream_module  # noqa: E402
from mlir_text import TextError  # noqa: E402


class Failure(Exception):
    pass


def check_tools():
    for tool in ('mlir-opt-19', 'mlir-cpu-runner-19'):
        if shutil.which(tool) is None:
            skip(f'{tool} is missing (scripts/install-deps.sh installs mlir-19-tools)')
    for lib in RUNNER_LIBS:
        if not os.path.exists(lib):
            skip(f'{lib} is missing (scripts/install-deps.sh installs libmlir-19)')


def run(cmd, what, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise Failure(f'{what} failed (exit {p.returncode}): {" ".join(cmd[:3])} ...\n{p.stderr.strip()}')
    return p.stdout


def one_module(text):
    """The single kernel module of `tessera emit mosaic` output (`// -----` separates modules)."""
    chunks = [c for c in text.split('\n// -----\n') if 'func.func' in c]
    if len(chunks) != 1:
        raise Failure(f'the Mosaic text holds {len(chunks)} modules; the harness runs one pallas_call')
    chunk = chunks[0]
    if '!tpu.dma_semaphore' in chunk or '!tpu.semaphore' in chunk:
        raise Failure('`!tpu.semaphore` / `!tpu.dma_semaphore`: semaphores and DMAs are not simulated')
    return re.sub(r'#tpu\.memory_space<([a-z_]+)>', r'"\1"', chunk)


def parse_outputs(stdout, arrays, kernel):
    """The driver's printMemref output -> arrays of the outputs' dtypes (same bits).

    The first memref is the out-of-array record [operand + 1, dim, grid indices...]
    (driver.py); then one printMemrefI32 per output, over its raw 32-bit words."""
    blocks = stdout.split('Unranked Memref')[1:]
    outs = [a for a in arrays if a.role == 'output']
    if len(blocks) != 1 + len(outs):
        raise Failure(f'the runner printed {len(blocks)} memrefs for {len(outs)} outputs:\n{stdout[:2000]}')
    words = [np.array(b.split('data =', 1)[1].replace('[', ' ').replace(']', ' ').replace(',', ' ').split(),
                      dtype=np.int64) for b in blocks]
    record = words[0]
    if record[0]:
        pos, dim, point = int(record[0]) - 1, int(record[1]), tuple(int(g) for g in record[2:])
        k = pos - kernel.n_prefetch
        raise Failure(f'@{kernel.window_params[k]["transform"]} returned a block index out of the array '
                      f'(operand {pos}, dim {dim}) at grid point {point}')
    got = []
    for data, arr in zip(words[1:], outs):
        if data.size != arr.size:
            raise Failure(f'an output printed {data.size} words, expected {arr.size}')
        bits = (data & 0xFFFFFFFF).astype(np.uint32)  # printMemrefI32 prints signed words
        dtype = np.float32 if arr.elem == 'f32' else np.int32
        got.append(bits.view(dtype).reshape(arr.shape))
    return got


def compare(name, got, want, rtol):
    """(ok, description) for one output."""
    if got.shape != want.shape:
        return False, f'{name}: shape {got.shape} != interpreter {want.shape}'
    if got.dtype.kind == 'i':
        bad = int(np.count_nonzero(got != want))
        return bad == 0, f'{name}: {bad} of {want.size} integers differ'
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    if (nan_got != nan_want).any():
        i = np.unravel_index(np.argmax(nan_got != nan_want), got.shape)
        return False, (f'{name}: NaN pattern differs ({int(nan_got.sum())} NaN vs {int(nan_want.sum())} in the '
                       f'interpreter), first at {tuple(int(x) for x in i)}: {got[i]} vs {want[i]}')
    fin = ~nan_want
    if not fin.any():
        return True, f'{name}: all NaN on both sides'
    g, w = got[fin].astype(np.float64), want[fin].astype(np.float64)
    scale = max(1.0, float(np.abs(w).max()))
    err = float(np.abs(g - w).max()) / scale
    ok = err <= rtol
    where = ''
    if not ok:
        i = np.unravel_index(np.argmax(np.where(fin, np.abs(got.astype(np.float64) - want), -1)), got.shape)
        where = f', worst at {tuple(int(x) for x in i)}: {got[i]!r} vs {want[i]!r}'
    return ok, f'{name}: max relative error {err:.3g} (tolerance {rtol:g}){where}'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tessera', required=True)
    ap.add_argument('--tsr', required=True)
    ap.add_argument('--mosaic', required=True, help='exact Mosaic text of the kernel (tessera emit mosaic)')
    ap.add_argument('--func', default='main')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--rtol', type=float, default=1e-5)
    ap.add_argument('--keep', help='keep the generated files in this directory')
    ap.add_argument('--expect-mismatch', action='store_true',
                    help='negative test: succeed only if the run completes and an output differs')
    args = ap.parse_args()
    check_tools()
    work = args.keep or tempfile.mkdtemp(prefix='mosaic-exec-')
    os.makedirs(work, exist_ok=True)
    try:
        verdict = check(args, work)
    except (Failure, TextError, tsr_call.TsrError, ValueError, OSError) as e:
        print(f'mosaic_exec: {args.mosaic}: error: {e}', file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.expect_mismatch:
        print('negative test: ' + ('the harness caught the wrong kernel' if not verdict else
                                   'FAILED: the wrong kernel matched the interpreter'))
        return 0 if not verdict else 1
    return 0 if verdict else 1


def check(args, work):
    t0 = time.time()
    exact = open(args.mosaic, encoding='utf-8').read()
    checkable = os.path.join(work, 'kernel.checkable.mlir')
    with open(checkable, 'w') as f:
        f.write(one_module(exact))
    normalized = run(['mlir-opt-19', '--allow-unregistered-dialect', checkable], 'mlir-opt-19 (parse the kernel)')
    kernel, upstream = upstream_module.convert(normalized)

    call = tsr_call.read(args.tsr, args.func)
    inputs = tsr_call.make_inputs(call, args.seed)
    cmd = [args.tessera, 'run', args.tsr, '--func', args.func, '--out', os.path.join(work, 'interp')]
    for name, value in inputs.items():
        path = os.path.join(work, f'in_{name}.npy')
        np.save(path, value)
        cmd += ['--input', f'{name}={path}']
    run(cmd, 'tessera run')
    wants = [np.load(os.path.join(work, 'interp', f'out{i}.npy')) for i in range(len(call.results))]

    arrays = []
    for k, name in enumerate(call.operands):
        value = inputs[name]
        role = 'prefetch' if k < call.n_prefetch else 'input'
        arrays.append(driver.Array(role, value.shape, driver.ELEM[value.dtype], value))
    for want in wants:
        if want.dtype not in driver.ELEM:
            raise Failure(f'output dtype {want.dtype} is not supported by the driver')
        arrays.append(driver.Array('output', want.shape, driver.ELEM[want.dtype]))
    if kernel.n_prefetch != call.n_prefetch:
        raise Failure(f'the kernel has {kernel.n_prefetch} scalar prefetch operands, the .tsr call {call.n_prefetch}')
    main_text = driver.generate(kernel, arrays)
    module = os.path.join(work, 'kernel.upstream.mlir')
    with open(module, 'w') as f:
        f.write('module {\n' + upstream + '\n' + main_text + '}\n')
    llvm = os.path.join(work, 'kernel.llvm.mlir')
    run(['mlir-opt-19', module] + PIPELINE + ['-o', llvm], 'mlir-opt-19 (lower to LLVM)')
    t1 = time.time()
    cmd = ['mlir-cpu-runner-19', llvm, '-e', 'main', '-entry-point-result=void']
    cmd += [f'-shared-libs={lib}' for lib in RUNNER_LIBS]
    out = run(cmd, 'mlir-cpu-runner-19')
    t2 = time.time()
    gots = parse_outputs(out, arrays, kernel)
    ok_all = True
    grid = 'x'.join(map(str, kernel.iteration_bounds)) or 'no'
    print(f'{os.path.basename(args.tsr)}: kernel @{kernel.name}, {grid} grid, '
          f'lowered in {t1 - t0:.1f}s, ran in {t2 - t1:.1f}s')
    for i, (got, want) in enumerate(zip(gots, wants)):
        ok, text = compare(f'out{i}', got, want, args.rtol)
        print(('  ok       ' if ok else '  MISMATCH ') + text)
        ok_all &= ok
    return ok_all


if __name__ == '__main__':
    sys.exit(main())
