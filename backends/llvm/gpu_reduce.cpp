// The NVPTX schedule of reductions (reduce_sum / prod / max / min / and / or,
// argmax / argmin) and of cumsum: each output element is reduced by a group
// of threads sharing the work through warp shuffles, instead of one thread
// walking its whole line out of a buffer.
//
// The group, chosen from the block shape (N elements reduced into each of M
// output elements, T threads per CTA, W = T / 32 warps):
//   - N < 32, or T not a multiple of 32: one thread per output element,
//     combining its N elements in row-major order (lines too short to share);
//   - M >= W: one warp per output element (warp w takes outputs w, w + W, ...).
//     Lane l combines elements l, l + 32, ... of the line (consecutive lanes
//     read consecutive addresses when the last dim is reduced), then the 32
//     partial results are combined by a butterfly of shfl.sync.bfly
//     (offsets 16, 8, 4, 2, 1) and lane 0 stores the result;
//   - M < W: the whole CTA per output element, one after the other. Thread t
//     combines elements t, t + T, ...; each warp combines its lanes by the
//     butterfly; lane 0 of each warp stores its partial in shared memory; after
//     a barrier warp 0 combines the W partials (lanes >= W contribute the
//     identity) by the butterfly again.
// Each thread combines its elements 4 at a time into 4 partial results (the
// 4 loads issued together), then the rest one at a time, then the partials.
// Every lane of a warp reaches each shuffle (the loops over outputs are
// uniform across a warp, or across the CTA where a barrier is inside them), so
// the full mask 0xffffffff is exact; lanes left without an element hold the
// identity. The operand is read through its generator, each element once
// (reduction_operand decides whether it is first copied on-chip). Results go
// to shared memory (the arena once the budget is used); a barrier follows.
//
// cumsum: a thread per line when the line has fewer than 32 elements (or T is
// not a multiple of 32), else a warp per line (warp w takes lines w, w + W,
// ...) walking it in chunks of 32 in scan order: lane l takes the chunk's
// l-th element, an inclusive scan across lanes by shfl.sync.up (offsets 1, 2,
// 4, 8, 16; lanes past the line's end add 0), plus the running total of the
// chunks before, which lane 31 hands on by shfl.sync.idx.
//
// Order: float sums and products are combined in that tree order, not the
// interpreter's, so GPU results match it within rounding, not bit for bit
// (the host keeps the interpreter's order exactly: value_reduce.cpp). Integer
// sums and products wrap and and / or are exact in any order; max / min give
// NaN whenever an element is NaN, in any order (only which NaN, and the sign
// of a zero among -0 / +0, may differ). argmax / argmin combine (value, index)
// pairs preferring the smaller index among equal values and NaN over any
// number, a total order, so their result equals the interpreter's exactly.
// cumsum's float prefixes are sums in the scan's tree order (exact for
// integers).
#include <algorithm>
#include <functional>
#include <limits>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backends/llvm/reduce.h"
#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {
namespace {

constexpr int kWarp = 32;
// The shared memory reductions may take in all: the 48 KiB a CTA gets
// without opting in to more.
constexpr int64_t kSharedBudget = 48 * 1024;

using Index = std::vector<llvm::Value*>;
using State = std::vector<llvm::Value*>;  // a partial result: one value or (value, index)

int64_t bytes_of(Lowering& L, llvm::Type* t) {
  return static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(t));
}

bool fits_shared(Lowering& L, int64_t bytes) { return L.shared_bytes() + (bytes + 15) / 16 * 16 <= kSharedBudget; }

// `bytes` of CTA scratch: shared memory while the budget allows, else the arena.
llvm::Value* scratch(Lowering& L, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, 1);
  return fits_shared(L, bytes) ? L.shared_alloc(bytes) : L.arena_alloc(bytes);
}

// `v` of another lane of the warp (shfl.sync over the full warp, every lane
// must be here), for any compute type: 32-bit words, a 64-bit value in two
// halves, narrower integers widened. bfly: lane l ^ arg; up: lane l - arg
// (lanes below arg keep their own); idx: lane arg.
enum class Shuffle { bfly, up, idx };

