"""Checks the NumPy references of JAX's production kernels (import_references.py)
on their own, without tessera: each formula against a second, independent
computation of the same thing.

- flash attention forward: a loop over query rows with a direct softmax;
- its residuals (l, m): the row's log-sum-exp from the same loop, the
  128-lane layout;
- the backward kernels (dK/dV, dQ), composed as JAX's custom vjp composes
  them: central finite differences of <do, forward(q, k, v)> in float64,
  causal and not;
- paged attention: dense attention over every page of each sequence, masked
  beyond the sequence's length;
- bfloat16 rounding, the blocked matmul and the input generators.
"""
import sys
import unittest

import numpy as np

import import_references as ref
from unittest_main import main


def row_loop_attention(q, k, v, causal, sm_scale):
    """Attention one query row at a time, with the softmax written out: (o, m, log-sum-exp) in f64."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    batch, heads, seq, dim = q.shape
    o = np.zeros((batch, heads, seq, v.shape[-1]))
    row_max = np.zeros((batch, heads, seq))
    log_sum_exp = np.zeros((batch, heads, seq))
    for b in range(batch):
        for h in range(heads):
            for i in range(seq):
                keys = range(i + 1) if causal else range(k.shape[2])
                scores = [sm_scale * sum(q[b, h, i, d] * k[b, h, j, d] for d in range(dim)) for j in keys]
                top = max(scores)
                weights = [np.exp(s - top) for s in scores]
                total = sum(weights)
                o[b, h, i] = sum(w * v[b, h, j] for w, j in zip(weights, keys)) / total
                row_max[b, h, i] = top
                log_sum_exp[b, h, i] = top + np.log(total)
    return o, row_max, log_sum_exp


def relative_error(got, want):
    """max |got - want| over the largest magnitude of want."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.abs(got - want).max() / np.abs(want).max()


