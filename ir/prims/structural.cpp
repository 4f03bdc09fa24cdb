// Shape-changing ops: broadcast, reshape, transpose, squeeze, expand_dims, iota,
// concatenate, slices, split, repeat, pad, rev, gather, sort.
#include <algorithm>
#include <numeric>

#include "ir/prims/shape_util.h"

namespace tessera {
using namespace prims;
namespace {

std::vector<Type> one(Type t) { return {std::move(t)}; }

void check_permutation(const Op& op, const std::vector<int64_t>& perm, int rank) {
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(rank);
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota) fail(op, "permutation is not a permutation of 0.." + std::to_string(rank - 1));
}

std::vector<Type> broadcast_in_dim(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  const auto& shape = op.ints_param("shape");
  const auto& dims = op.ints_param("broadcast_dimensions");
  if (static_cast<int>(dims.size()) != x.rank())
    fail(op, "broadcast_dimensions has " + std::to_string(dims.size()) + " entries for an operand of rank " +
                 std::to_string(x.rank()));
  for (size_t i = 0; i < dims.size(); ++i) {
    check_axis(op, dims[i], static_cast<int>(shape.size()), "broadcast dimension");
    if (i && dims[i] <= dims[i - 1]) fail(op, "broadcast_dimensions must be strictly increasing");
    if (x.shape()[i] != 1 && x.shape()[i] != shape[dims[i]])
      fail(op, "operand dim " + std::to_string(i) + " of size " + std::to_string(x.shape()[i]) +
                   " cannot broadcast to size " + std::to_string(shape[dims[i]]));
  }
  return one(Type::array(x.dtype(), shape));
}

std::vector<Type> reshape(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  const auto& sizes = op.ints_param("new_sizes");
  if (num_elements(sizes) != x.array_type().size())
    fail(op, "cannot reshape " + x.str() + " to " + shape_str(sizes) + ": element counts differ");
  return one(Type::array(x.dtype(), sizes));
}

std::vector<Type> transpose(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  const auto& perm = op.ints_param("permutation");
  if (static_cast<int>(perm.size()) != x.rank()) fail(op, "permutation length differs from rank");
  check_permutation(op, perm, x.rank());
  Shape s;
  for (int64_t p : perm) s.push_back(x.shape()[p]);
  return one(Type::array(x.dtype(), s));
}

std::vector<Type> squeeze(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  const auto& dims = op.ints_param("dimensions");
  Shape s;
  for (int d = 0; d < x.rank(); ++d) {
    bool drop = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (drop && x.shape()[d] != 1) fail(op, "cannot squeeze dimension " + std::to_string(d) + " of size " + std::to_string(x.shape()[d]));
    if (!drop) s.push_back(x.shape()[d]);
  }
  for (int64_t d : dims) check_axis(op, d, x.rank(), "dimension");
  return one(Type::array(x.dtype(), s));
}

std::vector<Type> expand_dims(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  auto dims = op.ints_param("dimensions");
  int out_rank = x.rank() + static_cast<int>(dims.size());
  std::sort(dims.begin(), dims.end());
  // Check before building: an out-of-range dim would make the loop read past x's shape.
  for (int64_t d : dims) check_axis(op, d, out_rank, "dimension");
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) fail(op, "dimensions repeat a dimension");
  Shape s;
  size_t next_in = 0;
  for (int d = 0; d < out_rank; ++d) {
    if (std::binary_search(dims.begin(), dims.end(), d)) s.push_back(1);
    else s.push_back(x.shape()[next_in++]);
  }
  return one(Type::array(x.dtype(), s));
}

std::vector<Type> iota(const Op& op) {
  expect_operands(op, 0);
  const auto& shape = op.ints_param("shape");
  check_axis(op, op.int_param("dimension"), static_cast<int>(shape.size()), "dimension");
  DType d = op.dtype_param("dtype");
  if (!is_int(d) && !is_float(d)) fail(op, "iota needs a numeric dtype");
  return one(Type::array(d, shape));
}