llvm::Value* shuffle(Lowering& L, Shuffle kind, llvm::Value* v, llvm::Value* arg) {
  auto& B = L.b;
  llvm::Intrinsic::ID id = kind == Shuffle::bfly ? llvm::Intrinsic::nvvm_shfl_sync_bfly_i32
                           : kind == Shuffle::up ? llvm::Intrinsic::nvvm_shfl_sync_up_i32
                                                 : llvm::Intrinsic::nvvm_shfl_sync_idx_i32;
  // The c operand: the lane clamp, 0 for `up` (lanes below arg read themselves).
  const uint32_t clamp = kind == Shuffle::up ? 0 : 0x1f;
  llvm::Function* shfl = L.intrinsic(id);
  auto word = [&](llvm::Value* w) { return B.CreateCall(shfl, {B.getInt32(0xffffffffu), w, arg, B.getInt32(clamp)}); };
  llvm::Type* t = v->getType();
  const unsigned bits = t->getPrimitiveSizeInBits();
  if (bits == 64) {
    llvm::Value* u = B.CreateBitCast(v, B.getInt64Ty());
    llvm::Value* lo = word(B.CreateTrunc(u, B.getInt32Ty()));
    llvm::Value* hi = word(B.CreateTrunc(B.CreateLShr(u, 32), B.getInt32Ty()));
    llvm::Value* joined = B.CreateOr(B.CreateZExt(lo, B.getInt64Ty()), B.CreateShl(B.CreateZExt(hi, B.getInt64Ty()), 32));
    return B.CreateBitCast(joined, t);
  }
  if (bits == 32) return B.CreateBitCast(word(B.CreateBitCast(v, B.getInt32Ty())), t);
  return B.CreateTrunc(word(B.CreateZExt(v, B.getInt32Ty())), t);
}

// How a reduction combines: its partial-result State, the State of one
// element (`k`: its linear index within the line), and the output value.
struct Combiner {
  std::vector<llvm::Type*> types;
  std::function<State(Lowering&)> identity;
  std::function<State(Lowering&, llvm::Value* k, llvm::Value* element)> lift;
  std::function<State(Lowering&, const State&, const State&)> combine;
  std::function<llvm::Value*(Lowering&, const State&)> finish;  // in the result's compute type
};

// The reduced lines: output element `m` of `out_shape` combines elements
// k = 0 .. n - 1 of its line, at operand index operand_index(out_idx, k).
struct Lines {
  Shape out_shape;
  std::vector<int> kept, reduced;
  Shape reduced_sizes;
  int64_t m = 1, n = 1;

  Lines(const Shape& s, const std::vector<bool>& is_reduced) {
    for (int d = 0; d < static_cast<int>(s.size()); ++d) {
      if (is_reduced[static_cast<size_t>(d)]) {
        reduced.push_back(d), reduced_sizes.push_back(s[d]), n *= s[d];
      } else {
        kept.push_back(d), out_shape.push_back(s[d]), m *= s[d];
      }
    }
  }
  Index operand_index(Lowering& L, const Index& out_idx, llvm::Value* k) const {
    Index idx(kept.size() + reduced.size());
    for (size_t i = 0; i < kept.size(); ++i) idx[static_cast<size_t>(kept[i])] = out_idx[i];
    Index r = delinearize(L, k, reduced_sizes);
    for (size_t j = 0; j < reduced.size(); ++j) idx[static_cast<size_t>(reduced[j])] = reduced_sizes[j] == 1 ? L.i64(0) : r[j];
    return idx;
  }
};

// A partial result held in one local variable per component.
struct StateVars {
  std::vector<llvm::Value*> vars;
  std::vector<llvm::Type*> types;
  StateVars(Lowering& L, const Combiner& c) : types(c.types) {
    for (llvm::Type* t : types) vars.push_back(local_variable(L, t, "partial"));
  }
  State load(Lowering& L) const {
    State s;
    for (size_t i = 0; i < vars.size(); ++i) s.push_back(L.b.CreateLoad(types[i], vars[i]));
    return s;
  }
  void store(Lowering& L, const State& s) const {
    for (size_t i = 0; i < vars.size(); ++i) L.b.CreateStore(s[i], vars[i]);
  }
};

// This thread's partial result of output `out_idx`: elements first, first +
// step, ... of the line, read through the operand's generator. kUnroll
// elements at a time into as many partial results, their loads issued
// together (so each thread has several loads in flight), then the rest one at
// a time; the partials are combined at the end.
constexpr int kUnroll = 4;

