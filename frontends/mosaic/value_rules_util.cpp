#include "frontends/mosaic/value_rules_util.h"

#include <cmath>
#include <limits>

namespace tessera::mlir_text::rules {

void expect_operands(const ValueRuleContext& c, size_t lo, size_t hi) {
  size_t n = c.operands.size();
  if (n >= lo && n <= hi) return;
  std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
  c.fail("expects " + want + " operand(s), got " + std::to_string(n));
}

void expect_class(const ValueRuleContext& c, size_t i, Class k) {
  const Type& t = c.operands.at(i).type();
  if (t.is_ref()) c.fail("operand " + std::to_string(i) + " must be a value, got the Ref " + t.str());
  DType d = t.dtype();
  bool ok = k == Class::floating ? is_float(d) : k == Class::integer ? (is_int(d) || is_bool(d)) : !is_semaphore(d);
  const char* noun = k == Class::floating ? "a float" : k == Class::integer ? "an integer" : "a number";
  if (!ok) c.fail("operand " + std::to_string(i) + " must be " + noun + ", got " + t.str());
}

void expect_all(const ValueRuleContext& c, size_t n, Class k) {
  expect_operands(c, n);
  for (size_t i = 0; i < n; ++i) expect_class(c, i, k);
}

const Attr* find_attr(const ValueRuleContext& c, std::string_view key) { return c.op.attr(key); }

const Attr& need_attr(const ValueRuleContext& c, std::string_view key) {
  const Attr* a = find_attr(c, key);
  if (!a) c.fail("needs the attribute `" + std::string(key) + "`");
  return *a;
}

int64_t int_attr(const ValueRuleContext& c, std::string_view key) {
  const Attr& a = need_attr(c, key);
  if (a.kind != Attr::Int) c.fail("the attribute `" + std::string(key) + "` must be an integer");
  return a.i;
}

bool bool_attr(const ValueRuleContext& c, std::string_view key, bool absent) {
  const Attr* a = find_attr(c, key);
  if (!a) return absent;
  if (a->kind == Attr::Bool) return a->b;
  if (a->kind == Attr::Unit) return true;
  c.fail("the attribute `" + std::string(key) + "` must be true or false");
}

std::vector<int64_t> ints_of(const ValueRuleContext& c, const Attr& a, std::string_view what) {
  if (a.kind == Attr::DenseArray || (a.kind == Attr::Dense && a.floats.empty())) return a.ints;
  if (a.kind == Attr::Array) {
    std::vector<int64_t> out;
    for (const Attr& e : a.list) {
      if (e.kind != Attr::Int) c.fail(std::string(what) + " must be a list of integers");
      out.push_back(e.i);
    }
    return out;
  }
  c.fail(std::string(what) + " must be a list of integers");
}

std::vector<int64_t> ints_attr(const ValueRuleContext& c, std::string_view key) {
  return ints_of(c, need_attr(c, key), "the attribute `" + std::string(key) + "`");
}

std::string word_attr(const ValueRuleContext& c, std::string_view key) {
  const Attr& a = need_attr(c, key);
  if (a.kind == Attr::String) return a.s;
  if (a.kind == Attr::Dialect) return a.text;
  c.fail("the attribute `" + std::string(key) + "` must be a string or a dialect attribute");
}

int64_t int_min(DType d) {
  int bits = int_bits(d);
  return bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
}

Value int_literal(DType d, int64_t v) {
  if (is_bool(d)) return Literal::of_int(d, v & 1);
  int bits = int_bits(d);
  if (bits < 64) {  // wrap to the width: keep the low bits, sign-extend
    uint64_t mask = (uint64_t{1} << bits) - 1, u = static_cast<uint64_t>(v) & mask;
    if (!is_unsigned_int(d) && (u >> (bits - 1))) u |= ~mask;
    v = static_cast<int64_t>(u);
  }
  return Literal::of_int(d, v);
}

Value literal(DType d, double v) {
  if (is_float(d)) return Literal::of_float(d, v);
  const double limit = 9223372036854775808.0;  // 2^63: no int64 conversion past it
  if (!(v > -limit)) return int_literal(d, std::numeric_limits<int64_t>::min());
  if (!(v < limit)) return int_literal(d, std::numeric_limits<int64_t>::max());
  return int_literal(d, static_cast<int64_t>(v));
}

Value full(Builder& b, const Type& t, double v) { return b.broadcast_scalar(literal(t.dtype(), v), t.shape()); }

std::optional<Literal> splat_value(const Builder& b, const Value& v) {
  if (v.is_literal()) return v.literal();
  const auto& ops = b.body().ops();
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (it->results.size() != 1 || it->results[0] != v.var()) continue;
    if (it->name() == "broadcast_in_dim" && it->operands[0].is_literal()) return it->operands[0].literal();
    return std::nullopt;
  }
  return std::nullopt;
}

