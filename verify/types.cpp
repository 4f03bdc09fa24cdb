// Types: an op's params must match its primitive's schema, and re-running the
// shape rule must give exactly the op's result types. Passes build ops through
// the Builder, but may then edit them; this catches edits that broke typing.
// Also the signatures every kernel and index-map body must have.
#include <algorithm>

#include "ir/builder.h"
#include "ir/primitive.h"
#include "verify/check.h"

namespace tessera::verify_detail {
namespace {

bool allowed_word(const ParamSpec& spec, const std::string& w) {
  return spec.choices.empty() || std::find(spec.choices.begin(), spec.choices.end(), w) != spec.choices.end();
}

// One schema entry against the value the op holds (null if absent).
bool check_param(const Op& op, const ParamSpec& spec, const Param* value, Diags& out) {
  const std::string where = "parameter '" + spec.name + "' of " + op.name();
  if (!value) {
    // The Builder stores every schema entry; a missing one means a hand-edited op.
    report(out, op.loc, op.name() + " lacks parameter '" + spec.name + "' (ops hold every parameter of their schema)");
    return false;
  }
  if (std::holds_alternative<std::monostate>(*value)) {
    if (spec.required) { report(out, op.loc, op.name() + " needs parameter '" + spec.name + "'"); return false; }
    return true;
  }
  if (!holds_kind(*value, spec.kind)) { report(out, op.loc, where + " has the wrong kind of value"); return false; }
  if (auto* w = std::get_if<std::string>(value); w && spec.kind == ParamKind::Ident && !allowed_word(spec, *w)) {
    report(out, op.loc, where + " is '" + *w + "', which is not an allowed word");
    return false;
  }
  if (auto* ws = std::get_if<std::vector<std::string>>(value))
    for (const std::string& w : *ws)
      if (!allowed_word(spec, w)) { report(out, op.loc, where + " contains '" + w + "', which is not an allowed word"); return false; }
  // Shape rules dereference body params: a null one would crash them.
  if (auto* b = std::get_if<BodyPtr>(value); b && !*b) { report(out, op.loc, where + " holds no body"); return false; }
  if (auto* bs = std::get_if<std::vector<BodyPtr>>(value))
    for (const BodyPtr& b : *bs)
      if (!b) { report(out, op.loc, where + " holds a missing body"); return false; }
  return true;
}

bool check_params(const Op& op, Diags& out) {
  bool ok = true;
  for (const NamedParam& given : op.params)
    if (!op.prim->find_param(given.name)) {
      report(out, op.loc, "unknown parameter '" + given.name + "' for primitive " + op.name());
      ok = false;
    }
  for (const ParamSpec& spec : op.prim->params) {
    const Param* value = nullptr;
    for (const NamedParam& given : op.params)
      if (given.name == spec.name) { value = &given.value; break; }
    ok &= check_param(op, spec, value, out);
  }
  return ok;
}

}  // namespace

bool check_op_types(const Op& op, Diags& out) {
  if (!check_params(op, out)) return false;
  for (const Var* r : op.results)
    if (!r) return false;  // reported by the SSA check
  std::vector<Type> want;
  try {
    want = infer_result_types(op);
  } catch (const Error& e) {
    report(out, e.loc().known() ? e.loc() : op.loc, e.message());
    return false;
  } catch (const std::exception& e) {
    report(out, op.loc, op.name() + ": its shape rule failed: " + e.what());
    return false;
  }
  if (want.size() != op.results.size()) {
    report(out, op.loc, op.name() + " gives " + std::to_string(want.size()) + " result(s), but the op has " +
                            std::to_string(op.results.size()));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < want.size(); ++i) {
    if (op.results[i]->type == want[i]) continue;
    report(out, op.loc, "result " + var_label(op.results[i]) + " of " + op.name() + " has type " +
                            op.results[i]->type.str() + ", but its shape rule gives " + want[i].str());
    ok = false;
  }
  return ok;
}

void check_index_map_results(const Body& map, const std::string& what, const Loc& loc, Diags& out) {
  const auto& outs = map.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    Type t = outs[i].type();
    if (t.is_scalar() && is_int(t.dtype())) continue;
    report(out, loc, what + " returns " + t.str() + " at position " + std::to_string(i) +
                         "; index maps must return integer scalars");
  }
}

void check_body_signature(const Body& b, const Loc& fallback, Diags& out) {
  const Loc& loc = where(b, fallback);
  if (b.kind() == BodyKind::kernel && !b.outputs().empty())
    report(out, loc, body_label(b) + " returns " + std::to_string(b.outputs().size()) +
                         " value(s); a kernel returns nothing and writes its outputs through Refs");
  if (b.kind() != BodyKind::index_map) return;
  // *program_ids (i32 scalars), then *scalar_prefetch (Refs).
  bool seen_ref = false;
  for (const Var* p : b.params()) {
    if (!p) continue;
    bool program_id = p->type == Type::scalar(DType::i32);
    if (p->type.is_ref()) seen_ref = true;
    else if (!program_id || seen_ref)
      report(out, loc, "parameter " + var_label(p) + " of " + body_label(b) + " is " + p->type.str() +
                           "; an index map takes i32 program ids, then scalar-prefetch Refs");
  }
  check_index_map_results(b, body_label(b), loc, out);
}

}  // namespace tessera::verify_detail
