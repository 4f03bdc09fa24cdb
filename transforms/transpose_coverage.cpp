// Why a primitive has no transpose rule, as code, so the walk's error says why and a test keeps the list complete (a
// new primitive must get a rule or a reason here).
#include "transforms/transpose.h"

namespace tessera::transpose {

NoRule why_no_rule(const Primitive& p) {
  const std::string& n = p.name;
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* s : names)
      if (n == s) return true;
    return false;
  };
  if (p.family == Family::elementwise) {
    if (p.to_bool || p.accepts == DTypeClass::int_or_bool || p.accepts == DTypeClass::integer)
      return {NoRule::not_float, "its results are integers or bools"};
    return {NoRule::not_linear, "a non-linear function: jvp applies it to primal values only"};
  }
  if (is({"reduce_max", "reduce_min", "reduce_prod"}))
    return {NoRule::not_linear, "a non-linear function: jvp applies it to primal values only"};
  if (is({"argmax", "argmin", "reduce_and", "reduce_or", "iota"})) return {NoRule::not_float, "its results are integers or bools"};
  if (n == "bitcast_convert_type") return {NoRule::not_linear, "it reinterprets bits, which is not a linear function"};
  if (is({"program_id", "num_programs", "axis_index", "axis_size", "device_id", "multiple_of", "semaphore_read", "get_barrier_semaphore",
          "prng_random_bits"}))
    return {NoRule::not_float, "it gives integer indices, semaphore counts or random bits, never linear values"};
  if (is({"debug_print", "debug_check", "delay", "prng_seed", "semaphore_signal", "semaphore_wait"}))
    return {NoRule::effect_only, "it acts on non-linear values only and is copied into the forward part"};
  if (n == "custom_vjp_call")
    return {NoRule::not_linear, "jvp inlines its `fwd` for the primal and a custom_lin (transposed by `bwd`) for the "
                                "tangents; the op itself computes primal values only"};
  if (n == "custom_jvp_call")
    return {NoRule::not_linear, "jvp inlines the user's rule for the tangents; the op itself computes primal values only"};
  if (n == "core_map")
    return {NoRule::unsupported,
            "its cores communicate through Refs and semaphores; a transpose needs the communication schedule reversed: "
            "not implemented"};
  return {NoRule::unsupported, "no transpose rule yet"};
}

}  // namespace tessera::transpose
