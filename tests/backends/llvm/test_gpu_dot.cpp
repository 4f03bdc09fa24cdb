// The tensor-core schedule of backends/llvm/gpu_dot.cpp without a GPU: its
// tiling rules (plan_mma), and a host model of one CTA pass that replays the
// emitter's index rules (shared tile layout, ldmatrix row addresses, the
// pairing of ldmatrix registers with mma operands, the accumulator write-out)
// against the PTX ISA's definitions of ldmatrix and of the m16n8k16 fragments,
// compared with a plain matmul. The model states the ISA independently of the
// emitter: a mistake in either shows as a wrong product or a fragment element
// that is missing or read twice. Shared-memory bank conflicts of every
// ldmatrix phase are counted as well. The f32 schedule itself is compiled
// for the host (one thread) and run against the interpreter's summation
// order. And Lowering::shared_alloc: dynamic shared memory on NVPTX within
// the sm's limit, the arena past it.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Constants.h>
#include <llvm/Support/TargetSelect.h>

#include "backends/llvm/codegen.h"
#include "backends/llvm/gpu_dot.h"
#include "backends/llvm/table.h"

using namespace tessera::backends::llvm_lowering;
using tessera::DType;
using tessera::Type;

namespace {

// PTX ISA, ldmatrix .m8n8.x4 .b16: lanes 8j..8j+7 give the row addresses
// (element offsets into `smem`) of matrix j; lane l receives, per matrix j,
// one .b32 of two b16: (row l/4, cols 2(l%4), +1), or with .trans
// (rows 2(l%4), +1, col l/4). Returns per lane 4 registers of 2 elements.
using Reg = std::array<float, 2>;
std::array<std::array<Reg, 4>, 32> ldmatrix_x4(const std::vector<float>& smem, const std::array<int64_t, 32>& row_addr,
                                               bool trans) {
  std::array<std::array<Reg, 4>, 32> out{};
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 2; ++e) {
        int r = trans ? 2 * (l % 4) + e : l / 4;
        int c = trans ? l / 4 : 2 * (l % 4) + e;
        out[static_cast<size_t>(l)][static_cast<size_t>(j)][static_cast<size_t>(e)] =
            smem[static_cast<size_t>(row_addr[static_cast<size_t>(8 * j + r)] + c)];
      }
  return out;
}

// 4-byte banks of the 8 rows (16 bytes each) one ldmatrix phase reads: each
// of the 32 banks at most once.
bool conflict_free(const std::array<int64_t, 32>& row_addr, int phase) {
  std::set<int64_t> banks;
  for (int r = 0; r < 8; ++r)
    for (int w = 0; w < 4; ++w) banks.insert((row_addr[static_cast<size_t>(8 * phase + r)] * 2 / 4 + w) % 32);
  return banks.size() == 32;
}

// PTX ISA, mma.m16n8k16 .f32.bf16.bf16.f32 fragments (groupID g = l/4,
// threadID_in_group t = l%4): A a_q holds (g + 8 (q%2), 2t + 8 (q/2) + e);
// B b_q holds (k = 2t + 8q + e, n = g); C c_q is (g + 8 (q/2), 2t + q%2).
// D = A x B + C, each A / B element supplied by exactly one lane.
void mma(const std::array<std::array<Reg, 4>, 32>& a, const std::array<std::array<Reg, 2>, 32>& b,
         std::array<std::array<float, 4>, 32>& c) {
  float A[16][16], Bm[16][8];
  int seen_a[16][16] = {}, seen_b[16][8] = {};
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, t = l % 4;
    for (int q = 0; q < 4; ++q)
      for (int e = 0; e < 2; ++e) {
        A[g + 8 * (q % 2)][2 * t + 8 * (q / 2) + e] = a[static_cast<size_t>(l)][static_cast<size_t>(q)][static_cast<size_t>(e)];
        ++seen_a[g + 8 * (q % 2)][2 * t + 8 * (q / 2) + e];
      }
    for (int q = 0; q < 2; ++q)
      for (int e = 0; e < 2; ++e) {
        Bm[2 * t + 8 * q + e][g] = b[static_cast<size_t>(l)][static_cast<size_t>(q)][static_cast<size_t>(e)];
        ++seen_b[2 * t + 8 * q + e][g];
      }
  }
  for (auto& row : seen_a)
    for (int s : row) REQUIRE(s == 1);
  for (auto& row : seen_b)
    for (int s : row) REQUIRE(s == 1);
  for (int l = 0; l < 32; ++l)
    for (int q = 0; q < 4; ++q) {
      int m = l / 4 + 8 * (q / 2), n = 2 * (l % 4) + q % 2;
      float sum = 0;
      for (int k = 0; k < 16; ++k) sum += A[m][k] * Bm[k][n];
      c[static_cast<size_t>(l)][static_cast<size_t>(q)] += sum;
    }
}

