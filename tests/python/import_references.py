"""NumPy references of what JAX's production Pallas TPU kernels compute, and
inputs for them.

The kernels are the Mosaic modules JAX 0.11.2 hands to the TPU compiler for
`jax.experimental.pallas.ops.tpu` (tests/frontends/corpus/production/):
flash attention (`flash_attention.py`: the forward kernel, the forward that
keeps its residuals, the dK/dV kernel and the dQ kernel), paged attention
(`paged_attention/paged_attention_kernel.py`) and the blocked matmul
(`matmul.py`). Each function here takes the operands of one kernel's
`pallas_call`, in the order of the call (the order `tessera.import_mosaic`
gives `@main`), and returns its results in the layout the kernel writes them.

The formulas are written from what the kernels compute, not from their
blocking: attention by its definition, in float64, cast to float32 at the
end. Where the kernel's arithmetic differs from the exact formula in a way
larger than float32 rounding, the reference models it (paged attention
rounds its K and V pages to bfloat16 before the dot products).
test_import_references.py checks each formula independently (finite
differences, loops, dense attention).
"""
import numpy as np

# Flash attention keeps its per-row softmax statistics (the running max `m`
# and the sum `l`) broadcast over one vreg row of 128 lanes, and the backward
# kernels read `di` the same way: those operands are f32[B, H, S, 128] with
# every lane of a row equal.
LANES = 128


def _f64(*arrays):
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _lanes(x):
    """A per-row statistic f64[..., S] broadcast over the lanes: f32[..., S, 128]."""
    return np.broadcast_to(np.asarray(x, np.float32)[..., None], (*np.shape(x), LANES)).copy()


def _lane0(x):
    """The per-row statistic stored in lanes: f64[..., S] (lane 0; all lanes are equal)."""
    return np.asarray(x, np.float64)[..., 0]


