// Reductions (reduce_sum / max / min / prod / and / or over axes), argmax /
// argmin and cumsum.
//
// Accumulation: f32 accumulates in f32, bf16 / f16 accumulate in f32 and round
// once at the end (per output element for cumsum), f64 in f64, integers wrap.
// max / min propagate NaN. An empty reduction gives the identity (0, 1, -inf /
// lowest, +inf / highest, all ones, 0). argmax / argmin return the first
// occurrence; a NaN counts as the extreme (the first NaN wins, as in NumPy);
// an empty axis is an error.
#include <algorithm>
#include <limits>

#include "runtime/kernels/util.h"

namespace tessera::interp::kern {
namespace {

enum class Red { Sum, Prod, Max, Min, And, Or };

template <Red R>
struct Combine {
  template <class T> T operator()(T a, T b) const {
    if constexpr (R == Red::Sum) {
      if constexpr (std::is_floating_point_v<T>) return a + b;
      else return static_cast<T>(WrapT<T>(a) + WrapT<T>(b));
    } else if constexpr (R == Red::Prod) {
      if constexpr (std::is_floating_point_v<T>) return a * b;
      else return static_cast<T>(WrapT<T>(a) * WrapT<T>(b));
    } else if constexpr (R == Red::Max) {
      if constexpr (std::is_floating_point_v<T>) return a != a ? a : b != b ? b : a > b ? a : b;
      else return a > b ? a : b;
    } else if constexpr (R == Red::Min) {
      if constexpr (std::is_floating_point_v<T>) return a != a ? a : b != b ? b : a < b ? a : b;
      else return a < b ? a : b;
    } else if constexpr (R == Red::And) {
      return static_cast<T>(a & b);
    } else {
      return static_cast<T>(a | b);
    }
  }
};

template <Red R, class T>
T identity(bool is_bool_dtype) {
  using L = std::numeric_limits<T>;
  if constexpr (R == Red::Sum || R == Red::Or) return T(0);
  else if constexpr (R == Red::Prod) return T(1);
  else if constexpr (R == Red::Max) return std::is_floating_point_v<T> ? -L::infinity() : L::lowest();
  else if constexpr (R == Red::Min) return std::is_floating_point_v<T> ? L::infinity() : L::max();
  else return is_bool_dtype ? T(1) : static_cast<T>(~T(0));
}

// Reduces a contiguous row with 8 independent partial results (vectorizable).
template <class T, class F>
T reduce_row(const T* __restrict p, int64_t n, F f, T init) {
  T acc[8];
  for (T& a : acc) a = init;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] = f(acc[k], p[i + k]);
  for (; i < n; ++i) acc[0] = f(acc[0], p[i]);
  T r = acc[0];
  for (int k = 1; k < 8; ++k) r = f(r, acc[k]);
  return r;
}

template <class T, class F>
void combine_rows(T* __restrict o, const T* __restrict p, int64_t n, F f) {
  for_n(n, [=](int64_t j) { o[j] = f(o[j], p[j]); });
}

template <Red R, DTypeClass Fam>
Kernel reduce_kernel() {
  return [](const Op& op, std::span<const Array> args) -> std::vector<Array> {
    expect_args(op, args, 1);
    const Array& x = args[0];
    std::vector<bool> reduced(x.rank(), false);
    for (int64_t a : op.param(keys::axes)) {
      if (a < 0 || a >= x.rank()) fail(op, "axis " + std::to_string(a) + " out of range");
      reduced[a] = true;
    }
    // Output shape, and the input seen as runs of kept / reduced dims.
    Shape out_shape, runs;
    std::vector<bool> run_reduced;
    for (int d = 0; d < x.rank(); ++d) {
      if (!reduced[d]) out_shape.push_back(x.shape()[d]);
      if (x.shape()[d] == 1) continue;
      if (!runs.empty() && run_reduced.back() == reduced[d]) runs.back() *= x.shape()[d];
      else runs.push_back(x.shape()[d]), run_reduced.push_back(reduced[d]);
    }
    Array out = Array::uninitialized(x.dtype(), out_shape);
    bool boolean = is_bool(x.dtype());
    visit_family<Fam>(op, x.dtype(), [&](auto tag, auto rnd) {
      using T = typename decltype(tag)::type;
      Combine<R> f;
      T* o = out.data<T>();
      const T* p = x.data<T>();
      T init = identity<R, T>(boolean);
      for (int64_t i = 0; i < out.size(); ++i) o[i] = init;
      if (x.size() > 0 && !runs.empty()) {
        int nr = static_cast<int>(runs.size());
        // Strides of each run in the output (0 for reduced runs).
        std::vector<int64_t> ostride(nr, 0);
        int64_t acc = 1;
        for (int r = nr - 1; r >= 0; --r)
          if (!run_reduced[r]) ostride[r] = acc, acc *= runs[r];
        int64_t inner = runs[nr - 1];
        bool inner_reduced = run_reduced[nr - 1];
        std::vector<int64_t> idx(nr - 1, 0);
        int64_t ooff = 0;
        for (int64_t in = 0; in < x.size(); in += inner) {
          if (inner_reduced) o[ooff] = f(o[ooff], reduce_row(p + in, inner, f, init));
          else combine_rows(o + ooff, p + in, inner, f);
          for (int d = nr - 2; d >= 0; --d) {
            if (++idx[d] < runs[d]) {
              ooff += ostride[d];
              break;
            }
            ooff -= ostride[d] * (runs[d] - 1);
            idx[d] = 0;
          }
        }
      } else if (x.size() > 0) {
        o[0] = f(o[0], p[0]);  // all dims of size 1
      }
      for (int64_t i = 0; i < out.size(); ++i) o[i] = rnd(o[i]);
    });
    return {out};
  };
}

// Splits x around `axis`: outer x n x inner.
void split_axis(const Shape& s, int64_t axis, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  n = s[axis];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
}

template <bool IsMax>
std::vector<Array> arg_kernel(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= x.rank()) fail(op, "axis out of range");
  DType idx_dtype = op.param(keys::index_dtype);
  if (!is_int(idx_dtype)) fail(op, "index_dtype must be an integer dtype");
  int64_t outer, n, inner;
  split_axis(x.shape(), axis, outer, n, inner);
  Shape s = x.shape();
  s.erase(s.begin() + axis);
  Array out = Array::uninitialized(idx_dtype, s);
  if (out.size() == 0) return {out};
  if (n == 0) fail(op, std::string(IsMax ? "argmax" : "argmin") + " of an empty axis");
  std::vector<int64_t> best_idx(static_cast<size_t>(inner));
  visit_family<DTypeClass::any>(op, x.dtype(), [&](auto tag, auto) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    std::vector<T> best(static_cast<size_t>(inner));
    for (int64_t a = 0; a < outer; ++a) {
      const T* base = p + a * n * inner;
      std::copy(base, base + inner, best.begin());
      std::fill(best_idx.begin(), best_idx.end(), 0);
      for (int64_t k = 1; k < n; ++k) {
        const T* row = base + k * inner;
        for (int64_t j = 0; j < inner; ++j) {
          T v = row[j], b = best[j];
          bool better;
          if constexpr (std::is_floating_point_v<T>) better = (v != v && b == b) || (IsMax ? v > b : v < b);
          else better = IsMax ? v > b : v < b;
          if (better) best[j] = v, best_idx[j] = k;
        }
      }
      visit(out, [&](auto* o) {
        using I = std::remove_pointer_t<decltype(o)>;
        for (int64_t j = 0; j < inner; ++j) o[a * inner + j] = static_cast<I>(best_idx[j]);
      });
    }
  });
  return {out};
}

