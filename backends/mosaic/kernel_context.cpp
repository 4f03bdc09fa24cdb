#include "backends/mosaic/kernel_context.h"

#include <algorithm>

#include "backends/mosaic/mlir_types.h"

namespace tessera::backends::mosaic {

RefView RefView::of(const Type& ref) {
  RefView v{ref.shape(), {}, ref.dtype(), ref.mem_space()};
  for (int d = 0; d < ref.rank(); ++d) v.dims.push_back(d);
  return v;
}

std::string RefView::memref_type() const { return mosaic::memref_type(memref_shape, dtype, space); }

bool RefView::is_unit_dim(int memref_dim) const { return std::find(dims.begin(), dims.end(), memref_dim) == dims.end(); }

RefView KernelContext::ref_view(const Var* v) const {
  auto it = views_.find(v);
  return it != views_.end() ? it->second : RefView::of(v->type);
}

void KernelContext::forward(const Var* param, const Value& operand, const std::string& name) {
  alias(param, name);
  if (operand.is_var() && operand.var()->type.is_ref()) views_[param] = ref_view(operand.var());
}

namespace {
// The KernelContexts alive on this thread (the driver makes one per func).
thread_local std::vector<const EmitContext*> live_contexts;
}  // namespace

KernelContext::KernelContext() : EmitContext("mosaic") { live_contexts.push_back(this); }

KernelContext::~KernelContext() {
  live_contexts.erase(std::find(live_contexts.begin(), live_contexts.end(), this));
}

KernelContext& kernel(EmitContext& ctx) {
  if (std::find(live_contexts.begin(), live_contexts.end(), &ctx) == live_contexts.end())
    throw Error(ctx.target() + ": internal error: a Mosaic rule ran outside the Mosaic driver (its EmitContext is not a "
                               "KernelContext)");
  return static_cast<KernelContext&>(ctx);
}

}  // namespace tessera::backends::mosaic
