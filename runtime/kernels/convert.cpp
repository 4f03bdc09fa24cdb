// convert_element_type. Semantics (see convert.h): float -> int truncates
// toward zero and saturates (NaN -> 0); int -> int wraps; -> bool is x != 0
// (NaN -> true); -> bf16 / f16 rounds to nearest even in one step from the
// source value (f64 and integer sources go through double, exact up to 2^53).
#include "runtime/kernels/convert.h"

#include "runtime/kernels/util.h"

namespace tessera::interp::kern {
namespace {

template <class S, class T, class F>
void convert_loop(const S* __restrict src, T* __restrict dst, int64_t n, F f) {
  for_n(n, [=](int64_t i) { dst[i] = f(src[i]); });
}

std::vector<Array> convert_kernel(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  DType to = op.param(keys::new_dtype);
  DType from = x.dtype();
  if (is_semaphore(to) || is_semaphore(from)) fail(op, "cannot convert semaphores");
  if (to == from) return {x};
  Array out = Array::uninitialized(to, x.shape());
  int64_t n = x.size();
  visit_dtype(from, [&](auto stag) {
    using S = typename decltype(stag)::type;
    const S* src = x.data<S>();
    visit_dtype(to, [&](auto ttag) {
      using T = typename decltype(ttag)::type;
      T* dst = out.data<T>();
      if (to == DType::i1) {
        convert_loop(src, dst, n, [](S v) { return static_cast<T>(v != S(0)); });
      } else if constexpr (std::is_same_v<T, float>) {
        if (to == DType::f32) {
          convert_loop(src, dst, n, [](S v) { return convert_scalar<S, float>(v); });
        } else if constexpr (std::is_same_v<S, float>) {
          if (to == DType::bf16) convert_loop(src, dst, n, [](float v) { return round_to_bf16(v); });
          else convert_loop(src, dst, n, [](float v) { return round_to_f16(v); });
        } else {
          DType d = to;
          convert_loop(src, dst, n, [d](S v) { return static_cast<float>(round_double_to(d, static_cast<double>(v))); });
        }
      } else {
        convert_loop(src, dst, n, [](S v) { return convert_scalar<S, T>(v); });
      }
    });
  });
  return {out};
}

}  // namespace

void register_convert_kernels(RuleTable<Kernel>& t) { t.set("convert_element_type", convert_kernel); }

}  // namespace tessera::interp::kern
