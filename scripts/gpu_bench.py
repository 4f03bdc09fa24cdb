#!/usr/bin/env python3
"""Times tessera's PTX against its peers on one GPU, in one run: per kernel,
tessera's PTX (launched with CuPy, from a bundle made where tessera is
built), torch (cuBLAS matmul with TF32 off, torch.softmax,
torch.nn.functional.layer_norm, torch.add, scaled_dot_product_attention)
and, where JAX is installed, Pallas on GPU (its Triton lowering) with the
same block shapes. Kernel time: CUDA events around each launch, after a
warm-up, the median of N (JAX runs on its own CUDA streams, which the
events of the null stream do not see: Pallas is timed by the wall clock
around batches of back-to-back calls, the median batch divided by its
size). Each result is compared with the reference (torch in f32, TF32 off):
the largest absolute difference over the reference's largest magnitude.

Here, with a tessera build (the kernels' .tsr programs, their PTX for sm_80
and sm_90 from `tessera emit ptx --sm`, and their launches in manifest.json):

  scripts/gpu_bench.py --bundle OUT_DIR [--build build]

There (torch and CuPy; JAX optional; no tessera build):

  python3 scripts/gpu_bench.py BUNDLE_DIR [--reps N] [--only NAME,...]

Prints one Markdown table (kernel, tessera, Pallas, torch / cuBLAS, tessera
/ best), a table of the relative errors, and a last line
"gpu_bench_json: {...}" with every figure. A peer that is not installed is
"n/a"; a kernel that fails to emit, load or launch says so in its row and
the others still run. Exit status 1 when a tessera result is wrong (above
its kernel's tolerance) or fails.
"""

import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time

# ---------------------------------------------------------------------------
# The benchmarked kernels as tessera programs. Their block shapes follow the
# defaults of Pallas on GPU: matmul in 128 x 128 output blocks with k steps of
# 64 on a (parallel, parallel, arbitrary) grid; softmax and layernorm one row
# per program; flash attention 128 x 128 q and kv blocks, as
# jax/experimental/pallas/ops/gpu/attention.py's BlockSizes default.
# Each generator takes the array sizes, so the tests run the same program
# text at a small size in the interpreter.
# ---------------------------------------------------------------------------

MM_BLOCK, MM_KBLOCK = 128, 64
FLASH_BLOCK = 128


def matmul_program(dtype, m, n, k):
    """o[m, n] (f32) = x[m, k] @ y[k, n], x and y of `dtype`, f32 accumulation."""
    bm, bk = MM_BLOCK, MM_KBLOCK
    pref = ', preferred_element_type=f32' if dtype != 'f32' else ''
    return f"""# o = x @ y: output blocks of {bm} x {bm}, k steps of {bk}, accumulated in the resident output block.
index_map @x_block(%i: i32, %j: i32, %k: i32) -> (i32, i32) {{
  return %i, %k
}}
index_map @y_block(%i: i32, %j: i32, %k: i32) -> (i32, i32) {{
  return %k, %j
}}
index_map @o_block(%i: i32, %j: i32, %k: i32) -> (i32, i32) {{
  return %i, %j
}}
kernel @matmul_{dtype}(%x: ref<{dtype}[{bm},{bk}], vmem>, %y: ref<{dtype}[{bk},{bm}], vmem>, %o: ref<f32[{bm},{bm}], vmem>) {{
  %k = program_id[axis=2]
  %first = eq %k, 0
  cond[branches=[
    fn(%o0: ref<f32[{bm},{bm}], vmem>) {{ }},
    fn(%o1: ref<f32[{bm},{bm}], vmem>) {{
      %zeros = broadcast_in_dim[shape=({bm}, {bm}), broadcast_dimensions=()] 0.0:f32
      swap %o1[:, :], %zeros
    }}
  ]] %first, %o
  %a = get %x[:, :]
  %b = get %y[:, :]
  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0){pref}] %a, %b
  addupdate %o[:, :], %p
}}
func @main(%x: {dtype}[{m},{k}], %y: {dtype}[{k},{n}]) -> f32[{m},{n}] {{
  %o = pallas_call[kernel=@matmul_{dtype}, grid=({m // bm}, {n // bm}, {k // bk}),
                   in_specs=[spec(({bm}, {bk}), @x_block), spec(({bk}, {bm}), @y_block)],
                   out_specs=[spec(({bm}, {bm}), @o_block)],
                   out_shapes=[f32[{m},{n}]],
                   dimension_semantics=(parallel, parallel, arbitrary)] %x, %y
  return %o
}}
"""


