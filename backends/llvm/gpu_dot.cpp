// dot_general on NVPTX (sm_80+): tensor cores for bf16 / f16, the FMA units
// for f32; see gpu_dot.h and the rules in docs/backends.md ("the schedule of
// dot_general").
//
// The schedule, per CTA and per pass over a cta_m x cta_n tile of the output
// (the f32 one alike, with 4 x 4 tiles per thread in place of warp tiles):
//   for each k step of bk: the A tile [cta_m, bk] and the B tile [bk, cta_n]
//     are copied into one of two shared buffers (the next step's copy is in
//     flight while this one computes: cp.async groups, then a barrier);
//   each computing warp loads its fragments with ldmatrix and issues
//     mma.sync.m16n8k16 for its warp_m x warp_n tile, accumulating in
//     registers;
//   after the last k step each warp writes its tile to the result once.
// Fragment layouts are the PTX ISA's (section "Warp Level Matrix Multiply-
// Accumulate Instructions", "Matrix Fragments for mma.m16n8k16 with floating
// point type"); with lane = 4 * groupID + threadID_in_group:
//   A (16 x 16, row major): 4 x .b32, each two consecutive k of one row:
//     a0: (groupID, 2t..2t+1), a1: (groupID + 8, 2t..), a2: (groupID, 2t + 8..), a3: (groupID + 8, 2t + 8..)
//   B (16 x 8, "col": k runs within a register): 2 x .b32:
//     b0: (k = 2t..2t+1, n = groupID), b1: (k = 2t + 8.., n = groupID)
//   C / D (16 x 8 f32): c0, c1: (groupID, 2t), (groupID, 2t + 1); c2, c3: the same at row groupID + 8.
// ldmatrix (PTX ISA "ldmatrix"): .x4 loads four 8 x 8 b16 matrices, lanes
// 8j..8j+7 giving the 8 row addresses of matrix j; lane l receives of matrix
// j the two elements (row l / 4, columns 2 (l % 4), +1), or with .trans the
// two elements (rows 2 (l % 4), +1, column l / 4). Hence, with lane l
// addressing row (l % 16) and column 8 (l / 16) of a 16 x 16 tile:
//   A in shared as [m][k]:           matrices (m0-7,k0-7), (m8-15,k0-7), (m0-7,k8-15), (m8-15,k8-15) = a0..a3;
//   B in shared as [k][n], .trans:   matrices (k0-7,n0-7), (k8-15,n0-7), (k0-7,n8-15), (k8-15,n8-15)
//                                    = b0, b1 of n-tile 0, then b0, b1 of n-tile 1.
// tests/backends/llvm/test_gpu_dot.cpp replays these index rules on the host.
#include "backends/llvm/gpu_dot.h"

#include <cstdlib>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {
namespace {

constexpr int64_t kMaxWarpTile = 64 * 64;  // accumulator floats per warp: at most 128 registers per thread
constexpr int64_t kPad = 8;                // elements (16 bytes) after each shared row: see plan_mma

int64_t largest_tile(int64_t n) {
  for (int64_t t : {128, 64, 32, 16})
    if (n % t == 0) return t;
  return 0;
}

using Values = std::vector<llvm::Value*>;

// Where a thread's mma accumulators lie (the C fragment layout in the file
// comment): warp (warp / warps_n, warp % warps_n) owns a warp_m x warp_n
// tile; register q of its 16 x 8 tile (i, j) is element (row(i, q), col(j, q)).
struct MmaLayout {
  const MmaPlan& p;
  llvm::Value *lane, *warp_m0, *warp_n0, *computes;
  MmaLayout(Lowering& L, const MmaPlan& plan) : p(plan) {
    auto& B = L.b;
    llvm::Value* warp = B.CreateLShr(L.thread_id, L.i64(5));
    lane = B.CreateAnd(L.thread_id, L.i64(31));
    warp_m0 = B.CreateMul(B.CreateUDiv(warp, L.i64(p.warps_n)), L.i64(p.warp_m));
    warp_n0 = B.CreateMul(B.CreateURem(warp, L.i64(p.warps_n)), L.i64(p.warp_n));
    computes = B.CreateICmpULT(warp, L.i64(p.warps_m * p.warps_n));  // uniform per warp: mma.sync needs whole warps
  }
  int64_t tiles_m() const { return p.warp_m / 16; }
  int64_t tiles_n() const { return p.warp_n / 8; }
  size_t slot(int64_t i, int64_t j, int q) const { return static_cast<size_t>((i * tiles_n() + j) * 4 + q); }
  llvm::Value* row(Lowering& L, llvm::Value* m0, int64_t i, int q) const {
    llvm::Value* g = L.b.CreateLShr(lane, L.i64(2));
    return L.b.CreateAdd(L.b.CreateAdd(m0, warp_m0), L.b.CreateAdd(L.i64(i * 16 + (q < 2 ? 0 : 8)), g));
  }
  llvm::Value* col(Lowering& L, llvm::Value* n0, int64_t j, int q) const {
    llvm::Value* t2 = L.b.CreateMul(L.b.CreateAnd(lane, L.i64(3)), L.i64(2));
    return L.b.CreateAdd(L.b.CreateAdd(n0, warp_n0), L.b.CreateAdd(L.i64(j * 8 + q % 2), t2));
  }
};

// Where a thread's 4 x 4 f32 tile lies: thread (tid / threads_n, tid % threads_n).
struct FmaLayout {
  llvm::Value *row0, *col0;
  FmaLayout(Lowering& L, const FmaPlan& p) {
    row0 = L.b.CreateMul(L.b.CreateUDiv(L.thread_id, L.i64(p.threads_n)), L.i64(FmaPlan::kThreadTile));
    col0 = L.b.CreateMul(L.b.CreateURem(L.thread_id, L.i64(p.threads_n)), L.i64(FmaPlan::kThreadTile));
  }
};

int64_t passes(const TilePlan& t) { return (t.M / t.cta_m) * (t.N / t.cta_n); }
// The origin of pass `pass` (row-major over the CTA tiles).
std::pair<llvm::Value*, llvm::Value*> pass_origin(Lowering& L, const TilePlan& t, llvm::Value* pass) {
  int64_t across = t.N / t.cta_n;
  return {L.b.CreateMul(L.b.CreateUDiv(pass, L.i64(across)), L.i64(t.cta_m)),
          L.b.CreateMul(L.b.CreateURem(pass, L.i64(across)), L.i64(t.cta_n))};
}

// What both schedules share: the shared stage buffers, the copies into them
// and the pipelined pass / k-step loops. A schedule adds its accumulators,
// the math of one staged k step and the write-out.
class TileEmitter {
 public:
  TileEmitter(Lowering& lowering, const TilePlan& plan, const GpuDotOperand& a, const GpuDotOperand& b, DType dtype)
      : L(lowering), B(lowering.b), t(plan), lhs(a), rhs(b), dt(dtype) {}
  virtual ~TileEmitter() = default;

