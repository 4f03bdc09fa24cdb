#include "ir/clone.h"

namespace tessera {

void copy_op(const Op& op, Body& dst, ValueMap& map) {
  Op copy;
  copy.prim = op.prim;
  copy.params = op.params;
  copy.indexers = op.indexers;
  copy.loc = op.loc;
  copy.operands.reserve(op.operands.size());
  for (const Value& v : op.operands) copy.operands.push_back(remap(v, map));
  for (Var* r : op.results) {
    Var* nr = dst.new_var(r->type, r->name, r->loc);
    copy.results.push_back(nr);
    map[r] = nr;
  }
  dst.ops().push_back(std::move(copy));
}

std::vector<Value> inline_body(const Body& src, Body& dst, ValueMap& map) {
  for (const Op& op : src.ops()) copy_op(op, dst, map);
  std::vector<Value> outs;
  for (const Value& v : src.outputs()) outs.push_back(remap(v, map));
  return outs;
}

BodyPtr clone_body(const Body& src, std::string new_name) {
  BodyPtr b = make_body(std::move(new_name), src.kind());
  b->set_loc(src.loc());
  ValueMap map;
  for (Var* p : src.params()) map[p] = b->add_param(p->type, p->name, p->loc);
  b->set_outputs(inline_body(src, *b, map));
  return b;
}

}  // namespace tessera
