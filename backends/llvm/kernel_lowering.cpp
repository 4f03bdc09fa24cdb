#include "backends/llvm/kernel_lowering.h"

#include <algorithm>
#include <unordered_set>

#include <llvm/ADT/APFloat.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>

#include "backends/llvm/codegen.h"
#include "backends/llvm/resident_output.h"
#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {

Lowering::Lowering(llvm::IRBuilder<>& builder, llvm::Function* function, Target t, const LlvmTable& rules, int nthreads)
    : b(builder),
      target(t),
      llctx(builder.getContext()),
      module(*function->getParent()),
      fn(function),
      table(rules),
      threads(t == Target::nvptx ? nthreads : 1) {}

// ---- values and Refs ---------------------------------------------------------

const Block& Lowering::value(const Value& v) {
  if (v.is_literal()) {
    DType dtype = v.literal().dtype;
    llvm::Value* c = literal(v.literal(), dtype);  // LLVM constants are unique: c names the value
    auto [it, added] = literal_blocks_.try_emplace({c, dtype});
    if (added) it->second = scalar_block(dtype, c);
    return it->second;
  }
  auto it = values_.find(v.var());
  if (it == values_.end()) {
    if (current_) throw error(*current_, "value %" + v.var()->name + " was never lowered");
    throw Error(table.target() + ": value %" + v.var()->name + " was never lowered");
  }
  int& left = uses_[v.var()];
  --left;
  Block& blk = it->second;
  // Recomputing an expensive generator at every use costs more than a buffer.
  if (!blk.buffer && blk.cost > kMaxLazyCost && left > 0 && !blk.type.is_scalar()) blk = materialize(blk);
  return blk;
}

void Lowering::define(const Var* var, Block block) {
  if (block.type.is_scalar() && !block.buffer && (block.cost > 0 || !block.reads.empty())) {
    // A scalar is computed where it is defined: program order, once.
    block = scalar_block(block.type.dtype(), block.element(*this, {}));
  }
  if (!block.buffer && block.depth > kMaxChainDepth) block = materialize(block);
  if (!block.buffer && !block.reads.empty()) lazy_.push_back(var);
  values_[var] = std::move(block);
}

const RefView& Lowering::ref(const Value& v) {
  auto it = v.is_var() ? refs_.find(v.var()) : refs_.end();
  if (it == refs_.end()) {
    std::string what = v.is_var() ? "%" + v.var()->name : v.literal().str();
    if (current_) throw error(*current_, "Ref " + what + " was never lowered");
    throw Error(table.target() + ": Ref " + what + " was never lowered");
  }
  return it->second;
}

void Lowering::define_ref(const Var* var, RefView view) { refs_[var] = std::move(view); }

Block Lowering::scalar_block(DType dtype, llvm::Value* v) const {
  Block blk;
  blk.type = Type::scalar(dtype);
  blk.element = [v](Lowering&, const std::vector<llvm::Value*>&) { return v; };
  return blk;
}

Block Lowering::buffer_block(const Type& type, llvm::Value* buffer) {
  Block blk;
  blk.type = Type::array(type.dtype(), type.shape());
  blk.buffer = buffer;
  Shape shape = type.shape();
  llvm::Type* ct = compute_type(type.dtype());
  blk.element = [buffer, shape, ct](Lowering& L, const std::vector<llvm::Value*>& idx) -> llvm::Value* {
    llvm::Value* p = L.b.CreateInBoundsGEP(ct, buffer, {L.linear_index(shape, idx)});
    return L.b.CreateLoad(ct, p);
  };
  return blk;
}

llvm::Value* Lowering::literal(const Literal& lit, DType dtype) {
  llvm::Type* ct = compute_type(dtype);
  if (is_float(dtype)) {
    // A bf16 / f16 constant holds its dtype's value (rounded to nearest even).
    llvm::APFloat f(lit.as_double());
    bool lost = false;
    if (dtype == DType::bf16) f.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven, &lost);
    if (dtype == DType::f16) f.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven, &lost);
    f.convert(dtype == DType::f64 ? llvm::APFloat::IEEEdouble() : llvm::APFloat::IEEEsingle(),
              llvm::APFloat::rmNearestTiesToEven, &lost);
    return llvm::ConstantFP::get(ct, f);
  }
  int64_t i = lit.as_int();
  if (is_bool(dtype)) return b.getInt1(i != 0);
  return llvm::ConstantInt::get(ct, static_cast<uint64_t>(i), is_signed_int(dtype));
}

llvm::Value* Lowering::scalar(const Value& v) { return value(v).element(*this, {}); }

