// The one body walk of the rewriting passes (jvp, vmap), as Halide's
// IRMutator is the one traversal its mutators share.
//
// The walk appends a rewrite of `src` to a builder, op by op, keeping per
// source variable its new value and, where it has one, its side information
// (jvp: a tangent; vmap: a batch dimension). An op none of whose operands has
// side information is copied as it is (operands renamed; nested bodies
// shared, not walked), without consulting a rule: index arithmetic and other
// untouched code cost one copy, which keeps the passes linear and fast. Any
// other op goes to the pass's rule, which appends its rewrite and returns the
// op's new results with their side information.
//
// A pass supplies a policy:
//   using Info;                     side information of one value
//   static constexpr const char* pass;   its name, for errors
//   static constexpr size_t ops_per_op;  rough ops emitted per rewritten op (reserve)
//   static bool present(const Info&);    does it carry side information?
//   static Info absent();                 what a rule sees for an operand without any
//   Result rule(const Op&, x, info);      the rule for an op with side information
//   static const std::vector<Value>& values(const Result&);
//   static const std::vector<Info>& infos(const Result&);
//   Info adopt(const Var* result, Info);  the side information kept for a result
#pragma once

#include <vector>

#include "ir/builder.h"
#include "ir/clone.h"
#include "transforms/var_table.h"

namespace tessera {

// The rewritten outputs of a body and their side information.
template <class Info>
struct Rewritten {
  std::vector<Value> values;
  std::vector<Info> infos;
};

// Appends the rewrite of `src` to `b`, `params` and `infos` standing for its
// parameters and theirs. Returns `src`'s outputs, rewritten.
template <class Policy, class Info = typename Policy::Info>
Rewritten<Info> rewrite_body(Policy& policy, Builder& b, const Body& src, const std::vector<Value>& params,
                             const std::vector<Info>& infos) {
  size_t vars = src.ops().size() + params.size();
  VarToValue map(vars);
  VarTable<Info> side(vars);
  Body& dst = b.body();
  dst.ops().reserve(dst.ops().size() + Policy::ops_per_op * src.ops().size());  // once, not regrowing a long body
  for (size_t i = 0; i < src.params().size(); ++i) {
    map[src.params()[i]] = params[i];
    if (Policy::present(infos[i])) side[src.params()[i]] = infos[i];
  }
  auto info_of = [&](const Value& v) {
    const Info* f = v.is_var() ? side.find(v.var()) : nullptr;
    return f ? *f : Policy::absent();
  };
  std::vector<Value> x;
  std::vector<Info> dx;
  for (const Op& op : src.ops()) {
    bool touched = false;
    if (side.size() != 0)
      for (const Value& v : op.operands) touched |= v.is_var() && side.contains(v.var());
    if (!touched) {
      copy_op(op, dst, map);
      continue;
    }
    x.clear();
    dx.clear();
    for (const Value& v : op.operands) {
      x.push_back(remap(v, map));
      dx.push_back(info_of(v));
    }
    b.set_loc(op.loc);
    auto r = policy.rule(op, x, dx);
    const std::vector<Value>& values = Policy::values(r);
    const std::vector<Info>& rinfos = Policy::infos(r);
    if (values.size() != op.results.size() || rinfos.size() != op.results.size())
      throw Error(op.loc, std::string(Policy::pass) + " rule of " + op.name() + " returned the wrong number of results");
    for (size_t k = 0; k < values.size(); ++k) {
      const Var* res = op.results[k];
      map[res] = values[k];
      // A new value without a name takes the source's, for readable output.
      if (Value v = values[k]; v.is_var() && v.var()->name.empty()) v.var()->name = res->name;
      if (Info i = policy.adopt(res, rinfos[k]); Policy::present(i)) side[res] = std::move(i);
    }
  }
  Rewritten<Info> out;
  for (const Value& v : src.outputs()) {
    out.values.push_back(remap(v, map));
    out.infos.push_back(info_of(v));
  }
  return out;
}

}  // namespace tessera
