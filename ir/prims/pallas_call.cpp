// pallas_call: a kernel run over a grid, its operands cut into blocks.
//
// The shape rule checks what result types depend on; the verifier
// (verify/pallas_call.cpp) checks the full calling conventions.
#include "ir/grid_mapping.h"
#include "ir/prims/shape_util.h"

namespace tessera {
using namespace prims;
namespace {

std::vector<Type> pallas_call(const Op& op) {
  const auto& grid = op.ints_param("grid");
  int64_t dynamic = 0;
  for (int64_t d : grid) dynamic += d < 0;
  int64_t nsp = op.int_param("num_scalar_prefetch");
  const auto& in_specs = op.specs_param("in_specs");
  const auto& out_specs = op.specs_param("out_specs");
  const auto& out_shapes = op.types_param("out_shapes");
  int64_t want = dynamic + nsp + static_cast<int64_t>(in_specs.size());
  if (nsp < 0) fail(op, "num_scalar_prefetch must be >= 0");
  if (static_cast<int64_t>(op.operands.size()) != want)
    fail(op, "expects " + std::to_string(dynamic) + " dynamic grid size(s), " + std::to_string(nsp) +
                 " scalar prefetch operand(s) and " + std::to_string(in_specs.size()) + " input(s) (one per in_spec), got " +
                 std::to_string(op.operands.size()) + " operands");
  for (int64_t i = 0; i < dynamic; ++i) expect_int_scalar(op, op.operands[i].type(), "a dynamic grid size");
  for (int64_t j = 0; j < nsp; ++j) {
    Type t = op.operands[dynamic + j].type();
    if (t.is_ref() || !is_int(t.dtype())) fail(op, "scalar prefetch operand " + std::to_string(j) + " must be an integer array, got " + t.str());
  }
  if (out_specs.size() != out_shapes.size())
    fail(op, std::to_string(out_specs.size()) + " out_specs for " + std::to_string(out_shapes.size()) + " out_shapes");
  for (const Type& t : out_shapes)
    if (t.is_ref()) fail(op, "out_shapes must be arrays, got " + t.str());
  if (!op.body_param("kernel")) fail(op, "needs a kernel");
  return out_shapes;
}

// Does `body` communicate other than by local DMAs (a dma_start without a
// device id, a dma_wait)?
bool other_comms(const Body& body) {
  for (const Op& op : body.ops()) {
    std::vector<BodyPtr> nested = op.nested_bodies();
    for (const BodyPtr& b : nested)
      if (other_comms(*b)) return true;
    if (!nested.empty() || !op_effects(op).comms) continue;
    bool local_dma = (op.name() == "dma_start" && op.num_main_operands() == 3) || op.name() == "dma_wait";
    if (!local_dma) return true;
  }
  return false;
}

// Does the kernel communicate beyond its call? Not when its only comms are
// local DMAs on semaphores it allocates (scratch, or run_scoped inside): that
// protocol starts and ends within the call, so the call orders nothing
// around it, and dce may drop it when its results are unused.
bool comms_outside(const GridMapping& g) {
  const Body& k = *g.kernel;
  int first_scratch = g.scratch_param(0);
  for (size_t p = 0; p < k.params().size(); ++p) {
    const Type& t = k.params()[p]->type;
    if (t.is_ref() && is_semaphore(t.dtype()) && static_cast<int>(p) < first_scratch) return true;
  }
  return other_comms(k);
}

void pallas_call_effects(const Op& op, OpEffects& e) {
  GridMapping g = grid_mapping(op);
  Effects fx = compute_effects(*g.kernel);
  e.io |= fx.io;
  e.comms |= fx.comms && (op.has(keys::collective_id) || comms_outside(g));
  // An input passed as a Ref (closed-over state) is read and written in place.
  for (int i = 0; i < g.num_inputs(); ++i) {
    int p = g.input_param(i);
    if (op.operands[g.input_operand(i)].type().is_ref() && p < static_cast<int>(fx.on_param.size()) && fx.on_param[p])
      e.add(g.input_operand(i), fx.on_param[p]);
  }
}

}  // namespace

void register_pallas_call(Registry& r) {
  using K = ParamKind;
  r.add({"pallas_call", "runs a kernel over a grid of blocks (see ir/grid_mapping.h for the conventions)",
         {req("kernel", K::Body), req("grid", K::Dims), opt("grid_names", K::Idents, std::vector<std::string>{}),
          req("in_specs", K::Specs), req("out_specs", K::Specs), req("out_shapes", K::Types),
          opt("num_scalar_prefetch", K::Int, int64_t{0}), opt("scratch", K::Types, std::vector<Type>{}),
          opt("input_output_aliases", K::IntPairs, IntPairs{}), opt("vmapped_dims", K::Ints, std::vector<int64_t>{}),
          ParamSpec{"dimension_semantics", K::Idents, false, std::vector<std::string>{},
                    {"parallel", "arbitrary", "core_parallel", "subcore_parallel"}},
          opt("collective_id", K::Int), choice("kernel_type", {"tc", "sc_scalar_subcore", "sc_vector_subcore"}, "tc"),
          opt("cost_estimate", K::Ints, std::vector<int64_t>{}), opt("name", K::Str, std::string())},
         pallas_call, pallas_call_effects, false});
}

}  // namespace tessera
