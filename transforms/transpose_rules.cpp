// Transpose rules of the linear value primitives (JAX's `ad.deflinear2` /
// `primitive_transposes` entries beside each lax primitive): elementwise
// linear maps, structural ops, reductions, dot_general, gathers and sort.
//
// A rule gets the cotangents of its results (nullopt: zero) and returns one
// per operand. Operands that are not linear get nullopt; so do linear ones
// whose contribution is zero. A rank-0 operand an elementwise op broadcast
// gets the full-shaped cotangent, which the walk sums (transpose.cpp, fit).
#include <algorithm>
#include <numeric>

#include "transforms/transpose.h"

namespace tessera::transpose {
namespace {

using Vals = std::vector<Value>;
using Cts = std::vector<Cotangent>;
using Mask = std::vector<bool>;

const Type& operand_type(const Op& op, size_t i) { return op.operands[i].type(); }

std::string not_linear(const Op& op, const std::string& why) { return "transpose: `" + op.name() + "` " + why; }

Cts none(const Op& op) { return Cts(op.operands.size()); }

// A rule for an op with one linear operand `at` (the others must not be
// linear) whose cotangent is f(ct).
template <class F>
TransposeRule unary_linear(size_t at, F f) {
  return [at, f](Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
    for (size_t i = 0; i < lin.size(); ++i)
      if (lin[i] && i != at)
        throw Error(op.loc, not_linear(op, "is not linear in operand " + std::to_string(i) + " (only in operand " +
                                               std::to_string(at) + ")"));
    Cts r = none(op);
    if (ct[0]) r[at] = f(c, op, x, *ct[0]);
    return r;
  };
}

Cts add_rule(Ctx&, const Op& op, const Vals&, const Mask& lin, const Cts& ct) {
  Cts r = none(op);
  for (size_t i = 0; i < 2; ++i)
    if (lin[i]) r[i] = ct[0];
  return r;
}

Cts sub_rule(Ctx& c, const Op& op, const Vals&, const Mask& lin, const Cts& ct) {
  Cts r = none(op);
  if (!ct[0]) return r;
  if (lin[0]) r[0] = ct[0];
  if (lin[1]) r[1] = c.b.unary("neg", *ct[0]);
  return r;
}

Cts mul_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  Cts r = none(op);
  if (!ct[0]) return r;
  size_t l = lin[0] ? 0 : 1;
  r[l] = c.b.binary("mul", *ct[0], x[1 - l]);
  return r;
}

Cts div_rule(Ctx& c, const Op& op, const Vals& x, const Mask&, const Cts& ct) {
  Cts r = none(op);
  if (ct[0]) r[0] = c.b.binary("div", *ct[0], x[1]);
  return r;
}

Value convert_back(Ctx& c, const Op& op, const Vals&, Value ct) {
  return c.b.emit1("convert_element_type", {ct}, {{"new_dtype", operand_type(op, 0).dtype()}});
}

// select_n p, c0, c1...: case i receives the cotangent where p picks it.
Cts select_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  if (lin[0]) throw Error(op.loc, not_linear(op, "is not linear in its predicate"));
  Cts r = none(op);
  if (!ct[0]) return r;
  const Type& t = op.results[0]->type;
  Value zero = c.b.zeros(t);
  for (size_t i = 1; i < x.size(); ++i) {
    if (!lin[i]) continue;
    Vals cases{x[0]};
    for (size_t k = 1; k < x.size(); ++k) cases.push_back(k == i ? *ct[0] : zero);
    r[i] = c.b.emit1("select_n", cases);
  }
  return r;
}

// ---- reductions and dot_general ----------------------------------------------

std::vector<int64_t> kept_dims(int rank, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept;
  for (int d = 0; d < rank; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  return kept;
}

Value reduce_sum_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  const Type& x = operand_type(op, 0);
  return c.b.emit1("broadcast_in_dim", {ct},
                   {{"shape", x.shape()}, {"broadcast_dimensions", kept_dims(x.rank(), op.param(keys::axes))}});
}

Value cumsum_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  return c.b.emit1("cumsum", {ct}, {{"axis", op.param(keys::axis)}, {"reverse", !op.param(keys::reverse)}});
}

