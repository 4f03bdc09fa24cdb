// Reductions (reduce_sum / prod / max / min / and / or), argmax / argmin,
// cumsum, and sort (which compares along a line the way they combine).
//
// Host: each result is computed once into an arena buffer (its consumers,
// often a broadcast back over the reduced axes, read it many times), from the
// operand materialized in the arena. Float sums follow the interpreter's order
// (runtime/kernels/reductions.cpp) so results match it bit for bit: the
// operand is seen as runs of kept and reduced dims (size-1 dims skipped); a
// trailing reduced run is summed with 8 interleaved partial results combined
// in order at the end, every other reduced index is combined in row-major
// order. bf16 / f16 accumulate in f32 and round once per output element (per
// output element for cumsum too).
//
// NVPTX: reduce_* and argmax / argmin spread each output element over a
// thread, a warp or the CTA, and cumsum scans each line with a warp
// (gpu_reduce.cpp, where the rules and the order of combining are
// documented); sort keeps a thread per element.
#include "backends/llvm/reduce.h"
#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {

llvm::Value* combine(Lowering& L, Red r, DType d, llvm::Value* a, llvm::Value* b) {
  auto& B = L.b;
  switch (r) {
    case Red::sum: return is_float(d) ? B.CreateFAdd(a, b) : B.CreateAdd(a, b);
    case Red::prod: return is_float(d) ? B.CreateFMul(a, b) : B.CreateMul(a, b);
    case Red::max: return max_of(L, a, b, d);
    case Red::min: return min_of(L, a, b, d);
    case Red::all: return B.CreateAnd(a, b);
    case Red::any: return B.CreateOr(a, b);
  }
  return a;
}

llvm::Value* identity(Lowering& L, Red r, DType d) {
  llvm::Type* t = L.compute_type(d);
  switch (r) {
    case Red::sum:
    case Red::any: return llvm::Constant::getNullValue(t);
    case Red::prod: return constant(L, d, 1);
    case Red::all: return llvm::Constant::getAllOnesValue(t);
    case Red::max:
    case Red::min: {
      bool mx = r == Red::max;
      if (t->isFloatingPointTy()) return llvm::ConstantFP::getInfinity(t, mx);
      unsigned w = t->getIntegerBitWidth();
      if (is_unsigned(d)) return llvm::ConstantInt::get(t, mx ? llvm::APInt::getMinValue(w) : llvm::APInt::getMaxValue(w));
      return llvm::ConstantInt::get(t, mx ? llvm::APInt::getSignedMinValue(w) : llvm::APInt::getSignedMaxValue(w));
    }
  }
  return nullptr;
}

