#include "transforms/dma_trace.h"

#include <algorithm>
#include <limits>
#include <functional>
#include <unordered_map>

#include "ir/control_views.h"
#include "ir/param_keys.h"
#include "ir/rule_table.h"

namespace tessera::dma_trace {

int64_t Box::numel() const {
  int64_t n = 1;
  for (int64_t s : size) n *= s;
  return n;
}

bool Box::overlaps(const Box& o) const {
  for (size_t d = 0; d < lo.size() && d < o.lo.size(); ++d)
    if (lo[d] + size[d] <= o.lo[d] || o.lo[d] + o.size[d] <= lo[d]) return false;
  return true;
}

bool Box::covers(const Box& o) const {
  for (size_t d = 0; d < lo.size() && d < o.lo.size(); ++d)
    if (o.lo[d] < lo[d] || o.lo[d] + o.size[d] > lo[d] + size[d]) return false;
  return true;
}

namespace {

// What a variable holds during the trace: an integer (bools as 0 / 1), one
// of the kernel's Ref params, or something the trace does not model.
struct Val {
  enum Kind { unknown, num, ref } kind = unknown;
  int64_t n = 0;
  int root = -1;
  static Val of(int64_t v) { return {num, v, -1}; }
  static Val of_ref(int r) { return {ref, 0, r}; }
};

bool is_scalar_int(const Type& t) { return !t.is_ref() && t.rank() == 0 && (is_int(t.dtype()) || is_bool(t.dtype())); }

using Env = std::unordered_map<const Var*, Val>;
// An integer op's value from its operands' values (nullopt: unknown).
using Formula = std::function<std::optional<int64_t>(const Op&, const std::vector<int64_t>&)>;

class Tracer {
 public:
  Tracer(std::string& why, int64_t max_steps) : why_(why), steps_left_(max_steps) {}

  bool run(const Body& kernel) {
    Env env;
    for (size_t i = 0; i < kernel.params().size(); ++i)
      if (kernel.params()[i]->type.is_ref()) env[kernel.params()[i]] = Val::of_ref(static_cast<int>(i));
    std::vector<Val> outs;
    return run_body(kernel, env, 0, outs);
  }

  std::vector<Event> events;

  bool fail(const Op& op, const std::string& what) const {
    why_ = what + " at " + op.loc.str();
    return false;
  }

  static Val value(const Env& env, const Value& v) {
    if (v.is_literal()) return is_float(v.literal().dtype) ? Val{} : Val::of(v.literal().as_int());
    auto it = env.find(v.var());
    return it == env.end() ? Val{} : it->second;
  }

  bool run_body(const Body& b, Env& env, int64_t loop_index, std::vector<Val>& outs) {
    for (const Op& op : b.ops()) {
      if (--steps_left_ < 0) return fail(op, "the kernel runs too many ops to trace");
      if (!run_op(op, env, loop_index)) return false;
    }
    outs.clear();
    for (const Value& v : b.outputs()) outs.push_back(value(env, v));
    return true;
  }

  bool run_op(const Op& op, Env& env, int64_t loop_index);

  // Defines the integer result of `op` by `f` of its operands' values, or
  // leaves it unknown when an operand is, or `f` does not follow.
  void define(const Op& op, Env& env, const Formula& f) {
    if (op.results.size() != 1 || !is_scalar_int(op.results[0]->type)) return;
    std::vector<int64_t> x;
    for (const Value& v : op.operands) {
      Val a = value(env, v);
      if (a.kind != Val::num) return;
      x.push_back(a.n);
    }
    if (std::optional<int64_t> r = f(op, x)) env[op.results[0]] = Val::of(*r);
  }

  bool run_for(const Op& op, Env& env) {
    ForView v(op);
    Val lo = value(env, v.lo()), hi = value(env, v.hi());
    if (lo.kind != Val::num || hi.kind != Val::num) return fail(op, "a `for` without static bounds");
    const Body& b = v.body();
    std::vector<Val> carries;
    for (int j = 0; j < v.num_carries; ++j) carries.push_back(value(env, op.operands[v.first_carry() + j]));
    for (int64_t i = lo.n; i < hi.n; ++i) {
      Env inner;
      inner[b.params()[0]] = Val::of(i);
      for (int q = 0; q < v.num_consts; ++q) inner[b.params()[1 + q]] = value(env, op.operands[2 + q]);
      for (int j = 0; j < v.num_carries; ++j) inner[b.params()[1 + v.num_consts + j]] = carries[j];
      if (!run_body(b, inner, i, carries)) return false;
    }
    for (size_t j = 0; j < op.results.size() && j < carries.size(); ++j) env[op.results[j]] = carries[j];
    return true;
  }