def softmax_program(r, c):
    """Row softmax of x: f32[r, c], one row per program."""
    return f"""# Row softmax, one row per program.
index_map @row(%i: i32) -> (i32, i32) {{
  return %i, 0
}}
kernel @softmax_row(%x: ref<f32[1,{c}], vmem>, %o: ref<f32[1,{c}], vmem>) {{
  %v = get %x[:, :]
  %m = reduce_max[axes=(1)] %v
  %mb = broadcast_in_dim[shape=(1, {c}), broadcast_dimensions=(0)] %m
  %shifted = sub %v, %mb
  %e = exp %shifted
  %s = reduce_sum[axes=(1)] %e
  %sb = broadcast_in_dim[shape=(1, {c}), broadcast_dimensions=(0)] %s
  %y = div %e, %sb
  swap %o[:, :], %y
}}
func @main(%x: f32[{r},{c}]) -> f32[{r},{c}] {{
  %o = pallas_call[kernel=@softmax_row, grid=({r}), in_specs=[spec((1, {c}), @row)],
                   out_specs=[spec((1, {c}), @row)], out_shapes=[f32[{r},{c}]],
                   dimension_semantics=(parallel)] %x
  return %o
}}
"""


def layernorm_program(r, c):
    """Layer norm over the rows of x: f32[r, c] (eps 1e-5), one row per program."""
    return f"""# Layer norm over each row (biased variance, eps 1e-5), one row per program.
index_map @row(%i: i32) -> (i32, i32) {{
  return %i, 0
}}
kernel @layernorm_row(%x: ref<f32[1,{c}], vmem>, %gamma: ref<f32[{c}], vmem>, %beta: ref<f32[{c}], vmem>,
                      %o: ref<f32[1,{c}], vmem>) {{
  %v = get %x[:, :]
  %sum = reduce_sum[axes=(1)] %v
  %mean = div %sum, {float(c)}
  %mean_b = broadcast_in_dim[shape=(1, {c}), broadcast_dimensions=(0)] %mean
  %centered = sub %v, %mean_b
  %sq = mul %centered, %centered
  %sq_sum = reduce_sum[axes=(1)] %sq
  %var = div %sq_sum, {float(c)}
  %var_eps = add %var, 1e-5
  %inv_std = rsqrt %var_eps
  %inv_std_b = broadcast_in_dim[shape=(1, {c}), broadcast_dimensions=(0)] %inv_std
  %normed = mul %centered, %inv_std_b
  %g = get %gamma[:]
  %b = get %beta[:]
  %g_b = broadcast_in_dim[shape=(1, {c}), broadcast_dimensions=(1)] %g
  %b_b = broadcast_in_dim[shape=(1, {c}), broadcast_dimensions=(1)] %b
  %scaled = mul %normed, %g_b
  %y = add %scaled, %b_b
  swap %o[:, :], %y
}}
func @main(%x: f32[{r},{c}], %gamma: f32[{c}], %beta: f32[{c}]) -> f32[{r},{c}] {{
  %o = pallas_call[kernel=@layernorm_row, grid=({r}), in_specs=[spec((1, {c}), @row), spec(), spec()],
                   out_specs=[spec((1, {c}), @row)], out_shapes=[f32[{r},{c}]],
                   dimension_semantics=(parallel)] %x, %gamma, %beta
  return %o
}}
"""


def add_program(n):
    """o = x + y for f32[n, n] in 128 x 128 blocks."""
    b = 128
    return f"""# o = x + y in {b} x {b} blocks.
index_map @ij(%i: i32, %j: i32) -> (i32, i32) {{
  return %i, %j
}}
kernel @add_block(%x: ref<f32[{b},{b}], vmem>, %y: ref<f32[{b},{b}], vmem>, %o: ref<f32[{b},{b}], vmem>) {{
  %a = get %x[:, :]
  %c = get %y[:, :]
  %s = add %a, %c
  swap %o[:, :], %s
}}
func @main(%x: f32[{n},{n}], %y: f32[{n},{n}]) -> f32[{n},{n}] {{
  %o = pallas_call[kernel=@add_block, grid=({n // b}, {n // b}), in_specs=[spec(({b}, {b}), @ij), spec(({b}, {b}), @ij)],
                   out_specs=[spec(({b}, {b}), @ij)], out_shapes=[f32[{n},{n}]],
                   dimension_semantics=(parallel, parallel)] %x, %y
  return %o
}}
"""