  // The product into a fresh [1, M, N] f32 buffer.
  Block emit();
  // The product added into a resident block (its slots for the accumulators).
  void emit_into(ResidentTiles& tiles, const std::optional<NextStepOperands>& next_step) {
    resident = &tiles;
    // Stage 0 is free during the last k step only when that step uses stage 1.
    if (next_step && tiles.prefetched && (t.K / t.bk) % 2 == 0) next = &*next_step;
    run(nullptr);
  }

 protected:
  Lowering& L;
  llvm::IRBuilder<>& B;
  const TilePlan& t;
  const GpuDotOperand &lhs, &rhs;
  DType dt;
  llvm::Value* stages = nullptr;  // generic pointer to the two shared stage buffers
  ResidentTiles* resident = nullptr;  // emit_into's block
  int64_t pass_index = -1;            // the pass being emitted, when passes are unrolled (resident)
  const NextStepOperands* next = nullptr;  // resident: prefetch the next grid step's first tiles

  virtual void begin() = 0;                                             // once, before the passes (accumulators)
  virtual void begin_pass() = 0;                                        // zero the accumulators
  virtual void step(llvm::Value* s, llvm::Value* kc) = 0;                // the math of stage s (k step kc)
  virtual void end_pass(llvm::Value* C, llvm::Value* m0, llvm::Value* n0) = 0;  // the accumulators into C (or resident)
  // The resident slots of the current pass.
  std::vector<llvm::Value*> pass_slots(int64_t per_pass) const {
    auto from = resident->slots.begin() + pass_index * per_pass;
    return {from, from + per_pass};
  }

  llvm::Value* i64(int64_t v) { return L.i64(v); }
  llvm::Type* elem() { return L.storage_type(dt); }
  llvm::Value* in_space(llvm::Value* ptr, unsigned space) {
    return B.CreateAddrSpaceCast(ptr, llvm::PointerType::get(L.llctx, space));
  }
  // Element (row, col) of stage `s`'s A ([cta_m][a_row]) or B ([bk][b_row]) tile, generic pointer.
  llvm::Value* a_tile(llvm::Value* s, llvm::Value* row, llvm::Value* col) {
    llvm::Value* base = B.CreateMul(s, i64(t.stage_bytes() / t.elem));
    return B.CreateGEP(elem(), stages, {B.CreateAdd(base, B.CreateAdd(B.CreateMul(row, i64(t.a_row)), col))});
  }
  llvm::Value* b_tile(llvm::Value* s, llvm::Value* row, llvm::Value* col) {
    llvm::Value* base = B.CreateAdd(B.CreateMul(s, i64(t.stage_bytes() / t.elem)), i64(t.cta_m * t.a_row));
    return B.CreateGEP(elem(), stages, {B.CreateAdd(base, B.CreateAdd(B.CreateMul(row, i64(t.b_row)), col))});
  }
  // f32 accumulators as allocas in the entry block (registers after mem2reg).
  std::vector<llvm::Value*> accumulators(int64_t n, const char* name) {
    std::vector<llvm::Value*> out;
    for (int64_t k = 0; k < n; ++k) out.push_back(local_variable(L, B.getFloatTy(), name));
    return out;
  }
  void zero(const std::vector<llvm::Value*>& acc) {
    for (llvm::Value* a : acc) B.CreateStore(llvm::ConstantFP::get(B.getFloatTy(), 0.0), a);
  }

