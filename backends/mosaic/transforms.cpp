#include "backends/mosaic/transforms.h"

#include "backends/mosaic/constants.h"
#include "backends/mosaic/kernel_context.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/rules.h"

namespace tessera::backends::mosaic {
namespace {

// A scalar read of a prefetched SMEM array: `arith.index_cast` of each index, `memref.load`.
void lower_smem_get(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  const Value& r = op.main_operand(0);
  RefView view = ctx.ref_view(r.var());
  std::vector<DimIndex> idx = memref_indices(op, view, op.indexer_for(op.main_operand_index(0)));
  if (view.space != MemSpace::smem || !value_shape(idx).empty())
    throw ctx.error(op, "an index map reads scalars of its scalar-prefetch (SMEM) operands only");
  std::vector<std::string> starts = index_starts(ctx, idx);
  ctx.line(ctx.def(op.results[0]) + " = memref.load " + ctx.use(r) + "[" + join(starts) + "] : " + view.memref_type());
}

LowerRule scalar_op(std::string mlir_op) {
  return [mlir_op](EmitContext& ctx, const Op& op, const LoweringTable&) {
    const Type& t = op.results[0]->type;
    if (t.rank() != 0 || !is_int(t.dtype())) throw ctx.error(op, "index maps compute on integer scalars, got " + t.str());
    std::string a = ctx.use(op.operands[0]), b = ctx.use(op.operands[1]);
    ctx.line(ctx.def(op.results[0]) + " = " + mlir_op + " " + a + ", " + b + " : " + element_type(t.dtype()));
  };
}

void lower_multiple_of(EmitContext& ctx, const Op& op, const LoweringTable&) {
  ctx.alias(op.results[0], ctx.use(op.operands[0]));  // a hint: the value itself
}

}  // namespace

const LoweringTable& index_map_rules() {
  static const LoweringTable table = [] {
    LoweringTable t("mosaic");
    t.set_where("in an index map");
    t.set("get", lower_smem_get);
    // lax.div and lax.rem round toward zero, as arith.divsi / arith.remsi do.
    for (auto [name, mlir] : {std::pair{"add", "arith.addi"}, {"sub", "arith.subi"}, {"mul", "arith.muli"},
                              {"div", "arith.divsi"}, {"rem", "arith.remsi"}, {"max", "arith.maxsi"}, {"min", "arith.minsi"}})
      t.set(name, scalar_op(mlir));
    t.set("multiple_of", lower_multiple_of);
    return t;
  }();
  return table;
}

std::string transform_function(const GridMapping& g, int m) {
  KernelContext ctx;
  ctx.literal = scalar_constant;
  std::vector<std::string> args;
  int k = 0;
  const BlockSpec& spec = g.spec(m);
  std::vector<Var*> params = spec.index_map ? spec.index_map->params() : std::vector<Var*>{};
  for (int a = 0; a < g.grid_rank(); ++a, ++k) {
    std::string name = ctx.fresh("arg" + std::to_string(k));
    if (a < static_cast<int>(params.size())) ctx.alias(params[a], name);
    args.push_back(name + ": i32");
  }
  for (int j = 0; j < g.num_scalar_prefetch(); ++j, ++k) {
    std::string name = ctx.fresh("arg" + std::to_string(k));
    RefView view = RefView::of(Type::ref(g.scalar_prefetch_types[j].array_type(), MemSpace::smem));
    size_t p = static_cast<size_t>(g.grid_rank() + j);
    if (p < params.size()) {
      ctx.alias(params[p], name);
      ctx.set_ref_view(params[p], view);
    }
    args.push_back(name + ": " + view.memref_type());
  }
  int arity = g.array(m).rank();
  std::string results;
  for (int d = 0; d < arity; ++d) results += d ? ", i32" : "i32";
  std::string text = "  func.func @transform_" + std::to_string(m) + "(" + join(args) + ") -> (" + results + ") {\n";
  std::vector<std::string> outs;
  {
    auto body = ctx.indented(2);
    if (spec.index_map) {
      lower_body(ctx, *spec.index_map, index_map_rules());
      for (const Value& v : spec.index_map->outputs()) outs.push_back(ctx.use(v));
    } else {
      for (int d = 0; d < arity; ++d) outs.push_back(i32_constant(ctx, 0));
    }
    ctx.line("return " + join(outs) + " : " + results);
  }
  return text + ctx.take_text() + "  }\n";
}

}  // namespace tessera::backends::mosaic