def flash_step(bq, dim, scale, causal, q, k, v, m, l, acc, indent):
    """One kv step of the online softmax: the statistics m, l and acc updated with this kv block."""
    mask = f"""
%qi = program_id[axis=1]
%ki_now = program_id[axis=2]
%rows = iota[shape=({bq}, {bq}), dimension=0, dtype=i32]
%cols = iota[shape=({bq}, {bq}), dimension=1, dtype=i32]
%dq = sub %qi, %ki_now
%shift = mul %dq, {bq}
%shift_b = broadcast_in_dim[shape=({bq}, {bq}), broadcast_dimensions=()] %shift
%row_pos = add %rows, %shift_b
%keep = ge %row_pos, %cols
%neg_inf = broadcast_in_dim[shape=({bq}, {bq}), broadcast_dimensions=()] -inf:f32
%s = select_n %keep, %neg_inf, %s_all""" if causal else ''
    body = f"""%qb = get {q}[:, :]
%kb = get {k}[:, :]
%vb = get {v}[:, :]
%qk = dot_general[lhs_contracting=(1), rhs_contracting=(1), preferred_element_type=f32] %qb, %kb
{'%s_all' if causal else '%s'} = mul %qk, {scale!r}{mask}
%m_prev = get {m}[:]
%m_blk = reduce_max[axes=(1)] %s
%m_new = max %m_prev, %m_blk
%m_shift = sub %m_prev, %m_new
%alpha = exp %m_shift
%m_new_b = broadcast_in_dim[shape=({bq}, {bq}), broadcast_dimensions=(0)] %m_new
%s_shift = sub %s, %m_new_b
%p = exp %s_shift
%l_prev = get {l}[:]
%l_scaled = mul %alpha, %l_prev
%p_sum = reduce_sum[axes=(1)] %p
%l_new = add %l_scaled, %p_sum
%acc_prev = get {acc}[:, :]
%alpha_b = broadcast_in_dim[shape=({bq}, {dim}), broadcast_dimensions=(0)] %alpha
%acc_scaled = mul %acc_prev, %alpha_b
%p16 = convert_element_type[new_dtype=bf16] %p
%pv = dot_general[lhs_contracting=(1), rhs_contracting=(0), preferred_element_type=f32] %p16, %vb
%acc_new = add %acc_scaled, %pv
swap {m}[:], %m_new
swap {l}[:], %l_new
swap {acc}[:, :], %acc_new
"""
    return ''.join(indent + line + '\n' for line in body.strip().splitlines())


def flash_program(batch, heads, seq, dim, causal):
    """softmax(q k^T / sqrt(dim)) v per head; q, k, v, o: bf16[batch * heads, seq, dim] (the
    layout of a contiguous [batch, heads, seq, dim]). Scores and the running statistics are f32,
    p is rounded to bf16 for p @ v, as Pallas's GPU kernel does. Causal: the kv blocks past the
    q block are skipped, the diagonal block is masked (query row >= key column), and the output
    block is written at the diagonal step, the q block's last."""
    bq = FLASH_BLOCK
    nblk = seq // bq
    bh = batch * heads
    name = 'flash_causal' if causal else 'flash_full'
    scale = 1.0 / math.sqrt(dim)
    stats = f'ref<f32[{bq}], vmem>, %l{{0}}: ref<f32[{bq}], vmem>, %a{{0}}: ref<f32[{bq},{dim}], vmem>'
    blk = f'ref<bf16[{bq},{dim}], vmem>'
    if causal:
        step = (f"""  %qi_here = program_id[axis=1]
  %live = le %ki, %qi_here
  %last = eq %ki, %qi_here
  cond[branches=[
    fn(%q2: {blk}, %k2: {blk}, %v2: {blk}, %m2: {stats.format(2)}) {{ }},
    fn(%q3: {blk}, %k3: {blk}, %v3: {blk}, %m3: {stats.format(3)}) {{
""" + flash_step(bq, dim, scale, True, '%q3', '%k3', '%v3', '%m3', '%l3', '%a3', ' ' * 6) +
                """    }
  ]] %live, %q, %k, %v, %m_ref, %l_ref, %acc_ref
""")
    else:
        step = (flash_step(bq, dim, scale, False, '%q', '%k', '%v', '%m_ref', '%l_ref', '%acc_ref', '  ') +
                f'  %last = eq %ki, {nblk - 1}\n')
    return f"""# Flash attention, bf16, {'causal' if causal else 'not causal'}: grid (batch x head, q block, kv block), the kv axis a loop.
index_map @q_block(%h: i32, %qi: i32, %ki: i32) -> (i32, i32, i32) {{
  return %h, %qi, 0
}}
index_map @kv_block(%h: i32, %qi: i32, %ki: i32) -> (i32, i32, i32) {{
  return %h, %ki, 0
}}
kernel @{name}(%q: {blk}, %k: {blk}, %v: {blk}, %o: {blk},
               %m_ref: ref<f32[{bq}], vmem>, %l_ref: ref<f32[{bq}], vmem>, %acc_ref: ref<f32[{bq},{dim}], vmem>) {{
  %ki = program_id[axis=2]
  %first = eq %ki, 0
  cond[branches=[
    fn(%m0: {stats.format(0)}) {{ }},
    fn(%m1: {stats.format(1)}) {{
      %neg_inf_row = broadcast_in_dim[shape=({bq}), broadcast_dimensions=()] -inf:f32
      %zero_row = broadcast_in_dim[shape=({bq}), broadcast_dimensions=()] 0.0:f32
      %zero_blk = broadcast_in_dim[shape=({bq}, {dim}), broadcast_dimensions=()] 0.0:f32
      swap %m1[:], %neg_inf_row
      swap %l1[:], %zero_row
      swap %a1[:, :], %zero_blk
    }}
  ]] %first, %m_ref, %l_ref, %acc_ref
{step}  cond[branches=[
    fn(%l4: ref<f32[{bq}], vmem>, %a4: ref<f32[{bq},{dim}], vmem>, %o4: {blk}) {{ }},
    fn(%l5: ref<f32[{bq}], vmem>, %a5: ref<f32[{bq},{dim}], vmem>, %o5: {blk}) {{
      %l_fin = get %l5[:]
      %acc_fin = get %a5[:, :]
      %l_fin_b = broadcast_in_dim[shape=({bq}, {dim}), broadcast_dimensions=(0)] %l_fin
      %out = div %acc_fin, %l_fin_b
      %out16 = convert_element_type[new_dtype=bf16] %out
      swap %o5[:, :], %out16
    }}
  ]] %last, %l_ref, %acc_ref, %o
}}
func @main(%q: bf16[{bh},{seq},{dim}], %k: bf16[{bh},{seq},{dim}], %v: bf16[{bh},{seq},{dim}]) -> bf16[{bh},{seq},{dim}] {{
  %o = pallas_call[kernel=@{name}, grid=({bh}, {nblk}, {nblk}),
                   in_specs=[spec((squeezed, {bq}, {dim}), @q_block), spec((squeezed, {bq}, {dim}), @kv_block),
                             spec((squeezed, {bq}, {dim}), @kv_block)],
                   out_specs=[spec((squeezed, {bq}, {dim}), @q_block)],
                   out_shapes=[bf16[{bh},{seq},{dim}]],
                   scratch=[ref<f32[{bq}], vmem>, ref<f32[{bq}], vmem>, ref<f32[{bq},{dim}], vmem>],
                   dimension_semantics=(parallel, parallel, arbitrary)] %q, %k, %v
  return %o
}}
"""