  bool run_cond(const Op& op, Env& env, int64_t loop_index) {
    CondView v(op);
    Val index = value(env, v.index());
    if (index.kind != Val::num) return fail(op, "a `cond` on a value the trace does not know");
    const auto& branches = v.branches();
    if (branches.empty()) return fail(op, "a `cond` without branches");
    int64_t k = std::clamp<int64_t>(index.n, 0, static_cast<int64_t>(branches.size()) - 1);
    const Body& b = *branches[static_cast<size_t>(k)];
    Env inner;
    for (size_t i = 0; i < v.args().size(); ++i) inner[b.params()[i]] = value(env, v.args()[i]);
    std::vector<Val> outs;
    if (!run_body(b, inner, loop_index, outs)) return false;
    for (size_t j = 0; j < op.results.size() && j < outs.size(); ++j) env[op.results[j]] = outs[j];
    return true;
  }

  // The region main operand k of `op` selects.
  bool region(const Op& op, int k, const Env& env, Region& r) {
    int base = op.main_operand_index(k);
    Val ref = value(env, op.operands[static_cast<size_t>(base)]);
    if (ref.kind != Val::ref) return fail(op, "a Ref the trace does not follow");
    r.root = ref.root;
    const Shape& shape = op.operands[static_cast<size_t>(base)].type().shape();
    r.box.lo.assign(shape.size(), 0);
    r.box.size.assign(shape.begin(), shape.end());
    const Indexer* ix = op.indexer_for(base);
    if (!ix) return true;
    for (size_t d = 0; d < ix->entries.size() && d < shape.size(); ++d) {
      const IndexEntry& e = ix->entries[d];
      if (e.kind == IndexEntry::Full) continue;
      if (e.is_indirect() || e.has_dynamic_size() || (e.kind == IndexEntry::Slice && e.stride != 1))
        return fail(op, "an indexed, strided or dynamically sized region");
      int64_t start = e.start;
      if (e.is_dynamic()) {
        Val s = value(env, op.operands[static_cast<size_t>(e.dyn_start)]);
        if (s.kind != Val::num) return fail(op, "an index the trace does not know");
        start = s.n;
      }
      int64_t size = e.kind == IndexEntry::Point ? 1 : e.size;
      if (start < 0 || start + size > shape[d]) return fail(op, "a region out of bounds");
      r.box.lo[d] = start;
      r.box.size[d] = size;
    }
    return true;
  }

  static int64_t bytes_of(const Op& op, int k, const Region& r) {
    return r.box.numel() * dtype_bytes(op.main_operand(k).type().dtype());
  }

  bool semaphore(const Op& op, int k, const Env& env, Event& e) {
    Region s;
    if (!region(op, k, env, s)) return false;
    if (s.box.numel() != 1) return fail(op, "a slice of several semaphores");
    e.sem_root = s.root;
    int64_t flat = 0;
    const Shape& shape = op.main_operand(k).type().shape();
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + s.box.lo[d];
    e.sem_element = flat;
    return true;
  }

  static Event event(Event::Kind kind, const Op& op, int64_t loop_index) {
    Event e;
    e.kind = kind;
    e.op = &op;
    e.loop_index = loop_index;
    return e;
  }

  bool dma_start(const Op& op, const Env& env, int64_t loop_index) {
    if (op.num_main_operands() != 3) return fail(op, "a DMA to another device");
    if (op.param(keys::add)) return fail(op, "a scatter-add DMA");
    Event e = event(Event::start, op, loop_index);
    if (!region(op, 0, env, e.src) || !region(op, 1, env, e.dst) || !semaphore(op, 2, env, e)) return false;
    e.bytes = bytes_of(op, 1, e.dst);
    events.push_back(std::move(e));
    return true;
  }

  bool dma_wait(const Op& op, const Env& env, int64_t loop_index) {
    Event e = event(Event::wait, op, loop_index);
    if (!semaphore(op, 0, env, e) || !region(op, 1, env, e.dst)) return false;
    e.bytes = bytes_of(op, 1, e.dst);
    events.push_back(std::move(e));
    return true;
  }

  bool access(const Op& op, const Env& env, int64_t loop_index, Event::Kind kind) {
    Event e = event(kind, op, loop_index);
    if (!region(op, 0, env, e.dst)) return false;
    events.push_back(std::move(e));
    return true;
  }

