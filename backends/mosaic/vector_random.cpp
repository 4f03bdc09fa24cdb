// pltpu.prng_seed / prng_random_bits: the core's hardware generator,
// `tpu.prng_set_seed_32` and `tpu.prng_random_bits` as
// jax/_src/pallas/mosaic/lowering.py writes them (i32 seeds; rank >= 2 bits).
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/vector_groups.h"
#include "backends/mosaic/vector_values.h"

namespace tessera::backends::mosaic {
namespace {

using namespace vec;

void lower_prng_seed(EmitContext& ctx, const Op& op, const LoweringTable&) {
  std::vector<std::string> seeds, types;
  for (const Value& v : op.operands) {
    if (array_of(v).dtype != DType::i32 && array_of(v).dtype != DType::u32)
      throw ctx.error(op, "prng_seed: seeds must be 32-bit integers, got " + std::string(dtype_name(array_of(v).dtype)));
    seeds.push_back(ctx.use(v)), types.push_back("i32");
  }
  ctx.line(generic("tpu.prng_set_seed_32", seeds, "", types, ""));
}

void lower_prng_random_bits(EmitContext& ctx, const Op& op, const LoweringTable&) {
  const ArrayType& out = result_of(op);
  if (out.shape.size() <= 1) throw ctx.error(op, "random_bits only supports rank>=2 outputs.");
  put(ctx, generic("tpu.prng_random_bits", {}, "", {}, value_type(out)), op.results[0]);
}

}  // namespace

void add_random_rules(LoweringTable& t) {
  t.set("prng_seed", lower_prng_seed);
  t.set("prng_random_bits", lower_prng_random_bits);
}

}  // namespace tessera::backends::mosaic