 private:
  void each_thread_of(int64_t total, const std::function<void(llvm::Value*)>& body);
  llvm::Value* async_ok(const GpuDotOperand& x);
  void copy_tile(const GpuDotOperand& x, llvm::Value* ok, llvm::Value* r0, llvm::Value* c0, int64_t rows, int64_t cols,
                 const std::function<llvm::Value*(llvm::Value* r, llvm::Value* c)>& dst);
  void stage(llvm::Value* s, llvm::Value* k0, llvm::Value* m0, llvm::Value* n0, llvm::Value* a_ok, llvm::Value* b_ok) {
    stage(lhs, rhs, s, k0, m0, n0, a_ok, b_ok);
  }
  void stage(const GpuDotOperand& a, const GpuDotOperand& b, llvm::Value* s, llvm::Value* k0, llvm::Value* m0,
             llvm::Value* n0, llvm::Value* a_ok, llvm::Value* b_ok);
  void prefetch_next_step();
  void run(llvm::Value* C);
  void k_steps(llvm::Value* m0, llvm::Value* n0, llvm::Value* a_ok, llvm::Value* b_ok);
  // A cp.async group intrinsic; nothing on the host (its copies are plain stores).
  void async(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args = {}) {
    if (L.target == Target::nvptx) B.CreateCall(L.intrinsic(id), args);
  }
};

// Indices 0 .. total - 1 spread over the CTA's threads: thread t takes t, t + threads, ...
void TileEmitter::each_thread_of(int64_t total, const std::function<void(llvm::Value*)>& body) {
  int64_t rounds = (total + L.threads - 1) / L.threads;
  L.for_range(i64(0), i64(rounds), [&](llvm::Value* r) {
    llvm::Value* v = B.CreateAdd(L.thread_id, B.CreateMul(r, i64(L.threads)));
    if (total % L.threads == 0) return body(v);
    L.if_then(B.CreateICmpULT(v, i64(total)), [&] { body(v); });
  });
}

// Whether operand x's tiles may be copied 16 bytes at a time from its Ref
// (i1, the same in every thread), or null when they never may (Refs lie in
// global memory: arrays, the arena): rows
// contiguous, every element real, and rows starting at 16-byte boundaries
// (the tiles' columns start at multiples of 16 bytes).
llvm::Value* TileEmitter::async_ok(const GpuDotOperand& x) {
  if (L.target != Target::nvptx || !x.view || x.view->maybe_partial || x.view->origin.size() != 2) return nullptr;
  auto* unit = llvm::dyn_cast<llvm::ConstantInt>(x.view->stride[1]);
  if (!unit || unit->getSExtValue() != 1) return nullptr;
  llvm::Value* start = B.CreatePtrToInt(L.address(*x.view, {i64(0), i64(0)}), B.getInt64Ty());
  llvm::Value* row_bytes = B.CreateMul(x.view->stride[0], i64(t.elem));
  return B.CreateICmpEQ(B.CreateAnd(B.CreateOr(start, row_bytes), i64(15)), i64(0));
}

// Rows [r0, r0 + rows) x columns [c0, c0 + cols) of x into shared memory
// (`dst(r, c)`: the tile element's pointer): 16-byte cp.async copies where
// `ok`, else element by element through the operand's Block.
void TileEmitter::copy_tile(const GpuDotOperand& x, llvm::Value* ok, llvm::Value* r0, llvm::Value* c0, int64_t rows,
                            int64_t cols, const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& dst) {
  auto by_elements = [&] {
    each_thread_of(rows * cols, [&](llvm::Value* e) {
      llvm::Value* r = B.CreateUDiv(e, i64(cols));
      llvm::Value* c = B.CreateURem(e, i64(cols));
      llvm::Value* v = x.canonical.element(L, {i64(0), B.CreateAdd(r0, r), B.CreateAdd(c0, c)});
      B.CreateStore(L.to_storage(v, dt), dst(r, c));
    });
  };
  if (!ok) return by_elements();
  int64_t per_copy = 16 / t.elem;
  L.if_then(ok, [&] {
    each_thread_of(rows * cols / per_copy, [&](llvm::Value* v) {
      llvm::Value* r = B.CreateUDiv(v, i64(cols / per_copy));
      llvm::Value* c = B.CreateMul(B.CreateURem(v, i64(cols / per_copy)), i64(per_copy));
      llvm::Value* src = L.address(*x.view, {B.CreateAdd(r0, r), B.CreateAdd(c0, c)});
      B.CreateCall(L.intrinsic(llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16),
                   {in_space(dst(r, c), 3), in_space(src, 1)});
    });
  });
  L.if_then(B.CreateNot(ok), by_elements);
}

// Stage `s` <- A[m0.., k0..] and B[k0.., n0..], then one cp.async group.
void TileEmitter::stage(const GpuDotOperand& a, const GpuDotOperand& b, llvm::Value* s, llvm::Value* k0, llvm::Value* m0,
                        llvm::Value* n0, llvm::Value* a_ok, llvm::Value* b_ok) {
  copy_tile(a, a_ok, m0, k0, t.cta_m, t.bk, [&](llvm::Value* r, llvm::Value* c) { return a_tile(s, r, c); });
  copy_tile(b, b_ok, k0, n0, t.bk, t.cta_n, [&](llvm::Value* r, llvm::Value* c) { return b_tile(s, r, c); });
  async(llvm::Intrinsic::nvvm_cp_async_commit_group);
}

// During the last k step of the last pass (which computes on stage 1): the
// next grid step's first tiles of pass 0 into stage 0, in flight while this
// step finishes; that step then starts computing at once.
void TileEmitter::prefetch_next_step() {
  L.if_then(next->exists, [&] {
    stage(next->lhs, next->rhs, i64(0), i64(0), i64(0), i64(0), async_ok(next->lhs), async_ok(next->rhs));
  });
  B.CreateStore(next->exists, resident->prefetched);
}

Block TileEmitter::emit() {
  int64_t result_bytes = t.M * t.N * 4;
  // The result stays in shared memory when it fits beside the stage buffers.
  llvm::Value* C = L.shared_fits(result_bytes + 2 * t.stage_bytes()) ? L.shared_alloc(result_bytes)
                                                                      : L.arena_alloc(result_bytes);
  run(C);
  return L.buffer_block(Type::array(DType::f32, {1, t.M, t.N}), C);
}

// Every pass over the output: a loop, or unrolled when the accumulators are
// resident (each pass has its own slots, which must be indexed statically to
// stay registers).
void TileEmitter::run(llvm::Value* C) {
  int64_t mark = L.shared_mark();
  stages = L.shared_alloc(2 * t.stage_bytes());
  begin();
  llvm::Value* a_ok = async_ok(lhs);
  llvm::Value* b_ok = async_ok(rhs);
  L.barrier();  // the stage buffers may have been read by an earlier rule
  auto one_pass = [&](llvm::Value* pass) {
    auto [m0, n0] = pass_origin(L, t, pass);
    begin_pass();
    k_steps(m0, n0, a_ok, b_ok);
    end_pass(C, m0, n0);
  };
  if (resident) {
    for (pass_index = 0; pass_index < passes(t); ++pass_index) one_pass(i64(pass_index));
  } else {
    L.for_range(i64(0), i64(passes(t)), one_pass);
  }
  L.barrier();
  // Prefetched tiles stay in the stage buffers until the next grid step.
  if (!next) L.shared_release(mark);
}

// The k steps of one pass: stage 0 first, then each step waits for its
// stage while the next one's copies are in flight.
void TileEmitter::k_steps(llvm::Value* m0, llvm::Value* n0, llvm::Value* a_ok, llvm::Value* b_ok) {
  int64_t nk = t.K / t.bk;
  bool first_pass = pass_index <= 0, last_pass = pass_index == passes(t) - 1;
  if (next && first_pass)
    L.if_then(B.CreateNot(B.CreateLoad(B.getInt1Ty(), resident->prefetched)),
              [&] { stage(i64(0), i64(0), m0, n0, a_ok, b_ok); });
  else
    stage(i64(0), i64(0), m0, n0, a_ok, b_ok);
  L.for_range(i64(0), i64(nk), [&](llvm::Value* kc) {
    llvm::Value* s = B.CreateAnd(kc, i64(1));
    llvm::Value* more = B.CreateICmpSLT(B.CreateAdd(kc, i64(1)), i64(nk));
    L.if_then(more, [&] {
      stage(B.CreateXor(s, i64(1)), B.CreateMul(B.CreateAdd(kc, i64(1)), i64(t.bk)), m0, n0, a_ok, b_ok);
      async(llvm::Intrinsic::nvvm_cp_async_wait_group, {L.i32(1)});
    });
    L.if_then(B.CreateNot(more), [&] {
      async(llvm::Intrinsic::nvvm_cp_async_wait_all);
      if (next && last_pass) prefetch_next_step();
    });
    L.barrier();
    step(s, kc);
    L.barrier();  // stage s is refilled by the next step
  });
}

class MmaEmitter : public TileEmitter {
 public:
  MmaEmitter(Lowering& lowering, const MmaPlan& plan, const GpuDotOperand& a, const GpuDotOperand& b, DType dtype)
      : TileEmitter(lowering, plan, a, b, dtype), p(plan) {}