// ---- loops, buffers, barriers ------------------------------------------------

Block Lowering::materialize(const Block& block) {
  if (block.buffer) return block;
  if (block.type.is_scalar()) return scalar_block(block.type.dtype(), block.element(*this, {}));
  llvm::Type* ct = compute_type(block.type.dtype());
  int64_t n = num_elements(block.type.shape());
  int64_t elt = static_cast<int64_t>(module.getDataLayout().getTypeAllocSize(ct));
  llvm::Value* buf = arena_alloc(std::max<int64_t>(n * elt, 1));
  Shape shape = block.type.shape();
  for_each_element(shape, [&](const std::vector<llvm::Value*>& idx) {
    llvm::Value* v = block.element(*this, idx);
    b.CreateStore(v, b.CreateInBoundsGEP(ct, buf, {linear_index(shape, idx)}));
  });
  return buffer_block(block.type, buf);
}

llvm::Value* Lowering::for_range(llvm::Value* lo, llvm::Value* hi, const std::function<void(llvm::Value* i)>& body,
                                 int64_t step) {
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(llctx, "loop", fn);
  llvm::BasicBlock* inner = llvm::BasicBlock::Create(llctx, "body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(llctx, "done", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(lo->getType(), 2, "i");
  i->addIncoming(lo, pre);
  b.CreateCondBr(b.CreateICmpSLT(i, hi), inner, exit);
  b.SetInsertPoint(inner);
  body(i);
  llvm::Value* next = b.CreateAdd(i, llvm::ConstantInt::get(i->getType(), static_cast<uint64_t>(step)), "",
                                  /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(head);
  b.SetInsertPoint(exit);
  return i;
}

void Lowering::for_each_element(const Shape& s, const std::function<void(const std::vector<llvm::Value*>& idx)>& body) {
  int64_t n = num_elements(s);
  if (n == 0) return;
  if (target == Target::host) {
    // Nested loops, last dim innermost: consecutive addresses, vectorizable.
    std::vector<llvm::Value*> idx(s.size());
    std::function<void(size_t)> nest = [&](size_t d) {
      if (d == s.size()) return body(idx);
      if (s[d] == 1) {
        idx[d] = i64(0);
        return nest(d + 1);
      }
      for_range(i64(0), i64(s[d]), [&](llvm::Value* i) {
        idx[d] = i;
        nest(d + 1);
      });
    };
    nest(0);
    return;
  }
  // NVPTX: thread t handles the run of kVectorRun consecutive linear
  // elements starting at kVectorRun * t, then kVectorRun * (t + threads),
  // ...; the minor dim varies fastest across threads, so global accesses
  // coalesce, and a run's loads and stores merge into one 16-byte vector
  // access (LLVM's load/store vectorizer; arrays are 16-byte aligned) when
  // the minor dim is a multiple of the run. Otherwise runs of one element,
  // and so in a kernel that gets the linear passes (kLinearPassesAttr): they
  // neither unroll the run's loop nor vectorize its accesses, so runs would
  // only add a loop per element loop to the code generator's work and make
  // each thread's accesses strided.
  if (s.empty()) {
    if_then(b.CreateICmpEQ(thread_id, i64(0)), [&] { body({}); });
  } else {
    bool vector_runs = s.back() % kVectorRun == 0 && !fn->hasFnAttribute(kLinearPassesAttr);
    int64_t run = vector_runs ? kVectorRun : 1;
    llvm::Value* first = run == 1 ? thread_id : b.CreateMul(thread_id, i64(run), "", true, true);
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(llctx, "elt", fn);
    llvm::BasicBlock* inner = llvm::BasicBlock::Create(llctx, "elt.body", fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(llctx, "elt.done", fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode* e = b.CreatePHI(b.getInt64Ty(), 2, "e");
    e->addIncoming(first, pre);
    b.CreateCondBr(b.CreateICmpSLT(e, i64(n)), inner, exit);
    b.SetInsertPoint(inner);
    std::vector<llvm::Value*> idx(s.size());
    llvm::Value* rest = e;
    for (size_t d = s.size(); d-- > 0;) {
      if (d == 0) {
        idx[d] = rest;
      } else {
        idx[d] = s[d] == 1 ? i64(0) : b.CreateURem(rest, i64(s[d]));
        rest = s[d] == 1 ? rest : b.CreateUDiv(rest, i64(s[d]));
      }
    }
    if (run == 1) {
      body(idx);
    } else {  // the run lies in one line of the minor dim: a loop of constant trip count, unrolled by O3
      llvm::Value* minor = idx.back();
      for_range(i64(0), i64(run), [&](llvm::Value* v) {
        idx.back() = b.CreateAdd(minor, v, "", true, true);
        body(idx);
      });
    }
    llvm::Value* next = b.CreateAdd(e, i64(threads * run), "", true, true);
    e->addIncoming(next, b.GetInsertBlock());
    b.CreateBr(head);
    b.SetInsertPoint(exit);
  }
  barrier();
}

void Lowering::barrier() {
  if (target != Target::nvptx) return;
  // Two barriers with nothing but arithmetic between them (an op's index
  // computations) synchronize no more than one.
  llvm::BasicBlock* bb = b.GetInsertBlock();
  if (b.GetInsertPoint() == bb->end())
    for (const llvm::Instruction& inst : llvm::reverse(*bb)) {
      if (const auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
        if (call->getIntrinsicID() == llvm::Intrinsic::nvvm_barrier0) return;
      if (inst.mayReadOrWriteMemory() || inst.mayHaveSideEffects()) break;
    }
  b.CreateCall(intrinsic(llvm::Intrinsic::nvvm_barrier0));
}

llvm::Value* Lowering::arena_alloc(int64_t bytes) {
  int64_t offset = (arena_top_ + 63) / 64 * 64;
  arena_top_ = offset + (bytes + 63) / 64 * 64;
  arena_high_ = std::max(arena_high_, arena_top_);
  return b.CreateInBoundsGEP(b.getInt8Ty(), arena_base, {i64(offset)}, "arena");
}

bool Lowering::shared_fits(int64_t bytes) const {
  return target == Target::nvptx && shared_top_ + (bytes + 15) / 16 * 16 <= shared_limit(sm);
}

llvm::Value* Lowering::shared_alloc(int64_t bytes) {
  if (!shared_fits(bytes)) return arena_alloc(bytes);
  if (!shared_base_) {
    // `.extern .shared .align 16 .b8 NAME_shared[]`: the launch's dynamic
    // shared memory (the runner passes shared_bytes() as its size).
    auto* type = llvm::ArrayType::get(b.getInt8Ty(), 0);
    auto* gv = new llvm::GlobalVariable(module, type, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                        fn->getName() + "_shared", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    gv->setAlignment(llvm::Align(16));
    shared_base_ = llvm::ConstantExpr::getAddrSpaceCast(gv, llvm::PointerType::get(llctx, 0));
  }
  int64_t offset = shared_top_;
  shared_top_ = offset + (bytes + 15) / 16 * 16;
  shared_high_ = std::max(shared_high_, shared_top_);
  return b.CreateInBoundsGEP(b.getInt8Ty(), shared_base_, {i64(offset)}, "shared");
}

// ---- types ---------------------------------------------------------------------

llvm::Type* Lowering::compute_type(DType d) {
  switch (d) {
    case DType::f32:
    case DType::bf16:
    case DType::f16: return b.getFloatTy();
    case DType::f64: return b.getDoubleTy();
    case DType::i1: return b.getInt1Ty();
    default: return b.getIntNTy(static_cast<unsigned>(dtype_bytes(d) * 8));
  }
}

llvm::Type* Lowering::storage_type(DType d) {
  switch (d) {
    case DType::bf16: return b.getInt16Ty();  // the bits; arithmetic converts (no bf16 libcalls)
    case DType::f16: return b.getHalfTy();
    case DType::i1: return b.getInt8Ty();
    default: return compute_type(d);
  }
}

llvm::Value* Lowering::to_compute(llvm::Value* stored, DType d) {
  switch (d) {
    case DType::bf16:
      return b.CreateBitCast(b.CreateShl(b.CreateZExt(stored, b.getInt32Ty()), 16), b.getFloatTy());
    case DType::f16: return b.CreateFPExt(stored, b.getFloatTy());
    case DType::i1: return b.CreateICmpNE(stored, b.getInt8(0));
    default: return stored;
  }
}

llvm::Value* Lowering::to_storage(llvm::Value* computed, DType d) {
  switch (d) {
    case DType::bf16: {
      // The interpreter's round_to_bf16 (value_convert.cpp), then the high half.
      llvm::Value* bits = b.CreateBitCast(round_float(*this, computed, d), b.getInt32Ty());
      return b.CreateTrunc(b.CreateLShr(bits, 16), b.getInt16Ty());
    }
    case DType::f16: return b.CreateFPTrunc(computed, b.getHalfTy());  // IEEE: round to nearest even
    case DType::i1: return b.CreateZExt(computed, b.getInt8Ty());
    default: return computed;
  }
}

// runtime/region.cpp fill_uninitialized: NaN, true, or the integer
// type's largest value (RunOptions::Uninit::nan); zero (Uninit::zero).
llvm::Value* Lowering::padding_value(DType d) {
  llvm::Type* ct = compute_type(d);
  if (uninit_zero) return llvm::Constant::getNullValue(ct);
  if (is_float(d)) return llvm::ConstantFP::getNaN(ct);
  if (is_bool(d)) return b.getInt1(true);
  unsigned bits = ct->getIntegerBitWidth();
  return b.getInt(is_unsigned_int(d) ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits));
}

void Lowering::fill_uninitialized(const RefView& r) {
  DType d = r.type.dtype();
  if (is_semaphore(d)) return;
  llvm::Value* v = padding_value(d);
  for_each_element(r.type.shape(), [&](const std::vector<llvm::Value*>& idx) { store(r, idx, v); });
}

// ---- helpers -------------------------------------------------------------------

llvm::Function* Lowering::intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Type*> types) {
  return llvm::Intrinsic::getDeclaration(&module, id, types);
}

Error Lowering::error(const Op& op, std::string_view message) const {
  return Error(op.loc, table.target() + ": " + std::string(message));
}

llvm::Value* Lowering::linear_index(const Shape& shape, const std::vector<llvm::Value*>& idx) {
  llvm::Value* lin = nullptr;
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    llvm::Value* term = stride == 1 ? idx[d] : b.CreateMul(idx[d], i64(stride), "", true, true);
    lin = lin ? b.CreateAdd(lin, term, "", true, true) : term;
    stride *= shape[d];
  }
  return lin ? lin : i64(0);
}

llvm::Value* Lowering::in_bounds(const RefView& r, const std::vector<llvm::Value*>& idx) {
  if (!r.maybe_partial) return nullptr;
  llvm::Value* ok = nullptr;
  for (size_t d = 0; d < idx.size(); ++d) {
    // One unsigned compare covers 0 <= p < extent.
    llvm::Value* c = b.CreateICmpULT(b.CreateAdd(r.origin[d], idx[d]), r.extent[d]);
    ok = ok ? b.CreateAnd(ok, c) : c;
  }
  return ok;
}

llvm::Value* Lowering::address(const RefView& r, const std::vector<llvm::Value*>& idx) {
  llvm::Value* off = i64(0);
  for (size_t d = 0; d < idx.size(); ++d) off = b.CreateAdd(off, b.CreateMul(b.CreateAdd(r.origin[d], idx[d]), r.stride[d]));
  return b.CreateGEP(storage_type(r.type.dtype()), r.base, {off});
}

llvm::Value* Lowering::load(const RefView& r, const std::vector<llvm::Value*>& idx) {
  DType d = r.type.dtype();
  llvm::Value* ok = in_bounds(r, idx);
  if (!ok) return to_compute(b.CreateLoad(storage_type(d), address(r, idx)), d);
  llvm::BasicBlock* from = b.GetInsertBlock();
  llvm::BasicBlock* real = llvm::BasicBlock::Create(llctx, "real", fn);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(llctx, "loaded", fn);
  b.CreateCondBr(ok, real, join);
  b.SetInsertPoint(real);
  llvm::Value* v = to_compute(b.CreateLoad(storage_type(d), address(r, idx)), d);
  llvm::BasicBlock* real_end = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  llvm::PHINode* phi = b.CreatePHI(compute_type(d), 2);
  phi->addIncoming(padding_value(d), from);
  phi->addIncoming(v, real_end);
  return phi;
}

void Lowering::store(const RefView& r, const std::vector<llvm::Value*>& idx, llvm::Value* computed) {
  DType d = r.type.dtype();
  auto write = [&] { b.CreateStore(to_storage(computed, d), address(r, idx)); };
  if (llvm::Value* ok = in_bounds(r, idx))
    if_then(ok, write);
  else
    write();
}

void Lowering::if_then(llvm::Value* c, const std::function<void()>& then) {
  llvm::BasicBlock* yes = llvm::BasicBlock::Create(llctx, "then", fn);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(llctx, "endif", fn);
  b.CreateCondBr(c, yes, join);
  b.SetInsertPoint(yes);
  then();
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

// ---- run-time checks -------------------------------------------------------------

void Lowering::check(llvm::Value* ok, CheckKind kind, int64_t which, const std::vector<llvm::Value*>& values) {
  if (speculating) {  // the condition joins the speculation's, nothing is reported
    *speculating = *speculating ? b.CreateAnd(*speculating, ok) : ok;
    return;
  }
  if (!check_record) return;
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(llctx, "check.fail", fn);
  llvm::BasicBlock* pass = llvm::BasicBlock::Create(llctx, "check.ok", fn);
  llvm::MDBuilder md(llctx);
  b.CreateCondBr(ok, pass, fail, md.createBranchWeights(1 << 20, 1));
  b.SetInsertPoint(fail);
  llvm::Type* i64t = b.getInt64Ty();
  auto word = [&](int w) { return b.CreateConstInBoundsGEP1_64(i64t, check_record, static_cast<uint64_t>(w)); };
  // The first violation wins; the others leave the record alone.
  llvm::Value* cas = b.CreateAtomicCmpXchg(word(kCheckKind), i64(0), i64(static_cast<int64_t>(kind)), llvm::MaybeAlign(8),
                                           llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  if_then(b.CreateExtractValue(cas, 1), [&] {
    b.CreateStore(i64(which), word(kCheckWhich));
    for (size_t a = 0; a < program_ids.size() && a < static_cast<size_t>(kMaxCheckedAxes); ++a)
      if (program_ids[a]) b.CreateStore(b.CreateSExt(program_ids[a], i64t), word(kCheckPoint + static_cast<int>(a)));
    for (size_t k = 0; k < values.size() && k < static_cast<size_t>(kMaxCheckedValues); ++k)
      b.CreateStore(b.CreateSExtOrTrunc(values[k], i64t), word(kCheckValues + static_cast<int>(k)));
  });
  b.CreateRetVoid();
  b.SetInsertPoint(pass);
}

int64_t Lowering::checked_op(const Op& op) {
  auto [it, added] = checked_op_numbers_.try_emplace(&op, static_cast<int64_t>(checked_ops.size()));
  if (added) checked_ops.push_back(&op);
  return it->second;
}

// ---- bodies --------------------------------------------------------------------

void Lowering::lower_ops(const Body& body) {
  // Bodies are closed: counting this body's uses is enough for its Vars.
  for (const Op& op : body.ops())
    for (const Value& v : op.operands)
      if (v.is_var()) ++uses_[v.var()];
  for (const Value& v : body.outputs())
    if (v.is_var()) ++uses_[v.var()];
  const Op *outer = current_, *outer_next = next_;
  const std::vector<Op>& ops = body.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    current_ = &op;
    next_ = i + 1 < ops.size() ? &ops[i + 1] : nullptr;
    if (&op == fused_) {  // lowered with the op before it: only its uses are gone
      fused_ = nullptr;
      for (const Value& v : op.operands)
        if (v.is_var()) --uses_[v.var()];
      continue;
    }
    bool around_resident = touches_resident(op);
    if (around_resident) store_resident(*this, *resident);
    table.at(op)(*this, op);
    if (around_resident) load_resident(*this, *resident);
  }
  current_ = outer, next_ = outer_next;
  // The body's own lazy values are gone with it (what it returns is defined
  // again by its op's rule): none may be materialized where they do not dominate.
  std::unordered_set<const Var*> local(body.params().begin(), body.params().end());
  for (const Op& op : body.ops()) local.insert(op.results.begin(), op.results.end());
  std::erase_if(lazy_, [&](const Var* v) { return local.count(v) > 0; });
}

// An op with the resident block's Ref as an operand sees memory; an op with
// bodies (cond, loops) only passes the Ref on, to the ops inside, which are
// checked themselves.
bool Lowering::touches_resident(const Op& op) const {
  if (!resident || !op.nested_bodies().empty()) return false;
  for (const Value& v : op.operands) {
    if (!v.is_var()) continue;
    auto it = refs_.find(v.var());
    if (it != refs_.end() && it->second.root == resident->root) return true;
  }
  return false;
}

bool Lowering::used_later(const Var* v) const { return uses_left(v) > 0; }

int Lowering::uses_left(const Var* v) const {
  auto it = uses_.find(v);
  return it == uses_.end() ? 0 : it->second;
}

void Lowering::before_write(const Var* root) {
  std::vector<const Var*> still_lazy;
  for (const Var* v : lazy_) {
    auto it = values_.find(v);
    if (it == values_.end() || it->second.buffer || uses_[v] <= 0) continue;
    const auto& reads = it->second.reads;
    if (std::find(reads.begin(), reads.end(), root) != reads.end())
      it->second = materialize(it->second);
    else
      still_lazy.push_back(v);
  }
  lazy_ = std::move(still_lazy);
}

void Lowering::before_nested_body() {
  for (const Var* v : lazy_) {
    auto it = values_.find(v);
    if (it == values_.end() || it->second.buffer || uses_[v] <= 0) continue;
    it->second = materialize(it->second);
  }
  lazy_.clear();
}

}  // namespace tessera::backends::llvm_lowering
