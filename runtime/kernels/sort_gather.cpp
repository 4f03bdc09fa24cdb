// gather (indices clamped into range) and sort (stable, several operands,
// lexicographic on the first num_keys, ascending or descending).
//
// Sort order is a total order: integers by value; floats as
// -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN (XLA's total order;
// NumPy puts every NaN last). `descending` reverses the order of keys while
// equal keys keep their original relative order (still stable).
#include <algorithm>
#include <bit>
#include <numeric>

#include "runtime/kernels/util.h"

namespace tessera::interp::kern {
namespace {

std::vector<Array> gather(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 2);
  const Array &x = args[0], &idx = args[1];
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= x.rank()) fail(op, "axis out of range");
  if (idx.rank() != 1 || !is_int(idx.dtype())) fail(op, "indices must be a 1-D integer array");
  int64_t outer = 1, inner = 1, n = x.shape()[axis], len = idx.size();
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  Shape s = x.shape();
  s[axis] = len;
  Array out = Array::uninitialized(x.dtype(), s);
  if (out.size() == 0) return {out};
  if (n == 0) fail(op, "gathers from an empty axis");
  int es = storage_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t j = 0; j < len; ++j) {
    int64_t c = std::clamp<int64_t>(idx.get_int(j), 0, n - 1);
    copy_strided(es, {outer, inner}, dst + j * inner * es, {len * inner, 1}, src + c * inner * es, {n * inner, 1});
  }
  return {out};
}

// Order-preserving map of a value to an unsigned 64-bit key.
template <class T>
uint64_t sort_key(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    uint64_t u = std::bit_cast<uint64_t>(static_cast<double>(v));
    return (u >> 63) ? ~u : u | (uint64_t{1} << 63);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) ^ (uint64_t{1} << 63);
  } else {
    return static_cast<uint64_t>(v);
  }
}

std::vector<Array> sort(const Op& op, std::span<const Array> args) {
  if (args.empty()) fail(op, "needs at least one operand");
  const Shape& shape = args[0].shape();
  for (const Array& a : args)
    if (a.shape() != shape) fail(op, "operands must share a shape");
  int64_t dim = op.param(keys::dimension);
  int64_t num_keys = op.param(keys::num_keys);
  bool descending = op.param(keys::descending);
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size())) fail(op, "dimension out of range");
  if (num_keys < 1 || num_keys > static_cast<int64_t>(args.size())) fail(op, "num_keys must be between 1 and the operand count");
  int64_t outer = 1, inner = 1, n = shape[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];

  std::vector<Array> outs;
  for (const Array& a : args) outs.push_back(Array::uninitialized(a.dtype(), a.shape()));
  if (shape.empty() || num_elements(shape) == 0) {
    for (size_t i = 0; i < args.size(); ++i) outs[i] = args[i].copy();
    return outs;
  }
  std::vector<std::vector<uint64_t>> keys(static_cast<size_t>(num_keys), std::vector<uint64_t>(static_cast<size_t>(n)));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t b = 0; b < inner; ++b) {
      int64_t base = a * n * inner + b;
      for (int64_t k = 0; k < num_keys; ++k) {
        visit(args[k], [&](const auto* p) {
          for (int64_t j = 0; j < n; ++j) {
            uint64_t key = sort_key(p[base + j * inner]);
            keys[k][j] = descending ? ~key : key;
          }
        });
      }
      std::iota(perm.begin(), perm.end(), 0);
      if (num_keys == 1) {
        const std::vector<uint64_t>& k0 = keys[0];
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) { return k0[x] < k0[y]; });
      } else {
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
          for (const auto& kv : keys)
            if (kv[x] != kv[y]) return kv[x] < kv[y];
          return false;
        });
      }
      for (size_t i = 0; i < args.size(); ++i) {
        visit(args[i], [&](const auto* p) {
          using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
          T* o = outs[i].data<T>();
          for (int64_t j = 0; j < n; ++j) o[base + j * inner] = p[base + perm[j] * inner];
        });
      }
    }
  }
  return outs;
}

}  // namespace

void register_sort_gather_kernels(RuleTable<Kernel>& t) {
  t.set("gather", gather);
  t.set("sort", sort);
}

}  // namespace tessera::interp::kern