namespace {

using Index = std::vector<llvm::Value*>;

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

// Element `flat` of a materialized Block (its buffer, row-major, compute type).
llvm::Value* load_flat(Lowering& L, const Block& x, llvm::Value* flat) {
  llvm::Type* t = L.compute_type(x.type.dtype());
  return L.b.CreateLoad(t, L.b.CreateGEP(t, x.buffer, flat));
}

// sum_d idx[d] * stride[d] over the given dims.
llvm::Value* offset_of(Lowering& L, const std::vector<int>& dims, const Index& idx, const std::vector<int64_t>& stride) {
  llvm::Value* off = L.i64(0);
  for (size_t k = 0; k < dims.size(); ++k)
    off = L.b.CreateAdd(off, L.b.CreateMul(idx[k], L.i64(stride[static_cast<size_t>(dims[k])])));
  return off;
}

// Combines elements start .. start + n - 1 of x with 8 interleaved partial
// results (reduce_row of the interpreter): one <8 x T> accumulator over
// contiguous <8 x T> loads (so the hot loop is vector code), the tail into
// lane 0, then the lanes combined in order. Bools (one byte per i1 in the
// buffer, which a <8 x i1> load would misread) take 8 scalars instead.
llvm::Value* reduce_row(Lowering& L, Red r, const Block& x, llvm::Value* start, int64_t n) {
  auto& B = L.b;
  DType d = x.type.dtype();
  llvm::Type* t = L.compute_type(d);
  auto* init = llvm::cast<llvm::Constant>(identity(L, r, d));
  std::vector<llvm::Value*> lanes;
  if (!is_bool(d)) {
    auto* vt = llvm::FixedVectorType::get(t, 8);
    llvm::Value* acc = local_variable(L, vt, "partials");
    B.CreateStore(llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(8), init), acc);
    const llvm::Align align(L.module.getDataLayout().getTypeAllocSize(t));
    L.for_range(L.i64(0), L.i64(n / 8), [&](llvm::Value* i) {
      llvm::Value* at = B.CreateGEP(t, x.buffer, B.CreateAdd(start, B.CreateMul(i, L.i64(8))));
      llvm::Value* v = B.CreateAlignedLoad(vt, at, align);
      B.CreateStore(combine(L, r, d, B.CreateLoad(vt, acc), v), acc);
    });
    llvm::Value* all = B.CreateLoad(vt, acc);
    for (int k = 0; k < 8; ++k) lanes.push_back(B.CreateExtractElement(all, static_cast<uint64_t>(k)));
  } else {
    for (int k = 0; k < 8; ++k) {
      lanes.push_back(local_variable(L, t, "partial"));
      B.CreateStore(init, lanes.back());
    }
    L.for_range(L.i64(0), L.i64(n / 8), [&](llvm::Value* i) {
      llvm::Value* at = B.CreateAdd(start, B.CreateMul(i, L.i64(8)));
      for (int k = 0; k < 8; ++k)
        B.CreateStore(combine(L, r, d, B.CreateLoad(t, lanes[k]), load_flat(L, x, B.CreateAdd(at, L.i64(k)))), lanes[k]);
    });
    for (llvm::Value*& lane : lanes) lane = B.CreateLoad(t, lane);
  }
  llvm::Value* first = local_variable(L, t, "partial0");
  B.CreateStore(lanes[0], first);
  L.for_range(L.i64(n / 8 * 8), L.i64(n), [&](llvm::Value* i) {
    B.CreateStore(combine(L, r, d, B.CreateLoad(t, first), load_flat(L, x, B.CreateAdd(start, i))), first);
  });
  llvm::Value* total = B.CreateLoad(t, first);
  for (int k = 1; k < 8; ++k) total = combine(L, r, d, total, lanes[k]);
  return total;
}