 private:
  const MmaPlan& p;
  std::optional<MmaLayout> layout;
  llvm::Value *lane = nullptr, *warp_m0 = nullptr, *warp_n0 = nullptr, *computes = nullptr;
  std::vector<llvm::Value*> acc;  // [i][j][4] floats, i < warp_m / 16, j < warp_n / 8

  int64_t tiles_m() const { return p.warp_m / 16; }
  int64_t tiles_n() const { return p.warp_n / 8; }
  llvm::Value* acc_at(int64_t i, int64_t j, int q) { return acc[layout->slot(i, j, q)]; }
  void begin() override;
  // Resident: the pass's slots are the accumulators, added to in place.
  void begin_pass() override {
    if (resident)
      acc = pass_slots(tiles_m() * tiles_n() * 4);
    else
      zero(acc);
  }
  void step(llvm::Value* s, llvm::Value*) override {
    L.if_then(computes, [&] { compute(s); });
  }
  void end_pass(llvm::Value* C, llvm::Value* m0, llvm::Value* n0) override {
    if (!resident) L.if_then(computes, [&] { write_out(C, m0, n0); });
  }
  void compute(llvm::Value* s);
  void mma(int64_t i, int64_t j, const Values& a, llvm::Value* b0, llvm::Value* b1);
  void write_out(llvm::Value* C, llvm::Value* m0, llvm::Value* n0);
};

void MmaEmitter::begin() {
  if (!resident) acc = accumulators(tiles_m() * tiles_n() * 4, "mma.acc");
  layout.emplace(L, p);
  lane = layout->lane, warp_m0 = layout->warp_m0, warp_n0 = layout->warp_n0, computes = layout->computes;
}

void MmaEmitter::mma(int64_t i, int64_t j, const Values& a, llvm::Value* b0, llvm::Value* b1) {
  llvm::Type* f32 = B.getFloatTy();
  Values args;
  if (dt == DType::bf16) {
    args = {a[0], a[1], a[2], a[3], b0, b1};
  } else {
    llvm::Type* half2 = llvm::FixedVectorType::get(B.getHalfTy(), 2);
    for (llvm::Value* r : {a[0], a[1], a[2], a[3], b0, b1}) args.push_back(B.CreateBitCast(r, half2));
  }
  for (int q = 0; q < 4; ++q) args.push_back(B.CreateLoad(f32, acc_at(i, j, q)));
  auto id = dt == DType::bf16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                              : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
  llvm::Value* d = B.CreateCall(L.intrinsic(id), args);
  for (unsigned q = 0; q < 4; ++q) B.CreateStore(B.CreateExtractValue(d, q), acc_at(i, j, static_cast<int>(q)));
}

// The warp's mma.sync steps on stage `s`: per k16 slice, its A fragments (one
// ldmatrix.x4 per 16 rows), its B fragments (one ldmatrix.x4.trans per 16
// columns: two n8 tiles), then every (i, j) product.
void MmaEmitter::compute(llvm::Value* s) {
  llvm::Type* ptr3 = llvm::PointerType::get(L.llctx, 3);
  llvm::Function* ld = L.intrinsic(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16, {ptr3});
  llvm::Function* ld_t = L.intrinsic(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16, {ptr3});
  llvm::Value* row16 = B.CreateAnd(lane, i64(15));                      // the row this lane addresses
  llvm::Value* col8 = B.CreateMul(B.CreateLShr(lane, i64(4)), i64(8));  // 0 or 8
  auto regs = [&](llvm::Value* x) {
    Values out;
    for (unsigned q = 0; q < 4; ++q) out.push_back(B.CreateExtractValue(x, q));
    return out;
  };
  for (int64_t ks = 0; ks < p.bk / 16; ++ks) {
    std::vector<Values> a(static_cast<size_t>(tiles_m())), b(static_cast<size_t>(tiles_n() / 2));
    for (int64_t i = 0; i < tiles_m(); ++i) {
      llvm::Value* row = B.CreateAdd(warp_m0, B.CreateAdd(i64(i * 16), row16));
      llvm::Value* col = B.CreateAdd(i64(ks * 16), col8);
      a[static_cast<size_t>(i)] = regs(B.CreateCall(ld, {in_space(a_tile(s, row, col), 3)}));
    }
    for (int64_t j = 0; j < tiles_n() / 2; ++j) {
      llvm::Value* row = B.CreateAdd(i64(ks * 16), row16);
      llvm::Value* col = B.CreateAdd(warp_n0, B.CreateAdd(i64(j * 16), col8));
      b[static_cast<size_t>(j)] = regs(B.CreateCall(ld_t, {in_space(b_tile(s, row, col), 3)}));
    }
    for (int64_t i = 0; i < tiles_m(); ++i)
      for (int64_t j = 0; j < tiles_n(); ++j) {
        const Values& bj = b[static_cast<size_t>(j / 2)];
        size_t h = static_cast<size_t>(j % 2) * 2;
        mma(i, j, a[static_cast<size_t>(i)], bj[h], bj[h + 1]);
      }
  }
}

// The warp's accumulators into C [M, N] f32 (row-major): c0..c3 at (g, 2t),
// (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) of each 16 x 8 tile.
void MmaEmitter::write_out(llvm::Value* C, llvm::Value* m0, llvm::Value* n0) {
  llvm::Type* f32 = B.getFloatTy();
  for (int64_t i = 0; i < tiles_m(); ++i)
    for (int64_t j = 0; j < tiles_n(); ++j)
      for (int q = 0; q < 4; ++q) {
        llvm::Value* at = B.CreateAdd(B.CreateMul(layout->row(L, m0, i, q), i64(p.N)), layout->col(L, n0, j, q));
        B.CreateStore(B.CreateLoad(f32, acc_at(i, j, q)), B.CreateGEP(f32, C, {at}));
      }
}

// f32: thread (ty, tx) owns rows ty * 4 .. + 3 and columns tx * 4 .. + 3 of
// the CTA tile. Each output element adds its products in k order into `part`,
// which starts from zero every kDotChunk k and is then added to `total`: the
// interpreter's order (runtime/kernels/dot.cpp), so results are its bits.
class FmaEmitter : public TileEmitter {
 public:
  FmaEmitter(Lowering& lowering, const FmaPlan& plan, const GpuDotOperand& a, const GpuDotOperand& b)
      : TileEmitter(lowering, plan, a, b, DType::f32), p(plan) {}