std::vector<Type> concatenate(const Op& op) {
  size_t n = op.num_main_operands();
  if (n < 1) fail(op, "needs at least one operand");
  int64_t dim = op.int_param("dimension");
  Type first = array_operand(op, 0);
  check_axis(op, dim, first.rank(), "dimension");
  Shape s = first.shape();
  for (size_t i = 1; i < n; ++i) {
    Type t = array_operand(op, static_cast<int>(i));
    if (t.dtype() != first.dtype() || t.rank() != first.rank()) fail(op, "operands differ in dtype or rank");
    for (int d = 0; d < t.rank(); ++d)
      if (d != dim && t.shape()[d] != first.shape()[d]) fail(op, "operands differ outside the concatenated dimension");
    s[dim] += t.shape()[dim];
  }
  return one(Type::array(first.dtype(), s));
}

std::vector<Type> slice(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  const auto& start = op.ints_param("start_indices");
  const auto& limit = op.ints_param("limit_indices");
  std::vector<int64_t> strides = op.ints_param("strides");
  if (strides.empty()) strides.assign(x.rank(), 1);
  if (static_cast<int>(start.size()) != x.rank() || static_cast<int>(limit.size()) != x.rank() ||
      static_cast<int>(strides.size()) != x.rank())
    fail(op, "start_indices, limit_indices and strides need one entry per dimension");
  Shape s;
  for (int d = 0; d < x.rank(); ++d) {
    if (start[d] < 0 || limit[d] > x.shape()[d] || start[d] > limit[d] || strides[d] < 1)
      fail(op, "slice [" + std::to_string(start[d]) + ":" + std::to_string(limit[d]) + "] is out of range for dim " +
                   std::to_string(d) + " of " + x.str());
    s.push_back((limit[d] - start[d] + strides[d] - 1) / strides[d]);
  }
  return one(Type::array(x.dtype(), s));
}

std::vector<Type> dynamic_slice(const Op& op) {
  Type x = array_operand(op, 0);
  expect_operands(op, 1 + x.rank());
  for (int d = 0; d < x.rank(); ++d) expect_int_scalar(op, op.main_operand(1 + d).type(), "start index");
  const auto& sizes = op.ints_param("slice_sizes");
  if (static_cast<int>(sizes.size()) != x.rank()) fail(op, "slice_sizes needs one entry per dimension");
  for (int d = 0; d < x.rank(); ++d)
    if (sizes[d] < 0 || sizes[d] > x.shape()[d]) fail(op, "slice size exceeds dimension " + std::to_string(d));
  return one(Type::array(x.dtype(), sizes));
}

std::vector<Type> dynamic_update_slice(const Op& op) {
  Type x = array_operand(op, 0);
  expect_operands(op, 2 + x.rank());
  Type u = array_operand(op, 1);
  if (u.dtype() != x.dtype() || u.rank() != x.rank()) fail(op, "update " + u.str() + " does not fit operand " + x.str());
  for (int d = 0; d < x.rank(); ++d) {
    if (u.shape()[d] > x.shape()[d]) fail(op, "update is larger than the operand in dimension " + std::to_string(d));
    expect_int_scalar(op, op.main_operand(2 + d).type(), "start index");
  }
  return one(x);
}

std::vector<Type> pad(const Op& op) {
  expect_operands(op, 2);
  Type x = array_operand(op, 0);
  Type v = array_operand(op, 1);
  if (!v.is_scalar() || v.dtype() != x.dtype()) fail(op, "padding value must be a scalar of the operand's dtype");
  const auto& lo = op.ints_param("low");
  const auto& hi = op.ints_param("high");
  if (static_cast<int>(lo.size()) != x.rank() || static_cast<int>(hi.size()) != x.rank())
    fail(op, "low and high need one entry per dimension");
  Shape s;
  for (int d = 0; d < x.rank(); ++d) {
    int64_t n = x.shape()[d] + lo[d] + hi[d];
    if (n < 0) fail(op, "negative padding removes more than dimension " + std::to_string(d) + " holds");
    s.push_back(n);
  }
  return one(Type::array(x.dtype(), s));
}

std::vector<Type> same_as_operand_with_dims(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  for (int64_t d : op.ints_param("dimensions")) check_axis(op, d, x.rank(), "dimension");
  return one(x);
}

// roll[shift=k, axis=a] x, or roll[axis=a] x, %s with a run-time integer
// shift (pltpu.roll, jnp.roll): element i of the axis moves to (i + shift)
// mod its size; negative shifts move the other way.
std::vector<Type> roll(const Op& op) {
  bool static_shift = op.has_param("shift");
  expect_operands(op, static_shift ? 1 : 2);
  Type x = array_operand(op, 0);
  check_axis(op, op.int_param("axis"), x.rank(), "axis");
  if (x.rank() == 0) fail(op, "cannot roll a rank-0 value");
  if (!static_shift) expect_int_scalar(op, array_operand(op, 1), "shift");
  return one(x);
}