std::vector<Array> cumsum(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= x.rank()) fail(op, "axis out of range");
  bool reverse = op.param(keys::reverse);
  int64_t outer, n, inner;
  split_axis(x.shape(), axis, outer, n, inner);
  Array out = Array::uninitialized(x.dtype(), x.shape());
  visit_family<DTypeClass::numeric>(op, x.dtype(), [&](auto tag, auto rnd) {
    using T = typename decltype(tag)::type;
    Combine<Red::Sum> add;
    const T* p = x.data<T>();
    T* o = out.data<T>();
    std::vector<T> acc(static_cast<size_t>(inner));
    for (int64_t a = 0; a < outer; ++a) {
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t step = 0; step < n; ++step) {
        int64_t k = reverse ? n - 1 - step : step;
        const T* __restrict row = p + (a * n + k) * inner;
        T* __restrict orow = o + (a * n + k) * inner;
        T* __restrict ac = acc.data();
        for_n(inner, [=](int64_t j) {
          ac[j] = add(ac[j], row[j]);
          orow[j] = rnd(ac[j]);
        });
      }
    }
  });
  return {out};
}

}  // namespace

void register_reduction_kernels(RuleTable<Kernel>& t) {
  using F = DTypeClass;
  t.set("reduce_sum", reduce_kernel<Red::Sum, F::numeric>());
  t.set("reduce_prod", reduce_kernel<Red::Prod, F::numeric>());
  t.set("reduce_max", reduce_kernel<Red::Max, F::numeric>());
  t.set("reduce_min", reduce_kernel<Red::Min, F::numeric>());
  t.set("reduce_and", reduce_kernel<Red::And, F::int_or_bool>());
  t.set("reduce_or", reduce_kernel<Red::Or, F::int_or_bool>());
  t.set("argmax", arg_kernel<true>);
  t.set("argmin", arg_kernel<false>);
  t.set("cumsum", cumsum);
}

}  // namespace tessera::interp::kern
