#include "tools/block_pictures.h"

#include "ir/grid_mapping.h"
#include "runtime/npy.h"

namespace tessera::cli {

std::vector<interp::Array> prefetch_values(const Op& call, const std::string& name,
                                           const std::map<std::string, std::string>& given) {
  GridMapping g = grid_mapping(call);
  std::vector<interp::Array> out;
  for (int j = 0; j < g.num_scalar_prefetch(); ++j) {
    std::vector<std::string> names;
    const Value& v = call.operands.at(g.scalar_prefetch_operand(j));
    if (v.is_var() && !v.var()->name.empty()) names.push_back(v.var()->name);
    if (g.kernel && j < static_cast<int>(g.kernel->params().size())) names.push_back(g.kernel->params()[j]->name);
    auto found = given.end();
    for (const std::string& n : names)
      if (found == given.end()) found = given.find(n);
    std::string what = "scalar prefetch %" + (names.empty() ? std::to_string(j) : names.front());
    if (found == given.end())
      throw Error(call.loc, "pallas_call " + name + ": its index maps read " + what + "; give its values with --input " +
                                (names.empty() ? "NAME" : names.front()) + "=PATH.npy");
    out.push_back(interp::read_npy_as(found->second, g.scalar_prefetch_types[j].array_type(), what));
  }
  return out;
}

}  // namespace tessera::cli
