// Ref reads and writes: get, swap, masked load / store and addupdate
// (jax/_src/pallas/mosaic/lowering.py, `_load_lowering_rule`,
// `_masked_swap_lowering_rule`).
//
// VMEM: `vector.load` of the region, every memref dim read (an integer index
// or a unit dim of a squeezed block dim with extent 1), then
// `vector.shape_cast` to the value's shape or `vector.extract` of a scalar;
// stores are the generic `"tpu.vector_store"` after a load of the old value
// (what swap returns, dead otherwise). Bools are i32 in memory. Strided regions use
// `tpu.strided_load` / `tpu.strided_store`. SMEM: scalar `memref.load` /
// `memref.store`. ANY and HBM Refs are reached only by DMAs.
#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/rules.h"

namespace tessera::backends::mosaic {
namespace {

// Pallas's wording for a load or store on a Ref without a vector view.
constexpr const char* kNotVmemOrSmem =
    "Loads are only allowed on VMEM and SMEM references. ANY memory space can only be accessed using async_copy.";

struct Access {
  Value ref;
  RefView view;
  std::vector<DimIndex> idx;
};

Access access(KernelContext& ctx, const Op& op) {
  const Value& r = op.main_operand(0);
  Access a{r, ctx.ref_view(r.var()), {}};
  a.idx = memref_indices(op, a.view, op.indexer_for(op.main_operand_index(0)));
  switch (a.view.space) {
    case MemSpace::vmem: case MemSpace::smem: break;
    default: throw ctx.error(op, kNotVmemOrSmem);
  }
  if (a.view.space == MemSpace::smem && !value_shape(a.idx).empty())
    throw ctx.error(op, "Can only load scalars from SMEM: index every dimension of " + r.var()->type.str() +
                            " with an integer (got a value of shape " + shape_str(value_shape(a.idx)) + ")");
  return a;
}

// The vector type read from / written to memory for `a`.
// Bools are i32 in memory (mlir_types.h): read as i32, compared with 0;
// written with `arith.extui` (Pallas's `_load_lowering_rule` does the same).
DType stored(const Access& a) { return a.view.dtype == DType::i1 ? DType::i32 : a.view.dtype; }
std::string memory_vector(const Access& a) { return vector_type(read_shape(a.idx), stored(a)); }

// `%v != 0` of an i32 scalar or vector `v` of shape `shape`: the bool it stores.
std::string to_bool(KernelContext& ctx, const std::string& v, const Shape& shape) {
  Literal zero = Literal::of_int(DType::i32, 0);
  std::string z = shape.empty() ? scalar_constant(ctx, zero) : splat_constant(ctx, zero, shape), out = ctx.fresh();
  ctx.line(out + " = arith.cmpi ne, " + v + ", " + z + " : " + (shape.empty() ? "i32" : vector_type(shape, DType::i32)));
  return out;
}

// Reads the region with the given starts; the name of the value in its
// tessera shape (shape_cast or extract from the read shape).
std::string read_stored(KernelContext& ctx, const Access& a, const std::vector<std::string>& starts) {
  std::string ref = ctx.use(a.ref), loaded = ctx.fresh();
  Shape rs = read_shape(a.idx), vs = value_shape(a.idx);
  if (a.view.space == MemSpace::smem) {
    ctx.line(loaded + " = memref.load " + ref + "[" + join(starts) + "] : " + a.view.memref_type());
    return loaded;
  }
  if (has_stride(a.idx)) {
    std::vector<int64_t> strides;
    for (const DimIndex& d : a.idx) strides.push_back(d.stride);
    std::string types = a.view.memref_type();
    for (size_t i = 0; i < starts.size(); ++i) types += ", i32";
    ctx.line(loaded + " = \"tpu.strided_load\"(" + ref + ", " + join(starts) + ") <{strides = " + i32_array(strides) +
             "}> : (" + types + ") -> " + memory_vector(a));
  } else {
    ctx.line(loaded + " = vector.load " + ref + "[" + join(starts) + "] : " + a.view.memref_type() + ", " + memory_vector(a));
  }
  if (vs == rs) return loaded;
  std::string out = ctx.fresh();
  if (vs.empty()) {
    std::string zeros;
    for (size_t i = 0; i < rs.size(); ++i) zeros += (i ? ", 0" : "0");
    ctx.line(out + " = vector.extract " + loaded + "[" + zeros + "] : " + element_type(stored(a)) + " from " + memory_vector(a));
  } else {
    ctx.line(out + " = vector.shape_cast " + loaded + " : " + memory_vector(a) + " to " + vector_type(vs, stored(a)));
  }
  return out;
}

std::string read(KernelContext& ctx, const Access& a, const std::vector<std::string>& starts) {
  std::string v = read_stored(ctx, a, starts);
  return a.view.dtype == DType::i1 ? to_bool(ctx, v, value_shape(a.idx)) : v;
}

// Value `v` of type `t` (the region's tessera shape, or a scalar broadcast
// over the region) as written to memory: bools widened to i32, then in the
// read shape.
std::string memory_form(KernelContext& ctx, const Access& a, std::string v, const Type& t) {
  if (t.dtype() == DType::i1) {
    std::string wide = ctx.fresh();
    std::string from = t.rank() ? vector_type(t.shape(), DType::i1) : "i1", to = t.rank() ? vector_type(t.shape(), DType::i32) : "i32";
    ctx.line(wide + " = arith.extui " + v + " : " + from + " to " + to);
    v = wide;
  }
  if (a.view.space == MemSpace::smem) return v;
  Shape rs = read_shape(a.idx), vs = value_shape(a.idx);
  if (t.rank() == 0) {
    std::string out = ctx.fresh();
    ctx.line(out + " = vector.broadcast " + v + " : " + element_type(stored(a)) + " to " + memory_vector(a));
    return out;
  }
  if (vs == rs) return v;
  std::string out = ctx.fresh();
  ctx.line(out + " = vector.shape_cast " + v + " : " + vector_type(vs, stored(a)) + " to " + memory_vector(a));
  return out;
}

std::string to_memory_shape(KernelContext& ctx, const Access& a, const Value& value) {
  return memory_form(ctx, a, ctx.use(value), value.type());
}

// A mask operand in the read shape (a scalar mask is broadcast).
std::string mask_in_memory_shape(KernelContext& ctx, const Access& a, const Value& mask) {
  std::string m = ctx.use(mask);
  Shape rs = read_shape(a.idx), vs = value_shape(a.idx);
  std::string want = vector_type(rs, DType::i1), out = ctx.fresh();
  if (mask.type().rank() == 0) ctx.line(out + " = vector.broadcast " + m + " : i1 to " + want);
  else if (vs != rs) ctx.line(out + " = vector.shape_cast " + m + " : " + vector_type(vs, DType::i1) + " to " + want);
  else return m;
  return out;
}

void write(KernelContext& ctx, const Op& op, const Access& a, const std::vector<std::string>& starts, const std::string& v,
           const std::string& mask) {
  std::string ref = ctx.use(a.ref);
  if (a.view.space == MemSpace::smem) {
    if (!mask.empty()) throw ctx.error(op, "masked stores to SMEM are not supported: SMEM holds scalars");
    ctx.line("memref.store " + v + ", " + ref + "[" + join(starts) + "] : " + a.view.memref_type());
    return;
  }
  std::string types = "(" + memory_vector(a) + ", " + a.view.memref_type();
  if (has_stride(a.idx)) {
    if (!mask.empty()) throw ctx.error(op, "masked strided stores are not lowered yet");
    std::vector<int64_t> strides;
    for (const DimIndex& d : a.idx) strides.push_back(d.stride);
    for (size_t i = 0; i < starts.size(); ++i) types += ", i32";
    ctx.line("\"tpu.strided_store\"(" + v + ", " + ref + ", " + join(starts) + ") <{strides = " + i32_array(strides) + "}> : " +
             types + ") -> ()");
    return;
  }
  for (size_t i = 0; i < starts.size(); ++i) types += ", index";
  if (!mask.empty()) types += ", " + vector_type(read_shape(a.idx), DType::i1);
  ctx.line("\"tpu.vector_store\"(" + v + ", " + ref + ", " + join(starts) + (mask.empty() ? "" : ", " + mask) +
           ") <{operandSegmentSizes = array<i32: 1, 1, " + std::to_string(starts.size()) + ", " + (mask.empty() ? "0" : "1") +
           ">, strides = array<i32>}> : " + types + ") -> ()");
}

std::vector<std::string> starts_for(KernelContext& ctx, const Access& a) {
  // Strided forms take i32 starts; vector.load, tpu.vector_store and memref.load take `index`.
  return has_stride(a.idx) ? i32_starts(ctx, a.idx) : index_starts(ctx, a.idx);
}

void lower_get(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Access a = access(ctx, op);
  std::string v = read(ctx, a, starts_for(ctx, a));
  ctx.alias(op.results[0], v);
}

// swap and store: the old value is read first (Pallas does; swap returns it).
void lower_swap(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Access a = access(ctx, op);
  std::vector<std::string> starts = starts_for(ctx, a);
  std::string old = read(ctx, a, starts);
  ctx.alias(op.results[0], old);
  write(ctx, op, a, starts, to_memory_shape(ctx, a, op.main_operand(1)), "");
}

// store is Pallas's swap with its result dropped: the old value is read too (dead).
void lower_store(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Access a = access(ctx, op);
  std::vector<std::string> starts = starts_for(ctx, a);
  read(ctx, a, starts);
  std::string v = to_memory_shape(ctx, a, op.main_operand(1));
  std::string mask = op.num_main_operands() == 3 ? mask_in_memory_shape(ctx, a, op.main_operand(2)) : "";
  write(ctx, op, a, starts, v, mask);
}

// load %r[idx], %mask, %other: lanes off the mask take `other` (an
// `arith.select` after the load), or are whatever the memory holds.
void lower_load(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Access a = access(ctx, op);
  std::string v = read(ctx, a, starts_for(ctx, a));
  if (op.num_main_operands() < 3) {
    ctx.alias(op.results[0], v);
    return;
  }
  const Type& result = op.results[0]->type;
  std::string vt = value_type(result);
  auto as_result_shape = [&](const Value& x, DType d) {
    std::string n = ctx.use(x);
    if (x.type().rank() == result.rank()) return n;
    std::string out = ctx.fresh();
    ctx.line(out + " = vector.broadcast " + n + " : " + element_type(d) + " to " + value_type(Type::array(d, result.shape())));
    return out;
  };
  std::string mask = as_result_shape(op.main_operand(1), DType::i1);
  std::string other = as_result_shape(op.main_operand(2), result.dtype());
  std::string out = ctx.def(op.results[0]);
  ctx.line(out + " = arith.select " + mask + ", " + v + ", " + other + " : " +
           (result.rank() ? value_type(Type::array(DType::i1, result.shape())) + ", " : "") + vt);
}

// addupdate has no Pallas rule (`x_ref[...] += v` traces to get, add, swap): the same three steps.
void lower_addupdate(EmitContext& e, const Op& op, const LoweringTable&) {
  KernelContext& ctx = kernel(e);
  Access a = access(ctx, op);
  std::vector<std::string> starts = starts_for(ctx, a);
  std::string old = read(ctx, a, starts);
  const Value& inc = op.main_operand(1);
  std::string add = is_float(a.view.dtype) ? "arith.addf" : "arith.addi";
  Shape vs = value_shape(a.idx);
  std::string rhs = ctx.use(inc);
  if (inc.type().rank() == 0 && !vs.empty()) {
    std::string b = ctx.fresh();
    ctx.line(b + " = vector.broadcast " + rhs + " : " + element_type(a.view.dtype) + " to " + vector_type(vs, a.view.dtype));
    rhs = b;
  }
  std::string sum = ctx.fresh();
  ctx.line(sum + " = " + add + " " + old + ", " + rhs + " : " +
           (vs.empty() ? element_type(a.view.dtype) : vector_type(vs, a.view.dtype)));
  write(ctx, op, a, starts, memory_form(ctx, a, sum, Type::array(a.view.dtype, vs)), "");
}

}  // namespace

void add_memory_rules(LoweringTable& t) {
  t.set("get", lower_get);
  t.set("swap", lower_swap);
  t.set("load", lower_load);
  t.set("store", lower_store);
  t.set("addupdate", lower_addupdate);
}

}  // namespace tessera::backends::mosaic