  std::string& why_;
  int64_t steps_left_;
};

// ---- What the trace does with each primitive --------------------------------

using TraceRule = std::function<bool(Tracer&, const Op&, Env&, int64_t loop_index)>;

TraceRule evaluate(Formula f) {
  return [f = std::move(f)](Tracer& t, const Op& op, Env& env, int64_t) {
    t.define(op, env, f);
    return true;
  };
}

// Two integers, as the interpreter computes them (truncating division);
// nullopt where the trace does not follow (overflow, a zero divisor).
TraceRule binary(std::optional<int64_t> (*f)(int64_t, int64_t)) {
  return evaluate([f](const Op&, const std::vector<int64_t>& x) { return x.size() == 2 ? f(x[0], x[1]) : std::nullopt; });
}

TraceRule accesses(Event::Kind kind) {
  return [kind](Tracer& t, const Op& op, Env& env, int64_t loop_index) { return t.access(op, env, loop_index, kind); };
}

const RuleTable<TraceRule>& trace_rules() {
  using R = std::optional<int64_t>;
  static const RuleTable<TraceRule> table = [] {
    RuleTable<TraceRule> t("dma_trace");
    t.set("for", [](Tracer& tr, const Op& op, Env& env, int64_t) { return tr.run_for(op, env); });
    t.set("cond", [](Tracer& tr, const Op& op, Env& env, int64_t i) { return tr.run_cond(op, env, i); });
    t.set("dma_start", [](Tracer& tr, const Op& op, Env& env, int64_t i) { return tr.dma_start(op, env, i); });
    t.set("dma_wait", [](Tracer& tr, const Op& op, Env& env, int64_t i) { return tr.dma_wait(op, env, i); });
    t.set("get", accesses(Event::read));
    t.set("load", accesses(Event::read));
    t.set("addupdate", accesses(Event::update));
    t.set("store", accesses(Event::update));
    t.set("swap", accesses(Event::overwrite));
    t.set("program_id", evaluate([](const Op&, const std::vector<int64_t>&) { return R(0); }));  // one grid point
    t.set("num_programs", evaluate([](const Op&, const std::vector<int64_t>&) { return R(1); }));
    t.set("add", binary([](int64_t a, int64_t b) { int64_t r; return __builtin_add_overflow(a, b, &r) ? R() : R(r); }));
    t.set("sub", binary([](int64_t a, int64_t b) { int64_t r; return __builtin_sub_overflow(a, b, &r) ? R() : R(r); }));
    t.set("mul", binary([](int64_t a, int64_t b) { int64_t r; return __builtin_mul_overflow(a, b, &r) ? R() : R(r); }));
    t.set("div", binary([](int64_t a, int64_t b) { return b == 0 || b == -1 ? R() : R(a / b); }));
    t.set("rem", binary([](int64_t a, int64_t b) { return b == 0 || b == -1 ? R() : R(a % b); }));
    t.set("max", binary([](int64_t a, int64_t b) { return R(std::max(a, b)); }));
    t.set("min", binary([](int64_t a, int64_t b) { return R(std::min(a, b)); }));
    t.set("eq", binary([](int64_t a, int64_t b) { return R(a == b); }));
    t.set("ne", binary([](int64_t a, int64_t b) { return R(a != b); }));
    t.set("lt", binary([](int64_t a, int64_t b) { return R(a < b); }));
    t.set("le", binary([](int64_t a, int64_t b) { return R(a <= b); }));
    t.set("gt", binary([](int64_t a, int64_t b) { return R(a > b); }));
    t.set("ge", binary([](int64_t a, int64_t b) { return R(a >= b); }));
    t.set("and", binary([](int64_t a, int64_t b) { return R(a & b); }));
    t.set("or", binary([](int64_t a, int64_t b) { return R(a | b); }));
    t.set("not", evaluate([](const Op& op, const std::vector<int64_t>& x) {
            return x.size() == 1 ? R(is_bool(op.results[0]->type.dtype()) ? !x[0] : ~x[0]) : R();
          }));
    t.set("neg", evaluate([](const Op&, const std::vector<int64_t>& x) {
            return x.size() == 1 && x[0] != std::numeric_limits<int64_t>::min() ? R(-x[0]) : R();
          }));
    t.set("convert_element_type",
          evaluate([](const Op&, const std::vector<int64_t>& x) { return x.size() == 1 ? R(x[0]) : R(); }));
    t.set_default("not followed: one with a body or a Ref operand ends the trace (the copies are transposed "
                  "synchronously); an integer it computes is unknown to the trace");
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("dma_trace", trace_rules);

bool Tracer::run_op(const Op& op, Env& env, int64_t loop_index) {
  if (const TraceRule* rule = trace_rules().find(*op.prim)) return (*rule)(*this, op, env, loop_index);
  if (!op.nested_bodies().empty()) return fail(op, "`" + op.name() + "` (only `for` and `cond` are traced)");
  for (const Value& v : op.operands)
    if (v.type().is_ref()) return fail(op, "`" + op.name() + "` of a Ref");
  return true;
}

}  // namespace

std::optional<std::vector<Event>> trace_kernel(const Body& kernel, std::string& why, int64_t max_steps) {
  Tracer t(why, max_steps);
  if (!t.run(kernel)) return std::nullopt;
  return std::move(t.events);
}

}  // namespace tessera::dma_trace
