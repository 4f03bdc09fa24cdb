// dot_general: batch dims, then lhs free dims, then rhs free dims.
//
// Both operands are brought to canonical layouts lhs[B, M, K] and rhs[B, K, N]
// (no copy when already so), converted to the accumulator type, and
// multiplied by a cache-blocked, register-tiled kernel (GCC vector extensions,
// so it vectorizes at -O2 on any x86-64). Accumulator: f64 if an operand or
// the result is f64, else f32 if either is a float (bf16 / f16 inputs
// accumulate in f32), else 64-bit wrapping integers. The result is rounded /
// converted once to the result dtype (preferred_element_type, default the
// operands' dtype).
#include <algorithm>
#include <cstring>

#include "runtime/kernels/convert.h"
#include "runtime/kernels/util.h"

namespace tessera::interp::kern {
namespace {

constexpr int kVecBytes = 32;

template <class T>
struct Vec {
  typedef T type __attribute__((vector_size(kVecBytes)));
  static constexpr int width = kVecBytes / sizeof(T);
};

// C[0:R, 0:ncols] += A[0:R, 0:kc] * Bp[0:kc, 0:W], Bp a packed panel of W columns.
template <class T, int R>
void micro_kernel(const T* A, int64_t lda, const T* Bp, int64_t kc, T* C, int64_t ldc, int ncols) {
  using V = typename Vec<T>::type;
  constexpr int W = Vec<T>::width;
  V acc[R];
  for (int r = 0; r < R; ++r) acc[r] = V{};
  for (int64_t k = 0; k < kc; ++k) {
    V b;
    std::memcpy(&b, Bp + k * W, sizeof b);
    for (int r = 0; r < R; ++r) acc[r] += A[r * lda + k] * b;
  }
  for (int r = 0; r < R; ++r) {
    T tmp[W];
    std::memcpy(tmp, &acc[r], sizeof tmp);
    T* c = C + r * ldc;
    for (int j = 0; j < ncols; ++j) c[j] += tmp[j];
  }
}

// C[M, N] = A[M, K] * B[K, N], all row-major and dense.
template <class T>
void matmul(const T* A, const T* B, T* C, int64_t M, int64_t K, int64_t N) {
  constexpr int W = Vec<T>::width;
  constexpr int64_t KC = 256, MC = 64, MR = 4;
  std::fill(C, C + M * N, T(0));
  if (M == 0 || N == 0 || K == 0) return;
  int64_t panels = (N + W - 1) / W;
  std::vector<T> packed(static_cast<size_t>(panels * std::min(K, KC) * W));
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    int64_t kc = std::min(KC, K - k0);
    // Pack B[k0:k0+kc, :] into panels of W columns (zero-padded at the right edge).
    for (int64_t p = 0; p < panels; ++p) {
      int64_t j0 = p * W, nc = std::min<int64_t>(W, N - j0);
      T* dst = packed.data() + p * kc * W;
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = B + (k0 + k) * N + j0;
        for (int64_t j = 0; j < W; ++j) dst[k * W + j] = j < nc ? src[j] : T(0);
      }
    }
    for (int64_t i0 = 0; i0 < M; i0 += MC) {
      int64_t i1 = std::min(M, i0 + MC);
      for (int64_t p = 0; p < panels; ++p) {
        int nc = static_cast<int>(std::min<int64_t>(W, N - p * W));
        const T* bp = packed.data() + p * kc * W;
        int64_t i = i0;
        for (; i + MR <= i1; i += MR) micro_kernel<T, MR>(A + i * K + k0, K, bp, kc, C + i * N + p * W, N, nc);
        for (; i < i1; ++i) micro_kernel<T, 1>(A + i * K + k0, K, bp, kc, C + i * N + p * W, N, nc);
      }
    }
  }
}

// Storage type of the accumulator.
enum class AccKind { F32, F64, Int };

AccKind acc_kind(DType in, DType out) {
  if (in == DType::f64 || out == DType::f64) return AccKind::F64;
  if (is_float(in) || is_float(out)) return AccKind::F32;
  return AccKind::Int;
}

template <class Acc, class S>
Acc to_acc(S v) {
  if constexpr (std::is_same_v<Acc, uint64_t>) return static_cast<uint64_t>(static_cast<int64_t>(v));
  else return static_cast<Acc>(v);
}

// x permuted by `perm` into a dense [B, R, C] buffer of the accumulator type:
// x's own data when that is already so, else a copy kept in `holder` or
// `storage`.
template <class Acc>
const Acc* canonical(const Array& x, const std::vector<int64_t>& perm, std::vector<Acc>& storage, Array& holder) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  holder = x;
  if (!identity) {
    Shape s;
    std::vector<int64_t> xs = dense_strides(x.shape()), ss;
    for (int64_t p : perm) s.push_back(x.shape()[p]), ss.push_back(xs[p]);
    holder = Array::uninitialized(x.dtype(), s);
    copy_strided(storage_size(x.dtype()), s, holder.raw(), dense_strides(s), x.raw(), ss);
  }
  bool same = visit(holder, [&](const auto* p) {
    using S = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
    return std::is_same_v<S, Acc>;
  });
  if (same) return holder.data<Acc>();
  storage.resize(static_cast<size_t>(x.size()));
  visit(holder, [&](const auto* p) {
    for (int64_t i = 0; i < x.size(); ++i) storage[i] = to_acc<Acc>(p[i]);
  });
  return storage.data();
}