class FlashAttentionForward(unittest.TestCase):
    def check(self, shape, causal):
        q, k, v = ref.flash_attention_inputs(shape, seed=3)
        want, row_max, log_sum_exp = row_loop_attention(q, k, v, causal, 0.125)
        o = ref.flash_attention_forward(q, k, v, causal=causal, sm_scale=0.125)
        self.assertEqual((o.dtype, o.shape), (np.float32, shape))
        self.assertLess(relative_error(o, want), 1e-6)
        o2, l, m = ref.flash_attention_forward_residuals(q, k, v, causal=causal, sm_scale=0.125)
        np.testing.assert_array_equal(o2, o)
        for stat in (l, m):  # one value per row, broadcast over the 128 lanes
            self.assertEqual((stat.dtype, stat.shape), (np.float32, (*shape[:3], 128)))
            np.testing.assert_array_equal(stat, np.broadcast_to(stat[..., :1], stat.shape))
        np.testing.assert_allclose(m[..., 0], row_max, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(m[..., 0] + np.log(l[..., 0]), log_sum_exp, rtol=1e-6, atol=1e-6)

    def test_causal_against_row_loop(self):
        self.check((1, 2, 16, 8), causal=True)

    def test_non_causal_against_row_loop(self):
        self.check((2, 1, 12, 4), causal=False)

    def test_causal_first_row_attends_to_itself_only(self):
        q, k, v = ref.flash_attention_inputs((1, 1, 8, 4), seed=4)
        o = ref.flash_attention_forward(q, k, v, causal=True)
        np.testing.assert_allclose(o[0, 0, 0], v[0, 0, 0], rtol=1e-6)


class FlashAttentionBackward(unittest.TestCase):
    """The backward kernels against central finite differences of the forward, all the way in f64."""

    def check(self, shape, causal, sm_scale=0.125):
        q, k, v = ref.flash_attention_inputs(shape, seed=5)
        do = np.random.default_rng(6).standard_normal(shape)
        dq, dk, dv = ref.flash_attention_vjp(q, k, v, do.astype(np.float32), causal=causal, sm_scale=sm_scale)
        for grad in (dq, dk, dv):
            self.assertEqual((grad.dtype, grad.shape), (np.float32, shape))

        def loss(q_, k_, v_):
            return (ref.flash_attention_forward_f64(q_, k_, v_, causal, sm_scale)[0] * do).sum()

        primals = [a.astype(np.float64) for a in (q, k, v)]
        h = 1e-6
        for which, grad in enumerate((dq, dk, dv)):
            numeric = np.zeros(shape)
            for index in np.ndindex(*shape):
                plus = [p.copy() for p in primals]
                minus = [p.copy() for p in primals]
                plus[which][index] += h
                minus[which][index] -= h
                numeric[index] = (loss(*plus) - loss(*minus)) / (2 * h)
            self.assertLess(relative_error(grad, numeric), 1e-6, "dq dk dv".split()[which])

    def test_causal_against_finite_differences(self):
        self.check((1, 1, 16, 8), causal=True)

    def test_non_causal_against_finite_differences(self):
        self.check((1, 1, 16, 8), causal=False)

    def test_two_heads_other_scale_against_finite_differences(self):
        self.check((1, 2, 8, 4), causal=True, sm_scale=0.5)

    def test_kernel_operands_are_the_residuals(self):
        """di is rowsum(o * do) in every lane; dk and dq depend on it, dv does not."""
        q, k, v, l, m, do, di = ref.flash_attention_backward_inputs((1, 1, 8, 4))
        dk, dv = ref.flash_attention_dkv(q, k, v, l, m, do, di)
        dq = ref.flash_attention_dq(q, k, v, l, m, do, di)
        np.testing.assert_array_equal(np.einsum("bhqd,bhqd->bhq", *(a.astype(np.float64) for a in (
            ref.flash_attention_forward(q, k, v), do))).astype(np.float32), di[..., 0])
        self.assertEqual(dq.shape, q.shape)
        bad_di = di.copy()
        bad_di[..., 0] += 1.0
        self.assertFalse(np.allclose(ref.flash_attention_dq(q, k, v, l, m, do, bad_di), dq))
        self.assertFalse(np.allclose(ref.flash_attention_dkv(q, k, v, l, m, do, bad_di)[0], dk))
        # dv does not depend on di
        np.testing.assert_array_equal(ref.flash_attention_dkv(q, k, v, l, m, do, bad_di)[1], dv)


def dense_paged_attention(q, k_pages, v_pages, lengths, page_indices):
    """Attention of each query over all of its sequence's pages laid end to end, masked past the length."""
    batch, heads, _, dim = q.shape
    kv_heads, _, page_size, _ = k_pages.shape
    k = ref.round_to_bf16(k_pages).astype(np.float64)
    v = ref.round_to_bf16(v_pages).astype(np.float64)
    o = np.zeros((batch, heads, 1, dim))
    m = np.full((batch, heads, 1, 1), -np.inf)
    l = np.zeros((batch, heads, 1, 1))
    for b in range(batch):
        for h in range(heads):
            hk = h * kv_heads // heads
            keys = k[hk][page_indices[b]].reshape(-1, dim)  # [pages_per_sequence * page_size, D]
            values = v[hk][page_indices[b]].reshape(-1, dim)
            logits = keys @ q[b, h, 0].astype(np.float64)
            valid = np.arange(len(logits)) < lengths[b]
            if not valid.any():
                continue
            logits = np.where(valid, logits, -np.inf)
            m[b, h] = logits.max()
            e = np.exp(logits - logits.max())
            l[b, h] = e.sum()
            o[b, h, 0] = (e / e.sum()) @ values
    return o, m, l


class PagedAttention(unittest.TestCase):
    def check(self, inputs, pages_per_sequence):
        o, m, l = ref.paged_attention_reference(inputs, pages_per_sequence)
        batch, heads = inputs["q"].shape[:2]
        self.assertEqual([(a.dtype, a.shape) for a in (o, m, l)],
                         [(np.float32, inputs["q"].shape)] + [(np.float32, (batch, heads, 1, 1))] * 2)
        page_indices = inputs["page_indices"].reshape(batch, pages_per_sequence)
        want = dense_paged_attention(inputs["q"], inputs["k_pages"], inputs["v_pages"], inputs["lengths"],
                                     page_indices)
        for got, expected, name in zip((o, m, l), want, "oml"):
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6, err_msg=name)

    def test_production_shape_against_dense(self):
        self.check(ref.paged_attention_inputs(), 16)

    def test_grouped_heads_and_empty_sequence_against_dense(self):
        inputs = ref.paged_attention_inputs(lengths=(16, 1, 0, 7), batch=4, heads=4, kv_heads=2, head_dim=16,
                                            num_pages=12, page_size=4, pages_per_sequence=4)
        self.check(inputs, 4)
        o, m, l = ref.paged_attention_reference(inputs, 4)
        # an empty sequence keeps the kernel's initial o = 0, m = -inf, l = 0
        np.testing.assert_array_equal(o[2], 0)
        self.assertTrue(np.isneginf(m[2]).all())
        np.testing.assert_array_equal(l[2], 0)

    def test_one_token_is_its_value(self):
        inputs = ref.paged_attention_inputs()
        o, m, l = ref.paged_attention_reference(inputs)
        page = inputs["page_indices"][16]  # sequence 1 has one token: row 0 of its first page
        np.testing.assert_array_equal(o[1, :, 0], ref.round_to_bf16(inputs["v_pages"][:, page, 0]))
        np.testing.assert_array_equal(l[1], 1)

    def test_pages_are_rounded_to_bf16(self):
        """The kernel truncates K and V to bf16: the reference differs from f32 pages by far more than f32 rounding."""
        inputs = ref.paged_attention_inputs()
        exact = dict(inputs, k_pages=ref.round_to_bf16(inputs["k_pages"]), v_pages=ref.round_to_bf16(inputs["v_pages"]))
        o, _, _ = ref.paged_attention_reference(inputs)
        np.testing.assert_array_equal(ref.paged_attention_reference(exact)[0], o)
        q = inputs["q"].astype(np.float64)
        k = inputs["k_pages"].astype(np.float64)
        unrounded = q[0, 0, 0] @ k[0, inputs["page_indices"][0], 0]
        rounded = q[0, 0, 0] @ ref.round_to_bf16(inputs["k_pages"][0, inputs["page_indices"][0], 0]).astype(np.float64)
        self.assertGreater(abs(unrounded - rounded), 1e-4)


