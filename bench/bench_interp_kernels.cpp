// The array kernels (runtime/kernels/) against plain C++ loops (naive, -O2,
// i-k-j matmul), on:
//   add 4096x4096, matmul 1024^3, softmax 4096x4096 (a chain of kernels),
//   a tiny 8x128 @ 128x128 dot (per-op overhead), and transpose / memcpy.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ir/builder.h"
#include "runtime/array.h"
#include "runtime/kernels.h"

using namespace tessera;
using namespace tessera::interp;

namespace {

Array random_f32(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Array a = Array::uninitialized(DType::f32, std::move(s));
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = u(rng);
  return a;
}

// One op with its kernel, built once; the benchmark loop only calls the kernel.
struct Prepared {
  BodyPtr body;
  const Op* op;
  const Kernel* kernel;
  std::vector<Array> run(const std::vector<Array>& args) const { return (*kernel)(*op, args); }
};

Prepared prepare(const std::string& name, const std::vector<ArrayType>& types, Params params = {}) {
  Prepared p;
  p.body = make_body("b", BodyKind::func);
  Builder b(*p.body);
  std::vector<Value> vals;
  for (const ArrayType& t : types) vals.push_back(b.param(Type::array(t), "x"));
  b.create(prim(name), vals, std::move(params));
  const Op& op = b.body().ops().back();
  p.op = &op;
  p.kernel = &array_kernels().at(*op.prim);
  return p;
}

constexpr int64_t kN = 4096;

void BM_add_kernel(benchmark::State& st) {
  Array a = random_f32({kN, kN}, 1), b = random_f32({kN, kN}, 2);
  Prepared add = prepare("add", {a.type(), b.type()});
  for (auto _ : st) benchmark::DoNotOptimize(add.run({a, b}));
  st.SetBytesProcessed(st.iterations() * kN * kN * 12);
}
void BM_add_plain(benchmark::State& st) {
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 2.0f);
  for (auto _ : st) {
    std::vector<float> c(kN * kN);
    for (int64_t i = 0; i < kN * kN; ++i) c[i] = a[i] + b[i];
    benchmark::DoNotOptimize(c.data());
  }
  st.SetBytesProcessed(st.iterations() * kN * kN * 12);
}
void BM_memcpy_64MiB(benchmark::State& st) {
  std::vector<float> a(kN * kN, 1.0f);
  for (auto _ : st) {
    std::vector<float> c(kN * kN);
    std::memcpy(c.data(), a.data(), a.size() * 4);
    benchmark::DoNotOptimize(c.data());
  }
  st.SetBytesProcessed(st.iterations() * kN * kN * 8);
}

constexpr int64_t kM = 1024;

