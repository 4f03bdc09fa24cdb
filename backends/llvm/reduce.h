// What the reduction rules share between the host schedule (value_reduce.cpp)
// and the NVPTX schedule (gpu_reduce.cpp): the combining function and its
// identity per reduction kind, and the NVPTX entry points.
#pragma once

#include <vector>

#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {

enum class Red { sum, prod, max, min, all, any };

// a (op) b in compute type; max / min propagate NaN as the interpreter does.
llvm::Value* combine(Lowering& L, Red r, DType d, llvm::Value* a, llvm::Value* b);
// The value e with combine(e, a) == a: 0, 1, -inf / lowest, +inf / highest, all ones.
llvm::Value* identity(Lowering& L, Red r, DType d);

// NVPTX: the Block of `operand` for a rule that reads every element of it
// once. Where later ops read it again and its generator reads memory, it is
// copied once into shared memory (Lowering::shared_alloc, when it fits the
// budget) and redefined as that copy, so every later use reads on-chip.
Block reduction_operand(Lowering& L, const Value& operand);
// NVPTX: reduce_* of `x` over the dims marked in `reduced`, as a Block of
// `result` (a buffer, or a scalar every thread holds).
Block gpu_reduce(Lowering& L, Red r, const Block& x, const std::vector<bool>& reduced, const Type& result);
// NVPTX: argmax / argmin of `x` along `axis` (the first extreme, a NaN the
// extreme), as `result` (index dtype `index_dtype`).
Block gpu_arg_reduce(Lowering& L, bool is_max, const Block& x, int axis, DType index_dtype, const Type& result);
// NVPTX: cumsum of `x` along `axis` (from the end when `reverse`), each
// prefix rounded to a bf16 / f16 result as it is stored.
Block gpu_cumsum(Lowering& L, const Block& x, int axis, bool reverse, const Type& result);

}  // namespace tessera::backends::llvm_lowering
