// Structural kernels: broadcast_in_dim, reshape, squeeze, expand_dims,
// transpose, iota, concatenate, slice, dynamic_slice, dynamic_update_slice,
// split, repeat, pad, rev, roll, take_along_axis and bitcast_convert_type. Reshapes share the operand's buffer (O(1)); the rest are one
// strided copy each (kernels/copy.cpp).
#include <algorithm>
#include <bit>
#include <cstring>

#include "runtime/float_bits.h"
#include "runtime/kernels/util.h"

namespace tessera::interp::kern {
namespace {

const std::byte* at(const Array& a, int64_t offset) {
  return static_cast<const std::byte*>(a.raw()) + offset * storage_size(a.dtype());
}
std::byte* at(Array& a, int64_t offset) { return static_cast<std::byte*>(a.raw()) + offset * storage_size(a.dtype()); }

void expect_entries(const Op& op, const std::vector<int64_t>& v, int rank, const char* what) {
  if (static_cast<int>(v.size()) != rank)
    fail(op, std::string(what) + " has " + std::to_string(v.size()) + " entries for rank " + std::to_string(rank));
}

std::vector<Array> broadcast_in_dim(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  const Shape& shape = op.param(keys::shape);
  const auto& dims = op.param(keys::broadcast_dimensions);
  expect_entries(op, dims, x.rank(), "broadcast_dimensions");
  std::vector<int64_t> xs = dense_strides(x.shape()), ss(shape.size(), 0);
  for (int i = 0; i < x.rank(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size()) ||
        (x.shape()[i] != 1 && x.shape()[i] != shape[dims[i]]))
      fail(op, "operand shape " + shape_str(x.shape()) + " does not broadcast to " + shape_str(shape));
    if (x.shape()[i] != 1) ss[dims[i]] = xs[i];
  }
  Array out = Array::uninitialized(x.dtype(), shape);
  copy_strided(storage_size(x.dtype()), shape, out.raw(), dense_strides(shape), x.raw(), ss);
  return {out};
}

std::vector<Array> reshape(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  if (num_elements(op.param(keys::new_sizes)) != args[0].size()) fail(op, "element counts differ");
  return {args[0].reshaped(op.param(keys::new_sizes))};
}

std::vector<Array> squeeze(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const auto& dims = op.param(keys::dimensions);
  Shape s;
  for (int d = 0; d < args[0].rank(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) s.push_back(args[0].shape()[d]);
  if (num_elements(s) != args[0].size()) fail(op, "can only squeeze dimensions of size 1");
  return {args[0].reshaped(s)};
}

std::vector<Array> expand_dims(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  const auto& dims = op.param(keys::dimensions);
  int out_rank = x.rank() + static_cast<int>(dims.size());
  Shape s;
  int next = 0;
  for (int d = 0; d < out_rank; ++d) {
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) s.push_back(1);
    else if (next < x.rank()) s.push_back(x.shape()[next++]);
    else fail(op, "dimensions out of range");
  }
  return {x.reshaped(s)};
}

std::vector<Array> transpose(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  const auto& perm = op.param(keys::permutation);
  expect_entries(op, perm, x.rank(), "permutation");
  std::vector<int64_t> xs = dense_strides(x.shape()), ss;
  Shape s;
  std::vector<bool> seen(x.rank(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[p]) fail(op, "permutation is not a permutation of the dimensions");
    seen[p] = true;
    s.push_back(x.shape()[p]);
    ss.push_back(xs[p]);
  }
  Array out = Array::uninitialized(x.dtype(), s);
  copy_strided(storage_size(x.dtype()), s, out.raw(), dense_strides(s), x.raw(), ss);
  return {out};
}

std::vector<Array> iota(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 0);
  const Shape& shape = op.param(keys::shape);
  int64_t dim = op.param(keys::dimension);
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size())) fail(op, "dimension out of range");
  Array out = Array::uninitialized(op.param(keys::dtype), shape);
  int64_t outer = 1, inner = 1, n = shape[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  visit_family<DTypeClass::numeric>(op, out.dtype(), [&](auto tag, auto rnd) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t j = 0; j < n; ++j) {
        T v = rnd(static_cast<T>(j));
        T* row = o + (a * n + j) * inner;
        for (int64_t b = 0; b < inner; ++b) row[b] = v;
      }
  });
  return {out};
}

