#!/usr/bin/python3
"""Packs what a GPU machine without a tessera build needs to check the PTX
backend: per zoo kernel its PTX (`tessera emit ptx`), its launch (read from
the `// tessera:` lines), random inputs and the interpreter's outputs, all as
files; the kernels of tests/backends/llvm/checks/ that the GPU checks itself
(an out-of-bounds block index and SMEM index: the check record the kernel
writes, with the kind the interpreter's error implies; an in-place transpose
through input_output_aliases, a kernel writing its input block, uninitialized
i16 scratch: the interpreter's outputs); plus the PTX of two 1 GiB streaming
kernels (add, copy) for a bandwidth run. scripts/gpu_run.py runs the bundle
there with CuPy.

  scripts/gpu_bundle.py OUT_DIR [--build build]

Only programs whose @main is one pallas_call over @main's parameters in order
(the zoo's) are packed: the pointers are then those parameters, the outputs,
and the workspace.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np

ZOO = ['add', 'matmul', 'softmax', 'layernorm', 'flash_attention', 'cumsum', 'row_sum', 'gather_rows']
# tests/backends/llvm/checks/ kernels whose check is on the device (revisits are checked on the host).
CHECKS = ['oob_block', 'oob_smem', 'alias_transpose', 'write_input', 'uninit_i16']
# tests/backends/llvm/kernels/ kernels lowered to tensor cores (mma.sync): they sum in another order than
# the interpreter, so they are compared within a tolerance (relative to max(|x|, 1)).
TENSOR_CORE = {'matmul_bf16': 1e-3}
# The check record kind (backends/llvm/run_checks.h) that the interpreter's error implies.
ERROR_KINDS = [('Out-of-bounds block index', 1), ('Out-of-bounds read', 2), ('Out-of-bounds write', 2)]
N, B = 16384, 128  # the bandwidth kernels: f32[N, N] arrays (1 GiB) in B x B blocks

STREAM = {
    'add': ('%x: ref<f32[B,B], vmem>, %y: ref<f32[B,B], vmem>, %o: ref<f32[B,B], vmem>',
            '  %a = get %x[:, :]\n  %b = get %y[:, :]\n  %c = add %a, %b\n  swap %o[:, :], %c\n', ['x', 'y']),
    'copy': ('%x: ref<f32[B,B], vmem>, %o: ref<f32[B,B], vmem>', '  %a = get %x[:, :]\n  swap %o[:, :], %a\n', ['x']),
}


def stream_program(name):
    params, body, ins = STREAM[name]
    specs = ', '.join(['spec((B, B), @ij)'] * len(ins))
    text = ('index_map @ij(%i: i32, %j: i32) -> (i32, i32) {\n  return %i, %j\n}\n'
            f'kernel @{name}_kernel({params}) {{\n{body}}}\n'
            f'func @main({", ".join(f"%{x}: f32[N,N]" for x in ins)}) -> f32[N,N] {{\n'
            f'  %o = pallas_call[kernel=@{name}_kernel, grid=(G, G), in_specs=[{specs}], out_specs=[spec((B, B), @ij)],\n'
            f'                   out_shapes=[f32[N,N]], dimension_semantics=(parallel, parallel)] {", ".join("%" + x for x in ins)}\n'
            '  return %o\n}\n')
    return text.replace('G', str(N // B)).replace('B', str(B)).replace('N', str(N)), len(ins)


def launch_of(ptx):
    """The kernel's symbol, launch grid, threads and arena from `// tessera:` lines."""
    lines = [l for l in ptx.splitlines() if l.startswith('// tessera: ')]
    launch = next(l for l in lines if ' launch (' in l)
    m = re.search(r'// tessera: (\w+): launch \((\d+), (\d+), (\d+)\) x (\d+) threads', launch)
    arena = re.search(r'arena (\d+) bytes', next(l for l in lines if ' arena ' in l))
    check = re.search(r'check record (\w+) ', next(l for l in lines if ' check record ' in l))
    shared = re.search(r'(\d+) bytes dynamic shared memory', launch)
    return {'symbol': m.group(1), 'grid': [int(m.group(i)) for i in (2, 3, 4)], 'threads': int(m.group(5)),
            'arena_bytes': int(arena.group(1)), 'check_record': check.group(1),
            'shared_bytes': int(shared.group(1)) if shared else 0}


