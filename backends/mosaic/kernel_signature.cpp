#include "backends/mosaic/kernel_signature.h"

#include "backends/mosaic/mlir_types.h"

namespace tessera::backends::mosaic {
namespace {

bool index_map_is_zero(const BlockSpec& spec) {
  if (!spec.index_map) return true;
  for (const Value& v : spec.index_map->outputs())
    if (!v.is_literal() || v.literal().as_int() != 0) return false;
  return true;
}

bool whole_array_block(const GridMapping& g, int m) {
  const Shape& shape = g.array(m).shape();
  std::vector<BlockDim> dims = g.dims(m);
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d].kind != BlockDimKind::Blocked || dims[d].size != shape[d]) return false;
  return true;
}

std::string dims_str(const Shape& s) { return shape_str(s); }

// Mosaic tiles the last two dims of a VMEM block in (8, 128) tiles of 32-bit
// data (jax/_src/pallas/mosaic/lowering.py, `_check_block_mappings`): each
// must be a multiple of its tile or the whole array dim. Squeezed dims are
// size 1 and always allowed; SMEM blocks are exempt.
void check_tiling(const GridMapping& g, int m, const Op& call) {
  const Shape& shape = g.array(m).shape();
  std::vector<BlockDim> dims = g.dims(m);
  std::string who = " (" + g.describe(m) + ")";
  int rank = static_cast<int>(shape.size());
  if (rank == 0)
    throw Error(call.loc, "mosaic: the Pallas TPU lowering supports only blocks of rank >= 1; " + g.describe(m) +
                              " is a scalar: pass it in SMEM (scalar prefetch) instead");
  Shape block = g.geometry(m).window();
  auto fits = [&](int d, int64_t tile) {
    return dims[d].kind == BlockDimKind::Squeezed || block[d] == shape[d] || block[d] % tile == 0;
  };
  if (rank == 1) {
    int bits = 8 * dtype_bytes(g.array(m).dtype());
    int64_t tile = 128 * (32 / (bits < 32 ? bits : 32));
    if (!fits(0, tile))
      throw Error(call.loc, "mosaic: a rank-1 block must be the whole array dim or a multiple of " + std::to_string(tile) +
                                " (128 * (32 / bitwidth)) for the Pallas TPU lowering; the block shape is " +
                                dims_str(block) + " and the array shape " + dims_str(shape) + who);
    return;
  }
  if (!fits(rank - 1, 128) || !fits(rank - 2, 8))
    throw Error(call.loc, "mosaic: the Pallas TPU lowering requires the last two dims of a block shape to be divisible by 8 and "
                          "128 respectively, or equal to the array's; the block shape is " +
                              dims_str(block) + " and the array shape " + dims_str(shape) + who);
}

}  // namespace

bool is_windowed(const GridMapping& g, int m) {
  MemSpace s = g.spec(m).mem;
  return s != MemSpace::any && s != MemSpace::hbm && s != MemSpace::semaphore;
}

bool is_trivial_window(const GridMapping& g, int m) { return whole_array_block(g, m) && index_map_is_zero(g.spec(m)); }

RefView operand_view(const GridMapping& g, int m) {
  const Type& array = g.array(m);
  if (!is_windowed(g, m)) return RefView::of(Type::ref(array.array_type(), g.spec(m).mem));
  RefView v;
  v.memref_shape = g.geometry(m).window();
  std::vector<BlockDim> dims = g.dims(m);
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d].kind != BlockDimKind::Squeezed) v.dims.push_back(static_cast<int>(d));
  v.dtype = array.dtype();
  v.space = g.spec(m).mem;
  return v;
}

KernelSignature kernel_signature(const GridMapping& g, const Op& call) {
  KernelSignature sig;
  sig.grid_rank = g.grid_rank();
  for (const Type& t : g.scalar_prefetch_types) sig.params.push_back(RefView::of(Type::ref(t.array_type(), MemSpace::smem)));
  for (int m = 0; m < g.num_inputs() + g.num_outputs(); ++m) {
    if (!is_windowed(g, m) && !is_trivial_window(g, m))
      throw Error(call.loc, "mosaic: " + g.describe(m) + " lives in " + std::string(mem_space_name(g.spec(m).mem)) +
                                ", which the kernel reaches only by DMA: its block must be the whole array at index 0");
    for (const BlockDim& d : g.dims(m))
      if (d.kind == BlockDimKind::BoundedSlice)
        throw Error(call.loc, "mosaic: BoundedSlice block dims are not lowered yet (" + g.describe(m) + ")");
    if (is_windowed(g, m) && g.spec(m).mem == MemSpace::vmem) check_tiling(g, m, call);
    sig.params.push_back(operand_view(g, m));
  }
  for (const Type& t : g.scratch_types) sig.params.push_back(RefView::of(t));
  return sig;
}

std::string KernelSignature::arguments() const {
  std::string out;
  for (int k = 0; k < grid_rank; ++k) out += (out.empty() ? "" : ", ") + ("%arg" + std::to_string(k)) + ": i32";
  for (size_t p = 0; p < params.size(); ++p)
    out += (out.empty() ? "" : ", ") + ("%arg" + std::to_string(grid_rank + static_cast<int>(p))) + ": " + params[p].memref_type();
  return out;
}

}  // namespace tessera::backends::mosaic
