// Output blocks held in registers: see resident_output.h.
#include "backends/llvm/resident_output.h"

#include <algorithm>

#include "backends/llvm/output_coverage.h"
#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {
namespace {

// Uses of `v` in `body` and every body nested in it (operands and outputs).
int uses_in(const Body& body, const Var* v) {
  int n = static_cast<int>(std::count_if(body.outputs().begin(), body.outputs().end(),
                                         [&](const Value& x) { return x.is_var() && x.var() == v; }));
  for (const Op& op : body.ops()) {
    for (const Value& x : op.operands) n += x.is_var() && x.var() == v;
    for (const BodyPtr& nested : op.nested_bodies()) n += uses_in(*nested, v);
  }
  return n;
}

// Whether the op's indexer of main operand 0 selects the whole Ref (no
// indexer: all of it).
bool indexes_whole_ref(const Op& op) {
  int ref_operand = op.main_operand_index(0);
  const Indexer* ix = op.indexer_for(ref_operand);
  return !ix || whole_ref(*ix, op.operands[static_cast<size_t>(ref_operand)].var()->type.shape());
}

// dot_general of two [M, K] x [K, N] matrices of one dtype into f32: its
// M, N, K and operand dtype.
struct Matmul {
  int64_t M, N, K;
  DType dtype;
};
std::optional<Matmul> plain_matmul(const Op& dot) {
  if (!dot.param(keys::lhs_batch).empty() || !dot.param(keys::rhs_batch).empty()) return std::nullopt;
  if (dot.param(keys::lhs_contracting) != std::vector<int64_t>{1} || dot.param(keys::rhs_contracting) != std::vector<int64_t>{0})
    return std::nullopt;
  const Type& a = dot.operands[0].type();
  const Type& b = dot.operands[1].type();
  const Type& out = dot.results[0]->type;
  if (a.rank() != 2 || b.rank() != 2 || a.dtype() != b.dtype() || out.dtype() != DType::f32) return std::nullopt;
  return Matmul{a.shape()[0], b.shape()[1], a.shape()[1], a.dtype()};
}

// Whether output o's block index ignores every grid axis from `npar` on.
bool stays_over_sequential_axes(const GridMapping& g, int o, int npar) {
  const BlockSpec& spec = g.spec(g.num_inputs() + o);
  if (!spec.index_map) return true;
  const Body& map = *spec.index_map;
  for (int a = npar; a < g.grid_rank(); ++a)
    if (uses_in(map, map.params()[static_cast<size_t>(a)]) > 0) return false;
  return true;
}

}  // namespace

std::optional<ResidentOutput> find_resident_output(const GridMapping& g, int o, int npar, Target target, int threads,
                                                   int sm) {
  bool sequential_steps = false;
  for (int a = npar; a < g.grid_rank(); ++a) sequential_steps = sequential_steps || g.grid[static_cast<size_t>(a)] > 1;
  if (!sequential_steps || !stays_over_sequential_axes(g, o, npar)) return std::nullopt;
  const Body& kernel = *g.kernel;
  const Var* root = kernel.params()[static_cast<size_t>(g.output_param(o))];
  if (root->type.dtype() != DType::f32 || root->type.rank() != 2 || root->type.mem_space() != MemSpace::vmem)
    return std::nullopt;
  const std::vector<Op>& ops = kernel.ops();
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    const Op &dot = ops[i], &add = ops[i + 1];
    if (dot.name() != "dot_general" || !adds_into_whole_ref(add, dot.results[0])) continue;
    const Value& ref = add.main_operand(0);
    if (!ref.is_var() || ref.var() != root || uses_in(kernel, dot.results[0]) != 1) continue;
    std::optional<Matmul> mm = plain_matmul(dot);
    if (!mm || root->type.shape() != Shape{mm->M, mm->N}) continue;
    auto plan = plan_gpu_dot(mm->M, mm->N, mm->K, mm->dtype, target == Target::nvptx ? threads : 1);
    if (!plan || owned_elements(*plan) > kMaxResidentSlots) return std::nullopt;
    const TilePlan& tiles = std::visit([](const auto& p) -> const TilePlan& { return p; }, *plan);
    bool on_gpu = target == Target::nvptx && sm >= 80;
    if (std::holds_alternative<MmaPlan>(*plan) && !on_gpu) return std::nullopt;
    if (target == Target::nvptx && 2 * tiles.stage_bytes() > Lowering::shared_limit(sm)) return std::nullopt;
    ResidentOutput r;
    r.root = root;
    r.dot = &dot;
    r.tiles.plan = *plan;
    return r;
  }
  return std::nullopt;
}

bool adds_into_whole_ref(const Op& add, const Var* product) {
  if (add.name() != "addupdate") return false;
  const Value& value = add.main_operand(1);
  return value.is_var() && value.var() == product && indexes_whole_ref(add);
}

void make_slots(Lowering& L, ResidentOutput& r) {
  r.tiles.slots.clear();
  for (int64_t s = 0; s < owned_elements(r.tiles.plan); ++s)
    r.tiles.slots.push_back(local_variable(L, L.b.getFloatTy(), "resident"));
  r.tiles.prefetched = local_variable(L, L.b.getInt1Ty(), "prefetched");
}

void begin_resident(Lowering& L, const ResidentOutput& r) {
  L.b.CreateStore(L.b.getFalse(), r.tiles.prefetched);
  load_resident(L, r);
}

void load_resident(Lowering& L, const ResidentOutput& r) {
  L.barrier();  // the op before may have written the block
  for_each_owned(L, r.tiles, [&](size_t slot, llvm::Value* row, llvm::Value* col) {
    L.b.CreateStore(L.load(r.block, {row, col}), r.tiles.slots[slot]);
  });
}

void store_resident(Lowering& L, const ResidentOutput& r) {
  L.before_write(r.root);
  L.barrier();
  for_each_owned(L, r.tiles, [&](size_t slot, llvm::Value* row, llvm::Value* col) {
    L.store(r.block, {row, col}, L.b.CreateLoad(L.b.getFloatTy(), r.tiles.slots[slot]));
  });
  L.barrier();
}

}  // namespace tessera::backends::llvm_lowering
