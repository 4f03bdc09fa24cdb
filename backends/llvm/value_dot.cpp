// dot_general: batch dims, then lhs free dims, then rhs free dims.
//
// Both operands are first materialized in canonical layouts lhs[B, M, K] and
// rhs[B, K, N], already converted to the accumulator type, which is the
// interpreter's (interpreter/kernels/dot.cpp): f64 when an operand or the
// result is f64, else f32 when either is a float (bf16 / f16 accumulate in
// f32), else the result's integer type (the interpreter's 64-bit wrapping sum
// has the same low bits; i64 for a bool result). The result is converted once.
//
// Summation order is the interpreter's, so f32 results match it bit for bit:
// per output element, k runs in order through chunks of 256, each chunk summed
// from zero and then added to the total.
//   host:  an i-k-j loop nest into a zeroed accumulator buffer, so the j loop
//          is a contiguous multiply-add over a row of rhs (it vectorizes);
//   NVPTX: bf16 / f16 operands on tensor cores where the shapes allow
//          (gpu_dot.h; its own summation order, not the interpreter's),
//          else one output element per thread, with the k loop inside.
#include "backends/llvm/gpu_dot.h"
#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {
namespace {

using Index = std::vector<llvm::Value*>;
constexpr int64_t kChunk = 256;  // the interpreter's KC

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

void zero(Lowering& L, llvm::Type* t, llvm::Value* buf, llvm::Value* from, int64_t n) {
  L.for_range(L.i64(0), L.i64(n), [&](llvm::Value* j) {
    L.b.CreateStore(llvm::Constant::getNullValue(t), at(L, t, buf, L.b.CreateAdd(from, j)));
  });
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

// The NVPTX tensor-core schedule's operands: the canonical matrices in their
// own dtype, read in place (cp.async) when the operand is a plain [M, K] /
// [K, N] view.
std::optional<Block> tensor_core_dot(Lowering& L, const Block& a, const Block& b, const std::vector<std::vector<int>>& ga,
                                     const std::vector<std::vector<int>>& gb, DType acc) {
  bool a_rows = a.type.rank() == 2 && ga[2] == std::vector<int>{1};
  bool b_rows = b.type.rank() == 2 && gb[1] == std::vector<int>{0};
  GpuDotOperand lhs{canonical(a, ga, a.type.dtype()), a_rows ? a.view : nullptr};
  GpuDotOperand rhs{canonical(b, gb, b.type.dtype()), b_rows ? b.view : nullptr};
  return gpu_dot(L, lhs, rhs, acc);
}

void lower_dot_general(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  const Block &a = xs[0], &b = xs[1];
  const auto& lc = op.ints_param("lhs_contracting");
  const auto& rc = op.ints_param("rhs_contracting");
  const auto& lb = op.ints_param("lhs_batch");
  const auto& rb = op.ints_param("rhs_batch");
  const Type& out_type = op.results[0]->type;
  DType out = out_type.dtype(), acc = accumulator(a.type.dtype(), out);
  auto listed = [](const std::vector<int64_t>& v, int d) { return std::find(v.begin(), v.end(), d) != v.end(); };
  auto ints = [](const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); };
  std::vector<int> a_free, b_free;
  for (int d = 0; d < a.type.rank(); ++d)
    if (!listed(lc, d) && !listed(lb, d)) a_free.push_back(d);
  for (int d = 0; d < b.type.rank(); ++d)
    if (!listed(rc, d) && !listed(rb, d)) b_free.push_back(d);
  if (L.target == Target::nvptx)
    if (std::optional<Block> r = tensor_core_dot(L, a, b, {ints(lb), a_free, ints(lc)}, {ints(rb), ints(rc), b_free}, acc))
      return define_result(L, op, *r, acc);
  Block A = L.materialize(canonical(a, {ints(lb), a_free, ints(lc)}, acc));
  Block Bm = L.materialize(canonical(b, {ints(rb), ints(rc), b_free}, acc));
  const int64_t nb = A.type.shape()[0], M = A.type.shape()[1], K = A.type.shape()[2], N = Bm.type.shape()[2];
  llvm::Type* t = L.compute_type(acc);
  const int64_t elem = static_cast<int64_t>(L.module.getDataLayout().getTypeAllocSize(t));
  auto& B = L.b;
  Block result;
  if (L.target == Target::host) {
    llvm::Value* C = L.arena_alloc(std::max<int64_t>(1, nb * M * N) * elem);
    llvm::Value* T = K > kChunk ? L.arena_alloc(std::max<int64_t>(1, N) * elem) : nullptr;
    L.for_range(L.i64(0), L.i64(nb * M), [&](llvm::Value* bi) {  // (batch, row) pairs
      llvm::Value* batch = B.CreateUDiv(bi, L.i64(std::max<int64_t>(M, 1)));
      llvm::Value* crow = B.CreateMul(bi, L.i64(N));
      llvm::Value* arow = B.CreateMul(bi, L.i64(K));
      llvm::Value* bbase = B.CreateMul(batch, L.i64(K * N));
      zero(L, t, C, crow, N);
      // Chunks of k: summed into T from zero, then added to C's row (one chunk: straight into C).
      L.for_range(L.i64(0), L.i64((K + kChunk - 1) / kChunk), [&](llvm::Value* chunk) {
        llvm::Value* k0 = B.CreateMul(chunk, L.i64(kChunk));
        llvm::Value* k1 = B.CreateSelect(B.CreateICmpSLT(B.CreateAdd(k0, L.i64(kChunk)), L.i64(K)), B.CreateAdd(k0, L.i64(kChunk)), L.i64(K));
        llvm::Value* dst = T ? T : C;
        llvm::Value* dst0 = T ? L.i64(0) : crow;
        if (T) zero(L, t, T, L.i64(0), N);
        L.for_range(k0, k1, [&](llvm::Value* k) {
          llvm::Value* av = B.CreateLoad(t, at(L, t, A.buffer, B.CreateAdd(arow, k)));
          llvm::Value* brow = B.CreateAdd(bbase, B.CreateMul(k, L.i64(N)));
          L.for_range(L.i64(0), L.i64(N), [&](llvm::Value* j) {
            llvm::Value* cp = at(L, t, dst, B.CreateAdd(dst0, j));
            llvm::Value* bv = B.CreateLoad(t, at(L, t, Bm.buffer, B.CreateAdd(brow, j)));
            B.CreateStore(madd(L, acc, B.CreateLoad(t, cp), av, bv), cp);
          });
        });
        if (T)
          L.for_range(L.i64(0), L.i64(N), [&](llvm::Value* j) {
            llvm::Value* cp = at(L, t, C, B.CreateAdd(crow, j));
            B.CreateStore(add(L, acc, B.CreateLoad(t, cp), B.CreateLoad(t, at(L, t, T, j))), cp);
          });
      });
    });
    result = L.buffer_block(Type::array(acc, {nb, M, N}), C);
  } else {
    Block gen = generator(Type::array(acc, {nb, M, N}), {A, Bm}, [=](Lowering& L2, const Index& idx) {
      auto& B2 = L2.b;
      llvm::Value* total = local_variable(L2, t, "total");
      llvm::Value* part = local_variable(L2, t, "part");
      B2.CreateStore(llvm::Constant::getNullValue(t), total);
      llvm::Value* arow = B2.CreateMul(B2.CreateAdd(B2.CreateMul(idx[0], L2.i64(M)), idx[1]), L2.i64(K));
      llvm::Value* bcol = B2.CreateAdd(B2.CreateMul(idx[0], L2.i64(K * N)), idx[2]);
      L2.for_range(L2.i64(0), L2.i64((K + kChunk - 1) / kChunk), [&](llvm::Value* chunk) {
        llvm::Value* k0 = B2.CreateMul(chunk, L2.i64(kChunk));
        llvm::Value* k1 = B2.CreateSelect(B2.CreateICmpSLT(B2.CreateAdd(k0, L2.i64(kChunk)), L2.i64(K)),
                                          B2.CreateAdd(k0, L2.i64(kChunk)), L2.i64(K));
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