// The cotangent of one side of dot_general: the other side contracted with
// the cotangent over the other side's free dims, batch dims kept, then the
// dims put back in the side's order (jax/_src/lax/lax.py,
// _dot_general_transpose_lhs).
Value dot_side(Ctx& c, const Op& op, Value ct, Value other, bool lhs) {
  const Type& self = operand_type(op, lhs ? 0 : 1);
  const Type& oth = operand_type(op, lhs ? 1 : 0);
  const auto& sc = op.ints_param(lhs ? "lhs_contracting" : "rhs_contracting");
  const auto& oc = op.ints_param(lhs ? "rhs_contracting" : "lhs_contracting");
  const auto& sb = op.ints_param(lhs ? "lhs_batch" : "rhs_batch");
  const auto& ob = op.ints_param(lhs ? "rhs_batch" : "lhs_batch");
  auto free = [](const Type& t, const std::vector<int64_t>& cd, const std::vector<int64_t>& bd) {
    std::vector<int64_t> f;
    for (int d = 0; d < t.rank(); ++d)
      if (std::find(cd.begin(), cd.end(), d) == cd.end() && std::find(bd.begin(), bd.end(), d) == bd.end()) f.push_back(d);
    return f;
  };
  std::vector<int64_t> self_free = free(self, sc, sb), other_free = free(oth, oc, ob);
  int64_t nb = static_cast<int64_t>(sb.size());
  int64_t nfl = static_cast<int64_t>(lhs ? self_free.size() : other_free.size());
  // The cotangent's dims: batch, lhs free, rhs free.
  std::vector<int64_t> ct_batch(nb), ct_other_free;
  std::iota(ct_batch.begin(), ct_batch.end(), 0);
  int64_t first_other = lhs ? nb + nfl : nb;
  for (size_t i = 0; i < other_free.size(); ++i) ct_other_free.push_back(first_other + static_cast<int64_t>(i));
  if (ct.type().dtype() != self.dtype()) ct = c.b.emit1("convert_element_type", {ct}, {{"new_dtype", self.dtype()}});
  Value r = c.b.emit1("dot_general", {ct, other},
                      {{"lhs_contracting", ct_other_free}, {"rhs_contracting", other_free}, {"lhs_batch", ct_batch},
                       {"rhs_batch", ob}});
  // r's dims: batch (self's sb), self's free dims, then other's contracting
  // dims in increasing order, i.e. the matching self contracting dims.
  std::vector<int64_t> pos(sb.begin(), sb.end());
  pos.insert(pos.end(), self_free.begin(), self_free.end());
  std::vector<int64_t> oc_sorted = oc;
  std::sort(oc_sorted.begin(), oc_sorted.end());
  for (int64_t d : oc_sorted) pos.push_back(sc[std::find(oc.begin(), oc.end(), d) - oc.begin()]);
  std::vector<int64_t> perm(self.rank());
  for (size_t p = 0; p < pos.size(); ++p) perm[pos[p]] = static_cast<int64_t>(p);
  std::vector<int64_t> iota(self.rank());
  std::iota(iota.begin(), iota.end(), 0);
  if (perm == iota) return r;
  return c.b.emit1("transpose", {r}, {{"permutation", perm}});
}

Cts dot_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  Cts r = none(op);
  if (!ct[0]) return r;
  if (lin[0]) r[0] = dot_side(c, op, *ct[0], x[1], true);
  else r[1] = dot_side(c, op, *ct[0], x[0], false);
  return r;
}

// ---- structural ops ----------------------------------------------------------

// broadcast_in_dim: summed over the new dims and over the size-1 dims it
// stretched, then reshaped to the operand.
Value broadcast_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  const Type& x = operand_type(op, 0);
  const auto& dims = op.param(keys::broadcast_dimensions);
  const auto& shape = op.param(keys::shape);
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    auto it = std::find(dims.begin(), dims.end(), d);
    if (it == dims.end() || (x.shape()[it - dims.begin()] == 1 && shape[d] != 1)) axes.push_back(d);
  }
  Value s = axes.empty() ? ct : c.b.emit1("reduce_sum", {ct}, {{"axes", axes}});
  if (s.type().shape() == x.shape()) return s;
  return c.b.emit1("reshape", {s}, {{"new_sizes", x.shape()}});
}

Value reshape_back(Ctx& c, const Op& op, const Vals&, Value ct) {
  return c.b.emit1("reshape", {ct}, {{"new_sizes", operand_type(op, 0).shape()}});
}

Value transpose_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  const auto& perm = op.param(keys::permutation);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return c.b.emit1("transpose", {ct}, {{"permutation", inv}});
}

Value rev_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  return c.b.emit1("rev", {ct}, {{"dimensions", op.param(keys::dimensions)}});
}