std::vector<Array> concatenate(const Op& op, std::span<const Array> args) {
  if (args.empty()) fail(op, "needs at least one operand");
  int64_t dim = op.param(keys::dimension);
  const Array& first = args[0];
  if (dim < 0 || dim >= first.rank()) fail(op, "dimension out of range");
  Shape s = first.shape();
  s[dim] = 0;
  for (const Array& a : args) {
    bool ok = a.dtype() == first.dtype() && a.rank() == first.rank();
    for (int d = 0; ok && d < a.rank(); ++d) ok = d == dim || a.shape()[d] == first.shape()[d];
    if (!ok) fail(op, "operands differ outside the concatenated dimension");
    s[dim] += a.shape()[dim];
  }
  Array out = Array::uninitialized(first.dtype(), s);
  std::vector<int64_t> os = dense_strides(s);
  int64_t offset = 0;
  for (const Array& a : args) {
    copy_strided(storage_size(a.dtype()), a.shape(), at(out, offset * os[dim]), os, a.raw(), dense_strides(a.shape()));
    offset += a.shape()[dim];
  }
  return {out};
}

// Copies the box [start, start + sizes) of x with the given steps into a new array.
Array take_box(const Array& x, const std::vector<int64_t>& start, const Shape& sizes, const std::vector<int64_t>& steps) {
  std::vector<int64_t> xs = dense_strides(x.shape()), ss(x.rank());
  int64_t offset = 0;
  for (int d = 0; d < x.rank(); ++d) {
    offset += start[d] * xs[d];
    ss[d] = xs[d] * steps[d];
  }
  Array out = Array::uninitialized(x.dtype(), sizes);
  if (out.size() == 0) return out;
  copy_strided(storage_size(x.dtype()), sizes, out.raw(), dense_strides(sizes), at(x, offset), ss);
  return out;
}

std::vector<Array> slice(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  const auto& start = op.param(keys::start_indices);
  const auto& limit = op.param(keys::limit_indices);
  std::vector<int64_t> steps = op.param(keys::strides);
  if (steps.empty()) steps.assign(x.rank(), 1);
  expect_entries(op, start, x.rank(), "start_indices");
  expect_entries(op, limit, x.rank(), "limit_indices");
  expect_entries(op, steps, x.rank(), "strides");
  Shape s;
  for (int d = 0; d < x.rank(); ++d) {
    if (start[d] < 0 || limit[d] > x.shape()[d] || start[d] > limit[d] || steps[d] < 1)
      fail(op, "slice out of range in dimension " + std::to_string(d));
    s.push_back((limit[d] - start[d] + steps[d] - 1) / steps[d]);
  }
  return {take_box(x, start, s, steps)};
}

// split: each piece is the box at the running offset along the axis.
std::vector<Array> split(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= x.rank()) fail(op, "axis out of range");
  std::vector<int64_t> start(x.rank(), 0), steps(x.rank(), 1);
  std::vector<Array> out;
  for (int64_t size : op.param(keys::sizes)) {
    Shape piece = x.shape();
    piece[axis] = size;
    if (size < 0 || size > x.shape()[axis] - start[axis]) fail(op, "sizes do not fit dimension " + std::to_string(axis));
    out.push_back(take_box(x, start, piece, steps));
    start[axis] += size;
  }
  if (start[axis] != x.shape()[axis]) fail(op, "sizes do not add up to dimension " + std::to_string(axis));
  return out;
}

// repeat: each slab of x from the axis on (outer x [n, inner...]) written
// `repeats` times in a row.
std::vector<Array> repeat(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  int64_t axis = op.param(keys::axis), r = op.param(keys::repeats);
  if (axis < 0 || axis >= x.rank() || r < 1) fail(op, "needs an axis of x and repeats >= 1");
  Shape shape = x.shape();
  shape[static_cast<size_t>(axis)] *= r;
  Array out = Array::uninitialized(x.dtype(), shape);
  int64_t slab = storage_size(x.dtype());
  for (int d = static_cast<int>(axis); d < x.rank(); ++d) slab *= x.shape()[static_cast<size_t>(d)];
  if (slab == 0) return {out};
  int64_t outer = x.size() * storage_size(x.dtype()) / slab;
  const std::byte* src = at(x, 0);
  std::byte* dst = at(out, 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < r; ++k) std::memcpy(dst + (o * r + k) * slab, src + o * slab, static_cast<size_t>(slab));
  return {out};
}

// Run-time start indices, clamped so the box [start, start + size) fits, as lax does.
std::vector<int64_t> clamped_starts(const Op& op, std::span<const Array> idx, const Shape& shape, const Shape& sizes) {
  std::vector<int64_t> st(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (idx[d].size() != 1 || !is_int(idx[d].dtype())) fail(op, "start indices must be integer scalars");
    st[d] = std::clamp<int64_t>(idx[d].get_int(0), 0, shape[d] - sizes[d]);
  }
  return st;
}