 private:
  static constexpr int64_t T = FmaPlan::kThreadTile;
  const FmaPlan& p;
  llvm::Value *row0 = nullptr, *col0 = nullptr;  // the thread's tile in the CTA tile
  std::vector<llvm::Value*> part, total;          // [r][c], r, c < T

  void begin() override {
    part = accumulators(T * T, "fma.part");
    total = accumulators(T * T, "fma.total");
    FmaLayout layout(L, p);
    row0 = layout.row0, col0 = layout.col0;
  }
  void begin_pass() override {
    zero(part);
    zero(total);
  }
  void flush() {
    llvm::Type* f32 = B.getFloatTy();
    for (size_t e = 0; e < part.size(); ++e) {
      B.CreateStore(B.CreateFAdd(B.CreateLoad(f32, total[e]), B.CreateLoad(f32, part[e])), total[e]);
      B.CreateStore(llvm::ConstantFP::get(f32, 0.0), part[e]);
    }
  }
  void step(llvm::Value* s, llvm::Value* kc) override;
  void end_pass(llvm::Value* C, llvm::Value* m0, llvm::Value* n0) override;
};

void FmaEmitter::step(llvm::Value* s, llvm::Value* kc) {
  llvm::Type* f32 = B.getFloatTy();
  // A chunk of kDotChunk k starts with this step (bk divides kDotChunk).
  llvm::Value* chunk_start = B.CreateAnd(B.CreateICmpNE(kc, i64(0)), B.CreateICmpEQ(B.CreateURem(kc, i64(kDotChunk / p.bk)), i64(0)));
  L.if_then(chunk_start, [&] { flush(); });
  llvm::Type* f32x4 = llvm::FixedVectorType::get(f32, T);
  for (int64_t kk = 0; kk < p.bk; ++kk) {
    Values a, b;
    for (int64_t r = 0; r < T; ++r) a.push_back(B.CreateLoad(f32, a_tile(s, B.CreateAdd(row0, i64(r)), i64(kk))));
    // Four consecutive floats of a B row: one 16-byte shared load (rows and stages are 16-byte multiples).
    llvm::Value* bv = B.CreateAlignedLoad(f32x4, b_tile(s, i64(kk), col0), llvm::Align(16));
    for (unsigned c = 0; c < T; ++c) b.push_back(B.CreateExtractElement(bv, c));
    for (int64_t r = 0; r < T; ++r)
      for (int64_t c = 0; c < T; ++c) {
        llvm::Value* acc = part[static_cast<size_t>(r * T + c)];
        llvm::Value* prod = B.CreateFMul(a[static_cast<size_t>(r)], b[static_cast<size_t>(c)]);
        B.CreateStore(B.CreateFAdd(B.CreateLoad(f32, acc), prod), acc);
      }
  }
}

void FmaEmitter::end_pass(llvm::Value* C, llvm::Value* m0, llvm::Value* n0) {
  flush();
  llvm::Type* f32 = B.getFloatTy();
  if (resident) {  // the product added to the block, as `addupdate` adds it
    std::vector<llvm::Value*> slots = pass_slots(T * T);
    for (size_t e = 0; e < slots.size(); ++e)
      B.CreateStore(B.CreateFAdd(B.CreateLoad(f32, slots[e]), B.CreateLoad(f32, total[e])), slots[e]);
    return;
  }
  for (int64_t r = 0; r < T; ++r)
    for (int64_t c = 0; c < T; ++c) {
      llvm::Value* row = B.CreateAdd(m0, B.CreateAdd(row0, i64(r)));
      llvm::Value* col = B.CreateAdd(n0, B.CreateAdd(col0, i64(c)));
      B.CreateStore(B.CreateLoad(f32, total[static_cast<size_t>(r * T + c)]),
                    B.CreateGEP(f32, C, {B.CreateAdd(B.CreateMul(row, i64(p.N)), col)}));
    }
}

}  // namespace