Value reduce_precision_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  return c.b.emit1("reduce_precision", {ct},
                   {{"exponent_bits", op.param(keys::exponent_bits)}, {"mantissa_bits", op.param(keys::mantissa_bits)}});
}

Value zero_scalar(const Type& t) { return Builder::literal(t.dtype(), 0.0); }

// slice: the cotangent spread back with zeros between the strided elements
// (each dim: an axis of `stride` slots after every element, flattened) and
// around the slice.
Value slice_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  const Type& x = operand_type(op, 0);
  const auto& start = op.param(keys::start_indices);
  std::vector<int64_t> strides = op.param(keys::strides);
  if (strides.empty()) strides.assign(x.rank(), 1);
  Builder& b = c.b;
  Value z = zero_scalar(x);
  std::vector<int64_t> lo(x.rank()), hi(x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    int64_t n = ct.type().shape()[d], s = strides[d];
    int64_t span = n == 0 ? 0 : (n - 1) * s + 1;
    if (s > 1 && n > 0) {
      Shape sh = ct.type().shape();
      Value e = b.emit1("expand_dims", {ct}, {{"dimensions", std::vector<int64_t>{d + 1}}});
      std::vector<int64_t> plo(x.rank() + 1, 0), phi(x.rank() + 1, 0);
      phi[d + 1] = s - 1;
      e = b.emit1("pad", {e, z}, {{"low", plo}, {"high", phi}});
      sh[d] = n * s;
      e = b.emit1("reshape", {e}, {{"new_sizes", sh}});
      std::vector<int64_t> st(x.rank(), 0), lim = sh;
      lim[d] = span;
      ct = b.emit1("slice", {e}, {{"start_indices", st}, {"limit_indices", lim}});
    }
    lo[d] = start[d];
    hi[d] = x.shape()[d] - start[d] - span;
  }
  return b.emit1("pad", {ct, z}, {{"low", lo}, {"high", hi}});
}

// pad: the operand's cotangent is the cotangent cropped back (padding by the
// negated amounts, which also restores zeros where negative padding
// cropped); the padding value's is the sum over the padded positions.
Cts pad_rule(Ctx& c, const Op& op, const Vals&, const Mask& lin, const Cts& ct) {
  Cts r = none(op);
  if (!ct[0]) return r;
  const Type& x = operand_type(op, 0);
  std::vector<int64_t> lo = op.param(keys::low), hi = op.param(keys::high);
  for (auto& v : lo) v = -v;
  for (auto& v : hi) v = -v;
  Value cx = c.b.emit1("pad", {*ct[0], zero_scalar(x)}, {{"low", lo}, {"high", hi}});
  if (lin[0]) r[0] = cx;
  if (lin[1]) {
    auto all = [](int rank) {
      std::vector<int64_t> a(rank);
      std::iota(a.begin(), a.end(), 0);
      return a;
    };
    Value total = c.b.emit1("reduce_sum", {*ct[0]}, {{"axes", all(ct[0]->type().rank())}});
    Value inner = c.b.emit1("reduce_sum", {cx}, {{"axes", all(x.rank())}});
    r[1] = c.b.binary("sub", total, inner);
  }
  return r;
}

Cts concatenate_rule(Ctx& c, const Op& op, const Vals&, const Mask& lin, const Cts& ct) {
  Cts r = none(op);
  if (!ct[0]) return r;
  int64_t dim = op.param(keys::dimension);
  const Shape& full = ct[0]->type().shape();
  int64_t at = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Type& t = operand_type(op, i);
    if (lin[i]) {
      std::vector<int64_t> st(full.size(), 0), lim = full;
      st[dim] = at;
      lim[dim] = at + t.shape()[dim];
      r[i] = c.b.emit1("slice", {*ct[0]}, {{"start_indices", st}, {"limit_indices", lim}});
    }
    at += t.shape()[dim];
  }
  return r;
}

Cts split_rule(Ctx& c, const Op& op, const Vals&, const Mask&, const Cts& ct) {
  Cts r = none(op);
  bool any = false;
  for (const Cotangent& k : ct) any |= k.has_value();
  if (!any) return r;
  Vals pieces;
  for (size_t j = 0; j < ct.size(); ++j) pieces.push_back(c.instantiate(ct[j], op.results[j]->type));
  r[0] = pieces.size() == 1 ? pieces[0] : c.b.emit1("concatenate", pieces, {{"dimension", op.param(keys::axis)}});
  return r;
}