std::vector<Array> dynamic_slice(const Op& op, std::span<const Array> args) {
  if (args.empty()) fail(op, "needs an operand");
  const Array& x = args[0];
  expect_args(op, args, 1 + x.rank());
  const auto& sizes = op.param(keys::slice_sizes);
  expect_entries(op, sizes, x.rank(), "slice_sizes");
  for (int d = 0; d < x.rank(); ++d)
    if (sizes[d] < 0 || sizes[d] > x.shape()[d]) fail(op, "slice size exceeds dimension " + std::to_string(d));
  std::vector<int64_t> st = clamped_starts(op, args.subspan(1), x.shape(), sizes);
  return {take_box(x, st, sizes, std::vector<int64_t>(x.rank(), 1))};
}

std::vector<Array> dynamic_update_slice(const Op& op, std::span<const Array> args) {
  if (args.size() < 2) fail(op, "needs an operand and an update");
  const Array &x = args[0], &u = args[1];
  expect_args(op, args, 2 + x.rank());
  if (u.dtype() != x.dtype() || u.rank() != x.rank()) fail(op, "update does not fit the operand");
  for (int d = 0; d < x.rank(); ++d)
    if (u.shape()[d] > x.shape()[d]) fail(op, "update is larger than the operand in dimension " + std::to_string(d));
  std::vector<int64_t> st = clamped_starts(op, args.subspan(2), x.shape(), u.shape());
  Array out = x.copy();
  std::vector<int64_t> os = dense_strides(x.shape());
  int64_t offset = 0;
  for (int d = 0; d < x.rank(); ++d) offset += st[d] * os[d];
  if (u.size()) copy_strided(storage_size(x.dtype()), u.shape(), at(out, offset), os, u.raw(), dense_strides(u.shape()));
  return {out};
}

// pad x, v: low / high elements of v around each dimension; negative amounts crop.
std::vector<Array> pad(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 2);
  const Array &x = args[0], &v = args[1];
  if (v.size() != 1 || v.dtype() != x.dtype()) fail(op, "padding value must be a scalar of the operand's dtype");
  const auto& lo = op.param(keys::low);
  const auto& hi = op.param(keys::high);
  expect_entries(op, lo, x.rank(), "low");
  expect_entries(op, hi, x.rank(), "high");
  Shape s, inner;
  std::vector<int64_t> src_start(x.rank()), dst_start(x.rank());
  bool empty = false;
  for (int d = 0; d < x.rank(); ++d) {
    int64_t n = x.shape()[d] + lo[d] + hi[d];
    if (n < 0) fail(op, "negative padding removes more than dimension " + std::to_string(d) + " holds");
    s.push_back(n);
    // Operand element i lands at lo + i; keep those inside [0, n).
    int64_t i0 = std::max<int64_t>(0, -lo[d]), i1 = std::min<int64_t>(x.shape()[d], n - lo[d]);
    if (i1 <= i0) empty = true;
    inner.push_back(std::max<int64_t>(0, i1 - i0));
    src_start[d] = i0;
    dst_start[d] = lo[d] + i0;
  }
  Array out = Array::uninitialized(x.dtype(), s);
  fill_with(out, v.raw());
  if (!empty && out.size()) {
    std::vector<int64_t> os = dense_strides(s), xs = dense_strides(x.shape());
    int64_t so = 0, dof = 0;
    for (int d = 0; d < x.rank(); ++d) so += src_start[d] * xs[d], dof += dst_start[d] * os[d];
    copy_strided(storage_size(x.dtype()), inner, at(out, dof), os, at(x, so), xs);
  }
  return {out};
}

// roll: per index of the dims before `axis`, two contiguous copies (the
// elements after the dims from `axis` on are contiguous in row-major order).
std::vector<Array> roll(const Op& op, std::span<const Array> args) {
  bool static_shift = op.has(keys::shift);
  expect_args(op, args, static_shift ? 1 : 2);
  const Array& x = args[0];
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= x.rank()) fail(op, "axis out of range");
  int64_t n = x.shape()[axis];
  Array out = Array::uninitialized(x.dtype(), x.shape());
  if (x.size() == 0) return {out};
  int64_t shift = static_shift ? op.param(keys::shift) : args[1].get_int(0);
  int64_t s = ((shift % n) + n) % n;
  int64_t inner = storage_size(x.dtype());
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  int64_t outer = x.size() * storage_size(x.dtype()) / (n * inner);
  const std::byte* src = at(x, 0);
  std::byte* dst = at(out, 0);
  for (int64_t o = 0; o < outer; ++o, src += n * inner, dst += n * inner) {
    std::memcpy(dst + s * inner, src, static_cast<size_t>((n - s) * inner));
    std::memcpy(dst, src + (n - s) * inner, static_cast<size_t>(s * inner));
  }
  return {out};
}