// The rules (docs/backends.md, "the schedule of dot_general"):
//   - M, N, K multiples of 16 (the mma tile is 16 x 8 x 16; B fragments are
//     loaded 16 columns at a time), threads a multiple of 32;
//   - the CTA covers the output in passes of cta_m x cta_n, each the largest
//     of 128, 64, 32, 16 dividing M (N);
//   - warps_m x warps_n warps compute (powers of two, at most threads / 32):
//     the most warps, then the squarest warp tile, then the taller one; other
//     warps only help stage tiles; a warp tile above 64 x 64 (128 accumulator
//     registers per thread) halves the larger CTA tile side;
//   - k steps of 32 (16 when K is not a multiple of 32);
//   - shared rows padded by 8 elements (16 bytes): the 8 row addresses of an
//     ldmatrix then fall in 8 distinct groups of 4 banks (row pitches of 80,
//     48 or 2 cta_n + 16 bytes), and rows stay 16-byte aligned for cp.async.
std::optional<MmaPlan> plan_mma(int64_t M, int64_t N, int64_t K, int threads) {
  if (M <= 0 || N <= 0 || K <= 0 || M % 16 || N % 16 || K % 16 || threads < 32 || threads % 32) return std::nullopt;
  MmaPlan p;
  p.M = M, p.N = N, p.K = K;
  p.cta_m = largest_tile(M), p.cta_n = largest_tile(N);
  int64_t warps = threads / 32;
  for (;;) {
    int64_t best_m = 1, best_n = 1;
    for (int64_t wm = 1; wm <= p.cta_m / 16; wm *= 2)
      for (int64_t wn = 1; wn <= p.cta_n / 16; wn *= 2) {
        if (wm * wn > warps) continue;
        int64_t skew = std::abs(p.cta_m / wm - p.cta_n / wn), best_skew = std::abs(p.cta_m / best_m - p.cta_n / best_n);
        bool taller = p.cta_m / wm > p.cta_m / best_m;
        if (wm * wn > best_m * best_n || (wm * wn == best_m * best_n && (skew < best_skew || (skew == best_skew && taller))))
          best_m = wm, best_n = wn;
      }
    p.warps_m = best_m, p.warps_n = best_n;
    p.warp_m = p.cta_m / best_m, p.warp_n = p.cta_n / best_n;
    if (p.warp_m * p.warp_n <= kMaxWarpTile) break;
    (p.cta_m >= p.cta_n ? p.cta_m : p.cta_n) /= 2;
  }
  p.bk = K % 32 == 0 ? 32 : 16;
  p.a_row = p.bk + kPad;
  p.b_row = p.cta_n + kPad;
  p.elem = 2;
  return p;
}