// repeat: each element of x appears once in every copy, so its cotangent is
// the sum over the copies: the axis split into (copies, n), summed over copies.
Value repeat_t(Ctx& c, const Op& op, const Vals&, Value ct) {
  const Type& x = operand_type(op, 0);
  auto axis = static_cast<size_t>(op.param(keys::axis));
  Shape split = x.shape();
  split.insert(split.begin() + static_cast<long>(axis), op.param(keys::repeats));
  Value copies = c.b.emit1("reshape", {ct}, {{"new_sizes", split}});
  return c.b.emit1("reduce_sum", {copies}, {{"axes", std::vector<int64_t>{static_cast<int64_t>(axis)}}});
}

Value roll_t(Ctx& c, const Op& op, const Vals& x, Value ct) {
  int64_t axis = op.param(keys::axis);
  if (op.has(keys::shift) && x.size() == 1)
    return c.b.emit1("roll", {ct}, {{"axis", axis}, {"shift", -op.param(keys::shift)}});
  return c.b.emit1("roll", {ct, c.b.unary("neg", x[1])}, {{"axis", axis}});
}

// dynamic_slice: the cotangent written into zeros at the same (clamped) starts.
Value dynamic_slice_t(Ctx& c, const Op& op, const Vals& x, Value ct) {
  Vals ops{c.b.zeros(operand_type(op, 0)), ct};
  ops.insert(ops.end(), x.begin() + 1, x.end());
  return c.b.emit1("dynamic_update_slice", ops);
}

Cts dynamic_update_slice_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  for (size_t i = 2; i < lin.size(); ++i)
    if (lin[i]) throw Error(op.loc, not_linear(op, "is not linear in its start indices"));
  Cts r = none(op);
  if (!ct[0]) return r;
  const Type& u = operand_type(op, 1);
  Vals starts(x.begin() + 2, x.end());
  if (lin[0]) {
    Vals ops{*ct[0], c.b.zeros(u)};
    ops.insert(ops.end(), starts.begin(), starts.end());
    r[0] = c.b.emit1("dynamic_update_slice", ops);
  }
  if (lin[1]) {
    Vals ops{*ct[0]};
    ops.insert(ops.end(), starts.begin(), starts.end());
    r[1] = c.b.emit1("dynamic_slice", ops, {{"slice_sizes", u.shape()}});
  }
  return r;
}

// `idx == iota` along a new last axis of size n, as x's dtype: the one-hot
// matrix through which a gather's transpose scatters (a scatter-add).
Value one_hot(Builder& b, Value idx, int64_t n, DType d) {
  Shape s = idx.type().shape();
  Shape big = s;
  big.push_back(n);
  std::vector<int64_t> keep(s.size());
  std::iota(keep.begin(), keep.end(), 0);
  Value bi = b.emit1("broadcast_in_dim", {idx}, {{"shape", big}, {"broadcast_dimensions", keep}});
  Value io = b.emit1("iota", {}, {{"dtype", idx.type().dtype()}, {"shape", big}, {"dimension", static_cast<int64_t>(s.size())}});
  return b.emit1("convert_element_type", {b.binary("eq", bi, io)}, {{"new_dtype", d}});
}

// gather[axis] x, idx (indices clamped): ct_x[.., n, ..] = sum over the j with
// clamp(idx[j]) == n of ct[.., j, ..], a contraction with the one-hot matrix.
Value gather_t(Ctx& c, const Op& op, const Vals& x, Value ct) {
  Builder& b = c.b;
  const Type& xt = operand_type(op, 0);
  int64_t axis = op.param(keys::axis);
  int64_t n = xt.shape()[axis];
  DType it = x[1].type().dtype();
  Value clamped = b.emit1("clamp", {Builder::literal(it, 0), x[1], Builder::literal(it, static_cast<double>(n - 1))});
  Value oh = one_hot(b, clamped, n, xt.dtype());  // (m, n)
  Value r = b.emit1("dot_general", {ct, oh}, {{"lhs_contracting", std::vector<int64_t>{axis}}, {"rhs_contracting", std::vector<int64_t>{0}}});
  return ad::moveaxis(b, r, xt.rank() - 1, static_cast<int>(axis));
}