// One CTA pass as gpu_dot.cpp emits it, for every warp, the whole K in k steps
// of p.bk: returns C [cta_m, cta_n] and counts conflicted ldmatrix phases.
std::vector<float> model_pass(const MmaPlan& p, const std::vector<float>& A, const std::vector<float>& B, int& conflicts) {
  std::vector<float> C(static_cast<size_t>(p.cta_m * p.cta_n), 0.0f);
  // Shared tiles of one stage: A as [cta_m][a_row], B as [bk][b_row] after it.
  std::vector<float> smem(static_cast<size_t>(p.cta_m * p.a_row + p.bk * p.b_row));
  int64_t b_base = p.cta_m * p.a_row;
  int64_t tm = p.warp_m / 16, tn = p.warp_n / 8;
  std::vector<std::array<std::array<float, 4>, 32>> acc(static_cast<size_t>(p.warps_m * p.warps_n * tm * tn));
  for (int64_t k0 = 0; k0 < p.K; k0 += p.bk) {
    for (int64_t r = 0; r < p.cta_m; ++r)
      for (int64_t c = 0; c < p.bk; ++c) smem[static_cast<size_t>(r * p.a_row + c)] = A[static_cast<size_t>(r * p.K + k0 + c)];
    for (int64_t r = 0; r < p.bk; ++r)
      for (int64_t c = 0; c < p.cta_n; ++c)
        smem[static_cast<size_t>(b_base + r * p.b_row + c)] = B[static_cast<size_t>((k0 + r) * p.N + c)];
    for (int64_t w = 0; w < p.warps_m * p.warps_n; ++w) {
      int64_t warp_m0 = w / p.warps_n * p.warp_m, warp_n0 = w % p.warps_n * p.warp_n;
      for (int64_t ks = 0; ks < p.bk / 16; ++ks) {
        std::vector<std::array<std::array<Reg, 4>, 32>> a, b;
        for (int64_t i = 0; i < tm; ++i) {
          std::array<int64_t, 32> addr{};
          for (int l = 0; l < 32; ++l) addr[static_cast<size_t>(l)] = (warp_m0 + i * 16 + l % 16) * p.a_row + ks * 16 + l / 16 * 8;
          for (int ph = 0; ph < 4; ++ph) conflicts += !conflict_free(addr, ph);
          a.push_back(ldmatrix_x4(smem, addr, false));
        }
        for (int64_t j = 0; j < tn / 2; ++j) {
          std::array<int64_t, 32> addr{};
          for (int l = 0; l < 32; ++l)
            addr[static_cast<size_t>(l)] = b_base + (ks * 16 + l % 16) * p.b_row + warp_n0 + j * 16 + l / 16 * 8;
          for (int ph = 0; ph < 4; ++ph) conflicts += !conflict_free(addr, ph);
          b.push_back(ldmatrix_x4(smem, addr, true));
        }
        for (int64_t i = 0; i < tm; ++i)
          for (int64_t j = 0; j < tn; ++j) {
            std::array<std::array<Reg, 2>, 32> bj{};
            for (int l = 0; l < 32; ++l)
              for (int q = 0; q < 2; ++q)
                bj[static_cast<size_t>(l)][static_cast<size_t>(q)] =
                    b[static_cast<size_t>(j / 2)][static_cast<size_t>(l)][static_cast<size_t>(j % 2 * 2 + q)];
            mma(a[static_cast<size_t>(i)], bj, acc[static_cast<size_t>((w * tm + i) * tn + j)]);
          }
      }
    }
  }
  for (int64_t w = 0; w < p.warps_m * p.warps_n; ++w)
    for (int64_t i = 0; i < tm; ++i)
      for (int64_t j = 0; j < tn; ++j)
        for (int l = 0; l < 32; ++l)
          for (int q = 0; q < 4; ++q) {
            int64_t row = w / p.warps_n * p.warp_m + i * 16 + l / 4 + (q < 2 ? 0 : 8);
            int64_t col = w % p.warps_n * p.warp_n + j * 8 + 2 * (l % 4) + q % 2;
            C[static_cast<size_t>(row * p.cta_n + col)] =
                acc[static_cast<size_t>((w * tm + i) * tn + j)][static_cast<size_t>(l)][static_cast<size_t>(q)];
          }
  return C;
}

}  // namespace