template <class Acc>
void run_dot(const Array& a, const Array& b, const std::vector<int64_t>& pa, const std::vector<int64_t>& pb, int64_t B,
             int64_t M, int64_t K, int64_t N, Array& out) {
  std::vector<Acc> sa, sb, sc;
  Array ha, hb;
  const Acc* A = canonical<Acc>(a, pa, sa, ha);
  const Acc* Bm = canonical<Acc>(b, pb, sb, hb);
  DType od = out.dtype();
  bool direct = visit(out, [&](auto* p) {
    using O = std::remove_pointer_t<decltype(p)>;
    return std::is_same_v<O, Acc>;
  });
  Acc* C;
  if (direct) {
    C = out.data<Acc>();
  } else {
    sc.resize(static_cast<size_t>(B * M * N));
    C = sc.data();
  }
  for (int64_t bi = 0; bi < B; ++bi) matmul(A + bi * M * K, Bm + bi * K * N, C + bi * M * N, M, K, N);
  int64_t n = out.size();
  if (od == DType::bf16 || od == DType::f16) {
    float* o = out.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<Acc, float>) o[i] = od == DType::bf16 ? round_to_bf16(C[i]) : round_to_f16(C[i]);
      else o[i] = static_cast<float>(round_double_to(od, static_cast<double>(static_cast<std::conditional_t<std::is_same_v<Acc, uint64_t>, int64_t, Acc>>(C[i]))));
    }
  } else if (!direct) {
    visit(out, [&](auto* o) {
      using O = std::remove_pointer_t<decltype(o)>;
      for (int64_t i = 0; i < n; ++i) {
        if (od == DType::i1) o[i] = C[i] != Acc(0);
        else if constexpr (std::is_same_v<Acc, uint64_t>) o[i] = convert_scalar<int64_t, O>(static_cast<int64_t>(C[i]));
        else o[i] = convert_scalar<Acc, O>(C[i]);
      }
    });
  }
}

std::vector<Array> dot_general(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 2);
  const Array &a = args[0], &b = args[1];
  const auto& lc = op.param(keys::lhs_contracting);
  const auto& rc = op.param(keys::rhs_contracting);
  const auto& lb = op.param(keys::lhs_batch);
  const auto& rb = op.param(keys::rhs_batch);
  if (lc.size() != rc.size() || lb.size() != rb.size()) fail(op, "dimension lists differ in length");
  if (a.dtype() != b.dtype()) fail(op, "operand dtypes differ");
  if (is_bool(a.dtype()) || is_semaphore(a.dtype())) fail(op, "does not apply to " + std::string(dtype_name(a.dtype())));
  const Param& pref = op.param("preferred_element_type");
  DType od = std::holds_alternative<DType>(pref) ? std::get<DType>(pref) : a.dtype();
  if (is_semaphore(od)) fail(op, "cannot produce semaphores");

  auto in_range = [&](const std::vector<int64_t>& v, int rank) {
    for (int64_t d : v)
      if (d < 0 || d >= rank) fail(op, "dimension " + std::to_string(d) + " out of range");
  };
  in_range(lc, a.rank()), in_range(lb, a.rank()), in_range(rc, b.rank()), in_range(rb, b.rank());
  int64_t B = 1, K = 1, M = 1, N = 1;
  Shape out_shape;
  std::vector<int64_t> pa, pb;  // canonical permutations
  for (size_t i = 0; i < lb.size(); ++i) {
    if (a.shape()[lb[i]] != b.shape()[rb[i]]) fail(op, "batch dimensions differ in size");
    B *= a.shape()[lb[i]];
    out_shape.push_back(a.shape()[lb[i]]);
    pa.push_back(lb[i]), pb.push_back(rb[i]);
  }
  auto is_in = [](const std::vector<int64_t>& v, int d) { return std::find(v.begin(), v.end(), d) != v.end(); };
  for (int d = 0; d < a.rank(); ++d)
    if (!is_in(lc, d) && !is_in(lb, d)) M *= a.shape()[d], out_shape.push_back(a.shape()[d]), pa.push_back(d);
  for (size_t i = 0; i < lc.size(); ++i) {
    if (a.shape()[lc[i]] != b.shape()[rc[i]]) fail(op, "contracting dimensions differ in size");
    K *= a.shape()[lc[i]];
    pa.push_back(lc[i]), pb.push_back(rc[i]);
  }
  for (int d = 0; d < b.rank(); ++d)
    if (!is_in(rc, d) && !is_in(rb, d)) N *= b.shape()[d], out_shape.push_back(b.shape()[d]), pb.push_back(d);
  if (static_cast<int>(pa.size()) != a.rank() || static_cast<int>(pb.size()) != b.rank())
    fail(op, "a dimension is listed twice");

  Array out = Array::uninitialized(od, out_shape);
  switch (acc_kind(a.dtype(), od)) {
    case AccKind::F32: run_dot<float>(a, b, pa, pb, B, M, K, N, out); break;
    case AccKind::F64: run_dot<double>(a, b, pa, pb, B, M, K, N, out); break;
    case AccKind::Int: run_dot<uint64_t>(a, b, pa, pb, B, M, K, N, out); break;
  }
  return {out};
}

}  // namespace

void register_dot_kernels(RuleTable<Kernel>& t) { t.set("dot_general", dot_general); }

}  // namespace tessera::interp::kern
