// Encodes the integer code of an index map or kernel into Z3.
//
// Values are Z3 *integers* (unbounded), each with an interval. The IR's
// integer arithmetic wraps (every width, i64 included), mathematical integers
// do not; the two agree exactly when no intermediate value leaves its dtype's
// range, so every op that might overflow records an exactness Guard ("the
// result fits in i64"). A guard is an obligation only when it is *needed*:
// when a value that relies on it reaches an index, a control decision or a
// checked hint (Sym::deps records which guards a value relies on). Other
// obligations may then assume the needed guards: under them the integer model
// *is* the wrapping semantics. div/rem round toward zero as in the IR
// (SMT-LIB's div does not, so they are rewritten); see docs/prove.md.
//
// Some guards are run-time errors of the interpreter (a false multiple_of
// hint, an out-of-bounds read of scalar prefetch): those are always needed.
// Facts added to queries never constrain other values: every fact is about a
// fresh symbol (an opaque value, a hinted result) or a prefetch read, so one
// access's facts cannot prove another access's claim.
//
// Scalar prefetch arrays are uninterpreted functions shared by every copy of a
// grid point (a pairwise query reads the same SMEM contents at both points),
// each read constrained by the declared range. Values the prover does not
// model (a float converted to int, a loop carry...) are fresh unconstrained
// constants tagged "opaque" with a reason: a proof over them is still sound,
// but a counterexample that depends on them is only `unknown`.
#pragma once

#include <z3++.h>

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "analysis/prove/interval.h"
#include "ir/ir.h"
#include "ir/primitive.h"

namespace tessera::prove {

// A scalar integer or bool value of the program, symbolically.
struct Sym {
  z3::expr e;                        // Int sort, or Bool sort for i1
  Interval iv;                       // [0, 1] for bools
  std::vector<std::string> opaque;   // why it depends on unmodelled values (empty: exact)
  std::vector<int> deps;             // exactness guards (IntEncoder::guards) the value relies on
  bool is_bool() const { return e.is_bool(); }
};

// A condition the program needs to be well defined: no overflow, no division
// by zero, scalar-prefetch reads in bounds. `ok` must hold whenever `path` does.
struct Guard {
  z3::expr ok;
  z3::expr path;
  bool settled = false;              // intervals show it always holds
  std::string what;                  // "i32 overflow in mul", "division by zero"...
  Loc loc;
  std::vector<std::string> opaque;
  std::vector<int> deps;             // guards its operands and path rely on
  bool run_time_error = false;       // the interpreter stops when it fails: always needed
  bool needed = false;               // an obligation (see IntEncoder::need)
};

// One scalar prefetch operand: an uninterpreted function from indices to values.
struct Prefetch {
  std::string name;                  // for messages and --assume
  std::vector<std::string> aliases;  // other names that select it in --assume
  Shape shape;
  DType dtype = DType::i32;
  int64_t lo = 0, hi = 0;            // value range [lo, hi)
  bool declared = false;             // false: the dtype's full range
  // The device axes along which each device has its own values (a pmap
  // splits the operand, or computes it from axis_index): `fn` takes the
  // device's index on each of them before the element's indices.
  std::vector<std::string> per_device;
  // The program computes its values (known on every device, pinned by
  // CallContext's facts): no model chooses them.
  bool computed = false;
  z3::func_decl fn;

  explicit Prefetch(z3::context& c) : fn(c) {}
};

// The largest device count a symbolic axis size stands for (2^20): index
// arithmetic on it (me + n - 1) then never overflows i32, so the model of a
// generic protocol is exact.
inline constexpr int64_t kMaxAxisSize = int64_t{1} << 20;

// State shared by every encoding within one pallas_call: the Z3 context, the
// grid sizes and the scalar prefetch functions.
struct Scope {
  z3::context& ctx;
  std::vector<z3::expr> grid_size;   // constants or bounded symbols
  std::vector<Interval> grid_size_iv;
  std::vector<z3::expr> grid_size_facts;
  std::vector<Prefetch> prefetch;
  std::vector<int> kernel_axis;      // program_id axis a of the kernel -> grid axis (vmapped dims skipped)
  std::map<std::string, int64_t> axis_sizes;  // named device axes of enclosing pmaps
  // The axes whose indices make up a process id (a device's, or a core's in a
  // core_map outside pmaps), outermost first: the id is flat over them.
  std::vector<std::string> process_axes;
  // One symbol per axis: every axis_index of an axis is the same device's (core's) index.
  std::map<std::string, z3::expr> axis_symbol;
  // Axes whose size is a symbol (N >= 2) instead of axis_sizes' number: the
  // semaphore-balance claim proves a protocol for every device count with it.
  std::map<std::string, z3::expr> axis_size_symbol;
  std::set<std::string> axis_size_read;  // axes the kernel reads axis_size of
  // Dynamic grid axes whose size each device computes for itself, with the
  // device axes it varies along: devices may then run different grids.
  std::map<int, std::vector<std::string>> grid_size_per_device;
  int fresh = 0;

