// dot_general: batch dims, then lhs free dims, then rhs free dims.
//
// Both operands are first materialized in canonical layouts lhs[B, M, K] and
// rhs[B, K, N], already converted to the accumulator type, which is the
// interpreter's (runtime/kernels/dot.cpp): f64 when an operand or the
// result is f64, else f32 when either is a float (bf16 / f16 accumulate in
// f32), else the result's integer type (the interpreter's 64-bit wrapping sum
// has the same low bits; i64 for a bool result). The result is converted once.
//
// Summation order is the interpreter's, so f32 results match it bit for bit:
// per output element, k runs in order through chunks of 256, each chunk summed
// from zero and then added to the total.
//   host:  register tiles of the result (8 rows x 2 vector registers)
//          summing each chunk in registers, then adding it to the
//          accumulator buffer (host_matmul);
//   NVPTX: where the shapes allow (gpu_dot.h), bf16 / f16 operands on
//          tensor cores (their own summation order, not the interpreter's)
//          and f32 operands on register tiles (the interpreter's order);
//          else one output element per thread, with the k loop inside.
#include <llvm/TargetParser/Host.h>

#include "backends/llvm/gpu_dot.h"
#include "backends/llvm/resident_output.h"
#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {
namespace {

using Index = std::vector<llvm::Value*>;
constexpr int kLazyA = 2;        // the cost of a canonical view of a `get` (value_helpers.h: Block::cost)

DType accumulator(DType in, DType out) {
  if (in == DType::f64 || out == DType::f64) return DType::f64;
  if (is_float(in) || is_float(out)) return DType::f32;
  return is_bool(out) ? DType::i64 : out;
}

// Operand `x` as a canonical [B, R, C] Block in dtype `acc`: `groups` are its
// dims for B, R and C in order.
Block canonical(const Block& x, const std::vector<std::vector<int>>& groups, DType acc) {
  Shape canon;
  std::vector<Shape> sizes;
  for (const auto& g : groups) {
    int64_t n = 1;
    Shape sz;
    for (int d : g) n *= x.type.shape()[static_cast<size_t>(d)], sz.push_back(x.type.shape()[static_cast<size_t>(d)]);
    canon.push_back(n);
    sizes.push_back(sz);
  }
  DType from = x.type.dtype();
  return generator(Type::array(acc, canon), {x}, [x, groups, sizes, from, acc](Lowering& L, const Index& idx) {
    Index in(static_cast<size_t>(x.type.rank()));
    for (size_t g = 0; g < groups.size(); ++g) {
      Index part = delinearize(L, idx[g], sizes[g]);
      for (size_t k = 0; k < groups[g].size(); ++k) in[static_cast<size_t>(groups[g][k])] = part[k];
    }
    return convert(L, x.element(L, in), from, acc);
  });
}

llvm::Value* at(Lowering& L, llvm::Type* t, llvm::Value* buf, llvm::Value* i) { return L.b.CreateGEP(t, buf, i); }

llvm::Value* madd(Lowering& L, DType acc, llvm::Value* c, llvm::Value* a, llvm::Value* b) {
  return is_float(acc) ? L.b.CreateFAdd(c, L.b.CreateFMul(a, b)) : L.b.CreateAdd(c, L.b.CreateMul(a, b));
}
llvm::Value* add(Lowering& L, DType acc, llvm::Value* a, llvm::Value* b) {
  return is_float(acc) ? L.b.CreateFAdd(a, b) : L.b.CreateAdd(a, b);
}

// The [B, M, N] accumulator is the result in row-major order (batch, lhs
// free, rhs free dims): read at the result's linear index and converted.
void define_result(Lowering& L, const Op& op, const Block& result, DType acc) {
  llvm::Value* buf = result.buffer;
  const Type& out_type = op.results[0]->type;
  DType out = out_type.dtype();
  llvm::Type* t = L.compute_type(acc);
  L.define(op.results[0], generator(out_type, {result}, [buf, t, acc, out, out_type](Lowering& L2, const Index& idx) {
             llvm::Value* flat = idx.empty() ? L2.i64(0) : L2.linear_index(out_type.shape(), idx);
             return convert(L2, L2.b.CreateLoad(t, at(L2, t, buf, flat)), acc, out);
           }));
}

// The tiled schedules' operands (gpu_dot.h): the canonical matrices in their
// own dtype, read in place (cp.async) when the operand is a plain [M, K] /
// [K, N] view.
std::pair<GpuDotOperand, GpuDotOperand> tile_operands(const Block& a, const Block& b, const std::vector<std::vector<int>>& ga,
                                                      const std::vector<std::vector<int>>& gb) {
  bool a_rows = a.type.rank() == 2 && ga[2] == std::vector<int>{1};
  bool b_rows = b.type.rank() == 2 && gb[1] == std::vector<int>{0};
  return {GpuDotOperand{canonical(a, ga, a.type.dtype()), a_rows ? a.view : nullptr},
          GpuDotOperand{canonical(b, gb, b.type.dtype()), b_rows ? b.view : nullptr}};
}

// An operand of the product at the next grid step (Lowering::next_step_block),
// when it is a `get` of a whole input block: the same matrix of that step's
// block, and whether that block is valid.
std::optional<std::pair<GpuDotOperand, llvm::Value*>> next_step_operand(Lowering& L, const GpuDotOperand& x) {
  if (!x.view) return std::nullopt;
  const RefView* whole = L.ref_of(x.view->root);
  if (!whole || whole->origin != x.view->origin || whole->type.shape() != x.view->type.shape()) return std::nullopt;
  std::optional<Lowering::BlockAhead> next = L.next_step_block(x.view->root);
  if (!next) return std::nullopt;
  auto view = std::make_shared<const RefView>(next->view);
  Block matrix;
  matrix.type = x.canonical.type;
  matrix.cost = 1;
  matrix.element = [view](Lowering& l, const Index& idx) { return l.load(*view, {idx[1], idx[2]}); };
  return std::make_pair(GpuDotOperand{matrix, view}, next->valid);
}

std::optional<NextStepOperands> next_step_operands(Lowering& L, const GpuDotOperand& lhs, const GpuDotOperand& rhs) {
  if (!L.next_step_block) return std::nullopt;
  auto a = next_step_operand(L, lhs);
  auto b = a ? next_step_operand(L, rhs) : std::nullopt;
  if (!b) return std::nullopt;
  return NextStepOperands{a->first, b->first, L.b.CreateAnd(a->second, b->second)};
}

// The sizes of a [B, M, K] x [B, K, N] product.
struct Dims {
  int64_t nb, M, K, N;
};

// The widest power of two <= cap that divides n (tiles never need a remainder loop).
int64_t dividing_tile(int64_t n, int64_t cap) {
  int64_t d = 1;
  while (d * 2 <= cap && n % (d * 2) == 0) d *= 2;
  return d;
}

// Bytes of the host's vector registers: 64 with AVX-512, 32 with AVX, else 16.
int64_t host_vector_bytes() {
  static const int64_t bytes = [] {
    llvm::StringMap<bool> f = llvm::sys::getHostCPUFeatures();
    return f.lookup("avx512f") ? 64 : f.lookup("avx") ? 32 : 16;
  }();
  return bytes;
}

// A [B, R, C] matrix in memory, in the compute type: element (b, r, c) at
// base + b * batch_stride + r * row_stride + c (strides in elements, i64).
// host_matmul reads its right operand and writes its result through one.
struct StridedMatrix {
  llvm::Value* base;
  llvm::Value* batch_stride;
  llvm::Value* row_stride;
  llvm::Value* at(Lowering& L, llvm::Type* t, llvm::Value* batch, llvm::Value* row, llvm::Value* col) const {
    auto& B = L.b;
    return B.CreateGEP(t, base, B.CreateAdd(B.CreateAdd(B.CreateMul(batch, batch_stride), B.CreateMul(row, row_stride)), col));
  }
};

// A materialized row-major [B, R, C] buffer as a StridedMatrix.
StridedMatrix dense(Lowering& L, llvm::Value* buffer, int64_t rows, int64_t cols) {
  return {buffer, L.i64(rows * cols), L.i64(cols)};
}

// C = A @ Bm for the host, C a [B, M, N] destination (an arena buffer, or
// wherever the caller points it). Per chunk of k (the interpreter's order)
// each R x W tile of C sums its chunk from zero in vector registers and
// adds it to C: the first chunk to 0 (0 + part, as the interpreter's total
// starts; C is never read before), the others to C. With `add_to_c` the
// first chunk is added to C's contents instead (C += A @ Bm: with a single
// chunk exactly `addupdate`'s C + (0 + part)). The tile loops run j
// outside i, so a W-wide strip of Bm's chunk stays in L1 while every row
// passes. Vector lanes add and multiply as the scalar ops do: f32 stays
// bit-exact.
void host_matmul(Lowering& L, const Block& A, const StridedMatrix& Bm, const StridedMatrix& C, DType acc, Dims d,
                 bool add_to_c = false) {
  auto& B = L.b;
  llvm::Type* t = L.compute_type(acc);
  const int64_t elem = static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(t));
  if (d.nb * d.M * d.N == 0) return;
  if (d.K == 0 && !add_to_c) {  // no terms: every element is the empty sum
    L.for_range(L.i64(0), L.i64(d.nb), [&](llvm::Value* batch) {
      L.for_range(L.i64(0), L.i64(d.M), [&](llvm::Value* row) {
        L.for_range(L.i64(0), L.i64(d.N), [&](llvm::Value* col) {
          B.CreateStore(llvm::Constant::getNullValue(t), C.at(L, t, batch, row, col));
        });
      });
    });
    return;
  }
  // 8 rows x 2 vector registers: 16 accumulators, half of AVX-512's
  // registers and all of AVX2's (the baseline's tile in bench/baselines.cpp).
  const int64_t R = dividing_tile(d.M, 8), W = dividing_tile(d.N, 2 * host_vector_bytes() / elem);
  llvm::Type* vt = llvm::FixedVectorType::get(t, static_cast<unsigned>(W));
  const llvm::Align align(static_cast<uint64_t>(elem));
  std::vector<llvm::Value*> part(static_cast<size_t>(R));
  for (llvm::Value*& p : part) p = local_variable(L, vt, "part");
  // A[batch, row, k]: read where it lies when A is a cheap generator (a
  // `get` of a block: no copy of it into the arena), else from its buffer.
  auto a_element = [&](llvm::Value* batch, llvm::Value* row, llvm::Value* k) -> llvm::Value* {
    if (!A.buffer) return A.element(L, {batch, row, k});
    llvm::Value* off = B.CreateAdd(B.CreateMul(B.CreateAdd(B.CreateMul(batch, L.i64(d.M)), row), L.i64(d.K)), k);
    return B.CreateLoad(t, at(L, t, A.buffer, off));
  };
  // One chunk [k0, k1) over every tile of one batch; `first`: C not yet written.
  auto chunk_pass = [&](llvm::Value* batch, llvm::Value* k0, llvm::Value* k1, bool first) {
    L.for_range(L.i64(0), L.i64(d.N / W), [&](llvm::Value* jb) {
      llvm::Value* j = B.CreateMul(jb, L.i64(W));
      L.for_range(L.i64(0), L.i64(d.M / R), [&](llvm::Value* ib) {
        llvm::Value* i = B.CreateMul(ib, L.i64(R));  // first row of the tile in the batch
        for (llvm::Value* p : part) B.CreateStore(llvm::Constant::getNullValue(vt), p);
        L.for_range(k0, k1, [&](llvm::Value* k) {
          llvm::Value* bv = B.CreateAlignedLoad(vt, Bm.at(L, t, batch, k, j), align);
          for (int64_t r = 0; r < R; ++r) {
            llvm::Value* row = B.CreateAdd(i, L.i64(r));
            llvm::Value* av = B.CreateVectorSplat(static_cast<unsigned>(W), a_element(batch, row, k));
            llvm::Value* p = part[static_cast<size_t>(r)];
            B.CreateStore(madd(L, acc, B.CreateLoad(vt, p), av, bv), p);
          }
        });
        for (int64_t r = 0; r < R; ++r) {
          llvm::Value* cp = C.at(L, t, batch, B.CreateAdd(i, L.i64(r)), j);
          llvm::Value* total = first && !add_to_c ? static_cast<llvm::Value*>(llvm::Constant::getNullValue(vt))
                                                  : B.CreateAlignedLoad(vt, cp, align);
          B.CreateAlignedStore(add(L, acc, total, B.CreateLoad(vt, part[static_cast<size_t>(r)])), cp, align);
        }
      });
    });
  };
  const int64_t chunks = (d.K + kDotChunk - 1) / kDotChunk;
  L.for_range(L.i64(0), L.i64(d.nb), [&](llvm::Value* batch) {
    chunk_pass(batch, L.i64(0), L.i64(std::min(d.K, kDotChunk)), true);
    if (chunks > 1)
      L.for_range(L.i64(1), L.i64(chunks), [&](llvm::Value* chunk) {
        llvm::Value* k0 = B.CreateMul(chunk, L.i64(kDotChunk));
        llvm::Value* k1 = B.CreateSelect(B.CreateICmpSLT(B.CreateAdd(k0, L.i64(kDotChunk)), L.i64(d.K)),
                                         B.CreateAdd(k0, L.i64(kDotChunk)), L.i64(d.K));
        chunk_pass(batch, k0, k1, false);
      });
  });
}