// The f32 rules: threads_n the largest power of two whose square is at most
// threads and whose 4-column tiles divide N, threads_m = threads / threads_n
// (its 4-row tiles must divide M): at 256 threads a 64 x 64 CTA tile. k
// steps of 32 (else 16, 8, 4: they divide the interpreter's 256-wide
// chunks). Rows padded by 4 floats (16 bytes): the two A rows a warp reads
// at once lie in different banks, and B rows stay 16-byte aligned for the
// 4-float loads and cp.async.
std::optional<FmaPlan> plan_fma(int64_t M, int64_t N, int64_t K, int threads) {
  const int64_t T = FmaPlan::kThreadTile;
  if (M <= 0 || N <= 0 || K <= 0 || threads < 1) return std::nullopt;
  int64_t tn = 1;
  while ((2 * tn) * (2 * tn) <= threads) tn *= 2;
  while (tn > 1 && (threads % tn || N % (T * tn))) tn /= 2;
  if (threads % tn || N % (T * tn) || M % (T * (threads / tn))) return std::nullopt;
  FmaPlan p;
  p.M = M, p.N = N, p.K = K;
  p.threads_n = tn, p.threads_m = threads / tn;
  p.cta_m = T * p.threads_m, p.cta_n = T * tn;
  for (int64_t bk : {32, 16, 8, 4})
    if (K % bk == 0) {
      p.bk = bk;
      break;
    }
  if (!p.bk) return std::nullopt;
  p.a_row = p.bk + 4;
  p.b_row = p.cta_n + 4;
  p.elem = 4;
  return p;
}

Block fma_dot(Lowering& L, const FmaPlan& plan, const GpuDotOperand& lhs, const GpuDotOperand& rhs) {
  return FmaEmitter(L, plan, lhs, rhs).emit();
}

std::optional<std::variant<MmaPlan, FmaPlan>> plan_gpu_dot(int64_t M, int64_t N, int64_t K, DType dtype, int threads) {
  if (dtype == DType::bf16 || dtype == DType::f16)
    if (std::optional<MmaPlan> p = plan_mma(M, N, K, threads)) return *p;
  if (dtype == DType::f32)
    if (std::optional<FmaPlan> p = plan_fma(M, N, K, threads)) return *p;
  return std::nullopt;
}

