// What the value rules (value_*.cpp) share: building Blocks from operand
// Blocks, the interpreter's float rounding and conversions in IR, and the
// scalar semantics several rule groups need (NaN-propagating max / min).
//
// Every helper emits IR at the builder's insertion point and works on compute
// types (Lowering::compute_type): f32 for bf16 / f16 / f32, double, i1, iN.
// The rounding helpers are exactly the interpreter's (runtime/array.h,
// runtime/array.cpp), so compiled bf16 / f16 results match it bit for bit.
#pragma once

#include <functional>
#include <vector>

#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {

// The Block operands of `op`'s main operands, copied (value() hands out
// references into a map that later defines may rehash).
std::vector<Block> operand_blocks(Lowering& L, const Op& op);
// The union of the operands' `reads`, 1 + the sum of their costs, 1 + the
// largest of their depths.
std::vector<const Var*> merged_reads(const std::vector<Block>& blocks);
int chained_cost(const std::vector<Block>& blocks);
int chained_depth(const std::vector<Block>& blocks);
// A lazy Block of `type` whose element is `f(L, idx)`, reading what `from` read
// (its cost and depth chained from `from`'s).
Block generator(const Type& type, const std::vector<Block>& from,
                std::function<llvm::Value*(Lowering&, const std::vector<llvm::Value*>&)> f);
// The multi-index of row-major linear index `flat` over `sizes` (i64).
std::vector<llvm::Value*> delinearize(Lowering& L, llvm::Value* flat, const Shape& sizes);
// An operand's element at the result's index: a rank-0 operand broadcasts.
llvm::Value* element_at(Lowering& L, const Block& x, const std::vector<llvm::Value*>& idx);

// bf16 / f16 precision of an f32 value, round to nearest even (NaN stays a
// quiet NaN, overflow gives infinity, f16 subnormals kept): round_to_bf16 /
// round_to_f16 of runtime/array.h. Other dtypes: `f` unchanged.
llvm::Value* round_float(Lowering& L, llvm::Value* f, DType d);
// A double rounded once to float dtype `d` (round_double_to of
// runtime/array.cpp), as the f32 compute value (double for f64).
llvm::Value* round_double(Lowering& L, llvm::Value* x, DType d);
// convert_element_type's semantics on one compute value (runtime/kernels/
// convert.cpp): floats to ints truncate and saturate (NaN -> 0), ints wrap,
// -> bool is x != 0, -> bf16 / f16 round once from the source value.
llvm::Value* convert(Lowering& L, llvm::Value* v, DType from, DType to);

// max / min as the interpreter computes them: a NaN operand wins (the first
// one), otherwise a > b ? a : b (so max(-0, +0) is +0's partner b).
llvm::Value* max_of(Lowering& L, llvm::Value* a, llvm::Value* b, DType d);
llvm::Value* min_of(Lowering& L, llvm::Value* a, llvm::Value* b, DType d);

bool is_narrow_float(DType d);  // bf16, f16: stored narrow, computed in f32
bool is_unsigned(DType d);      // u8, u32 and bool compare and extend unsigned

// A value of dtype `d` in compute type: 0, 1, or any double (ints truncate).
llvm::Value* constant(Lowering& L, DType d, double v);

// A zero-initialised compute-type variable in the kernel's entry block (mem2reg
// turns it into registers): loop-carried accumulators.
llvm::Value* local_variable(Lowering& L, llvm::Type* type, const char* name);

}  // namespace tessera::backends::llvm_lowering