State accumulate(Lowering& L, const Combiner& c, const Block& x, const Lines& lines, const Index& out_idx, llvm::Value* first,
                 int64_t step) {
  std::vector<StateVars> accs;
  for (int u = 0; u < kUnroll; ++u) {
    accs.emplace_back(L, c);
    accs.back().store(L, c.identity(L));
  }
  auto add = [&](const StateVars& acc, llvm::Value* k, llvm::Value* v) { acc.store(L, c.combine(L, acc.load(L), c.lift(L, k, v))); };
  llvm::Value* rest = L.for_range(first, L.i64(lines.n - (kUnroll - 1) * step), [&](llvm::Value* k0) {
    std::vector<llvm::Value*> ks, vs;
    for (int u = 0; u < kUnroll; ++u) {
      ks.push_back(L.b.CreateAdd(k0, L.i64(u * step), "", true, true));
      vs.push_back(x.element(L, lines.operand_index(L, out_idx, ks.back())));
    }
    for (int u = 0; u < kUnroll; ++u) add(accs[static_cast<size_t>(u)], ks[static_cast<size_t>(u)], vs[static_cast<size_t>(u)]);
  }, kUnroll * step);
  L.for_range(rest, L.i64(lines.n), [&](llvm::Value* k) { add(accs[0], k, x.element(L, lines.operand_index(L, out_idx, k))); }, step);
  State total = accs[0].load(L);
  for (int u = 1; u < kUnroll; ++u) total = c.combine(L, total, accs[static_cast<size_t>(u)].load(L));
  return total;
}

// The partial results of the warp's 32 lanes combined (all lanes must be here);
// lane 0 holds the result.
State warp_combine(Lowering& L, const Combiner& c, State s) {
  for (int offset = kWarp / 2; offset >= 1; offset /= 2) {
    State other;
    for (llvm::Value* v : s) other.push_back(shuffle(L, Shuffle::bfly, v, L.i32(offset)));
    s = c.combine(L, s, other);
  }
  return s;
}

void store_output(Lowering& L, llvm::Value* out, llvm::Type* t, llvm::Value* m, llvm::Value* v) {
  L.b.CreateStore(v, L.b.CreateInBoundsGEP(t, out, {m}));
}

// The output buffer `out` (M elements of `out_type`) filled by the rule of the file comment.
void schedule(Lowering& L, const Combiner& c, const Block& x, const Lines& lines, llvm::Value* out, llvm::Type* out_type) {
  auto& B = L.b;
  const int64_t threads = L.threads, warps = threads / kWarp;
  if (lines.n < kWarp || threads % kWarp != 0) {
    L.for_each_element(lines.out_shape, [&](const Index& idx) {
      State s = accumulate(L, c, x, lines, idx, L.i64(0), 1);
      store_output(L, out, out_type, L.linear_index(lines.out_shape, idx), c.finish(L, s));
    });
    return;
  }
  llvm::Value* warp = B.CreateUDiv(L.thread_id, L.i64(kWarp));
  llvm::Value* lane = B.CreateURem(L.thread_id, L.i64(kWarp));
  llvm::Value* lane0 = B.CreateICmpEQ(lane, L.i64(0));
  if (lines.m >= warps) {
    L.for_range(warp, L.i64(lines.m), [&](llvm::Value* m) {
      State s = warp_combine(L, c, accumulate(L, c, x, lines, delinearize(L, m, lines.out_shape), lane, kWarp));
      L.if_then(lane0, [&] { store_output(L, out, out_type, m, c.finish(L, s)); });
    }, warps);
    L.barrier();
    return;
  }
  std::vector<llvm::Value*> partials;
  for (llvm::Type* t : c.types) partials.push_back(scratch(L, warps * bytes_of(L, t)));
  L.for_range(L.i64(0), L.i64(lines.m), [&](llvm::Value* m) {
    State s = warp_combine(L, c, accumulate(L, c, x, lines, delinearize(L, m, lines.out_shape), L.thread_id, threads));
    L.if_then(lane0, [&] {
      for (size_t i = 0; i < s.size(); ++i) B.CreateStore(s[i], B.CreateInBoundsGEP(c.types[i], partials[i], {warp}));
    });
    L.barrier();
    L.if_then(B.CreateICmpEQ(warp, L.i64(0)), [&] {
      llvm::Value* real = B.CreateICmpULT(lane, L.i64(warps));
      llvm::Value* at = B.CreateSelect(real, lane, L.i64(0));
      State mine, none = c.identity(L);
      for (size_t i = 0; i < s.size(); ++i)
        mine.push_back(B.CreateSelect(real, B.CreateLoad(c.types[i], B.CreateInBoundsGEP(c.types[i], partials[i], {at})), none[i]));
      State total = warp_combine(L, c, mine);
      L.if_then(lane0, [&] { store_output(L, out, out_type, m, c.finish(L, total)); });
    });
    L.barrier();  // the partials are reused, the output is read by all
  });
}