// bitcast_convert_type: the element bytes reinterpreted. bf16 and f16 are
// kept as floats: their bytes are their 16-bit patterns (runtime/float_bits.h).
std::vector<Array> bitcast_convert_type(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  Array out = Array::uninitialized(op.param(keys::new_dtype), op.results.at(0)->type.shape());
  size_t bytes = static_cast<size_t>(x.size() * dtype_bytes(x.dtype()));
  if (bytes != static_cast<size_t>(out.size() * dtype_bytes(out.dtype()))) fail(op, "internal error: bitcast sizes differ");
  std::vector<std::byte> bits(bytes);
  if (is_rounded_float(x.dtype())) {
    const float* f = static_cast<const float*>(x.raw());
    for (int64_t i = 0; i < x.size(); ++i) {
      uint16_t h = x.dtype() == DType::bf16 ? bf16_bits(f[i]) : f16_bits(f[i]);
      std::memcpy(&bits[2 * static_cast<size_t>(i)], &h, 2);
    }
  } else {
    std::memcpy(bits.data(), x.raw(), bits.size());
  }
  if (is_rounded_float(out.dtype())) {
    float* f = static_cast<float*>(out.raw());
    for (int64_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, &bits[2 * static_cast<size_t>(i)], 2);
      f[i] = out.dtype() == DType::bf16 ? bf16_from_bits(h) : f16_from_bits(h);
    }
  } else {
    std::memcpy(out.raw(), bits.data(), bits.size());
  }
  return {out};
}

// take_along_axis: with x as (outer, n, inner) and idx as (outer, m, inner)
// around the axis, out[o, j, i] = x[o, idx[o, j, i], i]. An index outside
// the axis is an error naming it (whatever --oob says: it is a program
// error, not a memory read).
std::vector<Array> take_along_axis(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 2);
  const Array &x = args[0], &idx = args[1];
  int64_t axis = op.param(keys::axis);
  Array out = Array::uninitialized(x.dtype(), idx.shape());
  int64_t n = x.shape()[axis], m = idx.shape()[axis], inner = 1, elem = storage_size(x.dtype());
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  int64_t outer = m * inner == 0 ? 0 : out.size() / (m * inner);
  const std::byte* src = at(x, 0);
  std::byte* dst = at(out, 0);
  for (int64_t o = 0, pos = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t i = 0; i < inner; ++i, ++pos) {
        int64_t k = idx.get_int(pos);
        if (k < 0 || k >= n)
          fail(op, "index " + std::to_string(k) + " at position " + std::to_string(pos) + " is outside [0, " +
                       std::to_string(n) + ") along axis " + std::to_string(axis));
        std::memcpy(dst + pos * elem, src + ((o * n + k) * inner + i) * elem, static_cast<size_t>(elem));
      }
  return {out};
}

std::vector<Array> rev(const Op& op, std::span<const Array> args) {
  expect_args(op, args, 1);
  const Array& x = args[0];
  std::vector<int64_t> ss = dense_strides(x.shape());
  int64_t offset = 0;
  std::vector<bool> flip(x.rank(), false);
  for (int64_t d : op.param(keys::dimensions)) {
    if (d < 0 || d >= x.rank()) fail(op, "dimension out of range");
    flip[d] = true;
  }
  for (int d = 0; d < x.rank(); ++d)
    if (flip[d] && x.shape()[d] > 0) offset += (x.shape()[d] - 1) * ss[d], ss[d] = -ss[d];
  Array out = Array::uninitialized(x.dtype(), x.shape());
  if (x.size()) copy_strided(storage_size(x.dtype()), x.shape(), out.raw(), dense_strides(x.shape()), at(x, offset), ss);
  return {out};
}

}  // namespace

void register_structural_kernels(RuleTable<Kernel>& t) {
  t.set("broadcast_in_dim", broadcast_in_dim);
  t.set("reshape", reshape);
  t.set("squeeze", squeeze);
  t.set("expand_dims", expand_dims);
  t.set("transpose", transpose);
  t.set("iota", iota);
  t.set("concatenate", concatenate);
  t.set("slice", slice);
  t.set("dynamic_slice", dynamic_slice);
  t.set("dynamic_update_slice", dynamic_update_slice);
  t.set("pad", pad);
  t.set("rev", rev);
  t.set("roll", roll);
  t.set("split", split);
  t.set("take_along_axis", take_along_axis);
  t.set("bitcast_convert_type", bitcast_convert_type);
  t.set("repeat", repeat);
}

}  // namespace tessera::interp::kern
