#include "ir/clone.h"

namespace tessera {

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