class Bf16Rounding(unittest.TestCase):
    def test_ties_to_even_and_exact_values(self):
        x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-7, -2.5, 0.0, 1 + 2**-8 + 2**-20], np.float32)
        want = np.array([1.0, 1.0, 1 + 2**-6, 1 + 2**-7, -2.5, 0.0, 1 + 2**-7], np.float32)
        np.testing.assert_array_equal(ref.round_to_bf16(x), want)

    def test_nearest_of_random_values(self):
        x = np.random.default_rng(1).standard_normal(10000).astype(np.float32)
        r = ref.round_to_bf16(x)
        self.assertTrue((r.view(np.uint32) & 0xFFFF == 0).all())
        bits = r.view(np.uint32)
        for neighbour in ((bits + 0x10000).view(np.float32), (bits - 0x10000).view(np.float32)):
            self.assertTrue((np.abs(r - x) <= np.abs(neighbour - x)).all())


class BlockedMatmul(unittest.TestCase):
    def test_against_sum_of_products(self):
        x, y = ref.matmul_inputs(6, 5, 7, seed=2)
        want = np.array([[sum(float(x[i, t]) * float(y[t, j]) for t in range(5)) for j in range(7)] for i in range(6)])
        got = ref.blocked_matmul(x, y)
        self.assertEqual((got.dtype, got.shape), (np.float32, (6, 7)))
        self.assertLess(relative_error(got, want), 1e-7)


class Inputs(unittest.TestCase):
    def test_shapes_are_the_production_calls(self):
        q, k, v = ref.flash_attention_inputs()
        self.assertEqual({a.shape for a in (q, k, v)}, {(2, 4, 512, 128)})
        inputs = ref.paged_attention_inputs()
        self.assertEqual([(n, a.dtype.name, a.shape) for n, a in inputs.items()], [
            ("lengths", "int32", (4,)), ("page_indices", "int32", (64,)), ("buffer_index", "int32", (1,)),
            ("init_flag", "int32", (1,)), ("q", "float32", (4, 8, 1, 128)), ("k_pages", "float32", (8, 64, 16, 128)),
            ("v_pages", "float32", (8, 64, 16, 128))])
        self.assertEqual([a.shape for a in ref.matmul_inputs()], [(1024, 1024)] * 2)

    def test_paged_inputs_are_valid(self):
        inputs = ref.paged_attention_inputs()
        pages = inputs["page_indices"]
        self.assertTrue(((0 <= pages) & (pages < 64)).all())
        self.assertEqual(len(set(pages.tolist())), 64)  # each page belongs to one sequence
        self.assertTrue(((1 <= inputs["lengths"]) & (inputs["lengths"] <= 16 * 16)).all())
        np.testing.assert_array_equal(inputs["buffer_index"], 0)
        np.testing.assert_array_equal(inputs["init_flag"], 1)
        with self.assertRaises(AssertionError):
            ref.paged_attention_inputs(lengths=(257, 1, 1, 1))

    def test_fixed_seed(self):
        np.testing.assert_array_equal(ref.flash_attention_inputs((1, 1, 8, 4))[0],
                                      ref.flash_attention_inputs((1, 1, 8, 4))[0])
        a, b = ref.paged_attention_inputs(), ref.paged_attention_inputs()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])


if __name__ == "__main__":
    sys.exit(main())