// The host's fusion of `%p = dot_general ...; addupdate %o[whole], %p` (%p
// used nowhere else): the product is added into o's block where it lies,
// with no result buffer and no second pass. Exact only while k is one chunk
// (o + (0 + part)); o must be addressed densely (unit-stride rows, every
// element real), have the accumulator's dtype, and not be read by A, which
// host_matmul reads in place while it writes o.
std::optional<StridedMatrix> host_fused_destination(Lowering& L, const Op& op, const Block& A, DType acc, const Dims& d) {
  const Op* next = L.next_op();
  const Var* product = op.results[0];
  if (L.target != Target::host || !next || d.nb != 1 || d.K > kDotChunk || L.uses_left(product) != 1 ||
      !adds_into_whole_ref(*next, product))
    return std::nullopt;
  const RefView& o = L.ref(next->main_operand(0));
  if (L.resident && L.resident->root == o.root) return std::nullopt;  // its registers hold the block
  auto* unit = o.stride.size() == 2 ? llvm::dyn_cast<llvm::ConstantInt>(o.stride[1]) : nullptr;
  if (o.type.dtype() != acc || o.maybe_partial || !unit || unit->getSExtValue() != 1 ||
      std::find(A.reads.begin(), A.reads.end(), o.root) != A.reads.end())
    return std::nullopt;
  L.before_write(o.root);
  return StridedMatrix{L.address(o, {L.i64(0), L.i64(0)}), L.i64(0), o.stride[0]};
}

