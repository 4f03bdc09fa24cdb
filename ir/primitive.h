// The primitive registry.
//
// A primitive is a name, a parameter schema, a shape rule and an effect rule.
// Passes, backends and analyses keep their own rules in RuleTable<F>, keyed by
// primitive (ir/rule_table.h, included at the end of this header).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/effects.h"
#include "ir/ir.h"

namespace tessera {

class Builder;

struct ParamSpec {
  std::string name;
  ParamKind kind;
  bool required = true;
  Param default_value = {};
  std::vector<std::string> choices = {};  // allowed words for Ident / Idents
};

// Computes result types from operand types, params and indexers; throws Error
// (at op.loc) when the op is ill-typed.
using ShapeRule = std::function<std::vector<Type>(const Op&)>;
using EffectRule = std::function<void(const Op&, OpEffects&)>;

// Main operands [first, last) (last -1: through the final one) that are
// integer scalars by nature: start indices, loop bounds, device ids.
struct OperandRange {
  int first = -1, last = -1;
  bool contains(int k) const { return first >= 0 && k >= first && (last < 0 || k < last); }
};

// What kind of operation a primitive is. Rule tables register a whole family
// (or the part of it with some property) in one loop over the registry, the way
// JAX's `standard_unop` / `standard_naryop` give a family its rules, instead
// of listing names a misspelling would silently skip.
enum class Family : uint8_t {
  elementwise,  // one result shaped like the operands (rank-0 ones broadcast): math, bitwise, comparisons, select_n, converts
  reduction,    // reduce_*, argmax/argmin, cumsum
  structural,   // shapes and layouts: broadcast, reshape, slice, gather, dot_general, ...
  state,        // Ref reads and writes with an indexer: get, swap, addupdate, load, store
  control,      // ops with bodies: cond, while, scan, for, run_scoped, call, core_map, pmap
  pallas,       // Pallas / TPU: program ids, multiple_of, DMAs, semaphores, pallas_call, ...
};
std::string_view family_name(Family f);

struct Primitive {
  std::string name;
  std::string summary;             // one line, for docs and --help
  std::vector<ParamSpec> params;
  ShapeRule shape;
  EffectRule effects;              // empty: pure
  bool indexed = false;            // takes `%ref[...]` operands
  // The parser types a bare literal here as an integer (i32, or the dtype of
  // another integer operand in the range), not as the data operands' dtype:
  // `dynamic_slice[...] %x, %i, 0` starts at integer 0 for any dtype of %x.
  OperandRange int_operands = {};
  // Set by the registry from the register_* function that added it.
  Family family = Family::structural;
  // Elementwise primitives with a fixed arity (0 for select_n, convert and
  // multiple_of, which have their own rules): operand count, the dtypes they
  // accept, and whether the result is bool (comparisons).
  int arity = 0;
  DTypeClass accepts = DTypeClass::any;
  bool to_bool = false;
  // Unary math: its derivative applied to a tangent `dx` at operand `x` with
  // result `y`, written with other primitives (JAX's lax gives each primitive
  // its `defjvp` beside its definition). A fact about the function, like the
  // shape rule; the jvp pass makes it the rule of the whole family.
  using TangentFn = Value (*)(Builder& b, Value x, Value y, Value dx);
  TangentFn tangent = nullptr;
  bool piecewise_constant = false;  // floor, round, sign...: zero derivative wherever it has one
  // Counted as one transcendental per element instead of one flop (exp, log,
  // tanh, sin, ...: the ops XLA's HloCostAnalysis counts as transcendentals,
  // which Pallas's CostEstimate(transcendentals=...) means). ir/op_cost.h.
  bool transcendental = false;

  const ParamSpec* find_param(std::string_view key) const;
  // An elementwise op of `n` operands computed by a formula on elements
  // (unary / binary math, bitwise ops, comparisons).
  bool is_nary(int n) const { return family == Family::elementwise && arity == n; }
};

class Registry {
 public:
  const Primitive* find(std::string_view name) const;
  const Primitive& get(std::string_view name) const;  // throws "unknown primitive"
  Primitive& add(Primitive p);                         // throws on a duplicate
  std::vector<const Primitive*> all() const;           // sorted by name
  std::vector<const Primitive*> of(Family f) const;    // one family, sorted by name
  // Runs `fill` and gives every primitive it adds family `f` (and, when
  // `f` is elementwise, keeps the traits the adder set).
  void add_family(Family f, void (*fill)(Registry&));

 private:
  std::map<std::string, std::unique_ptr<Primitive>, std::less<>> prims_;
};

// The registry of every primitive, filled on first use.
const Registry& registry();

// Adds a primitive defined outside tessera (an embedding program,
// docs/embedding.md), with the family and traits the caller sets. Call it at
// start-up, before the first parse, pass or run and from one thread: rule
// tables that give a whole family its rules (vmap's pointwise rule, jvp's
// rule from `tangent`) are filled on first use and see only the primitives
// registered by then. Throws Error on a duplicate name or a missing shape rule.
const Primitive& register_primitive(Primitive p);
inline const Primitive& prim(std::string_view name) { return registry().get(name); }

// Primitive families register themselves through these (ir/prims/*.cpp).
void register_elementwise(Registry& r);
void register_structural(Registry& r);
void register_reductions(Registry& r);
void register_state(Registry& r);
void register_pallas(Registry& r);
void register_control_flow(Registry& r);
void register_pallas_call(Registry& r);

}  // namespace tessera

#include "ir/rule_table.h"  // RuleTable: needs the declarations above