TEST_CASE("plan_mma: CTA tiles, warp tiles, k steps and padding follow the documented rules") {
  MmaPlan p = *plan_mma(128, 128, 128, 256);
  CHECK(p.cta_m == 128);
  CHECK(p.cta_n == 128);
  CHECK(p.warps_m == 2);  // 8 warps: 2 x 4, warp tiles 64 x 32 (2 x 4 and 4 x 2 are as square: the taller)
  CHECK(p.warps_n == 4);
  CHECK(p.warp_m == 64);
  CHECK(p.warp_n == 32);
  CHECK(p.bk == 32);
  CHECK(p.a_row == 40);
  CHECK(p.b_row == 136);
  MmaPlan one = *plan_mma(128, 128, 48, 32);  // one warp: 128 x 128 is too many accumulators
  CHECK(one.warp_m * one.warp_n <= 64 * 64);
  CHECK(one.bk == 16);
  MmaPlan narrow = *plan_mma(48, 256, 64, 128);
  CHECK(narrow.cta_m == 16);
  CHECK(narrow.cta_n == 128);
  CHECK(narrow.warps_m * narrow.warps_n == 4);
  CHECK_FALSE(plan_mma(100, 128, 128, 256));  // not multiples of 16: the general path
  CHECK_FALSE(plan_mma(128, 128, 8, 256));
  CHECK_FALSE(plan_mma(128, 128, 128, 48));   // not whole warps
}

TEST_CASE("plan_fma: 4 x 4 tiles per thread, k steps that divide the interpreter's 256-wide chunks") {
  FmaPlan p = *plan_fma(128, 128, 512, 256);
  CHECK(p.threads_n == 16);
  CHECK(p.threads_m == 16);
  CHECK(p.cta_m == 64);
  CHECK(p.cta_n == 64);
  CHECK(p.bk == 32);
  CHECK(p.a_row == 36);
  CHECK(p.b_row == 68);
  CHECK(p.stage_bytes() == 4 * (64 * 36 + 32 * 68));
  FmaPlan odd = *plan_fma(96, 32, 100, 96);  // 96 threads: 8 along n (4 x 8 = 32 columns), 12 along m
  CHECK(odd.threads_n == 8);
  CHECK(odd.cta_m == 48);
  CHECK(odd.bk == 4);
  CHECK_FALSE(plan_fma(8, 64, 64, 256));   // too few rows for 16 thread rows
  CHECK_FALSE(plan_fma(128, 128, 7, 256)); // no k step divides K
}

TEST_CASE("the mma schedule's fragment indexing computes the matmul, without ldmatrix bank conflicts") {
  struct Shape {
    int64_t M, N, K;
    int threads;
  };
  for (Shape s : {Shape{128, 128, 64, 256}, Shape{64, 32, 48, 128}, Shape{32, 64, 32, 32}, Shape{16, 16, 16, 256}}) {
    CAPTURE(s.M);
    CAPTURE(s.N);
    CAPTURE(s.threads);
    MmaPlan p = *plan_mma(s.M, s.N, s.K, s.threads);
    REQUIRE(p.cta_m == s.M);  // one pass covers the output at these sizes
    REQUIRE(p.cta_n == s.N);
    std::vector<float> A(static_cast<size_t>(s.M * s.K)), B(static_cast<size_t>(s.K * s.N));
    // Small integers: every sum is exact in any order.
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(static_cast<int>(i * 5 % 13) - 6);
    int conflicts = 0;
    std::vector<float> C = model_pass(p, A, B, conflicts);
    int wrong = 0;
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = 0; n < s.N; ++n) {
        float want = 0;
        for (int64_t k = 0; k < s.K; ++k) want += A[static_cast<size_t>(m * s.K + k)] * B[static_cast<size_t>(k * s.N + n)];
        wrong += C[static_cast<size_t>(m * s.N + n)] != want;
      }
    CHECK(wrong == 0);
    CHECK(conflicts == 0);
  }
}

TEST_CASE("shared_alloc: the kernel's dynamic shared memory up to the sm's limit, then the arena") {
  llvm::LLVMContext ctx;
  llvm::Module module("shared", ctx);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                    llvm::GlobalValue::ExternalLinkage, "k", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  for (Target target : {Target::nvptx, Target::host}) {
    Lowering L(b, fn, target, target == Target::nvptx ? ptx_table() : llvm_table(), 256);
    L.sm = 80;
    L.arena_base = llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx, 0));
    L.shared_alloc(100 * 1024 + 1);  // rounded up to 16 bytes
    int64_t first = target == Target::nvptx ? 100 * 1024 + 16 : 0;
    CHECK(L.shared_bytes() == first);
    CHECK(L.shared_fits(60 * 1024) == (target == Target::nvptx));   // 160 KiB in all: within sm_80's 163
    CHECK_FALSE(L.shared_fits(64 * 1024));                         // 164 KiB: past it
    int64_t arena = L.arena_bytes();
    L.shared_alloc(64 * 1024);  // the arena's
    CHECK(L.shared_bytes() == first);
    CHECK(L.arena_bytes() == arena + 64 * 1024);
    L.sm = 90;  // 227 KiB
    int64_t mark = L.shared_mark();
    L.shared_alloc(64 * 1024);
    CHECK(L.shared_bytes() == (target == Target::nvptx ? first + 64 * 1024 : 0));
    L.shared_release(mark);
    L.shared_alloc(16);  // reuses the released offsets
    CHECK(L.shared_bytes() == (target == Target::nvptx ? first + 64 * 1024 : 0));
  }
  // One `.extern .shared` array per kernel, in address space 3, 16-byte aligned.
  llvm::GlobalVariable* gv = module.getNamedGlobal("k_shared");
  REQUIRE(gv);
  CHECK(gv->getAddressSpace() == 3);
  CHECK(gv->getAlign().valueOrOne().value() == 16);
  CHECK(gv->isDeclaration());
}