# name, row title, program text from the sizes, the sizes benchmarked, the sizes the tests run in the
# interpreter, what the throughput counts, the largest relative error accepted from a result.
KERNELS = [
    dict(name='matmul_bf16', title='matmul bf16 4096³ (f32 accumulate)', program=lambda s: matmul_program('bf16', **s),
         sizes=dict(m=4096, n=4096, k=4096), small=dict(m=256, n=256, k=256), unit='TFLOP/s', tol=1e-2),
    dict(name='matmul_f32', title='matmul f32 4096³', program=lambda s: matmul_program('f32', **s),
         sizes=dict(m=4096, n=4096, k=4096), small=dict(m=256, n=256, k=256), unit='TFLOP/s', tol=1e-4),
    dict(name='softmax', title='softmax 16384 × 4096 f32', program=lambda s: softmax_program(**s),
         sizes=dict(r=16384, c=4096), small=dict(r=16, c=512), unit='GB/s', tol=1e-5),
    dict(name='layernorm', title='layernorm 16384 × 4096 f32', program=lambda s: layernorm_program(**s),
         sizes=dict(r=16384, c=4096), small=dict(r=16, c=512), unit='GB/s', tol=1e-5),
    dict(name='add', title='add 16384² f32', program=lambda s: add_program(**s),
         sizes=dict(n=16384), small=dict(n=256), unit='GB/s', tol=1e-6),
    dict(name='flash_full', title='flash attention bf16 4 × 8 × 2048 × 128', program=lambda s: flash_program(causal=False, **s),
         sizes=dict(batch=4, heads=8, seq=2048, dim=128), small=dict(batch=1, heads=2, seq=256, dim=128), unit='TFLOP/s', tol=2e-2),
    dict(name='flash_causal', title='flash attention bf16 4 × 8 × 2048 × 128, causal',
         program=lambda s: flash_program(causal=True, **s),
         sizes=dict(batch=4, heads=8, seq=2048, dim=128), small=dict(batch=1, heads=2, seq=256, dim=128), unit='TFLOP/s', tol=2e-2),
]


def matmul_flops(s):
    return 2.0 * s['m'] * s['n'] * s['k']


def rows_bytes(s):  # softmax, layernorm: each element read and written once (gamma and beta not counted)
    return 2.0 * 4 * s['r'] * s['c']


def flash_flops(s, causal):  # q k^T and p v; causal: half the scores count
    flops = 4.0 * s['batch'] * s['heads'] * s['seq'] * s['seq'] * s['dim']
    return flops / 2 if causal else flops


WORK = {  # what one launch does: floating-point operations (TFLOP/s rows) or bytes moved (GB/s rows)
    'matmul_bf16': matmul_flops, 'matmul_f32': matmul_flops, 'softmax': rows_bytes, 'layernorm': rows_bytes,
    'add': lambda s: 3.0 * 4 * s['n'] * s['n'],
    'flash_full': lambda s: flash_flops(s, False), 'flash_causal': lambda s: flash_flops(s, True),
}


# ---------------------------------------------------------------------------
# The `// tessera:` launch header, as scripts/gpu_bundle.py reads it (its
# dynamic shared memory included).
# ---------------------------------------------------------------------------