// Runs the schedule into a fresh buffer and returns it as the result's Block
// (a scalar result: the value every thread loads after the barrier).
Block reduce_into_buffer(Lowering& L, const Combiner& c, const Block& x, const Lines& lines, const Type& result) {
  DType d = result.dtype();
  llvm::Type* t = L.compute_type(d);
  llvm::Value* out = scratch(L, lines.m * bytes_of(L, t));
  schedule(L, c, x, lines, out, t);
  if (result.is_scalar()) return L.scalar_block(d, L.b.CreateLoad(t, out));
  return L.buffer_block(result, out);
}

}  // namespace

Block reduction_operand(Lowering& L, const Value& operand) {
  Block x = L.value(operand);
  if (!operand.is_var() || x.buffer || x.reads.empty() || x.type.is_scalar() || !L.used_later(operand.var())) return x;
  // Its generator reads memory (only Vars of the body being lowered can:
  // nested bodies materialize such Blocks first), so the copy dominates every
  // later use.
  int64_t bytes = num_elements(x.type.shape()) * bytes_of(L, L.compute_type(x.type.dtype()));
  if (!fits_shared(L, bytes)) return x;
  llvm::Value* buf = L.shared_alloc(std::max<int64_t>(bytes, 1));
  llvm::Type* t = L.compute_type(x.type.dtype());
  Shape shape = x.type.shape();
  L.for_each_element(shape, [&](const Index& idx) {
    L.b.CreateStore(x.element(L, idx), L.b.CreateInBoundsGEP(t, buf, {L.linear_index(shape, idx)}));
  });
  Block copy = L.buffer_block(x.type, buf);
  L.define(operand.var(), copy);
  return copy;
}

Block gpu_reduce(Lowering& L, Red r, const Block& x, const std::vector<bool>& reduced, const Type& result) {
  DType d = x.type.dtype();
  Combiner c;
  c.types = {L.compute_type(d)};
  c.identity = [r, d](Lowering& L2) { return State{identity(L2, r, d)}; };
  c.lift = [](Lowering&, llvm::Value*, llvm::Value* v) { return State{v}; };
  c.combine = [r, d](Lowering& L2, const State& a, const State& b) { return State{combine(L2, r, d, a[0], b[0])}; };
  c.finish = [d](Lowering& L2, const State& s) { return round_float(L2, s[0], d); };
  return reduce_into_buffer(L, c, x, Lines(x.type.shape(), reduced), result);
}

Block gpu_arg_reduce(Lowering& L, bool is_max, const Block& x, int axis, DType index_dtype, const Type& result) {
  DType d = x.type.dtype();
  const int64_t n = x.type.shape()[static_cast<size_t>(axis)];
  // Indices travel as i32 (one shuffle) when the line allows.
  const bool wide = n >= std::numeric_limits<int32_t>::max();
  const DType k_dtype = wide ? DType::i64 : DType::i32;
  Combiner c;
  c.types = {L.compute_type(d), L.compute_type(k_dtype)};
  // Loses to every element: the weakest value at an index past every line.
  c.identity = [is_max, d, k_dtype](Lowering& L2) {
    llvm::Type* kt = L2.compute_type(k_dtype);
    return State{identity(L2, is_max ? Red::max : Red::min, d), llvm::ConstantInt::get(kt, llvm::APInt::getSignedMaxValue(kt->getIntegerBitWidth()))};
  };
  c.lift = [k_dtype](Lowering& L2, llvm::Value* k, llvm::Value* v) {
    return State{v, L2.b.CreateTrunc(k, L2.compute_type(k_dtype))};
  };
  c.combine = [is_max, d](Lowering& L2, const State& a, const State& b) {
    auto& B = L2.b;
    llvm::Value* earlier = B.CreateICmpSLT(a[1], b[1]);
    llvm::Value* a_wins;
    if (is_float(d)) {
      llvm::Value* a_nan = B.CreateFCmpUNO(a[0], a[0]);
      llvm::Value* b_nan = B.CreateFCmpUNO(b[0], b[0]);
      llvm::Value* beyond = is_max ? B.CreateFCmpOGT(a[0], b[0]) : B.CreateFCmpOLT(a[0], b[0]);
      llvm::Value* numbers = B.CreateOr(beyond, B.CreateAnd(B.CreateFCmpOEQ(a[0], b[0]), earlier));
      a_wins = B.CreateSelect(a_nan, B.CreateOr(B.CreateNot(b_nan), earlier), B.CreateAnd(B.CreateNot(b_nan), numbers));
    } else {
      llvm::Value* beyond = is_unsigned(d) ? (is_max ? B.CreateICmpUGT(a[0], b[0]) : B.CreateICmpULT(a[0], b[0]))
                                           : (is_max ? B.CreateICmpSGT(a[0], b[0]) : B.CreateICmpSLT(a[0], b[0]));
      a_wins = B.CreateOr(beyond, B.CreateAnd(B.CreateICmpEQ(a[0], b[0]), earlier));
    }
    return State{B.CreateSelect(a_wins, a[0], b[0]), B.CreateSelect(a_wins, a[1], b[1])};
  };
  c.finish = [index_dtype, k_dtype](Lowering& L2, const State& s) { return convert(L2, s[1], k_dtype, index_dtype); };
  std::vector<bool> reduced(x.type.shape().size(), false);
  reduced[static_cast<size_t>(axis)] = true;
  return reduce_into_buffer(L, c, x, Lines(x.type.shape(), reduced), result);
}

