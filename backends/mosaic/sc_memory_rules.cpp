// Ref reads and writes on a SparseCore subcore (jax/_src/pallas/mosaic/sc_lowering.py,
// `_load_lowering_rule`, `_store_lowering_rule`): a vector is moved by
// `tpu.vector_load` / `tpu.vector_store` in the value's own shape (no
// `vector.load`, no shape_cast: `get %k[0, :]` of a (1, 16) block loads a
// vector<16xf32>), a scalar by `memref.load` / `memref.store` from any
// core-local memory. swap reads the old value with `tpu.vector_load` first;
// addupdate is a `tpu.vector_store` with `add = true` (an atomic add), with
// no scalar form. Only stride-1 regions, and no vectors in SMEM.
#include <cctype>

#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/rules.h"
#include "backends/mosaic/sc_rules.h"

namespace tessera::backends::mosaic {
namespace {

// Pallas's caller names ("Get", "Swap") and the Python capitalisation of a memory space.
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct ScAccess {
  Value ref;
  RefView view;
  std::vector<DimIndex> idx;
  Shape value_shape;  // the value moved; empty: a scalar
};

// `caller` is Pallas's: "Get" for reads, "Swap" for writes.
ScAccess sc_access(KernelContext& ctx, const Op& op, const std::string& caller) {
  const Value& r = op.main_operand(0);
  ScAccess a{r, ctx.ref_view(r.var()), {}, {}};
  bool reads = caller == "Get";
  if (a.view.space != MemSpace::vmem && a.view.space != MemSpace::smem)
    throw ctx.error(op, caller + (reads ? " does not support loading from " : " does not support storing to ") +
                            upper(std::string(mem_space_name(a.view.space))) +
                            ". Copy the data to a core-local memory space, e.g. VMEM, via `pltpu.async_copy`.");
  a.idx = memref_indices(op, a.view, op.indexer_for(op.main_operand_index(0)));
  std::vector<int64_t> strides;
  for (const DimIndex& d : a.idx) strides.push_back(d.stride);
  if (has_stride(a.idx)) throw ctx.error(op, caller + " only supports slices with stride 1, got " + shape_str(strides));
  a.value_shape = value_shape(a.idx);
  if (!a.value_shape.empty() && a.view.space == MemSpace::smem)
    throw ctx.error(op, caller + (reads ? " can only load scalars from SMEM" : " can only store scalars to SMEM"));
  if (!a.value_shape.empty() && a.view.dtype == DType::i1)
    throw ctx.error(op, "vectors of bools in memory are not lowered on the SparseCore (store them as i32)");
  return a;
}

std::string mask_type(const ScAccess& a) { return vector_type(a.value_shape, DType::i1); }

// The `tpu.vector_load` / `tpu.vector_store` operand types after the memref: the indices, then the mask.
std::string index_types(const ScAccess& a, size_t n, bool masked) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += ", index";
  return masked ? out + ", " + mask_type(a) : out;
}

// Reads the region: `memref.load` of a scalar, else `tpu.vector_load`.
std::string sc_read(KernelContext& ctx, const Op& op, const ScAccess& a, const std::vector<std::string>& starts,
                    const std::string& mask) {
  std::string ref = ctx.use(a.ref), out = ctx.fresh();
  if (a.value_shape.empty()) {
    if (!mask.empty()) throw ctx.error(op, "Get does not support masked scalar loads");
    ctx.line(out + " = memref.load " + ref + "[" + join(starts) + "] : " + a.view.memref_type());
    return out;
  }
  ctx.line(out + " = \"tpu.vector_load\"(" + ref + ", " + join(starts) + (mask.empty() ? "" : ", " + mask) +
           ") <{operandSegmentSizes = array<i32: 1, " + std::to_string(starts.size()) + ", " + (mask.empty() ? "0" : "1") +
           ">, strides = array<i32>}> : (" + a.view.memref_type() + index_types(a, starts.size(), !mask.empty()) + ") -> " +
           vector_type(a.value_shape, a.view.dtype));
  return out;
}

void sc_write(KernelContext& ctx, const Op& op, const ScAccess& a, const std::vector<std::string>& starts,
              const std::string& v, const std::string& mask, bool add) {
  std::string ref = ctx.use(a.ref);
  if (a.value_shape.empty()) {
    if (!mask.empty()) throw ctx.error(op, "Swap does not support masked scalar stores");
    if (add) throw ctx.error(op, "Swap does not support atomic scalar adds");
    ctx.line("memref.store " + v + ", " + ref + "[" + join(starts) + "] : " + a.view.memref_type());
    return;
  }
  ctx.line("\"tpu.vector_store\"(" + v + ", " + ref + ", " + join(starts) + (mask.empty() ? "" : ", " + mask) + ") <{" +
           (add ? "add = true, " : "") + "operandSegmentSizes = array<i32: 1, 1, " + std::to_string(starts.size()) + ", " +
           (mask.empty() ? "0" : "1") + ">, strides = array<i32>}> : (" + vector_type(a.value_shape, a.view.dtype) + ", " +
           a.view.memref_type() + index_types(a, starts.size(), !mask.empty()) + ") -> ()");
}

// Operand `v` in the region's shape: a scalar stored into a vector region is broadcast.
std::string in_region_shape(KernelContext& ctx, const ScAccess& a, const Value& v, DType d) {
  std::string name = ctx.use(v);
  if (v.type().rank() != 0 || a.value_shape.empty()) return name;
  std::string out = ctx.fresh();
  ctx.line(out + " = vector.broadcast " + name + " : " + element_type(d) + " to " + vector_type(a.value_shape, d));
  return out;
}

void lower_get(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  ScAccess a = sc_access(ctx, op, "Get");
  ctx.alias(op.results[0], sc_read(ctx, op, a, index_starts(ctx, a.idx), ""));
}

// load %r[idx], %mask, %other: the masked `tpu.vector_load`, then lanes off
// the mask take `other`.
void lower_load(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  ScAccess a = sc_access(ctx, op, "Get");
  std::vector<std::string> starts = index_starts(ctx, a.idx);
  if (op.num_main_operands() < 3) return ctx.alias(op.results[0], sc_read(ctx, op, a, starts, ""));
  std::string mask = in_region_shape(ctx, a, op.main_operand(1), DType::i1);
  std::string v = sc_read(ctx, op, a, starts, mask);
  std::string other = in_region_shape(ctx, a, op.main_operand(2), a.view.dtype);
  ctx.line(ctx.def(op.results[0]) + " = arith.select " + mask + ", " + v + ", " + other + " : " + mask_type(a) + ", " +
           vector_type(a.value_shape, a.view.dtype));
}

void lower_swap(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  ScAccess a = sc_access(ctx, op, "Swap");
  std::vector<std::string> starts = index_starts(ctx, a.idx);
  ctx.alias(op.results[0], sc_read(ctx, op, a, starts, ""));
  sc_write(ctx, op, a, starts, in_region_shape(ctx, a, op.main_operand(1), a.view.dtype), "", false);
}

void lower_store(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  ScAccess a = sc_access(ctx, op, "Swap");
  std::vector<std::string> starts = index_starts(ctx, a.idx);
  std::string mask = op.num_main_operands() == 3 ? in_region_shape(ctx, a, op.main_operand(2), DType::i1) : "";
  sc_read(ctx, op, a, starts, mask);
  sc_write(ctx, op, a, starts, in_region_shape(ctx, a, op.main_operand(1), a.view.dtype), mask, false);
}

// addupdate: Pallas's store with `add=True` (the old value is read too, dead).
void lower_addupdate(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  ScAccess a = sc_access(ctx, op, "Swap");
  std::vector<std::string> starts = index_starts(ctx, a.idx);
  if (a.value_shape.empty()) throw ctx.error(op, "Swap does not support atomic scalar adds");
  sc_read(ctx, op, a, starts, "");
  sc_write(ctx, op, a, starts, in_region_shape(ctx, a, op.main_operand(1), a.view.dtype), "", true);
}

}  // namespace

void add_sc_memory_rules(LoweringTable& t) {
  t.set("get", lower_get);
  t.set("swap", lower_swap);
  t.set("load", lower_load);
  t.set("store", lower_store);
  t.set("addupdate", lower_addupdate);
}

}  // namespace tessera::backends::mosaic