def launch_facts(ptx):
    """Symbol, grid, threads, arena bytes, check record and shared bytes of the kernel's launch."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_bundle import launch_of
    return launch_of(ptx)


def make_bundle(out_dir, build, names=None, sms=('80', '90')):
    """Writes each kernel's program, its PTX per architecture and manifest.json into out_dir."""
    tessera = os.path.join(build, 'tools', 'tessera')
    os.makedirs(out_dir, exist_ok=True)
    manifest = {'kernels': []}
    for k in KERNELS:
        if names and k['name'] not in names:
            continue
        entry = dict(name=k['name'], title=k['title'], unit=k['unit'], tol=k['tol'], sizes=k['sizes'],
                     work=WORK[k['name']](k['sizes']) if k['name'] in WORK else None, program=k['name'] + '.tsr', ptx={}, launch={})
        src = os.path.join(out_dir, entry['program'])
        with open(src, 'w') as f:
            f.write(k['program'](k['sizes']))
        for sm in sms:
            ptx_file = f"{k['name']}.sm{sm}.ptx"
            run = subprocess.run([tessera, 'emit', 'ptx', src, '--sm', sm, '-o', os.path.join(out_dir, ptx_file)],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                entry['error'] = f"tessera emit ptx --sm {sm}: {run.stderr.strip()}"
                break
            with open(os.path.join(out_dir, ptx_file)) as f:
                try:
                    entry['launch'][sm] = launch_facts(f.read())
                except (StopIteration, AttributeError):  # a header line or its form missing
                    entry['error'] = f'{ptx_file}: no launch in its `// tessera:` header'
                    break
            entry['ptx'][sm] = ptx_file
        manifest['kernels'].append(entry)
    with open(os.path.join(out_dir, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    bad = [e['name'] for e in manifest['kernels'] if 'error' in e]
    print(f"gpu_bench: {len(manifest['kernels'])} kernels in {out_dir} (PTX for sm_{', sm_'.join(sms)})"
          + (f"; not emitted: {', '.join(bad)}" if bad else ''))
    return manifest


# ---------------------------------------------------------------------------
# The table.
# ---------------------------------------------------------------------------

IMPLS = ('tessera', 'pallas', 'torch')


def fmt_value(v):
    return f'{v:.0f}' if v >= 100 else f'{v:.1f}' if v >= 1 else f'{v:.2g}'


def ratio_of(row):
    """tessera's throughput over the best correct peer's, or None."""
    t = row['tessera']
    peers = [row[p]['value'] for p in IMPLS[1:] if row[p].get('value') is not None and not row[p].get('wrong')]
    if t.get('value') is None or t.get('wrong') or not peers:
        return None
    return t['value'] / max(peers)


def cell(result, unit):
    """One implementation's throughput cell: the figure, or n/a / failed / wrong."""
    if result.get('value') is None:
        return result.get('status', 'n/a')
    text = f"{fmt_value(result['value'])} {unit}"
    return text + ' (wrong)' if result.get('wrong') else text


def err_cell(result):
    if result.get('err') is None:
        return result.get('status', 'n/a') if result.get('value') is None else '-'
    return f"{result['err']:.2g}" + (' (above tolerance)' if result.get('wrong') else '')


def format_tables(rows):
    """rows: per kernel {'title', 'unit', 'tessera' / 'pallas' / 'torch': {'value', 'err', 'wrong',
    'status'}}. Returns the Markdown throughput table and the error table."""
    lines = ['| kernel | tessera PTX | Pallas on GPU | torch / cuBLAS | tessera ÷ best |', '| --- | --- | --- | --- | --- |']
    for row in rows:
        r = ratio_of(row)
        pct = '-' if r is None else f'{100 * r:.0f} %' if r >= 0.1 else f'{100 * r:.1f} %'
        lines.append(f"| {row['title']} | " + ' | '.join(cell(row[i], row['unit']) for i in IMPLS) + f' | {pct} |')
    errs = ['| kernel | tessera PTX | Pallas on GPU | torch / cuBLAS |', '| --- | --- | --- | --- |']
    for row in rows:
        errs.append(f"| {row['title']} | " + ' | '.join(err_cell(row[i]) for i in IMPLS) + ' |')
    return '\n'.join(lines), '\n'.join(errs)


# ---------------------------------------------------------------------------
# On the GPU machine: torch and CuPy required, JAX optional.
# ---------------------------------------------------------------------------

CHECK_WORDS = 18  # the check record the kernel writes (backends/llvm/run_checks.h)
EVENT_BUDGET_MS, WALL_BATCH_MS = 2000.0, 25.0


def median_event_ms(torch, fn, reps):
    """Median kernel time of fn over up to `reps` launches, each between two CUDA events on torch's
    current stream (tessera's launches go there too), after two warm-up launches."""
    fn(), fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
        if sum(times) > EVENT_BUDGET_MS and len(times) >= 3:
            break
    return statistics.median(times)


def median_wall_ms(fn, reps):
    """For JAX (its own streams): batches of back-to-back calls, synchronized at the end; the
    median batch's time per call."""
    fn().block_until_ready()
    t = time.perf_counter()
    fn().block_until_ready()
    once = (time.perf_counter() - t) * 1e3
    batch = max(1, min(100, int(WALL_BATCH_MS / max(once, 1e-3))))
    samples = []
    for _ in range(max(3, min(reps, 7))):
        t = time.perf_counter()
        for _ in range(batch):
            out = fn()
        out.block_until_ready()
        samples.append((time.perf_counter() - t) * 1e3 / batch)
    return statistics.median(samples)


def rel_err(torch, got, want):
    """Largest absolute difference over the reference's largest magnitude."""
    got, want = got.float().reshape(want.shape), want.float()
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


def torch_case(torch, name, s):
    """The inputs (in @main's parameter order), the f32 reference and torch's own call."""
    F = torch.nn.functional
    g = torch.Generator(device='cuda').manual_seed(0)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device='cuda', generator=g).to(dtype)
    if name.startswith('matmul'):
        dt = torch.bfloat16 if name == 'matmul_bf16' else torch.float32
        x, y = randn(s['m'], s['k'], dtype=dt), randn(s['k'], s['n'], dtype=dt)
        return [x, y], lambda: torch.matmul(x.float(), y.float()), lambda: torch.matmul(x, y)
    if name == 'softmax':
        x = randn(s['r'], s['c'])
        return [x], lambda: torch.softmax(x, dim=1), lambda: torch.softmax(x, dim=1)
    if name == 'layernorm':
        x, gamma, beta = randn(s['r'], s['c']), randn(s['c']), randn(s['c'])

        def ln():
            return F.layer_norm(x, (s['c'],), gamma, beta, eps=1e-5)
        return [x, gamma, beta], ln, ln
    if name == 'add':
        x, y = randn(s['n'], s['n']), randn(s['n'], s['n'])
        return [x, y], lambda: x + y, lambda: torch.add(x, y)
    causal = name == 'flash_causal'
    shape = (s['batch'], s['heads'], s['seq'], s['dim'])
    q, k, v = (randn(s['batch'] * s['heads'], s['seq'], s['dim'], dtype=torch.bfloat16) for _ in range(3))

    def sdpa(dtype):
        return lambda: F.scaled_dot_product_attention(*(t.view(shape).to(dtype) for t in (q, k, v)), is_causal=causal)
    return [q, k, v], sdpa(torch.float32), sdpa(torch.bfloat16)


def pallas_case(jax, name, s, inputs):
    """The same kernel in Pallas on GPU (Triton lowering), jitted, over `inputs` (JAX arrays)."""
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    if name.startswith('flash'):  # Pallas's own GPU flash attention, q / k / v as [batch, seq, heads, dim]
        from jax.experimental.pallas.ops.gpu import attention
        causal = name == 'flash_causal'
        shape = (s['batch'], s['heads'], s['seq'], s['dim'])
        q, k, v = (jnp.swapaxes(t.reshape(shape), 1, 2) for t in inputs)
        f = jax.jit(lambda q, k, v: attention.mha(q, k, v, segment_ids=None, sm_scale=1.0 / math.sqrt(s['dim']),
                                                  causal=causal))
        return lambda: f(q, k, v), lambda o: jnp.swapaxes(o, 1, 2)
    params = {}
    if name.startswith('matmul'):
        m, n, kk, bm, bk = s['m'], s['n'], s['k'], MM_BLOCK, MM_KBLOCK
        precision = jax.lax.Precision.HIGHEST if name == 'matmul_f32' else None  # f32 without TF32

        def kernel(x_ref, y_ref, o_ref):
            def step(i, acc):
                a, b = x_ref[:, pl.ds(i * bk, bk)], y_ref[pl.ds(i * bk, bk), :]
                return acc + jnp.dot(a, b, precision=precision, preferred_element_type=jnp.float32)
            o_ref[...] = jax.lax.fori_loop(0, kk // bk, step, jnp.zeros((bm, bm), jnp.float32))
        try:
            from jax.experimental.pallas import triton as pltr
            params['compiler_params'] = pltr.CompilerParams(num_warps=8, num_stages=3)
        except (ImportError, AttributeError, TypeError):
            pass
        call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bm),
                              in_specs=[pl.BlockSpec((bm, kk), lambda i, j: (i, 0)),
                                        pl.BlockSpec((kk, bm), lambda i, j: (0, j))],
                              out_specs=pl.BlockSpec((bm, bm), lambda i, j: (i, j)), **params)
    elif name in ('softmax', 'layernorm'):
        r, c = s['r'], s['c']
        row = pl.BlockSpec((1, c), lambda i: (i, 0))

        def softmax(x_ref, o_ref):
            v = x_ref[...]
            e = jnp.exp(v - jnp.max(v, axis=1, keepdims=True))
            o_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)

        def layernorm(x_ref, g_ref, b_ref, o_ref):
            v = x_ref[...]
            centered = v - jnp.mean(v, axis=1, keepdims=True)
            inv_std = jax.lax.rsqrt(jnp.mean(centered * centered, axis=1, keepdims=True) + 1e-5)
            o_ref[...] = centered * inv_std * g_ref[...][None, :] + b_ref[...][None, :]
        vec = pl.BlockSpec((c,), lambda i: (0,))
        call = pl.pallas_call(softmax if name == 'softmax' else layernorm,
                              out_shape=jax.ShapeDtypeStruct((r, c), jnp.float32), grid=(r,),
                              in_specs=[row] if name == 'softmax' else [row, vec, vec], out_specs=row)
    else:
        n, b = s['n'], 128
        blk = pl.BlockSpec((b, b), lambda i, j: (i, j))

        def add(x_ref, y_ref, o_ref):
            o_ref[...] = x_ref[...] + y_ref[...]
        call = pl.pallas_call(add, out_shape=jax.ShapeDtypeStruct((n, n), jnp.float32), grid=(n // b, n // b),
                              in_specs=[blk, blk], out_specs=blk)
    f = jax.jit(call)
    return lambda: f(*inputs), lambda o: o


def as_cupy(cp, torch, t):
    """A CuPy view of a torch tensor (bf16, which CuPy lacks, as its bits)."""
    return cp.asarray(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)


def tessera_launcher(cp, torch, bundle, entry, sm, inputs, out):
    """Loads the kernel's PTX and returns (launch, check record), launched as scripts/gpu_run.py does."""
    facts = entry['launch'][sm]
    module = cp.RawModule(path=os.path.join(bundle, entry['ptx'][sm]))
    fn = module.get_function(facts['symbol'])
    shared = facts.get('shared_bytes', 0)
    if shared:
        try:
            fn.max_dynamic_shared_size_bytes = shared
        except AttributeError:  # older CuPy: the driver call itself (8: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
            cp.cuda.driver.funcSetAttribute(fn.ptr, 8, shared)
    grid = tuple(facts['grid'])
    work = torch.empty(max(1, facts['arena_bytes'] * grid[0] * grid[1] * grid[2]), dtype=torch.uint8, device='cuda')
    args = tuple(as_cupy(cp, torch, t) for t in list(inputs) + [out, work])
    record = None
    if facts.get('check_record'):
        record = cp.ndarray((CHECK_WORDS,), cp.int64, memptr=module.get_global(facts['check_record']))
        record[:] = 0

    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)  # the one the events are on

    def launch():
        fn(grid, (facts['threads'], 1, 1), args, shared_mem=shared, stream=stream)
    launch.keep = (module, work)  # alive as long as the launch
    launch.regs = getattr(fn, 'num_regs', None)
    launch.local_bytes = getattr(fn, 'local_size_bytes', None)
    return launch, record


