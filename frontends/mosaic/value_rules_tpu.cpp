// tpu ops on values (jaxlib/mosaic/dialect/tpu/tpu_ops.td) as tessera
// primitives: matmul (dot_general with Mosaic's dimension numbers, plus the
// accumulator), iota, transpose, rotations (roll), concatenate, repeat,
// bitcast, assume_multiple (multiple_of), dynamic_gather (take_along_axis),
// reciprocal, weird, reduce_index (argmax / argmin), sort, and the random-bit
// generator. The mirror of backends/mosaic/vector_matmul.cpp,
// vector_shape.cpp, vector_reduce.cpp and sc_value_rules.cpp.
#include <algorithm>
#include <cctype>
#include <limits>

#include "frontends/mosaic/value_rules_util.h"

namespace tessera::mlir_text::rules {
namespace {

using V = std::vector<Value>;
using Ints = std::vector<int64_t>;

Value convert(Builder& b, Value x, DType to) {
  if (dtype_of(x) == to) return x;
  return b.emit1("convert_element_type", {x}, {{"new_dtype", to}});
}

// ---- tpu.matmul -------------------------------------------------------------------

// #tpu.dot_dimension_numbers<[lc], [rc], [lhs free], [rhs free], [out order
// as (operand, dim) pairs], [lb], [rb]>: the bracketed lists of its text.
struct DotDims {
  Ints lc, rc, lf, rf, order, lb, rb;
  int lhs_rank = 0, rhs_rank = 0;
};

std::vector<Ints> bracket_lists(const ValueRuleContext& c, const std::string& text) {
  std::vector<Ints> lists;
  size_t i = 0;
  auto bad = [&] { c.fail("malformed dimension_numbers `" + text + "`"); };
  while (i < text.size()) {
    char ch = text[i];
    if (ch == ' ' || ch == ',') {
      ++i;
      continue;
    }
    if (ch != '[') bad();
    Ints list;
    ++i;
    while (i < text.size() && text[i] != ']') {
      if (text[i] == ' ' || text[i] == ',') {
        ++i;
        continue;
      }
      size_t end = i + (text[i] == '-');
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      if (end == i || (end == i + 1 && text[i] == '-') || end - i > 18) bad();
      list.push_back(std::stoll(text.substr(i, end - i)));
      i = end;
    }
    if (i >= text.size()) bad();
    ++i;
    lists.push_back(std::move(list));
  }
  return lists;
}

Ints free_dims(int rank, const Ints& contracting, const Ints& batch) {
  Ints out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(contracting.begin(), contracting.end(), d) == contracting.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}

DotDims dot_dims(const ValueRuleContext& c, int lhs_rank, int rhs_rank) {
  DotDims dims;
  if (const Attr* a = find_attr(c, "dimension_numbers")) {
    if (a->kind != Attr::Dialect) c.fail("dimension_numbers must be a #tpu.dot_dimension_numbers attribute");
    std::vector<Ints> l = bracket_lists(c, a->text);
    if (l.size() != 7) c.fail("dimension_numbers needs 7 lists, got " + std::to_string(l.size()));
    dims = {l[0], l[1], l[2], l[3], l[4], l[5], l[6], 0, 0};
  } else {  // the deprecated flags, for 2-D operands
    if (lhs_rank != 2 || rhs_rank != 2) c.fail("without dimension_numbers, the operands must be 2-D");
    dims.lc = {bool_attr(c, "transpose_lhs", false) ? 0 : 1};
    dims.rc = {bool_attr(c, "transpose_rhs", false) ? 1 : 0};
    dims.lf = free_dims(2, dims.lc, {});
    dims.rf = free_dims(2, dims.rc, {});
    dims.order = {0, dims.lf[0], 1, dims.rf[0]};
  }
  dims.lhs_rank = lhs_rank, dims.rhs_rank = rhs_rank;
  auto sorted = [](Ints s) {
    std::sort(s.begin(), s.end());
    return s;
  };
  if (free_dims(lhs_rank, dims.lc, dims.lb) != sorted(dims.lf) || free_dims(rhs_rank, dims.rc, dims.rb) != sorted(dims.rf))
    c.fail("the non-contracting dims of dimension_numbers are not the dims left by the contracting and batch dims");
  return dims;
}

// The permutation taking dot_general's result (batch, lhs free, rhs free) to
// Mosaic's output order; fails unless the order names each dim once.
Ints output_permutation(const ValueRuleContext& c, const DotDims& d) {
  std::vector<std::pair<int64_t, int64_t>> natural;
  for (size_t i = 0; i < d.lb.size(); ++i) natural.emplace_back(0, d.lb[i]);
  for (int64_t x : free_dims(d.lhs_rank, d.lc, d.lb)) natural.emplace_back(0, x);
  for (int64_t x : free_dims(d.rhs_rank, d.rc, d.rb)) natural.emplace_back(1, x);
  if (d.order.size() != 2 * natural.size())
    c.fail("the output dim order of dimension_numbers has " + std::to_string(d.order.size() / 2) + " dims, the product has " +
           std::to_string(natural.size()));
  Ints perm;
  for (size_t k = 0; k < natural.size(); ++k) {
    std::pair<int64_t, int64_t> want{d.order[2 * k], d.order[2 * k + 1]};
    for (size_t i = 0; i < d.rb.size(); ++i)  // a batch dim may be named by the rhs
      if (want == std::pair<int64_t, int64_t>{1, d.rb[i]}) want = {0, d.lb[i]};
    auto it = std::find(natural.begin(), natural.end(), want);
    if (it == natural.end() || std::find(perm.begin(), perm.end(), it - natural.begin()) != perm.end())
      c.fail("the output dim order of dimension_numbers does not name each dim of the product once");
    perm.push_back(it - natural.begin());
  }
  return perm;
}

// The common dtype of mixed operands: the wider one (exact for bf16 -> f32).
DType operand_dtype(const ValueRuleContext& c, DType a, DType b) {
  if (a == b) return a;
  if (is_float(a) != is_float(b)) c.fail("mixes float and integer operands");
  if (dtype_bytes(a) == dtype_bytes(b)) return is_float(a) ? DType::f32 : a;  // bf16 x f16
  return dtype_bytes(a) > dtype_bytes(b) ? a : b;
}

// result = acc + lhs . rhs, accumulated in acc's dtype (dot_general's
// preferred_element_type). A splat-zero accumulator (how Pallas writes a
// plain dot) adds nothing and is left out. `precision` is not modelled:
// tessera multiplies at the operands' own precision.
Value matmul(const ValueRuleContext& c) {
  expect_operands(c, 3);
  for (size_t i = 0; i < 3; ++i) expect_class(c, i, Class::any);
  Value lhs = c.operands[0], rhs = c.operands[1], acc = c.operands[2];
  DotDims d = dot_dims(c, lhs.type().rank(), rhs.type().rank());
  DType common = operand_dtype(c, dtype_of(lhs), dtype_of(rhs)), out = dtype_of(acc);
  lhs = convert(c.b, lhs, common), rhs = convert(c.b, rhs, common);
  Params params{{"lhs_contracting", d.lc}, {"rhs_contracting", d.rc}, {"lhs_batch", d.lb}, {"rhs_batch", d.rb}};
  if (out != common) params.push_back({"preferred_element_type", out});
  Value dot = c.b.emit1("dot_general", {lhs, rhs}, params);
  Ints perm = output_permutation(c, d);
  if (!std::is_sorted(perm.begin(), perm.end())) dot = c.b.emit1("transpose", {dot}, {{"permutation", perm}});
  if (dot.type() != acc.type()) c.fail("the product " + dot.type().str() + " does not match the accumulator " + acc.type().str());
  std::optional<Literal> splat = splat_value(c.b, acc);
  if (splat && splat->as_double() == 0) return dot;
  return c.b.binary("add", acc, dot);
}

// ---- shapes -----------------------------------------------------------------------

// tpu.iota: counts along the listed dims collapsed in row-major order (the
// first listed dim the major one): sum of iota(dim_k) * (sizes of the dims
// listed after k).
Value iota(const ValueRuleContext& c) {
  expect_operands(c, 0);
  Type out = c.result_type(0);
  if (!is_int(out.dtype())) c.fail("the result must be an integer vector, got " + out.str());
  if (out.rank() == 0) c.fail("the result must be a vector, got " + out.str());
  Ints dims = ints_attr(c, "dimensions");
  Ints seen = dims;
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) c.fail("dimensions repeat a dim");
  Value sum;
  int64_t stride = 1;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (*it < 0 || *it >= out.rank()) c.fail("dimension " + std::to_string(*it) + " is out of range for " + out.str());
    Value v = c.b.emit1("iota", {}, {{"dtype", out.dtype()}, {"shape", out.shape()}, {"dimension", *it}});
    if (stride != 1) v = c.b.binary("mul", v, int_literal(out.dtype(), stride));
    sum = sum.is_var() ? c.b.binary("add", v, sum) : v;
    stride *= out.shape()[static_cast<size_t>(*it)];
  }
  return sum.is_var() ? sum : full(c.b, out, 0);
}