LlvmRule reduce_rule(Red r) {
  return [r](Lowering& L, const Op& op) {
    if (L.target == Target::nvptx) {
      Block operand = reduction_operand(L, op.main_operand(0));
      std::vector<bool> axes(operand.type.shape().size(), false);
      for (int64_t a : op.param(keys::axes)) axes[static_cast<size_t>(a)] = true;
      L.define(op.results[0], gpu_reduce(L, r, operand, axes, op.results[0]->type));
      return;
    }
    Block x = L.materialize(L.value(op.main_operand(0)));
    const Shape& s = x.type.shape();
    DType d = x.type.dtype();
    std::vector<bool> reduced(s.size(), false);
    for (int64_t a : op.param(keys::axes)) reduced[static_cast<size_t>(a)] = true;
    // Kept dims (the result's, in order); the trailing reduced run (dims of
    // size > 1 only, contiguous in memory); the other reduced dims.
    std::vector<int> kept, inner, outer;
    int last_big = -1;
    for (int k = 0; k < static_cast<int>(s.size()); ++k) {
      if (!reduced[k]) kept.push_back(k);
      if (s[k] != 1) last_big = k;
    }
    int run_start = static_cast<int>(s.size());
    if (last_big >= 0 && reduced[last_big]) {
      run_start = last_big;
      for (int k = last_big; k >= 0; --k) {
        if (s[k] == 1) continue;
        if (!reduced[k]) break;
        run_start = k;
      }
    }
    int64_t inner_n = 1;
    for (int k = 0; k < static_cast<int>(s.size()); ++k) {
      if (!reduced[k] || s[k] == 1) continue;
      if (k >= run_start) inner.push_back(k), inner_n *= s[k];
      else outer.push_back(k);
    }
    int64_t outer_n = 1;
    Shape outer_sizes;
    for (int k : outer) outer_n *= s[k], outer_sizes.push_back(s[k]);
    std::vector<int64_t> stride = row_major_strides(s);
    Block gen = generator(op.results[0]->type, {x}, [=](Lowering& L2, const Index& idx) {
      llvm::Type* t = L2.compute_type(d);
      llvm::Value* acc = local_variable(L2, t, "acc");
      L2.b.CreateStore(identity(L2, r, d), acc);
      llvm::Value* base = offset_of(L2, kept, idx, stride);
      L2.for_range(L2.i64(0), L2.i64(outer_n), [&](llvm::Value* p) {
        llvm::Value* at = L2.b.CreateAdd(base, offset_of(L2, outer, delinearize(L2, p, outer_sizes), stride));
        llvm::Value* v = inner.empty() ? load_flat(L2, x, at) : reduce_row(L2, r, x, at, inner_n);
        L2.b.CreateStore(combine(L2, r, d, L2.b.CreateLoad(t, acc), v), acc);
      });
      return round_float(L2, L2.b.CreateLoad(t, acc), d);
    });
    L.define(op.results[0], L.materialize(gen));
  };
}

// argmax / argmin: the first extreme along `axis`; a NaN is the extreme (the
// first NaN wins).
LlvmRule arg_rule(bool is_max) {
  return [is_max](Lowering& L, const Op& op) {
    Block x = L.target == Target::nvptx ? reduction_operand(L, op.main_operand(0)) : L.materialize(L.value(op.main_operand(0)));
    const Shape& s = x.type.shape();
    DType d = x.type.dtype(), idx_dtype = op.param(keys::index_dtype);
    int axis = static_cast<int>(op.param(keys::axis));
    int64_t n = s[static_cast<size_t>(axis)];
    if (n == 0 && op.results[0]->type.array_type().size() > 0)
      throw L.error(op, std::string(is_max ? "argmax" : "argmin") + " of an empty axis");
    if (L.target == Target::nvptx) return L.define(op.results[0], gpu_arg_reduce(L, is_max, x, axis, idx_dtype, op.results[0]->type));
    std::vector<int> kept;
    for (int k = 0; k < static_cast<int>(s.size()); ++k)
      if (k != axis) kept.push_back(k);
    std::vector<int64_t> stride = row_major_strides(s);
    Block gen = generator(op.results[0]->type, {x}, [=](Lowering& L2, const Index& idx) {
      auto& B = L2.b;
      llvm::Type* t = L2.compute_type(d);
      llvm::Value* base = offset_of(L2, kept, idx, stride);
      llvm::Value* best = local_variable(L2, t, "best");
      llvm::Value* best_at = local_variable(L2, B.getInt64Ty(), "best_at");
      B.CreateStore(load_flat(L2, x, base), best);
      B.CreateStore(L2.i64(0), best_at);
      L2.for_range(L2.i64(1), L2.i64(n), [&](llvm::Value* k) {
        llvm::Value* v = load_flat(L2, x, B.CreateAdd(base, B.CreateMul(k, L2.i64(stride[static_cast<size_t>(axis)]))));
        llvm::Value* b = B.CreateLoad(t, best);
        llvm::Value* better;
        if (is_float(d)) {
          better = B.CreateOr(B.CreateAnd(B.CreateFCmpUNO(v, v), B.CreateFCmpORD(b, b)),
                              is_max ? B.CreateFCmpOGT(v, b) : B.CreateFCmpOLT(v, b));
        } else {
          better = is_unsigned(d) ? (is_max ? B.CreateICmpUGT(v, b) : B.CreateICmpULT(v, b))
                                  : (is_max ? B.CreateICmpSGT(v, b) : B.CreateICmpSLT(v, b));
        }
        B.CreateStore(B.CreateSelect(better, v, b), best);
        B.CreateStore(B.CreateSelect(better, k, B.CreateLoad(B.getInt64Ty(), best_at)), best_at);
      });
      return convert(L2, B.CreateLoad(B.getInt64Ty(), best_at), DType::i64, idx_dtype);
    });
    L.define(op.results[0], L.materialize(gen));
  };
}

