#include "analysis/prove/int_encoder.h"

namespace tessera::prove {

std::string where(const Op& op) { return op.loc.known() ? " at " + op.loc.str() : ""; }

Interval dtype_range(DType d) {
  if (is_bool(d)) return {0, 1};
  int bits = int_bits(d);
  if (bits >= 63) return Interval::top();
  if (is_unsigned_int(d)) return {0, (int64_t{1} << bits) - 1};
  return {-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1};
}

z3::expr in_dtype_range(const z3::expr& e, DType d) {
  z3::context& c = e.ctx();
  if (is_bool(d)) return e >= 0 && e <= 1;
  int bits = int_bits(d);
  if (is_unsigned_int(d))
    return e >= 0 && e <= c.int_val(bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
  return e >= c.int_val(static_cast<int64_t>(~uint64_t{0} << (bits - 1))) &&
         e <= c.int_val(static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1));
}

bool interval_in_dtype(const Interval& iv, DType d) {
  Interval r = dtype_range(d);
  // A bounded interval lies within +-2^62, inside every 64-bit range.
  if (!r.bounded()) return iv.bounded() && (!is_unsigned_int(d) || iv.lo >= 0);
  return iv.within(r.lo, r.hi);
}

std::vector<std::string> merge_opaque(std::vector<std::string> a, const std::vector<std::string>& b) {
  for (const std::string& s : b)
    if (std::find(a.begin(), a.end(), s) == a.end()) a.push_back(s);
  return a;
}

std::vector<int> merge_deps(std::vector<int> a, const std::vector<int>& b) {
  for (int g : b)
    if (std::find(a.begin(), a.end(), g) == a.end()) a.push_back(g);
  return a;
}

Sym derived(z3::expr e, Interval iv, const std::vector<const Sym*>& from) {
  Sym s{e, iv, {}, {}};
  for (const Sym* f : from) {
    s.opaque = merge_opaque(std::move(s.opaque), f->opaque);
    s.deps = merge_deps(std::move(s.deps), f->deps);
  }
  return s;
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
  if (is_bool(d)) return Sym{ctx().bool_const(("opaque!" + std::to_string(scope_.fresh++)).c_str()), r, {reason}, {}};
  z3::expr e = scope_.fresh_int("opaque");
  if (is_int(d)) facts.push_back(in_dtype_range(e, d));
  return Sym{e, r, {reason}, {}};
}

Sym IntEncoder::value(const Value& v) {
  if (v.is_literal()) {
    const Literal& l = v.literal();
    if (is_bool(l.dtype)) return Sym{ctx().bool_val(l.i != 0), Interval::of(l.i != 0), {}, {}};
    if (is_int(l.dtype)) return Sym{ctx().int_val(l.i), Interval::of(l.i), {}, {}};
    return Sym{scope_.fresh_int("float"), Interval::top(), {"a floating-point literal"}, {}};
  }
  auto it = env_.find(v.var());
  if (it != env_.end()) return it->second;
  Sym s = opaque(v.type().dtype(), "value %" + v.var()->name + " is not modelled");
  env_.emplace(v.var(), s);
  return s;
}

int IntEncoder::guard(z3::expr ok, bool settled, std::string what, const Loc& loc, const std::vector<const Sym*>& from,
                     bool run_time_error) {
  Sym all = derived(ok, {}, from);
  int id = static_cast<int>(guards.size());
  guards.push_back(Guard{ok, path_, settled, std::move(what), loc, all.opaque, merge_deps(all.deps, path_deps_),
                         run_time_error, false});
  if (run_time_error) need({id});
  return id;
}

void IntEncoder::need(const std::vector<int>& deps) {
  std::vector<int> work = deps;
  while (!work.empty()) {
    Guard& g = guards.at(static_cast<size_t>(work.back()));
    work.pop_back();
    if (g.needed) continue;
    g.needed = true;
    work.insert(work.end(), g.deps.begin(), g.deps.end());
  }
}

Sym IntEncoder::fit(const Op& op, Sym s, DType d) {
  if (!is_int(d) || interval_in_dtype(s.iv, d)) return s;
  int g = guard(in_dtype_range(s.e, d), false, std::string(dtype_name(d)) + " overflow in " + op.name(), op.loc, {&s});
  s.deps = merge_deps(std::move(s.deps), {g});
  // Past the guard the value is in range; keep the interval honest.
  Interval r = dtype_range(d);
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
  z3::expr x = a.e, y = b.e;
  if (n == "add") return fit(op, derived(x + y, a.iv + b.iv, {&a, &b}), d);
  if (n == "sub") return fit(op, derived(x - y, a.iv - b.iv, {&a, &b}), d);
  if (n == "mul") return fit(op, derived(x * y, a.iv * b.iv, {&a, &b}), d);
  if (n == "max") return derived(z3::ite(x >= y, x, y), max(a.iv, b.iv), {&a, &b});
  if (n == "min") return derived(z3::ite(x <= y, x, y), min(a.iv, b.iv), {&a, &b});
  // div / rem. The interpreter defines x / 0 and x % 0; the integer model
  // does not, so a divisor that may be zero gets an exactness guard.
  Sym zero_ok = derived(y, {}, {});
  if (b.iv.contains(0)) zero_ok.deps = {guard(y != 0, false, "division by zero in " + n, op.loc, {&a, &b})};
  if (n == "div") return fit(op, derived(tdiv(x, y, a.iv, b.iv), trunc_div(a.iv, b.iv), {&a, &b, &zero_ok}), d);
  return derived(trem(x, y, a.iv, b.iv), trunc_rem(a.iv, b.iv), {&a, &b, &zero_ok});
}

namespace {

// 2^k as a Z3 integer, 0 <= k <= 64.
z3::expr pow2(z3::context& c, int k) {
  if (k < 64) return c.int_val(uint64_t{1} << k);
  return c.int_val("18446744073709551616");
}

// floor(v / 2^k) of an interval end (saturated ends stay saturated).
int64_t floor_shift(int64_t v, int k) {
  if (v <= -Interval::kInf || v >= Interval::kInf) return v;
  return v >= 0 ? v >> k : -((-v + (int64_t{1} << k) - 1) >> k);
}

}  // namespace

// Shifts by a constant, with the interpreter's semantics for every amount:
// an amount outside [0, bits) (negative ones read as unsigned) shifts every
// bit out: 0, or the sign for an arithmetic right shift.
Sym IntEncoder::shift(const Op& op, const Sym& x, int64_t k, DType d) {
  const std::string& n = op.name();
  int bits = int_bits(d);
  bool out = k < 0 || k >= bits;
  if (n == "shift_left") {
    if (out) return Sym{ctx().int_val(0), Interval::of(0), {}, {}};
    // x << k == x * 2^k in two's complement; the product's overflow is guarded.
    Interval p = Interval::range(k >= 62 ? Interval::kInf : int64_t{1} << k, k >= 62 ? Interval::kInf : int64_t{1} << k);
    return fit(op, derived(x.e * pow2(ctx(), static_cast<int>(k)), x.iv * p, {&x}), d);
  }
  if (n == "shift_right_arithmetic") {
    if (out) return derived(z3::ite(x.e < 0, ctx().int_val(-1), ctx().int_val(0)),
                            Interval{x.iv.lo < 0 ? -1 : 0, x.iv.hi < 0 ? -1 : 0}, {&x});
    // SMT-LIB's div floors for a positive divisor, as an arithmetic shift does.
    int kk = static_cast<int>(std::min<int64_t>(k, 62));
    return derived(x.e / pow2(ctx(), static_cast<int>(k)), Interval{floor_shift(x.iv.lo, kk), floor_shift(x.iv.hi, kk)}, {&x});
  }
  // shift_right_logical: the bits of x read as unsigned (x mod 2^bits), shifted.
  if (out) return Sym{ctx().int_val(0), Interval::of(0), {}, {}};
  if (k == 0) return x;
  z3::expr u = x.iv.lo >= 0 ? x.e : z3::mod(x.e, pow2(ctx(), bits));
  int kk = static_cast<int>(std::min<int64_t>(k, 62));
  Interval iv = x.iv.lo >= 0 ? Interval{floor_shift(x.iv.lo, kk), floor_shift(x.iv.hi, kk)}
                             : Interval{0, bits - k >= 62 ? Interval::kInf : (int64_t{1} << (bits - k)) - 1};
  return derived(u / pow2(ctx(), static_cast<int>(k)), iv, {&x});
}

// multiple_of[value=m] is a claim the interpreter checks (a false hint stops
// the run): the guard is always an obligation. Its result is a fresh symbol r
// with r mod m == 0 that equals s when the hint holds; the fact never
// constrains s, so a false hint cannot make a query unsatisfiable. The
// interval is s's rounded inward to multiples of m, unless that is empty (the
// hint can never hold; the guard fails).
Sym IntEncoder::multiple_of(const Op& op, const Sym& s, int64_t m) {
  z3::expr mv = ctx().int_val(m);
  bool settled = s.iv.is_const() && s.iv.lo % m == 0;
  guard(z3::mod(s.e, mv) == 0, settled, "multiple_of[value=" + std::to_string(m) + "] hint is false", op.loc, {&s}, true);
  z3::expr r = scope_.fresh_int("multiple_of");
  facts.push_back(z3::mod(r, mv) == 0 && z3::implies(z3::mod(s.e, mv) == 0, r == s.e));
  Interval iv = s.iv;
  if (s.iv.bounded()) {
    auto down = [m](int64_t v) { return v >= 0 ? v / m * m : -((-v + m - 1) / m * m); };
    Interval in{-down(-s.iv.lo), down(s.iv.hi)};
    if (in.lo <= in.hi) iv = in;
  }
  return derived(r, iv, {&s});
}

// ---- The rule table: how each primitive's integer semantics is encoded ----

const RuleTable<IntEncoder::IntRule>& IntEncoder::rules() {
  static const RuleTable<IntRule> table = [] {
    RuleTable<IntRule> t("prove");
    // An elementwise op on integers may compute an index: it must have an entry.
    t.set_default("its results are opaque to the prover (not modelled)", [](const Primitive& p) {
      return p.family != Family::elementwise || p.accepts == DTypeClass::floating;
    });
    auto on_operands = [](auto fn) { return IntRule{fn, true}; };

    // Sources: where the kernel runs, and scalar-prefetch reads.
    auto grid = [](IntEncoder& e, const Op& op, const std::vector<Sym>&, DType) -> Encoded {
      int64_t axis = op.param(keys::axis);
      if (axis < 0 || axis >= static_cast<int64_t>(e.scope_.kernel_axis.size()))
        throw Error(op.loc, op.name() + ": axis " + std::to_string(axis) + " is out of range for the grid");
      int g = e.scope_.kernel_axis[axis];
      if (op.name() == "program_id") return e.point_.at(g);
      return Sym{e.scope_.grid_size[g], e.scope_.grid_size_iv[g], {}, {}};
    };
    t.set("program_id", {grid, false});
    t.set("num_programs", {grid, false});
    // This device's (or core's) index along an enclosing pmap's or core_map's
    // axis: [0, axis_size). Every device runs the kernel, so it is not opaque.
    t.set("axis_index", {[](IntEncoder& e, const Op& op, const std::vector<Sym>&, DType) -> Encoded {
             std::variant<Sym, std::string> r = e.axis_index(op.param(keys::axis_name));
             if (const std::string* why = std::get_if<std::string>(&r)) return *why + where(op);
             return std::get<Sym>(r);
           }, false});
    t.set("axis_size", {[](IntEncoder& e, const Op& op, const std::vector<Sym>&, DType) -> Encoded {
             auto it = e.scope_.axis_sizes.find(op.param(keys::axis_name));
             if (it == e.scope_.axis_sizes.end()) return "axis_size of an axis no enclosing pmap or core_map binds" + where(op);
             e.scope_.axis_size_read.insert(it->first);
             auto n = e.scope_.axis_size_symbol.find(it->first);
             if (n != e.scope_.axis_size_symbol.end()) return Sym{n->second, Interval{2, kMaxAxisSize}, {}, {}};
             return Sym{e.ctx().int_val(it->second), Interval::of(it->second), {}, {}};
           }, false});
    t.set("get", {[](IntEncoder& e, const Op& op, const std::vector<Sym>&, DType) -> Encoded { return e.prefetch_read(op); },
                  false});

    // Integer arithmetic.
    for (const char* n : {"add", "sub", "mul", "div", "rem", "max", "min"})
      t.set(n, on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
              if (in.size() != 2 || in[0].is_bool()) return op.name() + " on bools" + where(op);
              return e.arith(op, op.name(), in[0], in[1], d);
            }));
    // lax.clamp(lo, x, hi) = min(max(x, lo), hi).
    t.set("clamp", on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
            if (in.size() != 3 || in[1].is_bool()) return "clamp on bools" + where(op);
            return e.arith(op, "min", e.arith(op, "max", in[1], in[0], d), in[2], d);
          }));
    // x ** y for a small static y, as products; larger ones are opaque.
    t.set("integer_pow", on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
            int64_t y = op.param(keys::y);
            if (in.size() != 1 || in[0].is_bool() || y < 0 || y > 4)
              return "integer_pow[y=" + std::to_string(y) + "] (only 0 <= y <= 4 is modelled)" + where(op);
            Sym acc = derived(e.ctx().int_val(1), Interval::of(1), {});
            for (int64_t k = 0; k < y; ++k) acc = e.arith(op, "mul", acc, in[0], d);
            return acc;
          }));
    // Bit counts: explicit entries, opaque (no index map computes with them).
    for (const char* count : {"population_count", "clz"})
      t.set(count, on_operands([](IntEncoder&, const Op& op, const std::vector<Sym>&, DType) -> Encoded {
              return op.name() + " is not modelled" + where(op);
            }));
    t.set("square", on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
            if (in.size() != 1 || in[0].is_bool()) return "square on bools" + where(op);
            return e.arith(op, "mul", in[0], in[0], d);
          }));
    t.set("neg", on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
            return e.fit(op, derived(-in[0].e, -in[0].iv, {&in[0]}), d);
          }));
    t.set("abs", on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
            return e.fit(op, derived(z3::ite(in[0].e < 0, -in[0].e, in[0].e), abs(in[0].iv), {&in[0]}), d);
          }));
    t.set("sign", on_operands([](IntEncoder& e, const Op&, const std::vector<Sym>& in, DType) -> Encoded {
            z3::expr x = in[0].e;
            return derived(z3::ite(x > 0, e.ctx().int_val(1), z3::ite(x < 0, e.ctx().int_val(-1), e.ctx().int_val(0))),
                           Interval{in[0].iv.lo < 0 ? -1 : 0, in[0].iv.hi > 0 ? 1 : 0}, {&in[0]});
          }));
    t.set("multiple_of", on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType) -> Encoded {
            return e.multiple_of(op, in.at(0), op.param(keys::value));
          }));

    // Comparisons (every one the registry marks as giving bool).
    for (const Primitive* p : registry().of(Family::elementwise)) {
      if (!p->to_bool) continue;
      t.set(p->name, on_operands([](IntEncoder&, const Op& op, const std::vector<Sym>& in, DType) -> Encoded {
              z3::expr a = as_int(in[0]), b = as_int(in[1]);
              const std::string& n = op.name();
              z3::expr c = n == "eq" ? a == b : n == "ne" ? a != b : n == "lt" ? a < b : n == "le" ? a <= b : n == "gt" ? a > b : a >= b;
              return derived(c, {0, 1}, {&in[0], &in[1]});
            }));
    }

    // Bitwise ops: logical on bools; on integers, only `and` with a low-bit
    // mask 2^k - 1, which keeps the low k bits: x mod 2^k for every two's
    // complement x (SMT-LIB's mod is never negative for a positive divisor).
    // The `i & 1` of an index map is this; other masks stay opaque.
    for (const char* bitwise : {"and", "or", "xor", "not"})
      t.set(bitwise, on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
              const std::string& n = op.name();
              if (is_bool(d)) {
                if (n == "not") return derived(!in[0].e, {0, 1}, {&in[0]});
                z3::expr c = n == "and" ? in[0].e && in[1].e : n == "or" ? in[0].e || in[1].e : in[0].e != in[1].e;
                return derived(c, {0, 1}, {&in[0], &in[1]});
              }
              if (n == "and" && in.size() == 2)
                for (int s = 0; s < 2; ++s) {
                  const Sym &x = in[s], &mask = in[1 - s];
                  int64_t m = mask.iv.lo;
                  if (!mask.iv.is_const() || m < 0 || m >= (int64_t{1} << 62) || ((m + 1) & m) != 0) continue;
                  Interval iv = x.iv.within(0, m) ? x.iv : Interval{0, m};
                  return derived(z3::mod(x.e, e.ctx().int_val(m + 1)), iv, {&x, &mask});
                }
              return "integer " + n + " (other than with a low-bit mask)" + where(op);
            }));
    for (const char* n : {"shift_left", "shift_right_arithmetic", "shift_right_logical"})
      t.set(n, on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
              if (!in[1].iv.is_const()) return op.name() + " by a non-constant amount" + where(op);
              return e.shift(op, in[0], in[1].iv.lo, d);
            }));

    // Selection and conversion.
    t.set("select_n", on_operands([](IntEncoder& e, const Op&, const std::vector<Sym>& in, DType) -> Encoded {
            const Sym& p = in[0];
            std::vector<const Sym*> all;
            for (const Sym& s : in) all.push_back(&s);
            if (p.is_bool()) {
              if (in.size() != 3) return "select_n with a bool predicate and " + std::to_string(in.size() - 1) + " cases";
              return derived(z3::ite(p.e, in[2].e, in[1].e), join(in[1].iv, in[2].iv), all);
            }
            // An i32 predicate picks case p, clamped into range (as cond does).
            size_t cases = in.size() - 1;
            z3::expr v = in[cases].e;
            Interval iv = in[cases].iv;
            for (size_t c = cases - 1; c-- > 0;) {
              z3::expr pick = c == 0 ? p.e <= 0 : p.e == e.ctx().int_val(static_cast<int64_t>(c));
              v = z3::ite(pick, in[c + 1].e, v);
              iv = join(iv, in[c + 1].iv);
            }
            return derived(v, iv, all);
          }));
    t.set("convert_element_type", on_operands([](IntEncoder& e, const Op& op, const std::vector<Sym>& in, DType d) -> Encoded {
            const Sym& s = in[0];
            if (is_bool(d)) return derived(as_int(s) != 0, {0, 1}, {&s});
            if (s.is_bool()) return derived(as_int(s), s.iv, {&s});
            return e.fit(op, s, d);
          }));
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("prove.int", IntEncoder::rules);