namespace {

const TilePlan& tiles_of(const std::variant<MmaPlan, FmaPlan>& plan) {
  return std::visit([](const auto& p) -> const TilePlan& { return p; }, plan);
}

// The plan of lhs x rhs on this CTA, when one applies and its stages fit.
std::optional<std::variant<MmaPlan, FmaPlan>> plan_for(Lowering& L, const GpuDotOperand& lhs, const GpuDotOperand& rhs) {
  DType dt = lhs.canonical.type.dtype();
  const Shape& a = lhs.canonical.type.shape();
  const Shape& b = rhs.canonical.type.shape();
  if (dt != rhs.canonical.type.dtype() || a[0] != 1) return std::nullopt;  // batch dims: the general path
  auto plan = plan_gpu_dot(a[1], b[2], a[2], dt, L.threads);
  // On the host the stage buffers are arena memory: they always fit.
  if (!plan || (L.target == Target::nvptx && !L.shared_fits(2 * tiles_of(*plan).stage_bytes()))) return std::nullopt;
  return plan;
}

}  // namespace

int64_t owned_elements(const std::variant<MmaPlan, FmaPlan>& plan) {
  const TilePlan& t = tiles_of(plan);
  if (const auto* m = std::get_if<MmaPlan>(&plan)) return passes(t) * m->warp_m * m->warp_n / 32;
  return passes(t) * FmaPlan::kThreadTile * FmaPlan::kThreadTile;
}

void for_each_owned(Lowering& L, const ResidentTiles& tiles,
                    const std::function<void(size_t slot, llvm::Value* row, llvm::Value* col)>& body) {
  const TilePlan& t = tiles_of(tiles.plan);
  for (int64_t pass = 0; pass < passes(t); ++pass) {
    std::pair<llvm::Value*, llvm::Value*> origin = pass_origin(L, t, L.i64(pass));
    llvm::Value *m0 = origin.first, *n0 = origin.second;  // plain names: lambdas below use them
    if (const auto* mp = std::get_if<MmaPlan>(&tiles.plan)) {
      MmaLayout layout(L, *mp);
      size_t base = static_cast<size_t>(pass * mp->warp_m * mp->warp_n / 32);
      L.if_then(layout.computes, [&] {
        for (int64_t i = 0; i < layout.tiles_m(); ++i)
          for (int64_t j = 0; j < layout.tiles_n(); ++j)
            for (int q = 0; q < 4; ++q) body(base + layout.slot(i, j, q), layout.row(L, m0, i, q), layout.col(L, n0, j, q));
      });
    } else {
      const int64_t T = FmaPlan::kThreadTile;
      FmaLayout layout(L, std::get<FmaPlan>(tiles.plan));
      for (int64_t r = 0; r < T; ++r)
        for (int64_t c = 0; c < T; ++c)
          body(static_cast<size_t>((pass * T + r) * T + c), L.b.CreateAdd(m0, L.b.CreateAdd(layout.row0, L.i64(r))),
               L.b.CreateAdd(n0, L.b.CreateAdd(layout.col0, L.i64(c))));
    }
  }
}

bool gpu_dot_into(Lowering& L, const GpuDotOperand& lhs, const GpuDotOperand& rhs, ResidentTiles& tiles,
                  const std::optional<NextStepOperands>& next) {
  auto plan = plan_for(L, lhs, rhs);
  if (!plan || plan->index() != tiles.plan.index()) return false;
  if (const auto* m = std::get_if<MmaPlan>(&*plan)) {
    if (L.target != Target::nvptx || L.sm < 80) return false;
    const auto& want = std::get<MmaPlan>(tiles.plan);
    if (m->M != want.M || m->N != want.N || m->cta_m != want.cta_m || m->cta_n != want.cta_n || m->warp_m != want.warp_m ||
        m->warp_n != want.warp_n)
      return false;
    MmaEmitter(L, *m, lhs, rhs, lhs.canonical.type.dtype()).emit_into(tiles, next);
    return true;
  }
  const auto& f = std::get<FmaPlan>(*plan);
  const auto& want = std::get<FmaPlan>(tiles.plan);
  if (f.M != want.M || f.N != want.N || f.cta_m != want.cta_m || f.threads_n != want.threads_n) return false;
  FmaEmitter(L, f, lhs, rhs).emit_into(tiles, next);
  return true;
}

std::optional<Block> gpu_dot(Lowering& L, const GpuDotOperand& lhs, const GpuDotOperand& rhs, DType acc) {
  if (L.target != Target::nvptx || L.sm < 80 || acc != DType::f32) return std::nullopt;
  auto plan = plan_for(L, lhs, rhs);
  if (!plan) return std::nullopt;
  if (const auto* m = std::get_if<MmaPlan>(&*plan)) return MmaEmitter(L, *m, lhs, rhs, lhs.canonical.type.dtype()).emit();
  return fma_dot(L, std::get<FmaPlan>(*plan), lhs, rhs);
}

}  // namespace tessera::backends::llvm_lowering