// cumsum[axis, reverse]: one running sum per line along `axis` (NVPTX:
// gpu_cumsum), each prefix rounded for bf16 / f16 as it is stored.
void lower_cumsum(Lowering& L, const Op& op) {
  int axis = static_cast<int>(op.param(keys::axis));
  bool reverse = op.param(keys::reverse);
  if (L.target == Target::nvptx)
    return L.define(op.results[0], gpu_cumsum(L, reduction_operand(L, op.main_operand(0)), axis, reverse, op.results[0]->type));
  Block x = L.materialize(L.value(op.main_operand(0)));
  Shape s = x.type.shape();
  DType d = x.type.dtype();
  int64_t n = s[static_cast<size_t>(axis)];
  std::vector<int64_t> stride = row_major_strides(s);
  llvm::Type* t = L.compute_type(d);
  int64_t bytes = static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(t)) * x.type.array_type().size();
  llvm::Value* out = L.arena_alloc(bytes);
  Shape lines = s;
  lines[static_cast<size_t>(axis)] = 1;
  L.for_each_element(lines, [&](const Index& idx) {
    auto& B = L.b;
    llvm::Value* base = L.linear_index(s, idx);  // idx[axis] is 0
    llvm::Value* acc = local_variable(L, t, "running");
    B.CreateStore(llvm::Constant::getNullValue(t), acc);
    L.for_range(L.i64(0), L.i64(n), [&](llvm::Value* step) {
      llvm::Value* k = reverse ? B.CreateSub(L.i64(n - 1), step) : step;
      llvm::Value* at = B.CreateAdd(base, B.CreateMul(k, L.i64(stride[static_cast<size_t>(axis)])));
      llvm::Value* sum = combine(L, Red::sum, d, B.CreateLoad(t, acc), load_flat(L, x, at));
      B.CreateStore(sum, acc);
      B.CreateStore(round_float(L, sum, d), B.CreateGEP(t, out, at));
    });
  });
  L.define(op.results[0], L.buffer_block(op.results[0]->type, out));
}

// sort's key of a compute value (the interpreter's sort_key): floats through
// the double's bits, flipped so that unsigned order is the total order
// -NaN < -inf < ... < -0 < +0 < ... < inf < NaN; signed integers with the
// sign bit flipped; descending: all bits flipped.
llvm::Value* sort_key(Lowering& L, llvm::Value* v, DType d, bool descending) {
  auto& B = L.b;
  llvm::Value* k;
  const uint64_t sign = uint64_t{1} << 63;
  if (is_float(d)) {
    llvm::Value* u = B.CreateBitCast(d == DType::f64 ? v : B.CreateFPExt(v, B.getDoubleTy()), B.getInt64Ty());
    k = B.CreateSelect(B.CreateICmpSLT(u, L.i64(0)), B.CreateNot(u), B.CreateOr(u, B.getInt64(sign)));
  } else if (is_unsigned(d)) {
    k = B.CreateZExt(v, B.getInt64Ty());
  } else {
    k = B.CreateXor(B.CreateSExt(v, B.getInt64Ty()), B.getInt64(sign));
  }
  return descending ? B.CreateNot(k) : k;
}