// The interpreter's dot order (runtime/kernels/dot.cpp): per output
// element, k in order through chunks of 256, each summed from zero, then
// added to the total.
std::vector<float> interpreter_order(const std::vector<float>& A, const std::vector<float>& B, int64_t M, int64_t N, int64_t K) {
  std::vector<float> C(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float total = 0;
      for (int64_t k0 = 0; k0 < K; k0 += 256) {
        float part = 0;
        for (int64_t k = k0; k < std::min(K, k0 + 256); ++k) {
          volatile float prod = A[static_cast<size_t>(m * K + k)] * B[static_cast<size_t>(k * N + n)];  // no fma
          part = part + prod;
        }
        total = total + part;
      }
      C[static_cast<size_t>(m * N + n)] = total;
    }
  return C;
}

TEST_CASE("the f32 schedule compiled for the host: the interpreter's sums bit for bit") {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (std::array<int64_t, 3> mnk : {std::array<int64_t, 3>{8, 12, 600}, std::array<int64_t, 3>{4, 8, 64}}) {
    int64_t M = mnk[0], N = mnk[1], K = mnk[2];
    CAPTURE(K);
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("fma", *ctx);
    auto tm = target_machine(Target::host);
    configure_module(*module, *tm);
    auto* ptr = llvm::PointerType::get(*ctx, 0);
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(*ctx), {ptr, ptr, ptr, ptr}, false),
                                      llvm::Function::ExternalLinkage, "fma_entry", *module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(*ctx, "entry", fn));
    Lowering L(b, fn, Target::host, llvm_table(), 1);
    L.arena_base = fn->getArg(3);
    L.thread_id = L.i64(0);
    auto matrix = [&](llvm::Value* base, int64_t rows, int64_t cols) {
      Block m;
      m.type = Type::array(DType::f32, {1, rows, cols});
      m.element = [base, cols](Lowering& L2, const std::vector<llvm::Value*>& idx) {
        llvm::Value* at = L2.b.CreateAdd(L2.b.CreateMul(idx[1], L2.i64(cols)), idx[2]);
        return L2.b.CreateLoad(L2.b.getFloatTy(), L2.b.CreateGEP(L2.b.getFloatTy(), base, {at}));
      };
      return m;
    };
    FmaPlan plan = *plan_fma(M, N, K, 1);
    CHECK(plan.bk == (K == 600 ? 8 : 32));  // 600: k steps of 8, chunks of 256 = 32 steps, then 11
    Block C = fma_dot(L, plan, {matrix(fn->getArg(0), M, K), nullptr}, {matrix(fn->getArg(1), K, N), nullptr});
    L.for_range(L.i64(0), L.i64(M * N), [&](llvm::Value* i) {
      b.CreateStore(b.CreateLoad(b.getFloatTy(), b.CreateGEP(b.getFloatTy(), C.buffer, {i})),
                    b.CreateGEP(b.getFloatTy(), fn->getArg(2), {i}));
    });
    b.CreateRetVoid();
    std::vector<std::byte> arena(static_cast<size_t>(L.arena_bytes()) + 64);
    auto jit = llvm::cantFail(llvm::orc::LLJITBuilder().create());
    llvm::cantFail(jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))));
    auto entry = llvm::cantFail(jit->lookup("fma_entry")).toPtr<void (*)(float*, float*, float*, void*)>();
    std::vector<float> A(static_cast<size_t>(M * K)), Bm(static_cast<size_t>(K * N)), got(static_cast<size_t>(M * N));
    for (float& x : A) x = normal(rng);
    for (float& x : Bm) x = normal(rng);
    void* aligned = arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
    entry(A.data(), Bm.data(), got.data(), aligned);
    std::vector<float> want = interpreter_order(A, Bm, M, N, K);
    int differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += std::memcmp(&want[i], &got[i], sizeof(float)) != 0;
    CHECK(differ == 0);
  }
}