def short(e):
    return (type(e).__name__ + ': ' + str(e).strip().splitlines()[0][:160]) if str(e).strip() else type(e).__name__


def bench_kernel(entry, bundle, sm, libs, reps):
    """One table row: each implementation's throughput and relative error."""
    torch, cp, jax = libs
    name, s, unit = entry['name'], entry['sizes'], entry['unit']
    scale = 1e12 if unit == 'TFLOP/s' else 1e9
    row = {'name': name, 'title': entry['title'], 'unit': unit, 'tessera': {}, 'pallas': {}, 'torch': {}}

    def record(impl, ms, got, want):
        res = row[impl]
        res['ms'] = ms
        res['value'] = entry['work'] / (ms * 1e-3) / scale
        res['err'] = rel_err(torch, got, want)
        res['wrong'] = not res['err'] <= entry['tol']
    inputs, reference, torch_call = torch_case(torch, name, s)
    want = reference()
    try:
        got = torch_call()
        record('torch', median_event_ms(torch, torch_call, reps), got, want)
        if name == 'matmul_f32':  # cuBLAS with TF32, for reference (not a peer: it changes the numbers)
            torch.backends.cuda.matmul.allow_tf32 = True
            row['torch_tf32'] = entry['work'] / (median_event_ms(torch, torch_call, reps) * 1e-3) / scale
            torch.backends.cuda.matmul.allow_tf32 = False
    except Exception as e:  # noqa: BLE001 (a peer's failure is a cell of the table)
        row['torch'] = {'status': 'failed', 'reason': short(e)}
    if 'error' in entry:
        row['tessera'] = {'status': 'not emitted', 'reason': entry['error'].splitlines()[-1][:200]}
    else:
        try:
            out_dtype = torch.bfloat16 if name.startswith('flash') else torch.float32
            out = torch.full(tuple(want.shape if not name.startswith('flash') else inputs[0].shape), float('nan'),
                             dtype=out_dtype, device='cuda')
            launch, check = tessera_launcher(cp, torch, bundle, entry, sm, inputs, out)
            launch()
            torch.cuda.synchronize()
            words = [int(w) for w in cp.asnumpy(check)] if check is not None else [0]
            if words[0] != 0:
                raise RuntimeError(f'check record: kind {words[0]}, operand or op {words[1]}, grid point {tuple(words[2:10])}')
            record('tessera', median_event_ms(torch, launch, reps), out.clone(), want)
            row['tessera'].update(regs=launch.regs, local_bytes=launch.local_bytes)
        except Exception as e:  # noqa: BLE001
            row['tessera'] = {'status': 'failed', 'reason': short(e)}
    if jax is None:
        row['pallas'] = {'status': 'n/a', 'reason': 'JAX is not installed'}
    else:
        try:
            jin = [to_jax(jax, torch, t) for t in inputs]
            call, post = pallas_case(jax, name, s, jin)
            got = from_jax(jax, torch, post(call()))
            record('pallas', median_wall_ms(call, reps), got, want)
            row['pallas']['timing'] = 'wall clock'
        except Exception as e:  # noqa: BLE001
            row['pallas'] = {'status': 'failed', 'reason': short(e)}
    row['ratio'] = ratio_of(row)
    return row