Block gpu_cumsum(Lowering& L, const Block& x, int axis, bool reverse, const Type& result) {
  auto& B = L.b;
  const Shape& s = x.type.shape();
  const DType d = x.type.dtype();
  llvm::Type* t = L.compute_type(d);
  std::vector<bool> along(s.size(), false);
  along[static_cast<size_t>(axis)] = true;
  const Lines lines(s, along);
  const int64_t n = lines.n, threads = L.threads, warps = threads / kWarp;
  llvm::Value* out = scratch(L, num_elements(s) * bytes_of(L, t));
  // The operand index of the line's `step`-th element in scan order.
  auto at = [&](const Index& line, llvm::Value* step) {
    return lines.operand_index(L, line, reverse ? B.CreateSub(L.i64(n - 1), step) : step);
  };
  auto put = [&](const Index& idx, llvm::Value* sum) {
    B.CreateStore(round_float(L, sum, d), B.CreateInBoundsGEP(t, out, {L.linear_index(s, idx)}));
  };
  if (n < kWarp || threads % kWarp != 0) {
    L.for_each_element(lines.out_shape, [&](const Index& line) {
      llvm::Value* running = local_variable(L, t, "running");
      B.CreateStore(llvm::Constant::getNullValue(t), running);
      L.for_range(L.i64(0), L.i64(n), [&](llvm::Value* step) {
        Index idx = at(line, step);
        llvm::Value* sum = combine(L, Red::sum, d, B.CreateLoad(t, running), x.element(L, idx));
        B.CreateStore(sum, running);
        put(idx, sum);
      });
    });
    return L.buffer_block(result, out);
  }
  llvm::Value* warp = B.CreateUDiv(L.thread_id, L.i64(kWarp));
  llvm::Value* lane = B.CreateURem(L.thread_id, L.i64(kWarp));
  L.for_range(warp, L.i64(lines.m), [&](llvm::Value* m) {
    Index line = delinearize(L, m, lines.out_shape);
    llvm::Value* carry = local_variable(L, t, "carry");
    B.CreateStore(llvm::Constant::getNullValue(t), carry);
    // Chunks of 32 elements in scan order: an inclusive scan across the lanes
    // (shfl.sync.up by 1, 2, 4, 8, 16), plus the total of the chunks before.
    L.for_range(lane, L.i64((n + kWarp - 1) / kWarp * kWarp), [&](llvm::Value* step) {
      llvm::Value* real = B.CreateICmpSLT(step, L.i64(n));
      // Lanes past the line's end read its last element and add 0.
      Index idx = at(line, B.CreateSelect(real, step, L.i64(n - 1)));
      llvm::Value* v = B.CreateSelect(real, x.element(L, idx), llvm::Constant::getNullValue(t));
      for (int offset = 1; offset < kWarp; offset *= 2) {
        llvm::Value* below = shuffle(L, Shuffle::up, v, L.i32(offset));
        v = B.CreateSelect(B.CreateICmpUGE(lane, L.i64(offset)), combine(L, Red::sum, d, below, v), v);
      }
      llvm::Value* sum = combine(L, Red::sum, d, B.CreateLoad(t, carry), v);
      L.if_then(real, [&] { put(idx, sum); });
      B.CreateStore(shuffle(L, Shuffle::idx, sum, L.i32(kWarp - 1)), carry);
    }, kWarp);
  }, warps);
  L.barrier();
  return L.buffer_block(result, out);
}

}  // namespace tessera::backends::llvm_lowering