// bitcast_convert_type[new_dtype=D] x (lax.bitcast_convert_type): the same
// bits read as D. Equal widths keep the shape; a narrower D adds a trailing
// dim of the width ratio; a wider D consumes a trailing dim of that size.
std::vector<Type> bitcast_convert_type(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  DType to = op.dtype_param("new_dtype");
  for (DType d : {x.dtype(), to})
    if (is_bool(d) || is_semaphore(d)) fail(op, "cannot bitcast " + std::string(dtype_name(d)));
  int from_bytes = dtype_bytes(x.dtype()), to_bytes = dtype_bytes(to);
  Shape s = x.shape();
  if (from_bytes > to_bytes) {
    s.push_back(from_bytes / to_bytes);
  } else if (from_bytes < to_bytes) {
    int64_t ratio = to_bytes / from_bytes;
    if (s.empty() || s.back() != ratio)
      fail(op, "converting " + x.str() + " to the wider " + std::string(dtype_name(to)) + " needs a last dim of " +
                   std::to_string(ratio));
    s.pop_back();
  }
  return one(Type::array(to, s));
}

// take_along_axis[axis=a] x, idx (jnp.take_along_axis): out[..j..] =
// x[..idx[..j..]..] along a; idx has x's rank and x's sizes off the axis.
std::vector<Type> take_along_axis(const Op& op) {
  expect_operands(op, 2);
  Type x = array_operand(op, 0), idx = array_operand(op, 1);
  int64_t axis = op.int_param("axis");
  check_axis(op, axis, x.rank());
  if (!is_int(idx.dtype())) fail(op, "indices must be integers, got " + idx.str());
  if (idx.rank() != x.rank()) fail(op, "indices " + idx.str() + " must have the rank of " + x.str());
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis && idx.shape()[d] != x.shape()[d])
      fail(op, "indices " + idx.str() + " and " + x.str() + " differ in dimension " + std::to_string(d) + ", which is not the axis");
  return one(Type::array(x.dtype(), idx.shape()));
}

// split[sizes=(a, b, ...), axis=d] x (lax.split): consecutive pieces of x
// along d, one result per size; the sizes add up to that dimension.
std::vector<Type> split(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  int64_t axis = op.int_param("axis");
  check_axis(op, axis, x.rank());
  const auto& sizes = op.ints_param("sizes");
  if (sizes.empty()) fail(op, "sizes must name at least one piece");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail(op, "sizes must be non-negative, got " + shape_str(sizes));
    if (__builtin_add_overflow(total, s, &total)) fail(op, "sizes " + shape_str(sizes) + " overflow");
  }
  if (total != x.shape()[axis])
    fail(op, "sizes " + shape_str(sizes) + " add up to " + std::to_string(total) + ", but dimension " + std::to_string(axis) +
                 " of " + x.str() + " has size " + std::to_string(x.shape()[axis]));
  std::vector<Type> out;
  for (int64_t s : sizes) {
    Shape piece = x.shape();
    piece[axis] = s;
    out.push_back(Type::array(x.dtype(), piece));
  }
  return out;
}

// repeat[repeats=r, axis=d] x (pltpu.repeat): r copies of x one after the
// other along d, as jnp.tile with r on that axis (what Mosaic's tpu.repeat
// does, and JAX's implementation of the primitive since it follows it).
std::vector<Type> repeat(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  int64_t axis = op.int_param("axis"), r = op.int_param("repeats");
  check_axis(op, axis, x.rank());
  if (r < 1) fail(op, "repeats must be at least 1, got " + std::to_string(r));
  Shape s = x.shape();
  if (__builtin_mul_overflow(s[static_cast<size_t>(axis)], r, &s[static_cast<size_t>(axis)]))
    fail(op, std::to_string(r) + " repeats of " + x.str() + " overflow");
  return one(Type::array(x.dtype(), s));
}