// take_along_axis[axis] x, idx: ct_x[.., n, ..] = sum_j ct[.., j, ..] *
// (idx[.., j, ..] == n), summed over j after broadcasting along a last axis.
Value take_along_axis_t(Ctx& c, const Op& op, const Vals& x, Value ct) {
  Builder& b = c.b;
  const Type& xt = operand_type(op, 0);
  int64_t axis = op.param(keys::axis);
  int64_t n = xt.shape()[axis];
  Value oh = one_hot(b, x[1], n, xt.dtype());
  Shape big = oh.type().shape();
  std::vector<int64_t> keep(ct.type().rank());
  std::iota(keep.begin(), keep.end(), 0);
  Value bc = b.emit1("broadcast_in_dim", {ct}, {{"shape", big}, {"broadcast_dimensions", keep}});
  Value s = b.emit1("reduce_sum", {b.binary("mul", bc, oh)}, {{"axes", std::vector<int64_t>{axis}}});
  return ad::moveaxis(b, s, xt.rank() - 1, static_cast<int>(axis));
}

// sort: linear operands ride along with non-linear keys; the cotangents go
// back through the permutation, found by sorting an iota with the keys and
// undone by sorting the cotangents by it.
Cts sort_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts& ct) {
  Builder& b = c.b;
  int64_t keys = op.param(keys::num_keys);
  for (int64_t k = 0; k < keys; ++k)
    if (lin[k]) throw Error(op.loc, not_linear(op, "is not linear in its sort keys"));
  Cts r = none(op);
  std::vector<size_t> which;
  for (size_t i = 0; i < ct.size(); ++i)
    if (lin[i] && ct[i]) which.push_back(i);
  if (which.empty()) return r;
  const Type& t = operand_type(op, 0);
  int64_t dim = op.param(keys::dimension);
  Value io = b.emit1("iota", {}, {{"dtype", DType::i32}, {"shape", t.shape()}, {"dimension", dim}});
  Vals sort_ops(x.begin(), x.begin() + keys);
  sort_ops.push_back(io);
  Vals sorted = b.emit("sort", sort_ops, params_with(op, {}));
  Vals back{sorted.back()};
  for (size_t i : which) back.push_back(*ct[i]);
  Vals un = b.emit("sort", back, {{"dimension", dim}, {"num_keys", int64_t{1}}, {"descending", false}});
  for (size_t k = 0; k < which.size(); ++k) r[which[k]] = un[k + 1];
  return r;
}

std::vector<bool> sort_results(const Op& op, const std::vector<bool>& lin) {
  return std::vector<bool>(lin.begin(), lin.begin() + static_cast<long>(op.results.size()));
}

void check_bilinear(const Op& op, const Mask& lin) {
  if (lin[0] && lin[1]) throw Error(op.loc, not_linear(op, "of two linear values is not linear"));
}

void check_div(const Op& op, const Mask& lin) {
  if (lin[1]) throw Error(op.loc, not_linear(op, "by a linear value is not linear"));
}

}  // namespace

void add_linear_rules(RuleTable<RuleSet>& t) {
  t.set("add", {add_rule});
  t.set("sub", {sub_rule});
  t.set("neg", {unary_linear(0, [](Ctx& c, const Op&, const Vals&, Value ct) { return c.b.unary("neg", ct); })});
  t.set("mul", {.transpose = mul_rule, .check = check_bilinear});
  t.set("div", {.transpose = div_rule, .check = check_div});
  t.set("convert_element_type", {unary_linear(0, convert_back)});
  t.set("reduce_precision", {unary_linear(0, reduce_precision_t)});
  t.set("select_n", {select_rule});
  t.set("reduce_sum", {unary_linear(0, reduce_sum_t)});
  t.set("cumsum", {unary_linear(0, cumsum_t)});
  t.set("dot_general", {.transpose = dot_rule, .check = check_bilinear});
  t.set("broadcast_in_dim", {unary_linear(0, broadcast_t)});
  for (const char* n : {"reshape", "squeeze", "expand_dims"}) t.set(n, {unary_linear(0, reshape_back)});
  t.set("transpose", {unary_linear(0, transpose_t)});
  t.set("rev", {unary_linear(0, rev_t)});
  t.set("slice", {unary_linear(0, slice_t)});
  t.set("pad", {pad_rule});
  t.set("concatenate", {concatenate_rule});
  t.set("split", {split_rule});
  t.set("repeat", {unary_linear(0, repeat_t)});
  t.set("roll", {unary_linear(0, roll_t)});
  t.set("dynamic_slice", {unary_linear(0, dynamic_slice_t)});
  t.set("dynamic_update_slice", {dynamic_update_slice_rule});
  t.set("gather", {unary_linear(0, gather_t)});
  t.set("take_along_axis", {unary_linear(0, take_along_axis_t)});
  t.set("sort", {.transpose = sort_rule, .linear_results = sort_results});
}

}  // namespace tessera::transpose