def to_jax(jax, torch, t):
    try:
        return jax.dlpack.from_dlpack(t.contiguous())
    except Exception:  # noqa: BLE001 (through the host, where DLPack does not connect them)
        import jax.numpy as jnp
        return jnp.asarray(t.float().cpu().numpy()).astype(jnp.bfloat16 if t.dtype == torch.bfloat16 else jnp.float32)


def from_jax(jax, torch, a):
    try:
        return torch.from_dlpack(a)
    except Exception:  # noqa: BLE001
        import numpy as np
        return torch.from_numpy(np.asarray(a.astype('float32'))).cuda()


def run_bench(bundle, reps, only):
    os.environ.setdefault('XLA_PYTHON_CLIENT_PREALLOCATE', 'false')  # leave the card's memory to torch too
    import cupy as cp
    import torch
    try:
        import jax
        import jax.dlpack  # noqa: F401
    except ImportError:
        jax = None
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 matmul on the FMA units, as tessera's
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(bundle, 'manifest.json')) as f:
        manifest = json.load(f)
    cc = torch.cuda.get_device_capability()
    sms = sorted({sm for e in manifest['kernels'] for sm in e['ptx']}, key=int)
    sm = max((x for x in sms if int(x) <= cc[0] * 10 + cc[1]), key=int, default=sms[0] if sms else '80')
    gpu = torch.cuda.get_device_name()
    print(f"gpu: {gpu}, compute capability {cc[0]}.{cc[1]}; tessera PTX for sm_{sm}; torch {torch.__version__}, "
          f"CuPy {cp.__version__}, JAX {jax.__version__ if jax else 'not installed'}")
    rows = []
    for entry in manifest['kernels']:
        if only and entry['name'] not in only:
            continue
        try:
            row = bench_kernel(entry, bundle, sm, (torch, cp, jax), reps)
        except Exception as e:  # noqa: BLE001 (the inputs or the reference itself failed: the row says so)
            failed = {'status': 'failed', 'reason': short(e)}
            row = {'name': entry['name'], 'title': entry['title'], 'unit': entry['unit'], 'ratio': None,
                   'tessera': failed, 'pallas': failed, 'torch': failed}
        for impl in IMPLS:
            if 'reason' in row[impl]:
                print(f"{entry['name']}: {impl}: {row[impl]['status']}: {row[impl]['reason']}")
        print(f"{entry['name']}: " + ', '.join(f"{i} {cell(row[i], row['unit'])}" for i in IMPLS), flush=True)
        rows.append(row)
        torch.cuda.empty_cache()
    table, errors = format_tables(rows)
    print('\n' + table + '\n\nLargest relative error against the reference (torch in f32, TF32 off):\n\n' + errors + '\n')
    tf32 = [r['torch_tf32'] for r in rows if 'torch_tf32' in r]
    if tf32:
        print(f'(cuBLAS f32 matmul with TF32: {fmt_value(tf32[0])} TFLOP/s; not a peer, TF32 changes the numbers)')
    print('gpu_bench_json: ' + json.dumps({'gpu': gpu, 'capability': f'{cc[0]}.{cc[1]}', 'sm': sm,
                                            'date': datetime.date.today().isoformat(), 'rows': rows}))
    bad = [r['name'] for r in rows if r['tessera'].get('value') is None or r['tessera'].get('wrong')]
    print(f"gpu_bench: {len(rows)} kernels, tessera failed or wrong on {len(bad)}" + (f": {', '.join(bad)}" if bad else ''))
    return 1 if bad else 0


def main(argv):
    args = argv[1:]
    opt = {}
    for flag in ('--bundle', '--build', '--reps', '--only'):
        if flag in args:
            i = args.index(flag)
            if i + 1 >= len(args):
                print(f'gpu_bench: {flag} needs a value', file=sys.stderr)
                return 2
            opt[flag] = args[i + 1]
            del args[i:i + 2]
    only = opt['--only'].split(',') if '--only' in opt else None
    if '--bundle' in opt and not args:
        make_bundle(opt['--bundle'], opt.get('--build', 'build'), only)
        return 0
    if len(args) != 1 or args[0].startswith('-'):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return run_bench(args[0], int(opt.get('--reps', 20)), only)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
