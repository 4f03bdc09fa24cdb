// Internal interface shared by the verifier's checks (not public API).
//
// verify.cpp walks the module; each other file checks one concern:
//   ssa.cpp            values defined once, before use, in the same body
//   types.cpp          params against the schema, results through shape rules,
//                      the signatures of kernel and index-map bodies
//   effects.cpp        effects computable; index maps and while conds pure
//   pallas_call.cpp    the grid-mapping calling conventions
//   memory_spaces.cpp  where Refs live and which ops may touch them
//   maps.cpp           pmap / core_map: axis names, remote devices, program ids
//   sparse_core.cpp    SparseCore kernels (kernel_type=sc_*): what Mosaic SC rejects
#pragma once

#include <string>
#include <vector>

#include "ir/primitive.h"
#include "verify/verify.h"

namespace tessera::verify_detail {

using Diags = std::vector<Diagnostic>;

inline void report(Diags& out, const Loc& loc, std::string message) {
  out.push_back(Diagnostic{loc, std::move(message)});
}

// What the ops around a body provide. Bodies are checked once per distinct
// context they are used in, because e.g. an axis name is only valid under
// the pmap that binds it.
struct Context {
  bool known = true;         // false: an unreferenced symbol; its users are unknown
  bool in_kernel = false;    // inside a pallas_call kernel / index map or a core_map body
  bool in_index_map = false; // inside an index map (it gets the program ids as parameters)
  bool distributed = false;  // inside a pmap or core_map: device ids are meaningful
  int grid_rank = -1;        // rank of the enclosing pallas_call's grid, -1 if none
  std::vector<std::string> axis_names;  // named axes bound by enclosing ops
  std::vector<std::string> grid_names;  // the enclosing pallas_call's grid_names (bound in its kernel only)
  Loc fallback;              // where to report on a body that has no location

  std::string key() const;   // identifies the context for memoization (not `fallback`)
};

// ---- labels for messages -------------------------------------------------------
std::string var_label(const Var* v);   // "%x", or "a value of type f32[8]" if unnamed
std::string body_label(const Body& b); // "kernel @k", "index map @ij", "inline fn"
std::string types_str(const std::vector<Type>& ts);  // "(f32[8], i32)"
std::string block_dims_str(const std::vector<BlockDim>& dims);  // "(128, squeezed)"
// The body's own location, or `fallback` when it was built without one.
inline const Loc& where(const Body& b, const Loc& fallback) { return b.loc().known() ? b.loc() : fallback; }

// ---- checks ----------------------------------------------------------------------
// ssa.cpp: every operand and output defined in `b` before use, each Var once.
void check_ssa(const Body& b, const Loc& fallback, Diags& out);

// types.cpp: params against the primitive's schema, then the shape rule's
// result types against the op's. False when the op is ill-typed (later checks
// that decode its params must then be skipped).
bool check_op_types(const Op& op, Diags& out);
// types.cpp: kernels return nothing; index maps take i32 program ids then
// scalar-prefetch Refs and return integer scalars.
void check_body_signature(const Body& b, const Loc& fallback, Diags& out);
// Outputs of an index map that are not integer scalars, one message each.
void check_index_map_results(const Body& map, const std::string& what, const Loc& loc, Diags& out);

// effects.cpp: effects of `b` computable (call only on well-typed bodies) and,
// for an index_map body, pure.
void check_body_effects(const Body& b, const Loc& fallback, Diags& out);
// Reports at `loc` when `b` has effects other than reads: used for index maps
// (`what` = "index map @m of input x") and while conds.
void check_read_only(const Body& b, const std::string& what, const std::string& why, const Loc& loc, Diags& out);
// effects.cpp: role-specific effect rules of higher-order ops (while cond).
void check_op_effects(const Op& op, Diags& out);

// pallas_call.cpp: the calling conventions of a well-typed pallas_call.
// `nested_ok`: its kernel and index maps are well-typed (so effects are computable).
void check_pallas_call(const Op& op, bool nested_ok, Diags& out);

// sparse_core.cpp: the SparseCore restrictions of a pallas_call / core_map
// with kernel_type sc_scalar_subcore or sc_vector_subcore (nothing for tc).
// Call only on a well-typed op whose nested bodies are well-typed.
void check_sparse_core(const Op& op, Diags& out);

// memory_spaces.cpp: semaphores in `semaphore` space, scoped allocations are
// Refs; nowhere (kernel or function) loads/stores on `any`/`hbm` Refs.
void check_memory_spaces(const Op& op, Diags& out);
void check_memory_access(const Op& op, Diags& out);
// The message for a scratch / scoped allocation type, or "" when it is fine.
std::string allocation_problem(const Type& t);

// maps.cpp: what a control or Pallas primitive needs from the ops around
// it. Every primitive of those families has an entry: its checks, or
// `not_checked` saying why it needs none (a coverage test lists them).
struct ContextRule {
  void (*params)(const Op&, Diags&) = nullptr;                       // static checks of its params
  void (*in_context)(const Op&, const Context&, Diags&) = nullptr;   // needs the enclosing ops
  void (*enter)(const Op&, const Body& nested, Context&) = nullptr;  // what it binds for its bodies
  const char* not_checked = nullptr;                                 // context-free: why
};
const RuleTable<ContextRule>& context_rules();

// maps.cpp: static checks of pmap / core_map params.
void check_map_params(const Op& op, Diags& out);
// maps.cpp: checks that depend on the enclosing ops (axis names, remote ops,
// program ids). Call only when ctx.known.
void check_in_context(const Op& op, const Context& ctx, Diags& out);
// maps.cpp: the context `nested`, a nested body of `op`, is checked in.
Context nested_context(const Op& op, const Body& nested, const Context& outer);

}  // namespace tessera::verify_detail
