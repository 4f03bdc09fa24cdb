// The grid point: program_id and num_programs (static grids: a constant), and
// multiple_of, a hint that changes no value (checked, as the interpreter
// does), and delay, which changes nothing.
#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {
namespace {

// The grid axis of program_id / num_programs[axis=k]: vmapped axes skipped.
int axis_of(Lowering& L, const Op& op) {
  int64_t axis = op.param(keys::axis);
  if (axis < 0 || axis >= static_cast<int64_t>(L.kernel_axes.size()))
    throw L.error(op, "axis " + std::to_string(axis) + " is out of range for a kernel grid of rank " +
                          std::to_string(L.kernel_axes.size()));
  return L.kernel_axes[static_cast<size_t>(axis)];
}

}  // namespace

void add_grid_rules(LlvmTable& t) {
  t.set("program_id", [](Lowering& L, const Op& op) {
    llvm::Value* id = L.program_ids[axis_of(L, op)];
    if (!id) throw L.error(op, "program_id outside a kernel");
    L.define(op.results[0], L.scalar_block(DType::i32, id));
  });
  t.set("num_programs", [](Lowering& L, const Op& op) {
    L.define(op.results[0], L.scalar_block(DType::i32, L.i32(static_cast<int32_t>(L.grid[axis_of(L, op)]))));
  });
  // The interpreter checks the hint (an error where it is false): so do
  // compiled kernels, for the scalar hints index arithmetic carries.
  t.set("multiple_of", [](Lowering& L, const Op& op) {
    const Block& v = L.value(op.operands[0]);
    int64_t m = op.param(keys::value);
    if (v.type.is_scalar() && is_int(v.type.dtype()) && m != 0) {
      llvm::Value* x = v.element(L, {});
      llvm::Value* ok = L.b.CreateICmpEQ(L.b.CreateSRem(x, llvm::ConstantInt::get(x->getType(), static_cast<uint64_t>(m), true)),
                                         llvm::ConstantInt::get(x->getType(), 0));
      L.check(ok, CheckKind::hint, L.checked_op(op), {x});
    }
    L.define(op.results[0], v);
  });
  // `delay` only spends time; no value or memory depends on it.
  t.set("delay", [](Lowering&, const Op&) {});
}

}  // namespace tessera::backends::llvm_lowering
