// Why a primitive has no transpose rule, stated in the table, so the walk's
// error says why and the sweep of every table (tests/ir/test_rule_tables.cpp)
// makes a new primitive get a rule or a reason here.
#include "transforms/transpose.h"

namespace tessera::transpose {
namespace {

constexpr const char* kNonLinear = "a non-linear function: jvp applies it to primal values only";
constexpr const char* kIntegers = "its results are integers or bools";

bool integer_valued(const Primitive& p) {
  return p.to_bool || p.accepts == DTypeClass::int_or_bool || p.accepts == DTypeClass::integer;
}

}  // namespace

// Runs after every rule is set: the elementwise reasons cover the members of
// the family that have none.
void add_reasons(RuleTable<RuleSet>& t) {
  auto without_rule = [&t](bool integers) {
    return [&t, integers](const Primitive& p) { return !t.has_rule(p) && integer_valued(p) == integers; };
  };
  t.no_rule_needed_family(Family::elementwise, kIntegers, without_rule(true));
  t.no_rule_needed_family(Family::elementwise, kNonLinear, without_rule(false));
  for (const char* n : {"reduce_max", "reduce_min", "reduce_prod"}) t.no_rule_needed(n, kNonLinear);
  for (const char* n : {"argmax", "argmin", "reduce_and", "reduce_or", "iota"}) t.no_rule_needed(n, kIntegers);
  t.no_rule_needed("bitcast_convert_type", "it reinterprets bits, which is not a linear function");
  for (const char* n : {"program_id", "num_programs", "axis_index", "axis_size", "device_id", "multiple_of",
                        "semaphore_read", "get_barrier_semaphore", "prng_random_bits"})
    t.no_rule_needed(n, "it gives integer indices, semaphore counts or random bits, never linear values");
  for (const char* n : {"debug_print", "debug_check", "delay", "prng_seed", "semaphore_signal", "semaphore_wait"})
    t.no_rule_needed(n, "it acts on non-linear values only and is copied into the forward part");
  t.no_rule_needed("custom_vjp_call", "jvp inlines its `fwd` for the primal and a custom_lin (transposed by `bwd`) for the "
                                      "tangents; the op itself computes primal values only");
  t.no_rule_needed("custom_jvp_call",
                   "jvp inlines the user's rule for the tangents; the op itself computes primal values only");
  t.unsupported("core_map",
                "its cores communicate through Refs and semaphores; a transpose needs the communication schedule "
                "reversed: not implemented");
}

NoRule why_no_rule(const Primitive& p) {
  const RuleTable<RuleSet>& t = rules();
  std::string why = t.reason(p);
  if (why.empty()) return {NoRule::unsupported, "no transpose rule yet"};
  return {t.coverage(p) == RuleCoverage::no_rule_needed ? NoRule::not_linear : NoRule::unsupported, why};
}

}  // namespace tessera::transpose