Value logical_not(Builder& b, Value x) { return b.unary("not", x); }

Value is_nan(Builder& b, Value x) { return b.binary("ne", x, x); }

Value flip_sign_bit(Builder& b, Value x) {
  DType d = dtype_of(x);
  if (is_bool(d)) return logical_not(b, x);
  return b.binary("xor", x, int_literal(d, int_min(d)));
}

Value unsigned_max(Builder& b, Value x, Value y, bool max) {
  if (is_bool(dtype_of(x))) return b.binary(max ? "or" : "and", x, y);
  Value r = b.binary(max ? "max" : "min", flip_sign_bit(b, x), flip_sign_bit(b, y));
  return flip_sign_bit(b, r);
}

Value nan_ignoring_max(Builder& b, Value x, Value y, bool max) {
  Value m = b.binary(max ? "max" : "min", x, y);
  // select_n p, c0, c1 picks c1 where p: x NaN -> y; else y NaN -> x; else m.
  Value r = b.emit1("select_n", {is_nan(b, y), m, x});
  return b.emit1("select_n", {is_nan(b, x), r, y});
}

Value combine(const ValueRuleContext& c, std::string_view kind, Value a, Value y) {
  Builder& b = c.b;
  DType d = dtype_of(a);
  bool boolean = is_bool(d), floating = is_float(d);
  auto need = [&](bool ok) {
    if (!ok) c.fail("the combining kind `" + std::string(kind) + "` does not apply to " + a.type().str());
  };
  if (kind == "add") return b.binary(boolean ? "xor" : "add", a, y);
  if (kind == "mul") return b.binary(boolean ? "and" : "mul", a, y);
  if (kind == "and" || kind == "or" || kind == "xor") {
    need(!floating);
    return b.binary(std::string(kind), a, y);
  }
  if (kind == "maximumf" || kind == "minimumf") {
    need(floating);
    return b.binary(kind == "maximumf" ? "max" : "min", a, y);
  }
  if (kind == "maxnumf" || kind == "minnumf") {
    need(floating);
    return nan_ignoring_max(b, a, y, kind == "maxnumf");
  }
  if (kind == "maxsi" || kind == "minsi") {
    need(!floating);
    if (boolean) return b.binary(kind == "maxsi" ? "and" : "or", a, y);  // i1 signed: true is -1
    return b.binary(kind == "maxsi" ? "max" : "min", a, y);
  }
  if (kind == "maxui" || kind == "minui") {
    need(!floating);
    return unsigned_max(b, a, y, kind == "maxui");
  }
  c.fail("unknown combining kind `" + std::string(kind) + "`");
}

std::optional<Literal> kind_identity(std::string_view kind, DType d) {
  auto lit = [&](const Value& v) { return std::optional<Literal>(v.literal()); };
  if (kind == "add" || kind == "or" || kind == "xor") return lit(literal(d, 0));
  if (kind == "mul") return lit(literal(d, 1));
  if (kind == "and") return is_float(d) ? std::nullopt : lit(int_literal(d, -1));
  if (is_float(d)) {
    const double inf = std::numeric_limits<double>::infinity();
    if (kind == "maximumf" || kind == "maxnumf") return lit(literal(d, -inf));
    if (kind == "minimumf" || kind == "minnumf") return lit(literal(d, inf));
    return std::nullopt;
  }
  if (is_bool(d)) return std::nullopt;
  int64_t lo = int_min(d);
  if (kind == "maxsi") return lit(int_literal(d, lo));
  if (kind == "minsi") return lit(int_literal(d, -(lo + 1)));
  if (kind == "maxui") return lit(int_literal(d, 0));
  if (kind == "minui") return lit(int_literal(d, -1));
  return std::nullopt;
}

}  // namespace tessera::mlir_text::rules