void expect_no_stride(const ValueRuleContext& c) {
  if (find_attr(c, "stride") || find_attr(c, "stride_dimension"))
    c.fail("a rotation with a stride (a different amount per row) is not supported");
}

Value dynamic_rotate(const ValueRuleContext& c) {
  expect_operands(c, 2);
  expect_no_stride(c);
  const Value& amount = c.operands[1];
  if (amount.type().rank() != 0 || !is_int(dtype_of(amount))) c.fail("the amount must be an i32 scalar, got " + amount.type().str());
  return c.b.emit1("roll", {c.operands[0], amount}, {{"axis", int_attr(c, "dimension")}});
}

Value rotate(const ValueRuleContext& c) {
  expect_operands(c, 1);
  expect_no_stride(c);
  return c.b.emit1("roll", {c.operands[0]}, {{"axis", int_attr(c, "dimension")}, {"shift", int_attr(c, "amount")}});
}

Value concatenate(const ValueRuleContext& c) {
  expect_operands(c, 1, std::numeric_limits<size_t>::max());
  if (c.operands.size() == 1) return c.operands[0];
  return c.b.emit1("concatenate", c.operands, {{"dimension", int_attr(c, "dimension")}});
}

Value repeat(const ValueRuleContext& c) {
  expect_operands(c, 1);
  return c.b.emit1("repeat", {c.operands[0]}, {{"repeats", int_attr(c, "times")}, {"axis", int_attr(c, "dimension")}});
}

