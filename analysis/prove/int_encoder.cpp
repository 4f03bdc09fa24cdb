#include "analysis/prove/int_encoder.h"

#include "ir/primitive.h"

namespace tessera::prove {

Interval dtype_range(DType d) {
  if (is_bool(d)) return {0, 1};
  int bits = int_bits(d);
  if (bits >= 64) return Interval::top();
  if (is_unsigned_int(d)) return {0, (int64_t{1} << bits) - 1};
  return {-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1};
}

std::vector<std::string> merge_opaque(std::vector<std::string> a, const std::vector<std::string>& b) {
  for (const std::string& s : b)
    if (std::find(a.begin(), a.end(), s) == a.end()) a.push_back(s);
  return a;
}

namespace {

// Division by a positive divisor, rounding toward zero.
z3::expr pos_div(const z3::expr& a, const z3::expr& b, const Interval& ia) {
  if (ia.lo >= 0) return a / b;
  if (ia.hi <= 0) return -((-a) / b);
  return z3::ite(a >= 0, a / b, -((-a) / b));
}

}  // namespace

z3::expr tdiv(const z3::expr& a, const z3::expr& b, const Interval& ia, const Interval& ib) {
  if (ib.lo > 0) return pos_div(a, b, ia);
  if (ib.hi < 0) return -pos_div(a, -b, ia);
  // b == 0 is excluded by a guard; any value will do there.
  return z3::ite(b > 0, pos_div(a, b, ia), -pos_div(a, -b, ia));
}

z3::expr trem(const z3::expr& a, const z3::expr& b, const Interval& ia, const Interval& ib) {
  return a - b * tdiv(a, b, ia, ib);
}

Sym IntEncoder::opaque(DType d, const std::string& reason) {
  Interval r = is_int(d) || is_bool(d) ? dtype_range(d) : Interval::top();
  if (is_bool(d)) return Sym{ctx().bool_const(("opaque!" + std::to_string(scope_.fresh++)).c_str()), r, {reason}};
  z3::expr e = scope_.fresh_int("opaque");
  if (r.bounded()) facts.push_back(e >= ctx().int_val(r.lo) && e <= ctx().int_val(r.hi));
  return Sym{e, r, {reason}};
}

Sym IntEncoder::value(const Value& v) {
  if (v.is_literal()) {
    const Literal& l = v.literal();
    if (is_bool(l.dtype)) return Sym{ctx().bool_val(l.i != 0), Interval::of(l.i != 0), {}};
    if (is_int(l.dtype)) return Sym{ctx().int_val(l.i), Interval::of(l.i), {}};
    return Sym{scope_.fresh_int("float"), Interval::top(), {"a floating-point literal"}};
  }
  auto it = env_.find(v.var());
  if (it != env_.end()) return it->second;
  Sym s = opaque(v.type().dtype(), "value %" + v.var()->name + " is not modelled");
  env_.emplace(v.var(), s);
  return s;
}

void IntEncoder::guard(z3::expr ok, bool settled, std::string what, const Loc& loc, std::vector<std::string> opq) {
  guards.push_back(Guard{ok, path_, settled, std::move(what), loc, std::move(opq)});
}

Sym IntEncoder::fit(const Op& op, Sym s, DType d) {
  Interval r = dtype_range(d);
  if (!r.bounded() || s.iv.within(r.lo, r.hi)) return s;
  z3::expr ok = s.e >= ctx().int_val(r.lo) && s.e <= ctx().int_val(r.hi);
  guard(ok, false, std::string(dtype_name(d)) + " overflow in " + op.name(), op.loc, s.opaque);
  // Past the guard the value is in range; keep the interval honest.
  s.iv = {std::max(s.iv.lo, r.lo), std::min(s.iv.hi, r.hi)};
  return s;
}

namespace {

z3::expr as_int(const Sym& s) {
  if (!s.is_bool()) return s.e;
  z3::context& c = s.e.ctx();
  return z3::ite(s.e, c.int_val(1), c.int_val(0));
}

bool int_like(DType d) { return is_int(d) || is_bool(d); }

}  // namespace

Sym IntEncoder::arith(const Op& op, const std::string& n, const Sym& a, const Sym& b, DType d) {
  auto opq = merge_opaque(a.opaque, b.opaque);
  z3::expr x = a.e, y = b.e;
  if (n == "add") return fit(op, Sym{x + y, a.iv + b.iv, opq}, d);
  if (n == "sub") return fit(op, Sym{x - y, a.iv - b.iv, opq}, d);
  if (n == "mul") return fit(op, Sym{x * y, a.iv * b.iv, opq}, d);
  if (n == "max") return Sym{z3::ite(x >= y, x, y), max(a.iv, b.iv), opq};
  if (n == "min") return Sym{z3::ite(x <= y, x, y), min(a.iv, b.iv), opq};
  // div / rem
  if (b.iv.contains(0)) guard(y != 0, false, "division by zero in " + n, op.loc, opq);
  if (n == "div") return fit(op, Sym{tdiv(x, y, a.iv, b.iv), trunc_div(a.iv, b.iv), opq}, d);
  return Sym{trem(x, y, a.iv, b.iv), trunc_rem(a.iv, b.iv), opq};
}

bool IntEncoder::encode(const Op& op) {
  const std::string& n = op.name();
  auto result = [&](Sym s) { bind(op.results.at(0), std::move(s)); return true; };
  auto give_up = [&](const std::string& why) {
    for (Var* r : op.results) bind(r, opaque(r->type.is_ref() ? DType::i32 : r->type.dtype(), why));
    return false;
  };
  std::string where = op.loc.known() ? " at " + op.loc.str() : "";

  if (n == "program_id" || n == "num_programs") {
    int64_t axis = op.int_param("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(scope_.kernel_axis.size()))
      throw Error(op.loc, n + ": axis " + std::to_string(axis) + " is out of range for the grid");
    int g = scope_.kernel_axis[axis];
    if (n == "program_id") return result(point_.at(g));
    return result(Sym{scope_.grid_size[g], scope_.grid_size_iv[g], {}});
  }
  if (n == "axis_index") {
    // This device's index along an enclosing pmap's axis: [0, axis_size).
    auto it = scope_.axis_sizes.find(op.str_param("axis_name"));
    if (it != scope_.axis_sizes.end()) {
      z3::expr e = scope_.fresh_int("axis_index");
      facts.push_back(e >= 0 && e < ctx().int_val(it->second));
      return result(Sym{e, Interval{0, it->second - 1}, {}});  // every device runs the kernel: not opaque
    }
  }
  // Everything below computes on scalars of an integer or bool dtype.
  for (Var* r : op.results)
    if (r->type.is_ref() || !r->type.is_scalar() || !int_like(r->type.dtype()))
      return give_up("the result of " + n + where + " is not an integer scalar");

  if (n == "get") {
    const Value& base = op.main_operand(0);
    const Indexer* ix = op.indexer_for(op.main_operand_index(0));
    int j = base.is_var() ? prefetch_of(base.var()) : -1;
    if (j < 0) return give_up("a read of the Ref %" + (base.is_var() ? base.var()->name : std::string("?")) + where);
    Prefetch& p = scope_.prefetch[j];
    z3::expr_vector args(ctx());
    std::vector<std::string> opq;
    for (size_t d = 0; d < p.shape.size(); ++d) {
      const IndexEntry e = ix && d < ix->entries.size() ? ix->entries[d] : IndexEntry::full();
      if (e.kind != IndexEntry::Point) return give_up("a non-scalar read of " + p.name + where);
      Sym i = e.is_dynamic() ? value(op.operands[e.dyn_start]) : Sym{ctx().int_val(e.start), Interval::of(e.start), {}};
      opq = merge_opaque(opq, i.opaque);
      bool in = i.iv.within(0, p.shape[d] - 1);
      guard(i.e >= 0 && i.e < ctx().int_val(p.shape[d]), in,
            "read of " + p.name + " out of bounds in dimension " + std::to_string(d), op.loc, i.opaque);
      args.push_back(i.e);
    }
    z3::expr v = p.fn(args);
    Interval r = p.declared ? Interval{p.lo, p.hi - 1} : dtype_range(p.dtype);
    facts.push_back(v >= ctx().int_val(r.lo) && v <= ctx().int_val(r.hi));
    return result(Sym{v, r, opq});
  }

  auto main = op.main_operands();
  std::vector<Sym> in;
  for (int k : main) {
    const Value& v = op.operands[k];
    if (v.type().is_ref() || !v.type().is_scalar() || !int_like(v.type().dtype()))
      return give_up("the result of " + n + where + " depends on a non-integer value");
    in.push_back(value(v));
  }
  DType d = op.results.empty() ? DType::i32 : op.results[0]->type.dtype();

  if (n == "multiple_of") {
    int64_t m = op.int_param("value");
    Sym s = in.at(0);
    facts.push_back(z3::implies(path_, z3::mod(s.e, ctx().int_val(m)) == 0));
    auto down = [m](int64_t v) { return v >= 0 ? v / m * m : -((-v + m - 1) / m * m); };
    if (s.iv.bounded()) s.iv = {-down(-s.iv.lo), down(s.iv.hi)};
    return result(s);
  }
  if (n == "add" || n == "sub" || n == "mul" || n == "div" || n == "rem" || n == "max" || n == "min") {
    if (in.size() != 2 || in[0].is_bool()) return give_up(n + " on bools" + where);
    return result(arith(op, n, in[0], in[1], d));
  }
  if (n == "neg") return result(fit(op, Sym{-in[0].e, -in[0].iv, in[0].opaque}, d));
  if (n == "abs") return result(fit(op, Sym{z3::ite(in[0].e < 0, -in[0].e, in[0].e), abs(in[0].iv), in[0].opaque}, d));
  if (n == "sign") {
    z3::expr x = in[0].e;
    return result(Sym{z3::ite(x > 0, ctx().int_val(1), z3::ite(x < 0, ctx().int_val(-1), ctx().int_val(0))),
                      Interval{in[0].iv.lo < 0 ? -1 : 0, in[0].iv.hi > 0 ? 1 : 0}, in[0].opaque});
  }
  if (n == "eq" || n == "ne" || n == "lt" || n == "le" || n == "gt" || n == "ge") {
    z3::expr a = as_int(in[0]), b = as_int(in[1]);
    z3::expr c = n == "eq" ? a == b : n == "ne" ? a != b : n == "lt" ? a < b : n == "le" ? a <= b : n == "gt" ? a > b : a >= b;
    return result(Sym{c, {0, 1}, merge_opaque(in[0].opaque, in[1].opaque)});
  }
  if ((n == "and" || n == "or" || n == "xor" || n == "not") && is_bool(d)) {
    if (n == "not") return result(Sym{!in[0].e, {0, 1}, in[0].opaque});
    z3::expr c = n == "and" ? in[0].e && in[1].e : n == "or" ? in[0].e || in[1].e : in[0].e != in[1].e;
    return result(Sym{c, {0, 1}, merge_opaque(in[0].opaque, in[1].opaque)});
  }
  // x & (2^k - 1) keeps the low k bits: x mod 2^k for every two's complement
  // x (SMT-LIB's mod is never negative for a positive divisor). The `i & 1`
  // of an index map is this; other masks stay opaque.
  if (n == "and" && in.size() == 2) {
    for (int s = 0; s < 2; ++s) {
      const Sym &x = in[s], &mask = in[1 - s];
      int64_t m = mask.iv.lo;
      if (!mask.iv.is_const() || m < 0 || m >= (int64_t{1} << 62) || ((m + 1) & m) != 0) continue;
      Interval iv = x.iv.within(0, m) ? x.iv : Interval{0, m};
      return result(Sym{z3::mod(x.e, ctx().int_val(m + 1)), iv, merge_opaque(x.opaque, mask.opaque)});
    }
  }
  if (n == "shift_left" || n == "shift_right_arithmetic" || (n == "shift_right_logical" && in[0].iv.lo >= 0)) {
    if (!in[1].iv.is_const() || in[1].iv.lo < 0 || in[1].iv.lo >= 31) return give_up(n + " by a non-constant amount" + where);
    int64_t k = int64_t{1} << in[1].iv.lo;
    Sym m{ctx().int_val(k), Interval::of(k), {}};
    if (n == "shift_left") return result(arith(op, "mul", in[0], m, d));
    // An arithmetic right shift rounds toward -inf, which SMT-LIB div does for a positive divisor.
    Interval iv = in[0].iv;
    Interval q = iv.bounded() ? Interval{iv.lo >= 0 ? iv.lo / k : -((-iv.lo + k - 1) / k), iv.hi >= 0 ? iv.hi / k : -((-iv.hi + k - 1) / k)}
                              : Interval::top();
    return result(Sym{in[0].e / ctx().int_val(k), q, in[0].opaque});
  }
  if (n == "select_n") {
    Sym p = in[0];
    if (p.is_bool()) {
      if (in.size() != 3) return give_up("select_n with a bool predicate and " + std::to_string(in.size() - 1) + " cases");
      return result(Sym{z3::ite(p.e, in[2].e, in[1].e), join(in[1].iv, in[2].iv),
                        merge_opaque(p.opaque, merge_opaque(in[1].opaque, in[2].opaque))});
    }
    // An i32 predicate picks case p, clamped into range (as cond does).
    size_t cases = in.size() - 1;
    z3::expr e = in[cases].e;
    Interval iv = in[cases].iv;
    auto opq = merge_opaque(p.opaque, in[cases].opaque);
    for (size_t c = cases - 1; c-- > 0;) {
      z3::expr pick = c == 0 ? p.e <= 0 : p.e == ctx().int_val(static_cast<int64_t>(c));
      e = z3::ite(pick, in[c + 1].e, e);
      iv = join(iv, in[c + 1].iv);
      opq = merge_opaque(opq, in[c + 1].opaque);
    }
    return result(Sym{e, iv, opq});
  }
  if (n == "convert_element_type") {
    Sym s = in[0];
    if (is_bool(d)) return result(Sym{as_int(s) != 0, {0, 1}, s.opaque});
    if (s.is_bool()) return result(Sym{as_int(s), s.iv, s.opaque});
    return result(fit(op, s, d));
  }
  return give_up("the result of " + n + where + " is not modelled");
}

}  // namespace tessera::prove
