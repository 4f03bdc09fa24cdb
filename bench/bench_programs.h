// The programs bench_interpreter and bench_jit share: add 4096x4096, matmul
// 1024^3 in 128x128 blocks, softmax 4096x4096 as .tsr text, their random
// inputs, and the benchmarks of the interpreter and of the plain C++ loops
// they are measured against (bench/baselines.h: -O3 -march=native, as the JIT
// compiles; the i-k-j and a tiled matmul), which both binaries register so
// that each compares its own figures on one machine. A C++ loop's output is
// allocated before the timed loop (a matmul's is zeroed in it: the product
// accumulates); a tessera run returns fresh arrays, which it times.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/baselines.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"

namespace tessera::bench {

using interp::Array;

inline Array random(Shape s, uint64_t seed) {
  Array a = Array::uninitialized(DType::f32, s);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = u(rng);
  return a;
}

inline std::string add_text(int n, int b) {
  std::string N = std::to_string(n), B = std::to_string(b), G = std::to_string(n / b);
  return "index_map @ij(%i: i32, %j: i32) -> (i32, i32) { return %i, %j }\n"
         "kernel @k(%x: ref<f32[" + B + "," + B + "], vmem>, %y: ref<f32[" + B + "," + B + "], vmem>, %o: ref<f32[" + B + "," + B + "], vmem>) {\n"
         "  %a = get %x[:, :]\n  %c = get %y[:, :]\n  %s = add %a, %c\n  swap %o[:, :], %s\n}\n"
         "func @main(%x: f32[" + N + "," + N + "], %y: f32[" + N + "," + N + "]) -> f32[" + N + "," + N + "] {\n"
         "  %o = pallas_call[kernel=@k, grid=(" + G + ", " + G + "), in_specs=[spec((" + B + ", " + B + "), @ij), spec((" + B + ", " + B + "), @ij)],\n"
         "    out_specs=[spec((" + B + ", " + B + "), @ij)], out_shapes=[f32[" + N + "," + N + "]], dimension_semantics=(parallel, parallel)] %x, %y\n"
         "  return %o\n}\n";
}

// x: f32[m,k] in (bm, bk) blocks, y: f32[k,n] in (bk, bn) blocks.
inline std::string matmul_text(int m, int k, int n, int bm, int bk, int bn) {
  auto s = [](int v) { return std::to_string(v); };
  std::string xb = s(bm) + "," + s(bk), yb = s(bk) + "," + s(bn), ob = s(bm) + "," + s(bn);
  return "index_map @xm(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %k }\n"
         "index_map @ym(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %k, %j }\n"
         "index_map @om(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %j }\n"
         "kernel @k(%x: ref<f32[" + xb + "], vmem>, %y: ref<f32[" + yb + "], vmem>, %o: ref<f32[" + ob + "], vmem>) {\n"
         "  %kk = program_id[axis=2]\n  %first = eq %kk, 0\n"
         "  cond[branches=[fn(%o0: ref<f32[" + ob + "], vmem>) { }, fn(%o1: ref<f32[" + ob + "], vmem>) {\n"
         "    %z = broadcast_in_dim[shape=(" + s(bm) + ", " + s(bn) + "), broadcast_dimensions=()] 0.0:f32\n"
         "    swap %o1[:, :], %z\n  }]] %first, %o\n"
         "  %a = get %x[:, :]\n  %b = get %y[:, :]\n"
         "  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b\n  addupdate %o[:, :], %p\n}\n"
         "func @main(%x: f32[" + s(m) + "," + s(k) + "], %y: f32[" + s(k) + "," + s(n) + "]) -> f32[" + s(m) + "," + s(n) + "] {\n"
         "  %o = pallas_call[kernel=@k, grid=(" + s(m / bm) + ", " + s(n / bn) + ", " + s(k / bk) + "),\n"
         "    in_specs=[spec((" + s(bm) + ", " + s(bk) + "), @xm), spec((" + s(bk) + ", " + s(bn) + "), @ym)],\n"
         "    out_specs=[spec((" + s(bm) + ", " + s(bn) + "), @om)], out_shapes=[f32[" + s(m) + "," + s(n) + "]],\n"
         "    dimension_semantics=(parallel, parallel, arbitrary)] %x, %y\n  return %o\n}\n";
}

inline std::string softmax_text(int n, int rows) {
  auto s = [](int v) { return std::to_string(v); };
  std::string blk = s(rows) + "," + s(n), shp = "(" + s(rows) + ", " + s(n) + ")";
  return "index_map @r(%i: i32) -> (i32, i32) { return %i, 0 }\n"
         "kernel @k(%x: ref<f32[" + blk + "], vmem>, %o: ref<f32[" + blk + "], vmem>) {\n"
         "  %v = get %x[:, :]\n  %m = reduce_max[axes=(1)] %v\n"
         "  %mb = broadcast_in_dim[shape=" + shp + ", broadcast_dimensions=(0)] %m\n"
         "  %d = sub %v, %mb\n  %e = exp %d\n  %su = reduce_sum[axes=(1)] %e\n"
         "  %sb = broadcast_in_dim[shape=" + shp + ", broadcast_dimensions=(0)] %su\n"
         "  %y = div %e, %sb\n  swap %o[:, :], %y\n}\n"
         "func @main(%x: f32[" + s(n) + "," + s(n) + "]) -> f32[" + s(n) + "," + s(n) + "] {\n"
         "  %o = pallas_call[kernel=@k, grid=(" + s(n / rows) + "), in_specs=[spec(" + shp + ", @r)], out_specs=[spec(" + shp + ", @r)],\n"
         "    out_shapes=[f32[" + s(n) + "," + s(n) + "]], dimension_semantics=(parallel)] %x\n  return %o\n}\n";
}

// A kernel of 10 scalar ops per grid point: measures the per-op overhead.
inline std::string scalar_ops_text(int grid) {
  return "index_map @z(%i: i32) -> i32 { return 0 }\n"
         "kernel @k(%o: ref<i32[1], smem>) {\n"
         "  %i = program_id[axis=0]\n  %a = add %i, 1\n  %b = mul %a, 3\n  %c = sub %b, %i\n  %d = rem %c, 7\n"
         "  %e = add %d, %a\n  %f = max %e, 0\n  %g = min %f, 100\n  %h = add %g, %b\n  swap %o[0], %h\n}\n"
         "func @main() -> i32[1] {\n"
         "  %o = pallas_call[kernel=@k, grid=(" + std::to_string(grid) + "), in_specs=[], out_specs=[spec((1), @z, mem=smem)],\n"
         "    out_shapes=[i32[1]], dimension_semantics=(arbitrary)]\n  return %o\n}\n";
}

// The interpreter running `text`'s @main on `in`, and the C++ loops.
inline void run_interp(benchmark::State& state, const std::string& text, const std::vector<Array>& in) {
  Module m = parse_module(text, "bench.tsr");
  for (auto _ : state) {
    std::vector<Array> out = interp::run_function(m, "main", in);
    benchmark::DoNotOptimize(out[0].raw());
  }
}

inline void BM_interp_add(benchmark::State& state) {
  run_interp(state, add_text(4096, 256), {random({4096, 4096}, 1), random({4096, 4096}, 2)});
}

inline void BM_cpp_add(benchmark::State& state) {
  Array x = random({4096, 4096}, 1), y = random({4096, 4096}, 2);
  std::vector<float> o(4096 * 4096);
  for (auto _ : state) {
    baseline_add(x.data<float>(), y.data<float>(), o.data(), o.size());
    benchmark::DoNotOptimize(o.data());
    benchmark::ClobberMemory();
  }
}

inline void BM_interp_matmul(benchmark::State& state) {
  run_interp(state, matmul_text(1024, 1024, 1024, 128, 128, 128), {random({1024, 1024}, 3), random({1024, 1024}, 4)});
}

// `matmul`: baseline_matmul_ikj or baseline_matmul_tiled.
template <void (*matmul)(const float*, const float*, float*, int, int, int)>
void cpp_matmul(benchmark::State& state, int m, int k, int n, uint64_t xseed, uint64_t yseed) {
  Array x = random({m, k}, xseed), y = random({k, n}, yseed);
  std::vector<float> o(static_cast<size_t>(m) * n);
  for (auto _ : state) {
    std::fill(o.begin(), o.end(), 0.0f);
    matmul(x.data<float>(), y.data<float>(), o.data(), m, k, n);
    benchmark::DoNotOptimize(o.data());
    benchmark::ClobberMemory();
  }
}

inline void BM_cpp_matmul(benchmark::State& state) { cpp_matmul<baseline_matmul_ikj>(state, 1024, 1024, 1024, 3, 4); }
inline void BM_cpp_matmul_tiled(benchmark::State& state) {
  cpp_matmul<baseline_matmul_tiled>(state, 1024, 1024, 1024, 3, 4);
}

inline void BM_interp_softmax(benchmark::State& state) {
  run_interp(state, softmax_text(4096, 32), {random({4096, 4096}, 5)});
}

inline void BM_cpp_softmax(benchmark::State& state) {
  Array x = random({4096, 4096}, 5);
  std::vector<float> o(4096 * 4096);
  for (auto _ : state) {
    baseline_softmax_rows(x.data<float>(), o.data(), 4096, 4096);
    benchmark::DoNotOptimize(o.data());
    benchmark::ClobberMemory();
  }
}

}  // namespace tessera::bench