bool IntEncoder::encode(const Op& op) {
  auto give_up = [&](const std::string& why) {
    for (Var* r : op.results) bind(r, opaque(r->type.is_ref() ? DType::i32 : r->type.dtype(), why));
    return false;
  };
  const IntRule* rule = rules().find(*op.prim);
  if (!rule) return give_up("the result of " + op.name() + where(op) + " is not modelled");
  // Every rule computes on scalars of an integer or bool dtype.
  for (Var* r : op.results)
    if (r->type.is_ref() || !r->type.is_scalar() || !int_like(r->type.dtype()))
      return give_up("the result of " + op.name() + where(op) + " is not an integer scalar");
  std::vector<Sym> in;
  if (rule->on_operands)
    for (int k : op.main_operands()) {
      const Value& v = op.operands[k];
      if (v.type().is_ref() || !v.type().is_scalar() || !int_like(v.type().dtype()))
        return give_up("the result of " + op.name() + where(op) + " depends on a non-integer value");
      in.push_back(value(v));
    }
  DType d = op.results.empty() ? DType::i32 : op.results[0]->type.dtype();
  Encoded r = rule->fn(*this, op, in, d);
  if (const std::string* why = std::get_if<std::string>(&r)) return give_up(*why);
  if (!op.results.empty()) bind(op.results[0], std::move(std::get<Sym>(r)));
  return true;
}