// sort[dimension, num_keys, descending]: stable, lexicographic on the first
// num_keys operands. Each element's place is its rank in its line: the number
// of elements whose (keys, position) is smaller, so every element is placed by
// its own thread on NVPTX; O(n^2) per line of n, fine for block-sized lines.
void lower_sort(Lowering& L, const Op& op) {
  std::vector<Block> xs;
  for (size_t k = 0; k < op.num_main_operands(); ++k) xs.push_back(L.materialize(L.value(op.main_operand(static_cast<int>(k)))));
  const Shape s = xs[0].type.shape();
  const int dim = static_cast<int>(op.param(keys::dimension));
  const int64_t keys = op.param(keys::num_keys);
  const bool descending = op.param(keys::descending);
  const int64_t n = s[static_cast<size_t>(dim)];
  const int64_t stride = row_major_strides(s)[static_cast<size_t>(dim)];
  std::vector<llvm::Value*> outs;
  for (const Block& x : xs) {
    llvm::Type* t = L.compute_type(x.type.dtype());
    outs.push_back(L.arena_alloc(std::max<int64_t>(1, static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(t)) *
                                                         x.type.array_type().size())));
  }
  L.for_each_element(s, [&](const Index& idx) {
    auto& B = L.b;
    llvm::Value* i = idx[static_cast<size_t>(dim)];
    llvm::Value* flat = L.linear_index(s, idx);
    llvm::Value* line = B.CreateSub(flat, B.CreateMul(i, L.i64(stride)));
    std::vector<llvm::Value*> mine;
    for (int64_t k = 0; k < keys; ++k) mine.push_back(sort_key(L, load_flat(L, xs[k], flat), xs[k].type.dtype(), descending));
    llvm::Value* rank = local_variable(L, B.getInt64Ty(), "rank");
    B.CreateStore(L.i64(0), rank);
    L.for_range(L.i64(0), L.i64(n), [&](llvm::Value* j) {
      llvm::Value* at = B.CreateAdd(line, B.CreateMul(j, L.i64(stride)));
      // (key_0(j), ..., j) < (key_0(i), ..., i), built from the last key out.
      llvm::Value* before = B.CreateICmpULT(j, i);
      for (int64_t k = keys - 1; k >= 0; --k) {
        llvm::Value* theirs = sort_key(L, load_flat(L, xs[k], at), xs[k].type.dtype(), descending);
        before = B.CreateOr(B.CreateICmpULT(theirs, mine[k]), B.CreateAnd(B.CreateICmpEQ(theirs, mine[k]), before));
      }
      B.CreateStore(B.CreateAdd(B.CreateLoad(B.getInt64Ty(), rank), B.CreateZExt(before, B.getInt64Ty())), rank);
    });
    llvm::Value* dst = B.CreateAdd(line, B.CreateMul(B.CreateLoad(B.getInt64Ty(), rank), L.i64(stride)));
    for (size_t k = 0; k < xs.size(); ++k) {
      llvm::Type* t = L.compute_type(xs[k].type.dtype());
      B.CreateStore(load_flat(L, xs[k], flat), B.CreateGEP(t, outs[k], dst));
    }
  });
  for (size_t k = 0; k < xs.size(); ++k) L.define(op.results[k], L.buffer_block(op.results[k]->type, outs[k]));
}

}  // namespace

void add_reduce_rules(LlvmTable& t) {
  t.set("sort", lower_sort);
  t.set("reduce_sum", reduce_rule(Red::sum));
  t.set("reduce_prod", reduce_rule(Red::prod));
  t.set("reduce_max", reduce_rule(Red::max));
  t.set("reduce_min", reduce_rule(Red::min));
  t.set("reduce_and", reduce_rule(Red::all));
  t.set("reduce_or", reduce_rule(Red::any));
  t.set("argmax", arg_rule(true));
  t.set("argmin", arg_rule(false));
  t.set("cumsum", lower_cumsum);
}

}  // namespace tessera::backends::llvm_lowering
