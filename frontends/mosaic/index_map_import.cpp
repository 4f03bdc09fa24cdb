// transform_i funcs -> tessera index_map bodies, through the same body walk
// as kernels (a `memref.load` of a scalar prefetch Ref becomes a `get`).
#include "frontends/mosaic/body_translator.h"
#include "frontends/mosaic/import_rules.h"
#include "frontends/mosaic/signature_import.h"

namespace tessera::mlir_text {

BodyPtr import_index_map(const Func& transform, const KernelSignature& sig, const std::vector<Type>& prefetch,
                         const std::string& name) {
  const size_t n_grid = sig.grid.size();
  if (transform.args.size() != n_grid + prefetch.size())
    throw Error(transform.loc, "index map @" + transform.name + " takes " + std::to_string(transform.args.size()) +
                                   " arguments; the kernel has " + std::to_string(n_grid) + " grid axes and " +
                                   std::to_string(prefetch.size()) + " scalar prefetch operands");
  if (transform.body.blocks.size() != 1)
    throw Error(transform.loc, "index map @" + transform.name + " must have one block");
  BodyPtr body = make_body(name, BodyKind::index_map);
  body->set_loc(transform.loc);
  BodyTranslator t(*body);
  for (size_t a = 0; a < transform.args.size(); ++a) {
    const BlockArg& arg = transform.args[a];
    t.builder().set_loc(arg.loc);
    if (a < n_grid) {
      if (arg.type.element != "i32") throw Error(arg.loc, "index map @" + transform.name + ": grid argument must be i32");
      t.bind(arg.name, t.builder().param(Type::scalar(DType::i32), arg.name));
    } else {
      t.bind(arg.name, RefView::whole(t.builder().param(prefetch[a - n_grid], arg.name)));
    }
  }
  const Operation* ret = t.translate_ops(transform.body.blocks[0]);
  if (!ret || ret->name != "func.return") throw Error(transform.loc, "index map @" + transform.name + " has no return");
  std::vector<Value> outs = t.values(ret->operands, *ret);
  for (const Value& v : outs)
    if (v.type() != Type::scalar(DType::i32))
      throw Error(ret->loc, "index map @" + transform.name + " must return i32 scalars, got " + v.type().str());
  body->set_outputs(std::move(outs));
  return body;
}

}  // namespace tessera::mlir_text