std::variant<Sym, std::string> IntEncoder::axis_index(const std::string& axis) {
  auto it = scope_.axis_sizes.find(axis);
  if (it == scope_.axis_sizes.end()) return "axis_index of an axis no enclosing pmap or core_map binds";
  auto sym = scope_.axis_symbol.find(it->first);
  if (sym == scope_.axis_symbol.end()) sym = scope_.axis_symbol.emplace(it->first, scope_.fresh_int("axis_index_" + it->first)).first;
  z3::expr v = sym->second;
  auto n = scope_.axis_size_symbol.find(it->first);
  if (n != scope_.axis_size_symbol.end()) {
    facts.push_back(v >= 0 && v < n->second);
    return Sym{v, Interval{0, kMaxAxisSize - 1}, {}, {}};
  }
  facts.push_back(v >= 0 && v < ctx().int_val(it->second));
  return Sym{v, Interval{0, it->second - 1}, {}, {}};
}

// A scalar read of a scalar-prefetch Ref: an uninterpreted function of the
// indices (after this device's index on the axes the operand varies along),
// within the declared range; any other Ref read is opaque.
IntEncoder::Encoded IntEncoder::prefetch_read(const Op& op) {
  const Value& base = op.main_operand(0);
  const Indexer* ix = op.indexer_for(op.main_operand_index(0));
  int j = base.is_var() ? prefetch_of(base.var()) : -1;
  if (j < 0) return "a read of the Ref %" + (base.is_var() ? base.var()->name : std::string("?")) + where(op);
  Prefetch& p = scope_.prefetch[j];
  z3::expr_vector args(ctx());
  for (const std::string& axis : p.per_device) {
    std::variant<Sym, std::string> dev = axis_index(axis);
    if (const std::string* why = std::get_if<std::string>(&dev)) return "a per-device read of " + p.name + ": " + *why + where(op);
    args.push_back(std::get<Sym>(dev).e);
  }
  std::vector<Sym> idx;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    const IndexEntry e = ix && d < ix->entries.size() ? ix->entries[d] : IndexEntry::full();
    if (e.kind != IndexEntry::Point) return "a non-scalar read of " + p.name + where(op);
    Sym i = e.is_dynamic() ? value(op.operands[e.dyn_start]) : Sym{ctx().int_val(e.start), Interval::of(e.start), {}, {}};
    bool in = i.iv.within(0, p.shape[d] - 1);
    // The interpreter stops on an out-of-bounds read of scalar prefetch.
    guard(i.e >= 0 && i.e < ctx().int_val(p.shape[d]), in,
          "read of " + p.name + " out of bounds in dimension " + std::to_string(d), op.loc, {&i}, true);
    args.push_back(i.e);
    idx.push_back(i);
  }
  z3::expr v = p.fn(args);
  Interval r = p.declared ? Interval{p.lo, p.hi - 1} : dtype_range(p.dtype);
  facts.push_back(v >= ctx().int_val(r.lo) && v <= ctx().int_val(r.hi));
  if (!p.declared) facts.push_back(in_dtype_range(v, p.dtype));
  std::vector<const Sym*> from;
  for (const Sym& i : idx) from.push_back(&i);
  return derived(v, r, from);
}

}  // namespace tessera::prove