// tpu.bitcast between equal widths keeps the shape; between different
// widths Mosaic repacks the second-minor dim by its vreg layout, which
// tessera's row-major arrays do not model.
Value bitcast(const ValueRuleContext& c) {
  expect_operands(c, 1);
  Value x = c.operands[0];
  Type out = c.result_type(0);
  if (out == x.type()) return x;
  DType from = dtype_of(x), to = out.dtype();
  if (is_bool(from) || is_bool(to) || dtype_bytes(from) != dtype_bytes(to) || out.shape() != x.type().shape())
    c.fail("a bitcast from " + x.type().str() + " to " + out.str() +
           " is not supported (only between element types of one width, keeping the shape)");
  return c.b.emit1("bitcast_convert_type", {x}, {{"new_dtype", to}});
}

// tpu.dynamic_gather along one dim is take_along_axis. Mosaic takes the
// indices modulo the dim; tessera's run stops at an index outside it.
Value dynamic_gather(const ValueRuleContext& c) {
  expect_operands(c, 2);
  Ints dims = ints_attr(c, "dimensions");
  if (dims.size() != 1) c.fail("a gather over " + std::to_string(dims.size()) + " collapsed dims is not supported (one dim is)");
  return c.b.emit1("take_along_axis", {c.operands[0], c.operands[1]}, {{"axis", dims[0]}});
}

// ---- elementwise ------------------------------------------------------------------

Value reciprocal(const ValueRuleContext& c) {
  expect_all(c, 1, Class::floating);
  return c.b.emit1("reciprocal", {c.operands[0]}, {{"approx", bool_attr(c, "approx", false)}});
}

// tpu.weird: true for infinities and NaNs.
Value weird(const ValueRuleContext& c) {
  expect_all(c, 1, Class::floating);
  return logical_not(c.b, c.b.unary("is_finite", c.operands[0]));
}

Value assume_multiple(const ValueRuleContext& c) {
  expect_all(c, 1, Class::integer);
  return c.b.emit1("multiple_of", {c.operands[0]}, {{"value", int_attr(c, "multiple")}});
}

