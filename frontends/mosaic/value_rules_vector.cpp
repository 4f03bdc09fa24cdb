// vector ops on values as tessera primitives: broadcast (MLIR's rule: the
// source's dims align with the result's trailing dims, size-1 dims stretch),
// shape_cast (reshape), splat, extract and extract_strided_slice (slices),
// transpose, fma, and the reductions `multi_reduction` / `reduction`: reduce
// the dims, then combine with the accumulator by the op's kind. The mirror of
// backends/mosaic/vector_shape.cpp and vector_reduce.cpp.
#include <algorithm>
#include <limits>

#include "frontends/mosaic/value_rules_util.h"

namespace tessera::mlir_text::rules {
namespace {

using V = std::vector<Value>;

void expect_same_dtype(const ValueRuleContext& c, const Value& x, const Type& result) {
  if (dtype_of(x) != result.dtype())
    c.fail("the result " + result.str() + " must have the element type of the operand " + x.type().str());
}

Value broadcast(const ValueRuleContext& c) {
  expect_operands(c, 1);
  Value x = c.operands[0];
  Type out = c.result_type(0);
  expect_same_dtype(c, x, out);
  if (x.type() == out) return x;
  int r = x.type().rank(), rank = out.rank();
  if (r > rank) c.fail("cannot broadcast " + x.type().str() + " to the lower rank of " + out.str());
  std::vector<int64_t> dims;
  for (int i = 0; i < r; ++i) dims.push_back(rank - r + i);
  return c.b.emit1("broadcast_in_dim", {x}, {{"shape", out.shape()}, {"broadcast_dimensions", dims}});
}

Value reshape(const ValueRuleContext& c) {
  expect_operands(c, 1);
  Value x = c.operands[0];
  Type out = c.result_type(0);
  expect_same_dtype(c, x, out);
  if (x.type() == out) return x;
  return c.b.emit1("reshape", {x}, {{"new_sizes", out.shape()}});
}

Value splat(const ValueRuleContext& c) {
  expect_operands(c, 1);
  if (c.operands[0].type().rank() != 0) c.fail("the operand must be a scalar, got " + c.operands[0].type().str());
  Type out = c.result_type(0);
  expect_same_dtype(c, c.operands[0], out);
  return c.b.broadcast_scalar(c.operands[0], out.shape());
}

// ---- extraction -------------------------------------------------------------------

// MLIR's marker of a dynamic position (ShapedType::kDynamic).
constexpr int64_t kDynamicPosition = std::numeric_limits<int64_t>::min();

// vector.extract %v[positions]: the sub-vector (or element) at the leading
// positions; dynamic ones are operands after the vector.
Value extract(const ValueRuleContext& c) {
  if (c.operands.empty()) c.fail("expects a vector operand");
  Value x = c.operands[0];
  const Shape& in = x.type().shape();
  const Attr* pos_attr = find_attr(c, "static_position");
  if (!pos_attr) pos_attr = &need_attr(c, "position");
  std::vector<int64_t> pos = ints_of(c, *pos_attr, "the position");
  size_t k = pos.size(), dynamic = static_cast<size_t>(std::count(pos.begin(), pos.end(), kDynamicPosition));
  expect_operands(c, 1 + dynamic);
  if (k > in.size()) c.fail(std::to_string(k) + " positions for " + x.type().str());
  Type out = c.result_type(0);
  expect_same_dtype(c, x, out);
  if (k == 0) return x;
  bool unit_dims = std::all_of(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(k), [](int64_t n) { return n == 1; });
  if (dynamic == 0 && unit_dims && std::all_of(pos.begin(), pos.end(), [](int64_t p) { return p == 0; }))
    return c.b.emit1("reshape", {x}, {{"new_sizes", out.shape()}});  // only unit dims dropped
  Shape sizes = in;
  for (size_t d = 0; d < k; ++d) sizes[d] = 1;
  Value piece;
  if (dynamic == 0) {
    std::vector<int64_t> start(in.size(), 0), limit = in;
    for (size_t d = 0; d < k; ++d) {
      if (pos[d] < 0 || pos[d] >= in[d])
        c.fail("position " + std::to_string(pos[d]) + " is out of range for dim " + std::to_string(d) + " of " + x.type().str());
      start[d] = pos[d], limit[d] = pos[d] + 1;
    }
    piece = c.b.emit1("slice", {x}, {{"start_indices", start}, {"limit_indices", limit}});
  } else {
    std::vector<Value> args{x};
    size_t next = 1;
    for (size_t d = 0; d < in.size(); ++d) {
      if (d >= k || pos[d] != kDynamicPosition) {
        args.push_back(Builder::literal(DType::i32, d < k ? static_cast<double>(pos[d]) : 0));
        continue;
      }
      const Value& p = c.operands[next++];
      if (p.type().rank() != 0 || !is_int(dtype_of(p)))
        c.fail("a dynamic position must be an integer scalar, got " + p.type().str());
      args.push_back(p);
    }
    piece = c.b.emit1("dynamic_slice", args, {{"slice_sizes", sizes}});
  }
  return c.b.emit1("reshape", {piece}, {{"new_sizes", out.shape()}});
}

// vector.extract_strided_slice: offsets / sizes / strides for the leading dims.
Value extract_strided_slice(const ValueRuleContext& c) {
  expect_operands(c, 1);
  Value x = c.operands[0];
  const Shape& in = x.type().shape();
  std::vector<int64_t> offsets = ints_attr(c, "offsets"), sizes = ints_attr(c, "sizes"), strides = ints_attr(c, "strides");
  if (offsets.size() != sizes.size() || offsets.size() != strides.size() || offsets.size() > in.size())
    c.fail("offsets, sizes and strides need one entry per leading dim of " + x.type().str());
  std::vector<int64_t> start(in.size(), 0), limit = in, step(in.size(), 1);
  for (size_t d = 0; d < offsets.size(); ++d) {
    if (sizes[d] < 1 || strides[d] < 1 || offsets[d] < 0 || offsets[d] + (sizes[d] - 1) * strides[d] >= in[d])
      c.fail("the slice of dim " + std::to_string(d) + " is out of range for " + x.type().str());
    start[d] = offsets[d], limit[d] = offsets[d] + (sizes[d] - 1) * strides[d] + 1, step[d] = strides[d];
  }
  Params params{{"start_indices", start}, {"limit_indices", limit}};
  if (std::any_of(step.begin(), step.end(), [](int64_t s) { return s != 1; })) params.push_back({"strides", step});
  return c.b.emit1("slice", {x}, params);
}

Value transpose(const ValueRuleContext& c) {
  expect_operands(c, 1);
  if (c.operands[0].type().rank() == 0) return c.operands[0];
  return c.b.emit1("transpose", {c.operands[0]}, {{"permutation", ints_attr(c, "permutation")}});
}

// ---- reductions -------------------------------------------------------------------

std::string kind_of(const ValueRuleContext& c) { return word_attr(c, "kind"); }

// The reduction of `x` over `dims` by combining kind `kind`.
Value reduce(const ValueRuleContext& c, const std::string& kind, Value x, const std::vector<int64_t>& dims) {
  Builder& b = c.b;
  DType d = dtype_of(x);
  bool boolean = is_bool(d), floating = is_float(d);
  Params axes{{"axes", dims}};
  auto need = [&](bool ok) {
    if (!ok) c.fail("the combining kind `" + kind + "` does not apply to " + x.type().str());
  };
  auto parity = [&] {  // xor of bools: the lowest bit of their count
    Value count = b.emit1("reduce_sum", {b.emit1("convert_element_type", {x}, {{"new_dtype", DType::i32}})}, axes);
    return b.binary("ne", b.binary("and", count, int_literal(DType::i32, 1)), int_literal(DType::i32, 0));
  };
  if (kind == "add") return boolean ? parity() : b.emit1("reduce_sum", {x}, axes);
  if (kind == "mul") return b.emit1(boolean ? "reduce_and" : "reduce_prod", {x}, axes);
  if (kind == "and" || kind == "or") {
    need(!floating);
    return b.emit1(kind == "and" ? "reduce_and" : "reduce_or", {x}, axes);
  }
  if (kind == "xor") {
    if (!boolean) c.fail("the combining kind `xor` is supported on i1 only (tessera has no xor reduction)");
    return parity();
  }
  if (kind == "maximumf" || kind == "minimumf") {
    need(floating);
    return b.emit1(kind == "maximumf" ? "reduce_max" : "reduce_min", {x}, axes);
  }
  if (kind == "maxnumf" || kind == "minnumf") {  // NaNs skipped; all NaN gives NaN
    need(floating);
    bool max = kind == "maxnumf";
    double inf = std::numeric_limits<double>::infinity();
    Value nan = is_nan(b, x);
    Value cleaned = b.emit1("select_n", {nan, x, literal(d, max ? -inf : inf)});
    Value m = b.emit1(max ? "reduce_max" : "reduce_min", {cleaned}, axes);
    Value all_nan = b.emit1("reduce_and", {nan}, axes);
    return b.emit1("select_n", {all_nan, m, literal(d, std::numeric_limits<double>::quiet_NaN())});
  }
  if (kind == "maxsi" || kind == "minsi" || kind == "maxui" || kind == "minui") {
    need(!floating);
    bool max = kind == "maxsi" || kind == "maxui", is_unsigned = kind == "maxui" || kind == "minui";
    if (boolean) return b.emit1(max == is_unsigned ? "reduce_or" : "reduce_and", {x}, axes);  // i1 signed: true is -1
    const char* prim = max ? "reduce_max" : "reduce_min";
    if (!is_unsigned) return b.emit1(prim, {x}, axes);
    return flip_sign_bit(b, b.emit1(prim, {flip_sign_bit(b, x)}, axes));
  }
  c.fail("unknown combining kind `" + kind + "`");
}

// `reduced KIND acc`, or `reduced` alone when acc is the kind's identity (as
// Pallas writes it), so importing emitted text does not add an op per reduction.
Value with_accumulator(const ValueRuleContext& c, const std::string& kind, Value reduced, const Value& acc) {
  if (dtype_of(acc) != dtype_of(reduced) || acc.type().shape() != reduced.type().shape())
    c.fail("the accumulator " + acc.type().str() + " does not match the reduction's type " + reduced.type().str());
  std::optional<Literal> splat = splat_value(c.b, acc), identity = kind_identity(kind, dtype_of(acc));
  if (splat && identity && *splat == *identity) return reduced;
  return combine(c, kind, reduced, acc);
}

Value multi_reduction(const ValueRuleContext& c) {
  expect_operands(c, 2);
  std::string kind = kind_of(c);
  Value x = c.operands[0];
  std::vector<int64_t> dims = ints_attr(c, "reduction_dims");
  std::sort(dims.begin(), dims.end());
  for (int64_t d : dims)
    if (d < 0 || d >= x.type().rank()) c.fail("reduction dim " + std::to_string(d) + " is out of range for " + x.type().str());
  Value reduced = dims.empty() ? x : reduce(c, kind, x, dims);
  return with_accumulator(c, kind, reduced, c.operands[1]);
}

// vector.reduction: every dim, to a scalar, with an optional accumulator.
Value reduction(const ValueRuleContext& c) {
  expect_operands(c, 1, 2);
  std::string kind = kind_of(c);
  Value x = c.operands[0];
  std::vector<int64_t> dims(static_cast<size_t>(x.type().rank()));
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
  Value reduced = dims.empty() ? x : reduce(c, kind, x, dims);
  return c.operands.size() == 2 ? with_accumulator(c, kind, reduced, c.operands[1]) : reduced;
}

void one(RuleMap& t, const char* name, Value (*f)(const ValueRuleContext&)) {
  t[name] = [f](ValueRuleContext& c) { return V{f(c)}; };
}

}  // namespace

void add_vector_rules(RuleMap& t) {
  one(t, "vector.broadcast", broadcast);
  one(t, "vector.shape_cast", reshape);
  one(t, "vector.splat", splat);
  one(t, "vector.extract", extract);
  one(t, "vector.extract_strided_slice", extract_strided_slice);
  one(t, "vector.transpose", transpose);
  one(t, "vector.multi_reduction", multi_reduction);
  one(t, "vector.reduction", reduction);
  one(t, "vector.fma", [](const ValueRuleContext& c) {
    expect_all(c, 3, Class::floating);
    return fused_multiply_add(c.b, c.operands[0], c.operands[1], c.operands[2]);
  });
}

}  // namespace tessera::mlir_text::rules
