// Structural rules for regions: scf.if -> cond, scf.for -> for,
// scf.while -> while, tpu.region -> run_scoped. Each region becomes a closed
// fn body whose parameters are the values it captures (body_translator.h).
#include <algorithm>

#include "frontends/mosaic/body_translator.h"
#include "ir/control_views.h"
#include "frontends/mosaic/import_rules.h"

namespace tessera::mlir_text {
namespace {

using Captures = BodyTranslator::Captures;

std::vector<Type> result_types(const Operation& op) {
  std::vector<Type> out;
  for (const MType& t : op.result_types) {
    if (t.is_memref()) fail_at(op, "memref results of regions are not imported");
    out.push_back(import_value_type(t, op.loc));
  }
  return out;
}

const Block& single_block(const Region& r, const Operation& op) {
  if (r.blocks.size() != 1) fail_at(op, "expects regions of exactly one block");
  return r.blocks[0];
}

std::vector<Value> capture_operands(const Captures& c) { return {c.vars.begin(), c.vars.end()}; }

// Walks `block` in `child` and returns the values its terminator yields
// (none for a block without a terminator), checking their types.
std::vector<Value> walk_block(BodyTranslator& child, const Block& block, const std::vector<Type>& types,
                              const Operation& op) {
  const Operation* term = child.translate_ops(block);
  std::vector<Value> outs;
  if (term) {
    child.builder().set_loc(term->loc);
    outs = child.values(term->operands, *term);
  }
  if (outs.size() != types.size())
    fail_at(term ? *term : op, "yields " + std::to_string(outs.size()) + " values, expected " + std::to_string(types.size()));
  return outs;
}

BodyPtr new_fn(const Operation& op) {
  BodyPtr body = make_body("", BodyKind::fn);
  body->set_loc(op.loc);
  return body;
}

void bind_results(BodyTranslator& t, const Operation& op, const std::vector<Value>& results) {
  for (size_t i = 0; i < op.results.size(); ++i) t.bind(op.results[i], results.at(i));
}

// The op of `body` defining `v`, or null.
const Op* def_of(const Body& body, const Value& v) {
  if (!v.is_var()) return nullptr;
  for (auto it = body.ops().rbegin(); it != body.ops().rend(); ++it)
    if (std::find(it->results.begin(), it->results.end(), v.var()) != it->results.end()) return &*it;
  return nullptr;
}

// `p` for a predicate `ne(convert_element_type(p: bool), 0)`: how the
// emitter writes a bool `cond` (`arith.extui` + `arith.cmpi ne`), so that
// importing emitted text gives the `cond` back instead of growing the test.
Value plain_predicate(const Body& body, Value pred) {
  const Op* ne = def_of(body, pred);
  if (!ne || ne->name() != "ne" || ne->operands.size() != 2 || !ne->operands[1].is_literal() ||
      ne->operands[1].literal().as_int() != 0)
    return pred;
  const Op* ext = def_of(body, ne->operands[0]);
  if (!ext || ext->name() != "convert_element_type" || ext->operands.size() != 1 ||
      ext->operands[0].type() != Type::scalar(DType::i1))
    return pred;
  return ext->operands[0];
}

// `scf.if %c {then} else {else}` -> `cond[branches=[else, then]] %c, captures...`.
void scf_if(BodyTranslator& t, const Operation& op) {
  if (op.operands.size() != 1 || op.regions.empty() || op.regions.size() > 2) fail_at(op, "expects a condition and two regions");
  const Value pred = plain_predicate(t.body(), t.value(op.operands[0], op));
  if (pred.type() != Type::scalar(DType::i1)) fail_at(op, "expects an i1 condition, got " + pred.type().str());
  const std::vector<Type> types = result_types(op);
  std::vector<const Region*> regions;
  for (const Region& r : op.regions) regions.push_back(&r);
  const Captures c = t.capture(regions);
  auto branch = [&](const Region* r) {
    BodyPtr body = new_fn(op);
    BodyTranslator child(*body);
    t.bind_captures(child, c);
    std::vector<Value> outs;
    if (r && !r->blocks.empty()) outs = walk_block(child, single_block(*r, op), types, op);
    else if (!types.empty()) fail_at(op, "an `scf.if` with results needs an else region");
    body->set_outputs(outs);
    return body;
  };
  std::vector<BodyPtr> branches{branch(op.regions.size() > 1 ? &op.regions[1] : nullptr), branch(&op.regions[0])};
  t.builder().set_loc(op.loc);
  bind_results(t, op, CondView::make(t.builder(), pred, capture_operands(c), branches));
}

// `scf.for %i = %lo to %hi step %s iter_args(...)` -> `for`. tessera's loop
// steps by 1: a static step s > 1 loops k over the trip count
// ceil((hi - lo) / s) and computes i = lo + k * s in the body.
void scf_for(BodyTranslator& t, const Operation& op) {
  if (op.operands.size() < 3 || op.regions.size() != 1) fail_at(op, "expects bounds, a step and one region");
  Builder& b = t.builder();
  Value lo = t.value(op.operands[0], op), hi = t.value(op.operands[1], op), step = t.value(op.operands[2], op);
  if (!step.is_literal()) fail_at(op, "loops with a dynamic step are not imported");
  const int64_t s = step.literal().as_int();
  if (s < 1) fail_at(op, "loops with a step below 1 are not imported");
  std::vector<Value> inits;
  for (size_t k = 3; k < op.operands.size(); ++k) inits.push_back(t.value(op.operands[k], op));
  const std::vector<Type> types = result_types(op);
  const Block& block = single_block(op.regions[0], op);
  if (block.args.size() != 1 + inits.size()) fail_at(op, "expects an induction variable and one argument per iter_arg");

  Captures c = t.capture({&op.regions[0]});
  const bool stepped = s != 1;
  // The body needs lo to compute i: make it a constant.
  if (stepped && lo.is_var() && std::find(c.vars.begin(), c.vars.end(), lo.var()) == c.vars.end())
    c.vars.push_back(lo.var());
  BodyPtr body = new_fn(op);
  BodyTranslator child(*body);
  Builder& cb = child.builder();
  cb.set_loc(op.loc);
  Var* k = cb.param(Type::scalar(lo.type().dtype()), block.args[0].name);
  t.bind_captures(child, c);  // one param per constant, in order
  for (size_t j = 0; j < inits.size(); ++j) child.bind(block.args[j + 1].name, cb.param(types.at(j), block.args[j + 1].name));
  if (stepped) {
    const auto at = std::find(c.vars.begin(), c.vars.end(), lo.var());
    const Value lo_in = lo.is_var() ? Value(body->params().at(1 + static_cast<size_t>(at - c.vars.begin()))) : lo;
    child.bind(block.args[0].name, child.add_index(lo_in, cb.binary("mul", k, cb.literal(lo.type().dtype(), static_cast<double>(s)))));
  } else {
    child.bind(block.args[0].name, k);
  }
  body->set_outputs(walk_block(child, block, types, op));

  b.set_loc(op.loc);
  Value from = lo, to = hi;
  if (stepped) {
    const DType d = lo.type().dtype();
    Value span = b.binary("sub", hi, lo);
    Value rounded = b.binary("add", span, b.literal(d, static_cast<double>(s - 1)));
    from = b.literal(d, 0);
    to = b.binary("div", rounded, b.literal(d, static_cast<double>(s)));
  }
  bind_results(t, op, ForView::make(b, from, to, capture_operands(c), inits, body));
}

// `scf.while (inits) { before: scf.condition(%c) %args } do { after: scf.yield }`
// -> `while[cond, body, num_consts]`: the before region must forward its
// arguments unchanged (what `lax.while_loop` lowers to).
void scf_while(BodyTranslator& t, const Operation& op) {
  if (op.regions.size() != 2) fail_at(op, "expects a before and an after region");
  std::vector<Value> inits = t.values(op.operands, op);
  const std::vector<Type> types = result_types(op);
  const Block& before = single_block(op.regions[0], op);
  const Block& after = single_block(op.regions[1], op);
  if (before.args.size() != inits.size() || after.args.size() != inits.size())
    fail_at(op, "expects the regions to take the loop's carries");
  const Captures c = t.capture({&op.regions[0], &op.regions[1]});
  auto make = [&](const Block& block, bool is_cond) {
    BodyPtr body = new_fn(op);
    BodyTranslator child(*body);
    t.bind_captures(child, c);
    child.builder().set_loc(op.loc);
    for (size_t j = 0; j < inits.size(); ++j) child.bind(block.args[j].name, child.builder().param(inits[j].type(), block.args[j].name));
    const Operation* term = child.translate_ops(block);
    if (!term) fail_at(op, "a region without a terminator");
    if (is_cond) {
      if (term->name != "scf.condition" || term->operands.empty()) fail_at(*term, "expects `scf.condition`");
      for (size_t j = 0; j < before.args.size(); ++j)
        if (term->operands.size() != 1 + before.args.size() || term->operands[j + 1] != before.args[j].name)
          fail_at(*term, "loops whose condition region does not forward its arguments unchanged are not imported");
      body->set_outputs({child.value(term->operands[0], *term)});
    } else {
      body->set_outputs(child.values(term->operands, *term));
    }
    return body;
  };
  BodyPtr cond = make(before, true), body = make(after, false);
  t.builder().set_loc(op.loc);
  (void)types;
  bind_results(t, op, WhileView::make(t.builder(), capture_operands(c), inits, cond, body));
}

// `tpu.region { memref.alloca / tpu.sem_alloc ...; tpu.yield }` ->
// `run_scoped[body=fn(captures..., scoped Refs...)]`.
void tpu_region(BodyTranslator& t, const Operation& op) {
  if (op.regions.size() != 1) fail_at(op, "expects one region");
  const Block& block = single_block(op.regions[0], op);
  const std::vector<Type> types = result_types(op);
  const Captures c = t.capture({&op.regions[0]});
  BodyPtr body = new_fn(op);
  BodyTranslator child(*body);
  t.bind_captures(child, c);
  for (const Operation& inner : block.ops) {
    if (inner.name != "memref.alloca" && inner.name != "tpu.sem_alloc") continue;
    if (!inner.operands.empty()) fail_at(inner, "dynamically sized allocations are not imported");
    child.builder().set_loc(inner.loc);
    Var* ref = child.builder().param(import_ref_type(inner.result_types.at(0), inner.loc), inner.results.at(0));
    child.bind(inner.results.at(0), RefView::whole(ref));
  }
  body->set_outputs(walk_block(child, block, types, op));
  t.builder().set_loc(op.loc);
  bind_results(t, op, RunScopedView::make(t.builder(), capture_operands(c), body));
}

}  // namespace

void add_control_rules(StructuralTable& t) {
  t["scf.if"] = scf_if;
  t["scf.for"] = scf_for;
  t["scf.while"] = scf_while;
  t["tpu.region"] = tpu_region;
}

}  // namespace tessera::mlir_text