void lower_dot_general(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  const Block &a = xs[0], &b = xs[1];
  const auto& lc = op.param(keys::lhs_contracting);
  const auto& rc = op.param(keys::rhs_contracting);
  const auto& lb = op.param(keys::lhs_batch);
  const auto& rb = op.param(keys::rhs_batch);
  const Type& out_type = op.results[0]->type;
  DType out = out_type.dtype(), acc = accumulator(a.type.dtype(), out);
  auto listed = [](const std::vector<int64_t>& v, int d) { return std::find(v.begin(), v.end(), d) != v.end(); };
  auto ints = [](const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); };
  std::vector<int> a_free, b_free;
  for (int d = 0; d < a.type.rank(); ++d)
    if (!listed(lc, d) && !listed(lb, d)) a_free.push_back(d);
  for (int d = 0; d < b.type.rank(); ++d)
    if (!listed(rc, d) && !listed(rb, d)) b_free.push_back(d);
  std::vector<std::vector<int>> ga{ints(lb), a_free, ints(lc)}, gb{ints(rb), ints(rc), b_free};
  // The product added into the output block held in registers by the next
  // op (resident_output.h), which it then replaces.
  if (L.resident && L.resident->dot == &op) {
    auto [lhs, rhs] = tile_operands(a, b, ga, gb);
    if (gpu_dot_into(L, lhs, rhs, L.resident->tiles, next_step_operands(L, lhs, rhs))) return L.fuse_next();
  }
  if (L.target == Target::nvptx) {
    auto [lhs, rhs] = tile_operands(a, b, ga, gb);
    if (std::optional<Block> r = gpu_dot(L, lhs, rhs, acc)) return define_result(L, op, *r, acc);
  }
  Block A = canonical(a, ga, acc);
  // The host's tiles read A one element at a time: a `get` needs no copy.
  if (L.target != Target::host || A.cost > kLazyA) A = L.materialize(A);
  Block Bm = L.materialize(canonical(b, gb, acc));
  const int64_t nb = A.type.shape()[0], M = A.type.shape()[1], K = A.type.shape()[2], N = Bm.type.shape()[2];
  llvm::Type* t = L.compute_type(acc);
  Block result;
  if (L.target == Target::host) {
    // Bm is copied even when it is a plain view: read in place, a block's
    // rows lie a power of two apart in the input (4 KiB for 1024 f32
    // columns) and a tile's strip of them conflicts in L1; measured slower.
    if (std::optional<StridedMatrix> into = host_fused_destination(L, op, A, acc, {nb, M, K, N})) {
      host_matmul(L, A, dense(L, Bm.buffer, K, N), *into, acc, {nb, M, K, N}, /*add_to_c=*/true);
      return L.fuse_next();
    }
    const int64_t elem = static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(t));
    llvm::Value* C = L.arena_alloc(std::max<int64_t>(1, nb * M * N) * elem);
    host_matmul(L, A, dense(L, Bm.buffer, K, N), dense(L, C, M, N), acc, {nb, M, K, N});
    result = L.buffer_block(Type::array(acc, {nb, M, N}), C);
  } else {
    Block gen = generator(Type::array(acc, {nb, M, N}), {A, Bm}, [=](Lowering& L2, const Index& idx) {
      auto& B2 = L2.b;
      llvm::Value* total = local_variable(L2, t, "total");
      llvm::Value* part = local_variable(L2, t, "part");
      B2.CreateStore(llvm::Constant::getNullValue(t), total);
      llvm::Value* arow = B2.CreateMul(B2.CreateAdd(B2.CreateMul(idx[0], L2.i64(M)), idx[1]), L2.i64(K));
      llvm::Value* bcol = B2.CreateAdd(B2.CreateMul(idx[0], L2.i64(K * N)), idx[2]);
      L2.for_range(L2.i64(0), L2.i64((K + kDotChunk - 1) / kDotChunk), [&](llvm::Value* chunk) {
        llvm::Value* k0 = B2.CreateMul(chunk, L2.i64(kDotChunk));
        llvm::Value* k1 = B2.CreateSelect(B2.CreateICmpSLT(B2.CreateAdd(k0, L2.i64(kDotChunk)), L2.i64(K)),
                                          B2.CreateAdd(k0, L2.i64(kDotChunk)), L2.i64(K));
        B2.CreateStore(llvm::Constant::getNullValue(t), part);
        L2.for_range(k0, k1, [&](llvm::Value* k) {
          llvm::Value* av = B2.CreateLoad(t, at(L2, t, A.buffer, B2.CreateAdd(arow, k)));
          llvm::Value* bv = B2.CreateLoad(t, at(L2, t, Bm.buffer, B2.CreateAdd(bcol, B2.CreateMul(k, L2.i64(N)))));
          B2.CreateStore(madd(L2, acc, B2.CreateLoad(t, part), av, bv), part);
        });
        B2.CreateStore(add(L2, acc, B2.CreateLoad(t, total), B2.CreateLoad(t, part)), total);
      });
      return B2.CreateLoad(t, total);
    });
    result = L.materialize(gen);
  }
  define_result(L, op, result, acc);
}

}  // namespace

void add_dot_rules(LlvmTable& t) { t.set("dot_general", lower_dot_general); }

}  // namespace tessera::backends::llvm_lowering