def round_to_bf16(x):
    """x rounded to the nearest bfloat16 (ties to even), as `arith.truncf` to bf16 does; returned as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


# ---- Flash attention ---------------------------------------------------------------------------------------------


def attention_logits(q, k, causal, sm_scale):
    """s[b, h, i, j] = sm_scale * <q_i, k_j>, and -inf where causal masks key j > query i (f64)."""
    q, k = _f64(q, k)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * sm_scale
    if causal:
        rows, cols = np.arange(s.shape[-2])[:, None], np.arange(s.shape[-1])[None, :]
        s = np.where(cols <= rows, s, -np.inf)
    return s


def _softmax_statistics(s):
    """m = max_j s_ij and l = sum_j exp(s_ij - m_i) per row (f64)."""
    m = s.max(axis=-1)
    l = np.exp(s - m[..., None]).sum(axis=-1)
    return m, l


def flash_attention_forward_f64(q, k, v, causal=True, sm_scale=0.125):
    """(o, l, m) of the forward in float64, l and m per row f64[B, H, S] (for finite differences)."""
    s = attention_logits(q, k, causal, sm_scale)
    m, l = _softmax_statistics(s)
    p = np.exp(s - m[..., None]) / l[..., None]
    return np.einsum("bhqk,bhkd->bhqd", p, np.asarray(v, np.float64)), l, m


def flash_attention_forward(q, k, v, causal=True, sm_scale=0.125):
    """The forward kernel: o = softmax(sm_scale * q k^T (causally masked)) v, f32[B, H, S, D]."""
    return flash_attention_forward_f64(q, k, v, causal, sm_scale)[0].astype(np.float32)


def flash_attention_forward_residuals(q, k, v, causal=True, sm_scale=0.125):
    """The forward kernel that keeps residuals for the backward pass: (o, l, m).

    l and m are f32[B, H, S, 128]: per query row, the softmax denominator
    l = sum_j exp(s_ij - m_i) and the row max m = max_j s_ij of the scaled,
    masked logits, each broadcast over the 128 lanes of the row."""
    o, l, m = flash_attention_forward_f64(q, k, v, causal, sm_scale)
    return o.astype(np.float32), _lanes(l), _lanes(m)


def flash_attention_di(o, do):
    """di = rowsum(o * do), the backward kernels' last operand, f32[B, H, S, 128] broadcast over lanes.

    JAX computes it outside the kernels (`_flash_attention_bwd`) and
    broadcasts it over the lanes before the calls."""
    o, do = _f64(o, do)
    return _lanes((o * do).sum(axis=-1))


def _backward_f64(q, k, v, l, m, do, di, causal, sm_scale):
    """p, ds from the residuals as both backward kernels compute them (f64)."""
    s = attention_logits(q, k, causal, sm_scale)
    p = np.exp(s - _lane0(m)[..., None]) / _lane0(l)[..., None]
    dp = np.einsum("bhqd,bhkd->bhqk", *_f64(do, v))
    ds = (dp - _lane0(di)[..., None]) * p * sm_scale
    return p, ds


def flash_attention_dkv(q, k, v, l, m, do, di, causal=True, sm_scale=0.125):
    """The dK/dV kernel: operands (q, k, v, l, m, do, di), results (dk, dv), f32[B, H, S, D].

    With P = exp(s - m) / l the attention weights rebuilt from the residuals:
    dv = P^T do, and with dS = sm_scale * P * (do v^T - di): dk = dS^T q."""
    p, ds = _backward_f64(q, k, v, l, m, do, di, causal, sm_scale)
    q, do = _f64(q, do)
    dk = np.einsum("bhqk,bhqd->bhkd", ds, q)
    dv = np.einsum("bhqk,bhqd->bhkd", p, do)
    return dk.astype(np.float32), dv.astype(np.float32)


def flash_attention_dq(q, k, v, l, m, do, di, causal=True, sm_scale=0.125):
    """The dQ kernel: operands (q, k, v, l, m, do, di), result dq = dS k, f32[B, H, S, D]."""
    _, ds = _backward_f64(q, k, v, l, m, do, di, causal, sm_scale)
    return np.einsum("bhqk,bhkd->bhqd", ds, np.asarray(k, np.float64)).astype(np.float32)


def flash_attention_vjp(q, k, v, do, causal=True, sm_scale=0.125):
    """(dq, dk, dv): the gradient of <do, flash_attention_forward(q, k, v)>, the way JAX's custom vjp
    composes its kernels: residuals from the forward, di = rowsum(o * do), then the dK/dV and dQ kernels."""
    o, l, m = flash_attention_forward_residuals(q, k, v, causal, sm_scale)
    di = flash_attention_di(o, do)
    dk, dv = flash_attention_dkv(q, k, v, l, m, do, di, causal, sm_scale)
    dq = flash_attention_dq(q, k, v, l, m, do, di, causal, sm_scale)
    return dq, dk, dv


# ---- Paged attention ---------------------------------------------------------------------------------------------


def paged_attention(q, k_pages, v_pages, lengths, page_indices):
    """The paged attention kernel (one query token per sequence, grouped-query heads).

    q: f32[B, H, 1, D] (the kernel's operand: JAX reshapes q[B, H, D] so);
    k_pages, v_pages: f32[H_kv, P, page_size, D]; lengths: i32[B], the number
    of cached tokens of each sequence; page_indices: i32[B, pages_per_sequence]
    (the kernel's operand is it flattened): token t of sequence b lies in page
    page_indices[b, t // page_size], row t % page_size. Query head h reads kv
    head h // (H / H_kv).

    The kernel rounds the K and V pages to bfloat16 before its dot products
    (`arith.truncf`), with no softmax scale. Returns (o, m, l) as the kernel
    writes them: o f32[B, H, 1, D] the attention output, m f32[B, H, 1, 1] the
    max logit over the sequence's tokens and l f32[B, H, 1, 1] the sum of
    exp(logit - m). A sequence of length 0 keeps the kernel's initial values:
    o = 0, m = -inf, l = 0."""
    q = np.asarray(q, np.float64)
    batch, heads, one, head_dim = q.shape
    assert one == 1, q.shape
    kv_heads, num_pages, page_size, _ = k_pages.shape
    group = heads // kv_heads
    k = round_to_bf16(k_pages).astype(np.float64)
    v = round_to_bf16(v_pages).astype(np.float64)
    o = np.zeros((batch, heads, 1, head_dim))
    m = np.full((batch, heads, 1, 1), -np.inf)
    l = np.zeros((batch, heads, 1, 1))
    for b in range(batch):
        tokens = np.arange(int(lengths[b]))
        pages = np.asarray(page_indices)[b, tokens // page_size]
        assert ((0 <= pages) & (pages < num_pages)).all(), "page index out of range"
        for h in range(heads):
            if tokens.size == 0:
                continue
            keys = k[h // group, pages, tokens % page_size]  # [length, D]
            values = v[h // group, pages, tokens % page_size]
            s = keys @ q[b, h, 0]
            m[b, h] = s.max()
            w = np.exp(s - s.max())
            l[b, h] = w.sum()
            o[b, h, 0] = w @ values / w.sum()
    return o.astype(np.float32), m.astype(np.float32), l.astype(np.float32)


# ---- Blocked matmul ----------------------------------------------------------------------------------------------


def blocked_matmul(x, y):
    """The blocked matmul kernel: x @ y (f32 result of the exact product)."""
    x, y = _f64(x, y)
    return (x @ y).astype(np.float32)


# ---- Inputs ------------------------------------------------------------------------------------------------------

SEED = 2026


def _normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def flash_attention_inputs(shape=(2, 4, 512, 128), seed=SEED):
    """q, k, v: f32 standard normal of `shape` [B, H, S, D]."""
    rng = np.random.default_rng(seed)
    return _normal(rng, shape), _normal(rng, shape), _normal(rng, shape)


def flash_attention_backward_inputs(shape=(2, 4, 512, 128), causal=True, sm_scale=0.125, seed=SEED):
    """The dK/dV and dQ kernels' operands (q, k, v, l, m, do, di): q, k, v and do random, l, m and di
    from the reference forward (what JAX feeds them)."""
    q, k, v = flash_attention_inputs(shape, seed)
    do = _normal(np.random.default_rng(seed + 1), shape)
    o, l, m = flash_attention_forward_residuals(q, k, v, causal, sm_scale)
    return q, k, v, l, m, do, flash_attention_di(o, do)


# The production paged attention kernel: 4 sequences, 8 query heads on 8 kv
# heads, 64 pages of 16 tokens per head, 16 pages per sequence (so at most
# 256 tokens), processed 4 pages (64 tokens) per compute block.
PAGED_SHAPE = dict(batch=4, heads=8, kv_heads=8, head_dim=128, num_pages=64, page_size=16, pages_per_sequence=16)
# One full sequence, one token, a partial compute block after a full one, and
# a sequence ending exactly at a block boundary.
PAGED_LENGTHS = (256, 1, 100, 128)


def paged_attention_inputs(lengths=PAGED_LENGTHS, seed=SEED, batch=4, heads=8, kv_heads=8, head_dim=128,
                           num_pages=64, page_size=16, pages_per_sequence=16):
    """The paged attention call's operands, in its order, as a dict:
    lengths i32[B], page_indices i32[B * pages_per_sequence] (flattened, as the
    kernel takes them), buffer_index i32[1] and init_flag i32[1] (SMEM state
    the kernel keeps across grid steps for its double-buffered page DMAs: which
    of its two VMEM buffers holds the current block, and whether the first
    block still has to be fetched; JAX passes 0 and 1), q f32[B, H, 1, D],
    k_pages and v_pages f32[H_kv, P, page_size, D].

    Every page index is valid (a permutation of the pages where there are
    enough, else drawn in range) and every length fits its sequence's pages."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths, np.int32)
    assert lengths.shape == (batch,) and (0 <= lengths).all() and (lengths <= pages_per_sequence * page_size).all()
    needed = batch * pages_per_sequence
    if needed <= num_pages:
        pages = rng.permutation(num_pages)[:needed]
    else:
        pages = rng.integers(0, num_pages, needed)
    shape = (kv_heads, num_pages, page_size, head_dim)
    return {
        "lengths": lengths,
        "page_indices": pages.astype(np.int32),
        "buffer_index": np.zeros(1, np.int32),
        "init_flag": np.ones(1, np.int32),
        "q": _normal(rng, (batch, heads, 1, head_dim)),
        "k_pages": _normal(rng, shape),
        "v_pages": _normal(rng, shape),
    }


def paged_attention_reference(inputs, pages_per_sequence=16):
    """paged_attention on the dict of paged_attention_inputs."""
    page_indices = inputs["page_indices"].reshape(len(inputs["lengths"]), pages_per_sequence)
    return paged_attention(inputs["q"], inputs["k_pages"], inputs["v_pages"], inputs["lengths"], page_indices)


def matmul_inputs(m=1024, k=1024, n=1024, seed=SEED):
    rng = np.random.default_rng(seed)
    return _normal(rng, (m, k)), _normal(rng, (k, n))