  explicit Scope(z3::context& c) : ctx(c) {}
  z3::expr fresh_int(const std::string& stem) { return ctx.int_const((stem + "!" + std::to_string(fresh++)).c_str()); }
};

std::string where(const Op& op);  // " at f.tsr:3:4", or ""

// Range of an integer dtype, [lo, hi] inclusive, as an Interval (whose ends
// saturate at +-2^62: unbounded for i64).
Interval dtype_range(DType d);
// `e` lies in the range of integer dtype d (exact for every width, i64 too).
z3::expr in_dtype_range(const z3::expr& e, DType d);
// Every value of `iv` lies in the range of d.
bool interval_in_dtype(const Interval& iv, DType d);

class IntEncoder {
 public:
  IntEncoder(Scope& scope, z3::expr path) : scope_(scope), path_(path) {}

  Scope& scope() { return scope_; }
  z3::context& ctx() { return scope_.ctx; }

  // Binds a body parameter or result.
  void bind(const Var* v, Sym s) { env_.insert_or_assign(v, std::move(s)); }
  void bind_prefetch(const Var* ref, int j) { prefetch_ref_[ref] = j; }
  int prefetch_of(const Var* ref) const {
    auto it = prefetch_ref_.find(ref);
    return it == prefetch_ref_.end() ? -1 : it->second;
  }
  // The grid point the program runs at (program ids).
  void set_grid_point(std::vector<Sym> point) { point_ = std::move(point); }

  Sym value(const Value& v);
  // This device's (core's) index on named axis `axis`: one symbol per axis,
  // in [0, size); why not, when no enclosing pmap or core_map binds it.
  std::variant<Sym, std::string> axis_index(const std::string& axis);
  bool has(const Var* v) const { return env_.count(v) > 0; }
  // A fresh unconstrained value of dtype d, tagged with `reason`.
  Sym opaque(DType d, const std::string& reason);
  // Encodes one op with scalar integer semantics; returns false (and binds
  // opaque results) if the op is not modelled.
  bool encode(const Op& op);

  // A rule's result: the value, or why it is opaque.
  using Encoded = std::variant<Sym, std::string>;
  // A primitive's integer semantics. `on_operands`: the rule computes on its
  // main operands, which must all be integer or bool scalars (else the result
  // is opaque and the rule is not called); otherwise it reads the op itself.
  struct IntRule {
    Encoded (*fn)(IntEncoder&, const Op&, const std::vector<Sym>& in, DType result);
    bool on_operands = true;
  };
  // One entry per modelled primitive; a primitive without one is opaque
  // ("not modelled"), which a coverage test lists.
  static const RuleTable<IntRule>& rules();

  // The path condition under which the current op runs, and the guards it relies on.
  z3::expr path() const { return path_; }
  const std::vector<int>& path_deps() const { return path_deps_; }
  void set_path(z3::expr p, std::vector<int> deps) { path_ = p, path_deps_ = std::move(deps); }

  // Marks the guards in `deps` (and those they rely on) as obligations: a
  // value relying on them reaches an index, a control decision or a hint.
  void need(const std::vector<int>& deps);

  std::vector<z3::expr> facts;   // always satisfiable: ranges of fresh symbols and prefetch reads
  std::vector<Guard> guards;

 private:
  Sym arith(const Op& op, const std::string& name, const Sym& a, const Sym& b, DType d);
  // Records a guard; returns its index. A run-time-error guard is needed at once.
  int guard(z3::expr ok, bool settled, std::string what, const Loc& loc, const std::vector<const Sym*>& from,
            bool run_time_error = false);
  Sym fit(const Op& op, Sym s, DType d);  // adds an overflow guard if needed
  Sym shift(const Op& op, const Sym& x, int64_t amount, DType d);
  Sym multiple_of(const Op& op, const Sym& s, int64_t m);
  Encoded prefetch_read(const Op& op);

  Scope& scope_;
  z3::expr path_;
  std::vector<int> path_deps_;
  std::unordered_map<const Var*, Sym> env_;
  std::unordered_map<const Var*, int> prefetch_ref_;
  std::vector<Sym> point_;
};

// Z3 integer division / remainder rounding toward zero.
z3::expr tdiv(const z3::expr& a, const z3::expr& b, const Interval& ia, const Interval& ib);
z3::expr trem(const z3::expr& a, const z3::expr& b, const Interval& ia, const Interval& ib);

std::vector<std::string> merge_opaque(std::vector<std::string> a, const std::vector<std::string>& b);
std::vector<int> merge_deps(std::vector<int> a, const std::vector<int>& b);
// A value computed from `from`: their opaque reasons and guard deps, merged.
Sym derived(z3::expr e, Interval iv, const std::vector<const Sym*>& from);

}  // namespace tessera::prove