// tpu.reduce_index: the index of the first maximum / minimum along `axis`.
Value reduce_index(const ValueRuleContext& c) {
  expect_operands(c, 1);
  std::string kind = word_attr(c, "kind");
  if (kind != "arg_max" && kind != "arg_min") c.fail("the reduction kind `" + kind + "` is not supported (arg_max and arg_min are)");
  return c.b.emit1(kind == "arg_max" ? "argmax" : "argmin", {c.operands[0]},
                   {{"axis", int_attr(c, "axis")}, {"index_dtype", c.result_type(0).dtype()}});
}

// ---- sort and random bits ---------------------------------------------------------

// tpu.sort keys, values[, mask] -> (mask, keys, values): a stable sort of
// the lanes by key, masked-out lanes last. With a mask, the sort's first key
// puts valid lanes first (0 before 1 ascending, 1 before 0 descending).
V sort(ValueRuleContext& c) {
  expect_operands(c, 2, 3);
  Builder& b = c.b;
  Value keys = c.operands[0], values = c.operands[1];
  if (keys.type().rank() != 1) c.fail("only 1-D keys are supported, got " + keys.type().str());
  bool descending = bool_attr(c, "descending", false);
  Params params{{"dimension", int64_t{0}}, {"num_keys", int64_t{1}}, {"descending", descending}};
  if (c.operands.size() == 2) {
    std::vector<Value> r = b.emit("sort", {keys, values}, params);
    return {full(b, Type::array(DType::i1, keys.type().shape()), 1), r[0], r[1]};
  }
  Value mask = c.operands[2];
  if (!is_bool(dtype_of(mask)) || mask.type().shape() != keys.type().shape())
    c.fail("the mask must be an i1 vector of the keys' shape, got " + mask.type().str());
  Value valid_first = convert(b, descending ? mask : logical_not(b, mask), DType::i32);
  params[1].value = int64_t{2};
  std::vector<Value> r = b.emit("sort", {valid_first, keys, values, mask}, params);
  return {r[3], r[1], r[2]};
}

Value random_bits(const ValueRuleContext& c) {
  expect_operands(c, 0);
  Type out = c.result_type(0);
  if (out.dtype() != DType::i32) c.fail("only i32 bits are supported, got " + out.str());
  return c.b.emit1("prng_random_bits", {}, {{"shape", out.shape()}});
}

void one(RuleMap& t, const char* name, Value (*f)(const ValueRuleContext&)) {
  t[name] = [f](ValueRuleContext& c) { return V{f(c)}; };
}

}  // namespace

void add_tpu_rules(RuleMap& t) {
  one(t, "tpu.matmul", matmul);
  one(t, "tpu.iota", iota);
  one(t, "tpu.transpose", [](const ValueRuleContext& c) {
    expect_operands(c, 1);
    if (c.operands[0].type().rank() == 0) return c.operands[0];
    return c.b.emit1("transpose", {c.operands[0]}, {{"permutation", ints_attr(c, "permutation")}});
  });
  one(t, "tpu.dynamic_rotate", dynamic_rotate);
  one(t, "tpu.rotate", rotate);
  one(t, "tpu.concatenate", concatenate);
  one(t, "tpu.repeat", repeat);
  one(t, "tpu.bitcast", bitcast);
  one(t, "tpu.dynamic_gather", dynamic_gather);
  one(t, "tpu.reciprocal", reciprocal);
  one(t, "tpu.weird", weird);
  one(t, "tpu.assume_multiple", assume_multiple);
  one(t, "tpu.reduce_index", reduce_index);
  one(t, "tpu.prng_random_bits", random_bits);
  t["tpu.sort"] = sort;
  t["tpu.prng_set_seed_32"] = [](ValueRuleContext& c) {
    expect_operands(c, 1, std::numeric_limits<size_t>::max());
    for (size_t i = 0; i < c.operands.size(); ++i) expect_class(c, i, Class::integer);
    c.b.emit("prng_seed", c.operands);
    return V{};
  };
  // A profiler event carrying a value: nothing to compute.
  t["tpu.trace_value"] = [](ValueRuleContext& c) {
    expect_operands(c, 1);
    return V{};
  };
}

}  // namespace tessera::mlir_text::rules
