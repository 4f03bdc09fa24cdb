#include "ir/control_views.h"

#include <range/v3/view/concat.hpp>
#include <range/v3/view/zip.hpp>

namespace tessera {
namespace {

template <class T>
LoopParts<T> split(std::span<const T> all, int consts, int carries) {
  return {all.first(consts), all.subspan(consts, carries), all.subspan(consts + carries)};
}

int count(const Op& op, const char* what, int64_t v, size_t available) {
  if (v < 0 || static_cast<size_t>(v) > available)
    throw Error(op.loc, op.name() + ": " + what + " = " + std::to_string(v) + " does not fit its " +
                            std::to_string(available) + " operands");
  return static_cast<int>(v);
}

const Body& body_of(const Op& op, const char* key, size_t min_params) {
  const BodyPtr& b = op.body_param(key);
  if (!b || b->params().size() < min_params)
    throw Error(op.loc, op.name() + ": its " + key + " takes fewer parameters than the operands it is given");
  return *b;
}

// `head`, then every vector of `parts` in order: an operand list by role.
std::vector<Value> joined(std::vector<Value> head, std::initializer_list<const std::vector<Value>*> parts) {
  for (const std::vector<Value>* p : parts) head.insert(head.end(), p->begin(), p->end());
  return head;
}

int64_t size_of(const std::vector<Value>& v) { return static_cast<int64_t>(v.size()); }

}  // namespace

ForView::ForView(const Op& viewed) : op(viewed) {
  if (op.operands.size() < 2) throw Error(op.loc, "for: expects %lo and %hi");
  size_t rest = op.operands.size() - 2;
  num_consts = count(op, "num_consts", op.int_param("num_consts"), rest);
  num_carries = static_cast<int>(rest) - num_consts;
  body_ = &body_of(op, "body", rest + 1);
}

std::vector<Value> ForView::make(Builder& b, Value lo, Value hi, std::vector<Value> consts, std::vector<Value> carries,
                                 BodyPtr body) {
  return b.emit("for", joined({lo, hi}, {&consts, &carries}),
                {{"body", std::move(body)}, {"num_consts", size_of(consts)}});
}

LoopParts<Value> ForView::operands() const {
  return split(std::span<const Value>(op.operands).subspan(first_const), num_consts, num_carries);
}

LoopParts<Var*> ForView::params() const { return split(std::span<Var* const>(body_->params()).subspan(1), num_consts, num_carries); }

WhileView::WhileView(const Op& viewed) : op(viewed) {
  num_consts = count(op, "num_consts", op.int_param("num_consts"), op.operands.size());
  num_carries = static_cast<int>(op.operands.size()) - num_consts;
  cond_ = &body_of(op, "cond", op.operands.size());
  body_ = &body_of(op, "body", op.operands.size());
}

std::vector<Value> WhileView::make(Builder& b, std::vector<Value> consts, std::vector<Value> carries, BodyPtr cond,
                                   BodyPtr body) {
  return b.emit("while", joined({}, {&consts, &carries}),
                {{"cond", std::move(cond)}, {"body", std::move(body)}, {"num_consts", size_of(consts)}});
}

LoopParts<Value> WhileView::operands() const { return split(std::span<const Value>(op.operands), num_consts, num_carries); }
LoopParts<Var*> WhileView::body_params() const { return split(std::span<Var* const>(body_->params()), num_consts, num_carries); }
LoopParts<Var*> WhileView::cond_params() const { return split(std::span<Var* const>(cond_->params()), num_consts, num_carries); }

ScanView::ScanView(const Op& viewed) : op(viewed) {
  length = op.int_param("length");
  num_consts = count(op, "num_consts", op.int_param("num_consts"), op.operands.size());
  num_carries = count(op, "num_carry", op.int_param("num_carry"), op.operands.size() - num_consts);
  num_xs = static_cast<int>(op.operands.size()) - num_consts - num_carries;
  reverse = op.bool_param("reverse");
  body_ = &body_of(op, "body", op.operands.size());
  if (body_->outputs().size() < static_cast<size_t>(num_carries))
    throw Error(op.loc, "scan: its body returns fewer values than there are carries");
}

std::vector<Value> ScanView::make(Builder& b, int64_t length, std::vector<Value> consts, std::vector<Value> carries,
                                  std::vector<Value> xs, BodyPtr body, bool reverse) {
  return b.emit("scan", joined({}, {&consts, &carries, &xs}),
                {{"body", std::move(body)},
                 {"length", length},
                 {"num_consts", size_of(consts)},
                 {"num_carry", size_of(carries)},
                 {"reverse", reverse}});
}

LoopParts<Value> ScanView::operands() const { return split(std::span<const Value>(op.operands), num_consts, num_carries); }
LoopParts<Var*> ScanView::params() const { return split(std::span<Var* const>(body_->params()), num_consts, num_carries); }

CondView::CondView(const Op& viewed) : op(viewed), branches_(&op.bodies_param("branches")) {
  if (op.operands.empty()) throw Error(op.loc, "cond: needs an index operand");
  for (const BodyPtr& b : *branches_)
    if (!b || b->params().size() != op.operands.size() - 1)
      throw Error(op.loc, "cond: a branch takes other parameters than the operands it is given");
}

std::vector<Value> CondView::make(Builder& b, Value index, std::vector<Value> args, std::vector<BodyPtr> branches) {
  return b.emit("cond", joined({index}, {&args}), {{"branches", std::move(branches)}});
}

std::vector<Value> RunScopedView::make(Builder& b, std::vector<Value> args, BodyPtr body) {
  return b.emit("run_scoped", std::move(args), {{"body", std::move(body)}});
}

RunScopedView::RunScopedView(const Op& viewed) : op(viewed), body_(&body_of(op, "body", op.operands.size())) {}

namespace {

template <class Params, class Operands>
void pair_up(std::vector<ForwardedOperand>& out, const Params& params, const Operands& operands) {
  for (auto&& [p, v] : ranges::views::zip(params, operands)) out.push_back({p, v});
}

template <class Params>
void pair_loop(std::vector<ForwardedOperand>& out, const Params& ps, const LoopParts<Value>& vs) {
  pair_up(out, ranges::views::concat(ps.consts, ps.carries), ranges::views::concat(vs.consts, vs.carries));
}

}  // namespace

std::vector<ForwardedOperand> forwarded_operands(const Op& op, const Body& nested) {
  std::vector<ForwardedOperand> out;
  const std::string& n = op.name();
  if (n == "for") {
    ForView v(op);
    pair_loop(out, v.params(), v.operands());
  } else if (n == "while") {
    WhileView v(op);
    pair_loop(out, &nested == &v.cond() ? v.cond_params() : v.body_params(), v.operands());
  } else if (n == "scan") {
    ScanView v(op);
    pair_loop(out, v.params(), v.operands());
  } else if (n == "cond") {
    pair_up(out, nested.params(), CondView(op).args());
  } else if (n == "run_scoped") {
    RunScopedView v(op);
    pair_up(out, v.arg_params(), v.args());
  } else if (n == "custom_jvp_call" || n == "custom_vjp_call") {
    // `call` and `fwd` take the operands; `jvp` takes them, then their tangents.
    pair_up(out, nested.params(), op.operands);
  } else if (n == "custom_lin") {
    // `bwd` takes the residuals (then cotangents, which are not operands).
    pair_up(out, nested.params(), std::span(op.operands).first(static_cast<size_t>(op.int_param("num_res"))));
  } else if (n == "call" || n == "core_map") {
    if (nested.params().size() != op.operands.size())
      throw Error(op.loc, n + ": its body takes other parameters than the operands it is given");
    pair_up(out, nested.params(), op.operands);
  }
  return out;
}

}  // namespace tessera
