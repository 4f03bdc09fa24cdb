// Ref reads and writes: get, swap, addupdate, masked load and store, with
// every indexer entry tessera has (full, static / dynamic point, static /
// dynamic strided slice). The indexed region is addressed in place: element
// i of the region is Ref element to_ref(i), masked by the Ref's extents.
#include <algorithm>

#include "backends/llvm/kernel_lowering.h"

namespace tessera::backends::llvm_lowering {
namespace {

// The region an indexer selects from a Ref, as a map from region indices to
// Ref indices.
struct Region {
  RefView ref;
  Shape shape;
  struct Dim {
    IndexEntry::Kind kind;
    llvm::Value* start;  // i64 (Point / Slice)
    int64_t stride;
  };
  std::vector<Dim> dims;  // one per Ref dim

  std::vector<llvm::Value*> to_ref(Lowering& L, const std::vector<llvm::Value*>& idx) const {
    std::vector<llvm::Value*> out;
    size_t k = 0;
    for (const Dim& d : dims) {
      switch (d.kind) {
        case IndexEntry::Point: out.push_back(d.start); break;
        case IndexEntry::Slice: {
          llvm::Value* i = idx[k++];
          if (d.stride != 1) i = L.b.CreateMul(i, L.i64(d.stride));
          out.push_back(L.b.CreateAdd(d.start, i));
          break;
        }
        default: out.push_back(idx[k++]); break;
      }
    }
    return out;
  }
};

// A masked load or store reads / writes only the lanes on its mask, which
// may lie outside the Ref (Pallas's pl.load / pl.store with a mask).
bool is_masked(const Op& op) {
  size_t n = op.num_main_operands();
  return (op.name() == "load" && n >= 2) || (op.name() == "store" && n == 3);
}

// Every dynamic start must put the indexed region inside the Ref, as the
// interpreter's out-of-bounds read / write check requires.
void check_dynamic_indices(Lowering& L, const Op& op, const Indexer* ix, const Region& r) {
  if (!L.check_indices || !ix || is_masked(op)) return;
  const Shape& rs = r.ref.type.shape();
  llvm::Value* ok = nullptr;
  std::vector<llvm::Value*> starts;
  for (size_t d = 0; d < rs.size(); ++d) {
    const IndexEntry& e = ix->entries[d];
    if (!e.is_dynamic()) continue;
    starts.push_back(r.dims[d].start);
    int64_t size = e.kind == IndexEntry::Slice ? e.size : 1;
    if (size == 0) continue;
    // The last element read, start + (size - 1) * stride, must be below the dim too.
    int64_t limit = rs[d] - (size - 1) * (e.kind == IndexEntry::Slice ? e.stride : 1);
    llvm::Value* c = limit <= 0 ? L.b.getFalse() : L.b.CreateICmpULT(r.dims[d].start, L.i64(limit));
    ok = ok ? L.b.CreateAnd(ok, c) : c;
  }
  if (ok) L.check(ok, CheckKind::dynamic_index, L.checked_op(op), starts);
}

Region region(Lowering& L, const Op& op) {
  int ref_operand = op.main_operand_index(0);
  Region r{L.ref(op.operands[ref_operand]), {}, {}};
  const Shape& rs = r.ref.type.shape();
  const Indexer* ix = op.indexer_for(ref_operand);
  for (size_t d = 0; d < rs.size(); ++d) {
    IndexEntry e = ix ? ix->entries[d] : IndexEntry::full();
    if (e.is_indirect() || e.has_dynamic_size())
      throw L.error(op, "indexing by a Ref of offsets or a dynamic size is only lowered in DMAs, which are TPU-only");
    llvm::Value* start = L.i64(e.start);
    if (e.is_dynamic()) start = L.b.CreateSExtOrTrunc(L.scalar(op.operands[e.dyn_start]), L.b.getInt64Ty());
    r.dims.push_back({e.kind, start, e.stride});
    if (e.kind == IndexEntry::Full) r.shape.push_back(rs[d]);
    if (e.kind == IndexEntry::Slice) r.shape.push_back(e.size);
  }
  check_dynamic_indices(L, op, ix, r);
  return r;
}

// Element `idx` of a value operand that may be a rank-0 broadcast.
llvm::Value* element_of(Lowering& L, const Block& v, const std::vector<llvm::Value*>& idx) {
  static const std::vector<llvm::Value*> none;
  return v.element(L, v.type.is_scalar() ? none : idx);
}

// The region as a view of its own (Block::view) when it keeps every dim with
// unit stride: origins moved to the region's starts; else null.
std::shared_ptr<const RefView> region_view(Lowering& L, const Region& r) {
  for (const Region::Dim& dim : r.dims)
    if (dim.kind == IndexEntry::Point || (dim.kind == IndexEntry::Slice && dim.stride != 1)) return nullptr;
  auto view = std::make_shared<RefView>(r.ref);
  for (size_t d = 0; d < r.dims.size(); ++d)
    if (r.dims[d].kind == IndexEntry::Slice) view->origin[d] = L.b.CreateAdd(r.ref.origin[d], r.dims[d].start);
  view->type = Type::ref(r.ref.type.dtype(), r.shape, r.ref.type.mem_space());
  return view;
}

// A lazy read of the region: elements are loaded where the consumer needs them.
void lower_get(Lowering& L, const Op& op) {
  Region r = region(L, op);
  Block blk;
  blk.type = op.results[0]->type;
  blk.cost = 1;
  blk.reads = {r.ref.root};
  blk.element = [r](Lowering& l, const std::vector<llvm::Value*>& idx) { return l.load(r.ref, r.to_ref(l, idx)); };
  blk.view = region_view(L, r);
  L.define(op.results[0], std::move(blk));
}

// Before any write: lazy readers of the Ref are materialized, and on NVPTX
// every thread has finished reading (scalars are read by all threads).
Region start_write(Lowering& L, const Op& op) {
  Region r = region(L, op);
  L.before_write(r.ref.root);
  L.barrier();
  return r;
}

// swap: the old contents (when used) are read by the thread that writes each
// element, into a buffer, in the same loop as the write.
void lower_swap(Lowering& L, const Op& op) {
  Region r = start_write(L, op);
  Block v = L.value(op.main_operand(1));
  bool keep_old = !op.results.empty() && L.used_later(op.results[0]);
  DType dt = r.ref.type.dtype();
  llvm::Type* ct = L.compute_type(dt);
  llvm::Value* old = keep_old ? L.arena_alloc(std::max<int64_t>(num_elements(r.shape), 1) * 8) : nullptr;
  L.for_each_element(r.shape, [&](const std::vector<llvm::Value*>& idx) {
    std::vector<llvm::Value*> at = r.to_ref(L, idx);
    if (old) L.b.CreateStore(L.load(r.ref, at), L.b.CreateInBoundsGEP(ct, old, {L.linear_index(r.shape, idx)}));
    L.store(r.ref, at, element_of(L, v, idx));
  });
  if (!keep_old) return;
  Block result = L.buffer_block(op.results[0]->type, old);
  if (r.shape.empty()) result = L.scalar_block(dt, L.b.CreateLoad(ct, old));
  L.define(op.results[0], std::move(result));
}

void lower_addupdate(Lowering& L, const Op& op) {
  Region r = start_write(L, op);
  Block v = L.value(op.main_operand(1));
  DType dt = r.ref.type.dtype();
  L.for_each_element(r.shape, [&](const std::vector<llvm::Value*>& idx) {
    std::vector<llvm::Value*> at = r.to_ref(L, idx);
    llvm::Value* cur = L.load(r.ref, at);
    llvm::Value* add = element_of(L, v, idx);
    L.store(r.ref, at, is_float(dt) ? L.b.CreateFAdd(cur, add) : L.b.CreateAdd(cur, add));
  });
}

// load %r[idx], %mask, %other: lanes off the mask (which may lie outside the
// Ref) read `other`, or the padding value without one.
void lower_load(Lowering& L, const Op& op) {
  Region r = region(L, op);
  size_t n = op.num_main_operands();
  Block blk;
  blk.type = op.results[0]->type;
  blk.cost = 2;
  blk.reads = {r.ref.root};
  if (n == 1) {
    blk.element = [r](Lowering& l, const std::vector<llvm::Value*>& idx) { return l.load(r.ref, r.to_ref(l, idx)); };
    L.define(op.results[0], std::move(blk));
    return;
  }
  Block mask = L.value(op.main_operand(1));
  std::optional<Block> other;
  if (n == 3) other = L.value(op.main_operand(2));
  DType dt = r.ref.type.dtype();
  blk.cost += mask.cost + (other ? other->cost : 0);
  blk.depth = 1 + std::max(mask.depth, other ? other->depth : 0);
  blk.reads.insert(blk.reads.end(), mask.reads.begin(), mask.reads.end());
  if (other) blk.reads.insert(blk.reads.end(), other->reads.begin(), other->reads.end());
  blk.element = [r, mask, other, dt](Lowering& l, const std::vector<llvm::Value*>& idx) -> llvm::Value* {
    llvm::Value* on = element_of(l, mask, idx);
    llvm::Value* off = other ? element_of(l, *other, idx) : l.padding_value(dt);
    llvm::BasicBlock* from = l.b.GetInsertBlock();
    llvm::BasicBlock* read = llvm::BasicBlock::Create(l.llctx, "masked.load", l.fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(l.llctx, "masked.join", l.fn);
    l.b.CreateCondBr(on, read, join);
    l.b.SetInsertPoint(read);
    llvm::Value* v = l.load(r.ref, r.to_ref(l, idx));
    llvm::BasicBlock* read_end = l.b.GetInsertBlock();
    l.b.CreateBr(join);
    l.b.SetInsertPoint(join);
    llvm::PHINode* phi = l.b.CreatePHI(l.compute_type(dt), 2);
    phi->addIncoming(off, from);
    phi->addIncoming(v, read_end);
    return phi;
  };
  L.define(op.results[0], std::move(blk));
}

// store %r[idx], %value, %mask: only lanes on the mask are written.
void lower_store(Lowering& L, const Op& op) {
  Region r = start_write(L, op);
  Block v = L.value(op.main_operand(1));
  std::optional<Block> mask;
  if (op.num_main_operands() == 3) mask = L.value(op.main_operand(2));
  L.for_each_element(r.shape, [&](const std::vector<llvm::Value*>& idx) {
    auto write = [&] { L.store(r.ref, r.to_ref(L, idx), element_of(L, v, idx)); };
    if (mask)
      L.if_then(element_of(L, *mask, idx), write);
    else
      write();
  });
}

}  // namespace

void add_memory_rules(LlvmTable& t) {
  t.set("get", lower_get);
  t.set("swap", lower_swap);
  t.set("addupdate", lower_addupdate);
  t.set("load", lower_load);
  t.set("store", lower_store);
}

}  // namespace tessera::backends::llvm_lowering
