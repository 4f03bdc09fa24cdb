// Helpers and kernels shared by the tests of the protocol claims (semaphore
// balance, deadlocks, DMA races): test_prove_semaphores.cpp (verdicts),
// test_prove_mutants.cpp (the mutant table), test_prove_differential.cpp.
#pragma once

#include <initializer_list>
#include <optional>

#include "prove_test_util.h"

namespace tessera::prove::testing {

// The interpreter's error running @main ("" when it runs): the reference for
// the protocol claims (a deadlock, a semaphore left non-zero, with
// `detect_races` a race).
inline std::string run_error(const std::string& text, const std::vector<interp::Array>& inputs, bool detect_races = false) {
  Module m = parse_verified(text);
  interp::RunOptions opts;
  opts.detect_races = detect_races;
  try {
    interp::run_function(m, "main", inputs, opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Runs @main on 1 and 2 cores, in the interpreter's grid order and in the
// shuffled orders of `seeds`: a protocol proved for every order runs in each.
inline void check_runs_in_orders(const std::string& text, const std::vector<interp::Array>& inputs,
                                 std::initializer_list<uint64_t> seeds = {1, 2}) {
  Module m = parse_verified(text);
  for (int cores : {1, 2}) {
    std::vector<std::optional<uint64_t>> orders{std::nullopt};
    for (uint64_t s : seeds) orders.push_back(s);
    for (const std::optional<uint64_t>& order : orders) {
      uint64_t seed = order.value_or(0);  // 0: the interpreter's order
      CAPTURE(cores);
      CAPTURE(seed);
      interp::RunOptions opts;
      opts.cores = cores;
      opts.grid_seed = order;
      CHECK_NOTHROW(interp::run_function(m, "main", inputs, opts));
    }
  }
}

inline std::string run_races(const std::string& text, const std::vector<interp::Array>& inputs) {
  return run_error(text, inputs, true);
}

inline interp::Array zeros(DType d, const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return interp::Array::from_values(d, s, std::vector<double>(static_cast<size_t>(n), 0.0));
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A one-step copy of x into the output block by DMA; `body` is the kernel body.
inline std::string copy_kernel(const std::string& body) {
  return "kernel @k(%x: ref<f32[16,128], any>, %o: ref<f32[16,128], vmem>, %sem: ref<dma_sem, semaphore>) {\n" + body +
         "}\n"
         "func @main(%x: f32[16,128]) -> f32[16,128] {\n"
         "  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()],\n"
         "                     out_shapes=[f32[16,128]], scratch=[ref<dma_sem, semaphore>]] %x\n"
         "  return %out\n}\n";
}

// Each core of a core_map copies its half of an HBM buffer through VMEM.
inline const std::string kCoreMap = R"(
func @main(%x: ref<f32[256,128], hbm>) {
  core_map[body=fn(%hr: ref<f32[256,128], hbm>) {
    %c = axis_index[axis_name=core]
    %row = mul %c, 128
    run_scoped[body=fn(%r: ref<f32[256,128], hbm>, %row0: i32,
                       %buf: ref<f32[128,128], vmem>, %sem: ref<dma_sem, semaphore>) {
      dma_start %r[ds(%row0, 128), :], %buf[:, :], %sem
      dma_wait %sem, %buf[:, :]
      dma_start %buf[:, :], %r[ds(%row0, 128), :], %sem
      dma_wait %sem, %buf[:, :]
    }] %hr, %row
  }, mesh_axes=(core), mesh_shape=(2)] %x
}
)";

// Two devices hand a token back and forth: device 0 signals device 1, which
// waits for it and replies; device 0 waits for the reply. Device 0's wait
// needs a signal device 1 sends later in the program.
inline const std::string kPingPong = R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %d = axis_index[axis_name=dev]
  %other = sub 1, %d
  %first = eq %d, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>, %t0: i32) { }, fn(%s1: ref<sem, semaphore>, %t1: i32) {
    semaphore_signal %s1, 1, %t1
  }]] %first, %s, %other
  semaphore_wait %s, 1
  cond[branches=[fn(%s2: ref<sem, semaphore>, %t2: i32) {
    semaphore_signal %s2, 1, %t2
  }, fn(%s3: ref<sem, semaphore>, %t3: i32) { }]] %first, %s, %other
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[2,8]) -> f32[2,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0),
              body=fn(%xs: f32[8]) -> f32[8] {
                %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                                 scratch=[ref<sem, semaphore>]] %xs
                return %r
              }] %x
  return %out
}
)";

// The two cores of a core_map hand each other a token: each signals the
// other core's semaphore, then waits for the other's signal.
inline const std::string kCoreToken = R"(
func @main(%x: ref<f32[256,128], hbm>) {
  core_map[body=fn(%hr: ref<f32[256,128], hbm>) {
    %c = axis_index[axis_name=core]
    %other = sub 1, %c
    %dev = device_id
    run_scoped[body=fn(%o: i32, %d: i32, %s: ref<sem, semaphore>) {
      semaphore_signal %s, 1, %d, %o
      semaphore_wait %s, 1
    }] %other, %dev
  }, mesh_axes=(core), mesh_shape=(2)] %x
}
)";

// Writes a DMA's source before the wait on the copy (a race).
inline const std::string kWriteSource = R"(
kernel @k(%x: ref<f32[16,128], vmem>, %o: ref<f32[16,128], any>, %buf: ref<f32[16,128], vmem>, %sem: ref<dma_sem, semaphore>) {
  %v = get %x[:, :]
  swap %buf[:, :], %v
  dma_start %buf[:, :], %o[:, :], %sem
  swap %buf[3, :], 0.0
  dma_wait %sem, %buf[:, :]
}
func @main(%x: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec(mem=any)],
                     out_shapes=[f32[16,128]], scratch=[ref<f32[16,128], vmem>, ref<dma_sem, semaphore>]] %x
  return %out
}
)";

inline Obligation balance(const std::string& text) { return find(prove_text(text), "kernel", "semaphore balance"); }
inline Obligation races(const std::string& text) { return find(prove_text(text), "kernel", "DMA races"); }

}  // namespace tessera::prove::testing