def params_of(text):
    """@main's parameters: (name, dtype, shape)."""
    m = re.search(r'func @main\((.*?)\) ->', text, re.S)
    return [(n, dt, [int(x) for x in shape.split(',')])
            for n, dt, shape in re.findall(r'%(\w+):\s*(\w+)\[([\d,\s]*)\]', m.group(1))]


def main(argv):
    if len(argv) < 2 or argv[1] in ('-h', '--help'):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out_dir = argv[1]
    build = argv[argv.index('--build') + 1] if '--build' in argv else 'build'
    tessera = os.path.join(build, 'tools', 'tessera')
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(1)
    manifest = {'kernels': [], 'stream': []}
    for name in ZOO + CHECKS + list(TENSOR_CORE):
        src = f'examples/{name}.tsr' if name in ZOO else f'tests/backends/llvm/checks/{name}.tsr' if name in CHECKS \
            else f'tests/backends/llvm/kernels/{name}.tsr'
        text = open(src).read()
        ptx = subprocess.run([tessera, 'emit', 'ptx', src], check=True, capture_output=True, text=True).stdout
        open(os.path.join(out_dir, f'{name}.ptx'), 'w').write(ptx)
        entry = dict(launch_of(ptx), name=name, inputs=[], outputs=[], input_dtypes=[])
        if name in TENSOR_CORE:
            entry['tolerance'] = TENSOR_CORE[name]
        args = []
        for pname, dt, shape in params_of(text):
            if dt == 'i32':  # indices (gather_rows' rows): in range of the table
                a = rng.integers(0, 1024, size=shape, dtype=np.int32)
            elif dt == 'i16':
                a = rng.integers(-1000, 1000, size=shape, dtype=np.int16)
            else:
                a = rng.standard_normal(size=shape).astype(np.float32)
                if dt == 'bf16':  # bf16 values (the low 16 bits clear), stored as float32
                    a = (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
            entry['input_dtypes'].append(dt)
            path = f'{name}.in.{pname}.npy'
            np.save(os.path.join(out_dir, path), a)
            entry['inputs'].append(path)
            args += ['--input', f'{pname}={os.path.join(out_dir, path)}']
        aliases = re.search(r'input_output_aliases=\[([^\]]*)\]', text)
        entry['aliases'] = [[int(i), int(o)] for i, o in re.findall(r'\((\d+),\s*(\d+)\)', aliases.group(1))] if aliases else []
        entry['out_types'] = [[dt, [int(x) for x in shape.split(',')]]
                              for dt, shape in re.findall(r'(\w+)\[([\d,\s]+)\]', re.search(r'out_shapes=\[(.*?)\]\]', text).group(1) + ']')]
        res_dir = os.path.join(out_dir, f'{name}.out')
        run = subprocess.run([tessera, 'run', src, '--out', res_dir] + args, capture_output=True, text=True)
        if run.returncode != 0:  # a run-time error: the kernel must flag it on the device
            entry['error'] = run.stderr.strip()
            entry['error_kind'] = next(k for words, k in ERROR_KINDS if words in run.stderr)
        else:
            for k in range(len(os.listdir(res_dir))):
                entry['outputs'].append(f'{name}.out/out{k}.npy')
        manifest['kernels'].append(entry)
    for name in STREAM:
        text, ins = stream_program(name)
        src = os.path.join(out_dir, f'stream_{name}.tsr')
        open(src, 'w').write(text)
        ptx = subprocess.run([tessera, 'emit', 'ptx', src], check=True, capture_output=True, text=True).stdout
        open(os.path.join(out_dir, f'stream_{name}.ptx'), 'w').write(ptx)
        manifest['stream'].append(dict(launch_of(ptx), name=name, inputs=ins, n=N))  # inputs: how many
    json.dump(manifest, open(os.path.join(out_dir, 'manifest.json'), 'w'), indent=1)
    print(f'gpu_bundle: {len(manifest["kernels"])} kernels and {len(manifest["stream"])} bandwidth kernels in {out_dir}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