void BM_matmul_kernel(benchmark::State& st) {
  Array a = random_f32({kM, kM}, 3), b = random_f32({kM, kM}, 4);
  Prepared dot = prepare("dot_general", {a.type(), b.type()}, {{"lhs_contracting", std::vector<int64_t>{1}}, {"rhs_contracting", std::vector<int64_t>{0}}});
  for (auto _ : st) benchmark::DoNotOptimize(dot.run({a, b}));
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * kM * kM * kM * st.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
void BM_matmul_plain_ikj(benchmark::State& st) {
  Array a = random_f32({kM, kM}, 3), b = random_f32({kM, kM}, 4);
  const float* A = a.data<float>();
  const float* B = b.data<float>();
  for (auto _ : st) {
    std::vector<float> C(kM * kM, 0.0f);
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t k = 0; k < kM; ++k) {
        float aik = A[i * kM + k];
        for (int64_t j = 0; j < kM; ++j) C[i * kM + j] += aik * B[k * kM + j];
      }
    benchmark::DoNotOptimize(C.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * kM * kM * kM * st.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
// q @ k.T layout: the rhs is transposed into place first.
void BM_matmul_kernel_rhs_transposed(benchmark::State& st) {
  Array a = random_f32({kM, kM}, 3), b = random_f32({kM, kM}, 4);
  Prepared dot = prepare("dot_general", {a.type(), b.type()}, {{"lhs_contracting", std::vector<int64_t>{1}}, {"rhs_contracting", std::vector<int64_t>{1}}});
  for (auto _ : st) benchmark::DoNotOptimize(dot.run({a, b}));
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * kM * kM * kM * st.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// softmax over the last axis as the kernels a traced jax.nn.softmax runs.
void BM_softmax_kernels(benchmark::State& st) {
  Array x = random_f32({kN, kN}, 5);
  ArrayType full{DType::f32, {kN, kN}}, row{DType::f32, {kN}};
  Prepared mx = prepare("reduce_max", {full}, {{"axes", std::vector<int64_t>{1}}});
  Prepared bc = prepare("broadcast_in_dim", {row}, {{"shape", std::vector<int64_t>{kN, kN}}, {"broadcast_dimensions", std::vector<int64_t>{0}}});
  Prepared sub = prepare("sub", {full, full}), ex = prepare("exp", {full}), div = prepare("div", {full, full});
  Prepared sum = prepare("reduce_sum", {full}, {{"axes", std::vector<int64_t>{1}}});
  for (auto _ : st) {
    Array m = bc.run({mx.run({x})[0]})[0];
    Array e = ex.run({sub.run({x, m})[0]})[0];
    Array s = bc.run({sum.run({e})[0]})[0];
    benchmark::DoNotOptimize(div.run({e, s}));
  }
}
// The same on 16-row blocks (as a Pallas softmax kernel sees them: each
// block's temporaries stay in cache). Blocks are cut by slice kernels.
void BM_softmax_kernels_16row_blocks(benchmark::State& st) {
  constexpr int64_t kRows = 16;
  Array x = random_f32({kN, kN}, 5);
  ArrayType full{DType::f32, {kRows, kN}}, row{DType::f32, {kRows}};
  Prepared mx = prepare("reduce_max", {full}, {{"axes", std::vector<int64_t>{1}}});
  Prepared bc = prepare("broadcast_in_dim", {row}, {{"shape", std::vector<int64_t>{kRows, kN}}, {"broadcast_dimensions", std::vector<int64_t>{0}}});
  Prepared sub = prepare("sub", {full, full}), ex = prepare("exp", {full}), div = prepare("div", {full, full});
  Prepared sum = prepare("reduce_sum", {full}, {{"axes", std::vector<int64_t>{1}}});
  Prepared sl = prepare("dynamic_slice", {x.type(), {DType::i32, {}}, {DType::i32, {}}}, {{"slice_sizes", std::vector<int64_t>{kRows, kN}}});
  Array zero = Array::scalar(DType::i32, 0);
  for (auto _ : st) {
    Array out = Array::uninitialized(DType::f32, {kN, kN});
    for (int64_t r = 0; r < kN; r += kRows) {
      Array start = Array::scalar(DType::i32, static_cast<double>(r));
      Array blk = sl.run({x, start, zero})[0];
      Array m = bc.run({mx.run({blk})[0]})[0];
      Array e = ex.run({sub.run({blk, m})[0]})[0];
      Array s = bc.run({sum.run({e})[0]})[0];
      Array y = div.run({e, s})[0];
      std::memcpy(out.data<float>() + r * kN, y.data<float>(), y.storage_bytes());  // the block written back
    }
    benchmark::DoNotOptimize(out.raw());
  }
}
void BM_softmax_plain(benchmark::State& st) {
  Array xa = random_f32({kN, kN}, 5);
  const float* x = xa.data<float>();
  for (auto _ : st) {
    std::vector<float> y(kN * kN);
    for (int64_t i = 0; i < kN; ++i) {
      const float* r = x + i * kN;
      float m = -INFINITY;
      for (int64_t j = 0; j < kN; ++j) m = std::max(m, r[j]);
      float s = 0;
      for (int64_t j = 0; j < kN; ++j) s += (y[i * kN + j] = std::exp(r[j] - m));
      for (int64_t j = 0; j < kN; ++j) y[i * kN + j] /= s;
    }
    benchmark::DoNotOptimize(y.data());
  }
}

// Per-op overhead: one 8x128 @ 128x128 block product (the tiny-block matmul).
void BM_dot_8x128x128_kernel(benchmark::State& st) {
  Array a = random_f32({8, 128}, 6), b = random_f32({128, 128}, 7);
  Prepared dot = prepare("dot_general", {a.type(), b.type()}, {{"lhs_contracting", std::vector<int64_t>{1}}, {"rhs_contracting", std::vector<int64_t>{0}}});
  for (auto _ : st) benchmark::DoNotOptimize(dot.run({a, b}));
}
void BM_dot_8x128x128_plain(benchmark::State& st) {
  Array a = random_f32({8, 128}, 6), b = random_f32({128, 128}, 7);
  const float* A = a.data<float>();
  const float* B = b.data<float>();
  for (auto _ : st) {
    std::vector<float> C(8 * 128, 0.0f);
    for (int i = 0; i < 8; ++i)
      for (int k = 0; k < 128; ++k)
        for (int j = 0; j < 128; ++j) C[i * 128 + j] += A[i * 128 + k] * B[k * 128 + j];
    benchmark::DoNotOptimize(C.data());
  }
}
// One 128x128x128 block product, as a 1024^3 matmul with 128x128 blocks runs it.
void BM_dot_128_kernel(benchmark::State& st) {
  Array a = random_f32({128, 128}, 6), b = random_f32({128, 128}, 7);
  Prepared dot = prepare("dot_general", {a.type(), b.type()}, {{"lhs_contracting", std::vector<int64_t>{1}}, {"rhs_contracting", std::vector<int64_t>{0}}});
  for (auto _ : st) benchmark::DoNotOptimize(dot.run({a, b}));
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * 128 * 128 * 128 * st.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
void BM_dot_128_plain(benchmark::State& st) {
  Array a = random_f32({128, 128}, 6), b = random_f32({128, 128}, 7);
  const float* A = a.data<float>();
  const float* B = b.data<float>();
  for (auto _ : st) {
    std::vector<float> C(128 * 128, 0.0f);
    for (int i = 0; i < 128; ++i)
      for (int k = 0; k < 128; ++k)
        for (int j = 0; j < 128; ++j) C[i * 128 + j] += A[i * 128 + k] * B[k * 128 + j];
    benchmark::DoNotOptimize(C.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * 128 * 128 * 128 * st.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
// Per-op overhead of the smallest op: a scalar add.
void BM_scalar_add_kernel(benchmark::State& st) {
  Array a = Array::scalar(DType::i32, 3), b = Array::scalar(DType::i32, 4);
  Prepared add = prepare("add", {a.type(), b.type()});
  for (auto _ : st) benchmark::DoNotOptimize(add.run({a, b}));
}

void BM_transpose_kernel(benchmark::State& st) {
  Array x = random_f32({kN, kN}, 8);
  Prepared tr = prepare("transpose", {x.type()}, {{"permutation", std::vector<int64_t>{1, 0}}});
  for (auto _ : st) benchmark::DoNotOptimize(tr.run({x}));
  st.SetBytesProcessed(st.iterations() * kN * kN * 8);
}
void BM_transpose_plain(benchmark::State& st) {
  Array xa = random_f32({kN, kN}, 8);
  const float* x = xa.data<float>();
  for (auto _ : st) {
    std::vector<float> y(kN * kN);
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kN; ++j) y[j * kN + i] = x[i * kN + j];
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(st.iterations() * kN * kN * 8);
}

}  // namespace

BENCHMARK(BM_add_kernel)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_add_plain)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_memcpy_64MiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_kernel)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_plain_ikj)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_kernel_rhs_transposed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_softmax_kernels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_softmax_kernels_16row_blocks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_softmax_plain)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dot_8x128x128_kernel)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_dot_8x128x128_plain)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_dot_128_kernel)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_dot_128_plain)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scalar_add_kernel)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_transpose_kernel)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_transpose_plain)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
