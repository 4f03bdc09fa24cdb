// Ops with bodies: cond, for, while, scan, run_scoped, call, custom_jvp_call, custom_vjp_call.
// Bodies are closed, so a nested body is lowered with its parameters bound to
// the operands' Blocks / RefViews (no copies). What leaves a body - branch
// results, loop carries, scan outputs - goes through slots allocated before
// it: an alloca for a scalar (mem2reg turns it into SSA), an arena buffer for
// an array; on NVPTX every thread computes the same scalars, so branch
// conditions and trip counts are uniform and barriers inside bodies are safe.
#include <optional>
#include <span>

#include <llvm/IR/Function.h>

#include "backends/llvm/kernel_lowering.h"
#include "ir/control_views.h"

namespace tessera::backends::llvm_lowering {
namespace {

// Where one value crosses a body boundary.
struct Slot {
  Type type;
  llvm::Value* ptr;  // alloca (scalar) or arena buffer (array), compute type
};

Slot make_slot(Lowering& L, const Type& type) {
  llvm::Type* ct = L.compute_type(type.dtype());
  if (type.is_scalar()) {
    llvm::IRBuilder<> entry(&L.fn->getEntryBlock(), L.fn->getEntryBlock().begin());
    return {type, entry.CreateAlloca(ct)};
  }
  int64_t bytes = num_elements(type.shape()) * static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(ct));
  return {type, L.arena_alloc(std::max<int64_t>(bytes, 1))};
}

// Stores `v` into the slot. An array is first materialized elsewhere when it
// may read the slot itself (a carry computed from the carry).
void store_slot(Lowering& L, const Slot& s, const Block& v) {
  llvm::Type* ct = L.compute_type(s.type.dtype());
  if (s.type.is_scalar()) {
    L.b.CreateStore(v.element(L, {}), s.ptr);
    return;
  }
  Block src = v;
  if (!src.buffer || src.buffer == s.ptr) {
    if (src.buffer == s.ptr) return;  // already there
    src = L.materialize(v);
  }
  const Shape& shape = s.type.shape();
  L.for_each_element(shape, [&](const std::vector<llvm::Value*>& idx) {
    L.b.CreateStore(src.element(L, idx), L.b.CreateInBoundsGEP(ct, s.ptr, {L.linear_index(shape, idx)}));
  });
}

Block load_slot(Lowering& L, const Slot& s) {
  if (s.type.is_scalar()) return L.scalar_block(s.type.dtype(), L.b.CreateLoad(L.compute_type(s.type.dtype()), s.ptr));
  return L.buffer_block(s.type, s.ptr);
}

// What a body parameter receives: a Ref's view or a value's Block, resolved
// where the op is (outside the branch or loop), so that a Block materialized
// on first use is computed once, where it dominates every use.
struct Operand {
  std::optional<RefView> ref;
  std::optional<Block> value;
};

std::vector<Operand> resolve(Lowering& L, std::span<const Value> operands) {
  std::vector<Operand> out;
  for (const Value& v : operands) {
    Operand o;
    if (v.type().is_ref())
      o.ref = L.ref(v);
    else
      o.value = L.value(v);
    out.push_back(std::move(o));
  }
  return out;
}

void bind(Lowering& L, const Var* param, const Operand& operand) {
  if (operand.ref)
    L.define_ref(param, *operand.ref);
  else
    L.define(param, *operand.value);
}

std::vector<Slot> slots_for(Lowering& L, const std::vector<Type>& types) {
  std::vector<Slot> slots;
  for (const Type& t : types) {
    if (t.is_ref()) throw L.error(L.current_op(), "a body returning a Ref is not lowered");
    slots.push_back(make_slot(L, t));
  }
  return slots;
}

// Slots holding a loop's carries, set to their initial values.
template <class Carries>
std::vector<Slot> carry_slots(Lowering& L, const Carries& carries) {
  std::vector<Type> types;
  for (const Value& v : carries) types.push_back(v.type());
  std::vector<Slot> slots = slots_for(L, types);
  for (size_t k = 0; k < slots.size(); ++k) store_slot(L, slots[k], L.value(carries[k]));
  return slots;
}

// Lowers `body` with its outputs stored into `slots` (arena space it used is reused afterwards).
void lower_into(Lowering& L, const Body& body, const std::vector<Slot>& slots, size_t first_output = 0) {
  int64_t mark = L.arena_mark();
  L.lower_ops(body);
  for (size_t i = 0; i < slots.size(); ++i) store_slot(L, slots[i], L.value(body.outputs()[first_output + i]));
  L.arena_release(mark);
}

void lower_cond(Lowering& L, const Op& op) {
  CondView c(op);
  const auto& branches = c.branches();
  llvm::Value* index = L.scalar(c.index());
  int n = static_cast<int>(branches.size());
  if (index->getType()->isIntegerTy(1)) {
    index = L.b.CreateZExt(index, L.b.getInt32Ty());
  } else {
    // An i32 index is clamped to the branches, as lax.switch does.
    index = L.b.CreateSExtOrTrunc(index, L.b.getInt32Ty());
    index = L.b.CreateSelect(L.b.CreateICmpSLT(index, L.i32(0)), L.i32(0), index);
    index = L.b.CreateSelect(L.b.CreateICmpSGT(index, L.i32(n - 1)), L.i32(n - 1), index);
  }
  L.before_nested_body();
  std::vector<Operand> args = resolve(L, c.args());
  std::vector<Slot> slots = slots_for(L, branches[0]->output_types());
  llvm::BasicBlock* join = llvm::BasicBlock::Create(L.llctx, "cond.join", L.fn);
  llvm::SwitchInst* sw = L.b.CreateSwitch(index, join, static_cast<unsigned>(n));
  for (int i = 0; i < n; ++i) {
    llvm::BasicBlock* bb = llvm::BasicBlock::Create(L.llctx, "branch" + std::to_string(i), L.fn);
    sw->addCase(L.b.getInt32(static_cast<uint32_t>(i)), bb);
    L.b.SetInsertPoint(bb);
    const Body& body = *branches[i];
    for (size_t a = 0; a < args.size(); ++a) bind(L, body.params()[a], args[a]);
    lower_into(L, body, slots);
    L.b.CreateBr(join);
  }
  L.b.SetInsertPoint(join);
  for (size_t r = 0; r < op.results.size(); ++r) L.define(op.results[r], load_slot(L, slots[r]));
}

void lower_for(Lowering& L, const Op& op) {
  ForView f(op);
  llvm::Value* lo = L.scalar(f.lo());
  llvm::Value* hi = L.scalar(f.hi());
  hi = L.b.CreateSExtOrTrunc(hi, lo->getType());
  auto operands = f.operands();
  auto params = f.params();
  L.before_nested_body();
  std::vector<Slot> slots = carry_slots(L, operands.carries);
  std::vector<Operand> consts = resolve(L, operands.consts);
  const Body& body = f.body();
  L.for_range(lo, hi, [&](llvm::Value* i) {
    L.define(f.index_param(), L.scalar_block(f.index_param()->type.dtype(), i));
    for (size_t k = 0; k < consts.size(); ++k) bind(L, params.consts[k], consts[k]);
    for (size_t k = 0; k < slots.size(); ++k) L.define(params.carries[k], load_slot(L, slots[k]));
    lower_into(L, body, slots);
  });
  for (size_t r = 0; r < op.results.size(); ++r) L.define(op.results[r], load_slot(L, slots[r]));
}

void lower_while(Lowering& L, const Op& op) {
  WhileView w(op);
  auto operands = w.operands();
  L.before_nested_body();
  std::vector<Slot> slots = carry_slots(L, operands.carries);
  std::vector<Operand> consts = resolve(L, operands.consts);
  llvm::BasicBlock* head = llvm::BasicBlock::Create(L.llctx, "while.cond", L.fn);
  llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(L.llctx, "while.body", L.fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(L.llctx, "while.done", L.fn);
  L.b.CreateBr(head);
  L.b.SetInsertPoint(head);
  auto bind_all = [&](LoopParts<Var*> params) {
    for (size_t k = 0; k < consts.size(); ++k) bind(L, params.consts[k], consts[k]);
    for (size_t k = 0; k < slots.size(); ++k) L.define(params.carries[k], load_slot(L, slots[k]));
  };
  bind_all(w.cond_params());
  int64_t mark = L.arena_mark();
  L.lower_ops(w.cond());
  llvm::Value* go = L.scalar(w.cond().outputs()[0]);
  L.arena_release(mark);
  L.b.CreateCondBr(go, body_bb, exit);
  L.b.SetInsertPoint(body_bb);
  bind_all(w.body_params());
  lower_into(L, w.body(), slots);
  L.b.CreateBr(head);
  L.b.SetInsertPoint(exit);
  for (size_t r = 0; r < op.results.size(); ++r) L.define(op.results[r], load_slot(L, slots[r]));
}

// Element `idx` of slice `i` (leading axis) of `xs`.
Block slice_of(const Block& xs, llvm::Value* i) {
  Block s;
  Shape inner(xs.type.shape().begin() + 1, xs.type.shape().end());
  s.type = Type::array(xs.type.dtype(), inner);
  s.cost = xs.cost;
  s.depth = xs.depth + 1;
  s.reads = xs.reads;
  s.element = [xs, i](Lowering& L, const std::vector<llvm::Value*>& idx) {
    std::vector<llvm::Value*> full{i};
    full.insert(full.end(), idx.begin(), idx.end());
    return xs.element(L, full);
  };
  return s;
}

void lower_scan(Lowering& L, const Op& op) {
  ScanView s(op);
  auto operands = s.operands();
  auto params = s.params();
  L.before_nested_body();
  std::vector<Slot> carries = carry_slots(L, operands.carries);
  // The stacked outputs, written one slice per iteration.
  std::vector<Slot> ys;
  for (size_t r = carries.size(); r < op.results.size(); ++r) ys.push_back(make_slot(L, op.results[r]->type));
  std::vector<Block> xs;
  for (const Value& v : operands.xs) xs.push_back(L.materialize(L.value(v)));
  std::vector<Operand> consts = resolve(L, operands.consts);
  const Body& body = s.body();
  L.for_range(L.i64(0), L.i64(s.length), [&](llvm::Value* step) {
    llvm::Value* i = s.reverse ? L.b.CreateSub(L.i64(s.length - 1), step) : step;
    for (size_t k = 0; k < consts.size(); ++k) bind(L, params.consts[k], consts[k]);
    for (size_t k = 0; k < carries.size(); ++k) L.define(params.carries[k], load_slot(L, carries[k]));
    for (size_t k = 0; k < xs.size(); ++k) L.define(params.xs[k], slice_of(xs[k], i));
    int64_t mark = L.arena_mark();
    L.lower_ops(body);
    // ys first: they may read the carries this iteration started with.
    for (size_t y = 0; y < ys.size(); ++y) {
      Block v = L.value(body.outputs()[carries.size() + y]);
      const Shape& inner = v.type.shape();
      llvm::Type* ct = L.compute_type(v.type.dtype());
      int64_t n = num_elements(inner);
      L.for_each_element(inner, [&](const std::vector<llvm::Value*>& idx) {
        llvm::Value* at = L.b.CreateAdd(L.b.CreateMul(i, L.i64(n)), L.linear_index(inner, idx));
        L.b.CreateStore(v.element(L, idx), L.b.CreateInBoundsGEP(ct, ys[y].ptr, {at}));
      });
    }
    for (size_t k = 0; k < carries.size(); ++k) store_slot(L, carries[k], L.value(body.outputs()[k]));
    L.arena_release(mark);
  });
  for (size_t r = 0; r < carries.size(); ++r) L.define(op.results[r], load_slot(L, carries[r]));
  for (size_t y = 0; y < ys.size(); ++y) L.define(op.results[carries.size() + y], load_slot(L, ys[y]));
}

// Scratch Refs live in the arena for the body's duration.
void lower_run_scoped(Lowering& L, const Op& op) {
  RunScopedView r(op);
  std::vector<Operand> args = resolve(L, r.args());
  for (size_t a = 0; a < args.size(); ++a) bind(L, r.arg_params()[a], args[a]);
  for (const Var* p : r.scratch_params()) {
    const Shape& shape = p->type.shape();
    RefView v;
    v.type = p->type;
    v.root = p;
    int64_t bytes = num_elements(shape) *
                    static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(L.storage_type(p->type.dtype())));
    v.base = L.arena_alloc(std::max<int64_t>(bytes, 1));
    int64_t stride = 1;
    v.origin.assign(shape.size(), L.i64(0));
    v.stride.resize(shape.size());
    v.extent.resize(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      v.stride[d] = L.i64(stride);
      v.extent[d] = L.i64(shape[d]);
      stride *= shape[d];
    }
    // Fresh and uninitialized at every entry, as the interpreter allocates it.
    L.fill_uninitialized(v);
    L.define_ref(p, std::move(v));
  }
  // No arena release: results may still read the scratch lazily.
  L.lower_ops(r.body());
  for (size_t k = 0; k < op.results.size(); ++k) L.define(op.results[k], L.value(r.body().outputs()[k]));
}

// A call is inlined: the callee's body with its parameters bound to the arguments.
void inline_body(Lowering& L, const Op& op, const Body& callee) {
  static thread_local int depth = 0;
  if (depth > 64) throw L.error(op, "calls nest more than 64 deep (recursion is not lowered)");
  ++depth;
  std::vector<Operand> args = resolve(L, op.operands);
  for (size_t a = 0; a < args.size(); ++a) bind(L, callee.params()[a], args[a]);
  L.lower_ops(callee);
  for (size_t k = 0; k < op.results.size(); ++k) L.define(op.results[k], L.value(callee.outputs()[k]));
  --depth;
}

}  // namespace

void add_control_rules(LlvmTable& t) {
  t.set("cond", lower_cond);
  t.set("for", lower_for);
  t.set("while", lower_while);
  t.set("scan", lower_scan);
  t.set("run_scoped", lower_run_scoped);
  t.set("call", [](Lowering& L, const Op& op) { inline_body(L, op, *op.param(keys::callee)); });
  for (const char* n : {"custom_jvp_call", "custom_vjp_call"})
    t.set(n, [](Lowering& L, const Op& op) { inline_body(L, op, *op.param(keys::call)); });
}

}  // namespace tessera::backends::llvm_lowering
