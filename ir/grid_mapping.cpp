#include "ir/grid_mapping.h"

#include <algorithm>

#include "ir/primitive.h"

namespace tessera {

GridMapping grid_mapping(const Op& op) {
  GridMapping g;
  g.grid = op.ints_param("grid");
  g.grid_names = op.idents_param("grid_names");
  g.in_specs = op.specs_param("in_specs");
  g.out_specs = op.specs_param("out_specs");
  g.out_types = op.types_param("out_shapes");
  g.scratch_types = op.types_param("scratch");
  g.vmapped_dims = op.ints_param("vmapped_dims");
  g.dimension_semantics = op.idents_param("dimension_semantics");
  g.kernel_type = op.str_param("kernel_type");
  g.name = op.str_param("name");
  g.kernel = op.body_param("kernel");
  for (int64_t d : g.grid) g.num_dynamic += d < 0;
  int64_t nsp = op.int_param("num_scalar_prefetch");
  for (int64_t j = 0; j < nsp && g.num_dynamic + j < static_cast<int64_t>(op.operands.size()); ++j)
    g.scalar_prefetch_types.push_back(op.operands[g.num_dynamic + j].type());
  for (size_t i = g.num_dynamic + nsp; i < op.operands.size(); ++i) {
    Type t = op.operands[i].type();
    g.in_types.push_back(Type::array(t.array_type()));
  }
  for (auto [i, o] : op.pairs_param("input_output_aliases")) g.aliases.push_back({i - nsp, o});
  if (g.name.empty() && g.kernel) g.name = g.kernel->name();
  return g;
}

IntPairs GridMapping::alias_param(const IntPairs& pairs) const {
  IntPairs out;
  for (auto [i, o] : pairs) out.push_back({alias_param_input(i), o});
  return out;
}

std::vector<int> GridMapping::kernel_axes() const {
  std::vector<int> axes;
  for (int a = 0; a < grid_rank(); ++a)
    if (std::find(vmapped_dims.begin(), vmapped_dims.end(), a) == vmapped_dims.end()) axes.push_back(a);
  return axes;
}

std::string GridMapping::describe(int m) const {
  bool is_in = m < num_inputs();
  int param = is_in ? input_param(m) : output_param(m - num_inputs());
  std::string what = is_in ? "input" : "output";
  if (kernel && param < static_cast<int>(kernel->params().size()) && !kernel->params()[param]->name.empty())
    return what + " \"" + kernel->params()[param]->name + "\"";
  return what + " " + std::to_string(is_in ? m : m - num_inputs());
}

std::vector<Type> GridMapping::expected_kernel_params() const {
  std::vector<Type> ts;
  for (const Type& t : scalar_prefetch_types) ts.push_back(Type::ref(t.array_type(), MemSpace::smem));
  for (int m = 0; m < num_inputs() + num_outputs(); ++m) {
    const BlockSpec& s = spec(m);
    const Type& a = array(m);
    ts.push_back(Type::ref(ArrayType{a.dtype(), kernel_block_shape(block_dims(s, a.shape()))}, s.mem));
  }
  for (const Type& t : scratch_types) ts.push_back(t);
  return ts;
}

std::vector<Type> GridMapping::expected_index_map_params() const {
  std::vector<Type> ts(grid.size(), Type::scalar(DType::i32));
  for (const Type& t : scalar_prefetch_types) ts.push_back(Type::ref(t.array_type(), MemSpace::smem));
  return ts;
}

}  // namespace tessera