std::vector<Type> gather(const Op& op) {
  expect_operands(op, 2);
  Type x = array_operand(op, 0);
  Type idx = array_operand(op, 1);
  int64_t axis = op.int_param("axis");
  check_axis(op, axis, x.rank());
  if (idx.rank() != 1 || !is_int(idx.dtype())) fail(op, "indices must be a 1-D integer array, got " + idx.str());
  Shape s = x.shape();
  s[axis] = idx.shape()[0];
  return one(Type::array(x.dtype(), s));
}

std::vector<Type> sort(const Op& op) {
  size_t n = op.num_main_operands();
  if (n < 1) fail(op, "needs at least one operand");
  std::vector<Type> ts;
  for (size_t i = 0; i < n; ++i) ts.push_back(array_operand(op, static_cast<int>(i)));
  for (const Type& t : ts)
    if (t.shape() != ts[0].shape()) fail(op, "operands must share a shape: " + types_str(ts));
  check_axis(op, op.int_param("dimension"), ts[0].rank(), "dimension");
  int64_t keys = op.int_param("num_keys");
  if (keys < 1 || keys > static_cast<int64_t>(n)) fail(op, "num_keys must be between 1 and the operand count");
  return ts;
}

}  // namespace

void register_structural(Registry& r) {
  using K = ParamKind;
  r.add({"broadcast_in_dim", "broadcasts x to shape, operand dim i going to broadcast_dimensions[i]",
         {req("shape", K::Ints), req("broadcast_dimensions", K::Ints)}, broadcast_in_dim, {}, false});
  r.add({"reshape", "row-major reshape", {req("new_sizes", K::Ints)}, reshape, {}, false});
  r.add({"transpose", "permutes dimensions: out dim i is operand dim permutation[i]", {req("permutation", K::Ints)},
         transpose, {}, false});
  r.add({"squeeze", "removes size-1 dimensions", {req("dimensions", K::Ints)}, squeeze, {}, false});
  r.add({"expand_dims", "inserts size-1 dimensions at the given output positions", {req("dimensions", K::Ints)},
         expand_dims, {}, false});
  r.add({"iota", "counts 0, 1, ... along dimension", {req("dtype", K::DType), req("shape", K::Ints), req("dimension", K::Int)},
         iota, {}, false});
  r.add({"concatenate", "joins operands along dimension", {req("dimension", K::Int)}, concatenate, {}, false});
  r.add({"slice", "static strided slice",
         {req("start_indices", K::Ints), req("limit_indices", K::Ints), opt("strides", K::Ints, std::vector<int64_t>{})},
         slice, {}, false});
  r.add({"dynamic_slice", "slice at run-time starts (clamped into range)", {req("slice_sizes", K::Ints)}, dynamic_slice, {}, false,
         {1, -1}});
  r.add({"dynamic_update_slice", "writes update at run-time starts (clamped into range)", {}, dynamic_update_slice, {}, false,
         {2, -1}});
  r.add({"pad", "pads with a scalar value (negative padding crops)", {req("low", K::Ints), req("high", K::Ints)}, pad, {}, false});
  r.add({"rev", "reverses the given dimensions", {req("dimensions", K::Ints)}, same_as_operand_with_dims, {}, false});
  r.add({"bitcast_convert_type", "the same bits read as new_dtype (a trailing dim for the width ratio)",
         {req("new_dtype", K::DType)}, bitcast_convert_type, {}, false});
  r.add({"take_along_axis", "x at the indices idx along axis (idx: x's rank)", {req("axis", K::Int)}, take_along_axis,
         {}, false});
  r.add({"roll", "rotates along axis by shift (a param, or a run-time operand), wrapping around",
         {req("axis", K::Int), opt("shift", K::Int)}, roll, {}, false, {1, 2}});
  r.add({"split", "consecutive pieces of x along axis, one result per entry of sizes", {req("sizes", K::Ints), req("axis", K::Int)},
         split, {}, false});
  r.add({"repeat", "repeats copies of x one after the other along axis (pltpu.repeat: a tile)",
         {req("repeats", K::Int), req("axis", K::Int)}, repeat, {}, false});
  r.add({"gather", "x indexed along axis by a 1-D index array (indices clamped)", {opt("axis", K::Int, int64_t{0})},
         gather, {}, false});
  r.add({"sort", "stable sort along dimension by the first num_keys operands",
         {opt("dimension", K::Int, int64_t{0}), opt("num_keys", K::Int, int64_t{1}), opt("descending", K::Bool, false)},
         sort, {}, false});
}

}  // namespace tessera
